/* kafka_pg install script: schema kafka, its catalog and the SQL API. */
\echo Use "CREATE EXTENSION kafka_pg" to load this file. \quit

-- The catalog stamp: which build's script created this catalog.  The
-- Makefile installs this script with the placeholder below replaced by a
-- hash of this file and compiles the same hash into the library, which
-- refuses to work on a catalog with another stamp (src/catalog/stamp.c).
-- First, so that the library's functions this script calls find it.
CREATE TABLE kafka.catalog_stamp (
	stamp			text NOT NULL
);
INSERT INTO kafka.catalog_stamp VALUES ('@KP_CATALOG_STAMP@');

-- A Kafka record header: an ordered list of (key, value) pairs, duplicate keys allowed.
CREATE TYPE kafka.header AS (key text, value bytea);

------------------------------------------------------------------------------
-- Catalog.  One owner: src/catalog/ writes these tables; everything else
-- reads them.  Topic and partition ids come from sequences and are never
-- reused, so storage that outlives an aborted CREATE can never be mistaken
-- for a later topic's.
------------------------------------------------------------------------------

CREATE SEQUENCE kafka.topic_id_seq;
CREATE SEQUENCE kafka.partition_id_seq;
-- Producer ids of idempotent wire producers (InitProducerId).  SQL
-- transactions use ids with bit 62 set, far above this sequence.
CREATE SEQUENCE kafka.producer_id_seq MINVALUE 0 START 0;

CREATE TABLE kafka.topics (
	topic_id		integer PRIMARY KEY DEFAULT nextval('kafka.topic_id_seq'),
	name			text NOT NULL UNIQUE,
	topic_uuid		uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),	-- Kafka's topic id (KIP-516)
	partition_count integer NOT NULL CHECK (partition_count > 0),
	created_at		timestamptz NOT NULL DEFAULT now()
);

-- Only explicitly set configs are stored; kafka.topic_configs shows defaults too.
CREATE TABLE kafka.topic_config_overrides (
	topic_id		integer NOT NULL REFERENCES kafka.topics ON DELETE CASCADE,
	name			text NOT NULL,
	value			text NOT NULL,
	PRIMARY KEY (topic_id, name)
);

CREATE TABLE kafka.partitions (
	topic_id		integer NOT NULL REFERENCES kafka.topics ON DELETE CASCADE,
	partition		integer NOT NULL CHECK (partition >= 0),
	partition_id	bigint NOT NULL UNIQUE DEFAULT nextval('kafka.partition_id_seq'),	-- the store's key
	PRIMARY KEY (topic_id, partition)
);

-- The segment directory of the store (see docs/architecture.md) lives in a
-- relation file that the store creates; this row says which one.
CREATE TABLE kafka.store (
	directory_relfilenode oid NOT NULL
);

-- The leader as its listener last published it (docs/replication.md): the
-- primary's node id, advertised host and port, leader epoch (its timeline
-- less one), the brokers serving Kafka clients and the replicas, ISR and
-- offline replicas it reports.  One row, written by the primary's listener
-- when it starts, after a promotion and when that view changes; a hot
-- standby replays it, and its listener answers Metadata, FindCoordinator
-- and DescribeCluster from it.  Owner: src/catalog/cluster.c.
CREATE TABLE kafka.leader (
	one				boolean PRIMARY KEY DEFAULT true CHECK (one),
	node_id			integer NOT NULL,
	host			text NOT NULL,
	port			integer NOT NULL,
	rack			text,			-- its kafka.broker_rack, NULL if none
	leader_epoch	integer NOT NULL,
	brokers			text NOT NULL,	-- 'node_id@host:port[/rack], ...' besides the leader
	replicas		integer[] NOT NULL,
	isr				integer[] NOT NULL,
	offline			integer[] NOT NULL,
	published_at	timestamptz NOT NULL DEFAULT now()
);

-- Dynamic broker configs (AlterConfigs / IncrementalAlterConfigs of the
-- BROKER resource) that have no kafka_pg setting: kept and described as
-- Kafka keeps them, without effect (docs/wire-protocol.md lists them).
-- Broker configs that are kafka.* settings go to postgresql.auto.conf
-- instead (ALTER SYSTEM).  Owner: src/catalog/broker_configs.c.
CREATE TABLE kafka.broker_configs (
	name			text PRIMARY KEY,
	value			text NOT NULL
);

