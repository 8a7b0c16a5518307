--
-- Consumer groups from SQL.
--
SELECT kafka.create_topic('cg', 6);
SELECT sum(record_count) FROM kafka.produce_batch('cg',
  (SELECT array_agg('key-' || g) FROM generate_series(1, 60) g),
  (SELECT array_agg('value-' || g) FROM generate_series(1, 60) g));

-- kafka.consume: the common case.  Records come from the group's committed
-- offsets, and the new offsets commit with the caller's transaction.
BEGIN;
SELECT count(*) FROM kafka.consume('billing', 'cg', 25);
ROLLBACK;
SELECT count(*) AS committed_offsets FROM kafka.committed_offsets WHERE group_id = 'billing';
BEGIN;
SELECT count(*) FROM kafka.consume('billing', 'cg', 25);
COMMIT;
SELECT count(*) FROM kafka.consume('billing', 'cg', 1000);
SELECT count(*) FROM kafka.consume('billing', 'cg', 1000);
-- lag per partition: committed offset against the log end offset
SELECT partition, lag FROM kafka.consumer_group_lag WHERE group_id = 'billing' ORDER BY partition;
-- another group reads the same topic independently
SELECT count(*) FROM kafka.consume('audit', 'cg', 1000);
-- a new group can start from the end instead of the beginning
SELECT count(*) FROM kafka.consume('late-joiner', 'cg', 1000, 'latest');

-- A SQL session as a member of a consumer-protocol group (KIP-848): the
-- coordinator assigns partitions to members; a partition moves only when
-- its previous owner has let go of it.
SELECT member_id AS a_id, member_epoch AS a_epoch, cardinality(partitions) AS a_parts
  FROM kafka.group_heartbeat('sqlg', NULL, 0, ARRAY['cg']) \gset
SELECT :a_epoch > 0 AS a_joined, :a_parts AS a_partitions;
SELECT member_id AS b_id, member_epoch AS b_epoch, cardinality(partitions) AS b_parts
  FROM kafka.group_heartbeat('sqlg', NULL, 0, ARRAY['cg']) \gset
-- b waits: all six partitions are still a's
SELECT :b_parts AS b_partitions_at_first;
-- a's next heartbeat gives up half; then b gets them
SELECT cardinality(partitions) AS a_partitions FROM kafka.group_heartbeat('sqlg', :'a_id', :a_epoch);
SELECT member_epoch AS b_epoch, cardinality(partitions) AS b_parts
  FROM kafka.group_heartbeat('sqlg', :'b_id', :b_epoch) \gset
SELECT :b_parts AS b_partitions;
SELECT partitions && (SELECT partitions FROM kafka.group_heartbeat('sqlg', :'b_id', :b_epoch)) AS overlap
  FROM kafka.group_heartbeat('sqlg', :'a_id', :a_epoch);
-- each member polls its own partitions; together they read everything once
CREATE TEMP TABLE seen AS SELECT 'a' AS m, value FROM kafka.group_poll_text('sqlg', :'a_id', 1000);
INSERT INTO seen SELECT 'b', value FROM kafka.group_poll_text('sqlg', :'b_id', 1000);
SELECT count(*), count(DISTINCT value), count(DISTINCT m) FROM seen;
SELECT count(*) FROM kafka.group_poll('sqlg', :'a_id', 1000);
-- b leaves; a gets everything back
SELECT member_epoch FROM kafka.group_heartbeat('sqlg', :'b_id', -1);
SELECT cardinality(partitions) AS a_partitions FROM kafka.group_heartbeat('sqlg', :'a_id', :a_epoch);
SELECT group_id, state, group_type FROM kafka.consumer_groups WHERE group_id = 'sqlg';
\set VERBOSITY sqlstate
-- KP025: UNKNOWN_MEMBER_ID
SELECT * FROM kafka.group_poll('sqlg', :'b_id', 10);
\set VERBOSITY terse
SELECT * FROM kafka.group_heartbeat('sqlg', 'nobody', 5);
-- Kafka's errors and words: leaving as a member the group does not have
-- (KP025) changes nothing; a group that does not exist (KP069) is not made
\set VERBOSITY default
SELECT * FROM kafka.group_heartbeat('sqlg', 'nobody', -1);
SELECT * FROM kafka.group_heartbeat('sqlg-none', 'nobody', 3);
SELECT * FROM kafka.group_heartbeat('sqlg-none', 'nobody', -1);
\set VERBOSITY terse
SELECT count(*) AS made FROM kafka.consumer_groups WHERE group_id = 'sqlg-none';
SELECT * FROM kafka.consume('', 'cg');

-- kafka.consume keeps off the partitions that members hold, consumer-protocol
-- members too: while a holds all six partitions of cg, it reads none of the
-- new records; once a has left, all of them.
SELECT sum(record_count) FROM kafka.produce_batch('cg',
  (SELECT array_agg('key-' || g) FROM generate_series(61, 72) g),
  (SELECT array_agg('value-' || g) FROM generate_series(61, 72) g));
SELECT count(*) AS while_a_holds_them FROM kafka.consume('sqlg', 'cg', 1000);
SELECT member_epoch FROM kafka.group_heartbeat('sqlg', :'a_id', -1);
SELECT count(*) AS after_a_left FROM kafka.consume('sqlg', 'cg', 1000);
