#!/usr/bin/python3
"""bench/replication/standby_fetch_cpu.py: a hot standby's listener CPU per Fetch, with the worker's
copy of kafka.leader (src/listener/leader.c) and without it (kafka.debug_leader_cache_ms = 0: the
row read with SPI for every Fetch, as before the copy existed).  A benchmark: asserts nothing.

A throwaway primary and a standby made with pg_basebackup (test/lib/pgcluster; the standby runs one
listener worker, so one process serves every fetch).  A topic of one partition with BENCH_RECORDS
(100) records of 100 B.  During each round a thread produces to another topic on the primary (about
200 records/s: replay keeps moving, so the copy is read again every 100 ms, as on a standby of a
busy primary), and one connection sends BENCH_FETCHES (5000) Fetch v11 requests of the first
10 records (max_wait_ms 0), one at a time, to the standby.  The listener worker's CPU (utime +
stime of /proc/PID/stat, the worker's whole process) is read before and after: microseconds of
listener CPU per Fetch.  Rounds alternate the two modes (BENCH_REPS each, 5), the order swapping
every pair; medians and spreads are printed with the load average.

    bench/replication/standby_fetch_cpu.py        # needs kafka_pg installed (make install)

Settings: BENCH_PORT (first PostgreSQL port, 56580), BENCH_KAFKA_PORT (first Kafka port, 19580),
BENCH_REPS, BENCH_FETCHES, BENCH_RECORDS.
"""

import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from standby_pair import Pair, conn, cpu_seconds, fetch_body, sql, kc, i16, i32, string, array  # noqa: E402

REPS = int(os.environ.get("BENCH_REPS", "5"))
FETCHES = int(os.environ.get("BENCH_FETCHES", "5000"))
RECORDS = int(os.environ.get("BENCH_RECORDS", "100"))


def produce(c, topic, values):
    batch = kc.build_batch(0, values)
    body = string(None) + i16(1) + i32(10000) + array([string(topic) + array([i32(0) + kc.nbytes(batch)])])
    r = c.call(0, 8, body)
    assert r is not None


def main():
    pair = Pair("standby_fetch_cpu", "BENCH_PORT", 56580, "BENCH_KAFKA_PORT", 19580)
    try:
        prim = pair.start_primary()
        sql(prim, "SELECT kafka.create_topic('cpu', 1)")
        sql(prim, "SELECT kafka.create_topic('churn', 1)")
        a = conn(pair.kp1)
        for i in range(0, RECORDS, 10):
            produce(a, "cpu", [b"x" * 100] * 10)
        stby, pid = pair.start_standby(prim)
        b = conn(pair.kp2)
        body = fetch_body("cpu", 10 * 170)
        pair.wait_served(b, body, "the records")  # the standby knows the leader and has them

        stop = threading.Event()

        def churn():
            c = conn(pair.kp1)
            while not stop.is_set():
                produce(c, "churn", [b"y" * 100])
                time.sleep(0.005)
        th = threading.Thread(target=churn, daemon=True)
        th.start()

        results = {"read every Fetch (cache 0 ms)": [], "worker's copy (cache 100 ms)": []}
        modes = [("read every Fetch (cache 0 ms)", 0), ("worker's copy (cache 100 ms)", 100)]
        for rep in range(REPS):
            for name, ms in (modes if rep % 2 == 0 else modes[::-1]):
                sql(stby, "ALTER SYSTEM SET kafka.debug_leader_cache_ms = %d" % ms)
                sql(stby, "SELECT pg_reload_conf()")
                time.sleep(0.5)
                for _ in range(200):  # warm
                    b.call(1, 11, body)
                c0, w0 = cpu_seconds(pid), time.time()
                for _ in range(FETCHES):
                    r = b.call(1, 11, body)
                    assert r is not None
                c1, w1 = cpu_seconds(pid), time.time()
                results[name].append(((c1 - c0) * 1e6 / FETCHES, FETCHES / (w1 - w0)))
                print("# rep %d %-32s %7.1f us CPU/fetch  %7.0f fetch/s  (load %s)" %
                      (rep, name, results[name][-1][0], results[name][-1][1],
                       os.getloadavg()[0]), flush=True)
        stop.set()
        th.join(5)
        print("\nlistener CPU per Fetch on a hot standby (%d fetches per round, %d rounds per mode, "
              "load average %.2f):" % (FETCHES, REPS, os.getloadavg()[0]))
        med = {}
        for name, _ in modes:
            cpu = [x[0] for x in results[name]]
            rate = [x[1] for x in results[name]]
            med[name] = statistics.median(cpu)
            print("  %-32s median %6.1f us (%.1f-%.1f)   %6.0f fetch/s median (%.0f-%.0f)" %
                  (name, med[name], min(cpu), max(cpu), statistics.median(rate), min(rate), max(rate)))
        base, new = med[modes[0][0]], med[modes[1][0]]
        print("  copy / read every Fetch: %.2f" % (new / base if base else float("nan")))
    finally:
        pair.stop()


if __name__ == "__main__":
    main()
