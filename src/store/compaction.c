/*-------------------------------------------------------------------------
 *
 * compaction.c
 *	  Log compaction (cleanup.policy=compact): Kafka's Cleaner, on the
 *	  segment store.
 *
 * What a clean of one partition does (kp_log_compact), as Kafka's
 * LogCleanerManager.cleanableOffsets and Cleaner.doClean do:
 *
 *	1. The cleanable range.  The first dirty offset is the partition's
 *	   cleaner checkpoint (a KP_DIRENT_CLEANER_CHECKPOINT directory entry),
 *	   or the log start offset if that is larger.  The first uncleanable
 *	   offset is the smallest of the active segment's base offset (the
 *	   active segment is never cleaned), the last stable offset (no open
 *	   transaction is cleaned), and with min.compaction.lag.ms > 0 the base
 *	   offset of the first dirty segment whose largest timestamp is younger
 *	   than the lag.  Clean bytes are the data bytes of the closed segments
 *	   wholly below the first dirty offset, dirty bytes those of the
 *	   segments from there to the first uncleanable offset.  A clean runs if
 *	   dirty / (clean + dirty) > min.cleanable.dirty.ratio, or if the first
 *	   dirty segment's first batch is older than max.compaction.lag.ms, or
 *	   if the caller says a delete horizon has passed (KIP-534: a tombstone
 *	   or marker kept by an earlier clean may go now).
 *
 *	2. The offset map: key -> latest offset, over the dirty range, skipping
 *	   control batches and the batches of aborted transactions.  128-bit key
 *	   hashes and offsets in one open-addressing array (24 bytes a slot, as
 *	   Kafka's SkimpyOffsetMap) of at most kafka.log_cleaner_dedupe_buffer_size
 *	   bytes, filled to 90%.  When it is full, the clean ends where the map
 *	   got (a batch boundary) and the next clean goes on from there.
 *
 *	3. The rewrite.  The closed segments from the first one up to the one
 *	   holding the end of the map's range are grouped (consecutive segments
 *	   while their total size stays within segment.bytes, Kafka's
 *	   groupSegmentsBySize); each group is copied into one new segment with
 *	   the group's first base offset.  Batch by batch (Kafka's
 *	   MemoryRecords.filterTo and CleanedTransactionMetadata):
 *	   - a data batch of an aborted transaction (an aborted-transaction index
 *	     entry of its producer covers it, store README invariant 9) is
 *	     removed;
 *	   - any other data batch keeps a record iff it is past the map's range,
 *	     or its key is not in the map, or its offset is the key's latest; a
 *	     record without a key is removed (Kafka counts it invalid); a
 *	     tombstone (null value) is removed once its batch's delete horizon
 *	     has passed;
 *	   - a transaction marker can go once its transaction has no batch left
 *	     (no data batch of the producer was met since its previous marker in
 *	     this clean) and its delete horizon has passed; an ABORT marker that
 *	     stays keeps its index entry, in the new segment's index;
 *	   - a batch left with no record is removed; one that lost records, or
 *	     that keeps a tombstone or a removable marker and has no delete
 *	     horizon yet, is rebuilt with kp_batch_filter: same baseOffset and
 *	     lastOffsetDelta (so offsets never move: gaps are normal), producer
 *	     id, epoch, base sequence and codec; the first clean to keep a
 *	     tombstone or a removable marker sets the delete horizon (attribute
 *	     0x40, baseTimestamp = now + delete.retention.ms, record timestamps
 *	     unchanged); a batch left whole is copied byte for byte.
 *	   - Batches that cannot be decoded are copied as they are: nothing is
 *	     ever lost to a decoding error.
 *
 *	4. The swap.  The new segment is created outside any transaction
 *	   (register_delete false, like a roll: invariant 6) and written with
 *	   generic WAL, then published by ONE WAL record appending a
 *	   KP_DIRENT_CLEANED entry and its KP_DIRENT_CLEANED_END companion (and,
 *	   with the last group, the new cleaner checkpoint) to the directory
 *	   (directory.c): from that record on, every reader, crash recovery and
 *	   a standby replaying it list the new segment in place of the group;
 *	   before it, the old segments.  The record is written under the
 *	   partition's appender lock, held only for it and the segment count.
 *	   The replaced segments' storage is dropped later, transactionally
 *	   (kp_log_drop_replaced_segments: after file.delete.delay.ms, so that
 *	   a reader that listed them a moment before the swap can finish).
 *
 * Crashes: before the publish record, the new segment is an unreferenced
 * file (space, not data) and the old segments are the log; after it, the
 * new segment is (its pages were WAL-logged before the record).  The
 * replaced segments stay listed as replaced until a later pass drops them.
 * Per group, so a crash between groups leaves some groups cleaned: a
 * consistent log, and the checkpoint (written with the last group) not
 * moved, so the next clean does that range again.
 *
 * Locks: the caller's topic lock (ShareUpdateExclusiveLock) keeps other
 * cleans, retention and DeleteRecords of the topic away.  Reading and
 * writing take buffer content locks only, a page at a time; the appender
 * lock is taken only for the publish record.  Produce and fetch go on.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>

#include "access/xlog.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "codec/codec.h"
#include "store/store_int.h"

/* decompressed size a clean accepts for one batch */
#define KP_COMPACT_MAX_INFLATE	((size_t) 256 * 1024 * 1024)

