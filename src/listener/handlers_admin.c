/*-------------------------------------------------------------------------
 *
 * handlers_admin.c
 *	  The admin APIs, answered as a Kafka 4.x (KRaft) broker answers them:
 *	  CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
 *	  AlterConfigs, IncrementalAlterConfigs, DeleteRecords and
 *	  OffsetForLeaderEpoch.
 *
 * Every handler works resource by resource: each topic (or partition) runs
 * in its own subtransaction through kp_handler_try(), so one bad topic gets
 * its error code and message in the response and the others still succeed,
 * as in Kafka.  The work itself is src/catalog's (kp_topic_*) and
 * src/store's (kp_log_delete_records), the same code the SQL API calls; this
 * file only validates what is Kafka-protocol specific (replication factors,
 * manual assignments, duplicate resources, config operations) and fills the
 * response structs.
 *
 * validate_only runs the operation for real inside its subtransaction and
 * then rolls it back by raising SQLSTATE KP000, which kp_handler_try maps to
 * error code 0 (NONE): the validation is exactly the operation's.
 *
 * Messages follow Kafka's (ReplicationControlManager, ConfigAdminManager,
 * ControllerApis) where clients or users may match on them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/uuid.h"

#include "catalog/kafka_catalog.h"
#include "common/kafka_errors.h"
#include "group/group.h"
#include "listener/handlers.h"
#include "listener/listener.h"
#include "store/store.h"

/* Kafka's ConfigResource.Type */
#define RESOURCE_TOPIC			2
#define RESOURCE_BROKER			4
#define RESOURCE_GROUP			32	/* KIP-848 group configs: src/group/configs.c */

/* Kafka's DescribeConfigsResponse.ConfigSource */
#define SOURCE_DYNAMIC_TOPIC	1
#define SOURCE_STATIC_BROKER	4
#define SOURCE_DEFAULT			5

/* Kafka's DescribeConfigsResponse.ConfigType */
#define CTYPE_BOOLEAN			1
#define CTYPE_STRING			2
#define CTYPE_INT				3
#define CTYPE_SHORT				4
#define CTYPE_LONG				5
#define CTYPE_DOUBLE			6
#define CTYPE_LIST				7

/* Kafka's AlterConfigOp.OpType */
#define OP_SET					0
#define OP_DELETE				1
#define OP_APPEND				2
#define OP_SUBTRACT				3

/* Raised to roll back a validate_only operation; maps to error code 0. */
#define ERRCODE_KP_VALIDATED	MAKE_SQLSTATE('K','P','0','0','0')

/* ---------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------
 */

/* The struct descriptor of a nested array field, by Kafka's field name. */
static const KpStructDesc *
child_desc(const KpStructDesc *parent, const char *field)
{
	int			i;

	for (i = 0; i < parent->nfields; i++)
		if (strcmp(parent->fields[i].name, field) == 0 && parent->fields[i].struct_desc)
			return parent->fields[i].struct_desc;
	elog(ERROR, "kafka_pg: %s has no struct field %s", parent->name, field);
	return NULL;				/* keep compiler quiet */
}

/* n elements of a response array, each with its defaults. */
static void *
new_array(const KpStructDesc *desc, int n)
{
	char	   *a = palloc(desc->size * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		kp_init_nested(desc, a + (size_t) i * desc->size);
	return a;
}

#define ArrayLen(n)		((n) < 0 ? 0 : (n))

static bool
uuid_is_zero(const KpUuid *u)
{
	int			i;

	for (i = 0; i < 16; i++)
		if (u->b[i] != 0)
			return false;
	return true;
}

/* Does names[i] occur among names[0..n) other than at i? */
static bool
is_duplicate(char *const *names, int n, int i)
{
	int			j;

	if (names[i] == NULL)
		return false;
	for (j = 0; j < n; j++)
		if (j != i && names[j] != NULL && strcmp(names[j], names[i]) == 0)
			return true;
	return false;
}

/* Raise the rollback that ends a successful validate_only operation. */
static void
rollback_validated(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_KP_VALIDATED),
			 errmsg("validated")));
}

/* Kafka's topic id of a topic, read with a fresh snapshot (it may be new). */
static void
topic_uuid_of(const char *name, KpUuid *out)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];

	memset(out, 0, sizeof(KpUuid));
	args[0] = CStringGetTextDatum(name);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT topic_uuid FROM kafka.topics WHERE name = $1",
							  1, argtypes, args, NULL, false, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			memcpy(out->b, DatumGetUUIDP(d)->data, 16);
	}
	SPI_finish();
}

/*
 * Kafka's checks of a manual replica assignment (ReplicationControlManager.
 * validateManualPartitionAssignment) on a one-node cluster: each list must
 * be exactly [node id].  Returns NULL when fine, else the message.
 */
static char *
check_replica_list(const int32 *brokers, int32 n)
{
	int			i;

	if (n <= 0 || brokers == NULL)
		return pstrdup("The manual partition assignment includes an empty replica list.");
	for (i = 0; i < n; i++)
	{
		if (brokers[i] != kp_node_id)
			return psprintf("The manual partition assignment includes broker %d, but no such broker is registered.",
							brokers[i]);
		if (i > 0)
			return psprintf("The manual partition assignment includes the broker %d more than once.",
							brokers[i]);
	}
	return NULL;
}

static char *
replication_factor_message(int rf)
{
	return psprintf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only 1 broker(s) are registered.",
					rf, rf);
}

/* ---------------------------------------------------------------------
 * Topic configs as DescribeConfigs and CreateTopics report them
 * ---------------------------------------------------------------------
 */