-- Client quotas (Kafka's client quota entities, KIP-546): one row per entity
-- and quota key.  An entity has a user part, a client-id part or both; each
-- part is absent (name NULL, default false), a name, or Kafka's <default>
-- (name NULL, default true).  The user is the principal's name: the role a
-- client authenticated as, or ANONYMOUS.  Changed by AlterClientQuotas
-- (kafka-configs.sh); the listener enforces them (docs/security.md).  Owner:
-- src/catalog/quotas.c; a statement trigger tells every listener to reread
-- the table, so a superuser's direct change takes effect too.
CREATE TABLE kafka.client_quotas (
	user_name		text,
	user_default	boolean NOT NULL DEFAULT false,
	client_id		text,
	client_id_default boolean NOT NULL DEFAULT false,
	quota_key		text NOT NULL
					CHECK (quota_key IN ('producer_byte_rate', 'consumer_byte_rate', 'request_percentage',
										 'controller_mutation_rate')),
	value			double precision NOT NULL CHECK (value > 0 AND value < 'Infinity'),
	CHECK (NOT (user_default AND user_name IS NOT NULL)),
	CHECK (NOT (client_id_default AND client_id IS NOT NULL)),
	CHECK (user_name IS NOT NULL OR user_default OR client_id IS NOT NULL OR client_id_default),
	CHECK (quota_key IN ('request_percentage', 'controller_mutation_rate') OR value = trunc(value)),
	UNIQUE NULLS NOT DISTINCT (user_name, user_default, client_id, client_id_default, quota_key)
);

CREATE FUNCTION kafka._client_quotas_changed() RETURNS trigger
	AS 'MODULE_PATHNAME', 'kp_sql_client_quotas_changed' LANGUAGE C;
REVOKE ALL ON FUNCTION kafka._client_quotas_changed() FROM PUBLIC;
CREATE TRIGGER client_quotas_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON kafka.client_quotas
	FOR EACH STATEMENT EXECUTE FUNCTION kafka._client_quotas_changed();
-- also under session_replication_role = replica (as kafka.acls' below)
ALTER TABLE kafka.client_quotas ENABLE ALWAYS TRIGGER client_quotas_changed;

-- SCRAM-SHA-512 credentials of roles (KIP-554's AlterUserScramCredentials):
-- PostgreSQL keeps only SCRAM-SHA-256 verifiers, so kafka_pg keeps these
-- itself: the salt and the RFC 5802 StoredKey and ServerKey, never a
-- password.  Bound to the role's OID and name, so a renamed, dropped or
-- re-created role does not inherit them.  Owner: src/catalog/scram.c.
CREATE TABLE kafka.scram_credentials (
	role_oid		oid NOT NULL,
	role_name		text NOT NULL,
	mechanism		text NOT NULL CHECK (mechanism = 'SCRAM-SHA-512'),
	iterations		integer NOT NULL CHECK (iterations BETWEEN 4096 AND 16384),
	salt			bytea NOT NULL CHECK (length(salt) BETWEEN 1 AND 64),
	stored_key		bytea NOT NULL CHECK (length(stored_key) = 64),
	server_key		bytea NOT NULL CHECK (length(server_key) = 64),
	PRIMARY KEY (role_name, mechanism)
);
REVOKE ALL ON kafka.scram_credentials FROM PUBLIC;

------------------------------------------------------------------------------
-- Consumer groups.  One owner: src/catalog/groups.c and offsets.c hold all
-- the SQL against these tables; the group coordinator (src/group/) decides
-- what they say, and wire members and SQL consumers go through it alike.
------------------------------------------------------------------------------

CREATE TABLE kafka.consumer_groups (
	group_id		text PRIMARY KEY,
	protocol_type	text NOT NULL DEFAULT '',	-- 'consumer' for Kafka consumers
	state			text NOT NULL DEFAULT 'Empty'
					CHECK (state IN ('Empty', 'PreparingRebalance', 'CompletingRebalance', 'Stable')),
	generation_id	integer NOT NULL DEFAULT 0,
	protocol_name	text,					-- the assignor chosen for this generation
	leader_id		text,
	rebalance_round integer NOT NULL DEFAULT 0, -- bumped when a rebalance starts
	rebalance_deadline timestamptz,			-- the join phase ends then at the latest
	join_not_before timestamptz,			-- ... and not before (group.initial.rebalance.delay.ms)
	state_changed_at timestamptz NOT NULL DEFAULT now(),
	-- the consumer protocol (KIP-848): group_type 'consumer'
	group_type		text NOT NULL DEFAULT 'classic' CHECK (group_type IN ('classic', 'consumer')),
	group_epoch		integer NOT NULL DEFAULT 0,	-- bumped by every membership or subscription change
	assignment_epoch integer NOT NULL DEFAULT 0,	-- the group epoch the target assignment is for
	metadata_signature text NOT NULL DEFAULT ''	-- subscribed topics' partition counts, to notice new partitions
);

CREATE TABLE kafka.group_members (
	group_id		text NOT NULL REFERENCES kafka.consumer_groups ON DELETE CASCADE,
	member_id		text NOT NULL,
	group_instance_id text,					-- static membership (KIP-345)
	client_id		text NOT NULL DEFAULT '',
	client_host		text NOT NULL DEFAULT '',
	session_timeout_ms integer NOT NULL,
	rebalance_timeout_ms integer NOT NULL,
	protocol_names	text[] NOT NULL DEFAULT '{}',	-- in the member's order of preference
	protocol_metadata bytea[] NOT NULL DEFAULT '{}',
	join_round		integer NOT NULL DEFAULT -1,	-- round it joined in; -1: pending (KIP-394)
	assignment		bytea,
	last_heartbeat	timestamptz NOT NULL DEFAULT now(),
	-- the consumer protocol (KIP-848); partitions as 'topic:0,1|other:3'
	member_epoch	integer NOT NULL DEFAULT 0,
	previous_member_epoch integer NOT NULL DEFAULT -1,	-- its epoch before: a heartbeat
											-- whose answer was lost may carry it
	rack_id			text,
	subscribed_topics text[],
	subscribed_regex text,					-- SubscribedTopicRegex (KIP-848), whole topic names
	authz_role		oid,					-- the principal of its latest heartbeat: the regex
	authz_host		text NOT NULL DEFAULT '',	-- matches only topics it may DESCRIBE (host ACLs)
	assigned		text NOT NULL DEFAULT '',	-- what the member was told it owns
	target			text NOT NULL DEFAULT '',	-- where the server-side assignor wants it
	owned			text NOT NULL DEFAULT '',	-- what it owns, as far as the coordinator can tell
	revoke_deadline	timestamptz,			-- giving partitions up: removed if it has not by then
	PRIMARY KEY (group_id, member_id)
);
CREATE UNIQUE INDEX ON kafka.group_members (group_id, group_instance_id)
	WHERE group_instance_id IS NOT NULL;

-- Committed offsets: "the next offset to read" (Kafka's OffsetCommit).  A
-- deleted topic's offsets go with it (ON DELETE CASCADE), as Kafka's group
-- coordinator deletes them: a topic made again under the name starts with none.
CREATE TABLE kafka.committed_offsets (
	group_id		text NOT NULL,
	topic			text NOT NULL REFERENCES kafka.topics (name) ON DELETE CASCADE,
	partition		integer NOT NULL,
	committed_offset bigint NOT NULL,
	leader_epoch	integer NOT NULL DEFAULT -1,
	metadata		bytea,			-- bytes to the client: librdkafka commits binary metadata
	commit_time		timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (group_id, topic, partition)
);
CREATE INDEX ON kafka.committed_offsets (topic);

-- Group configs (KIP-848, DescribeConfigs / IncrementalAlterConfigs of
-- resource type GROUP): per-group overrides of the broker's defaults, which
-- may exist before the group does.  Owner: src/catalog/groups.c.
CREATE TABLE kafka.group_configs (
	group_id		text NOT NULL,
	name			text NOT NULL,	-- consumer.session.timeout.ms, consumer.heartbeat.interval.ms
	value			text NOT NULL,
	PRIMARY KEY (group_id, name)
);

-- Share groups (KIP-932): src/share/README.  Owner: src/catalog/share.c.
CREATE TABLE kafka.share_groups (
	group_id		text PRIMARY KEY,
	group_epoch		integer NOT NULL DEFAULT 0,	-- bumped by every membership or subscription change
	state_changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE kafka.share_group_members (
	group_id		text NOT NULL REFERENCES kafka.share_groups ON DELETE CASCADE,
	member_id		text NOT NULL,
	member_epoch	integer NOT NULL DEFAULT 0,
	client_id		text NOT NULL DEFAULT '',
	client_host		text NOT NULL DEFAULT '',
	rack_id			text,
	subscribed_topics text[] NOT NULL DEFAULT '{}',
	assigned		text NOT NULL DEFAULT '',	-- 'topic/id:0,1|other/id:3', as last sent
	last_heartbeat	timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (group_id, member_id)
);
-- One per share-partition: SPSO (start_offset) and SPEO (end_offset, the
-- first offset never acquired) of the in-flight window.
CREATE TABLE kafka.share_partitions (
	group_id		text NOT NULL REFERENCES kafka.share_groups ON DELETE CASCADE,
	topic			text NOT NULL,
	partition		integer NOT NULL,
	topic_id		integer NOT NULL,	-- kafka.topics.topic_id: a topic created again starts over
	start_offset	bigint NOT NULL,
	end_offset		bigint NOT NULL,
	archived_count	bigint NOT NULL DEFAULT 0,	-- records archived after too many deliveries
	PRIMARY KEY (group_id, topic, partition)
);
-- The in-flight window [start_offset, end_offset) as runs of offsets
-- [first_offset, last_offset] in one state (src/share/README): state is
-- Kafka's RecordState: 0 available, 1 acquired, 2 acknowledged, 4 archived;
-- one delivery count, member, lock deadline for the whole run.  acq_xid: the
-- SQL transaction a run acquired in SQL is held for: once it aborted, the run
-- is available again.  An acquisition of N new records is one row; an
-- acknowledgement of part of a run splits it.  Offsets of the window in no
-- row are done (markers, aborted records under read_committed).
CREATE TABLE kafka.share_records (
	group_id		text NOT NULL,
	topic			text NOT NULL,
	partition		integer NOT NULL,
	first_offset	bigint NOT NULL,
	last_offset		bigint NOT NULL,
	state			smallint NOT NULL CHECK (state IN (0, 1, 2, 4)),
	delivery_count	smallint NOT NULL DEFAULT 0,
	member_id		text,
	lock_until		timestamptz,
	acq_xid			xid8,
	PRIMARY KEY (group_id, topic, partition, first_offset),
	CHECK (last_offset >= first_offset)
) WITH (fillfactor = 70);
-- No other index, and room left on each page: a run's changes of state
-- (acquired, acknowledged, released) are HOT updates, which write no index
-- entries.  Releasing a member's records scans its group's window.

-- The transaction coordinator's state (Kafka's __transaction_state), one row
-- per transactional id: written only by src/catalog/transactions.c, under
-- the rules of src/txn/coordinator.c (docs/transactions.md).  States are
-- Kafka's: Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit,
-- CompleteAbort (Dead ids are deleted).
CREATE TABLE kafka.transactions (
	transactional_id text PRIMARY KEY,
	producer_id		bigint NOT NULL UNIQUE,
	producer_epoch	smallint NOT NULL,
	state			text NOT NULL DEFAULT 'Empty'
		CHECK (state IN ('Empty', 'Ongoing', 'PrepareCommit', 'PrepareAbort',
						 'CompleteCommit', 'CompleteAbort')),
	timeout_ms		integer NOT NULL CHECK (timeout_ms > 0),
	txn_start_time	timestamptz,	-- when the current transaction began (Ongoing and Prepare*)
	last_update_time timestamptz NOT NULL DEFAULT now(),
	-- transactions version 2 (KIP-890 part 2), when an EndTxn finds the epoch
	-- exhausted: the producer id it continues with, set while the end is
	-- Prepare* (Kafka's nextProducerId), and the id it had, kept after
	-- (prevProducerId), so a retry of that EndTxn is recognised
	next_producer_id bigint,
	previous_producer_id bigint
);

-- Partitions in a transactional id's current transaction (AddPartitionsToTxn).
-- A deleted topic leaves every transaction here (ON DELETE CASCADE): its
-- partitions get no marker, as Kafka's coordinator skips a deleted partition.
CREATE TABLE kafka.transaction_partitions (
	transactional_id text NOT NULL REFERENCES kafka.transactions ON DELETE CASCADE,
	topic			text NOT NULL,
	partition		integer NOT NULL,
	partition_id	bigint NOT NULL REFERENCES kafka.partitions (partition_id) ON DELETE CASCADE,	-- the store's partition the markers go to
	PRIMARY KEY (transactional_id, topic, partition)
);
CREATE INDEX ON kafka.transaction_partitions (partition_id);

-- Groups whose offsets the current transaction commits (AddOffsetsToTxn).
CREATE TABLE kafka.transaction_groups (
	transactional_id text NOT NULL REFERENCES kafka.transactions ON DELETE CASCADE,
	group_id		text NOT NULL,
	PRIMARY KEY (transactional_id, group_id)
);

-- Offsets committed in the current transaction (TxnOffsetCommit): they become
-- committed offsets with the COMMIT decision, and are dropped on abort (and
-- with their topic, as committed offsets are).
CREATE TABLE kafka.transaction_offsets (
	transactional_id text NOT NULL REFERENCES kafka.transactions ON DELETE CASCADE,
	group_id		text NOT NULL,
	topic			text NOT NULL REFERENCES kafka.topics (name) ON DELETE CASCADE,
	partition		integer NOT NULL,
	committed_offset bigint NOT NULL,
	leader_epoch	integer NOT NULL DEFAULT -1,
	metadata		bytea,			-- as committed_offsets.metadata
	PRIMARY KEY (transactional_id, group_id, topic, partition)
);
CREATE INDEX ON kafka.transaction_offsets (group_id, topic, partition);

------------------------------------------------------------------------------
-- Internal C functions
------------------------------------------------------------------------------

CREATE FUNCTION kafka._store_init() RETURNS void
	AS 'MODULE_PATHNAME', 'kp_sql_store_init' LANGUAGE C VOLATILE;
SELECT kafka._store_init();
REVOKE ALL ON FUNCTION kafka._store_init() FROM PUBLIC;

------------------------------------------------------------------------------
-- Topic administration
------------------------------------------------------------------------------

CREATE FUNCTION kafka.create_topic(topic text, partitions integer DEFAULT 1,
								   configs jsonb DEFAULT '{}')
	RETURNS void AS 'MODULE_PATHNAME', 'kp_sql_create_topic' LANGUAGE C VOLATILE;

CREATE FUNCTION kafka.delete_topic(topic text)
	RETURNS void AS 'MODULE_PATHNAME', 'kp_sql_delete_topic' LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION kafka.add_partitions(topic text, partitions integer)
	RETURNS void AS 'MODULE_PATHNAME', 'kp_sql_add_partitions' LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION kafka.alter_topic_config(topic text, configs jsonb)
	RETURNS void AS 'MODULE_PATHNAME', 'kp_sql_alter_topic_config' LANGUAGE C VOLATILE STRICT;

-- Every known topic config with its Kafka default, for kafka.topic_configs.
CREATE FUNCTION kafka.config_defaults(OUT name text, OUT default_value text, OUT doc text)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_config_defaults'
	LANGUAGE C IMMUTABLE;

------------------------------------------------------------------------------
-- Produce
------------------------------------------------------------------------------

CREATE FUNCTION kafka.produce(topic text, key bytea, value bytea,
							  headers kafka.header[] DEFAULT NULL,
							  partition integer DEFAULT NULL,
							  "timestamp" timestamptz DEFAULT NULL,
							  OUT partition integer, OUT "offset" bigint)
	RETURNS record AS 'MODULE_PATHNAME', 'kp_sql_produce' LANGUAGE C VOLATILE;

CREATE FUNCTION kafka.produce(topic text, key text, value text,
							  headers kafka.header[] DEFAULT NULL,
							  partition integer DEFAULT NULL,
							  "timestamp" timestamptz DEFAULT NULL,
							  OUT partition integer, OUT "offset" bigint)
	RETURNS record AS 'MODULE_PATHNAME', 'kp_sql_produce_text' LANGUAGE C VOLATILE;

CREATE FUNCTION kafka.produce(topic text, key text, value jsonb,
							  headers kafka.header[] DEFAULT NULL,
							  partition integer DEFAULT NULL,
							  "timestamp" timestamptz DEFAULT NULL,
							  OUT partition integer, OUT "offset" bigint)
	RETURNS record AS 'MODULE_PATHNAME', 'kp_sql_produce_jsonb' LANGUAGE C VOLATILE;

-- Many records in one call: one record batch per partition touched.
CREATE FUNCTION kafka.produce_batch(topic text, keys bytea[], "values" bytea[],
									partition integer DEFAULT NULL,
									OUT partition integer, OUT base_offset bigint,
									OUT record_count integer)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_produce_batch' LANGUAGE C VOLATILE;

CREATE FUNCTION kafka.produce_batch(topic text, keys text[], "values" text[],
									partition integer DEFAULT NULL,
									OUT partition integer, OUT base_offset bigint,
									OUT record_count integer)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_produce_batch' LANGUAGE C VOLATILE;

------------------------------------------------------------------------------
-- Fetch and offsets
------------------------------------------------------------------------------

CREATE FUNCTION kafka.fetch(topic text, partition integer, from_offset bigint DEFAULT 0,
							max_records integer DEFAULT 1000,
							isolation_level text DEFAULT 'read_committed',
							OUT partition integer, OUT "offset" bigint,
							OUT "timestamp" timestamptz, OUT key bytea, OUT value bytea,
							OUT headers kafka.header[])
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_fetch' LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION kafka.fetch_text(topic text, partition integer, from_offset bigint DEFAULT 0,
								 max_records integer DEFAULT 1000,
								 isolation_level text DEFAULT 'read_committed',
								 OUT partition integer, OUT "offset" bigint,
								 OUT "timestamp" timestamptz, OUT key text, OUT value text,
								 OUT headers kafka.header[])
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_fetch' LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION kafka.fetch_json(topic text, partition integer, from_offset bigint DEFAULT 0,
								 max_records integer DEFAULT 1000,
								 isolation_level text DEFAULT 'read_committed',
								 OUT partition integer, OUT "offset" bigint,
								 OUT "timestamp" timestamptz, OUT key text, OUT value jsonb,
								 OUT headers kafka.header[])
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_fetch' LANGUAGE C VOLATILE STRICT;

-- A topic as a table (what Kafka Streams calls a KTable): the latest record
-- of every key, one row per key whose latest record is not a tombstone, in
-- offset order per partition; of one partition, or of all when partition is
-- null.  Reads the log once up to the last stable offset (read_committed)
-- or the high watermark; records without a key are not part of it.  Holds
-- a partition's latest records in memory, up to work_mem x hash_mem_multiplier.
CREATE FUNCTION kafka.table(topic text, partition integer DEFAULT NULL,
							isolation_level text DEFAULT 'read_committed',
							OUT partition integer, OUT "offset" bigint,
							OUT "timestamp" timestamptz, OUT key bytea, OUT value bytea,
							OUT headers kafka.header[])
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_table' LANGUAGE C VOLATILE;

CREATE FUNCTION kafka.table_text(topic text, partition integer DEFAULT NULL,
								 isolation_level text DEFAULT 'read_committed',
								 OUT partition integer, OUT "offset" bigint,
								 OUT "timestamp" timestamptz, OUT key text, OUT value text,
								 OUT headers kafka.header[])
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_table' LANGUAGE C VOLATILE;

CREATE FUNCTION kafka.table_json(topic text, partition integer DEFAULT NULL,
								 isolation_level text DEFAULT 'read_committed',
								 OUT partition integer, OUT "offset" bigint,
								 OUT "timestamp" timestamptz, OUT key text, OUT value jsonb,
								 OUT headers kafka.header[])
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_table' LANGUAGE C VOLATILE;

-- The batches of a partition as stored, markers included: what Kafka's
-- kafka-dump-log.sh shows.  For inspection; consumers use kafka.fetch.
-- delete_horizon: set by log compaction on a batch that keeps a tombstone
-- or a transaction marker (KIP-534), null otherwise.
CREATE FUNCTION kafka.dump_log(topic text, partition integer, from_offset bigint DEFAULT 0,
							   max_batches integer DEFAULT 1000,
							   OUT base_offset bigint, OUT last_offset bigint,
							   OUT record_count integer, OUT size_bytes integer,
							   OUT compression text, OUT is_transactional boolean,
							   OUT is_control boolean, OUT control_type text,
							   OUT producer_id bigint, OUT producer_epoch smallint,
							   OUT base_sequence integer, OUT max_timestamp timestamptz,
							   OUT crc_valid boolean, OUT delete_horizon timestamptz)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_dump_log' LANGUAGE C VOLATILE STRICT;

-- Consume as a member of a consumer group: records from the partitions no
-- other consumer of the group holds, from the group's committed offsets;
-- the new offsets are committed with the caller's transaction (exactly-once).
CREATE FUNCTION kafka.consume(group_id text, topic text, max_records integer DEFAULT 100,
							  auto_offset_reset text DEFAULT 'earliest',
							  OUT partition integer, OUT "offset" bigint,
							  OUT "timestamp" timestamptz, OUT key bytea, OUT value bytea,
							  OUT headers kafka.header[])
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_consume' LANGUAGE C VOLATILE;

CREATE FUNCTION kafka.consume_text(group_id text, topic text, max_records integer DEFAULT 100,
								   auto_offset_reset text DEFAULT 'earliest',
								   OUT partition integer, OUT "offset" bigint,
								   OUT "timestamp" timestamptz, OUT key text, OUT value text,
								   OUT headers kafka.header[])
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_consume' LANGUAGE C VOLATILE;

CREATE FUNCTION kafka.consume_json(group_id text, topic text, max_records integer DEFAULT 100,
								   auto_offset_reset text DEFAULT 'earliest',
								   OUT partition integer, OUT "offset" bigint,
								   OUT "timestamp" timestamptz, OUT key text, OUT value jsonb,
								   OUT headers kafka.header[])
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_consume' LANGUAGE C VOLATILE;

-- Write now the COMMIT/ABORT markers of transactions that have ended (the
-- resolver worker does it in kafka.database within a second; elsewhere the
-- next append to the partition does).  Returns how many it wrote.
CREATE FUNCTION kafka.flush_markers() RETURNS integer
	AS 'MODULE_PATHNAME', 'kp_sql_flush_markers' LANGUAGE C VOLATILE;

-- A SQL session as a member of a consumer-protocol group (KIP-848), under
-- the same coordinator as Java consumers with group.protocol=consumer:
-- join (member_id NULL, epoch 0), heartbeat (within
-- kafka.group_consumer_session_timeout_ms), poll the assigned partitions
-- (offsets commit with the caller's transaction), leave (epoch -1).
CREATE FUNCTION kafka.group_heartbeat(group_id text, member_id text DEFAULT NULL,
									  member_epoch integer DEFAULT 0,
									  topics text[] DEFAULT NULL,
									  OUT member_id text, OUT member_epoch integer,
									  OUT partitions text[])
	RETURNS record AS 'MODULE_PATHNAME', 'kp_sql_group_heartbeat' LANGUAGE C VOLATILE;

CREATE FUNCTION kafka.group_poll(group_id text, member_id text, max_records integer DEFAULT 100,
								 OUT partition integer, OUT "offset" bigint,
								 OUT "timestamp" timestamptz, OUT key bytea, OUT value bytea,
								 OUT headers kafka.header[])
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_group_poll' LANGUAGE C VOLATILE;

CREATE FUNCTION kafka.group_poll_text(group_id text, member_id text, max_records integer DEFAULT 100,
									  OUT partition integer, OUT "offset" bigint,
									  OUT "timestamp" timestamptz, OUT key text, OUT value text,
									  OUT headers kafka.header[])
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_group_poll' LANGUAGE C VOLATILE;

-- Kafka's ListOffsets: "timestamp" -2 = earliest, -1 = latest, -3 = max
-- timestamp, otherwise the first offset whose timestamp is >= the given
-- milliseconds since the epoch.  NULL offset when there is none.
CREATE FUNCTION kafka.list_offsets(topic text, partition integer, "timestamp" bigint,
								   OUT "offset" bigint, OUT "timestamp" timestamptz)
	RETURNS record AS 'MODULE_PATHNAME', 'kp_sql_list_offsets' LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION kafka.list_offsets(topic text, partition integer, "timestamp" timestamptz,
								   OUT "offset" bigint, OUT "timestamp" timestamptz)
	RETURNS record LANGUAGE sql VOLATILE STRICT
	AS $$ SELECT * FROM kafka.list_offsets($1, $2,
					(extract(epoch FROM $3) * 1000)::bigint) $$;

CREATE FUNCTION kafka.earliest_offset(topic text, partition integer) RETURNS bigint
	LANGUAGE sql VOLATILE STRICT
	AS $$ SELECT "offset" FROM kafka.list_offsets($1, $2, -2::bigint) $$;

CREATE FUNCTION kafka.latest_offset(topic text, partition integer) RETURNS bigint
	LANGUAGE sql VOLATILE STRICT
	AS $$ SELECT "offset" FROM kafka.list_offsets($1, $2, -1::bigint) $$;

-- The Java client's default partitioner, for checking and for SQL users.
CREATE FUNCTION kafka.murmur2(data bytea) RETURNS integer
	AS 'MODULE_PATHNAME', 'kp_sql_murmur2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kafka.partition_for_key(key bytea, partitions integer) RETURNS integer
	AS 'MODULE_PATHNAME', 'kp_sql_partition_for_key' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

------------------------------------------------------------------------------
-- Views
------------------------------------------------------------------------------

CREATE FUNCTION kafka._partition_stats(partition_id bigint,
									   OUT log_start_offset bigint,
									   OUT log_end_offset bigint,
									   OUT size_bytes bigint,
									   OUT segment_count integer)
	RETURNS record AS 'MODULE_PATHNAME', 'kp_sql_partition_stats' LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION kafka._partition_segments(partition_id bigint,
										  OUT base_offset bigint,
										  OUT relfilenode oid,
										  OUT size_bytes bigint)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_partition_segments' LANGUAGE C VOLATILE STRICT;

CREATE VIEW kafka.topic_list AS
	SELECT t.name AS topic, t.topic_uuid, t.partition_count, t.created_at
	FROM kafka.topics t;

CREATE VIEW kafka.partition_status AS
	SELECT t.name AS topic, p.partition, s.log_start_offset, s.log_end_offset,
		   s.size_bytes, s.segment_count
	FROM kafka.topics t
	JOIN kafka.partitions p USING (topic_id)
	CROSS JOIN LATERAL kafka._partition_stats(p.partition_id) s;

CREATE VIEW kafka.topic_configs AS
	SELECT t.name AS topic, d.name, coalesce(o.value, d.default_value) AS value,
		   (o.value IS NULL) AS is_default
	FROM kafka.topics t
	CROSS JOIN kafka.config_defaults() d
	LEFT JOIN kafka.topic_config_overrides o
		   ON o.topic_id = t.topic_id AND o.name = d.name;

-- Lag per group, topic and partition: how far the committed offset is
-- behind the log end offset (NULL with it, for a partition with no room for
-- its state: kafka.max_partitions).
CREATE VIEW kafka.consumer_group_lag AS
	SELECT o.group_id, o.topic, o.partition, o.committed_offset,
		   s.log_end_offset,
		   CASE WHEN s.log_end_offset IS NOT NULL
				THEN greatest(s.log_end_offset - o.committed_offset, 0) END AS lag,
		   o.metadata, o.commit_time
	FROM kafka.committed_offsets o
	JOIN kafka.topics t ON t.name = o.topic
	JOIN kafka.partitions p ON p.topic_id = t.topic_id AND p.partition = o.partition
	CROSS JOIN LATERAL kafka._partition_stats(p.partition_id) s;

-- Groups with their members, as kafka-consumer-groups --describe shows them
-- (not the pending ones, join_round -1: handed an id by MEMBER_ID_REQUIRED,
-- not yet joined with it).
CREATE VIEW kafka.consumer_group_members AS
	SELECT g.group_id, g.state, g.generation_id, g.protocol_name, m.member_id,
		   m.group_instance_id, m.client_id, m.client_host, m.member_id = g.leader_id AS is_leader,
		   m.last_heartbeat
	FROM kafka.consumer_groups g
	JOIN kafka.group_members m USING (group_id)
	WHERE m.join_round >= 0;

-- Share groups (KIP-932) in SQL: docs/share-groups.md.  kafka.share_acquire
-- acquires up to max_records records of a share group for this session (the
-- records other consumers hold, wire or SQL, are skipped), committed at once
-- by the share acquirer and held for the caller's transaction:
-- kafka.share_acknowledge with 'accept' takes effect at COMMIT, and a
-- ROLLBACK makes the records available again (their delivery counted).
CREATE FUNCTION kafka.share_acquire(group_id text, topic text, max_records integer DEFAULT 100,
									OUT partition integer, OUT "offset" bigint,
									OUT delivery_count integer, OUT "timestamp" timestamptz,
									OUT key bytea, OUT value bytea, OUT headers kafka.header[])
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_share_acquire' LANGUAGE C VOLATILE;

CREATE FUNCTION kafka.share_acknowledge(group_id text, topic text, partition integer,
										first_offset bigint, last_offset bigint DEFAULT NULL,
										type text DEFAULT 'accept')
	RETURNS bigint AS 'MODULE_PATHNAME', 'kp_sql_share_acknowledge' LANGUAGE C VOLATILE;

-- How many times the fetches parked on a partition's wait bucket were woken
-- (appends, markers, share releases; the bucket is shared by a few
-- partitions): a diagnostic, for tests (test/wire/share_wake.py).
CREATE FUNCTION kafka._fetch_wait_changes(partition_id bigint) RETURNS bigint
	AS 'MODULE_PATHNAME', 'kp_sql_fetch_wait_changes' LANGUAGE C VOLATILE STRICT;

-- Per share group and partition: the in-flight window [start_offset,
-- end_offset), its records acquired now and available for redelivery, the
-- records archived after group.share.delivery.count.limit deliveries, and
-- the lag: the records from start_offset to the log end not yet
-- acknowledged or archived - those past end_offset (never acquired) and
-- those of the window acquired or available; the offsets of the window in
-- no run (transaction markers, aborted records under read_committed) are
-- done, as in Kafka once its client acknowledged them as gaps.
CREATE VIEW kafka.share_group_status AS
	SELECT sp.group_id, sp.topic, sp.partition, sp.start_offset, sp.end_offset,
		   coalesce(r.acquired, 0) AS acquired, coalesce(r.available, 0) AS available,
		   sp.archived_count AS archived,
		   greatest(ps.log_end_offset - greatest(sp.end_offset, ps.log_start_offset), 0)
		   + coalesce(r.acquired, 0) + coalesce(r.available, 0) AS lag
	FROM kafka.share_partitions sp
	LEFT JOIN kafka.partition_status ps ON ps.topic = sp.topic AND ps.partition = sp.partition
	LEFT JOIN LATERAL (
		SELECT sum(x.n) FILTER (WHERE x.state = 1 AND pg_xact_status(x.acq_xid) IS DISTINCT FROM 'aborted')::bigint AS acquired,
			   sum(x.n) FILTER (WHERE x.state = 0 OR (x.state = 1 AND pg_xact_status(x.acq_xid) = 'aborted'))::bigint AS available
		FROM (SELECT s.state, s.acq_xid,
					 s.last_offset - greatest(s.first_offset, sp.start_offset) + 1 AS n
			  FROM kafka.share_records s
			  WHERE s.group_id = sp.group_id AND s.topic = sp.topic AND s.partition = sp.partition
				AND s.last_offset >= sp.start_offset AND s.state IN (0, 1)) x) r ON true;

-- Each segment of each partition, with the relation file that holds it
-- (under the database's directory: base/<database oid>/<relfilenode>).
CREATE VIEW kafka.segments AS
	SELECT t.name AS topic, p.partition, s.base_offset, s.relfilenode, s.size_bytes
	FROM kafka.topics t
	JOIN kafka.partitions p USING (topic_id)
	CROSS JOIN LATERAL kafka._partition_segments(p.partition_id) s;

------------------------------------------------------------------------------
-- Deleting records (Kafka's DeleteRecords, kafka-delete-records.sh)
------------------------------------------------------------------------------

-- Make before_offset (-1: the high watermark) the partition's log start
-- offset: earlier records can no longer be fetched, and segments that end
-- below it are dropped when the transaction commits.  Returns the new log
-- start offset.  Like Kafka's, the move of the log start is not undone by
-- ROLLBACK.
CREATE FUNCTION kafka.delete_records(topic text, partition integer, before_offset bigint)
	RETURNS bigint AS 'MODULE_PATHNAME', 'kp_sql_delete_records' LANGUAGE C VOLATILE STRICT;

------------------------------------------------------------------------------
-- The log cleaner (src/cleaner): retention
------------------------------------------------------------------------------

-- Run one retention pass now, as the log cleaner worker does every
-- kafka.log_retention_check_interval_ms: for every topic whose
-- cleanup.policy includes "delete", delete the oldest closed segments past
-- retention.ms or beyond retention.bytes (never the active segment).  One
-- row per partition of those topics; the segments are dropped when the
-- calling transaction commits.
CREATE FUNCTION kafka.run_log_cleaner(OUT topic text, OUT partition integer,
									  OUT segments_deleted integer,
									  OUT bytes_deleted bigint,
									  OUT log_start_offset bigint)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_run_log_cleaner'
	LANGUAGE C VOLATILE;

-- Run one compaction pass now, as the log cleaner worker does (every
-- kafka.log_cleaner_backoff_ms while nothing needs cleaning), for one
-- compacted topic or all of them: one row per partition, whether it was
-- cleaned (its dirty ratio above min.cleanable.dirty.ratio, or forced by
-- max.compaction.lag.ms or a passed delete horizon), the range, and the
-- segments and bytes before and after.  The swap is durable at once; the
-- replaced segments' storage goes when the transaction of a later pass
-- commits, once the topic's file.delete.delay.ms has passed since they left
-- the log.
CREATE FUNCTION kafka.run_log_compaction(topic_name text DEFAULT NULL,
										 OUT topic text, OUT partition integer,
										 OUT cleaned boolean, OUT forced boolean,
										 OUT dirty_ratio double precision,
										 OUT first_dirty_offset bigint,
										 OUT first_uncleanable_offset bigint,
										 OUT end_offset bigint,
										 OUT segments_before integer,
										 OUT segments_after integer,
										 OUT bytes_before bigint,
										 OUT bytes_after bigint,
										 OUT replaced_segments_dropped integer)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_run_log_compaction'
	LANGUAGE C VOLATILE;

CREATE FUNCTION kafka._log_cleaner_status(partition_id bigint,
										  OUT last_retention_run timestamptz,
										  OUT segments_deleted integer,
										  OUT bytes_reclaimed bigint,
										  OUT last_compaction_run timestamptz,
										  OUT compactions integer,
										  OUT dirty_ratio double precision,
										  OUT compaction_bytes_reclaimed bigint,
										  OUT first_dirty_offset bigint)
	RETURNS record AS 'MODULE_PATHNAME', 'kp_sql_log_cleaner_status'
	LANGUAGE C VOLATILE STRICT;

-- Per partition: its cleanup.policy, what the log cleaner did to it since
-- the server started (the last retention pass, the segments and bytes it
-- deleted; the last clean of a compacted topic, the cleans, the dirty ratio
-- the last compaction pass measured, the bytes cleans reclaimed), the
-- first dirty offset of a compacted topic (durable), and the log's offsets
-- and size now.
CREATE VIEW kafka.log_cleaner_status AS
	SELECT t.name AS topic, p.partition, c.value AS cleanup_policy,
		   cs.last_retention_run, cs.last_compaction_run,
		   coalesce(cs.segments_deleted, 0) AS segments_deleted,
		   coalesce(cs.bytes_reclaimed, 0) AS bytes_reclaimed,
		   cs.dirty_ratio,
		   s.log_start_offset, s.log_end_offset, s.size_bytes, s.segment_count,
		   coalesce(cs.compactions, 0) AS compactions,
		   coalesce(cs.compaction_bytes_reclaimed, 0) AS compaction_bytes_reclaimed,
		   CASE WHEN c.value LIKE '%compact%' THEN cs.first_dirty_offset END
			   AS first_dirty_offset
	FROM kafka.topics t
	JOIN kafka.partitions p USING (topic_id)
	JOIN kafka.topic_configs c ON c.topic = t.name AND c.name = 'cleanup.policy'
	CROSS JOIN LATERAL kafka._partition_stats(p.partition_id) s
	CROSS JOIN LATERAL kafka._log_cleaner_status(p.partition_id) cs;

------------------------------------------------------------------------------
-- Authorization (docs/security.md): Kafka ACLs on PostgreSQL roles.  One
-- owner: src/catalog/acls.c.  A principal is "User:<role>" (or "User:*");
-- a grant to a group role covers its members.  Superusers and members of
-- kafka_admin are allowed everything.
------------------------------------------------------------------------------

CREATE TABLE kafka.acls (
	principal		text NOT NULL CHECK (principal LIKE 'User:_%'),
	resource_type	text NOT NULL
		CHECK (resource_type IN ('TOPIC', 'GROUP', 'CLUSTER', 'TRANSACTIONAL_ID')),
	pattern_type	text NOT NULL CHECK (pattern_type IN ('LITERAL', 'PREFIXED')),
	resource_name	text NOT NULL CHECK (resource_name <> ''),
	operation		text NOT NULL
		CHECK (operation IN ('ALL', 'READ', 'WRITE', 'CREATE', 'DELETE', 'ALTER', 'DESCRIBE',
							 'CLUSTER_ACTION', 'DESCRIBE_CONFIGS', 'ALTER_CONFIGS',
							 'IDEMPOTENT_WRITE', 'CREATE_TOKENS', 'DESCRIBE_TOKENS', 'TWO_PHASE_COMMIT')),
	permission		text NOT NULL CHECK (permission IN ('ALLOW', 'DENY')),
	host			text NOT NULL DEFAULT '*' CHECK (host <> ''),
	created_at		timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (resource_type, pattern_type, resource_name, principal, host, operation, permission)
);

-- Any change to kafka.acls (through the functions below, CreateAcls and
-- DeleteAcls, or plain DML) invalidates every backend's ACL cache when it
-- commits.
CREATE FUNCTION kafka._acls_changed() RETURNS trigger
	AS 'MODULE_PATHNAME', 'kp_sql_acls_changed' LANGUAGE C;
REVOKE ALL ON FUNCTION kafka._acls_changed() FROM PUBLIC;
CREATE TRIGGER acls_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON kafka.acls
	FOR EACH STATEMENT EXECUTE FUNCTION kafka._acls_changed();
-- also under session_replication_role = replica (logical replication's apply,
-- a restore): a change nobody is told of would leave a deleted ACL in force
ALTER TABLE kafka.acls ENABLE ALWAYS TRIGGER acls_changed;

-- kafka-acls.sh --add: an ACL (CLUSTER ALTER needed).  Returns false when
-- the same ACL already existed.
CREATE FUNCTION kafka.create_acl(principal text, resource_type text, resource_name text,
								 operation text, permission text DEFAULT 'ALLOW',
								 pattern_type text DEFAULT 'LITERAL', host text DEFAULT '*')
	RETURNS boolean AS 'MODULE_PATHNAME', 'kp_sql_create_acl' LANGUAGE C VOLATILE STRICT;

-- kafka-acls.sh --remove: the ACLs matching the filter (NULL / 'ANY' match
-- anything; pattern_type 'MATCH' matches the ACLs that apply to
-- resource_name), deleted; CLUSTER ALTER needed.
CREATE FUNCTION kafka.delete_acls(principal text DEFAULT NULL, resource_type text DEFAULT 'ANY',
								  resource_name text DEFAULT NULL, operation text DEFAULT 'ANY',
								  permission text DEFAULT 'ANY', pattern_type text DEFAULT 'ANY',
								  host text DEFAULT NULL,
								  OUT principal text, OUT resource_type text, OUT pattern_type text,
								  OUT resource_name text, OUT operation text, OUT permission text,
								  OUT host text)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_delete_acls' LANGUAGE C VOLATILE;

-- kafka-acls.sh --list: the ACLs matching the filter; CLUSTER DESCRIBE needed.
CREATE FUNCTION kafka.describe_acls(principal text DEFAULT NULL, resource_type text DEFAULT 'ANY',
									resource_name text DEFAULT NULL, operation text DEFAULT 'ANY',
									permission text DEFAULT 'ANY', pattern_type text DEFAULT 'ANY',
									host text DEFAULT NULL,
									OUT principal text, OUT resource_type text, OUT pattern_type text,
									OUT resource_name text, OUT operation text, OUT permission text,
									OUT host text)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'kp_sql_describe_acls' LANGUAGE C VOLATILE;

-- Would current_user (or the given role) be allowed operation on the
-- resource?  The check every kafka.* function and the listener make.
CREATE FUNCTION kafka.authorized(resource_type text, resource_name text, operation text,
								 role name DEFAULT current_user)
	RETURNS boolean AS 'MODULE_PATHNAME', 'kp_sql_authorized' LANGUAGE C STABLE STRICT;

-- The predefined roles.  Roles are cluster-wide: created only when missing,
-- and left in place by DROP EXTENSION (as they may be granted elsewhere).
DO $$
DECLARE
	r text;
BEGIN
	FOREACH r IN ARRAY ARRAY['kafka_admin', 'kafka_read_all_data', 'kafka_write_all_data'] LOOP
		IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = r) THEN
			EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
		END IF;
	END LOOP;
END
$$;

-- The functions need only the ACLs (they work with the extension's rights
-- once the ACL allows); reading the catalog tables and views directly needs
-- table privileges, which the predefined roles get (docs/security.md).
GRANT USAGE ON SCHEMA kafka TO kafka_admin, kafka_read_all_data, kafka_write_all_data;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA kafka TO kafka_admin;
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA kafka TO kafka_admin;
-- SCRAM keys stay superuser-only, as pg_authid's verifiers do: kafka_admin
-- members change credentials over the wire (AlterUserScramCredentials),
-- which refuses them a superuser's.
REVOKE ALL ON kafka.scram_credentials FROM kafka_admin;
GRANT SELECT ON kafka.topics, kafka.partitions, kafka.topic_config_overrides, kafka.store, kafka.leader,
	kafka.transactions, kafka.transaction_partitions
	TO kafka_read_all_data, kafka_write_all_data;
GRANT SELECT, INSERT, UPDATE, DELETE ON kafka.consumer_groups, kafka.group_members,
	kafka.group_configs, kafka.committed_offsets TO kafka_read_all_data;
GRANT SELECT, INSERT, UPDATE, DELETE ON kafka.share_groups, kafka.share_group_members,
	kafka.share_partitions, kafka.share_records TO kafka_read_all_data;

-- Internal functions are not for PUBLIC; every other function pins
-- search_path, so nothing a caller put on theirs runs inside kafka_pg: to
-- pg_catalog, pg_temp, the path of the catalog's own statements
-- (KP_SAFE_SEARCH_PATH, src/catalog/spi.c), which then need not set it again.
REVOKE ALL ON FUNCTION kafka._partition_stats(bigint), kafka._partition_segments(bigint),
	kafka._log_cleaner_status(bigint), kafka._fetch_wait_changes(bigint),
	kafka.share_acquire(text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kafka._partition_stats(bigint), kafka._partition_segments(bigint),
	kafka._log_cleaner_status(bigint), kafka._fetch_wait_changes(bigint),
	kafka.share_acquire(text, text, integer)
	TO kafka_admin, kafka_read_all_data;
DO $$
DECLARE
	f regprocedure;
BEGIN
	FOR f IN SELECT p.oid FROM pg_catalog.pg_proc p
			 WHERE p.pronamespace = 'kafka'::regnamespace AND p.prokind = 'f'
			   AND p.proname !~ '^_' LOOP
		EXECUTE pg_catalog.format('ALTER FUNCTION %s SET search_path = pg_catalog, pg_temp', f);
	END LOOP;
END
$$;

------------------------------------------------------------------------------
-- Bulk SQL (issue 13): the streaming aggregate kafka.produce_agg and topics
-- as foreign tables (kafka_pg_fdw, server kafka_pg).  Both produce through
-- one streaming producer (src/sqlapi/bulk.c): one open record batch per
-- partition, appended when full, the rest at the end; the batches belong to
-- the calling transaction, as kafka.produce's.  docs/sql-api.md.
------------------------------------------------------------------------------

CREATE FUNCTION kafka._produce_agg_sfunc(internal, text, bytea, bytea) RETURNS internal
	AS 'MODULE_PATHNAME', 'kp_sql_produce_agg_sfunc' LANGUAGE C VOLATILE;
CREATE FUNCTION kafka._produce_agg_sfunc(internal, text, bytea, bytea, integer) RETURNS internal
	AS 'MODULE_PATHNAME', 'kp_sql_produce_agg_sfunc' LANGUAGE C VOLATILE;
CREATE FUNCTION kafka._produce_agg_sfunc(internal, text, bytea, bytea, integer, kafka.header[], timestamptz) RETURNS internal
	AS 'MODULE_PATHNAME', 'kp_sql_produce_agg_sfunc' LANGUAGE C VOLATILE;
CREATE FUNCTION kafka._produce_agg_sfunc(internal, text, text, text) RETURNS internal
	AS 'MODULE_PATHNAME', 'kp_sql_produce_agg_sfunc' LANGUAGE C VOLATILE;
CREATE FUNCTION kafka._produce_agg_sfunc(internal, text, text, text, integer) RETURNS internal
	AS 'MODULE_PATHNAME', 'kp_sql_produce_agg_sfunc' LANGUAGE C VOLATILE;
CREATE FUNCTION kafka._produce_agg_sfunc(internal, text, text, text, integer, kafka.header[], timestamptz) RETURNS internal
	AS 'MODULE_PATHNAME', 'kp_sql_produce_agg_sfunc' LANGUAGE C VOLATILE;
CREATE FUNCTION kafka._produce_agg_sfunc(internal, text, text, jsonb) RETURNS internal
	AS 'MODULE_PATHNAME', 'kp_sql_produce_agg_sfunc' LANGUAGE C VOLATILE;
CREATE FUNCTION kafka._produce_agg_sfunc(internal, text, text, jsonb, integer) RETURNS internal
	AS 'MODULE_PATHNAME', 'kp_sql_produce_agg_sfunc' LANGUAGE C VOLATILE;
CREATE FUNCTION kafka._produce_agg_sfunc(internal, text, text, jsonb, integer, kafka.header[], timestamptz) RETURNS internal
	AS 'MODULE_PATHNAME', 'kp_sql_produce_agg_sfunc' LANGUAGE C VOLATILE;
CREATE FUNCTION kafka._produce_agg_final(internal) RETURNS bigint
	AS 'MODULE_PATHNAME', 'kp_sql_produce_agg_final' LANGUAGE C VOLATILE;

-- SELECT kafka.produce_agg('topic', key, value) FROM src: every row a record,
-- streamed into record batches (no array); returns the records produced.
-- With partition (NULL: by key), headers and timestamp (NULL: now) too.
CREATE AGGREGATE kafka.produce_agg(topic text, key bytea, value bytea) (
	SFUNC = kafka._produce_agg_sfunc, STYPE = internal,
	FINALFUNC = kafka._produce_agg_final, FINALFUNC_MODIFY = READ_WRITE);
CREATE AGGREGATE kafka.produce_agg(topic text, key bytea, value bytea, partition integer) (
	SFUNC = kafka._produce_agg_sfunc, STYPE = internal,
	FINALFUNC = kafka._produce_agg_final, FINALFUNC_MODIFY = READ_WRITE);
CREATE AGGREGATE kafka.produce_agg(topic text, key bytea, value bytea, partition integer, headers kafka.header[], "timestamp" timestamptz) (
	SFUNC = kafka._produce_agg_sfunc, STYPE = internal,
	FINALFUNC = kafka._produce_agg_final, FINALFUNC_MODIFY = READ_WRITE);
CREATE AGGREGATE kafka.produce_agg(topic text, key text, value text) (
	SFUNC = kafka._produce_agg_sfunc, STYPE = internal,
	FINALFUNC = kafka._produce_agg_final, FINALFUNC_MODIFY = READ_WRITE);
CREATE AGGREGATE kafka.produce_agg(topic text, key text, value text, partition integer) (
	SFUNC = kafka._produce_agg_sfunc, STYPE = internal,
	FINALFUNC = kafka._produce_agg_final, FINALFUNC_MODIFY = READ_WRITE);
CREATE AGGREGATE kafka.produce_agg(topic text, key text, value text, partition integer, headers kafka.header[], "timestamp" timestamptz) (
	SFUNC = kafka._produce_agg_sfunc, STYPE = internal,
	FINALFUNC = kafka._produce_agg_final, FINALFUNC_MODIFY = READ_WRITE);
CREATE AGGREGATE kafka.produce_agg(topic text, key text, value jsonb) (
	SFUNC = kafka._produce_agg_sfunc, STYPE = internal,
	FINALFUNC = kafka._produce_agg_final, FINALFUNC_MODIFY = READ_WRITE);
CREATE AGGREGATE kafka.produce_agg(topic text, key text, value jsonb, partition integer) (
	SFUNC = kafka._produce_agg_sfunc, STYPE = internal,
	FINALFUNC = kafka._produce_agg_final, FINALFUNC_MODIFY = READ_WRITE);
CREATE AGGREGATE kafka.produce_agg(topic text, key text, value jsonb, partition integer, headers kafka.header[], "timestamp" timestamptz) (
	SFUNC = kafka._produce_agg_sfunc, STYPE = internal,
	FINALFUNC = kafka._produce_agg_final, FINALFUNC_MODIFY = READ_WRITE);

-- CREATE AGGREGATE marks every aggregate immutable (pg_proc.provolatile 'i':
-- "not needed for aggregates"), but the planner reads it: it would drop a
-- produce_agg whose result nobody uses, and compute two equal calls once.
-- produce_agg has effects, so it is marked volatile.
UPDATE pg_catalog.pg_proc SET provolatile = 'v'
 WHERE pronamespace = 'kafka'::regnamespace AND proname = 'produce_agg';

-- Topics as foreign tables: CREATE FOREIGN TABLE t (key text, value jsonb)
-- SERVER kafka_pg OPTIONS (topic 'orders'), or IMPORT FOREIGN SCHEMA topics
-- FROM SERVER kafka_pg INTO s.  INSERT and COPY FROM produce; SELECT reads
-- (read_committed), partition and "offset" conditions pushed down.  The
-- Kafka ACLs of current_user decide (WRITE to insert, READ to select), so
-- every role may use the server.
CREATE FUNCTION kafka._fdw_handler() RETURNS fdw_handler
	AS 'MODULE_PATHNAME', 'kp_fdw_handler' LANGUAGE C STRICT;
CREATE FUNCTION kafka._fdw_validator(text[], oid) RETURNS void
	AS 'MODULE_PATHNAME', 'kp_fdw_validator' LANGUAGE C STRICT;
CREATE FOREIGN DATA WRAPPER kafka_pg_fdw
	HANDLER kafka._fdw_handler VALIDATOR kafka._fdw_validator;
CREATE SERVER kafka_pg FOREIGN DATA WRAPPER kafka_pg_fdw;
GRANT USAGE ON FOREIGN SERVER kafka_pg TO PUBLIC;

REVOKE ALL ON FUNCTION kafka._fdw_handler(), kafka._fdw_validator(text[], oid),
	kafka._produce_agg_final(internal) FROM PUBLIC;
REVOKE ALL ON FUNCTION kafka._produce_agg_sfunc(internal, text, bytea, bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION kafka._produce_agg_sfunc(internal, text, bytea, bytea, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION kafka._produce_agg_sfunc(internal, text, bytea, bytea, integer, kafka.header[], timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION kafka._produce_agg_sfunc(internal, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION kafka._produce_agg_sfunc(internal, text, text, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION kafka._produce_agg_sfunc(internal, text, text, text, integer, kafka.header[], timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION kafka._produce_agg_sfunc(internal, text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION kafka._produce_agg_sfunc(internal, text, text, jsonb, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION kafka._produce_agg_sfunc(internal, text, text, jsonb, integer, kafka.header[], timestamptz) FROM PUBLIC;
