/*-------------------------------------------------------------------------
 *
 * kafka_catalog.h
 *	  Topics, partitions and topic configs: the whole public face of
 *	  src/catalog.
 *
 * The tables live in schema kafka (sql/kafka_pg--*.sql) and only this
 * component writes them.  Readers on the hot path (produce, fetch) use
 * kp_topic_open, which serves a backend-local cache invalidated through the
 * relcache invalidation that every change here sends at commit.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_KAFKA_CATALOG_H
#define KP_KAFKA_CATALOG_H

#include "postgres.h"
#include "nodes/pg_list.h"
#include "storage/lockdefs.h"
#include "utils/uuid.h"

#include "codec/codec.h"
#include "store/store.h"

#define KP_TOPIC_NAME_MAX	249

/*
 * The search_path of every statement the catalog issues (spi.c) and of the
 * background workers (kp_worker_connect): PostgreSQL's own for maintenance
 * commands, so that no schema someone else can write decides what an
 * operator or function in kafka_pg's SQL means.
 */
#define KP_SAFE_SEARCH_PATH "pg_catalog, pg_temp"

/* ---------- topic configs (config.c) ---------- */

typedef enum KpConfigType
{
	KP_CONF_LONG,
	KP_CONF_INT,
	KP_CONF_DOUBLE,
	KP_CONF_BOOLEAN,
	KP_CONF_STRING,
	KP_CONF_ENUM,				/* one of a list */
	KP_CONF_LIST				/* comma-separated subset of a list */
} KpConfigType;

typedef struct KpConfigDef
{
	const char *name;
	KpConfigType type;
	const char *default_value;
	double		min;			/* numeric bounds */
	double		max;
	const char *const *choices; /* ENUM and LIST */
	const char *doc;
} KpConfigDef;

extern const KpConfigDef kp_topic_config_defs[];
extern const int kp_topic_config_count;

/* Index of a config by name, or -1. */
extern int	kp_config_index(const char *name);

/*
 * Check a value for a config (ERROR with the key and value if it is bad,
 * ERRCODE_KP_INVALID_CONFIG); returns the value normalised (e.g. "-1"
 * for "-01").  Unknown keys are an error too.
 */
extern char *kp_config_check(const char *name, const char *value);

/* ---------- the catalog stamp (stamp.c) ---------- */

/*
 * Which build of the install script created this database's catalog
 * (kafka.catalog_stamp), compared with the library's own stamp, a hash of
 * that script computed at build time.  All in a transaction.
 */
typedef enum KpCatalogStampState
{
	KP_CATALOG_ABSENT,			/* no extension in this database */
	KP_CATALOG_CURRENT,			/* created by this build's script */
	KP_CATALOG_OTHER_BUILD		/* another build's (or one without stamps) */
} KpCatalogStampState;

extern const char *kp_catalog_stamp_library(void);

/* SQL entry points: ERROR 55000, with the remedy, on another build's catalog */
extern void kp_catalog_stamp_check(void);

/*
 * Background workers: the state, with another build's catalog logged once
 * per process as an ERROR (with the remedy) and its replacement by this
 * build's logged too.  WHO names the worker in the message.
 */
extern KpCatalogStampState kp_catalog_stamp_worker(const char *who);

/* The same at a worker's start, in a transaction of its own: false if another build's */
extern bool kp_catalog_stamp_worker_start(const char *who);

/* ---------- topics (topics.c) ---------- */

/* Config values the log and the front doors need, parsed. */
typedef struct KpTopicConfig
{
	KpLogConfig log;
	int			compression;	/* KpCompression, or -1 for "producer" */
	bool		cleanup_delete;
	bool		cleanup_compact;
	int64		retention_ms;
	int64		retention_bytes;
	int64		delete_retention_ms;
	int64		min_compaction_lag_ms;
	int64		max_compaction_lag_ms;
	double		min_cleanable_dirty_ratio;
	int64		file_delete_delay_ms;
	int32		min_insync_replicas;
	int64		timestamp_before_max_ms;
	int64		timestamp_after_max_ms;
	int32		max_decompressed_message_bytes;
} KpTopicConfig;

typedef struct KpTopic
{
	int32		topic_id;
	char		name[KP_TOPIC_NAME_MAX + 1];
	pg_uuid_t	topic_uuid;
	int32		partition_count;
	int64	   *partition_ids;	/* [partition_count] */
	TransactionId *partition_xmins; /* to tell partitions this xact created */
	KpTopicConfig config;
	char	  **config_values;	/* effective value of every config, by index */
	bool	   *config_is_default;
} KpTopic;

