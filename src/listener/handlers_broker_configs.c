/*-------------------------------------------------------------------------
 *
 * handlers_broker_configs.c
 *	  The BROKER config resource: what DescribeConfigs shows for the broker
 *	  and what AlterConfigs / IncrementalAlterConfigs do to it.
 *
 * A Kafka broker config is one of three things in kafka_pg:
 *
 *	- a PostgreSQL setting (kafka.num_partitions for num.partitions, ...).
 *	  It is shown with the setting's value and source (postgresql.auto.conf
 *	  is DYNAMIC_BROKER_CONFIG, postgresql.conf STATIC_BROKER_CONFIG) and
 *	  changed the PostgreSQL way: ALTER SYSTEM SET (DELETE: ALTER SYSTEM
 *	  RESET), then a reload, so every process has the new value within a
 *	  moment and a restart keeps it.  A setting that needs a restart
 *	  (kafka.node_id, kafka.port, ...) is read-only, and setting it is
 *	  refused as Kafka refuses a read-only config: INVALID_REQUEST "Cannot
 *	  update these configs dynamically: [...]".  Kafka itself cannot change
 *	  most of these (num.partitions, auto.create.topics.enable, the group.*
 *	  timeouts) without a restart; kafka_pg can.
 *	- fixed by the design (one node: default.replication.factor 1, ...):
 *	  read-only.
 *	- a config of a file-based, multi-threaded broker with no meaning here
 *	  (background.threads, num.io.threads, sasl.kerberos.*, and the log.*
 *	  defaults of topic configs).  Kafka lets clients change them, and so
 *	  does kafka_pg: the override is kept in kafka.broker_configs and
 *	  described as DYNAMIC_BROKER_CONFIG, but has no effect (topics keep
 *	  kafka_pg's built-in defaults).  Names Kafka does not know are kept the
 *	  same way, as Kafka keeps them (custom configs for plugins), and
 *	  described as Kafka describes them: value null, read-only, sensitive,
 *	  type UNKNOWN.
 *
 * Kafka's rules are ConfigAdminManager's (checked against Kafka 4.4): a
 * null value is INVALID_REQUEST, APPEND/SUBTRACT of a non-list config or an
 * unknown name INVALID_CONFIG, an invalid value INVALID_REQUEST "Invalid
 * value ... for configuration ...", DELETE of a read-only or unset config
 * succeeds and does nothing, a broker id other than this node's (or "")
 * is INVALID_REQUEST.  A resource's changes are all checked before any is
 * made; validate_only checks and changes nothing.  Legacy AlterConfigs
 * replaces the broker's whole set of dynamic configs.
 *
 * The listener runs as the bootstrap superuser, which ALTER SYSTEM needs;
 * with authentication (issue 10) this becomes the cluster's ALTER_CONFIGS
 * permission.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "lib/stringinfo.h"

#include "catalog/kafka_catalog.h"
#include "common/kafka_errors.h"
#include "listener/handlers.h"
#include "listener/handlers_admin.h"
#include "listener/listener.h"

typedef enum BrokerConfigKind
{
	BC_SETTING,					/* a kafka.* PostgreSQL setting */
	BC_FIXED,					/* fixed by the design: read-only */
	BC_KEPT						/* kept in kafka.broker_configs, no effect */
} BrokerConfigKind;

typedef struct BrokerConfigDef
{
	const char *name;			/* Kafka's */
	BrokerConfigKind kind;
	const char *setting;		/* BC_SETTING */
	int8		type;			/* CTYPE_* */
	const char *default_value;	/* Kafka's default (BC_FIXED: the value) */
	double		min;			/* BC_KEPT numbers */
	const char *doc;
} BrokerConfigDef;

#define NO_MIN	(-HUGE_VAL)

