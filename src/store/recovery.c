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
 *	- The batch headers from the active segment's first_open_offset (the
 *	  last stable offset when it was rolled, so possibly in an older
 *	  segment) to the end give the transactions still open (a
 *	  transactional batch with no marker after it); the active segment's
 *	  give the recent batches of idempotent producers.  When the active
 *	  segment's metapage holds a producer-state snapshot (prodsnap.c) that
 *	  this log can have, both start from it and only the batches after it
 *	  are walked.  SQL transactions among the open ones are decided from
 *	  the commit log at once; the resolver then writes their markers.
 *	- The active segment's aborted-transaction index (txnindex.c) is made
 *	  to agree with its ABORT markers: entries whose marker the cut
 *	  removed go, and a marker whose entry a crash lost (they are written
 *	  one after the other) gets it back.  Older segments' indexes are never
 *	  touched by a cut: only the active segment's tail can be torn.
 *
 * What recovery guarantees: the log end offset is one past the last whole,
 * CRC-valid batch; every acknowledged batch is kept; offsets continue from
 * there with no hole and no reuse; every transaction without a marker is
 * found again, whichever segment it began in, and no aborted range is
 * lost.  Not recovered: producer state older than the active segment
 * (unless a snapshot carried it).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"

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
 * The end of a segment's log: the offset after its last whole, CRC-valid
 * batch (base_offset if none), and in *end_pos the stream position after
 * it.  Walks from the cover batch of the last page (the page index), so a
 * few batches, not the segment; if that header is torn, from the start.
 * Nothing is changed.
 */
int64
kp_segment_find_end(Relation rel, int64 base_offset, int64 *end_pos)
{
	int64		size = kp_segment_data_size(rel);
	int64		start = kp_segment_seek_offset(rel, PG_INT64_MAX);
	int64		cover_offset = base_offset;
	int64		leo;

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
	*end_pos = walk_tail(rel, start, size, start == 0 ? base_offset : cover_offset, &leo);
	return leo;
}

/*
 * The segment and stream position where the walk for open transactions
 * starts: the batch holding the active segment's first_open_offset (the
 * last stable offset when it was rolled; every transaction still open at
 * the end began there or later).  A segment from before that field was
 * kept is walked from the first segment.
 */
static int
walk_start(const KpSegInfo *segs, int nsegs, bool from_first, int64 *start_offset)
{
	Relation	rel = kp_segment_open(segs[nsegs - 1].relnode);
	KpSegmentMeta meta;
	int			i;

	kp_segment_read_meta(rel, &meta);
	kp_segment_close(rel);
	if (from_first || !(meta.flags & KP_SEGMETA_HAS_FIRST_OPEN))
	{
		*start_offset = segs[0].base_offset;
		return 0;
	}
	*start_offset = meta.first_open_offset;
	for (i = nsegs - 1; i > 0; i--)
		if (segs[i].base_offset <= meta.first_open_offset)
			break;
	return i;
}

/* Remember an ABORT marker with its transaction. */
static void
note_abort(KpTxnIndexEntry **aborts, int *naborts, int *cap,
		   int64 producer_id, int64 first_offset, int64 marker_offset,
		   const KpPartitionState *state)
{
	int64		lso = marker_offset + 1;
	int			i;

	if (*naborts == *cap)
	{
		*cap = *cap ? *cap * 2 : 16;
		*aborts = *aborts ? repalloc(*aborts, *cap * sizeof(KpTxnIndexEntry)) :
			palloc(*cap * sizeof(KpTxnIndexEntry));
	}
	for (i = 0; i < state->ntxns; i++)
		lso = Min(lso, state->txns[i].first_offset);
	(*aborts)[*naborts].producer_id = producer_id;
	(*aborts)[*naborts].first_offset = first_offset;
	(*aborts)[*naborts].last_offset = marker_offset;
	(*aborts)[*naborts].last_stable_offset = lso;
	(*naborts)++;
}

bool		kp_debug_ignore_prodsnap = false;
uint64		kp_recovery_snapshots_used = 0;
uint64		kp_recovery_batches_walked = 0;

static KpSegBatchStatus
scan_decide(const KpBatchHeader *hdr, void *arg)
{
	return hdr->base_offset >= *(const int64 *) arg ? KP_SEGBATCH_STOP : KP_SEGBATCH_SKIP;
}

