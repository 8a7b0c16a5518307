#!/usr/bin/python3
"""test/standby/follower_test.py: a hot standby's listener serves reads; promotion makes it the leader.

A primary (node 0) and a standby s1 (node 1, made by pg_basebackup),
kafka.replica_nodes naming s1 on both (docs/replication.md, "Followers"):

1. Metadata on both servers names the primary (node 0) as leader at epoch 0
   (timeline 1) and as controller, lists both brokers with their advertised
   ports, and the replicas and ISR agree.
2. A standby answers at once (no 30 s wait of a Java client): ApiVersions on
   a fresh connection within a second.
3. Fetch (v11) from the standby returns the records the primary has, and its
   high watermark is what the standby replayed: with replay paused, records
   produced on the primary are not returned and the high watermark stays;
   a Fetch parked there returns them once replay resumes.
4. Writes on the standby are answered with Kafka's errors for a follower:
   Produce NOT_LEADER_OR_FOLLOWER (acks=1 and acks=all; acks=0 closes the
   connection), CreateTopics NOT_CONTROLLER, OffsetCommit and OffsetFetch
   NOT_COORDINATOR; InitProducerId (idempotent) is answered with an id from
   the standby's own range; Produce v10 names the leader and its endpoint
   (KIP-951); FindCoordinator names the primary; ListGroups is empty.
   Nothing is written.  ListOffsets of a consumer is answered with the
   standby's replayed log (LATEST its replayed end, EARLIEST, a timestamp
   found) and NOT_LEADER_OR_FOLLOWER where only the leader knows (a
   timestamp not replayed; a replica id); OffsetForLeaderEpoch of the
   current epoch NOT_LEADER_OR_FOLLOWER (its end is the primary's).
5. Real clients bootstrapped with the standby only (librdkafka): a producer
   delivers (to the leader), a consumer group member consumes and commits;
   a Java consumer (kafka-clients 4.4, FollowerConsumer.java) of
   client.rack=rack-b reads from the standby (preferred read replica 1).
6. Promotion: the standby (asynchronous) missed records the primary
   acknowledged and a client read (it was stopped before they were written;
   the primary then stops for good), and is promoted with pg_promote, its listener not restarted:
   Metadata names node 1 leader at epoch 1; Produce is accepted (raw and
   librdkafka) and the new batches carry partitionLeaderEpoch 1, the old
   ones 0; Fetch and ListOffsets with the old epoch 0 are
   FENCED_LEADER_EPOCH, with 2 UNKNOWN_LEADER_EPOCH; OffsetForLeaderEpoch of
   epoch 0 answers where epoch 0 ends on the new leader, below the position
   the consumer reached on the old one: the truncation a client detects.
   Fetch v16 fenced names node 1 at epoch 1 (KIP-951); Fetch v12 with last
   fetched epoch 0 past 12 gets diverging_epoch (0, 12).  The Java
   consumer, which read 12..14 from the old primary, detects the truncation
   and reads the new leader's 12..14 at epoch 1.  A standby s2 of the new
   primary answers OffsetForLeaderEpoch of epoch 0 (final there), refuses
   epoch 1, and names node 1 at epoch 1 in its refusals.
7. No server log shows a PANIC or a crash.

`follower_test.py --against 127.0.0.1:PORT` runs the leader-epoch checks of a single leader at epoch
0 (Fetch, ListOffsets and OffsetForLeaderEpoch with current leader epochs 0 and 1, the end offset of
epochs 0 and 1, Fetch v12 with last fetched epochs 0 and 1) against another broker, e.g. Apache
Kafka 4.4 (test/clients/kafka/kafka.sh), which the test also runs against kafka_pg's primary.
"""

import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "wire"))
import kafkapg  # noqa: E402

ARGS = sys.argv[1:]
sys.argv[1:] = ["127.0.0.1:0"]  # conformance.py reads HOST:PORT at import
import conformance as kc  # noqa: E402
from tap import check, finish  # noqa: E402

DB = "postgres"
OUT_OF_RANGE = 1
NOT_LEADER = 6
NOT_COORDINATOR = 16
NOT_CONTROLLER = 41
FENCED = 74
UNKNOWN_EPOCH = 75
i8, i16, i32, i64, string, array = kc.i8, kc.i16, kc.i32, kc.i64, kc.string, kc.array


def info(msg):
    print("# [%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def conn(port):
    kc.HOST, kc.PORT = "127.0.0.1", port
    return kc.Conn()


def connect_when_up(port):
    try:
        return conn(port)
    except OSError:
        return None


def sql(c, q, args=None):
    cur = c.cursor()
    cur.execute(q, args)
    return cur.fetchall() if cur.description else None


def wait_for(what, fn, timeout=60):
    t0 = time.time()
    while time.time() - t0 < timeout:
        v = fn()
        if v:
            return v
        time.sleep(0.2)
    raise RuntimeError("timed out waiting for %s" % what)


def metadata(c, topic, allow_create=False):
    """Metadata v7: (brokers [(id, port, rack)], controller, partition 0's (err, leader, epoch, replicas, isr))."""
    r = c.call(3, 7, array([string(topic)]) + i8(1 if allow_create else 0))
    if r is None:
        return None
    r.i32()
    brokers = r.array(lambda: (r.i32(), r.string(), r.i32(), r.string()))
    r.string()
    controller = r.i32()

    def part():
        err, idx, leader, epoch = r.i16(), r.i32(), r.i32(), r.i32()
        reps, isr = r.array(r.i32), r.array(r.i32)
        r.array(r.i32)
        return err, leader, epoch, reps, isr
    topics = r.array(lambda: (r.i16(), r.string(), r.i8(), r.array(part)))
    parts = topics[0][3]
    p0 = parts[0] if parts else (topics[0][0], -1, -1, [], [])  # a topic error: no partitions
    return sorted((b[0], b[2], b[3] and b[3].decode()) for b in brokers), controller, p0


def produce(c, topic, acks, value=b"v"):
    """Produce v8 of one record: (error, base offset); None when the connection closed."""
    batch = kc.build_batch(0, [value])
    body = string(None) + i16(acks) + i32(10000) + array([string(topic) + array([i32(0) + kc.nbytes(batch)])])
    r = c.call(0, 8, body, timeout=30)
    if r is None:
        return None

    def part():
        idx, err, base = r.i32(), r.i16(), r.i64()
        r.i64(), r.i64()
        r.array(lambda: (r.i32(), r.string()))
        r.string()
        return err, base
    return r.array(lambda: (r.string(), r.array(part)))[0][1][0]


def fetch(c, topic, offset, epoch=-1, max_wait_ms=0, timeout=30, rack="", preferred=None):
    """Fetch v11, partition 0: (error, high watermark, [(offset, batch leader epoch)]);
    preferred, a list, gets the preferred read replica."""
    body = (i32(-1) + i32(max_wait_ms) + i32(1) + i32(1 << 20) + i8(0) + i32(0) + i32(-1)
            + array([string(topic) + array([i32(0) + i32(epoch) + i64(offset) + i64(-1) + i32(1 << 20)])])
            + array([]) + string(rack))
    r = c.call(1, 11, body, timeout=timeout)
    if r is None:
        return None
    r.i32(), r.i16(), r.i32()

    def part():
        p, err, hw, lso = r.i32(), r.i16(), r.i64(), r.i64()
        r.i64()
        r.array(lambda: (r.i64(), r.i64()))
        pref = r.i32()
        if preferred is not None:
            preferred.append(pref)
        recs = r.nbytes() or b""
        out = []
        for b in kc.batches(recs):
            base, _, epoch = struct.unpack(">qii", b[0:16])
            last_delta = struct.unpack(">i", b[23:27])[0]
            out.extend((o, epoch) for o in range(base, base + last_delta + 1))
        return err, hw, out
    return r.array(lambda: (r.string(), r.array(part)))[0][1][0]


def list_offsets(c, topic, ts=-1, epoch=-1, replica=-1):
    """ListOffsets v4, partition 0: (error, offset, leader epoch)."""
    body = i32(replica) + i8(0) + array([string(topic) + array([i32(0) + i32(epoch) + i64(ts)])])
    r = c.call(2, 4, body)
    if r is None:
        return None
    r.i32()
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64(), r.i32()))))
    _, err, _, off, ep = res[0][1][0]
    return err, off, ep


