#!/usr/bin/env python3
"""Issue 10's resource limits and small produce defects, with nothing but
sockets, so the same file runs against kafka_pg and against Apache Kafka 4.4
(test/clients/kafka/kafka.sh):

- a batch whose recordsCount is not lastOffsetDelta + 1 is refused with
  INVALID_RECORD (LogValidator: "Inconsistent batch offset range") and
  nothing of it is stored;
- a Produce with two batches for one partition is refused with INVALID_RECORD
  (ProduceRequest.validateRecords: exactly one batch per partition at v3+),
  neither batch is stored, and the connection goes on serving;
- a Produce listing a partition twice: Kafka appends the last listing's batch
  only and answers once, kafka_pg appends and answers each (a deliberate
  difference: it drops nothing);
- a partition listed several times in one Fetch is answered once, at the
  place of its first listing, from the fetch offset of its last one, and a
  topic's partitions are grouped as Kafka groups them;
- a topic a Produce or a Fetch lists with no partitions is not answered, and
  a Fetch listing one topic in consecutive entries is answered in one;
- a Fetch whose first batch is larger than its max_bytes gets that batch
  whole (KIP-74) and no records from the partitions after it;
- max.connections.per.ip: 5,000 connections attempted from one address
  beside the cap's worth held open are all closed, while a client from
  another address is served.

With PGPORT set (the run-tests cluster) it also checks what only kafka_pg
has or only kafka_pg can change at run time, through ALTER SYSTEM:
kafka.fetch_max_bytes, kafka.max_connections, a client that never reads
(kafka.connection_output_max_bytes, kafka.connections_max_idle_ms) and
accept failing with EMFILE (the worker backs off instead of spinning), and
that a header key of invalid UTF-8 is refused by kafka.fetch with 22021.
Against Kafka, start it with max.connections.per.ip=20
(KAFKA_BROKER_PROPS=max.connections.per.ip=20); on kafka_pg the file sets
kafka.max_connections_per_ip to 20 for that check and resets it.

Usage: limits.py HOST:PORT.  Last line: "N passed, M failed".
"""
import os
import resource
import socket
import struct
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as kc  # noqa: E402  (its HOST:PORT is our argv[1] too)
from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402
from kafka.record.util import calc_crc32c  # noqa: E402
from tap import check, finish  # noqa: E402

RUN = uuid.uuid4().hex[:8]
INVALID_RECORD = 87


def with_count(batch, count):
    """The batch with recordsCount (bytes 57..60) set to count, CRC redone."""
    b = bytearray(batch)
    b[57:61] = struct.pack(">i", count)
    b[17:21] = struct.pack(">I", calc_crc32c(bytes(b[21:])))
    return bytes(b)


def gapped_batch(deltas):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 20)
    ts = int(time.time() * 1000)
    for d in deltas:
        b.append(d, timestamp=ts, key=None, value=b"v%d" % d, headers=[])
    return bytes(b.build())


def records_stored(c, topic):
    """How many records partition 0 holds (ListOffsets v1, latest)."""
    body = kc.i32(-1) + kc.array([kc.string(topic) + kc.array([kc.i32(0) + kc.i64(-1)])])
    r = c.call(2, 1, body)
    if r is None:
        return None
    out = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64()))))
    return out[0][1][0][3]