/*
 * Look up a topic by name and lock it against deletion (lockmode on the
 * topic object, held to the end of the transaction).  Returns NULL when it
 * does not exist and missing_ok, else ERROR (KP003).  The result is a copy
 * in CurrentMemoryContext (kp_topic_copy), valid however many catalog calls
 * and invalidations follow.
 */
extern const KpTopic *kp_topic_open(const char *name, LOCKMODE lockmode, bool missing_ok);

/*
 * kp_topic_open without waiting: NULL if the topic does not exist or its
 * lock is held in a conflicting mode (then *busy, unless busy is NULL).
 */
extern const KpTopic *kp_topic_try_open(const char *name, LOCKMODE lockmode, bool *busy);

/*
 * Set in a process that must never wait for a topic's lock (the listener
 * workers): then kp_topic_open takes the lock only if it is free, and
 * otherwise returns NULL (missing_ok) or raises ERRCODE_LOCK_NOT_AVAILABLE,
 * and kp_topic_create and kp_topic_add_partitions do the same with the
 * creation lock.
 */
extern bool kp_topic_locks_nowait;

/*
 * How many times this process raised that refusal: a caller that treats
 * other lock errors differently (the listener's LOCK_RETRY_ROW requests,
 * which run with a short lock_timeout) tells the two apart by it.
 */
extern uint64 kp_topic_lock_refusals;

/*
 * Take the lock kp_topic_create and kp_topic_add_partitions hold to the end
 * of their transaction (one creator of topics or partitions at a time), if
 * it is free; whether it was.
 */
extern bool kp_topic_try_lock_creation(void);

/* Release kp_topic_open's lock now, not at the end of the transaction. */
extern void kp_topic_close(const KpTopic *topic, LOCKMODE lockmode);

/*
 * A copy of a cached topic in CurrentMemoryContext: valid across catalog
 * calls (any relation lock taken may process invalidations, which drop the
 * whole cache).
 */
extern KpTopic *kp_topic_copy(const KpTopic *topic);

/* The name of the topic with this Kafka topic id, or NULL (no lock taken). */
extern char *kp_topic_name_for_uuid(const pg_uuid_t *uuid);

/*
 * The Kafka topic id of a topic by name, seeing topics created earlier in
 * this transaction; false if none (out zeroed).
 */
extern bool kp_topic_uuid_by_name(const char *name, pg_uuid_t *out);

/* Every topic's name in Kafka's order (byte order); returns the count. */
extern int	kp_topic_list_names(char ***names);

/* The partition reference the store needs; ERROR for a bad partition. */
extern void kp_topic_partition(const KpTopic *topic, int32 partition,
							   KpPartitionRef *ref);

/*
 * ERROR (KP003) unless kafka.partitions has a row with this partition id
 * visible to the current snapshot; then its topic's AccessShareLock, and
 * false if the partition was deleted since that snapshot (its storage is
 * gone: the caller shows nothing of it; the lock is released then).  For
 * SQL functions that take a raw partition id (the views'): the store keeps
 * shared state for each partition it is asked about, so an id nobody
 * checked must never reach it.  The caller releases the lock with
 * kp_topic_unlock_partition_id once it has read the partition: a view
 * that read many topics' partitions held their locks to the end of its
 * transaction, taken in partition order, which could deadlock with a
 * transaction deleting several topics in its own order.
 */
typedef struct KpTopicLock
{
	bool		held;
	Oid			relid;
	int32		topic_id;
} KpTopicLock;

extern bool kp_topic_lock_partition_id(int64 partition_id, KpTopicLock *lock);
extern void kp_topic_unlock_partition_id(const KpTopicLock *lock);

/*
 * Whether kafka.partitions has the partition under the latest snapshot
 * (committed, or this transaction's own): the store's
 * KpPartitionExistsCallback, asked before it loads a partition.
 */
extern bool kp_catalog_partition_exists(int64 partition_id);

/* kafka.debug_views_skip_recheck: testing only (src/main) */
extern bool kp_debug_views_skip_recheck;

/* Kafka's topic-name rules; ERROR (KP017) with the reason. */
extern void kp_topic_check_name(const char *name);

