/*-------------------------------------------------------------------------
 *
 * handlers_core.c
 *	  ApiVersions, Metadata, InitProducerId, DescribeCluster: what every
 *	  client asks first.  Produce is in handlers_produce.c, Fetch and
 *	  ListOffsets in handlers_fetch.c.
 *
 * The primary (node id kafka.node_id) leads every partition at the leader
 * epoch of its timeline; the replicas and ISR are itself and the standbys
 * kafka.replica_nodes names (replicas.c, docs/replication.md).  A hot
 * standby reports the primary's view, as published in kafka.leader
 * (leader.c).  Produce
 * and Fetch go through the same store calls as kafka.produce and
 * kafka.fetch (src/store), so records written by either front door are
 * read by the other.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "codec/codec.h"
#include "listener/handlers.h"
#include "listener/handlers_admin.h"
#include "listener/listener.h"
#include "listener/listener_int.h"
#include "listener/sasl.h"
#include "store/store.h"
#include "txn/txn.h"

/* ---------------------------------------------------------------------
 * ApiVersions
 * ---------------------------------------------------------------------
 */

/*
 * A client software name or version as Kafka accepts it (v3+): ASCII letters
 * and digits, with '-' and '.' inside, as ApiVersionsRequest.isValid's
 * [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
 */
static bool
ascii_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool
software_name_valid(const char *s)
{
	size_t		len = s ? strlen(s) : 0;
	size_t		i;

	if (len == 0 || !ascii_alnum(s[0]) || !ascii_alnum(s[len - 1]))
		return false;
	for (i = 1; i + 1 < len; i++)
		if (!ascii_alnum(s[i]) && s[i] != '-' && s[i] != '.')
			return false;
	return true;
}

/*
 * The features finalized, by name (Kafka 4.4 finalizes these three at the
 * same levels, among others kafka_pg has no use for: metadata.version,
 * kraft.version, eligible.leader.replicas.version, and streams.version of
 * the streams groups not served).  No client found reads group.version or
 * share.version, but admin clients list them and some third-party clients
 * check share.version before using share groups.
 */
const KpFeature kp_features[] = {
	/* KIP-848 consumer groups (ConsumerGroupHeartbeat) */
	{"group.version", 1},
	/* KIP-932 share groups; level 2 is KIP-1191's dead-letter queue: not here */
	{"share.version", 1},
	/* KIP-890 part 2 (handlers_txn.c) */
	{KP_TRANSACTION_VERSION_FEATURE, KP_TRANSACTION_VERSION},
};
const int	kp_nfeatures = lengthof(kp_features);

void
kp_handle_api_versions(KpRequestContext *ctx)
{
	const KpApiVersionsRequest *req = ctx->request;
	KpApiVersionsResponse *resp = ctx->response;
	int			n = 0;
	int			key;
	int			i;

	/*
	 * As Kafka's ApiVersionsRequest.isValid: from v3 the client names its
	 * software; from v5 it gives the cluster id and node id it means to reach
	 * both or neither (KIP-1242).  Refused with INVALID_REQUEST and no API.
	 */
	if (ctx->version >= 3 &&
		(!software_name_valid(req->client_software_name) ||
		 !software_name_valid(req->client_software_version) ||
		 (ctx->version >= 5 && (req->cluster_id == NULL) != (req->node_id == -1))))
	{
		resp->error_code = KP_ERR_INVALID_REQUEST;
		return;
	}

	/*
	 * KIP-1242: a client that reached a server of another cluster, or another
	 * node than the one it meant (an address reused), bootstraps again; Kafka
	 * checks this once the client is authenticated (its SASL authenticator
	 * answers ApiVersions itself, without the check).
	 */
	if (ctx->version >= 5 && req->cluster_id != NULL && !kp_sasl_pending(ctx->conn) &&
		(strcmp(req->cluster_id, kp_cluster_id()) != 0 || req->node_id != kp_node_id))
	{
		resp->error_code = KP_ERR_REBOOTSTRAP_REQUIRED;
		return;
	}

	resp->api_keys = palloc0(sizeof(KpApiVersionsResponseApiVersion) * (KP_API_KEY_MAX + 1));
	for (key = 0; key <= KP_API_KEY_MAX; key++)
	{
		const KpApiEntry *api = kp_api_lookup((int16) key);

		if (api == NULL || kp_handler_for((int16) key) == NULL)
			continue;
		resp->api_keys[n].api_key = (int16) key;
		resp->api_keys[n].min_version = api->min_version;
		resp->api_keys[n].max_version = api->max_version;
		n++;
	}
	resp->n_api_keys = n;
	resp->error_code = KP_ERR_NONE;

	/*
	 * The features (kp_features), each finalized at its level, none ever
	 * changing (UpdateFeatures changes none), so their epoch is constant.  As
	 * Kafka, a supported range starting at 0 is listed from v4 only (a v3
	 * client refuses a minimum of 0).
	 */
	resp->n_supported_features = 0;
	if (ctx->version >= 4)
	{
		resp->supported_features =
			palloc0(sizeof(KpApiVersionsResponseSupportedFeatureKey) * kp_nfeatures);
		for (i = 0; i < kp_nfeatures; i++)
		{
			resp->supported_features[i].name = pstrdup(kp_features[i].name);
			resp->supported_features[i].min_version = 0;
			resp->supported_features[i].max_version = kp_features[i].level;
		}
		resp->n_supported_features = kp_nfeatures;
	}
	resp->finalized_features_epoch = 1;
	resp->finalized_features =
		palloc0(sizeof(KpApiVersionsResponseFinalizedFeatureKey) * kp_nfeatures);
	for (i = 0; i < kp_nfeatures; i++)
	{
		resp->finalized_features[i].name = pstrdup(kp_features[i].name);
		resp->finalized_features[i].max_version_level = kp_features[i].level;
		resp->finalized_features[i].min_version_level = kp_features[i].level;
	}
	resp->n_finalized_features = kp_nfeatures;
}

