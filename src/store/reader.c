/*-------------------------------------------------------------------------
 *
 * reader.c
 *	  Reading a partition: batches from an offset, offsets by timestamp,
 *	  and the partition's offsets.
 *
 * On a primary, readers are bounded by the high watermark in shared memory
 * (partition.c), so they never see a batch that is still being written.
 * On a hot standby there is no such state (it would not follow replay):
 * readers go by the pages alone and stop at the first batch that is not
 * whole and CRC-valid, i.e. at the end of what has been replayed.
 *
 * Nothing below the log start offset is ever returned (DeleteRecords may
 * have put it inside a segment that still exists, logstart.c): a reader
 * asked for an earlier offset starts at the log start.  Callers that must
 * refuse such an offset (Fetch: OFFSET_OUT_OF_RANGE) check it against
 * kp_log_offsets first, as they do for offsets past the log end.
 *
 * read_committed
 * --------------
 * What a read_committed consumer (KIP-98) is given, batch by batch in
 * offset order from the batch that holds the fetch offset:
 *
 *	1. A control batch (COMMIT/ABORT marker) is never shown; the consumer's
 *	   position moves past it.
 *	2. A data batch of a SQL transaction (KP_SQL_PID_FLAG) is decided by the
 *	   commit log, asked once per run of that transaction's batches
 *	   (kp_sql_xact_outcome, src/txn's kp_txn_sql_visibility):
 *	   - in progress, or the reader's own transaction: STOP.  Nothing at or
 *	     after it is returned, so the reader never skips past a transaction
 *	     that may still commit (this is the last stable offset as the
 *	     commit log sees it, which a committed session reaches before its
 *	     marker is written);
 *	   - aborted: not shown.  SQL fetch skips the batch and moves the
 *	     position past it; wire Fetch returns it and lists the transaction
 *	     (producer id, first offset) in aborted_transactions, and the client
 *	     drops it, as Kafka's clients do up to the ABORT marker;
 *	   - committed: shown.
 *	3. Any other transactional batch at or past the partition's last stable
 *	   offset: STOP.
 *	4. Everything else below the high watermark is shown.
 *
 * Wire Fetch bounds every read_committed fetch by the last stable offset
 * (Fetch's own rule), so for it rule 2 never meets a transaction in
 * progress: one without a marker holds the LSO.
 *
 * Where it is applied today: kp_sql_emit_records (src/sqlapi/fetch.c) and
 * fetch_partition (src/listener/handlers_core.c), each on top of
 * kp_log_reader_next, which knows only the high watermark.  Issue 8 moves it
 * here, as one cursor opened with an isolation level that yields batches
 * and the aborted ranges covering them, decided by the store's
 * aborted-transaction index instead of the commit log wherever a marker
 * exists (src/txn/README: the commit-log horizon defect).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"

#include "codec/codec.h"
#include "store/store_int.h"

struct KpLogReader
{
	int64		partition_id;
	int64		from_offset;
	int64		high_watermark; /* -1: unknown (standby), validate instead */
	int			nsegs;
	KpSegInfo  *segs;			/* a private copy */
	int			seg;			/* current segment index */
	Relation	rel;			/* open segment, or NULL */
	int64		pos;			/* stream position in it */
	char	   *buf;
	size_t		bufcap;
};

static void
reader_load_segments(KpLogReader *r)
{
	int			n;
	const KpSegInfo *segs = kp_directory_segments(r->partition_id, &n);

	if (r->segs)
		pfree(r->segs);
	r->segs = NULL;
	r->nsegs = n;
	if (n > 0)
	{
		r->segs = palloc(n * sizeof(KpSegInfo));
		memcpy(r->segs, segs, n * sizeof(KpSegInfo));
	}
}

static void
reader_open_segment(KpLogReader *r, int seg, int64 offset)
{
	if (r->rel)
		kp_segment_close(r->rel);
	r->seg = seg;
	r->rel = kp_segment_open(r->segs[seg].relnode);
	r->pos = offset <= r->segs[seg].base_offset ? 0 :
		kp_segment_seek_offset(r->rel, offset);
}

/*
 * The log start offset on a standby, where there is no partition state:
 * the first segment's base offset, or a larger one that DeleteRecords
 * recorded in the directory.
 */
static int64
standby_log_start(int64 partition_id)
{
	int64		recorded = kp_directory_log_start(partition_id);
	int			nsegs;
	const KpSegInfo *segs = kp_directory_segments(partition_id, &nsegs);

	return Max(nsegs > 0 ? segs[0].base_offset : 0, recorded);
}