/* ---------- the offset map ---------- */

typedef struct KpMapSlot
{
	uint64		h1;
	uint64		h2;
	int64		offset;			/* -1: free */
} KpMapSlot;

typedef struct KpOffsetMap
{
	KpMapSlot  *slots;
	uint64		nslots;
	uint64		count;
	uint64		max_count;		/* 90% of the slots */
	int64		latest_offset;	/* largest offset put, -1 */
} KpOffsetMap;

static void
map_init(KpOffsetMap *map, int64 buffer_bytes, int64 dirty_bytes)
{
	uint64		nslots = (uint64) buffer_bytes / sizeof(KpMapSlot);

	/*
	 * No more than the dirty part can need: a record takes at least 4 bytes
	 * of a batch (compressed very small records may take fewer; the map then
	 * fills early and the next clean goes on).
	 */
	nslots = Min(nslots, (uint64) Max(dirty_bytes / 4, 1024));
	nslots = Max(nslots, 16);
	map->nslots = nslots;
	map->slots = MemoryContextAllocHuge(CurrentMemoryContext,
										nslots * sizeof(KpMapSlot));
	for (uint64 i = 0; i < nslots; i++)
		map->slots[i].offset = -1;
	map->count = 0;
	map->max_count = (uint64) (nslots * 0.9);
	map->latest_offset = -1;
}

static void
key_hash(const char *key, int len, uint64 *h1, uint64 *h2)
{
	*h1 = hash_bytes_extended((const unsigned char *) key, len, 0x4B50);
	*h2 = hash_bytes_extended((const unsigned char *) key, len, 0x636C65616E);
}

static KpMapSlot *
map_slot(KpOffsetMap *map, uint64 h1, uint64 h2)
{
	uint64		i = h1 % map->nslots;

	for (;;)
	{
		KpMapSlot  *s = &map->slots[i];

		if (s->offset < 0 || (s->h1 == h1 && s->h2 == h2))
			return s;
		i = (i + 1) % map->nslots;
	}
}

static void
map_put(KpOffsetMap *map, const char *key, int len, int64 offset)
{
	uint64		h1,
				h2;
	KpMapSlot  *s;

	key_hash(key, len, &h1, &h2);
	s = map_slot(map, h1, h2);
	if (s->offset < 0)
	{
		s->h1 = h1;
		s->h2 = h2;
		map->count++;
	}
	s->offset = offset;
	map->latest_offset = Max(map->latest_offset, offset);
}

/* the key's latest offset, or -1 */
static int64
map_get(KpOffsetMap *map, const char *key, int len)
{
	uint64		h1,
				h2;

	key_hash(key, len, &h1, &h2);
	return map_slot(map, h1, h2)->offset;
}

/* ---------- transactions: the aborted-transaction entries of the partition ---------- */

typedef struct KpCleanTxns
{
	KpTxnIndexEntry *entries;
	bool	   *observed;		/* a batch of it was met in this clean */
	int			n;
	HTAB	   *committed;		/* producers with a data batch since their
								 * last marker (Kafka's ongoingCommittedTxns) */
} KpCleanTxns;

