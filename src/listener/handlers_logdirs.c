/*-------------------------------------------------------------------------
 *
 * handlers_logdirs.c
 *	  DescribeLogDirs and AlterReplicaLogDirs (KIP-113), answered as a Kafka
 *	  broker with one log directory answers them.
 *
 * kafka_pg's log directory is where the store keeps its segments: they are
 * relations of kafka.database, so their files live in that database's
 * directory, <data_directory>/base/<database oid> (or its tablespace's
 * directory).  That is the one log dir this broker reports, with the space
 * of the volume it is on (statvfs) and, per partition, the size of the
 * partition's segments as the store counts them (kafka.partition_status
 * size_bytes).  No partition is ever being moved, so offset lags are 0 and
 * there is no future log.
 *
 * kafka-log-dirs --describe, Admin.describeLogDirs and
 * describeReplicaLogDirs use DescribeLogDirs; kafka-reassign-partitions
 * with log dirs uses AlterReplicaLogDirs, which here can only "move" a
 * replica to the directory it is in (NONE, as Kafka answers for a no-op
 * move).  The answers are those of Apache Kafka 4.4's ReplicaManager on a
 * broker with one log dir, checked against one (test/clients/admin).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/statvfs.h>

#include "common/relpath.h"
#include "miscadmin.h"

#include "common/kafka_errors.h"
#include "listener/handlers.h"
#include "listener/handlers_admin.h"

/*
 * The absolute path of the log dir: the database's directory, where the
 * segment relations' files are.
 */
static char *
log_dir_path(void)
{
	char	   *rel = GetDatabasePath(MyDatabaseId, MyDatabaseTableSpace);

	if (is_absolute_path(rel))
		return rel;
	return psprintf("%s/%s", DataDir, rel);
}

/* ---------------------------------------------------------------------
 * DescribeLogDirs
 * ---------------------------------------------------------------------
 */

/*
 * One topic's entry: the asked partitions that exist (every partition for
 * n_asked < 0), in partition order.  Returns false for a topic that does
 * not exist, which Kafka leaves out.
 */
static bool
describe_topic(const char *name, const int32 *asked, int n_asked,
			   const KpStructDesc *pdesc,
			   KpDescribeLogDirsResponseDescribeLogDirsTopic *out)
{
	const KpTopic *t = kp_handler_topic(name, NULL);
	int32		count;
	int64	   *ids;
	int			p;

	if (t == NULL)
		return false;
	count = t->partition_count;
	ids = palloc(sizeof(int64) * Max(count, 1));
	memcpy(ids, t->partition_ids, sizeof(int64) * count);

	out->name = pstrdup(t->name);
	out->n_partitions = 0;
	out->partitions = new_array(pdesc, count);
	for (p = 0; p < count; p++)
	{
		KpDescribeLogDirsResponseDescribeLogDirsPartition *dp;
		KpLogOffsets off;
		bool		wanted = n_asked < 0;
		int			i;

		for (i = 0; i < n_asked && !wanted; i++)
			wanted = asked[i] == p;
		if (!wanted)
			continue;
		if (kp_handler_no_room(ids[p], NULL))
			continue;			/* no state to size it by: not listed, as a
								 * log Kafka cannot open */
		kp_log_offsets(ids[p], &off);
		dp = &out->partitions[out->n_partitions++];
		dp->partition_index = p;
		dp->partition_size = off.size_bytes;
		dp->offset_lag = 0;
		dp->is_future_key = false;
	}
	return true;
}

void
kp_handle_describe_log_dirs(KpRequestContext *ctx)
{
	KpDescribeLogDirsRequest *req = ctx->request;
	KpDescribeLogDirsResponse *resp = ctx->response;
	const KpStructDesc *rdesc = child_desc(ctx->api->response->root, "Results");
	const KpStructDesc *tdesc = child_desc(rdesc, "Topics");
	const KpStructDesc *pdesc = child_desc(tdesc, "Partitions");
	KpDescribeLogDirsResponseDescribeLogDirsResult *dir;
	char	   *path = log_dir_path();
	struct statvfs vfs;
	int			n = 0;
	int			i;

	resp->throttle_time_ms = 0;
	resp->error_code = KP_ERR_NONE;
	resp->n_results = 1;
	resp->results = new_array(rdesc, 1);
	dir = &resp->results[0];
	dir->error_code = KP_ERR_NONE;
	dir->log_dir = path;
	dir->is_cordoned = false;
	/* the volume's size and what an unprivileged writer may still use */
	if (statvfs(path, &vfs) == 0)
	{
		dir->total_bytes = (int64) vfs.f_blocks * (int64) vfs.f_frsize;
		dir->usable_bytes = (int64) vfs.f_bavail * (int64) vfs.f_frsize;
	}

	if (req->n_topics < 0)
	{
		/* null: every topic, every partition */
		char	  **names;
		int			count = kp_topic_list_names(&names);

		dir->topics = new_array(tdesc, count);
		for (i = 0; i < count; i++)
			if (describe_topic(names[i], NULL, -1, pdesc, &dir->topics[n]))
				n++;
	}
	else
	{
		dir->topics = new_array(tdesc, req->n_topics);
		for (i = 0; i < req->n_topics; i++)
		{
			KpDescribeLogDirsRequestDescribableLogDirTopic *rt = &req->topics[i];

			if (rt->topic == NULL || strlen(rt->topic) > KP_TOPIC_NAME_MAX)
				continue;
			/* a topic with no existing partition asked for is left out */
			if (describe_topic(rt->topic, rt->partitions, ArrayLen(rt->n_partitions),
							   pdesc, &dir->topics[n]) &&
				dir->topics[n].n_partitions > 0)
				n++;
		}
	}
	dir->n_topics = n;
}

