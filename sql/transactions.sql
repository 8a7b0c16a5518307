--
-- Produce is transactional: records become visible when the producing
-- transaction commits, and never if it rolls back.  As in Kafka, each
-- transaction's end is marked in the log by a control record that takes an
-- offset; readers never see the markers.
--
SELECT kafka.create_topic('tx', 1);

BEGIN;
SELECT * FROM kafka.produce('tx', 'a', 'committed');
-- Not visible yet, not even to this transaction (Kafka's read_committed).
SELECT count(*) FROM kafka.fetch('tx', 0);
-- read_uncommitted shows it.
SELECT "offset", value FROM kafka.fetch_text('tx', 0, 0, 10, 'read_uncommitted');
COMMIT;
SELECT "offset", value FROM kafka.fetch_text('tx', 0);

-- A rolled-back transaction's records are never visible.  Its records and
-- its abort marker still take offsets (Kafka's log keeps aborted batches).
BEGIN;
SELECT * FROM kafka.produce('tx', 'b', 'rolled back');
ROLLBACK;
SELECT * FROM kafka.produce('tx', 'c', 'after the rollback');
SELECT "offset", value FROM kafka.fetch_text('tx', 0);
SELECT "offset", value FROM kafka.fetch_text('tx', 0, 0, 10, 'read_uncommitted');

-- kafka.dump_log shows the log as stored: the data batches of each
-- transaction and the marker that ended it.
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT base_offset, record_count, is_transactional, is_control, control_type
  FROM kafka.dump_log('tx', 0);

-- Savepoints: ROLLBACK TO SAVEPOINT drops just what was produced after it.
BEGIN;
SELECT * FROM kafka.produce('tx', 'd', 'kept 1');
SAVEPOINT s1;
SELECT * FROM kafka.produce('tx', 'e', 'dropped');
ROLLBACK TO SAVEPOINT s1;
SELECT * FROM kafka.produce('tx', 'f', 'kept 2');
SAVEPOINT s2;
SELECT * FROM kafka.produce('tx', 'g', 'kept 3 (released savepoint)');
RELEASE SAVEPOINT s2;
COMMIT;
SELECT "offset", key, value FROM kafka.fetch_text('tx', 0) WHERE "offset" > 4;

-- An error aborts the transaction and its records with it.
BEGIN;
SELECT * FROM kafka.produce('tx', 'h', 'lost with the error');
SELECT 1 / 0;
COMMIT;
SELECT count(*) FROM kafka.fetch_text('tx', 0) WHERE key = 'h';

-- Records and business rows commit or roll back together (the outbox).
CREATE TABLE orders (id int PRIMARY KEY, amount numeric);
BEGIN;
INSERT INTO orders VALUES (1, 10.00);
SELECT "offset" FROM kafka.produce('tx', 'order-1', '{"id": 1, "amount": 10.00}'::jsonb);
COMMIT;
BEGIN;
INSERT INTO orders VALUES (2, 20.00);
SELECT "offset" FROM kafka.produce('tx', 'order-2', '{"id": 2, "amount": 20.00}'::jsonb);
ROLLBACK;
SELECT (SELECT count(*) FROM orders) AS order_rows,
       (SELECT count(*) FROM kafka.fetch_text('tx', 0) WHERE key LIKE 'order-%') AS order_records;

-- A reader stops at the first record of a transaction still in progress
-- (the last stable offset), so it never skips past it.  A second session
-- (dblink) keeps a transaction open until we release an advisory lock.
CREATE EXTENSION dblink;
SELECT kafka.create_topic('lso', 1);
SELECT * FROM kafka.produce('lso', NULL::text, 'before');
SELECT pg_advisory_lock(1);
SELECT dblink_connect('other', format('dbname=%s port=%s host=%s', current_database(),
       current_setting('port'), split_part(current_setting('unix_socket_directories'), ',', 1)));
SELECT dblink_send_query('other', $$BEGIN; SELECT kafka.produce('lso', NULL::text, 'open');
                                    SELECT pg_advisory_lock(1); COMMIT;$$);
DO $$ BEGIN
  FOR i IN 1..600 LOOP
    EXIT WHEN EXISTS (SELECT 1 FROM kafka.fetch_text('lso', 0, 0, 10, 'read_uncommitted') WHERE value = 'open');
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT * FROM kafka.produce('lso', NULL::text, 'after the open one');
SELECT "offset", value FROM kafka.fetch_text('lso', 0);
SELECT "offset", value FROM kafka.fetch_text('lso', 0, 0, 10, 'read_uncommitted');
SELECT pg_advisory_unlock(1);
SELECT count(*) FROM dblink_get_result('other') AS r(x text);
SELECT dblink_disconnect('other');
SELECT "offset", value FROM kafka.fetch_text('lso', 0);

-- A SQL transaction that produced may not idle for ever, holding back the
-- last stable offset: its first produce sets idle_in_transaction_session_timeout
-- to kafka.transaction_idle_timeout_ms (15 minutes, Kafka's
-- transaction.max.timeout.ms) for that transaction only, unless a shorter
-- one is in force.
SHOW kafka.transaction_idle_timeout_ms;
BEGIN;
SHOW idle_in_transaction_session_timeout;
SELECT "offset" FROM kafka.produce('lso', NULL::text, 'bounded');
SHOW idle_in_transaction_session_timeout;
COMMIT;
SHOW idle_in_transaction_session_timeout;
SET idle_in_transaction_session_timeout = '1min';
BEGIN;
SELECT "offset" FROM kafka.produce('lso', NULL::text, 'shorter');
SHOW idle_in_transaction_session_timeout;
COMMIT;
RESET idle_in_transaction_session_timeout;

-- The wire transaction coordinator keeps its state in catalog tables
-- (docs/transactions.md); with no transactional producer they are empty.
SELECT count(*) FROM kafka.transactions;
SELECT count(*) FROM kafka.transaction_partitions;
SELECT count(*) FROM kafka.transaction_offsets;

-- A session left idle in such a transaction is ended, and the last stable
-- offset moves on: its record is rolled back, the records after it are read.
SELECT dblink_connect('idle', format('dbname=%s port=%s host=%s', current_database(),
       current_setting('port'), split_part(current_setting('unix_socket_directories'), ',', 1)));
SELECT dblink_exec('idle', 'SET kafka.transaction_idle_timeout_ms = 300');
SELECT dblink_exec('idle', 'BEGIN');
SELECT * FROM dblink('idle', $$SELECT "offset" FROM kafka.produce('lso', NULL::text, 'left idle')$$) AS t(o bigint);
SELECT * FROM kafka.produce('lso', NULL::text, 'after the idle one');
SELECT count(*) FILTER (WHERE value = 'after the idle one') AS visible FROM kafka.fetch_text('lso', 0);
SELECT pg_sleep(1.5);
DO $$ BEGIN
  PERFORM dblink_exec('idle', 'SELECT 1');
  RAISE NOTICE 'the idle session is still there';
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE 'the idle session was ended';
END $$;
SELECT dblink_disconnect('idle');
SELECT value FROM kafka.fetch_text('lso', 0) WHERE value IN ('left idle', 'after the idle one');