/* ---------------------------------------------------------------------
 * Metadata
 * ---------------------------------------------------------------------
 */

static void
fill_topic_metadata(KpRequestContext *ctx, KpMetadataResponseTopic *out, const KpTopic *t,
					bool with_ops, const KpClusterView *view)
{
	const KpReplicas *reps = &view->reps;

	int			p;

	out->error_code = KP_ERR_NONE;
	out->name = pstrdup(t->name);
	memcpy(out->topic_id.b, t->topic_uuid.data, 16);
	out->is_internal = false;
	out->n_partitions = t->partition_count;
	out->partitions = palloc0(sizeof(KpMetadataResponsePartition) * Max(t->partition_count, 1));
	for (p = 0; p < t->partition_count; p++)
	{
		KpMetadataResponsePartition *mp = &out->partitions[p];

		/* a standby that knows no primary yet: Kafka's leaderless partition */
		mp->error_code = view->leader_id < 0 ? KP_ERR_LEADER_NOT_AVAILABLE : KP_ERR_NONE;
		mp->partition_index = p;
		mp->leader_id = view->leader_id;
		mp->leader_epoch = view->leader_epoch;
		/* the arrays are only read by the encoder: shared by the partitions */
		mp->n_replica_nodes = reps->n_replicas;
		mp->replica_nodes = reps->replicas;
		mp->n_isr_nodes = reps->n_isr;
		mp->isr_nodes = reps->isr;
		mp->n_offline_replicas = reps->n_offline;
		mp->offline_replicas = reps->offline;
	}
	out->topic_authorized_operations = with_ops ?
		kp_authz_operations(ctx, KP_ACL_RESOURCE_TOPIC, t->name) : PG_INT32_MIN;
}

typedef struct AutoCreateArg
{
	const char *name;
} AutoCreateArg;

static void
auto_create_topic(void *arg)
{
	kp_topic_create(((AutoCreateArg *) arg)->name, kp_num_partitions, NULL, 0);
}

/*
 * Kafka's answer to a Metadata request it refuses as a whole: each listing
 * with the error, as given (a null name as ""), and no broker or cluster id
 */
static void
metadata_refuse_all(const KpMetadataRequest *req, KpMetadataResponse *resp, int16 code)
{
	int			i;

	resp->n_brokers = 0;
	resp->cluster_id = NULL;
	resp->controller_id = -1;
	resp->cluster_authorized_operations = PG_INT32_MIN;
	resp->n_topics = req->n_topics;
	resp->topics = palloc0(sizeof(KpMetadataResponseTopic) * Max(req->n_topics, 1));
	for (i = 0; i < req->n_topics; i++)
	{
		resp->topics[i].error_code = code;
		resp->topics[i].name = pstrdup(req->topics[i].name ? req->topics[i].name : "");
		memcpy(resp->topics[i].topic_id.b, req->topics[i].topic_id.b, 16);
		resp->topics[i].topic_authorized_operations = PG_INT32_MIN;
	}
}

