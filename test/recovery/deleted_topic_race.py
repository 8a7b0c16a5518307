#!/usr/bin/python3
"""test/recovery/deleted_topic_race.py: nobody works from a topic whose deletion committed.

A user of a topic reads it from kafka.topics and then locks it (src/catalog/README).  The read
used the caller's snapshot, which may predate the commit of a deletion whose lock is then free at
once: the topic came back as if it still existed, with partitions whose storage the deletion had
dropped.  Found by DescribeLogDirs on the wire while franz-go's suite deleted its topics ("could
not read block 0 in file ...: read only 0 of 8192 bytes", "segment ... has a bad metapage", and the
connection closed; with more connections the listener then hit PANIC "hash table \"Shared Buffer
Lookup Table\" corrupted" within seconds, and a backend a segmentation fault).  The topic is now read
under the latest snapshot, as PostgreSQL reads its own catalogs, and read again (not cached) when an
invalidation came in while it was read or locked (src/catalog/README).

1. Deterministic, in SQL: a REPEATABLE READ transaction takes its snapshot while topic 'gone' (one
   record) exists; another session deletes it; the transaction's kafka.fetch and kafka.produce of
   'gone' are "topic does not exist" (SQLSTATE of UNKNOWN_TOPIC_OR_PARTITION), as a dropped table
   is to it (before: the fetch failed reading the dropped segment); a topic made again under the
   name after its snapshot is read as it is now.
2. On the wire, for 20 s: three connections each create a topic of 8 partitions, produce a record
   to each and delete it, over and over, while three others send DescribeLogDirs of every topic;
   every DescribeLogDirs is answered and the server log has no failed request (the build before:
   both checks fail, and the server log has the PANIC).
3. In SQL, for 15 s: three sessions create a topic of 4 partitions, produce to each and delete it,
   over and over, while two read kafka.partition_status: no statement fails and the server log has
   no ERROR.  The view's per-partition function took its partition ids from the view's snapshot and
   loaded a partition whose deletion had committed since: "could not read block 0", "bad
   metapage", a zero page in kafka.topics' primary key index, PANIC "could not truncate file ...
   it's only 0 blocks now" and "Shared Buffer Lookup Table corrupted" (18f5130, the build this
   stop started from, within a minute).  It now takes the topic's lock and looks again
   (kp_topic_lock_partition_id), and a partition deleted meanwhile shows NULLs.
4. The race of part 3 with a careless caller: the readers set kafka.debug_views_skip_recheck
   (testing only), so the view's function passes the store partition ids from its snapshot,
   unchecked, as before part 3's fix.  The store's own check (src/store/README, invariant 14)
   must refuse each load of a deleted partition: statements fail only with "partition id N does
   not exist" (KP003), some do, and the server log has no other ERROR and no PANIC.  The build
   before (808f410, with the same careless readers): "could not read block 0", "bad metapage",
   and PANIC "Shared Buffer Lookup Table corrupted" within seconds.
5. Deterministic, in SQL: a transaction reads kafka.partition_status of topic 'lock-b' and stays
   open; another transaction deletes 'lock-a' and then 'lock-b' (lock_timeout 5 s): it goes through
   at once.  The view's function held each topic's lock to the end of the reader's transaction, so
   a reader of many topics and a deleter of several, each taking the locks in its own order, could
   deadlock; the build before: "canceling statement due to lock timeout".

Last line: "N passed, M failed".
"""

import os
import re
import sys
import threading
import time

import psycopg2

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "wire"))
import kafkapg  # noqa: E402

sys.argv[1:] = ["127.0.0.1:0"]  # conformance.py reads HOST:PORT at import; set below
import conformance as kc  # noqa: E402
from kwire import array, i32, string  # noqa: E402

DB = "postgres"
tap = kafkapg.Tap()
check = tap.check


def q(conn, sql, args=None):
    cur = conn.cursor()
    cur.execute(sql, args)
    return cur.fetchall() if cur.description else None


def sqlstate_of(conn, sql):
    try:
        q(conn, sql)
        return None
    except psycopg2.Error as e:
        if not conn.autocommit:
            conn.rollback()
        return e.pgcode, (e.pgerror or "").strip().splitlines()[0]


