#!/usr/bin/python3
"""test/standby/replicas_test.py: streaming standbys as Kafka replicas (issue 11, docs/replication.md).

A primary (one listener worker, so that every connection shares it) and a
standby made by pg_basebackup, streaming as application_name s1:

Metadata and DescribeTopicPartitions (kafka.replica_nodes names s1 node 1):
replicas [0, 1]; ISR [0] and offline [1] while s1 is not streaming, ISR
[0, 1] while it streams as a synchronous standby.

0. No kafka.replica_nodes (one replica, as a Kafka topic of replication
   factor 1): min.insync.replicas=2 asks for no more than one replica,
   acks=all is accepted (raw and librdkafka); Metadata says replicas and ISR
   [0].
1. s1 listed in kafka.replica_nodes (two replicas), min.insync.replicas=2
   and no standby: Produce acks=all answers NOT_ENOUGH_REPLICAS (19) at once and stores nothing; acks=1 is accepted;
   a librdkafka producer (acks=all, no retries) gets NOT_ENOUGH_REPLICAS.
2. With the standby streaming and synchronous_standby_names = 'FIRST 1 (s1)':
   acks=all to the min.insync.replicas=2 topic is accepted (librdkafka too); 20 acks=all in a
   row and 10 Fetches parked at the log end (woken by an acks=1 record, then waiting for the
   standby to confirm it) are answered without the loop's 1 s rest (the walsender wakes the
   worker).
3. The standby stopped (synchronous_standby_names still set): acks=all to the
   min.insync.replicas=2 topic is refused at once; to a topic with the
   default min.insync.replicas=1 it waits, and while it waits a Metadata and
   a Fetch on another connection of the same worker are answered at once;
   with timeout_ms=3000 it answers REQUEST_TIMED_OUT (7) after ~3 s; a second
   one with a long timeout is answered with no error once the standby is
   back.  Meanwhile an acks=1 record is stored but the high watermark (Fetch,
   ListOffsets) stays below it, and a Fetch parked there is answered once s1
   has it.  The listener's own commits are local and their answers wait: an
   OffsetCommit and a CreateTopics (each on a connection of the same worker)
   stay unanswered, though the commit is there, while Metadata, Fetch and an
   acks=1 Produce on another connection are answered; both are answered once
   s1 is back, and OffsetFetch returns the offset.
4. Neither server log shows a PANIC or a crash.

Prints "ok - ..." / "not ok - ..." lines and "N passed, M failed".

`replicas_test.py --against HOST:PORT` runs the checks of 0 against another
broker, e.g. Apache Kafka 4.4 started by test/clients/kafka/kafka.sh, so that
a difference is known to be ours (Kafka 4.4 accepts acks=all there too: its
effective min ISR is at most the replication factor).
"""

import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "wire"))
import kafkapg  # noqa: E402

ARGS = sys.argv[1:]
sys.argv[1:] = ["127.0.0.1:0"]  # conformance.py reads HOST:PORT at import; set below
import conformance as kc  # noqa: E402
from tap import check, finish  # noqa: E402

DB = "postgres"
NOT_ENOUGH_REPLICAS = 19
REQUEST_TIMED_OUT = 7


