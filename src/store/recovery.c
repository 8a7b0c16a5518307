/*-------------------------------------------------------------------------
 *
 * recovery.c
 *	  Rebuilding a partition's shared-memory state from the store.
 *
 * Nothing about a partition is kept outside the store: after a restart (or
 * an error in the middle of a change) the first access to the partition
 * rebuilds its KpPartitionState from the segment directory and the pages.
 *
 *	- The directory gives the segments and any raised log start offset
 *	  (DeleteRecords, logstart.c).
 *	- The last page's index entry of the last segment gives the batch to
 *	  start from; the tail is walked batch by batch checking lengths and
 *	  CRC-32C.  A batch torn by a crash between its WAL records (it was
 *	  never acknowledged: acknowledgement waits for the WAL flush of its last
 *	  record) is cut off, WAL-logged, and the server log says so; zero pages
 *	  past the last batch (an extension whose write the crash lost) go too.
 *	- The active segment's batch headers give the transactions open in it
 *	  (a transactional batch with no marker after it) and the recent
 *	  batches of idempotent producers.  SQL transactions among the open ones
 *	  are decided from the commit log at once; the resolver then writes
 *	  their markers.
 *
 * What recovery guarantees: the log end offset is one past the last whole,
 * CRC-valid batch; every acknowledged batch is kept; offsets continue from
 * there with no hole and no reuse.  Not recovered: transactions whose first
 * batch is in an older segment than the active one (docs/transactions.md,
 * Limits), and producer state older than the active segment.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"

#include "codec/codec.h"
#include "store/store_int.h"

/*
 * Walk the batches of a segment from stream position pos (whose batch must
 * start at expected_offset) to the end of its data.  Returns the position
 * just after the last whole, CRC-valid batch and sets *next_offset to the
 * offset after it.  Nothing is changed.
 */
static int64
walk_tail(Relation rel, int64 pos, int64 data_size, int64 expected_offset,
		  int64 *next_offset)
{
	char		hdrbuf[KP_BATCH_HEADER_SIZE];
	char	   *buf = NULL;
	size_t		bufcap = 0;

	while (pos < data_size)
	{
		KpBatchHeader hdr;
		size_t		total;

		if (data_size - pos < KP_BATCH_HEADER_SIZE ||
			!kp_segment_read(rel, pos, hdrbuf, KP_BATCH_HEADER_SIZE) ||
			kp_batch_parse_header(hdrbuf, KP_BATCH_HEADER_SIZE, &hdr) != KP_CODEC_OK ||
			hdr.base_offset != expected_offset)
			break;
		total = KpBatchTotalSize(&hdr);
		if ((int64) total > data_size - pos)
			break;
		if (total > bufcap)
		{
			bufcap = Max(total, 65536);
			buf = buf ? repalloc(buf, bufcap) : palloc(bufcap);
		}
		if (!kp_segment_read(rel, pos, buf, total) ||
			kp_batch_validate(buf, total, &hdr) != KP_CODEC_OK)
			break;
		pos += total;
		expected_offset = KpBatchLastOffset(&hdr) + 1;
	}
	if (buf)
		pfree(buf);
	*next_offset = expected_offset;
	return pos;
}

/*
 * Rebuild the transactions open in the active segment: transactional
 * batches whose producer has no marker after them.  SQL transactions among
 * them are decided from the commit log now; the resolver writes markers.
 */
static void
recover_open_txns(KpPartitionState *state, Relation rel, int64 data_size)
{
	char		hdrbuf[KP_BATCH_HEADER_SIZE];
	int64		pos = 0;
	int			i;

	state->ntxns = 0;
	while (pos < data_size)
	{
		KpBatchHeader hdr;

		if (!kp_segment_read(rel, pos, hdrbuf, KP_BATCH_HEADER_SIZE) ||
			kp_batch_parse_header(hdrbuf, KP_BATCH_HEADER_SIZE, &hdr) != KP_CODEC_OK)
			break;
		if (kp_producer_batch_is_idempotent(&hdr))
			kp_producer_note_batch(state, &hdr, hdr.base_offset);
		if (KpBatchIsTransactional(&hdr))
		{
			if (KpBatchIsControl(&hdr))
			{
				for (i = 0; i < state->ntxns; i++)
					if (state->txns[i].producer_id == hdr.producer_id)
					{
						kp_txnstate_remove(state, i);
						break;
					}
			}
			else if (state->ntxns < KP_MAX_OPEN_TXNS)
				kp_txnstate_add(state, hdr.producer_id, hdr.producer_epoch,
								hdr.base_offset);
		}
		pos += KpBatchTotalSize(&hdr);
	}

	for (i = 0; i < state->ntxns; i++)
	{
		if (KpPidIsSqlXact(state->txns[i].producer_id))
		{
			state->txns[i].outcome = kp_sql_xact_outcome(state->txns[i].producer_id);
			if (state->txns[i].outcome != KP_TXN_OPEN)
				state->has_decided = true;
		}
	}
}