def check_produce_defects():
    c = kc.Conn()
    topic = f"limits-produce-{RUN}"
    check("create topic", kc.create_topic(c, topic) == 0)
    time.sleep(1)

    good = kc.build_batch(0, [b"a", b"b", b"c"])
    for count in (2, 4):
        err, _ = kc.produce(c, topic, with_count(good, count))
        check(f"recordsCount {count} with lastOffsetDelta 2: INVALID_RECORD", err == INVALID_RECORD,
              f"got {err}")
    # each record parses and the count matches them, but the offset range is wider
    gappy = gapped_batch([0, 1, 5])
    err, _ = kc.produce(c, topic, gappy)
    check("3 records at offset deltas 0, 1, 5 (lastOffsetDelta 5): INVALID_RECORD",
          err == INVALID_RECORD, f"got {err}")
    check("nothing of them stored", records_stored(c, topic) == 0, f"{records_stored(c, topic)}")

    second = kc.build_batch(0, [b"d"])
    err, _ = kc.produce(c, topic, good + second)
    check("two batches for one partition: INVALID_RECORD", err == INVALID_RECORD, f"got {err}")
    err, _ = kc.produce(c, topic, good + with_count(second, 2))
    check("a good batch and a bad one: INVALID_RECORD", err == INVALID_RECORD, f"got {err}")
    check("neither stored", records_stored(c, topic) == 0, f"{records_stored(c, topic)}")

    err, base = kc.produce(c, topic, good)
    check("the same connection then stores one good batch at offset 0", (err, base) == (0, 0),
          f"got {(err, base)}")
    check("3 records stored", records_stored(c, topic) == 3, f"{records_stored(c, topic)}")
    c.close()


def check_produce_repeated_partition():
    """A Produce that lists a partition twice (in one topic entry, or in two).  Kafka 4.4 keys
    its appends by partition: only the last listing's batch is appended, the partition answered
    once, the earlier batch dropped without an error.  kafka_pg appends each listing's batch in
    request order and answers each (docs/wire-protocol.md, Produce): it drops nothing."""
    c = kc.Conn()
    topic = f"limits-pdup-{RUN}"
    check("create topic", kc.create_topic(c, topic) == 0)
    time.sleep(1)
    two, one = kc.build_batch(0, [b"a1", b"a2"]), kc.build_batch(0, [b"b1"])

    def produce(listing):
        ts = [kc.string(topic) + kc.array([kc.i32(0) + kc.nbytes(b) for b in batches]) for batches in listing]
        r = c.call(0, 8, kc.string(None) + kc.i16(-1) + kc.i32(30000) + kc.array(ts))
        if r is None:
            return None
        def part():
            got = (r.i32(), r.i16(), r.i64())
            r.i64(), r.i64(), r.array(lambda: (r.i32(), r.string())), r.string()
            return got
        return [a for _, parts in r.array(lambda: (r.string(), r.array(part))) for a in parts]
    is_pg = bool(os.environ.get("PGPORT"))
    got = produce([[two, one]])
    check("a partition listed twice in one topic entry: " +
          ("kafka_pg appends both batches and answers each" if is_pg else
           "Kafka appends the last listing's batch only, answered once"),
          got == ([(0, 0, 0), (0, 0, 2)] if is_pg else [(0, 0, 0)]), got)
    got = produce([[two], [one]])
    check("a topic listed twice, the same partition: " +
          ("kafka_pg appends both batches and answers each" if is_pg else
           "Kafka appends the last listing's batch only, answered once"),
          got == ([(0, 0, 3), (0, 0, 5)] if is_pg else [(0, 0, 1)]), got)
    stored = records_stored(c, topic)
    check("records stored: %s" % ("6" if is_pg else "2"), stored == (6 if is_pg else 2), stored)
    c.close()


def check_empty_listings():
    """A topic that a Produce or a Fetch lists with no partitions gets no entry in the answer
    (Kafka answers by partition), and a Fetch that lists one topic in two consecutive entries
    gets one entry for it."""
    c = kc.Conn()
    topic = f"limits-empty-{RUN}"
    check("create topic of 2 partitions", kc.create_topic(c, topic, partitions=2) == 0)
    time.sleep(1)
    batch = kc.build_batch(0, [b"e"])
    r = c.call(0, 8, kc.string(None) + kc.i16(-1) + kc.i32(30000) + kc.array([
        kc.string(topic) + kc.array([]), kc.string(f"limits-nosuch-{RUN}") + kc.array([]),
        kc.string(topic) + kc.array([kc.i32(1) + kc.nbytes(batch)])]))
    got = r and r.array(lambda: (r.string().decode(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64(), r.i64(),
                                                                     r.array(lambda: (r.i32(), r.string())),
                                                                     r.string())[:3])))
    check("Produce listing a topic with no partitions, an unknown one with none, then the topic's partition 1: "
          "one entry, partition 1 stored at 0", got == [(topic, [(1, 0, 0)])], got)
    out = fetch_parts(c, [(topic, []), (f"limits-nosuch-{RUN}", []), (topic, [(0, 0)]), (topic, [(1, 0)])])
    check("Fetch listing a topic with no partitions, an unknown one with none, then the topic's partitions 0 and 1 "
          "in two entries: one entry with both",
          out is not None and [(t, [(p, e, o) for p, e, o, _ in ps]) for t, ps in out] ==
          [(topic, [(0, 0, []), (1, 0, [0])])], out)
    c.close()


