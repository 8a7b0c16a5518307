#!/usr/bin/python3
"""test/standby/lso_hw_test.py: a transaction is stable for readers only once its COMMIT/ABORT
marker is below the high watermark (docs/replication.md, "Last stable offset").

Kafka keeps a decided transaction in its first unstable offset until the high watermark passes its
marker (ProducerStateManager's unreplicated transactions): a read_committed consumer never reads a
transaction as decided while the marker, and so the decision before it, could still be lost with a
failover. kafka_pg's high watermark is what every in-sync replica has of the WAL (with none, what is
flushed); the markers are written after the decision's commit, so there is a moment when the
transaction's records are below the high watermark and its marker is not. Before, the last stable
offset clients saw (min(last stable offset, high watermark)) then already covered the records
(kafkajs's own test "emits start and end batch process when reading empty control batches" saw it,
and a wire transaction's decision is committed locally before its standbys confirm it).

A primary with wal_writer_delay = 10s (so that only the flushes the test causes happen):

1. With the resolver stopped (SIGSTOP, taken only while it waits on its latch), a SQL transaction
   produces 3 records and commits (its commit flushes them), then kafka.flush_markers() writes the
   COMMIT marker at offset 3 without a flush.
2. A Fetch v11 with max_wait_ms 0 (it does not park, so it flushes nothing) sees high watermark 3:
   read_uncommitted returns the 3 records; read_committed reports last stable offset 0 and returns
   nothing (before: 3, and the records).
3. ListOffsets LATEST read_committed flushes what is inserted (as it must answer at once, as Kafka
   does) and answers 4; then the read_committed Fetch returns the 3 records and last stable offset 4.
   A share group with share.isolation.level read_committed acquires none of the 3 records meanwhile
   with a ShareFetch (before: all three, its bound was the internal last stable offset), and all
   three once the marker is below the high watermark.  (kafka.share_acquire in SQL reads as
   kafka.fetch does, up to the log end: its commit flushes what it read.)
4. The same with a transaction that rolls back: read_committed stays at the aborted transaction's
   first offset until the ABORT marker is flushed, then passes it, and the aborted records are
   listed in aborted_transactions.
4a. With the WAL writer stopped, a record produced on the wire with acks=1 is above the high
   watermark; a new share group (share.auto.offset.reset latest) acquires nothing with a
   ShareFetch, and once ListOffsets has flushed it, acquires the record: a share-partition a wire
   consumer starts begins at the high watermark (before: at the log end, past the record, which
   the group then never delivered).
5. The server log shows no PANIC or crash.

Environment: KP_NEXT_PORT / KAFKA_NEXT_PORT, KP_KEEP_TMP=1 keeps the cluster's directory.
Prints "ok - ..." / "not ok - ..." lines and "N passed, M failed".
"""

import os
import signal
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "wire"))
import kafkapg  # noqa: E402

sys.argv[1:] = ["127.0.0.1:0"]  # conformance.py reads HOST:PORT at import; set below
import conformance as kc  # noqa: E402
import share_wake as sw  # noqa: E402  (reads HOST:PORT at import too; set where used)
from tap import check, finish  # noqa: E402
from drop_race_test import one, stop_resolver  # noqa: E402


def fetch(kport, topic, isolation, offset=0):
    """Fetch v11 of partition 0 from offset, max_wait_ms 0: (high watermark, last stable offset,
    aborted transactions, number of data records)."""
    kc.HOST, kc.PORT = "127.0.0.1", kport
    c = kc.Conn()
    r = c.call(1, 11, kc.fetch_listing_body([(topic, [(0, offset)])], 0, 1, isolation))
    c.close()
    r.i32(), r.i16(), r.i32()

    def part():
        p, err, hw, lso = r.i32(), r.i16(), r.i64(), r.i64()
        r.i64()
        aborted = r.array(lambda: (r.i64(), r.i64()))
        r.i32()
        return hw, lso, aborted or [], r.nbytes() or b""
    hw, lso, aborted, data = r.array(lambda: (r.string(), r.array(part)))[0][1][0]
    records = 0
    for b in kc.batches(data):
        attrs = int.from_bytes(b[21:23], "big")
        if not attrs & 0x20:  # not a control batch
            records += int.from_bytes(b[57:61], "big")
    return hw, lso, aborted, records


def latest_committed(kport, topic):
    """ListOffsets v4 LATEST, read_committed, partition 0."""
    kc.HOST, kc.PORT = "127.0.0.1", kport
    c = kc.Conn()
    r = c.call(2, 4, kc.i32(-1) + kc.i8(1) + kc.array([kc.string(topic) + kc.array(
        [kc.i32(0) + kc.i32(-1) + kc.i64(-1)])]))
    c.close()
    r.i32()
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64(), r.i32()))))
    return res[0][1][0][3]


def share_member(prim, kport, topic, group, configs):
    """A share group member on the wire (test/wire/share_wake.py's), the group's configs set first
    through SQL, assigned the topic: everything it commits happens before the test's window."""
    sw.HOST, sw.PORT = "127.0.0.1", kport
    cur = prim.cursor()
    for k, v in configs.items():
        cur.execute("INSERT INTO kafka.group_configs VALUES (%s, %s, %s)", (group, k, v))
    tid = uuid.UUID(one(prim, "SELECT topic_uuid::text FROM kafka.topics WHERE name = %s", (topic,))[0]).bytes
    m = sw.Member(group, topic, tid)
    if not m.wait_assigned():
        raise RuntimeError("share member of %s never assigned" % group)
    return m


