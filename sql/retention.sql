--
-- Retention (cleanup.policy=delete): the log cleaner deletes a partition's
-- oldest closed segments by retention.ms and retention.bytes, never the
-- active one, and moves the log start offset to the first kept segment.
-- kafka.run_log_cleaner() runs one pass now; the worker runs the same pass
-- every kafka.log_retention_check_interval_ms.
--
SHOW kafka.log_retention_check_interval_ms;

-- By size: about 3 MB in 1 MiB segments (as in segments.sql), no limit yet.
SELECT kafka.create_topic('ret_size', 1, '{"segment.bytes": "1048576"}');
SELECT count(*)
  FROM generate_series(1, 30) b,
  LATERAL kafka.produce_batch('ret_size', NULL,
            (SELECT array_agg(convert_to(lpad(b::text || '-' || g::text, 1000, '.'), 'UTF8'))
               FROM generate_series(1, 100) g), partition => 0) r;
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT base_offset FROM kafka.segments WHERE topic = 'ret_size' ORDER BY 1;
-- retention.bytes -1 and retention.ms of a week: nothing goes.
SELECT * FROM kafka.run_log_cleaner() WHERE topic = 'ret_size';

-- A topic config change applies at the next pass: keep at most 1.5 MB.
-- Kafka deletes the oldest segments while the partition without them is
-- still at least retention.bytes large: here one segment of ~1 MB.
SELECT kafka.alter_topic_config('ret_size', '{"retention.bytes": "1500000"}');
SELECT topic, partition, segments_deleted, bytes_deleted > 1000000 AS about_1mb, log_start_offset
  FROM kafka.run_log_cleaner() WHERE topic = 'ret_size';
SELECT base_offset FROM kafka.segments WHERE topic = 'ret_size' ORDER BY 1;
SELECT log_start_offset, log_end_offset, size_bytes <= 1500000 + 1048576 AS bounded
  FROM kafka.partition_status WHERE topic = 'ret_size';
SELECT kafka.earliest_offset('ret_size', 0);
-- Fetching below the new log start is OFFSET_OUT_OF_RANGE; from it works.
\set VERBOSITY sqlstate
SELECT "offset" FROM kafka.fetch('ret_size', 0, 0, 1);
\set VERBOSITY default
SELECT "offset" FROM kafka.fetch('ret_size', 0, 1000, 1);
-- A second pass finds nothing more to do.
SELECT segments_deleted, log_start_offset FROM kafka.run_log_cleaner() WHERE topic = 'ret_size';

-- retention.bytes 0: every closed segment goes, never the active one.
SELECT kafka.alter_topic_config('ret_size', '{"retention.bytes": "0"}');
SELECT segments_deleted, log_start_offset FROM kafka.run_log_cleaner() WHERE topic = 'ret_size';
SELECT base_offset FROM kafka.segments WHERE topic = 'ret_size' ORDER BY 1;
SELECT segment_count, log_start_offset, log_end_offset FROM kafka.partition_status WHERE topic = 'ret_size';
-- Producing goes on at the same offsets.
SELECT "offset" FROM kafka.produce('ret_size', NULL::text, 'after', partition => 0);