/* The broker config each topic config defaults from (Kafka's TOPIC_CONFIG_SYNONYMS). */
static const struct
{
	const char *topic;
	const char *broker;
}			config_synonyms[] = {
	{"cleanup.policy", "log.cleanup.policy"},
	{"compression.type", "compression.type"},
	{"compression.gzip.level", "compression.gzip.level"},
	{"compression.lz4.level", "compression.lz4.level"},
	{"compression.zstd.level", "compression.zstd.level"},
	{"delete.retention.ms", "log.cleaner.delete.retention.ms"},
	{"file.delete.delay.ms", "log.segment.delete.delay.ms"},
	{"flush.messages", "log.flush.interval.messages"},
	{"flush.ms", "log.flush.interval.ms"},
	{"index.interval.bytes", "log.index.interval.bytes"},
	{"local.retention.bytes", "log.local.retention.bytes"},
	{"local.retention.ms", "log.local.retention.ms"},
	{"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"},
	{"max.message.bytes", "message.max.bytes"},
	{"message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms"},
	{"message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms"},
	{"message.timestamp.type", "log.message.timestamp.type"},
	{"min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio"},
	{"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"},
	{"min.insync.replicas", "min.insync.replicas"},
	{"preallocate", "log.preallocate"},
	{"retention.bytes", "log.retention.bytes"},
	{"retention.ms", "log.retention.ms"},
	{"segment.bytes", "log.segment.bytes"},
	{"segment.index.bytes", "log.index.size.max.bytes"},
	{"segment.jitter.ms", "log.roll.jitter.ms"},
	{"segment.ms", "log.roll.ms"},
	{"unclean.leader.election.enable", "unclean.leader.election.enable"},
};

static const char *
broker_synonym(const char *topic_config)
{
	int			i;

	for (i = 0; i < lengthof(config_synonyms); i++)
		if (strcmp(config_synonyms[i].topic, topic_config) == 0)
			return config_synonyms[i].broker;
	return NULL;
}

static int8
config_type_of(const KpConfigDef *def)
{
	switch (def->type)
	{
		case KP_CONF_LONG:
			return CTYPE_LONG;
		case KP_CONF_INT:
			return CTYPE_INT;
		case KP_CONF_DOUBLE:
			return CTYPE_DOUBLE;
		case KP_CONF_BOOLEAN:
			return CTYPE_BOOLEAN;
		case KP_CONF_STRING:
		case KP_CONF_ENUM:
			return CTYPE_STRING;
		case KP_CONF_LIST:
			return CTYPE_LIST;
	}
	return CTYPE_STRING;
}

/* ---------------------------------------------------------------------
 * CreateTopics
 * ---------------------------------------------------------------------
 */

typedef struct CreateTopicArg
{
	const char *name;
	int32		partitions;
	KpConfigSetting *configs;
	int			nconfigs;
	bool		validate_only;
	KpUuid		topic_id;		/* out */
} CreateTopicArg;

static void
check_name_fn(void *arg)
{
	kp_topic_check_name((const char *) arg);
}

static void
create_topic_fn(void *varg)
{
	CreateTopicArg *arg = varg;

	kp_topic_create(arg->name, arg->partitions, arg->configs, arg->nconfigs);
	topic_uuid_of(arg->name, &arg->topic_id);
	if (arg->validate_only)
		rollback_validated();
}

/* The configs of a topic being created: v5+ responses list them all. */
static void
fill_created_configs(KpCreateTopicsResponseCreatableTopicResult *out,
					 const KpStructDesc *cdesc, const CreateTopicArg *arg)
{
	KpCreateTopicsResponseCreatableTopicConfigs *cs;
	int			i;
	int			j;

	cs = new_array(cdesc, kp_topic_config_count);
	for (i = 0; i < kp_topic_config_count; i++)
	{
		const KpConfigDef *def = &kp_topic_config_defs[i];
		const char *value = def->default_value;
		int8		source = SOURCE_DEFAULT;

		/* the last setting of a key wins, as in kp_topic_create */
		for (j = 0; j < arg->nconfigs; j++)
			if (strcmp(arg->configs[j].name, def->name) == 0 && arg->configs[j].value)
			{
				value = kp_config_check(def->name, arg->configs[j].value);
				source = SOURCE_DYNAMIC_TOPIC;
			}
		cs[i].name = pstrdup(def->name);
		cs[i].value = pstrdup(value);
		cs[i].read_only = false;
		cs[i].config_source = source;
		cs[i].is_sensitive = false;
	}
	out->n_configs = kp_topic_config_count;
	out->configs = cs;
}