/* with_floor: start no lower than the log start offset */
static KpLogReader *
reader_open(int64 partition_id, int64 from_offset, bool with_floor)
{
	KpLogReader *r = palloc0(sizeof(KpLogReader));
	int64		log_start;
	int			i;

	r->partition_id = partition_id;
	r->high_watermark = -1;
	if (!RecoveryInProgress())
	{
		KpLogOffsets off;

		kp_partition_offsets(partition_id, &off);
		r->high_watermark = off.log_end_offset;
		log_start = off.log_start_offset;
	}
	else
		log_start = standby_log_start(partition_id);
	r->from_offset = with_floor ? Max(from_offset, log_start) : from_offset;
	from_offset = r->from_offset;
	reader_load_segments(r);
	r->seg = -1;
	if (r->nsegs == 0)
		return r;
	for (i = r->nsegs - 1; i > 0; i--)
		if (r->segs[i].base_offset <= from_offset)
			break;
	reader_open_segment(r, i, from_offset);
	return r;
}

KpLogReader *
kp_log_reader_open(int64 partition_id, int64 from_offset)
{
	return reader_open(partition_id, from_offset, true);
}

/* Read len bytes at the reader's position into its buffer. */
static bool
reader_read(KpLogReader *r, size_t len)
{
	if (len > r->bufcap)
	{
		r->bufcap = Max(len, 65536);
		r->buf = r->buf ? repalloc(r->buf, r->bufcap) : palloc(r->bufcap);
	}
	return kp_segment_read(r->rel, r->pos, r->buf, len);
}

bool
kp_log_reader_next(KpLogReader *r, const char **batch, size_t *len)
{
	if (r->seg < 0)
		return false;

	for (;;)
	{
		KpBatchHeader hdr;
		size_t		total;

		CHECK_FOR_INTERRUPTS();
		if (!reader_read(r, KP_BATCH_HEADER_SIZE))
		{
			/* end of this segment's data: on to the next one, if any */
			if (r->seg + 1 >= r->nsegs)
			{
				if (r->high_watermark < 0)
					return false;
				/* the appender may have rolled since we looked */
				reader_load_segments(r);
				if (r->seg + 1 >= r->nsegs)
					return false;
			}
			reader_open_segment(r, r->seg + 1, r->from_offset);
			continue;
		}
		if (kp_batch_parse_header(r->buf, KP_BATCH_HEADER_SIZE, &hdr) != KP_CODEC_OK)
		{
			if (r->high_watermark < 0)
				return false;	/* standby: replay is mid-batch */
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("kafka_pg partition %lld has a corrupt batch header in segment %u at byte %lld",
							(long long) r->partition_id, r->segs[r->seg].relnode,
							(long long) r->pos)));
		}
		if (r->high_watermark >= 0 && hdr.base_offset >= r->high_watermark)
			return false;
		total = KpBatchTotalSize(&hdr);
		if (!reader_read(r, total))
		{
			if (r->high_watermark < 0)
				return false;
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("kafka_pg partition %lld: batch at offset %lld is incomplete",
							(long long) r->partition_id, (long long) hdr.base_offset)));
		}
		if (r->high_watermark < 0 &&
			kp_batch_validate(r->buf, total, &hdr) != KP_CODEC_OK)
			return false;
		r->pos += total;
		if (KpBatchLastOffset(&hdr) < r->from_offset)
			continue;
		*batch = r->buf;
		*len = total;
		return true;
	}
}

void
kp_log_reader_close(KpLogReader *r)
{
	if (r->rel)
		kp_segment_close(r->rel);
	if (r->buf)
		pfree(r->buf);
	if (r->segs)
		pfree(r->segs);
	pfree(r);
}

/*
 * The partition's offsets.  On a standby the log end offset is found by
 * reading the batches of the last segment.
 */
void
kp_log_offsets(int64 partition_id, KpLogOffsets *out)
{
	memset(out, 0, sizeof(*out));
	if (!RecoveryInProgress())
		kp_partition_offsets(partition_id, out);
	else
	{
		int			nsegs;
		const KpSegInfo *segs = kp_directory_segments(partition_id, &nsegs);
		int64		last_base = nsegs > 0 ? segs[nsegs - 1].base_offset : 0;
		int			i;
		KpLogReader *r;
		const char *batch;
		size_t		len;

		out->segment_count = nsegs;
		for (i = 0; i < nsegs; i++)
		{
			Relation	rel = kp_segment_open(segs[i].relnode);

			out->size_bytes += kp_segment_data_size(rel);
			kp_segment_close(rel);
		}
		out->log_end_offset = last_base;
		/* the last segment's batches, even those below the log start */
		r = reader_open(partition_id, last_base, false);
		while (kp_log_reader_next(r, &batch, &len))
		{
			KpBatchHeader hdr;

			kp_batch_parse_header(batch, len, &hdr);
			out->log_end_offset = KpBatchLastOffset(&hdr) + 1;
		}
		kp_log_reader_close(r);
		out->last_stable_offset = out->log_end_offset;
		out->log_start_offset = Min(standby_log_start(partition_id),
									out->log_end_offset);
	}
}

