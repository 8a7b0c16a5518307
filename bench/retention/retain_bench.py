#!/usr/bin/python3
"""bench/retention/retain_bench.py: disk use under a steady produce load with a short retention.

Two databases of one throwaway cluster, fed at the same rate in the same run:
  kp     kafka_pg: one topic, 1 partition, retention.ms=60000, segment.ms=10000; records of 1 KiB
         produced with kafka.produce_batch every 100 ms; the log cleaner checks retention every
         kafka.log_retention_check_interval_ms=10000.
  queue  a plain Postgres queue table q(id bigserial primary key, created_at timestamptz, payload
         bytea) with the same INSERTs, and every 10 s DELETE FROM q WHERE created_at < now() - 60 s,
         under autovacuum with its defaults.
Every 10 s it samples pg_database_size of both databases, the bytes of kafka_pg's segments and of
its catalog tables (schema kafka), and of q with its index and TOAST. A benchmark, not a test:
asserts nothing. Writes a CSV (bench/out/retention-<time>.csv) and prints a summary.

Settings (environment): BENCH_SECONDS (600), BENCH_RATE (records/s per database, 1000),
BENCH_RETENTION_MS (60000), BENCH_SEGMENT_MS (10000), BENCH_CHECK_MS (10000), BENCH_SAMPLE_S (10).
"""
import csv
import os
import shutil
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "test", "lib"))
import kafkapg  # noqa: E402

SECONDS = int(os.environ.get("BENCH_SECONDS", "600"))
RATE = int(os.environ.get("BENCH_RATE", "1000"))
RETENTION_MS = int(os.environ.get("BENCH_RETENTION_MS", "60000"))
SEGMENT_MS = int(os.environ.get("BENCH_SEGMENT_MS", "10000"))
CHECK_MS = int(os.environ.get("BENCH_CHECK_MS", "10000"))
SAMPLE_S = int(os.environ.get("BENCH_SAMPLE_S", "10"))
TICK = 0.1
stop = threading.Event()
errors = []


def paced(fn):
    """Call fn every TICK seconds until stop; count how far behind it fell."""
    next_t = time.time()
    while not stop.is_set():
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))
            return
        next_t += TICK
        delay = next_t - time.time()
        if delay > 0:
            time.sleep(delay)


