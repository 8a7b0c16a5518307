--
-- kafka.table: a topic as a table (what Kafka Streams calls a KTable), the
-- latest record of every key whose latest record is not a tombstone.  One
-- read of the log with the read_committed cursor, as kafka.fetch reads.
--
SELECT kafka.create_topic('kt', 3);
-- Records go to explicit partitions, so the rows below do not depend on
-- the partitioner.
SELECT "offset" FROM kafka.produce('kt', 'a', 'a-1', partition => 0);
SELECT "offset" FROM kafka.produce('kt', 'b', 'b-1', partition => 0);
SELECT "offset" FROM kafka.produce('kt', 'a', 'a-2', partition => 0,
       headers => ARRAY[('trace', 'a-2')::kafka.header, ('empty', NULL)::kafka.header],
       "timestamp" => '2026-01-02 03:04:05.678+00');
SELECT "offset" FROM kafka.produce('kt', 'c', 'c-1', partition => 1);
SELECT "offset" FROM kafka.produce('kt', 'c', 'c-2', partition => 1);
-- A tombstone removes its key ...
SELECT "offset" FROM kafka.produce('kt', 'b', NULL::text, partition => 0);
-- ... until the key has a value again.
SELECT "offset" FROM kafka.produce('kt', 'd', 'd-1', partition => 1);
SELECT "offset" FROM kafka.produce('kt', 'd', NULL::text, partition => 1);
SELECT "offset" FROM kafka.produce('kt', 'd', 'd-2 after the tombstone', partition => 1);
SELECT "offset" FROM kafka.produce('kt', 'e', 'e-1', partition => 2);
SELECT "offset" FROM kafka.produce('kt', 'e', NULL::text, partition => 2);
-- A record without a key is not part of the table.
SELECT "offset" FROM kafka.produce('kt', NULL::text, 'no key', partition => 2);
-- The same key in two partitions (only an explicit partition does that) is
-- a row per partition, as a KTable is partitioned.
SELECT "offset" FROM kafka.produce('kt', 'a', 'a in partition 2', partition => 2);

-- Rows in partition order, then offset order; the latest record's offset,
-- timestamp and headers.
SELECT partition, "offset", key, value, headers FROM kafka.table_text('kt');
SELECT "timestamp" FROM kafka.table_text('kt', 0) WHERE key = 'a';
-- One partition; bytea and jsonb forms.
SELECT partition, "offset", key, value FROM kafka.table('kt', 1);
SELECT kafka.create_topic('kt_json', 1);
SELECT "offset" FROM kafka.produce('kt_json', 'order-1', '{"amount": 1}'::jsonb);
SELECT "offset" FROM kafka.produce('kt_json', 'order-2', '{"amount": 2}'::jsonb);
SELECT "offset" FROM kafka.produce('kt_json', 'order-1', '{"amount": 10}'::jsonb);
SELECT key, value->'amount' AS amount FROM kafka.table_json('kt_json');
-- A value that is not text: the error names the record, as fetch_text's does.
SELECT "offset" FROM kafka.produce('kt_json', 'bin'::bytea, '\xff00'::bytea);
SELECT key, value FROM kafka.table_text('kt_json');
SELECT encode(key, 'escape') AS key, value FROM kafka.table('kt_json') WHERE key = 'bin';

