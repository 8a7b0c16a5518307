#!/usr/bin/python3
"""test/crash/retention_crash.py: kill -9 while the log cleaner deletes segments.

A throwaway cluster whose log cleaner checks retention every 50 ms
(kafka.log_retention_check_interval_ms) on a topic whose segments roll every
20 ms (segment.ms) and expire after 4 s (retention.ms), so that a retention
pass is nearly always under way: the log start moves (the segments below it
leave the log at once) and, file.delete.delay.ms being 0 here, the next
pass drops the storage of those that left (src/store/logstart.c).
Records are produced one per transaction, and each one acknowledged (its
COMMIT returned) is noted.  Then the postmaster is killed with SIGKILL at a
random moment and the server restarted, KP_RETENTION_CRASH_LOOPS times (5).
After every restart:
  - the log start offset of each partition never went back;
  - every acknowledged record at or above the log start is read back, with its
    value, at its offset (nothing committed above the log start is lost);
  - every segment the directory lists can be read (kafka.segments), and no
    listed segment lies wholly below the log start, also after one more
    retention pass (kafka.run_log_cleaner), which drops those that left the
    log before the crash;
  - the server log shows no PANIC and no crash of a process.
Last line: "retention crash test: PASSED" or "FAILED".
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
TOPIC = "rc"
PARTS = 2
failures = kafkapg.Failures()
fail = failures.fail
info = kafkapg.info


def producer(port, acked, stop):
    """Produce until the connection breaks; note each record whose COMMIT returned."""
    try:
        conn = kafkapg.connect(port, DB)
        cur = conn.cursor()
        n = 0
        while not stop.is_set():
            p = n % PARTS
            v = "v%d-%d" % (os.getpid(), time.time_ns())
            cur.execute("SELECT \"offset\" FROM kafka.produce(%s, NULL::text, %s, partition => %s)", (TOPIC, v, p))
            acked.append((p, cur.fetchone()[0], v))
            n += 1
            time.sleep(0.003)
    except psycopg2.Error:
        pass


def verify(port, acked, starts, label):
    conn = kafkapg.connect(port, DB)
    cur = conn.cursor()
    cur.execute("SELECT kafka.flush_markers()")
    for p in range(PARTS):
        # the cleaner keeps moving the log start: read again if it moved under the fetch
        for attempt in range(20):
            cur.execute("SELECT log_start_offset, log_end_offset FROM kafka.partition_status "
                        "WHERE topic = %s AND partition = %s", (TOPIC, p))
            start, end = cur.fetchone()
            if start < starts.get(p, 0):
                fail("%s: partition %d's log start went back from %d to %d" % (label, p, starts[p], start))
            starts[p] = start
            try:
                cur.execute("SELECT \"offset\", value FROM kafka.fetch_text(%s, %s, %s, 1000000)", (TOPIC, p, start))
                got = dict(cur.fetchall())
                break
            except psycopg2.Error as e:
                if e.pgcode != "KP001":
                    raise
        else:
            fail("%s: partition %d: no fetch from the log start succeeded in 20 attempts" % (label, p))
            continue
        want = [(o, v) for (pp, o, v) in acked if pp == p and o >= start]
        lost = [(o, v) for (o, v) in want if got.get(o) != v]
        if lost:
            fail("%s: partition %d: %d acknowledged records at or above the log start %d not read back, e.g. %r"
                 % (label, p, len(lost), start, lost[:3]))
        info("%s: partition %d: log %d..%d, %d acknowledged records above the log start all read back"
             % (label, p, start, end, len(want) - len(lost)))
    cur.execute("SELECT count(*) FROM kafka.segments WHERE topic = %s", (TOPIC,))
    cur.execute("SELECT count(*) FROM kafka.run_log_cleaner() WHERE topic = %s", (TOPIC,))
    cur.execute("""SELECT s.partition, s.base_offset, st.log_start_offset
                     FROM kafka.segments s JOIN kafka.partition_status st USING (topic, partition)
                    WHERE s.topic = %s
                      AND EXISTS (SELECT FROM kafka.segments n WHERE n.topic = s.topic AND n.partition = s.partition
                                     AND n.base_offset > s.base_offset AND n.base_offset <= st.log_start_offset)""",
                (TOPIC,))
    below = cur.fetchall()
    if below:
        fail("%s: segments wholly below the log start still listed after a retention pass: %r" % (label, below[:5]))
    conn.close()


def run():
    cluster = kafkapg.ScratchCluster("retention_crash", 56532, 29532)
    port = cluster.port
    env = {"KP_KAFKA_DB": DB, "KP_EXTRA_CONF": "kafka.log_retention_check_interval_ms = 50"}
    loops = int(os.environ.get("KP_RETENTION_CRASH_LOOPS", "5"))
    acked = []
    starts = {}
    try:
        cluster.start(DB, env)
        conn = kafkapg.connect(port, DB)
        conn.cursor().execute("SELECT kafka.create_topic(%s, %s, %s)",
                              (TOPIC, PARTS, '{"segment.ms": "20", "retention.ms": "4000", "file.delete.delay.ms": "0"}'))
        conn.close()
        for loop in range(1, loops + 1):
            label = "loop %d" % loop
            stop = threading.Event()
            th = threading.Thread(target=producer, args=(port, acked, stop))
            th.start()
            time.sleep(random.uniform(3.0, 6.0))
            pm = cluster.kill_postmaster()
            stop.set()
            th.join(60)
            kafkapg.wait_gone(pm)
            time.sleep(1)
            kafkapg.pgcluster("start", cluster.data)
            info("%s: killed the postmaster %d while retention ran; restarted" % (label, pm))
            verify(port, acked, starts, label)
        for line in cluster.log_problems().splitlines()[:20]:
            fail("server log: %s" % line)
    finally:
        kafkapg.crash_test_cleanup(cluster, failures)


def main():
    kafkapg.crash_test_main(run, failures, "retention crash test")


if __name__ == "__main__":
    main()
