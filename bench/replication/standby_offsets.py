#!/usr/bin/python3
"""bench/replication/standby_offsets.py BASE.so NEW.so: what a Fetch costs a hot standby's listener
as the active segment grows, for two builds of kafka_pg.so.  A benchmark: asserts nothing.

A standby has no partition state: every Fetch (and ListOffsets, and SQL fetch) finds the partition's
log end offset and last stable offset in the store (src/store/reader.c, kp_log_offsets).  Until
2026-12-03 that read every batch of the active segment; now it walks from the last page's cover
batch, and the open transactions from the producer-state snapshot (src/store/prodsnap.c) on.

For each build in turn (installed in place of the installed kafka_pg.so with install(1), put back at
the end): a throwaway primary and a standby made with pg_basebackup (test/lib/pgcluster; one
listener worker on the standby, so one process serves every fetch); topic `small` with 100 records
of 100 B, topic `big` with BENCH_BIG_MB (200) MB of 1 KiB records in batches of 64 (SQL
kafka.produce_batch, a transaction per 10 MB, so the log also holds the transactions' markers); the
standby caught up, and 3 s for the primary's resolver to write its producer-state snapshots.  Then
BENCH_REPS (3) rounds, the two topics alternating: for BENCH_SECONDS (3) s, Fetch v11 requests of
partition 0 from offset 0 (max_wait_ms 0, one at a time, on one connection): the listener worker's
CPU (utime + stime of /proc/PID/stat) per Fetch and the fetches per second.  Prints per build and
topic the medians (min-max), then NEW/BASE.

    bench/replication/standby_offsets.py /tmp/base.so /tmp/new.so   # as root

Settings: BENCH_PORT (first PostgreSQL port, 56680), BENCH_KAFKA_PORT (first Kafka port, 19680),
BENCH_REPS, BENCH_SECONDS, BENCH_BIG_MB.
"""

import os
import shutil
import statistics
import subprocess
import sys
import time

so_paths = sys.argv[1:3]  # before standby_pair's import (conformance.py reads argv)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from standby_pair import Pair, conn, cpu_seconds, fetch_body, sql  # noqa: E402

REPS = int(os.environ.get("BENCH_REPS", "3"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "3"))
BIG_MB = int(os.environ.get("BENCH_BIG_MB", "200"))


def installed_so():
    return subprocess.run(["pg_config", "--pkglibdir"], capture_output=True, text=True,
                          check=True).stdout.strip() + "/kafka_pg.so"


def run_build(so):
    subprocess.run(["install", "-m", "755", so, installed_so()], check=True)
    pair = Pair("standby_offsets", "BENCH_PORT", 56680, "BENCH_KAFKA_PORT", 19680)
    try:
        prim = pair.start_primary()
        sql(prim, "SELECT kafka.create_topic('small', 1), kafka.create_topic('big', 1)")
        sql(prim, "SELECT kafka.produce_batch('small', array_fill(NULL::bytea, ARRAY[100]), "
                  "array_fill(convert_to(repeat('x', 100), 'UTF8'), ARRAY[100]), 0)")
        for _ in range(BIG_MB // 10):  # 10 MB a transaction: 160 batches of 64 x 1 KiB
            # (the partition argument names g, so the function runs once per row)
            sql(prim, "SELECT count(*) FROM generate_series(1, 160) g, LATERAL kafka.produce_batch('big', "
                      "array_fill(NULL::bytea, ARRAY[64]), array_fill(convert_to(repeat('x', 1000), 'UTF8'), "
                      "ARRAY[64]), 0 * g)")
        sql(prim, "SELECT kafka.flush_markers()")
        size = sql(prim, "SELECT size_bytes FROM kafka.partition_status WHERE topic = 'big'")[0][0]
        time.sleep(3)  # the resolver's upkeep: producer-state snapshots
        stby, pid = pair.start_standby(prim, caught_up=True)
        b = conn(pair.kp2)
        for topic in ("small", "big"):
            pair.wait_served(b, fetch_body(topic, 1700), topic)
        out = {"small": [], "big": []}
        for rep in range(REPS):
            for topic in (("small", "big") if rep % 2 == 0 else ("big", "small")):
                body = fetch_body(topic, 1700)
                c0, w0 = cpu_seconds(pid), time.time()
                n = 0
                while time.time() - w0 < SECONDS:
                    assert b.call(1, 11, body) is not None
                    n += 1
                c1, w1 = cpu_seconds(pid), time.time()
                out[topic].append(((c1 - c0) * 1e6 / n, n / (w1 - w0)))
                print("# %s rep %d %-5s %9.1f us CPU/fetch %8.1f fetch/s  (load %.2f)" %
                      (os.path.basename(so), rep, topic, out[topic][-1][0], out[topic][-1][1],
                       os.getloadavg()[0]), flush=True)
        return out, size
    finally:
        pair.stop()


def main():
    if len(so_paths) != 2 or not all(os.path.isfile(p) for p in so_paths):
        sys.exit("usage: standby_offsets.py BASE.so NEW.so")
    installed = installed_so()
    keep = installed + ".standby_offsets"
    shutil.copy(installed, keep)
    res = {}
    try:
        for name, so in zip(("base", "new"), so_paths):
            res[name], size = run_build(so)
    finally:
        subprocess.run(["install", "-m", "755", keep, installed], check=True)
        os.unlink(keep)
    print("\nlistener CPU per Fetch on a hot standby, `big` %.0f MB in its active segment "
          "(%.0f s a round, %d rounds; load average %.2f):" % (size / 1e6, SECONDS, REPS, os.getloadavg()[0]))
    print("| build | topic | CPU per Fetch, us | fetches/s |")
    print("|---|---|---:|---:|")
    med = {}
    for name in ("base", "new"):
        for topic in ("small", "big"):
            cpu = [x[0] for x in res[name][topic]]
            rate = [x[1] for x in res[name][topic]]
            med[name, topic] = statistics.median(cpu)
            print("| %s | %s | %.1f (%.1f-%.1f) | %.0f (%.0f-%.0f) |" %
                  (name, topic, med[name, topic], min(cpu), max(cpu), statistics.median(rate), min(rate), max(rate)))
    for topic in ("small", "big"):
        print("%s: new/base CPU per Fetch %.3f" % (topic, med["new", topic] / med["base", topic]))


if __name__ == "__main__":
    main()
