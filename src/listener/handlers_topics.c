/*-------------------------------------------------------------------------
 *
 * handlers_topics.c
 *	  The topic admin APIs, answered as a Kafka 4.x (KRaft) broker answers
 *	  them: CreateTopics, DeleteTopics and CreatePartitions.
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
#include "listener/handlers.h"
#include "listener/handlers_admin.h"
#include "listener/listener.h"
#include "listener/listener_int.h"
#include "store/store.h"

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
create_topic_fn(void *varg)
{
	CreateTopicArg *arg = varg;

	kp_topic_create(arg->name, arg->partitions, arg->configs, arg->nconfigs);
	(void) kp_topic_uuid_by_name(arg->name, (pg_uuid_t *) &arg->topic_id);
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
	bool	   *dup;
	bool	   *later;
	bool		any_new = false;
	int			i;
	bool		create_all = kp_authz_cluster(ctx, KP_ACL_OP_CREATE);

	for (i = 0; i < n; i++)
		names[i] = req->topics[i].name;

	resp->throttle_time_ms = 0;
	if (KP_CONTROLLER_DEADLINE_PASSED(req->timeout_ms))
	{
		resp->n_topics = n;
		resp->topics = new_array(rdesc, n);
		for (i = 0; i < n; i++)
		{
			resp->topics[i].name = pstrdup(names[i] ? names[i] : "");
			resp->topics[i].error_code = KP_ERR_REQUEST_TIMED_OUT;
			resp->topics[i].error_message = NULL;
		}
		return;
	}
	dup = kp_mark_duplicates(names, n, &later);

	/*
	 * Topics are created one transaction at a time (kp_topic_create's lock),
	 * and a SQL transaction that created one holds that lock until it ends:
	 * when a name is new and the lock taken, park (the worker waits for no
	 * lock) until the request's timeout_ms; at that deadline each new topic
	 * is REQUEST_TIMED_OUT (kp_topic_create finds the lock taken).
	 */
	for (i = 0; i < n && !any_new; i++)
		any_new = !dup[i] && names[i] != NULL && kp_handler_topic(names[i], NULL) == NULL;
	if (any_new && !kp_topic_try_lock_creation() &&
		kp_handler_park_for_locks(ctx, req->timeout_ms))
		return;

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
		if (dup[i])
		{
			/* ControllerApis: every entry of a duplicated name is refused */
			out->error_code = KP_ERR_INVALID_REQUEST;
			out->error_message = pstrdup("Duplicate topic name.");
			continue;
		}

		/* Kafka: CREATE on the cluster or on the topic */
		if (!create_all && !kp_authz_topic(ctx, out->name, NULL, KP_ACL_OP_CREATE))
		{
			out->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
			out->error_message = pstrdup("Authorization failed.");
			continue;
		}

		/* the name first, as ReplicationControlManager does */
		msg = kp_topic_name_invalid(out->name);
		if (msg != NULL)
		{
			out->error_code = KP_ERR_INVALID_TOPIC_EXCEPTION;
			out->error_message = msg;
			continue;
		}

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

		/*
		 * controller_mutation_rate (KIP-599): strict since v6, for a topic
		 * that would be created (an existing one is TOPIC_ALREADY_EXISTS)
		 */
		if (ctx->version >= 6 && kp_handler_topic(out->name, NULL) == NULL &&
			kp_quota_mutation_refused(ctx))
		{
			/* no message: Kafka's ApiError drops the code's own one */
			out->error_code = KP_ERR_THROTTLING_QUOTA_EXCEEDED;
			out->error_message = NULL;
			continue;
		}
		code = kp_handler_try(create_topic_fn, &arg, &msg);
		out->error_code = code;
		if (code == KP_ERR_TOPIC_ALREADY_EXISTS)
			msg = psprintf("Topic '%s' already exists.", out->name);	/* Kafka's words */

		/*
		 * The name was valid (checked above), so INVALID_TOPIC_EXCEPTION is a
		 * collision: in Kafka's words, with the other name
		 */
		if (code == KP_ERR_INVALID_TOPIC_EXCEPTION)
		{
			char	   *other = kp_topic_colliding(out->name);

			if (other != NULL)
				msg = psprintf("Topic '%s' collides with existing topic: %s", out->name, other);
		}
		if (code != KP_ERR_NONE)
		{
			out->error_message = msg;
			continue;
		}
		kp_quota_mutation_record(ctx, arg.partitions, ctx->version >= 6);
		out->error_message = NULL;
		out->topic_id = arg.topic_id;
		out->num_partitions = arg.partitions;
		out->replication_factor = 1;
		/* Kafka: the configs only for who may describe them */
		if (kp_authz_topic(ctx, out->name, NULL, KP_ACL_OP_DESCRIBE_CONFIGS))
			fill_created_configs(out, cdesc, &arg);
		else
			out->topic_config_error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
	}
	/* a repeated name is answered once */
	resp->n_topics = kp_drop_entries(resp->topics, sizeof(*resp->topics), later, n);
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

