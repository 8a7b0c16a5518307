#!/usr/bin/python3
"""test/standby/standby_test.py: a streaming standby holds the same log; a promoted one continues it.

1. A primary with kafka_pg; topics with 3 partitions and small segments, and
   topics whose compression.type is gzip, snappy, lz4 and zstd.
2. Records are produced (single records, multi-record transactions, batches,
   headers, a rolled-back transaction); then `pg_basebackup -R` makes a
   standby on another loopback port (kafka_pg preloaded there too), which
   streams; more records are produced, rolling segments.
3. Once the standby has replayed up to the primary's current WAL position,
   kafka.fetch and kafka.partition_status on the standby must return exactly
   what they return on the primary, and every acknowledged record must be
   there.  A produce on the standby must fail cleanly (read-only).
4. The primary is stopped (immediate, like a crash), the standby promoted; new
   produces on it must get offsets above every earlier one, roll segments,
   become visible, and no acknowledged record may be lost.
5. Retention (issue 9): kafka.run_log_cleaner on the primary deletes old
   segments of a topic with retention.bytes=0; the standby sees the same log
   start offset by replay, and so does the promoted standby.  Compaction
   (issue 9): kafka.run_log_compaction on the primary rewrites and swaps a
   compacted topic's segments; the standby reads the same records, batches
   and segments by replay, and so does the promoted standby, which then
   cleans the topic again itself.
6. Neither server log may show a PANIC or a crash.  The primary runs with
   wal_consistency_checking = 'generic', so the standby checks every page it
   replays from the store's generic WAL records against the primary's image.
"""

import json
import os
import random
import shutil
import signal
import string
import subprocess
import sys
import time

import psycopg2

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kafkapg  # noqa: E402

DB = "postgres"
SEGMENT_BYTES = 65536
TOPICS = {
    "sb_plain": (3, {"segment.bytes": str(SEGMENT_BYTES)}),
    "sb_gzip": (1, {"segment.bytes": str(SEGMENT_BYTES), "compression.type": "gzip"}),
    "sb_snappy": (1, {"segment.bytes": str(SEGMENT_BYTES), "compression.type": "snappy"}),
    "sb_lz4": (1, {"segment.bytes": str(SEGMENT_BYTES), "compression.type": "lz4"}),
    "sb_zstd": (2, {"segment.bytes": str(SEGMENT_BYTES), "compression.type": "zstd"}),
}