/*
 * Walk the batch headers of one segment from stream position pos to the
 * first batch at or past end_offset (or the end of the data), updating
 * state->txns, and with note_producers the idempotent producers; ABORT
 * markers of transactions it closes go to *aborts if not NULL.  Only
 * headers are read: a page holding several is pinned once, with no lseek
 * per batch (the block count is cached).
 */
static void
scan_segment(KpPartitionState *state, Relation rel, int64 pos, int64 end_offset,
			 bool note_producers, KpTxnIndexEntry **aborts, int *naborts, int *cap)
{
	BlockNumber nblocks = InvalidBlockNumber;
	Buffer		keep = InvalidBuffer;
	char		keybuf[KP_BATCH_HEADER_SIZE + 64];
	int			i;

	for (;;)
	{
		KpBatchHeader hdr;

		CHECK_FOR_INTERRUPTS();
		if (kp_segment_read_batch(rel, &nblocks, &keep, pos, scan_decide, &end_offset,
								  &hdr, NULL) != KP_SEGBATCH_SKIP)
			break;
		kp_recovery_batches_walked++;
		if (note_producers && kp_producer_batch_is_idempotent(&hdr))
			kp_producer_note_batch(state, &hdr, hdr.base_offset);
		if (KpBatchIsTransactional(&hdr) && KpBatchIsControl(&hdr))
		{
			for (i = 0; i < state->ntxns; i++)
				if (state->txns[i].producer_id == hdr.producer_id)
					break;
			if (i < state->ntxns)
			{
				KpOpenTxn	txn = state->txns[i];
				int16		type = -1;
				KpRecordIter it;
				KpRecord	rec;
				bool		done;
				size_t		total = KpBatchTotalSize(&hdr);

				kp_txnstate_remove(state, i);
				/* a marker of a bumped epoch moved the producer to it */
				if (note_producers && hdr.producer_epoch > txn.producer_epoch)
					kp_producer_note_bump(state, txn.producer_id, hdr.producer_epoch,
										  hdr.base_offset);
				/* which marker: its one record's key (a small batch) */
				if (aborts && total <= sizeof(keybuf) &&
					kp_segment_read_cached(rel, &nblocks, pos, keybuf, total) &&
					kp_record_iter_begin(&it, keybuf, total, 1024) == KP_CODEC_OK)
				{
					if (kp_record_iter_next(&it, &rec, &done) == KP_CODEC_OK && !done)
						(void) kp_parse_control_key(rec.key, rec.key_len, &type);
					kp_record_iter_end(&it);
				}
				if (type == KP_CONTROL_ABORT)
					note_abort(aborts, naborts, cap, txn.producer_id,
							   txn.first_offset, hdr.base_offset, state);
			}
		}
		else if (KpBatchIsTransactional(&hdr) && state->ntxns < KP_MAX_OPEN_TXNS)
			kp_txnstate_add(state, hdr.producer_id, hdr.producer_epoch,
							hdr.base_offset);
		pos += KpBatchTotalSize(&hdr);
	}
	if (BufferIsValid(keep))
		ReleaseBuffer(keep);
}

/*
 * Restore the producer-state snapshot (prodsnap.c) of the active segment
 * seg (rel) into state if it is one this log can have: taken in this
 * segment, at a position and offset that are a batch boundary of the log
 * as recovered (end_offset, end_pos: its end).  Sets *pos to the position
 * to walk from.  False (state untouched) otherwise.
 */
