/*-------------------------------------------------------------------------
 *
 * handlers_describe_partitions.c
 *	  DescribeTopicPartitions (KIP-966): topics and their partitions, paged
 *	  by a cursor.  Kafka 4.x's `kafka-topics --describe` and Admin's
 *	  describeTopics use it in place of Metadata.
 *
 * Paging is Kafka's (DescribeTopicPartitionsRequestHandler and
 * KRaftMetadataCache.describeTopicResponse): topics are walked in name
 * order from the cursor's topic (which must be among the requested topics,
 * if any are named) and partition; at most ResponsePartitionLimit
 * partitions (bounded to 1..2000, Kafka's max.request.partition.size.limit)
 * are returned; NextCursor names where the next page starts, or is null.
 * Unknown topics are answered only when named; asked for every topic, a
 * topic deleted meanwhile is skipped.
 *
 * A partition is reported as Metadata reports it: this node leads it at
 * leader epoch 0; its replicas and in-sync replicas are this node and the
 * standbys kafka.replica_nodes names (replicas.c); eligible leader replicas
 * (KIP-966) are empty.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "listener/handlers.h"
#include "listener/listener.h"

/* Kafka's max.request.partition.size.limit default */
#define KP_DESCRIBE_PARTITIONS_MAX	2000

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static void
check_topic_name(void *arg)
{
	kp_topic_check_name((const char *) arg);
}

/* Kafka's getErrorResponse: every requested topic gets the error. */
static void
answer_invalid_request(KpDescribeTopicPartitionsRequest *req,
					   KpDescribeTopicPartitionsResponse *resp)
{
	int			i;

	resp->n_topics = Max(req->n_topics, 0);
	resp->topics = palloc0(sizeof(KpDescribeTopicPartitionsResponseTopic) * Max(resp->n_topics, 1));
	for (i = 0; i < resp->n_topics; i++)
	{
		KpDescribeTopicPartitionsResponseTopic *out = &resp->topics[i];

		out->error_code = KP_ERR_INVALID_REQUEST;
		out->name = pstrdup(req->topics[i].name ? req->topics[i].name : "");
		out->is_internal = false;
		out->n_partitions = 0;
		out->topic_authorized_operations = PG_INT32_MIN;
	}
	resp->next_cursor = NULL;
}

static KpDescribeTopicPartitionsResponseCursor *
make_cursor(const char *topic, int32 partition)
{
	KpDescribeTopicPartitionsResponseCursor *c = palloc0(sizeof(*c));

	c->topic_name = pstrdup(topic);
	c->partition_index = partition;
	return c;
}