def fetch_parts(c, listing, max_bytes=1 << 30, part_max=1 << 20):
    """Fetch v11 of [(topic, [(partition, offset)])]; [(topic, [(partition, err, [batch offsets], bytes)])]."""
    ts = [kc.string(t) + kc.array([kc.i32(p) + kc.i32(-1) + kc.i64(o) + kc.i64(-1) + kc.i32(part_max)
                                   for p, o in parts]) for t, parts in listing]
    body = (kc.i32(-1) + kc.i32(0) + kc.i32(1) + kc.i32(max_bytes) + kc.i8(0) + kc.i32(0) + kc.i32(-1)
            + kc.array(ts) + kc.array([]) + kc.string(""))
    r = c.call(1, 11, body)
    if r is None:
        return None
    r.i32(), r.i16(), r.i32()

    def part():
        idx, err = r.i32(), r.i16()
        r.i64(), r.i64(), r.i64()
        r.array(lambda: (r.i64(), r.i64()))
        r.i32()
        recs = r.nbytes() or b""
        return idx, err, [struct.unpack(">q", b[:8])[0] for b in kc.batches(recs)], len(recs)
    return [(name.decode(), parts) for name, parts in r.array(lambda: (r.string(), r.array(part)))]


def check_fetch_merge():
    c = kc.Conn()
    a, b = f"limits-fa-{RUN}", f"limits-fb-{RUN}"
    check("create two topics of 2 partitions",
          kc.create_topic(c, a, partitions=2) == 0 and kc.create_topic(c, b, partitions=2) == 0)
    time.sleep(1)
    for _ in range(3):
        kc.produce(c, a, kc.build_batch(0, [b"x" * 1000] * 5))
    out = fetch_parts(c, [(a, [(0, 10), (1, 0), (0, 0)]), (a, [(0, 5)])])
    check("a partition listed 3 times: answered once, from the last listing's offset, at its first place",
          out is not None and [(t, [(p, o) for p, _, o, _ in ps]) for t, ps in out] ==
          [(a, [(0, [5, 10]), (1, [])])], out)
    out = fetch_parts(c, [(a, [(0, 0)]), (b, [(0, 0)]), (a, [(1, 0), (0, 10)])])
    check("topics A, B, A: A's partitions in their first places, A listed again after B",
          out is not None and [(t, [p for p, _, _, _ in ps]) for t, ps in out] ==
          [(a, [0]), (b, [0]), (a, [1])], out)
    # 200 listings of one partition draw one partition's data, not 200 copies
    out = fetch_parts(c, [(a, [(0, 0)] * 200)])
    check("200 listings of a partition: one answer of 15 records' batches",
          out is not None and len(out) == 1 and len(out[0][1]) == 1 and out[0][1][0][2] == [0, 5, 10], out)
    c.close()


