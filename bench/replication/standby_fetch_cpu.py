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
import shutil
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "wire"))
import kafkapg  # noqa: E402

sys.argv[1:] = ["127.0.0.1:0"]
import conformance as kc  # noqa: E402

i8, i16, i32, i64, string, array = kc.i8, kc.i16, kc.i32, kc.i64, kc.string, kc.array
REPS = int(os.environ.get("BENCH_REPS", "5"))
FETCHES = int(os.environ.get("BENCH_FETCHES", "5000"))
RECORDS = int(os.environ.get("BENCH_RECORDS", "100"))
TICK = os.sysconf("SC_CLK_TCK")


def conn(port):
    kc.HOST, kc.PORT = "127.0.0.1", port
    return kc.Conn()


def sql(c, q):
    cur = c.cursor()
    cur.execute(q)
    return cur.fetchall() if cur.description else None


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def fetch_body(topic):
    return (i32(-1) + i32(0) + i32(1) + i32(1 << 20) + i8(0) + i32(0) + i32(-1)
            + array([string(topic) + array([i32(0) + i32(-1) + i64(0) + i64(-1) + i32(10 * 170)])])
            + array([]) + string(""))


def produce(c, topic, values):
    batch = kc.build_batch(0, values)
    body = string(None) + i16(1) + i32(10000) + array([string(topic) + array([i32(0) + kc.nbytes(batch)])])
    r = c.call(0, 8, body)
    assert r is not None


def main():
    root = kafkapg.make_tmp("standby_fetch_cpu")
    pdata, sdata = os.path.join(root, "primary"), os.path.join(root, "standby")
    pport = int(kafkapg.pgcluster("free-port", os.environ.get("BENCH_PORT", "56580")))
    sport = int(kafkapg.pgcluster("free-port", pport + 1))
    kp1 = int(kafkapg.pgcluster("free-port", os.environ.get("BENCH_KAFKA_PORT", "19580"), pport, sport))
    kp2 = int(kafkapg.pgcluster("free-port", kp1 + 1, pport, sport))
    env = {"KP_KAFKA_DB": "postgres", "KP_EXTRA_CONF": "kafka.listener_workers = 1"}
    started = []
    try:
        kafkapg.pgcluster("init", pdata, pport, kp1, env=env)
        kafkapg.pgcluster("start", pdata)
        started.append(pdata)
        kafkapg.pgcluster("create-extension", pport, "postgres")
        prim = kafkapg.connect(pport)
        sql(prim, "SELECT kafka.create_topic('cpu', 1)")
        sql(prim, "SELECT kafka.create_topic('churn', 1)")
        a = conn(kp1)
        for i in range(0, RECORDS, 10):
            produce(a, "cpu", [b"x" * 100] * 10)
        kafkapg.pgcluster("basebackup", pport, sdata)
        kafkapg.pgcluster("write-conf", sdata, sport, kp2, root,
                          env=dict(env, KP_EXTRA_CONF="cluster_name = 's1'\nkafka.node_id = 1\nkafka.listener_workers = 1"))
        kafkapg.pgcluster("start", sdata)
        started.append(sdata)
        stby = kafkapg.connect(sport)
        t0 = time.time()
        while not sql(prim, "SELECT 1 FROM pg_stat_replication WHERE state = 'streaming'"):
            if time.time() - t0 > 60:
                raise RuntimeError("the standby does not stream")
            time.sleep(0.2)
        pid = sql(stby, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'kafka_pg listener'")
        assert pid and len(pid) == 1, pid
        pid = pid[0][0]
        b = conn(kp2)
        body = fetch_body("cpu")
        t0 = time.time()
        while True:  # the standby knows the leader and has the records
            r = b.call(1, 11, body)
            if r is not None and len(r.d) > 1000:
                break
            if time.time() - t0 > 60:
                raise RuntimeError("the standby does not serve the records")
            time.sleep(0.2)

        stop = threading.Event()

        def churn():
            c = conn(kp1)
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
        kafkapg.stop_clusters(started)
        if os.environ.get("KP_KEEP_TMP") != "1":
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
