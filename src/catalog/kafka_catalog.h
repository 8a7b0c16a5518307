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
#include "storage/lockdefs.h"
#include "utils/uuid.h"

#include "codec/codec.h"
#include "store/store.h"

#define KP_TOPIC_NAME_MAX	249

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
	const char *const *choices;	/* ENUM and LIST */
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
	int32		min_insync_replicas;
	int64		timestamp_before_max_ms;
	int64		timestamp_after_max_ms;
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
 * does not exist and missing_ok, else ERROR (KP003).  The result belongs
 * to the cache: valid until the next catalog call.
 */
extern const KpTopic *kp_topic_open(const char *name, LOCKMODE lockmode, bool missing_ok);

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

/* Kafka's topic-name rules; ERROR (KP017) with the reason. */
extern void kp_topic_check_name(const char *name);

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

/* ---------- cluster-wide catalog state (cluster.c) ---------- */

/* A new producer id from kafka.producer_id_seq. */
extern int64 kp_catalog_next_producer_id(void);

/* Record the segment directory's relfilenode in kafka.store. */
extern void kp_catalog_record_store_directory(Oid relnode);

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
	char	   *metadata;		/* bytes, NUL bytes included */
	int32		metadata_len;	/* -1: null */
} KpTxnOffset;

typedef enum KpTxnListFilter
{
	KP_TXN_LIST_ALL,
	KP_TXN_LIST_TIMED_OUT,		/* Ongoing past its timeout */
	KP_TXN_LIST_PREPARED		/* PrepareCommit or PrepareAbort */
} KpTxnListFilter;

extern bool kp_cat_txn_get(const char *transactional_id, bool for_update, KpTxnRow *row);
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

#endif							/* KP_KAFKA_CATALOG_H */