/* The same rules in Kafka's words, for the wire; NULL if the name is valid. */
extern char *kp_topic_name_invalid(const char *name);

/* One of Kafka's internal topic names, which no topic here takes. */
extern bool kp_topic_reserved(const char *name);

/* The other topic whose name differs from name only in '.' against '_'. */
extern char *kp_topic_colliding(const char *name);

/* name/value pairs of configs to set; value NULL means "reset to default" */
typedef struct KpConfigSetting
{
	const char *name;
	const char *value;
} KpConfigSetting;

extern void kp_topic_create(const char *name, int32 partitions,
							const KpConfigSetting *configs, int nconfigs);
extern void kp_topic_delete(const char *name);
extern void kp_topic_add_partitions(const char *name, int32 partitions);

/* DROP EXTENSION: drop every partition's storage and the directory. */
extern void kp_topic_drop_all_storage(void);

extern void kp_topic_alter_configs(const char *name,
								   const KpConfigSetting *configs, int nconfigs);

/* ---------- SCRAM credentials: PostgreSQL's role verifiers (scram.c) ---------- */

typedef struct KpScramCredential
{
	char	   *user;			/* the role */
	int			iterations;		/* of its SCRAM-SHA-256 verifier */
} KpScramCredential;

/* Every LOGIN role with a SCRAM-SHA-256 verifier, sorted by name. */
extern int	kp_scram_credentials(KpScramCredential **out);

/* Iterations of one role's SCRAM-SHA-256 verifier, 0 if it has none. */
extern int	kp_scram_credential_iterations(const char *user);

/*
 * What a Kafka client's SASL login is checked against: a LOGIN role's
 * SCRAM-SHA-256 verifier, decoded.  The listener wipes it after use.
 */
#define KP_SCRAM_KEY_LEN 32		/* SHA-256 */
#define KP_SCRAM512_KEY_LEN 64	/* SHA-512 */
#define KP_SCRAM_SALT_MAX 64
typedef struct KpScramVerifier
{
	Oid			role_oid;
	char		role[NAMEDATALEN];
	int			iterations;
	int			salt_len;
	uint8		salt[KP_SCRAM_SALT_MAX];
	int			key_len;		/* KP_SCRAM_KEY_LEN or KP_SCRAM512_KEY_LEN */
	uint8		stored_key[KP_SCRAM512_KEY_LEN];
	uint8		server_key[KP_SCRAM512_KEY_LEN];
	int64		valid_until_ms; /* rolvaliduntil in Unix ms; 0: none */
} KpScramVerifier;

/*
 * Fill *out for role user; false (and *why, for the server log only) when
 * the role does not exist, cannot log in, has no SCRAM-SHA-256 verifier or
 * its password has expired (rolvaliduntil), as PostgreSQL refuses them.
 */
extern bool kp_scram_verifier(const char *user, KpScramVerifier *out, const char **why);

/*
 * SCRAM-SHA-512 credentials, which PostgreSQL does not keep: kafka_pg's own
 * table kafka.scram_credentials (set by AlterUserScramCredentials), for
 * LOGIN roles.  The verifier is checked like kp_scram_verifier's (the role
 * must exist, log in and not be expired) and bound to the role's OID and
 * name: renaming or dropping the role voids it.
 */
extern bool kp_scram512_verifier(const char *user, KpScramVerifier *out, const char **why);
extern int	kp_scram512_credentials(KpScramCredential **out);
extern int	kp_scram512_credential_iterations(const char *user);

/* Store (replace) one; ERROR if the role does not exist. */
extern void kp_scram512_store(const char *user, int iterations, const uint8 *salt, int salt_len,
							  const uint8 *stored_key, const uint8 *server_key);

/* Delete one; false if there was none. */
extern bool kp_scram512_delete(const char *user);

/*
 * Set a role's PostgreSQL password to a SCRAM-SHA-256 verifier (ALTER ROLE
 * ... PASSWORD), or remove it (verifier NULL).  ERROR if no such role.
 */
extern void kp_scram256_set_verifier(const char *user, const char *verifier);

/* ---------- client quotas: kafka.client_quotas (quotas.c) ---------- */

/*
 * Kafka's ClientQuotaEntity for the types kafka_pg keeps: a user part and/or
 * a client-id part; a part present with a NULL name is Kafka's <default>.
 */