static const BrokerConfigDef broker_config_defs[] = {
	{"advertised.listeners", BC_FIXED, NULL, CTYPE_LIST, NULL, 0,
	"kafka.advertised_host and kafka.advertised_port (change them in PostgreSQL)"},
	{"auto.create.topics.enable", BC_SETTING, "kafka.auto_create_topics_enable", CTYPE_BOOLEAN, "true", 0,
	"kafka.auto_create_topics_enable"},
	{"background.threads", BC_KEPT, NULL, CTYPE_INT, "10", 1, "kept, no effect in kafka_pg"},
	{"broker.id", BC_SETTING, "kafka.node_id", CTYPE_INT, "-1", 0, "kafka.node_id"},
	{"broker.rack", BC_SETTING, "kafka.broker_rack", CTYPE_STRING, NULL, 0, "kafka.broker_rack"},
	{"connections.max.idle.ms", BC_SETTING, "kafka.connections_max_idle_ms", CTYPE_LONG, "600000", 0,
	"kafka.connections_max_idle_ms"},
	{"connections.max.reauth.ms", BC_SETTING, "kafka.connections_max_reauth_ms", CTYPE_LONG, "0", 0,
	"kafka.connections_max_reauth_ms"},
	{"default.replication.factor", BC_FIXED, NULL, CTYPE_INT, "1", 0,
	"one node: durability and replicas are PostgreSQL's (WAL, standbys)"},
	{"delete.topic.enable", BC_FIXED, NULL, CTYPE_BOOLEAN, "true", 0, NULL},
	{"fetch.max.bytes", BC_SETTING, "kafka.fetch_max_bytes", CTYPE_INT, "57671680", 0, "kafka.fetch_max_bytes"},
	{"group.consumer.heartbeat.interval.ms", BC_SETTING, "kafka.group_consumer_heartbeat_interval_ms", CTYPE_INT, "5000", 0,
	"kafka.group_consumer_heartbeat_interval_ms"},
	{"group.consumer.session.timeout.ms", BC_SETTING, "kafka.group_consumer_session_timeout_ms", CTYPE_INT, "45000", 0,
	"kafka.group_consumer_session_timeout_ms"},
	{"group.consumer.max.heartbeat.interval.ms", BC_SETTING, "kafka.group_consumer_max_heartbeat_interval_ms", CTYPE_INT, "15000", 0,
	"kafka.group_consumer_max_heartbeat_interval_ms"},
	{"group.consumer.max.session.timeout.ms", BC_SETTING, "kafka.group_consumer_max_session_timeout_ms", CTYPE_INT, "60000", 0,
	"kafka.group_consumer_max_session_timeout_ms"},
	{"group.consumer.min.heartbeat.interval.ms", BC_SETTING, "kafka.group_consumer_min_heartbeat_interval_ms", CTYPE_INT, "5000", 0,
	"kafka.group_consumer_min_heartbeat_interval_ms"},
	{"group.consumer.min.session.timeout.ms", BC_SETTING, "kafka.group_consumer_min_session_timeout_ms", CTYPE_INT, "45000", 0,
	"kafka.group_consumer_min_session_timeout_ms"},
	{"group.initial.rebalance.delay.ms", BC_SETTING, "kafka.group_initial_rebalance_delay_ms", CTYPE_INT, "3000", 0,
	"kafka.group_initial_rebalance_delay_ms"},
	{"group.max.session.timeout.ms", BC_SETTING, "kafka.group_max_session_timeout_ms", CTYPE_INT, "1800000", 0,
	"kafka.group_max_session_timeout_ms"},
	{"group.min.session.timeout.ms", BC_SETTING, "kafka.group_min_session_timeout_ms", CTYPE_INT, "6000", 0,
	"kafka.group_min_session_timeout_ms"},
	{"group.share.delivery.count.limit", BC_SETTING, "kafka.group_share_delivery_count_limit", CTYPE_INT, "5", 0,
	"kafka.group_share_delivery_count_limit"},
	{"group.share.heartbeat.interval.ms", BC_SETTING, "kafka.group_share_heartbeat_interval_ms", CTYPE_INT, "5000", 0,
	"kafka.group_share_heartbeat_interval_ms"},
	{"group.share.max.record.lock.duration.ms", BC_SETTING, "kafka.group_share_max_record_lock_duration_ms", CTYPE_INT, "60000", 0,
	"kafka.group_share_max_record_lock_duration_ms"},
	{"group.share.min.record.lock.duration.ms", BC_SETTING, "kafka.group_share_min_record_lock_duration_ms", CTYPE_INT, "15000", 0,
	"kafka.group_share_min_record_lock_duration_ms"},
	{"group.share.record.lock.duration.ms", BC_SETTING, "kafka.group_share_record_lock_duration_ms", CTYPE_INT, "30000", 0,
	"kafka.group_share_record_lock_duration_ms"},
	{"group.share.session.timeout.ms", BC_SETTING, "kafka.group_share_session_timeout_ms", CTYPE_INT, "45000", 0,
	"kafka.group_share_session_timeout_ms"},
	{"listeners", BC_FIXED, NULL, CTYPE_LIST, NULL, 0, "kafka.listen_address and kafka.port (need a restart)"},
	{"log.cleaner.backoff.ms", BC_SETTING, "kafka.log_cleaner_backoff_ms", CTYPE_LONG, "15000", 0,
	"kafka.log_cleaner_backoff_ms"},
	{"log.cleaner.dedupe.buffer.size", BC_SETTING, "kafka.log_cleaner_dedupe_buffer_size", CTYPE_LONG, "134217728", 0,
	"kafka.log_cleaner_dedupe_buffer_size"},
	{"log.cleaner.io.max.bytes.per.second", BC_SETTING, "kafka.log_cleaner_io_max_bytes_per_second", CTYPE_DOUBLE,
	"1.7976931348623157E308", 0, "kafka.log_cleaner_io_max_bytes_per_second"},
	{"log.cleaner.threads", BC_SETTING, "kafka.log_cleaner_threads", CTYPE_INT, "1", 0,
	"kafka.log_cleaner_threads (one log cleaner worker: 0 or 1)"},
	{"log.retention.check.interval.ms", BC_SETTING, "kafka.log_retention_check_interval_ms", CTYPE_LONG, "300000", 0,
	"kafka.log_retention_check_interval_ms"},
	{"log.retention.hours", BC_FIXED, NULL, CTYPE_INT, "168", 0, NULL},
	{"max.connections", BC_SETTING, "kafka.max_connections", CTYPE_INT, "2147483647", 0,
	"kafka.max_connections"},
	{"max.connections.per.ip", BC_SETTING, "kafka.max_connections_per_ip", CTYPE_INT, "2147483647", 0,
	"kafka.max_connections_per_ip"},
	{"max.incremental.fetch.session.cache.slots", BC_SETTING, "kafka.max_incremental_fetch_session_cache_slots",
	CTYPE_INT, "1000", 0, "kafka.max_incremental_fetch_session_cache_slots"},
	{"node.id", BC_SETTING, "kafka.node_id", CTYPE_INT, "-1", 0, "kafka.node_id"},
	{"num.io.threads", BC_KEPT, NULL, CTYPE_INT, "8", 1, "kept, no effect in kafka_pg"},
	{"num.network.threads", BC_KEPT, NULL, CTYPE_INT, "3", 1, "kept, no effect in kafka_pg (kafka.listener_workers)"},
	{"num.partitions", BC_SETTING, "kafka.num_partitions", CTYPE_INT, "1", 0, "kafka.num_partitions"},
	{"num.recovery.threads.per.data.dir", BC_KEPT, NULL, CTYPE_INT, "2", 1, "kept, no effect in kafka_pg"},
	{"num.replica.fetchers", BC_KEPT, NULL, CTYPE_INT, "1", NO_MIN, "kept, no effect in kafka_pg"},
	{"offsets.retention.check.interval.ms", BC_SETTING, "kafka.offsets_retention_check_interval_ms", CTYPE_LONG,
	"600000", 1, "kafka.offsets_retention_check_interval_ms"},
	{"offsets.retention.minutes", BC_SETTING, "kafka.offsets_retention_minutes", CTYPE_INT, "10080", 0,
	"kafka.offsets_retention_minutes"},
	{"offsets.topic.replication.factor", BC_FIXED, NULL, CTYPE_SHORT, "1", 0, NULL},
	{"quota.window.num", BC_SETTING, "kafka.quota_window_num", CTYPE_INT, "11", 0, "kafka.quota_window_num"},
	{"quota.window.size.seconds", BC_SETTING, "kafka.quota_window_size_seconds", CTYPE_INT, "1", 0,
	"kafka.quota_window_size_seconds"},
	{"sasl.enabled.mechanisms", BC_SETTING, "kafka.sasl_enabled_mechanisms", CTYPE_LIST, "GSSAPI", 0,
	"kafka.sasl_enabled_mechanisms"},
	{"sasl.kerberos.min.time.before.relogin", BC_KEPT, NULL, CTYPE_LONG, "60000", NO_MIN,
	"kept, no effect in kafka_pg (no Kerberos: GSSAPI is not offered)"},
	{"socket.request.max.bytes", BC_SETTING, "kafka.socket_request_max_bytes", CTYPE_INT, "104857600", 0,
	"kafka.socket_request_max_bytes"},
	{"transaction.max.timeout.ms", BC_SETTING, "kafka.transaction_max_timeout_ms", CTYPE_INT, "900000", 0,
	"kafka.transaction_max_timeout_ms"},
	{"transaction.state.log.min.isr", BC_FIXED, NULL, CTYPE_INT, "1", 0, NULL},
	{"transaction.state.log.replication.factor", BC_FIXED, NULL, CTYPE_SHORT, "1", 0, NULL},
	{"transactional.id.expiration.ms", BC_SETTING, "kafka.transactional_id_expiration_ms", CTYPE_INT, "604800000", 0,
	"kafka.transactional_id_expiration_ms"},
};

