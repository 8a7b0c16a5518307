"""test/lib/kafkapg.py: Python side of the test harness (crash, recovery and standby tests).

Thin wrappers over test/lib/pgcluster (which wraps test/lib/cluster.sh), so
that clusters are made, started and stopped the same way from every test.
"""

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import psycopg2

PGCLUSTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pgcluster")


def pgcluster(*args, env=None):
    """Run test/lib/pgcluster ARGS; return its stdout, raise CalledProcessError on failure."""
    e = dict(os.environ)
    if env:
        e.update(env)
    r = subprocess.run(["bash", PGCLUSTER] + [str(a) for a in args], capture_output=True, text=True, env=e)
    if r.returncode != 0:
        raise subprocess.CalledProcessError(r.returncode, ["pgcluster"] + [str(a) for a in args], r.stdout, r.stderr)
    return r.stdout.strip()


def stop_clusters(datadirs):
    """Stop the servers of datadirs, the last started first; a server already gone is no error."""
    for d in reversed(datadirs):
        try:
            pgcluster("stop", d)
        except Exception:
            pass


def log_problems(datadir):
    """(server log path, its PANIC/crash lines as pgcluster log-problems reports them, "" if none)."""
    log = pgcluster("logfile", datadir)
    return log, (pgcluster("log-problems", log) if os.path.exists(log) else "")


def check_server_logs(datadirs, check, tail_lines=40):
    """check(name, ok, detail) that no server log of datadirs has a PANIC or crash; with
    KP_KEEP_TMP=1 print each log's last tail_lines lines."""
    for d in datadirs:
        log, problems = log_problems(d)
        check("%s log: no PANIC or crash" % os.path.basename(d), not problems, problems[:500])
        if os.environ.get("KP_KEEP_TMP") == "1":
            print("# --- %s" % log)
            tail(log, tail_lines)


def connect(port, db="postgres", **kw):
    conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname=db, connect_timeout=10, **kw)
    conn.autocommit = True
    return conn


def make_tmp(name):
    """A fresh directory postgres may write, under $KP_TMPROOT (set by test/run-tests) or /tmp."""
    base = os.environ.get("KP_TMPROOT") or "/tmp"
    d = tempfile.mkdtemp(prefix="kafka_pg_%s." % name, dir=base)
    os.chmod(d, 0o755)
    if os.getuid() == 0:
        pw = pwd.getpwnam("postgres")
        os.chown(d, pw.pw_uid, pw.pw_gid)
    return d


def run_in_tmp(name, run, check, errors=(subprocess.CalledProcessError, RuntimeError, OSError)):
    """run(root) in a fresh make_tmp(name) directory, removed afterwards unless KP_KEEP_TMP=1; an
    exception of errors is a failed check "harness: ..." (check: test/wire/tap.py's)."""
    root = make_tmp(name)
    try:
        run(root)
    except errors as e:
        check("harness: %r" % (e,), False, getattr(e, "stderr", "") or "")
    finally:
        if os.environ.get("KP_KEEP_TMP") != "1":
            shutil.rmtree(root, ignore_errors=True)


def free_ports(npg, nkafka, pg_default, kafka_default):
    """Free ports for a test's clusters: npg PostgreSQL ports from $KP_NEXT_PORT (else pg_default)
    on, then nkafka Kafka listener ports from $KAFKA_NEXT_PORT (else kafka_default) on, none of them
    one of the first. Returns (PostgreSQL ports, Kafka ports)."""
    pg, ka = [], []
    for _ in range(npg):
        pg.append(int(pgcluster("free-port", pg[-1] + 1 if pg else os.environ.get("KP_NEXT_PORT", pg_default))))
    for _ in range(nkafka):
        ka.append(int(pgcluster("free-port", ka[-1] + 1 if ka else os.environ.get("KAFKA_NEXT_PORT", kafka_default),
                                *pg)))
    return pg, ka


