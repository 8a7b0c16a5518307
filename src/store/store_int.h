/*-------------------------------------------------------------------------
 *
 * store_int.h
 *	  Internals shared by the files of src/store; nothing outside includes it.
 *
 * Page layouts
 * ------------
 * A segment is a relation (no pg_class entry; see docs/architecture.md):
 *
 *	block 0		metapage: KpSegmentMeta after the page header
 *	block 1..n	data pages: the segment's batches as one byte stream; page b
 *				holds stream bytes [(b-1)*C, b*C) with C = KP_SEG_DATA_PER_PAGE,
 *				in [SizeOfPageHeaderData, pd_lower), and a KpSegPageOpaque in
 *				its special space.
 *
 * The data lives below pd_lower, never in the pd_lower..pd_upper "hole" that
 * full-page images and generic WAL deltas leave out.
 *
 * KpSegPageOpaque is the sparse offset index and time index of the segment,
 * one entry per 8 kB page (Kafka's default index.interval.bytes is 4 kB):
 * the batch covering the first byte of the page, and the largest timestamp
 * in the segment up to the end of the page.  Both are monotonic over the
 * pages, so a lookup is a binary search over pages plus a short walk.
 *
 * The segment directory relation has the same metapage-plus-pages shape with
 * KpDirEntry records instead of a byte stream.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_STORE_INT_H
#define KP_STORE_INT_H

#include "store/store.h"
#include "codec/codec.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "storage/bufmgr.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "storage/relfilenode.h"
#include "utils/rel.h"

#define KP_SEG_MAGIC			0x4B504C47	/* "KPLG" */
#define KP_DIR_MAGIC			0x4B504449	/* "KPDI" */
#define KP_STORE_VERSION		1

typedef struct KpSegPageOpaque
{
	int64		cover_offset;	/* base offset of the batch covering byte 0 */
	int64		cover_pos;		/* its start position in the stream */
	int64		max_timestamp;	/* max batch maxTimestamp up to page end */
	uint32		magic;
	uint32		unused;
} KpSegPageOpaque;

#define KP_SEG_DATA_PER_PAGE \
	(BLCKSZ - SizeOfPageHeaderData - MAXALIGN(sizeof(KpSegPageOpaque)))

#define KpSegOpaque(page) ((KpSegPageOpaque *) PageGetSpecialPointer(page))
#define KpPageData(page)	((char *) (page) + SizeOfPageHeaderData)
#define KpPageDataLen(page) (((PageHeader) (page))->pd_lower - SizeOfPageHeaderData)

typedef struct KpSegmentMeta
{
	uint32		magic;
	uint32		version;
	int64		partition_id;
	int64		base_offset;
	int64		created_ms;		/* for segment.ms */

	/*
	 * Added by issue 8; zero in segments written before it (flags 0).
	 *
	 * first_open_offset: when the segment was rolled, the first offset of the
	 * earliest transaction without a marker (the partition's last stable
	 * offset then), or base_offset if none.  Recovery walks the batches from
	 * there to find every transaction still open.
	 *
	 * txnindex_relnode: the segment's aborted-transaction index (txnindex.c),
	 * created with the first ABORT marker written to the segment; InvalidOid
	 * until then.
	 */
	int64		first_open_offset;
	Oid			txnindex_relnode;
	uint32		flags;
} KpSegmentMeta;

#define KP_SEGMETA_HAS_FIRST_OPEN	0x0001	/* first_open_offset is set */

/* One segment as readers and the appender know it. */
typedef struct KpSegInfo
{
	int64		base_offset;
	Oid			relnode;
} KpSegInfo;

/* ---------- directory.c ---------- */

typedef struct KpDirEntry
{
	int64		partition_id;
	int64		base_offset;
	Oid			relnode;
	uint32		flags;
} KpDirEntry;