static bool
restore_snapshot(KpPartitionState *state, Relation rel, const KpSegInfo *seg,
				 int64 end_offset, int64 end_pos, int64 *pos)
{
	KpProducerSnapshot *snap = palloc(sizeof(KpProducerSnapshot));
	bool		ok;
	int			i;

	ok = kp_segment_read_prodsnap(rel, snap) &&
		snap->partition_id == state->key.partition_id &&
		snap->relnode == seg->relnode &&
		snap->pos >= 0 && snap->pos <= end_pos &&
		snap->offset >= seg->base_offset &&
		snap->offset <= end_offset &&
		snap->ntxns >= 0 && snap->ntxns <= KP_MAX_OPEN_TXNS;
	for (i = 0; ok && i < KP_MAX_PRODUCERS; i++)
		ok = snap->producers[i].nbatches >= 0 &&
			snap->producers[i].nbatches <= KP_PRODUCER_BATCHES;
	if (ok && snap->pos == end_pos)
		ok = snap->offset == end_offset;
	else if (ok)
	{
		char		hdrbuf[KP_BATCH_HEADER_SIZE];
		KpBatchHeader hdr;

		ok = kp_segment_read(rel, snap->pos, hdrbuf, KP_BATCH_HEADER_SIZE) &&
			kp_batch_parse_header(hdrbuf, KP_BATCH_HEADER_SIZE, &hdr) == KP_CODEC_OK &&
			hdr.base_offset == snap->offset;
	}
	if (ok)
	{
		state->ntxns = snap->ntxns;
		memcpy(state->txns, snap->txns, sizeof(KpOpenTxn) * snap->ntxns);
		memcpy(state->producers, snap->producers, sizeof(state->producers));
		*pos = snap->pos;
		state->snapshot_relnode = seg->relnode;
		state->snapshot_size = snap->pos;
	}
	pfree(snap);
	return ok;
}

void
kp_scan_open_txns(KpPartitionState *state, const KpSegInfo *segs, int nsegs,
				  int64 end_offset, int64 end_pos, bool from_first, bool note_producers,
				  KpTxnIndexEntry **aborts, int *naborts, int64 *first_open)
{
	int64		start_offset;
	int			seg;
	int			cap = 0;
	int			i;

	state->ntxns = 0;
	if (aborts)
	{
		*aborts = NULL;
		*naborts = 0;
	}
	if (nsegs == 0)
		return;

	/*
	 * From the active segment's producer-state snapshot if it has a usable
	 * one: it holds the transactions open at its offset, whichever segment
	 * they began in.  Not for a walk from the first segment (segments from
	 * before first_open_offset existed: recovery then walks them all).
	 */
	if (end_pos >= 0 && !from_first && !kp_debug_ignore_prodsnap)
	{
		Relation	rel = kp_segment_open(segs[nsegs - 1].relnode);
		int64		pos;
		bool		restored = restore_snapshot(state, rel, &segs[nsegs - 1],
												end_offset, end_pos, &pos);

		if (restored)
		{
			scan_segment(state, rel, pos, end_offset, note_producers,
						 aborts, naborts, &cap);
			kp_recovery_snapshots_used++;
		}
		kp_segment_close(rel);
		if (restored)
			return;
	}
	for (seg = walk_start(segs, nsegs, from_first, &start_offset); seg < nsegs; seg++)
	{
		Relation	rel = kp_segment_open(segs[seg].relnode);
		bool		last = (seg == nsegs - 1);
		int64		pos = 0;

		if (start_offset > segs[seg].base_offset)
			pos = kp_segment_seek_offset(rel, start_offset);
		if (first_open)
		{
			/* the last stable offset when this segment was rolled */
			first_open[seg] = segs[seg].base_offset;
			for (i = 0; i < state->ntxns; i++)
				first_open[seg] = Min(first_open[seg], state->txns[i].first_offset);
		}
		scan_segment(state, rel, pos, end_offset, last && note_producers,
					 aborts, naborts, &cap);
		kp_segment_close(rel);
	}
}

/*
 * Add to a segment's index the ABORT markers among aborts that lie in it
 * ([base, next_base)) and come after its last entry.
 */
static void
index_aborts(KpPartitionState *state, Relation segrel, int64 base, int64 next_base,
			 const KpTxnIndexEntry *aborts, int naborts)
{
	int			nentries;
	KpTxnIndexEntry *entries = kp_txnindex_read(segrel, &nentries);
	int64		last_indexed = nentries > 0 ? entries[nentries - 1].last_offset : -1;
	int			i;

	for (i = 0; i < naborts; i++)
	{
		if (aborts[i].last_offset < base || aborts[i].last_offset >= next_base ||
			aborts[i].last_offset <= last_indexed)
			continue;
		kp_txnindex_add(segrel, &aborts[i]);
		ereport(LOG,
				(errmsg("kafka_pg: restored the aborted-transaction index entry of producer %lld in partition %lld",
						(long long) aborts[i].producer_id,
						(long long) state->key.partition_id),
				 errdetail("Its ABORT marker at offset %lld had no entry.",
						   (long long) aborts[i].last_offset)));
	}
	if (entries)
		pfree(entries);
}

