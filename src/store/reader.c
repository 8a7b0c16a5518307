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
 * The one place the algorithm lives; both front doors read through
 * kp_log_cursor_next and apply nothing of their own.  What a
 * read_committed consumer (KIP-98) is given, batch by batch in offset
 * order from the batch that holds the fetch offset:
 *
 *	1. A control batch (COMMIT/ABORT marker) is CONTROL: never shown; the
 *	   consumer's position moves past it.
 *	2. A non-transactional data batch is VISIBLE.
 *	3. A transactional data batch below the last stable offset (LSO) belongs
 *	   to a transaction that has its marker, so the aborted-transaction
 *	   index decides it (txnindex.c): ABORTED iff an entry of its producer id
 *	   covers its offset (first_offset <= offset <= last_offset), else
 *	   VISIBLE.  The commit log is not asked: it may no longer know the
 *	   transaction (src/txn/README, the commit-log horizon defect).
 *	4. At or past the LSO a transaction may have no marker yet:
 *	   - an index entry covering it still means ABORTED;
 *	   - a SQL transaction (KP_SQL_PID_FLAG) is asked of the commit log,
 *	     through the callback src/txn registers (kp_log_register_sql_outcome),
 *	     once per run of its batches: committed VISIBLE, aborted ABORTED,
 *	     in progress or the reader's own transaction: the cursor ENDS before
 *	     it, so a reader never skips past a transaction that may still
 *	     commit (a session that committed sees its records before the
 *	     resolver writes the marker);
 *	   - any other transaction: the cursor ENDS before it.
 *
 * SQL fetch skips ABORTED batches.  Wire Fetch stops at the LSO by Fetch's
 * own rule (so rule 4 never applies to it), returns ABORTED batches as they
 * are, and lists the aborted transactions of the range it returns as
 * aborted_transactions (kp_log_cursor_aborted), for the client to drop,
 * as Kafka's clients do up to the ABORT marker.
 *
 * The index entries a cursor needs are read segment by segment from the one
 * holding the fetch offset, as Kafka's collectAbortedTransactions reads
 * them: entries are in marker order, and an entry whose last_stable_offset
 * (the LSO just after its marker) is past an offset proves that every
 * transaction open at that offset had its marker by then, so no later
 * segment's index can cover it; so does a later segment's first_open_offset
 * (the LSO when it was rolled).
 *
 * On a hot standby there is no partition state: the LSO is found by the
 * walk recovery uses (recovery.c, kp_scan_open_txns), and the indexes are
 * what replay has brought.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "codec/codec.h"
#include "store/store_int.h"

struct KpLogReader
{
	int64		partition_id;
	int64		from_offset;
	int64		high_watermark; /* -1: unknown (standby), validate instead */
	KpIsolation isolation;
	int64		last_stable_offset;
	bool		ended;			/* read_committed: stopped before an open txn */
	/* the aborted-transaction index entries read so far (read_committed) */
	KpTxnIndexEntry *idx;
	int			nidx;
	int64		idx_next_base;	/* base offset of the next segment whose index
								 * to read (the list may be reloaded) */
	int64		idx_complete;	/* entries covering offsets below: all read */
	/* the visibility of the current run of one producer's batches */
	int64		run_pid;
	KpBatchVisibility run_vis;
	bool		run_ends;
	int			nsegs;
	KpSegInfo  *segs;			/* a private copy */
	int			seg;			/* current segment index */
	Relation	rel;			/* open segment, or NULL */
	BlockNumber nblocks;		/* its block count, cached (segment.c) */
	/* the active segment and its data bytes when the offsets were read */
	Oid			published_relnode;	/* InvalidOid: not known (standby) */
	int64		published_size;
	int64		data_end;		/* the open segment's: published_size if it is
								 * that segment, else -1 (not known) */
	Buffer		keep;			/* the page of it read last, pinned (not
								 * locked) for the next read, or InvalidBuffer */
	int64		pos;			/* stream position in it */
	int64		next_offset;	/* past the last batch returned */
	StringInfoData buf;			/* kp_log_reader_next's copy of a batch */
};

