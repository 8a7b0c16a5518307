--
-- One visibility layer, in the store.  Once a transaction has its marker,
-- the marker decides it for every reader: an ABORT marker's transaction is
-- recorded in the aborted-transaction index of the segment that holds the
-- marker (Kafka's .txnindex), and a transaction with a marker but no index
-- entry committed.  The commit log is asked only about a SQL transaction
-- that has no marker yet, because PostgreSQL forgets old transactions once
-- it has frozen and truncated pg_xact.
--
SELECT kafka.create_topic('vis', 1, '{"segment.bytes": "1048576"}');

-- Committed and rolled-back SQL transactions interleaved, with savepoints.
BEGIN;
SELECT "offset" FROM kafka.produce('vis', 'k', 'c1 committed');
COMMIT;
BEGIN;
SELECT "offset" FROM kafka.produce('vis', 'k', 'r1 rolled back');
ROLLBACK;
BEGIN;
SELECT "offset" FROM kafka.produce('vis', 'k', 'c2 committed');
SAVEPOINT s;
SELECT "offset" FROM kafka.produce('vis', 'k', 'r2 rolled back to a savepoint');
ROLLBACK TO SAVEPOINT s;
SELECT "offset" FROM kafka.produce('vis', 'k', 'c3 committed after the savepoint');
SAVEPOINT t;
SELECT "offset" FROM kafka.produce('vis', 'k', 'c4 released savepoint');
RELEASE SAVEPOINT t;
COMMIT;
BEGIN;
SELECT "offset" FROM kafka.produce('vis', 'k', 'r3 rolled back');
SAVEPOINT u;
SELECT "offset" FROM kafka.produce('vis', 'k', 'r4 released, then all rolled back');
RELEASE SAVEPOINT u;
ROLLBACK;
SELECT "offset" FROM kafka.produce('vis', 'k', 'c5 autocommit');

-- Read at once: the committed records, in order, none of the rolled back.
SELECT "offset", value FROM kafka.fetch_text('vis', 0);
-- read_uncommitted shows every data record.
SELECT "offset", value FROM kafka.fetch_text('vis', 0, 0, 100, 'read_uncommitted');

-- Every transaction gets its marker (the resolver's job; flushed here).
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT base_offset, is_control, control_type FROM kafka.dump_log('vis', 0) WHERE is_control;

-- Now ask as if PostgreSQL had forgotten every transaction (pg_xact truncated
-- past them): the markers and the index alone decide, and the answer is the
-- same.  (Before issue 8 the commit log answered "committed" for forgotten
-- transactions and the rolled-back records came back.)
SET kafka.debug_past_commit_log = on;
SELECT "offset", value FROM kafka.fetch_text('vis', 0);
-- From inside the log, and from the offset of a rolled-back record.
SELECT "offset", value FROM kafka.fetch_text('vis', 0, 2, 3);
SELECT "offset", value FROM kafka.consume_text('vis-group', 'vis');
RESET kafka.debug_past_commit_log;

-- A transaction whose ABORT marker lands in a later segment than its records:
-- the reader collects the index entries of the segments after the one it
-- reads, as Kafka's collectAbortedTransactions does.  About 1.1 MB in one
-- rolled-back transaction rolls a 1 MiB segment in its middle.
SELECT kafka.create_topic('vis-big', 1, '{"segment.bytes": "1048576"}');
SELECT "offset" FROM kafka.produce('vis-big', 'k', 'first, committed');
BEGIN;
SELECT count(*) FROM generate_series(1, 11) b,
  LATERAL kafka.produce_batch('vis-big', NULL,
            (SELECT array_agg(convert_to(lpad(b::text || '-' || g::text, 1000, '.'), 'UTF8'))
               FROM generate_series(1, 100) g), partition => 0) r;
ROLLBACK;
SELECT "offset" FROM kafka.produce('vis-big', 'k', 'last, committed');
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT count(*) AS segments FROM kafka.segments WHERE topic = 'vis-big';
SET kafka.debug_past_commit_log = on;
SELECT "offset", value FROM kafka.fetch_text('vis-big', 0);
SELECT count(*) AS uncommitted_view FROM kafka.fetch('vis-big', 0, 0, 10000, 'read_uncommitted');
RESET kafka.debug_past_commit_log;

-- A transaction still open stops read_committed readers (the last stable
-- offset), with or without the commit log: a running transaction is always
-- in it.
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT kafka.create_topic('vis-open', 1);
SELECT "offset" FROM kafka.produce('vis-open', NULL::text, 'before');
SELECT pg_advisory_lock(2);
SELECT dblink_connect('vis_other', format('dbname=%s port=%s host=%s', current_database(),
       current_setting('port'), split_part(current_setting('unix_socket_directories'), ',', 1)));
SELECT dblink_send_query('vis_other', $$BEGIN; SELECT kafka.produce('vis-open', NULL::text, 'open');
                                        SELECT pg_advisory_lock(2); ROLLBACK;$$);
DO $$ BEGIN
  FOR i IN 1..600 LOOP
    EXIT WHEN EXISTS (SELECT 1 FROM kafka.fetch_text('vis-open', 0, 0, 10, 'read_uncommitted') WHERE value = 'open');
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT "offset" FROM kafka.produce('vis-open', NULL::text, 'after the open one');
SET kafka.debug_past_commit_log = on;
SELECT "offset", value FROM kafka.fetch_text('vis-open', 0);
RESET kafka.debug_past_commit_log;
SELECT pg_advisory_unlock(2);
SELECT count(*) FROM dblink_get_result('vis_other') AS r(x text);
SELECT dblink_disconnect('vis_other');
SELECT kafka.flush_markers() >= 0 AS flushed;
SET kafka.debug_past_commit_log = on;
SELECT "offset", value FROM kafka.fetch_text('vis-open', 0);
RESET kafka.debug_past_commit_log;

-- A segment's aborted-transaction index goes with the segment: DeleteRecords
-- past a segment holding an ABORT marker and delete_topic in one transaction
-- reach the segment, and its index, twice; each file is dropped once (a
-- commit record listing a file twice PANICs).
SELECT kafka.create_topic('vis-drop', 1, '{"segment.bytes": "1048576"}');
BEGIN;
SELECT "offset" FROM kafka.produce('vis-drop', 'k', 'rolled back');
ROLLBACK;
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT count(*) FROM generate_series(1, 12) b,
  LATERAL kafka.produce_batch('vis-drop', NULL,
            (SELECT array_agg(convert_to(lpad(b::text || '-' || g::text, 1000, '.'), 'UTF8'))
               FROM generate_series(1, 100) g), partition => 0) r;
SELECT count(*) >= 2 AS several_segments FROM kafka.segments WHERE topic = 'vis-drop';
BEGIN;
SELECT kafka.delete_records('vis-drop', 0, -1) > 0 AS moved;
SELECT kafka.delete_topic('vis-drop');
COMMIT;
SELECT count(*) FROM kafka.topic_list WHERE topic = 'vis-drop';
