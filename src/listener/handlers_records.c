/*-------------------------------------------------------------------------
 *
 * handlers_records.c
 *	  The admin APIs on a partition's records: DeleteRecords (the log start
 *	  offset moves, src/store/logstart.c) and OffsetForLeaderEpoch (the end
 *	  offset of a leader epoch, from the epochs stamped in the log).
 *
 * See handlers_admin.h for what the admin handlers share and how they
 * report per-resource errors and validate_only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
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

/*
 * As Kafka 4.4's broker, which keys DeleteRecords by partition: a topic
 * listed twice is answered in one entry, a partition listed twice once, at
 * the offset of its last listing, and a topic listed with no partitions not
 * at all (test/clients/admin/wire_offsets.py).
 */
void
kp_handle_delete_records(KpRequestContext *ctx)
{
	KpDeleteRecordsRequest *req = ctx->request;
	KpDeleteRecordsResponse *resp = ctx->response;
	const KpStructDesc *tdesc = child_desc(ctx->api->response->root, "Topics");
	const KpStructDesc *pdesc = child_desc(tdesc, "Partitions");
	int			n = ArrayLen(req->n_topics);
	char	  **names = palloc(sizeof(char *) * Max(n, 1));
	int		   *counts = palloc(sizeof(int) * Max(n, 1));
	int32	   *partitions;
	int64	   *offsets;
	KpPartitionKeys keys;
	int			n_keys = 0;
	int			i;

	/* the topics' locks first, without waiting (kp_handler_lock_topics) */
	for (i = 0; i < n; i++)
	{
		names[i] = req->topics[i].name;
		counts[i] = ArrayLen(req->topics[i].n_partitions);
		n_keys += counts[i];
	}
	if (kp_handler_lock_topics(ctx, names, n, req->timeout_ms))
		return;

	partitions = palloc(sizeof(int32) * Max(n_keys, 1));
	offsets = palloc(sizeof(int64) * Max(n_keys, 1));
	n_keys = 0;
	for (i = 0; i < n; i++)
	{
		int			j;

		for (j = 0; j < counts[i]; j++)
		{
			partitions[n_keys] = req->topics[i].partitions[j].partition_index;
			offsets[n_keys++] = req->topics[i].partitions[j].offset;
		}
	}
	kp_partition_keys(names, counts, n, partitions, &keys);

	resp->throttle_time_ms = 0;
	resp->n_topics = 0;
	resp->topics = new_array(tdesc, n);
	for (i = 0; i < n; i++)
	{
		KpDeleteRecordsResponseDeleteRecordsTopicResult *out = &resp->topics[resp->n_topics];
		const KpTopic *t;
		bool		allowed;
		int32		npart = -1;
		int64	   *part_ids = NULL;
		int			np = 0;
		int			l;

		if (keys.topic_later[i])
			continue;			/* answered with its first listing */
		for (l = i; l >= 0; l = keys.next_topic[l])
			np += counts[l];
		out->name = pstrdup(names[i] ? names[i] : "");
		out->n_partitions = 0;
		out->partitions = new_array(pdesc, np);
		t = kp_handler_topic(out->name, NULL);
		allowed = kp_authz_topic(ctx, out->name, NULL, KP_ACL_OP_DELETE);
		if (t != NULL)
		{
			/* copied: the topic cache may be rebuilt under the calls below */
			npart = t->partition_count;
			part_ids = palloc(sizeof(int64) * Max(npart, 1));
			memcpy(part_ids, t->partition_ids, sizeof(int64) * npart);
		}
		for (l = i; l >= 0; l = keys.next_topic[l])
		{
			int			k;

			for (k = keys.first[l]; k < keys.first[l + 1]; k++)
			{
				KpDeleteRecordsResponseDeleteRecordsPartitionResult *po;
				DeleteRecordsArg arg;
				int			last = k;

				if (keys.later[k])
					continue;
				while (keys.next[last] >= 0)
					last = keys.next[last];
				po = &out->partitions[out->n_partitions++];
				po->partition_index = partitions[k];
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
				if (po->partition_index >= 0 && po->partition_index < npart &&
					kp_handler_no_room(part_ids[po->partition_index], NULL))
				{
					po->error_code = KP_ERR_KAFKA_STORAGE_ERROR;
					continue;
				}
				arg.topic = out->name;
				arg.partition = partitions[k];
				arg.offset = offsets[last]; /* Kafka: the last listing's */
				arg.low_watermark = -1;
				po->error_code = kp_handler_try(delete_records_fn, &arg, NULL);
				if (po->error_code == KP_ERR_NONE)
					po->low_watermark = arg.low_watermark;
			}
		}
		if (out->n_partitions > 0)
			resp->n_topics++;	/* no partitions: no entry */
	}
}