/* A topic id as 32 hex digits, a key for kp_mark_duplicates. */
static char *
uuid_key(const KpUuid *id)
{
	char	   *key = palloc(33);

	hex_encode((const char *) id->b, 16, key);
	key[32] = '\0';
	return key;
}

typedef struct IdEntry
{
	const char *key;
	int			index;
} IdEntry;

static int
id_entry_cmp(const void *a, const void *b)
{
	return strcmp(((const IdEntry *) a)->key, ((const IdEntry *) b)->key);
}

/*
 * A topic named by name whose id another entry names (ControllerApis: "what
 * if we supply topic ID X and also a name that maps to ID X?"): Kafka deletes
 * neither and answers one entry, the name and the id, INVALID_REQUEST.  It
 * says so only of a topic the client may delete (both entries passed the
 * checks above), not to reveal which name an id has.  The name's entry is
 * the answer; the id's (when not itself a duplicate, answered as such) is
 * dropped.
 */
static void
merge_name_and_id(KpDeleteTopicsResponseDeletableTopicResult *results,
				  char **names, char **id_keys, const KpTopic **topics,
				  bool *drop, int n)
{
	IdEntry    *ids = palloc(sizeof(IdEntry) * Max(n, 1));
	int			nids = 0;
	int			i;

	for (i = 0; i < n; i++)
		if (id_keys[i] != NULL)
		{
			ids[nids].key = id_keys[i];
			ids[nids].index = i;
			nids++;
		}
	if (nids == 0)
		return;
	qsort(ids, nids, sizeof(IdEntry), id_entry_cmp);
	for (i = 0; i < n; i++)
	{
		IdEntry		probe;
		IdEntry    *hit;
		KpUuid		id;

		if (names[i] == NULL || topics[i] == NULL)
			continue;
		memcpy(id.b, topics[i]->topic_uuid.data, 16);
		probe.key = uuid_key(&id);
		hit = bsearch(&probe, ids, nids, sizeof(IdEntry), id_entry_cmp);
		if (hit == NULL)
			continue;
		/* any entry of that id: back to the first of equal keys */
		while (hit > ids && strcmp(hit[-1].key, probe.key) == 0)
			hit--;
		for (; hit < ids + nids && strcmp(hit->key, probe.key) == 0; hit++)
		{
			if (topics[hit->index] != NULL)
			{
				/* the id's own entry: neither is deleted, one answer */
				topics[hit->index] = NULL;
				drop[hit->index] = true;
			}
		}
		topics[i] = NULL;
		results[i].error_code = KP_ERR_INVALID_REQUEST;
		results[i].error_message = pstrdup("The provided topic name maps to an ID that was already supplied.");
	}
}

/*
 * A topic is deleted under AccessExclusiveLock, which waits for every
 * transaction that uses it: a SQL session that produced to it, consumed or
 * fetched from it, and has not committed yet, for as long as it stays open.
 * A worker must not wait there: it serves every other connection in the
 * meantime.  So the locks of all the topics to delete are tried first,
 * without waiting; if one is taken, nothing is deleted and the request parks
 * (the topic locks it took go with this run's transaction) and tries again
 * as kp_handler_park_for_locks says until its timeout_ms,
 * then deletes the topics that are free and answers REQUEST_TIMED_OUT for
 * the others.  All or nothing until then, so a re-run never finds a topic of
 * its own already deleted.
 */