typedef struct KpQuotaEntity
{
	bool		has_user;
	const char *user;			/* NULL: <default> */
	bool		has_client_id;
	const char *client_id;		/* NULL: <default> */
} KpQuotaEntity;

typedef struct KpClientQuota
{
	KpQuotaEntity entity;
	char	   *key;			/* producer_byte_rate, consumer_byte_rate,
								 * request_percentage */
	double		value;
} KpClientQuota;

/* Every quota, ordered by entity then key; returns the count. */
extern int	kp_client_quotas(KpClientQuota **out);

/* Set (or, remove, delete) one quota of an entity. */
extern void kp_client_quota_alter(const KpQuotaEntity *e, const char *key, bool remove,
								  double value);

/* kafka.client_quotas, whose relcache invalidation says the quotas changed. */
extern Oid	kp_client_quotas_relid(void);

/* ---------- topic policy checks (policy.c) ---------- */

/*
 * Both front doors check what they are sent with these.  Each returns 0 if
 * the topic's configs allow it, else the SQLSTATE of the Kafka error
 * (ERRCODE_KP_*) with *why set to a message; with raise, it reports the
 * ERROR instead of returning.
 */
extern int	kp_topic_check_batch_size(const KpTopic *t, size_t len, bool raise, char **why);
extern int	kp_topic_check_timestamp(const KpTopic *t, int64 ts, int64 now_ms,
									 bool raise, char **why);
extern int	kp_topic_check_delete_records(const KpTopic *t, bool raise, char **why);

/*
 * Compacted topics (cleanup.policy includes "compact") refuse records
 * without a key (INVALID_RECORD).  The batch form returns the index of each
 * refused record in *bad (palloc'd, *nbad entries).
 */
extern int	kp_topic_check_record_key(const KpTopic *t, bool has_key, bool raise,
									  char **why);
extern int	kp_topic_check_batch_keys(const KpTopic *t, const char *batch, size_t len,
									  size_t max_uncompressed, int **bad, int *nbad,
									  char **why);

/* ---------- the BROKER config resource's state (broker_configs.c) ---------- */

/* Dynamic broker configs kept without effect, by name (kafka.broker_configs). */
extern int	kp_broker_config_overrides(char ***names, char ***values);
extern void kp_broker_configs_lock(void);
extern void kp_broker_config_store(const char *name, const char *value);	/* NULL: remove */

/* Where a kafka.* setting's value comes from. */
typedef enum KpSettingSource
{
	KP_SETTING_DEFAULT,
	KP_SETTING_STATIC,			/* postgresql.conf, the command line, ... */
	KP_SETTING_ALTER_SYSTEM		/* postgresql.auto.conf */
} KpSettingSource;

extern bool kp_setting_info(const char *name, char **value, KpSettingSource *source,
							bool *restart_only);
extern void kp_setting_check(const char *name, const char *value);
extern void kp_setting_alter_system(const char *name, const char *value);	/* NULL: RESET */
extern void kp_setting_reload(void);

/* ---------- cluster-wide catalog state (cluster.c) ---------- */

/* A new producer id from kafka.producer_id_seq. */
extern int64 kp_catalog_next_producer_id(void);

/* Record the segment directory's relfilenode in kafka.store. */
extern void kp_catalog_record_store_directory(Oid relnode);

/*
 * kafka.leader, the leader as its listener last published it (one row):
 * the arrays are in PostgreSQL's text form ('{0,1}'), brokers is
 * 'node_id@host:port[/rack], ...'.  Reading gives false when there is no row.
 * Writing does not wait for synchronous standbys (synchronous_commit local).
 */
typedef struct KpLeaderRow
{
	int32		node_id;
	char	   *host;
	int32		port;
	char	   *rack;			/* NULL: none */
	int32		leader_epoch;
	char	   *brokers;
	char	   *replicas;
	char	   *isr;
	char	   *offline;
} KpLeaderRow;

extern bool kp_catalog_read_leader(KpLeaderRow *out);
extern void kp_catalog_write_leader(const KpLeaderRow *row);

/* ====================================================================
 * Consumer groups (groups.c, offsets.c): the only code that reads or
 * writes kafka.consumer_groups, kafka.group_members and
 * kafka.committed_offsets.  The rules (states, fences, assignment) are
 * src/group's; these functions only move rows.  Results are allocated in
 * the caller's memory context.  Row locks taken here (for_update) are held
 * to the end of the caller's transaction.
 * ====================================================================
 */

