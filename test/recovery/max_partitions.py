#!/usr/bin/python3
"""test/recovery/max_partitions.py: a partition with no room for its state in shared memory is an
error code on the wire, not a closed connection.

kafka.max_partitions sizes the shared map of partition states (src/store/partition.c) for the
whole server, while the topics of each database are counted against it on their own
(src/catalog/topics.c: a database cannot create more).  So several databases with the extension
can, together, use more partitions than the map holds; the map then refuses new entries, and a
SQL call touching such a partition fails with 53200.  A wire request touching one answered nothing
and closed its connection (the ERROR reached the listener's dispatcher).  Now:

1. A cluster with kafka.max_partitions = 16, the listener on database postgres; databases mp1,
   mp2... each get a 16-partition topic and a record in each partition (SQL) until a produce
   fails with 53200: the map is full (the map takes what shared memory has to spare beyond the
   16, a few hundred entries).
2. A 4-partition topic created on the wire in postgres (creation needs no entry): Produce v8 to
   each partition answers KAFKA_STORAGE_ERROR (56) with a message naming kafka.max_partitions;
   Fetch v11, ListOffsets v2, DeleteRecords v1, OffsetForLeaderEpoch v3, DescribeProducers v0
   and AlterShareGroupOffsets v0 answer 56 for it, DescribeLogDirs v1 does not list it; the
   connection stays open (an ApiVersions on it is answered); a share group member's ShareFetch
   gets 56 for it too; the server log has a WARNING naming kafka.max_partitions, at most one a
   minute per listener worker (the share member's connection may be another worker's).
3. Retention, compaction and the SQL views, for a partition that had records and finds no room
   after a restart: in database mpx (not the listener's, whose partitions the resolver loads first
   thing after a restart), topics 'kept' (retention) and 'kcmp' (compacted) of 2 partitions, two
   segments in each, made before the map filled.  After a restart, partition 0 of each is used
   first, and the mp databases' partitions (and more such databases if needed) fill the map
   again.  Then in mpx: kafka.run_log_compaction('kcmp') and kafka.run_log_cleaner() clean
   partition 0 of each and skip partition 1 (before, the ERROR of partition 1 aborted the whole
   call), kafka.partition_status shows partition 1 with NULL offsets and kafka.consumer_group_lag
   with a NULL lag (before, both an ERROR), kafka.log_cleaner_status and kafka.segments list it,
   and the server log has the cleaner's WARNING.
4. Once mp1's topic is deleted (its entries leave the map), the same Produce succeeds and Fetch
   returns the record: no restart needed.

Last line: "N passed, M failed".
"""

import os
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
from kwire import TAGS, i8, i16, i32, i64, array, carray, cstring, nbytes, string  # noqa: E402

TOPIC = "wired"
MAX_DATABASES = 80
tap = kafkapg.Tap()
check = tap.check


def produce(c, partition, value):
    """Produce v8, acks=1: (error code, error message) of the partition, None if closed."""
    body = (string(None) + i16(1) + i32(30000)
            + array([string(TOPIC) + array([i32(partition) + nbytes(kc.build_batch(0, [value]))])]))
    r = c.call(0, 8, body)
    if r is None:
        return None
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64(), r.i64(),
                                                          r.array(lambda: (r.i32(), r.string())),
                                                          r.string()))))
    p = res[0][1][0]
    return p[1], (p[6] or b"").decode()


def fetch(c, partition):
    """Fetch v11 from offset 0: (error code, records bytes) of the partition, None if closed."""
    r = c.call(1, 11, kc.fetch_listing_body([(TOPIC, [(partition, 0)])], 0))
    return None if r is None else kc.read_fetch_listing(r)[(TOPIC, partition)]


def list_latest(c, partition):
    """ListOffsets v2, latest: (error code, offset), None if closed."""
    r = c.call(2, 2, i32(-1) + i8(0) + array([string(TOPIC) + array([i32(partition) + i64(-1)])]))
    if r is None:
        return None
    r.i32()
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64()))))
    return res[0][1][0][1], res[0][1][0][3]


def offset_for_leader_epoch(c, partition):
    """OffsetForLeaderEpoch v3 of epoch 0: (error code, end offset), None if closed."""
    r = c.call(23, 3, i32(-1) + array([string(TOPIC) + array([i32(partition) + i32(-1) + i32(0)])]))
    if r is None:
        return None
    r.i32()
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i16(), r.i32(), r.i32(), r.i64()))))
    return res[0][1][0][0], res[0][1][0][3]