/*
 * Rebuild the transactions open at the end of the log, from every segment
 * that can hold one, and the aborted-transaction indexes where a marker
 * may lack its entry: the active segment's (entries whose marker the cut
 * removed go, and an ABORT marker a crash left without its entry gets it),
 * and those of segments written before the index existed (no
 * first_open_offset in their metapage): the whole log is walked once, and
 * they get their entries and first_open_offset.  SQL transactions still
 * open are decided from the commit log now; the resolver writes their
 * markers.
 */
static void
recover_open_txns(KpPartitionState *state, const KpSegInfo *segs, int nsegs,
				  Relation active)
{
	KpTxnIndexEntry *aborts;
	int			naborts;
	int64	   *first_open = palloc(sizeof(int64) * nsegs);
	bool	   *legacy = palloc0(sizeof(bool) * nsegs);
	bool		any_legacy = false;
	int			i;

	for (i = 0; i < nsegs; i++)
	{
		Relation	rel = kp_segment_open(segs[i].relnode);
		KpSegmentMeta meta;

		kp_segment_read_meta(rel, &meta);
		kp_segment_close(rel);
		legacy[i] = !(meta.flags & KP_SEGMETA_HAS_FIRST_OPEN);
		any_legacy |= legacy[i];
	}

	/*
	 * From the snapshot, aborts holds only the markers after it: those below
	 * it have their index entries (prodsnap.c).
	 */
	kp_scan_open_txns(state, segs, nsegs, state->log_end_offset, state->active_size,
					  any_legacy, true, &aborts, &naborts, first_open);
	if (!RecoveryInProgress())
	{
		kp_txnindex_truncate(active, state->log_end_offset);
		for (i = 0; i < nsegs; i++)
		{
			bool		last = (i == nsegs - 1);
			Relation	rel;

			if (!legacy[i] && !last)
				continue;
			rel = last ? active : kp_segment_open(segs[i].relnode);
			index_aborts(state, rel, segs[i].base_offset,
						 last ? PG_INT64_MAX : segs[i + 1].base_offset,
						 aborts, naborts);
			if (legacy[i])
			{
				KpSegmentMeta meta;

				kp_segment_read_meta(rel, &meta);
				meta.first_open_offset = first_open[i];
				meta.flags |= KP_SEGMETA_HAS_FIRST_OPEN;
				kp_segment_write_meta(rel, &meta);
			}
			if (!last)
				kp_segment_close(rel);
		}
	}
	if (aborts)
		pfree(aborts);
	pfree(first_open);
	pfree(legacy);

	for (i = 0; i < state->ntxns; i++)
	{
		if (KpPidIsSqlXact(state->txns[i].producer_id))
		{
			state->txns[i].outcome = kp_txnstate_sql_outcome(state->txns[i].producer_id);
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
	const KpSegInfo *dsegs = kp_directory_segments(partition_id, &nsegs);
	KpSegInfo  *segs = NULL;
	int			i;

	/* the directory's array lasts until its next call: a copy */
	if (nsegs > 0)
	{
		segs = palloc(sizeof(KpSegInfo) * nsegs);
		memcpy(segs, dsegs, sizeof(KpSegInfo) * nsegs);
	}
	state->ntxns = 0;
	state->has_decided = false;
	state->closed_bytes = 0;
	state->append_count = 0;
	kp_producer_reset(state);
	state->segment_count = nsegs;
	state->max_timestamp = -1;
	state->max_timestamp_offset = -1;
	memset(&state->config, 0, sizeof(KpLogConfig));
	state->snapshot_relnode = InvalidOid;
	state->snapshot_size = 0;

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
		leo = kp_segment_find_end(rel, meta.base_offset, &end);
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
		recover_open_txns(state, segs, nsegs, rel);
		kp_segment_close(rel);
	}
	if (segs)
		pfree(segs);
	kp_txnstate_compute_lso(state);
	state->loaded = true;
}