#define KP_DIRENT_DROPPED		0x0001
/*
 * Not a segment: "the partition's log start offset is base_offset" (Kafka's
 * DeleteRecords, logstart.c).  relnode is InvalidOid.  Append-only like the
 * segment entries; the largest one of a partition wins.
 */
#define KP_DIRENT_LOG_START		0x0002

/*
 * Log compaction (compaction.c): a cleaned segment in relnode, base offset
 * base_offset, that replaces the partition's segments whose base offsets
 * lie in [base_offset, E), E being the base_offset of the
 * KP_DIRENT_CLEANED_END entry that always follows it in the same WAL
 * record.  The replaced segments stay listed in the directory until their
 * storage is dropped (DROPPED flag), but no reader is given them.
 */
#define KP_DIRENT_CLEANED		0x0004
#define KP_DIRENT_CLEANED_END	0x0008
/*
 * Not a segment: the cleaner checkpoint of the partition (Kafka's
 * cleaner-offset-checkpoint): compaction has cleaned the log below
 * base_offset, the first dirty offset.  The largest one wins.
 */
#define KP_DIRENT_CLEANER_CHECKPOINT 0x0010

#define KP_DIRENT_NOT_SEGMENT \
	(KP_DIRENT_LOG_START | KP_DIRENT_CLEANED_END | KP_DIRENT_CLEANER_CHECKPOINT)

#define KP_DIR_ENTRIES_PER_PAGE \
	((BLCKSZ - SizeOfPageHeaderData) / sizeof(KpDirEntry))

typedef struct KpDirMeta
{
	uint32		magic;
	uint32		version;
	uint64		change_count;	/* bumped by every change */
	uint64		drop_count;		/* bumped by every drop (forces a full reload) */
	uint32		nentries;
} KpDirMeta;

extern Oid	kp_directory_relnode(void);
extern void kp_directory_add(int64 partition_id, int64 base_offset, Oid relnode);
extern void kp_directory_mark_dropped(int64 partition_id, Oid relnode);

/*
 * A segment whose storage went with a rolled-back subtransaction (of a
 * partition the current transaction created, so no other backend sees it):
 * this backend's directory cache leaves it out at once, and
 * kp_directory_flag_lost_segments flags it dropped at pre-commit;
 * kp_directory_forget_lost_segments ends the list with the transaction.
 */
extern void kp_directory_lose_segment(int64 partition_id, Oid relnode);
extern void kp_directory_flag_lost_segments(void);
extern void kp_directory_forget_lost_segments(void);

/*
 * The segments of a partition in base-offset order (a backend-local cache,
 * revalidated against the directory metapage on every call).  The array is
 * owned by the cache: valid until the next directory call.
 */
extern const KpSegInfo *kp_directory_segments(int64 partition_id, int *nsegs);

/* Record a raised log start offset (WAL-logged, not transactional). */
extern void kp_directory_set_log_start(int64 partition_id, int64 log_start_offset);

/* The largest log start offset recorded for a partition, or -1. */
extern int64 kp_directory_log_start(int64 partition_id);

/*
 * Publish a cleaned segment (compaction.c): one WAL record appends its
 * KP_DIRENT_CLEANED entry, the KP_DIRENT_CLEANED_END entry with end_offset
 * and, if checkpoint >= 0, a KP_DIRENT_CLEANER_CHECKPOINT entry.  From
 * then on readers list relnode in place of the segments with base offsets
 * in [base_offset, end_offset).
 */
extern void kp_directory_publish_cleaned(int64 partition_id, int64 base_offset,
										 int64 end_offset, Oid relnode,
										 int64 checkpoint);

/* The largest cleaner checkpoint of a partition, or -1. */
extern int64 kp_directory_cleaner_checkpoint(int64 partition_id);

/*
 * Segments that left the partition's log and are not flagged dropped yet:
 * those a cleaned segment replaced and those wholly below the log start
 * offset, in the order they left (their storage is dropped by
 * kp_log_drop_replaced_segments after file.delete.delay.ms, or at the first
 * pass after a restart).  Owned by the cache, like kp_directory_segments's
 * array.
 */