static void
txns_load(KpCleanTxns *t, const KpSegInfo *segs, int nsegs)
{
	HASHCTL		ctl;
	int			cap = 0;
	int			i;

	t->entries = NULL;
	t->n = 0;
	for (i = 0; i < nsegs; i++)
	{
		Relation	rel = kp_segment_open(segs[i].relnode);
		int			n;
		KpTxnIndexEntry *e = kp_txnindex_read(rel, &n);

		kp_segment_close(rel);
		if (n == 0)
			continue;
		if (t->n + n > cap)
		{
			cap = Max(cap * 2, t->n + n);
			t->entries = t->entries ? repalloc(t->entries, cap * sizeof(KpTxnIndexEntry)) :
				palloc(cap * sizeof(KpTxnIndexEntry));
		}
		memcpy(t->entries + t->n, e, n * sizeof(KpTxnIndexEntry));
		t->n += n;
		pfree(e);
	}
	t->observed = palloc0(sizeof(bool) * Max(t->n, 1));
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(int64);
	ctl.entrysize = sizeof(int64);
	ctl.hcxt = CurrentMemoryContext;
	t->committed = hash_create("kafka_pg clean producers", 64, &ctl,
							   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* The entry saying the batch of producer_id at offset aborted, or -1. */
static int
txns_aborted(KpCleanTxns *t, int64 producer_id, int64 offset)
{
	for (int i = 0; i < t->n; i++)
		if (t->entries[i].producer_id == producer_id &&
			t->entries[i].first_offset <= offset && offset <= t->entries[i].last_offset)
			return i;
	return -1;
}

/* The entry of the ABORT marker of producer_id at offset, or -1. */
static int
txns_marker(KpCleanTxns *t, int64 producer_id, int64 offset)
{
	for (int i = 0; i < t->n; i++)
		if (t->entries[i].producer_id == producer_id && t->entries[i].last_offset == offset)
			return i;
	return -1;
}

/* ---------- reading a segment's batches ---------- */

typedef struct KpSegScan
{
	Relation	rel;
	int64		pos;
	int64		size;
	char	   *buf;
	size_t		cap;
} KpSegScan;

static void
scan_open(KpSegScan *s, Oid relnode, int64 from_offset)
{
	s->rel = kp_segment_open(relnode);
	s->size = kp_segment_data_size(s->rel);
	s->pos = from_offset >= 0 ? kp_segment_seek_offset(s->rel, from_offset) : 0;
	s->buf = NULL;
	s->cap = 0;
}

/* The next batch; false at the end of the segment's data. */
static bool
scan_next(KpSegScan *s, KpBatchHeader *hdr, size_t *len)
{
	char		hdrbuf[KP_BATCH_HEADER_SIZE];
	size_t		total;

	if (s->pos + KP_BATCH_HEADER_SIZE > s->size)
		return false;
	if (!kp_segment_read(s->rel, s->pos, hdrbuf, KP_BATCH_HEADER_SIZE) ||
		kp_batch_parse_header(hdrbuf, KP_BATCH_HEADER_SIZE, hdr) != KP_CODEC_OK)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("kafka_pg segment %u has a corrupt batch header at byte %lld",
						s->rel->rd_node.relNode, (long long) s->pos)));
	total = KpBatchTotalSize(hdr);
	if (total > s->cap)
	{
		s->cap = Max(total, 65536);
		s->buf = s->buf ? repalloc(s->buf, s->cap) : palloc(s->cap);
	}
	if (s->pos + (int64) total > s->size || !kp_segment_read(s->rel, s->pos, s->buf, total))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("kafka_pg segment %u has an incomplete batch at byte %lld",
						s->rel->rd_node.relNode, (long long) s->pos)));
	s->pos += total;
	*len = total;
	return true;
}

static void
scan_close(KpSegScan *s)
{
	kp_segment_close(s->rel);
	if (s->buf)
		pfree(s->buf);
}

/* ---------- the I/O throttle (kafka.log_cleaner_io_max_bytes_per_second) ---------- */

typedef struct KpThrottle
{
	double		rate;			/* bytes per second, <= 0 unlimited */
	int64		start_us;
	int64		bytes;
} KpThrottle;

