/*-------------------------------------------------------------------------
 *
 * handlers_cluster.c
 *	  The cluster-management APIs, answered as a Kafka cluster of one node
 *	  answers them: ElectLeaders, AlterPartitionReassignments,
 *	  ListPartitionReassignments, DescribeQuorum, ListConfigResources and
 *	  UpdateFeatures.
 *
 * kafka_pg is one node (kafka.node_id) that leads every partition, is its
 * only replica and is the whole controller quorum.  A leader election is
 * never needed, no reassignment is ever in progress, and the only
 * assignment a partition can have is the one it has; the answers and error
 * messages below are those of Apache Kafka 4.4's KRaft controller
 * (ReplicationControlManager) on a single-node cluster, checked against
 * one (docs/compatibility.md).  Catalog reads go through src/catalog.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "datatype/timestamp.h"
#include "utils/timestamp.h"

#include "listener/handlers.h"
#include "listener/handlers_admin.h"
#include "listener/listener.h"
#include "txn/txn.h"

/* ElectionType (org.apache.kafka.common.ElectionType) */
#define ELECTION_PREFERRED		0
#define ELECTION_UNCLEAN		1

/* ConfigResource.Type */
#define RESOURCE_TOPIC			2
#define RESOURCE_BROKER			4
#define RESOURCE_BROKER_LOGGER	8
#define RESOURCE_CLIENT_METRICS	16
#define RESOURCE_GROUP			32

/* KRaft's metadata log, the only partition DescribeQuorum knows */
#define CLUSTER_METADATA_TOPIC	"__cluster_metadata"

/* The partition count of a topic, or -1 if there is no such topic. */
static int32
partition_count(const char *name)
{
	const KpTopic *t = name ? kp_handler_topic(name, NULL) : NULL;

	return t ? t->partition_count : -1;
}

/* ---------------------------------------------------------------------
 * ElectLeaders (KIP-183, KIP-460)
 * ---------------------------------------------------------------------
 */

void
kp_handle_elect_leaders(KpRequestContext *ctx)
{
	KpElectLeadersRequest *req = ctx->request;
	KpElectLeadersResponse *resp = ctx->response;
	int8		type = ctx->version >= 1 ? req->election_type : ELECTION_PREFERRED;
	bool		bad_type = type != ELECTION_PREFERRED && type != ELECTION_UNCLEAN;
	int			i;
	int			j;

	resp->error_code = KP_ERR_NONE;
	if (KP_CONTROLLER_DEADLINE_PASSED(req->timeout_ms))
	{
		/* every partition asked for (none for null), whatever the type */
		resp->error_code = KP_ERR_REQUEST_TIMED_OUT;
		resp->n_replica_election_results = Max(req->n_topic_partitions, 0);
		resp->replica_election_results =
			palloc0(sizeof(KpElectLeadersResponseReplicaElectionResult) *
					Max(req->n_topic_partitions, 1));
		for (i = 0; i < resp->n_replica_election_results; i++)
		{
			KpElectLeadersRequestTopicPartitions *rt = &req->topic_partitions[i];
			KpElectLeadersResponseReplicaElectionResult *out = &resp->replica_election_results[i];

			out->topic = pstrdup(rt->topic ? rt->topic : "");
			out->n_partition_result = Max(rt->n_partitions, 0);
			out->partition_result =
				palloc0(sizeof(KpElectLeadersResponsePartitionResult) * Max(rt->n_partitions, 1));
			for (j = 0; j < out->n_partition_result; j++)
			{
				out->partition_result[j].partition_id = rt->partitions[j];
				out->partition_result[j].error_code = KP_ERR_REQUEST_TIMED_OUT;
			}
		}
		return;
	}

	/*
	 * Asked for every partition (null), Kafka answers every topic, each with
	 * only the partitions whose election was needed: here none.
	 */
	if (req->n_topic_partitions < 0)
	{
		char	  **names;
		int			n;

		resp->n_replica_election_results = 0;
		if (bad_type)
		{
			resp->error_code = KP_ERR_INVALID_REQUEST;
			return;
		}
		n = kp_topic_list_names(&names);
		resp->replica_election_results =
			palloc0(sizeof(KpElectLeadersResponseReplicaElectionResult) * Max(n, 1));
		for (i = 0; i < n; i++)
		{
			resp->replica_election_results[i].topic = names[i];
			resp->replica_election_results[i].n_partition_result = 0;
		}
		resp->n_replica_election_results = n;
		return;
	}

	resp->n_replica_election_results = req->n_topic_partitions;
	resp->replica_election_results =
		palloc0(sizeof(KpElectLeadersResponseReplicaElectionResult) * Max(req->n_topic_partitions, 1));
	if (bad_type)
		resp->error_code = KP_ERR_INVALID_REQUEST;
	for (i = 0; i < req->n_topic_partitions; i++)
	{
		KpElectLeadersRequestTopicPartitions *rt = &req->topic_partitions[i];
		KpElectLeadersResponseReplicaElectionResult *out = &resp->replica_election_results[i];
		int32		count = bad_type ? 0 : partition_count(rt->topic);

		out->topic = pstrdup(rt->topic ? rt->topic : "");
		out->n_partition_result = Max(rt->n_partitions, 0);
		out->partition_result =
			palloc0(sizeof(KpElectLeadersResponsePartitionResult) * Max(rt->n_partitions, 1));
		for (j = 0; j < out->n_partition_result; j++)
		{
			KpElectLeadersResponsePartitionResult *pr = &out->partition_result[j];
			int32		p = rt->partitions[j];

			pr->partition_id = p;
			if (bad_type)
			{
				pr->error_code = KP_ERR_INVALID_REQUEST;
				pr->error_message = psprintf("Unknown election type %d", (int) type);
			}
			else if (count < 0)
			{
				pr->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
				pr->error_message = psprintf("No such topic as %s", out->topic);
			}
			else if (p < 0 || p >= count)
			{
				pr->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
				pr->error_message = psprintf("No such partition as %s-%d", out->topic, p);
			}
			else
			{
				/* the only replica already leads: both election types agree */
				pr->error_code = KP_ERR_ELECTION_NOT_NEEDED;
				pr->error_message = pstrdup("Leader election not needed for topic partition.");
			}
		}
	}
}