/*
 * Where this backend's readers of each partition left off: the segment,
 * the offset the reader was to read next, and a position in the segment
 * such that every batch before it ends below that offset.  A reader that
 * starts at that offset in that segment (a consumer fetching on from where
 * its last fetch ended, the usual case) starts there instead of seeking:
 * the seek is a binary search over the segment's page index, a buffer
 * lookup, pin and share lock for each of log2(pages) pages (17 for a 1 GB
 * segment), for every partition of every Fetch.
 *
 * A remembered position stays right while its segment is listed: a
 * segment's bytes never change below its end (appends go after it; the
 * torn-tail cut of a reload only removes bytes past the last whole batch,
 * after any position a reader reached; a crash restarts every process,
 * emptying this cache), and a segment that compaction rewrites or
 * retention removes is replaced by others with other relfilenodes, so the
 * remembered one is simply not the segment the reader opens any more.
 * Relfilenodes are not reused while the OID counter has not wrapped around,
 * and the entry is per partition id as well.  On a standby replay only
 * appends, or cuts a torn tail as the primary did, past whole batches.
 */
typedef struct ReaderPosition
{
	int64		partition_id;	/* hash key */
	Oid			relnode;
	int64		next_offset;
	int64		pos;
} ReaderPosition;

static HTAB *reader_positions = NULL;

/* more entries than this (partitions read by one backend): start afresh */
#define READER_POSITIONS_MAX	65536

/* The position remembered for starting at offset in segment seg, if any. */
static bool
reader_recall_position(KpLogReader *r, int seg, int64 offset, int64 *pos)
{
	ReaderPosition *p;

	if (reader_positions == NULL)
		return false;
	p = hash_search(reader_positions, &r->partition_id, HASH_FIND, NULL);
	if (p == NULL || p->relnode != r->segs[seg].relnode || p->next_offset != offset ||
		(r->data_end >= 0 && p->pos > r->data_end))
		return false;
	*pos = p->pos;
	return true;
}

