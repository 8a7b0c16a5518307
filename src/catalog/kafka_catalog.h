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

/* ---------- the BROKER config resource's state (broker_configs.c) ---------- */

/* Dynamic broker configs kept without effect, by name (kafka.broker_configs). */
extern int	kp_broker_config_overrides(char ***names, char ***values);
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

#endif							/* KP_KAFKA_CATALOG_H */
