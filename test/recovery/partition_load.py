#!/usr/bin/python3
"""test/recovery/partition_load.py: waiting for a partition's recovery is cancellable and deadlock-safe.

After a restart the first process that touches a partition rebuilds its state
from the store (src/store/recovery.c): I/O that grows with the active segment.
It runs under no LWLock; the others wait for it on a heavyweight lock (an
advisory lock tag of kafka_pg's own class, objsubid 19280 in pg_locks), where
a wait can be cancelled and the deadlock detector sees it (src/store/README,
"Long waits").

1. A topic with committed records; the server is restarted, so the partition
   is not loaded.  (The topic is in a database other than kafka.database:
   the resolver loads every partition of kafka.database as soon as the
   server starts, src/txn/resolver.c, so there no reader would ever find a
   partition unloaded.)
2. Session A locks kafka.store ACCESS EXCLUSIVE in a transaction, so the
   loader will block on it (it reads the directory's relfilenode from there).
3. Session B reads the partition: it starts the load and blocks on A's lock.
4. Session C reads the partition: it waits for B's load in the lock manager,
   and pg_cancel_backend ends that wait.
5. Session A reads the partition: A waits for B's load, B for A's lock; the
   deadlock detector ends one of them (under an LWLock both would hang).
6. The other one returns every record; so does a fresh session afterwards,
   and the next produce continues at the log end offset.

Last line: "N passed, M failed".
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kafkapg  # noqa: E402

DB = "pl"  # not kafka.database (postgres): its partitions load at first use
LOAD_LOCK_CLASS = 0x4B50  # KP_LOCKTAG_CLASS_PARTITION_LOAD, src/store/partition.c
RECORDS = 200

tap = kafkapg.Tap()
check = tap.check
Session = kafkapg.Session


def pid(conn):
    cur = conn.cursor()
    cur.execute("SELECT pg_backend_pid()")
    return cur.fetchone()[0]


def wait_for(conn, sql, args, seconds=20):
    return kafkapg.wait_for(conn, sql, args, seconds)


def waits_for_load_lock(mon, p):
    return wait_for(mon, "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted "
                    "AND locktype = 'advisory' AND objsubid = %s)", (p, LOAD_LOCK_CLASS))


FETCH = "SELECT count(*) FROM kafka.fetch('pl', 0, 0, 100000)"


def run():
    cluster = kafkapg.ScratchCluster("partition_load", 58432, 49092)
    data, port = cluster.data, cluster.port
    try:
        cluster.start(DB, {"KP_KAFKA_DB": "postgres"})
        conn = kafkapg.connect(port, DB)
        cur = conn.cursor()
        cur.execute("SELECT kafka.create_topic('pl', 1)")
        cur.execute("SELECT count(*) FROM (SELECT kafka.produce('pl', 'k' || g, 'v' || g, partition => 0) "
                    "FROM generate_series(1, %s) g) s", (RECORDS,))
        cur.execute("SELECT kafka.flush_markers()")
        cur.execute("SELECT log_end_offset FROM kafka.partition_status WHERE topic = 'pl'")
        leo = cur.fetchone()[0]
        conn.close()

        kafkapg.pgcluster("stop", data)
        kafkapg.pgcluster("start", data)
        kafkapg.pgcluster("wait-ready", port, 60)

        mon = kafkapg.connect(port, DB)
        a = kafkapg.connect(port, DB)
        a.autocommit = False
        acur = a.cursor()
        acur.execute("LOCK TABLE kafka.store IN ACCESS EXCLUSIVE MODE")

        b_conn = kafkapg.connect(port, DB)
        b_pid = pid(b_conn)
        b = Session(b_conn, FETCH)
        b.start()
        b_waits = wait_for(mon, "SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                           "WHERE l.pid = %s AND NOT l.granted AND c.relname = 'store')", (b_pid,))
        check("the first reader after the restart loads the partition (and blocks on kafka.store)", b_waits)

        c_conn = kafkapg.connect(port, DB)
        c_pid = pid(c_conn)
        c = Session(c_conn, FETCH)
        c.start()
        check("a second reader waits for the load on the heavyweight load lock, not an LWLock",
              waits_for_load_lock(mon, c_pid))
        mon.cursor().execute("SELECT pg_cancel_backend(%s)", (c_pid,))
        c.join(10)
        check("pg_cancel_backend ends that wait", not c.is_alive() and c.error is not None
              and c.error.pgcode == "57014", "(alive %s, error %r)" % (c.is_alive(), c.error))

        a_read = Session(a, FETCH)
        a_read.start()
        a_read.join(30)
        b.join(30)
        check("a reader holding what the loader waits for does not hang with it",
              not a_read.is_alive() and not b.is_alive())
        errors = [s.error for s in (a_read, b) if s.error is not None]
        codes = sorted(e.pgcode for e in errors)
        check("the deadlock detector ends exactly one of them", codes == ["40P01"], "(%r)" % errors)
        got = [s.rows[0][0] for s in (a_read, b) if s.error is None and s.rows]
        check("the other reads every record", got == [RECORDS], "(%r)" % got)
        a.rollback()
        a.close()

        conn = kafkapg.connect(port, DB)
        cur = conn.cursor()
        cur.execute(FETCH)
        n = cur.fetchone()[0]
        check("a fresh session reads every record", n == RECORDS, "(%d)" % n)
        cur.execute("SELECT \"offset\" FROM kafka.produce('pl', 'after', 'after the restart', partition => 0)")
        off = cur.fetchone()[0]
        check("the next produce continues at the log end offset", off == leo, "(log end %d, got %d)" % (leo, off))
        check("no load lock is left behind", not wait_for(
            conn, "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objsubid = %s)",
            (LOAD_LOCK_CLASS,), seconds=0.5))
        conn.close()
        for s in (mon, b_conn, c_conn):
            s.close()
    finally:
        tap.cleanup(cluster)


if __name__ == "__main__":
    tap.main(run)