void
kp_handle_create_topics(KpRequestContext *ctx)
{
	KpCreateTopicsRequest *req = ctx->request;
	KpCreateTopicsResponse *resp = ctx->response;
	const KpStructDesc *rdesc = child_desc(ctx->api->response->root, "Topics");
	const KpStructDesc *cdesc = child_desc(rdesc, "Configs");
	int			n = ArrayLen(req->n_topics);
	char	  **names = palloc(sizeof(char *) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		names[i] = req->topics[i].name;

	resp->throttle_time_ms = 0;
	resp->n_topics = n;
	resp->topics = new_array(rdesc, n);
	for (i = 0; i < n; i++)
	{
		KpCreateTopicsRequestCreatableTopic *t = &req->topics[i];
		KpCreateTopicsResponseCreatableTopicResult *out = &resp->topics[i];
		CreateTopicArg arg;
		int			nassign = ArrayLen(t->n_assignments);
		int			nconf = ArrayLen(t->n_configs);
		int			j;
		char	   *msg = NULL;
		int16		code;

		out->name = pstrdup(t->name ? t->name : "");
		if (is_duplicate(names, n, i))
		{
			/* ControllerApis: every entry of a duplicated name is refused */
			out->error_code = KP_ERR_INVALID_REQUEST;
			out->error_message = pstrdup("Duplicate topic name.");
			continue;
		}

		/* the name first, as ReplicationControlManager does */
		code = kp_handler_try(check_name_fn, out->name, &msg);
		if (code != KP_ERR_NONE)
		{
			out->error_code = code;
			out->error_message = msg;
			continue;
		}
		msg = NULL;

		memset(&arg, 0, sizeof(arg));
		arg.name = out->name;
		arg.validate_only = req->validate_only;
		if (nassign > 0)
		{
			bool	   *seen = palloc0(sizeof(bool) * nassign);

			if (t->num_partitions != -1 || t->replication_factor != -1)
			{
				out->error_code = KP_ERR_INVALID_REQUEST;
				out->error_message = pstrdup("A manual partition assignment was specified, but numPartitions or replicationFactor was not set to -1.");
				continue;
			}
			for (j = 0; j < nassign && msg == NULL; j++)
			{
				KpCreateTopicsRequestCreatableReplicaAssignment *a = &t->assignments[j];

				if (a->partition_index >= 0 && a->partition_index < nassign)
				{
					if (seen[a->partition_index])
						msg = psprintf("Found multiple manual partition assignments for partition %d",
									   a->partition_index);
					seen[a->partition_index] = true;
				}
				if (msg == NULL)
					msg = check_replica_list(a->broker_ids, a->n_broker_ids);
			}
			for (j = 0; j < nassign && msg == NULL; j++)
				if (!seen[j])
					msg = pstrdup("partitions should be a consecutive 0-based integer sequence");
			if (msg)
			{
				out->error_code = KP_ERR_INVALID_REPLICA_ASSIGNMENT;
				out->error_message = msg;
				continue;
			}
			arg.partitions = nassign;
		}
		else
		{
			arg.partitions = t->num_partitions == -1 ? kp_num_partitions : t->num_partitions;
			if (arg.partitions <= 0)
			{
				out->error_code = KP_ERR_INVALID_PARTITIONS;
				out->error_message = pstrdup("Number of partitions was set to an invalid non-positive value.");
				continue;
			}
			if (t->replication_factor != -1 && t->replication_factor <= 0)
			{
				out->error_code = KP_ERR_INVALID_REPLICATION_FACTOR;
				out->error_message = pstrdup("Replication factor must be larger than 0, or -1 to use the default value.");
				continue;
			}
			if (t->replication_factor > 1)
			{
				out->error_code = KP_ERR_INVALID_REPLICATION_FACTOR;
				out->error_message = replication_factor_message(t->replication_factor);
				continue;
			}
		}

		arg.nconfigs = nconf;
		arg.configs = palloc(sizeof(KpConfigSetting) * Max(nconf, 1));
		for (j = 0; j < nconf; j++)
		{
			arg.configs[j].name = t->configs[j].name ? t->configs[j].name : "";
			arg.configs[j].value = t->configs[j].value;
		}

		code = kp_handler_try(create_topic_fn, &arg, &msg);
		out->error_code = code;
		if (code != KP_ERR_NONE)
		{
			out->error_message = msg;
			continue;
		}
		out->error_message = NULL;
		out->topic_id = arg.topic_id;
		out->num_partitions = arg.partitions;
		out->replication_factor = 1;
		fill_created_configs(out, cdesc, &arg);
	}
}

/* ---------------------------------------------------------------------
 * DeleteTopics
 * ---------------------------------------------------------------------
 */

static void
delete_topic_fn(void *arg)
{
	kp_topic_delete((const char *) arg);
}

void
kp_handle_delete_topics(KpRequestContext *ctx)
{
	KpDeleteTopicsRequest *req = ctx->request;
	KpDeleteTopicsResponse *resp = ctx->response;
	const KpStructDesc *rdesc = child_desc(ctx->api->response->root, "Responses");
	bool		by_state = ctx->version >= 6;
	int			n = by_state ? ArrayLen(req->n_topics) : ArrayLen(req->n_topic_names);
	char	  **names = palloc(sizeof(char *) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		names[i] = by_state ? req->topics[i].name : req->topic_names[i];

	resp->throttle_time_ms = 0;
	resp->n_responses = n;
	resp->responses = new_array(rdesc, n);
	for (i = 0; i < n; i++)
	{
		KpDeleteTopicsResponseDeletableTopicResult *out = &resp->responses[i];
		const char *name = names[i];
		KpUuid		id;
		const KpTopic *t;
		char	   *msg = NULL;
		int			j;

		memset(&id, 0, sizeof(id));
		if (by_state)
			id = req->topics[i].topic_id;
		out->name = name ? pstrdup(name) : NULL;
		out->topic_id = id;

		if (name == NULL && uuid_is_zero(&id))
		{
			out->error_code = KP_ERR_INVALID_REQUEST;
			out->error_message = pstrdup("Neither topic name nor id were specified.");
			continue;
		}
		if (name != NULL && !uuid_is_zero(&id))
		{
			out->error_code = KP_ERR_INVALID_REQUEST;
			out->error_message = pstrdup("You may not specify both topic name and topic id.");
			continue;
		}
		if (is_duplicate(names, n, i))
		{
			out->error_code = KP_ERR_INVALID_REQUEST;
			out->error_message = pstrdup("Duplicate topic name.");
			continue;
		}
		if (name == NULL)
		{
			bool		dup = false;

			for (j = 0; j < n && !dup; j++)
				dup = (j != i && names[j] == NULL &&
					   memcmp(&req->topics[j].topic_id, &id, sizeof(KpUuid)) == 0);
			if (dup)
			{
				out->error_code = KP_ERR_INVALID_REQUEST;
				out->error_message = pstrdup("Duplicate topic id.");
				continue;
			}
		}

		t = kp_handler_topic(name, name ? NULL : &id);
		if (t == NULL)
		{
			if (name == NULL)
			{
				out->error_code = KP_ERR_UNKNOWN_TOPIC_ID;
				out->error_message = pstrdup("This server does not host this topic ID.");
			}
			else
			{
				out->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
				out->error_message = pstrdup("This server does not host this topic-partition.");
			}
			continue;
		}
		out->name = pstrdup(t->name);
		memcpy(out->topic_id.b, t->topic_uuid.data, 16);
		out->error_code = kp_handler_try(delete_topic_fn, out->name, &msg);
		out->error_message = out->error_code != KP_ERR_NONE ? msg : NULL;
	}
}

/* ---------------------------------------------------------------------
 * CreatePartitions
 * ---------------------------------------------------------------------
 */

typedef struct AddPartitionsArg
{
	const char *name;
	int32		count;
	bool		validate_only;
} AddPartitionsArg;

static void
add_partitions_fn(void *varg)
{
	AddPartitionsArg *arg = varg;

	kp_topic_add_partitions(arg->name, arg->count);
	if (arg->validate_only)
		rollback_validated();
}

void
kp_handle_create_partitions(KpRequestContext *ctx)
{
	KpCreatePartitionsRequest *req = ctx->request;
	KpCreatePartitionsResponse *resp = ctx->response;
	const KpStructDesc *rdesc = child_desc(ctx->api->response->root, "Results");
	int			n = ArrayLen(req->n_topics);
	char	  **names = palloc(sizeof(char *) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		names[i] = req->topics[i].name;

	resp->throttle_time_ms = 0;
	resp->n_results = n;
	resp->results = new_array(rdesc, n);
	for (i = 0; i < n; i++)
	{
		KpCreatePartitionsRequestCreatePartitionsTopic *t = &req->topics[i];
		KpCreatePartitionsResponseCreatePartitionsTopicResult *out = &resp->results[i];
		const KpTopic *topic;
		AddPartitionsArg arg;
		int32		current;
		char	   *msg = NULL;
		int			j;

		out->name = pstrdup(t->name ? t->name : "");
		if (is_duplicate(names, n, i))
		{
			out->error_code = KP_ERR_INVALID_REQUEST;
			out->error_message = pstrdup("Duplicate topic name.");
			continue;
		}
		topic = kp_handler_topic(out->name, NULL);
		if (topic == NULL)
		{
			out->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
			out->error_message = psprintf("Unable to find topic %s", out->name);
			continue;
		}
		current = topic->partition_count;

		/* ReplicationControlManager.createPartitions, in its order */
		if (t->count == current)
		{
			out->error_code = KP_ERR_INVALID_PARTITIONS;
			out->error_message = psprintf("Topic already has %d partition(s).", current);
			continue;
		}
		if (t->count < current)
		{
			out->error_code = KP_ERR_INVALID_PARTITIONS;
			out->error_message = psprintf("The topic %s currently has %d partition(s); %d would not be an increase.",
										  out->name, current, t->count);
			continue;
		}
		if (t->n_assignments >= 0)
		{
			if (t->n_assignments != t->count - current)
			{
				out->error_code = KP_ERR_INVALID_REPLICA_ASSIGNMENT;
				out->error_message = psprintf("Attempted to add %d additional partition(s), but only %d assignment(s) were specified.",
											  t->count - current, t->n_assignments);
				continue;
			}
			for (j = 0; j < t->n_assignments && msg == NULL; j++)
				msg = check_replica_list(t->assignments[j].broker_ids,
										 t->assignments[j].n_broker_ids);
			if (msg)
			{
				out->error_code = KP_ERR_INVALID_REPLICA_ASSIGNMENT;
				out->error_message = msg;
				continue;
			}
		}

		arg.name = out->name;
		arg.count = t->count;
		arg.validate_only = req->validate_only;
		out->error_code = kp_handler_try(add_partitions_fn, &arg, &msg);
		out->error_message = out->error_code != KP_ERR_NONE ? msg : NULL;
	}
}

/* ---------------------------------------------------------------------
 * DescribeConfigs
 * ---------------------------------------------------------------------
 */

/* Is key asked for?  A null key list asks for all. */
static bool
key_requested(const KpDescribeConfigsRequestDescribeConfigsResource *r, const char *key)
{
	int			i;

	if (r->n_configuration_keys < 0)
		return true;
	for (i = 0; i < r->n_configuration_keys; i++)
		if (r->configuration_keys[i] && strcmp(r->configuration_keys[i], key) == 0)
			return true;
	return false;
}

typedef struct DescribeOut
{
	KpDescribeConfigsResponseDescribeConfigsResourceResult *configs;
	int			n;
	int			cap;
	const KpStructDesc *desc;
	const KpStructDesc *syn_desc;
	bool		synonyms;
	bool		documentation;
} DescribeOut;

static KpDescribeConfigsResponseDescribeConfigsResourceResult *
describe_add(DescribeOut *d, const char *name, const char *value, int8 source,
			 bool read_only, int8 type, const char *doc)
{
	KpDescribeConfigsResponseDescribeConfigsResourceResult *c;

	if (d->n == d->cap)
	{
		d->cap = d->cap ? d->cap * 2 : 32;
		d->configs = d->configs ?
			repalloc(d->configs, d->desc->size * d->cap) :
			palloc(d->desc->size * d->cap);
	}
	c = &d->configs[d->n++];
	kp_init_nested(d->desc, c);
	c->name = pstrdup(name);
	c->value = value ? pstrdup(value) : NULL;
	c->read_only = read_only;
	c->config_source = source;
	c->is_sensitive = false;
	c->config_type = type;
	c->documentation = d->documentation && doc ? pstrdup(doc) : NULL;
	c->n_synonyms = 0;
	c->synonyms = NULL;
	if (d->synonyms)
	{
		/* Kafka lists the one in effect first, then what it overrides */
		c->n_synonyms = 1;
		c->synonyms = new_array(d->syn_desc, 1);
		c->synonyms[0].name = pstrdup(name);
		c->synonyms[0].value = c->value;
		c->synonyms[0].source = source;
	}
	return c;
}

static void
describe_topic(DescribeOut *d, const KpDescribeConfigsRequestDescribeConfigsResource *r,
			   const KpTopic *t)
{
	int			i;

	for (i = 0; i < kp_topic_config_count; i++)
	{
		const KpConfigDef *def = &kp_topic_config_defs[i];
		bool		is_default = t->config_is_default[i];
		KpDescribeConfigsResponseDescribeConfigsResourceResult *c;
		const char *syn;

		if (!key_requested(r, def->name))
			continue;
		c = describe_add(d, def->name, t->config_values[i],
						 is_default ? SOURCE_DEFAULT : SOURCE_DYNAMIC_TOPIC,
						 false, config_type_of(def), def->doc);
		syn = broker_synonym(def->name);
		if (d->synonyms && (syn != NULL || !is_default))
		{
			/* the override, then the default it replaces (under the broker's name) */
			KpDescribeConfigsResponseDescribeConfigsSynonym *s = new_array(d->syn_desc, 2);
			int			ns = 0;

			if (!is_default)
			{
				s[ns].name = pstrdup(def->name);
				s[ns].value = pstrdup(t->config_values[i]);
				s[ns].source = SOURCE_DYNAMIC_TOPIC;
				ns++;
			}
			s[ns].name = pstrdup(syn ? syn : def->name);
			s[ns].value = pstrdup(def->default_value);
			s[ns].source = SOURCE_DEFAULT;
			ns++;
			c->n_synonyms = ns;
			c->synonyms = s;
		}
	}
}

/*
 * The broker's configs that clients and the CLI ask for.  They are
 * PostgreSQL settings (kafka.*) or fixed by the design (one node), so all
 * are read-only here.
 */
static void
describe_broker(DescribeOut *d, const KpDescribeConfigsRequestDescribeConfigsResource *r)
{
	struct
	{
		const char *name;
		char	   *value;
		int8		source;
		int8		type;
		const char *doc;
	}			cf[32];
	int			n = 0;
	int			i;
	char	   *listener = psprintf("PLAINTEXT://%s:%d",
									kp_listen_address && kp_listen_address[0] ? kp_listen_address : "0.0.0.0",
									kp_port);
	char	   *advertised = psprintf("PLAINTEXT://%s:%d", kp_advertised_host_name(),
									  kp_advertised_port_number());

#define BROKER_CONF(nm, val, src, ty, dc) \
	do { cf[n].name = (nm); cf[n].value = (val); cf[n].source = (src); \
		 cf[n].type = (ty); cf[n].doc = (dc); n++; } while (0)

	BROKER_CONF("advertised.listeners", advertised, SOURCE_STATIC_BROKER, CTYPE_LIST,
				"kafka.advertised_host and kafka.advertised_port");
	BROKER_CONF("auto.create.topics.enable", pstrdup(kp_auto_create_topics_enable ? "true" : "false"),
				SOURCE_STATIC_BROKER, CTYPE_BOOLEAN, "kafka.auto_create_topics_enable");
	BROKER_CONF("broker.id", psprintf("%d", kp_node_id), SOURCE_STATIC_BROKER, CTYPE_INT, "kafka.node_id");
	BROKER_CONF("default.replication.factor", pstrdup("1"), SOURCE_DEFAULT, CTYPE_INT,
				"one node: durability and replicas are PostgreSQL's (WAL, standbys)");
	BROKER_CONF("delete.topic.enable", pstrdup("true"), SOURCE_DEFAULT, CTYPE_BOOLEAN, NULL);
	BROKER_CONF("listeners", listener, SOURCE_STATIC_BROKER, CTYPE_LIST,
				"kafka.listen_address and kafka.port");
	BROKER_CONF("log.retention.hours", pstrdup("168"), SOURCE_DEFAULT, CTYPE_INT, NULL);
	BROKER_CONF("node.id", psprintf("%d", kp_node_id), SOURCE_STATIC_BROKER, CTYPE_INT, "kafka.node_id");
	BROKER_CONF("num.partitions", psprintf("%d", kp_num_partitions), SOURCE_STATIC_BROKER, CTYPE_INT,
				"kafka.num_partitions");
	BROKER_CONF("offsets.topic.replication.factor", pstrdup("1"), SOURCE_DEFAULT, CTYPE_SHORT, NULL);
	BROKER_CONF("transaction.state.log.min.isr", pstrdup("1"), SOURCE_DEFAULT, CTYPE_INT, NULL);
	BROKER_CONF("transaction.state.log.replication.factor", pstrdup("1"), SOURCE_DEFAULT, CTYPE_SHORT, NULL);
	/* the log.* defaults are the topic configs' defaults, under the broker's names */
	for (i = 0; i < kp_topic_config_count && n < lengthof(cf) - 1; i++)
	{
		const KpConfigDef *def = &kp_topic_config_defs[i];
		const char *syn = broker_synonym(def->name);

		if (syn && (strncmp(syn, "log.retention", 13) == 0 || strcmp(syn, "log.segment.bytes") == 0 ||
					strcmp(syn, "log.cleanup.policy") == 0 || strcmp(syn, "message.max.bytes") == 0 ||
					strcmp(syn, "min.insync.replicas") == 0 || strcmp(syn, "compression.type") == 0 ||
					strcmp(syn, "log.roll.ms") == 0 || strcmp(syn, "unclean.leader.election.enable") == 0))
			BROKER_CONF(syn, pstrdup(def->default_value), SOURCE_DEFAULT, config_type_of(def), def->doc);
	}
#undef BROKER_CONF

	for (i = 0; i < n; i++)
		if (key_requested(r, cf[i].name))
			describe_add(d, cf[i].name, cf[i].value, cf[i].source, true, cf[i].type, cf[i].doc);
}

void
kp_handle_describe_configs(KpRequestContext *ctx)
{
	KpDescribeConfigsRequest *req = ctx->request;
	KpDescribeConfigsResponse *resp = ctx->response;
	const KpStructDesc *rdesc = child_desc(ctx->api->response->root, "Results");
	const KpStructDesc *cdesc = child_desc(rdesc, "Configs");
	int			n = ArrayLen(req->n_resources);
	int			i;

	resp->throttle_time_ms = 0;
	resp->n_results = n;
	resp->results = new_array(rdesc, n);
	for (i = 0; i < n; i++)
	{
		KpDescribeConfigsRequestDescribeConfigsResource *r = &req->resources[i];
		KpDescribeConfigsResponseDescribeConfigsResult *out = &resp->results[i];
		const char *name = r->resource_name ? r->resource_name : "";
		DescribeOut d;

		memset(&d, 0, sizeof(d));
		d.desc = cdesc;
		d.syn_desc = child_desc(cdesc, "Synonyms");
		d.synonyms = req->include_synonyms;
		d.documentation = ctx->version >= 3 && req->include_documentation;

		out->resource_type = r->resource_type;
		out->resource_name = pstrdup(name);
		out->error_code = KP_ERR_NONE;
		out->error_message = NULL;
		out->n_configs = 0;
		out->configs = NULL;

		if (r->resource_type == RESOURCE_TOPIC)
		{
			const KpTopic *t;

			if (name[0] == '\0' || strlen(name) > KP_TOPIC_NAME_MAX)
			{
				out->error_code = KP_ERR_INVALID_TOPIC_EXCEPTION;
				out->error_message = psprintf("Topic name \"%s\" is illegal", name);
				continue;
			}
			t = kp_handler_topic(name, NULL);
			if (t == NULL)
			{
				out->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
				out->error_message = psprintf("The topic '%s' does not exist.", name);
				continue;
			}
			describe_topic(&d, r, t);
		}
		else if (r->resource_type == RESOURCE_BROKER)
		{
			char	   *self = psprintf("%d", kp_node_id);

			if (name[0] != '\0' && strcmp(name, self) != 0)
			{
				out->error_code = KP_ERR_INVALID_REQUEST;
				out->error_message = psprintf("Unexpected broker id, expected %d or empty string, but received %s",
											  kp_node_id, name);
				continue;
			}
			describe_broker(&d, r);
		}
		else if (r->resource_type == RESOURCE_GROUP)
		{
			KpGroupConfigEntry *e;
			int			ne = kp_group_describe_configs(name, &e);
			int			k;

			for (k = 0; k < ne; k++)
				if (key_requested(r, e[k].name))
					describe_add(&d, e[k].name, e[k].value, e[k].source, false, CTYPE_INT, e[k].doc);
		}
		else
		{
			out->error_code = KP_ERR_INVALID_REQUEST;
			out->error_message = psprintf("Unsupported resource type: %d (kafka_pg describes TOPIC and BROKER configs)",
										  r->resource_type);
			continue;
		}
		out->n_configs = d.n;
		out->configs = d.configs;
	}
}

/* ---------------------------------------------------------------------
 * AlterConfigs and IncrementalAlterConfigs
 * ---------------------------------------------------------------------
 */

typedef struct AlterTopicArg
{
	const char *name;
	KpConfigSetting *settings;
	int			nsettings;
	bool		validate_only;
} AlterTopicArg;

static void
alter_topic_fn(void *varg)
{
	AlterTopicArg *arg = varg;

	kp_topic_alter_configs(arg->name, arg->settings, arg->nsettings);
	if (arg->validate_only)
		rollback_validated();
}

/*
 * Checks common to both alter APIs, before any config is looked at: the
 * resource type and name, duplicate resources.  Returns the topic (with
 * *code 0) or NULL with *code and *msg set.
 */
static const KpTopic *
alter_resource_topic(int8 type, const char *name, bool duplicate,
					 int16 *code, char **msg)
{
	const KpTopic *t;

	*code = KP_ERR_NONE;
	*msg = NULL;
	if (duplicate)
	{
		*code = KP_ERR_INVALID_REQUEST;
		*msg = pstrdup("Duplicate resource.");
		return NULL;
	}
	if (type == RESOURCE_BROKER)
	{
		*code = KP_ERR_POLICY_VIOLATION;
		*msg = pstrdup("Broker configs of kafka_pg are PostgreSQL settings (kafka.*): change them with ALTER SYSTEM and reload or restart.");
		return NULL;
	}
	if (type != RESOURCE_TOPIC)
	{
		*code = KP_ERR_INVALID_REQUEST;
		*msg = psprintf("Unsupported resource type: %d (kafka_pg alters TOPIC configs)", type);
		return NULL;
	}
	if (name[0] == '\0')
	{
		*code = KP_ERR_INVALID_REQUEST;
		*msg = pstrdup("Default topic resources are not allowed.");
		return NULL;
	}
	t = kp_handler_topic(name, NULL);
	if (t == NULL)
	{
		*code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
		*msg = psprintf("The topic '%s' does not exist.", name);
	}
	return t;
}

/* Do two resources of a request name the same thing? */
static bool
same_resource(int8 t1, const char *n1, int8 t2, const char *n2)
{
	return t1 == t2 && strcmp(n1 ? n1 : "", n2 ? n2 : "") == 0;
}

static bool
has_duplicate_key(char *const *keys, int n)
{
	int			i;

	for (i = 0; i < n; i++)
		if (is_duplicate(keys, n, i))
			return true;
	return false;
}

/*
 * Legacy AlterConfigs replaces a topic's whole set of overrides: the given
 * configs are set, every other override goes back to its default.
 */
void
kp_handle_alter_configs(KpRequestContext *ctx)
{
	KpAlterConfigsRequest *req = ctx->request;
	KpAlterConfigsResponse *resp = ctx->response;
	const KpStructDesc *rdesc = child_desc(ctx->api->response->root, "Responses");
	int			n = ArrayLen(req->n_resources);
	int			i;

	resp->throttle_time_ms = 0;
	resp->n_responses = n;
	resp->responses = new_array(rdesc, n);
	for (i = 0; i < n; i++)
	{
		KpAlterConfigsRequestAlterConfigsResource *r = &req->resources[i];
		KpAlterConfigsResponseAlterConfigsResourceResponse *out = &resp->responses[i];
		const char *name = r->resource_name ? r->resource_name : "";
		int			nconf = ArrayLen(r->n_configs);
		bool		dup = false;
		const KpTopic *t;
		AlterTopicArg arg;
		char	  **keys;
		char	   *msg;
		int16		code;
		int			j;
		int			k;

		for (j = 0; j < n && !dup; j++)
			dup = j != i && same_resource(r->resource_type, name,
										  req->resources[j].resource_type,
										  req->resources[j].resource_name);
		out->resource_type = r->resource_type;
		out->resource_name = pstrdup(name);
		t = alter_resource_topic(r->resource_type, name, dup, &code, &msg);
		if (t == NULL)
		{
			out->error_code = code;
			out->error_message = msg;
			continue;
		}

		keys = palloc(sizeof(char *) * Max(nconf, 1));
		for (j = 0; j < nconf; j++)
			keys[j] = r->configs[j].name ? r->configs[j].name : "";
		if (has_duplicate_key(keys, nconf))
		{
			out->error_code = KP_ERR_INVALID_REQUEST;
			out->error_message = pstrdup("Error due to duplicate config keys");
			continue;
		}

		arg.name = t->name;
		arg.validate_only = req->validate_only;
		arg.settings = palloc(sizeof(KpConfigSetting) * (nconf + kp_topic_config_count + 1));
		arg.nsettings = 0;
		msg = NULL;
		for (j = 0; j < nconf && msg == NULL; j++)
		{
			if (r->configs[j].value == NULL)
				msg = psprintf("Null value not supported for : %s", keys[j]);
			arg.settings[arg.nsettings].name = keys[j];
			arg.settings[arg.nsettings].value = r->configs[j].value;
			arg.nsettings++;
		}
		if (msg)
		{
			out->error_code = KP_ERR_INVALID_REQUEST;
			out->error_message = msg;
			continue;
		}
		/* every current override not given goes back to the default */
		for (k = 0; k < kp_topic_config_count; k++)
		{
			bool		given = false;

			if (t->config_is_default[k])
				continue;
			for (j = 0; j < nconf && !given; j++)
				given = strcmp(keys[j], kp_topic_config_defs[k].name) == 0;
			if (!given)
			{
				arg.settings[arg.nsettings].name = kp_topic_config_defs[k].name;
				arg.settings[arg.nsettings].value = NULL;
				arg.nsettings++;
			}
		}
		arg.name = out->resource_name;
		out->error_code = kp_handler_try(alter_topic_fn, &arg, &msg);
		out->error_message = out->error_code != KP_ERR_NONE ? msg : NULL;
	}
}

/* Split a comma-separated list value into trimmed, non-empty items. */
static List *
list_items(const char *value)
{
	List	   *items = NIL;
	char	   *copy = pstrdup(value ? value : "");
	char	   *tok;
	char	   *save = NULL;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		char	   *end;

		while (*tok == ' ')
			tok++;
		end = tok + strlen(tok);
		while (end > tok && end[-1] == ' ')
			*--end = '\0';
		if (*tok)
			items = lappend(items, tok);
	}
	return items;
}

static bool
list_has(List *items, const char *s)
{
	ListCell   *lc;

	foreach(lc, items)
		if (strcmp((char *) lfirst(lc), s) == 0)
			return true;
	return false;
}

static char *
list_join(List *items)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, items)
		appendStringInfo(&buf, "%s%s", buf.len ? "," : "", (char *) lfirst(lc));
	return buf.data;
}