def check_fetch_full_response():
    """KIP-74: a first batch larger than the request's max_bytes is returned
    whole, and then the response is full: the other partitions, which have
    records too, get none (Kafka's ReplicaManager.readFromLog: once a partition
    returned a batch, the bytes left are max(0, max_bytes - returned))."""
    c = kc.Conn()
    t = f"limits-full-{RUN}"
    check("create a topic of 3 partitions", kc.create_topic(c, t, partitions=3) == 0)
    time.sleep(1)
    for p in range(3):
        for _ in range(2):
            kc.produce_to(c, t, p, kc.build_batch(0, [b"z" * 1000] * 5))
    out = fetch_parts(c, [(t, [(0, 0), (1, 0), (2, 0)])], max_bytes=100, part_max=1 << 20)
    check("max_bytes 100: partition 0's first batch whole, nothing from partitions 1 and 2",
          out is not None and [(p, o) for p, _, o, _ in out[0][1]] == [(0, [0]), (1, []), (2, [])], out)
    out = fetch_parts(c, [(t, [(0, 0), (1, 0), (2, 0)])], max_bytes=1 << 20, part_max=100)
    check("partition_max_bytes 100: the first batch of partition 0 only (KIP-74 is for the first)",
          out is not None and [(p, o) for p, _, o, _ in out[0][1]] == [(0, [0]), (1, []), (2, [])], out)
    c.close()


# ---------------------------------------------------------------- connections

def api_versions_ok(src="127.0.0.2", timeout=10):
    """A fresh connection from src (another loopback address) gets ApiVersions answered."""
    try:
        s = socket.create_connection((kc.HOST, kc.PORT), timeout=timeout, source_address=(src, 0))
    except OSError:
        return False
    try:
        hdr = struct.pack(">hhi", 18, 0, 1) + kc.string(b"limits")
        s.sendall(kc.i32(len(hdr)) + hdr)
        s.settimeout(timeout)
        head = s.recv(4)
        return len(head) == 4
    except OSError:
        return False
    finally:
        s.close()


def closed_by_server(s, timeout=5.0):
    """True if the server closed s (EOF or reset) within timeout."""
    s.settimeout(timeout)
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            if not s.recv(1 << 20):
                return True
    except ConnectionResetError:
        return True
    except OSError:
        return False
    return False


def serves_after_connecting(src):
    """A connection from src is accepted and kept: ApiVersions answered on it."""
    try:
        s = socket.create_connection((kc.HOST, kc.PORT), timeout=10, source_address=(src, 0))
    except OSError:
        return None
    if _still_served(s):
        return s
    s.close()
    return None


