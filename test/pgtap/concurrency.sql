-- Offsets under concurrent producers: strictly increasing, no holes, no
-- record lost or duplicated, and readers see every committed record.
-- Four extra sessions (dblink) produce at once into one partition.
-- Then partitions added by two transactions at once: one at a time (the
-- creation lock), so together they cannot pass kafka.max_partitions.
\set ON_ERROR_STOP 1
CREATE EXTENSION IF NOT EXISTS dblink;
BEGIN;
SELECT plan(12);

SELECT kafka.create_topic('conc_t', 2);
SELECT kafka.create_topic('conc_a', 1);
SELECT kafka.create_topic('conc_b', 1);
COMMIT;

-- four sessions, each 200 transactions of one record, plus batches
DO $$
DECLARE
  conn text;
  connstr text := format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
                         split_part(current_setting('unix_socket_directories'), ',', 1));
BEGIN
  FOR i IN 1..4 LOOP
    conn := 'c' || i;
    PERFORM dblink_connect(conn, connstr);
    PERFORM dblink_send_query(conn, format($q$
      DO $b$ BEGIN
        FOR j IN 1..200 LOOP
          PERFORM kafka.produce('conc_t', NULL::text, 's%s-' || j, partition => 0);
          COMMIT;
        END LOOP;
        PERFORM kafka.produce_batch('conc_t', NULL,
                  (SELECT array_agg('s%s-b' || g) FROM generate_series(1, 100) g), partition => 0);
      END $b$;$q$, i, i));
  END LOOP;
END $$;

SELECT count(*) FROM (SELECT dblink_get_result('c' || i) FROM generate_series(1, 4) i) r;
SELECT dblink_disconnect('c' || i) FROM generate_series(1, 4) i;

BEGIN;
CREATE TEMP TABLE got AS SELECT * FROM kafka.fetch_text('conc_t', 0, 0, 100000);

SELECT is((SELECT count(*) FROM got), 1200::bigint, 'every committed record is there');
SELECT is((SELECT count(DISTINCT value) FROM got), 1200::bigint, 'no record twice');
SELECT is((SELECT count(DISTINCT "offset") FROM got), 1200::bigint, 'every record has its own offset');
SELECT ok((SELECT bool_and(o2 > o1) FROM (SELECT "offset" o2, lag("offset") OVER (ORDER BY "offset") o1 FROM got) s
            WHERE o1 IS NOT NULL), 'offsets strictly increase');
-- records of one session's transactions appear in the order they committed
SELECT ok((SELECT bool_and(n2 > n1) FROM
             (SELECT split_part(value, '-', 2)::int n2,
                     lag(split_part(value, '-', 2)::int) OVER (PARTITION BY split_part(value, '-', 1) ORDER BY "offset") n1
                FROM got WHERE value NOT LIKE '%-b%') s WHERE n1 IS NOT NULL),
          'each session''s records are in its commit order');
-- no holes: the batches (records and markers) tile the log from 0 to its end
SELECT ok((SELECT bool_and(base_offset = coalesce(prev_last, -1) + 1)
             FROM (SELECT base_offset, lag(last_offset) OVER (ORDER BY base_offset) prev_last
                     FROM kafka.dump_log('conc_t', 0, 0, 100000)) s),
          'batches follow each other with no gap');
SELECT is((SELECT count(*) FROM kafka.fetch('conc_t', 1)), 0::bigint, 'the other partition is untouched');
SELECT ok((SELECT log_end_offset >= 1200 + 800 FROM kafka.partition_status
            WHERE topic = 'conc_t' AND partition = 0),
          'each transaction''s marker took an offset');

-- Another session adds to conc_a all the partitions kafka.max_partitions
-- has room for, and keeps its transaction open.  Each transaction counts
-- against the limit only what committed, so until 2026-12-05 this one could
-- add partitions to conc_b meanwhile, and after both committed the database
-- had more partitions than the server can serve after a restart.
SELECT current_setting('kafka.max_partitions')::int - count(*) AS room FROM kafka.partitions \gset
SELECT dblink_connect('adder', format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
                                      split_part(current_setting('unix_socket_directories'), ',', 1)));
SELECT dblink_exec('adder', 'BEGIN');
SELECT is(dblink_exec('adder', format('DO $d$ BEGIN PERFORM kafka.add_partitions(%L, %s); END $d$',
                                      'conc_a', 1 + :room)),
          'DO', 'another session added the partitions there is room for, its transaction open');
SET LOCAL lock_timeout = '300ms';
SELECT throws_ok($$SELECT kafka.add_partitions('conc_b', 2)$$, '55P03', NULL,
                 'adding partitions meanwhile waits for that transaction');
SET LOCAL lock_timeout = 0;
SELECT dblink_exec('adder', 'COMMIT');
SELECT dblink_disconnect('adder');
SELECT throws_matching($$SELECT kafka.add_partitions('conc_b', 2)$$, 'partitions in all, the limit is kafka.max_partitions',
                       'and once it committed, is refused: no room is left');
SELECT is((SELECT count(*) FROM kafka.partitions), current_setting('kafka.max_partitions')::bigint,
          'the database has kafka.max_partitions partitions, not more');
SELECT * FROM finish();
ROLLBACK;
SELECT kafka.delete_topic('conc_t');
SELECT kafka.delete_topic('conc_a');
SELECT kafka.delete_topic('conc_b');
