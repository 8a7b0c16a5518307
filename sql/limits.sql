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
