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
   the standby's own range; ListOffsets and
   OffsetForLeaderEpoch (leader-only in Kafka) NOT_LEADER_OR_FOLLOWER;
   FindCoordinator names the primary; ListGroups is empty.  Nothing is
   written.
5. Real clients bootstrapped with the standby only (librdkafka): a producer
   delivers (to the leader), a consumer group member consumes and commits.
6. Promotion: the standby (asynchronous) missed records the primary
   acknowledged and a client read (it was stopped before they were written;
   the primary then stops for good), and is promoted with pg_promote, its listener not restarted:
   Metadata names node 1 leader at epoch 1; Produce is accepted (raw and
   librdkafka) and the new batches carry partitionLeaderEpoch 1, the old
   ones 0; Fetch and ListOffsets with the old epoch 0 are
   FENCED_LEADER_EPOCH, with 2 UNKNOWN_LEADER_EPOCH; OffsetForLeaderEpoch of
   epoch 0 answers where epoch 0 ends on the new leader, below the position
   the consumer reached on the old one: the truncation a client detects.
7. Neither server log shows a PANIC or a crash.

`follower_test.py --against 127.0.0.1:PORT` runs the leader-epoch checks of a single leader at epoch
0 (Fetch, ListOffsets and OffsetForLeaderEpoch with current leader epochs 0 and 1, the end offset of
epochs 0 and 1) against another broker, e.g. Apache Kafka 4.4 (test/clients/kafka/kafka.sh), which
the test also runs against kafka_pg's primary.
"""

import os
import shutil
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
sys.argv[1:] = ["127.0.0.1:0"]  # conformance.py reads HOST:PORT at import
import conformance as kc  # noqa: E402
from tap import check, finish  # noqa: E402

DB = "postgres"
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


def end_offset(c, topic, epoch, current=-1):
    """OffsetForLeaderEpoch v3, partition 0: (error, leader epoch, end offset)."""
    body = i32(-1) + array([string(topic) + array([i32(0) + i32(current) + i32(epoch)])])
    r = c.call(23, 3, body)
    if r is None:
        return None
    r.i32()
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i16(), r.i32(), r.i32(), r.i64()))))
    err, _, ep, off = res[0][1][0]
    return err, ep, off


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
    t0 = time.time()
    while time.time() - t0 < timeout and (len(got) < want or fetch_broker is None):
        m = c.poll(0.3)
        if m is not None and not m.error():
            got.append(m.value())
        p = stats.get("topics", {}).get(topic, {}).get("partitions", {}).get("0")
        if p and len(got) >= want:
            fetch_broker = p.get("broker")
    c.close()
    return got, fetch_broker


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
    c.close()


def run(root):
    pdata, sdata = os.path.join(root, "primary"), os.path.join(root, "standby")
    pport = int(kafkapg.pgcluster("free-port", os.environ.get("KP_NEXT_PORT", "57432")))
    sport = int(kafkapg.pgcluster("free-port", pport + 1))
    kp1 = int(kafkapg.pgcluster("free-port", os.environ.get("KAFKA_NEXT_PORT", "39092"), pport, sport))
    kp2 = int(kafkapg.pgcluster("free-port", kp1 + 1, pport, sport))
    nodes = "kafka.replica_nodes = 's1=1@127.0.0.1:%d/rack-b'" % kp2
    env = {"KP_KAFKA_DB": DB, "KP_EXTRA_CONF": nodes + "\nkafka.broker_rack = 'rack-a'"}
    started = []
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
        lo = list_offsets(b, "fol")
        check("ListOffsets on the standby: NOT_LEADER_OR_FOLLOWER (Kafka: leader only)",
              lo and lo[0] == NOT_LEADER, "(%s)" % (lo,))
        lo = list_offsets(b, "fol", replica=-2)
        check("... but answered for the debugging replica id -2: the replayed end, 8",
              lo and lo[0] == 0 and lo[1] == 8, "(%s)" % (lo,))
        eo = end_offset(b, "fol", 0)
        check("OffsetForLeaderEpoch on the standby: NOT_LEADER_OR_FOLLOWER", eo and eo[0] == NOT_LEADER, "(%s)" % (eo,))
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
        b.close()
    finally:
        kafkapg.stop_clusters(started)
        kafkapg.check_server_logs((pdata, sdata), check, 40)


def main():
    signal.signal(signal.SIGTERM, lambda *a: sys.exit("follower test: terminated (timeout?)"))
    if len(ARGS) == 2 and ARGS[0] == "--against":
        host, port = ARGS[1].rsplit(":", 1)
        assert host == "127.0.0.1"
        check_leader_epochs(int(port), "fol_epochs_%d" % int(time.time()), ns="kafka: ")
        finish()
        return
    root = kafkapg.make_tmp("follower")
    try:
        run(root)
    except (subprocess.CalledProcessError, RuntimeError, OSError, AssertionError) as e:
        check("harness: %r" % e, False, getattr(e, "stderr", "") or "")
    finally:
        if os.environ.get("KP_KEEP_TMP") != "1":
            shutil.rmtree(root, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