/*
 * Rebuild state (whose key is set) from the store, cutting a torn tail.
 * Sets state->loaded.  The caller keeps anyone else from changing the
 * partition meanwhile (partition.c).
 */
void
kp_partition_recover(KpPartitionState *state)
{
	int64		partition_id = state->key.partition_id;
	int64		deleted_before = kp_directory_log_start(partition_id);	/* logstart.c */
	int			nsegs;
	const KpSegInfo *segs = kp_directory_segments(partition_id, &nsegs);
	int			i;

	state->ntxns = 0;
	state->has_decided = false;
	state->closed_bytes = 0;
	state->append_count = 0;
	kp_producer_reset(state);
	state->segment_count = nsegs;
	state->max_timestamp = -1;
	state->max_timestamp_offset = -1;
	memset(&state->config, 0, sizeof(KpLogConfig));

	if (nsegs == 0)
	{
		state->log_start_offset = 0;
		state->log_end_offset = 0;
		state->active_relnode = InvalidOid;
		state->active_base_offset = 0;
		state->active_size = 0;
		state->active_created_ms = 0;
	}
	else
	{
		KpSegInfo	last = segs[nsegs - 1];
		Relation	rel;
		KpSegmentMeta meta;
		int64		size;
		int64		start;
		int64		cover_offset;
		int64		end;
		int64		leo;

		/* DeleteRecords may have moved it into the first segment */
		state->log_start_offset = Max(segs[0].base_offset, deleted_before);
		for (i = 0; i < nsegs - 1; i++)
		{
			Relation	r = kp_segment_open(segs[i].relnode);

			state->closed_bytes += kp_segment_data_size(r);
			kp_segment_close(r);
		}

		rel = kp_segment_open(last.relnode);
		kp_segment_read_meta(rel, &meta);
		size = kp_segment_data_size(rel);

		/* the last page's cover batch, and the offset it must start with */
		start = kp_segment_seek_offset(rel, PG_INT64_MAX);
		cover_offset = meta.base_offset;
		if (size > 0)
		{
			char		hdrbuf[KP_BATCH_HEADER_SIZE];
			KpBatchHeader hdr;

			if (kp_segment_read(rel, start, hdrbuf, KP_BATCH_HEADER_SIZE) &&
				kp_batch_parse_header(hdrbuf, KP_BATCH_HEADER_SIZE, &hdr) == KP_CODEC_OK)
				cover_offset = hdr.base_offset;
			else
			{
				/* a torn header: trust the page index for its offset */
				start = 0;
			}
		}
		end = walk_tail(rel, start, size, start == 0 ? meta.base_offset : cover_offset, &leo);
		if (end < size)
		{
			if (!RecoveryInProgress())
			{
				kp_segment_truncate(rel, end);
				ereport(LOG,
						(errmsg("kafka_pg: cut the torn tail of partition %lld at offset %lld",
								(long long) partition_id, (long long) leo),
						 errdetail("Segment %u held %lld bytes after its last whole batch; they were never acknowledged.",
								   last.relnode, (long long) (size - end))));
			}
			size = end;
		}
		else if (!RecoveryInProgress() && kp_segment_has_excess_blocks(rel, end))
		{
			/* zero pages from an extension whose write a crash lost */
			kp_segment_truncate(rel, end);
			ereport(DEBUG1,
					(errmsg_internal("kafka_pg: removed empty pages after the last batch of partition %lld",
									 (long long) partition_id)));
		}

		state->log_end_offset = leo;
		state->active_relnode = last.relnode;
		state->active_base_offset = meta.base_offset;
		state->active_size = size;
		state->active_created_ms = meta.created_ms;
		state->max_timestamp = kp_segment_max_timestamp(rel);
		recover_open_txns(state, rel, size);
		kp_segment_close(rel);
	}
	kp_txnstate_compute_lso(state);
	state->loaded = true;
}