def end_offset(c, topic, epoch, current=-1, replica=-1):
    """OffsetForLeaderEpoch v3, partition 0: (error, leader epoch, end offset)."""
    body = i32(replica) + array([string(topic) + array([i32(0) + i32(current) + i32(epoch)])])
    r = c.call(23, 3, body)
    if r is None:
        return None
    r.i32()
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i16(), r.i32(), r.i32(), r.i64()))))
    err, _, ep, off = res[0][1][0]
    return err, ep, off


# --- flexible versions (KIP-482): compact strings and arrays, tagged fields ----------------------


def uvarint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def cstring(s):
    if s is None:
        return uvarint(0)
    if isinstance(s, str):
        s = s.encode()
    return uvarint(len(s) + 1) + s


def carray(items):
    return uvarint(len(items) + 1) + b"".join(items)


def cbytes(b):
    return uvarint(len(b) + 1) + b


NOTAGS = uvarint(0)


def r_uvarint(r):
    v, shift = 0, 0
    while True:
        b = r.take(1)[0]
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v
        shift += 7


def r_cstring(r):
    n = r_uvarint(r) - 1
    return None if n < 0 else r.take(n).decode()


def r_carray(r, fn):
    n = r_uvarint(r) - 1
    return None if n < 0 else [fn() for _ in range(n)]


def r_tags(r, handlers=None):
    """The tagged fields: {tag: handler's value}; handlers read the field's body from r."""
    out = {}
    for _ in range(r_uvarint(r)):
        tag, size = r_uvarint(r), r_uvarint(r)
        if handlers and tag in handlers:
            out[tag] = handlers[tag]()
        else:
            r.take(size)
    return out


def flex_call(c, api_key, version, body, timeout=30):
    """A request in a flexible version (request header v2); the response after its header v1."""
    c.corr += 1
    hdr = struct.pack(">hhi", api_key, version, c.corr) + string(b"follower") + NOTAGS
    try:
        c.s.sendall(i32(len(hdr) + len(body)) + hdr + body)
        r = c.recv(timeout)
    except OSError:
        r = None
    if r is None:
        return None
    r_tags(r)
    return r


def read_node_endpoints(r):
    def ep():
        nid, host, port, rack = r.i32(), r_cstring(r), r.i32(), r_cstring(r)
        r_tags(r)
        return nid, host, port, rack
    return r_carray(r, ep)


def read_leader_id_epoch(r):
    v = (r.i32(), r.i32())
    r_tags(r)
    return v


def produce_flex(c, topic, acks=1, version=10, value=b"v"):
    """Produce v10 of one record to partition 0: (error, current_leader (id, epoch) or None,
    node_endpoints [(id, host, port, rack)] or None); None when the connection closed."""
    batch = kc.build_batch(0, [value])
    body = (cstring(None) + i16(acks) + i32(10000)
            + carray([cstring(topic) + carray([i32(0) + cbytes(batch) + NOTAGS]) + NOTAGS]) + NOTAGS)
    r = flex_call(c, 0, version, body)
    if r is None:
        return None
    parts = []

    def part():
        r.i32()
        err = r.i16()
        r.i64(), r.i64(), r.i64()
        r_carray(r, lambda: (r.i32(), r_cstring(r), r_tags(r)))
        r_cstring(r)
        t = r_tags(r, {0: lambda: read_leader_id_epoch(r)})
        parts.append((err, t.get(0)))

    def topic_resp():
        r_cstring(r)
        r_carray(r, part)
        r_tags(r)
    r_carray(r, topic_resp)
    r.i32()
    t = r_tags(r, {0: lambda: read_node_endpoints(r)})
    return parts[0][0], parts[0][1], t.get(0)


