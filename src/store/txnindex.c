/*-------------------------------------------------------------------------
 *
 * txnindex.c
 *	  The aborted-transaction index of a segment (Kafka's .txnindex).
 *
 * For every transaction whose ABORT marker is in a segment, the segment's
 * index holds one entry: producer id, the transaction's first offset in
 * the partition, the marker's offset (last offset), and the partition's
 * last stable offset just after the marker (Kafka's AbortedTxn, whose
 * lastStableOffset tells a reader when it has collected every entry that
 * can cover a range: reader.c).  COMMIT markers need no entry: a decided
 * transaction without one committed.
 *
 * This is what decides a transaction once it has its marker, for SQL and
 * wire transactions alike.  The commit log is asked only about SQL
 * transactions that have no marker yet: once PostgreSQL freezes and
 * truncates pg_xact past a transaction, the commit log can no longer tell
 * (src/txn/README, the commit-log horizon defect).
 *
 * Layout: a relation of the store's kind (segment.c), created with the
 * segment's first ABORT marker and named in the segment's metapage
 * (KpSegmentMeta.txnindex_relnode).  Block 0 is a metapage
 * (KpTxnIndexMeta: the number of entries), blocks 1..n an array of
 * KpTxnIndexEntry in marker order, so last_offset increases along the
 * index and from one segment's index to the next.  Every change is one
 * generic WAL record covering the metapage and the entry page, so the
 * index survives a crash, replays on standbys with the segment, and is
 * dropped with it (kp_txnindex_drop, beside the segment's own drop).
 *
 * Writers hold the partition's appender lock: kp_txnindex_add is called by
 * kp_txnstate_write_markers right after it appends the ABORT marker, in
 * the same locked step, and by recovery (which owns the partition while it
 * loads it) to restore an entry whose marker a crash left without one.
 * Readers take only buffer share locks: the metapage first (the count),
 * then the entry pages, which never change below the count.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "catalog/storage.h"
#include "storage/bufmgr.h"
#include "storage/smgr.h"

#include "store/store_int.h"

#define KP_TXNINDEX_MAGIC		0x4B505458	/* "KPTX" */

typedef struct KpTxnIndexMeta
{
	uint32		magic;
	uint32		version;
	int64		partition_id;
	int64		segment_base_offset;
	uint32		nentries;
} KpTxnIndexMeta;

#define KP_TXNINDEX_PER_PAGE \
	((BLCKSZ - SizeOfPageHeaderData) / sizeof(KpTxnIndexEntry))

static KpTxnIndexMeta *
txnindex_meta(Relation rel, Page page)
{
	KpTxnIndexMeta *meta = (KpTxnIndexMeta *) PageGetContents(page);

	if (meta->magic != KP_TXNINDEX_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("kafka_pg aborted-transaction index %u has a bad metapage",
						rel->rd_node.relNode)));
	return meta;
}

/* The segment's index relation, or InvalidOid if it has none yet. */
static Oid
segment_txnindex(Relation segrel)
{
	KpSegmentMeta meta;

	kp_segment_read_meta(segrel, &meta);
	return meta.txnindex_relnode;
}

/*
 * Append an entry to the segment's index (where its ABORT marker is),
 * creating the index first if the segment has none.  The appender lock is
 * held, or the partition is being loaded (recovery); the caller marks the
 * partition for reloading if this fails (recovery restores the entry from
 * the marker).
 */
void
kp_txnindex_add(Relation segrel, const KpTxnIndexEntry *entry)
{
	KpSegmentMeta segmeta;
	Oid			relnode;
	Relation	rel;
	Buffer		metabuf;
	Buffer		buf;
	GenericXLogState *xstate;
	Page		metapage;
	KpTxnIndexMeta *meta;

	kp_segment_read_meta(segrel, &segmeta);
	relnode = segmeta.txnindex_relnode;
	if (!OidIsValid(relnode))
	{
		KpTxnIndexMeta m;

		memset(&m, 0, sizeof(m));
		m.magic = KP_TXNINDEX_MAGIC;
		m.version = KP_STORE_VERSION;
		m.partition_id = segmeta.partition_id;
		m.segment_base_offset = segmeta.base_offset;
		/* like the segment: not transactional (the marker is not either) */
		relnode = kp_store_create_relation(false, &m, sizeof(m));
		segmeta.txnindex_relnode = relnode;
		kp_segment_write_meta(segrel, &segmeta);
	}

	rel = kp_segment_open(relnode);
	metabuf = ReadBufferExtended(rel, MAIN_FORKNUM, 0, RBM_NORMAL, NULL);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	meta = txnindex_meta(rel, BufferGetPage(metabuf));
	xstate = kp_store_append_entry(rel, metabuf, meta->nentries, entry,
								   sizeof(KpTxnIndexEntry), KP_TXNINDEX_PER_PAGE,
								   &metapage, &buf);
	((KpTxnIndexMeta *) PageGetContents(metapage))->nentries++;
	GenericXLogFinish(xstate);

	UnlockReleaseBuffer(buf);
	UnlockReleaseBuffer(metabuf);
	kp_segment_close(rel);
}

