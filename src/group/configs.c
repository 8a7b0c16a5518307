/*-------------------------------------------------------------------------
 *
 * configs.c
 *	  Group configs (KIP-848): the per-group settings that DescribeConfigs
 *	  and IncrementalAlterConfigs show and change for config resource type
 *	  GROUP (32), and the values the coordinator applies.
 *
 * A group's config is an override of the broker's default, stored in
 * kafka.group_configs (src/catalog/groups.c), and may be set before the
 * group exists, as in Kafka.  kafka_pg serves the two configs of consumer
 * groups, and applies them: consumer.session.timeout.ms (the upkeep expires
 * the group's members by it) and consumer.heartbeat.interval.ms (handed to
 * members in ConsumerGroupHeartbeat).  Values are checked as Kafka's
 * GroupConfig does: an INT within the broker's bounds
 * (kafka.group_consumer_min/max_session_timeout_ms and
 * kafka.group_consumer_min/max_heartbeat_interval_ms, Kafka's
 * group.consumer.min/max.*), and a session longer than the heartbeat
 * interval.  The share-group configs src/share applies
 * (share.record.lock.duration.ms, share.delivery.count.limit,
 * share.auto.offset.reset, share.isolation.level) are checked by
 * kp_share_config_check and stored as they are.  Kafka's other group configs
 * (other share.*, streams.*, ...) are refused, saying so, rather than stored
 * without effect.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "group/group_int.h"
#include "protocol/errors.h"
#include "share/share.h"

int			kp_group_consumer_min_session_timeout_ms = 45000;
int			kp_group_consumer_max_session_timeout_ms = 60000;
int			kp_group_consumer_min_heartbeat_interval_ms = 5000;
int			kp_group_consumer_max_heartbeat_interval_ms = 15000;

/* Kafka's DescribeConfigs ConfigSource values */
#define SOURCE_DYNAMIC_GROUP	8
#define SOURCE_STATIC_BROKER	4
#define SOURCE_DEFAULT			5

/* Kafka's AlterConfigOp types */
#define OP_SET		0
#define OP_DELETE	1

typedef struct GroupConfigDef
{
	const char *name;
	int		   *broker_default; /* the broker setting it overrides */
	int			builtin_default;	/* that setting's own default */
	int		   *min;
	int		   *max;
	const char *doc;
} GroupConfigDef;

static const GroupConfigDef group_configs[] = {
	{"consumer.heartbeat.interval.ms", &kp_group_consumer_heartbeat_interval_ms, 5000,
		&kp_group_consumer_min_heartbeat_interval_ms, &kp_group_consumer_max_heartbeat_interval_ms,
	"The heartbeat interval given to the members of the consumer group."},
	{"consumer.session.timeout.ms", &kp_group_consumer_session_timeout_ms, 45000,
		&kp_group_consumer_min_session_timeout_ms, &kp_group_consumer_max_session_timeout_ms,
	"The timeout to detect client failures when using the consumer group protocol."},
};

#define HEARTBEAT_CONFIG	0
#define SESSION_CONFIG		1

/* Prefixes of Kafka's group configs for group types kafka_pg does not have. */
static const char *const other_group_types[] = {"share.", "streams.", "errors.deadletterqueue.",
"consumer.assignment."};

static int
config_index(const char *name)
{
	int			i;

	for (i = 0; i < lengthof(group_configs); i++)
		if (strcmp(group_configs[i].name, name) == 0)
			return i;
	return -1;
}

/* The group's overrides, by config index; NULL where none. */
static void
load_overrides(const char *group_id, char **values)
{
	char	  **names;
	char	  **stored;
	int			n = kp_cat_group_configs_load(group_id, &names, &stored);
	int			i;

	memset(values, 0, sizeof(char *) * lengthof(group_configs));
	for (i = 0; i < n; i++)
	{
		int			k = config_index(names[i]);

		if (k >= 0)
			values[k] = stored[i];
	}
}

static int32
effective(int k, char *const *overrides)
{
	return overrides[k] ? (int32) strtol(overrides[k], NULL, 10) : *group_configs[k].broker_default;
}

int32
kp_group_consumer_session_ms(const char *group_id)
{
	char	   *overrides[lengthof(group_configs)];

	load_overrides(group_id, overrides);
	return effective(SESSION_CONFIG, overrides);
}

int32
kp_group_consumer_heartbeat_ms(const char *group_id)
{
	char	   *overrides[lengthof(group_configs)];

	load_overrides(group_id, overrides);
	return effective(HEARTBEAT_CONFIG, overrides);
}

int
kp_group_describe_configs(const char *group_id, KpGroupConfigEntry **entries)
{
	char	   *overrides[lengthof(group_configs)];
	KpGroupConfigEntry *share;
	int			nshare = kp_share_describe_configs(group_id, &share);
	int			k;

	load_overrides(group_id, overrides);
	*entries = palloc0(sizeof(KpGroupConfigEntry) * (lengthof(group_configs) + nshare));
	for (k = 0; k < lengthof(group_configs); k++)
	{
		const GroupConfigDef *def = &group_configs[k];
		KpGroupConfigEntry *e = &(*entries)[k];

		e->name = def->name;
		e->value = psprintf("%d", effective(k, overrides));
		e->doc = def->doc;
		if (overrides[k])
			e->source = SOURCE_DYNAMIC_GROUP;
		else if (*def->broker_default != def->builtin_default)
			e->source = SOURCE_STATIC_BROKER;	/* set in postgresql.conf */
		else
			e->source = SOURCE_DEFAULT;
	}
	/* and the share groups' (src/share) */
	memcpy(*entries + lengthof(group_configs), share, sizeof(KpGroupConfigEntry) * nshare);
	return lengthof(group_configs) + nshare;
}