void
kp_handle_metadata(KpRequestContext *ctx)
{
	KpMetadataRequest *req = ctx->request;
	KpMetadataResponse *resp = ctx->response;
	bool		all_topics;
	bool		allow_create = kp_auto_create_topics_enable &&
	(ctx->version < 4 || req->allow_auto_topic_creation);
	char	  **keys;
	bool	   *later;
	bool		use_ids;
	int			i;
	KpClusterView view;

	/* the leader's view: the same on every server (leader.c) */
	kp_cluster_view(&view);

	/*
	 * A hot standby creates nothing; a topic the leader would create is
	 * LEADER_NOT_AVAILABLE there, Kafka's answer while a creation is under
	 * way, so that the client asks again (the leader creates it).
	 */
	resp->n_brokers = view.n_brokers;
	resp->brokers = palloc0(sizeof(KpMetadataResponseBroker) * Max(view.n_brokers, 1));
	for (i = 0; i < view.n_brokers; i++)
	{
		resp->brokers[i].node_id = view.brokers[i].node_id;
		resp->brokers[i].host = view.brokers[i].host;
		resp->brokers[i].port = view.brokers[i].port;
		resp->brokers[i].rack = view.brokers[i].rack;
	}
	resp->cluster_id = pstrdup(kp_cluster_id());
	resp->controller_id = view.leader_id;
	resp->cluster_authorized_operations = req->include_cluster_authorized_operations ?
		kp_authz_operations(ctx, KP_ACL_RESOURCE_CLUSTER, KP_ACL_CLUSTER_NAME) : PG_INT32_MIN;

	/* v0: an empty list means all topics; v1+: null means all */
	all_topics = (req->n_topics < 0) || (ctx->version == 0 && req->n_topics == 0);

	if (all_topics)
	{
		char	  **names = NULL;
		int			n = 0;

		n = kp_topic_list_names(&names);
		resp->topics = palloc0(sizeof(KpMetadataResponseTopic) * Max(n, 1));
		resp->n_topics = 0;
		for (i = 0; i < n; i++)
		{
			const KpTopic *t = kp_handler_topic(names[i], NULL);

			if (t == NULL)
				continue;		/* deleted meanwhile */
			/* all topics: those the role may describe */
			if (!kp_authz_topic(ctx, t->name, t, KP_ACL_OP_DESCRIBE))
				continue;
			fill_topic_metadata(ctx, &resp->topics[resp->n_topics], t,
								req->include_topic_authorized_operations, &view);
			resp->n_topics++;
		}
		return;
	}

	/*
	 * Topic ids came in v10 but are served from v12: below it Kafka refuses a
	 * request that names a topic by id or gives a null name, and answers
	 * every listing INVALID_REQUEST with no broker (MetadataRequest's error
	 * answer)
	 */
	use_ids = false;
	for (i = 0; i < req->n_topics; i++)
	{
		KpMetadataRequestTopic *rt = &req->topics[i];

		if (ctx->version < 12 && (rt->name == NULL || !uuid_is_zero(&rt->topic_id)))
		{
			metadata_refuse_all(req, resp, KP_ERR_INVALID_REQUEST);
			return;
		}
		if (!uuid_is_zero(&rt->topic_id))
			use_ids = true;
	}

	/*
	 * Kafka answers each topic asked for once (it makes a set of the names,
	 * or of the ids): a repeated one is answered at its first listing.  A
	 * request that asks by id (any id not zero) is answered for its ids only:
	 * the names, of those listings (Java sends "") or others, are not read,
	 * as Kafka's KafkaApis.handleTopicMetadataRequest.
	 */
	keys = palloc(sizeof(char *) * Max(req->n_topics, 1));
	for (i = 0; i < req->n_topics; i++)
	{
		KpMetadataRequestTopic *rt = &req->topics[i];

		if (!use_ids)
			keys[i] = rt->name ? psprintf("n%s", rt->name) : pstrdup("z");
		else if (uuid_is_zero(&rt->topic_id))
			keys[i] = NULL;		/* a name among ids: not answered */
		else
		{
			keys[i] = palloc(33 + 1);
			keys[i][0] = 'i';
			hex_encode((const char *) rt->topic_id.b, 16, keys[i] + 1);
			keys[i][33] = '\0';
		}
	}
	(void) kp_mark_duplicates(keys, req->n_topics, &later);

	resp->n_topics = 0;
	resp->topics = palloc0(sizeof(KpMetadataResponseTopic) * Max(req->n_topics, 1));
	for (i = 0; i < req->n_topics; i++)
	{
		KpMetadataRequestTopic *rt = &req->topics[i];
		const char *name = use_ids ? NULL : rt->name;
		KpMetadataResponseTopic *out;
		const KpTopic *t;
		bool		create;

		if (keys[i] == NULL || later[i])
			continue;
		out = &resp->topics[resp->n_topics++];
		t = kp_handler_topic(name, &rt->topic_id);

		/*
		 * Auto-creation: a name not found, when allowed, never one of Kafka's
		 * internal topics (kp_topic_reserved: unknown, as no topic takes it)
		 */
		create = t == NULL && name && name[0] && allow_create && !kp_topic_reserved(name);
		out->topic_authorized_operations = PG_INT32_MIN;

		/*
		 * Kafka: a topic the role may not describe is
		 * TOPIC_AUTHORIZATION_FAILED whether or not it exists (asked by id:
		 * once the id is known); creating one needs CREATE on the cluster or
		 * the topic.
		 */
		if ((t != NULL || (name && name[0])) &&
			!kp_authz_topic(ctx, name, t, KP_ACL_OP_DESCRIBE))
		{
			out->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
			out->name = name ? pstrdup(name) : NULL;
			memcpy(out->topic_id.b, rt->topic_id.b, 16);
			continue;
		}
		if (create && !kp_authz_cluster(ctx, KP_ACL_OP_CREATE) &&
			!kp_authz_topic(ctx, name, NULL, KP_ACL_OP_CREATE))
		{
			out->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
			out->name = pstrdup(name);
			continue;
		}
		if (create && view.standby)
		{
			out->error_code = KP_ERR_LEADER_NOT_AVAILABLE;
			out->name = pstrdup(name);
			continue;
		}
		if (create)
		{
			AutoCreateArg arg = {name};
			char	   *msg;
			int16		code = kp_handler_try(auto_create_topic, &arg, &msg);

			if (code == KP_ERR_NONE || code == KP_ERR_TOPIC_ALREADY_EXISTS)
				t = kp_handler_topic(name, NULL);
			else
			{
				/*
				 * The creation lock taken (a SQL transaction that created a
				 * topic is open; the worker does not wait): as Kafka answers
				 * for a topic still being created, and the client asks again
				 */
				if (code == KP_ERR_REQUEST_TIMED_OUT)
					code = KP_ERR_LEADER_NOT_AVAILABLE;
				out->error_code = code;
				out->name = pstrdup(name);
				continue;
			}
		}
		if (t == NULL)
		{
			out->error_code = (name && name[0]) ? KP_ERR_UNKNOWN_TOPIC_OR_PARTITION :
				KP_ERR_UNKNOWN_TOPIC_ID;
			/* an unknown id: no name, as Kafka (Java asks with "") */
			out->name = name && out->error_code != KP_ERR_UNKNOWN_TOPIC_ID ? pstrdup(name) : NULL;
			memcpy(out->topic_id.b, rt->topic_id.b, 16);
			continue;
		}
		fill_topic_metadata(ctx, out, t, req->include_topic_authorized_operations, &view);
	}
}