def fetch_flex(c, topic, offset, version=12, epoch=-1, last_fetched_epoch=-1, topic_id=None, max_wait_ms=0):
    """Fetch v12 (by name) or v13+ (by topic id) of partition 0: a dict with error, hw, offsets,
    diverging (epoch, end) or None, current_leader (id, epoch) or None, node_endpoints or None."""
    tkey = (topic_id if version >= 13 else cstring(topic))
    body = b""
    if version < 15:
        body += i32(-1)
    body += (i32(max_wait_ms) + i32(1) + i32(1 << 20) + i8(0) + i32(0) + i32(-1)
             + carray([tkey + carray([i32(0) + i32(epoch) + i64(offset) + i32(last_fetched_epoch)
                                      + i64(-1) + i32(1 << 20) + NOTAGS]) + NOTAGS])
             + carray([]) + cstring("") + NOTAGS)
    r = flex_call(c, 1, version, body)
    if r is None:
        return None
    r.i32(), r.i16(), r.i32()
    out = {}

    def part():
        r.i32()
        out["error"], out["hw"] = r.i16(), r.i64()
        r.i64(), r.i64()
        r_carray(r, lambda: (r.i64(), r.i64(), r_tags(r)))
        r.i32()
        n = r_uvarint(r) - 1
        recs = r.take(n) if n > 0 else b""
        offs = []
        for b in kc.batches(recs):
            base = struct.unpack(">q", b[0:8])[0]
            last_delta = struct.unpack(">i", b[23:27])[0]
            offs.extend(range(base, base + last_delta + 1))
        out["offsets"] = offs

        def div():
            v = (r.i32(), r.i64())
            r_tags(r)
            return v
        t = r_tags(r, {0: div, 1: lambda: read_leader_id_epoch(r)})
        out["diverging"], out["current_leader"] = t.get(0), t.get(1)

    def topic_resp():
        r.take(16) if version >= 13 else r_cstring(r)
        r_carray(r, part)
        r_tags(r)
    r_carray(r, topic_resp)
    t = r_tags(r, {0: lambda: read_node_endpoints(r)})
    out["node_endpoints"] = t.get(0)
    return out


def share_fetch_flex(c, topic_id):
    """ShareFetch v1 of partition 0 (a new share session): (top error, partition error,
    current_leader (id, epoch), node_endpoints)."""
    body = (cstring("sg") + cstring("member-1") + i32(0) + i32(0) + i32(1) + i32(1 << 20) + i32(100) + i32(100)
            + carray([topic_id + carray([i32(0) + carray([]) + NOTAGS]) + NOTAGS]) + carray([]) + NOTAGS)
    r = flex_call(c, 78, 1, body)
    if r is None:
        return None
    r.i32()
    top = r.i16()
    r_cstring(r)
    r.i32()
    parts = []

    def part():
        r.i32()
        err = r.i16()
        r_cstring(r), r.i16(), r_cstring(r)
        leader = read_leader_id_epoch(r)
        n = r_uvarint(r) - 1
        r.take(max(n, 0))
        r_carray(r, lambda: (r.i64(), r.i64(), r.i16(), r_tags(r)))
        r_tags(r)
        parts.append((err, leader))

    def topic_resp():
        r.take(16)
        r_carray(r, part)
        r_tags(r)
    r_carray(r, topic_resp)
    eps = read_node_endpoints(r)
    return top, parts[0][0] if parts else None, parts[0][1] if parts else None, eps


def share_ack_flex(c, topic_id):
    """ShareAcknowledge v1 of offset 0 of partition 0: (top error, partition error, current_leader, node_endpoints)."""
    body = (cstring("sg") + cstring("member-1") + i32(1)
            + carray([topic_id + carray([i32(0) + carray([i64(0) + i64(0) + carray([i8(1)]) + NOTAGS]) + NOTAGS])
                      + NOTAGS]) + NOTAGS)
    r = flex_call(c, 79, 1, body)
    if r is None:
        return None
    r.i32()
    top = r.i16()
    r_cstring(r)
    parts = []

    def part():
        r.i32()
        err = r.i16()
        r_cstring(r)
        parts.append((err, read_leader_id_epoch(r)))
        r_tags(r)

    def topic_resp():
        r.take(16)
        r_carray(r, part)
        r_tags(r)
    r_carray(r, topic_resp)
    eps = read_node_endpoints(r)
    return top, parts[0][0] if parts else None, parts[0][1] if parts else None, eps


def fetch_replica_error(c, topic, replica):
    """Fetch v11 of partition 0 from a replica id: the partition's error (None: no partition answered)."""
    body = (i32(replica) + i32(0) + i32(1) + i32(1 << 20) + i8(0) + i32(0) + i32(-1)
            + array([string(topic) + array([i32(0) + i32(-1) + i64(0) + i64(-1) + i32(1 << 20)])])
            + array([]) + string(""))
    r = c.call(1, 11, body)
    if r is None:
        return None
    r.i32(), r.i16(), r.i32()
    errs = []

    def part():
        r.i32()
        errs.append(r.i16())
        r.i64(), r.i64(), r.i64()
        r.array(lambda: (r.i64(), r.i64()))
        r.i32()
        r.nbytes()
    r.array(lambda: (r.string(), r.array(part)))
    return errs[0] if errs else None


def find_coordinator(c, group):
    """FindCoordinator v1: (error, node id, port)."""
    r = c.call(10, 1, string(group) + i8(0))
    if r is None:
        return None
    r.i32()
    err = r.i16()
    r.string()
    node = r.i32()
    r.string()
    return err, node, r.i32()


def offset_fetch_error(c, group, topic):
    """OffsetFetch v5 of partition 0: the request's error (top level; Kafka's for a non-coordinator)."""
    r = c.call(9, 5, string(group) + array([string(topic) + array([i32(0)])]))
    if r is None:
        return None
    r.i32()
    r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i64(), r.i32(), r.string(), r.i16()))))
    return r.i16()


def list_groups(c):
    r = c.call(16, 1, b"")
    if r is None:
        return None
    r.i32()
    err = r.i16()
    return err, r.array(lambda: (r.string(), r.string()))


def init_producer_id(c):
    r = c.call(22, 1, string(None) + i32(60000))
    if r is None:
        return None
    r.i32()
    return r.i16(), r.i64(), r.i16()


def api_versions_time(port):
    """Seconds until a fresh connection's ApiVersions v0 is answered (None: no answer in 5 s)."""
    t0 = time.time()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        hdr = struct.pack(">hhi", 18, 0, 1) + string(b"follower")
        s.sendall(i32(len(hdr)) + hdr)
        head = s.recv(4)
        s.close()
        return time.time() - t0 if len(head) == 4 else None
    except OSError:
        return None


def rd_produce(port, topic, n, tag):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": "127.0.0.1:%d" % port, "acks": "all",
                  "enable.idempotence": True, "message.timeout.ms": 30000})
    errs = []
    for i in range(n):
        p.produce(topic, value=b"%s-%d" % (tag, i), partition=0,
                  on_delivery=lambda err, msg: errs.append(err))
    p.flush(40)
    return errs