def check_connections_per_ip(cap, src="127.0.0.3"):
    """cap connections from src held, 5,000 more attempted: each refused, others served."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 20000), hard))
    held = []
    for _ in range(cap):
        s = serves_after_connecting(src)
        if s:
            held.append(s)
    check(f"{cap} connections from {src} accepted and served", len(held) == cap, f"{len(held)}")
    refused = 0
    served_midway = True
    for i in range(5000):
        try:
            s = socket.create_connection((kc.HOST, kc.PORT), timeout=10, source_address=(src, 0))
        except OSError:
            refused += 1
            continue
        if closed_by_server(s, 5.0):
            refused += 1
        s.close()
        if i % 1000 == 500 and not api_versions_ok():
            served_midway = False
    check("5,000 more from the same address: every one closed by the server", refused == 5000,
          f"{refused} closed")
    check("meanwhile a client from another address was served every time", served_midway)
    check("the connections held are still served",
          all(_still_served(s) for s in held[:3]))
    for s in held:
        s.close()
    time.sleep(1)
    s = serves_after_connecting(src)
    check("once they closed, the address connects again", s is not None)
    if s:
        s.close()


def _still_served(s):
    try:
        hdr = struct.pack(">hhi", 18, 0, 2) + kc.string(b"limits")
        s.sendall(kc.i32(len(hdr)) + hdr)
        s.settimeout(10)
        head = b""
        while len(head) < 4:
            b = s.recv(4 - len(head))
            if not b:
                return False
            head += b
        n = struct.unpack(">i", head)[0]
        while n > 0:
            b = s.recv(n)
            if not b:
                return False
            n -= len(b)
        return True
    except (OSError, struct.error):
        return False


# ---------------------------------------------------------------- kafka_pg only

def psql(sql):
    return subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                          capture_output=True, text=True, timeout=60)


def set_settings(**kv):
    for k, v in kv.items():
        r = psql(f"ALTER SYSTEM SET kafka.{k} = '{v}'" if v is not None else f"ALTER SYSTEM RESET kafka.{k}")
        if r.returncode != 0:
            print(r.stderr)
    psql("SELECT pg_reload_conf()")
    time.sleep(2)  # the workers reload at their next wake-up (at most 1 s)


def check_fetch_max_bytes():
    c = kc.Conn()
    t = f"limits-fmb-{RUN}"
    check("create topic", kc.create_topic(c, t) == 0)
    time.sleep(1)
    for _ in range(8):
        kc.produce(c, t, kc.build_batch(0, [b"y" * 100000]))
    set_settings(fetch_max_bytes="350000")
    out = fetch_parts(c, [(t, [(0, 0)])], max_bytes=1 << 30, part_max=1 << 30)
    check("kafka.fetch_max_bytes 350000 caps a Fetch asking for 1 GiB: 3 batches of ~100 kB",
          out and out[0][1][0][2] == [0, 1, 2], out)
    out = fetch_parts(c, [(t, [(0, 0)])], max_bytes=150000, part_max=1 << 30)
    check("... a smaller max_bytes of the request still holds: 1 batch", out and out[0][1][0][2] == [0], out)
    out = fetch_parts(c, [(t, [(0, 0)] * 50)], max_bytes=1 << 30, part_max=1 << 30)
    check("50 listings of the partition: still 3 batches", out and len(out[0][1]) == 1 and
          out[0][1][0][2] == [0, 1, 2], out)
    set_settings(fetch_max_bytes=None)
    out = fetch_parts(c, [(t, [(0, 0)])], max_bytes=1 << 30, part_max=1 << 30)
    check("reset to 55 MB: all 8 batches", out and out[0][1][0][2] == list(range(8)), out)
    c.close()


def check_max_connections():
    set_settings(max_connections="30")
    held = []
    for _ in range(40):
        s = serves_after_connecting("127.0.0.4")
        if s:
            held.append(s)
        else:
            break
    check("kafka.max_connections 30: 30 connections served, the 31st closed at accept",
          len(held) == 30, f"{len(held)}")
    for s in held[:5]:
        s.close()
    time.sleep(1)
    check("after 5 closed, other clients connect again", api_versions_ok("127.0.0.5"))
    for s in held[5:]:
        s.close()
    set_settings(max_connections=None)


def never_reader(topic, nfetch):
    """A connection that sends nfetch Fetches of ~500 kB answers and never reads."""
    s = socket.create_connection((kc.HOST, kc.PORT), timeout=10, source_address=("127.0.0.6", 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    body = kc.fetch_body([(topic, 0)], 0)
    s.settimeout(5)
    sent = 0
    for i in range(nfetch):
        hdr = struct.pack(">hhi", 1, 11, i) + kc.string(b"never-reads")
        try:
            s.sendall(kc.i32(len(hdr) + len(body)) + hdr + body)
            sent += 1
        except OSError:
            break
    return s, sent


def check_never_reading_client():
    c = kc.Conn()
    t = f"limits-nr-{RUN}"
    check("create topic", kc.create_topic(c, t) == 0)
    time.sleep(1)
    kc.produce(c, t, kc.build_batch(0, [b"z" * 500000]))
    set_settings(connection_output_max_bytes="2MB")
    s, sent = never_reader(t, 100)
    time.sleep(2)
    check("a client that never reads, 100 Fetches of 500 kB: served others meanwhile", api_versions_ok())
    got = 0
    s.settimeout(10)
    try:
        while True:
            b = s.recv(1 << 20)
            if not b:
                break
            got += len(b)
    except OSError:
        pass
    check("... and was closed with far less than its 50 MB of answers sent (kafka.connection_output_max_bytes 2MB)",
          got < 20_000_000, f"{got} bytes received")
    s.close()
    set_settings(connection_output_max_bytes=None, connections_max_idle_ms="2000")
    # 40 answers of 500 kB pass the 16 MB at which the listener stops reading
    s, sent = never_reader(t, 40)
    time.sleep(5)
    closed = closed_by_server(s, 20)
    check("a client that never reads is closed after connections.max.idle.ms (2 s) though output is unsent",
          closed)
    s.close()
    set_settings(connections_max_idle_ms=None)
    check("others still served", api_versions_ok())
    c.close()


def check_header_key_encoding():
    """A header key of invalid UTF-8, produced over the wire, read from SQL."""
    c = kc.Conn()
    t = f"limits-hk-{RUN}"
    check("create topic", kc.create_topic(c, t) == 0)
    time.sleep(1)
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 20)
    b.append(0, timestamp=int(time.time() * 1000), key=None, value=b"v",
             headers=[("k\u00e9y", b"h")])
    batch = bytearray(b.build())
    i = batch.index(b"k\xc3\xa9y")
    batch[i + 2] = 0x28  # "\xc3(" is not UTF-8
    batch[17:21] = struct.pack(">I", calc_crc32c(bytes(batch[21:])))
    err, base = kc.produce(c, t, bytes(batch))
    check("a header key of invalid UTF-8 is stored (Kafka stores it too)", (err, base) == (0, 0),
          f"{(err, base)}")
    r = psql(f"SELECT (headers[1]).key FROM kafka.fetch('{t}', 0, 0, 1)")
    check("kafka.fetch refuses it with 22021 naming the record, not invalid text",
          r.returncode != 0 and "header key 1 of the record at offset 0 is not valid text" in r.stderr,
          r.stderr.strip())
    c.close()


def listener_pids():
    out = psql("SELECT pid FROM pg_stat_activity WHERE backend_type = 'kafka_pg listener'").stdout
    return [int(x) for x in out.split()]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def nofile_soft(pid):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    return None


def check_emfile_backoff():
    """More connections than the workers have descriptors for: accept fails
    with EMFILE while connections wait in the queue.  (The workers' limit is
    the postmaster's, 1024 here; with a much higher one the check is skipped.)"""
    pids = listener_pids()
    limit = max(nofile_soft(p) or 1 << 30 for p in pids)
    if limit > 4096:
        print(f"ok - # SKIP EMFILE: the listener workers may open {limit} files")
        return
    want = limit * len(pids) + 200
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, want + 200)), hard))
    socks = []
    for _ in range(want):
        try:
            socks.append(socket.create_connection((kc.HOST, kc.PORT), timeout=5,
                                                  source_address=("127.0.0.7", 0)))
        except OSError:
            break
    time.sleep(2)
    fds = sum(len(os.listdir(f"/proc/{p}/fd")) for p in pids)
    before = sum(cpu_seconds(p) for p in pids)
    time.sleep(3)
    used = sum(cpu_seconds(p) for p in pids) - before
    check(f"{len(socks)} connections against {len(pids)} workers of {limit} descriptors "
          f"({fds} open): accept fails with EMFILE and the workers do not spin",
          used < 0.5 and fds >= len(pids) * (limit - 5), f"{used:.2f} s of CPU in 3 s, {fds} fds")
    for s in socks:
        s.close()
    time.sleep(2)
    check("with descriptors back, the listener accepts and serves again", api_versions_ok("127.0.0.8"))


