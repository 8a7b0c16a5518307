--
-- Producing and fetching from SQL.
--
SELECT kafka.create_topic('pf', 4);

-- produce returns the partition and the offset the record got.
SELECT * FROM kafka.produce('pf', 'key-1'::bytea, 'value-1'::bytea);
-- Text and jsonb forms.
SELECT * FROM kafka.produce('pf', 'key-1', 'value-2');
SELECT * FROM kafka.produce('pf', 'key-2', '{"amount": 42, "currency": "EUR"}'::jsonb);

-- Keyed records go where the Java client's default partitioner sends them:
-- toPositive(murmur2(key)) % partitions.  Kafka's own test vectors:
SELECT k, kafka.murmur2(convert_to(k, 'UTF8')) AS murmur2
  FROM (VALUES ('21'), ('foobar'), ('a-little-bit-long-string'), ('a-little-bit-longer-string'),
               ('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8'), ('abc')) v(k);
SELECT kafka.partition_for_key('key-1', 4) AS key1, kafka.partition_for_key('key-2', 4) AS key2;
-- The same key always lands in the same partition.
SELECT count(DISTINCT partition) FROM
  (SELECT (kafka.produce('pf', 'same-key', 'v' || g)).partition FROM generate_series(1, 20) g) s;

-- An explicit partition wins over the key.
SELECT * FROM kafka.produce('pf', 'key-1', 'to-3', partition => 3);

-- Unkeyed records spread over the partitions.
SELECT count(DISTINCT partition) AS partitions_used FROM
  (SELECT (kafka.produce('pf', NULL::bytea, 'u'::bytea)).partition FROM generate_series(1, 40) g) s;

-- Headers: an ordered list of (key, value), duplicate keys and null values allowed.
SELECT * FROM kafka.produce('pf', 'h', 'with headers',
       headers => ARRAY[('trace', 'abc')::kafka.header, ('trace', 'def'), ('empty', NULL)]::kafka.header[],
       partition => 0, "timestamp" => '2026-01-02 03:04:05.678+00');

-- Fetch returns records in offset order, with timestamps, keys, values and headers.
SELECT "offset", "timestamp", key, value, headers
  FROM kafka.fetch_text('pf', 0) WHERE key = 'h';
-- The bytea form returns the exact bytes.
SELECT value FROM kafka.fetch('pf', 0) WHERE key = 'h'::bytea;
-- The json form parses values as JSON.
SELECT kafka.create_topic('json', 1);
SELECT "offset" FROM kafka.produce('json', 'key-2', '{"amount": 42, "currency": "EUR"}'::jsonb);
SELECT key, value->>'amount' AS amount, value->'currency' AS currency FROM kafka.fetch_json('json', 0);

-- Null keys and null values (tombstones) round-trip.
SELECT kafka.create_topic('nulls', 1);
SELECT * FROM kafka.produce('nulls', NULL::bytea, NULL::bytea);
SELECT * FROM kafka.produce('nulls', 'k'::bytea, NULL::bytea);
SELECT * FROM kafka.produce('nulls', 'k'::bytea, ''::bytea);
SELECT "offset", key IS NULL AS null_key, value IS NULL AS null_value, length(value)
  FROM kafka.fetch('nulls', 0);

-- from_offset and max_records.
SELECT kafka.create_topic('seq', 1);
SELECT count(*) FROM (SELECT kafka.produce('seq', NULL::text, 'r' || g, partition => 0)
                        FROM generate_series(0, 9) g) s;
-- (the transaction's marker takes offset 10: write it now, not when the
-- resolver gets to it, so the log end below is the same every run)
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT "offset", value FROM kafka.fetch_text('seq', 0, 4, 3);
SELECT count(*) FROM kafka.fetch('seq', 0, 0, 0);

-- The batch form: many records in one call, one batch per partition.
SELECT kafka.create_topic('batch', 3);
SELECT partition, base_offset, record_count
  FROM kafka.produce_batch('batch', ARRAY['a', 'b', 'c', 'd', 'e', 'f'],
                           ARRAY['1', '2', '3', '4', '5', '6'])
 ORDER BY partition;
SELECT p, count(*) FROM generate_series(0, 2) p, kafka.fetch('batch', p) GROUP BY p ORDER BY p;
-- Each key went to its murmur2 partition.
SELECT bool_and(partition = kafka.partition_for_key(key, 3)) AS keys_in_place
  FROM generate_series(0, 2) p, kafka.fetch('batch', p);
SELECT * FROM kafka.produce_batch('batch', NULL::bytea[], ARRAY['x'::bytea, NULL], partition => 2);
SELECT * FROM kafka.produce_batch('batch', ARRAY['a'], ARRAY['1', '2']);
SELECT * FROM kafka.produce_batch('batch', NULL::text[], NULL::text[]);
SELECT * FROM kafka.produce_batch('batch', NULL::text[], ARRAY[]::text[]);

-- list_offsets: earliest (-2), latest (-1), largest timestamp (-3), and by time.
SELECT kafka.create_topic('times', 1);
SELECT "offset" FROM kafka.produce('times', NULL::text, 't1', "timestamp" => '2026-01-01 00:00:00+00');
SELECT "offset" FROM kafka.produce('times', NULL::text, 't2', "timestamp" => '2026-01-01 00:01:00+00');
SELECT "offset" FROM kafka.produce('times', NULL::text, 't3', "timestamp" => '2026-01-01 00:02:00+00');
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT kafka.earliest_offset('times', 0), kafka.latest_offset('times', 0);
SELECT * FROM kafka.list_offsets('times', 0, '2026-01-01 00:00:30+00'::timestamptz);
SELECT * FROM kafka.list_offsets('times', 0, '2026-01-01 00:01:00+00'::timestamptz);
SELECT * FROM kafka.list_offsets('times', 0, '2027-01-01 00:00:00+00'::timestamptz);
SELECT * FROM kafka.list_offsets('times', 0, -3::bigint);

-- Errors, with Kafka's error code in the SQLSTATE (class KP).
\set VERBOSITY sqlstate
SELECT * FROM kafka.produce('no_such_topic', 'k', 'v');
SELECT * FROM kafka.produce('pf', 'k', 'v', partition => 4);
SELECT * FROM kafka.produce('pf', 'k', 'v', partition => -1);
SELECT * FROM kafka.fetch('pf', 9);
SELECT * FROM kafka.fetch('seq', 0, 12);
SELECT * FROM kafka.fetch('seq', 0, -1);
SELECT * FROM kafka.fetch('seq', 0, 0, -1);
SELECT * FROM kafka.fetch('seq', 0, 0, 10, 'serializable');
SELECT * FROM kafka.produce('pf', 'k', 'v', "timestamp" => now() + interval '2 hours');
SELECT kafka.create_topic('small', 1, '{"max.message.bytes": "1000"}');
SELECT * FROM kafka.produce('small', NULL::text, repeat('x', 2000));
SELECT * FROM kafka.produce('pf', 'k', 'v', headers => ARRAY[(NULL, 'x')::kafka.header]);
\set VERBOSITY default
SELECT * FROM kafka.fetch('seq', 0, 12);
SELECT * FROM kafka.produce('small', NULL::text, repeat('x', 2000));
SELECT * FROM kafka.list_offsets('seq', 0, -4::bigint);
-- Invalid text is refused by the text form, not mangled.
SELECT * FROM kafka.produce('nulls', NULL::bytea, '\xff'::bytea);
SELECT value FROM kafka.fetch_text('nulls', 0, 3);
SELECT value FROM kafka.fetch('nulls', 0, 3);
