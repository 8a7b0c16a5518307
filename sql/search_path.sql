--
-- What kafka_pg's own statements mean does not depend on the caller's
-- search_path (src/catalog/spi.c).  Schema kp_trap
-- (test/lib/search_path_traps.sql) copies pg_catalog's operators and
-- functions; each raises WARNING "trap sprung: ..." when called.  With
-- kp_trap first on the path, every kafka.* function, view and a foreign
-- table below runs without springing one: no WARNING in this file's output.
-- The statements here use no operator or aggregate of their own while the
-- path is set (results go to temporary tables, shown after RESET).
--
-- Until 2026-12-05 the entry points without a pinned search_path
-- (kafka.produce_agg, the foreign tables, the views' functions) ran the
-- catalog's statements on the caller's path, as the bootstrap superuser:
-- "trap sprung: operator text = text (as postgres)".  The background
-- workers, likewise (test/wire/session_defaults.py).
--
\set ECHO none
\i test/lib/search_path_traps.sql
\set ECHO all
SELECT kafka.create_topic('sp', 2);
SELECT kafka.create_topic('sp-compact', 1, '{"cleanup.policy": "compact"}');
SELECT kafka.create_topic('sp-json', 1);
CREATE FOREIGN TABLE sp_ft (partition integer, "offset" bigint, key text, value text)
	SERVER kafka_pg OPTIONS (topic 'sp');
INSERT INTO kafka.group_configs VALUES ('sp-share', 'share.auto.offset.reset', 'earliest');

SET search_path = kp_trap, pg_catalog, public;
SELECT kafka.create_topic('sp2', 1, '{"retention.ms": "86400000"}');
SELECT kafka.alter_topic_config('sp2', '{"retention.ms": "3600000"}');
SELECT kafka.add_partitions('sp2', 2);
CREATE TEMP TABLE sp_produced AS
	SELECT 'bytea' AS how, partition, "offset"
	  FROM kafka.produce('sp', 'k'::bytea, 'v'::bytea, partition => 0);
INSERT INTO sp_produced SELECT 'text', partition, "offset"
	FROM kafka.produce('sp', 'k', 'v', partition => 0);
INSERT INTO sp_produced SELECT 'jsonb', partition, "offset"
	FROM kafka.produce('sp', 'k', '{"a": 1}'::jsonb, partition => 0);
INSERT INTO sp_produced SELECT 'batch', partition, base_offset
	FROM kafka.produce_batch('sp', ARRAY['k1', 'k2'], ARRAY['b1', 'b2'], 0);
INSERT INTO sp_produced SELECT 'agg', NULL, kafka.produce_agg('sp', k, v, 1)
	FROM (VALUES ('k1', 'a1'), ('k2', 'a2'), ('k3', 'a3')) x(k, v);
INSERT INTO sp_produced SELECT 'compact', partition, "offset"
	FROM kafka.produce('sp-compact', 'k', 'c');
INSERT INTO sp_produced SELECT 'json', partition, "offset"
	FROM kafka.produce('sp-json', '"k"', '{"a": 2}'::jsonb);
INSERT INTO sp_ft (key, value) VALUES ('f1', 'ft1');
COPY sp_ft (key, value, partition) FROM STDIN;
f2	ft2	1
\.
CREATE TEMP TABLE sp_ft_read AS SELECT partition, "offset", key, value FROM sp_ft;
CREATE TEMP TABLE sp_fetched AS SELECT "offset", key, value FROM kafka.fetch('sp', 0, 0, 100);
CREATE TEMP TABLE sp_fetched_text AS SELECT "offset", key, value FROM kafka.fetch_text('sp', 1, 0, 100);
CREATE TEMP TABLE sp_json AS SELECT * FROM kafka.fetch_json('sp-json', 0, 0, 1);
CREATE TEMP TABLE sp_table AS SELECT * FROM kafka.table('sp-compact');
CREATE TEMP TABLE sp_table_text AS SELECT * FROM kafka.table_text('sp-compact');
CREATE TEMP TABLE sp_dump AS SELECT * FROM kafka.dump_log('sp', 0);
-- the transactions' markers written first, so that the log end is known
CREATE TEMP TABLE sp_flushed AS SELECT kafka.flush_markers() AS n;
CREATE TEMP TABLE sp_offsets AS
	SELECT kafka.earliest_offset('sp', 0) AS earliest, kafka.latest_offset('sp', 0) AS latest,
		   (kafka.list_offsets('sp', 0, -1)).*;
CREATE TEMP TABLE sp_consumed AS SELECT * FROM kafka.consume('sp-g', 'sp');
CREATE TEMP TABLE sp_consumed_text AS SELECT * FROM kafka.consume_text('sp-g2', 'sp', 2);
CREATE TEMP TABLE sp_consumed_json AS SELECT * FROM kafka.consume_json('sp-g3', 'sp-json', 1);
CREATE TEMP TABLE sp_member AS SELECT * FROM kafka.group_heartbeat('sp-sqlg', NULL, 0, ARRAY['sp']);
CREATE TEMP TABLE sp_acquired AS SELECT * FROM kafka.share_acquire('sp-share', 'sp', 2);
SELECT partition AS sp_part, "offset" AS sp_off FROM sp_acquired LIMIT 1 \gset
SELECT kafka.share_acknowledge('sp-share', 'sp', :sp_part, :sp_off);
SELECT kafka.delete_records('sp', 0, 1);
SELECT kafka.create_acl('User:sp', 'TOPIC', 'sp', 'READ');
CREATE TEMP TABLE sp_acls AS SELECT * FROM kafka.describe_acls('User:sp');
SELECT kafka.authorized('TOPIC', 'sp', 'READ');
CREATE TEMP TABLE sp_deleted_acls AS SELECT * FROM kafka.delete_acls('User:sp');
CREATE TEMP TABLE sp_cleaner AS SELECT * FROM kafka.run_log_cleaner();
CREATE TEMP TABLE sp_compaction AS SELECT * FROM kafka.run_log_compaction('sp-compact');
CREATE TEMP TABLE sp_markers AS SELECT kafka.flush_markers() AS n;
CREATE TEMP TABLE sp_defaults AS SELECT * FROM kafka.config_defaults();
CREATE TEMP TABLE sp_part_for_key AS
	SELECT kafka.murmur2('k'::bytea) AS h, kafka.partition_for_key('k'::bytea, 3) AS p;
CREATE TEMP TABLE sp_v1 AS SELECT * FROM kafka.topic_list;
CREATE TEMP TABLE sp_v2 AS SELECT * FROM kafka.partition_status;
CREATE TEMP TABLE sp_v3 AS SELECT * FROM kafka.topic_configs;
CREATE TEMP TABLE sp_v4 AS SELECT * FROM kafka.consumer_group_lag;
CREATE TEMP TABLE sp_v5 AS SELECT * FROM kafka.consumer_group_members;
CREATE TEMP TABLE sp_v6 AS SELECT * FROM kafka.share_group_status;
CREATE TEMP TABLE sp_v7 AS SELECT * FROM kafka.segments;
CREATE TEMP TABLE sp_v8 AS SELECT * FROM kafka.log_cleaner_status;
SELECT kafka.delete_topic('sp2');
RESET search_path;

-- what they did
SELECT how, partition, "offset" FROM sp_produced ORDER BY 1, 3;
SELECT partition, "offset", key, value FROM sp_ft_read ORDER BY 1, 2;
SELECT (SELECT count(*) FROM sp_fetched) AS fetched, (SELECT count(*) FROM sp_fetched_text) AS fetched_text;
SELECT earliest, latest, "offset" FROM sp_offsets;
SELECT (SELECT count(*) FROM sp_consumed) AS consumed, (SELECT count(*) FROM sp_consumed_text) AS text,
	   (SELECT count(*) FROM sp_consumed_json) AS json, (SELECT count(*) FROM sp_member) AS members,
	   (SELECT count(*) FROM sp_acquired) AS acquired, (SELECT count(*) FROM sp_acls) AS acls,
	   (SELECT count(*) FROM sp_deleted_acls) AS deleted_acls,
	   (SELECT count(*) FROM sp_table) AS table_rows;
SELECT group_id, topic, partition, committed_offset FROM kafka.consumer_group_lag
 WHERE group_id IN ('sp-g', 'sp-g3') ORDER BY 1, 3;
-- two records from the partition the session starts at (which depends on its pid)
SELECT count(*) AS partitions, sum(committed_offset) BETWEEN 2 AND 3 AS two_read
  FROM kafka.consumer_group_lag WHERE group_id = 'sp-g2';
SELECT name FROM kafka.topics WHERE name LIKE 'sp%' ORDER BY 1;
SELECT h, p FROM sp_part_for_key;

-- the caller's own path is as it was: after a statement (the foreign
-- table's INSERT runs the catalog's statements itself), inside a
-- transaction, and after an error rolled back to a savepoint
SET search_path = kp_trap, pg_catalog, public;
BEGIN;
INSERT INTO sp_ft (key, value) VALUES ('t', 'x');
SHOW search_path;
SAVEPOINT s;
SELECT kafka.produce_agg('sp-no-such-topic', 'k', 'v');
ROLLBACK TO SAVEPOINT s;
SHOW search_path;
COMMIT;
SHOW search_path;
RESET search_path;

DROP FOREIGN TABLE sp_ft;
SELECT kafka.delete_topic('sp');
SELECT kafka.delete_topic('sp-compact');
SELECT kafka.delete_topic('sp-json');
DELETE FROM kafka.group_configs WHERE group_id = 'sp-share';
SET client_min_messages = warning;
DROP SCHEMA kp_trap CASCADE;
RESET client_min_messages;