static int64
now_us(void)
{
	return (int64) GetCurrentTimestamp();
}

static void
throttle(KpThrottle *t, int64 bytes)
{
	int64		due_us;
	int64		elapsed;

	t->bytes += bytes;
	if (t->rate <= 0 || t->rate >= DBL_MAX)
		return;
	due_us = (int64) ((double) t->bytes / t->rate * 1000000.0);
	elapsed = now_us() - t->start_us;
	while (due_us > elapsed)
	{
		long		ms = Min((due_us - elapsed) / 1000 + 1, 1000);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		elapsed = now_us() - t->start_us;
	}
}

/* ---------- building the map ---------- */

/*
 * Map the dirty range [from, upto); returns the end of what was mapped:
 * upto, or the base offset of the first batch that did not fit.
 */
static int64
build_map(KpOffsetMap *map, KpCleanTxns *txns, const KpSegInfo *segs, int nsegs,
		  int64 from, int64 upto, KpThrottle *thr)
{
	int			i;

	for (i = 0; i < nsegs; i++)
	{
		KpSegScan	s;
		KpBatchHeader hdr;
		size_t		len;

		if (segs[i].base_offset >= upto)
			break;
		if (i + 1 < nsegs && segs[i + 1].base_offset <= from)
			continue;
		scan_open(&s, segs[i].relnode, from);
		while (scan_next(&s, &hdr, &len))
		{
			KpRecordIter it;
			KpRecord	rec;
			bool		done = false;

			CHECK_FOR_INTERRUPTS();
			throttle(thr, len);
			if (hdr.base_offset >= upto)
				break;
			if (KpBatchLastOffset(&hdr) < from || KpBatchIsControl(&hdr))
				continue;
			if (KpBatchIsTransactional(&hdr) &&
				txns_aborted(txns, hdr.producer_id, hdr.base_offset) >= 0)
				continue;
			if (map->count + (uint64) Max(hdr.records_count, 0) > map->max_count)
			{
				scan_close(&s);
				return hdr.base_offset;
			}
			if (kp_record_iter_begin(&it, s.buf, len, KP_COMPACT_MAX_INFLATE) != KP_CODEC_OK)
				continue;		/* copied as it is by the rewrite */
			while (kp_record_iter_next(&it, &rec, &done) == KP_CODEC_OK && !done)
			{
				if (rec.offset < from || rec.offset >= upto || rec.key == NULL)
					continue;
				map_put(map, rec.key, rec.key_len, rec.offset);
			}
			kp_record_iter_end(&it);
		}
		scan_close(&s);
	}
	return upto;
}

/* ---------- the rewrite of one group ---------- */

typedef struct KpCleanState
{
	KpOffsetMap *map;
	int64		map_end;		/* records at or past it are kept */
	KpCleanTxns *txns;
	int64		now_ms;
	int64		delete_retention_ms;
	KpThrottle *thr;
	KpCompactResult *result;
	/* the new segment's index entries */
	KpTxnIndexEntry *new_entries;
	int			nnew;
	int			newcap;
} KpCleanState;

static void
note_horizon(KpCleanState *cs, int64 horizon)
{
	if (cs->result->next_delete_horizon_ms < 0 ||
		horizon < cs->result->next_delete_horizon_ms)
		cs->result->next_delete_horizon_ms = horizon;
}

static void
keep_index_entry(KpCleanState *cs, const KpTxnIndexEntry *e)
{
	if (cs->nnew == cs->newcap)
	{
		cs->newcap = cs->newcap ? cs->newcap * 2 : 8;
		cs->new_entries = cs->new_entries ?
			repalloc(cs->new_entries, cs->newcap * sizeof(KpTxnIndexEntry)) :
			palloc(cs->newcap * sizeof(KpTxnIndexEntry));
	}
	cs->new_entries[cs->nnew++] = *e;
}

/*
 * Decide one batch: *out and *out_len, the bytes to write (the batch itself, a
 * rebuilt one, or NULL to drop it).
 */
