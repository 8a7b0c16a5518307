/*-------------------------------------------------------------------------
 *
 * handlers_records.c
 *	  The admin APIs on a partition's records: DeleteRecords (the log start
 *	  offset moves, src/store/logstart.c) and OffsetForLeaderEpoch (one
 *	  node, one leader epoch).
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
#include "store/store.h"

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
	(void) kp_topic_check_delete_records(t, true, NULL);
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
		bool		allowed;
		int			p;

		out->name = pstrdup(rt->name ? rt->name : "");
		out->n_partitions = np;
		out->partitions = new_array(pdesc, np);
		t = kp_handler_topic(out->name, NULL);
		allowed = kp_authz_topic(ctx, out->name, NULL, KP_ACL_OP_DELETE);
		for (p = 0; p < np; p++)
		{
			KpDeleteRecordsResponseDeleteRecordsPartitionResult *po = &out->partitions[p];
			DeleteRecordsArg arg;

			po->partition_index = rt->partitions[p].partition_index;
			po->low_watermark = -1;
			if (!allowed)
			{
				po->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}
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
	int32		epoch;			/* the epoch asked about */
	int32		current;		/* ours */
	int64		end_offset;		/* out */
} EndOffsetArg;

static void
end_offset_fn(void *varg)
{
	EndOffsetArg *arg = varg;
	KpLogOffsets off;

	kp_log_offsets(arg->partition_id, &off);
	arg->end_offset = arg->epoch == arg->current ? off.log_end_offset :
		kp_log_epoch_end_offset(arg->partition_id, arg->epoch, off.log_end_offset);
}

/*
 * The end offset of a leader epoch (KIP-101/KIP-320): the current epoch
 * (the primary's timeline less one) ends at the log end offset; an older
 * one where the first batch stamped with a later epoch starts (the batches
 * are stamped when appended: the store's leader-epoch map is the log
 * itself, src/store/reader.c).  A client whose current leader epoch is
 * older than ours is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH, as
 * Kafka's leader answers; an epoch newer than ours has no end offset
 * (-1/-1, as Kafka's LeaderEpochFileCache).  Only the leader answers: a
 * hot standby refuses it before it gets here (leader.c).
 */
void
kp_handle_offset_for_leader_epoch(KpRequestContext *ctx)
{
	KpOffsetForLeaderEpochRequest *req = ctx->request;
	KpOffsetForLeaderEpochResponse *resp = ctx->response;
	const KpStructDesc *tdesc = child_desc(ctx->api->response->root, "Topics");
	const KpStructDesc *pdesc = child_desc(tdesc, "Partitions");
	int			n = ArrayLen(req->n_topics);
	int32		epoch = kp_leader_epoch();
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
		bool		allowed;
		int32		npart = -1;
		int64	   *part_ids = NULL;
		int			p;

		out->topic = pstrdup(rt->topic ? rt->topic : "");
		out->n_partitions = np;
		out->partitions = new_array(pdesc, np);
		t = kp_handler_topic(out->topic, NULL);
		allowed = kp_authz_topic(ctx, out->topic, NULL, KP_ACL_OP_DESCRIBE);
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
			if (!allowed)
			{
				po->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}
			if (rp->partition < 0 || rp->partition >= npart)
			{
				po->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
				continue;
			}
			if (rp->current_leader_epoch >= 0 && rp->current_leader_epoch != epoch)
			{
				po->error_code = rp->current_leader_epoch < epoch ?
					KP_ERR_FENCED_LEADER_EPOCH : KP_ERR_UNKNOWN_LEADER_EPOCH;
				continue;
			}
			if (rp->leader_epoch < 0 || rp->leader_epoch > epoch)
				continue;		/* UNDEFINED_EPOCH, or later than ours: no
								 * answer */
			arg.partition_id = part_ids[rp->partition];
			arg.epoch = rp->leader_epoch;
			arg.current = epoch;
			po->error_code = kp_handler_try(end_offset_fn, &arg, NULL);
			if (po->error_code == KP_ERR_NONE)
			{
				po->leader_epoch = rp->leader_epoch;
				po->end_offset = arg.end_offset;
			}
		}
	}
}