-- By time: segment.ms rolls a segment on the first append after it is
-- older than that (as Kafka's, only on append).  Three records, each in a
-- segment of its own, then after 1.5 s a fourth: retention.ms 1000 deletes
-- the three old segments.
SELECT kafka.create_topic('ret_time', 1, '{"segment.ms": "1"}');
SELECT "offset" FROM kafka.produce('ret_time', NULL::text, 'old-1', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.01);
SELECT "offset" FROM kafka.produce('ret_time', NULL::text, 'old-2', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(1.5);
SELECT "offset" FROM kafka.produce('ret_time', NULL::text, 'new', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
-- Not yet: retention.ms is a week.
SELECT segments_deleted, log_start_offset FROM kafka.run_log_cleaner() WHERE topic = 'ret_time';
SELECT kafka.alter_topic_config('ret_time', '{"retention.ms": "1000"}');
-- (a segment holding only transaction markers, which carry no record time,
-- counts as written when it was created)
SELECT segments_deleted >= 2 AS deleted, log_start_offset FROM kafka.run_log_cleaner() WHERE topic = 'ret_time';
SELECT "offset", value FROM kafka.fetch_text('ret_time', 0, 4, 10);
SELECT kafka.earliest_offset('ret_time', 0);

-- Topics without "delete" in cleanup.policy, and unlimited ones, are left alone.
SELECT kafka.create_topic('ret_compact', 1, '{"cleanup.policy": "compact", "retention.bytes": "0", "segment.ms": "1"}');
SELECT "offset" FROM kafka.produce('ret_compact', 'k', 'v1', partition => 0);
SELECT pg_sleep(0.01);
SELECT "offset" FROM kafka.produce('ret_compact', 'k', 'v2', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT count(*) FROM kafka.run_log_cleaner() WHERE topic = 'ret_compact';
-- A compacted topic keeps the latest record of each key: it refuses records
-- without one (INVALID_RECORD, KP087), as Kafka does, in both forms.
SELECT "offset" FROM kafka.produce('ret_compact', NULL::text, 'no key', partition => 0);
\set VERBOSITY sqlstate
SELECT count(*) FROM kafka.produce_batch('ret_compact', ARRAY['k', NULL], ARRAY['a', 'b'], partition => 0);
SELECT count(*) FROM kafka.produce_batch('ret_compact', NULL::text[], ARRAY['a'], partition => 0);
\set VERBOSITY default
SELECT log_start_offset FROM kafka.partition_status WHERE topic = 'ret_compact';

-- compact,delete: retention applies (and compaction: sql/compaction.sql).
SELECT kafka.create_topic('ret_both', 1, '{"cleanup.policy": "compact,delete", "segment.ms": "1"}');
SELECT "offset" FROM kafka.produce('ret_both', 'k', 'v1', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.01);
SELECT "offset" FROM kafka.produce('ret_both', 'k', 'v2', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT kafka.alter_topic_config('ret_both', '{"retention.bytes": "0"}');
SELECT segments_deleted > 0 AS deleted, log_start_offset >= 1 AS moved
  FROM kafka.run_log_cleaner() WHERE topic = 'ret_both';
SELECT kafka.delete_topic('ret_both');

-- kafka.log_cleaner_status: what the cleaner did to each partition since
-- the server started (kafka.run_log_cleaner also compacted ret_compact).
SELECT topic, partition, cleanup_policy, last_retention_run IS NOT NULL AS retained,
       last_compaction_run IS NOT NULL AS compacted, segments_deleted,
       bytes_reclaimed > 2000000 AS over_2mb, log_start_offset
  FROM kafka.log_cleaner_status WHERE topic IN ('ret_size', 'ret_compact') ORDER BY 1;

-- The log start is stored with the segments: a new session sees it.
\c
SELECT topic, log_start_offset FROM kafka.partition_status WHERE topic IN ('ret_size', 'ret_time', 'ret_compact') ORDER BY 1;

SELECT kafka.delete_topic('ret_size');
SELECT kafka.delete_topic('ret_time');
SELECT kafka.delete_topic('ret_compact');

-- The log cleaner worker: it runs every kafka.log_retention_check_interval_ms,
-- which a reload changes.  Make retention.bytes 0 on a topic with closed
-- segments and wait for the worker to move its log start.
SELECT kafka.create_topic('ret_worker', 1, '{"segment.ms": "1", "retention.bytes": "0"}');
SELECT "offset" FROM kafka.produce('ret_worker', NULL::text, 'a', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.01);
SELECT "offset" FROM kafka.produce('ret_worker', NULL::text, 'b', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
-- (it starts with the server, and again within 10 s if it exits)
DO $$
BEGIN
	FOR i IN 1..300 LOOP
		EXIT WHEN EXISTS (SELECT FROM pg_stat_activity
						   WHERE backend_type = 'kafka_pg log cleaner' AND datname = current_database());
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT count(*) AS workers FROM pg_stat_activity
 WHERE backend_type = 'kafka_pg log cleaner' AND datname = current_database();
ALTER SYSTEM SET kafka.log_retention_check_interval_ms = 100;
SELECT pg_reload_conf();
DO $$
BEGIN
	FOR i IN 1..300 LOOP
		EXIT WHEN (SELECT log_start_offset > 0 FROM kafka.partition_status WHERE topic = 'ret_worker');
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT log_start_offset > 0 AS moved_by_worker FROM kafka.partition_status WHERE topic = 'ret_worker';
ALTER SYSTEM RESET kafka.log_retention_check_interval_ms;
SELECT pg_reload_conf();

SELECT kafka.delete_topic('ret_worker');
