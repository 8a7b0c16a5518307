#!/usr/bin/python3
"""test/recovery/damaged_page.py: a damaged page in a segment is a per-partition
KAFKA_STORAGE_ERROR on the wire, not a closed connection, and what comes before it is served.

A segment page whose header PostgreSQL cannot verify (a disk or file-system fault) raises "invalid
page in block N" (SQLSTATE XX001) from the read.  A Fetch or ShareFetch reading it closed its
connection: the other partitions of the request were not answered, nor the records before the
page.  Now the request runs again, each partition read in a subtransaction (dispatch.c,
storage_guard).

1. A cluster of its own; topic 'dmg' of 2 partitions: 3,000 records of ~1 KB in partition 0 (one
   batch each, ~380 pages), 100 small ones in partition 1.  The server stopped, bytes 12-17 (the
   page header's pd_lower, pd_upper, pd_special) of block 100 of partition 0's segment are
   overwritten, the server started (its shared buffers empty, so reads go to the file).
2. Fetch v11 of both partitions from offset 0 (1 MiB each, more than the bytes up to block 100):
   the connection stays open; partition 1's 100 records; partition 0's records from 0 up to the
   last batch before the damaged page, without an error (offsets 0..L, L+1 between 400 and 2,900).
   The same at read_committed.
3. Fetch of partition 0 from L+1: KAFKA_STORAGE_ERROR (56), no records; partition 1 in the same
   request served.  Fetch from L+1+40 (five pages on): records, and from there on to 2,999.  In a
   fetch session (KIP-227): the full Fetch creating it gets 0..L; its incremental Fetch moving
   partition 0 to L+1 gets 56, and the next one is answered too (the epoch stepped once).
4. The server log: a WARNING naming the partition and the invalid page, at most one a minute per
   listener worker; no "Fetch ... failed" line (no request failed).
5. librdkafka (confluent_kafka), both partitions assigned at 0: all 100 of partition 1, and of
   partition 0 exactly offsets 0..L.  A share group (ShareFetch v1, 500 records a fetch): the first
   500 acquired; the next ShareFetch, acknowledging them, reaches the page: 56 for the partition,
   nothing acquired, the connection kept, the acknowledgements applied (start offset 500); the
   one after it is answered too (the share session's epoch stepped once, not twice); a WARNING
   naming the group.
6. SQL: kafka.fetch of partition 0 from 0 fails with SQLSTATE XX001 naming the page, as a table
   read would; from L+1+40 it reads; kafka.consume fails with XX001; kafka.share_acquire gets up to 500
   records, then XX001 (the share acquirer's error, raised with its SQLSTATE; it was XX000).  A
   produce to partition 0 appends at 3,001 (after the first transaction's marker) and is fetched.
7. No kafka_pg worker restarted (pids unchanged), no PANIC or crash in the log.
8. zero_damaged_pages = on in the server's settings (ALTER SYSTEM, reload): a Fetch from L+3 (a
   batch inside the damaged page) still answers 56 (the workers keep the setting off), and SQL, the
   setting reset, still finds the page invalid (XX001): no worker zeroed it in shared buffers.

Last line: "N passed, M failed".
"""

import os
import re
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "wire"))
import kafkapg  # noqa: E402
import psycopg2  # noqa: E402

sys.argv[1:] = ["127.0.0.1:0"]  # conformance.py reads HOST:PORT at import; set in run()
import conformance as kc  # noqa: E402
import share_wake as sw  # noqa: E402  (reads HOST:PORT at import too; set in run())
import fetch_session as fs  # noqa: E402  (uses conformance's HOST:PORT)
from kafka.record.default_records import DefaultRecordBatch  # noqa: E402

TOPIC = "dmg"
RECORDS = 3000
BLOCK = 100
tap = kafkapg.Tap()
check = tap.check


def offsets_of(data):
    """The offsets of the data records in a records section (not the commit markers that SQL
    produce writes)."""
    out = []
    for raw in kc.batches(data):
        b = DefaultRecordBatch(raw)
        if not b.is_control_batch:
            out += [rec.offset for rec in b]
    return out