def info(msg):
    print("# [%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def produce(c, topic, acks, timeout_ms=30000, send_only=False, value=b"v"):
    """Produce v8 of one record to partition 0; (error, base offset) or the correlation id."""
    batch = kc.build_batch(0, [value])
    pd = kc.i32(0) + kc.nbytes(batch)
    body = kc.string(None) + kc.i16(acks) + kc.i32(timeout_ms) + kc.array([kc.string(topic) + kc.array([pd])])
    if send_only:
        return c.send(0, 8, body)
    r = c.call(0, 8, body, timeout=timeout_ms / 1000 + 30)
    return read_produce(r)


def read_produce(r):
    if r is None:
        return None, None

    def part():
        idx, err, base = r.i32(), r.i16(), r.i64()
        r.i64(), r.i64()
        r.array(lambda: (r.i32(), r.string()))
        r.string()
        return err, base
    res = r.array(lambda: (r.string(), r.array(part)))
    return res[0][1][0]


def metadata(c, topic, timeout=30):
    """Metadata v7 (the last before flexible versions): {partition: (leader, epoch, replicas, isr)}."""
    r = c.call(3, 7, kc.array([kc.string(topic)]) + kc.i8(0), timeout=timeout)
    if r is None:
        return None
    r.i32()  # throttle
    r.array(lambda: (r.i32(), r.string(), r.i32(), r.string()))  # brokers
    r.string(), r.i32()  # cluster id, controller

    def part():
        err, idx, leader, epoch = r.i16(), r.i32(), r.i32(), r.i32()
        reps = r.array(r.i32)
        isr = r.array(r.i32)
        offline = r.array(r.i32)
        return idx, (leader, epoch, reps, isr, offline)
    topics = r.array(lambda: (r.i16(), r.string(), r.i8(), r.array(part)))
    return dict(topics[0][3])


def uvarint(r):
    shift = v = 0
    while True:
        b = r.take(1)[0]
        v |= (b & 0x7f) << shift
        if not b & 0x80:
            return v
        shift += 7


def describe_partitions(port, topic):
    """DescribeTopicPartitions v0 (flexible): partition 0's (replicas, isr, offline)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    name = topic.encode()
    hdr = struct.pack(">hhi", 75, 0, 1) + kc.string(b"replicas") + b"\0"
    body = b"\x02" + bytes([len(name) + 1]) + name + b"\0" + kc.i32(100) + b"\xff" + b"\0"
    msg = hdr + body
    s.sendall(kc.i32(len(msg)) + msg)
    c = kc.Conn.__new__(kc.Conn)
    c.s = s
    r = c.recv()
    s.close()
    if r is None:
        return None
    uvarint(r)  # response header tags
    r.i32()  # throttle

    def carr():
        n = uvarint(r) - 1
        return None if n < 0 else [r.i32() for _ in range(n)]
    uvarint(r)  # topics: 1
    r.i16()
    r.take(uvarint(r) - 1)  # name
    r.take(16), r.i8()
    nparts = uvarint(r) - 1
    out = None
    for _ in range(nparts):
        r.i16(), r.i32(), r.i32(), r.i32()
        reps, isr = carr(), carr()
        carr(), carr()
        offline = carr()
        uvarint(r)
        out = out or (reps, isr, offline)
    return out


def fetch(c, topic, offset, max_wait_ms=0, isolation=0, timeout=30):
    """Fetch v11 of partition 0: (error, high watermark, last stable offset, [record offsets])."""
    body = (kc.i32(-1) + kc.i32(max_wait_ms) + kc.i32(1) + kc.i32(1 << 20) + kc.i8(isolation) + kc.i32(0)
            + kc.i32(-1) + kc.array([kc.string(topic) + kc.array([kc.i32(0) + kc.i32(-1) + kc.i64(offset)
                                                                  + kc.i64(-1) + kc.i32(1 << 20)])])
            + kc.array([]) + kc.string(""))
    r = c.call(1, 11, body, timeout=timeout)
    if r is None:
        return None
    r.i32(), r.i16(), r.i32()

    def part():
        p, err, hw, lso = r.i32(), r.i16(), r.i64(), r.i64()
        r.i64()
        r.array(lambda: (r.i64(), r.i64()))
        r.i32()
        recs = r.nbytes() or b""
        offs = []
        for b in kc.batches(recs):
            base = kc.struct.unpack(">q", b[0:8])[0]
            last_delta = kc.struct.unpack(">i", b[23:27])[0]
            offs.extend(range(base, base + last_delta + 1))
        return err, hw, lso, offs
    return r.array(lambda: (r.string(), r.array(part)))[0][1][0]


def list_latest(c, topic, isolation=0):
    """ListOffsets v2, LATEST, partition 0."""
    body = kc.i32(-1) + kc.i8(isolation) + kc.array([kc.string(topic) + kc.array([kc.i32(0) + kc.i64(-1)])])
    r = c.call(2, 2, body)
    if r is None:
        return None
    r.i32()
    out = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64()))))
    return out[0][1][0][3]


def sql(conn, q, args=None):
    cur = conn.cursor()
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


def rdkafka_produce(port, topic, n=3, host="127.0.0.1"):
    """librdkafka, acks=all, no retries: the delivery errors (None for success)."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": "%s:%d" % (host, port), "acks": "all", "retries": 0,
                  "enable.idempotence": False, "message.timeout.ms": 20000,
                  "request.timeout.ms": 15000})
    errs = []
    for i in range(n):
        p.produce(topic, value=b"rd%d" % i, partition=0,
                  on_delivery=lambda err, msg: errs.append(err))
    p.flush(30)
    return errs


