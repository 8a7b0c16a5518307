#!/usr/bin/python3
"""kafka_pg SQL benchmark: kafka.produce_batch / kafka.fetch / kafka.produce
against plain PostgreSQL (binary COPY, INSERT ... SELECT, seq scan, one-row
INSERT) on the same throwaway cluster, in the same run.

Run it through bench/sql-bench.sh (see docs/performance.md).  It prints
numbers and asserts nothing.  Environment knobs:

  BENCH_RECORDS   records per batch run            (default 1000000)
  BENCH_VALUE     value size in bytes              (default 100)
  BENCH_REPS      repetitions of the batch/fetch parts (default 5)
  BENCH_PGB_REPS  repetitions of each pgbench run  (default 3)
  BENCH_PGB_SECS  seconds per pgbench run          (default 20)
  BENCH_PARTS     comma list of parts: batch,fetch,single,bulk,profile,
                  profile_bulk (default batch,fetch,single,bulk; profile =
                  perf record of produce_batch, profile_bulk = of COPY into a
                  foreign table and of produce_agg; bulk = COPY into
                  a topic's foreign table and kafka.produce_agg beside COPY
                  and INSERT ... SELECT into a table, and produce_batch of a
                  prebuilt array beside a server-side COPY, issue 13)
  BENCH_PROFILE_RUNS  produce_batch calls and fetches profiled (default 3)
  BENCH_PORT      first port to try                (default 56432)
  BENCH_KAFKA_PORT  first port to try for the wire listener (default
                  BENCH_PORT + 1000)
  BENCH_KEEP      1 = keep the temporary directory
"""

import os
import re
import shutil
import io
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import psycopg2

HERE = os.path.dirname(os.path.abspath(__file__))
N = int(os.environ.get("BENCH_RECORDS", "1000000"))
VSIZE = int(os.environ.get("BENCH_VALUE", "100"))
REPS = int(os.environ.get("BENCH_REPS", "5"))
PGB_REPS = int(os.environ.get("BENCH_PGB_REPS", "3"))
PGB_SECS = int(os.environ.get("BENCH_PGB_SECS", "20"))
PARTS = os.environ.get("BENCH_PARTS", "batch,fetch,single,bulk").split(",")
PORT0 = int(os.environ.get("BENCH_PORT", "56432"))
KAFKA_PORT0 = int(os.environ.get("BENCH_KAFKA_PORT", "0"))
KEEP = os.environ.get("BENCH_KEEP") == "1"
PROFILE_RUNS = int(os.environ.get("BENCH_PROFILE_RUNS", "3"))


def pg_bindir():
    try:
        d = subprocess.check_output(["pg_config", "--bindir"], text=True).strip()
        if os.path.exists(os.path.join(d, "initdb")):
            return d
    except Exception:
        pass
    return "/usr/lib/postgresql/15/bin"


BIN = pg_bindir()

SETTINGS = [
    ("shared_buffers", "1GB"),
    ("max_wal_size", "16GB"),
    ("min_wal_size", "2GB"),
    ("checkpoint_timeout", "1h"),
    ("wal_level", "replica"),
    ("synchronous_commit", "on"),
    ("fsync", "on"),
    ("full_page_writes", "on"),
    ("wal_buffers", "64MB"),
    ("work_mem", "64MB"),
    ("maintenance_work_mem", "256MB"),
    ("max_connections", "40"),
    ("autovacuum", "off"),
    ("jit", "off"),
]


def as_pg(cmd, **kw):
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--"] + cmd
    return subprocess.run(cmd, check=True, **kw)


def free_port(p):
    while p < 65535:
        s = socket.socket()
        try:
            s.bind(("0.0.0.0", p))
            if not os.path.exists("/var/run/postgresql/.s.PGSQL.%d" % p):
                return p
        except OSError:
            pass
        finally:
            s.close()
        p += 1
    raise SystemExit("no free port")


def out(s=""):
    print(s, flush=True)


def log(s):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), s), file=sys.stderr, flush=True)


