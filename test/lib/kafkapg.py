"""test/lib/kafkapg.py: Python side of the test harness (crash and standby tests).

Thin wrappers over test/lib/pgcluster (which wraps test/lib/cluster.sh), so
that clusters are made, started and stopped the same way from every test.
"""

import json
import os
import pwd
import subprocess
import tempfile

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