extern const KpSegInfo *kp_directory_replaced(int64 partition_id, int *nsegs);

/* ---------- segment.c ---------- */

extern Relation kp_segment_open(Oid relnode);
extern void kp_segment_close(Relation rel);

/* RelationDropStorage at most once per transaction (segment.c says why) */
extern void kp_segment_drop_storage(Oid relnode);
extern Oid	kp_segment_create(int64 partition_id, int64 base_offset,
							  int64 first_open_offset, bool drop_on_abort);
extern void kp_segment_write_meta(Relation rel, const KpSegmentMeta *meta);
extern Oid	kp_store_create_relation(bool drop_on_abort, const void *meta, Size metalen);
extern void kp_segment_read_meta(Relation rel, KpSegmentMeta *meta);
extern struct GenericXLogState *kp_store_append_entry(Relation rel, Buffer metabuf,
													  uint32 nentries, const void *entry,
													  Size entrysize, int per_page,
													  Page *metapage, Buffer *entrybuf);

/* Bytes of batch data in the segment (from its pages). */
extern int64 kp_segment_data_size(Relation rel);

/*
 * Append len bytes at stream position pos (== current data size) with the
 * index entries for a batch [base_offset, last_offset] of max_timestamp.
 * WAL-logged; returns the LSN of the last record written.
 */
extern XLogRecPtr kp_segment_write(Relation rel, int64 pos, const char *data,
								   size_t len, int64 base_offset,
								   int64 max_timestamp);

/* Copy len bytes from stream position pos; false if not all present. */
extern bool kp_segment_read(Relation rel, int64 pos, char *dst, size_t len);
extern bool kp_segment_read_cached(Relation rel, BlockNumber *nblocks, int64 pos,
								   char *dst, size_t len);

/* kp_segment_read_batch: what happened, or what decide() wants done */
typedef enum KpSegBatchStatus
{
	KP_SEGBATCH_OK,				/* copied (decide: copy it) */
	KP_SEGBATCH_SKIP,			/* decide: not this one, go past it */
	KP_SEGBATCH_STOP,			/* decide: stop before it */
	KP_SEGBATCH_END,			/* no batch starts here: the stream ends */
	KP_SEGBATCH_BAD_HEADER,		/* the bytes here are not a batch header */
	KP_SEGBATCH_SHORT			/* the batch is not whole */
} KpSegBatchStatus;

typedef KpSegBatchStatus (*KpSegBatchDecide) (const KpBatchHeader *hdr, void *arg);

extern KpSegBatchStatus kp_segment_read_batch(Relation rel, BlockNumber *nblocks,
											  Buffer *keep,
											  int64 pos, KpSegBatchDecide decide,
											  void *arg, KpBatchHeader *hdr,
											  StringInfo dst);

/*
 * Stream position of a batch at or before the one that contains offset
 * (the cover batch of the last page whose cover_offset <= offset).
 */
extern int64 kp_segment_seek_offset(Relation rel, int64 offset);
extern int64 kp_segment_seek_offset_cached(Relation rel, BlockNumber *nblocks,
										   int64 offset);

/* The block count of a segment holding size bytes (metapage and data pages) */
extern BlockNumber kp_segment_blocks_for(int64 size);

/* The first batch of the segment above leader epoch epoch, below end_offset; -1 if none. */
extern int64 kp_segment_epoch_end(Relation rel, int32 epoch, int64 end_offset);

/* Stream position to start scanning for the first timestamp >= ts, or -1. */
extern int64 kp_segment_seek_timestamp(Relation rel, int64 ts);

/* Largest timestamp in the segment, -1 when empty. */
extern int64 kp_segment_max_timestamp(Relation rel);

/* Blocks past those holding size bytes (zero pages left by a crash)? */
extern bool kp_segment_has_excess_blocks(Relation rel, int64 size);