def start_primary(pdata, pport, kport, env, started):
    """A fresh cluster in pdata (pgcluster init with env), started (appended to started, for
    stop_clusters), the extension created in postgres: a connection to it."""
    pgcluster("init", pdata, pport, kport, env=env)
    pgcluster("start", pdata)
    started.append(pdata)
    pgcluster("create-extension", pport, "postgres")
    return connect(pport)


def run_main(label, name, run, check, finish):
    """A throwaway-cluster test's main: SIGTERM (the suite's timeout) exits naming label, run(root)
    runs in run_in_tmp(name) with psycopg2 errors too counted as a failed harness check, then
    finish() (test/wire/tap.py's)."""
    signal.signal(signal.SIGTERM, lambda *a: sys.exit("%s: terminated (timeout?)" % label))
    run_in_tmp(name, run, check, (subprocess.CalledProcessError, RuntimeError, OSError, psycopg2.Error))
    finish()


def tail(path, n):
    try:
        with open(path, errors="replace") as f:
            lines = f.readlines()
    except FileNotFoundError:
        print("(no file %s)" % path)
        return
    for line in lines[-n:]:
        print("  | " + line.rstrip())


def create_topic_small_segments(conn, topic, partitions, configs=None, want=65536):
    """kafka.create_topic with the smallest segment.bytes the server accepts:
    `want` (KP_SEGMENT_BYTES), else 1 MiB (Kafka 4.0's minimum).  Returns it."""
    want = int(os.environ.get("KP_SEGMENT_BYTES", want))
    cur = conn.cursor()
    for size in (want, 1048576):
        cfg = dict(configs or {}, **{"segment.bytes": str(size)})
        try:
            cur.execute("SELECT kafka.create_topic(%s, %s, %s)", (topic, partitions, json.dumps(cfg)))
            return size
        except psycopg2.Error as e:
            if size == 1048576 or "segment.bytes" not in str(e):
                raise
            print("note: segment.bytes=%d refused (%s); using 1048576" % (size, str(e).strip().splitlines()[0]), flush=True)


def compile_java(root, source):
    """Compile one Java test client (SOURCE, a .java path) against kafka-clients 4.4
    (test/clients/kafka/kafka.sh) into ROOT/classes: the classpath to run it with."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run(["bash", os.path.join(repo, "test", "clients", "kafka", "kafka.sh"), "classpath"],
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError("cannot get the kafka-clients jars: %s" % r.stderr[-2000:])
    jars = r.stdout.strip()
    classes = os.path.join(root, "classes")
    os.makedirs(classes, exist_ok=True)
    r = subprocess.run(["javac", "-d", classes, "-cp", jars, source],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("javac %s: %s" % (os.path.basename(source), r.stderr[-3000:]))
    return classes + ":" + jars


def info(msg):
    """A progress line, with the time."""
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def wait_gone(pm, seconds=60):
    """Wait (at most seconds) until the killed postmaster pm and its children have exited."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        r = subprocess.run(["pgrep", "-P", str(pm)], capture_output=True, text=True)
        if not r.stdout.strip() and not os.path.exists("/proc/%d" % pm):
            return
        time.sleep(0.2)