failures = []
rnd = random.Random(int(os.environ.get("KP_STANDBY_SEED", str(random.randrange(10**6)))))


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def info(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


class Producer:
    """Produces through the SQL API and remembers what was acknowledged."""

    def __init__(self, conn):
        self.conn = conn
        self.cur = conn.cursor()
        self.acked = []  # dicts: topic, p, o, k, v, h (header text or None)
        self.aborted = set()
        self.n = 0
        self.header_sql = None

    def payload(self, size):
        self.n += 1
        if rnd.random() < 0.5:  # compressible
            body = ("record %d " % self.n) * (size // 10 + 1)
        else:
            body = "".join(rnd.choice(string.ascii_letters) for _ in range(size))
        return ("v%d-" % self.n + body)[:size]

    def headers_expr(self):
        """SQL for a one-element kafka.header[] whose fields follow the type's definition."""
        if self.header_sql is None:
            self.cur.execute("SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
                             "WHERE a.attrelid = 'kafka.header'::regclass AND a.attnum > 0 AND NOT a.attisdropped "
                             "ORDER BY a.attnum")
            self.header_fields = self.cur.fetchall()
            self.header_sql = "ARRAY[ROW(%s)::kafka.header]" % ", ".join(
                "%%s::%s" % t for _, t in self.header_fields)
        return self.header_sql

    def header_args(self, i):
        args = []
        for j, (_, t) in enumerate(self.header_fields):
            s = "hdr%d-%d" % (j, i)
            args.append(psycopg2.Binary(s.encode()) if t == "bytea" else s)
        return args

    def single(self, topic, size, headers=False, partition=None):
        k, v = "k%d" % rnd.randint(0, 99), self.payload(size)
        if headers:
            sql = 'SELECT partition, "offset" FROM kafka.produce(%%s, %%s::bytea, %%s::bytea, %s, %%s)' % self.headers_expr()
            args = [topic, k.encode(), v.encode()] + self.header_args(self.n) + [partition]
        else:
            sql = 'SELECT partition, "offset" FROM kafka.produce(%s, %s::bytea, %s::bytea, NULL, %s)'
            args = [topic, k.encode(), v.encode(), partition]
        self.cur.execute(sql, args)
        p, o = self.cur.fetchone()
        rec = {"topic": topic, "p": p, "o": o, "k": k, "v": v, "h": headers}
        if self.conn.autocommit:  # else txn() acknowledges at COMMIT
            self.acked.append(rec)
        return rec

    def txn(self, topic, n, size, commit=True):
        self.conn.autocommit = False
        recs = [self.single(topic, size) for _ in range(n)]
        if commit:
            self.conn.commit()
            self.acked.extend(recs)
        else:
            self.conn.rollback()
            self.aborted.update(r["v"] for r in recs)
        self.conn.autocommit = True

    def batch(self, topic, partition, n, size):
        keys = ["b%d" % rnd.randint(0, 99) for _ in range(n)]
        vals = [self.payload(size) for _ in range(n)]
        self.cur.execute("SELECT partition, base_offset, record_count FROM kafka.produce_batch(%s, %s::bytea[], %s::bytea[], %s)",
                         (topic, [psycopg2.Binary(k.encode()) for k in keys],
                          [psycopg2.Binary(v.encode()) for v in vals], partition))
        rows = self.cur.fetchall()
        if len(rows) != 1 or rows[0][0] != partition or rows[0][2] != n:
            fail("produce_batch(%s, partition %d, %d records) returned %r" % (topic, partition, n, rows))
            return
        for i in range(n):
            self.acked.append({"topic": topic, "p": partition, "o": rows[0][1] + i, "k": keys[i], "v": vals[i], "h": False})

    def bulk(self, topic, kb):
        """About kb kilobytes into every partition of topic, in batches of 1 KB records."""
        parts = TOPICS[topic][0]
        for p in range(parts):
            for _ in range(max(1, kb // 40)):
                self.batch(topic, p, 40, 1000)

    def load(self, rounds, bulk_kb=0):
        """A mix of everything, about rounds * 50 records of up to 1.5 KB, then
        bulk_kb per partition of sb_plain so that its segments roll."""
        if bulk_kb:
            self.bulk("sb_plain", bulk_kb)
        for _ in range(rounds):
            for topic, (parts, _) in TOPICS.items():
                self.single(topic, rnd.randint(200, 1500))
                self.single(topic, rnd.randint(100, 600), headers=True)
                self.txn(topic, rnd.randint(2, 3), rnd.randint(200, 900))
                self.batch(topic, rnd.randrange(parts), rnd.randint(3, 8), rnd.randint(300, 1200))
            if rnd.random() < 0.3:
                self.txn("sb_plain", 2, 300, commit=False)


def snapshot(conn):
    """Everything a reader can see: per topic and partition, the records (both
    isolation levels) and the status row."""
    cur = conn.cursor()
    snap = {}
    for topic, (parts, _) in TOPICS.items():
        for p in range(parts):
            for iso in ("read_committed", "read_uncommitted"):
                rows, off = [], 0
                while True:
                    cur.execute('SELECT partition, "offset", "timestamp", key, value, headers::text '
                                'FROM kafka.fetch(%s, %s, %s, 1000, %s)', (topic, p, off, iso))
                    page = [(r[0], r[1], r[2], bytes(r[3]) if r[3] is not None else None,
                             bytes(r[4]) if r[4] is not None else None, r[5]) for r in cur.fetchall()]
                    if not page:
                        break
                    if page[-1][1] < off:
                        fail("fetch(%s, %d, %d) returned only offsets below from_offset" % (topic, p, off))
                        break
                    rows.extend(page)
                    off = page[-1][1] + 1
                snap[(topic, p, iso)] = rows
            cur.execute("SELECT log_start_offset, log_end_offset, size_bytes, segment_count FROM kafka.partition_status "
                        "WHERE topic = %s AND partition = %s", (topic, p))
            snap[(topic, p, "status")] = cur.fetchone()
    return snap


def check_log(snap, producer, label):
    """Every acknowledged record at its offset; offsets increase; no duplicates; no aborted records."""
    found = {}
    for (topic, p, iso), rows in snap.items():
        if iso != "read_committed":
            continue
        last = -1
        for r in rows:
            if r[1] <= last:
                fail("%s: %s/%d offsets not increasing: %d after %d" % (label, topic, p, r[1], last))
            last = r[1]
            v = r[4].decode()
            if (topic, v) in found:
                fail("%s: %s/%d payload %s... twice" % (label, topic, p, v[:20]))
            found[(topic, v)] = r
            if v in producer.aborted:
                fail("%s: rolled-back record %s... visible in %s/%d@%d" % (label, v[:20], topic, p, r[1]))
        st = snap[(topic, p, "status")]
        if st is None:
            fail("%s: no partition_status row for %s/%d" % (label, topic, p))
        elif rows and (st[1] is None or st[1] <= rows[-1][1]):
            fail("%s: %s/%d log_end_offset %s not above last offset %d" % (label, topic, p, st[1], rows[-1][1]))
    missing = 0
    for a in producer.acked:
        r = found.get((a["topic"], a["v"]))
        if r is None or r[0] != a["p"] or r[1] != a["o"] or r[3] != a["k"].encode():
            missing += 1
            if missing <= 10:
                fail("%s: acknowledged %s/%d@%d (%s...) %s" % (label, a["topic"], a["p"], a["o"], a["v"][:20],
                     "missing" if r is None else "found at %d/%d" % (r[0], r[1])))
        elif a["h"] and (r[5] is None or "hdr" not in r[5]):
            fail("%s: %s/%d@%d was produced with headers, fetch returned %r" % (label, a["topic"], a["p"], a["o"], r[5]))
    if missing > 10:
        fail("%s: %d acknowledged records missing or misplaced" % (label, missing))
    return len(found)


def lsn(conn, sql):
    cur = conn.cursor()
    cur.execute(sql)
    return cur.fetchone()[0]


def wait_replay(primary, standby, timeout=90):
    # the insert position, not pg_current_wal_lsn() (the write position): a
    # batch a snapshot saw may be in WAL not yet written (an open or
    # asynchronously committed transaction; the walwriter writes it soon)
    target = lsn(primary, "SELECT pg_current_wal_insert_lsn()")
    t0 = time.time()
    while time.time() - t0 < timeout:
        cur = standby.cursor()
        cur.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn, pg_last_wal_replay_lsn()", (target,))
        ok, at = cur.fetchone()
        if ok:
            return target, time.time() - t0
        time.sleep(0.2)
    raise RuntimeError("standby did not replay up to %s within %ds (at %s)" % (target, timeout, at))


def diff(snap_a, snap_b, label):
    bad = 0
    for key in sorted(set(snap_a) | set(snap_b), key=str):
        a, b = snap_a.get(key), snap_b.get(key)
        if a == b:
            continue
        bad += 1
        if isinstance(a, list) and isinstance(b, list):
            i = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
            fail("%s: %s differs: %d vs %d rows, first difference at row %d: %r vs %r"
                 % (label, key, len(a), len(b), i, a[i][:3] if i < len(a) else None, b[i][:3] if i < len(b) else None))
        else:
            fail("%s: %s differs: %r vs %r" % (label, key, a, b))
    return bad


def check_retention(prim, stby):
    """Retention on the primary, seen by the standby: returns the new log start."""
    cur = prim.cursor()
    cur.execute("SELECT kafka.create_topic('sb_retain', 1, '{\"segment.ms\": \"1\"}')")
    for i in range(6):
        cur.execute("SELECT \"offset\" FROM kafka.produce('sb_retain', NULL::text, %s, partition => 0)", ("r%d" % i,))
        cur.execute("SELECT kafka.flush_markers()")
        time.sleep(0.01)
    cur.execute("SELECT kafka.alter_topic_config('sb_retain', '{\"retention.bytes\": \"0\"}')")
    cur.execute("SELECT sum(segments_deleted), max(log_start_offset) FROM kafka.run_log_cleaner() WHERE topic = 'sb_retain'")
    deleted, start = cur.fetchone()
    if not deleted or not start:
        fail("retention deleted nothing of sb_retain (%s segments, log start %s)" % (deleted, start))
        return None
    wait_replay(prim, stby)
    q = ("SELECT s.log_start_offset, kafka.earliest_offset('sb_retain', 0), "
         "(SELECT min(\"offset\") FROM kafka.fetch('sb_retain', 0, s.log_start_offset, 100)) "
         "FROM kafka.partition_status s WHERE topic = 'sb_retain'")
    cur.execute(q)
    on_primary = cur.fetchone()
    scur = stby.cursor()
    scur.execute(q)
    on_standby = scur.fetchone()
    if on_primary != on_standby or on_primary[0] != start:
        fail("retention: log start, earliest offset, first record on the primary %r, on the standby %r (run_log_cleaner said %d)"
             % (on_primary, on_standby, start))
    else:
        info("retention: %d segments deleted on the primary; the standby sees the log start %d by replay" % (deleted, start))
    return start


COMPACT_Q = ("SELECT \"offset\", key, value FROM kafka.fetch_text('sb_compact', 0, 0, 1000)",
             "SELECT base_offset, last_offset, record_count, control_type, delete_horizon IS NOT NULL, crc_valid "
             "FROM kafka.dump_log('sb_compact', 0)",
             "SELECT base_offset, relfilenode FROM kafka.segments WHERE topic = 'sb_compact' ORDER BY 1",
             "SELECT log_start_offset, log_end_offset FROM kafka.partition_status WHERE topic = 'sb_compact'")


def check_compaction(prim, stby):
    """A clean on the primary, replayed by the standby: returns what the standby reads."""
    cur = prim.cursor()
    cur.execute("SELECT kafka.create_topic('sb_compact', 1, '{\"cleanup.policy\": \"compact\", \"segment.ms\": \"1\", "
                "\"file.delete.delay.ms\": \"0\"}')")
    latest = {}
    for r in range(4):
        for k in range(5):
            v = None if (r == 3 and k == 1) else "c%d-%d" % (r, k)
            cur.execute("SELECT \"offset\" FROM kafka.produce('sb_compact', %s, %s::text, partition => 0)", ("k%d" % k, v))
            latest["k%d" % k] = (cur.fetchone()[0], v)
        cur.execute("SELECT kafka.flush_markers()")
        time.sleep(0.01)
    cur.execute("SELECT \"offset\" FROM kafka.produce('sb_compact', 'kz', 'active', partition => 0)")
    cur.execute("SELECT kafka.flush_markers()")
    wait_replay(prim, stby)
    scur = stby.cursor()
    scur.execute(COMPACT_Q[0])
    before = scur.fetchall()
    cur.execute("SELECT cleaned, segments_before, segments_after FROM kafka.run_log_compaction('sb_compact')")
    cleaned, nbefore, nafter = cur.fetchone()
    if not cleaned:
        fail("compaction: sb_compact was not cleaned on the primary")
        return None
    wait_replay(prim, stby)
    got = {}
    for q in COMPACT_Q:
        cur.execute(q)
        a = cur.fetchall()
        scur.execute(q)
        b = scur.fetchall()
        got[q] = b
        if a != b:
            fail("compaction: the standby reads %r where the primary reads %r (%s)" % (b[:6], a[:6], q[:60]))
    rows = {o: (k, v) for (o, k, v) in got[COMPACT_Q[0]]}
    for k, (o, v) in latest.items():
        if rows.get(o) != (k, v):
            fail("compaction: on the standby key %s's latest value %r at %d reads back as %r" % (k, v, o, rows.get(o)))
    if len(got[COMPACT_Q[0]]) >= len(before):
        fail("compaction: the standby still reads %d records (%d before the clean)" % (len(got[COMPACT_Q[0]]), len(before)))
    info("compaction: the primary rewrote %d segments into %d; the standby replayed it and reads %d records (%d before), "
         "the same batches and segments" % (nbefore, nafter, len(got[COMPACT_Q[0]]), len(before)))
    return got


def run():
    root = kafkapg.make_tmp("standby")
    pdata, sdata = os.path.join(root, "primary"), os.path.join(root, "standby")
    (pport, sport), (kp1, kp2) = kafkapg.free_ports(2, 2, "57432", "39092")
    # Every generic WAL record carries its pages' images as well, and the
    # standby compares each page it replays with them (PostgreSQL's
    # wal_consistency_checking): a record that would replay to another page
    # than the primary's stops the standby (FATAL "inconsistent page found").
    # The store builds its generic records' deltas itself (segment.c).
    env = {"KP_KAFKA_DB": DB, "KP_EXTRA_CONF": "wal_consistency_checking = 'generic'"}
    started = []
    try:
        kafkapg.pgcluster("init", pdata, pport, kp1, env=env)
        kafkapg.pgcluster("start", pdata)
        started.append(pdata)
        kafkapg.pgcluster("set-kafka-port", pdata, pport, kp1)
        kafkapg.pgcluster("create-extension", pport, DB)
        prim = kafkapg.connect(pport, DB)
        cur = prim.cursor()
        global SEGMENT_BYTES
        for topic, (parts, cfg) in TOPICS.items():
            cfg = {k: v for k, v in cfg.items() if k != "segment.bytes"}
            SEGMENT_BYTES = kafkapg.create_topic_small_segments(prim, topic, parts, cfg, want=SEGMENT_BYTES)
        seg_kb = SEGMENT_BYTES // 1024
        prod = Producer(prim)
        prod.load(4)
        info("primary on port %d: %d records acknowledged before the base backup" % (pport, len(prod.acked)))

        t0 = time.time()
        kafkapg.pgcluster("basebackup", pport, sdata)
        cur.execute("SELECT name FROM pg_settings WHERE name LIKE 'kafka.%%' AND name ~ 'port' AND vartype = 'integer' "
                    "ORDER BY name = 'kafka.port' DESC, name LIMIT 1")
        row = cur.fetchone()
        kafkapg.pgcluster("write-conf", sdata, sport, kp2, root,
                          env=dict(env, KP_KAFKA_PORT_GUC=row[0]) if row else env)
        kafkapg.pgcluster("start", sdata)
        started.append(sdata)
        info("standby on port %d from pg_basebackup -R in %.1fs" % (sport, time.time() - t0))
        stby = kafkapg.connect(sport, DB)
        if not lsn(stby, "SELECT pg_is_in_recovery()"):
            fail("the standby is not in recovery")

        prod.load(12, bulk_kb=seg_kb * 5 // 2)
        for topic in TOPICS:  # rolled-back transactions in every topic, whatever the dice said
            prod.txn(topic, 2, 300, commit=False)
        info("primary: %d records acknowledged in all, %d rolled back" % (len(prod.acked), len(prod.aborted)))

        # compare, retrying while the primary still changes (e.g. markers being written)
        for attempt in range(1, 6):
            before = snapshot(prim)
            target, dt = wait_replay(prim, stby)
            on_standby = snapshot(stby)
            after = snapshot(prim)
            if before == after:
                break
            info("primary changed while comparing (attempt %d); again" % attempt)
            time.sleep(1)
        info("standby replayed to %s in %.1fs" % (target, dt))
        n = check_log(after, prod, "primary")
        bad = diff(after, on_standby, "primary vs standby")
        check_log(on_standby, prod, "standby")

        # The standby hides rolled-back records by the aborted-transaction
        # index it replayed (issue 8), not by the commit log: read as if the
        # commit log had forgotten every transaction, once every marker is
        # written and replayed, the standby returns the same.
        prim.cursor().execute("SELECT kafka.flush_markers()")
        wait_replay(prim, stby)
        scur = stby.cursor()
        scur.execute("SET kafka.debug_past_commit_log = on")
        past = snapshot(stby)
        scur.execute("RESET kafka.debug_past_commit_log")
        check_log(past, prod, "standby, past the commit log")
        if not diff(snapshot(stby), past, "standby: commit log vs aborted-transaction index"):
            info("standby past the commit log: the index hides all %d rolled-back records" % len(prod.aborted))
        segs = {(k[0], k[1]): v[3] for k, v in after.items() if k[2] == "status" and v}
        info("compared %d records in %d partitions: %s; segments per partition: %s"
             % (n, len(segs), "identical" if not bad else "%d differences" % bad,
                ", ".join("%s/%d=%s" % (k[0], k[1], v) for k, v in sorted(segs.items()))))
        for topic in TOPICS:
            raw = sum(len(a["v"]) + len(a["k"]) for a in prod.acked if a["topic"] == topic)
            stored = sum((after[(topic, p, "status")] or [0, 0, 0])[2] or 0 for p in range(TOPICS[topic][0]))
            info("%s: %d bytes of keys and values stored in %d bytes (%.2f)" % (topic, raw, stored, stored / max(raw, 1)))
        plain = [segs.get(("sb_plain", p)) or 0 for p in range(TOPICS["sb_plain"][0])]
        if min(plain) < 3:
            fail("sb_plain segments did not roll (segment_count %s with segment.bytes %d after 2.5 segments' worth each)"
                 % (plain, SEGMENT_BYTES))

        retained = check_retention(prim, stby)
        compacted = check_compaction(prim, stby)

        # a standby refuses writes, cleanly: 25006 read_only_sql_transaction naming the function,
        # as INSERT there (before, kafka.produce and kafka.share_acquire failed with XX000 "cannot
        # assign TransactionIds during recovery", the cleaner's functions with 55000 on a lock)
        refused = 0
        for what, q in (("kafka.produce()", "SELECT * FROM kafka.produce('sb_plain', 'k'::bytea, 'on standby'::bytea)"),
                        ("kafka.produce_batch()", "SELECT * FROM kafka.produce_batch('sb_plain', NULL::bytea[], ARRAY['x']::bytea[])"),
                        ("kafka.produce_agg()", "SELECT count(*) FROM (SELECT kafka.produce_agg('sb_plain', 'k'::bytea, 'v'::bytea)) x"),
                        ("kafka.delete_records()", "SELECT kafka.delete_records('sb_retain', 0, 1)"),
                        ("kafka.share_acquire()", "SELECT * FROM kafka.share_acquire('sb_share', 'sb_plain')"),
                        ("kafka.consume()", "SELECT * FROM kafka.consume('sb_group', 'sb_plain')"),
                        ("kafka.create_topic()", "SELECT kafka.create_topic('sb_new', 1)"),
                        ("kafka.run_log_cleaner()", "SELECT * FROM kafka.run_log_cleaner()"),
                        ("kafka.run_log_compaction()", "SELECT * FROM kafka.run_log_compaction()"),
                        ("kafka.flush_markers()", "SELECT kafka.flush_markers()")):
            try:
                stby.cursor().execute(q)
                fail("%s on the standby succeeded" % what)
            except psycopg2.Error as e:
                msg = str(e).strip().splitlines()[0]
                if e.pgcode == "25006" and ("cannot execute %s during recovery" % what) in msg:
                    refused += 1
                else:
                    fail("%s on the standby: SQLSTATE %s, %s (want 25006 read_only_sql_transaction, "
                         "\"cannot execute %s during recovery\")" % (what, e.pgcode, msg, what))
        info("%d writing functions on the standby refused with 25006 read_only_sql_transaction" % refused)

        # failover
        prim.close()
        kafkapg.pgcluster("stop", pdata, "immediate")
        started.remove(pdata)
        t0 = time.time()
        kafkapg.pgcluster("promote", sdata)
        while lsn(stby, "SELECT pg_is_in_recovery()"):
            if time.time() - t0 > 60:
                raise RuntimeError("standby still in recovery 60s after promote")
            time.sleep(0.2)
        info("standby promoted in %.1fs" % (time.time() - t0))
        old_end = {(k[0], k[1]): v[1] for k, v in on_standby.items() if k[2] == "status" and v}
        top = {}
        for a in prod.acked:
            top[(a["topic"], a["p"])] = max(top.get((a["topic"], a["p"]), -1), a["o"])
        prod2 = Producer(stby)
        prod2.header_sql, prod2.header_fields = prod.header_sql, getattr(prod, "header_fields", None)
        prod2.n = prod.n
        first_new = {}
        for topic, (parts, _) in TOPICS.items():
            for p in range(parts):
                try:
                    rec = prod2.single(topic, 500, partition=p)
                except psycopg2.Error as e:
                    fail("produce to %s/%d on the promoted standby failed: %s" % (topic, p, str(e).strip()))
                    continue
                first_new[(topic, p)] = rec["o"]
                floor = max(old_end.get((topic, p)) or 0, top.get((topic, p), -1) + 1)
                if rec["o"] < floor:
                    fail("promoted: first new offset in %s/%d is %d, below %d (old log end / acknowledged)"
                         % (topic, p, rec["o"], floor))
        prod2.load(6, bulk_kb=seg_kb * 5 // 4)
        prod2.acked = prod.acked + prod2.acked
        prod2.aborted |= prod.aborted
        # new records become visible to read_committed (markers written on the new primary)
        deadline = time.time() + 30
        while True:
            final = snapshot(stby)
            committed = sum(len(v) for k, v in final.items() if k[2] == "read_committed")
            if committed >= len(prod2.acked) or time.time() > deadline:
                break
            time.sleep(0.5)
        n = check_log(final, prod2, "promoted")
        if retained is not None:
            cur2 = stby.cursor()
            cur2.execute("SELECT log_start_offset FROM kafka.partition_status WHERE topic = 'sb_retain'")
            got = cur2.fetchone()[0]
            if got != retained:
                fail("promoted: sb_retain's log start is %s, the primary had moved it to %d" % (got, retained))
            else:
                info("promoted: sb_retain's log start is still %d" % got)
        if compacted is not None:
            cur2 = stby.cursor()
            for q in COMPACT_Q:
                cur2.execute(q)
                if cur2.fetchall() != compacted[q]:
                    fail("promoted: sb_compact reads differently after promotion (%s)" % q[:60])
            # the promoted standby cleans with the directory it replayed
            cur2.execute("SELECT \"offset\" FROM kafka.produce('sb_compact', 'k0', 'after promotion', partition => 0)")
            time.sleep(0.01)
            cur2.execute("SELECT \"offset\" FROM kafka.produce('sb_compact', 'kz', 'newest', partition => 0)")
            cur2.execute("SELECT kafka.flush_markers()")
            cur2.execute("SELECT kafka.alter_topic_config('sb_compact', '{\"min.cleanable.dirty.ratio\": \"0.01\"}')")
            cur2.execute("SELECT cleaned FROM kafka.run_log_compaction('sb_compact')")
            cur2.execute(COMPACT_Q[0])
            vals = [r for r in cur2.fetchall() if r[1] == "k0"]
            if vals != [r for r in vals if r[2] == "after promotion"] or not vals:
                fail("promoted: a clean on the promoted standby left k0 as %r" % vals)
            else:
                info("promoted: a clean on the promoted standby keeps k0's newest value only")
        segs2 = {(k[0], k[1]): v[3] for k, v in final.items() if k[2] == "status" and v}
        rolled = [k for k in segs2 if segs2[k] and segs.get(k) and segs2[k] > segs[k]]
        info("promoted: %d records readable, %d acknowledged in all; partitions that rolled a segment after promotion: %d"
             % (n, len(prod2.acked), len(rolled)))
        if not rolled:
            fail("no segment rolled on the promoted standby")
        stby.close()
    finally:
        kafkapg.stop_clusters(started)
        for d in (pdata, sdata):
            log, problems = kafkapg.log_problems(d)
            for line in problems.splitlines()[:20]:
                fail("%s log: %s" % (os.path.basename(d), line))
            if os.path.exists(log):
                with open(log, errors="replace") as f:
                    for line in f:
                        if "inconsistent page found" in line:
                            fail("%s log: %s" % (os.path.basename(d), line.strip()))
            if failures or os.environ.get("KP_KEEP_TMP") == "1":
                print("--- %s" % log)
                kafkapg.tail(log, 40)
        if os.environ.get("KP_KEEP_TMP") != "1":
            shutil.rmtree(root, ignore_errors=True)


def main():
    signal.signal(signal.SIGTERM, lambda *a: sys.exit("standby test: terminated (timeout?)"))
    try:
        run()
    except subprocess.CalledProcessError as e:
        fail("harness step failed: %s\n%s%s" % (" ".join(e.cmd), e.stdout or "", e.stderr or ""))
    except psycopg2.Error as e:
        fail("SQL error: %s" % str(e).strip())
    except RuntimeError as e:
        fail(str(e))
    if failures:
        print("\nstandby test: FAILED (%d problems)" % len(failures))
        for f in failures[:40]:
            print("  - " + f)
        return 1
    print("\nstandby test: PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