/*
 * The value one incremental operation leaves (Kafka's
 * ConfigAdminManager.prepareIncrementalConfigs).  Returns false with *msg
 * and *code when the operation is refused; *value NULL means "reset".
 */
static bool
incremental_value(const KpTopic *t, int8 op, const char *key, const char *arg,
				  const char **value, int16 *code, char **msg)
{
	int			idx = kp_config_index(key);

	*value = NULL;
	switch (op)
	{
		case OP_SET:
			if (arg == NULL)
			{
				*code = KP_ERR_INVALID_REQUEST;
				*msg = psprintf("Null value not supported for : %s", key);
				return false;
			}
			*value = arg;
			return true;
		case OP_DELETE:
			return true;
		case OP_APPEND:
		case OP_SUBTRACT:
			{
				List	   *cur;
				List	   *delta;
				List	   *res = NIL;
				ListCell   *lc;

				if (idx < 0)
				{
					*code = KP_ERR_INVALID_CONFIG;
					*msg = psprintf("Unknown topic config name: %s", key);
					return false;
				}
				if (kp_topic_config_defs[idx].type != KP_CONF_LIST)
				{
					*code = KP_ERR_INVALID_CONFIG;
					*msg = psprintf("Config value %s is not allowed for config key: %s",
									op == OP_APPEND ? "append" : "subtract", key);
					return false;
				}
				cur = list_items(t->config_values[idx]);
				delta = list_items(arg);
				if (op == OP_APPEND)
				{
					res = cur;
					foreach(lc, delta)
						if (!list_has(res, lfirst(lc)))
							res = lappend(res, lfirst(lc));
				}
				else
				{
					foreach(lc, cur)
						if (!list_has(delta, lfirst(lc)))
							res = lappend(res, lfirst(lc));
				}
				*value = list_join(res);
				return true;
			}
		default:
			*code = KP_ERR_INVALID_REQUEST;
			*msg = psprintf("Unknown alter config operation %d for config key: %s", op, key);
			return false;
	}
}