def main():
    per_tick = max(1, int(RATE * TICK))
    root = kafkapg.make_tmp("retention_bench")
    data = os.path.join(root, "data")
    port = int(kafkapg.pgcluster("free-port", os.environ.get("KP_NEXT_PORT", "57532")))
    kport = int(kafkapg.pgcluster("free-port", os.environ.get("KAFKA_NEXT_PORT", "39532"), port))
    env = {"KP_KAFKA_DB": "kp",
           "KP_EXTRA_CONF": "kafka.log_retention_check_interval_ms = %d" % CHECK_MS}
    kafkapg.pgcluster("init", data, port, kport, env=env)
    kafkapg.pgcluster("start", data)
    try:
        admin = kafkapg.connect(port, "postgres")
        admin.cursor().execute("CREATE DATABASE kp")
        admin.cursor().execute("CREATE DATABASE queue")
        kafkapg.pgcluster("create-extension", port, "kp")
        kp = kafkapg.connect(port, "kp")
        kp.cursor().execute("SELECT kafka.create_topic('retain', 1, %s)",
                            ('{"retention.ms": "%d", "segment.ms": "%d"}' % (RETENTION_MS, SEGMENT_MS),))
        q = kafkapg.connect(port, "queue")
        q.cursor().execute("CREATE TABLE q (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), "
                           "payload bytea NOT NULL)")
        # 1 KiB of incompressible-looking bytes per record (md5 hex is not compressed much by pglz)
        payload = "(SELECT string_agg(md5(g::text || random()::text), '') FROM generate_series(1, 32) g)"
        kp_sql = ("SELECT count(*) FROM kafka.produce_batch('retain', NULL::bytea[], "
                  "(SELECT array_agg(convert_to(%s, 'UTF8')) FROM generate_series(1, %d)), 0)" % (payload, per_tick))
        q_sql = ("INSERT INTO q (payload) SELECT convert_to(%s, 'UTF8') FROM generate_series(1, %d)" % (payload, per_tick))
        kp_p = kafkapg.connect(port, "kp")
        q_p = kafkapg.connect(port, "queue")
        q_del = kafkapg.connect(port, "queue")
        mon = kafkapg.connect(port, "postgres")

        def kp_produce():
            kp_p.cursor().execute(kp_sql)

        def q_produce():
            q_p.cursor().execute(q_sql)

        last_del = [time.time()]

        def q_delete():
            if time.time() - last_del[0] >= 10:
                q_del.cursor().execute("DELETE FROM q WHERE created_at < now() - interval '%d milliseconds'" % RETENTION_MS)
                last_del[0] = time.time()

        threads = [threading.Thread(target=paced, args=(f,)) for f in (kp_produce, q_produce, q_delete)]
        for t in threads:
            t.start()
        os.makedirs(os.path.join(REPO, "bench", "out"), exist_ok=True)
        out = os.path.join(REPO, "bench", "out", "retention-%s.csv" % time.strftime("%Y%m%d-%H%M%S"))
        rows = []
        t0 = time.time()
        kc = kafkapg.connect(port, "kp")
        qc = kafkapg.connect(port, "queue")
        while time.time() - t0 < SECONDS and not errors:
            time.sleep(max(0, SAMPLE_S - ((time.time() - t0) % SAMPLE_S)))
            c = kc.cursor()
            c.execute("SELECT pg_database_size('kp'), "
                      "(SELECT coalesce(sum(size_bytes), 0) FROM kafka.segments), "
                      "(SELECT count(*) FROM kafka.segments), "
                      "(SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                      "  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'kafka' AND c.relkind = 'r'), "
                      "(SELECT log_start_offset FROM kafka.partition_status WHERE topic = 'retain'), "
                      "(SELECT log_end_offset FROM kafka.partition_status WHERE topic = 'retain')")
            kdb, kseg, nseg, kcat, kstart, kend = (int(v) for v in c.fetchone())
            c = qc.cursor()
            c.execute("SELECT pg_database_size('queue'), pg_total_relation_size('q'), "
                      "(SELECT n_live_tup FROM pg_stat_user_tables WHERE relname = 'q'), "
                      "(SELECT autovacuum_count FROM pg_stat_user_tables WHERE relname = 'q')")
            qdb, qrel, qlive, qav = c.fetchone()
            row = {"t_s": round(time.time() - t0), "kp_db_bytes": kdb, "kp_segment_bytes": kseg,
                   "kp_segments": nseg, "kp_catalog_bytes": kcat, "kp_log_start": kstart, "kp_log_end": kend,
                   "queue_db_bytes": qdb, "queue_table_bytes": qrel, "queue_live_rows": qlive,
                   "queue_autovacuums": qav}
            rows.append(row)
            print("%4ds  kp db %6.1f MB (segments %6.1f MB in %2d, catalog %5.2f MB, log %d..%d)   "
                  "queue db %6.1f MB (table %6.1f MB, %d live rows, %d autovacuums)"
                  % (row["t_s"], kdb / 1e6, kseg / 1e6, nseg, kcat / 1e6, kstart, kend,
                     qdb / 1e6, qrel / 1e6, qlive or 0, qav or 0), flush=True)
        stop.set()
        for t in threads:
            t.join()
        with open(out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
        print("csv: %s" % out)
        if errors:
            print("errors: %s" % errors[:3])
        # steady state: the second half of the run
        half = [r for r in rows if r["t_s"] >= SECONDS / 2]
        for k in ("kp_db_bytes", "kp_segment_bytes", "kp_catalog_bytes", "queue_db_bytes", "queue_table_bytes"):
            vals = [r[k] for r in half]
            print("%-18s second half: min %7.1f MB  max %7.1f MB  last %7.1f MB"
                  % (k, min(vals) / 1e6, max(vals) / 1e6, vals[-1] / 1e6))
        print("records produced per database: kp %d" % rows[-1]["kp_log_end"])
    finally:
        stop.set()
        kafkapg.pgcluster("stop", data)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