/* ---------------------------------------------------------------------
 * OffsetForLeaderEpoch
 * ---------------------------------------------------------------------
 */

/*
 * The end offset of leader epoch epoch, as Kafka's
 * LeaderEpochFileCache.endOffsetFor answers it, the log being the map from
 * epochs to offsets (every batch is stamped with the epoch it was appended
 * in; src/store/reader.c): the current epoch ends at the log end offset;
 * an older one where the first batch of a later epoch starts, answered
 * with the latest epoch at or before it that has batches there (the
 * epoch asked, when it has none before that offset); a negative epoch, or
 * one later than current, has no answer (false, -1/-1).
 *
 * *final says whether the answer holds for the whole log: always on the
 * primary; on a hot standby, whose log is a prefix of the primary's, only
 * when a batch of a later epoch has been replayed (an end below the
 * replayed log end): otherwise the end is still being written on the
 * primary, and a consumer that compared its position with this standby's
 * replayed end would take the lag for a truncation.  An epoch later than
 * the standby's may be the primary's: not final either.
 */
bool
kp_epoch_end_offset(int64 partition_id, int32 epoch, int32 current, const KpLogOffsets *off,
					int32 *end_epoch, int64 *end_offset, bool *final)
{
	bool		standby = RecoveryInProgress();

	*end_epoch = -1;
	*end_offset = -1;
	*final = true;
	if (epoch < 0)
		return false;
	if (epoch > current)
	{
		*final = !standby;
		return false;
	}
	*end_epoch = epoch;
	if (epoch == current)
	{
		*end_offset = off->log_end_offset;
		*final = !standby;
		return true;
	}
	*end_offset = kp_log_epoch_end_offset(partition_id, epoch, off->log_end_offset);
	if (*end_offset > off->log_start_offset)
		*end_epoch = Min(kp_log_epoch_at(partition_id, *end_offset - 1, epoch), epoch);
	if (standby && *end_offset >= off->log_end_offset)
		*final = false;
	return true;
}

typedef struct EndOffsetArg
{
	int64		partition_id;
	int32		epoch;			/* the epoch asked about */
	int32		current;		/* ours */
	int32		end_epoch;		/* out */
	int64		end_offset;		/* out */
	bool		found;			/* out */
	bool		final;			/* out */
} EndOffsetArg;

static void
end_offset_fn(void *varg)
{
	EndOffsetArg *arg = varg;
	KpLogOffsets off;

	kp_log_offsets(arg->partition_id, &off);
	arg->found = kp_epoch_end_offset(arg->partition_id, arg->epoch, arg->current, &off,
									 &arg->end_epoch, &arg->end_offset, &arg->final);
}

/*
 * The end offset of a leader epoch (KIP-101/KIP-320; kp_epoch_end_offset).
 * A client whose current leader epoch is older than ours is
 * FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH, as Kafka's leader
 * answers.  On a hot standby (a consumer's or a tool's request: a
 * replica's is refused before it gets here, leader.c) the answers that
 * hold for the whole log are given and the others, which only the leader
 * knows, are NOT_LEADER_OR_FOLLOWER; Kafka answers none on a follower, and
 * its consumers ask the leader (docs/replication.md).
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
			if (kp_handler_no_room(part_ids[rp->partition], NULL))
			{
				po->error_code = KP_ERR_KAFKA_STORAGE_ERROR;
				continue;
			}
			arg.partition_id = part_ids[rp->partition];
			arg.epoch = rp->leader_epoch;
			arg.current = epoch;
			po->error_code = kp_handler_try(end_offset_fn, &arg, NULL);
			if (po->error_code != KP_ERR_NONE)
				continue;
			if (!arg.final)
				po->error_code = KP_ERR_NOT_LEADER_OR_FOLLOWER;
			else if (arg.found)
			{
				po->leader_epoch = arg.end_epoch;
				po->end_offset = arg.end_offset;
			}
		}
	}
}