/* Cut the stream back to size bytes (torn-tail recovery). WAL-logged. */
extern void kp_segment_truncate(Relation rel, int64 size);

/* ---------- the partition table (partition.c) ---------- */

#define KP_MAX_OPEN_TXNS		64

typedef struct KpOpenTxn
{
	int64		producer_id;
	int64		first_offset;
	int16		producer_epoch;
	uint8		outcome;		/* KpTxnOutcome */
	int16		marker_epoch;	/* once decided, the epoch its marker carries
								 * if above producer_epoch (the coordinator
								 * bumped it: KIP-890 part 2, a fence); else
								 * -1.  Not kept in snapshots (no decision is) */
} KpOpenTxn;

/* An idempotent producer's recent batches in one partition (KIP-98). */
#define KP_PRODUCER_BATCHES		5	/* Kafka keeps the last 5 */
#define KP_MAX_PRODUCERS		16	/* per partition; least recent evicted */

typedef struct KpProducerBatch
{
	int32		first_seq;
	int32		last_seq;
	int64		base_offset;
	int64		last_offset;
} KpProducerBatch;

typedef struct KpProducerState
{
	int64		producer_id;	/* -1: free slot */
	int16		epoch;
	int16		nbatches;		/* 0: the epoch was bumped by a marker */
	int64		last_used;		/* for eviction: partition append count */
	int64		marker_offset;	/* the marker that bumped epoch, -1: none */
	KpProducerBatch batches[KP_PRODUCER_BATCHES];	/* oldest first */
} KpProducerState;

typedef struct KpPartitionKey
{
	Oid			dboid;
	int64		partition_id;
} KpPartitionKey;

#define KP_HW_RING				16
#define KP_HELD_TXNS			8

/* KpPartitionState.no_markers */
#define KP_NO_MARKERS_DROPPING	0x01	/* a transaction deleting the
										 * partition (its topic, or the
										 * extension) is committing: set at
										 * its pre-commit, before its commit
										 * record; cleared if it aborts (at
										 * commit the state is forgotten) */
#define KP_NO_MARKERS_CREATING	0x02	/* a running transaction created its
										 * storage (append.c, a partition not
										 * yet committed): its abort record
										 * drops it; cleared at its commit (at
										 * abort the state is forgotten) */