static void
clean_batch(KpCleanState *cs, const char *batch, size_t len,
			const KpBatchHeader *hdr, const char **out, size_t *out_len)
{
	bool		has_horizon = (hdr->attributes & KP_ATTR_DELETE_HORIZON) != 0;
	int64		horizon = has_horizon ? hdr->base_timestamp : -1;
	KpRecordIter it;
	KpRecord	rec;
	bool		done = false;
	bool	   *keep;
	int			nrecs = 0;
	int			nkept = 0;
	bool		kept_tombstone = false;
	KpCodecError err;

	*out = batch;
	*out_len = len;

	if (KpBatchIsControl(hdr))
	{
		bool		can_discard;
		int16		type = -1;
		int			e = -1;

		if (!KpBatchIsTransactional(hdr))
			return;
		if (kp_record_iter_begin(&it, batch, len, KP_COMPACT_MAX_INFLATE) == KP_CODEC_OK)
		{
			if (kp_record_iter_next(&it, &rec, &done) == KP_CODEC_OK && !done)
				(void) kp_parse_control_key(rec.key, rec.key_len, &type);
			kp_record_iter_end(&it);
		}
		if (type == KP_CONTROL_ABORT)
		{
			/*
			 * Without its index entry (invariant 9 says it has one) the
			 * marker is kept: it is all that tells the transaction aborted.
			 */
			e = txns_marker(cs->txns, hdr->producer_id, hdr->base_offset);
			can_discard = (e >= 0 && !cs->txns->observed[e]);
		}
		else if (type == KP_CONTROL_COMMIT)
		{
			bool		found;

			hash_search(cs->txns->committed, &hdr->producer_id, HASH_REMOVE, &found);
			can_discard = !found;
		}
		else
			return;				/* another control type: kept as it is */

		if (can_discard && has_horizon && horizon <= cs->now_ms)
		{
			*out = NULL;		/* its transaction is gone, and its horizon */
			cs->result->records_removed += Max(hdr->records_count, 0);
			return;
		}
		if (e >= 0)
			keep_index_entry(cs, &cs->txns->entries[e]);
		if (can_discard && !has_horizon)
		{
			char	   *rebuilt;
			size_t		rlen;
			int32		kept;
			bool		all[1] = {true};
			int64		h = cs->now_ms + cs->delete_retention_ms;

			if (kp_batch_filter(batch, len, KP_COMPACT_MAX_INFLATE, all, 1,
								hdr->attributes | KP_ATTR_DELETE_HORIZON, h,
								&rebuilt, &rlen, &kept) == KP_CODEC_OK)
			{
				*out = rebuilt;
				*out_len = rlen;
				note_horizon(cs, h);
			}
		}
		else if (can_discard)
			note_horizon(cs, horizon);
		return;
	}

	if (KpBatchIsTransactional(hdr))
	{
		int			e = txns_aborted(cs->txns, hdr->producer_id, hdr->base_offset);

		if (e >= 0)
		{
			cs->txns->observed[e] = true;
			*out = NULL;
			cs->result->records_removed += Max(hdr->records_count, 0);
			return;
		}
		(void) hash_search(cs->txns->committed, &hdr->producer_id, HASH_ENTER, NULL);
	}

	if (kp_record_iter_begin(&it, batch, len, KP_COMPACT_MAX_INFLATE) != KP_CODEC_OK)
		return;					/* cannot decode: copied as it is */
	keep = palloc(sizeof(bool) * Max(hdr->records_count, 1));
	while ((err = kp_record_iter_next(&it, &rec, &done)) == KP_CODEC_OK && !done)
	{
		bool		k;

		if (nrecs >= Max(hdr->records_count, 1))
		{
			err = KP_CODEC_BAD_COUNT;
			break;
		}
		if (rec.offset >= cs->map_end)
			k = true;
		else if (rec.key == NULL)
			k = false;
		else
		{
			int64		found = map_get(cs->map, rec.key, rec.key_len);
			bool		latest = rec.offset >= found;
			bool		retain_delete = !has_horizon || cs->now_ms < horizon;

			k = latest && (rec.value != NULL || retain_delete);
		}
		if (k && rec.value == NULL)
			kept_tombstone = true;
		keep[nrecs++] = k;
		if (k)
			nkept++;
	}
	kp_record_iter_end(&it);
	if (err != KP_CODEC_OK)
	{
		pfree(keep);
		return;					/* cannot decode: copied as it is */
	}

	cs->result->records_removed += nrecs - nkept;
	if (nkept == 0)
		*out = NULL;
	else if (nkept < nrecs || (kept_tombstone && !has_horizon))
	{
		bool		set_horizon = kept_tombstone && !has_horizon;
		int64		base_ts = set_horizon ? cs->now_ms + cs->delete_retention_ms :
		hdr->base_timestamp;
		char	   *rebuilt;
		size_t		rlen;
		int32		kept;

		if (kp_batch_filter(batch, len, KP_COMPACT_MAX_INFLATE, keep, nrecs,
							set_horizon ? (hdr->attributes | KP_ATTR_DELETE_HORIZON) :
							hdr->attributes,
							base_ts, &rebuilt, &rlen, &kept) == KP_CODEC_OK)
		{
			*out = rebuilt;
			*out_len = rlen;
			if (kept_tombstone)
				note_horizon(cs, base_ts);
		}
		else
			cs->result->records_removed -= nrecs - nkept;	/* kept whole */
	}
	else if (kept_tombstone)
		note_horizon(cs, horizon);
	pfree(keep);
}