def timed_call(c, api_key, version, body):
    """The response (None if the connection closed) and how long it took, in seconds."""
    t0 = time.time()
    r = c.call(api_key, version, body, timeout=120)
    return r, time.time() - t0


def check_duplicate_names():
    """DeleteTopics v1 of many names, two of them twice: each repeated name
    is answered once, INVALID_REQUEST, every other one on its own
    (UNKNOWN_TOPIC_OR_PARTITION).  The duplicate check sorts: 20,002 names
    used to take 2 x 10^8 comparisons.  The same for ListOffsets' partitions."""
    c = kc.Conn()
    n = 20000
    names = [f"limits-nothere-{RUN}-{i}" for i in range(n)]
    names += [names[7], names[n - 3]]
    r, took = timed_call(c, 20, 1, kc.array([kc.string(x) for x in names]) + kc.i32(30000))
    if r is None:
        check("DeleteTopics of 20,002 names answered", False)
        return
    r.i32()
    res = r.array(lambda: (r.string().decode(), r.i16()))
    repeated = {names[7], names[n - 3]}
    # Kafka's ControllerApis answers a repeated name once
    check("DeleteTopics of 20,002 names, 2 repeated: each answered once, INVALID_REQUEST",
          sorted(x for x, e in res if e == 42) == sorted(repeated) and all(e == 42 for x, e in res if x in repeated),
          [(x, e) for x, e in res if e != 3][:6])
    others = [(x, e) for x, e in res if x not in repeated]
    check("... every other one once, UNKNOWN_TOPIC_OR_PARTITION",
          len(others) == n - 2 and all(e == 3 for _, e in others))
    check("... in less than 30 s", took < 30, f"{took:.1f} s")
    print(f"# DeleteTopics of {len(names)} names answered in {took:.2f} s")

    # ListOffsets finds its repeated partitions the same way (Kafka answers each once, INVALID_REQUEST)
    parts = list(range(n)) + [7, n - 3]
    r, took = timed_call(c, 2, 1, kc.i32(-1) + kc.array([kc.string(names[0]) +
                                                          kc.array([kc.i32(p) + kc.i64(-1) for p in parts])]))
    if r is None:
        check("ListOffsets of 20,002 partitions answered", False)
        return
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64()))))
    answers = [(p, e) for _, ps in res for p, e, _, _ in ps]
    check("ListOffsets of an unknown topic's 20,002 partitions, 2 repeated: one entry; each repeated one "
          "answered once, INVALID_REQUEST; every other one UNKNOWN_TOPIC_OR_PARTITION",
          len(res) == 1 and sorted(answers) == sorted([(p, 42 if p in (7, n - 3) else 3) for p in range(n)]),
          [a for a in answers if a[1] != 3][:6])
    check("... in less than 30 s", took < 30, f"{took:.1f} s")
    print(f"# ListOffsets of {len(parts)} partitions answered in {took:.2f} s")
    c.close()