#define LOG_DEFAULT_DOC "kept, no effect in kafka_pg: topics default to the built-in value"

/* The broker config def of a name, or NULL. */
static const BrokerConfigDef *
find_def(const char *name)
{
	int			i;

	for (i = 0; i < lengthof(broker_config_defs); i++)
		if (strcmp(broker_config_defs[i].name, name) == 0)
			return &broker_config_defs[i];
	return NULL;
}

/* The topic config whose broker default (log.*, message.max.bytes, ...) name is; -1 if none. */
static int
topic_config_of(const char *name)
{
	int			i;

	for (i = 0; i < kp_topic_config_count; i++)
	{
		const char *syn = kp_broker_synonym(kp_topic_config_defs[i].name);

		if (syn && strcmp(syn, name) == 0)
			return i;
	}
	return -1;
}

/* The value of a BC_FIXED config. */
static char *
fixed_value(const BrokerConfigDef *def)
{
	if (strcmp(def->name, "advertised.listeners") == 0)
		return psprintf("PLAINTEXT://%s:%d", kp_advertised_host_name(), kp_advertised_port_number());
	if (strcmp(def->name, "listeners") == 0)
		return psprintf("PLAINTEXT://%s:%d",
						kp_listen_address && kp_listen_address[0] ? kp_listen_address : "0.0.0.0",
						kp_port);
	return pstrdup(def->default_value);
}