class Cluster:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="kafka_pg_bench.", dir="/tmp")
        os.chmod(self.tmp, 0o755)
        if os.geteuid() == 0:
            shutil.chown(self.tmp, "postgres", "postgres")
        self.data = os.path.join(self.tmp, "data")
        self.port = free_port(PORT0)
        self.logfile = os.path.join(self.tmp, "server.log")
        self.started = False

    def init(self):
        as_pg([BIN + "/initdb", "-D", self.data, "-U", "postgres", "--auth=trust",
               "-E", "UTF8", "--locale=C.UTF-8"], stdout=subprocess.DEVNULL)
        conf = [
            "port = %d" % self.port,
            "listen_addresses = '127.0.0.1'",
            "unix_socket_directories = '%s'" % self.tmp,
            "shared_preload_libraries = 'kafka_pg'",
            "kafka.database = 'postgres'",
            # the wire listener (if built) must not take the shared default 9092
            "kafka.port = %d" % free_port(KAFKA_PORT0 or self.port + 1000),
            "log_min_messages = warning",
            "log_checkpoints = on",
            "lc_messages = 'C'",
        ] + ["%s = '%s'" % kv for kv in SETTINGS]
        with open(os.path.join(self.data, "postgresql.auto.conf"), "a") as f:
            f.write("\n".join(conf) + "\n")

    def start(self):
        as_pg([BIN + "/pg_ctl", "-D", self.data, "-l", self.logfile, "-w", "-t", "120",
               "start"], stdout=subprocess.DEVNULL)
        self.started = True

    def stop(self):
        if self.started:
            subprocess.run((["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []) +
                           [BIN + "/pg_ctl", "-D", self.data, "-m", "fast", "-w", "-t", "60",
                            "stop"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.started = False

    def connect(self):
        c = psycopg2.connect(host="127.0.0.1", port=self.port, user="postgres",
                             dbname="postgres")
        c.autocommit = True
        return c

    def cleanup(self):
        self.stop()
        try:
            outdir = os.path.join(HERE, "out")
            os.makedirs(outdir, exist_ok=True)
            shutil.copy(self.logfile, os.path.join(outdir, "server.log"))
        except OSError:
            pass
        if KEEP:
            log("kept %s" % self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


def med(xs):
    return statistics.median(xs)


def q1(cur, sql, args=None):
    cur.execute(sql, args)
    return cur.fetchone()


def wal_lsn(cur):
    return int(q1(cur, "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn")[0])


class Results:
    """name -> list of (seconds, wal_bytes)"""

    def __init__(self):
        self.r = {}
        self.order = []

    def add(self, name, secs, wal=None):
        if name not in self.r:
            self.r[name] = []
            self.order.append(name)
        self.r[name].append((secs, wal))


def fmt_rate(n, secs):
    return n / secs


def print_table(title, res, baseline, nrec, nbytes, notes):
    out()
    out("### " + title)
    out()
    out("| what | records/s median (min-max) | MB/s median | seconds median | WAL MB | ratio of medians | ratio per repetition, median (min-max) |")
    out("|---|---|---|---|---|---|---|")
    base_secs = [s for s, _ in res.r[baseline]]
    base = med(base_secs)
    for name in res.order:
        secs = [s for s, _ in res.r[name]]
        wals = [w for _, w in res.r[name] if w is not None]
        m = med(secs)
        rates = [nrec / s for s in secs]
        paired = [b / x for b, x in zip(base_secs, secs)]
        out("| %s | %s (%s-%s) | %.1f | %.3f | %s | %.2f | %.2f (%.2f-%.2f) |" % (
            name, "{:,.0f}".format(nrec / m), "{:,.0f}".format(min(rates)),
            "{:,.0f}".format(max(rates)), nbytes / m / 1e6, m,
            ("%.0f" % (med(wals) / 1e6)) if wals else "-", base / m,
            med(paired), min(paired), max(paired)))
    for n in notes:
        out("- " + n)


# ---------------------------------------------------------------------------

def setup_data(cl, cur):
    log("creating the staging table: %d values of %d bytes" % (N, VSIZE))
    cur.execute("CREATE EXTENSION kafka_pg")
    nmd5 = (VSIZE * 2 + 31) // 32
    expr = "||".join(["md5((i * %d + %d)::text)" % (k + 3, k) for k in range(nmd5)])
    cur.execute("CREATE TABLE staging (v bytea NOT NULL)")
    cur.execute("INSERT INTO staging SELECT decode(substr(%s, 1, %d), 'hex') "
                "FROM generate_series(1, %d) i" % (expr, VSIZE * 2, N))
    cur.execute("VACUUM (FREEZE, ANALYZE) staging")
    binfile = os.path.join(cl.tmp, "staging.bin")
    cur.execute("COPY (SELECT NULL::bytea, v FROM staging) TO %s WITH (FORMAT binary)",
                (binfile,))
    cur.execute("CREATE TABLE plain (k bytea, v bytea)")
    cur.execute("CREATE TABLE plain1 (k bytea, v bytea)")
    return binfile


def checkpoint(cur):
    cur.execute("CHECKPOINT")


def recreate_topic(cur, name, parts):
    if q1(cur, "SELECT count(*) FROM kafka.topics WHERE name = %s", (name,))[0]:
        cur.execute("SELECT kafka.delete_topic(%s)", (name,))
    cur.execute("SELECT kafka.create_topic(%s, %s)", (name, parts))


def timed(cur, sql, args=None):
    w0 = wal_lsn(cur)
    t0 = time.perf_counter()
    cur.execute(sql, args)
    if cur.description:
        cur.fetchall()
    t = time.perf_counter() - t0
    return t, wal_lsn(cur) - w0


PREBUILT_DO = """
DO $$
DECLARE a bytea[]; t0 timestamptz; n int;
BEGIN
  SELECT array_agg(v) INTO a FROM staging;
  COMMIT;
  t0 := clock_timestamp();
  SELECT sum(record_count) INTO n FROM kafka.produce_batch('{topic}', NULL, a);
  COMMIT;
  RAISE NOTICE 'elapsed % %', extract(epoch FROM clock_timestamp() - t0), n;
END $$"""


def prebuilt_produce(conn, cur, topic):
    """produce_batch of an array already built in a PL/pgSQL variable;
    timed inside the server from the call to the end of its COMMIT."""
    del conn.notices[:]
    w0 = wal_lsn(cur)
    cur.execute(PREBUILT_DO.replace('{topic}', topic))
    w1 = wal_lsn(cur)
    m = [re.search(r"elapsed ([0-9.e+-]+) (\d+)", x) for x in conn.notices]
    m = [x for x in m if x]
    secs, n = float(m[-1].group(1)), int(m[-1].group(2))
    if n != N:
        raise SystemExit("prebuilt produce wrote %d records" % n)
    # WAL includes the array_agg's transaction, which writes none
    return secs, w1 - w0


def client_array_literal(cur):
    log("building the client-side array literal")
    cur.execute("SELECT encode(v, 'hex') FROM staging")
    rows = cur.fetchall()
    lit = "{" + ",".join('"\\\\x%s"' % r[0] for r in rows) + "}"
    return lit


def part_batch(cl, conn, cur, binfile):
    out()
    out("## 1. Batch produce of %s records of %d bytes (null keys)" % ("{:,}".format(N), VSIZE))
    res = Results()
    lit = client_array_literal(cur)
    sql_client = "SELECT sum(record_count) FROM kafka.produce_batch('b', NULL, '" + lit + "'::bytea[])"
    del lit
    for rep in range(REPS):
        log("batch rep %d/%d" % (rep + 1, REPS))
        # (a) binary COPY from the file prepared once
        cur.execute("TRUNCATE plain")
        checkpoint(cur)
        t, w = timed(cur, "COPY plain FROM %s WITH (FORMAT binary)", (binfile,))
        res.add("COPY binary -> plain (baseline)", t, w)
        # (b) INSERT ... SELECT
        cur.execute("TRUNCATE plain")
        checkpoint(cur)
        t, w = timed(cur, "INSERT INTO plain SELECT NULL, v FROM staging")
        res.add("INSERT INTO plain SELECT FROM staging", t, w)
        for parts in (1, 6):
            recreate_topic(cur, "b", parts)
            checkpoint(cur)
            t, w = timed(cur, "SELECT sum(record_count) FROM kafka.produce_batch('b', NULL, "
                              "(SELECT array_agg(v) FROM staging))")
            res.add("produce_batch, %dp, array_agg(v) FROM staging in the statement" % parts, t, w)
            recreate_topic(cur, "b", parts)
            checkpoint(cur)
            t, w = prebuilt_produce(conn, cur, "b")
            res.add("produce_batch, %dp, array prebuilt in PL/pgSQL" % parts, t, w)
            recreate_topic(cur, "b", parts)
            checkpoint(cur)
            t, w = timed(cur, sql_client)
            res.add("produce_batch, %dp, array sent by the client as text" % parts, t, w)
    cur.execute("TRUNCATE plain")
    print_table("Batch produce, %d repetitions" % REPS, res,
                "COPY binary -> plain (baseline)", N, N * VSIZE, [
                    "Every timing ends with the statement's COMMIT (synchronous_commit=on); "
                    "a CHECKPOINT precedes each one and the target is empty (TRUNCATE, or topic "
                    "deleted and created again).",
                    "COPY: server-side `COPY plain (k bytea, v bytea) FROM file (FORMAT binary)` "
                    "of a file written once (k NULL); client wall time.",
                    "INSERT SELECT: `INSERT INTO plain SELECT NULL, v FROM staging`; client wall time.",
                    "array_agg: `SELECT ... FROM kafka.produce_batch('b', NULL, (SELECT array_agg(v) "
                    "FROM staging))`: includes the scan of staging and building the 1M-element array; "
                    "client wall time.",
                    "prebuilt: a DO block builds the array into a variable, COMMITs, then times "
                    "`produce_batch(...)` plus its COMMIT with clock_timestamp(): the produce "
                    "path alone.",
                    "client text: one statement carrying the array as a text literal "
                    "(`'{\"\\\\x..\",...}'::bytea[]`, ~%d MB): includes sending it over loopback "
                    "and parsing it (array_in/byteain); client wall time." % ((N * (VSIZE * 2 + 5)) // 1000000),
                    "WAL MB: pg_current_wal_insert_lsn() difference over the timed statement.",
                    "Ratios are throughput / baseline throughput: > 1 is faster than the baseline. "
                    "'per repetition' pairs each run with the baseline run of the same repetition "
                    "(seconds apart), which cancels much of this machine's drift.",
                ])
    return res


def part_fetch(cl, conn, cur):
    out()
    out("## 2. Reading %s records back" % "{:,}".format(N))
    log("loading the fetch topics and table")
    cur.execute("TRUNCATE plain")
    cur.execute("COPY plain FROM %s WITH (FORMAT binary)", (os.path.join(cl.tmp, "staging.bin"),))
    cur.execute("VACUUM (FREEZE) plain")
    for name, parts in (("f1", 1), ("f6", 6)):
        recreate_topic(cur, name, parts)
        cur.execute("SELECT sum(record_count) FROM kafka.produce_batch(%s, NULL, "
                    "(SELECT array_agg(v) FROM staging))", (name,))
    checkpoint(cur)
    time.sleep(2)  # let the resolver write the COMMIT markers

    def fetch_chunked(topic, parts, chunk):
        total = 0
        nbytes = 0
        for p in range(parts):
            off = 0
            while True:
                cur.execute("SELECT count(*), sum(length(value)), max(\"offset\") "
                            "FROM kafka.fetch(%s, %s, %s, %s)", (topic, p, off, chunk))
                n, b, mx = cur.fetchone()
                if n == 0:
                    break
                total += n
                nbytes += b
                off = mx + 1
                if n < chunk:
                    break
        return total, nbytes

    def run(name, fn):
        t0 = time.perf_counter()
        n, b = fn()
        t = time.perf_counter() - t0
        if n != N or b != N * VSIZE:
            raise SystemExit("%s read %s records, %s bytes" % (name, n, b))
        return t

    cases = [
        ("seq scan: SELECT count(*), sum(length(v)) FROM plain (baseline)",
         lambda: q1(cur, "SELECT count(*), sum(length(v)) FROM plain")),
        ("kafka.fetch 1p, one call of max_records=%d" % N,
         lambda: q1(cur, "SELECT count(*), sum(length(value)) FROM kafka.fetch('f1', 0, 0, %s)", (N,))),
        ("kafka.fetch 1p, calls of 100,000 (client loop)", lambda: fetch_chunked("f1", 1, 100000)),
        ("kafka.fetch 1p, calls of 10,000 (client loop)", lambda: fetch_chunked("f1", 1, 10000)),
        ("kafka.fetch 6p, calls of 100,000 per partition (client loop)",
         lambda: fetch_chunked("f6", 6, 100000)),
    ]
    res = Results()
    for name, fn in cases:  # warm-up (hint bits, buffers, caches)
        run(name, fn)
    for rep in range(REPS):
        log("fetch rep %d/%d" % (rep + 1, REPS))
        for name, fn in cases:
            res.add(name, run(name, fn))
    print_table("Reading back, %d repetitions (warm: all data in shared_buffers)" % REPS, res,
                cases[0][0], N, N * VSIZE, [
                    "All aggregates run in the server (count and sum(length(value)) of every record, "
                    "so every value is materialised); client wall time.",
                    "Ratios are throughput / baseline throughput; 'per repetition' pairs runs of the same repetition.",
                    "Client loop: next from_offset = max(offset)+1 of the previous call, as a consumer does.",
                    "fetch returns read_committed records; the rows are materialised in a tuplestore "
                    "(work_mem=64MB) before the aggregate reads them.",
                ])
    return res


def part_bulk(cl, conn, cur, binfile):
    """Issue 13: bulk SQL the PostgreSQL way.  (a) a client sends the rows
    with binary COPY FROM STDIN: into a topic's foreign table against into
    a plain table; (b) a query over a table: kafka.produce_agg and INSERT
    INTO foreign_table SELECT against INSERT INTO plain SELECT."""
    out()
    out("## 4. Bulk SQL the PostgreSQL way: %s records of %d bytes (null keys)" % ("{:,}".format(N), VSIZE))
    with open(binfile, "rb") as f:
        data = f.read()
    cur.execute("CREATE FOREIGN TABLE IF NOT EXISTS ft_b (key bytea, value bytea) "
                "SERVER kafka_pg OPTIONS (topic 'b')")

    def client_copy(target, stream=None):
        t0 = time.perf_counter()
        w0 = wal_lsn(cur)
        cur.copy_expert("COPY %s FROM STDIN WITH (FORMAT binary)" % target,
                        io.BytesIO(data if stream is None else stream), size=1 << 20)
        return time.perf_counter() - t0, wal_lsn(cur) - w0

    def check_topic(parts, what):
        """after the timing: every row is in the log (its end offsets count the
        records and at most one COMMIT marker per partition)"""
        cur.execute("SELECT kafka.flush_markers()")
        n = q1(cur, "SELECT sum(log_end_offset) FROM kafka.partition_status WHERE topic = 'b'")[0]
        if n < N or n > N + parts:
            raise SystemExit("topic b holds %s offsets after %s of %d rows" % (n, what, N))

    keyfile = os.path.join(cl.tmp, "staging_keyed.bin")
    cur.execute("COPY (SELECT substr(v, 1, 8), v FROM staging) TO %s WITH (FORMAT binary)",
                (keyfile,))
    with open(keyfile, "rb") as f:
        keyed = f.read()
    res_c = Results()
    res_q = Results()
    res_kc = Results()
    res_kq = Results()
    res_a = Results()
    for rep in range(REPS):
        log("bulk rep %d/%d" % (rep + 1, REPS))
        # (a) client -> server, binary COPY FROM STDIN
        cur.execute("TRUNCATE plain")
        checkpoint(cur)
        t, w = client_copy("plain (k, v)")
        res_c.add("client binary COPY -> plain table (baseline)", t, w)
        for parts in (1, 6):
            recreate_topic(cur, "b", parts)
            checkpoint(cur)
            t, w = client_copy("ft_b (key, value)")
            check_topic(parts, "COPY")
            res_c.add("client binary COPY -> foreign table, %dp" % parts, t, w)
        # (b) a query over a table
        cur.execute("TRUNCATE plain")
        checkpoint(cur)
        t, w = timed(cur, "INSERT INTO plain SELECT NULL, v FROM staging")
        res_q.add("INSERT INTO plain SELECT FROM staging (baseline)", t, w)
        for parts in (1, 6):
            recreate_topic(cur, "b", parts)
            checkpoint(cur)
            t, w = timed(cur, "SELECT kafka.produce_agg('b', NULL::bytea, v) FROM staging")
            check_topic(parts, "produce_agg")
            res_q.add("SELECT kafka.produce_agg('b', NULL, v) FROM staging, %dp" % parts, t, w)
            recreate_topic(cur, "b", parts)
            checkpoint(cur)
            t, w = timed(cur, "INSERT INTO ft_b (key, value) SELECT NULL, v FROM staging")
            check_topic(parts, "INSERT INTO ft_b SELECT")
            res_q.add("INSERT INTO foreign table SELECT FROM staging, %dp" % parts, t, w)
        # (c) keyed: 8-byte keys (the first bytes of the value), 6 partitions by murmur2
        cur.execute("TRUNCATE plain")
        checkpoint(cur)
        t, w = client_copy("plain (k, v)", keyed)
        res_kc.add("client binary COPY -> plain table, keyed (baseline)", t, w)
        recreate_topic(cur, "b", 6)
        checkpoint(cur)
        t, w = client_copy("ft_b (key, value)", keyed)
        check_topic(6, "keyed COPY")
        res_kc.add("client binary COPY -> foreign table, keyed, 6p", t, w)
        cur.execute("TRUNCATE plain")
        checkpoint(cur)
        t, w = timed(cur, "INSERT INTO plain SELECT substr(v, 1, 8), v FROM staging")
        res_kq.add("INSERT INTO plain SELECT substr(v, 1, 8), v FROM staging (baseline)", t, w)
        recreate_topic(cur, "b", 6)
        checkpoint(cur)
        t, w = timed(cur, "SELECT kafka.produce_agg('b', substr(v, 1, 8), v) FROM staging")
        check_topic(6, "keyed produce_agg")
        res_kq.add("SELECT kafka.produce_agg('b', substr(v, 1, 8), v) FROM staging, 6p", t, w)
        recreate_topic(cur, "b", 6)
        checkpoint(cur)
        t, w = timed(cur, "INSERT INTO ft_b (key, value) SELECT substr(v, 1, 8), v FROM staging")
        check_topic(6, "keyed INSERT INTO ft_b SELECT")
        res_kq.add("INSERT INTO foreign table SELECT substr(v, 1, 8), v FROM staging, 6p", t, w)
        # (d) an array already in the server: produce_batch of a prebuilt array
        # against a server-side binary COPY of a file of the same rows
        cur.execute("TRUNCATE plain")
        checkpoint(cur)
        t, w = timed(cur, "COPY plain FROM %s WITH (FORMAT binary)", (binfile,))
        res_a.add("server-side binary COPY plain FROM file (baseline)", t, w)
        for parts in (1, 6):
            recreate_topic(cur, "b", parts)
            checkpoint(cur)
            t, w = prebuilt_produce(conn, cur, "b")
            check_topic(parts, "produce_batch")
            res_a.add("kafka.produce_batch('b', NULL, array prebuilt in PL/pgSQL), %dp" % parts,
                      t, w)
    # (e) reading back what the last run left in topic b (keyed, 6 partitions)
    # and plain: a streaming foreign scan against a seq scan and kafka.fetch
    cur.execute("VACUUM (FREEZE) plain")
    cur.execute("SELECT kafka.flush_markers()")
    reads = [
        ("seq scan: SELECT count(*), sum(length(v)) FROM plain (baseline)",
         "SELECT count(*), sum(length(v)) FROM plain"),
        ("foreign table: SELECT count(*), sum(length(value)) FROM ft_b",
         "SELECT count(*), sum(length(value)) FROM ft_b"),
        ("kafka.fetch, one call per partition",
         "SELECT count(*), sum(length(f.value)) FROM generate_series(0, 5) p, "
         "kafka.fetch('b', p, 0, %d) f" % N),
    ]
    res_r = Results()
    for name, q in reads:  # warm-up
        q1(cur, q)
    for rep in range(REPS):
        for name, q in reads:
            t0 = time.perf_counter()
            n, b = q1(cur, q)
            t = time.perf_counter() - t0
            if n != N or b != N * VSIZE:
                raise SystemExit("%s read %s records, %s bytes" % (name, n, b))
            res_r.add(name, t)
    cur.execute("TRUNCATE plain")
    common = [
        "Every timing ends with the statement's COMMIT (autocommit, synchronous_commit=on); a "
        "CHECKPOINT precedes each one and the target is empty (TRUNCATE, or the topic deleted "
        "and created again).  Client wall time.",
        "WAL MB: pg_current_wal_insert_lsn() difference over the timed statement.",
        "Ratios are throughput / baseline throughput: > 1 is faster than the baseline; 'per "
        "repetition' pairs each run with the baseline run of the same repetition.",
    ]
    print_table("4a. From a client: binary COPY FROM STDIN, %d repetitions" % REPS, res_c,
                "client binary COPY -> plain table (baseline)", N, N * VSIZE, [
                    "Both: psycopg2 copy_expert of the same %d MB binary COPY stream (the rows of "
                    "staging, key NULL) from client memory over loopback, 1 MB writes.  "
                    "Baseline: `COPY plain (k, v) FROM STDIN (FORMAT binary)`; kafka_pg: "
                    "`COPY ft_b (key, value) FROM STDIN (FORMAT binary)` into a foreign table of "
                    "topic b (kafka_pg_fdw)." % (len(data) // 1000000)] + common)
    print_table("4b. From a query over a table, %d repetitions" % REPS, res_q,
                "INSERT INTO plain SELECT FROM staging (baseline)", N, N * VSIZE, [
                    "Baseline: `INSERT INTO plain SELECT NULL, v FROM staging`; kafka_pg: "
                    "`SELECT kafka.produce_agg('b', NULL::bytea, v) FROM staging` and "
                    "`INSERT INTO ft_b (key, value) SELECT NULL, v FROM staging`."] + common)
    print_table("4c. Keyed, from a client: binary COPY FROM STDIN, %d repetitions" % REPS, res_kc,
                "client binary COPY -> plain table, keyed (baseline)", N, N * VSIZE, [
                    "As 4a with an 8-byte key per row (the value's first 8 bytes, so ~1M distinct "
                    "keys), into a 6-partition topic: murmur2 spreads the rows over the "
                    "partitions, one open batch each."] + common)
    print_table("4d. Keyed, from a query over a table, %d repetitions" % REPS, res_kq,
                "INSERT INTO plain SELECT substr(v, 1, 8), v FROM staging (baseline)", N,
                N * VSIZE, ["As 4b with the key substr(v, 1, 8) on both sides, 6 partitions."]
                + common)
    print_table("4e. An array already in the server, %d repetitions" % REPS, res_a,
                "server-side binary COPY plain FROM file (baseline)", N, N * VSIZE, [
                    "Baseline: `COPY plain FROM '<file>' (FORMAT binary)` of the rows of staging "
                    "(key NULL), written once; client wall time.  kafka_pg: a DO block builds "
                    "`array_agg(v)` into a variable, COMMITs, then times `kafka.produce_batch('b', "
                    "NULL, a)` plus its COMMIT with clock_timestamp() (the produce path alone); "
                    "its WAL figure includes the array_agg's transaction, which writes none."]
                + common)
    print_table("4f. Reading them back, %d repetitions (warm)" % REPS, res_r, reads[0][0], N,
                N * VSIZE, ["The rows of the last keyed run (6 partitions) and of plain; "
                            "aggregates in the server, every value materialised.  The foreign "
                            "scan streams (no tuplestore); kafka.fetch materialises each call's "
                            "rows first."])
    return res_c, res_q


def pgbench(cl, script, clients, secs):
    cmd = [BIN + "/pgbench", "-n", "-M", "prepared", "-h", "127.0.0.1", "-p", str(cl.port),
           "-U", "postgres", "-T", str(secs), "-c", str(clients), "-j", str(min(clients, 2)),
           "-f", script, "postgres"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", p.stdout)
    if not m or p.returncode != 0:
        raise SystemExit("pgbench failed: %s %s" % (p.stdout, p.stderr))
    fails = re.search(r"number of failed transactions: (\d+)", p.stdout)
    if fails and int(fails.group(1)) > 0:
        log("pgbench: %s failed transactions" % fails.group(1))
    return float(m.group(1))


def part_single(cl, conn, cur):
    out()
    out("## 3. Single-record produce, one record per transaction (pgbench, %d s per run)" % PGB_SECS)
    val = q1(cur, "SELECT encode(v, 'hex') FROM staging LIMIT 1")[0]
    d = os.path.join(cl.tmp, "pgb")
    os.makedirs(d, exist_ok=True)
    scripts = {}
    for name, text in (
            ("insert", "INSERT INTO plain1 VALUES (NULL, '\\x%s'::bytea);\n" % val),
            ("t1", "SELECT * FROM kafka.produce('t1', NULL::bytea, '\\x%s'::bytea);\n" % val),
            ("t8", "SELECT * FROM kafka.produce('t8', NULL::bytea, '\\x%s'::bytea);\n" % val)):
        path = os.path.join(d, name + ".sql")
        with open(path, "w") as f:
            f.write(text)
        scripts[name] = path
    recreate_topic(cur, "t1", 1)
    recreate_topic(cur, "t8", 8)
    configs = [
        ("one-row INSERT INTO plain1, 1 client (baseline 1)", "insert", 1),
        ("kafka.produce, 1 partition, 1 client", "t1", 1),
        ("one-row INSERT INTO plain1, 8 clients (baseline 8)", "insert", 8),
        ("kafka.produce, 1 partition, 8 clients", "t1", 8),
        ("kafka.produce, 8 partitions, 8 clients", "t8", 8),
    ]
    tps = {c[0]: [] for c in configs}
    wal = {c[0]: [] for c in configs}
    for rep in range(PGB_REPS):
        for name, script, clients in configs:
            log("pgbench rep %d/%d: %s" % (rep + 1, PGB_REPS, name))
            checkpoint(cur)
            w0 = wal_lsn(cur)
            t = pgbench(cl, scripts[script], clients, PGB_SECS)
            tps[name].append(t)
            wal[name].append((wal_lsn(cur) - w0) / (t * PGB_SECS))
    out()
    out("| what | tps median (min-max) | WAL bytes per transaction | ratio of medians to the INSERT with as many clients | ratio per repetition, median (min-max) |")
    out("|---|---|---|---|---|")
    for name, _, clients in configs:
        bl = tps["one-row INSERT INTO plain1, %d client%s (baseline %d)" %
                 (clients, "" if clients == 1 else "s", clients)]
        m = med(tps[name])
        paired = [x / b for x, b in zip(tps[name], bl)]
        out("| %s | %.0f (%.0f-%.0f) | %.0f | %.2f | %.2f (%.2f-%.2f) |" % (
            name, m, min(tps[name]), max(tps[name]), med(wal[name]), m / med(bl),
            med(paired), min(paired), max(paired)))
    out("- pgbench -n -M prepared -T %d -j min(clients,2); each transaction is one statement in "
        "autocommit with synchronous_commit=on, so each waits for its WAL flush; %d repetitions, "
        "run interleaved; a CHECKPOINT before each run." % (PGB_SECS, PGB_REPS))
    out("- WAL bytes per transaction include the COMMIT markers the resolver appends after each "
        "producing transaction.")
    cnt = q1(cur, "SELECT sum(log_end_offset) FROM kafka.partition_status WHERE topic IN ('t1', 't8')")[0]
    out("- records in t1+t8 after the runs (markers included in offsets): %s" % cnt)


PROFILE_DO = """
DO $$
DECLARE a bytea[]; t0 timestamptz; n int;
BEGIN
  SELECT array_agg(v) INTO a FROM staging;
  COMMIT;
  PERFORM pg_sleep(2);
  t0 := clock_timestamp();
  SELECT sum(record_count) INTO n FROM kafka.produce_batch('{topic}', NULL, a);
  COMMIT;
  RAISE NOTICE 'elapsed % %', extract(epoch FROM clock_timestamp() - t0), n;
END $$"""


def perf_aggregate(script_text, marker):
    """From `perf script` output: per-function self and inclusive sample
    shares among the samples whose call chain contains marker.  Frames
    without a symbol (static functions of a stripped postgres) are named
    after their first named caller."""
    self_c, incl_c, total = {}, {}, 0
    for block in script_text.split("\n\n"):
        lines = [l for l in block.split("\n") if l.startswith(("\t", " ")) and l.strip()]
        frames = []
        for l in lines:
            parts = l.strip().split(None, 1)
            if len(parts) < 2:
                continue
            sym = parts[1]
            dso = ""
            if sym.endswith(")") and " (" in sym:
                sym, dso = sym.rsplit(" (", 1)
                dso = os.path.basename(dso[:-1])
            sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
            frames.append((sym, dso))
        if not frames or not any(marker in f[0] for f in frames):
            continue
        total += 1
        # the marker frame and its callees only (frames are leaf first)
        depth = max(i for i, f in enumerate(frames) if marker in f[0])
        frames = frames[:depth + 1]
        named = []
        for sym, dso in frames:
            if sym == "[unknown]" or sym.startswith("0x"):
                caller = next((f[0] for f in frames[frames.index((sym, dso)) + 1:]
                               if f[0] != "[unknown]" and not f[0].startswith("0x")), "?")
                sym = "(static, under %s)" % caller
            named.append("%s [%s]" % (sym, dso))
        self_c[named[0]] = self_c.get(named[0], 0) + 1
        for n in set(named):
            incl_c[n] = incl_c.get(n, 0) + 1
    return total, self_c, incl_c


def print_profile(title, script, marker, top_self=20, top_incl=30):
    total, self_c, incl_c = perf_aggregate(script, marker)
    out()
    out("### %s: %d samples" % (title, total))
    if not total:
        return
    out()
    out("| self % | function [object] |")
    out("|---|---|")
    for k, v in sorted(self_c.items(), key=lambda kv: -kv[1])[:top_self]:
        out("| %.1f | %s |" % (100.0 * v / total, k))
    out()
    out("| inclusive % | function [object] (kernel frames left out) |")
    out("|---|---|")
    user = [kv for kv in incl_c.items() if "kernel" not in kv[0]]
    for k, v in sorted(user, key=lambda kv: -kv[1])[:top_incl]:
        out("| %.1f | %s |" % (100.0 * v / total, k))


def part_profile(cl, conn, cur):
    """perf record (DWARF call graphs) of one produce_batch of a prebuilt
    array into a 1-partition topic; only the samples under
    kp_sql_produce_batch or the COMMIT that follows are counted."""
    outdir = os.path.join(HERE, "out")
    os.makedirs(outdir, exist_ok=True)
    pid = q1(cur, "SELECT pg_backend_pid()")[0]
    recreate_topic(cur, "p", 1)
    checkpoint(cur)
    data = os.path.join(outdir, "perf.data")
    # warm-up, not recorded: fault in shared_buffers and caches
    cur.execute(PROFILE_DO.replace("{topic}", "p").replace("pg_sleep(2)", "pg_sleep(0)"))
    recreate_topic(cur, "p", 1)
    checkpoint(cur)
    perf = subprocess.Popen(["perf", "record", "-F", "1999", "--call-graph", "dwarf,16384",
                             "-o", data, "-p", str(pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    del conn.notices[:]
    for i in range(PROFILE_RUNS):
        cur.execute(PROFILE_DO.replace("{topic}", "p"))
    time.sleep(2)  # the resolver writes the COMMIT markers
    tfs = []
    for i in range(PROFILE_RUNS):
        t0 = time.perf_counter()
        nf = q1(cur, "SELECT count(*) FROM (SELECT length(value) FROM kafka.fetch('p', 0, %s, %s)) f",
                (i * N, N))[0]
        tfs.append(time.perf_counter() - t0)
    tf = med(tfs)
    perf.send_signal(signal.SIGINT)
    perf.wait()
    m = [re.search(r"elapsed ([0-9.e+-]+)", x) for x in conn.notices]
    t = med([float(x.group(1)) for x in m if x])
    script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,time,ip,sym,dso"],
                            capture_output=True, text=True).stdout
    out()
    out("## Profile: %d x produce_batch of %s records (prebuilt array, 1 partition), median %.3f s "
        "under perf; then %d x fetch of them" % (PROFILE_RUNS, "{:,}".format(N), t, PROFILE_RUNS))
    out()
    out("perf record -F 1999 --call-graph dwarf of the backend; only samples whose call chain "
        "holds the named function count; shares are of those samples; inclusive = the function "
        "or its callees.  Frames without a symbol (static functions of the stripped postgres "
        "binary) are named after their first named caller.")
    for marker, title in (("kp_sql_produce_batch", "inside kafka.produce_batch"),
                          ("CommitTransaction", "in COMMITs (mostly the produce's)"),
                          ("kp_sql_fetch", "inside kafka.fetch('p', 0, from, %d): %d records in "
                           "median %.3f s" % (N, nf, tf))):
        print_profile(title, script, marker)
    if KEEP:
        with open(os.path.join(outdir, "perf-script.txt"), "w") as f:
            f.write(script)
    else:
        os.unlink(data)


def load_average():
    """the machine's load: the runs here share it with whatever else runs"""
    try:
        return open("/proc/loadavg").read().split()[:3]
    except OSError:
        return ["?"] * 3


def part_profile_bulk(cl, conn, cur, binfile):
    """perf record (DWARF call graphs) of the backend during PROFILE_RUNS
    client binary COPYs into a 1-partition topic's foreign table, then
    during PROFILE_RUNS `SELECT kafka.produce_agg(...) FROM staging` into it
    (issue 13's bulk paths); each aggregated under the executor's entry."""
    outdir = os.path.join(HERE, "out")
    os.makedirs(outdir, exist_ok=True)
    with open(binfile, "rb") as f:
        data = f.read()
    cur.execute("CREATE FOREIGN TABLE IF NOT EXISTS ft_b (key bytea, value bytea) "
                "SERVER kafka_pg OPTIONS (topic 'b')")
    pid = q1(cur, "SELECT pg_backend_pid()")[0]

    def copy():
        cur.copy_expert("COPY ft_b (key, value) FROM STDIN WITH (FORMAT binary)",
                        io.BytesIO(data), size=1 << 20)

    def agg():
        cur.execute("SELECT kafka.produce_agg('b', NULL::bytea, v) FROM staging")
        cur.fetchall()

    out()
    out("## Profile of the bulk paths: %d x each, %s records of %d bytes into a 1-partition "
        "topic" % (PROFILE_RUNS, "{:,}".format(N), VSIZE))
    out()
    out("perf record -F 1999 --call-graph dwarf of the backend; only samples whose call chain "
        "holds the named function count; shares are of those samples; inclusive = the function "
        "or its callees.  Frames without a symbol (static functions of the stripped postgres "
        "binary) are named after their first named caller.")
    for name, fn, marker in (("client binary COPY FROM STDIN into the foreign table", copy,
                              "CopyFrom"),
                             ("SELECT kafka.produce_agg('b', NULL, v) FROM staging", agg,
                              "ExecutorRun")):
        recreate_topic(cur, "b", 1)
        fn()                       # warm-up, not recorded
        recreate_topic(cur, "b", 1)
        checkpoint(cur)
        perf_data = os.path.join(outdir, "perf-bulk.data")
        perf = subprocess.Popen(["perf", "record", "-F", "1999", "--call-graph", "dwarf,16384",
                                 "-o", perf_data, "-p", str(pid)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
        ts = []
        for i in range(PROFILE_RUNS):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        perf.send_signal(signal.SIGINT)
        perf.wait()
        script = subprocess.run(["perf", "script", "-i", perf_data, "-F",
                                 "comm,tid,time,ip,sym,dso"],
                                capture_output=True, text=True).stdout
        print_profile("%s (median %.3f s under perf), samples under %s" % (name, med(ts), marker),
                      script, marker)
        if not KEEP:
            os.unlink(perf_data)


def lib_md5():
    try:
        lib = os.path.join(subprocess.check_output(["pg_config", "--pkglibdir"], text=True).strip(),
                           "kafka_pg.so")
        return subprocess.check_output(["md5sum", lib], text=True).split()[0]
    except Exception:
        return None


def main():
    md5_start = lib_md5()
    cl = Cluster()

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    try:
        cl.init()
        cl.start()
        conn = cl.connect()
        cur = conn.cursor()
        ver = q1(cur, "SELECT version()")[0]
        # give a wire listener, if the extension has one, a free port of its own
        g = q1(cur, "SELECT string_agg(name, ',') FROM pg_settings WHERE name LIKE 'kafka.%%' "
                    "AND name ~ 'port' AND vartype = 'integer'")[0]
        if g and "kafka.port" not in g.split(","):
            for name in g.split(","):
                cur.execute("ALTER SYSTEM SET %s = %d" % (name, free_port(KAFKA_PORT0 or cl.port + 1000)))
            conn.close()
            cl.stop()
            cl.start()
            conn = cl.connect()
            cur = conn.cursor()
        binfile = setup_data(cl, cur)
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
        cpu = "?"
        try:
            for line in open("/proc/cpuinfo"):
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
        out("# kafka_pg SQL benchmark")
        out()
        out("- date: %s; host: %s; nproc: %d; memory: %.1f GiB; CPU: %s" % (
            time.strftime("%Y-%m-%d %H:%M:%S %Z"), socket.gethostname(), os.cpu_count(), mem, cpu))
        out("- server: %s" % ver)
        try:
            rev = subprocess.check_output(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                                          text=True, stderr=subprocess.DEVNULL).strip()
            lib = os.path.join(subprocess.check_output(["pg_config", "--pkglibdir"], text=True).strip(),
                               "kafka_pg.so")
            md5 = subprocess.check_output(["md5sum", lib], text=True).split()[0]
            out("- kafka_pg: %s (md5 %s, built %s); repository HEAD %s" % (
                lib, md5[:12], time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(lib))), rev))
        except Exception:
            pass
        out("- settings: " + ", ".join("%s=%s" % kv for kv in SETTINGS))
        out("- data dir %s (filesystem of /tmp); records: %s values of %d pseudo-random bytes "
            "(md5 hex decoded), null keys" % (cl.data, "{:,}".format(N), VSIZE))
        out("- medians of %d repetitions (pgbench: %d x %d s)" % (REPS, PGB_REPS, PGB_SECS))
        out("- load average (1, 5, 15 min) at the start: %s" % ", ".join(load_average()))
        if "batch" in PARTS:
            part_batch(cl, conn, cur, binfile)
        if "fetch" in PARTS:
            part_fetch(cl, conn, cur)
        if "single" in PARTS:
            part_single(cl, conn, cur)
        if "bulk" in PARTS:
            part_bulk(cl, conn, cur, binfile)
        if "profile" in PARTS:
            part_profile(cl, conn, cur)
        if "profile_bulk" in PARTS:
            part_profile_bulk(cl, conn, cur, binfile)
        out()
        out("- load average (1, 5, 15 min) at the end: %s" % ", ".join(load_average()))
        conn.close()
        if lib_md5() != md5_start:
            out()
            out("**Note: kafka_pg.so was reinstalled during the run.**  The server kept the "
                "library it preloaded at start (install replaces the file, it does not overwrite "
                "it); the md5 above is the one measured.")
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        cl.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
