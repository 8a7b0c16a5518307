#!/usr/bin/python3
"""test/recovery/producer_snapshot.py: a partition's producer state and open transactions come back
from its producer-state snapshot (src/store/prodsnap.c), after a clean restart, after kill -9 and
on a hot standby.

Recovery rebuilds a partition's idempotent producers (their last five batches: duplicates are
answered with the first append's offsets, a gap is OUT_OF_ORDER_SEQUENCE_NUMBER) and its open
transactions (the last stable offset) by walking the batch headers of its active segment.  The
resolver snapshots that state into the active segment's metapage at shutdown, and once a second
for a segment grown by 8 MB; a load restores the snapshot and walks only the batches after it.
The server log's "loaded N partitions in S s (K from a producer-state snapshot, B batches read)"
says which.

1. Idempotent batches (raw Produce v8, acks=all), a prepared SQL transaction left open, another
   idempotent batch; a clean restart: the partition loads from its snapshot reading 0 batches;
   the last stable offset is the prepared transaction's first offset; a retried batch is a
   duplicate (its first offset, nothing appended); a sequence gap is refused (45); the next
   sequence is appended; COMMIT PREPARED gives the partition its marker and the LSO moves.
2. 9 MB more; the resolver's periodic snapshot (its DEBUG1 line); after it, an idempotent batch, a
   SQL transaction rolled back (ABORT marker) and another prepared transaction; kill -9: the load
   restores the snapshot and reads only the few batches after it; the log end offset, the last
   stable offset, the retried batch's duplicate answer and the rolled-back record's invisibility
   are as before the crash.
3. The same crash again with kafka.debug_ignore_producer_snapshots on: the load walks the whole
   segment and rebuilds the same log end offset, last stable offset and duplicate answer.
4. A topic whose delete_topic waits for a producing transaction's lock, with 8 MB more to
   snapshot: the resolver skips it (no snapshot's WAL may follow the commit that drops the
   segment), and is not held up (a commit to another topic gets its marker meanwhile).
5. A hot standby (pg_basebackup) replays a snapshot taken with a prepared transaction open and
   batches after it: its last stable offset (ListOffsets read_committed, found in the store from
   the snapshot on) is the transaction's first offset, and the same with the whole walk; after
   COMMIT PREPARED it is the log end.
6. A transactional producer fenced by InitProducerId: the ABORT marker carries the bumped epoch,
   the partition's producer state (DescribeProducers) is at it with no sequence, and an idempotent
   batch of the old epoch is INVALID_PRODUCER_EPOCH (Kafka's ProducerStateManager); the same after a
   clean restart (from the snapshot) and after kill -9 with the whole segment walked.

Last line: "N passed, M failed".
"""

import os
import re
import socket
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "wire"))
import kafkapg  # noqa: E402
from kwire import Reader, array, describe_producers, i8, i16, i32, i64, nbytes, string  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402

TOPIC = "ps"
tap = kafkapg.Tap()
check = tap.check