def fetch(c, listing, isolation=0):
    """Fetch v11 of listing [(partition, offset)]: {partition: (error, offsets)}, None if closed."""
    r = c.call(1, 11, kc.fetch_listing_body([(TOPIC, listing)], 0, isolation=isolation))
    if r is None:
        return None
    return {p: (err, offsets_of(recs)) for (t, p), (err, recs) in kc.read_fetch_listing(r).items()}


def read_to_end(c, offset, until):
    """Fetch partition 0 from offset on: (the offsets read until `until` or an error, the error)."""
    got = []
    while offset < until:
        f = fetch(c, [(0, offset)])
        if f is None or f[0][0] != 0 or not f[0][1]:
            return got, None if f is None else f[0][0]
        got += f[0][1]
        offset = f[0][1][-1] + 1
    return got, 0


def worker_pids(port):
    conn = kafkapg.connect(port)
    cur = conn.cursor()
    cur.execute("SELECT backend_type, pid FROM pg_stat_activity WHERE backend_type LIKE 'kafka_pg %' "
                "ORDER BY 1")
    rows = cur.fetchall()
    conn.close()
    return rows


def damage(cluster, path):
    """Overwrite bytes 12-17 of block BLOCK of the file (the server stopped)."""
    kafkapg.pgcluster("stop", cluster.data)
    with open(path, "r+b") as f:
        f.seek(BLOCK * 8192 + 12)
        f.write(b"\xff" * 6)
    kafkapg.pgcluster("start", cluster.data)
    kafkapg.pgcluster("wait-ready", cluster.port, 60)
    kafkapg.pgcluster("wait-kafka", cluster.kport, 60)


def consume_librdkafka(port, want):
    """A confluent_kafka consumer assigned both partitions at 0, until it has `want` records or 30 s
    passed: {partition: [offsets]}."""
    from confluent_kafka import Consumer, TopicPartition
    cons = Consumer({"bootstrap.servers": "127.0.0.1:%d" % port, "group.id": "dmg-rdk",
                     "enable.auto.commit": False, "fetch.error.backoff.ms": 100})
    cons.assign([TopicPartition(TOPIC, 0, 0), TopicPartition(TOPIC, 1, 0)])
    got = {0: [], 1: []}
    deadline = time.time() + 30
    while time.time() < deadline and len(got[0]) + len(got[1]) < want:
        for m in cons.consume(500, 0.5):
            if m.error() is None:
                got[m.partition()].append(m.offset())
    # a little longer: nothing more may come from partition 0
    end = time.time() + 2
    while time.time() < end:
        for m in cons.consume(500, 0.2):
            if m.error() is None:
                got[m.partition()].append(m.offset())
    cons.close()
    return got


def session_checks(c, last):
    """KIP-227: the request that fails and runs again steps its session's epoch once."""
    r0 = fs.fetch_v11(c, 0, 0, [(TOPIC, [(0, 0), (1, 0)])])
    sid = r0[1] if r0 else 0
    p0 = r0[2].get((TOPIC, 0)) if r0 else None
    check("a full Fetch creating a fetch session (epoch 0): a session, partition 0's batches before "
          "the page", r0 is not None and r0[0] == 0 and sid != 0 and p0 is not None and p0[0] == 0
          and p0[2] and p0[2][-1] == last, "(%r)" % ((r0[0], sid, p0 and (p0[0], len(p0[2]))) if r0 else None,))
    r1 = fs.fetch_v11(c, sid, 1, [(TOPIC, [(0, last + 1)])])
    check("its incremental Fetch (epoch 1) moving partition 0 to L+1: KAFKA_STORAGE_ERROR for it",
          r1 is not None and r1[0] == 0 and r1[2].get((TOPIC, 0), (None,))[0] == 56,
          "(%r)" % ((r1[0], r1[2].get((TOPIC, 0))) if r1 else None,))
    r2 = fs.fetch_v11(c, sid, 2, [])
    check("and the next (epoch 2) is answered, not INVALID_FETCH_SESSION_EPOCH: the run that failed "
          "and the one that answered stepped the epoch once", r2 is not None and r2[0] == 0
          and r2[2].get((TOPIC, 0), (None,))[0] == 56,
          "(%r)" % ((r2[0], r2[2].get((TOPIC, 0))) if r2 else None,))