-- Transactions: a rolled-back transaction's records never show, nor what a
-- rolled-back savepoint produced; the tombstone of a rolled-back
-- transaction removes nothing.
BEGIN;
SELECT "offset" FROM kafka.produce('kt', 'a', 'rolled back', partition => 0);
SELECT "offset" FROM kafka.produce('kt', 'new', 'rolled back', partition => 0);
SELECT "offset" FROM kafka.produce('kt', 'c', NULL::text, partition => 1);
ROLLBACK;
BEGIN;
SELECT "offset" FROM kafka.produce('kt', 'f', 'kept', partition => 2);
SAVEPOINT s;
SELECT "offset" FROM kafka.produce('kt', 'f', 'rolled back to the savepoint', partition => 2);
SELECT "offset" FROM kafka.produce('kt', 'a', NULL::text, partition => 2);
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT partition, "offset", key, value FROM kafka.table_text('kt');
-- read_uncommitted shows the latest records up to the high watermark,
-- aborted ones included (as a read_uncommitted consumer sees them).
SELECT partition, "offset", key, value FROM kafka.table_text('kt', isolation_level => 'read_uncommitted');
-- The calling transaction's own records are not committed yet: not in the
-- read_committed table (kafka.fetch's rule), in the read_uncommitted one.
BEGIN;
SELECT "offset" FROM kafka.produce('kt', 'g', 'not yet committed', partition => 2);
SELECT count(*) FROM kafka.table_text('kt', 2) WHERE key = 'g';
SELECT count(*) FROM kafka.table_text('kt', 2, 'read_uncommitted') WHERE key = 'g';
COMMIT;
SELECT count(*) FROM kafka.table_text('kt', 2) WHERE key = 'g';

-- Another session's transaction still open: the read_committed table is the
-- log up to the last stable offset, so a later committed record is not in
-- it yet either (kafka.fetch's rule: never skip past what may commit).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;
SELECT kafka.create_topic('kt_lso', 1);
SELECT "offset" FROM kafka.produce('kt_lso', 'k1', 'before');
SELECT pg_advisory_lock(9);
SELECT dblink_connect('kt_other', format('dbname=%s port=%s host=%s', current_database(),
       current_setting('port'), split_part(current_setting('unix_socket_directories'), ',', 1)));
SELECT dblink_send_query('kt_other', $$BEGIN; SELECT kafka.produce('kt_lso', 'k1', 'open');
                                       SELECT pg_advisory_lock(9); COMMIT;$$);
DO $$ BEGIN
  FOR i IN 1..600 LOOP
    EXIT WHEN EXISTS (SELECT 1 FROM kafka.fetch_text('kt_lso', 0, 0, 10, 'read_uncommitted') WHERE value = 'open');
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT "offset" FROM kafka.produce('kt_lso', 'k2', 'after the open one');
SELECT "offset", key, value FROM kafka.table_text('kt_lso');
SELECT "offset", key, value FROM kafka.table_text('kt_lso', isolation_level => 'read_uncommitted');
SELECT pg_advisory_unlock(9);
SELECT count(*) FROM dblink_get_result('kt_other') AS r(x text);
SELECT dblink_disconnect('kt_other');
SELECT "offset", key, value FROM kafka.table_text('kt_lso');

-- Binary keys are compared by their bytes: the empty key is a key (not a
-- null one), a key and its prefix are two keys, zero bytes count.
SELECT kafka.create_topic('kt_bin', 1);
SELECT count(*) FROM kafka.produce_batch('kt_bin',
       ARRAY['\x'::bytea, '\x00', '\x0000', '\x00ff', '\xff', '\x00', '\x'],
       ARRAY['\x01'::bytea, '\x02', '\x03', '\x04', '\x05', '\x06', '\x07']);
SELECT "offset", key, value FROM kafka.table('kt_bin');
SELECT "offset" FROM kafka.produce('kt_bin', '\x00'::bytea, NULL::bytea);
SELECT "offset", key, value FROM kafka.table('kt_bin');

-- Two different keys with the same 32-bit hash (hash_bytes, the hash of
-- the table, which PostgreSQL's hashtext also is for a deterministic
-- collation): found among 200000 keys, then kept apart by their bytes.
CREATE TEMP TABLE same_hash AS
  SELECT min(k) AS k1, max(k) AS k2
    FROM (SELECT 'key-' || g AS k FROM generate_series(1, 200000) g) s
   GROUP BY hashtext(k) HAVING count(*) = 2 ORDER BY 1 LIMIT 1;
SELECT k1 <> k2 AS different, hashtext(k1) = hashtext(k2) AS same_hash FROM same_hash;
SELECT kafka.create_topic('kt_hash', 1);
SELECT count(*) FROM same_hash, kafka.produce('kt_hash', k1, 'one-1');
SELECT count(*) FROM same_hash, kafka.produce('kt_hash', k2, 'two-1');
SELECT count(*) FROM same_hash, kafka.produce('kt_hash', k1, 'one-2');
SELECT t.key = h.k1 AS is_k1, t.key = h.k2 AS is_k2, t.value
  FROM kafka.table_text('kt_hash') t, same_hash h ORDER BY t."offset";
-- A tombstone of one leaves the other.
SELECT count(*) FROM same_hash, kafka.produce('kt_hash', k2, NULL::text);
SELECT t.key = h.k1 AS is_k1, t.value FROM kafka.table_text('kt_hash') t, same_hash h;

-- Large values and keys, compressed batches: a 3 MB value superseded by
-- another, a 200 kB key.
SELECT kafka.create_topic('kt_large', 1,
       '{"max.message.bytes": "8388608", "compression.type": "zstd"}');
SELECT "offset" FROM kafka.produce('kt_large', 'big', repeat('x', 3000000));
SELECT "offset" FROM kafka.produce('kt_large', repeat('k', 200000), 'long key');
SELECT "offset" FROM kafka.produce('kt_large', 'big', repeat('y', 3000000) || 'end');
SELECT length(key) AS key_length, length(value) AS value_length, right(value, 4) AS tail
  FROM kafka.table_text('kt_large') ORDER BY "offset";

-- Against the log itself: on a topic of 4 partitions, 3000 records of 300
-- keys (1 in 10 a tombstone) with a rolled-back batch and unkeyed records
-- among them, kafka.table is the latest non-tombstone record per
-- (partition, key) that kafka.fetch returns.
SELECT kafka.create_topic('kt_rand', 4);
SELECT setseed(0.42);
SELECT sum(record_count) FROM generate_series(1, 10) b,
  LATERAL kafka.produce_batch('kt_rand',
     (SELECT array_agg('k' || (random() * 299)::int) FROM generate_series(1, 300 + 0 * b)),
     (SELECT array_agg(CASE WHEN random() < 0.1 THEN NULL ELSE 'v' || b || '-' || g END)
        FROM generate_series(1, 300) g));
BEGIN;
SELECT sum(record_count) FROM kafka.produce_batch('kt_rand',
     (SELECT array_agg('k' || g) FROM generate_series(0, 299) g),
     (SELECT array_agg('rolled back'::text) FROM generate_series(0, 299) g));
ROLLBACK;
SELECT sum(record_count) FROM kafka.produce_batch('kt_rand', NULL, ARRAY['unkeyed 1', 'unkeyed 2']);
SELECT kafka.flush_markers() >= 0 AS flushed;
CREATE TEMP TABLE expect AS
  SELECT partition, "offset", key, value FROM (
    SELECT DISTINCT ON (f.partition, f.key) f.*
      FROM generate_series(0, 3) p, kafka.fetch_text('kt_rand', p, 0, 100000) f
     WHERE f.key IS NOT NULL
     ORDER BY f.partition, f.key, f."offset" DESC) latest
   WHERE value IS NOT NULL;
SELECT count(*) > 200 AS many_keys, count(DISTINCT partition) AS partitions FROM expect;
SELECT count(*) AS missing FROM (SELECT * FROM expect
       EXCEPT SELECT partition, "offset", key, value FROM kafka.table_text('kt_rand')) d;
SELECT count(*) AS extra FROM (SELECT partition, "offset", key, value FROM kafka.table_text('kt_rand')
       EXCEPT SELECT * FROM expect) d;
SELECT (SELECT count(*) FROM kafka.table_text('kt_rand')) = (SELECT count(*) FROM expect) AS same_count;
SELECT count(*) AS rolled_back_rows FROM kafka.table_text('kt_rand') WHERE value = 'rolled back';
-- read_uncommitted: the rolled-back batch of every key is the latest record.
SELECT count(*), count(DISTINCT key), min(value), max(value)
  FROM kafka.table_text('kt_rand', isolation_level => 'read_uncommitted');
-- Offset order within each partition.
SELECT bool_and(ordered) AS in_offset_order FROM (
  SELECT "offset" > lag("offset", 1, -1::bigint) OVER (PARTITION BY partition ORDER BY ord) AS ordered
    FROM kafka.table_text('kt_rand') WITH ORDINALITY AS t(partition, "offset", ts, key, value, headers, ord)) o;

-- Compaction changes nothing in the table: the same rows read from the
-- cleaned part and the dirty tail after a clean.  The topic fills as a
-- delete topic, then one transaction makes it compact and cleans it (the
-- cleaner worker sees only committed configs, so it cannot clean first).
SELECT kafka.create_topic('kt_cleaned', 2, '{"segment.bytes": "1048576"}');
SELECT setseed(0.1);
SELECT sum(record_count) FROM generate_series(1, 40) b,
  LATERAL kafka.produce_batch('kt_cleaned',
     (SELECT array_agg('k' || (random() * 999)::int) FROM generate_series(1, 500 + 0 * b)),
     (SELECT array_agg(CASE WHEN random() < 0.1 THEN NULL ELSE repeat('v' || b || '-' || g, 20) END)
        FROM generate_series(1, 500) g));
BEGIN;
SELECT sum(record_count) FROM kafka.produce_batch('kt_cleaned',
     (SELECT array_agg('k' || g) FROM generate_series(0, 999) g),
     (SELECT array_agg('rolled back'::text) FROM generate_series(0, 999) g));
ROLLBACK;
SELECT kafka.flush_markers() >= 0 AS flushed;
CREATE TEMP TABLE kt_before AS SELECT * FROM kafka.table_text('kt_cleaned');
SELECT count(*) > 800 AS many_keys FROM kt_before;
SELECT segment_count > 1 AS several_segments FROM kafka.partition_status WHERE topic = 'kt_cleaned';
BEGIN;
SELECT kafka.alter_topic_config('kt_cleaned', '{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}');
SELECT partition, cleaned, bytes_after < bytes_before / 2 AS much_smaller
  FROM kafka.run_log_compaction('kt_cleaned') ORDER BY partition;
COMMIT;
SELECT count(*) AS missing FROM (SELECT partition, "offset", key, value, headers FROM kt_before
       EXCEPT SELECT partition, "offset", key, value, headers FROM kafka.table_text('kt_cleaned')) d;
SELECT count(*) AS extra FROM (SELECT partition, "offset", key, value, headers FROM kafka.table_text('kt_cleaned')
       EXCEPT SELECT partition, "offset", key, value, headers FROM kt_before) d;
-- The dirty tail after the clean: a tombstone of a cleaned key, a new value.
SELECT count(*) FROM (SELECT key FROM kt_before ORDER BY "offset", partition LIMIT 2) k,
       LATERAL kafka.produce('kt_cleaned', k.key, NULL::text);
SELECT count(*) FROM kafka.produce('kt_cleaned', 'k-new', 'after the clean');
SELECT (SELECT count(*) FROM kafka.table_text('kt_cleaned')) - (SELECT count(*) FROM kt_before) AS change;
SELECT count(*) FROM kafka.table_text('kt_cleaned')
 WHERE key IN (SELECT key FROM kt_before ORDER BY "offset", partition LIMIT 2);

-- A compacted topic reads the same way (its records all have keys).
SELECT kafka.create_topic('kt_compact', 1, '{"cleanup.policy": "compact"}');
SELECT "offset" FROM kafka.produce('kt_compact', 'user-1', 'alice');
SELECT "offset" FROM kafka.produce('kt_compact', 'user-2', 'bob');
SELECT "offset" FROM kafka.produce('kt_compact', 'user-1', 'alice smith');
SELECT "offset", key, value FROM kafka.table_text('kt_compact');
-- An empty topic is an empty table.
SELECT kafka.create_topic('kt_empty', 2);
SELECT count(*) FROM kafka.table('kt_empty');

-- Memory: a partition's latest records are held up to work_mem x
-- hash_mem_multiplier; beyond, an error (53200), never a crash.
SET work_mem = '64kB';
SET hash_mem_multiplier = 1;
\set VERBOSITY sqlstate
SELECT count(*) FROM kafka.table('kt_rand', 0);
SELECT count(*) FROM kafka.table('kt_large');
RESET work_mem;
RESET hash_mem_multiplier;
SELECT count(*) FROM kafka.table('kt_large');

-- Bad input: an unknown topic or partition is KP003
-- (UNKNOWN_TOPIC_OR_PARTITION), a bad isolation level 22023, a null
-- topic or isolation level 22004.
SELECT * FROM kafka.table('no_such_topic');
SELECT * FROM kafka.table('kt', 3);
SELECT * FROM kafka.table('kt', -1);
SELECT * FROM kafka.table('kt', 0, 'serializable');
SELECT * FROM kafka.table(NULL);
SELECT * FROM kafka.table('kt', 0, NULL);
\set VERBOSITY default
SELECT * FROM kafka.table('no_such_topic');
SELECT * FROM kafka.table('kt', 0, 'serializable');
