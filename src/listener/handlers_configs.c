/*-------------------------------------------------------------------------
 *
 * handlers_configs.c
 *	  The config admin APIs: DescribeConfigs, AlterConfigs and
 *	  IncrementalAlterConfigs, for topic and broker resources, answered as a
 *	  Kafka 4.x broker answers them.  Topic configs are src/catalog's
 *	  (kp_config_check, kp_topic_alter_configs).
 *
 * See handlers_admin.h for what the admin handlers share and how they
 * report per-resource errors and validate_only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/uuid.h"

#include "catalog/kafka_catalog.h"
#include "common/kafka_errors.h"
#include "group/group.h"
#include "listener/handlers.h"
#include "listener/handlers_admin.h"
#include "listener/listener.h"
#include "store/store.h"

/* ---------------------------------------------------------------------
 * Topic configs as DescribeConfigs and CreateTopics report them
 * ---------------------------------------------------------------------
 */

/*
 * The broker config each topic config defaults from (Kafka's
 * TOPIC_CONFIG_SYNONYMS); derived_from: Kafka's default of it is null,
 * derived from this other broker setting (log.retention.ms from
 * log.retention.hours, whose default is derived_default), so DescribeConfigs
 * lists no DEFAULT_CONFIG synonym under its name, and lists the setting it
 * derives from under a broker override of it.
 */
static const struct
{
	const char *topic;
	const char *broker;
	const char *derived_from;
	const char *derived_default;
}			config_synonyms[] = {
	{"cleanup.policy", "log.cleanup.policy"},
	{"compression.type", "compression.type"},
	{"compression.gzip.level", "compression.gzip.level"},
	{"compression.lz4.level", "compression.lz4.level"},
	{"compression.zstd.level", "compression.zstd.level"},
	{"delete.retention.ms", "log.cleaner.delete.retention.ms"},
	{"file.delete.delay.ms", "log.segment.delete.delay.ms"},
	{"flush.messages", "log.flush.interval.messages"},
	{"flush.ms", "log.flush.interval.ms", "log.flush.scheduler.interval.ms", "9223372036854775807"},
	{"index.interval.bytes", "log.index.interval.bytes"},
	{"local.retention.bytes", "log.local.retention.bytes"},
	{"local.retention.ms", "log.local.retention.ms"},
	{"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"},
	{"max.decompressed.message.bytes", "max.decompressed.message.bytes"},
	{"max.message.bytes", "message.max.bytes"},
	{"message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms"},
	{"message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms"},
	{"message.timestamp.type", "log.message.timestamp.type"},
	{"min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio"},
	{"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"},
	{"min.insync.replicas", "min.insync.replicas"},
	{"preallocate", "log.preallocate"},
	{"remote.copy.lag.bytes", "log.remote.copy.lag.bytes"},
	{"remote.copy.lag.ms", "log.remote.copy.lag.ms"},
	{"retention.bytes", "log.retention.bytes"},
	{"retention.ms", "log.retention.ms", "log.retention.hours", "168"},
	{"segment.bytes", "log.segment.bytes"},
	{"segment.index.bytes", "log.index.size.max.bytes"},
	{"segment.jitter.ms", "log.roll.jitter.ms", "log.roll.jitter.hours", "0"},
	{"segment.ms", "log.roll.ms", "log.roll.hours", "168"},
	{"unclean.leader.election.enable", "unclean.leader.election.enable"},
};

/*
 * The broker setting Kafka derives this broker config from when it is not
 * set (log.retention.hours for log.retention.ms), and that setting's
 * default in *default_value (unless NULL); NULL if Kafka has a default of
 * its own.
 */
const char *
kp_broker_derived_from(const char *broker_config, const char **default_value)
{
	int			i;

	for (i = 0; i < lengthof(config_synonyms); i++)
		if (strcmp(config_synonyms[i].broker, broker_config) == 0)
		{
			if (default_value)
				*default_value = config_synonyms[i].derived_default;
			return config_synonyms[i].derived_from;
		}
	return NULL;
}