def share_fetch_now(m):
    """A ShareFetch that does not park (MaxWaitMs 0): the offsets it acquired."""
    res = m.fetch(0)
    return sorted(res[1]) if res is not None and res[0] == 0 else ("error", res)


def share_latest(prim, pport, kport, topic):
    """A new share group (share.auto.offset.reset latest, its default) starts at the high
    watermark, not at the log end: a record produced with acks=1 and not yet flushed (the WAL
    writer stopped) is acquired once ListOffsets has flushed it; before, the group started past it
    and never delivered it."""
    m = share_member(prim, kport, topic, "lsohw-latest", {})
    walwriter = one(prim, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'")[0]
    os.kill(walwriter, signal.SIGSTOP)
    try:
        kc.HOST, kc.PORT = "127.0.0.1", kport
        c = kc.Conn()
        c.s.sendall(kc.produce_frame(c, topic, 0, kc.build_batch(0, [b"latest"]), 1))
        r = c.recv()
        err, base = kc.read_produce(r) if r is not None else (None, None)
        c.close()
        hw = fetch(kport, topic, 0)[0]
        check("a record produced with acks=1 at offset %s is above the high watermark (%d)" % (base, hw),
              err == 0 and hw == base, "error %s, base %s, high watermark %d" % (err, base, hw))
        got = share_fetch_now(m)
    finally:
        os.kill(walwriter, signal.SIGCONT)
    check("a new share group with share.auto.offset.reset latest acquires nothing yet (ShareFetch)",
          got == [], got)
    latest = latest_committed(kport, topic)
    got = sorted(m.fetch_until(1, timeout=10))
    check("once the record is below the high watermark (%d) the group acquires it: it started at the "
          "high watermark, not at the log end" % latest, got == [base], got)
    m.close()


def one_transaction(prim, pport, kport, topic, commit):
    word = "commits" if commit else "rolls back"
    cur = prim.cursor()
    first = fetch(kport, topic, 0)[0]
    if commit:
        member = share_member(prim, kport, topic, "lsohw-rc-%d" % first,
                              {"share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed"})
        share_fetch_now(member)   # the share-partition starts here: what is before is done
    pid = stop_resolver(prim)
    try:
        prim.autocommit = False
        cur.execute("SELECT base_offset, record_count FROM kafka.produce_batch(%s, ARRAY['k', 'k', 'k'], "
                    "ARRAY['a', 'b', 'c'])", (topic,))
        base, count = cur.fetchone()
        if commit:
            prim.commit()
        else:
            prim.rollback()
        prim.autocommit = True
        check("a transaction of 3 records at offset %d %s" % (first, word), base == first and count == 3,
              "%s %s" % (base, count))
        written = one(prim, "SELECT kafka.flush_markers()")[0]
        check("kafka.flush_markers() writes its marker at %d" % (first + 3), written == 1, written)
        hw, lso, _, uncommitted = fetch(kport, topic, 0, first)
        if commit:
            check("the records are below the high watermark, the marker not yet (high watermark %d)"
                  % (first + 3), hw == first + 3, "high watermark %d" % hw)
            check("read_uncommitted returns the 3 records", uncommitted == 3, uncommitted)
        hw2, lso, aborted, committed = fetch(kport, topic, 1, first)
        check("read_committed: the last stable offset stays at the transaction's first offset %d "
              "while its marker is not below the high watermark" % first,
              lso == first and committed == 0, "high watermark %d, last stable offset %d, %d records"
              % (hw2, lso, committed))
        if commit:
            # a ShareFetch commits (and so flushes) only after it has read the offsets
            got = share_fetch_now(member)
            check("a read_committed share group acquires none of them meanwhile on the wire "
                  "(ShareFetch; before: all 3)", got == [], got)
        latest = latest_committed(kport, topic)
        check("ListOffsets LATEST read_committed flushes and answers past the marker (%d)" % (first + 4),
              latest == first + 4, latest)
        hw, lso, aborted, committed = fetch(kport, topic, 1, first)
        if commit:
            check("then read_committed returns the 3 records, last stable offset %d" % (first + 4),
                  lso == first + 4 and committed == 3 and not aborted,
                  "last stable offset %d, %d records, aborted %s" % (lso, committed, aborted))
            got = sorted(o for o in member.fetch_until(3, timeout=10) if o >= first)
            check("and the read_committed share group acquires them", got == [first, first + 1, first + 2], got)
            member.close()
        else:
            check("then the last stable offset passes the ABORT marker (%d), the records listed as "
                  "aborted" % (first + 4), lso == first + 4 and aborted and aborted[0][1] == first,
                  "last stable offset %d, aborted %s" % (lso, aborted))
    finally:
        os.kill(pid, signal.SIGCONT)


def run(root):
    pdata = os.path.join(root, "primary")
    (pport,), (kport,) = kafkapg.free_ports(1, 1, "57542", "39292")
    env = {"KP_KAFKA_DB": "postgres", "KP_EXTRA_CONF": "wal_writer_delay = 10s"}
    started = []
    try:
        prim = kafkapg.start_primary(pdata, pport, kport, env, started)
        topic = "lso-hw"
        prim.cursor().execute("SELECT kafka.create_topic(%s, 1)", (topic,))
        one_transaction(prim, pport, kport, topic, True)
        one_transaction(prim, pport, kport, topic, False)
        share_latest(prim, pport, kport, topic)
        prim.close()
    finally:
        kafkapg.stop_clusters(started)
        kafkapg.check_server_logs((pdata,), check, 30)


def main():
    kafkapg.run_main("lso_hw test", "lsohw", run, check, finish)


if __name__ == "__main__":
    main()