void
kp_handle_incremental_alter_configs(KpRequestContext *ctx)
{
	KpIncrementalAlterConfigsRequest *req = ctx->request;
	KpIncrementalAlterConfigsResponse *resp = ctx->response;
	const KpStructDesc *rdesc = child_desc(ctx->api->response->root, "Responses");
	int			n = ArrayLen(req->n_resources);
	int			i;

	resp->throttle_time_ms = 0;
	resp->n_responses = n;
	resp->responses = new_array(rdesc, n);
	for (i = 0; i < n; i++)
	{
		KpIncrementalAlterConfigsRequestAlterConfigsResource *r = &req->resources[i];
		KpIncrementalAlterConfigsResponseAlterConfigsResourceResponse *out = &resp->responses[i];
		const char *name = r->resource_name ? r->resource_name : "";
		int			nconf = ArrayLen(r->n_configs);
		bool		dup = false;
		const KpTopic *t;
		AlterTopicArg arg;
		char	  **keys;
		char	   *msg = NULL;
		int16		code = KP_ERR_NONE;
		int			j;

		for (j = 0; j < n && !dup; j++)
			dup = j != i && same_resource(r->resource_type, name,
										  req->resources[j].resource_type,
										  req->resources[j].resource_name);
		out->resource_type = r->resource_type;
		out->resource_name = pstrdup(name);
		if (r->resource_type == RESOURCE_GROUP && !dup)
		{
			KpGroupConfigOp *ops = palloc0(sizeof(KpGroupConfigOp) * Max(nconf, 1));

			for (j = 0; j < nconf; j++)
			{
				ops[j].name = r->configs[j].name ? r->configs[j].name : "";
				ops[j].op = r->configs[j].config_operation;
				ops[j].value = r->configs[j].value;
			}
			out->error_code = kp_group_alter_configs(name, nconf, ops, req->validate_only,
													 &out->error_message);
			continue;
		}
		t = alter_resource_topic(r->resource_type, name, dup, &code, &msg);
		if (t == NULL)
		{
			out->error_code = code;
			out->error_message = msg;
			continue;
		}

		keys = palloc(sizeof(char *) * Max(nconf, 1));
		for (j = 0; j < nconf; j++)
			keys[j] = r->configs[j].name ? r->configs[j].name : "";
		if (has_duplicate_key(keys, nconf))
		{
			out->error_code = KP_ERR_INVALID_REQUEST;
			out->error_message = pstrdup("Error due to duplicate config keys");
			continue;
		}

		arg.name = out->resource_name;
		arg.validate_only = req->validate_only;
		arg.settings = palloc(sizeof(KpConfigSetting) * Max(nconf, 1));
		arg.nsettings = 0;
		for (j = 0; j < nconf; j++)
		{
			const char *value;

			if (!incremental_value(t, r->configs[j].config_operation, keys[j],
								   r->configs[j].value, &value, &code, &msg))
				break;
			arg.settings[arg.nsettings].name = keys[j];
			arg.settings[arg.nsettings].value = value;
			arg.nsettings++;
		}
		if (j < nconf)
		{
			out->error_code = code;
			out->error_message = msg;
			continue;
		}
		out->error_code = kp_handler_try(alter_topic_fn, &arg, &msg);
		out->error_message = out->error_code != KP_ERR_NONE ? msg : NULL;
	}
}