/* Remember where the reader is (kp_log_reader_close). */
static void
reader_remember_position(KpLogReader *r)
{
	ReaderPosition *p;

	if (r->rel == NULL)
		return;
	if (reader_positions != NULL &&
		hash_get_num_entries(reader_positions) >= READER_POSITIONS_MAX)
	{
		hash_destroy(reader_positions);
		reader_positions = NULL;
	}
	if (reader_positions == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(ReaderPosition);
		ctl.hcxt = TopMemoryContext;
		reader_positions = hash_create("kafka_pg reader positions", 256, &ctl,
									   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	p = hash_search(reader_positions, &r->partition_id, HASH_ENTER, NULL);
	/* the open segment's (r->segs may have been reloaded since it was opened) */
	p->relnode = r->rel->rd_node.relNode;
	p->next_offset = r->next_offset;
	p->pos = r->pos;
}

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
reader_release_page(KpLogReader *r)
{
	if (BufferIsValid(r->keep))
		ReleaseBuffer(r->keep);
	r->keep = InvalidBuffer;
}

/*
 * Open segment seg, positioned at the batch holding offset (or at a batch
 * before it: the reader skips what ends below its start): at the start
 * for an offset at or below its base, where a reader of the partition
 * left off for that very offset (reader_recall_position), else by a seek.
 *
 * The segment that was active when the reader read the partition's offsets
 * holds published_size bytes the reader may read, in blocks that exist:
 * its block count is taken from that (kp_segment_blocks_for), not from the
 * file, so reading it (and seeking in it, over its data blocks only) costs
 * no smgrnblocks() unless a read needs a block past them.  A segment only
 * grows while active and is never truncated while read (segment.c,
 * cached_nblocks), so the count stays true while the reader reads it.
 */
static void
reader_open_segment(KpLogReader *r, int seg, int64 offset)
{
	reader_release_page(r);
	if (r->rel)
		kp_segment_close(r->rel);
	r->seg = seg;
	r->rel = kp_segment_open(r->segs[seg].relnode);
	r->nblocks = InvalidBlockNumber;
	r->data_end = -1;
	if (OidIsValid(r->published_relnode) && r->segs[seg].relnode == r->published_relnode)
	{
		r->data_end = r->published_size;
		r->nblocks = kp_segment_blocks_for(r->published_size);
	}
	if (offset <= r->segs[seg].base_offset)
		r->pos = 0;
	else if (!reader_recall_position(r, seg, offset, &r->pos))
		r->pos = kp_segment_seek_offset_cached(r->rel, &r->nblocks, offset);
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

int			kp_debug_reader_pause_lock = 0;

/*
 * kafka.debug_reader_pause_lock: wait until pg_advisory_lock_shared(key)
 * can be had (a test holds pg_advisory_lock(key)), then let it go.  The
 * reader has its list of segments and nothing else yet, as a reader that
 * is descheduled at that point would.
 */
static void
debug_pause(int key)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, (uint32) key, 1);
	(void) LockAcquire(&tag, ShareLock, false, false);
	LockRelease(&tag, ShareLock, false);
}

/*
 * with_floor: start no lower than the log start offset.  known: the
 * partition's offsets as the caller just read them on a primary
 * (kp_log_offsets), or NULL to read them here.
 */
static KpLogReader *
reader_open(int64 partition_id, int64 from_offset, bool with_floor,
			KpIsolation isolation, const KpLogOffsets *known)
{
	KpLogReader *r = palloc0(sizeof(KpLogReader));
	int64		log_start;
	int			i;

	r->partition_id = partition_id;
	r->high_watermark = -1;
	r->isolation = isolation;
	r->run_pid = KP_NO_PRODUCER_ID;
	r->idx_complete = -1;
	r->keep = InvalidBuffer;
	r->data_end = -1;
	if (!RecoveryInProgress())
	{
		KpLogOffsets off;

		if (known)
			off = *known;
		else
			kp_partition_offsets(partition_id, &off);
		r->high_watermark = off.log_end_offset;
		r->last_stable_offset = off.last_stable_offset;
		r->published_relnode = off.active_relnode;
		r->published_size = off.active_size;
		log_start = off.log_start_offset;
	}
	else
	{
		log_start = standby_log_start(partition_id);
		if (isolation == KP_READ_COMMITTED)
		{
			KpLogOffsets off;

			kp_log_offsets(partition_id, &off);
			r->last_stable_offset = off.last_stable_offset;
		}
	}
	r->from_offset = with_floor ? Max(from_offset, log_start) : from_offset;
	from_offset = r->from_offset;
	r->next_offset = from_offset;
	reader_load_segments(r);
	if (kp_debug_reader_pause_lock != 0)
		debug_pause(kp_debug_reader_pause_lock);
	r->seg = -1;
	if (r->nsegs == 0)
		return r;
	for (i = r->nsegs - 1; i > 0; i--)
		if (r->segs[i].base_offset <= from_offset)
			break;
	reader_open_segment(r, i, from_offset);
	r->idx_next_base = r->segs[i].base_offset;
	return r;
}

KpLogReader *
kp_log_reader_open(int64 partition_id, int64 from_offset)
{
	return reader_open(partition_id, from_offset, true, KP_READ_UNCOMMITTED, NULL);
}

KpLogReader *
kp_log_cursor_open(int64 partition_id, int64 from_offset, KpIsolation isolation)
{
	return reader_open(partition_id, from_offset, true, isolation, NULL);
}

KpLogReader *
kp_log_cursor_open_at(int64 partition_id, int64 from_offset, KpIsolation isolation,
					  const KpLogOffsets *off)
{
	return reader_open(partition_id, from_offset, true, isolation, off);
}

/* What kp_segment_read_batch is to do with the batch at the position. */
typedef struct ReaderDecide
{
	KpLogReader *r;
	int64		max_len;		/* -1: any size */
	bool		peek;			/* stop before a wanted batch, uncopied */
	bool		peeked;			/* ... and one was there */
} ReaderDecide;

static KpSegBatchStatus
reader_decide(const KpBatchHeader *hdr, void *arg)
{
	ReaderDecide *d = (ReaderDecide *) arg;
	KpLogReader *r = d->r;

	if (r->high_watermark >= 0 && hdr->base_offset >= r->high_watermark)
		return KP_SEGBATCH_STOP;
	if (KpBatchLastOffset(hdr) < r->from_offset ||
		KpBatchLastOffset(hdr) < r->next_offset)
		return KP_SEGBATCH_SKIP;
	if (d->max_len >= 0 && (int64) KpBatchTotalSize(hdr) > d->max_len)
		return KP_SEGBATCH_STOP;
	if (d->peek)
	{
		d->peeked = true;
		return KP_SEGBATCH_STOP;
	}
	return KP_SEGBATCH_OK;
}

static bool reader_read(KpLogReader *r, StringInfo dst, ReaderDecide *d,
						KpBatchHeader *hdr);

/*
 * The next batch, appended to dst (straight from the segment's pages, one
 * copy), its header in *hdr.  False at the end of what is readable now, or
 * when the next batch is larger than max_len (>= 0): nothing is appended
 * then, and the reader stays before it.
 */
static bool
reader_next(KpLogReader *r, StringInfo dst, int64 max_len, KpBatchHeader *hdr)
{
	ReaderDecide d;

	d.r = r;
	d.max_len = max_len;
	d.peek = false;
	d.peeked = false;
	return reader_read(r, dst, &d, hdr);
}

/*
 * The header of the batch reader_next would return next, without copying
 * the batch (the reader stays before it); false where reader_next would
 * return false.  On a primary only: a standby's reader checks each batch's
 * CRC, on a copy, to find the end of what was replayed.
 */
static bool
reader_peek(KpLogReader *r, KpBatchHeader *hdr)
{
	ReaderDecide d;

	Assert(r->high_watermark >= 0);
	d.r = r;
	d.max_len = -1;
	d.peek = true;
	d.peeked = false;
	(void) reader_read(r, NULL, &d, hdr);
	return d.peeked;
}

/* reader_next and reader_peek: d says what to do with the batches met */
static bool
reader_read(KpLogReader *r, StringInfo dst, ReaderDecide *d, KpBatchHeader *hdr)
{
	if (r->seg < 0)
		return false;

	for (;;)
	{
		KpSegBatchStatus st;
		size_t		total;

		CHECK_FOR_INTERRUPTS();

		/*
		 * The end of what the segment that was active held when the offsets
		 * were read: every batch below them is before it (none is in a later
		 * segment), so nothing more is readable, and the header there need
		 * not be read to find that out.
		 */
		if (r->data_end >= 0 && r->pos >= r->data_end)
			return false;
		st = kp_segment_read_batch(r->rel, &r->nblocks, &r->keep, r->pos,
								   reader_decide, d, hdr, dst);
		switch (st)
		{
			case KP_SEGBATCH_END:
				{
					/* end of this segment's data: on to the next one, if any */
					Oid			cur = r->segs[r->seg].relnode;
					int			next = r->seg + 1;

					if (next >= r->nsegs)
					{
						if (r->high_watermark < 0)
							return false;

						/*
						 * The appender may have rolled since we looked.  A
						 * clean may also have swapped segments in
						 * (compaction.c): go on from the segment that holds
						 * the next offset to read, unless that is still the
						 * one just finished.
						 */
						reader_load_segments(r);
						for (next = r->nsegs - 1; next > 0; next--)
							if (r->segs[next].base_offset <= r->next_offset)
								break;
						if (next < r->nsegs && r->segs[next].relnode == cur)
							next++;
						if (next >= r->nsegs)
							return false;
					}
					reader_open_segment(r, next, Max(r->from_offset, r->next_offset));
					continue;
				}
			case KP_SEGBATCH_BAD_HEADER:
				if (r->high_watermark < 0)
					return false;	/* standby: replay is mid-batch */
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("kafka_pg partition %lld has a corrupt batch header in segment %u at byte %lld",
								(long long) r->partition_id, r->segs[r->seg].relnode,
								(long long) r->pos)));
				break;
			case KP_SEGBATCH_STOP:
				return false;
			case KP_SEGBATCH_SKIP:
				r->pos += KpBatchTotalSize(hdr);
				continue;
			case KP_SEGBATCH_SHORT:
				if (r->high_watermark < 0)
					return false;
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("kafka_pg partition %lld: batch at offset %lld is incomplete",
								(long long) r->partition_id, (long long) hdr->base_offset)));
				break;
			case KP_SEGBATCH_OK:
				break;
		}
		total = KpBatchTotalSize(hdr);
		if (r->high_watermark < 0 &&
			kp_batch_validate(dst->data + dst->len - total, total, hdr) != KP_CODEC_OK)
		{
			dst->len -= (int) total;
			dst->data[dst->len] = '\0';
			return false;
		}
		r->pos += total;
		r->next_offset = KpBatchLastOffset(hdr) + 1;
		return true;
	}
}