/*
 * Copy the segments segs[first..last] through clean_batch into one new
 * segment; returns its relfilenode, its data size in *size.
 */
static Oid
clean_group(KpCleanState *cs, int64 partition_id, const KpSegInfo *segs,
			int first, int last, int64 *size)
{
	KpSegmentMeta meta;
	KpSegmentMeta m;
	Relation	newrel;
	Oid			relnode;
	int64		pos = 0;
	int			i;

	/* the first segment's metapage: the roll-time fields of the group */
	{
		Relation	rel = kp_segment_open(segs[first].relnode);

		kp_segment_read_meta(rel, &m);
		kp_segment_close(rel);
	}
	memset(&meta, 0, sizeof(meta));
	meta.magic = KP_SEG_MAGIC;
	meta.version = KP_STORE_VERSION;
	meta.partition_id = partition_id;
	meta.base_offset = segs[first].base_offset;
	meta.first_open_offset = m.first_open_offset;
	meta.flags = m.flags & KP_SEGMETA_HAS_FIRST_OPEN;
	meta.txnindex_relnode = InvalidOid;
	meta.created_ms = m.created_ms;
	for (i = first + 1; i <= last; i++)
	{
		Relation	rel = kp_segment_open(segs[i].relnode);

		kp_segment_read_meta(rel, &m);
		kp_segment_close(rel);
		meta.created_ms = Max(meta.created_ms, m.created_ms);
	}
	/* outside any transaction that could drop it (invariant 6) */
	relnode = kp_store_create_relation(false, &meta, sizeof(meta));
	newrel = kp_segment_open(relnode);
	cs->nnew = 0;

	for (i = first; i <= last; i++)
	{
		KpSegScan	s;
		KpBatchHeader hdr;
		size_t		len;

		scan_open(&s, segs[i].relnode, -1);
		cs->result->bytes_before += s.size;
		while (scan_next(&s, &hdr, &len))
		{
			const char *out;
			size_t		out_len;
			KpBatchHeader ohdr;

			CHECK_FOR_INTERRUPTS();
			clean_batch(cs, s.buf, len, &hdr, &out, &out_len);
			throttle(cs->thr, len + (out ? out_len : 0));
			if (out == NULL)
				continue;
			(void) kp_batch_parse_header(out, out_len, &ohdr);
			(void) kp_segment_write(newrel, pos, out, out_len, ohdr.base_offset,
									KpBatchIsControl(&ohdr) ? -1 : ohdr.max_timestamp);
			pos += out_len;
			if (out != s.buf)
				pfree((char *) out);
		}
		scan_close(&s);
	}

	/* the ABORT markers kept, with their entries, in marker order */
	for (i = 0; i < cs->nnew; i++)
		kp_txnindex_add(newrel, &cs->new_entries[i]);
	kp_segment_close(newrel);
	*size = pos;
	return relnode;
}

/* ---------- one partition ---------- */

/* a closed segment's largest timestamp, its creation time if it has none */
static int64
segment_time(Relation rel)
{
	int64		ts = kp_segment_max_timestamp(rel);

	if (ts < 0)
	{
		KpSegmentMeta meta;

		kp_segment_read_meta(rel, &meta);
		ts = meta.created_ms;
	}
	return ts;
}

