--
-- The segment store: a partition's log is a list of segments, each a
-- relation file of its own; the active one rolls at segment.bytes.
--
SELECT kafka.create_topic('seg', 1, '{"segment.bytes": "1048576"}');

-- About 3 MB in batches of 100 records of 1000 bytes (100 kB each): a segment
-- holds ten of them before the next one would pass 1 MiB.
SELECT count(*), sum(r.record_count)
  FROM generate_series(1, 30) b,
  LATERAL kafka.produce_batch('seg', NULL,
            (SELECT array_agg(convert_to(lpad(b::text || '-' || g::text, 1000, '.'), 'UTF8'))
               FROM generate_series(1, 100) g), partition => 0) r;
SELECT kafka.flush_markers() >= 0 AS flushed;   -- the statement's commit marker, now
SELECT segment_count, log_start_offset, log_end_offset FROM kafka.partition_status WHERE topic = 'seg';
-- Segments start where the previous one ended, and none exceeds segment.bytes.
SELECT base_offset, size_bytes <= 1048576 AS within_limit FROM kafka.segments WHERE topic = 'seg' ORDER BY 1;
SELECT sum(size_bytes) = (SELECT size_bytes FROM kafka.partition_status WHERE topic = 'seg') AS sizes_add_up
  FROM kafka.segments WHERE topic = 'seg';

-- Reading across segment boundaries returns every record once, in order.
SELECT count(*), min("offset"), max("offset"), count(DISTINCT "offset")
  FROM kafka.fetch('seg', 0, 0, 1000000);
SELECT bool_and(o2 = o1 + 1) AS contiguous FROM
  (SELECT "offset" AS o2, lag("offset") OVER (ORDER BY "offset") AS o1
     FROM kafka.fetch('seg', 0, 0, 1000000)) s WHERE o1 IS NOT NULL;
-- Fetching from the first offset of each segment, and from inside one.
SELECT s.base_offset, (SELECT "offset" FROM kafka.fetch('seg', 0, s.base_offset, 1)) = s.base_offset AS found
  FROM kafka.segments s WHERE topic = 'seg' ORDER BY 1;
SELECT "offset", value FROM kafka.fetch_text('seg', 0, 2345, 1);
-- A reader that starts where the last one stopped (each call below asks
-- for the offset after the previous call's last batch, as a consumer does)
-- starts at the position that one left off at instead of seeking
-- (src/store/reader.c, reader positions), across segment boundaries too:
-- the same records, each once.
WITH RECURSIVE walk(calls, next_offset, records) AS (
  SELECT 0, 0::bigint, 0::bigint
  UNION ALL
  SELECT w.calls + 1, f.last + 1, w.records + f.n
    FROM walk w,
    LATERAL (SELECT count(*) AS n, max("offset") AS last
               FROM kafka.fetch('seg', 0, w.next_offset, 100)) f
   WHERE f.n > 0
)
SELECT max(calls) AS calls, max(records) AS records, max(next_offset) AS next_offset FROM walk;

-- Timestamps are indexed across segments too.
SELECT "offset", "timestamp" > '2000-01-01' AS has_time FROM kafka.list_offsets('seg', 0, '2000-01-01'::timestamptz);

-- segment.ms rolls a segment by age.
SELECT kafka.create_topic('aged', 1, '{"segment.ms": "1"}');
SELECT "offset" FROM kafka.produce('aged', NULL::text, 'first', partition => 0);
SELECT pg_sleep(0.01);
SELECT "offset" FROM kafka.produce('aged', NULL::text, 'second', partition => 0);
-- (each record, and each transaction marker, may open a new one)
SELECT segment_count >= 2 AS rolled FROM kafka.partition_status WHERE topic = 'aged';

-- Deleting a topic removes its segment files when the deletion commits
-- (Postgres empties a dropped relation's file at once and unlinks it at the
-- next checkpoint).
CREATE TEMP TABLE seg_files AS
  SELECT format('base/%s/%s', (SELECT oid FROM pg_database WHERE datname = current_database()),
                relfilenode) AS path
    FROM kafka.segments WHERE topic = 'seg';
SELECT count(*) AS files, bool_and((pg_stat_file(path, true)).size > 0) AS all_hold_data FROM seg_files;
BEGIN;
SELECT kafka.delete_topic('seg');
ROLLBACK;
SELECT bool_and((pg_stat_file(path, true)).size > 0) AS kept_after_rollback FROM seg_files;
SELECT kafka.delete_topic('seg');
SELECT bool_and(coalesce((pg_stat_file(path, true)).size, 0) = 0) AS removed_after_commit FROM seg_files;
CHECKPOINT;
SELECT bool_and(pg_stat_file(path, true) IS NULL) AS unlinked_after_checkpoint FROM seg_files;