bool
kp_log_reader_next(KpLogReader *r, const char **batch, size_t *len)
{
	KpBatchHeader hdr;

	if (r->buf.data == NULL)
		initStringInfo(&r->buf);
	resetStringInfo(&r->buf);
	if (!reader_next(r, &r->buf, -1, &hdr))
		return false;
	*batch = r->buf.data;
	*len = r->buf.len;
	return true;
}

/*
 * Read the index entries of further segments until every entry that can
 * cover an offset below upto is in hand (README above), or no segment is
 * left.  Entries whose marker is before the reader's start cannot cover
 * anything it returns and are not kept.
 */
static void
cursor_read_index(KpLogReader *r, int64 upto)
{
	for (;;)
	{
		int			seg;
		Relation	rel;
		int			n;
		KpTxnIndexEntry *entries;
		int			i;

		if (r->idx_complete >= upto)
			return;
		for (seg = 0; seg < r->nsegs; seg++)
			if (r->segs[seg].base_offset >= r->idx_next_base)
				break;
		if (seg >= r->nsegs)
			return;
		rel = kp_segment_open(r->segs[seg].relnode);
		entries = kp_txnindex_read(rel, &n);
		kp_segment_close(rel);
		r->idx_next_base = r->segs[seg].base_offset + 1;
		for (i = 0; i < n; i++)
		{
			if (entries[i].last_offset < r->from_offset)
				continue;
			if (r->nidx % 64 == 0)
				r->idx = r->idx ? repalloc(r->idx, (r->nidx + 64) * sizeof(KpTxnIndexEntry)) :
					palloc(64 * sizeof(KpTxnIndexEntry));
			r->idx[r->nidx++] = entries[i];
			r->idx_complete = Max(r->idx_complete, entries[i].last_stable_offset);
		}
		if (entries)
			pfree(entries);

		/*
		 * The next segment's first_open_offset (the LSO when it was rolled)
		 * bounds the search too: a transaction covering an offset below it
		 * was not open at that roll, so its marker is in a segment read
		 * already.  This spares reading every later segment's index when
		 * there are no aborts.
		 */
		if (seg + 1 < r->nsegs)
		{
			KpSegmentMeta meta;

			rel = kp_segment_open(r->segs[seg + 1].relnode);
			kp_segment_read_meta(rel, &meta);
			kp_segment_close(rel);
			if (meta.flags & KP_SEGMETA_HAS_FIRST_OPEN)
				r->idx_complete = Max(r->idx_complete, meta.first_open_offset);
		}
	}
}

