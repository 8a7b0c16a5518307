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
SELECT kafka.share_acknowledge('classic-readers', 'sq', 0, 0);

-- a topic deleted and created again: the group starts over on the new one
SELECT kafka.delete_topic('sq');
SELECT kafka.create_topic('sq', 1);
SELECT count(*) FROM kafka.produce_batch('sq', NULL::text[], ARRAY['new-0', 'new-1']);
SELECT partition, "offset", delivery_count, convert_from(value, 'UTF8') AS value
FROM kafka.share_acquire('workers', 'sq', 10);
SELECT kafka.delete_topic('sq');
DELETE FROM kafka.group_configs WHERE group_id = 'workers';

-- The in-flight state is runs of offsets (src/share/README): an
-- acquisition of new records is one run; an acknowledgement of part of a
-- run splits it; a redelivery takes whole runs, the last one split at
-- max_records.
SELECT kafka.create_topic('sq-runs', 1);
SELECT count(*) FROM kafka.produce_batch('sq-runs', NULL::text[],
  (SELECT array_agg('r-' || i) FROM generate_series(0, 9) i));
-- its commit marker (the resolver's) before the share acquisitions read the log end
SELECT kafka.flush_markers() >= 0 AS flushed;
INSERT INTO kafka.group_configs VALUES ('runs', 'share.auto.offset.reset', 'earliest'),
  ('runs', 'share.delivery.count.limit', '2');
CREATE TEMP VIEW runs AS
  SELECT first_offset, last_offset, state, delivery_count, acq_xid IS NOT NULL AS held_for_sql
  FROM kafka.share_records WHERE group_id = 'runs' ORDER BY first_offset;
BEGIN;
SELECT "offset", delivery_count, convert_from(value, 'UTF8') AS value
FROM kafka.share_acquire('runs', 'sq-runs', 8);
SELECT * FROM runs;
-- partial acknowledgements: accept 2-3, release 4-5, reject 6
SELECT kafka.share_acknowledge('runs', 'sq-runs', 0, 2, 3);
SELECT kafka.share_acknowledge('runs', 'sq-runs', 0, 4, 5, 'release');
SELECT kafka.share_acknowledge('runs', 'sq-runs', 0, 6, NULL, 'reject');
SELECT * FROM runs;
-- a range that is partly acknowledged already is not all held
SAVEPOINT s;
SELECT kafka.share_acknowledge('runs', 'sq-runs', 0, 3, 4);
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT start_offset, end_offset, acquired, available, archived, lag FROM kafka.share_group_status
WHERE group_id = 'runs';
-- this session still holds the pieces 0-1 and 7 after its COMMIT
BEGIN;
SELECT kafka.share_acknowledge('runs', 'sq-runs', 0, 0, 1);
SELECT kafka.share_acknowledge('runs', 'sq-runs', 0, 7);
COMMIT;
-- redelivery of part of the released run 4-5: split at max_records; then a
-- ROLLBACK: offset 4 available again, its second delivery counted
BEGIN;
SELECT "offset", delivery_count FROM kafka.share_acquire('runs', 'sq-runs', 1);
SELECT * FROM runs;
ROLLBACK;
-- 4 reached the delivery limit (2): archived; 5 comes with its second
-- delivery, then the new records 8-9, one run
BEGIN;
SELECT "offset", delivery_count FROM kafka.share_acquire('runs', 'sq-runs', 3);
SELECT * FROM runs;
-- release 5 and 8 (a split of the run 8-9), accept 9
SELECT kafka.share_acknowledge('runs', 'sq-runs', 0, 5, NULL, 'release');
SELECT kafka.share_acknowledge('runs', 'sq-runs', 0, 8, NULL, 'release');
SELECT kafka.share_acknowledge('runs', 'sq-runs', 0, 9);
COMMIT;
-- 5 had its two deliveries: archived; 8 comes back a second time
BEGIN;
SELECT "offset", delivery_count FROM kafka.share_acquire('runs', 'sq-runs', 10);
SELECT kafka.share_acknowledge('runs', 'sq-runs', 0, 8);
COMMIT;
SELECT start_offset, end_offset, acquired, available, archived, lag FROM kafka.share_group_status
WHERE group_id = 'runs';

-- a ROLLBACK of a transaction holding several runs, each partly
-- acknowledged: every run comes back whole, its delivery counted (offset
-- 10 is the commit marker of the SQL transaction that produced 0-9)
SELECT count(*) FROM kafka.produce_batch('sq-runs', NULL::text[],
  (SELECT array_agg('s-' || i) FROM generate_series(11, 16) i));
-- its commit marker (the resolver's) before the share acquisitions read the log end
SELECT kafka.flush_markers() >= 0 AS flushed;
BEGIN;
SELECT "offset", delivery_count FROM kafka.share_acquire('runs', 'sq-runs', 2);
SELECT "offset", delivery_count FROM kafka.share_acquire('runs', 'sq-runs', 2);
SELECT kafka.share_acknowledge('runs', 'sq-runs', 0, 12, 13);
SELECT * FROM runs;
ROLLBACK;
SELECT * FROM runs;
BEGIN;
SELECT "offset", delivery_count FROM kafka.share_acquire('runs', 'sq-runs', 10);
SELECT * FROM runs;
SELECT kafka.share_acknowledge('runs', 'sq-runs', 0, 11, 16);
COMMIT;
-- the next acquisition moves the start offset past them all and the rows go
SELECT count(*) FROM kafka.share_acquire('runs', 'sq-runs', 10);
SELECT * FROM runs;
SELECT start_offset, end_offset, acquired, available, archived, lag FROM kafka.share_group_status
WHERE group_id = 'runs';
DROP VIEW runs;
SELECT kafka.delete_topic('sq-runs');
DELETE FROM kafka.group_configs WHERE group_id = 'runs';

-- The lag counts the records still to deliver or acknowledge: the
-- transaction markers of the window are not records (a Kafka client
-- acknowledges them as gaps).  Three SQL transactions of one record each:
-- records 0, 2, 4, their commit markers 1, 3, 5.
SELECT kafka.create_topic('sq-lag', 1);
-- (each marker flushed before the next record)
SELECT "offset" FROM kafka.produce('sq-lag', 'k', 'a');
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT "offset" FROM kafka.produce('sq-lag', 'k', 'b');
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT "offset" FROM kafka.produce('sq-lag', 'k', 'c');
SELECT kafka.flush_markers() >= 0 AS flushed;
INSERT INTO kafka.group_configs VALUES ('lag', 'share.auto.offset.reset', 'earliest');
CREATE TEMP VIEW lag_runs AS
  SELECT first_offset, last_offset, state, delivery_count
  FROM kafka.share_records WHERE group_id = 'lag' ORDER BY first_offset;
BEGIN;
SELECT "offset", delivery_count FROM kafka.share_acquire('lag', 'sq-lag', 10);
SELECT start_offset, end_offset, acquired, lag FROM kafka.share_group_status WHERE group_id = 'lag';
-- accept 2 and 4: offset 0 still holds the start offset; the lag is that
-- one record, not the markers 1 and 3 too
SELECT kafka.share_acknowledge('lag', 'sq-lag', 0, 2);
SELECT kafka.share_acknowledge('lag', 'sq-lag', 0, 4);
SELECT start_offset, end_offset, acquired, lag FROM kafka.share_group_status WHERE group_id = 'lag';
-- and the two done runs, with nothing but the marker 3 between them, are
-- one row
SELECT * FROM lag_runs;
COMMIT;

-- Acknowledgements one record at a time, in any order, do not leave a row
-- per record: done runs next to each other with the same state and
-- delivery count are merged (an archived one is not merged with an
-- acknowledged one).  Records 6-11, their marker 12.
SELECT count(*) FROM kafka.produce_batch('sq-lag', NULL::text[],
  (SELECT array_agg('m-' || i) FROM generate_series(6, 11) i));
SELECT kafka.flush_markers() >= 0 AS flushed;
BEGIN;
SELECT "offset", delivery_count FROM kafka.share_acquire('lag', 'sq-lag', 10);
SELECT kafka.share_acknowledge('lag', 'sq-lag', 0, 8);
SELECT kafka.share_acknowledge('lag', 'sq-lag', 0, 6);
SELECT * FROM lag_runs;
SELECT kafka.share_acknowledge('lag', 'sq-lag', 0, 7);
SELECT kafka.share_acknowledge('lag', 'sq-lag', 0, 10);
SELECT kafka.share_acknowledge('lag', 'sq-lag', 0, 9, NULL, 'reject');
SELECT kafka.share_acknowledge('lag', 'sq-lag', 0, 11);
SELECT * FROM lag_runs;
SELECT start_offset, end_offset, acquired, archived, lag FROM kafka.share_group_status
WHERE group_id = 'lag';
COMMIT;
-- the session still holds offset 0; accepted, it is not merged with 2-8:
-- no run is pending before them any more, SPSO passes them all next
SELECT kafka.share_acknowledge('lag', 'sq-lag', 0, 0);
SELECT * FROM lag_runs;
-- the next acquisition moves the start offset past them all; lag 0
SELECT count(*) FROM kafka.share_acquire('lag', 'sq-lag', 10);
SELECT * FROM lag_runs;
SELECT start_offset, end_offset, acquired, archived, lag FROM kafka.share_group_status
WHERE group_id = 'lag';
DROP VIEW lag_runs;
SELECT kafka.delete_topic('sq-lag');
DELETE FROM kafka.group_configs WHERE group_id = 'lag';