void
kp_handle_delete_topics(KpRequestContext *ctx)
{
	KpDeleteTopicsRequest *req = ctx->request;
	KpDeleteTopicsResponse *resp = ctx->response;
	const KpStructDesc *rdesc = child_desc(ctx->api->response->root, "Responses");
	bool		by_state = ctx->version >= 6;
	int			n = by_state ? ArrayLen(req->n_topics) : ArrayLen(req->n_topic_names);
	char	  **names = palloc(sizeof(char *) * Max(n, 1));
	char	  **name_keys = palloc(sizeof(char *) * Max(n, 1));
	char	  **id_keys = palloc(sizeof(char *) * Max(n, 1));
	const KpTopic **topics = palloc0(sizeof(KpTopic *) * Max(n, 1));
	bool	   *busy = palloc0(sizeof(bool) * Max(n, 1));
	bool	   *drop;
	bool	   *id_later;
	bool		any_busy = false;
	bool	   *dup;
	bool	   *id_dup;
	int			i;

	for (i = 0; i < n; i++)
		names[i] = by_state ? req->topics[i].name : req->topic_names[i];

	resp->throttle_time_ms = 0;
	resp->n_responses = n;
	resp->responses = new_array(rdesc, n);
	if (KP_CONTROLLER_DEADLINE_PASSED(req->timeout_ms))
	{
		for (i = 0; i < n; i++)
		{
			resp->responses[i].name = names[i] ? pstrdup(names[i]) : NULL;
			if (by_state)
				resp->responses[i].topic_id = req->topics[i].topic_id;
			resp->responses[i].error_code = KP_ERR_REQUEST_TIMED_OUT;
			resp->responses[i].error_message = NULL;
		}
		return;
	}

	/*
	 * The names and ids that count as given (ControllerApis): an entry with
	 * both, or neither, is refused on its own and repeats nothing.
	 */
	for (i = 0; i < n; i++)
	{
		bool		no_id = !by_state || uuid_is_zero(&req->topics[i].topic_id);

		name_keys[i] = names[i] != NULL && no_id ? names[i] : NULL;
		id_keys[i] = names[i] == NULL && !no_id ? uuid_key(&req->topics[i].topic_id) : NULL;
	}
	dup = kp_mark_duplicates(name_keys, n, &drop);
	/* topics named by id only: the same id twice is refused too */
	id_dup = kp_mark_duplicates(id_keys, n, &id_later);
	for (i = 0; i < n; i++)
		drop[i] |= id_later[i];

	/* what may be deleted */
	for (i = 0; i < n; i++)
	{
		KpDeleteTopicsResponseDeletableTopicResult *out = &resp->responses[i];
		const char *name = names[i];
		KpUuid		id;
		const KpTopic *t;

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
		if (dup[i])
		{
			out->error_code = KP_ERR_INVALID_REQUEST;
			out->error_message = pstrdup("Duplicate topic name.");
			continue;
		}
		if (name == NULL && id_dup[i])
		{
			out->error_code = KP_ERR_INVALID_REQUEST;
			out->error_message = pstrdup("Duplicate topic id.");
			continue;
		}

		t = kp_handler_topic(name, name ? NULL : &id);
		/* Kafka: DELETE on the topic, checked before it is looked for */
		if (!kp_authz_topic(ctx, name, t, KP_ACL_OP_DELETE))
		{
			out->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
			out->error_message = pstrdup("Authorization failed.");
			continue;
		}
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
		topics[i] = t;
	}

	merge_name_and_id(resp->responses, names, id_keys, topics, drop, n);

	/* whether each topic's lock is free now */
	for (i = 0; i < n; i++)
	{
		if (topics[i] == NULL)
			continue;
		/* held (with the AccessShareLock above): only others' locks conflict */
		(void) kp_topic_try_open(topics[i]->name, AccessExclusiveLock, &busy[i]);
		any_busy |= busy[i];
	}

	if (any_busy && kp_handler_park_for_locks(ctx, req->timeout_ms))
		return;

	for (i = 0; i < n; i++)
	{
		KpDeleteTopicsResponseDeletableTopicResult *out = &resp->responses[i];
		char	   *msg = NULL;

		if (topics[i] == NULL)
			continue;
		if (busy[i])
		{
			out->error_code = KP_ERR_REQUEST_TIMED_OUT;
			out->error_message = psprintf("Topic %s is in use by transactions still open "
										  "(SQL sessions that produced to, consumed or fetched from it): "
										  "not deleted within %d ms.",
										  out->name,
										  req->timeout_ms > 0 ? req->timeout_ms : KP_LOCK_WAIT_DEFAULT_MS);
			continue;
		}
		/* controller_mutation_rate (KIP-599): strict since v5 */
		if (ctx->version >= 5 && kp_quota_mutation_refused(ctx))
		{
			/* no message: Kafka's ApiError drops the code's own one */
			out->error_code = KP_ERR_THROTTLING_QUOTA_EXCEEDED;
			out->error_message = NULL;
			continue;
		}
		out->error_code = kp_handler_try(delete_topic_fn, out->name, &msg);
		out->error_message = out->error_code != KP_ERR_NONE ? msg : NULL;
		if (out->error_code == KP_ERR_NONE)
			kp_quota_mutation_record(ctx, topics[i]->partition_count, ctx->version >= 5);
	}
	resp->n_responses = kp_drop_entries(resp->responses, sizeof(*resp->responses), drop, n);
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
	bool	   *dup;
	bool	   *later;
	int			i;

	for (i = 0; i < n; i++)
		names[i] = req->topics[i].name;

	resp->throttle_time_ms = 0;
	if (KP_CONTROLLER_DEADLINE_PASSED(req->timeout_ms))
	{
		resp->n_results = n;
		resp->results = new_array(rdesc, n);
		for (i = 0; i < n; i++)
		{
			resp->results[i].name = pstrdup(names[i] ? names[i] : "");
			resp->results[i].error_code = KP_ERR_REQUEST_TIMED_OUT;
			resp->results[i].error_message = NULL;
		}
		return;
	}
	dup = kp_mark_duplicates(names, n, &later);

	/*
	 * The topics' locks first, without waiting (kp_handler_lock_topics), then
	 * the creation lock, which kp_topic_add_partitions holds too (one
	 * transaction at a time counts partitions against kafka.max_partitions):
	 * parked while either is taken, and at the deadline what is still locked
	 * answers REQUEST_TIMED_OUT.
	 */
	if (kp_handler_lock_topics(ctx, names, n, req->timeout_ms))
		return;
	if (n > 0 && !kp_topic_try_lock_creation() &&
		kp_handler_park_for_locks(ctx, req->timeout_ms))
		return;

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
		if (dup[i])
		{
			out->error_code = KP_ERR_INVALID_REQUEST;
			out->error_message = pstrdup("Duplicate topic name.");
			continue;
		}
		if (!kp_authz_topic(ctx, out->name, NULL, KP_ACL_OP_ALTER))
		{
			out->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
			out->error_message = pstrdup("Authorization failed.");
			continue;
		}
		topic = kp_handler_topic(out->name, NULL);
		if (topic == NULL)
		{
			/* ControllerApis finds no id for the name: no message */
			out->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
			out->error_message = NULL;
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

		/* controller_mutation_rate (KIP-599): strict since v3 */
		if (ctx->version >= 3 && kp_quota_mutation_refused(ctx))
		{
			/* no message: Kafka's ApiError drops the code's own one */
			out->error_code = KP_ERR_THROTTLING_QUOTA_EXCEEDED;
			out->error_message = NULL;
			continue;
		}
		arg.name = out->name;
		arg.count = t->count;
		arg.validate_only = req->validate_only;
		out->error_code = kp_handler_try(add_partitions_fn, &arg, &msg);
		out->error_message = out->error_code != KP_ERR_NONE ? msg : NULL;
		if (out->error_code == KP_ERR_NONE)
			kp_quota_mutation_record(ctx, t->count - current, ctx->version >= 3);
	}
	/* a repeated name is answered once */
	resp->n_results = kp_drop_entries(resp->results, sizeof(*resp->results), later, n);
}