/* Does an index entry say the batch of producer_id at offset aborted? */
static bool
cursor_covered(KpLogReader *r, int64 producer_id, int64 offset)
{
	int			i;

	cursor_read_index(r, offset + 1);
	for (i = 0; i < r->nidx; i++)
		if (r->idx[i].producer_id == producer_id &&
			r->idx[i].first_offset <= offset && offset <= r->idx[i].last_offset)
			return true;
	return false;
}

/*
 * Rules 2-4 of the algorithm above for a data batch; *ends when the cursor
 * must stop before it.
 */
static KpBatchVisibility
cursor_decide(KpLogReader *r, const KpBatchHeader *hdr, bool *ends)
{
	*ends = false;
	if (!KpBatchIsTransactional(hdr))
		return KP_BATCH_VISIBLE;
	if (cursor_covered(r, hdr->producer_id, hdr->base_offset))
		return KP_BATCH_ABORTED;
	if (hdr->base_offset < r->last_stable_offset)
		return KP_BATCH_VISIBLE;
	if (KpPidIsSqlXact(hdr->producer_id))
	{
		switch (kp_txnstate_sql_outcome(hdr->producer_id))
		{
			case KP_TXN_COMMITTED:
				return KP_BATCH_VISIBLE;
			case KP_TXN_ABORTED:
				return KP_BATCH_ABORTED;
			case KP_TXN_OPEN:
				break;
		}
	}
	*ends = true;
	return KP_BATCH_VISIBLE;
}