class Conn:
    """One Kafka connection; non-flexible request versions, and flexible ones by call_flex."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.corr = 0

    def call(self, api_key, version, body, flexible=False):
        self.corr += 1
        msg = struct.pack(">hhi", api_key, version, self.corr) + string(b"producer_snapshot") + \
            (b"\0" if flexible else b"") + body
        self.s.sendall(i32(len(msg)) + msg)
        n = struct.unpack(">i", self._exact(4))[0]
        r = Reader(self._exact(n))
        r.i32()  # correlation id
        if flexible:
            r.tags()
        return r

    def call_flex(self, api_key, version, body):
        return self.call(api_key, version, body, flexible=True)

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise RuntimeError("the broker closed the connection")
            buf += chunk
        return buf

    def close(self):
        self.s.close()


def init_producer_id(c):
    """InitProducerId v1 without a transactional id: (error, producer id, epoch)."""
    r = c.call(22, 1, string(None) + i32(60000))
    r.i32()
    return r.i16(), r.i64(), r.i16()


def idem_batch(pid, epoch, seq, values, transactional=False):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                  producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                  batch_size=1 << 20)
    ts = int(time.time() * 1000)
    for i, v in enumerate(values):
        b.append(i, timestamp=ts, key=None, value=v, headers=[])
    return bytes(b.build())


def produce(c, batch, topic=TOPIC, txn_id=None):
    """Produce v8, acks=all, partition 0: (error code, base offset)."""
    body = string(txn_id) + i16(-1) + i32(30000) + array([string(topic) + array([i32(0) + nbytes(batch)])])
    r = c.call(0, 8, body)
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64(), r.i64(),
                                                          r.array(lambda: (r.i32(), r.string())),
                                                          r.string()))))
    _, err, base = res[0][1][0][:3]
    return err, base


def txn_producer(c, txn_id):
    """InitProducerId v1 of a transactional id, waiting out CONCURRENT_TRANSACTIONS (51: the
    abort of the transaction it fences): (error, producer id, epoch)."""
    deadline = time.time() + 30
    while True:
        r = c.call(22, 1, string(txn_id) + i32(60000))
        r.i32()
        got = r.i16(), r.i64(), r.i16()
        if got[0] != 51 or time.time() > deadline:
            return got
        time.sleep(0.2)


def add_partition(c, txn_id, pid, epoch, topic):
    """AddPartitionsToTxn v1 of partition 0: its error."""
    r = c.call(24, 1, string(txn_id) + i64(pid) + i16(epoch) + array([string(topic) + array([i32(0)])]))
    r.i32()
    return r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16()))))[0][1][0][1]


def lso(c):
    """ListOffsets v2, read_committed, latest: the last stable offset of partition 0."""
    r = c.call(2, 2, i32(-1) + i8(1) + array([string(TOPIC) + array([i32(0) + i64(-1)])]))
    r.i32()
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64()))))
    _, err, _, off = res[0][1][0]
    return off if err == 0 else ("error", err)


def sql(port, q, args=None, fetch=True):
    conn = kafkapg.connect(port)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute(q, args)
    out = cur.fetchall() if fetch else None
    conn.close()
    return out


def leo(port):
    return sql(port, "SELECT log_end_offset FROM kafka.partition_status WHERE topic = %s", (TOPIC,))[0][0]


def prepare_open(port, gid, value):
    """A SQL transaction that produces one record and is left prepared: its record's offset."""
    conn = kafkapg.connect(port)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("BEGIN")
    cur.execute("SELECT \"offset\" FROM kafka.produce(%s, 'k', %s, partition => 0)", (TOPIC, value))
    off = cur.fetchone()[0]
    cur.execute("PREPARE TRANSACTION %s", (gid,))
    conn.close()
    return off


def load_lines(log):
    with open(log, errors="replace") as f:
        return re.findall(r"loaded (\d+) partitions in [0-9.]+ s \((\d+) from a producer-state snapshot, "
                          r"(\d+) batches read\)", f.read())


def wait_load(log, n, seconds=60):
    """The resolver's load lines once there are n of them (it loads after every start)."""
    deadline = time.time() + seconds
    lines = load_lines(log)
    while len(lines) < n and time.time() < deadline:
        time.sleep(0.2)
        lines = load_lines(log)
    return lines


def snapshot_offsets(log):
    """The offsets of the resolver's periodic snapshots so far (its DEBUG1 lines)."""
    with open(log, errors="replace") as f:
        return [int(m.group(1)) for m in
                re.finditer(r"producer-state snapshot of partition \d+ at offset (\d+)", f.read())]