def describe_producers(c, partition):
    """DescribeProducers v0 (flexible): (error code, error message), None if closed."""
    r = c.call_flex(61, 0, carray([cstring(TOPIC) + carray([i32(partition)]) + TAGS]) + TAGS)
    if r is None:
        return None
    r.i32()

    def part():
        idx, err, msg = r.i32(), r.i16(), r.cstring()
        r.carray(lambda: (r.i64(), r.i32(), r.i32(), r.i64(), r.i32(), r.i64(), r.tags()))
        r.tags()
        return idx, err, (msg or b"").decode()
    res = r.carray(lambda: (r.cstring(), r.carray(part), r.tags()))
    return res[0][1][0][1:]


def log_dir_partitions(c):
    """DescribeLogDirs v1 of every topic: the partitions of TOPIC listed, None if closed."""
    r = c.call(35, 1, array(None))
    if r is None:
        return None
    r.i32()
    dirs = r.array(lambda: (r.i16(), r.string(), r.array(lambda: (
        r.string(), r.array(lambda: (r.i32(), r.i64(), r.i64(), r.i8()))))))
    return sorted(p[0] for d in dirs for t in d[2] if t[0] in (TOPIC, TOPIC.encode()) for p in t[1])


def alter_share_start(c, group, partition):
    """AlterShareGroupOffsets v0 (flexible) to offset 0: (error code, error message) of the
    partition, None if closed."""
    r = c.call_flex(91, 0, cstring(group) + carray([cstring(TOPIC) + carray([i32(partition) + i64(0) + TAGS])
                                                   + TAGS]) + TAGS)
    if r is None:
        return None
    r.i32(), r.i16(), r.cstring()
    res = r.carray(lambda: (r.cstring(), r.uuid(), r.carray(lambda: (r.i32(), r.i16(), r.cstring(), r.tags())),
                            r.tags()))
    p = res[0][2][0]
    return p[1], (p[2] or b"").decode()


def api_versions_ok(c):
    r = c.call(18, 0, b"")
    return r is not None and r.i16() == 0


def fill_map(port, existing=0):
    """Databases mp1, mp2... with a 16-partition topic and a record in each partition until a
    produce fails (the first `existing` databases are there already): (databases used, SQLSTATE
    of the failure or None)."""
    for i in range(1, MAX_DATABASES + 1):
        db = "mp%d" % i
        if i > existing:
            kafkapg.pgcluster("create-extension", port, db)
        conn = kafkapg.connect(port, db)
        cur = conn.cursor()
        if i > existing:
            cur.execute("SELECT kafka.create_topic('t', 16)")
        try:
            cur.execute("SELECT count(*) FROM (SELECT kafka.produce('t', 'k', 'v', partition => p) "
                        "FROM generate_series(0, 15) p) s")
        except psycopg2.Error as e:
            conn.close()
            return i, e.pgcode
        conn.close()
    return MAX_DATABASES, None


def log_lines(log):
    with open(log, errors="replace") as f:
        return f.readlines()


def warnings_in(log):
    """(the listener's WARNINGs naming kafka.max_partitions, listener workers started) in the
    server log."""
    lines = log_lines(log)
    warned = [i for i, line in enumerate(lines)
              if "WARNING:" in line and "kafka.max_partitions (16)" in line]
    return (sum(1 for i in warned if i + 1 < len(lines) and "KAFKA_STORAGE_ERROR" in lines[i + 1]),
            sum(1 for line in lines if "serving Kafka clients on" in line))


def cleaner_log(log):
    """The log cleaner's WARNINGs for a partition without room."""
    lines = log_lines(log)
    return sum(1 for i, line in enumerate(lines) if "WARNING:" in line and "kafka.max_partitions (16)" in line
               and i + 1 < len(lines) and "log cleaner skips it" in lines[i + 1])


def two_segments(cur, topic, cleanup):
    """A 2-partition topic with three records of one key in each partition, segments rolled
    between them (segment.ms 100)."""
    cur.execute("SELECT kafka.create_topic(%s, 2, configs => %s::jsonb)",
                (topic, '{"segment.ms": "100", "cleanup.policy": "%s", "min.cleanable.dirty.ratio": "0.01"}'
                 % cleanup))
    for i, value in enumerate(("v1", "v2", "v3")):
        if i:
            time.sleep(0.3)
        cur.execute("SELECT kafka.produce(%s, 'k', %s, partition => p) FROM generate_series(0, 1) p",
                    (topic, value))


