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
import shutil
import sys
import threading
import time

import psycopg2

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kafkapg  # noqa: E402

DB = "pl"  # not kafka.database (postgres): its partitions load at first use
LOAD_LOCK_CLASS = 0x4B50  # KP_LOCKTAG_CLASS_PARTITION_LOAD, src/store/partition.c
RECORDS = 200

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok - " + name, flush=True)
    else:
        failed += 1
        print("not ok - %s %s" % (name, detail), flush=True)


class Session(threading.Thread):
    """Runs one statement on its own connection in the background."""

    def __init__(self, conn, sql):
        super().__init__(daemon=True)
        self.conn, self.sql = conn, sql
        self.rows, self.error = None, None

    def run(self):
        try:
            cur = self.conn.cursor()
            cur.execute(self.sql)
            self.rows = cur.fetchall()
        except psycopg2.Error as e:
            self.error = e


def pid(conn):
    cur = conn.cursor()
    cur.execute("SELECT pg_backend_pid()")
    return cur.fetchone()[0]


def wait_for(conn, sql, args, seconds=20):
    """Poll sql until it returns a true first column; return whether it did."""
    cur = conn.cursor()
    deadline = time.time() + seconds
    while time.time() < deadline:
        cur.execute(sql, args)
        row = cur.fetchone()
        if row and row[0]:
            return True
        time.sleep(0.05)
    return False


def waits_for_load_lock(mon, p):
    return wait_for(mon, "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted "
                    "AND locktype = 'advisory' AND objsubid = %s)", (p, LOAD_LOCK_CLASS))


FETCH = "SELECT count(*) FROM kafka.fetch('pl', 0, 0, 100000)"


def run():
    root = kafkapg.make_tmp("partition_load")
    data = os.path.join(root, "data")
    port = int(kafkapg.pgcluster("free-port", os.environ.get("KP_NEXT_PORT", "58432")))
    kport = int(kafkapg.pgcluster("free-port", os.environ.get("KAFKA_NEXT_PORT", "49092"), port))
    started = False
    try:
        kafkapg.pgcluster("init", data, port, kport, env={"KP_KAFKA_DB": "postgres"})
        kafkapg.pgcluster("start", data)
        started = True
        kafkapg.pgcluster("create-extension", port, DB)
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
        if started:
            kafkapg.pgcluster("stop", data)
        log = kafkapg.pgcluster("logfile", data)
        problems = kafkapg.pgcluster("log-problems", log) if os.path.exists(log) else ""
        check("no PANIC or crash in the server log", problems == "", problems)
        if failed or os.environ.get("KP_KEEP_TMP") == "1":
            print("--- %s" % log)
            kafkapg.tail(log, 40)
        if os.environ.get("KP_KEEP_TMP") != "1":
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    try:
        run()
    except Exception as e:  # noqa: BLE001
        check("the test ran to the end", False, "(%s: %s)" % (type(e).__name__, e))
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)