/* ---------------------------------------------------------------------
 * DeleteRecords
 * ---------------------------------------------------------------------
 */

typedef struct DeleteRecordsArg
{
	const char *topic;
	int32		partition;
	int64		offset;
	int64		low_watermark;	/* out */
} DeleteRecordsArg;

/*
 * One partition, as Kafka's Partition.deleteRecordsOnLeader: only topics
 * whose cleanup.policy includes delete; the store does the offsets.  The
 * topic lock keeps other DeleteRecords and config changes of the topic out
 * until this transaction ends.
 */
static void
delete_records_fn(void *varg)
{
	DeleteRecordsArg *arg = varg;
	const KpTopic *t = kp_topic_open(arg->topic, ShareUpdateExclusiveLock, false);
	KpPartitionRef ref;

	kp_topic_partition(t, arg->partition, &ref);
	if (!t->config.cleanup_delete)
		ereport(ERROR,
				(errcode(ERRCODE_KP_POLICY_VIOLATION),
				 errmsg("Records of partition %s-%d can not be deleted due to the configured policy",
						arg->topic, arg->partition)));
	kp_log_delete_records(ref.partition_id, arg->offset, &arg->low_watermark);
}

void
kp_handle_delete_records(KpRequestContext *ctx)
{
	KpDeleteRecordsRequest *req = ctx->request;
	KpDeleteRecordsResponse *resp = ctx->response;
	const KpStructDesc *tdesc = child_desc(ctx->api->response->root, "Topics");
	const KpStructDesc *pdesc = child_desc(tdesc, "Partitions");
	int			n = ArrayLen(req->n_topics);
	int			i;

	resp->throttle_time_ms = 0;
	resp->n_topics = n;
	resp->topics = new_array(tdesc, n);
	for (i = 0; i < n; i++)
	{
		KpDeleteRecordsRequestDeleteRecordsTopic *rt = &req->topics[i];
		KpDeleteRecordsResponseDeleteRecordsTopicResult *out = &resp->topics[i];
		int			np = ArrayLen(rt->n_partitions);
		const KpTopic *t;
		int			p;

		out->name = pstrdup(rt->name ? rt->name : "");
		out->n_partitions = np;
		out->partitions = new_array(pdesc, np);
		t = kp_handler_topic(out->name, NULL);
		for (p = 0; p < np; p++)
		{
			KpDeleteRecordsResponseDeleteRecordsPartitionResult *po = &out->partitions[p];
			DeleteRecordsArg arg;

			po->partition_index = rt->partitions[p].partition_index;
			po->low_watermark = -1;
			if (t == NULL)
			{
				po->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
				continue;
			}
			arg.topic = out->name;
			arg.partition = rt->partitions[p].partition_index;
			arg.offset = rt->partitions[p].offset;
			arg.low_watermark = -1;
			po->error_code = kp_handler_try(delete_records_fn, &arg, NULL);
			if (po->error_code == KP_ERR_NONE)
				po->low_watermark = arg.low_watermark;
		}
	}
}