/* bytes that may be null */
typedef struct KpBlob
{
	const char *data;
	int			len;			/* -1: null */
} KpBlob;

/* A row of kafka.consumer_groups. */
typedef struct KpGroupRow
{
	bool		exists;
	char	   *group_type;		/* classic, consumer */
	char	   *protocol_type;
	char	   *state;
	int32		generation;
	char	   *protocol_name;	/* NULL when none */
	char	   *leader_id;		/* NULL when none */
	int32		round;
	int64		deadline_ms;	/* Unix ms, -1 when none */
	int64		not_before_ms;	/* Unix ms, -1 when none */
	int64		state_changed_ms;
	/* the consumer protocol (KIP-848) */
	int32		group_epoch;
	int32		assignment_epoch;
	char	   *metadata_signature;
} KpGroupRow;

/* A row of kafka.group_members (both protocols' columns). */
typedef struct KpMemberRow
{
	char	   *member_id;
	char	   *instance_id;	/* NULL: dynamic member */
	char	   *client_id;
	char	   *client_host;
	int32		session_timeout_ms;
	int32		rebalance_timeout_ms;
	int32		join_round;		/* -1: pending (KP_MEMBER_PENDING) */
	int			nprotocols;
	char	  **protocol_names;
	KpBlob	   *protocol_metadata;
	KpBlob		assignment;
	int64		last_heartbeat_ms;
	/* the consumer protocol; partition sets as 'topic:0,1|other:3' */
	int32		member_epoch;
	int32		previous_member_epoch;	/* its epoch before (-1: none) */
	char	   *rack_id;
	int			nsubscribed;
	char	  **subscribed;
	char	   *subscribed_regex;	/* NULL: none */
	Oid			authz_role;		/* principal of its latest heartbeat
								 * (InvalidOid: none) */
	char	   *authz_host;		/* its client address, for host ACLs ("" on
								 * SQL) */
	char	   *assigned;
	char	   *target;
	char	   *owned;
} KpMemberRow;

/*
 * A classic group's pending member (KIP-394): handed its id by
 * MEMBER_ID_REQUIRED, not yet joined with it.  Kafka keeps it apart from
 * the members (hasMember is false) until it joins, leaves or its session
 * ends, and a join round waits for it (hasAllMembersJoined).
 */
#define KP_MEMBER_PENDING(m)	((m)->join_round < 0)

/*
 * The group's row; with create, inserted first if missing; with for_update,
 * locked FOR UPDATE (the coordinator's group lock).
 */
extern void kp_cat_group_read(const char *group_id, bool create, bool for_update,
							  KpGroupRow *g);

/* Insert the group's row if missing, without locking it. */
extern void kp_cat_group_ensure(const char *group_id);

/*
 * The group's creation lock, which a transaction creating the group holds
 * until it ends: taken (waited for, or with kp_group_locks_nowait refused
 * with ERRCODE_LOCK_NOT_AVAILABLE), so that a group found missing is not
 * one another transaction is still creating.
 */
extern void kp_cat_group_lock_creation(const char *group_id);

/*
 * Set by the listener while it runs a group request it can roll back and run
 * again (dispatch.c): kp_cat_group_read then takes the group lock FOR UPDATE
 * NOWAIT, and creating a group that a transaction still open is creating
 * raises ERRCODE_LOCK_NOT_AVAILABLE instead of waiting for it.
 */
extern bool kp_group_locks_nowait;

/* Store the classic protocol's columns of g (state_changed_at follows state). */
extern void kp_cat_group_save_classic(const char *group_id, const KpGroupRow *g);

/* Store the consumer protocol's counters; the group becomes a consumer group. */
extern void kp_cat_group_save_consumer(const char *group_id, int32 group_epoch,
									   int32 assignment_epoch, const char *signature,
									   const char *assignor, int nmembers);

/* After members of a consumer group expired: bump its epoch, Stable or Empty. */
extern void kp_cat_group_consumer_members_gone(const char *group_id);
extern void kp_cat_group_delete(const char *group_id);

/* Every group: ids, states and protocol types ("consumer:<type>" for KIP-848 groups). */
extern int	kp_cat_groups_list(char ***group_ids, char ***states, char ***protocol_types);

/*
 * Groups the upkeep must look at: a member past its session timeout
 * (consumer groups: consumer_session_ms), or a join phase past its deadline
 * or its initial delay.
 */
