--
-- Share groups (KIP-932) from SQL: docs/share-groups.md.
--
-- one partition: which partition a session starts at depends on its pid
SELECT kafka.create_topic('sq', 1);
SELECT count(*) FROM kafka.produce_batch('sq', NULL::text[],
  (SELECT array_agg('job-' || i) FROM generate_series(0, 9) i));
INSERT INTO kafka.group_configs VALUES ('workers', 'share.auto.offset.reset', 'earliest');

-- acquire, then roll back: the records are available again at once; the
-- acquisition committed on its own, so their delivery counted
BEGIN;
SELECT partition, "offset", delivery_count, convert_from(value, 'UTF8') AS value
FROM kafka.share_acquire('workers', 'sq', 3);
SELECT group_id, partition, acquired, available FROM kafka.share_group_status ORDER BY partition;
ROLLBACK;
SELECT partition, start_offset, end_offset, acquired, available FROM kafka.share_group_status
WHERE group_id = 'workers';
-- what was held for a transaction that rolled back cannot be acknowledged
SELECT kafka.share_acknowledge('workers', 'sq', 0, 0);

-- acquire, accept two, release one, commit
BEGIN;
SELECT partition, "offset", delivery_count FROM kafka.share_acquire('workers', 'sq', 3);
SELECT kafka.share_acknowledge('workers', 'sq', 0, 0, 1);
SELECT kafka.share_acknowledge('workers', 'sq', 0, 2, NULL, 'release');
COMMIT;
SELECT partition, start_offset, end_offset, acquired, available, archived
FROM kafka.share_group_status WHERE group_id = 'workers' ORDER BY partition;
-- the released record comes back first, with its third delivery
SELECT partition, "offset", delivery_count FROM kafka.share_acquire('workers', 'sq', 1);
-- acquired by this session in a transaction that committed: it still holds it
SELECT kafka.share_acknowledge('workers', 'sq', 0, 2, NULL, 'reject');
-- a record nobody acquired cannot be acknowledged
SELECT kafka.share_acknowledge('workers', 'sq', 0, 4);
SELECT partition, start_offset, acquired, available FROM kafka.share_group_status
WHERE group_id = 'workers' ORDER BY partition;

-- a record that makes every transaction that gets it roll back (a poison
-- record) is archived after share.delivery.count.limit deliveries
SELECT kafka.create_topic('sq-poison', 1);
SELECT count(*) FROM kafka.produce_batch('sq-poison', NULL::text[], ARRAY['poison', 'fine']);
INSERT INTO kafka.group_configs VALUES ('poisoned', 'share.auto.offset.reset', 'earliest'),
  ('poisoned', 'share.delivery.count.limit', '2');
BEGIN;
SELECT "offset", delivery_count, convert_from(value, 'UTF8') AS value FROM kafka.share_acquire('poisoned', 'sq-poison', 1);
ROLLBACK;
BEGIN;
SELECT "offset", delivery_count, convert_from(value, 'UTF8') AS value FROM kafka.share_acquire('poisoned', 'sq-poison', 1);
ROLLBACK;
-- twice delivered, twice rolled back: archived, and the next record comes
BEGIN;
SELECT "offset", delivery_count, convert_from(value, 'UTF8') AS value FROM kafka.share_acquire('poisoned', 'sq-poison', 1);
SELECT kafka.share_acknowledge('poisoned', 'sq-poison', 0, 1);
COMMIT;
SELECT count(*) FROM kafka.share_acquire('poisoned', 'sq-poison', 10);
SELECT start_offset, end_offset, acquired, available, archived, lag FROM kafka.share_group_status
WHERE group_id = 'poisoned';
SELECT kafka.delete_topic('sq-poison');
DELETE FROM kafka.group_configs WHERE group_id = 'poisoned';

-- the acquisition commits on its own: a snapshot older than it would not see it
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM kafka.share_acquire('workers', 'sq', 1);
ROLLBACK;

-- bad input
SELECT * FROM kafka.share_acquire('', 'sq', 1);
SELECT * FROM kafka.share_acquire('workers', 'sq', -1);
SELECT * FROM kafka.share_acquire('workers', 'no-such-topic', 1);
SELECT kafka.share_acknowledge('workers', 'sq', 0, 0, NULL, 'maybe');
SELECT kafka.share_acknowledge('workers', 'sq', 7, 0);
SELECT kafka.share_acknowledge('workers', 'sq', -1, 0);
SELECT kafka.share_acknowledge('workers', 'sq', 0, 5, 4);
SELECT kafka.share_acknowledge('workers', 'sq', NULL, 0);
-- a consumer group's id is not a share group's
SELECT count(*) FROM kafka.consume('classic-readers', 'sq', 1);
SELECT * FROM kafka.share_acquire('classic-readers', 'sq', 1);

-- a topic deleted and created again: the group starts over on the new one
SELECT kafka.delete_topic('sq');
SELECT kafka.create_topic('sq', 1);
SELECT count(*) FROM kafka.produce_batch('sq', NULL::text[], ARRAY['new-0', 'new-1']);
SELECT partition, "offset", delivery_count, convert_from(value, 'UTF8') AS value
FROM kafka.share_acquire('workers', 'sq', 10);
SELECT kafka.delete_topic('sq');
DELETE FROM kafka.group_configs WHERE group_id = 'workers';
