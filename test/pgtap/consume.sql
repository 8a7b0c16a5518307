-- kafka.consume: exactly-once into Postgres under concurrent consumers and
-- rollbacks, checked by counting.  Four sessions (dblink) drain one topic
-- of 8 partitions in small transactions, a third of which roll back.
\set ON_ERROR_STOP 1
CREATE EXTENSION IF NOT EXISTS dblink;
BEGIN;
SELECT plan(6);
SELECT kafka.create_topic('eos_t', 8);
CREATE TABLE eos_sink (value text PRIMARY KEY, consumer int NOT NULL);
COMMIT;

-- 2,000 keyed records over the 8 partitions
SELECT sum(record_count) FROM kafka.produce_batch('eos_t',
  (SELECT array_agg('k' || g) FROM generate_series(1, 2000) g),
  (SELECT array_agg('v' || g) FROM generate_series(1, 2000) g));

DO $$
DECLARE
  connstr text := format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
                         split_part(current_setting('unix_socket_directories'), ',', 1));
BEGIN
  FOR i IN 1..4 LOOP
    PERFORM dblink_connect('c' || i, connstr);
    PERFORM dblink_send_query('c' || i, format($q$
      DO $b$
      DECLARE n int; idle int := 0; r int := 0;
      BEGIN
        WHILE idle < 20 LOOP
          r := r + 1;
          INSERT INTO eos_sink SELECT value, %s FROM kafka.consume_text('eos_g', 'eos_t', 37);
          GET DIAGNOSTICS n = ROW_COUNT;
          IF n = 0 THEN idle := idle + 1; PERFORM pg_sleep(0.02); END IF;
          IF r %% 3 = 0 THEN ROLLBACK; ELSE COMMIT; END IF;
        END LOOP;
      END $b$;$q$, i));
  END LOOP;
END $$;
SELECT count(*) FROM (SELECT dblink_get_result('c' || i) FROM generate_series(1, 4) i) r;
SELECT dblink_disconnect('c' || i) FROM generate_series(1, 4) i;

SELECT is((SELECT count(*) FROM eos_sink), 2000::bigint, 'every record landed once (the primary key refuses twice)');
SELECT is((SELECT count(DISTINCT value) FROM eos_sink), 2000::bigint, 'no record is missing');
SELECT ok((SELECT count(DISTINCT consumer) FROM eos_sink) > 1, 'the consumers shared the work');
SELECT is((SELECT sum(lag) FROM kafka.consumer_group_lag WHERE group_id = 'eos_g'), 0::numeric,
          'the committed offsets reached the log end');
SELECT is((SELECT count(*) FROM kafka.consume('eos_g', 'eos_t', 10)), 0::bigint,
          'nothing left to consume');
-- a rolled-back consume does not move the offsets
SELECT kafka.produce('eos_t', 'k1', 'late');
BEGIN;
SELECT count(*) FROM kafka.consume('eos_g', 'eos_t', 10);
ROLLBACK;
SELECT is((SELECT count(*) FROM kafka.consume_text('eos_g', 'eos_t', 10) WHERE value = 'late'), 1::bigint,
          'after a rollback the same record comes again');
SELECT * FROM finish();
DROP TABLE eos_sink;
SELECT kafka.delete_topic('eos_t');