extern int	kp_cat_groups_needing_upkeep(int32 consumer_session_ms, char ***group_ids);

/* The earliest of those moments still to come (Unix ms), -1 if none. */
extern int64 kp_cat_groups_next_deadline(int32 consumer_session_ms);

/* Members, ordered by member id. */
extern int	kp_cat_members_load(const char *group_id, KpMemberRow **members);

/*
 * Stable classic groups of protocol type "consumer" with an offset committed
 * longer than retention_minutes ago: Kafka expires those of topics no member
 * subscribes to (kp_cat_offsets_expire_unsubscribed).
 */
extern int	kp_cat_offsets_stable_classic_candidates(int32 retention_minutes, char ***group_ids);

/*
 * Drop the group's offsets committed that long ago of topics not among
 * topics, if it is still Stable in generation.
 */
extern void kp_cat_offsets_expire_unsubscribed(const char *group_id, int32 generation,
											   char **topics, int ntopics,
											   int32 retention_minutes);
extern void kp_cat_member_join_classic(const char *group_id, const char *member_id,
									   const char *instance_id, const char *client_id,
									   const char *client_host, int32 session_timeout_ms,
									   int32 rebalance_timeout_ms, int nprotocols,
									   const char *const *protocol_names,
									   const KpBlob *protocol_metadata, int32 join_round);
extern void kp_cat_member_join_consumer(const char *group_id, const char *member_id,
										const char *instance_id, const char *client_id,
										const char *client_host, int32 rebalance_timeout_ms,
										const char *rack_id, int nsubscribed,
										char *const *subscribed, const char *subscribed_regex);
extern void kp_cat_member_rename(const char *group_id, const char *old_id, const char *new_id);
extern void kp_cat_member_delete(const char *group_id, const char *member_id);

/* last_heartbeat = now() */
extern void kp_cat_member_touch(const char *group_id, const char *member_id);
extern void kp_cat_member_set_assignment(const char *group_id, const char *member_id,
										 KpBlob assignment);

/* A new generation: every assignment NULL, every member's session restarts. */
extern void kp_cat_members_clear_assignments(const char *group_id);

/* Members the leader did not assign get empty bytes. */
extern void kp_cat_members_default_assignments(const char *group_id);
extern void kp_cat_member_set_subscription(const char *group_id, const char *member_id,
										   int nsubscribed, char *const *subscribed,
										   const char *subscribed_regex);
extern void kp_cat_member_set_target(const char *group_id, const char *member_id,
									 const char *target);
extern void kp_cat_member_set_authz(const char *group_id, const char *member_id,
									Oid role, const char *host);

/* what kp_cat_member_save_consumer does with a member's revoke_deadline */
typedef enum KpRevokeTimer
{
	KP_REVOKE_KEEP,				/* leave it */
	KP_REVOKE_START,			/* now + its rebalance timeout */
	KP_REVOKE_CLEAR				/* none */
} KpRevokeTimer;

extern void kp_cat_member_save_consumer(const char *group_id, const char *member_id,
										int32 member_epoch, int32 previous_member_epoch,
										const char *assigned, const char *target,
										const char *owned, int32 rebalance_timeout_ms,
										KpRevokeTimer revoke);

/*
 * Delete the consumer-protocol members of a group whose revoke_deadline has
 * passed (they did not give partitions up within their rebalance timeout);
 * returns how many.
 */
extern int	kp_cat_members_delete_unrevoked(const char *group_id);

/*
 * Delete members silent for longer than their session timeout (or
 * session_ms when >= 0), except those of join round spare_round; returns
 * how many, and in *pending (unless NULL) how many of them were pending
 * (KP_MEMBER_PENDING).
 */
extern int	kp_cat_members_delete_expired(const char *group_id, int32 session_ms,
										  int32 spare_round, int *pending);

/*
 * The names of the topics that match a PostgreSQL regular expression (ARE),
 * sorted; the caller anchors and checks it (an invalid one is an ERROR).
 */
extern int	kp_cat_topics_matching(const char *regex, char ***names);

/* -1 when the member is not a consumer-protocol member of the group. */
extern int32 kp_cat_consumer_member_epoch(const char *group_id, const char *member_id);

/* Group configs (kafka.group_configs): a group's overrides, by name. */
extern int	kp_cat_group_configs_load(const char *group_id, char ***names, char ***values);