/*
 * The entries of a segment's index, in marker order: a palloc'd array (NULL
 * if there are none).  Buffer share locks only; on a standby, what has
 * been replayed.
 */
KpTxnIndexEntry *
kp_txnindex_read(Relation segrel, int *nentries)
{
	Oid			relnode = segment_txnindex(segrel);
	Relation	rel;
	Buffer		metabuf;
	uint32		n;
	uint32		got = 0;
	KpTxnIndexEntry *out;
	BlockNumber blkno;

	*nentries = 0;
	if (!OidIsValid(relnode))
		return NULL;
	rel = kp_segment_open(relnode);
	metabuf = ReadBufferExtended(rel, MAIN_FORKNUM, 0, RBM_NORMAL, NULL);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	n = txnindex_meta(rel, BufferGetPage(metabuf))->nentries;
	UnlockReleaseBuffer(metabuf);
	if (n == 0)
	{
		kp_segment_close(rel);
		return NULL;
	}
	out = palloc(sizeof(KpTxnIndexEntry) * n);
	for (blkno = 1; got < n; blkno++)
	{
		Buffer		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
		uint32		k = Min(n - got, KP_TXNINDEX_PER_PAGE);

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		memcpy(out + got, PageGetContents(BufferGetPage(buf)),
			   k * sizeof(KpTxnIndexEntry));
		UnlockReleaseBuffer(buf);
		got += k;
	}
	kp_segment_close(rel);
	*nentries = (int) n;
	return out;
}

/*
 * Forget the entries whose marker is at or past log_end_offset: recovery
 * cut the marker away (a torn tail), so the transaction is open again and
 * gets a new marker.  The entries are in marker order, so this lowers the
 * count; the pages keep their bytes, which the next add overwrites.
 */
void
kp_txnindex_truncate(Relation segrel, int64 log_end_offset)
{
	Oid			relnode = segment_txnindex(segrel);
	int			n;
	int			keep;
	KpTxnIndexEntry *entries = kp_txnindex_read(segrel, &n);
	Relation	rel;
	Buffer		metabuf;
	GenericXLogState *xstate;
	Page		metapage;

	for (keep = n; keep > 0 && entries[keep - 1].last_offset >= log_end_offset; keep--)
		;
	if (entries)
		pfree(entries);
	if (keep == n)
		return;
	rel = kp_segment_open(relnode);
	metabuf = ReadBufferExtended(rel, MAIN_FORKNUM, 0, RBM_NORMAL, NULL);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	xstate = GenericXLogStart(rel);
	metapage = GenericXLogRegisterBuffer(xstate, metabuf, 0);
	txnindex_meta(rel, metapage)->nentries = keep;
	GenericXLogFinish(xstate);
	UnlockReleaseBuffer(metabuf);
	kp_segment_close(rel);
}

/*
 * Drop the segment's index with the segment (kp_segment_drop_storage: when
 * the current transaction commits, once however often a transaction
 * reaches it).  Called beside every drop of a segment's
 * storage: DeleteRecords (logstart.c) and dropping a partition.
 */
void
kp_txnindex_drop(Relation segrel)
{
	Oid			relnode;

	/* a segment already gone (dropped before) has no metapage to read */
	if (!smgrexists(RelationGetSmgr(segrel), MAIN_FORKNUM) ||
		smgrnblocks(RelationGetSmgr(segrel), MAIN_FORKNUM) == 0)
		return;
	relnode = segment_txnindex(segrel);
	if (!OidIsValid(relnode))
		return;
	/* at most once per transaction, as the segment (segment.c) */
	kp_segment_drop_storage(relnode);
}
