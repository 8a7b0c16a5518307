#!/usr/bin/python3
"""test/standby/drop_race_test.py: a topic deleted, or created and rolled back, while COMMIT/ABORT
markers are being written must not stop a standby (src/store/README, invariant 13).

The markers are the one write to a partition that takes no topic lock (the resolver, an EndTxn,
kafka.flush_markers()). A marker written after the commit record of the transaction that deletes
the topic (or after the abort record of the one that created it and wrote to it), before that
transaction's callback forgot the partitions, reached the standby after the segment's file was
gone: its replay stopped the standby for good ("WAL contains references to invalid pages"). Such a
partition now carries a flag while the record may be in the WAL, and no marker is written to it.

A primary (max_prepared_transactions = 5) and a hot standby made with pg_basebackup:

1. ROUNDS rounds (default 300) while two sessions call kafka.flush_markers() without a pause, in
   turn: create a 4-partition topic, produce 4 records in a SQL transaction that also deletes it;
   the same with the records committed first and the topic deleted in the next transaction; create
   the topic and produce in one transaction that is rolled back. The marker writers raise no
   error; the standby still replays and catches up.
2. A deletion that fails at commit, after pre-commit (a SERIALIZABLE transaction cancelled as a
   pivot during its commit attempt, SQLSTATE 40001): the topic stays, and the marker of a later
   SQL transaction on it is written (ListOffsets read_committed reaches the log end), so the flag
   went with the abort.
3. PREPARE TRANSACTION of a deletion, and of a transaction that created a topic and wrote to it,
   is refused (0A000); the topic stays usable.
4. A partition that a failed write left unloaded (kafka.debug_fail_marker_index fails the index
   entry of an ABORT marker written by kafka.flush_markers(), with the resolver stopped by
   SIGSTOP): the marker writers do not load it (they hold no topic lock); the resolver, once
   running again, does not load it while a deletion of the topic waits, and loads it within a
   couple of seconds of that deletion rolling back, under the topic's lock: the index entry is
   restored from the marker (its log line), the last stable offset passes the marker without any
   append, and a read_committed read skips the aborted records (before, such a partition waited
   for the next append). The same with the deletion committing instead.
5. Neither server log shows a PANIC or a crash.

Environment: ROUNDS, KP_NEXT_PORT / KAFKA_NEXT_PORT, KP_KEEP_TMP=1 keeps the clusters' directory.
Prints "ok - ..." / "not ok - ..." lines and "N passed, M failed".
"""

import os
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "wire"))
import kafkapg  # noqa: E402
import psycopg2  # noqa: E402

sys.argv[1:] = ["127.0.0.1:0"]  # conformance.py reads HOST:PORT at import; set below
import conformance as kc  # noqa: E402
from tap import check, finish  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "300"))


def info(msg):
    print("# [%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def one(conn, q, args=None):
    cur = conn.cursor()
    cur.execute(q, args)
    return cur.fetchone()


def lso(kport, topic):
    """ListOffsets v2, read_committed, latest, partition 0: the last stable offset."""
    kc.HOST, kc.PORT = "127.0.0.1", kport
    c = kc.Conn()
    r = c.call(2, 2, kc.i32(-1) + kc.i8(1) + kc.array([kc.string(topic) + kc.array([kc.i32(0) + kc.i64(-1)])]))
    c.close()
    r.i32()
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64()))))
    _, err, _, off = res[0][1][0]
    return off if err == 0 else ("error", err)


def flusher(port, stop, errors, calls):
    conn = kafkapg.connect(port)
    cur = conn.cursor()
    while not stop.is_set():
        try:
            cur.execute("SELECT kafka.flush_markers()")
            calls[0] += 1
        except psycopg2.Error as e:
            errors.append(str(e).strip())
    conn.close()


