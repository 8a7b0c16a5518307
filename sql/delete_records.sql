--
-- Deleting records: Kafka's DeleteRecords (KIP-107).  kafka.delete_records
-- moves a partition's log start offset forward; nothing before it can be
-- fetched any more, and the segments that end before it leave the log.
--
SELECT kafka.create_topic('dr', 2, '{"segment.bytes": "1048576"}');

-- About 3 MB in batches of 100 records of 1000 bytes: three segments.  The
-- statement's transaction commits with a marker at offset 3000.
SELECT count(*), sum(r.record_count)
  FROM generate_series(1, 30) b,
  LATERAL kafka.produce_batch('dr', NULL,
            (SELECT array_agg(convert_to(lpad(b::text || '-' || g::text, 1000, '.'), 'UTF8'))
               FROM generate_series(1, 100) g), partition => 0) r;
-- (write the marker now rather than wait for the resolver)
SELECT kafka.flush_markers() >= 0 AS flushed;
SELECT base_offset FROM kafka.segments WHERE topic = 'dr' AND partition = 0 ORDER BY 1;

-- Delete everything before offset 1500 (inside the second segment).  The
-- result is the new log start offset.
SELECT kafka.delete_records('dr', 0, 1500);
SELECT log_start_offset, log_end_offset FROM kafka.partition_status WHERE topic = 'dr' AND partition = 0;
SELECT kafka.earliest_offset('dr', 0);

-- Fetching from the log start works; before it is OFFSET_OUT_OF_RANGE (KP001).
SELECT "offset" FROM kafka.fetch('dr', 0, 1500, 2);
\set VERBOSITY sqlstate
SELECT "offset" FROM kafka.fetch('dr', 0, 0, 1);
SELECT "offset" FROM kafka.fetch('dr', 0, 1499, 1);
\set VERBOSITY default

-- The first segment ended below 1500: it is gone.  The second, which holds
-- offset 1500, stays (Kafka only ever drops whole segments).
SELECT base_offset FROM kafka.segments WHERE topic = 'dr' AND partition = 0 ORDER BY 1;

-- A timestamp lookup never answers an offset below the log start.
SELECT "offset" FROM kafka.list_offsets('dr', 0, '2000-01-01'::timestamptz);

-- An offset at or below the log start changes nothing (not an error, as in Kafka).
SELECT kafka.delete_records('dr', 0, 10);
-- Past the high watermark is OFFSET_OUT_OF_RANGE, as is a negative offset.
SELECT kafka.delete_records('dr', 0, 3002);
SELECT kafka.delete_records('dr', 0, -5);
-- Unknown partitions and topics.
SELECT kafka.delete_records('dr', 7, 0);
SELECT kafka.delete_records('nope', 0, 0);

-- The move is not transactional (as in Kafka): a rolled-back deletion still
-- moves the log start, and the segments wholly below it leave the log with
-- it.  Their storage is dropped file.delete.delay.ms later, by a cleaner
-- pass (test/recovery/delayed_drop.py).
BEGIN;
SELECT kafka.delete_records('dr', 0, 2500);
ROLLBACK;
SELECT kafka.earliest_offset('dr', 0);
SELECT base_offset FROM kafka.segments WHERE topic = 'dr' AND partition = 0 ORDER BY 1;
SELECT kafka.delete_records('dr', 0, 2500);
SELECT base_offset FROM kafka.segments WHERE topic = 'dr' AND partition = 0 ORDER BY 1;

-- -1 means the high watermark: everything is deleted; the active segment
-- stays, and producing goes on from the same offset.
SELECT kafka.delete_records('dr', 0, -1);
SELECT log_start_offset, log_end_offset, segment_count FROM kafka.partition_status WHERE topic = 'dr' AND partition = 0;
SELECT count(*) FROM kafka.fetch('dr', 0, 3001, 10);
SELECT "offset" FROM kafka.produce('dr', NULL::text, 'after', partition => 0);
SELECT "offset", value FROM kafka.fetch_text('dr', 0, 3001, 10);

-- An empty partition: the only valid offsets are 0 and -1.
SELECT kafka.delete_records('dr', 1, -1);
SELECT kafka.delete_records('dr', 1, 0);

-- Compacted topics refuse (POLICY_VIOLATION, KP044).
SELECT kafka.create_topic('dr_compact', 1, '{"cleanup.policy": "compact"}');
SELECT kafka.delete_records('dr_compact', 0, 0);

-- The log start offset is stored with the segments: a new session sees it.
\c
SELECT log_start_offset FROM kafka.partition_status WHERE topic = 'dr' ORDER BY partition;
SELECT "offset", value FROM kafka.fetch_text('dr', 0, 3001, 10);

SELECT kafka.delete_topic('dr');
SELECT kafka.delete_topic('dr_compact');

-- DeleteRecords and delete_topic in one transaction reach the same segments
-- twice; each file is dropped once (a commit record listing a file twice
-- failed its commit with a PANIC, and crash recovery the same way).  Also
-- with a savepoint rolled back in between, whose drops must not count.
SELECT kafka.create_topic('dr_twice', 1, '{"segment.bytes": "1048576"}');
SELECT count(*)
  FROM generate_series(1, 25) b,
  LATERAL kafka.produce_batch('dr_twice', NULL,
            (SELECT array_agg(convert_to(lpad(b::text || '-' || g::text, 1000, '.'), 'UTF8'))
               FROM generate_series(1, 100) g)) r;
SELECT count(*) >= 2 AS several_segments FROM kafka.segments WHERE topic = 'dr_twice';
BEGIN;
SAVEPOINT s;
SELECT kafka.delete_records('dr_twice', 0, 2000) > 0 AS moved;
ROLLBACK TO SAVEPOINT s;
SELECT kafka.delete_records('dr_twice', 0, 2000) > 0 AS moved;
SELECT kafka.delete_topic('dr_twice');
COMMIT;
SELECT count(*) FROM kafka.topic_list WHERE topic = 'dr_twice';