/* The groups that have any (ListConfigResources lists them). */
extern int	kp_cat_group_configs_groups(char ***group_ids);

/* value NULL: back to the broker's default */
extern void kp_cat_group_config_store(const char *group_id, const char *name, const char *value);

/* Committed offsets (offsets.c).  kp_cat_offset_store has one caller: src/group's offsets.c. */
extern void kp_cat_offset_store(const char *group_id, const char *topic, int32 partition,
								int64 offset, int32 leader_epoch, const KpBlob *metadata);

/* -1 when none; for_update locks the row (kafka.consume) */
extern int64 kp_cat_offset_fetch(const char *group_id, const char *topic, int32 partition,
								 bool for_update, int32 *leader_epoch, KpBlob *metadata);
extern int	kp_cat_offsets_list(const char *group_id, char ***topics, int32 **partitions);
extern bool kp_cat_offsets_exist(const char *group_id);

/* topic NULL: every offset of the group */
extern void kp_cat_offsets_delete(const char *group_id, const char *topic, int32 partition);

/* Offsets of groups empty (or gone) and not committed for retention_minutes. */
extern void kp_cat_offsets_expire(int32 retention_minutes);

/* ==================== end of consumer groups ==================== */

/* ---------- the transaction coordinator's rows (transactions.c) ---------- */

/*
 * Only src/txn/coordinator.c calls these; it owns the rules (states,
 * epochs, fencing).  Times are ms since the Unix epoch, -1 for none.
 */
typedef struct KpTxnRow
{
	char	   *transactional_id;
	int64		producer_id;
	int16		producer_epoch;
	char		state[16];		/* Kafka's state names */
	int32		timeout_ms;
	int64		txn_start_ms;	/* -1: no transaction under way */
	int64		last_update_ms;
	int64		next_producer_id;	/* -1, or the id an exhausted epoch's end
									 * moves to */
	int64		previous_producer_id;	/* -1, or the id before that move */
} KpTxnRow;

typedef struct KpTxnPartition
{
	char	   *topic;
	int32		partition;
	int64		partition_id;	/* the store's */
} KpTxnPartition;

typedef struct KpTxnOffset
{
	char	   *group_id;
	char	   *topic;
	int32		partition;
	int64		offset;
	int32		leader_epoch;
	KpBlob		metadata;		/* bytes, NUL bytes included; len -1: null */
} KpTxnOffset;

typedef enum KpTxnListFilter
{
	KP_TXN_LIST_ALL,
	KP_TXN_LIST_TIMED_OUT,		/* Ongoing past its timeout */
	KP_TXN_LIST_PREPARED		/* PrepareCommit or PrepareAbort */
} KpTxnListFilter;

extern bool kp_cat_txn_get(const char *transactional_id, bool for_update, KpTxnRow *row);
extern bool kp_cat_txn_get_unless_locked(const char *transactional_id, KpTxnRow *row);
extern bool kp_cat_txn_get_by_producer(int64 producer_id, int64 partition_id,
									   KpTxnRow *row, bool *in_txn);
extern void kp_cat_txn_create(const char *transactional_id, int64 producer_id, int32 timeout_ms,
							  KpTxnRow *row);
extern void kp_cat_txn_update(const KpTxnRow *row, bool start_txn, bool end_txn);
extern int	kp_cat_txn_partitions(const char *transactional_id, KpTxnPartition **out);
extern void kp_cat_txn_add_partition(const char *transactional_id, const char *topic,
									 int32 partition, int64 partition_id);
extern int	kp_cat_txn_groups(const char *transactional_id, char ***groups);
extern void kp_cat_txn_add_group(const char *transactional_id, const char *group_id);
extern void kp_cat_txn_put_offset(const char *transactional_id, const KpTxnOffset *offset);
extern int	kp_cat_txn_offsets(const char *transactional_id, KpTxnOffset **out);
extern bool kp_cat_txn_offsets_pending(const char *group_id, const char *topic, int32 partition);
extern void kp_cat_txn_clear(const char *transactional_id, bool partitions);
extern int	kp_cat_txn_list(KpTxnListFilter filter, KpTxnRow **rows);
extern int	kp_cat_txn_expire(int64 expiration_ms);

/* ---------- ACLs and the authorizer (acls.c) ---------- */

