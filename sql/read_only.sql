--
-- Read-only transactions (BEGIN READ ONLY, default_transaction_read_only):
-- every kafka.* function that writes (a record, a log start, a group's or a
-- share group's state, the catalog) refuses as INSERT does, SQLSTATE 25006
-- read_only_sql_transaction naming itself, before it writes anything.  On a
-- hot standby, where every transaction is read-only, the same functions say
-- "during recovery" (test/standby/standby_test.py).  The log cleaner's
-- functions and kafka.flush_markers(), as VACUUM, run in a read-only
-- transaction.  Reads run.
--
SELECT kafka.create_topic('ro', 2);
SELECT kafka.create_topic('ro_ret', 1, '{"segment.bytes": "1048576"}');
SELECT partition, "offset" FROM kafka.produce('ro', 'k'::bytea, 'v0'::bytea, partition => 0);
-- about 3 MB of 1,000-byte records: three segments
SELECT kafka.produce_agg('ro_ret', NULL::bytea, convert_to(lpad(g::text, 1000, '.'), 'UTF8'), 0)
  FROM generate_series(1, 3000) g;
SELECT kafka.flush_markers() >= 0 AS flushed;
CREATE FOREIGN TABLE ro_ft (partition integer, "offset" bigint, "timestamp" timestamptz,
							key text, value text, headers kafka.header[])
	SERVER kafka_pg OPTIONS (topic 'ro');
CREATE TEMP TABLE ro_before AS
  SELECT topic, partition, log_start_offset, log_end_offset
    FROM kafka.partition_status WHERE topic IN ('ro', 'ro_ret');

SET default_transaction_read_only = on;
SELECT * FROM kafka.produce('ro', 'k'::bytea, 'v1'::bytea);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kafka.produce('ro', 'k', 'v1');
SELECT * FROM kafka.produce('ro', 'k', '{"a": 1}'::jsonb);
SELECT * FROM kafka.produce_batch('ro', NULL::bytea[], ARRAY['x']::bytea[]);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM (SELECT kafka.produce_agg('ro', 'k'::bytea, 'v'::bytea)) x;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO ro_ft (key, value) VALUES ('k', 'v');
SELECT kafka.delete_records('ro', 0, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kafka.consume('g_ro', 'ro');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kafka.consume_text('g_ro', 'ro');
SELECT * FROM kafka.group_heartbeat('g_ro', '', 0, ARRAY['ro']);
SELECT * FROM kafka.group_poll('g_ro', 'm');
SELECT * FROM kafka.share_acquire('sg_ro', 'ro');
\echo :LAST_ERROR_SQLSTATE
SELECT kafka.share_acknowledge('sg_ro', 'ro', 0, 0);
SELECT kafka.create_topic('ro2', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT kafka.delete_topic('ro');
SELECT kafka.add_partitions('ro', 3);
SELECT kafka.alter_topic_config('ro', '{"retention.ms": "1000"}');
SELECT kafka.create_acl('User:ro', 'TOPIC', 'ro', 'READ');
SELECT * FROM kafka.delete_acls('User:ro');

-- reads run
SELECT "offset", convert_from(value, 'UTF8') AS value FROM kafka.fetch('ro', 0, 0, 10);
SELECT partition, "offset", value FROM ro_ft ORDER BY 1, 2;
SELECT kafka.latest_offset('ro', 0);

-- the log cleaner, as VACUUM, runs: retention.bytes set before, applied now
RESET default_transaction_read_only;
SELECT kafka.alter_topic_config('ro_ret', '{"retention.bytes": "1500000"}');
BEGIN READ ONLY;
SELECT topic, partition, segments_deleted, log_start_offset
  FROM kafka.run_log_cleaner() WHERE topic = 'ro_ret';
SELECT count(*) FROM kafka.run_log_compaction('ro_ret');
SELECT kafka.flush_markers() >= 0 AS flushed;
COMMIT;

-- a savepoint inside BEGIN READ ONLY is no way round it
BEGIN READ ONLY;
SAVEPOINT s;
SELECT * FROM kafka.produce('ro', 'k'::bytea, 'v2'::bytea);
ROLLBACK TO SAVEPOINT s;
SELECT count(*) FROM kafka.fetch('ro', 0, 0, 10);
ROLLBACK;

-- nothing was written: the logs as before (but ro_ret's log start, which
-- the cleaner moved), no group, no share group, no topic, no ACL
SELECT p.topic, p.partition, p.log_start_offset = b.log_start_offset AS same_start,
       p.log_end_offset = b.log_end_offset AS same_end
  FROM kafka.partition_status p JOIN ro_before b USING (topic, partition) ORDER BY 1, 2;
SELECT count(*) FROM kafka.consumer_groups WHERE group_id = 'g_ro';
SELECT count(*) FROM kafka.share_records WHERE group_id = 'sg_ro';
SELECT name FROM kafka.topics WHERE name LIKE 'ro%' ORDER BY 1;
SELECT count(*) FROM kafka.describe_acls() WHERE principal = 'User:ro';

-- read-write again: they write as before
SELECT partition, "offset" FROM kafka.produce('ro', 'k'::bytea, 'v3'::bytea, partition => 0);
SELECT kafka.delete_records('ro', 0, 1);
DROP FOREIGN TABLE ro_ft;
SELECT kafka.delete_topic('ro');
SELECT kafka.delete_topic('ro_ret');
