#!/usr/bin/python3
"""test/crash/crash_test.py: acknowledged records survive kill -9.

Under a concurrent produce load (CLIENTS processes running short transactions
against a topic with 3 partitions and segment.bytes=65536, so segments roll),
every record whose transaction was acknowledged (COMMIT returned) is written to
an acknowledgement log with the (partition, offset) the server returned.  Then a
process is killed with SIGKILL at a random moment, the server restarts (and
recovers with no manual step), and the whole topic is read back with
kafka.fetch.  The test fails unless:

  - every acknowledged record is present exactly once, at the offset the
    client was told, with its key;
  - no payload appears twice, offsets strictly increase per partition, and the
    whole log reads back (read_committed and read_uncommitted) without error;
  - records of rolled-back transactions, or of transactions whose COMMIT was
    never sent, are not visible to read_committed;
  - records whose COMMIT was in flight at the kill ("in doubt") appear at most
    once, and at the offset produce returned if they appear;
  - log_end_offset is above every record, and a new produce after the restart
    gets an offset above every earlier one;
  - the server log has no PANIC, assertion failure or crash by a signal other
    than our SIGKILL.

Kill modes, one per loop: the postmaster alone (children exit on their own),
the postmaster and all its children at once, one client backend, and one
kafka_pg background worker (if any is running).  Recovery messages of the
extension (lines containing "kafka_pg") are reported.

Environment: KP_CRASH_LOOPS (default 7: 5 postmaster kills, 1 backend, 1
worker), KP_CRASH_SECONDS (time budget, default 600), KP_CRASH_TAMPER=1 (adds
a forged acknowledgement: the test must then fail; checks the checker).
"""

import json
import multiprocessing as mp
import os
import random
import re
import shutil
import signal
import string
import subprocess
import sys
import tempfile
import time

import psycopg2

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kafkapg  # noqa: E402

TOPIC = "crash_t"
PARTITIONS = 3
SEGMENT_BYTES = 65536  # or 1 MiB if the server refuses less; see kafkapg.create_topic_small_segments
PAD = [20, 600]  # payload padding range; scaled with the segment size so segments roll
CLIENTS = 4
DB = "postgres"