typedef struct KpPartitionState
{
	KpPartitionKey key;			/* hash key: must be first */
	LWLock		lock;			/* the appender lock: guards all below but
								 * published */

	/*
	 * The entry's lifetime (partition.c, "Pins"): every process that holds a
	 * pointer to the entry holds a pin, taken under the map lock with the
	 * lookup and dropped with the appender lock (kp_partition_unlock,
	 * kp_partition_unpin).  An entry whose partition is gone is marked
	 * forgotten (under the map lock): no lookup finds it any more, and the
	 * last pin out removes it from the map, so its memory, and the LWLock
	 * above, are never reused while anyone may still touch them.
	 */
	pg_atomic_uint32 pins;
	bool		forgotten;

	/*
	 * The offsets readers see, published by kp_partition_unlock under
	 * published_mutex, so readers need no appender lock.
	 */
	slock_t		published_mutex;
	bool		published_valid;
	KpLogOffsets published;

	/*
	 * The high watermark (docs/replication.md), also under published_mutex:
	 * every offset below hw is on every in-sync replica.  hw_ring holds, for
	 * the appends not known to be there yet, the log end offset after each
	 * and the end of its WAL, oldest first; readers move hw up to the newest
	 * entry the in-sync replicas have (kp_partition_offsets) and drop the
	 * entries below.  A full ring keeps every other entry (the newest
	 * always): the high watermark then lags a little, never leads.  Above
	 * "loaded", so a reload after a failed append keeps it.
	 */
	bool		hw_valid;
	int64		hw;
	int			hw_count;
	struct
	{
		int64		end_offset;
		XLogRecPtr	end_lsn;
	}			hw_ring[KP_HW_RING];

	/*
	 * Transactions whose marker is written but not yet below the high
	 * watermark (Kafka's unreplicated transactions), also under
	 * published_mutex: readers see a last stable offset no higher than their
	 * first offset until every in-sync replica has the marker, so that no
	 * consumer reads a transaction as decided before its decision (the WAL
	 * before the marker) would survive a failover.  Writers add one per
	 * marker (kp_partition_hold_lso); readers drop those below the high
	 * watermark.  When full, the last entry absorbs a new one (the lower
	 * first offset, the higher marker offset): held a little longer, never
	 * shorter.  Above "loaded", so a reload keeps them (install_state drops
	 * those whose marker the reload cut off).
	 */
	int			held_count;
	struct
	{
		int64		first_offset;
		int64		marker_offset;
	}			held[KP_HELD_TXNS];

	/*
	 * The delayed drops (kp_log_drop_replaced_segments): the segments of the
	 * replaced list up to drop_mark_relnode had all left the log by
	 * drop_mark_ms.  Set at the partition's first load (everything replaced
	 * then left before the server started: drop_mark_ms 0), kept across
	 * reloads.  Under the appender lock.
	 */
	bool		drop_mark_init;
	Oid			drop_mark_relnode;	/* InvalidOid: no mark */
	int64		drop_mark_ms;

	/*
	 * Why no COMMIT/ABORT marker may be written to the partition now
	 * (KP_NO_MARKERS_*, README invariant 13): its segments are dropped by the
	 * commit or the abort record of a transaction that has not finished, and
	 * a record after that one would reach a standby after the file is gone;
	 * its replay would stop the standby.  Markers are the only writes not
	 * under the topic's lock.  Under the appender lock; kept across reloads.
	 */
	uint8		no_markers;

	/*
	 * The transaction that is dropping the partition's storage
	 * (kp_log_drop_partition; cleared if it aborts), else invalid: a load
	 * waits for it to end, and then finds the entry forgotten or the mark
	 * gone (partition.c, load_partition).  Under the appender lock; kept
	 * across reloads.
	 */
	TransactionId dropping_xid;

	/*
	 * From here to the end: the state recovery.c rebuilds from the store,
	 * installed as one block by partition.c.
	 */
	bool		loaded;			/* recovered from the store */
	int64		log_start_offset;
	int64		log_end_offset;
	int64		last_stable_offset;
	int64		max_timestamp;
	int64		max_timestamp_offset;
	/* the active (last) segment */
	Oid			active_relnode; /* InvalidOid before the first append */
	int64		active_base_offset;
	int64		active_size;
	int64		active_created_ms;
	int32		segment_count;
	int64		closed_bytes;	/* data bytes in the other segments */
	KpLogConfig config;			/* as of the last append */
	int			ntxns;
	bool		has_decided;	/* some txn is decided but has no marker */
	KpOpenTxn	txns[KP_MAX_OPEN_TXNS];
	int64		append_count;
	KpProducerState producers[KP_MAX_PRODUCERS];

	/*
	 * The last producer-state snapshot (prodsnap.c) in the active segment's
	 * metapage: the segment it is in (InvalidOid: none in the active one) and
	 * the active segment's size when it was taken.
	 */
	Oid			snapshot_relnode;
	int64		snapshot_size;
} KpPartitionState;

/*
 * A producer-state snapshot (prodsnap.c): what recovery would rebuild by
 * walking the batch headers of the log below offset (the open
 * transactions, the idempotent producers), kept in the active segment's
 * metapage after its KpSegmentMeta.  Recovery restores it and walks only
 * the batches from pos on.  Fixed-size arrays; unused slots zero.
 */
#define KP_PRODSNAP_MAGIC	0x4B505053	/* "KPPS" */
#define KP_PRODSNAP_VERSION 2	/* 2: KpProducerState.marker_offset */