def check_request_size():
    """socket.request.max.bytes (100 MiB): a frame announced one byte over it
    closes the connection before its body is read; one at the limit is read."""
    s = socket.create_connection((kc.HOST, kc.PORT), timeout=10)
    s.sendall(kc.i32(104857601) + b"\x00" * 100)
    check("a request of socket.request.max.bytes + 1 closes the connection", closed_by_server(s, 10))
    s.close()
    s = socket.create_connection((kc.HOST, kc.PORT), timeout=10)
    s.sendall(kc.i32(104857600) + b"\x00" * 100)
    s.settimeout(2)
    try:
        still_open = s.recv(1) != b""
    except socket.timeout:
        still_open = True
    except OSError:
        still_open = False
    check("one announced at exactly socket.request.max.bytes is waited for", still_open)
    s.close()
    check("others served", api_versions_ok())


def main():
    check_request_size()
    check_produce_defects()
    check_produce_repeated_partition()
    check_duplicate_names()
    check_fetch_merge()
    check_empty_listings()
    check_fetch_full_response()
    if os.environ.get("PGPORT"):
        set_settings(max_connections_per_ip="20")
    check_connections_per_ip(20)
    if os.environ.get("PGPORT"):
        set_settings(max_connections_per_ip=None)
        check_header_key_encoding()
        check_fetch_max_bytes()
        check_max_connections()
        check_never_reading_client()
        check_emfile_backoff()
    finish()


if __name__ == "__main__":
    main()