def wait_new_snapshot(log, before, seconds=30):
    """The offset of the first snapshot after the first `before` ones, or None."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        offs = snapshot_offsets(log)
        if len(offs) > before:
            return offs[before]
        time.sleep(0.3)
    return None


def settled(c, port, seconds=20):
    """(log end offset, last stable offset) once the LSO has caught up with the log end (the
    high watermark follows the WAL flush: ListOffsets answers below it until then)."""
    deadline = time.time() + seconds
    while True:
        end, stable = leo(port), lso(c)
        if stable == end or time.time() > deadline:
            return end, stable
        time.sleep(0.1)


def run():
    cluster = kafkapg.ScratchCluster("producer_snapshot", 58632, 49292)
    port, kport, log = cluster.port, cluster.kport, None
    try:
        cluster.start("postgres", {"KP_KAFKA_DB": "postgres",
                                   "KP_EXTRA_CONF": "max_prepared_transactions = 5\nlog_min_messages = debug1"})
        log = cluster.log()
        wait_load(log, 1)
        sql(port, "SELECT kafka.create_topic(%s, 1)", (TOPIC,))
        c = Conn(kport)
        err, pid, epoch = init_producer_id(c)
        check("InitProducerId for an idempotent producer", err == 0, "(error %d)" % err)
        b0 = idem_batch(pid, epoch, 0, [b"a", b"b"])
        b2 = idem_batch(pid, epoch, 2, [b"c", b"d"])
        check("two idempotent batches at offsets 0 and 2",
              produce(c, b0) == (0, 0) and produce(c, b2) == (0, 2))
        open_at = prepare_open(port, "ps_open", "open")
        check("a prepared transaction's record at offset 4", open_at == 4, "(%s)" % open_at)
        check("a third idempotent batch at offset 5", produce(c, idem_batch(pid, epoch, 4, [b"e"])) == (0, 5))
        check("before the restart: log end 6, last stable offset 4", (leo(port), lso(c)) == (6, 4),
              "(%s, %s)" % (leo(port), lso(c)))
        c.close()

        # 1. a clean restart
        cluster.restart(crash=False)
        c = Conn(kport)
        lines = wait_load(log, 2)
        check("after a clean restart the partition loads from its snapshot, reading no batch",
              lines[-1:] == [("1", "1", "0")], "(%s)" % lines)
        check("the log end offset and the last stable offset (the prepared transaction) kept",
              (leo(port), lso(c)) == (6, 4), "(%s, %s)" % (leo(port), lso(c)))
        check("a retried batch is answered as a duplicate with its first offset",
              produce(c, b2) == (0, 2) and leo(port) == 6, "(%s)" % leo(port))
        err, _ = produce(c, idem_batch(pid, epoch, 9, [b"gap"]))
        check("a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER", err == 45 and leo(port) == 6, "(%d)" % err)
        check("the next sequence is appended", produce(c, idem_batch(pid, epoch, 5, [b"f"])) == (0, 6))
        sql(port, "COMMIT PREPARED 'ps_open'", fetch=False)
        sql(port, "SELECT kafka.flush_markers()")
        got = settled(c, port)
        check("COMMIT PREPARED: its marker, and the last stable offset at the log end", got == (8, 8),
              "(%s, %s)" % got)

        # 2. a periodic snapshot, batches after it, kill -9
        before = len(snapshot_offsets(log))
        sql(port, "SELECT count(*) FROM (SELECT kafka.produce(%s, NULL::text, repeat('x', 1000000), "
                  "partition => 0) FROM generate_series(1, 9)) s", (TOPIC,))
        sql(port, "SELECT kafka.flush_markers()")
        big_end = leo(port)
        at = wait_new_snapshot(log, before)
        check("the resolver snapshots a segment grown by 8 MB", at is not None and 8 < at <= big_end,
              "(at %s, log end %s)" % (at, big_end))
        b7 = idem_batch(pid, epoch, 6, [b"g"])
        err, off7 = produce(c, b7)
        check("an idempotent batch after the snapshot", err == 0 and off7 == big_end, "(%s, %s)" % (err, off7))
        conn = kafkapg.connect(port)
        conn.autocommit = True
        cur = conn.cursor()
        cur.execute("BEGIN")
        cur.execute("SELECT kafka.produce(%s, 'k', 'rolled back', partition => 0)", (TOPIC,))
        cur.execute("ROLLBACK")
        conn.close()
        sql(port, "SELECT kafka.flush_markers()")
        open2 = prepare_open(port, "ps_open2", "open2")
        end_before, lso_before = leo(port), lso(c)
        check("before the crash: the second prepared transaction holds the last stable offset",
              lso_before == open2, "(%s, %s)" % (lso_before, open2))
        c.close()
        cluster.restart(crash=True)
        c = Conn(kport)
        lines = wait_load(log, 3)
        walked = int(lines[-1][2]) if lines else -1
        check("after kill -9 the partition loads from the periodic snapshot, reading only the batches after it",
              len(lines) >= 3 and lines[-1][:2] == ("1", "1") and 1 <= walked <= 16, "(%s)" % lines)
        check("the log end offset and the last stable offset as before the crash",
              (leo(port), lso(c)) == (end_before, lso_before),
              "(%s, %s against %s, %s)" % (leo(port), lso(c), end_before, lso_before))
        check("the batch written after the snapshot is a duplicate when retried",
              produce(c, b7) == (0, off7) and leo(port) == end_before)
        seen = sql(port, "SELECT count(*) FROM kafka.fetch_text(%s, 0, %s, 100) WHERE value = 'rolled back'",
                   (TOPIC, big_end))[0][0]
        check("the rolled-back record stays hidden", seen == 0, "(%s)" % seen)

        # 3. the same crash, the snapshot ignored: the whole walk rebuilds the same state
        sql(port, "ALTER SYSTEM SET kafka.debug_ignore_producer_snapshots = on", fetch=False)
        c.close()
        cluster.restart(crash=True)
        c = Conn(kport)
        lines = wait_load(log, 4)
        check("with the snapshot ignored the load walks every batch of the segment",
              len(lines) >= 4 and lines[-1][:2] == ("1", "0") and int(lines[-1][2]) > walked + 9,
              "(%s)" % lines[-1:])
        check("... and rebuilds the same log end offset, last stable offset and duplicate answer",
              (leo(port), lso(c)) == (end_before, lso_before) and produce(c, b7) == (0, off7),
              "(%s, %s)" % (leo(port), lso(c)))
        sql(port, "ALTER SYSTEM RESET kafka.debug_ignore_producer_snapshots", fetch=False)
        sql(port, "SELECT pg_reload_conf()")
        sql(port, "COMMIT PREPARED 'ps_open2'", fetch=False)
        sql(port, "SELECT kafka.flush_markers()")
        end, stable = settled(c, port)
        check("COMMIT PREPARED of the second: the last stable offset at the log end",
              stable == end and end == end_before + 1, "(%s, %s)" % (end, stable))

        # 4. a topic whose deletion waits for its lock is skipped, and the resolver goes on
        sql(port, "SELECT kafka.create_topic('psdel', 1)")
        pid_del = sql(port, "SELECT partition_id FROM kafka.partitions JOIN kafka.topics USING (topic_id) "
                            "WHERE name = 'psdel'")[0][0]
        big = "SELECT count(*) FROM (SELECT kafka.produce('psdel', NULL::text, repeat('y', 1000000), " \
              "partition => 0) FROM generate_series(1, 9)) s"
        t1 = kafkapg.connect(port)
        t1.autocommit = True
        t1c = t1.cursor()
        t1c.execute("BEGIN")
        t1c.execute(big)
        before = len(snapshot_offsets(log))
        check("a snapshot of the topic written in an open transaction", wait_new_snapshot(log, before) is not None)
        deleter = kafkapg.Session(kafkapg.connect(port), "SELECT kafka.delete_topic('psdel')")
        deleter.start()
        ok = kafkapg.wait_for(t1, "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted AND mode = 'AccessExclusiveLock')",
                              None, 20)
        check("delete_topic waits for the producing transaction's topic lock", ok)
        t1c.execute(big)  # 9 MB more: due again, while the deletion waits
        with open(log, errors="replace") as f:
            log_at = len(f.read())
        time.sleep(2.5)  # two of the resolver's upkeeps
        end = leo(port)
        sql(port, "SELECT kafka.produce(%s, 'k', 'after', partition => 0)", (TOPIC,))
        got = settled(c, port, 10)
        check("the resolver is not held up: a commit elsewhere gets its marker meanwhile",
              got == (end + 2, end + 2), "(%s, %s; log end before %s)" % (got[0], got[1], end))
        with open(log, errors="replace") as f:
            f.seek(log_at)
            later = f.read()
        check("no snapshot is written to the topic while its deletion waits",
              ("producer-state snapshot of partition %d " % pid_del) not in later)
        t1c.execute("COMMIT")
        t1.close()
        deleter.join(30)
        check("the deletion then goes through", deleter.error is None and not deleter.is_alive(),
              "(%s)" % deleter.error)

        # 5. a hot standby's last stable offset, from the snapshot it replayed and from the whole walk
        sdata = os.path.join(cluster.root, "standby")
        sport = int(kafkapg.pgcluster("free-port", port + 1, port))
        skport = int(kafkapg.pgcluster("free-port", kport + 1, port, sport, kport))
        kafkapg.pgcluster("basebackup", port, sdata)
        kafkapg.pgcluster("write-conf", sdata, sport, skport, cluster.root,
                          env={"KP_KAFKA_DB": "postgres", "KP_EXTRA_CONF": "cluster_name = 's1'\nkafka.node_id = 1\n"
                                                                     "max_prepared_transactions = 5"})
        kafkapg.pgcluster("start", sdata)
        try:
            open3 = prepare_open(port, "ps_open3", "open3")
            before = len(snapshot_offsets(log))
            sql(port, "SELECT count(*) FROM (SELECT kafka.produce(%s, NULL::text, repeat('z', 1000000), "
                      "partition => 0) FROM generate_series(1, 9)) s", (TOPIC,))
            at = wait_new_snapshot(log, before)
            check("a snapshot with the prepared transaction open", at is not None and at > open3,
                  "(at %s, transaction at %s)" % (at, open3))
            check("and batches after it", produce(c, idem_batch(pid, epoch, 7, [b"h"]))[0] == 0)
            sql(port, "SELECT kafka.flush_markers()")
            end = leo(port)
            prim = kafkapg.connect(port)
            stby = kafkapg.connect(sport)
            ok = kafkapg.wait_for(prim, "SELECT EXISTS (SELECT 1 FROM pg_stat_replication "
                                        "WHERE replay_lsn >= pg_current_wal_lsn())", None, 60)
            kafkapg.pgcluster("wait-kafka", skport, 60)
            s = Conn(skport)
            check("the standby replays it", ok)
            check("the standby's last stable offset is the prepared transaction's first offset",
                  lso(s) == open3, "(%s, want %s; log end %s)" % (lso(s), open3, end))
            sql(sport, "ALTER SYSTEM SET kafka.debug_ignore_producer_snapshots = on", fetch=False)
            sql(sport, "SELECT pg_reload_conf()")
            time.sleep(0.5)
            s.close()
            s = Conn(skport)
            check("... and the same by the whole walk", lso(s) == open3, "(%s)" % lso(s))
            sql(sport, "ALTER SYSTEM RESET kafka.debug_ignore_producer_snapshots", fetch=False)
            sql(sport, "SELECT pg_reload_conf()")
            sql(port, "COMMIT PREPARED 'ps_open3'", fetch=False)
            sql(port, "SELECT kafka.flush_markers()")
            kafkapg.wait_for(prim, "SELECT EXISTS (SELECT 1 FROM pg_stat_replication "
                                   "WHERE replay_lsn >= pg_current_wal_lsn())", None, 60)
            deadline = time.time() + 20
            while lso(s) != end + 1 and time.time() < deadline:
                time.sleep(0.2)
            check("after COMMIT PREPARED the standby's last stable offset is its log end",
                  lso(s) == end + 1, "(%s, want %s)" % (lso(s), end + 1))
            s.close()
            prim.close()
            stby.close()
        finally:
            kafkapg.pgcluster("stop", sdata)

        # 6. a marker of a bumped epoch (the abort of a fenced transaction) moves the producer to
        # that epoch in the partition, and recovery takes it again from the marker
        sql(port, "SELECT kafka.create_topic('psf', 1)")
        err, tpid, tepoch = txn_producer(c, "ps-fence")
        ok = err == 0 and add_partition(c, "ps-fence", tpid, tepoch, "psf") == 0
        got = produce(c, idem_batch(tpid, tepoch, 0, [b"fenced"], transactional=True), "psf", "ps-fence")
        check("a transactional producer's batch", ok and got == (0, 0), "(%s, %s)" % (err, got))
        err, _, new_epoch = txn_producer(c, "ps-fence")
        sql(port, "SELECT kafka.flush_markers()")
        fenced = describe_producers(c, "psf", 0).get(tpid)
        check("InitProducerId fences it: the ABORT marker carries the bumped epoch, the partition's "
              "producer at it with no sequence", err == 0 and fenced == (tepoch + 1, -1, -1),
              "(%s, %s, epoch %s then %s)" % (err, fenced, tepoch, new_epoch))
        zombie = idem_batch(tpid, tepoch, 1, [b"zombie"])
        got = produce(c, zombie, "psf")
        check("an idempotent batch of the old epoch: INVALID_PRODUCER_EPOCH (47)", got[0] == 47, "(%s)" % (got,))
        for crash, setting in ((False, None), (True, "kafka.debug_ignore_producer_snapshots")):
            if setting:
                sql(port, "ALTER SYSTEM SET %s = on" % setting, fetch=False)
            c.close()
            cluster.restart(crash=crash)
            c = Conn(kport)
            got = describe_producers(c, "psf", 0).get(tpid), produce(c, zombie, "psf")[0]
            how = "after kill -9, the whole segment walked" if crash else "after a clean restart, from the snapshot"
            check("%s: the producer at the bumped epoch, the old epoch's batch still 47" % how,
                  got == (fenced, 47), "(%s)" % (got,))
            if setting:
                sql(port, "ALTER SYSTEM RESET %s" % setting, fetch=False)
                sql(port, "SELECT pg_reload_conf()")
        c.close()
    finally:
        tap.cleanup(cluster)


tap.main(run)
