#!/usr/bin/python3
"""test/recovery/delayed_drop.py: file.delete.delay.ms for retention and DeleteRecords.

Segments leave the log as soon as the log start passes them (DeleteRecords,
retention), but their files are dropped only file.delete.delay.ms later
(src/store/logstart.c), so that a reader that listed them a moment before
still reads them whole, as in Kafka.

A reader is paused deterministically just after it has listed a partition's
segments (kafka.debug_reader_pause_lock: it waits for an advisory lock this
test holds):

1. DeleteRecords: reader R lists the segments of 'dr' and waits; another
   session deletes the records of the first two segments (commits) and runs
   the cleaner; kafka.segments no longer lists them at once, their files are
   still there; R, released, reads every record, whole.
2. Retention: the same with retention.bytes deleting every closed segment of
   'rt' in a kafka.run_log_cleaner pass.
3. The files stay while file.delete.delay.ms (2 s here) has not passed, and
   are dropped by the first pass after it (and unlinked by the checkpoint).
4. After a restart, segments that left the log before it are dropped by the
   first pass, whatever the delay (60 s here).
5. delete_topic drops the files of segments that left the log and wait for
   their delay too.

Before the change, 1 and 2 failed ("could not read block" / "could not open
file"): the drops happened at the commit that moved the log start.

Last line: "N passed, M failed".
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kafkapg  # noqa: E402

DB = "dd"  # not kafka.database: the cleaner worker does not run passes here
PAUSE_KEY = 4242
PER_SEGMENT = 1000  # 1000-byte records, 1 MiB segments: ~1000 records a segment

tap = kafkapg.Tap()
check = tap.check
Session = kafkapg.Session


def q(conn, sql, args=None):
    cur = conn.cursor()
    cur.execute(sql, args)
    return cur.fetchall() if cur.description else None


def wait_for(conn, sql, args, seconds=30):
    return kafkapg.wait_for(conn, sql, args, seconds)


def produce(conn, topic, nbatches):
    q(conn, "SELECT count(*) FROM generate_series(1, %s) b, "
      "LATERAL kafka.produce_batch(%s, NULL, (SELECT array_agg(convert_to(lpad(b::text || '-' || g::text, "
      "1000, '.'), 'UTF8')) FROM generate_series(1, 100) g), partition => 0) r", (nbatches, topic))
    q(conn, "SELECT kafka.flush_markers()")


def seg_files(conn, topic):
    """[(base_offset, path)] of the topic's listed segments."""
    return [(r[0], r[1]) for r in q(conn, "SELECT base_offset, format('base/%%s/%%s', "
                                    "(SELECT oid FROM pg_database WHERE datname = current_database()), relfilenode) "
                                    "FROM kafka.segments WHERE topic = %s ORDER BY 1", (topic,))]


def file_sizes(conn, paths):
    """Size of each file, None if it does not exist."""
    return [q(conn, "SELECT (pg_stat_file(%s, true)).size", (p,))[0][0] for p in paths]


def all_hold_data(sizes):
    return all(s is not None and s > 0 for s in sizes)


def all_gone(sizes):
    return all(s is None or s == 0 for s in sizes)


def paused_read(port, mon, topic, change):
    """Start a fetch of the whole topic that pauses after listing its
    segments, run change(), release it; return (rows, error)."""
    holder = kafkapg.connect(port, DB)
    q(holder, "SELECT pg_advisory_lock(%s)", (PAUSE_KEY,))
    r_conn = kafkapg.connect(port, DB)
    q(r_conn, "SET kafka.debug_reader_pause_lock = %s" % PAUSE_KEY)
    r_pid = q(r_conn, "SELECT pg_backend_pid()")[0][0]
    r = Session(r_conn, "SELECT count(*), count(DISTINCT \"offset\"), min(length(value)), max(length(value)) "
                "FROM kafka.fetch('%s', 0, 0, 1000000)" % topic)
    r.start()
    waiting = wait_for(mon, "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted "
                       "AND locktype = 'advisory' AND objid = %s)", (r_pid, PAUSE_KEY))
    check("%s: the reader lists the segments and waits" % topic, waiting)
    try:
        change()
    finally:
        q(holder, "SELECT pg_advisory_unlock(%s)", (PAUSE_KEY,))
        r.join(60)
        holder.close()
        r_conn.close()
    return r.rows, r.error


