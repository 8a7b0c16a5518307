#!/usr/bin/python3
"""test/crash/compaction_crash.py: kill -9 while the log cleaner compacts.

A throwaway cluster whose log cleaner looks for partitions to compact every
20 ms (kafka.log_cleaner_backoff_ms) and cleans as soon as anything is dirty
(min.cleanable.dirty.ratio 0.01), on a compacted topic whose segments roll
every 20 ms (segment.ms), whose tombstones go after 300 ms
(delete.retention.ms) and whose replaced segments are dropped 1 s after a
swap (file.delete.delay.ms): so a clean (rewrite, swap, drop) is nearly
always under way.  A reader reads both partitions whole, again and again,
meanwhile: it must never fail (file.delete.delay.ms keeps the segments it
listed before a swap), nor see offsets go back or a rolled-back record.  One SQL transaction per record over 20 keys per partition, some
of them tombstones, and now and then a transaction that is rolled back;
each record whose COMMIT returned is noted.  Then the postmaster is killed
with SIGKILL at a random moment and the server restarted,
KP_COMPACTION_CRASH_LOOPS times (5).  After every restart:
  - each key's latest acknowledged record is read back (read_committed) at
    its offset with its value; a key whose latest record is a tombstone shows
    nothing newer, and the tombstone or nothing at that offset;
  - no record of a rolled-back transaction is ever read;
  - below the first dirty offset (the cleaner checkpoint) each key has at
    most one record;
  - the log start offset is still 0 (compaction never moves it) and the log
    end is past every acknowledged offset;
  - one more compaction pass (kafka.run_log_compaction) succeeds and keeps
    all of the above;
  - the server log shows no PANIC and no crash of a process.
The cleaner must have cleaned during the run (kafka.log_cleaner_status).
Last line: "compaction crash test: PASSED" or "FAILED".
"""
import os
import random
import sys
import threading
import time

import psycopg2

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kafkapg  # noqa: E402

DB = "postgres"
TOPIC = "cc"
PARTS = 2
KEYS = 20
failures = kafkapg.Failures()
fail = failures.fail
info = kafkapg.info


def producer(port, acked, aborted, stop):
    """Produce until the connection breaks; note each record whose COMMIT returned."""
    try:
        conn = kafkapg.connect(port, DB)
        conn.autocommit = True
        cur = conn.cursor()
        n = 0
        while not stop.is_set():
            p = n % PARTS
            k = "k%d" % random.randrange(KEYS)
            r = random.random()
            if r < 0.05:
                v = "aborted-%d" % time.time_ns()
                cur.execute("BEGIN")
                cur.execute("SELECT \"offset\" FROM kafka.produce(%s, %s, %s, partition => %s)", (TOPIC, k, v, p))
                aborted.add(v)
                cur.execute("ROLLBACK")
            else:
                v = None if r < 0.15 else "v-%d" % time.time_ns()
                cur.execute("SELECT \"offset\" FROM kafka.produce(%s, %s, %s::text, partition => %s)", (TOPIC, k, v, p))
                acked.append((p, cur.fetchone()[0], k, v))
            n += 1
            time.sleep(0.002)
    except psycopg2.Error:
        pass


def reader(port, aborted, stop, errors):
    """Read the whole of each partition again and again while cleans swap segments in and out."""
    try:
        conn = kafkapg.connect(port, DB)
        conn.autocommit = True
        cur = conn.cursor()
        while not stop.is_set():
            for p in range(PARTS):
                try:
                    cur.execute("SELECT \"offset\", value FROM kafka.fetch_text(%s, %s, 0, 10000000)", (TOPIC, p))
                except psycopg2.OperationalError:
                    return          # the server went away: the kill
                except psycopg2.Error as e:
                    errors.append("partition %d: %s" % (p, str(e).strip().splitlines()[0]))
                    continue
                rows = cur.fetchall()
                offsets = [o for (o, _) in rows]
                if offsets != sorted(set(offsets)):
                    errors.append("partition %d: offsets not increasing" % p)
                if any(v in aborted for (_, v) in rows):
                    errors.append("partition %d: a rolled-back record was read" % p)
    except psycopg2.Error:
        pass


