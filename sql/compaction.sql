--
-- Log compaction (cleanup.policy=compact; src/store/compaction.c).
--
-- kafka.run_log_compaction() runs one compaction pass now, the pass the log
-- cleaner worker runs; the worker's own compaction is stopped here
-- (kafka.log_cleaner_threads = 0) so that only these calls clean.
--
ALTER SYSTEM SET kafka.log_cleaner_threads = 0;
SELECT pg_reload_conf();
SELECT pg_sleep(1);

-- A changelog: four rounds of the keys k0..k4, one batch and one SQL
-- transaction each (so a COMMIT marker after each), a segment each
-- (segment.ms = 300), then a tombstone for k1 and one more record.
SELECT kafka.create_topic('cmp', 1, '{"cleanup.policy": "compact", "segment.ms": "300",
  "file.delete.delay.ms": "0", "delete.retention.ms": "1500"}');
CREATE FUNCTION pg_temp.round(t text, r int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM kafka.produce_batch(t, ARRAY['k0', 'k1', 'k2', 'k3', 'k4'],
		ARRAY['v' || r || '-0', 'v' || r || '-1', 'v' || r || '-2', 'v' || r || '-3', 'v' || r || '-4'], 0);
END $$;
SELECT pg_temp.round('cmp', 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT pg_temp.round('cmp', 1);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT pg_temp.round('cmp', 2);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT pg_temp.round('cmp', 3);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT "offset" FROM kafka.produce('cmp', 'k1', NULL::text, partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT "offset" FROM kafka.produce('cmp', 'k9', 'last', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT count(*) > 3 AS several_segments FROM kafka.segments WHERE topic = 'cmp';

-- A reader stops inside a segment the clean below rewrites: the next
-- reader from that offset reads the cleaned segment, not the position the
-- first one left off at in the old one (src/store/reader.c).
SELECT "offset", key, value FROM kafka.fetch_text('cmp', 0, 0, 5);

-- The clean: every closed segment is rewritten (the active one, holding
-- k9, is not), into one segment (they fit in segment.bytes).
SELECT cleaned, forced, dirty_ratio, first_dirty_offset, segments_after,
       bytes_after < bytes_before AS smaller,
       end_offset = (SELECT max(base_offset) FROM kafka.segments WHERE topic = 'cmp') AS up_to_active
  FROM kafka.run_log_compaction('cmp');
-- The reader above stopped at offset 5 of a segment the clean replaced:
-- from there on, the cleaned segment's records.
SELECT "offset", key, value FROM kafka.fetch_text('cmp', 0, 5, 3);
-- Each key's latest value at its original offset; the tombstone stays for now.
-- (Each round's COMMIT marker shares its segment: segments roll only after
-- segment.ms = 300 ms, and the rounds are 310 ms apart.)
SELECT "offset", key, value FROM kafka.fetch_text('cmp', 0, 0, 100);
-- Offsets are unchanged: gaps are normal, log start and end do not move,
-- and a fetch from a removed offset returns the next record kept.
SELECT kafka.earliest_offset('cmp', 0), kafka.latest_offset('cmp', 0);
SELECT "offset", key FROM kafka.fetch_text('cmp', 0, 3, 1);
SELECT "offset", key FROM kafka.fetch_text('cmp', 0, 19, 2);
-- The batches as stored: the last round's batch lost k1 but keeps its
-- offset range (18..22, 4 records); the tombstone's batch got a delete
-- horizon (KIP-534).  The COMMIT markers stay: as in Kafka, a marker can go
-- only after a clean that met no batch of its transaction.
SELECT base_offset, last_offset, record_count, is_control, control_type,
       delete_horizon IS NOT NULL AS horizon, crc_valid
  FROM kafka.dump_log('cmp', 0);
-- Nothing more to clean: the dirty part is empty.
SELECT cleaned, dirty_ratio, first_dirty_offset FROM kafka.run_log_compaction('cmp');

-- delete.retention.ms later (1.5 s), the next clean (forced by the passed
-- horizon) removes the tombstone, and gives the markers of the rounds with
-- no record left their delete horizon.
SELECT pg_sleep(1.6);
SELECT cleaned, forced FROM kafka.run_log_compaction('cmp');
SELECT "offset", key, value FROM kafka.fetch_text('cmp', 0, 0, 100);
SELECT base_offset, is_control, delete_horizon IS NOT NULL AS horizon
  FROM kafka.dump_log('cmp', 0);
SELECT kafka.earliest_offset('cmp', 0), kafka.latest_offset('cmp', 0);
SELECT topic, cleanup_policy, last_compaction_run IS NOT NULL AS compacted, compactions,
       compaction_bytes_reclaimed > 0 AS reclaimed, first_dirty_offset
  FROM kafka.log_cleaner_status WHERE topic = 'cmp';
-- New records make the log dirty again: k0 is replaced once more (the
-- dirty part is small beside the clean one: min.cleanable.dirty.ratio is
-- lowered for it).
SELECT kafka.alter_topic_config('cmp', '{"min.cleanable.dirty.ratio": "0.01"}');
SELECT pg_sleep(0.31);
SELECT "offset" FROM kafka.produce('cmp', 'k0', 'v4-0', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT "offset" FROM kafka.produce('cmp', 'k8', 'x', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT cleaned, first_dirty_offset FROM kafka.run_log_compaction('cmp');
SELECT "offset", key, value FROM kafka.fetch_text('cmp', 0, 0, 100);
-- and the markers whose horizon has passed are gone after the next clean
SELECT pg_sleep(1.6);
SELECT cleaned, forced FROM kafka.run_log_compaction('cmp');
SELECT base_offset, last_offset, record_count, is_control, delete_horizon IS NOT NULL AS horizon
  FROM kafka.dump_log('cmp', 0);
SELECT "offset", key, value FROM kafka.fetch_text('cmp', 0, 0, 100);
SELECT kafka.delete_topic('cmp');

-- min.cleanable.dirty.ratio: a log whose dirty part is small against its
-- clean part waits.
SELECT kafka.create_topic('cmp_ratio', 1, '{"cleanup.policy": "compact", "segment.ms": "300",
  "min.cleanable.dirty.ratio": "0.9"}');
SELECT pg_temp.round('cmp_ratio', 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT pg_temp.round('cmp_ratio', 1);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT "offset" FROM kafka.produce('cmp_ratio', 'k0', 'a', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT cleaned FROM kafka.run_log_compaction('cmp_ratio');
SELECT pg_sleep(0.31);
SELECT "offset" FROM kafka.produce('cmp_ratio', 'k0', 'b', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
-- only the previous active segment (one small record) is dirty now
SELECT cleaned, dirty_ratio < 0.9 AS below FROM kafka.run_log_compaction('cmp_ratio');
SELECT kafka.alter_topic_config('cmp_ratio', '{"min.cleanable.dirty.ratio": "0.01"}');
SELECT cleaned, forced FROM kafka.run_log_compaction('cmp_ratio');
SELECT "offset", key, value FROM kafka.fetch_text('cmp_ratio', 0, 0, 100);
-- max.compaction.lag.ms forces a clean whatever the ratio.
SELECT kafka.alter_topic_config('cmp_ratio', '{"min.cleanable.dirty.ratio": "0.99", "max.compaction.lag.ms": "1"}');
SELECT pg_sleep(0.31);
SELECT "offset" FROM kafka.produce('cmp_ratio', 'k0', 'c', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT "offset" FROM kafka.produce('cmp_ratio', 'k1', 'd', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT cleaned, forced FROM kafka.run_log_compaction('cmp_ratio');
SELECT "offset", key, value FROM kafka.fetch_text('cmp_ratio', 0, 0, 100);
SELECT kafka.delete_topic('cmp_ratio');

-- min.compaction.lag.ms: records younger than it are not cleaned.
SELECT kafka.create_topic('cmp_lag', 1, '{"cleanup.policy": "compact", "segment.ms": "300",
  "min.compaction.lag.ms": "3600000"}');
SELECT pg_temp.round('cmp_lag', 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT pg_temp.round('cmp_lag', 1);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT "offset" FROM kafka.produce('cmp_lag', 'k0', 'a', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT cleaned, first_uncleanable_offset FROM kafka.run_log_compaction('cmp_lag');
SELECT count(*) FROM kafka.fetch_text('cmp_lag', 0, 0, 100);
SELECT kafka.alter_topic_config('cmp_lag', '{"min.compaction.lag.ms": "0"}');
SELECT cleaned FROM kafka.run_log_compaction('cmp_lag');
SELECT "offset", key, value FROM kafka.fetch_text('cmp_lag', 0, 0, 100);
SELECT kafka.delete_topic('cmp_lag');

-- compact,delete: retention and compaction both apply.
SELECT kafka.create_topic('cmp_both', 1, '{"cleanup.policy": "compact,delete", "segment.ms": "300",
  "file.delete.delay.ms": "0"}');
SELECT pg_temp.round('cmp_both', 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT pg_temp.round('cmp_both', 1);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT pg_temp.round('cmp_both', 2);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT "offset" FROM kafka.produce('cmp_both', 'k0', 'a', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT cleaned FROM kafka.run_log_compaction('cmp_both');
SELECT "offset", key, value FROM kafka.fetch_text('cmp_both', 0, 0, 100);
-- retention.bytes = 0 deletes every closed segment: the cleaned one
SELECT kafka.alter_topic_config('cmp_both', '{"retention.bytes": "0"}');
SELECT segments_deleted, log_start_offset FROM kafka.run_log_cleaner() WHERE topic = 'cmp_both';
SELECT "offset", key, value FROM kafka.fetch_text('cmp_both', 0, kafka.earliest_offset('cmp_both', 0), 100);
SELECT kafka.delete_topic('cmp_both');

-- Aborted transactions: their records go at the first clean; the ABORT
-- marker stays until its transaction has no record left and its delete
-- horizon has passed; a compressed topic's batches stay compressed.
SELECT kafka.create_topic('cmp_tx', 1, '{"cleanup.policy": "compact", "segment.ms": "300",
  "compression.type": "gzip", "delete.retention.ms": "1000", "file.delete.delay.ms": "0",
  "min.cleanable.dirty.ratio": "0.01"}');
SELECT pg_temp.round('cmp_tx', 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
BEGIN;
SELECT pg_temp.round('cmp_tx', 99);
ROLLBACK;
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT "offset" FROM kafka.produce('cmp_tx', 'k2', 'committed', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT "offset" FROM kafka.produce('cmp_tx', 'k9', 'active', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT base_offset, last_offset, record_count, compression, control_type
  FROM kafka.dump_log('cmp_tx', 0);
SELECT cleaned FROM kafka.run_log_compaction('cmp_tx');
SELECT base_offset, last_offset, record_count, compression, control_type,
       delete_horizon IS NOT NULL AS horizon, crc_valid
  FROM kafka.dump_log('cmp_tx', 0);
SELECT "offset", key, value FROM kafka.fetch_text('cmp_tx', 0, 0, 100);
SELECT "offset", key, value FROM kafka.fetch_text('cmp_tx', 0, 0, 100, 'read_uncommitted');
-- the ABORT marker's transaction has no record left: it gets its horizon,
-- then goes once the horizon has passed
SELECT pg_sleep(0.31);
SELECT "offset" FROM kafka.produce('cmp_tx', 'k3', 'more', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT cleaned FROM kafka.run_log_compaction('cmp_tx');
SELECT base_offset, control_type, delete_horizon IS NOT NULL AS horizon
  FROM kafka.dump_log('cmp_tx', 0) WHERE is_control;
SELECT pg_sleep(1.1);
SELECT cleaned, forced FROM kafka.run_log_compaction('cmp_tx');
SELECT count(*) AS abort_markers FROM kafka.dump_log('cmp_tx', 0) WHERE control_type = 'ABORT';
SELECT "offset", key, value FROM kafka.fetch_text('cmp_tx', 0, 0, 100);
SELECT kafka.delete_topic('cmp_tx');

-- Records without a key, written while the topic was cleanup.policy=delete,
-- are removed by the first clean after it turns compact, as Kafka does.
SELECT kafka.create_topic('cmp_keyless', 1, '{"segment.ms": "300", "file.delete.delay.ms": "0"}');
SELECT "offset" FROM kafka.produce('cmp_keyless', NULL::text, 'no key', partition => 0);
SELECT "offset" FROM kafka.produce('cmp_keyless', 'k', 'keyed', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT "offset" FROM kafka.produce('cmp_keyless', 'k2', 'active', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT kafka.alter_topic_config('cmp_keyless', '{"cleanup.policy": "compact"}');
SELECT cleaned FROM kafka.run_log_compaction('cmp_keyless');
SELECT "offset", key, value FROM kafka.fetch_text('cmp_keyless', 0, 0, 100);
SELECT kafka.delete_topic('cmp_keyless');

-- A small kafka.log_cleaner_dedupe_buffer_size: the offset map fills, the
-- clean stops where it got and the next one goes on from there.
ALTER SYSTEM SET kafka.log_cleaner_dedupe_buffer_size = 1024;
SELECT pg_reload_conf();
SELECT pg_sleep(0.2);
SELECT kafka.create_topic('cmp_map', 1, '{"cleanup.policy": "compact", "segment.ms": "300",
  "file.delete.delay.ms": "0", "min.cleanable.dirty.ratio": "0.01"}');
SELECT count(*) FROM kafka.produce_batch('cmp_map',
  (SELECT array_agg('key' || i) FROM generate_series(1, 30) i),
  (SELECT array_agg('a' || i) FROM generate_series(1, 30) i), 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT count(*) FROM kafka.produce_batch('cmp_map',
  (SELECT array_agg('key' || i) FROM generate_series(1, 30) i),
  (SELECT array_agg('b' || i) FROM generate_series(1, 30) i), 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT count(*) FROM kafka.produce_batch('cmp_map',
  (SELECT array_agg('key' || i) FROM generate_series(1, 30) i),
  (SELECT array_agg('c' || i) FROM generate_series(1, 30) i), 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT pg_sleep(0.31);
SELECT "offset" FROM kafka.produce('cmp_map', 'z', 'active', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
-- 42 slots, 37 entries: one batch of 30 keys fits, two do not
SELECT cleaned, first_dirty_offset, end_offset FROM kafka.run_log_compaction('cmp_map');
SELECT count(*), min("offset") FROM kafka.fetch_text('cmp_map', 0, 0, 1000);
SELECT cleaned, first_dirty_offset, end_offset FROM kafka.run_log_compaction('cmp_map');
SELECT cleaned, first_dirty_offset, end_offset FROM kafka.run_log_compaction('cmp_map');
SELECT count(*), min("offset"), min(value), max(value) FROM kafka.fetch_text('cmp_map', 0, 0, 1000) WHERE key <> 'z';
ALTER SYSTEM RESET kafka.log_cleaner_dedupe_buffer_size;
SELECT kafka.delete_topic('cmp_map');

ALTER SYSTEM RESET kafka.log_cleaner_threads;
SELECT pg_reload_conf();