typedef struct KpProducerSnapshot
{
	uint32		magic;
	uint32		version;
	int64		partition_id;
	Oid			relnode;		/* the segment it was taken in */
	int32		ntxns;
	int64		offset;			/* the log end offset when taken */
	int64		pos;			/* the segment's data size then */
	KpOpenTxn	txns[KP_MAX_OPEN_TXNS];
	KpProducerState producers[KP_MAX_PRODUCERS];
} KpProducerSnapshot;

/*
 * The producer-state snapshot in a segment's metapage: false if it has
 * none (a segment never snapshotted, or from before snapshots existed).
 * Writing it: the appender lock held; generic WAL (segment.c).
 */
extern bool kp_segment_read_prodsnap(Relation rel, KpProducerSnapshot *snap);
extern void kp_segment_write_prodsnap(Relation rel, const KpProducerSnapshot *snap);

#define KP_MAX_APPEND_WAITERS	64	/* a bit each in a wait bucket's mask */

typedef struct KpAppendWaiter
{
	Latch	   *latch;
	pg_atomic_uint32 waiting;
} KpAppendWaiter;

/*
 * Parked fetches wait by partition (waiters.c): a partition hashes to one
 * of these buckets; whoever publishes a change to a partition's offsets
 * (kp_partition_unlock) bumps its bucket's change count and sets the latch
 * of every waiter whose bit is in its mask.  Two partitions sharing a
 * bucket only cost a spurious wake-up.  KP_FETCH_WAIT_BUCKETS: store.h.
 */
typedef struct KpFetchWaitBucket
{
	pg_atomic_uint64 changes;	/* bumped by every change published */
	pg_atomic_uint64 waiters;	/* bit i: waiter slot i has a fetch parked on
								 * a partition of this bucket */
} KpFetchWaitBucket;

typedef struct KpStoreShared
{
	int			partition_tranche;
	LWLock	   *map_lock;		/* guards the partition hash table */
	LWLock	   *directory_lock; /* serialises directory appends */
	Latch	   *resolver_latch; /* set by the resolver at start */
	pg_atomic_uint32 resolver_idle; /* 1: asleep until woken (or 1 s) */
	pg_atomic_uint64 appends;	/* statistics */
	pg_atomic_uint32 nwaiting;	/* waiters with waiting set */
	slock_t		waiter_mutex;	/* guards slot allocation */
	KpAppendWaiter waiters[KP_MAX_APPEND_WAITERS];
	KpFetchWaitBucket fetch_buckets[KP_FETCH_WAIT_BUCKETS];
} KpStoreShared;

extern KpStoreShared *kp_store_shared;

extern KpPartitionState *kp_partition_lock(int64 partition_id, bool create);
extern KpPartitionState *kp_partition_lock_loaded(int64 partition_id);
extern void kp_partition_offsets(int64 partition_id, KpLogOffsets *out);
extern void kp_partition_unlock(KpPartitionState *state);
extern void kp_partition_note_append(KpPartitionState *state, int64 end_offset,
									 XLogRecPtr end_lsn);
extern void kp_partition_hold_lso(KpPartitionState *state, int64 first_offset,
								  int64 marker_offset);
extern KpPartitionState *kp_partition_find(Oid dboid, int64 partition_id);
extern void kp_partition_unpin(KpPartitionState *state);
extern List *kp_partition_ids(bool (*filter) (const KpPartitionState *state));
extern void kp_partition_created_in_xact(KpPartitionState *state, Oid relnode);

/* ms since the Unix epoch, as Kafka timestamps are */
extern int64 kp_now_ms(void);

/* ---------- recovery.c ---------- */

extern void kp_partition_recover(KpPartitionState *state);

/* ---------- append.c ---------- */

extern void kp_append_locked(KpPartitionState *state, const KpLogConfig *config,
							 bool drop_on_abort, char *batch, size_t len,
							 int64 txn_producer_id, KpAppendResult *result);

/* ---------- producer.c ---------- */