def share_checks(cluster):
    """A share group reading partition 0 from the start, 500 records a ShareFetch."""
    sw.HOST, sw.PORT = "127.0.0.1", cluster.kport
    conn = kafkapg.connect(cluster.port)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SELECT topic_uuid::text FROM kafka.topics WHERE name = %s", (TOPIC,))
    tid = uuid.UUID(cur.fetchone()[0]).bytes
    c = sw.Conn()
    err = sw.set_group_configs(c, "dmg-share", {"share.auto.offset.reset": "earliest"})
    c.close()
    m = sw.Member("dmg-share", TOPIC, tid)
    first = m.fetch(0) if err == 0 and m.wait_assigned() else "never assigned (config error %r)" % err
    check("ShareFetch: the first 500 records (before the damaged page) are acquired",
          isinstance(first, tuple) and first[0] == 0 and sorted(first[1]) == list(range(500))
          and first[3] == 0, "(%r)" % (first if not isinstance(first, tuple) else first[:1] + first[2:],))
    sock = m.c.s
    second = m.fetch(0, acks=[(0, 499, 1)])
    cur.execute("SELECT start_offset FROM kafka.share_group_status WHERE group_id = 'dmg-share' "
                "AND partition = 0")
    spso = cur.fetchone()
    check("the next ShareFetch, acknowledging them, reaches the damaged page: KAFKA_STORAGE_ERROR (56) "
          "for the partition, nothing acquired, the connection kept, the acknowledgements applied "
          "(start offset 500)", second is not None and second[0] == 0 and second[1] == {} and second[2] == 0
          and second[3] == 56 and m.c.s is sock and spso == (500,), "(%r, start %r)" % (second, spso))
    third = m.fetch(0)
    check("and the one after it (the share session's epoch stepped once): 56 again",
          third is not None and third[0] == 0 and third[3] == 56 and m.c.s is sock, "(%r)" % (third,))
    m.close()
    conn.close()


def sql_error(cur, query, args):
    """The error of query as "SQLSTATE message", or "no error: <row>"."""
    try:
        cur.execute(query, args)
        return "no error: %r" % (cur.fetchone(),)
    except psycopg2.Error as e:
        return "%s %s" % (e.pgcode, e.pgerror)


def log_counts(log):
    with open(log, errors="replace") as f:
        lines = f.readlines()
    warned = sum(1 for line in lines if "WARNING:" in line and "invalid page in block %d" % BLOCK in line
                 and "dmg-0" in line and "ShareFetch" not in line)
    share_warned = sum(1 for line in lines if "WARNING:" in line and "invalid page in block %d" % BLOCK in line
                       and "ShareFetch of group \"dmg-share\" cannot read dmg-0" in line)
    failed = sum(1 for line in lines if re.search(r"Fetch v\d+ request .* failed", line))
    workers = sum(1 for line in lines if "serving Kafka clients on" in line)
    return warned, share_warned, failed, workers


def zero_damaged_pages_checks(cluster, last):
    """zero_damaged_pages = on in postgresql.auto.conf (a DBA reading past the page in SQL): the
    workers keep it off, so a Fetch from L+3, a batch that starts inside the damaged page, still
    answers KAFKA_STORAGE_ERROR, and the page is not zeroed in shared buffers, where every reader
    took it for the end of the data (until 2026-12-07 that Fetch was answered with no records and
    no error)."""
    conn = kafkapg.connect(cluster.port)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("ALTER SYSTEM SET zero_damaged_pages = on")
    cur.execute("SELECT pg_reload_conf()")
    time.sleep(2)
    c = kc.Conn()
    f = fetch(c, [(0, last + 3)])
    c.close()
    cur.execute("ALTER SYSTEM RESET zero_damaged_pages")
    cur.execute("SELECT pg_reload_conf()")
    conn.close()
    time.sleep(2)
    check("zero_damaged_pages = on in the server's settings: a Fetch from L+3 (a batch inside the "
          "damaged page) still answers KAFKA_STORAGE_ERROR", f is not None and f[0] == (56, []),
          "(%r)" % (f,))
    conn = kafkapg.connect(cluster.port)
    conn.autocommit = True
    sql_err = sql_error(conn.cursor(), "SELECT count(*) FROM kafka.fetch(%s, 0, %s, 100)", (TOPIC, last + 3))
    conn.close()
    check("... and the page was not zeroed in shared buffers: SQL still finds it invalid (XX001, "
          "\"invalid page in block %d\")" % BLOCK,
          sql_err.startswith("XX001") and "invalid page in block %d" % BLOCK in sql_err, "(%s)" % sql_err)