/*
 * First record with timestamp >= ts.  Segments whose largest timestamp is
 * below ts are skipped by their last page's index entry; inside a segment
 * the time index narrows the walk to the batches of a page or two.
 */
int64
kp_log_offset_for_timestamp(int64 partition_id, int64 ts, int64 *found_ts)
{
	int			nsegs;
	const KpSegInfo *dsegs = kp_directory_segments(partition_id, &nsegs);
	KpSegInfo  *segs;
	int			i;
	int64		result = -1;

	*found_ts = -1;
	if (nsegs == 0)
		return -1;
	segs = palloc(nsegs * sizeof(KpSegInfo));
	memcpy(segs, dsegs, nsegs * sizeof(KpSegInfo));

	for (i = 0; i < nsegs && result < 0; i++)
	{
		Relation	rel = kp_segment_open(segs[i].relnode);
		int64		start_pos;
		int64		start_offset = segs[i].base_offset;
		KpLogReader *r;
		const char *batch;
		size_t		len;

		if (kp_segment_max_timestamp(rel) < ts ||
			(start_pos = kp_segment_seek_timestamp(rel, ts)) < 0)
		{
			kp_segment_close(rel);
			continue;
		}
		/* the offset of the batch at start_pos */
		{
			char		hdrbuf[KP_BATCH_HEADER_SIZE];
			KpBatchHeader hdr;

			if (kp_segment_read(rel, start_pos, hdrbuf, KP_BATCH_HEADER_SIZE) &&
				kp_batch_parse_header(hdrbuf, KP_BATCH_HEADER_SIZE, &hdr) == KP_CODEC_OK)
				start_offset = hdr.base_offset;
		}
		kp_segment_close(rel);

		r = kp_log_reader_open(partition_id, start_offset);
		while (result < 0 && kp_log_reader_next(r, &batch, &len))
		{
			KpRecordIter it;
			KpRecord	rec;
			bool		done = false;

			if (kp_record_iter_begin(&it, batch, len, (size_t) 64 * 1024 * 1024) != KP_CODEC_OK)
				break;
			if (KpBatchIsControl(&it.hdr) || it.hdr.max_timestamp < ts)
			{
				kp_record_iter_end(&it);
				continue;
			}
			while (kp_record_iter_next(&it, &rec, &done) == KP_CODEC_OK && !done)
			{
				int64		rts;

				rts = (it.hdr.attributes & KP_ATTR_TIMESTAMP_TYPE) ?
					it.hdr.max_timestamp : rec.timestamp;
				/* the batch may straddle the log start (startingOffset) */
				if (rts >= ts && rec.offset >= r->from_offset)
				{
					result = rec.offset;
					*found_ts = rts;
					break;
				}
			}
			kp_record_iter_end(&it);
		}
		kp_log_reader_close(r);
	}
	pfree(segs);
	return result;
}

int64
kp_log_max_timestamp(int64 partition_id, int64 *max_ts)
{
	int			nsegs;
	const KpSegInfo *segs = kp_directory_segments(partition_id, &nsegs);
	int64		best = -1;
	int			i;

	for (i = 0; i < nsegs; i++)
	{
		Relation	rel = kp_segment_open(segs[i].relnode);

		best = Max(best, kp_segment_max_timestamp(rel));
		kp_segment_close(rel);
	}
	*max_ts = -1;
	if (best < 0)
		return -1;
	return kp_log_offset_for_timestamp(partition_id, best, max_ts);
}

KpSegmentStat *
kp_log_segment_stats(int64 partition_id, int *nsegs)
{
	const KpSegInfo *segs = kp_directory_segments(partition_id, nsegs);
	KpSegmentStat *out = palloc(sizeof(KpSegmentStat) * Max(*nsegs, 1));
	KpSegInfo  *copy = palloc(sizeof(KpSegInfo) * Max(*nsegs, 1));
	int			i;

	if (*nsegs > 0)
		memcpy(copy, segs, sizeof(KpSegInfo) * *nsegs);
	for (i = 0; i < *nsegs; i++)
	{
		Relation	rel = kp_segment_open(copy[i].relnode);

		out[i].base_offset = copy[i].base_offset;
		out[i].relfilenode = copy[i].relnode;
		out[i].size_bytes = kp_segment_data_size(rel);
		kp_segment_close(rel);
	}
	pfree(copy);
	return out;
}