def caught_up(prim, stby):
    """Whether the standby replays up to the primary's current WAL position within 60 s."""
    target = one(prim, "SELECT pg_current_wal_lsn()")[0]
    try:
        return kafkapg.wait_for(stby, "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,), 60)
    except psycopg2.Error:
        return False  # the standby is down


def deletes_under_marker_writers(prim, pport, stby):
    stop = threading.Event()
    errors, calls = [], [0]
    threads = [threading.Thread(target=flusher, args=(pport, stop, errors, calls)) for _ in range(2)]
    for t in threads:
        t.start()
    cur = prim.cursor()
    t0 = time.time()
    try:
        for i in range(ROUNDS):
            topic = "drop-race-%d" % i
            if i % 3 == 2:
                prim.autocommit = False  # created in the transaction that then aborts
            cur.execute("SELECT kafka.create_topic(%s, 4)", (topic,))
            if prim.autocommit:
                prim.autocommit = False
            for k in range(4):
                cur.execute("SELECT * FROM kafka.produce(%s, %s, 'v')", (topic, "k%d" % k))
            if i % 3 == 2:
                prim.rollback()  # the topic and its segments go with the abort
                prim.autocommit = True
                continue
            if i % 3 == 1:
                prim.commit()  # the markers of another transaction are pending at the deletion
            cur.execute("SELECT kafka.delete_topic(%s)", (topic,))
            prim.commit()
            prim.autocommit = True
    finally:
        prim.autocommit = True
        stop.set()
        for t in threads:
            t.join()
    info("%d rounds in %.1f s, %d flush_markers() calls" % (ROUNDS, time.time() - t0, calls[0]))
    check("%d topics created, produced to and deleted or rolled back while 2 sessions write "
          "markers: no marker writer failed" % ROUNDS, not errors, "; ".join(errors[:3]))
    left = one(prim, "SELECT count(*) FROM kafka.topics WHERE name LIKE 'drop-race-%%'")[0]
    check("every one of them is gone", left == 0, "%d left" % left)

    check("the standby replays all of it and catches up (it used to stop: 'WAL contains references "
          "to invalid pages')", caught_up(prim, stby))


def deletion_aborted_after_precommit(prim, pport, kport):
    cur = prim.cursor()
    cur.execute("CREATE TABLE drop_race_skew (k int)")
    cur.execute("SELECT kafka.create_topic('drop-race-kept', 1)")
    prim.autocommit = False
    cur.execute("SELECT * FROM kafka.produce('drop-race-kept', 'k', 'before')")
    prim.commit()
    prim.autocommit = True
    # write skew between two SERIALIZABLE transactions: the first to commit wins, the other is
    # cancelled as a pivot during its commit attempt, after the pre-commit callbacks
    t1, t2 = kafkapg.connect(pport), kafkapg.connect(pport)
    for t in (t1, t2):
        t.autocommit = False
        t.set_session(isolation_level="SERIALIZABLE")
    c1, c2 = t1.cursor(), t2.cursor()
    c1.execute("SELECT count(*) FROM drop_race_skew WHERE k = 1")
    c2.execute("SELECT count(*) FROM drop_race_skew WHERE k = 2")
    c1.execute("INSERT INTO drop_race_skew VALUES (2)")
    c2.execute("INSERT INTO drop_race_skew VALUES (1)")
    c1.execute("SELECT kafka.delete_topic('drop-race-kept')")
    t2.commit()
    code, detail = None, ""
    try:
        t1.commit()
    except psycopg2.Error as e:
        code, detail = e.pgcode, (e.diag.message_detail or "")
    t1.close()
    t2.close()
    check("a deletion cancelled during its commit attempt fails with 40001",
          code == "40001" and "during commit" in detail, "%s %s" % (code, detail))
    exists = one(prim, "SELECT count(*) FROM kafka.topics WHERE name = 'drop-race-kept'")[0]
    check("the topic is still there", exists == 1)

    prim.autocommit = False
    cur.execute("SELECT \"offset\" FROM kafka.produce('drop-race-kept', 'k', 'after')")
    off = cur.fetchone()[0]
    prim.commit()
    prim.autocommit = True
    deadline, got = time.time() + 20, None
    while time.time() < deadline:
        got = lso(kport, "drop-race-kept")
        if isinstance(got, int) and got > off:
            break
        time.sleep(0.1)
    check("the marker of a later transaction on it is written: the last stable offset passes its "
          "record at %d" % off, isinstance(got, int) and got > off, "last stable offset %s" % (got,))


def try_prepare(prim, gid, statements):
    """Run statements in a transaction and PREPARE it as gid: (SQLSTATE of the failure or None,
    whether it was prepared). One that was prepared is rolled back (it would hold its locks)."""
    cur = prim.cursor()
    prim.autocommit = False
    code = None
    try:
        for q in statements:
            cur.execute(q)
        cur.execute("PREPARE TRANSACTION '%s'" % gid)
    except psycopg2.Error as e:
        code = e.pgcode
    prim.rollback()
    prim.autocommit = True
    prepared = one(prim, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = %s", (gid,))[0]
    if prepared:
        cur.execute("ROLLBACK PREPARED '%s'" % gid)
    return code, prepared


def prepare_refused(prim):
    cur = prim.cursor()
    cur.execute("SELECT kafka.create_topic('drop-race-prepared', 2)")
    code, prepared = try_prepare(prim, "drop-race", ["SELECT kafka.delete_topic('drop-race-prepared')"])
    check("PREPARE TRANSACTION of a deletion is refused (0A000), nothing prepared",
          code == "0A000" and not prepared, "%s, %d prepared" % (code, prepared))
    cur.execute("SELECT \"offset\" FROM kafka.produce('drop-race-prepared', 'k', 'v')")
    check("the topic stays usable", cur.fetchone()[0] == 0)

    code, prepared = try_prepare(prim, "drop-race-new", [
        "SELECT kafka.create_topic('drop-race-prepared-new', 1)",
        "SELECT * FROM kafka.produce('drop-race-prepared-new', 'k', 'v')"])
    check("PREPARE TRANSACTION of one that created a topic and wrote to it is refused (0A000)",
          code == "0A000" and not prepared, "%s, %d prepared" % (code, prepared))


RESTORED = "restored the aborted-transaction index entry"


def log_count(pdata, text):
    with open(kafkapg.pgcluster("logfile", pdata), errors="replace") as f:
        return f.read().count(text)


def stop_resolver(prim):
    """SIGSTOP the resolver while it waits on its latch (never while it holds a lock): its pid."""
    pid = one(prim, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'kafka_pg resolver'")[0]
    for _ in range(200):
        os.kill(pid, signal.SIGSTOP)
        if one(prim, "SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = %s", (pid,))[0]:
            return pid
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.02)
    raise RuntimeError("the resolver is never found waiting on its latch")


def leave_unloaded(prim, pport, topic):
    """With the resolver stopped: a transaction on topic rolls back, and kafka.flush_markers() fails
    on the ABORT marker's index entry, leaving the partition unloaded. Returns (resolver pid, the
    transaction's first offset, the offset of its marker, the flush's error)."""
    cur = prim.cursor()
    pid = stop_resolver(prim)
    prim.autocommit = False
    cur.execute("SELECT base_offset, record_count FROM kafka.produce_batch(%s, ARRAY['k', 'k', 'k'], "
                "ARRAY['a', 'b', 'c'])", (topic,))
    first, count = cur.fetchone()
    prim.rollback()
    prim.autocommit = True
    s = kafkapg.connect(pport)
    err = ""
    try:
        s.cursor().execute("SET kafka.debug_fail_marker_index = on")
        s.cursor().execute("SELECT kafka.flush_markers()")
    except psycopg2.Error as e:
        err = str(e).strip().splitlines()[0]
    s.close()
    return pid, first, first + count, err


def unloaded_partition(prim, pport, kport, pdata):
    cur = prim.cursor()
    topic = "drop-race-unloaded"
    cur.execute("SELECT kafka.create_topic(%s, 1)", (topic,))
    cur.execute("SELECT * FROM kafka.produce(%s, 'k', 'kept')", (topic,))
    # its COMMIT marker (offset 1) written and flushed before the resolver stops
    deadline = time.time() + 10
    while time.time() < deadline and lso(kport, topic) != 2:
        time.sleep(0.05)
    restored = log_count(pdata, RESTORED)
    pid, first, marker, err = leave_unloaded(prim, pport, topic)
    try:
        check("kafka.flush_markers() fails on the ABORT marker's index entry, as asked",
              "debug_fail_marker_index" in err, err)
        check("the last stable offset stays at the aborted transaction's first record (%d)" % first,
              lso(kport, topic) == first, "last stable offset %s" % (lso(kport, topic),))
        again = one(prim, "SELECT kafka.flush_markers()")[0]
        check("another kafka.flush_markers() writes nothing and leaves it unloaded", again == 0 and
              lso(kport, topic) == first and log_count(pdata, RESTORED) == restored, "%s written" % again)
        deleter = kafkapg.connect(pport)
        deleter.autocommit = False
        deleter.cursor().execute("SELECT kafka.delete_topic(%s)", (topic,))
    finally:
        os.kill(pid, signal.SIGCONT)
    time.sleep(2.5)
    check("while a deletion of its topic waits, the resolver does not load it",
          log_count(pdata, RESTORED) == restored)
    deleter.rollback()
    deleter.close()
    deadline, got = time.time() + 10, None
    while time.time() < deadline:
        got = lso(kport, topic)
        if isinstance(got, int) and got > marker and log_count(pdata, RESTORED) > restored:
            break
        time.sleep(0.1)
    check("once the deletion rolled back, the resolver loads it: the index entry is restored from "
          "the marker", log_count(pdata, RESTORED) == restored + 1)
    check("and the last stable offset passes the marker at %d without an append" % marker,
          isinstance(got, int) and got == marker + 1, "last stable offset %s" % (got,))
    cur.execute("SELECT array_agg(convert_from(value, 'UTF8') ORDER BY \"offset\") FROM kafka.fetch(%s, 0)",
                (topic,))
    values = cur.fetchone()[0]
    check("a read_committed read skips the aborted records", values == ["kept"], values)

    # the same, the deletion committing while the partition is unloaded
    pid, first, marker, err = leave_unloaded(prim, pport, topic)
    try:
        check("unloaded again (%s)" % err, "debug_fail_marker_index" in err, err)
        cur.execute("SELECT kafka.delete_topic(%s)", (topic,))
    finally:
        os.kill(pid, signal.SIGCONT)
    time.sleep(2)  # the resolver's next rounds, with the partition gone
    gone = one(prim, "SELECT count(*) FROM kafka.topics WHERE name = %s", (topic,))[0] == 0
    check("a deletion of an unloaded partition's topic commits", gone)


def run(root):
    pdata, sdata = os.path.join(root, "primary"), os.path.join(root, "standby")
    (pport, sport), (kp1, kp2) = kafkapg.free_ports(2, 2, "57532", "39192")
    env = {"KP_KAFKA_DB": "postgres", "KP_EXTRA_CONF": "max_prepared_transactions = 5"}
    started = []
    try:
        prim = kafkapg.start_primary(pdata, pport, kp1, env, started)
        kafkapg.pgcluster("basebackup", pport, sdata)
        kafkapg.pgcluster("write-conf", sdata, sport, kp2, root,
                          env=dict(env, KP_EXTRA_CONF="max_prepared_transactions = 5\nkafka.node_id = 1"))
        kafkapg.pgcluster("start", sdata)
        started.append(sdata)
        stby = kafkapg.connect(sport)
        if not kafkapg.wait_for(prim, "SELECT count(*) > 0 FROM pg_stat_replication WHERE state = 'streaming'",
                                None, 120):
            raise RuntimeError("the standby does not stream")
        info("primary %d (Kafka %d), standby %d streaming" % (pport, kp1, sport))

        deletes_under_marker_writers(prim, pport, stby)
        deletion_aborted_after_precommit(prim, pport, kp1)
        prepare_refused(prim)
        unloaded_partition(prim, pport, kp1, pdata)

        check("the standby is still up and has replayed everything", caught_up(prim, stby))
        prim.close()
        stby.close()
    finally:
        kafkapg.stop_clusters(started)
        kafkapg.check_server_logs((pdata, sdata), check, 30)


def main():
    kafkapg.run_main("drop race test", "droprace", run, check, finish)


if __name__ == "__main__":
    main()