def rd_consume(port, topic, group, want, timeout=40):
    """A group member bootstrapped at port: the values it got, and whether its commit succeeded."""
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": "127.0.0.1:%d" % port, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got = []
    t0 = time.time()
    while len(got) < want and time.time() - t0 < timeout:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    committed = False
    if got:
        try:
            c.commit(asynchronous=False)
            committed = True
        except Exception as e:  # noqa: BLE001
            info("commit failed: %s" % e)
    c.close()
    return got, committed


def rd_consume_rack(port, topic, group, want, rack, timeout=40):
    """A group member of client.rack rack: (values, the broker librdkafka fetched the partition from)."""
    import json
    from confluent_kafka import Consumer
    stats = {}
    c = Consumer({"bootstrap.servers": "127.0.0.1:%d" % port, "group.id": group, "client.rack": rack,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "statistics.interval.ms": 200, "stats_cb": lambda j: stats.update(json.loads(j))})
    c.subscribe([topic])
    got = []
    fetch_broker = None
    fresh = False
    t0 = time.time()
    while time.time() - t0 < timeout and (len(got) < want or fetch_broker is None):
        m = c.poll(0.3)
        if m is not None and not m.error():
            got.append(m.value())
        if len(got) >= want and not fresh:
            # statistics made after the last record arrived, not one made before the
            # consumer moved to the preferred replica and delivered late
            stats.clear()
            fresh = True
            continue
        p = stats.get("topics", {}).get(topic, {}).get("partitions", {}).get("0")
        if p and fresh:
            fetch_broker = p.get("broker")
    c.close()
    return got, fetch_broker


def java_classpath(root):
    """Compile FollowerConsumer.java against kafka-clients 4.4 (test/clients/kafka/kafka.sh): its classpath."""
    return kafkapg.compile_java(root, os.path.join(HERE, "FollowerConsumer.java"))


def java_events(path):
    import json
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def check_leader_epochs(port, topic, ns=""):
    """A leader at epoch 0 with 3 records (kafka_pg's primary, or Apache Kafka 4.4 with a new topic):
    the epoch checks of Fetch, ListOffsets and OffsetForLeaderEpoch (--against runs them on Kafka)."""
    c = conn(port)
    if ns:
        check("CreateTopics %s" % topic, kc.create_topic(c, topic) == 0)
        time.sleep(1)
    for i in range(3):
        res = produce(c, topic, -1, b"e%d" % i)
        assert res and res[0] == 0, res
    f = fetch(c, topic, 0, epoch=0)
    check("%sleader: Fetch with current leader epoch 0 returns the records stamped with epoch 0" % ns,
          f and f[0] == 0 and f[2] == [(0, 0), (1, 0), (2, 0)], "(%s)" % (f,))
    f = fetch(c, topic, 0, epoch=1)
    check("%sleader: Fetch with current leader epoch 1: UNKNOWN_LEADER_EPOCH" % ns,
          f and f[0] == UNKNOWN_EPOCH and not f[2], "(%s)" % (f,))
    lo = list_offsets(c, topic, epoch=1)
    check("%sleader: ListOffsets with current leader epoch 1: UNKNOWN_LEADER_EPOCH" % ns,
          lo and lo[0] == UNKNOWN_EPOCH, "(%s)" % (lo,))
    lo, le = list_offsets(c, topic, epoch=0), list_offsets(c, topic, ts=-2, epoch=0)
    check("%sleader: ListOffsets LATEST 3 at epoch 0, EARLIEST 0 at epoch 0" % ns,
          lo == (0, 3, 0) and le == (0, 0, 0), "(%s, %s)" % (lo, le))
    eo = end_offset(c, topic, 0, current=0)
    check("%sleader: OffsetForLeaderEpoch of epoch 0 (the current): the log end, 3" % ns, eo == (0, 0, 3), "(%s)" % (eo,))
    eo = end_offset(c, topic, 1)
    check("%sleader: OffsetForLeaderEpoch of epoch 1 (later than ours): no answer, -1 -1" % ns,
          eo == (0, -1, -1), "(%s)" % (eo,))
    eo = end_offset(c, topic, 0, current=1)
    check("%sleader: OffsetForLeaderEpoch with current leader epoch 1: UNKNOWN_LEADER_EPOCH" % ns,
          eo and eo[0] == UNKNOWN_EPOCH, "(%s)" % (eo,))
    f = fetch_flex(c, topic, 1, last_fetched_epoch=0, epoch=0)
    check("%sleader: Fetch v12 from 1 with last fetched epoch 0 (the current): no divergence, records 1, 2" % ns,
          f and f["error"] == 0 and f["offsets"] == [1, 2] and f["diverging"] is None, "(%s)" % (f,))
    f = fetch_flex(c, topic, 3, last_fetched_epoch=1)
    check("%sleader: Fetch v12 with last fetched epoch 1 (later than the leader's): OFFSET_OUT_OF_RANGE" % ns,
          f and f["error"] == OUT_OF_RANGE and not f["offsets"] and f["diverging"] is None, "(%s)" % (f,))
    c.close()


