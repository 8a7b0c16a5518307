--
-- Limits on what one caller can make the server hold (issue 10).
--

-- Shared partition state only for partitions that exist: a raw partition id
-- that kafka.partitions does not have is refused before the store sees it.
SELECT * FROM kafka._partition_stats(987654321);
SELECT * FROM kafka._partition_segments(987654321);
\set VERBOSITY terse
-- More made-up ids than kafka.max_partitions (4096) holds entries for: each
-- is refused, and none takes an entry from the producers.
DO $$
DECLARE
	refused int := 0;
BEGIN
	FOR i IN 1..5000 LOOP
		BEGIN
			PERFORM kafka._partition_stats(1000000000 + i);
		EXCEPTION WHEN SQLSTATE 'KP003' THEN
			refused := refused + 1;
		END;
	END LOOP;
	RAISE NOTICE '% of 5000 made-up partition ids refused', refused;
END
$$;
\set VERBOSITY default
SELECT kafka.create_topic('limits_after', 2);
SELECT "offset" FROM kafka.produce('limits_after', 'k'::text, 'still served', partition => 1);
SELECT partition, log_end_offset >= partition AS stored FROM kafka.partition_status WHERE topic = 'limits_after' ORDER BY 1;
SELECT kafka.delete_topic('limits_after');

-- The store's shared state follows subtransactions: a partition created and
-- written in a subtransaction that rolls back gives its entry back at once
-- (its storage is gone with the subtransaction), so 6,000 such rollbacks in
-- three committed transactions, more than kafka.max_partitions (4096)
-- holds, leave room for producers.
CREATE FUNCTION pg_temp.create_and_roll_back(first int, last int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN first..last LOOP
		BEGIN
			PERFORM kafka.create_topic('limits_sp_' || i, 1);
			PERFORM kafka.produce('limits_sp_' || i, NULL::text, 'x', partition => 0);
			RAISE EXCEPTION 'roll back';
		EXCEPTION WHEN raise_exception THEN NULL;
		END;
	END LOOP;
END
$$;
SELECT pg_temp.create_and_roll_back(1, 2000);
SELECT pg_temp.create_and_roll_back(2001, 4000);
SELECT pg_temp.create_and_roll_back(4001, 6000);
SELECT kafka.create_topic('limits_sp_after', 1);
SELECT "offset" FROM kafka.produce('limits_sp_after', NULL::text, 'room left', partition => 0);

-- A topic deleted in a savepoint that rolls back keeps its partitions and
-- their state: the transaction's commit does not forget them.
SELECT kafka.create_topic('limits_sp_kept', 1);
SELECT "offset" >= 0 AS stored FROM kafka.produce('limits_sp_kept', NULL::text, 'before', partition => 0);
BEGIN;
SAVEPOINT s;
SELECT kafka.delete_topic('limits_sp_kept');
ROLLBACK TO SAVEPOINT s;
SELECT "offset" >= 0 AS stored FROM kafka.produce('limits_sp_kept', NULL::text, 'inside', partition => 0);
COMMIT;
SELECT "offset" >= 0 AS stored FROM kafka.produce('limits_sp_kept', NULL::text, 'after', partition => 0);
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT value FROM kafka.fetch_text('limits_sp_kept', 0, 0, 10) ORDER BY "offset";
SELECT kafka.delete_topic('limits_sp_kept');
SELECT kafka.delete_topic('limits_sp_after');


-- A partition created by the transaction and first written in a savepoint
-- that rolls back: its segment went with the savepoint, and so do its
-- state and (for this backend at once, for all at commit) its directory
-- entry; the next write starts a new segment.
BEGIN;
SELECT kafka.create_topic('limits_sp_parent', 1);
SAVEPOINT s;
SELECT "offset" FROM kafka.produce('limits_sp_parent', NULL::text, 'rolled back', partition => 0);
ROLLBACK TO SAVEPOINT s;
SELECT "offset" FROM kafka.produce('limits_sp_parent', NULL::text, 'kept', partition => 0);
SAVEPOINT t;
SELECT "offset" FROM kafka.produce('limits_sp_parent', NULL::text, 'kept too', partition => 0);
RELEASE SAVEPOINT t;
COMMIT;
SELECT kafka.flush_markers() >= 0 AS flushed;
\c
-- (a new backend reads the directory as committed)
SELECT value FROM kafka.fetch_text('limits_sp_parent', 0, 0, 10) ORDER BY "offset";
SELECT segment_count FROM kafka.partition_status WHERE topic = 'limits_sp_parent';
SELECT kafka.delete_topic('limits_sp_parent');

-- Every partition of the database must fit kafka.max_partitions (4096), or
-- the server would refuse the extra ones at their first use after its next
-- start: a topic or partitions beyond it are refused (KP037, Kafka's
-- INVALID_PARTITIONS), up to it accepted.
SELECT current_setting('kafka.max_partitions')::int - count(*) AS room FROM kafka.partitions \gset
SELECT kafka.create_topic('limits_total_a', :room - 1);
\set VERBOSITY terse
SELECT kafka.create_topic('limits_total_b', 2);
SELECT kafka.add_partitions('limits_total_a', :room + 1);
\set VERBOSITY default
SELECT kafka.create_topic('limits_total_b', 1);
SELECT count(*) = current_setting('kafka.max_partitions')::int AS full FROM kafka.partitions;
SELECT kafka.delete_topic('limits_total_a');
SELECT kafka.delete_topic('limits_total_b');