def start_sync_standby(prim, pport, sdata, sport, kp2, root, env, started):
    """A standby s1 (node 1) made by pg_basebackup of the primary, started (appended to started)
    and made its synchronous standby ('FIRST 1 (s1)'); returns once the primary waits for it.

    pg_stat_replication says 'sync' as soon as the walsender and the asking backend have
    reloaded; commits (and acks=all) wait for the standby only once the checkpointer has
    reloaded too and published it (WalSndCtl->sync_standbys_defined), and the ISR follows
    that (src/store/isr.c). On two busy cores the checkpointer can be that moment late: the
    ISR the listener's worker 0 publishes in kafka.leader is the sign the primary waits."""
    kafkapg.pgcluster("basebackup", pport, sdata)
    kafkapg.pgcluster("write-conf", sdata, sport, kp2, root,
                      env=dict(env, KP_EXTRA_CONF="cluster_name = 's1'\nkafka.node_id = 1\n"
                               "kafka.replica_nodes = 's1=1@127.0.0.1:%d'" % kp2))
    kafkapg.pgcluster("start", sdata)
    started.append(sdata)
    sql(prim, "ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 (s1)'")
    sql(prim, "SELECT pg_reload_conf()")
    wait_for("s1 to be a synchronous standby", lambda: sql(
        prim, "SELECT 1 FROM pg_stat_replication WHERE application_name = 's1' "
              "AND sync_state = 'sync' AND state = 'streaming'"))
    wait_for("the primary to wait for s1 (s1 in the ISR of kafka.leader)", lambda: sql(
        prim, "SELECT 1 FROM kafka.leader WHERE 1 = ANY (isr)"), 30)
    info("standby s1 streaming, synchronous")


def check_single_broker(host, port, leader, ns=""):
    """One broker whose partitions have no other replica (kafka_pg without kafka.replica_nodes, or
    Apache Kafka with replication factor 1): min.insync.replicas=2 asks for no more than the one
    replica (Kafka's effective min ISR), so acks=all is accepted."""
    kc.HOST, kc.PORT = host, port
    a = kc.Conn()
    t_min2, t_plain = "r_one" + ns, "r_plain" + ns
    if ns:  # another broker: make the topics over the wire
        for t, cfg in ((t_min2, {"min.insync.replicas": "2"}), (t_plain, None)):
            err = kc.create_topic(a, t, cfg)
            check("CreateTopics %s" % t, err == 0, "(error %s)" % err)
        time.sleep(1)
    err, base = produce(a, t_min2, -1)
    check("one replica, min.insync.replicas=2: acks=all accepted (the effective min ISR is the replication factor)",
          err == 0 and base == 0, "(error %s, base offset %s)" % (err, base))
    errs = rdkafka_produce(port, t_min2, host=host)
    check("... librdkafka acks=all delivered", len(errs) == 3 and all(e is None for e in errs), "(%s)" % errs)
    md = metadata(a, t_plain)
    check("Metadata: replicas and ISR the leader alone", md and md[0][2] == [leader] and md[0][3] == [leader],
          "(%s)" % md)
    a.close()