/* Kafka's codes: ResourceType, PatternType, AclOperation, AclPermissionType */
#define KP_ACL_UNKNOWN						0
#define KP_ACL_RESOURCE_ANY					1
#define KP_ACL_RESOURCE_TOPIC				2
#define KP_ACL_RESOURCE_GROUP				3
#define KP_ACL_RESOURCE_CLUSTER				4
#define KP_ACL_RESOURCE_TRANSACTIONAL_ID	5
#define KP_ACL_RESOURCE_DELEGATION_TOKEN	6
#define KP_ACL_RESOURCE_USER				7
#define KP_ACL_PATTERN_ANY					1
#define KP_ACL_PATTERN_MATCH				2
#define KP_ACL_PATTERN_LITERAL				3
#define KP_ACL_PATTERN_PREFIXED				4
#define KP_ACL_OP_ANY						1
#define KP_ACL_OP_ALL						2
#define KP_ACL_OP_READ						3
#define KP_ACL_OP_WRITE						4
#define KP_ACL_OP_CREATE					5
#define KP_ACL_OP_DELETE					6
#define KP_ACL_OP_ALTER						7
#define KP_ACL_OP_DESCRIBE					8
#define KP_ACL_OP_CLUSTER_ACTION			9
#define KP_ACL_OP_DESCRIBE_CONFIGS			10
#define KP_ACL_OP_ALTER_CONFIGS				11
#define KP_ACL_OP_IDEMPOTENT_WRITE			12
#define KP_ACL_OP_CREATE_TOKENS				13
#define KP_ACL_OP_DESCRIBE_TOKENS			14
#define KP_ACL_OP_TWO_PHASE_COMMIT			15
#define KP_ACL_PERMISSION_ANY				1
#define KP_ACL_PERMISSION_DENY				2
#define KP_ACL_PERMISSION_ALLOW				3

#define KP_ACL_CLUSTER_NAME					"kafka-cluster"

/* An ACL, or (with ANY codes and NULL strings meaning "any") a filter. */
typedef struct KpAclBinding
{
	int			resource_type;
	int			pattern_type;
	char	   *resource_name;
	char	   *principal;		/* "User:<role>" or "User:*" */
	char	   *host;			/* "*" or an address */
	int			operation;
	int			permission;
} KpAclBinding;

extern bool kp_allow_everyone_if_no_acl_found;
extern char *kp_anonymous_role;
extern void kp_acl_init_gucs(void);

extern const char *kp_acl_resource_type_name(int code);
extern const char *kp_acl_pattern_type_name(int code);
extern const char *kp_acl_operation_name(int code);
extern const char *kp_acl_permission_name(int code);

/* by name, case-insensitive; KP_ACL_UNKNOWN when not a name */
extern int	kp_acl_resource_type_code(const char *name);
extern int	kp_acl_pattern_type_code(const char *name);
extern int	kp_acl_operation_code(const char *name);
extern int	kp_acl_permission_code(const char *name);

/*
 * May role (InvalidOid: a principal with no role) do op on the resource,
 * connecting from host (NULL: only "*" ACLs apply)?  From the backend's
 * ACL cache; cheap.
 */
extern bool kp_acl_authorize(Oid role, const char *host, int resource_type,
							 const char *name, int op);
extern bool kp_acl_allows_everything(Oid role);

/* allowed op on some resource of the type (Kafka's authorizeByResourceType) */
extern bool kp_acl_authorize_any(Oid role, const char *host, int resource_type, int op);

/* Kafka's authorized-operations bits of a topic, group or the cluster */
extern int32 kp_acl_authorized_operations(Oid role, const char *host, int resource_type,
										  const char *name);

/* kafka.anonymous_role; *everything: anonymous clients are allowed all */
extern Oid	kp_acl_anonymous_role(bool *everything);

/* The SQL functions' check for current_user: ERROR 42501 when denied. */
extern void kp_acl_check(int resource_type, const char *name, int op);
extern void kp_acl_check_role(Oid role, int resource_type, const char *name, int op);

/* KP042 (INVALID_REQUEST) for what Kafka refuses */
extern void kp_acl_validate_filter(const KpAclBinding *filter);
extern bool kp_acl_create(const KpAclBinding *acl); /* false: existed */
extern List *kp_acl_describe(const KpAclBinding *filter);	/* of KpAclBinding * */
extern List *kp_acl_delete(const KpAclBinding *filter); /* the deleted ones */

#endif							/* KP_KAFKA_CATALOG_H */