static const char *
find_override(char **names, char **values, int n, const char *name)
{
	int			i;

	for (i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return values[i];
	return NULL;
}

/* ---------------------------------------------------------------------
 * DescribeConfigs
 * ---------------------------------------------------------------------
 */

int
kp_broker_config_entries(KpBrokerConfigEntry **out)
{
	char	  **onames;
	char	  **ovalues;
	int			nover = kp_broker_config_overrides(&onames, &ovalues);
	KpBrokerConfigEntry *e;
	int			n = 0;
	int			i;

	e = palloc0(sizeof(KpBrokerConfigEntry) *
				(lengthof(broker_config_defs) + kp_topic_config_count + nover + 1));
	for (i = 0; i < lengthof(broker_config_defs); i++)
	{
		const BrokerConfigDef *def = &broker_config_defs[i];
		KpBrokerConfigEntry *c = &e[n++];

		c->name = def->name;
		c->type = def->type;
		c->doc = def->doc;
		c->default_value = def->default_value;
		c->read_only = true;
		c->source = SOURCE_DEFAULT;
		if (def->kind == BC_SETTING)
		{
			KpSettingSource src;
			bool		restart_only;

			if (!kp_setting_info(def->setting, &c->value, &src, &restart_only))
				c->value = def->default_value ? pstrdup(def->default_value) : NULL;
			/* an empty string setting (kafka.broker_rack) is Kafka's null */
			if (def->type == CTYPE_STRING && c->value && c->value[0] == '\0')
				c->value = NULL;
			c->read_only = restart_only;
			c->source = src == KP_SETTING_ALTER_SYSTEM ? SOURCE_DYNAMIC_BROKER :
				src == KP_SETTING_STATIC ? SOURCE_STATIC_BROKER : SOURCE_DEFAULT;

			/*
			 * the node id is always set (kafka_pg's default is Kafka's
			 * example 0)
			 */
			if (strcmp(def->setting, "kafka.node_id") == 0 && c->source == SOURCE_DEFAULT)
				c->source = SOURCE_STATIC_BROKER;
		}
		else if (def->kind == BC_FIXED)
		{
			c->value = fixed_value(def);
			c->default_value = NULL;
			if (strcmp(def->name, "advertised.listeners") == 0 || strcmp(def->name, "listeners") == 0)
				c->source = SOURCE_STATIC_BROKER;
		}
		else
		{
			const char *v = find_override(onames, ovalues, nover, def->name);

			c->read_only = false;
			c->value = pstrdup(v ? v : def->default_value);
			c->source = v ? SOURCE_DYNAMIC_BROKER : SOURCE_DEFAULT;
		}
	}
	/* the broker defaults of topic configs, under the broker's names */
	for (i = 0; i < kp_topic_config_count; i++)
	{
		const KpConfigDef *def = &kp_topic_config_defs[i];
		const char *syn = kp_broker_synonym(def->name);
		const char *v;
		KpBrokerConfigEntry *c;

		if (syn == NULL || find_def(syn) != NULL)
			continue;
		/* compression.type and co. have the same name on both levels: once */
		for (v = NULL, c = e; c < e + n && v == NULL; c++)
			if (strcmp(c->name, syn) == 0)
				v = syn;
		if (v)
			continue;
		v = find_override(onames, ovalues, nover, syn);
		c = &e[n++];
		c->name = syn;
		c->type = kp_config_ctype(def);
		c->doc = LOG_DEFAULT_DOC;
		c->default_value = def->default_value;
		c->read_only = false;
		c->value = pstrdup(v ? v : def->default_value);
		c->source = v ? SOURCE_DYNAMIC_BROKER : SOURCE_DEFAULT;
		if (kp_broker_derived_from(syn, NULL) != NULL)
		{
			/* null in Kafka: derived from log.retention.hours and co. */
			c->default_value = NULL;
			if (v == NULL)
				c->value = NULL;
		}
	}
	/* names kafka_pg does not know, kept as Kafka keeps custom configs */
	for (i = 0; i < nover; i++)
	{
		KpBrokerConfigEntry *c;

		if (find_def(onames[i]) || topic_config_of(onames[i]) >= 0)
			continue;
		c = &e[n++];
		c->name = onames[i];
		c->value = NULL;		/* Kafka does not show what it does not know */
		c->type = CTYPE_UNKNOWN;
		c->read_only = true;
		c->source = SOURCE_DYNAMIC_BROKER;
		c->default_value = NULL;
	}
	*out = e;
	return n;
}

/* ---------------------------------------------------------------------
 * AlterConfigs and IncrementalAlterConfigs
 * ---------------------------------------------------------------------
 */

/* What one config of the request will do. */
typedef struct Change
{
	const char *name;
	const BrokerConfigDef *def; /* NULL: a log.* default or an unknown name */
	const char *value;			/* NULL: remove the override / RESET */
	bool		noop;			/* DELETE of something read-only */
} Change;

typedef struct CheckArg
{
	const char *setting;
	const char *topic_config;
	const char *value;
} CheckArg;

static void
check_fn(void *varg)
{
	CheckArg   *arg = varg;

	if (arg->setting)
		kp_setting_check(arg->setting, arg->value);
	else
		(void) kp_config_check(arg->topic_config, arg->value);
}

/* A kept number's value as Kafka's ConfigDef checks it; NULL if good. */
static char *
check_number(const BrokerConfigDef *def, const char *value)
{
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(value, &end, 10);
	if (*value == '\0' || *end != '\0' || errno == ERANGE ||
		(def->type == CTYPE_INT && (v < PG_INT32_MIN || v > PG_INT32_MAX)))
		return psprintf("Not a number of type %s", def->type == CTYPE_INT ? "INT" : "LONG");
	if (def->min != NO_MIN && (double) v < def->min)
		return psprintf("Value must be at least %.0f", def->min);
	return NULL;
}

/* APPEND or SUBTRACT on a list config, from its kept value or its default. */
static char *
list_op(const char *name, int topic_idx, int8 op, const char *arg)
{
	char	  **onames;
	char	  **ovalues;
	int			n = kp_broker_config_overrides(&onames, &ovalues);
	const char *cur = find_override(onames, ovalues, n, name);

	return kp_config_list_op(cur ? cur : kp_topic_config_defs[topic_idx].default_value, op, arg);
}

typedef struct ApplyArg
{
	Change	   *changes;
	int			n;
	bool		replace_all;	/* legacy AlterConfigs */
} ApplyArg;

/*
 * The kept overrides, in the request's subtransaction; first the table's
 * lock, which a request naming two BROKER resources needs before the first
 * one's ALTER SYSTEM (kp_broker_configs_lock: a lock taken is a rerun, with
 * nothing changed yet).
 */
static void
apply_kept_fn(void *varg)
{
	ApplyArg   *arg = varg;
	int			i;
	int			j;

	kp_broker_configs_lock();

	if (arg->replace_all)
	{
		char	  **onames;
		char	  **ovalues;
		int			n = kp_broker_config_overrides(&onames, &ovalues);

		for (i = 0; i < n; i++)
		{
			bool		given = false;

			for (j = 0; j < arg->n && !given; j++)
				given = strcmp(arg->changes[j].name, onames[i]) == 0;
			if (!given)
				kp_broker_config_store(onames[i], NULL);
		}
	}
	for (i = 0; i < arg->n; i++)
	{
		Change	   *c = &arg->changes[i];

		if (!c->noop && (c->def == NULL || c->def->kind == BC_KEPT))
			kp_broker_config_store(c->name, c->value);
	}
}

/* Settings last: ALTER SYSTEM is not transactional. */
static void
apply_settings_fn(void *varg)
{
	ApplyArg   *arg = varg;
	bool		changed = false;
	int			i;
	int			j;

	if (arg->replace_all)
	{
		for (i = 0; i < lengthof(broker_config_defs); i++)
		{
			const BrokerConfigDef *def = &broker_config_defs[i];
			KpSettingSource src;
			bool		restart_only;
			char	   *value;
			bool		given = false;

			if (def->kind != BC_SETTING ||
				!kp_setting_info(def->setting, &value, &src, &restart_only) ||
				src != KP_SETTING_ALTER_SYSTEM || restart_only)
				continue;
			for (j = 0; j < arg->n && !given; j++)
				given = arg->changes[j].def && arg->changes[j].def->setting &&
					strcmp(arg->changes[j].def->setting, def->setting) == 0;
			if (!given)
			{
				kp_setting_alter_system(def->setting, NULL);
				changed = true;
			}
		}
	}
	for (i = 0; i < arg->n; i++)
	{
		Change	   *c = &arg->changes[i];

		if (!c->noop && c->def && c->def->kind == BC_SETTING)
		{
			kp_setting_alter_system(c->def->setting, c->value);
			changed = true;
		}
	}
	if (changed)
		kp_setting_reload();
}

bool
kp_parse_broker_id(const char *name, int32 *id)
{
	const char *p = name;
	bool		negative = false;
	int64		v = 0;

	if (*p == '+' || *p == '-')
		negative = (*p++ == '-');
	if (*p == '\0')
		return false;
	for (; *p; p++)
	{
		if (*p < '0' || *p > '9')
			return false;
		v = v * 10 + (*p - '0');
		if (v > (int64) PG_INT32_MAX + 1)
			return false;
	}
	v = negative ? -v : v;
	if (v > PG_INT32_MAX || v < PG_INT32_MIN)
		return false;
	*id = (int32) v;
	return true;
}

int16
kp_broker_alter_configs(const char *resource_name, const KpBrokerConfigOp *ops, int n,
						bool incremental, bool validate_only, char **msg)
{
	Change	   *changes = palloc0(sizeof(Change) * Max(n, 1));
	StringInfoData read_only;
	ApplyArg	arg;
	int16		code;
	int32		id;
	int			i;

	*msg = NULL;
	if (resource_name[0] != '\0' && !kp_parse_broker_id(resource_name, &id))
	{
		*msg = psprintf("Node id must be an integer, but it is: %s", resource_name);	/* Kafka's */
		return KP_ERR_INVALID_REQUEST;
	}
	if (resource_name[0] != '\0' && id != kp_node_id)
	{
		*msg = psprintf("Unexpected broker id, expected %d, but received %s", kp_node_id, resource_name);
		return KP_ERR_INVALID_REQUEST;
	}
	{
		char	  **names = palloc(sizeof(char *) * Max(n, 1));
		bool	   *dup;

		for (i = 0; i < n; i++)
			names[i] = (char *) ops[i].name;
		dup = kp_mark_duplicates(names, n, NULL);
		for (i = 0; i < n; i++)
			if (dup[i])
			{
				*msg = pstrdup("Error due to duplicate config keys");
				return KP_ERR_INVALID_REQUEST;
			}
	}

	/* what each op does, and Kafka's checks of the op itself */
	initStringInfo(&read_only);
	for (i = 0; i < n; i++)
	{
		const KpBrokerConfigOp *op = &ops[i];
		Change	   *c = &changes[i];
		int			topic_idx;

		c->name = op->name;
		c->def = find_def(op->name);
		topic_idx = c->def ? -1 : topic_config_of(op->name);
		switch (op->op)
		{
			case OP_SET:
				if (op->value == NULL)
				{
					*msg = psprintf("Null value not supported for : %s", op->name);
					return KP_ERR_INVALID_REQUEST;
				}
				c->value = op->value;
				break;
			case OP_DELETE:
				c->value = NULL;
				break;
			case OP_APPEND:
			case OP_SUBTRACT:
				if (c->def == NULL && topic_idx < 0)
				{
					*msg = psprintf("Unknown config name: %s", op->name);
					return KP_ERR_INVALID_CONFIG;
				}
				if (topic_idx < 0 || kp_topic_config_defs[topic_idx].type != KP_CONF_LIST)
				{
					*msg = psprintf("Config value %s is not allowed for config key: %s",
									op->op == OP_APPEND ? "append" : "subtract", op->name);
					return KP_ERR_INVALID_CONFIG;
				}
				c->value = list_op(op->name, topic_idx, op->op, op->value);
				break;
			default:
				*msg = psprintf("Unknown alter config operation %d for config key: %s", op->op, op->name);
				return KP_ERR_INVALID_REQUEST;
		}

		/* read-only: refused, except that removing it is a no-op */
		if (c->def && c->def->kind != BC_KEPT)
		{
			bool		ro = c->def->kind == BC_FIXED;

			if (c->def->kind == BC_SETTING)
			{
				KpSettingSource src;
				char	   *cur;

				if (!kp_setting_info(c->def->setting, &cur, &src, &ro))
					ro = true;
			}
			if (ro)
			{
				c->noop = true;
				if (c->value != NULL)
					appendStringInfo(&read_only, "%s%s", read_only.len ? ", " : "", op->name);
				continue;
			}
		}

		/* the value, as the setting or the config checks it */
		if (c->value == NULL)
			continue;
		if (c->def && c->def->kind == BC_SETTING)
		{
			CheckArg	ca = {c->def->setting, NULL, c->value};

			if (kp_handler_try(check_fn, &ca, msg) != KP_ERR_NONE)
			{
				*msg = psprintf("Invalid value %s for configuration %s: %s", c->value, op->name, *msg);
				return KP_ERR_INVALID_REQUEST;
			}
		}
		else if (c->def && (c->def->type == CTYPE_INT || c->def->type == CTYPE_LONG))
		{
			char	   *why = check_number(c->def, c->value);

			if (why)
			{
				*msg = psprintf("Invalid value %s for configuration %s: %s", c->value, op->name, why);
				return KP_ERR_INVALID_REQUEST;
			}
		}
		else if (topic_idx >= 0)
		{
			CheckArg	ca = {NULL, kp_topic_config_defs[topic_idx].name, c->value};

			if (kp_handler_try(check_fn, &ca, msg) != KP_ERR_NONE)
			{
				*msg = psprintf("Invalid value %s for configuration %s: %s", c->value, op->name, *msg);
				return KP_ERR_INVALID_REQUEST;
			}
		}
	}
	if (read_only.len > 0)
	{
		*msg = psprintf("Cannot update these configs dynamically: [%s]", read_only.data);
		return KP_ERR_INVALID_REQUEST;
	}
	if (validate_only)
		return KP_ERR_NONE;

	arg.changes = changes;
	arg.n = n;
	arg.replace_all = !incremental;
	code = kp_handler_try(apply_kept_fn, &arg, msg);
	if (code == KP_ERR_NONE)
		code = kp_handler_try(apply_settings_fn, &arg, msg);
	if (code == KP_ERR_NONE)
		*msg = NULL;
	return code;
}