const char *
kp_broker_synonym(const char *topic_config)
{
	int			i;

	for (i = 0; i < lengthof(config_synonyms); i++)
		if (strcmp(config_synonyms[i].topic, topic_config) == 0)
			return config_synonyms[i].broker;
	return NULL;
}

int8
kp_config_ctype(const KpConfigDef *def)
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
 * DescribeConfigs
 * ---------------------------------------------------------------------
 */

/* Is key asked for?  A null or empty key list asks for all, as in Kafka. */
static bool
key_requested(const KpDescribeConfigsRequestDescribeConfigsResource *r, const char *key)
{
	int			i;

	if (r->n_configuration_keys <= 0)
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
	if (d->synonyms && (value != NULL || source != SOURCE_DEFAULT))
	{
		/*
		 * Kafka lists the one in effect first, then what it overrides; a
		 * default that is null (log.retention.ms and co.) is none
		 */
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
						 false, kp_config_ctype(def), def->doc);
		syn = kp_broker_synonym(def->name);
		if (d->synonyms)
		{
			/*
			 * As Kafka 4.4: the override, then the default it replaces under
			 * the broker's name, where Kafka's broker config has a default of
			 * its own; a topic config without a broker synonym lists only its
			 * override
			 */
			KpDescribeConfigsResponseDescribeConfigsSynonym *s = new_array(d->syn_desc, 2);
			int			ns = 0;

			if (!is_default)
			{
				s[ns].name = pstrdup(def->name);
				s[ns].value = pstrdup(t->config_values[i]);
				s[ns].source = SOURCE_DYNAMIC_TOPIC;
				ns++;
			}
			if (syn != NULL && kp_broker_derived_from(syn, NULL) == NULL)
			{
				s[ns].name = pstrdup(syn);
				s[ns].value = pstrdup(def->default_value);
				s[ns].source = SOURCE_DEFAULT;
				ns++;
			}
			c->n_synonyms = ns;
			c->synonyms = s;
		}
	}
}

/*
 * The broker's configs (handlers_broker_configs.c), with Kafka's synonyms:
 * a set value first, then the default it overrides.  The cluster-level
 * resource ("", cluster_default) lists only the configs set dynamically, as
 * Kafka lists its cluster-level ones: source DYNAMIC_DEFAULT_BROKER_CONFIG,
 * the value its one synonym.  On one node the cluster default and the
 * broker's dynamic configs are one set (an alter of either name changes
 * it), so the same configs are shown under both names; a setting only a
 * restart changes (node.id, ...) is the node's alone.
 */
static void
describe_broker(DescribeOut *d, const KpDescribeConfigsRequestDescribeConfigsResource *r,
				bool cluster_default)
{
	KpBrokerConfigEntry *cf;
	int			n = kp_broker_config_entries(&cf);
	int			i;

	for (i = 0; i < n; i++)
	{
		KpDescribeConfigsResponseDescribeConfigsResourceResult *c;
		const char *from = NULL;
		const char *from_default = NULL;

		if (!key_requested(r, cf[i].name))
			continue;
		if (cluster_default && (cf[i].source != SOURCE_DYNAMIC_BROKER ||
								(cf[i].read_only && cf[i].type != CTYPE_UNKNOWN)))
			continue;
		c = describe_add(d, cf[i].name, cf[i].value,
						 cluster_default ? SOURCE_DYNAMIC_DEFAULT_BROKER : cf[i].source,
						 cf[i].read_only, cf[i].type, cf[i].doc);
		/* Kafka takes a config it does not know for a secret */
		c->is_sensitive = cf[i].type == CTYPE_UNKNOWN;
		/* at the cluster level its one synonym is itself (describe_add's) */
		if (!cluster_default && d->synonyms && cf[i].source != SOURCE_DEFAULT &&
			(cf[i].default_value || (from = kp_broker_derived_from(cf[i].name, &from_default))))
		{
			/*
			 * the value set, then the default it overrides, or what Kafka
			 * derives it from
			 */
			c->n_synonyms = 2;
			c->synonyms = new_array(d->syn_desc, 2);
			c->synonyms[0].name = pstrdup(cf[i].name);
			c->synonyms[0].value = c->value;
			c->synonyms[0].source = cf[i].source;
			c->synonyms[1].name = pstrdup(from ? from : cf[i].name);
			c->synonyms[1].value = pstrdup(from ? from_default : cf[i].default_value);
			c->synonyms[1].source = SOURCE_DEFAULT;
		}
	}
}