def run(root):
    pdata, sdata = os.path.join(root, "primary"), os.path.join(root, "standby")
    s2data = os.path.join(root, "standby2")
    (pport, sport, s2port), (kp1, kp2) = kafkapg.free_ports(3, 2, "57432", "39092")
    kp3 = int(kafkapg.pgcluster("free-port", kp2 + 1, pport, sport, s2port))
    nodes = "kafka.replica_nodes = 's1=1@127.0.0.1:%d/rack-b'" % kp2
    env = {"KP_KAFKA_DB": DB, "KP_EXTRA_CONF": nodes + "\nkafka.broker_rack = 'rack-a'"}
    started = []
    java = None
    java_cp = java_classpath(root)
    try:
        kafkapg.pgcluster("init", pdata, pport, kp1, env=env)
        kafkapg.pgcluster("start", pdata)
        started.append(pdata)
        kafkapg.pgcluster("create-extension", pport, DB)
        prim = kafkapg.connect(pport, DB)
        prim.autocommit = True
        sql(prim, "SELECT kafka.create_topic('fol', 1)")
        sql(prim, "SELECT kafka.create_topic('fol_epochs', 1)")
        check_leader_epochs(kp1, "fol_epochs")
        a = conn(kp1)
        for i in range(5):
            err, _ = produce(a, "fol", -1, b"p%d" % i)
            assert err == 0, err

        kafkapg.pgcluster("basebackup", pport, sdata)
        kafkapg.pgcluster("write-conf", sdata, sport, kp2, root,
                          env=dict(env, KP_EXTRA_CONF="cluster_name = 's1'\nkafka.node_id = 1\n"
                                   "kafka.broker_rack = 'rack-b'\n" + nodes))
        kafkapg.pgcluster("start", sdata)
        started.append(sdata)
        stby = kafkapg.connect(sport, DB)
        stby.autocommit = True
        wait_for("s1 streaming", lambda: sql(prim, "SELECT 1 FROM pg_stat_replication WHERE application_name = 's1' AND state = 'streaming'"))
        info("standby s1 streaming (Kafka ports %d, %d)" % (kp1, kp2))

        # 2. the standby answers at once
        dt = api_versions_time(kp2)
        check("the standby's listener answers ApiVersions at once", dt is not None and dt < 1, "(%s)" % dt)

        # 1. metadata agrees
        b = conn(kp2)
        wait_for("the standby to know the leader", lambda: (metadata(b, "fol") or (0, 0, (1, -1)))[2][1] == 0, 30)
        mp = wait_for("the primary to list s1", lambda: (lambda m: m if m and len(m[0]) == 2 else None)(metadata(a, "fol")), 30)
        ms = wait_for("the standby to list both", lambda: (lambda m: m if m and m[2][3] == mp[2][3] else None)(metadata(b, "fol")), 30)
        check("Metadata on the primary: leader 0 at epoch 0, controller 0, brokers 0 and 1 with their ports and racks",
              mp[2][:3] == (0, 0, 0) and mp[1] == 0 and mp[0] == [(0, kp1, "rack-a"), (1, kp2, "rack-b")],
              "(%s)" % (mp,))
        check("Metadata on the standby says the same (leader, epoch, brokers, replicas, ISR)",
              ms == mp, "(standby %s, primary %s)" % (ms, mp))
        check("... replicas [0, 1]", mp[2][3] == [0, 1], "(%s)" % (mp[2],))

        # 3. fetch from the standby: what it replayed, never more
        f = wait_for("the standby to have the 5 records", lambda: (lambda x: x if x and len(x[2]) == 5 else None)(fetch(b, "fol", 0)), 30)
        check("Fetch v11 from the standby returns the primary's records, high watermark 5",
              f[0] == 0 and f[1] == 5 and [o for o, _ in f[2]] == list(range(5)), "(%s)" % (f,))
        check("... stamped with leader epoch 0", all(e == 0 for _, e in f[2]), "(%s)" % (f[2],))
        sql(stby, "SELECT pg_wal_replay_pause()")
        wait_for("replay paused", lambda: sql(stby, "SELECT pg_get_wal_replay_pause_state() = 'paused'")[0][0])
        for i in range(3):
            produce(a, "fol", -1, b"q%d" % i)
        f = fetch(b, "fol", 5)
        check("replay paused: records produced on the primary are not served, high watermark stays 5",
              f and f[0] == 0 and f[1] == 5 and not f[2], "(%s)" % (f,))
        fb = fetch(b, "fol", 0)
        check("... a Fetch from 0 returns exactly the 5 replayed", fb and [o for o, _ in fb[2]] == list(range(5)), "(%s)" % (fb,))
        ls, lp = list_offsets(b, "fol"), list_offsets(a, "fol")
        check("... ListOffsets LATEST of a consumer on the standby: its replayed end, 5 (the primary's: 8)",
              ls == (0, 5, 0) and lp == (0, 8, 0), "(standby %s, primary %s)" % (ls, lp))
        got = {}

        def parked():
            t = time.time()
            got["f"] = fetch(conn(kp2), "fol", 5, max_wait_ms=20000, timeout=60)
            got["dt"] = time.time() - t
        th = threading.Thread(target=parked)
        th.start()
        time.sleep(1.5)
        waiting = th.is_alive()
        t_resume = time.time()
        sql(stby, "SELECT pg_wal_replay_resume()")
        th.join(60)
        f = got.get("f")
        check("a Fetch parked on the standby returns the new records once replay resumes",
              waiting and f and f[0] == 0 and [o for o, _ in f[2]] == [5, 6, 7] and f[1] == 8
              and time.time() - t_resume < 10,
              "(waited %s, %s in %.1fs)" % (waiting, f, got.get("dt", -1)))

        # KIP-392: a consumer of rack-b is sent to s1
        pref = []
        f = fetch(conn(kp1), "fol", 0, rack="rack-b", preferred=pref)
        check("Fetch v11 to the primary from a consumer of rack-b: preferred read replica 1, no records",
              f and f[0] == 0 and not f[2] and f[1] == 8 and pref == [1], "(%s, preferred %s)" % (f, pref))
        pref = []
        f = fetch(conn(kp1), "fol", 0, rack="rack-a", preferred=pref)
        check("... of rack-a (the leader's): no preferred replica, the records",
              f and f[0] == 0 and len(f[2]) == 8 and pref == [-1], "(%s, preferred %s)" % (f, pref))
        pref = []
        f = fetch(conn(kp1), "fol", 0, rack="rack-c", preferred=pref)
        check("... of rack-c (no replica there): the leader", f and len(f[2]) == 8 and pref == [-1], "(%s)" % (pref,))
        vals, broker = rd_consume_rack(kp1, "fol", "rackb", 8, "rack-b")
        check("librdkafka consumer with client.rack=rack-b, bootstrapped at the primary: reads all 8 from s1 (node 1)",
              len(vals) == 8 and broker == 1, "(%d records, fetched from broker %s)" % (len(vals), broker))

        # 4. writes are refused, as a Kafka follower refuses them
        leo = sql(stby, "SELECT log_end_offset FROM kafka.partition_status WHERE topic = 'fol'")[0][0]
        r1, rall = produce(b, "fol", 1), produce(b, "fol", -1)
        check("Produce acks=1 and acks=all to the standby: NOT_LEADER_OR_FOLLOWER",
              r1 and r1[0] == NOT_LEADER and rall and rall[0] == NOT_LEADER, "(%s, %s)" % (r1, rall))
        c0 = conn(kp2)
        batch = kc.build_batch(0, [b"zero"])
        c0.send(0, 8, string(None) + i16(0) + i32(10000) + array([string("fol") + array([i32(0) + kc.nbytes(batch)])]))
        closed = c0.recv(timeout=5) is None
        check("Produce acks=0 to the standby: the connection is closed (Kafka's answer)", closed)
        check("CreateTopics on the standby: NOT_CONTROLLER", kc.create_topic(b, "fol_new") == NOT_CONTROLLER)
        mn = metadata(b, "fol_auto", allow_create=True)
        check("Metadata of a missing topic on the standby (auto-creation on): LEADER_NOT_AVAILABLE, not created",
              mn and mn[2][0] == 5, "(%s)" % (mn,))
        check("OffsetCommit on the standby: NOT_COORDINATOR",
              kc.offset_commit(b, "g1", "fol", 1, "m") == NOT_COORDINATOR)
        of = offset_fetch_error(b, "g1", "fol")
        check("OffsetFetch on the standby: NOT_COORDINATOR", of == NOT_COORDINATOR, "(%s)" % (of,))
        ip = init_producer_id(b)
        check("InitProducerId (idempotent) on the standby: an id from the standby's own range (bit 61, node 1; "
              "not bit 62, the SQL transactions' flag)",
              ip and ip[0] == 0 and ip[1] >> 61 == 1 and (ip[1] >> 45) & 0xFFFF == 1 and ip[2] == 0, "(%s)" % (ip,))
        ip2 = init_producer_id(b)
        check("... a second one is another id", ip2 and ip2[0] == 0 and ip2[1] != ip[1], "(%s, %s)" % (ip, ip2))
        lo, le, l0 = list_offsets(b, "fol"), list_offsets(b, "fol", ts=-2), list_offsets(b, "fol", ts=0)
        check("ListOffsets of a consumer on the standby: LATEST its replayed end 8, EARLIEST 0, "
              "timestamp 0 the first record, 0 (all at epoch 0)",
              lo == (0, 8, 0) and le == (0, 0, 0) and l0 and l0[:2] == (0, 0) and l0[2] == 0,
              "(%s, %s, %s)" % (lo, le, l0))
        future = int(time.time() * 1000) + 3600 * 1000
        lf, lf2 = list_offsets(b, "fol", ts=future), list_offsets(b, "fol", ts=future, replica=-2)
        check("... a timestamp with no record replayed: NOT_LEADER_OR_FOLLOWER for a consumer (only the leader "
              "knows), none (-1) for the debugging replica id -2 (Kafka's follower answer)",
              lf and lf[0] == NOT_LEADER and lf2 == (0, -1, -1), "(%s, %s)" % (lf, lf2))
        lr = list_offsets(b, "fol", replica=1)
        check("... from a replica id (a follower broker's): NOT_LEADER_OR_FOLLOWER", lr and lr[0] == NOT_LEADER, "(%s)" % (lr,))
        lo = list_offsets(b, "fol", replica=-2)
        check("... the debugging replica id -2: the replayed end, 8",
              lo and lo[0] == 0 and lo[1] == 8, "(%s)" % (lo,))
        eo, eo1, eor = end_offset(b, "fol", 0), end_offset(b, "fol", 1), end_offset(b, "fol", 0, replica=1)
        check("OffsetForLeaderEpoch on the standby of epoch 0 (the current: its end is the primary's to say), "
              "of epoch 1 (later), and from a replica id: NOT_LEADER_OR_FOLLOWER",
              eo and eo[0] == NOT_LEADER and eo1 and eo1[0] == NOT_LEADER and eor and eor[0] == NOT_LEADER,
              "(%s, %s, %s)" % (eo, eo1, eor))
        f = fetch_flex(b, "fol", 8, last_fetched_epoch=0)
        check("Fetch v12 on the standby at its end with last fetched epoch 0 (still the primary's): "
              "no divergence, no records, high watermark 8",
              f and f["error"] == 0 and f["hw"] == 8 and not f["offsets"] and f["diverging"] is None, "(%s)" % (f,))
        pv = produce_flex(b, "fol", acks=1)
        check("KIP-951: Produce v10 to the standby: NOT_LEADER_OR_FOLLOWER naming the leader (node 0, epoch 0) "
              "and its endpoint",
              pv and pv[0] == NOT_LEADER and pv[1] == (0, 0) and pv[2] == [(0, "127.0.0.1", kp1, "rack-a")],
              "(%s)" % (pv,))
        tid = uuid.UUID(sql(prim, "SELECT topic_uuid::text FROM kafka.topics WHERE name = 'fol'")[0][0]).bytes
        sf = share_fetch_flex(b, tid)
        check("ShareFetch v1 to the standby: NOT_LEADER_OR_FOLLOWER for the partition, naming the leader "
              "(node 0, epoch 0) and its endpoint; no error for the whole request",
              sf and sf[0] == 0 and sf[1] == NOT_LEADER and sf[2] == (0, 0)
              and sf[3] == [(0, "127.0.0.1", kp1, "rack-a")], "(%s)" % (sf,))
        sa = share_ack_flex(b, tid)
        check("ShareAcknowledge v1 to the standby: the same", sa and sa[0] == 0 and sa[1] == NOT_LEADER and sa[2] == (0, 0)
              and sa[3] == [(0, "127.0.0.1", kp1, "rack-a")], "(%s)" % (sa,))
        fr = fetch_replica_error(b, "fol", 1)
        check("Fetch v11 from a replica id (a follower broker's) to the standby: NOT_LEADER_OR_FOLLOWER for the partition",
              fr == NOT_LEADER, "(%s)" % (fr,))
        fc = find_coordinator(b, "g1")
        check("FindCoordinator on the standby names the primary", fc == (0, 0, kp1), "(%s)" % (fc,))
        lg = list_groups(b)
        check("ListGroups on the standby: empty, no error", lg == (0, []), "(%s)" % (lg,))
        f = fetch(b, "fol", 0, epoch=0)
        check("Fetch with current leader epoch 0 (ours): served", f and f[0] == 0 and len(f[2]) == 8, "(%s)" % (f,))
        time.sleep(0.5)
        check("nothing was written on the standby's behalf",
              sql(prim, "SELECT log_end_offset FROM kafka.partition_status WHERE topic = 'fol'")[0][0] == leo
              and not sql(prim, "SELECT 1 FROM kafka.topics WHERE name IN ('fol_new', 'fol_auto')"))

        # 5. real clients bootstrapped with the standby only find the leader
        errs = rd_produce(kp2, "fol", 4, b"rd")
        check("librdkafka producer bootstrapped at the standby: delivered (by the leader)",
              len(errs) == 4 and all(e is None for e in errs), "(%s)" % errs)
        vals, committed = rd_consume(kp2, "fol", "fg", 12)
        check("librdkafka group member bootstrapped at the standby: consumes all 12 and commits",
              len(vals) == 12 and committed, "(%d records, committed %s)" % (len(vals), committed))
        a.close()
        b.close()

        # the Java consumer of rack-b: from the standby (KIP-392), then through the failover below
        jout, jstop = os.path.join(root, "java.out"), os.path.join(root, "java.stop")
        java = subprocess.Popen(["java", "-cp", java_cp, "FollowerConsumer", "127.0.0.1:%d,127.0.0.1:%d" % (kp1, kp2),
                                 "fol", "rack-b", jout, jstop], stdout=open(os.path.join(root, "java.log"), "w"),
                                stderr=subprocess.STDOUT)
        try:
            ev = wait_for("the Java consumer to read the 12 records",
                          lambda: (lambda e: e if len([x for x in e if x["t"] == "rec"]) >= 12 else None)(java_events(jout)), 60)
        except RuntimeError:
            ev = java_events(jout)
        recs = [(x["o"], x["e"]) for x in ev if x["t"] == "rec"]
        prefs = [x["v"] for x in ev if x["t"] == "pref"]
        check("Java consumer (kafka-clients 4.4) with client.rack=rack-b: reads the 12 records, at epoch 0, "
              "with preferred read replica 1 (fetching from the standby)",
              recs == [(o, 0) for o in range(12)] and ("1" in prefs or "1.0" in prefs), "(%s; preferred %s)" % (recs, prefs))

        # 6. the standby misses records; the primary dies; promotion
        wait_for("the standby to catch up", lambda: sql(stby, "SELECT log_end_offset FROM kafka.partition_status WHERE topic = 'fol'")[0][0] == 12)
        kafkapg.pgcluster("stop", sdata)
        started.remove(sdata)
        a = conn(kp1)
        for i in range(3):
            err, _ = produce(a, "fol", -1, b"lost%d" % i)
        f = fetch(a, "fol", 12)
        check("standby stopped: 3 more records acknowledged and read on the primary (offsets 12..14)",
              f and [o for o, _ in f[2]] == [12, 13, 14], "(%s)" % (f,))
        try:
            wait_for("the Java consumer to read them from the leader",
                     lambda: any(x["t"] == "rec" and x["o"] == 14 for x in java_events(jout)), 60)
        except RuntimeError:
            pass
        ev = java_events(jout)
        check("... the Java consumer, its standby gone, reads them from the leader (12..14 at epoch 0)",
              [(x["o"], x["e"], x["v"]) for x in ev if x["t"] == "rec" and x["o"] >= 12]
              == [(12, 0, "lost0"), (13, 0, "lost1"), (14, 0, "lost2")], "(%s)" % (ev[-6:],))
        a.close()
        kafkapg.pgcluster("stop", pdata)
        started.remove(pdata)
        kafkapg.pgcluster("start", sdata)
        started.append(sdata)
        b = wait_for("the standby's listener", lambda: connect_when_up(kp2), 60)
        md = metadata(b, "fol")
        check("a standby to which no primary streams (its primary is down) answers nothing and closes "
              "the connection: it does not know who leads", md is None, "(%s)" % (md,))
        stby = kafkapg.connect(sport, DB)
        stby.autocommit = True
        sql(stby, "SELECT pg_promote()")
        info("standby promoted")
        md = wait_for("node 1 to lead at epoch 1", lambda: (lambda m: m if m and m[2][1] == 1 else None)(metadata(b, "fol")), 30)
        check("after pg_promote (listener not restarted): Metadata names node 1 leader at epoch 1, controller 1",
              md[2][:3] == (0, 1, 1) and md[1] == 1, "(%s)" % (md,))
        res = produce(b, "fol", -1, b"new0")
        check("Produce acks=all to the promoted standby is accepted at offset 12 (the primary's 12..14 are lost)",
              res == (0, 12), "(%s)" % (res,))
        errs = rd_produce(kp2, "fol", 2, b"after")
        check("... and a librdkafka producer's", len(errs) == 2 and all(e is None for e in errs), "(%s)" % errs)
        f = fetch(b, "fol", 10, epoch=1)
        recs = [x for x in (f[2] if f else []) if x[0] >= 10]
        check("batches appended before the promotion carry leader epoch 0, after it 1",
              f and f[0] == 0 and recs == [(10, 0), (11, 0), (12, 1), (13, 1), (14, 1)], "(%s)" % (f,))
        f0, f2 = fetch(b, "fol", 0, epoch=0), fetch(b, "fol", 0, epoch=2)
        check("Fetch with the old leader epoch 0: FENCED_LEADER_EPOCH; with 2: UNKNOWN_LEADER_EPOCH",
              f0 and f0[0] == FENCED and f2 and f2[0] == UNKNOWN_EPOCH, "(%s, %s)" % (f0, f2))
        l0, l1 = list_offsets(b, "fol", epoch=0), list_offsets(b, "fol", epoch=1)
        check("ListOffsets with epoch 0: FENCED_LEADER_EPOCH; with 1: the end, 15, at epoch 1",
              l0 and l0[0] == FENCED and l1 == (0, 15, 1), "(%s, %s)" % (l0, l1))
        le = list_offsets(b, "fol", ts=-2, epoch=1)
        check("... EARLIEST: offset 0 at epoch 0", le == (0, 0, 0), "(%s)" % (le,))
        eo = end_offset(b, "fol", 0, current=1)
        check("OffsetForLeaderEpoch of epoch 0: ends at 12 on the new leader, below the 15 a consumer "
              "reached on the old one (the truncation it detects)", eo == (0, 0, 12), "(%s)" % (eo,))
        eo1 = end_offset(b, "fol", 1, current=1)
        check("... of epoch 1 (the current): the log end, 15", eo1 == (0, 1, 15), "(%s)" % (eo1,))
        eo2 = end_offset(b, "fol", 0, current=0)
        check("... with current leader epoch 0: FENCED_LEADER_EPOCH", eo2 and eo2[0] == FENCED, "(%s)" % (eo2,))
        row = wait_for("kafka.leader to name node 1",
                       lambda: sql(stby, "SELECT node_id, port, leader_epoch FROM kafka.leader WHERE node_id = 1"), 10)
        check("kafka.leader (what standbys of the new primary report) names node 1, epoch 1",
              row == [(1, kp2, 1)], "(%s)" % row)
        tid = uuid.UUID(sql(stby, "SELECT topic_uuid::text FROM kafka.topics WHERE name = 'fol'")[0][0]).bytes
        f = fetch_flex(b, "fol", 0, version=16, epoch=0, topic_id=tid)
        check("KIP-951: Fetch v16 with the old epoch 0: FENCED_LEADER_EPOCH naming the leader (node 1, epoch 1) "
              "and its endpoint",
              f and f["error"] == FENCED and f["current_leader"] == (1, 1)
              and f["node_endpoints"] == [(1, "127.0.0.1", kp2, "rack-b")], "(%s)" % (f,))
        f = fetch_flex(b, "fol", 15, last_fetched_epoch=0)
        check("Fetch v12 at 15 with last fetched epoch 0 (a log that read 12..14 on the old primary): "
              "diverging epoch 0 ending at 12, no records",
              f and f["error"] == 0 and f["diverging"] == (0, 12) and not f["offsets"], "(%s)" % (f,))
        f = fetch_flex(b, "fol", 12, last_fetched_epoch=0)
        check("... at 12 with last fetched epoch 0: no divergence, the records 12..14",
              f and f["error"] == 0 and f["diverging"] is None and f["offsets"] == [12, 13, 14], "(%s)" % (f,))

        # the Java consumer detects the truncation and reads the new leader's records
        try:
            wait_for("the Java consumer to read the new records",
                     lambda: any(x["t"] == "rec" and x["e"] == 1 and x["o"] == 14 for x in java_events(jout)), 60)
        except RuntimeError:
            pass
        ev = java_events(jout)
        after = [(x["o"], x["e"], x["v"]) for x in ev if x["t"] == "rec" and x["e"] == 1]
        check("Java consumer across the promotion: its position validation (OffsetForLeaderEpoch) finds epoch 0 "
              "ends at 12 and it reads the new leader's 12..14 at epoch 1",
              after == [(12, 1, "new0"), (13, 1, "after-0"), (14, 1, "after-1")], "(%s)" % (ev[-8:],))
        b.close()

        # a standby of the new primary (node 2): it knows two epochs
        kafkapg.pgcluster("basebackup", sport, s2data)
        kafkapg.pgcluster("write-conf", s2data, s2port, kp3, root,
                          env=dict(env, KP_EXTRA_CONF="cluster_name = 's2'\nkafka.node_id = 2\n" + nodes))
        kafkapg.pgcluster("start", s2data)
        started.append(s2data)
        wait_for("s2 streaming", lambda: sql(stby, "SELECT 1 FROM pg_stat_replication WHERE application_name = 's2' AND state = 'streaming'"))
        c2 = wait_for("s2's listener", lambda: connect_when_up(kp3), 60)
        md = wait_for("s2 to name node 1", lambda: (lambda m: m if m and m[2][1] == 1 else None)(metadata(c2, "fol")), 30)
        check("standby s2 of the promoted node 1: Metadata names node 1 leader at epoch 1", md[2][:3] == (0, 1, 1), "(%s)" % (md,))
        eo0, eo1 = end_offset(c2, "fol", 0), end_offset(c2, "fol", 1)
        check("OffsetForLeaderEpoch on s2: epoch 0 ends at 12 (a batch of epoch 1 replayed: final, served); "
              "epoch 1, the current, NOT_LEADER_OR_FOLLOWER",
              eo0 == (0, 0, 12) and eo1 and eo1[0] == NOT_LEADER, "(%s, %s)" % (eo0, eo1))
        f = fetch_flex(c2, "fol", 15, last_fetched_epoch=0)
        check("Fetch v12 on s2 at 15 with last fetched epoch 0: diverging epoch 0 ending at 12",
              f and f["error"] == 0 and f["diverging"] == (0, 12), "(%s)" % (f,))
        f = fetch_flex(c2, "fol", 0, version=16, epoch=0, topic_id=tid)
        check("KIP-951 on s2: Fetch v16 with epoch 0 FENCED_LEADER_EPOCH naming node 1 at epoch 1 and its endpoint",
              f and f["error"] == FENCED and f["current_leader"] == (1, 1)
              and f["node_endpoints"] == [(1, "127.0.0.1", kp2, "rack-b")], "(%s)" % (f,))
        pv = produce_flex(c2, "fol", acks=-1)
        check("KIP-951 on s2: Produce v10 NOT_LEADER_OR_FOLLOWER naming node 1 at epoch 1 and its endpoint",
              pv and pv[0] == NOT_LEADER and pv[1] == (1, 1) and pv[2] == [(1, "127.0.0.1", kp2, "rack-b")],
              "(%s)" % (pv,))
        lo = list_offsets(c2, "fol", epoch=1)
        check("ListOffsets LATEST on s2: 15 at epoch 1", lo == (0, 15, 1), "(%s)" % (lo,))
        c2.close()
    finally:
        if java is not None:
            open(jstop, "w").close()
            try:
                java.wait(15)
            except subprocess.TimeoutExpired:
                java.kill()
        kafkapg.stop_clusters(started)
        kafkapg.check_server_logs([d for d in (pdata, sdata, s2data) if os.path.exists(d)], check, 40)


def main():
    signal.signal(signal.SIGTERM, lambda *a: sys.exit("follower test: terminated (timeout?)"))
    if len(ARGS) == 2 and ARGS[0] == "--against":
        host, port = ARGS[1].rsplit(":", 1)
        assert host == "127.0.0.1"
        check_leader_epochs(int(port), "fol_epochs_%d" % int(time.time()), ns="kafka: ")
        finish()
        return
    kafkapg.run_in_tmp("follower", run, check, (subprocess.CalledProcessError, RuntimeError, OSError, AssertionError))
    finish()


if __name__ == "__main__":
    main()