/* ---------------------------------------------------------------------
 * OffsetForLeaderEpoch
 * ---------------------------------------------------------------------
 */

typedef struct EndOffsetArg
{
	int64		partition_id;
	int64		log_end_offset; /* out */
} EndOffsetArg;

static void
end_offset_fn(void *varg)
{
	EndOffsetArg *arg = varg;
	KpLogOffsets off;

	kp_log_offsets(arg->partition_id, &off);
	arg->log_end_offset = off.log_end_offset;
}

/*
 * One node, one leader epoch (0) for every partition, ever: the end offset
 * of any epoch >= 0 is the log end offset (KIP-101/KIP-320).  A client that
 * says it knows a newer leader epoch than ours gets UNKNOWN_LEADER_EPOCH,
 * as from a Kafka leader that is behind it.
 */
void
kp_handle_offset_for_leader_epoch(KpRequestContext *ctx)
{
	KpOffsetForLeaderEpochRequest *req = ctx->request;
	KpOffsetForLeaderEpochResponse *resp = ctx->response;
	const KpStructDesc *tdesc = child_desc(ctx->api->response->root, "Topics");
	const KpStructDesc *pdesc = child_desc(tdesc, "Partitions");
	int			n = ArrayLen(req->n_topics);
	int			i;

	resp->throttle_time_ms = 0;
	resp->n_topics = n;
	resp->topics = new_array(tdesc, n);
	for (i = 0; i < n; i++)
	{
		KpOffsetForLeaderEpochRequestOffsetForLeaderTopic *rt = &req->topics[i];
		KpOffsetForLeaderEpochResponseOffsetForLeaderTopicResult *out = &resp->topics[i];
		int			np = ArrayLen(rt->n_partitions);
		const KpTopic *t;
		int32		npart = -1;
		int64	   *part_ids = NULL;
		int			p;

		out->topic = pstrdup(rt->topic ? rt->topic : "");
		out->n_partitions = np;
		out->partitions = new_array(pdesc, np);
		t = kp_handler_topic(out->topic, NULL);
		if (t != NULL)
		{
			/* copied: the topic cache may be rebuilt under the calls below */
			npart = t->partition_count;
			part_ids = palloc(sizeof(int64) * Max(npart, 1));
			memcpy(part_ids, t->partition_ids, sizeof(int64) * npart);
		}
		for (p = 0; p < np; p++)
		{
			KpOffsetForLeaderEpochRequestOffsetForLeaderPartition *rp = &rt->partitions[p];
			KpOffsetForLeaderEpochResponseEpochEndOffset *po = &out->partitions[p];
			EndOffsetArg arg;

			po->partition = rp->partition;
			po->leader_epoch = -1;
			po->end_offset = -1;
			if (rp->partition < 0 || rp->partition >= npart)
			{
				po->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
				continue;
			}
			if (rp->current_leader_epoch > 0)
			{
				po->error_code = KP_ERR_UNKNOWN_LEADER_EPOCH;
				continue;
			}
			if (rp->leader_epoch < 0)
				continue;		/* UNDEFINED_EPOCH: no answer, no error */
			arg.partition_id = part_ids[rp->partition];
			po->error_code = kp_handler_try(end_offset_fn, &arg, NULL);
			if (po->error_code == KP_ERR_NONE)
			{
				po->leader_epoch = 0;
				po->end_offset = arg.log_end_offset;
			}
		}
	}
}