/* ---------------------------------------------------------------------
 * InitProducerId (idempotent producers; transactional ids: handlers_txn.c)
 * ---------------------------------------------------------------------
 */

/*
 * Kafka's KafkaApis: a producer id and epoch (v3+) come together or not at
 * all (both -1); one without the other is INVALID_REQUEST, checked after the
 * authorization.
 */
bool
kp_init_producer_id_pair_valid(const KpInitProducerIdRequest *req)
{
	return (req->producer_id == -1) == (req->producer_epoch == -1);
}

void
kp_handle_init_producer_id(KpRequestContext *ctx)
{
	KpInitProducerIdRequest *req = ctx->request;
	KpInitProducerIdResponse *resp = ctx->response;

	resp->producer_id = -1;
	resp->producer_epoch = -1;
	if (req->transactional_id != NULL)
	{
		/* the transaction coordinator (handlers_txn.c) */
		kp_handle_init_producer_id_txn(ctx);
		return;
	}

	/*
	 * Kafka 3+ (KIP-679): IDEMPOTENT_WRITE on the cluster or WRITE on any
	 * topic
	 */
	if (!kp_authz_cluster(ctx, KP_ACL_OP_IDEMPOTENT_WRITE) &&
		!kp_authz_any(ctx, KP_ACL_RESOURCE_TOPIC, KP_ACL_OP_WRITE))
	{
		resp->error_code = KP_ERR_CLUSTER_AUTHORIZATION_FAILED;
		return;
	}
	if (!kp_init_producer_id_pair_valid(req))
	{
		resp->error_code = KP_ERR_INVALID_REQUEST;
		return;
	}

	/*
	 * As Kafka's coordinator: without a transactional id, always a new
	 * producer id at epoch 0, whatever id and epoch the producer gives (a
	 * producer resetting its sequences after KIP-360's UNKNOWN_PRODUCER_ID
	 * gives its own).  Until 2026-12-07 a given id came back with its epoch
	 * bumped: a client that sends 0 and 0 (platformatic/kafka) had every
	 * producer share id 0, whose sequences then collided, and any client
	 * could bump another producer's epoch.
	 *
	 * A hot standby writes nothing: an id from its own range (leader.c).
	 */
	resp->producer_id = RecoveryInProgress() ? kp_standby_producer_id() :
		kp_catalog_next_producer_id();
	resp->producer_epoch = 0;
	resp->error_code = KP_ERR_NONE;
}

