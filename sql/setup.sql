-- kafka_pg must be preloaded (shared_preload_libraries); then one statement installs it.
CREATE EXTENSION kafka_pg;
-- Everything lives in schema kafka.
SELECT count(*) > 0 AS has_functions FROM pg_proc WHERE pronamespace = 'kafka'::regnamespace;