def run(root):
    pdata, sdata = os.path.join(root, "primary"), os.path.join(root, "standby")
    (pport, sport), (kp1, kp2) = kafkapg.free_ports(2, 2, "57432", "39092")
    env = {"KP_KAFKA_DB": DB, "KP_EXTRA_CONF": "kafka.listener_workers = 1"}
    started = []
    try:
        kafkapg.pgcluster("init", pdata, pport, kp1, env=env)
        kafkapg.pgcluster("start", pdata)
        started.append(pdata)
        kafkapg.pgcluster("create-extension", pport, DB)
        prim = kafkapg.connect(pport, DB)
        sql(prim, "SELECT kafka.create_topic('r_min2', 1, '{\"min.insync.replicas\": \"2\"}')")
        sql(prim, "SELECT kafka.create_topic('r_one', 1, '{\"min.insync.replicas\": \"2\"}')")
        sql(prim, "SELECT kafka.create_topic('r_plain', 1)")
        kc.HOST, kc.PORT = "127.0.0.1", kp1
        a = kc.Conn()

        # 1. no standby; first without kafka.replica_nodes (one replica), then with s1 listed
        check_single_broker("127.0.0.1", kp1, 0)
        sql(prim, "ALTER SYSTEM SET kafka.replica_nodes = 's1=1@127.0.0.1:%d'" % kp2)
        sql(prim, "SELECT pg_reload_conf()")
        wait_for("the listener to list s1", lambda: (metadata(a, "r_plain") or {0: [0, 0, []]})[0][2] == [0, 1], 20)
        t0 = time.time()
        err, _ = produce(a, "r_min2", -1)
        dt = time.time() - t0
        check("s1 listed (2 replicas) but not streaming, min.insync.replicas=2: acks=all answers NOT_ENOUGH_REPLICAS at once",
              err == NOT_ENOUGH_REPLICAS and dt < 2, "(error %s after %.1fs)" % (err, dt))
        latest = list_latest(a, "r_min2")
        stored = sql(prim, "SELECT count(*) FROM kafka.fetch('r_min2', 0, 0, 100)")[0][0]
        check("... and stores nothing", latest == 0 and stored == 0, "(latest %s, %d records)" % (latest, stored))
        err, base = produce(a, "r_min2", 1)
        check("... acks=1 is accepted", err == 0 and base == 0, "(error %s, base offset %s)" % (err, base))
        errs = rdkafka_produce(kp1, "r_min2")
        codes = [e.code() if e else 0 for e in errs]
        check("... librdkafka acks=all gets NOT_ENOUGH_REPLICAS",
              len(codes) == 3 and all(c == NOT_ENOUGH_REPLICAS for c in codes), "(%s)" % codes)
        md = metadata(a, "r_plain")
        check("Metadata with s1 (node 1) not streaming: replicas [0, 1], ISR [0], offline [1]",
              md and md[0][2] == [0, 1] and md[0][3] == [0] and md[0][4] == [1], "(%s)" % md)
        dp = describe_partitions(kp1, "r_plain")
        check("DescribeTopicPartitions says the same", dp == ([0, 1], [0], [1]), "(%s)" % (dp,))

        # 2. a synchronous standby streaming
        start_sync_standby(prim, pport, sdata, sport, kp2, root, env, started)
        md = metadata(a, "r_plain")
        check("Metadata with s1 streaming and synchronous: replicas [0, 1], ISR [0, 1], none offline",
              md and md[0][2] == [0, 1] and md[0][3] == [0, 1] and not md[0][4], "(%s)" % md)
        dp = describe_partitions(kp1, "r_plain")
        check("DescribeTopicPartitions says the same", dp == ([0, 1], [0, 1], []), "(%s)" % (dp,))
        err, base = produce(a, "r_min2", -1)
        check("min.insync.replicas=2 with a synchronous standby streaming: acks=all accepted",
              err == 0 and base is not None and base >= 1, "(error %s, base offset %s)" % (err, base))
        for _ in range(2):
            produce(a, "r_plain", -1)
        errs = rdkafka_produce(kp1, "r_min2")
        check("librdkafka acks=all to min.insync.replicas=2 with the standby: delivered",
              len(errs) == 3 and all(e is None for e in errs), "(%s)" % errs)

        # The worker is woken by the walsender when the standby confirms (src/store/isr.c,
        # kp_isr_wake_at), not by a timer: with nothing to wake it, its loop rests up to 1 s.
        # 20 acks=all in a row, and 10 Fetches parked at the log end then woken by an acks=1
        # record (run again by the append, they find it above the high watermark and wait for
        # the standby's confirmation), are each answered well within that.
        t0 = time.time()
        errs = [produce(a, "r_min2", -1)[0] for _ in range(20)]
        dt_acks = time.time() - t0
        check("20 acks=all in a row with the synchronous standby: all answered, in %.2fs (less than 8s: "
              "the standby's confirmation wakes the worker)" % dt_acks,
              errs == [0] * 20 and dt_acks < 8, "(%s)" % errs)
        fc = kc.Conn()
        fetched_ok = 0
        t0 = time.time()
        for _ in range(10):
            end = list_latest(a, "r_plain")
            got = {}
            th = threading.Thread(target=lambda: got.update(f=fetch(fc, "r_plain", end, max_wait_ms=20000)))
            th.start()
            time.sleep(0.05)
            produce(a, "r_plain", 1)
            th.join(40)
            f = got.get("f")
            if f and f[0] == 0 and f[3] and f[3][0] == end:
                fetched_ok += 1
        dt_fetch = time.time() - t0 - 0.5
        fc.close()
        check("10 Fetches parked at the log end return the acks=1 record appended then, each once the "
              "standby confirms it: in %.2fs besides the pauses (less than 5s)" % dt_fetch,
              fetched_ok == 10 and dt_fetch < 5, "(%d of 10)" % fetched_ok)

        g, h = kc.Conn(), kc.Conn()  # for the commits of 3
        check("FindCoordinator for the group of 3", kc.find_coordinator(g, "r_group") == 0)

        # 3. the standby goes away; synchronous_standby_names stays
        kafkapg.pgcluster("stop", sdata)
        started.remove(sdata)
        wait_for("the walsender to go", lambda: not sql(prim, "SELECT 1 FROM pg_stat_replication"))
        md = metadata(a, "r_plain")
        check("Metadata once s1 stopped: ISR [0] again, offline [1]",
              md and md[0][3] == [0] and md[0][4] == [1], "(%s)" % md)
        t0 = time.time()
        err, _ = produce(a, "r_min2", -1)
        dt = time.time() - t0
        check("standby gone: min.insync.replicas=2 acks=all refused at once with NOT_ENOUGH_REPLICAS",
              err == NOT_ENOUGH_REPLICAS and dt < 2, "(error %s after %.1fs)" % (err, dt))

        # the high watermark stays at what the synchronous standby has
        err, x = produce(a, "r_plain", 1)
        leo = sql(prim, "SELECT log_end_offset FROM kafka.partition_status WHERE topic = 'r_plain'")[0][0]
        f = fetch(a, "r_plain", x)
        latest = list_latest(a, "r_plain")
        latest_rc = list_latest(a, "r_plain", isolation=1)
        check("standby gone: an acks=1 record is stored (log end %s) but the high watermark stays below it"
              % leo, err == 0 and leo == x + 1 and f and f[1] == x and f[2] <= x and not f[3],
              "(produce error %s offset %s; fetch (error, hw, lso, offsets) %s)" % (err, x, f))
        check("... ListOffsets latest (read_uncommitted and read_committed) is the high watermark",
              latest == x and latest_rc == x, "(%s, %s; want %s)" % (latest, latest_rc, x))
        f0 = fetch(a, "r_plain", 0)
        check("... a Fetch from 0 returns the records below the high watermark, not the one above",
              x >= 2 and f0 and f0[3] == list(range(x)) and f0[1] == x, "(%s)" % (f0,))

        b = kc.Conn()
        t0 = time.time()
        corr = produce(a, "r_plain", -1, timeout_ms=3000, send_only=True)
        time.sleep(0.5)
        t1 = time.time()
        md = metadata(b, "r_plain", timeout=5)
        fr = b.call(1, 11, kc.fetch_body([("r_plain", 0)], 0), timeout=5)
        dt_other = time.time() - t1
        check("while acks=all waits for the standby, Metadata and Fetch on another connection of the worker are answered",
              md is not None and fr is not None and dt_other < 2, "(%.2fs)" % dt_other)
        r = a.recv(timeout=30)
        dt = time.time() - t0
        err, base = read_produce(r)
        check("acks=all, timeout_ms=3000, synchronous standby gone: REQUEST_TIMED_OUT after ~3 s",
              r is not None and r.corr == corr and err == REQUEST_TIMED_OUT and 2.8 <= dt < 10,
              "(error %s after %.1fs)" % (err, dt))

        # the listener's own commits (an offset commit, a topic creation) are local and their
        # answers wait for the synchronous standby, without blocking the worker
        t_commit = time.time()
        corr_commit = g.send(8, 5, kc.string("r_group") + kc.i32(-1) + kc.string("")
                             + kc.array([kc.string("r_plain") + kc.array([kc.i32(0) + kc.i64(x) + kc.string("m")])]))
        corr_create = h.send(19, 4, kc.array([kc.string("r_created") + kc.i32(1) + kc.i16(1) + kc.array([])
                                              + kc.array([])]) + kc.i32(30000) + kc.i8(0))
        time.sleep(0.5)
        t1 = time.time()
        md = metadata(b, "r_plain", timeout=5)
        fr = b.call(1, 11, kc.fetch_body([("r_plain", 0)], 0), timeout=5)
        err1, off1 = produce(b, "r_plain", 1, timeout_ms=5000)
        dt_other = time.time() - t1
        check("standby gone: while an OffsetCommit and a CreateTopics wait, Metadata, Fetch and an acks=1 Produce "
              "on another connection of the worker are answered",
              md is not None and fr is not None and err1 == 0 and dt_other < 2,
              "(metadata %s, fetch %s, produce error %s, %.2fs)" % (md is not None, fr is not None, err1, dt_other))
        early_commit = g.recv(timeout=2)
        early_create = h.recv(timeout=0.1)
        check("... the OffsetCommit and the CreateTopics stay unanswered while the synchronous standby is away",
              early_commit is None and early_create is None,
              "(answered after %.1fs)" % (time.time() - t_commit))
        committed = sql(prim, "SELECT count(*) FROM kafka.committed_offsets WHERE group_id = 'r_group'")
        check("... (the commit itself is done on the primary)", committed and committed[0][0] == 1, "(%s)" % committed)

        # answered once the standby is back
        result = {}

        def waiter():
            t = time.time()
            result["r"] = produce(a, "r_plain", -1, timeout_ms=120000)
            result["dt"] = time.time() - t
        fetched = {}

        def fetcher():
            t = time.time()
            fetched["f"] = fetch(kc.Conn(), "r_plain", x, max_wait_ms=60000, timeout=120)
            fetched["dt"] = time.time() - t
        th = threading.Thread(target=waiter)
        th.start()
        fth = threading.Thread(target=fetcher)
        fth.start()
        time.sleep(2)
        waited = th.is_alive()
        fwaited = fth.is_alive()
        kafkapg.pgcluster("start", sdata)
        started.append(sdata)
        back = time.time()
        th.join(150)
        fth.join(150)
        f = fetched.get("f")
        check("a Fetch parked at the high watermark returns the record once the standby has it",
              fwaited and f and f[3] and f[3][0] == x and f[1] > x and fetched["dt"] < 50,
              "(waited %s, %s after %.1fs)" % (fwaited, f, fetched.get("dt", -1)))
        err, base = result.get("r", (None, None))
        check("acks=all waits while the synchronous standby is away and is answered once it is back",
              waited and err == 0 and base is not None,
              "(waited %s, error %s, base %s, %.1fs after the standby started)"
              % (waited, err, base, time.time() - back))
        r = g.recv(timeout=60)
        ok = r is not None and r.corr == corr_commit
        if ok:
            r.i32()
            ok = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16()))))[0][1][0][1] == 0
        check("... the OffsetCommit is answered (no error) once the standby is back", ok,
              "(%.1fs after the standby started)" % (time.time() - back))
        of = kc.offset_fetch(g, "r_group", "r_plain")
        check("... and OffsetFetch returns the committed offset", of and of[0] == 0 and of[1] == x, "(%s)" % (of,))
        r = h.recv(timeout=60)
        ok = r is not None and r.corr == corr_create
        if ok:
            r.i32()
            ok = r.array(lambda: (r.string(), r.i16(), r.string()))[0][1] == 0
        check("... the CreateTopics is answered (no error) too", ok)
        g.close()
        h.close()
        a.close()
        b.close()
        prim.close()
    finally:
        kafkapg.stop_clusters(started)
        kafkapg.check_server_logs((pdata, sdata), check, 30)


def main():
    signal.signal(signal.SIGTERM, lambda *a: sys.exit("replicas test: terminated (timeout?)"))
    if len(ARGS) == 2 and ARGS[0] == "--against":
        host, port = ARGS[1].rsplit(":", 1)
        md_leader = None
        kc.HOST, kc.PORT = host, int(port)
        c = kc.Conn()
        r = c.call(3, 7, kc.array([]) + kc.i8(0))
        r.i32()
        brokers = r.array(lambda: (r.i32(), r.string(), r.i32(), r.string()))
        md_leader = brokers[0][0]
        c.close()
        check_single_broker(host, int(port), md_leader, ns="_%d" % int(time.time()))
        finish()
    kafkapg.run_in_tmp("replicas", run, check)
    finish()


if __name__ == "__main__":
    main()