void
kp_handle_describe_topic_partitions(KpRequestContext *ctx)
{
	KpDescribeTopicPartitionsRequest *req = ctx->request;
	KpDescribeTopicPartitionsResponse *resp = ctx->response;
	bool		fetch_all = req->n_topics <= 0;
	const char *cursor_topic = req->cursor ? req->cursor->topic_name : "";
	char	  **names;
	int			n = 0;
	int			i;
	int64		remaining;
	KpClusterView view;
	KpReplicas	reps;

	kp_cluster_view(&view);		/* the leader's, on every server (leader.c) */
	reps = view.reps;
	if (cursor_topic == NULL)
		cursor_topic = "";

	/* the topics to walk: from the cursor's topic on, in name order */
	if (fetch_all)
	{
		char	  **all;
		int			n_all = kp_topic_list_names(&all);

		names = palloc(sizeof(char *) * Max(n_all, 1));
		for (i = 0; i < n_all; i++)
			if (strcmp(all[i], cursor_topic) >= 0)
				names[n++] = all[i];
	}
	else
	{
		bool		cursor_found = false;

		names = palloc(sizeof(char *) * req->n_topics);
		for (i = 0; i < req->n_topics; i++)
		{
			const char *name = req->topics[i].name ? req->topics[i].name : "";

			if (strcmp(name, cursor_topic) >= 0)
				names[n++] = (char *) name;
		}
		qsort(names, n, sizeof(char *), name_cmp);
		/* a name asked twice is answered once */
		if (n > 1)
		{
			int			k = 1;

			for (i = 1; i < n; i++)
				if (strcmp(names[i], names[k - 1]) != 0)
					names[k++] = names[i];
			n = k;
		}
		for (i = 0; i < n && req->cursor; i++)
			if (strcmp(names[i], cursor_topic) == 0)
				cursor_found = true;
		if (req->cursor && !cursor_found)
		{
			/* "topic list should contain the cursor topic" */
			answer_invalid_request(req, resp);
			return;
		}
	}
	if (req->cursor && req->cursor->partition_index < 0)
	{
		/* "cursor partition must be valid" */
		answer_invalid_request(req, resp);
		return;
	}

	remaining = Max(Min(KP_DESCRIBE_PARTITIONS_MAX, req->response_partition_limit), 1);
	resp->topics = palloc0(sizeof(KpDescribeTopicPartitionsResponseTopic) * Max(n, 1));
	resp->n_topics = 0;
	resp->next_cursor = NULL;
	for (i = 0; i < n; i++)
	{
		KpDescribeTopicPartitionsResponseTopic *out = &resp->topics[resp->n_topics];
		const KpTopic *t;
		int64		start;
		int64		upper;
		int32		partition_count;
		int64		p;

		if (remaining == 0)
		{
			/* the next page starts at this topic */
			resp->next_cursor = make_cursor(names[i], 0);
			break;
		}
		/* Kafka: all topics: those one may describe; named: refused */
		if (!kp_authz_topic(ctx, names[i], NULL, KP_ACL_OP_DESCRIBE))
		{
			if (fetch_all)
				continue;
			out->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
			out->name = pstrdup(names[i]);
			out->is_internal = false;
			out->n_partitions = 0;
			out->topic_authorized_operations = PG_INT32_MIN;
			resp->n_topics++;
			continue;
		}
		t = kp_handler_topic(names[i], NULL);
		if (t == NULL)
		{
			char	   *msg;

			if (fetch_all)
				continue;		/* deleted meanwhile */
			out->error_code = kp_handler_try(check_topic_name, names[i], &msg) == KP_ERR_NONE ?
				KP_ERR_UNKNOWN_TOPIC_OR_PARTITION : KP_ERR_INVALID_TOPIC_EXCEPTION;
			out->name = pstrdup(names[i]);
			out->is_internal = false;
			out->n_partitions = 0;
			out->topic_authorized_operations = KP_TOPIC_AUTHORIZED_OPERATIONS;
			resp->n_topics++;
			continue;
		}

		/* the topic is the cache's until the next catalog call: copy it now */
		partition_count = t->partition_count;
		out->error_code = KP_ERR_NONE;
		out->name = pstrdup(t->name);
		memcpy(out->topic_id.b, t->topic_uuid.data, 16);
		out->is_internal = false;	/* kafka_pg keeps no internal topics */
		out->topic_authorized_operations = kp_authz_operations(ctx, KP_ACL_RESOURCE_TOPIC, t->name);

		start = (req->cursor && strcmp(names[i], cursor_topic) == 0) ?
			req->cursor->partition_index : 0;
		upper = Min((int64) partition_count, start + remaining);
		out->n_partitions = 0;
		out->partitions = palloc0(sizeof(KpDescribeTopicPartitionsResponsePartition) *
								  Max(upper - start, 1));
		for (p = start; p < upper; p++)
		{
			KpDescribeTopicPartitionsResponsePartition *mp = &out->partitions[out->n_partitions++];

			mp->error_code = view.leader_id < 0 ? KP_ERR_LEADER_NOT_AVAILABLE : KP_ERR_NONE;
			mp->partition_index = (int32) p;
			mp->leader_id = view.leader_id;
			mp->leader_epoch = view.leader_epoch;
			mp->n_replica_nodes = reps.n_replicas;
			mp->replica_nodes = reps.replicas;
			mp->n_isr_nodes = reps.n_isr;
			mp->isr_nodes = reps.isr;
			mp->n_eligible_leader_replicas = 0;
			mp->n_last_known_elr = 0;
			mp->n_offline_replicas = reps.n_offline;
			mp->offline_replicas = reps.offline;
		}
		resp->n_topics++;
		if (upper < partition_count)
		{
			/* the page is full inside this topic */
			resp->next_cursor = make_cursor(names[i], (int32) upper);
			break;
		}
		remaining -= out->n_partitions;
	}
}