/*
 * Kafka's rule for a config resource: DESCRIBE_CONFIGS or ALTER_CONFIGS on
 * the topic, the group, or (broker, broker logger, client metrics) the
 * cluster.  The resource's error code when denied, else KP_ERR_NONE.
 */
static int16
config_resource_denied(KpRequestContext *ctx, int8 type, const char *name, int op)
{
	if (type == RESOURCE_TOPIC)
		return kp_authz_topic(ctx, name, NULL, op) ? KP_ERR_NONE :
			KP_ERR_TOPIC_AUTHORIZATION_FAILED;
	if (type == RESOURCE_GROUP)
		return kp_authz(ctx, KP_ACL_RESOURCE_GROUP, name, op) ? KP_ERR_NONE :
			KP_ERR_GROUP_AUTHORIZATION_FAILED;
	return kp_authz_cluster(ctx, op) ? KP_ERR_NONE : KP_ERR_CLUSTER_AUTHORIZATION_FAILED;
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
		/* Kafka's ApiError.NONE: "", not null */
		out->error_message = pstrdup("");
		out->n_configs = 0;
		out->configs = NULL;
		out->error_code = config_resource_denied(ctx, r->resource_type, name,
												 KP_ACL_OP_DESCRIBE_CONFIGS);
		if (out->error_code != KP_ERR_NONE)
		{
			out->error_message = pstrdup("Authorization failed.");
			continue;
		}

		if (r->resource_type == RESOURCE_TOPIC)
		{
			const KpTopic *t;
			char	   *invalid = kp_topic_name_invalid(name);

			/* ConfigHelper: Topic.validate, then the topic (no message) */
			if (invalid != NULL)
			{
				out->error_code = KP_ERR_INVALID_TOPIC_EXCEPTION;
				out->error_message = invalid;
				continue;
			}
			t = kp_handler_topic(name, NULL);
			if (t == NULL)
			{
				out->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
				continue;
			}
			describe_topic(&d, r, t);
		}
		else if (r->resource_type == RESOURCE_BROKER)
		{
			int32		id;

			if (name[0] != '\0' && !kp_parse_broker_id(name, &id))
			{
				out->error_code = KP_ERR_INVALID_REQUEST;
				out->error_message = psprintf("Broker id must be an integer, but it is: %s", name);
				continue;
			}
			if (name[0] != '\0' && id != kp_node_id)
			{
				out->error_code = KP_ERR_INVALID_REQUEST;
				out->error_message = psprintf("Unexpected broker id, expected %d or empty string, but received %s",
											  kp_node_id, name);
				continue;
			}
			describe_broker(&d, r, name[0] == '\0');
		}
		else if (r->resource_type == RESOURCE_GROUP)
		{
			KpGroupConfigEntry *e;
			int			ne = kp_group_describe_configs(name, &e);
			int			k;

			for (k = 0; k < ne; k++)
				if (key_requested(r, e[k].name))
					describe_add(&d, e[k].name, e[k].value, e[k].source, false,
								 strcmp(e[k].name, "share.auto.offset.reset") == 0 ||
								 strcmp(e[k].name, "share.isolation.level") == 0 ? CTYPE_STRING : CTYPE_INT,
								 e[k].doc);
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
		/* ConfigAdminManager.preprocess */
		*msg = pstrdup("Each resource must appear at most once.");
		return NULL;
	}
	if (type != RESOURCE_TOPIC)
	{
		*code = KP_ERR_INVALID_REQUEST;
		*msg = psprintf("Unsupported resource type: %d (kafka_pg alters TOPIC and BROKER configs)", type);
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

/*
 * For each resource of a request (elsize bytes each from base, its int8
 * type and char * name at those offsets): does another one name the same
 * thing?  A palloc'd bool[n].
 */
static bool *
resource_duplicates(const void *base, int n, size_t elsize, size_t type_off, size_t name_off)
{
	char	  **keys = palloc(sizeof(char *) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
	{
		const char *r = (const char *) base + i * elsize;
		const char *name = *(char *const *) (r + name_off);

		keys[i] = psprintf("%d:%s", (int) *(const int8 *) (r + type_off), name ? name : "");
	}
	return kp_mark_duplicates(keys, n, NULL);
}

/*
 * The locks of the request's TOPIC resources first, without waiting
 * (kp_handler_lock_topics): the alter APIs have no timeout of their own, so
 * a taken lock parks the request for KP_LOCK_WAIT_DEFAULT_MS at most.
 * Whether it parked.
 */
static bool
lock_topic_resources(KpRequestContext *ctx, const void *base, int n, size_t elsize,
					 size_t type_off, size_t name_off)
{
	char	  **names = palloc0(sizeof(char *) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
	{
		const char *r = (const char *) base + i * elsize;

		if (*(const int8 *) (r + type_off) == RESOURCE_TOPIC)
			names[i] = *(char *const *) (r + name_off);
	}
	return kp_handler_lock_topics(ctx, names, n, 0);
}

static bool
has_duplicate_key(char *const *keys, int n)
{
	bool	   *dup = kp_mark_duplicates(keys, n, NULL);
	int			i;

	for (i = 0; i < n; i++)
		if (dup[i])
			return true;
	return false;
}

/*
 * The order to change resources in: BROKER resources last.  A BROKER
 * config's ALTER SYSTEM is the one change that outlives the request's
 * transaction; every other change, and every lock whose being taken by
 * another transaction makes the request roll back and run again
 * (dispatch.c, LOCK_RETRY_ROW), comes before it.  The responses keep the
 * request's order.
 */
static int *
broker_last(const void *resources, int n, size_t stride, size_t type_off)
{
	int		   *order = palloc(sizeof(int) * Max(n, 1));
	int			k = 0;
	int			pass;
	int			i;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < n; i++)
		{
			int8		type = *(const int8 *) ((const char *) resources + i * stride + type_off);

			if ((type == RESOURCE_BROKER) == (pass == 1))
				order[k++] = i;
		}
	return order;
}

/*
 * Legacy AlterConfigs replaces a resource's whole set of overrides: the
 * given configs are set, every other override goes back to its default.
 */
void
kp_handle_alter_configs(KpRequestContext *ctx)
{
	KpAlterConfigsRequest *req = ctx->request;
	KpAlterConfigsResponse *resp = ctx->response;
	const KpStructDesc *rdesc = child_desc(ctx->api->response->root, "Responses");
	int			n = ArrayLen(req->n_resources);
	bool	   *rdup;
	int		   *order;
	int			k;

	rdup = resource_duplicates(req->resources, n, sizeof(req->resources[0]),
							   offsetof(KpAlterConfigsRequestAlterConfigsResource, resource_type),
							   offsetof(KpAlterConfigsRequestAlterConfigsResource, resource_name));
	if (lock_topic_resources(ctx, req->resources, n, sizeof(req->resources[0]),
							 offsetof(KpAlterConfigsRequestAlterConfigsResource, resource_type),
							 offsetof(KpAlterConfigsRequestAlterConfigsResource, resource_name)))
		return;
	resp->throttle_time_ms = 0;
	resp->n_responses = n;
	resp->responses = new_array(rdesc, n);
	order = broker_last(req->resources, n, sizeof(req->resources[0]),
						offsetof(KpAlterConfigsRequestAlterConfigsResource, resource_type));
	for (k = 0; k < n; k++)
	{
		int			i = order[k];
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

		dup = rdup[i];
		out->resource_type = r->resource_type;
		out->resource_name = pstrdup(name);
		out->error_code = config_resource_denied(ctx, r->resource_type, name,
												 KP_ACL_OP_ALTER_CONFIGS);
		if (out->error_code != KP_ERR_NONE)
		{
			out->error_message = pstrdup("Authorization failed.");
			continue;
		}
		if (r->resource_type == RESOURCE_BROKER && !dup)
		{
			KpBrokerConfigOp *ops = palloc0(sizeof(KpBrokerConfigOp) * Max(nconf, 1));

			for (j = 0; j < nconf; j++)
			{
				ops[j].name = r->configs[j].name ? r->configs[j].name : "";
				ops[j].op = OP_SET;
				ops[j].value = r->configs[j].value;
			}
			out->error_code = kp_broker_alter_configs(name, ops, nconf, false, req->validate_only,
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
 * What APPEND or SUBTRACT of arg (a comma-separated list) leaves of a list
 * config's current value: appended items not already there go last,
 * subtracted ones go wherever they are (Kafka's AlterConfigOp semantics).
 */
char *
kp_config_list_op(const char *current, int8 op, const char *arg)
{
	List	   *cur = list_items(current);
	List	   *delta = list_items(arg);
	List	   *res = NIL;
	ListCell   *lc;

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
	return list_join(res);
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
				*value = kp_config_list_op(t->config_values[idx], op, arg);
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
	bool	   *rdup;
	int		   *order;
	int			k;

	rdup = resource_duplicates(req->resources, n, sizeof(req->resources[0]),
							   offsetof(KpIncrementalAlterConfigsRequestAlterConfigsResource, resource_type),
							   offsetof(KpIncrementalAlterConfigsRequestAlterConfigsResource, resource_name));
	if (lock_topic_resources(ctx, req->resources, n, sizeof(req->resources[0]),
							 offsetof(KpIncrementalAlterConfigsRequestAlterConfigsResource, resource_type),
							 offsetof(KpIncrementalAlterConfigsRequestAlterConfigsResource, resource_name)))
		return;
	resp->throttle_time_ms = 0;
	resp->n_responses = n;
	resp->responses = new_array(rdesc, n);
	order = broker_last(req->resources, n, sizeof(req->resources[0]),
						offsetof(KpIncrementalAlterConfigsRequestAlterConfigsResource, resource_type));
	for (k = 0; k < n; k++)
	{
		int			i = order[k];
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

		dup = rdup[i];
		out->resource_type = r->resource_type;
		out->resource_name = pstrdup(name);
		out->error_code = config_resource_denied(ctx, r->resource_type, name,
												 KP_ACL_OP_ALTER_CONFIGS);
		if (out->error_code != KP_ERR_NONE)
		{
			out->error_message = pstrdup("Authorization failed.");
			continue;
		}
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
		if (r->resource_type == RESOURCE_BROKER && !dup)
		{
			KpBrokerConfigOp *ops = palloc0(sizeof(KpBrokerConfigOp) * Max(nconf, 1));

			for (j = 0; j < nconf; j++)
			{
				ops[j].name = r->configs[j].name ? r->configs[j].name : "";
				ops[j].op = r->configs[j].config_operation;
				ops[j].value = r->configs[j].value;
			}
			out->error_code = kp_broker_alter_configs(name, ops, nconf, true, req->validate_only,
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