def repeatable_read(port):
    admin = kafkapg.connect(port, DB)
    admin.autocommit = True
    q(admin, "SELECT kafka.create_topic('gone', 1)")
    q(admin, "SELECT kafka.produce('gone', 'k', 'v')")
    r = kafkapg.connect(port, DB)
    r.autocommit = True  # explicit BEGIN ... ROLLBACK
    q(r, "BEGIN ISOLATION LEVEL REPEATABLE READ")
    q(r, "SELECT count(*) FROM kafka.topics")  # the transaction's snapshot: 'gone' exists
    q(admin, "SELECT kafka.delete_topic('gone')")
    fetch = sqlstate_of(r, "SELECT count(*) FROM kafka.fetch('gone', 0, 0, 10)")
    q(r, "ROLLBACK")
    # the SQLSTATE of an unknown topic, from a session with nothing to predate
    want = sqlstate_of(admin, "SELECT count(*) FROM kafka.fetch('never-was', 0, 0, 10)")
    check("REPEATABLE READ snapshot from before the deletion: kafka.fetch of the deleted topic is "
          "\"does not exist\", as for a topic that never was",
          fetch is not None and want is not None and fetch[0] == want[0] and "does not exist" in fetch[1],
          "(%s; unknown topic: %s)" % (fetch, want))
    q(r, "BEGIN ISOLATION LEVEL REPEATABLE READ")
    q(r, "SELECT count(*) FROM kafka.topics")
    q(admin, "SELECT kafka.create_topic('gone2', 1)")
    q(admin, "SELECT kafka.produce('gone2', 'k', 'v')")
    q(admin, "SELECT kafka.delete_topic('gone2')")
    prod = sqlstate_of(r, "SELECT kafka.produce('gone2', 'k', 'late')")
    check("... kafka.produce of a topic deleted after the snapshot is \"does not exist\" too",
          prod is not None and prod[0] == want[0], "(%s)" % (prod,))
    q(r, "ROLLBACK")
    q(r, "BEGIN ISOLATION LEVEL REPEATABLE READ")
    q(r, "SELECT count(*) FROM kafka.topics")
    q(admin, "SELECT kafka.create_topic('gone', 2)")
    q(admin, "SELECT kafka.produce('gone', 'k', 'new', partition => 1)")
    got = q(r, "SELECT count(*) FROM kafka.fetch('gone', 1, 0, 10)")
    check("... a topic made again under the name after the snapshot is read as it is now "
          "(2 partitions, its record)", got == [(1,)], "(%s)" % got)
    q(r, "ROLLBACK")
    r.close()
    admin.close()


def run_and_read_log(threads, log_path, log_start, wanted):
    """Start the threads, wait for them, and return the server log's lines since log_start for
    which wanted(line) is true."""
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(log_path, errors="replace") as f:
        f.seek(log_start)
        return [line.strip() for line in f if wanted(line)]


def wire_race(kport, log_path, seconds=20):
    kc.HOST, kc.PORT = "127.0.0.1", kport
    stop = time.time() + seconds
    stats = {"cycles": 0, "described": 0, "unanswered": 0}
    log_start = os.path.getsize(log_path)

    def creator(k):
        c = kc.Conn()
        n = 0
        while time.time() < stop:
            t = "race-%d-%d" % (k, n)
            n += 1
            if kc.create_topic(c, t, None, 8) != 0:
                time.sleep(0.1)
                continue
            for p in range(8):
                kc.produce_to(c, t, p, kc.build_batch(0, [b"x"]))
            c.call(20, 3, array([string(t)]) + i32(30000))
            stats["cycles"] += 1

    def describer():
        c = kc.Conn()
        while time.time() < stop:
            r = c.call(35, 1, i32(-1))  # DescribeLogDirs v1, every topic
            if r is None:
                stats["unanswered"] += 1
                c = kc.Conn()
            else:
                stats["described"] += 1

    failed = run_and_read_log([threading.Thread(target=creator, args=(k,)) for k in range(3)]
                              + [threading.Thread(target=describer) for _ in range(3)], log_path, log_start,
                              lambda line: " failed: " in line and "kafka_pg listener" in line)
    check("%d cycles of create, produce, delete beside %d DescribeLogDirs: every one answered"
          % (stats["cycles"], stats["described"]),
          stats["cycles"] > 10 and stats["described"] > 100 and stats["unanswered"] == 0, "(%s)" % stats)
    check("... and no request failed in the server log", not failed, "(%d: %s)" % (len(failed), failed[:2]))