def sql_rows(cur, query):
    """The rows of query, or its error as "SQLSTATE message"."""
    try:
        cur.execute(query)
        return cur.fetchall()
    except psycopg2.Error as e:
        return "%s %s" % (e.pgcode, e.pgerror)


def run():
    cluster = kafkapg.ScratchCluster("max_partitions", 58632, 49292)
    try:
        cluster.start("postgres", {"KP_KAFKA_DB": "postgres",
                                   "KP_EXTRA_CONF": "kafka.max_partitions = 16"})
        kafkapg.pgcluster("wait-kafka", cluster.kport)
        kafkapg.pgcluster("create-extension", cluster.port, "mpx")
        pconn = kafkapg.connect(cluster.port, "mpx")
        pconn.autocommit = True
        two_segments(pconn.cursor(), "kept", "delete")
        two_segments(pconn.cursor(), "kcmp", "compact")
        pconn.cursor().execute("SELECT count(*) FROM kafka.consume('g', 'kept')")   # commits offsets
        pconn.close()
        ndb, state = fill_map(cluster.port)
        check("with kafka.max_partitions 16, databases of 16 partitions each fill the shared map: "
              "a SQL produce fails with 53200", state == "53200", "(%d databases, %r)" % (ndb, state))

        kc.HOST, kc.PORT = "127.0.0.1", cluster.kport
        c = kc.Conn()
        sock = c.s    # kc.Conn reconnects after a close: the same socket means none happened
        err = kc.create_topic(c, TOPIC, partitions=4)
        check("a 4-partition topic is created on the wire in the listener's database", err == 0, "(%r)" % err)
        got = [produce(c, p, b"x") for p in range(4)]
        check("Produce to each of its partitions answers KAFKA_STORAGE_ERROR (56), naming "
              "kafka.max_partitions", all(g is not None and g[0] == 56 and "kafka.max_partitions" in g[1]
                                          for g in got), "(%r)" % got)
        f = fetch(c, 0)
        check("Fetch answers KAFKA_STORAGE_ERROR for the partition", f is not None and f[0] == 56, "(%r)" % (f,))
        lo = list_latest(c, 1)
        check("ListOffsets answers KAFKA_STORAGE_ERROR for the partition", lo is not None and lo[0] == 56,
              "(%r)" % (lo,))
        dr = kc.delete_records(c, TOPIC, 0)
        check("DeleteRecords answers KAFKA_STORAGE_ERROR for the partition", dr[0] == 56, "(%r)" % (dr,))
        ep = offset_for_leader_epoch(c, 2)
        check("OffsetForLeaderEpoch answers KAFKA_STORAGE_ERROR for the partition",
              ep is not None and ep[0] == 56, "(%r)" % (ep,))
        dp = describe_producers(c, 3)
        check("DescribeProducers answers KAFKA_STORAGE_ERROR for the partition, naming "
              "kafka.max_partitions", dp is not None and dp[0] == 56 and "kafka.max_partitions" in dp[1],
              "(%r)" % (dp,))
        ag = alter_share_start(c, "mp-share-admin", 1)
        check("AlterShareGroupOffsets answers KAFKA_STORAGE_ERROR for the partition, naming "
              "kafka.max_partitions", ag is not None and ag[0] == 56 and "kafka.max_partitions" in ag[1],
              "(%r)" % (ag,))
        ld = log_dir_partitions(c)
        check("DescribeLogDirs lists none of its partitions (no state to size them by)", ld == [],
              "(%r)" % (ld,))
        check("the connection stays open: ApiVersions on it is answered", api_versions_ok(c) and c.s is sock)
        sw.HOST, sw.PORT = "127.0.0.1", cluster.kport
        conn = kafkapg.connect(cluster.port)
        cur = conn.cursor()
        cur.execute("SELECT topic_uuid::text FROM kafka.topics WHERE name = %s", (TOPIC,))
        tid = uuid.UUID(cur.fetchone()[0]).bytes
        conn.close()
        m = sw.Member("mp-share", TOPIC, tid)
        res = m.fetch(0) if m.wait_assigned() else "never assigned"
        check("ShareFetch answers KAFKA_STORAGE_ERROR for the partition, the connection kept",
              isinstance(res, tuple) and res[0] == 0 and res[3] == 56
              and m.c.call(18, 0, b"", flexible=False) is not None, "(%r)" % (res,))
        m.close()
        n, workers = warnings_in(cluster.log())
        check("the server log has a WARNING naming kafka.max_partitions, one per listener worker that "
              "served such a request (at most one a minute each)", 1 <= n <= workers,
              "(%d warnings, %d workers)" % (n, workers))

        c.close()

        kafkapg.pgcluster("stop", cluster.data)
        kafkapg.pgcluster("start", cluster.data)
        kafkapg.pgcluster("wait-kafka", cluster.kport)
        pconn = kafkapg.connect(cluster.port, "mpx")
        pconn.autocommit = True
        pcur = pconn.cursor()
        pcur.execute("SELECT kafka.latest_offset('kept', 0), kafka.latest_offset('kcmp', 0)")
        ndb, state = fill_map(cluster.port, ndb)
        rows = sql_rows(pcur, "SELECT kafka.latest_offset('kept', 1)")
        check("after a restart the map fills again before partition 1 of the topics is used: "
              "it has no room (53200)", state == "53200" and str(rows).startswith("53200"),
              "(%r, %r)" % (state, rows))
        rows = sql_rows(pcur, "SELECT partition, cleaned FROM kafka.run_log_compaction('kcmp')")
        pcur.execute("SELECT value FROM kafka.fetch_text('kcmp', 0, 0, 10)")
        values = [r[0] for r in pcur.fetchall()]
        check("kafka.run_log_compaction(topic) compacts the partition with room (v1 goes; v3 is in the "
              "active segment) and skips the other", rows == [(0, True)] and values == ["v2", "v3"],
              "(%r, values %r)" % (rows, values))
        pcur.execute("SELECT kafka.alter_topic_config('kept', '{\"retention.ms\": \"1\"}')")
        rows = sql_rows(pcur, "SELECT topic, partition, segments_deleted > 0 FROM kafka.run_log_cleaner()")
        pcur.execute("SELECT kafka.earliest_offset('kept', 0)")
        start = pcur.fetchone()[0]
        check("kafka.run_log_cleaner() applies retention to the partition with room and skips the other",
              rows == [("kept", 0, True)] and start > 0, "(%r, log start %r)" % (rows, start))
        rows = sql_rows(pcur, "SELECT topic, partition, log_end_offset > 0, log_start_offset IS NULL "
                              "FROM kafka.partition_status ORDER BY 1, 2")
        check("kafka.partition_status shows the partitions without room with NULL offsets",
              rows == [("kcmp", 0, True, False), ("kcmp", 1, None, True), ("kept", 0, True, False),
                       ("kept", 1, None, True)], "(%r)" % (rows,))
        rows = sql_rows(pcur, "SELECT partition, lag IS NULL, log_end_offset IS NULL "
                              "FROM kafka.consumer_group_lag WHERE group_id = 'g' ORDER BY 1")
        check("kafka.consumer_group_lag shows their lag and log end offset as NULL",
              rows == [(0, False, False), (1, True, True)], "(%r)" % (rows,))
        rows = sql_rows(pcur, "SELECT topic, partition, count(*) FROM kafka.log_cleaner_status "
                              "JOIN kafka.segments USING (topic, partition) GROUP BY 1, 2 ORDER BY 1, 2")
        check("kafka.log_cleaner_status and kafka.segments list them",
              isinstance(rows, list) and [r[:2] for r in rows] == [("kcmp", 0), ("kcmp", 1), ("kept", 0),
                                                                   ("kept", 1)], "(%r)" % (rows,))
        check("the server log has the cleaner's WARNING for them", cleaner_log(cluster.log()) >= 1)
        pconn.close()

        conn = kafkapg.connect(cluster.port, "mp1")
        conn.cursor().execute("SELECT kafka.delete_topic('t')")
        conn.close()
        c = kc.Conn()
        got = produce(c, 0, b"after")
        check("once another database's topic is deleted, the same Produce succeeds (no restart)",
              got is not None and got[0] == 0, "(%r)" % (got,))
        deadline, f = time.time() + 10, None
        while time.time() < deadline:
            f = fetch(c, 0)
            if f is None or (f[0] == 0 and b"after" in f[1]):
                break
            time.sleep(0.2)
        check("and Fetch returns the record", f is not None and f[0] == 0 and b"after" in f[1], "(%r)" % (f,))
        c.close()
    finally:
        tap.cleanup(cluster)


if __name__ == "__main__":
    tap.main(run)