/* ---------------------------------------------------------------------
 * DescribeCluster
 * ---------------------------------------------------------------------
 */

/* DescribeCluster's endpoint types (Kafka's EndpointType) */
#define ENDPOINT_BROKER		1
#define ENDPOINT_CONTROLLER 2

void
kp_handle_describe_cluster(KpRequestContext *ctx)
{
	KpDescribeClusterRequest *req = ctx->request;
	KpDescribeClusterResponse *resp = ctx->response;
	KpClusterView view;
	int			i;

	/*
	 * A broker's endpoint (v1+, KIP-919): a client that means to reach a
	 * controller (the Java admin client's bootstrap.controllers) or names no
	 * known endpoint type is told so, with no broker, as Kafka's broker tells
	 * it; kafka_pg has no controller endpoint.
	 */
	if (ctx->version >= 1 && req->endpoint_type != ENDPOINT_BROKER)
	{
		resp->error_code = req->endpoint_type == ENDPOINT_CONTROLLER ?
			KP_ERR_MISMATCHED_ENDPOINT_TYPE : KP_ERR_UNSUPPORTED_ENDPOINT_TYPE;
		resp->error_message = req->endpoint_type == ENDPOINT_CONTROLLER ?
			pstrdup("The request was sent to an endpoint of type BROKER, but we wanted an endpoint "
					"of type CONTROLLER") :
			psprintf("Unsupported endpoint type %d", req->endpoint_type);
		resp->endpoint_type = ENDPOINT_BROKER;
		resp->cluster_id = pstrdup("");
		resp->controller_id = -1;
		resp->cluster_authorized_operations = PG_INT32_MIN;
		return;
	}
	kp_cluster_view(&view);
	resp->error_code = KP_ERR_NONE;
	resp->endpoint_type = ENDPOINT_BROKER;
	resp->cluster_id = pstrdup(kp_cluster_id());
	resp->controller_id = view.leader_id;
	resp->n_brokers = view.n_brokers;
	resp->brokers = palloc0(sizeof(KpDescribeClusterResponseDescribeClusterBroker) *
							Max(view.n_brokers, 1));
	for (i = 0; i < view.n_brokers; i++)
	{
		resp->brokers[i].broker_id = view.brokers[i].node_id;
		resp->brokers[i].host = view.brokers[i].host;
		resp->brokers[i].port = view.brokers[i].port;
		resp->brokers[i].rack = view.brokers[i].rack;
	}
	resp->cluster_authorized_operations = req->include_cluster_authorized_operations ?
		kp_authz_operations(ctx, KP_ACL_RESOURCE_CLUSTER, KP_ACL_CLUSTER_NAME) : PG_INT32_MIN;
}