def sql_race(port, log_path, seconds=15, careless=False):
    """Three sessions create a topic of 4 partitions, produce to each and delete it, over and
    over; two read kafka.partition_status meanwhile (its per-partition function takes no topic
    from a topic lookup: the partition ids come from the view's snapshot).  careless: the readers
    set kafka.debug_views_skip_recheck, so the ids reach the store unchecked.  Returns the counts,
    the statements' errors as (SQLSTATE, first line) and the server log's ERROR and PANIC lines."""
    stop = time.time() + seconds
    stats = {"cycles": 0, "status": 0}
    errors = []
    log_start = os.path.getsize(log_path)

    def session(work, setup=None):
        c = kafkapg.connect(port, DB)
        c.autocommit = True
        cur = c.cursor()
        if setup:
            cur.execute(setup)
        n = 0
        while time.time() < stop:
            try:
                work(cur, n)
            except psycopg2.Error as e:
                errors.append((e.pgcode, str(e).strip().splitlines()[0]))
                if c.closed:
                    return
            n += 1
        c.close()

    def creator(k):
        def work(cur, n):
            t = "sqlrace-%d-%d" % (k, n)
            cur.execute("SELECT kafka.create_topic(%s, 4)", (t,))
            for p in range(4):
                cur.execute("SELECT kafka.produce(%s, 'k', 'v', partition => %s)", (t, p))
            cur.execute("SELECT kafka.delete_topic(%s)", (t,))
            stats["cycles"] += 1
        return work

    def reader(cur, n):
        cur.execute("SELECT count(*) FROM kafka.partition_status")
        stats["status"] += 1

    setup = "SET kafka.debug_views_skip_recheck = on" if careless else None
    bad = run_and_read_log([threading.Thread(target=session, args=(creator(k),)) for k in range(3)]
                           + [threading.Thread(target=session, args=(reader, setup)) for _ in range(2)],
                           log_path, log_start, lambda line: " ERROR: " in line or " PANIC: " in line)
    return stats, errors, bad


def views_recheck(port, log_path):
    """Part 3: the race with the views as they are."""
    stats, errors, bad = sql_race(port, log_path)
    errors = [text for _, text in errors]
    check("SQL: %d cycles of create, produce, delete beside %d reads of kafka.partition_status, no error"
          % (stats["cycles"], stats["status"]),
          stats["cycles"] > 10 and stats["status"] > 10 and not errors, "(%d: %s)" % (len(errors), errors[:2]))
    check("... and none in the server log", not bad, "(%d: %s)" % (len(bad), bad[:2]))


def store_refuses(port, log_path, seconds=15):
    """Part 4: the race of part 3 with readers that do not look again (a careless caller)."""
    stats, errors, bad = sql_race(port, log_path, seconds, careless=True)
    refused = re.compile(r"partition id \d+ does not exist$")
    others = [e for e in errors if e[0] != "KP003" or not refused.search(e[1])]
    log_others = [line for line in bad if not refused.search(line)]
    check("careless readers: %d cycles beside %d reads of kafka.partition_status; the store refused "
          "%d loads of a deleted partition (KP003), and no statement failed otherwise"
          % (stats["cycles"], stats["status"], len(errors) - len(others)),
          stats["cycles"] > 10 and len(errors) > len(others) and not others,
          "(%d: %s)" % (len(others), others[:2]))
    check("... the server log has no other ERROR (no unreadable or cut segment) and no PANIC",
          not log_others, "(%d: %s)" % (len(log_others), log_others[:2]))


def views_release_locks(port):
    """Part 5: a transaction that read kafka.partition_status holds no lock on the topics it read."""
    admin = kafkapg.connect(port, DB)
    q(admin, "SELECT kafka.create_topic('lock-b', 1)")
    q(admin, "SELECT kafka.create_topic('lock-a', 1)")
    v = kafkapg.connect(port, DB)
    v.autocommit = False
    got = q(v, "SELECT count(*) FROM kafka.partition_status WHERE topic = 'lock-b'")
    d = kafkapg.connect(port, DB)
    d.autocommit = False
    q(d, "SET lock_timeout = '5s'")
    q(d, "SELECT kafka.delete_topic('lock-a')")
    try:
        q(d, "SELECT kafka.delete_topic('lock-b')")
        err = None
    except psycopg2.Error as e:
        err = "%s %s" % (e.pgcode, str(e).strip().splitlines()[0])
    d.rollback()
    check("a transaction that read kafka.partition_status of a topic holds no lock on it: a transaction "
          "deleting two topics, that one last, goes through at once", got == [(1,)] and err is None,
          "(%s, %s)" % (got, err))
    got = q(v, "SELECT count(*) FROM kafka.partition_status WHERE topic IN ('lock-a', 'lock-b')")
    check("... and the reader's next statement reads both topics", got == [(2,)], "(%s)" % got)
    v.rollback()
    q(admin, "SELECT kafka.delete_topic('lock-a')")
    q(admin, "SELECT kafka.delete_topic('lock-b')")
    for c in (v, d, admin):
        c.close()


def run():
    cluster = kafkapg.ScratchCluster("deleted_topic_race", 58532, 49192)
    try:
        cluster.start(DB, {"KP_KAFKA_DB": DB})
        try:
            repeatable_read(cluster.port)
        except psycopg2.Error as e:  # the old build's: the wire part still runs
            check("the REPEATABLE READ part ran to the end", False, "(%s)" % str(e).strip())
        wire_race(cluster.kport, cluster.log())
        views_recheck(cluster.port, cluster.log())
        store_refuses(cluster.port, cluster.log())
        views_release_locks(cluster.port)
    finally:
        tap.cleanup(cluster)


if __name__ == "__main__":
    tap.main(run)
