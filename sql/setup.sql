-- kafka_pg must be preloaded (shared_preload_libraries); then one statement installs it.
CREATE EXTENSION kafka_pg;
-- Everything lives in schema kafka.
SELECT count(*) > 0 AS has_functions FROM pg_proc WHERE pronamespace = 'kafka'::regnamespace;
-- Only its owner (or a superuser) drops it; anyone else is refused before
-- kafka_pg touches its storage.
CREATE ROLE kafka_not_owner;
SET ROLE kafka_not_owner;
DROP EXTENSION kafka_pg;
RESET ROLE;
DROP ROLE kafka_not_owner;
SELECT extname FROM pg_extension WHERE extname = 'kafka_pg';