/* An INT within its bounds, as Kafka's ConfigDef; else the message. */
static char *
check_value(const GroupConfigDef *def, const char *value)
{
	char	   *end;
	long		v;

	errno = 0;
	v = strtol(value, &end, 10);
	if (value[0] == '\0' || *end != '\0' || errno != 0 || v < INT_MIN || v > INT_MAX)
		return psprintf("Invalid value %s for configuration %s: Not a number of type INT",
						value, def->name);
	if (v < *def->min || v > *def->max)
		return psprintf("%s must be in the range %d to %d inclusive.", def->name, *def->min, *def->max);
	return NULL;
}

int16
kp_group_alter_configs(const char *group_id, int n, const KpGroupConfigOp *ops,
					   bool validate_only, char **message)
{
	char	   *values[lengthof(group_configs)];
	bool		changed[lengthof(group_configs)];
	int			i;
	int			k;

	*message = NULL;
	if (group_id == NULL || group_id[0] == '\0')
	{
		*message = pstrdup("Group name must not be empty.");
		return KP_ERR_INVALID_GROUP_ID;
	}
	for (i = 0; i < n; i++)
		for (k = 0; k < i; k++)
			if (strcmp(ops[i].name, ops[k].name) == 0)
			{
				*message = pstrdup("Error due to duplicate config keys");
				return KP_ERR_INVALID_REQUEST;
			}

	load_overrides(group_id, values);
	memset(changed, 0, sizeof(changed));
	for (i = 0; i < n; i++)
	{
		const KpGroupConfigOp *op = &ops[i];
		int			j;

		k = config_index(op->name);
		if (k < 0 && strncmp(op->name, "share.", 6) == 0)
		{
			bool		known;

			/* share groups' configs: src/share checks them */
			*message = kp_share_config_check(op->name, op->value ? op->value : "", &known);
			if (known && *message == NULL)
			{
				if (op->op != OP_SET && op->op != OP_DELETE)
				{
					*message = psprintf("Config value %s is not allowed for config key: %s",
										op->op == 2 ? "append" : "subtract", op->name);
					return KP_ERR_INVALID_CONFIG;
				}
				continue;		/* stored below, once all are valid */
			}
			if (known)
				return KP_ERR_INVALID_CONFIG;
		}
		if (k < 0)
		{
			for (j = 0; j < lengthof(other_group_types); j++)
				if (strncmp(op->name, other_group_types[j], strlen(other_group_types[j])) == 0)
				{
					*message = psprintf("kafka_pg does not apply %s: it has no effect here and cannot be set.",
										op->name);
					return KP_ERR_INVALID_CONFIG;
				}
			*message = psprintf("Unknown group config name: %s", op->name);
			return KP_ERR_INVALID_CONFIG;
		}
		if (op->op == OP_DELETE)
			values[k] = NULL;
		else if (op->op == OP_SET)
		{
			if (op->value == NULL)
			{
				*message = psprintf("Null value not supported for : %s", op->name);
				return KP_ERR_INVALID_REQUEST;
			}
			if ((*message = check_value(&group_configs[k], op->value)) != NULL)
				return KP_ERR_INVALID_CONFIG;
			values[k] = psprintf("%d", (int) strtol(op->value, NULL, 10));
		}
		else
		{
			*message = psprintf("Config value %s is not allowed for config key: %s",
								op->op == 2 ? "append" : "subtract", op->name);
			return KP_ERR_INVALID_CONFIG;
		}
		changed[k] = true;
	}
	/* as Kafka's GroupConfig.validate, over the values in effect afterwards */
	if (effective(SESSION_CONFIG, values) <= effective(HEARTBEAT_CONFIG, values))
	{
		*message = psprintf("%s must be greater than %s", group_configs[SESSION_CONFIG].name,
							group_configs[HEARTBEAT_CONFIG].name);
		return KP_ERR_INVALID_CONFIG;
	}
	if (validate_only)
		return KP_ERR_NONE;
	for (i = 0; i < n; i++)
		if (config_index(ops[i].name) < 0)
			kp_cat_group_config_store(group_id, ops[i].name, ops[i].op == OP_SET ? ops[i].value : NULL);
	for (k = 0; k < lengthof(group_configs); k++)
		if (changed[k])
			kp_cat_group_config_store(group_id, group_configs[k].name, values[k]);
	return KP_ERR_NONE;
}

void
kp_group_configs_init_gucs(void)
{
	DefineCustomIntVariable("kafka.group_consumer_min_session_timeout_ms",
							"Smallest consumer.session.timeout.ms a consumer group may be given (Kafka's group.consumer.min.session.timeout.ms).",
							NULL, &kp_group_consumer_min_session_timeout_ms, 45000, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.group_consumer_max_session_timeout_ms",
							"Largest consumer.session.timeout.ms a consumer group may be given (Kafka's group.consumer.max.session.timeout.ms).",
							NULL, &kp_group_consumer_max_session_timeout_ms, 60000, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.group_consumer_min_heartbeat_interval_ms",
							"Smallest consumer.heartbeat.interval.ms a consumer group may be given (Kafka's group.consumer.min.heartbeat.interval.ms).",
							NULL, &kp_group_consumer_min_heartbeat_interval_ms, 5000, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.group_consumer_max_heartbeat_interval_ms",
							"Largest consumer.heartbeat.interval.ms a consumer group may be given (Kafka's group.consumer.max.heartbeat.interval.ms).",
							NULL, &kp_group_consumer_max_heartbeat_interval_ms, 15000, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
}