def run():
    cluster = kafkapg.ScratchCluster("delayed_drop", 58432, 49092)
    data, port = cluster.data, cluster.port
    try:
        cluster.start(DB, {"KP_KAFKA_DB": "postgres"})
        conn = kafkapg.connect(port, DB)
        mon = kafkapg.connect(port, DB)
        q(conn, "SELECT kafka.create_topic('dr', 1, '{\"segment.bytes\": \"1048576\", "
          "\"file.delete.delay.ms\": \"2000\"}')")
        q(conn, "SELECT kafka.create_topic('rt', 1, '{\"segment.bytes\": \"1048576\", "
          "\"file.delete.delay.ms\": \"2000\"}')")
        produce(conn, "dr", 30)
        produce(conn, "rt", 30)

        # 1. DeleteRecords under a reader that listed the segments
        dr_before = seg_files(conn, "dr")
        check("dr: three segments", [b for b, _ in dr_before] == [0, 1000, 2000], "(%r)" % dr_before)
        dr_gone = [p for b, p in dr_before if b < 2000]
        state = {}

        def delete_dr():
            state["ls"] = q(conn, "SELECT kafka.delete_records('dr', 0, 2500)")[0][0]
            q(conn, "SELECT count(*) FROM kafka.run_log_cleaner()")
            q(conn, "CHECKPOINT")
            state["listed"] = [b for b, _ in seg_files(conn, "dr")]
            state["sizes"] = file_sizes(conn, dr_gone)

        rows, err = paused_read(port, mon, "dr", delete_dr)
        check("dr: the log start moved", state.get("ls") == 2500, "(%r)" % state.get("ls"))
        check("dr: the segments below it left the log at once", state.get("listed") == [2000],
              "(%r)" % state.get("listed"))
        check("dr: their files are still there", all_hold_data(state.get("sizes", [None])),
              "(%r)" % state.get("sizes"))
        check("dr: the reader that listed them reads every record, whole",
              err is None and rows == [(3000, 3000, 1000, 1000)], "(%r %r)" % (rows, err))

        # 2. retention under a reader that listed the segments
        rt_before = seg_files(conn, "rt")
        rt_gone = [p for b, p in rt_before[:-1]]

        def retain_rt():
            q(conn, "SELECT kafka.alter_topic_config('rt', '{\"retention.bytes\": \"1\"}')")
            state["rt"] = q(conn, "SELECT segments_deleted, log_start_offset FROM kafka.run_log_cleaner() "
                            "WHERE topic = 'rt'")
            q(conn, "CHECKPOINT")
            state["rt_listed"] = [b for b, _ in seg_files(conn, "rt")]
            state["rt_sizes"] = file_sizes(conn, rt_gone)

        rows, err = paused_read(port, mon, "rt", retain_rt)
        check("rt: retention deleted the closed segments", state.get("rt") == [(2, 2000)], "(%r)" % state.get("rt"))
        check("rt: they left the log at once", state.get("rt_listed") == [2000], "(%r)" % state.get("rt_listed"))
        check("rt: their files are still there", all_hold_data(state.get("rt_sizes", [None])),
              "(%r)" % state.get("rt_sizes"))
        check("rt: the reader that listed them reads every record, whole",
              err is None and rows == [(3000, 3000, 1000, 1000)], "(%r %r)" % (rows, err))
        q(conn, "SELECT kafka.alter_topic_config('rt', '{\"retention.bytes\": \"-1\"}')")

        # 3. dropped by the first pass after file.delete.delay.ms, not before
        q(conn, "SELECT count(*) FROM kafka.run_log_cleaner()")
        q(conn, "CHECKPOINT")
        check("a pass before file.delete.delay.ms keeps the files",
              all_hold_data(file_sizes(conn, dr_gone + rt_gone)), "(%r)" % file_sizes(conn, dr_gone + rt_gone))
        time.sleep(2.2)
        q(conn, "SELECT count(*) FROM kafka.run_log_cleaner()")
        sizes = file_sizes(conn, dr_gone + rt_gone)
        check("the first pass after file.delete.delay.ms drops them", all_gone(sizes), "(%r)" % sizes)
        q(conn, "CHECKPOINT")
        sizes = file_sizes(conn, dr_gone + rt_gone)
        check("and the checkpoint unlinks them", all(s is None for s in sizes), "(%r)" % sizes)
        n = q(conn, "SELECT count(*) FROM kafka.fetch('dr', 0, 2500, 1000000)")[0][0]
        check("dr: the records from the log start are all there", n == 500, "(%d)" % n)
        st = q(conn, "SELECT segment_count FROM kafka.partition_status WHERE topic IN ('dr', 'rt') ORDER BY topic")
        check("the partitions count only their listed segments", st == [(1,), (1,)], "(%r)" % st)

        # 4. after a restart: the first pass drops them, whatever the delay
        q(conn, "SELECT kafka.alter_topic_config('dr', '{\"file.delete.delay.ms\": \"600000\"}')")
        produce(conn, "dr", 20)
        before = seg_files(conn, "dr")
        q(conn, "SELECT kafka.delete_records('dr', 0, -1)")
        # a roll puts the old active segment, now wholly below the log start,
        # out of the log too (the batch and its marker each roll)
        q(conn, "SELECT kafka.alter_topic_config('dr', '{\"segment.ms\": \"1\"}')")
        time.sleep(0.01)
        produce(conn, "dr", 1)
        left = [p for b, p in before]
        q(conn, "SELECT count(*) FROM kafka.run_log_cleaner()")
        q(conn, "CHECKPOINT")
        check("dr: segments that left the log wait for the delay",
              all_hold_data(file_sizes(conn, left)), "(%r)" % file_sizes(conn, left))
        st = q(conn, "SELECT segment_count FROM kafka.partition_status WHERE topic = 'dr'")
        listed = seg_files(conn, "dr")
        # one or two new segments: the marker rolls another only if a
        # millisecond (segment.ms) passed since the batch's roll
        check("dr: only the new segments are listed and counted",
              1 <= len(listed) <= 2 and st == [(len(listed),)]
              and not set(p for b, p in listed) & set(left), "(%r %r)" % (listed, st))
        conn.close()
        mon.close()
        kafkapg.pgcluster("stop", data)
        kafkapg.pgcluster("start", data)
        kafkapg.pgcluster("wait-ready", port, 60)
        conn = kafkapg.connect(port, DB)
        check("after a restart they are still there (nothing ran yet)",
              all_hold_data(file_sizes(conn, left)), "(%r)" % file_sizes(conn, left))
        q(conn, "SELECT count(*) FROM kafka.run_log_cleaner()")
        q(conn, "CHECKPOINT")
        sizes = file_sizes(conn, left)
        check("the first pass after the restart drops them", all(s is None for s in sizes), "(%r)" % sizes)
        n = q(conn, "SELECT count(*) FROM kafka.fetch('dr', 0, kafka.earliest_offset('dr', 0), 1000000)")[0][0]
        check("dr: the last produce is all there is", n == 100, "(%d)" % n)

        # 5. delete_topic drops segments that wait for their delay too
        produce(conn, "rt", 20)
        before = seg_files(conn, "rt")
        q(conn, "SELECT kafka.delete_records('rt', 0, -1)")
        q(conn, "SELECT kafka.delete_topic('rt')")
        q(conn, "CHECKPOINT")
        sizes = file_sizes(conn, [p for b, p in before])
        check("delete_topic drops the files of segments waiting for their delay",
              len(before) >= 2 and all(s is None for s in sizes), "(%r %r)" % (before, sizes))
        conn.close()
    finally:
        tap.cleanup(cluster)


if __name__ == "__main__":
    tap.main(run)