/*
 * The visibility of the batch just read (hdr); false if the cursor ends
 * before it.
 */
static bool
cursor_classify(KpLogReader *r, const KpBatchHeader *hdr,
				KpBatchVisibility *visibility)
{
	if (KpBatchIsControl(hdr))
	{
		/* a marker ends its producer's run: the next batch is decided anew */
		r->run_pid = KP_NO_PRODUCER_ID;
		*visibility = KP_BATCH_CONTROL;
		return true;
	}
	if (r->isolation == KP_READ_UNCOMMITTED)
	{
		*visibility = KP_BATCH_VISIBLE;
		return true;
	}
	if (!KpBatchIsTransactional(hdr) || hdr->producer_id != r->run_pid)
	{
		r->run_vis = cursor_decide(r, hdr, &r->run_ends);
		r->run_pid = KpBatchIsTransactional(hdr) ? hdr->producer_id : KP_NO_PRODUCER_ID;
	}
	if (r->run_ends)
	{
		r->ended = true;
		return false;
	}
	*visibility = r->run_vis;
	return true;
}

bool
kp_log_cursor_next(KpLogReader *r, const char **batch, size_t *len,
				   KpBatchVisibility *visibility)
{
	KpBatchHeader hdr;

	if (r->ended)
		return false;
	if (r->buf.data == NULL)
		initStringInfo(&r->buf);
	resetStringInfo(&r->buf);
	if (!reader_next(r, &r->buf, -1, &hdr) ||
		!cursor_classify(r, &hdr, visibility))
		return false;
	*batch = r->buf.data;
	*len = r->buf.len;
	return true;
}

bool
kp_log_cursor_next_into(KpLogReader *r, StringInfo dst, int64 max_len,
						KpBatchHeader *hdr, KpBatchVisibility *visibility)
{
	int			before = dst->len;

	if (r->ended || !reader_next(r, dst, max_len, hdr))
		return false;
	if (!cursor_classify(r, hdr, visibility))
	{
		/* the cursor ends before it: it was not returned */
		dst->len = before;
		dst->data[before] = '\0';
		return false;
	}
	return true;
}

void
kp_log_reader_set_bound(KpLogReader *r, int64 bound)
{
	if (r->high_watermark >= 0 && bound < r->high_watermark)
		r->high_watermark = bound;
}

int
kp_log_cursor_aborted(KpLogReader *r, int64 from, int64 upper_bound,
					  KpAbortedTxn **aborted)
{
	KpAbortedTxn *out = NULL;
	int			n = 0;
	int			i;

	*aborted = NULL;
	if (r->isolation != KP_READ_COMMITTED || upper_bound <= from)
		return 0;
	cursor_read_index(r, upper_bound);
	for (i = 0; i < r->nidx; i++)
	{
		if (r->idx[i].last_offset < from || r->idx[i].first_offset >= upper_bound)
			continue;
		if (out == NULL)
			out = palloc(sizeof(KpAbortedTxn) * r->nidx);
		out[n].producer_id = r->idx[i].producer_id;
		out[n].first_offset = r->idx[i].first_offset;
		out[n].last_offset = r->idx[i].last_offset;
		n++;
	}
	*aborted = out;
	return n;
}

void
kp_log_reader_close(KpLogReader *r)
{
	reader_remember_position(r);
	if (r->idx)
		pfree(r->idx);
	reader_release_page(r);
	if (r->rel)
		kp_segment_close(r->rel);
	if (r->buf.data)
		pfree(r->buf.data);
	if (r->segs)
		pfree(r->segs);
	pfree(r);
}

/*
 * The partition's offsets.  On a standby, which has no partition state,
 * they are found in the store at every call: the log end offset by walking
 * from the last page's cover batch of the last segment (a few batches), the
 * last stable offset from the active segment's producer-state snapshot on
 * (prodsnap.c; the whole walk where there is none).
 */