failures = []
reported_errors = [0]  # client errors already reported by an earlier verify()


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def info(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


# ---------------------------------------------------------------------------
# clients


def client(wid, loop, port, ackpath, stop, seed):
    """One producer process: short transactions until stop or a lost connection.

    Writes one JSON line per record to ackpath:
      ack    COMMIT (or the autocommit statement) returned: must be in the log
      doubt  COMMIT was sent but no answer came: may be in the log, once
      abort  rolled back, or COMMIT never sent: must not be visible
      error  the server answered an ERROR: reported as a failure
    """
    rnd = random.Random(seed)
    out = open(ackpath, "a")

    def note(kind, recs, **extra):
        for r in recs:
            d = {"t": kind, "v": r[0], "k": r[1], "p": r[2], "o": r[3]}
            d.update(extra)
            out.write(json.dumps(d) + "\n")
        out.flush()

    seq = [0]

    def mk():
        seq[0] += 1
        pad = "".join(rnd.choice(string.ascii_letters) for _ in range(rnd.randint(*PAD)))
        return "w%d-l%d-n%d-%s" % (wid, loop, seq[0], pad), "k%d" % rnd.randint(0, 999)

    try:
        conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname=DB,
                                application_name="crash_client_%d" % wid, connect_timeout=10)
        conn.autocommit = True
        cur = conn.cursor()
    except psycopg2.Error as e:
        out.write(json.dumps({"t": "error", "v": None, "msg": "connect: %s" % e}) + "\n")
        return
    produce = 'SELECT partition, "offset" FROM kafka.produce(%s, %s::bytea, %s::bytea)'
    nerrors = 0
    while not stop.is_set() and nerrors < 20:
        r = rnd.random()
        kind = "single" if r < 0.65 else "txn" if r < 0.82 else "rollback" if r < 0.88 else "batch"
        recs = []  # (payload, key, partition, offset) of this transaction
        commit_sent = False
        try:
            if kind == "single":
                v, k = mk()
                recs.append([v, k, None, None])
                commit_sent = True
                cur.execute(produce, (TOPIC, k.encode(), v.encode()))
                p, o = cur.fetchone()
                recs[-1][2:] = [p, o]
                note("ack", recs)
            elif kind in ("txn", "rollback"):
                cur.execute("BEGIN")
                for _ in range(rnd.randint(2, 4)):
                    v, k = mk()
                    recs.append([v, k, None, None])
                    cur.execute(produce, (TOPIC, k.encode(), v.encode()))
                    p, o = cur.fetchone()
                    recs[-1][2:] = [p, o]
                if kind == "txn":
                    commit_sent = True
                    cur.execute("COMMIT")
                    note("ack", recs)
                else:
                    cur.execute("ROLLBACK")
                    note("abort", recs)
            else:
                part = rnd.randrange(PARTITIONS)
                vals, keys = [], []
                for _ in range(rnd.randint(2, 20)):
                    v, k = mk()
                    vals.append(v)
                    keys.append(k)
                    recs.append([v, k, None, None])
                commit_sent = True
                cur.execute("SELECT partition, base_offset, record_count FROM kafka.produce_batch("
                            "%s, %s::bytea[], %s::bytea[], %s)",
                            (TOPIC, [psycopg2.Binary(k.encode()) for k in keys],
                             [psycopg2.Binary(v.encode()) for v in vals], part))
                rows = cur.fetchall()
                if len(rows) != 1 or rows[0][0] != part or rows[0][2] != len(vals):
                    # committed, but we cannot tell the offsets: treat as in doubt
                    note("doubt", recs)
                    out.write(json.dumps({"t": "error", "v": None,
                                          "msg": "produce_batch(partition=%d, %d records) returned %r"
                                          % (part, len(vals), rows)}) + "\n")
                    continue
                base = rows[0][1]
                for i, rec in enumerate(recs):
                    rec[2:] = [part, base + i]
                note("ack", recs)
        except (psycopg2.OperationalError, psycopg2.InterfaceError) as e:
            if conn.closed or "terminat" in str(e) or "server closed" in str(e):
                note("doubt" if commit_sent else "abort", recs)
                break
            note("abort", recs)
            out.write(json.dumps({"t": "error", "v": None, "msg": "%s: %s" % (kind, e)}) + "\n")
            out.flush()
            try:
                cur.execute("ROLLBACK")
            except psycopg2.Error:
                break
        except psycopg2.Error as e:
            # an ERROR from the server: the transaction did not commit
            note("abort", recs)
            nerrors += 1
            out.write(json.dumps({"t": "error", "v": None, "msg": "%s: %s" % (kind, str(e).strip())}) + "\n")
            out.flush()
            if conn.closed:
                break
            try:
                cur.execute("ROLLBACK")
            except psycopg2.Error:
                break
    out.close()
    try:
        conn.close()
    except Exception:
        pass


# ---------------------------------------------------------------------------
# the server


class Server:
    def __init__(self, root):
        self.root = root
        self.data = os.path.join(root, "data")
        self.port = int(kafkapg.pgcluster("free-port", os.environ.get("KP_NEXT_PORT", "56432")))
        self.kport = int(kafkapg.pgcluster("free-port", os.environ.get("KAFKA_NEXT_PORT", "29092"), str(self.port)))
        self.log = kafkapg.pgcluster("logfile", self.data)
        self.log_pos = 0

    def connect(self, **kw):
        return kafkapg.connect(self.port, DB, **kw)

    def postmaster_pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def new_log_lines(self):
        try:
            with open(self.log, errors="replace") as f:
                f.seek(self.log_pos)
                text = f.read()
                self.log_pos = f.tell()
            return text.splitlines()
        except FileNotFoundError:
            return []


def children_of(pid):
    r = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(x) for x in r.stdout.split()]