extern bool kp_producer_batch_is_idempotent(const KpBatchHeader *hdr);
extern void kp_producer_reset(KpPartitionState *state);
extern KpAppendStatus kp_producer_check_batch(KpPartitionState *state,
											  const KpBatchHeader *hdr,
											  KpAppendResult *result);
extern void kp_producer_note_bump(KpPartitionState *state, int64 producer_id,
								  int16 epoch, int64 marker_offset);
extern void kp_producer_note_batch(KpPartitionState *state,
								   const KpBatchHeader *hdr, int64 base_offset);

/* ---------- txnstate.c ---------- */

extern void kp_txnstate_check_room(KpPartitionState *state, int64 producer_id);
extern void kp_txnstate_add(KpPartitionState *state, int64 producer_id,
							int16 epoch, int64 first_offset);
extern void kp_txnstate_remove(KpPartitionState *state, int i);
extern void kp_txnstate_compute_lso(KpPartitionState *state);
extern int	kp_txnstate_write_markers(KpPartitionState *state);

/* ---------- txnindex.c ---------- */

/*
 * One entry of a segment's aborted-transaction index (Kafka's .txnindex
 * AbortedTxn): a transaction of producer_id whose ABORT marker is at
 * last_offset in this segment, its first batch at first_offset, and the
 * partition's last stable offset just after the marker.
 */
typedef struct KpTxnIndexEntry
{
	int64		producer_id;
	int64		first_offset;
	int64		last_offset;
	int64		last_stable_offset;
} KpTxnIndexEntry;

extern void kp_txnindex_add(Relation segrel, const KpTxnIndexEntry *entry);
extern KpTxnIndexEntry *kp_txnindex_read(Relation segrel, int *nentries);
extern void kp_txnindex_truncate(Relation segrel, int64 log_end_offset);
extern void kp_txnindex_drop(Relation segrel);

/* ---------- recovery.c: the open transactions of a partition ---------- */

/*
 * Find the transactions that have no marker at the end of the log (below
 * end_offset) into state->txns, walking the batch headers from the active
 * segment's first_open_offset (possibly in an older segment), or with
 * from_first from the first segment, to the end.  With end_pos >= 0 (the
 * active segment's end: kp_segment_find_end) and not from_first, the walk
 * starts at the active segment's producer-state snapshot when it has a
 * usable one (prodsnap.c; state->key.partition_id must be set).
 * note_producers: also rebuild the idempotent producers of the last
 * segment.  aborts: if not NULL, the ABORT markers met, as index entries,
 * in a palloc'd array.  first_open: if not NULL, [nsegs] filled, for each
 * segment walked, with the last stable offset when it was rolled (a walk
 * from a snapshot fills none).  Used by recovery and by standby readers
 * (their last stable offset).
 */
extern void kp_scan_open_txns(KpPartitionState *state, const KpSegInfo *segs,
							  int nsegs, int64 end_offset, int64 end_pos,
							  bool from_first, bool note_producers,
							  KpTxnIndexEntry **aborts, int *naborts,
							  int64 *first_open);

/*
 * A segment's log end: the offset after its last whole, CRC-valid batch
 * (base_offset if none) and, in *end_pos, the position after it; walks
 * from the last page's cover batch.
 */
extern int64 kp_segment_find_end(Relation rel, int64 base_offset, int64 *end_pos);

/* ---------- txnstate.c: the commit log, through src/txn ---------- */

extern KpTxnOutcome kp_txnstate_sql_outcome(int64 producer_id);

/* ---------- logstart.c ---------- */

extern int64 kp_logstart_advance(int64 partition_id, int64 before_offset,
								 bool check_bounds);
extern bool kp_logstart_schedule_drop(int64 partition_id, Oid relnode,
									  bool counted);

/* ---------- waiters.c ---------- */

extern void kp_notify_append_waiters(void);
extern void kp_notify_partition_waiters(const KpPartitionKey *key);


#endif							/* KP_STORE_INT_H */