/* ---------------------------------------------------------------------
 * AlterReplicaLogDirs
 * ---------------------------------------------------------------------
 */

/* One partition of the request, with the directory asked for it. */
typedef struct Move
{
	const char *topic;
	int32		partition;
	const char *path;
} Move;

void
kp_handle_alter_replica_log_dirs(KpRequestContext *ctx)
{
	KpAlterReplicaLogDirsRequest *req = ctx->request;
	KpAlterReplicaLogDirsResponse *resp = ctx->response;
	const KpStructDesc *tdesc = child_desc(ctx->api->response->root, "Results");
	const KpStructDesc *pdesc = child_desc(tdesc, "Partitions");
	char	   *path = log_dir_path();
	Move	   *moves;
	int			nmoves = 0;
	int			cap = 0;
	int			ntopics = 0;
	int			d;
	int			t;
	int			p;
	int			m;

	for (d = 0; d < ArrayLen(req->n_dirs); d++)
		for (t = 0; t < ArrayLen(req->dirs[d].n_topics); t++)
			cap += ArrayLen(req->dirs[d].topics[t].n_partitions);
	moves = palloc(sizeof(Move) * Max(cap, 1));

	/* a partition named under two dirs is moved to the last (Kafka's map) */
	for (d = 0; d < ArrayLen(req->n_dirs); d++)
	{
		KpAlterReplicaLogDirsRequestAlterReplicaLogDir *dir = &req->dirs[d];

		for (t = 0; t < ArrayLen(dir->n_topics); t++)
		{
			KpAlterReplicaLogDirsRequestAlterReplicaLogDirTopic *rt = &dir->topics[t];

			for (p = 0; p < ArrayLen(rt->n_partitions); p++)
			{
				const char *topic = rt->name ? rt->name : "";

				for (m = 0; m < nmoves; m++)
					if (moves[m].partition == rt->partitions[p] &&
						strcmp(moves[m].topic, topic) == 0)
						break;
				if (m == nmoves)
				{
					moves[m].topic = topic;
					moves[m].partition = rt->partitions[p];
					nmoves++;
				}
				moves[m].path = dir->path ? dir->path : "";
			}
		}
	}

	/* one result per topic, its partitions in the order they were named */
	resp->throttle_time_ms = 0;
	resp->results = new_array(tdesc, nmoves);
	for (m = 0; m < nmoves; m++)
	{
		KpAlterReplicaLogDirsResponseAlterReplicaLogDirTopicResult *tr = NULL;
		KpAlterReplicaLogDirsResponseAlterReplicaLogDirPartitionResult *pr;
		const KpTopic *topic;

		for (t = 0; t < ntopics && tr == NULL; t++)
			if (strcmp(resp->results[t].topic_name, moves[m].topic) == 0)
				tr = &resp->results[t];
		if (tr == NULL)
		{
			tr = &resp->results[ntopics++];
			tr->topic_name = pstrdup(moves[m].topic);
			tr->n_partitions = 0;
			tr->partitions = new_array(pdesc, nmoves);
		}
		pr = &tr->partitions[tr->n_partitions++];
		pr->partition_index = moves[m].partition;

		/*
		 * the directory is checked first: Kafka answers 57 even for an
		 * unknown partition
		 */
		if (strcmp(moves[m].path, path) != 0)
		{
			pr->error_code = KP_ERR_LOG_DIR_NOT_FOUND;
			continue;
		}
		topic = strlen(moves[m].topic) <= KP_TOPIC_NAME_MAX ?
			kp_handler_topic(moves[m].topic, NULL) : NULL;
		if (topic == NULL || moves[m].partition < 0 ||
			moves[m].partition >= topic->partition_count)
			pr->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
		else
			pr->error_code = KP_ERR_NONE;	/* already there */
	}
	resp->n_results = ntopics;
}