def run():
    cluster = kafkapg.ScratchCluster("damaged_page", 58672, 49332)
    try:
        cluster.start("postgres", {"KP_KAFKA_DB": "postgres"})
        kafkapg.pgcluster("wait-kafka", cluster.kport)
        conn = kafkapg.connect(cluster.port)
        conn.autocommit = True
        cur = conn.cursor()
        cur.execute("SELECT kafka.create_topic(%s, 2)", (TOPIC,))
        cur.execute("SELECT count(*) FROM (SELECT kafka.produce(%s, NULL::bytea, "
                    "convert_to(lpad(g::text, 1000, 'x'), 'UTF8'), partition => 0) "
                    "FROM generate_series(0, %s) g) s", (TOPIC, RECORDS - 1))
        cur.execute("SELECT count(*) FROM (SELECT kafka.produce(%s, NULL::bytea, "
                    "convert_to('small ' || g, 'UTF8'), partition => 1) FROM generate_series(0, 99) g) s",
                    (TOPIC,))
        # the commit markers now, not by the resolver within a second: a read_committed Fetch
        # right after the restart would otherwise wait for one still to be written
        cur.execute("SELECT kafka.flush_markers()")
        cur.execute("SELECT s.relfilenode, d.oid, s.size_bytes FROM kafka.segments s, pg_database d "
                    "WHERE s.topic = %s AND s.partition = 0 AND d.datname = current_database()", (TOPIC,))
        segs = cur.fetchall()
        conn.close()
        check("partition 0 is one segment of more than %d pages" % (BLOCK + 100),
              len(segs) == 1 and segs[0][2] > (BLOCK + 100) * 8192, "(%r)" % (segs,))
        path = os.path.join(cluster.data, "base", str(segs[0][1]), str(segs[0][0]))
        damage(cluster, path)
        pids = worker_pids(cluster.port)

        kc.HOST, kc.PORT = "127.0.0.1", cluster.kport
        c = kc.Conn()
        sock = c.s    # kc.Conn reconnects after a close: the same socket means none happened
        f = fetch(c, [(0, 0), (1, 0)])
        ok = f is not None and c.s is sock
        check("a Fetch of both partitions from 0 is answered on the same connection", ok, "(%r)" % (f,))
        p0 = f[0] if ok else (None, [])
        p1 = f[1] if ok else (None, [])
        last = p0[1][-1] if p0[1] else -1
        check("partition 1: its 100 records, no error", p1 == (0, list(range(100))), "(%r)" % (p1[:1],))
        check("partition 0: the records before the damaged page (0..L, L+1 between 400 and 2,900), "
              "no error", p0[0] == 0 and p0[1] == list(range(last + 1)) and 400 <= last + 1 <= 2900,
              "(error %r, %d records, last %r)" % (p0[0], len(p0[1]), last))
        f = fetch(c, [(0, 0), (1, 0)], isolation=1)
        check("the same at read_committed", f is not None and f[0] == (0, list(range(last + 1)))
              and f[1] == (0, list(range(100))) and c.s is sock,
              "(%r)" % ({p: (e, len(o)) for p, (e, o) in f.items()} if f else None,))
        f = fetch(c, [(0, last + 1), (1, 0)])
        check("from L+1: partition 0 answers KAFKA_STORAGE_ERROR (56) and no records, partition 1 "
              "its records", f is not None and f[0] == (56, []) and f[1] == (0, list(range(100)))
              and c.s is sock,
              "(%r)" % ({p: (e, o[:3]) for p, (e, o) in f.items()} if f else None,))
        f = fetch(c, [(0, last + 1)], isolation=1)
        check("the same at read_committed", f is not None and f[0] == (56, []) and c.s is sock, "(%r)" % (f,))
        got, err = read_to_end(c, last + 41, RECORDS)
        check("from L+41 (five pages on) partition 0 is read to its end",
              err == 0 and got == list(range(last + 41, RECORDS)) and c.s is sock,
              "(error %r, %d records)" % (err, len(got)))
        r = c.call(18, 0, b"")
        check("the connection stays open: ApiVersions on it is answered", r is not None and c.s is sock)
        session_checks(c, last)
        c.close()

        got = consume_librdkafka(cluster.kport, last + 1 + 100)
        check("librdkafka, both partitions assigned at 0: partition 1's 100 records and partition 0's "
              "0..L, nothing past them", got[1] == list(range(100)) and got[0] == list(range(last + 1)),
              "(partition 0: %d, first %r, last %r; partition 1: %d)"
              % (len(got[0]), got[0][:1], got[0][-1:], len(got[1])))

        share_checks(cluster)

        conn = kafkapg.connect(cluster.port)
        conn.autocommit = True
        cur = conn.cursor()
        sql_err = sql_error(cur, "SELECT count(*) FROM kafka.fetch(%s, 0, 0, 3000)", (TOPIC,))
        check("SQL kafka.fetch of partition 0 from 0 fails with XX001 naming the page",
              sql_err.startswith("XX001") and "invalid page in block %d" % BLOCK in sql_err, "(%s)" % sql_err)
        cur.execute("SELECT min(\"offset\"), count(*) FROM kafka.fetch(%s, 0, %s, 3000)", (TOPIC, last + 41))
        row = cur.fetchone()
        check("and from L+41 it reads", row == (last + 41, RECORDS - last - 41), "(%r)" % (row,))
        sql_err = sql_error(cur, "SELECT count(*) FROM kafka.consume('dmg-sql', %s, 5000)", (TOPIC,))
        check("kafka.consume fails with XX001 too", sql_err.startswith("XX001"), "(%s)" % sql_err)
        cur.execute("INSERT INTO kafka.group_configs VALUES ('dmg-sql-share', 'share.auto.offset.reset', "
                    "'earliest')")
        cur.execute("SELECT count(*) FROM kafka.share_acquire('dmg-sql-share', %s, 500)", (TOPIC,))
        n = cur.fetchone()[0]
        sql_err = sql_error(cur, "SELECT count(*) FROM kafka.share_acquire('dmg-sql-share', %s, 2000)", (TOPIC,))
        check("kafka.share_acquire: records (up to 500, of both partitions), then XX001 naming the page "
              "once it reaches it (the share acquirer's error, with its SQLSTATE)",
              0 < n <= 500 and sql_err.startswith("XX001")
              and "invalid page in block %d" % BLOCK in sql_err, "(%r, %s)" % (n, sql_err))
        cur.execute("SELECT kafka.produce(%s, NULL::bytea, 'after'::bytea, partition => 0)", (TOPIC,))
        conn.close()
        c = kc.Conn()
        f = fetch(c, [(0, RECORDS)])
        check("a record produced to partition 0 afterwards is at offset 3,001 (after the first "
              "transaction's marker) and fetched", f is not None and f[0] == (0, [RECORDS + 1]), "(%r)" % (f,))
        c.close()

        warned, share_warned, failed, workers = log_counts(cluster.log())
        check("the server log has a WARNING naming dmg-0 and the invalid page, at most one a minute per "
              "listener worker", 1 <= warned <= workers, "(%d warnings, %d workers)" % (warned, workers))
        check("and one for the ShareFetch, naming the group", share_warned == 1, "(%d)" % share_warned)
        check("and no Fetch or ShareFetch request failed", failed == 0, "(%d)" % failed)
        check("no kafka_pg worker restarted", worker_pids(cluster.port) == pids)
        zero_damaged_pages_checks(cluster, last)
    finally:
        tap.cleanup(cluster)


if __name__ == "__main__":
    tap.main(run)
