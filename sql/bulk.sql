--
-- Bulk SQL (issue 13): the streaming aggregate kafka.produce_agg and topics
-- as foreign tables (kafka_pg_fdw).  Both produce with kafka.produce's
-- transactional semantics, batched; the foreign tables read like kafka.fetch.
--
CREATE FUNCTION bulk_try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE q;
	RETURN 'ok';
EXCEPTION WHEN others THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
-- records of a topic per partition, read_committed (kafka.fetch)
CREATE FUNCTION bulk_counts(t text, iso text DEFAULT 'read_committed')
RETURNS TABLE (partition int, records bigint) LANGUAGE sql AS $$
	SELECT p, (SELECT count(*) FROM kafka.fetch(t, p, 0, 1000000, iso))
	  FROM generate_series(0, (SELECT partition_count - 1 FROM kafka.topics WHERE name = t)) p
	 ORDER BY p
$$;

SELECT kafka.create_topic('bulk', 3);
CREATE TABLE bulk_src AS
	SELECT g AS id, 'k' || (g % 7) AS k, 'v' || g AS v FROM generate_series(1, 1000) g;

-- produce_agg: every row a record, streamed into record batches; it returns
-- how many records it produced.  Not visible before COMMIT, even to the
-- producing transaction's read_committed reads (as kafka.produce).
BEGIN;
SELECT kafka.produce_agg('bulk', k, v) FROM bulk_src;
SELECT * FROM bulk_counts('bulk');
SELECT sum(records) FROM bulk_counts('bulk', 'read_uncommitted');
COMMIT;
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT * FROM bulk_counts('bulk');
-- keyed records land where murmur2 (the Java client's default partitioner) puts them
SELECT count(*) AS records,
	   count(*) FILTER (WHERE f.partition = kafka.partition_for_key(convert_to(f.key, 'UTF8'), 3))
	   AS where_murmur2_puts_them
  FROM generate_series(0, 2) p, kafka.fetch_text('bulk', p, 0, 100000) f;
-- in record order, one record batch per partition (plus the COMMIT marker)
SELECT p, count(*) FILTER (WHERE NOT is_control) AS data_batches,
	   count(*) FILTER (WHERE is_control) AS markers
  FROM generate_series(0, 2) p, kafka.dump_log('bulk', p) GROUP BY p ORDER BY p;
SELECT bool_and(f.value = 'v' || s.id) AS values_match
  FROM kafka.fetch_text('bulk', 0, 0, 100000) f
  JOIN (SELECT id, k, row_number() OVER (ORDER BY id) - 1 AS n FROM bulk_src
		 WHERE kafka.partition_for_key(convert_to(k, 'UTF8'), 3) = 0) s ON s.n = f."offset";

-- ROLLBACK: nothing of it is ever visible
BEGIN;
SELECT kafka.produce_agg('bulk', k, v) FROM bulk_src;
ROLLBACK;
SELECT * FROM bulk_counts('bulk');
-- ROLLBACK TO SAVEPOINT drops only what the savepoint produced
BEGIN;
SELECT kafka.produce_agg('bulk', 'kept', 'before the savepoint');
SAVEPOINT s;
SELECT kafka.produce_agg('bulk', k, v) FROM bulk_src;
ROLLBACK TO s;
COMMIT;
SELECT sum(records) FROM bulk_counts('bulk');

-- explicit partition, headers and timestamp; NULL partition = by key
SELECT kafka.create_topic('bulk-p', 3);
SELECT kafka.produce_agg('bulk-p', NULL::text, 'p2-' || g, 2,
						 ARRAY[('h', '\x01')::kafka.header, ('h', NULL)::kafka.header], '2026-01-02 03:04:05+00')
  FROM generate_series(1, 3) g;
SELECT kafka.produce_agg('bulk-p', 'key-1'::bytea, '\x00ff'::bytea, NULL::integer);
SELECT "offset", "timestamp", key, value, headers FROM kafka.fetch_text('bulk-p', 2);
SELECT f.partition, f.key, f.value FROM bulk_counts('bulk-p') c, kafka.fetch('bulk-p', c.partition) f
 WHERE f.key IS NOT NULL;
SELECT kafka.partition_for_key('key-1'::bytea, 3) AS murmur2_partition;
-- jsonb values
SELECT kafka.produce_agg('bulk-p', 'j', jsonb_build_object('id', g), 0) FROM generate_series(1, 2) g;
SELECT value->>'id' AS id FROM kafka.fetch_json('bulk-p', 0, 2) WHERE key = 'j';
-- one aggregate, several topics
SELECT kafka.create_topic('bulk-a', 1);
SELECT kafka.create_topic('bulk-b', 1);
SELECT kafka.produce_agg(t, 'k', v) FROM (VALUES ('bulk-a', 'a1'), ('bulk-b', 'b1'), ('bulk-a', 'a2')) x(t, v);
SELECT 'bulk-a' AS topic, value FROM kafka.fetch_text('bulk-a', 0)
UNION ALL SELECT 'bulk-b', value FROM kafka.fetch_text('bulk-b', 0);
-- per group; an empty input produces nothing and is 0
SELECT k, kafka.produce_agg('bulk-a', k, v) FROM bulk_src WHERE id <= 20 GROUP BY k ORDER BY k;
SELECT kafka.produce_agg('no-such-topic', k, v) FROM bulk_src WHERE false;
-- a group that is never returned (LIMIT over a hash aggregate) still
-- produces the rows it took in: every row that reached the aggregate is produced
SET enable_sort = off;
SELECT kafka.create_topic('bulk-limit', 1);
SELECT n > 0 AS produced FROM (SELECT k, kafka.produce_agg('bulk-limit', k, v) AS n FROM bulk_src GROUP BY k) s LIMIT 1;
RESET enable_sort;
SELECT * FROM bulk_counts('bulk-limit');
-- the aggregate is volatile: an unused output still runs, and two equal calls produce twice
SELECT 1 AS one FROM (SELECT kafka.produce_agg('bulk-limit', 'unused', 'output')) s;
SELECT kafka.produce_agg('bulk-limit', 'twice', 'x'), kafka.produce_agg('bulk-limit', 'twice', 'x');
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT key, count(*) FROM kafka.fetch_text('bulk-limit', 0, 0, 10000) WHERE key IN ('unused', 'twice') GROUP BY key ORDER BY key;

-- bad input, with its SQLSTATE
SELECT kafka.create_topic('bulk-compact', 1, '{"cleanup.policy": "compact"}');
SELECT kafka.create_topic('bulk-small', 1, '{"max.message.bytes": "1000"}');
SELECT bulk_try($$SELECT kafka.produce_agg('no-such-topic', 'k', 'v')$$);
SELECT bulk_try($$SELECT kafka.produce_agg(NULL, 'k', 'v')$$);
SELECT bulk_try($$SELECT kafka.produce_agg('bulk', 'k', 'v', 3)$$);
SELECT bulk_try($$SELECT kafka.produce_agg('bulk', 'k', 'v', -1)$$);
SELECT bulk_try($$SELECT kafka.produce_agg('bulk-compact', NULL, 'v')$$);
SELECT bulk_try($$SELECT kafka.produce_agg('bulk-small', 'k', repeat('x', 2000))$$);
SELECT bulk_try($$SELECT kafka.produce_agg('bulk', 'k', 'v', 0, ARRAY[(NULL, '\x00')::kafka.header], NULL)$$);
-- (the message names the aggregate's oid: only the SQLSTATE here)
SELECT left(bulk_try($$SELECT kafka.produce_agg('bulk', k, v) OVER () FROM bulk_src$$), 5) AS not_a_window_function;
-- a failing statement leaves nothing behind: the batches it already
-- appended (max.message.bytes is 1000 here) are rolled back with it
SELECT bulk_try($$SELECT kafka.produce_agg('bulk-small', k, v || (1 / (900 - id))::text) FROM bulk_src$$);
SELECT sum(records) FROM bulk_counts('bulk-small');
SELECT sum(records) > 0 AS aborted_batches_were_appended FROM bulk_counts('bulk-small', 'read_uncommitted');

------------------------------------------------------------------------------
-- Topics as foreign tables
------------------------------------------------------------------------------
SELECT kafka.create_topic('bulk-ft', 2);
CREATE FOREIGN TABLE bulk_ft (partition integer, "offset" bigint, "timestamp" timestamptz,
							  key text, value text, headers kafka.header[])
	SERVER kafka_pg OPTIONS (topic 'bulk-ft');

-- COPY FROM: records produced with the transaction, batched
BEGIN;
COPY bulk_ft (key, value) FROM STDIN;
a	1
b	2
c	3
d	\N
e	5
\.
SELECT count(*) FROM bulk_ft;
SELECT sum(records) FROM bulk_counts('bulk-ft', 'read_uncommitted');
ROLLBACK;
SELECT count(*) FROM bulk_ft;
COPY bulk_ft (key, value, partition, headers) FROM STDIN;
a	1	\N	\N
b	2	\N	{"(h1,abc)"}
\N	null key	1	{}
d	\N	0	\N
\.
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT partition, "offset", key, value, headers FROM bulk_ft ORDER BY partition, "offset";
SELECT partition, count(*) FILTER (WHERE key IS NOT NULL AND
	   partition = kafka.partition_for_key(convert_to(key, 'UTF8'), 2)) AS keyed_by_murmur2,
	   count(*) AS records
  FROM bulk_ft GROUP BY partition ORDER BY partition;

-- INSERT ... SELECT, and INSERT with batch_size (ExecForeignBatchInsert)
INSERT INTO bulk_ft (key, value) SELECT k, v FROM bulk_src;
ALTER FOREIGN TABLE bulk_ft OPTIONS (ADD batch_size '100');
INSERT INTO bulk_ft (key, value, partition) SELECT k, v, 1 FROM bulk_src;
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT partition, count(*) FROM bulk_ft GROUP BY partition ORDER BY partition;
-- RETURNING says where each record went (one batch per row then)
CREATE TABLE bulk_ret (partition int, "offset" bigint, key text);
WITH r AS (INSERT INTO bulk_ft (key, value, partition, "timestamp")
		   VALUES ('r1', 'x', 0, '2026-03-04 05:06:07+00'), ('r2', 'y', NULL, NULL)
		   RETURNING partition, "offset", key)
INSERT INTO bulk_ret SELECT * FROM r;
SELECT r.key, r.partition = kafka.partition_for_key(convert_to(r.key, 'UTF8'), 2) OR r.key = 'r1' AS right_partition,
	   f.key = r.key AS found_at_offset, f."timestamp" = '2026-03-04 05:06:07+00' AS given_ts
  FROM bulk_ret r JOIN bulk_ft f ON f.partition = r.partition AND f."offset" = r."offset" ORDER BY r.key;
DROP TABLE bulk_ret;

-- SELECT with partition and offset conditions: pushed down to the store's
-- reader (Kafka Bounds), not filtered row by row
EXPLAIN (COSTS OFF) SELECT * FROM bulk_ft WHERE partition = 1 AND "offset" >= 10 AND "offset" < 20;
EXPLAIN (COSTS OFF) SELECT * FROM bulk_ft WHERE "offset" > 5 AND value <> 'x' AND 1 = partition;
SELECT "offset", key, value FROM bulk_ft WHERE partition = 1 AND "offset" >= 10 AND "offset" < 15;
-- the same records as kafka.fetch returns
SELECT count(*) AS differ FROM (
	(SELECT partition, "offset", "timestamp", key, value, headers FROM bulk_ft
	  WHERE partition = 1 AND "offset" >= 3
	 EXCEPT ALL
	 SELECT * FROM kafka.fetch_text('bulk-ft', 1, 3, 100000))
	UNION ALL
	(SELECT * FROM kafka.fetch_text('bulk-ft', 1, 3, 100000)
	 EXCEPT ALL
	 SELECT partition, "offset", "timestamp", key, value, headers FROM bulk_ft
	  WHERE partition = 1 AND "offset" >= 3)) d;
-- rows come in (partition, "offset") order: ORDER BY needs no sort, and a
-- LIMIT stops the read
EXPLAIN (COSTS OFF) SELECT "offset" FROM bulk_ft WHERE partition = 1 AND "offset" >= 100 ORDER BY "offset" LIMIT 3;
SELECT "offset", value FROM bulk_ft WHERE partition = 1 AND "offset" >= 100 ORDER BY "offset" LIMIT 3;
EXPLAIN (COSTS OFF) SELECT partition, "offset" FROM bulk_ft ORDER BY partition, "offset";
EXPLAIN (COSTS OFF) SELECT "offset" FROM bulk_ft ORDER BY "offset" DESC LIMIT 1;
-- bounds outside the log give nothing, never an error
SELECT count(*) FROM bulk_ft WHERE partition = 7;
SELECT count(*) FROM bulk_ft WHERE partition = 0 AND "offset" > 1000000;
SELECT count(*) FROM bulk_ft WHERE partition < 0 OR "offset" < -5;
SELECT count(*) FROM bulk_ft WHERE "offset" = NULL::bigint;
-- parameters, in a generic plan
PREPARE bulk_q(int, bigint) AS SELECT count(*) FROM bulk_ft WHERE partition = $1 AND "offset" >= $2;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE bulk_q(1, 5);
EXECUTE bulk_q(1, 5);
EXECUTE bulk_q(0, 0);
RESET plan_cache_mode;
-- as the inner side of a join, rescanned with the outer row's values
SELECT o.p, (SELECT count(*) FROM bulk_ft f WHERE f.partition = o.p AND f."offset" >= o.p * 1000)
  FROM (VALUES (0), (1)) o(p) ORDER BY 1;
-- a subset of the columns, any order
CREATE FOREIGN TABLE bulk_ft_kv (value bytea, key bytea) SERVER kafka_pg OPTIONS (topic 'bulk-ft');
SELECT count(*), count(key) FROM bulk_ft_kv;

-- the topic's compression.type applies; the scan inflates
SELECT kafka.create_topic('bulk-zstd', 1, '{"compression.type": "zstd"}');
CREATE FOREIGN TABLE bulk_zstd (key text, value text, "offset" bigint) SERVER kafka_pg OPTIONS (topic 'bulk-zstd');
INSERT INTO bulk_zstd (key, value) SELECT k, repeat(v, 20) FROM bulk_src;
SELECT compression, count(*) FROM kafka.dump_log('bulk-zstd', 0) WHERE NOT is_control GROUP BY 1;
SELECT count(*), sum(length(value)) = (SELECT sum(length(repeat(v, 20))) FROM bulk_src) AS same_bytes,
	   max("offset") FROM bulk_zstd;
DROP FOREIGN TABLE bulk_zstd;
SELECT kafka.delete_topic('bulk-zstd');

-- bad foreign tables and bad rows, with their SQLSTATEs
CREATE FOREIGN TABLE bulk_bad_col (partition integer, amount numeric) SERVER kafka_pg OPTIONS (topic 'bulk-ft');
SELECT bulk_try('SELECT * FROM bulk_bad_col');
CREATE FOREIGN TABLE bulk_bad_type (partition bigint) SERVER kafka_pg OPTIONS (topic 'bulk-ft');
SELECT bulk_try('SELECT * FROM bulk_bad_type');
CREATE FOREIGN TABLE bulk_no_topic (key text, value text) SERVER kafka_pg OPTIONS (topic 'no-such-topic');
SELECT bulk_try('SELECT * FROM bulk_no_topic');
SELECT bulk_try($$INSERT INTO bulk_no_topic VALUES ('k', 'v')$$);
SELECT bulk_try($$CREATE FOREIGN TABLE bulk_bad_opt (key text) SERVER kafka_pg OPTIONS (tpoic 'x')$$);
SELECT bulk_try($$CREATE FOREIGN TABLE bulk_bad_opt (key text) SERVER kafka_pg OPTIONS (isolation_level 'dirty')$$);
SELECT bulk_try($$CREATE FOREIGN TABLE bulk_bad_opt (key text) SERVER kafka_pg OPTIONS (batch_size '0')$$);
SELECT bulk_try($$INSERT INTO bulk_ft ("offset", key, value) VALUES (5, 'k', 'v')$$);
SELECT bulk_try($$INSERT INTO bulk_ft (key, value, partition) VALUES ('k', 'v', 2)$$);
SELECT bulk_try($$UPDATE bulk_ft SET value = 'x'$$);
SELECT bulk_try($$DELETE FROM bulk_ft$$);
CREATE FOREIGN TABLE bulk_compact (key text, value text) SERVER kafka_pg OPTIONS (topic 'bulk-compact');
SELECT bulk_try($$INSERT INTO bulk_compact VALUES (NULL, 'v')$$);
SELECT kafka.produce_agg('bulk-p', NULL::bytea, '\xff'::bytea, 1);
CREATE FOREIGN TABLE bulk_p_text (partition integer, value text) SERVER kafka_pg OPTIONS (topic 'bulk-p');
SELECT bulk_try($$SELECT value FROM bulk_p_text WHERE partition = 1$$);
\set VERBOSITY sqlstate
COPY bulk_ft ("offset", key) FROM STDIN;
1	k
\.
\set VERBOSITY default
SELECT sum(records) FROM bulk_counts('bulk-ft');

-- Edge cases on every bulk path (produce_batch, produce_agg, INSERT and
-- COPY into a foreign table): a clear error, and nothing lost or half kept
SELECT kafka.create_topic('bulk-edge', 2);
SELECT kafka.create_topic('bulk-edge-small', 1, '{"max.message.bytes": "1000"}');
SELECT kafka.create_topic('bulk-edge-zstd', 1, '{"max.message.bytes": "1000", "compression.type": "zstd"}');
CREATE FOREIGN TABLE bulk_edge (partition integer, key text, value text)
	SERVER kafka_pg OPTIONS (topic 'bulk-edge');
CREATE FOREIGN TABLE bulk_edge_small (key text, value text) SERVER kafka_pg OPTIONS (topic 'bulk-edge-small');
CREATE FOREIGN TABLE bulk_edge_zstd (key text, value text) SERVER kafka_pg OPTIONS (topic 'bulk-edge-zstd');
CREATE FOREIGN TABLE bulk_edge_gone (key text, value text) SERVER kafka_pg OPTIONS (topic 'bulk-edge-gone');
-- null keys and null values (tombstones) stay nulls on every path
SELECT count(*) FROM kafka.produce_batch('bulk-edge', ARRAY[NULL, 'k1'], ARRAY['v0', NULL], partition => 0);
SELECT kafka.produce_agg('bulk-edge', k, v, 0) FROM (VALUES (NULL, 'v2'), ('k3', NULL), (NULL, NULL)) x(k, v);
INSERT INTO bulk_edge (partition, key, value) VALUES (0, NULL, 'v5'), (0, 'k6', NULL);
COPY bulk_edge (partition, key, value) FROM STDIN;
0	\N	v7
0	k8	\N
\.
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT "offset", key, value, key IS NULL AS null_key, value IS NULL AS null_value
  FROM kafka.fetch_text('bulk-edge', 0) ORDER BY "offset";
-- a record larger than max.message.bytes: KP010 before it is encoded (the
-- batch it alone would make is named), on every path; the statement keeps nothing
SELECT bulk_try($$SELECT * FROM kafka.produce_batch('bulk-edge-small', NULL, ARRAY['ok', repeat('x', 2000)])$$);
SELECT bulk_try($$SELECT kafka.produce_agg('bulk-edge-small', NULL, v) FROM (VALUES ('ok'), (repeat('x', 2000))) x(v)$$);
SELECT bulk_try($$INSERT INTO bulk_edge_small VALUES (NULL, 'ok'), (NULL, repeat('x', 2000))$$);
COPY bulk_edge_small FROM STDIN;
\N	ok
\N	xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
\.
-- a record that just fits makes a batch of exactly max.message.bytes, alone
SELECT partition, record_count FROM kafka.produce_batch('bulk-edge-small', NULL, ARRAY['ok', repeat('y', 930)]);
SELECT bulk_try($$SELECT * FROM kafka.produce_batch('bulk-edge-small', NULL, ARRAY[repeat('y', 931)])$$);
SELECT record_count, size_bytes, crc_valid FROM kafka.dump_log('bulk-edge-small', 0) WHERE NOT is_control;
-- compressed, the batch is checked as written: a record that compresses
-- below the limit goes, one that does not is KP010 when its batch is appended
SELECT count(*) FROM kafka.produce_batch('bulk-edge-zstd', NULL, ARRAY[repeat('z', 5000)]);
SELECT left(bulk_try($$INSERT INTO bulk_edge_zstd SELECT NULL, string_agg(md5(g::text), '') FROM generate_series(1, 100) g$$), 5)
	AS incompressible;
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT sum(records) FROM bulk_counts('bulk-edge-small');
SELECT sum(records) FROM bulk_counts('bulk-edge-zstd');
-- a topic that does not exist: KP003 on every path
SELECT bulk_try($$SELECT * FROM kafka.produce_batch('bulk-edge-gone', NULL, ARRAY['v'])$$);
SELECT bulk_try($$SELECT kafka.produce_agg('bulk-edge-gone', NULL, v) FROM bulk_src$$);
SELECT bulk_try($$INSERT INTO bulk_edge_gone SELECT k, v FROM bulk_src$$);
COPY bulk_edge_gone FROM STDIN;
k	v
\.
-- a partition out of range: KP003, whichever row has it; the rows before it are not kept
SELECT bulk_try($$SELECT * FROM kafka.produce_batch('bulk-edge', NULL, ARRAY['v'], partition => 2)$$);
SELECT bulk_try($$SELECT kafka.produce_agg('bulk-edge', k, v, CASE WHEN id = 500 THEN 7 END) FROM bulk_src$$);
SELECT bulk_try($$INSERT INTO bulk_edge SELECT CASE WHEN id = 500 THEN -1 END, k, v FROM bulk_src$$);
COPY bulk_edge (partition, key, value) FROM STDIN;
0	a	1
9	b	2
\.
-- COPY rows with too few or too many columns: PostgreSQL's 22P04, nothing kept
COPY bulk_edge (partition, key, value) FROM STDIN;
0	a	1
0	b
\.
COPY bulk_edge (partition, key, value) FROM STDIN;
0	a	1
0	b	2	3
\.
-- an error after some batches were appended (max.message.bytes 1000):
-- they belong to the aborted statement, so nothing of it is visible
SELECT bulk_try($$INSERT INTO bulk_edge_small SELECT k, v || (1 / (900 - id))::text FROM bulk_src$$);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT * FROM bulk_counts('bulk-edge');
SELECT sum(records) FROM bulk_counts('bulk-edge-small');
SELECT sum(records) > 4 AS aborted_batches_were_appended FROM bulk_counts('bulk-edge-small', 'read_uncommitted');
-- savepoints: what a rolled-back savepoint produced is dropped, whatever the
-- path; a released one's is kept; a failed COPY inside one loses only itself
BEGIN;
COPY bulk_edge (partition, key, value) FROM STDIN;
1	kept-copy	1
\.
SAVEPOINT s1;
COPY bulk_edge (partition, key, value) FROM STDIN;
1	dropped-copy	2
\.
INSERT INTO bulk_edge (partition, key, value) VALUES (1, 'dropped-insert', '3');
SELECT kafka.produce_agg('bulk-edge', 'dropped-agg', 'x', 1);
SELECT count(*) FROM kafka.produce_batch('bulk-edge', ARRAY['dropped-batch'], ARRAY['y'], partition => 1);
ROLLBACK TO s1;
SAVEPOINT s2;
INSERT INTO bulk_edge (partition, key, value) SELECT 1, 'released-insert', v FROM bulk_src WHERE id <= 2;
RELEASE s2;
SAVEPOINT s3;
\set VERBOSITY sqlstate
COPY bulk_edge (partition, key, value) FROM STDIN;
1	failed-copy	1
x	failed-copy	2
\.
\set VERBOSITY default
ROLLBACK TO s3;
SELECT kafka.produce_agg('bulk-edge', 'kept-agg', 'z', 1);
COMMIT;
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT key, count(*) FROM kafka.fetch_text('bulk-edge', 1) GROUP BY key ORDER BY key;
-- a cursor over produce_agg cannot take its batches into another
-- subtransaction: a hash aggregate takes all rows at the first FETCH, and a
-- group fetched after ROLLBACK TO would append records of the rolled-back one
BEGIN;
SET LOCAL enable_sort = off;
DECLARE bulk_cur CURSOR FOR
	SELECT k, kafka.produce_agg('bulk-edge', k, 'cursor', 1) FROM (VALUES ('c1'), ('c2')) x(k) GROUP BY k;
SAVEPOINT s;
FETCH 1 FROM bulk_cur;
ROLLBACK TO s;
FETCH 1 FROM bulk_cur;
ROLLBACK;
SELECT count(*) FROM kafka.fetch_text('bulk-edge', 1) WHERE value = 'cursor';
DROP FOREIGN TABLE bulk_edge, bulk_edge_small, bulk_edge_zstd, bulk_edge_gone;
SELECT kafka.delete_topic(t) FROM unnest(ARRAY['bulk-edge', 'bulk-edge-small', 'bulk-edge-zstd']) t;

-- IMPORT FOREIGN SCHEMA: one foreign table per topic the role may DESCRIBE
CREATE SCHEMA bulk_topics;
IMPORT FOREIGN SCHEMA topics LIMIT TO ("bulk-a", "bulk-b") FROM SERVER kafka_pg INTO bulk_topics
	OPTIONS (key_type 'text', value_type 'text');
\d bulk_topics."bulk-a"
SELECT key, value FROM bulk_topics."bulk-a" ORDER BY "offset" LIMIT 3;
SELECT bulk_try($$IMPORT FOREIGN SCHEMA topics FROM SERVER kafka_pg INTO bulk_topics OPTIONS (value_type 'xml')$$);

-- privileges: the Kafka ACLs of current_user, as kafka.produce and kafka.fetch
CREATE ROLE bulk_nobody;
CREATE ROLE bulk_writer;
GRANT USAGE ON SCHEMA kafka TO bulk_nobody, bulk_writer;
GRANT SELECT, INSERT ON bulk_ft TO bulk_nobody, bulk_writer;
SELECT kafka.create_acl('User:bulk_writer', 'TOPIC', 'bulk-ft', 'WRITE');
SET ROLE bulk_nobody;
SELECT bulk_try($$INSERT INTO bulk_ft (key, value) VALUES ('k', 'v')$$);
SELECT bulk_try('SELECT count(*) FROM bulk_ft');
SELECT bulk_try($$SELECT kafka.produce_agg('bulk-ft', 'k', 'v')$$);
\set VERBOSITY sqlstate
COPY bulk_ft (key, value) FROM STDIN;
k	v
\.
\set VERBOSITY default
RESET ROLE;
SET ROLE bulk_writer;
INSERT INTO bulk_ft (key, value) VALUES ('from-writer', 'v');
SELECT kafka.produce_agg('bulk-ft', 'from-writer', 'agg');
COPY bulk_ft (key, value) FROM STDIN;
from-writer	copy
\.
SELECT bulk_try('SELECT count(*) FROM bulk_ft');
RESET ROLE;
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT value FROM bulk_ft WHERE key = 'from-writer' ORDER BY value;

SELECT count(*) FROM kafka.delete_acls(principal => 'User:bulk_writer');
REVOKE ALL ON bulk_ft FROM bulk_nobody, bulk_writer;
REVOKE ALL ON SCHEMA kafka FROM bulk_nobody, bulk_writer;
DROP ROLE bulk_nobody, bulk_writer;
DROP SCHEMA bulk_topics CASCADE;
DROP FOREIGN TABLE bulk_ft, bulk_ft_kv, bulk_bad_col, bulk_bad_type, bulk_no_topic,
	bulk_compact, bulk_p_text;
DROP TABLE bulk_src;
DROP FUNCTION bulk_try(text), bulk_counts(text, text);
SELECT kafka.delete_topic(t) FROM unnest(ARRAY['bulk', 'bulk-p', 'bulk-a', 'bulk-b', 'bulk-limit',
	'bulk-compact', 'bulk-small', 'bulk-ft']) t;

-- A cursor over a topic, declared before a savepoint and first read inside
-- it, reads on after ROLLBACK TO the savepoint (as a cursor over a table
-- does): the segment it opened there belongs to the cursor, not to the
-- rolled-back subtransaction.  Partition 1's many records, read in between,
-- must not show up in it (they did, labelled partition 0, while open
-- segments were closed by subtransaction on 2026-12-07).
SELECT kafka.create_topic('bulk-cur', 2);
SELECT count(*) FROM (SELECT kafka.produce('bulk-cur', NULL::text, 'p0-' || g, partition => 0)
	FROM generate_series(1, 3) g) s;
SELECT count(*) FROM (SELECT kafka.produce('bulk-cur', NULL::text, 'p1-' || g, partition => 1)
	FROM generate_series(1, 200) g) s;
SELECT kafka.flush_markers() >= 0 AS flushed;
CREATE FOREIGN TABLE bulk_cur (partition integer, "offset" bigint, value text)
	SERVER kafka_pg OPTIONS (topic 'bulk-cur');
BEGIN;
DECLARE c CURSOR FOR SELECT partition, "offset", value FROM bulk_cur WHERE partition = 0;
SAVEPOINT a;
FETCH 1 FROM c;
ROLLBACK TO SAVEPOINT a;
SELECT count(*) FROM kafka.fetch('bulk-cur', 1, 0);
FETCH ALL FROM c;
COMMIT;
-- and in a PL/pgSQL block whose exception handler rolls its FETCH back
BEGIN;
DECLARE c CURSOR FOR SELECT partition, "offset", value FROM bulk_cur WHERE partition = 0;
DO $$
DECLARE
	cur refcursor := 'c';
	r record;
BEGIN
	BEGIN
		FETCH cur INTO r;
		RAISE EXCEPTION 'roll back the block';
	EXCEPTION WHEN raise_exception THEN
		NULL;
	END;
END $$;
SELECT count(*) FROM kafka.fetch('bulk-cur', 1, 0);
FETCH ALL FROM c;
COMMIT;
DROP FOREIGN TABLE bulk_cur;
SELECT kafka.delete_topic('bulk-cur');
