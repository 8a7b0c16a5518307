--
-- Topics: names, partitions and configs, as Kafka has them.
--

-- A topic has a name, a partition count and optional configs (Kafka's names).
SELECT kafka.create_topic('orders', 3);
SELECT kafka.create_topic('events', 1, '{"retention.ms": "3600000", "cleanup.policy": "compact,delete"}');
SELECT kafka.create_topic('logs');   -- one partition by default

SELECT topic, partition_count FROM kafka.topic_list ORDER BY topic;
SELECT topic, partition, log_start_offset, log_end_offset, size_bytes, segment_count
  FROM kafka.partition_status ORDER BY topic, partition;

-- Effective configs: explicit ones and Kafka's defaults.
SELECT name, value, is_default FROM kafka.topic_configs
 WHERE topic = 'events' AND name IN ('retention.ms', 'cleanup.policy', 'segment.bytes', 'max.message.bytes')
 ORDER BY name;

-- Kafka's naming rules: 1-249 of [a-zA-Z0-9._-], not "." or "..".
SELECT kafka.create_topic('bad name', 1);
SELECT kafka.create_topic('', 1);
SELECT kafka.create_topic('..', 1);
-- Kafka's internal topics are not made: kafka_pg keeps what they hold in its catalog.
SELECT kafka.create_topic('__consumer_offsets', 1);
SELECT kafka.create_topic(repeat('x', 250), 1);
SELECT kafka.create_topic(repeat('x', 249), 1);
SELECT kafka.delete_topic(repeat('x', 249));
-- '.' and '_' collide, as in Kafka's metric names.
SELECT kafka.create_topic('my.topic', 1);
SELECT kafka.create_topic('my_topic', 1);
SELECT kafka.create_topic('orders', 1);
SELECT kafka.create_topic('zero', 0);
SELECT kafka.create_topic(NULL, 1);

-- Configs are validated: unknown keys and bad values name the key and value.
SELECT kafka.create_topic('c1', 1, '{"retention.msec": "1"}');
SELECT kafka.create_topic('c1', 1, '{"retention.ms": "soon"}');
SELECT kafka.create_topic('c1', 1, '{"retention.ms": "-2"}');
SELECT kafka.create_topic('c1', 1, '{"segment.bytes": "1024"}');
SELECT kafka.create_topic('c1', 1, '{"cleanup.policy": "archive"}');
SELECT kafka.create_topic('c1', 1, '{"compression.type": "brotli"}');
SELECT kafka.create_topic('c1', 1, '{"min.cleanable.dirty.ratio": "1.5"}');
SELECT kafka.create_topic('c1', 1, '{"message.timestamp.type": "logappendtime"}');
SELECT kafka.create_topic('c1', 1, '{"max.message.bytes": 99999999999}');
SELECT kafka.create_topic('c1', 1, '["retention.ms"]');
-- Numbers and booleans may be given as JSON numbers and booleans.
SELECT kafka.create_topic('c1', 1, '{"retention.ms": 60000, "preallocate": true}');
SELECT name, value FROM kafka.topic_configs
 WHERE topic = 'c1' AND NOT is_default ORDER BY name;

-- Altering configs: set, and reset to the default with null.
SELECT kafka.alter_topic_config('c1', '{"retention.ms": "120000", "preallocate": null}');
SELECT name, value FROM kafka.topic_configs
 WHERE topic = 'c1' AND NOT is_default ORDER BY name;
SELECT kafka.alter_topic_config('c1', '{"segment.ms": "0"}');
SELECT kafka.alter_topic_config('nope', '{"segment.ms": "1000"}');
-- cleanup.policy is a list as Kafka 4.4's: empty (no policy: the log is kept whole, DeleteRecords
-- refused), a repeat dropped, an empty element refused.
SELECT kafka.alter_topic_config('c1', '{"cleanup.policy": ""}');
SELECT name, value FROM kafka.topic_configs WHERE topic = 'c1' AND name = 'cleanup.policy';
SELECT kafka.delete_records('c1', 0, 0);
SELECT kafka.alter_topic_config('c1', '{"cleanup.policy": "compact, delete,compact"}');
SELECT name, value FROM kafka.topic_configs WHERE topic = 'c1' AND name = 'cleanup.policy';
SELECT kafka.alter_topic_config('c1', '{"cleanup.policy": "delete,,compact"}');
SELECT kafka.alter_topic_config('c1', '{"cleanup.policy": null}');

-- Partitions can be added, never removed.
SELECT kafka.add_partitions('orders', 5);
SELECT partition_count FROM kafka.topic_list WHERE topic = 'orders';
SELECT kafka.add_partitions('orders', 4);
SELECT kafka.add_partitions('orders', 5);

-- Deleting a topic removes its partitions and configs; the name is free again.
SELECT kafka.delete_topic('c1');
SELECT kafka.delete_topic('c1');
SELECT count(*) FROM kafka.topic_config_overrides o
  WHERE NOT EXISTS (SELECT 1 FROM kafka.topics t WHERE t.topic_id = o.topic_id);
SELECT kafka.create_topic('c1', 2);
SELECT topic, partition_count FROM kafka.topic_list WHERE topic = 'c1';

-- Topic DDL is transactional.
BEGIN;
SELECT kafka.create_topic('in_tx', 2);
SELECT * FROM kafka.produce('in_tx', NULL::text, 'x', partition => 1);
ROLLBACK;
SELECT count(*) FROM kafka.topic_list WHERE topic = 'in_tx';
BEGIN;
SELECT kafka.delete_topic('logs');
ROLLBACK;
SELECT topic FROM kafka.topic_list WHERE topic = 'logs';
