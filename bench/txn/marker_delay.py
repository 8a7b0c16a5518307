#!/usr/bin/python3
"""bench/txn/marker_delay.py: how long after the COMMIT of a SQL transaction that created a topic
and produced to it the COMMIT marker is in the log (kafka._partition_stats' log end passes it),
ROUNDS rounds (default 200) on a throwaway cluster (test/lib/pgcluster). Such a partition carries
KP_NO_MARKERS_CREATING until the commit (src/store/README, invariant 13); a marker pass that found
it flagged would leave the marker to the resolver's next round, up to a second later, unless
clearing the flag wakes the resolver. Prints the median, p90 and maximum in ms and how many rounds
took over 500 ms. Asserts nothing: a measurement, not a test.

    ROUNDS=200 /usr/bin/python3 bench/txn/marker_delay.py    # after make install
"""
import os
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "lib"))
import kafkapg  # noqa: E402


def main():
    rounds = int(os.environ.get("ROUNDS", "200"))
    root = kafkapg.make_tmp("markerdelay")
    data = os.path.join(root, "data")
    (pport,), (kport,) = kafkapg.free_ports(1, 1, "57732", "57792")
    started = []
    try:
        conn = kafkapg.start_primary(data, pport, kport, {"KP_KAFKA_DB": "postgres"}, started)
        cur = conn.cursor()
        ms = []
        for i in range(rounds):
            topic = "md-%d" % i
            conn.autocommit = False
            cur.execute("SELECT kafka.create_topic(%s, 1)", (topic,))
            cur.execute("SELECT * FROM kafka.produce(%s, 'k', 'v')", (topic,))
            cur.execute("SELECT partition_id FROM kafka.partitions JOIN kafka.topics USING (topic_id) "
                        "WHERE name = %s", (topic,))
            pid = cur.fetchone()[0]
            conn.commit()
            t0 = time.time()
            while time.time() - t0 < 5:
                cur.execute("SELECT log_end_offset FROM kafka._partition_stats(%s)", (pid,))
                if cur.fetchone()[0] >= 2:  # the record, then its marker
                    break
                conn.commit()
                time.sleep(0.001)
            ms.append((time.time() - t0) * 1000)
            conn.commit()
            conn.autocommit = True
            time.sleep(0.05)
        ms.sort()
        print("rounds %d: median %.1f ms, p90 %.1f ms, max %.1f ms, over 500 ms: %d" % (
            len(ms), statistics.median(ms), ms[int(len(ms) * 0.9)], ms[-1], sum(1 for x in ms if x > 500)))
        conn.close()
    finally:
        kafkapg.stop_clusters(started)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