void
kp_log_offsets(int64 partition_id, KpLogOffsets *out)
{
	memset(out, 0, sizeof(*out));
	out->unreplicated_txn_offset = PG_INT64_MAX;
	if (!RecoveryInProgress())
		kp_partition_offsets(partition_id, out);
	else
	{
		int			nsegs;
		const KpSegInfo *dsegs = kp_directory_segments(partition_id, &nsegs);
		KpSegInfo  *segs = palloc(sizeof(KpSegInfo) * Max(nsegs, 1));
		int64		end_pos = 0;
		int			i;

		/* the directory's array lasts until its next call: a copy */
		memcpy(segs, dsegs, sizeof(KpSegInfo) * nsegs);
		out->segment_count = nsegs;
		out->log_end_offset = 0;
		for (i = 0; i < nsegs; i++)
		{
			Relation	rel = kp_segment_open(segs[i].relnode);

			out->size_bytes += kp_segment_data_size(rel);
			/* the last segment's end, even below the log start */
			if (i == nsegs - 1)
				out->log_end_offset = kp_segment_find_end(rel, segs[i].base_offset, &end_pos);
			kp_segment_close(rel);
		}
		/* the first offset of the earliest transaction without a marker */
		out->last_stable_offset = out->log_end_offset;
		if (nsegs > 0)
		{
			KpPartitionState *scan = palloc0(sizeof(KpPartitionState));

			scan->key.partition_id = partition_id;
			kp_scan_open_txns(scan, segs, nsegs, out->log_end_offset, end_pos, false, false,
							  NULL, NULL, NULL);
			for (i = 0; i < scan->ntxns; i++)
				out->last_stable_offset = Min(out->last_stable_offset,
											  scan->txns[i].first_offset);
			pfree(scan);
		}
		pfree(segs);
		out->log_start_offset = Min(standby_log_start(partition_id),
									out->log_end_offset);
		/* what this standby replayed is what it has */
		out->high_watermark = out->log_end_offset;
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

/*
 * The leader epoch of the batch holding offset (unstamped batches: 0), or
 * current when no batch holds it.
 */
int32
kp_log_epoch_at(int64 partition_id, int64 offset, int32 current)
{
	KpLogReader *r = kp_log_reader_open(partition_id, offset);
	KpBatchHeader hdr;
	bool		found;
	int32		epoch = current;

	/* a primary reads the header only (ListOffsets asks this per partition) */
	if (r->high_watermark >= 0)
		found = reader_peek(r, &hdr);
	else
	{
		const char *batch;
		size_t		len;

		found = kp_log_reader_next(r, &batch, &len) &&
			kp_batch_parse_header(batch, len, &hdr) == KP_CODEC_OK;
	}
	if (found && hdr.base_offset <= offset)
		epoch = Max(hdr.partition_leader_epoch, 0);
	kp_log_reader_close(r);
	return epoch;
}

/*
 * The end offset of leader epoch epoch (KIP-101, Kafka's
 * LeaderEpochFileCache.endOffsetFor): the first offset of the first batch
 * of a later epoch, or log_end_offset when none is later.  From the last
 * segment back to the one whose first batch is not later, then a binary
 * search inside it (kp_segment_epoch_end).
 */
int64
kp_log_epoch_end_offset(int64 partition_id, int32 epoch, int64 log_end_offset)
{
	int			nsegs;
	const KpSegInfo *dsegs = kp_directory_segments(partition_id, &nsegs);
	KpSegInfo  *segs;
	int64		end = log_end_offset;
	int			i;

	if (nsegs == 0)
		return end;
	segs = palloc(sizeof(KpSegInfo) * nsegs);
	memcpy(segs, dsegs, sizeof(KpSegInfo) * nsegs);
	for (i = nsegs - 1; i >= 0; i--)
	{
		Relation	rel = kp_segment_open(segs[i].relnode);
		int64		found;

		if (kp_segment_data_size(rel) == 0)
		{
			kp_segment_close(rel);
			continue;			/* an empty cleaned segment */
		}
		found = kp_segment_epoch_end(rel, epoch, end);
		kp_segment_close(rel);
		if (found < 0)
			break;				/* nothing later in this one: end stands */
		end = found;
		if (found > segs[i].base_offset)
			break;				/* the epoch ends inside this segment */
	}
	pfree(segs);
	return end;
}