class ScratchCluster:
    """A throwaway one-server cluster for one test: a fresh directory (make_tmp(name)), the first free
    ports from $KP_NEXT_PORT / $KAFKA_NEXT_PORT (set by test/run-tests), else from port / kport."""

    def __init__(self, name, port, kport):
        self.root = make_tmp(name)
        self.data = os.path.join(self.root, "data")
        self.port = int(pgcluster("free-port", os.environ.get("KP_NEXT_PORT", str(port))))
        self.kport = int(pgcluster("free-port", os.environ.get("KAFKA_NEXT_PORT", str(kport)), self.port))

    def start(self, db, env):
        """initdb with env (KP_KAFKA_DB, KP_EXTRA_CONF...), start, CREATE EXTENSION in db."""
        pgcluster("init", self.data, self.port, self.kport, env=env)
        pgcluster("start", self.data)
        pgcluster("create-extension", self.port, db)

    def stop(self):
        """Stop the server if it runs (an error stopping it is not the test's)."""
        try:
            pgcluster("stop", self.data)
        except Exception:  # noqa: BLE001
            pass

    def log(self):
        return pgcluster("logfile", self.data)

    def log_problems(self):
        """PANICs, assertion failures and crashes in the server log (test/lib/cluster.sh), or ""."""
        log = self.log()
        return pgcluster("log-problems", log) if os.path.exists(log) else ""

    def kill_postmaster(self):
        """SIGKILL the postmaster; returns its pid (wait_gone(pid) waits for it and its children)."""
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            pm = int(f.readline())
        os.kill(pm, signal.SIGKILL)
        return pm

    def restart(self, crash=False):
        """Stop the server (fast, or kill -9 the postmaster and wait for its children), start it,
        wait for it and its Kafka listener."""
        if crash:
            wait_gone(self.kill_postmaster())
        else:
            pgcluster("stop", self.data)
        pgcluster("start", self.data)
        pgcluster("wait-ready", self.port, 60)
        pgcluster("wait-kafka", self.kport, 60)

    def remove(self):
        shutil.rmtree(self.root, ignore_errors=True)


# ---------------------------------------------------------------- the crash tests' verdict


class Failures(list):
    """The problems a crash test found; fail() notes and prints one."""

    def fail(self, msg):
        self.append(msg)
        print("FAIL: " + msg, flush=True)


def crash_test_main(run, failures, title):
    """Run run(); a harness error is a failure.  Prints "<title>: PASSED" or "FAILED (n problems)"
    and exits 1 if anything failed."""
    try:
        run()
    except (subprocess.CalledProcessError, psycopg2.Error, RuntimeError) as e:
        failures.fail("harness: %s %s" % (e, getattr(e, "stderr", "") or ""))
    print("%s: %s" % (title, "FAILED (%d problems)" % len(failures) if failures else "PASSED"))
    sys.exit(1 if failures else 0)


def crash_test_cleanup(cluster, failures):
    """The end of a crash test: stop the server, show its log's tail if anything failed, remove it."""
    cluster.stop()
    if failures:
        tail(cluster.log(), 40)
    cluster.remove()


# ---------------------------------------------------------------- TAP-style tests


class Tap:
    """ok / not ok lines and the closing "N passed, M failed" (the recovery tests)."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print("ok - " + name, flush=True)
        else:
            self.failed += 1
            print("not ok - %s %s" % (name, detail), flush=True)
        return ok

    def main(self, run):
        """Run run(); an exception is a failed check.  Prints the counts; exits 1 if any failed."""
        try:
            run()
        except Exception as e:  # noqa: BLE001
            self.check("the test ran to the end", False, "(%s: %s)" % (type(e).__name__, e))
        print("%d passed, %d failed" % (self.passed, self.failed))
        sys.exit(1 if self.failed else 0)

    def cleanup(self, cluster):
        """The end of a TAP test's cluster: stop it, check its log, show the log's tail if anything
        failed (or KP_KEEP_TMP=1, which also keeps the directory), remove it."""
        cluster.stop()
        log = cluster.log()
        problems = cluster.log_problems()
        self.check("no PANIC or crash in the server log", problems == "", problems)
        if self.failed or os.environ.get("KP_KEEP_TMP") == "1":
            print("--- %s" % log)
            tail(log, 40)
        if os.environ.get("KP_KEEP_TMP") != "1":
            cluster.remove()


class Session(threading.Thread):
    """Runs one statement on its own connection in the background: rows, or the error."""

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


def wait_for(conn, sql, args, seconds):
    """Poll sql until it returns a true first column; return whether it did within seconds."""
    cur = conn.cursor()
    deadline = time.time() + seconds
    while time.time() < deadline:
        cur.execute(sql, args)
        row = cur.fetchone()
        if row and row[0]:
            return True
        time.sleep(0.05)
    return False