/* ---------------------------------------------------------------------
 * AlterPartitionReassignments, ListPartitionReassignments (KIP-455)
 * ---------------------------------------------------------------------
 */

static int
int32_cmp(const void *a, const void *b)
{
	int32		x = *(const int32 *) a;
	int32		y = *(const int32 *) b;

	return (x > y) - (x < y);
}

/*
 * Kafka's answer to one partition's target replicas (NULL message: the
 * reassignment is done, nothing to move).  The checks and their order are
 * ReplicationControlManager's: the topic, the partition, cancellation, then
 * validateManualPartitionAssignment over the sorted replica list.
 */
static int16
reassign_partition(const char *topic, int32 count, int32 partition,
				   const int32 *replicas, int n_replicas, char **message)
{
	int32	   *sorted;
	int			i;

	*message = NULL;
	if (count < 0)
	{
		*message = psprintf("Unable to find a topic named %s.", topic);
		return KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	if (partition < 0 || partition >= count)
	{
		*message = psprintf("Unable to find partition %s:%d.", topic, partition);
		return KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	if (n_replicas < 0)
	{
		/* a cancellation: Kafka's ApiError has no message */
		return KP_ERR_NO_REASSIGNMENT_IN_PROGRESS;
	}
	if (n_replicas == 0)
	{
		*message = pstrdup("The manual partition assignment includes an empty replica list.");
		return KP_ERR_INVALID_REPLICA_ASSIGNMENT;
	}
	sorted = palloc(sizeof(int32) * n_replicas);
	memcpy(sorted, replicas, sizeof(int32) * n_replicas);
	qsort(sorted, n_replicas, sizeof(int32), int32_cmp);
	for (i = 0; i < n_replicas; i++)
	{
		if (sorted[i] != kp_node_id)
		{
			*message = psprintf("The manual partition assignment includes broker %d, but no such broker is registered.",
								sorted[i]);
			return KP_ERR_INVALID_REPLICA_ASSIGNMENT;
		}
		if (i > 0 && sorted[i] == sorted[i - 1])
		{
			*message = psprintf("The manual partition assignment includes the broker %d more than once.",
								sorted[i]);
			return KP_ERR_INVALID_REPLICA_ASSIGNMENT;
		}
	}
	/* [this node]: the assignment the partition already has */
	return KP_ERR_NONE;
}

void
kp_handle_alter_partition_reassignments(KpRequestContext *ctx)
{
	KpAlterPartitionReassignmentsRequest *req = ctx->request;
	KpAlterPartitionReassignmentsResponse *resp = ctx->response;
	int			i;
	int			j;

	resp->error_code = KP_ERR_NONE;
	resp->error_message = NULL;
	resp->allow_replication_factor_change = req->allow_replication_factor_change;
	if (KP_CONTROLLER_DEADLINE_PASSED(req->timeout_ms))
		resp->error_code = KP_ERR_REQUEST_TIMED_OUT;
	resp->n_responses = Max(req->n_topics, 0);
	resp->responses = palloc0(sizeof(KpAlterPartitionReassignmentsResponseReassignableTopicResponse) *
							  Max(req->n_topics, 1));
	for (i = 0; i < resp->n_responses; i++)
	{
		KpAlterPartitionReassignmentsRequestReassignableTopic *rt = &req->topics[i];
		KpAlterPartitionReassignmentsResponseReassignableTopicResponse *out = &resp->responses[i];
		int32		count = partition_count(rt->name);

		out->name = pstrdup(rt->name ? rt->name : "");
		out->n_partitions = Max(rt->n_partitions, 0);
		out->partitions = palloc0(sizeof(KpAlterPartitionReassignmentsResponseReassignablePartitionResponse) *
								  Max(rt->n_partitions, 1));
		for (j = 0; j < out->n_partitions; j++)
		{
			KpAlterPartitionReassignmentsRequestReassignablePartition *rp = &rt->partitions[j];
			KpAlterPartitionReassignmentsResponseReassignablePartitionResponse *op = &out->partitions[j];

			op->partition_index = rp->partition_index;
			if (resp->error_code == KP_ERR_REQUEST_TIMED_OUT)
				op->error_code = KP_ERR_REQUEST_TIMED_OUT;
			else
				op->error_code = reassign_partition(out->name, count, rp->partition_index,
													rp->replicas, rp->n_replicas,
													&op->error_message);
		}
	}
}

void
kp_handle_list_partition_reassignments(KpRequestContext *ctx)
{
	KpListPartitionReassignmentsResponse *resp = ctx->response;

	/* none is ever in progress; Kafka skips unknown topics silently */
	resp->error_code = KP_ERR_NONE;
	resp->error_message = NULL;
	resp->n_topics = 0;
}

/* ---------------------------------------------------------------------
 * DescribeQuorum (KIP-595, KIP-853)
 * ---------------------------------------------------------------------
 */

static void
fill_voter(KpDescribeQuorumResponseReplicaState *v, int64 log_end_offset, int64 now_ms)
{
	v->replica_id = kp_node_id;
	memset(v->replica_directory_id.b, 0, 16);	/* as a static quorum reports */
	v->log_end_offset = log_end_offset;
	v->last_fetch_timestamp = now_ms;
	v->last_caught_up_timestamp = now_ms;
}

/*
 * This node is the whole controller quorum: its only voter and leader.  A
 * broker forwards DescribeQuorum to the controllers, so Kafka answers it
 * on the client listener too.  The quorum's log is PostgreSQL's WAL, which
 * carries the catalog: the high watermark and the voter's log end offset
 * are the WAL flush position, the leader epoch is the timeline (bumped by
 * every promotion, as issue 11 maps Kafka's leader epochs).  A hot standby
 * (which does not serve Kafka clients yet) would report its replay
 * position and timeline.
 */
void
kp_handle_describe_quorum(KpRequestContext *ctx)
{
	KpDescribeQuorumRequest *req = ctx->request;
	KpDescribeQuorumResponse *resp = ctx->response;
	KpDescribeQuorumResponseTopicData *topic;
	KpDescribeQuorumResponsePartitionData *part;
	KpDescribeQuorumResponseNode *node;
	int64		now_ms;
	int64		offset;
	TimeLineID	timeline;

	if (RecoveryInProgress())
		offset = (int64) GetXLogReplayRecPtr(&timeline);	/* a standby's replay */
	else
	{
		offset = (int64) GetFlushRecPtr(NULL);
		timeline = GetWALInsertionTimeLine();
	}

	/* Unix time in milliseconds, as Kafka's timestamps */
	now_ms = GetCurrentTimestamp() / 1000 +
		((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)) * SECS_PER_DAY * 1000;

	resp->error_code = KP_ERR_NONE;
	resp->error_message = pstrdup("");	/* v2: Kafka sends "", not null */
	resp->n_nodes = 0;

	/*
	 * KafkaRaftClient: exactly one topic, __cluster_metadata, with exactly
	 * partition 0; otherwise every partition asked for is
	 * UNKNOWN_TOPIC_OR_PARTITION (getPartitionLevelErrorResponse).
	 */
	if (req->n_topics != 1 || req->topics[0].topic_name == NULL ||
		strcmp(req->topics[0].topic_name, CLUSTER_METADATA_TOPIC) != 0 ||
		req->topics[0].n_partitions != 1 || req->topics[0].partitions[0].partition_index != 0)
	{
		int			i;
		int			j;

		resp->n_topics = Max(req->n_topics, 0);
		resp->topics = palloc0(sizeof(KpDescribeQuorumResponseTopicData) * Max(resp->n_topics, 1));
		for (i = 0; i < resp->n_topics; i++)
		{
			KpDescribeQuorumRequestTopicData *rt = &req->topics[i];

			topic = &resp->topics[i];
			topic->topic_name = pstrdup(rt->topic_name ? rt->topic_name : "");
			topic->n_partitions = Max(rt->n_partitions, 0);
			topic->partitions = palloc0(sizeof(KpDescribeQuorumResponsePartitionData) *
										Max(topic->n_partitions, 1));
			for (j = 0; j < topic->n_partitions; j++)
			{
				part = &topic->partitions[j];
				part->partition_index = rt->partitions[j].partition_index;
				part->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
				part->error_message = pstrdup("This server does not host this topic-partition.");
			}
		}
		return;
	}

	resp->n_topics = 1;
	resp->topics = topic = palloc0(sizeof(KpDescribeQuorumResponseTopicData));
	topic->topic_name = pstrdup(CLUSTER_METADATA_TOPIC);
	topic->n_partitions = 1;
	topic->partitions = part = palloc0(sizeof(KpDescribeQuorumResponsePartitionData));
	part->partition_index = 0;
	part->error_code = KP_ERR_NONE;
	part->error_message = NULL;
	part->leader_id = kp_node_id;
	part->leader_epoch = (int32) timeline;
	part->high_watermark = offset;
	part->n_current_voters = 1;
	part->current_voters = palloc0(sizeof(KpDescribeQuorumResponseReplicaState));
	fill_voter(&part->current_voters[0], offset, now_ms);
	part->n_observers = 0;

	/* v2 (KIP-853): the voters' endpoints; this node's is its listener */
	resp->n_nodes = 1;
	resp->nodes = node = palloc0(sizeof(KpDescribeQuorumResponseNode));
	node->node_id = kp_node_id;
	node->n_listeners = 1;
	node->listeners = palloc0(sizeof(KpDescribeQuorumResponseListener));
	node->listeners[0].name = pstrdup("PLAINTEXT");
	node->listeners[0].host = pstrdup(kp_advertised_host_name());
	node->listeners[0].port = (uint16) kp_advertised_port_number();
}

/* ---------------------------------------------------------------------
 * ListConfigResources (KIP-1142; v0 was ListClientMetricsResources)
 * ---------------------------------------------------------------------
 */

static void
add_resource(KpListConfigResourcesResponse *resp, int *cap, const char *name, int8 type)
{
	if (resp->n_config_resources == *cap)
	{
		*cap *= 2;
		resp->config_resources = repalloc(resp->config_resources,
										  sizeof(KpListConfigResourcesResponseConfigResource) * *cap);
	}
	resp->config_resources[resp->n_config_resources].resource_name = pstrdup(name);
	resp->config_resources[resp->n_config_resources].resource_type = type;
	resp->n_config_resources++;
}

/*
 * The resources DescribeConfigs can describe here, of the requested types
 * (none named: every type).  Kafka lists every topic, its broker and
 * broker logger, the groups that have dynamic configs and the
 * client-metrics subscriptions.  kafka_pg has no client-metrics
 * subscriptions (KIP-714) and no broker loggers (its logging is
 * PostgreSQL's), so it lists topics, the broker and the groups with
 * configs (kafka.group_configs); asking for a type Kafka does not know is
 * UNSUPPORTED_VERSION, as Kafka answers.
 */
void
kp_handle_list_config_resources(KpRequestContext *ctx)
{
	KpListConfigResourcesRequest *req = ctx->request;
	KpListConfigResourcesResponse *resp = ctx->response;
	bool		want_topics = true;
	bool		want_broker = true;
	bool		want_groups = true;
	int			cap = 16;
	int			i;

	resp->error_code = KP_ERR_NONE;
	resp->n_config_resources = 0;
	resp->config_resources = palloc0(sizeof(KpListConfigResourcesResponseConfigResource) * cap);

	/* v0 (ListClientMetricsResources) lists client-metrics resources only */
	if (ctx->version == 0)
		return;

	if (req->n_resource_types > 0)
	{
		want_topics = want_broker = want_groups = false;
		for (i = 0; i < req->n_resource_types; i++)
		{
			switch (req->resource_types[i])
			{
				case RESOURCE_TOPIC:
					want_topics = true;
					break;
				case RESOURCE_BROKER:
					want_broker = true;
					break;
				case RESOURCE_GROUP:
					want_groups = true;
					break;
				case RESOURCE_BROKER_LOGGER:
				case RESOURCE_CLIENT_METRICS:
					break;		/* none here */
				default:
					resp->error_code = KP_ERR_UNSUPPORTED_VERSION;
					return;
			}
		}
	}
	if (want_topics)
	{
		char	  **names;
		int			n = kp_topic_list_names(&names);

		for (i = 0; i < n; i++)
			add_resource(resp, &cap, names[i], RESOURCE_TOPIC);
	}
	/* as Kafka: the groups that have dynamic configs, not every group */
	if (want_groups)
	{
		char	  **ids;
		int			n = kp_cat_group_configs_groups(&ids);

		for (i = 0; i < n; i++)
			add_resource(resp, &cap, ids[i], RESOURCE_GROUP);
	}
	if (want_broker)
		add_resource(resp, &cap, psprintf("%d", kp_node_id), RESOURCE_BROKER);
}

/* ---------------------------------------------------------------------
 * UpdateFeatures (KIP-584)
 * ---------------------------------------------------------------------
 */

/*
 * kafka_pg's features (kp_features, handlers_core.c) are finalized at fixed
 * levels, so an update succeeds only where it changes nothing: a feature
 * set to the level it has (Kafka accepts that too, as a no-op).  Anything
 * else is refused as Kafka 4.4's controller (FeatureControlManager)
 * refuses an update it cannot make, checking each update in its order: the
 * upgrade type, a level below 0, then for a feature kafka_pg does not have
 * the deletion (level 0) of one not finalized or a level the controller
 * does not support, and for one of its features a level above what it
 * supports, or a change (kafka_pg's own words: Kafka would make it).  The
 * first refusal fails the whole request, at the top, in Kafka's words; its
 * v0-1 results list is then empty.  On success v0-1 list every update
 * NONE (message "NONE", as Kafka).  validate_only changes nothing either
 * way.  Answering, rather than closing the connection as for an API not
 * served, lets kafka-features and admin clients report what happened.
 */
static char *
update_refusal(KpRequestContext *ctx, const KpUpdateFeaturesRequestFeatureUpdateKey *u)
{
	const char *name = u->feature ? u->feature : "";
	int8		type = ctx->version >= 1 ? u->upgrade_type : (u->allow_downgrade ? 2 : 1);
	const KpFeature *f = NULL;
	int			i;

	for (i = 0; i < kp_nfeatures; i++)
		if (strcmp(name, kp_features[i].name) == 0)
			f = &kp_features[i];
	if (type < 1 || type > 3)
		return pstrdup("The controller does not support the given upgrade type.");
	if (u->max_version_level < 0)
		return pstrdup("A feature version cannot be less than 0.");
	if (f == NULL && u->max_version_level == 0)
		return psprintf("Feature %s not found.", name);
	if (f == NULL)
		return psprintf("Local controller %d does not support this feature.", kp_node_id);
	if (u->max_version_level > f->level)
		return psprintf("Local controller %d only supports versions 0-%d", kp_node_id, f->level);
	if (u->max_version_level != f->level)
		return psprintf("kafka_pg finalizes %s %d and does not change it.", name, f->level);
	return NULL;
}

void
kp_handle_update_features(KpRequestContext *ctx)
{
	KpUpdateFeaturesRequest *req = ctx->request;
	KpUpdateFeaturesResponse *resp = ctx->response;
	int			i;

	resp->error_code = KP_ERR_NONE;
	resp->error_message = NULL;
	resp->n_results = 0;
	for (i = 0; i < req->n_feature_updates; i++)
	{
		KpUpdateFeaturesRequestFeatureUpdateKey *u = &req->feature_updates[i];
		char	   *why = update_refusal(ctx, u);

		if (why != NULL)
		{
			resp->error_code = KP_ERR_INVALID_UPDATE_VERSION;
			resp->error_message =
				psprintf("The update failed for all features since the following feature had an error: "
						 "Invalid update version %d for feature %s. %s",
						 u->max_version_level, u->feature ? u->feature : "", why);
			return;
		}
	}
	if (ctx->version <= 1 && req->n_feature_updates > 0)
	{
		resp->results = palloc0(sizeof(KpUpdateFeaturesResponseUpdatableFeatureResult) *
								req->n_feature_updates);
		for (i = 0; i < req->n_feature_updates; i++)
		{
			resp->results[i].feature = pstrdup(req->feature_updates[i].feature ?
											   req->feature_updates[i].feature : "");
			resp->results[i].error_code = KP_ERR_NONE;
			/* Kafka's words: the error's message, which for none is "NONE" */
			resp->results[i].error_message = pstrdup("NONE");
		}
		resp->n_results = req->n_feature_updates;
	}
}