def is_postgres(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().startswith(b"postgres")
    except OSError:
        return False


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


# ---------------------------------------------------------------------------
# verification


def read_acks(root):
    acks, doubts, aborts, errors = {}, {}, set(), []
    for name in sorted(os.listdir(root)):
        if not name.startswith("ack-"):
            continue
        with open(os.path.join(root, name)) as f:
            for line in f:
                d = json.loads(line)
                if d["t"] == "ack":
                    acks[d["v"]] = d
                elif d["t"] == "doubt":
                    doubts[d["v"]] = d
                elif d["t"] == "abort":
                    aborts.add(d["v"])
                else:
                    errors.append("%s: %s" % (name, d.get("msg")))
    return acks, doubts, aborts, errors


def scan(cur, partition, isolation):
    """All records of a partition in offset order, checking the order as it goes."""
    out = []
    off = 0
    last = -1
    while True:
        try:
            cur.execute('SELECT "offset", key, value FROM kafka.fetch(%s, %s, %s, 1000, %s)',
                        (TOPIC, partition, off, isolation))
        except psycopg2.Error as e:
            e.args = ("fetch(p%d, from %d, 1000, %s) after %d records: %s" % (partition, off, isolation, len(out), e),)
            raise type(e)(*e.args)
        rows = cur.fetchall()
        if not rows:
            return out
        for o, k, v in rows:
            if o < off:
                fail("%s fetch(p%d, from %d) returned offset %d below from_offset" % (isolation, partition, off, o))
            if o <= last:
                fail("%s fetch of p%d: offset %d after %d (not strictly increasing)" % (isolation, partition, o, last))
                return out
            last = o
            out.append((o, bytes(k).decode() if k is not None else None, bytes(v).decode() if v is not None else None))
        off = last + 1


def verify(srv, root, label, probes):
    """Read everything back and check it against the acknowledgement logs."""
    acks, doubts, aborts, errors = read_acks(root)
    acks.update(probes)
    if os.environ.get("KP_CRASH_TAMPER") == "1":
        acks["forged-record"] = {"v": "forged-record", "k": "x", "p": 0, "o": 3}
    nfail = len(failures)
    conn = srv.connect()
    cur = conn.cursor()
    seen = {}
    max_off = {}
    unreadable = set()
    for p in range(PARTITIONS):
        try:
            recs = scan(cur, p, "read_committed")
        except psycopg2.Error as e:
            fail("%s: read_committed scan of p%d failed: %s" % (label, p, str(e).strip()))
            unreadable.add(p)
            recs = []
        try:
            unc = scan(cur, p, "read_uncommitted")
        except psycopg2.Error as e:
            fail("%s: read_uncommitted scan of p%d failed: %s" % (label, p, str(e).strip()))
            conn.rollback()
            unc = []
        if len(unc) < len(recs):
            fail("%s: p%d read_uncommitted has %d records, fewer than read_committed's %d" % (label, p, len(unc), len(recs)))
        for o, k, v in recs:
            if v in seen:
                fail("%s: payload %s... twice: p%d@%d and p%d@%d" % (label, v[:24], seen[v][0], seen[v][1], p, o))
            seen[v] = (p, o, k)
        max_off[p] = recs[-1][0] if recs else -1
        try:
            cur.execute("SELECT log_start_offset, log_end_offset, segment_count FROM kafka.partition_status "
                        "WHERE topic = %s AND partition = %s", (TOPIC, p))
            st = cur.fetchone()
        except psycopg2.Error as e:
            fail("%s: kafka.partition_status for p%d failed: %s" % (label, p, str(e).strip()))
            continue
        if st is None:
            fail("%s: no kafka.partition_status row for p%d" % (label, p))
            continue
        leo = st[1]
        top = max([max_off[p]] + [a["o"] for a in acks.values() if a["p"] == p])
        if leo is None or leo <= top:
            fail("%s: p%d log_end_offset %s is not above offset %d" % (label, p, leo, top))
        info("%s: p%d %d committed records (%d read_uncommitted), log_end_offset %s, %s segments"
             % (label, p, len(recs), len(unc), leo, st[2]))
    lost = moved = 0
    for p in sorted(unreadable):
        fail("%s: p%d is unreadable: its %d acknowledged records cannot be checked"
             % (label, p, sum(1 for a in acks.values() if a["p"] == p)))
    for v, a in acks.items():
        got = seen.get(v)
        if a["p"] in unreadable:
            continue
        if got is None:
            lost += 1
            if lost <= 10:
                fail("%s: acknowledged record %s... (p%d@%d) is missing" % (label, v[:24], a["p"], a["o"]))
        elif (got[0], got[1]) != (a["p"], a["o"]) or got[2] != a["k"]:
            moved += 1
            if moved <= 10:
                fail("%s: acknowledged record %s... was told p%d@%d key %s, found p%d@%d key %s"
                     % (label, v[:24], a["p"], a["o"], a["k"], got[0], got[1], got[2]))
    if lost > 10 or moved > 10:
        fail("%s: %d acknowledged records missing, %d at the wrong place in all" % (label, lost, moved))
    doubt_present = 0
    for v, d in doubts.items():
        got = seen.get(v)
        if got is not None:
            doubt_present += 1
            if d["p"] is not None and (got[0], got[1]) != (d["p"], d["o"]):
                fail("%s: in-doubt record %s... produce said p%d@%d, found p%d@%d"
                     % (label, v[:24], d["p"], d["o"], got[0], got[1]))
    bad = 0
    for v in seen:
        if v in acks or v in doubts:
            continue
        bad += 1
        if bad <= 10:
            what = "rolled back / never committed" if v in aborts else "never produced"
            fail("%s: record %s... (%s) is visible to read_committed at p%d@%d" % (label, v[:24], what, seen[v][0], seen[v][1]))
    # random point reads: fetch at an acknowledged offset starts there
    rnd = random.Random(len(acks))
    readable = sorted((v, a) for v, a in acks.items() if a["p"] not in unreadable)
    for v, a in rnd.sample(readable, min(25, len(readable))):
        try:
            cur.execute('SELECT "offset", value FROM kafka.fetch(%s, %s, %s, 1)', (TOPIC, a["p"], a["o"]))
            row = cur.fetchone()
        except psycopg2.Error as e:
            fail("%s: fetch(p%d, %d, 1) failed: %s" % (label, a["p"], a["o"], str(e).strip()))
            continue
        if row is None or row[0] != a["o"] or bytes(row[1]).decode() != v:
            fail("%s: fetch(p%d, %d, 1) returned %s, not the acknowledged record"
                 % (label, a["p"], a["o"], None if row is None else (row[0], bytes(row[1])[:24])))
    conn.close()
    counted = {}
    for e in errors[reported_errors[0]:]:
        first = e.split(": ", 1)[-1].splitlines()[0]
        counted[first] = counted.get(first, 0) + 1
    reported_errors[0] = len(errors)
    for e, n in sorted(counted.items(), key=lambda x: -x[1])[:5]:
        fail("%s: clients saw %d x server error: %s" % (label, n, e))
    if len(counted) > 5:
        fail("%s: and %d other distinct client errors" % (label, len(counted) - 5))
    info("%s: %d acknowledged, %d in doubt (%d present), %d aborted; %d records read; %s"
         % (label, len(acks), len(doubts), doubt_present, len(aborts), len(seen),
            "OK" if len(failures) == nfail else "%d problems" % (len(failures) - nfail)))
    return max_off, acks


def probe_after_restart(srv, label, acks, max_off, probes):
    """A new produce to each partition gets an offset above all earlier ones."""
    conn = srv.connect()
    cur = conn.cursor()
    for p in range(PARTITIONS):
        top = max([max_off.get(p, -1)] + [a["o"] for a in acks.values() if a["p"] == p])
        v = "probe-%s-p%d-%d" % (label, p, random.randrange(10**9))
        try:
            cur.execute('SELECT partition, "offset" FROM kafka.produce(%s, %s::bytea, %s::bytea, NULL, %s)',
                        (TOPIC, b"probe", v.encode(), p))
            rp, ro = cur.fetchone()
        except psycopg2.Error as e:
            fail("%s: produce to p%d after restart failed: %s" % (label, p, str(e).strip()))
            continue
        if rp != p or ro <= top:
            fail("%s: produce after restart got p%d@%d; expected p%d above offset %d" % (label, rp, ro, p, top))
        probes[v] = {"v": v, "k": "probe", "p": rp, "o": ro}
    conn.close()


# ---------------------------------------------------------------------------


def run():
    root = kafkapg.make_tmp("crash")
    srv = Server(root)
    t_start = time.time()
    budget = float(os.environ.get("KP_CRASH_SECONDS", "600"))
    loops = int(os.environ.get("KP_CRASH_LOOPS", "7"))
    modes = ["postmaster", "backend", "postmaster+children", "postmaster", "worker",
             "postmaster+children", "postmaster"]
    modes = (modes * (loops // len(modes) + 1))[:loops]
    recovery_lines = []
    try:
        kafkapg.pgcluster("init", srv.data, str(srv.port), str(srv.kport), env={"KP_KAFKA_DB": DB})
        kafkapg.pgcluster("start", srv.data)
        kafkapg.pgcluster("set-kafka-port", srv.data, str(srv.port), str(srv.kport))
        kafkapg.pgcluster("create-extension", str(srv.port), DB)
        global SEGMENT_BYTES
        conn = srv.connect()
        SEGMENT_BYTES = kafkapg.create_topic_small_segments(conn, TOPIC, PARTITIONS, want=SEGMENT_BYTES)
        conn.close()
        if SEGMENT_BYTES > 65536:
            PAD[:] = [200, 4000]
        info("cluster on port %d, topic %s with %d partitions, segment.bytes %d; %d loops: %s"
             % (srv.port, TOPIC, PARTITIONS, SEGMENT_BYTES, loops, ", ".join(modes)))
        probes = {}
        total_acks_before = 0
        done = 0
        for loop, mode in enumerate(modes, 1):
            if time.time() - t_start > budget - 60:
                info("time budget nearly used: stopping after %d loops" % done)
                break
            label = "loop %d (%s)" % (loop, mode)
            stop = mp.Event()
            procs = [mp.Process(target=client, args=(w, loop, srv.port, os.path.join(root, "ack-w%d.jsonl" % w),
                                                     stop, random.randrange(2**32)))
                     for w in range(CLIENTS)]
            for pr in procs:
                pr.start()
            mon = srv.connect()
            mcur = mon.cursor()
            time.sleep(random.uniform(1.5, 5.0))
            if mode.startswith("postmaster"):
                pm = srv.postmaster_pid()
                kids = children_of(pm)
                os.kill(pm, signal.SIGKILL)
                if mode == "postmaster+children":
                    for k in kids:
                        try:
                            os.kill(k, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                info("%s: killed postmaster %d%s" % (label, pm, " and its %d children" % len(kids) if "children" in mode else ""))
            else:
                if mode == "worker":
                    mcur.execute("SELECT pid, backend_type FROM pg_stat_activity WHERE backend_type ILIKE '%%kafka%%' ORDER BY random() LIMIT 1")
                    row = mcur.fetchone()
                    if row is None:
                        info("%s: no kafka_pg background worker in pg_stat_activity; killing a client backend instead" % label)
                        mode = "backend"
                if mode == "backend":
                    mcur.execute("SELECT pid, backend_type FROM pg_stat_activity WHERE application_name LIKE 'crash_client_%%' ORDER BY random() LIMIT 1")
                    row = mcur.fetchone()
                if row is None:
                    fail("%s: no process to kill (clients not connected?)" % label)
                else:
                    os.kill(row[0], signal.SIGKILL)
                    info("%s: killed %s %d" % (label, row[1], row[0]))
            try:
                mon.close()
            except Exception:
                pass
            stop.set()
            for pr in procs:
                pr.join(60)
                if pr.is_alive():
                    fail("%s: a client did not finish within 60s of the kill" % label)
                    pr.kill()
            if mode.startswith("postmaster"):
                deadline = time.time() + 60
                while any(alive(k) for k in kids) and time.time() < deadline:
                    time.sleep(0.2)
                # a pid may have been recycled: only postgres processes count
                left = [k for k in kids if alive(k) and is_postgres(k)]
                if left:
                    fail("%s: children %s of the killed postmaster still alive after 60s; killing them" % (label, left))
                    for k in left:
                        os.kill(k, signal.SIGKILL)
                    time.sleep(1)
                t0 = time.time()
                try:
                    kafkapg.pgcluster("start", srv.data)
                except subprocess.CalledProcessError:
                    fail("%s: the server did not restart after kill -9" % label)
                    break
                info("%s: restarted in %.1fs" % (label, time.time() - t0))
            else:
                t0 = time.time()
                time.sleep(1)
                try:
                    kafkapg.pgcluster("wait-ready", str(srv.port), "120")
                except subprocess.CalledProcessError:
                    fail("%s: the server did not come back after the kill" % label)
                    break
                info("%s: server accepting connections again after %.1fs" % (label, time.time() - t0))
            for line in srv.new_log_lines():
                if root in line:
                    continue
                if "kafka_pg" in line or re.search(r"kafka.*(recover|torn|tail|truncat|redo)", line, re.I):
                    recovery_lines.append("%s: %s" % (label, line))
            acks_now = len(read_acks(root)[0])
            if acks_now == total_acks_before:
                fail("%s: no record was acknowledged during the load (produce not working?)" % label)
            total_acks_before = acks_now
            nfail = len(failures)
            max_off, acks = verify(srv, root, label, probes)
            probe_after_restart(srv, label, acks, max_off, probes)
            done += 1
            if len(failures) > nfail and os.environ.get("KP_CRASH_CONTINUE") != "1":
                info("%s found problems: no further loops (KP_CRASH_CONTINUE=1 goes on)" % label)
                break
        if done and not failures:
            verify(srv, root, "final", probes)
        acks, doubts, aborts, _ = read_acks(root)
        info("%d loops done in %.0fs; %d records acknowledged, %d in doubt, %d aborted"
             % (done, time.time() - t_start, len(acks), len(doubts), len(aborts)))
        if done < min(3, loops) and not failures:
            fail("only %d kill/restart loops completed" % done)
        conn = srv.connect()
        cur = conn.cursor()
        try:
            cur.execute("SELECT max(segment_count) FROM kafka.partition_status WHERE topic = %s", (TOPIC,))
            nseg = cur.fetchone()[0]
        except psycopg2.Error:
            nseg = None  # already reported by verify()
            done = 0
        conn.close()
        if done and (nseg or 0) < 2:
            fail("no segment rolled during the test (segment.bytes %d, max segment_count %s): load too small"
                 % (SEGMENT_BYTES, nseg))
    finally:
        try:
            kafkapg.pgcluster("stop", srv.data)
        except Exception:
            pass
        for line in srv.new_log_lines():
            if "kafka_pg" in line and root not in line:
                recovery_lines.append("end: %s" % line)
        problems = kafkapg.pgcluster("log-problems", srv.log)
        if problems:
            for line in problems.splitlines()[:20]:
                fail("server log: %s" % line)
        routine = re.compile(r"serving Kafka clients|resolver started|resolver: loaded|resolver shutting down|"
                             r"due to administrator command|exited with exit code 1")
        recovery_lines = [l for l in recovery_lines if not routine.search(l)]
        print("\nserver log lines about kafka_pg, less worker starts and stops: %d" % len(recovery_lines))
        for line in recovery_lines[:40]:
            print("  " + line)
        if failures:
            diagnose(srv.data)
        if failures or os.environ.get("KP_KEEP_TMP") == "1":
            print("server log: %s" % srv.log)
            kafkapg.tail(srv.log, 60)
        if os.environ.get("KP_KEEP_TMP") != "1":
            shutil.rmtree(root, ignore_errors=True)


def diagnose(datadir):
    """For errors naming a segment page, say what is on disk there (before the
    data directory is removed): an all-zero block at the end of a segment is a
    relation extension whose page initialisation was lost in the crash."""
    done = set()
    for f in failures:
        m = re.search(r"segment (\d+) block (\d+)", f)
        if not m or m.groups() in done:
            continue
        done.add(m.groups())
        rel, blk = int(m.group(1)), int(m.group(2))
        for dirpath, _, files in os.walk(os.path.join(datadir, "base")):
            if str(rel) in files:
                path = os.path.join(dirpath, str(rel))
                size = os.path.getsize(path)
                with open(path, "rb") as fh:
                    fh.seek(blk * 8192)
                    page = fh.read(8192)
                print("diagnosis: %s has %d blocks; block %d is %s%s"
                      % (os.path.relpath(path, datadir), size // 8192, blk,
                         "all zeros" if page == bytes(len(page)) else "not zero (header %s)" % page[:24].hex(),
                         " and the last block" if blk == size // 8192 - 1 else ""))


def main():
    signal.signal(signal.SIGTERM, lambda *a: sys.exit("crash test: terminated (timeout?)"))
    try:
        run()
    except subprocess.CalledProcessError as e:
        fail("harness step failed: %s\n%s%s" % (" ".join(e.cmd), e.stdout or "", e.stderr or ""))
    except psycopg2.Error as e:
        fail("SQL error in the harness: %s" % str(e).strip())
    if failures:
        print("\ncrash test: FAILED (%d problems)" % len(failures))
        for f in failures[:40]:
            print("  - " + f)
        return 1
    print("\ncrash test: PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