def check(port, acked, aborted, label):
    conn = kafkapg.connect(port, DB)
    cur = conn.cursor()
    cur.execute("SELECT kafka.flush_markers()")
    for p in range(PARTS):
        cur.execute("SELECT log_start_offset, log_end_offset FROM kafka.partition_status "
                    "WHERE topic = %s AND partition = %s", (TOPIC, p))
        start, end = cur.fetchone()
        mine = [a for a in acked if a[0] == p]
        if start != 0:
            fail("%s: partition %d: the log start moved to %d" % (label, p, start))
        if mine and end <= max(a[1] for a in mine):
            fail("%s: partition %d: log end %d is not past the acknowledged offset %d"
                 % (label, p, end, max(a[1] for a in mine)))
        cur.execute("SELECT first_dirty_offset FROM kafka.log_cleaner_status WHERE topic = %s AND partition = %s",
                    (TOPIC, p))
        first_dirty = cur.fetchone()[0] or 0
        cur.execute("SELECT \"offset\", key, value FROM kafka.fetch_text(%s, %s, 0, 10000000)", (TOPIC, p))
        rows = cur.fetchall()
        by_offset = {o: (k, v) for (o, k, v) in rows}
        latest = {}
        for (_, o, k, v) in mine:
            if k not in latest or o > latest[k][0]:
                latest[k] = (o, v)
        bad = 0
        for k, (o, v) in latest.items():
            got = by_offset.get(o)
            if v is None:
                if got is not None and got != (k, None):
                    fail("%s: partition %d: key %s's tombstone at %d reads back as %r" % (label, p, k, o, got))
                    bad += 1
            elif got != (k, v):
                fail("%s: partition %d: key %s's latest value %r at %d reads back as %r" % (label, p, k, v, o, got))
                bad += 1
        # below the first dirty offset a clean has kept one record per key
        seen = {}
        for (o, k, v) in rows:
            if o < first_dirty:
                if k in seen:
                    fail("%s: partition %d: key %s has records at %d and %d below the first dirty offset %d"
                         % (label, p, k, seen[k], o, first_dirty))
                    bad += 1
                seen[k] = o
        for (o, k, v) in rows:
            if v in aborted:
                fail("%s: partition %d: a record of a rolled-back transaction is read at %d" % (label, p, o))
                bad += 1
        info("%s: partition %d: %d records read, %d keys' latest values checked, first dirty offset %d, log end %d"
             % (label, p, len(rows), len(latest), first_dirty, end))
    conn.close()


def run():
    cluster = kafkapg.ScratchCluster("compaction_crash", 56542, 29542)
    port = cluster.port
    env = {"KP_KAFKA_DB": DB, "KP_EXTRA_CONF": "kafka.log_cleaner_backoff_ms = 20"}
    loops = int(os.environ.get("KP_COMPACTION_CRASH_LOOPS", "5"))
    acked = []
    aborted = set()
    cleans = 0
    try:
        cluster.start(DB, env)
        conn = kafkapg.connect(port, DB)
        conn.cursor().execute("SELECT kafka.create_topic(%s, %s, %s)",
                              (TOPIC, PARTS, '{"cleanup.policy": "compact", "segment.ms": "20", '
                               '"min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "300", '
                               '"file.delete.delay.ms": "1000"}'))
        conn.close()
        for loop in range(1, loops + 1):
            label = "loop %d" % loop
            stop = threading.Event()
            th = threading.Thread(target=producer, args=(port, acked, aborted, stop))
            th.start()
            errors = []
            rd = threading.Thread(target=reader, args=(port, aborted, stop, errors))
            rd.start()
            time.sleep(random.uniform(3.0, 6.0))
            try:
                c = kafkapg.connect(port, DB)
                cur = c.cursor()
                cur.execute("SELECT coalesce(sum(compactions), 0) FROM kafka.log_cleaner_status WHERE topic = %s",
                            (TOPIC,))
                cleans += cur.fetchone()[0]
                c.close()
            except psycopg2.Error:
                pass
            time.sleep(random.uniform(0.0, 0.5))
            pm = cluster.kill_postmaster()
            stop.set()
            th.join(60)
            rd.join(60)
            for e in errors[:5]:
                fail("%s: a reader during the cleans: %s" % (label, e))
            kafkapg.wait_gone(pm)
            time.sleep(1)
            kafkapg.pgcluster("start", cluster.data)
            info("%s: killed the postmaster %d while compaction ran; restarted (%d cleans so far)"
                 % (label, pm, cleans))
            check(port, acked, aborted, label)
            conn = kafkapg.connect(port, DB)
            cur = conn.cursor()
            cur.execute("SELECT count(*) FROM kafka.run_log_compaction(%s)", (TOPIC,))
            conn.commit()
            conn.close()
            check(port, acked, aborted, label + " after one more pass")
        if cleans == 0:
            fail("the log cleaner never compacted the topic: the test tested nothing")
        for line in cluster.log_problems().splitlines()[:20]:
            fail("server log: %s" % line)
    finally:
        kafkapg.crash_test_cleanup(cluster, failures)


def main():
    kafkapg.crash_test_main(run, failures, "compaction crash test")


if __name__ == "__main__":
    main()