/*
 * The max timestamp of the first batch at or after offset from, among the
 * segments segs[i..] that start below upto (Kafka's first batch timestamp
 * of the first dirty segment, for max.compaction.lag.ms), or -1.
 */
static int64
first_batch_time(const KpSegInfo *segs, int nsegs, int i, int64 from, int64 upto)
{
	int64		ts = -1;

	for (; ts < 0 && i + 1 < nsegs && segs[i].base_offset < upto; i++)
	{
		KpSegScan	s;
		KpBatchHeader hdr;
		size_t		len;

		scan_open(&s, segs[i].relnode, from);
		while (scan_next(&s, &hdr, &len))
		{
			if (KpBatchLastOffset(&hdr) < from || hdr.max_timestamp < 0)
				continue;
			ts = hdr.max_timestamp;
			break;
		}
		scan_close(&s);
	}
	return ts;
}

void
kp_log_compact(int64 partition_id, const KpCompactConfig *config,
			   int64 now_ms, KpCompactResult *result)
{
	const KpSegInfo *dsegs;
	KpSegInfo  *segs;
	int			nsegs;
	int64	   *sizes;
	KpLogOffsets off;
	int64		checkpoint;
	int64		first_dirty;
	int64		first_uncleanable;
	int64		clean_bytes = 0;
	int64		dirty_bytes = 0;
	bool		by_lag = false;
	KpOffsetMap map;
	KpCleanTxns txns;
	KpThrottle	thr;
	KpCleanState cs;
	int64		map_end;
	int			ncleanable;
	int			i;
	MemoryContext cxt;
	MemoryContext old;

	memset(result, 0, sizeof(*result));
	result->first_dirty_offset = -1;
	result->first_uncleanable_offset = -1;
	result->end_offset = -1;
	result->next_delete_horizon_ms = -1;

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot compact a log during recovery"),
				 errhint("Compaction runs on the primary; standbys follow it by replay.")));

	/* kafka.store is read before the appender lock is taken (README) */
	(void) kp_directory_relnode();

	cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_pg compaction",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);

	dsegs = kp_directory_segments(partition_id, &nsegs);
	if (nsegs < 2)
		goto done;				/* only the active segment */
	segs = palloc(sizeof(KpSegInfo) * nsegs);
	memcpy(segs, dsegs, sizeof(KpSegInfo) * nsegs);
	checkpoint = kp_directory_cleaner_checkpoint(partition_id);
	kp_partition_offsets(partition_id, &off);

	/* 1. the cleanable range */
	first_dirty = Max(checkpoint, off.log_start_offset);
	if (first_dirty > off.log_end_offset)
		first_dirty = off.log_start_offset;
	first_uncleanable = Min(segs[nsegs - 1].base_offset, off.last_stable_offset);
	sizes = palloc0(sizeof(int64) * nsegs);
	for (i = 0; i + 1 < nsegs; i++)
	{
		Relation	rel = kp_segment_open(segs[i].relnode);

		sizes[i] = kp_segment_data_size(rel);
		if (config->min_compaction_lag_ms > 0 &&
			segs[i + 1].base_offset > first_dirty &&
			segs[i].base_offset < first_uncleanable &&
			segment_time(rel) > now_ms - config->min_compaction_lag_ms)
			first_uncleanable = Max(segs[i].base_offset, first_dirty);
		kp_segment_close(rel);
	}
	if (first_uncleanable < first_dirty)
		first_uncleanable = first_dirty;
	for (i = 0; i + 1 < nsegs; i++)
	{
		if (segs[i + 1].base_offset <= first_dirty)
			clean_bytes += sizes[i];
		else if (segs[i].base_offset < first_uncleanable)
			dirty_bytes += sizes[i];
	}
	result->first_dirty_offset = first_dirty;
	result->first_uncleanable_offset = first_uncleanable;
	result->dirty_ratio = (clean_bytes + dirty_bytes) > 0 ?
		(double) dirty_bytes / (double) (clean_bytes + dirty_bytes) : 0.0;

	if (dirty_bytes > 0 && config->max_compaction_lag_ms > 0 &&
		now_ms - config->max_compaction_lag_ms > 0)
	{
		for (i = 0; i + 1 < nsegs; i++)
			if (segs[i + 1].base_offset > first_dirty)
				break;
		{
			int64		ts = first_batch_time(segs, nsegs, i, first_dirty,
											  first_uncleanable);

			by_lag = ts >= 0 && ts < now_ms - config->max_compaction_lag_ms;
		}
	}
	if (!((dirty_bytes > 0 && (result->dirty_ratio > config->min_cleanable_dirty_ratio ||
							   by_lag)) ||
		  config->delete_horizon_due))
		goto done;
	if (first_uncleanable <= segs[0].base_offset)
		goto done;
	result->forced = !(dirty_bytes > 0 &&
					   result->dirty_ratio > config->min_cleanable_dirty_ratio);

	/* 2. the offset map over the dirty range */
	memset(&thr, 0, sizeof(thr));
	thr.rate = config->io_max_bytes_per_second;
	thr.start_us = now_us();
	txns_load(&txns, segs, nsegs);
	map_init(&map, config->dedupe_buffer_size, dirty_bytes);
	map_end = build_map(&map, &txns, segs, nsegs, first_dirty, first_uncleanable, &thr);
	if (map_end <= first_dirty && first_dirty < first_uncleanable && map.count == 0 &&
		!config->delete_horizon_due)
	{
		ereport(WARNING,
				(errmsg("kafka_pg: partition %lld not compacted: one batch has more records than the offset map holds",
						(long long) partition_id),
				 errhint("Raise kafka.log_cleaner_dedupe_buffer_size.")));
		goto done;
	}
	result->end_offset = Max(map_end, first_dirty);

	/*
	 * 3. the segments to rewrite: from the first up to the one holding
	 * map_end
	 */
	for (ncleanable = 0; ncleanable + 1 < nsegs; ncleanable++)
		if (segs[ncleanable].base_offset >= result->end_offset)
			break;
	if (ncleanable == 0)
		goto done;

	memset(&cs, 0, sizeof(cs));
	cs.map = &map;

	/*
	 * Records from map_end on are kept as they are.  A map_end below the
	 * first dirty offset means the map is empty (the batch straddling the
	 * first dirty offset did not fit): the clean part is still cleaned of
	 * tombstones and markers whose horizon has passed.
	 */
	cs.map_end = Max(map_end, first_dirty);
	cs.txns = &txns;
	cs.now_ms = now_ms;
	cs.delete_retention_ms = config->delete_retention_ms;
	cs.thr = &thr;
	cs.result = result;

	/* 4. groups within segment.bytes, each rewritten then swapped in */
	i = 0;
	while (i < ncleanable)
	{
		int			last = i;
		int64		group_bytes = sizes[i];
		int64		newsize;
		Oid			relnode;
		KpPartitionState *state;
		bool		final;

		while (last + 1 < ncleanable && group_bytes + sizes[last + 1] <= config->segment_bytes)
			group_bytes += sizes[++last];
		relnode = clean_group(&cs, partition_id, segs, i, last, &newsize);
		final = (last + 1 == ncleanable);

		/* the swap: one WAL record, under the appender lock */
		state = kp_partition_lock(partition_id, true);
		PG_TRY();
		{
			kp_directory_publish_cleaned(partition_id, segs[i].base_offset,
										 segs[last + 1].base_offset, relnode,
										 final ? result->end_offset : -1);
			state->segment_count -= last - i;
			state->closed_bytes += newsize - group_bytes;
		}
		PG_CATCH();
		{
			state->loaded = false;
			PG_RE_THROW();
		}
		PG_END_TRY();
		kp_partition_unlock(state);

		result->segments_before += last - i + 1;
		result->segments_after++;
		result->bytes_after += newsize;
		i = last + 1;
	}
	result->cleaned = true;

done:
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

int64
kp_log_first_dirty_offset(int64 partition_id)
{
	int64		checkpoint = kp_directory_cleaner_checkpoint(partition_id);
	int64		log_start = kp_directory_log_start(partition_id);
	int			nsegs;
	const KpSegInfo *segs = kp_directory_segments(partition_id, &nsegs);

	if (nsegs > 0)
		log_start = Max(log_start, segs[0].base_offset);
	return Max(Max(checkpoint, log_start), 0);
}
