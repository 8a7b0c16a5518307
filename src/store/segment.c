/*-------------------------------------------------------------------------
 *
 * segment.c
 *	  One segment relation: create, append bytes, read bytes, seek.
 *
 * The page layout is described in store_int.h.  This file knows pages and
 * byte positions; it knows nothing of partitions, offset assignment
 * (append.c) or transactions (txnstate.c) beyond the per-page index entries
 * it is given.
 *
 * Locking: readers take a share lock on one page at a time; the appender
 * (who holds the partition's appender lock, so there is only one) takes
 * exclusive locks on the pages it writes.  Readers never rely on seeing a
 * batch whole unless the high watermark says it is complete, so a reader
 * overlapping a multi-page append only ever sees a prefix of the stream.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/rmgr.h"
#include "access/xact.h"
#include "access/xloginsert.h"
#include "access/xlogutils.h"
#include "catalog/catalog.h"
#include "catalog/storage.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/fd.h"
#include "common/relpath.h"
#include <sys/stat.h>
#include <unistd.h>
#include "storage/smgr.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "store/store_int.h"

#define C_PER_PAGE	((int64) KP_SEG_DATA_PER_PAGE)

static bool read_opaque(Relation rel, BlockNumber blkno, KpSegPageOpaque *out);
static BlockNumber segment_nblocks(Relation rel);

/* how far ahead of the data a segment's file is extended at once */
#define KP_PREEXTEND_BLOCKS		128

/*
 * Make the segment's file reach past blkno by up to KP_PREEXTEND_BLOCKS
 * zero blocks, with one posix_fallocate() rather than one 8 kB write per
 * block (ReadBuffer(P_NEW) writes each new block's zeroes through the
 * kernel: half of a batch append's time).  The appender then takes the new
 * blocks with RBM_ZERO_AND_LOCK, which neither reads nor writes them.  A
 * crash may leave some past the data, which readers and recovery treat as
 * the end (segment_last_block).  Stays within the relation's last 1 GB file
 * (RELSEG_SIZE); returns false when that file does not exist yet, or when
 * the disk has no room for the blocks (the caller extends with P_NEW, which
 * creates the file, and fails with ENOSPC, SQLSTATE 53100, on a full disk).
 * Only the appender, holding the partition's lock, extends.
 *
 * The blocks are allocated, not holes, as PostgreSQL's own extension keeps
 * them (md.c writes zeroes; PostgreSQL 16 allocates): until 2026-12-07 this
 * was an ftruncate(), and on a full disk appends went on being accepted
 * into holes that could not be written later, so the checkpointer failed
 * ("could not write block ... No space left on device") and the WAL grew
 * for as long as the disk stayed full (test/recovery/disk_full.py).  Only
 * where the file system cannot allocate at all (EINVAL, EOPNOTSUPP) is a
 * hole made, as before.
 */
static bool
preextend(Relation rel, BlockNumber blkno)
{
	BlockNumber segno = blkno / RELSEG_SIZE;
	BlockNumber segstart = segno * RELSEG_SIZE;
	BlockNumber target = Min(blkno + KP_PREEXTEND_BLOCKS, segstart + RELSEG_SIZE);
	char	   *path = relpathperm(rel->rd_node, MAIN_FORKNUM);
	int			fd;
	struct stat st;
	off_t		want = (off_t) (target - segstart) * BLCKSZ;
	bool		ok = false;

	if (segno > 0)
		path = psprintf("%s.%u", path, segno);
	fd = OpenTransientFile(path, O_RDWR | PG_BINARY);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) == 0)
	{
		if (st.st_size >= want)
			ok = true;
		else if (st.st_size % BLCKSZ == 0)
		{
#ifdef HAVE_POSIX_FALLOCATE
			int			rc;

			do
				rc = posix_fallocate(fd, st.st_size, want - st.st_size);
			while (rc == EINTR);
			if (rc == 0)
				ok = true;
			else if (rc == EINVAL || rc == EOPNOTSUPP)
				ok = ftruncate(fd, want) == 0;
			else
			{
				/* ENOSPC, EFBIG: take back what a part-way allocation added */
				if (ftruncate(fd, st.st_size) != 0)
					ereport(WARNING,
							(errcode_for_file_access(),
							 errmsg("could not truncate file \"%s\" back to %lld bytes: %m",
									path, (long long) st.st_size)));
			}
#else
			ok = ftruncate(fd, want) == 0;
#endif
		}
	}
	CloseTransientFile(fd);
	return ok;
}

/*
 * Open segments: fake relcache entries, each the owner of its segment's
 * SMgrRelation (RelationGetSmgr makes it so) until kp_segment_close gives it
 * up.  An ERROR between the open and the close (a damaged page, an I/O
 * error, a query cancel in a read) skips the close.  Were the entry in the
 * caller's memory, that memory would go (the request's, the query's) while
 * the SMgrRelation, which outlives transactions, still pointed at it as its
 * owner, and the next open of the segment in the process would write NULL
 * through that pointer (smgrsetowner) into whatever had been allocated there
 * since: a reader's open relation, whose next read crashed the process
 * (test/recovery/damaged_page.py met it in three runs of 25).  So the entries
 * live in a context of their own and are listed with the resource owner
 * current at the open, as a buffer pin is: released by an abort, an entry is
 * closed then; by a subtransaction's commit, it passes to the parent owner;
 * by the top transaction's commit, it stays open, tied to no owner.  By
 * owner, not by subtransaction: a cursor's reads run under its portal's
 * owner, and a cursor declared before a savepoint reads on after a ROLLBACK
 * TO it (sql/bulk.sql).
 */
typedef struct OpenSegment
{
	Relation	rel;
	ResourceOwner owner;		/* NULL: closed only by kp_segment_close */
} OpenSegment;

static MemoryContext open_segments_cxt = NULL;
static OpenSegment *open_segments = NULL;
static int	nopen_segments = 0;
static int	max_open_segments = 0;

static void
open_segments_drop(int i)
{
	Relation	rel = open_segments[i].rel;

	open_segments[i] = open_segments[--nopen_segments];
	FreeFakeRelcacheEntry(rel);
}

/* A resource owner is released: CurrentResourceOwner is the one released. */
static void
open_segments_release(ResourceReleasePhase phase, bool isCommit, bool isTopLevel, void *arg)
{
	ResourceOwner owner = CurrentResourceOwner;
	int			i;

	if (phase != RESOURCE_RELEASE_BEFORE_LOCKS || owner == NULL)
		return;
	for (i = nopen_segments - 1; i >= 0; i--)
	{
		if (open_segments[i].owner != owner)
			continue;
		if (!isCommit)
			open_segments_drop(i);
		else if (isTopLevel)
			open_segments[i].owner = NULL;
		else
			open_segments[i].owner = ResourceOwnerGetParent(owner);
	}
}

static Relation
segment_open_node(RelFileNode rnode)
{
	MemoryContext old;
	Relation	rel;

	if (open_segments_cxt == NULL)
	{
		open_segments_cxt = AllocSetContextCreate(TopMemoryContext, "kafka_pg open segments",
												  ALLOCSET_SMALL_SIZES);
		max_open_segments = 8;
		open_segments = MemoryContextAlloc(open_segments_cxt,
										   sizeof(OpenSegment) * max_open_segments);
		RegisterResourceReleaseCallback(open_segments_release, NULL);
	}
	else if (nopen_segments == max_open_segments)
	{
		open_segments = repalloc(open_segments, sizeof(OpenSegment) * max_open_segments * 2);
		max_open_segments *= 2;
	}
	old = MemoryContextSwitchTo(open_segments_cxt);
	rel = CreateFakeRelcacheEntry(rnode);
	MemoryContextSwitchTo(old);
	open_segments[nopen_segments].rel = rel;
	open_segments[nopen_segments].owner = CurrentResourceOwner;
	nopen_segments++;
	return rel;
}

Relation
kp_segment_open(Oid relnode)
{
	RelFileNode rnode;

	rnode.spcNode = MyDatabaseTableSpace;
	rnode.dbNode = MyDatabaseId;
	rnode.relNode = relnode;
	return segment_open_node(rnode);
}

void
kp_segment_close(Relation rel)
{
	int			i;

	/* the last opened is closed first, mostly */
	for (i = nopen_segments - 1; i >= 0; i--)
	{
		if (open_segments[i].rel == rel)
		{
			open_segments_drop(i);
			return;
		}
	}
	/* closed by an abort already: freeing it again would corrupt memory */
	elog(WARNING, "kafka_pg: closing a segment relation that is not open");
}

/*
 * The relations this transaction has scheduled for dropping, with the
 * (sub)transaction nest level that scheduled each, kept as PostgreSQL keeps
 * its own pending deletes (catalog/storage.c): a subtransaction's entries go
 * to its parent when it commits and away when it aborts.
 */
typedef struct KpScheduledDrop
{
	Oid			relnode;
	int			nest_level;
} KpScheduledDrop;

static List *scheduled_drops = NIL;
static bool drop_callbacks_registered = false;

static void
drops_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			list_free_deep(scheduled_drops);
			scheduled_drops = NIL;
			break;
		default:
			break;
	}
}

static void
drops_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *lc;

	if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		foreach(lc, scheduled_drops)
		{
			KpScheduledDrop *d = lfirst(lc);

			if (d->nest_level >= level)
				d->nest_level = level - 1;
		}
	}
	else if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		foreach(lc, scheduled_drops)
		{
			KpScheduledDrop *d = lfirst(lc);

			if (d->nest_level >= level)
			{
				scheduled_drops = foreach_delete_current(scheduled_drops, lc);
				pfree(d);
			}
		}
	}
}

/*
 * Drop a segment's (or the segment directory's) storage when the current
 * transaction commits, as RelationDropStorage does, but at most once per
 * transaction.  One transaction can reach the same segment twice (DeleteRecords
 * drops the segments below the new log start, then delete_topic drops every
 * segment of the partition; delete_topic, then DROP EXTENSION), and a commit
 * record that lists one file twice makes the commit fail in smgrclose
 * ("SMgrRelation hashtable corrupted") inside its critical section: a PANIC,
 * and crash recovery replaying that record fails the same way, so the server
 * would not start again.
 */
void
kp_segment_drop_storage(Oid relnode)
{
	ListCell   *lc;
	Relation	rel;
	KpScheduledDrop *d;
	MemoryContext old;

	foreach(lc, scheduled_drops)
	{
		if (((KpScheduledDrop *) lfirst(lc))->relnode == relnode)
			return;
	}
	if (!drop_callbacks_registered)
	{
		RegisterXactCallback(drops_xact_callback, NULL);
		RegisterSubXactCallback(drops_subxact_callback, NULL);
		drop_callbacks_registered = true;
	}

	rel = kp_segment_open(relnode);
	RelationDropStorage(rel);
	kp_segment_close(rel);

	old = MemoryContextSwitchTo(TopMemoryContext);
	d = palloc(sizeof(KpScheduledDrop));
	d->relnode = relnode;
	d->nest_level = GetCurrentTransactionNestLevel();
	scheduled_drops = lappend(scheduled_drops, d);
	MemoryContextSwitchTo(old);
}

/*
 * Create a segment relation with its metapage.  drop_on_abort: the storage
 * goes away if the current transaction aborts (only for partitions created
 * by this very transaction, which nobody else can have written to).
 */
Oid
kp_segment_create(int64 partition_id, int64 base_offset,
				  int64 first_open_offset, bool drop_on_abort)
{
	KpSegmentMeta meta;

	memset(&meta, 0, sizeof(meta));
	meta.magic = KP_SEG_MAGIC;
	meta.version = KP_STORE_VERSION;
	meta.partition_id = partition_id;
	meta.base_offset = base_offset;
	meta.created_ms = kp_now_ms();
	meta.first_open_offset = first_open_offset;
	meta.txnindex_relnode = InvalidOid;
	meta.flags = KP_SEGMETA_HAS_FIRST_OPEN;
	return kp_store_create_relation(drop_on_abort, &meta, sizeof(meta));
}

/*
 * Write len bytes at offset at of the metapage's contents (after the page
 * header), raising pd_lower to cover them, with generic WAL.  A metapage
 * that is not a segment's, or has no room there, is an ERROR.
 */
static void
write_metapage_bytes(Relation rel, Size at, const void *data, Size len)
{
	Buffer		buf = ReadBufferExtended(rel, MAIN_FORKNUM, 0, RBM_NORMAL, NULL);
	GenericXLogState *xstate;
	Page		page;
	Size		end = MAXALIGN(SizeOfPageHeaderData) + at + len;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	xstate = GenericXLogStart(rel);
	page = GenericXLogRegisterBuffer(xstate, buf, 0);
	if (((KpSegmentMeta *) PageGetContents(page))->magic != KP_SEG_MAGIC ||
		((PageHeader) page)->pd_upper < end)
	{
		GenericXLogAbort(xstate);
		UnlockReleaseBuffer(buf);
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("kafka_pg segment %u has a bad metapage",
						rel->rd_node.relNode)));
	}
	memcpy(PageGetContents(page) + at, data, len);
	((PageHeader) page)->pd_lower = Max(((PageHeader) page)->pd_lower, end);
	GenericXLogFinish(xstate);
	UnlockReleaseBuffer(buf);
}

/*
 * Rewrite the segment's metapage with meta (read by kp_segment_read_meta,
 * then changed: the aborted-transaction index's relfilenode, txnindex.c;
 * first_open_offset for a segment from before it was kept, recovery.c).
 * The appender lock, or the partition's load, keeps writers apart.
 * Generic WAL, so standbys see it by replay.
 */
void
kp_segment_write_meta(Relation rel, const KpSegmentMeta *meta)
{
	/* a segment from before issue 8: its metapage grows to the new size */
	write_metapage_bytes(rel, 0, meta, sizeof(KpSegmentMeta));
}

/*
 * Create a relation of the store (a segment or the directory): new storage
 * with no pg_class row, and block 0 holding metalen bytes of meta after the
 * page header, logged as a full page image.
 */
Oid
kp_store_create_relation(bool drop_on_abort, const void *meta, Size metalen)
{
	RelFileNode rnode;
	Relation	rel;
	Buffer		buf;
	GenericXLogState *xstate;
	Page		page;

	rnode.spcNode = MyDatabaseTableSpace;
	rnode.dbNode = MyDatabaseId;
	rnode.relNode = GetNewRelFileNode(MyDatabaseTableSpace, NULL,
									  RELPERSISTENCE_PERMANENT);
	RelationCreateStorage(rnode, RELPERSISTENCE_PERMANENT, drop_on_abort);

	rel = segment_open_node(rnode);
	buf = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_NORMAL, NULL);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	xstate = GenericXLogStart(rel);
	page = GenericXLogRegisterBuffer(xstate, buf, GENERIC_XLOG_FULL_IMAGE);
	PageInit(page, BLCKSZ, 0);
	memcpy(PageGetContents(page), meta, metalen);
	((PageHeader) page)->pd_lower = SizeOfPageHeaderData + metalen;
	GenericXLogFinish(xstate);
	UnlockReleaseBuffer(buf);
	kp_segment_close(rel);

	return rnode.relNode;
}

/*
 * Begin appending a fixed-size entry to a relation of entries (the segment
 * directory, an aborted-transaction index): block 0 a metapage, already
 * locked exclusively by the caller, which holds the count of entries; the
 * entries packed from block 1 on, per_page to a page, pd_lower marking the
 * end.  Writes the entry (extending the relation for a new page) and
 * returns the generic WAL record under way with the entry page and the
 * metapage registered: the caller updates its counters in *metapage, calls
 * GenericXLogFinish, and releases *entrybuf.  One record, so the counters
 * never disagree with the entries.  Writers are serialised by the caller.
 */
GenericXLogState *
kp_store_append_entry(Relation rel, Buffer metabuf, uint32 nentries,
					  const void *entry, Size entrysize, int per_page,
					  Page *metapage, Buffer *entrybuf)
{
	BlockNumber blkno = 1 + nentries / per_page;
	int			slot = nentries % per_page;
	bool		newpage;
	Buffer		buf;
	GenericXLogState *xstate;
	Page		page;

	if (blkno >= segment_nblocks(rel))
	{
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_NORMAL, NULL);
		if (BufferGetBlockNumber(buf) != blkno)
			elog(ERROR, "kafka_pg relation %u: new block %u where %u was expected",
				 rel->rd_node.relNode, BufferGetBlockNumber(buf), blkno);
	}
	else
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	/* a page's first entry starts it afresh (a page left zero included) */
	newpage = (slot == 0 || PageIsNew(BufferGetPage(buf)));

	xstate = GenericXLogStart(rel);
	*metapage = GenericXLogRegisterBuffer(xstate, metabuf, 0);
	page = GenericXLogRegisterBuffer(xstate, buf,
									 newpage ? GENERIC_XLOG_FULL_IMAGE : 0);
	if (newpage)
		PageInit(page, BLCKSZ, 0);
	memcpy(PageGetContents(page) + slot * entrysize, entry, entrysize);
	((PageHeader) page)->pd_lower = SizeOfPageHeaderData + (slot + 1) * entrysize;
	*entrybuf = buf;
	return xstate;
}

void
kp_segment_read_meta(Relation rel, KpSegmentMeta *meta)
{
	Buffer		buf = ReadBufferExtended(rel, MAIN_FORKNUM, 0, RBM_NORMAL, NULL);

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	memcpy(meta, PageGetContents(BufferGetPage(buf)), sizeof(KpSegmentMeta));
	UnlockReleaseBuffer(buf);
	if (meta->magic != KP_SEG_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("kafka_pg segment %u has a bad metapage",
						rel->rd_node.relNode)));
}

/*
 * Where the producer-state snapshot lies in the metapage: after the
 * segment's KpSegmentMeta.  pd_lower covers it once one is written (so a
 * full-page image and generic WAL's delta keep it); a metapage whose
 * pd_lower stops short has none.
 */
#define PRODSNAP_AT		MAXALIGN(sizeof(KpSegmentMeta))
#define PRODSNAP_END	(SizeOfPageHeaderData + PRODSNAP_AT + sizeof(KpProducerSnapshot))

StaticAssertDecl(PRODSNAP_END <= BLCKSZ,
				 "a producer-state snapshot must fit in a segment's metapage");

bool
kp_segment_read_prodsnap(Relation rel, KpProducerSnapshot *snap)
{
	Buffer		buf = ReadBufferExtended(rel, MAIN_FORKNUM, 0, RBM_NORMAL, NULL);
	Page		page;
	bool		found = false;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (((PageHeader) page)->pd_lower >= PRODSNAP_END)
	{
		memcpy(snap, PageGetContents(page) + PRODSNAP_AT, sizeof(KpProducerSnapshot));
		found = snap->magic == KP_PRODSNAP_MAGIC && snap->version == KP_PRODSNAP_VERSION;
	}
	UnlockReleaseBuffer(buf);
	return found;
}

/*
 * Write snap into the metapage, replacing any earlier one.  The caller
 * holds the partition's appender lock (so the snapshot matches the log it
 * describes, and no other writer of the metapage runs: kp_segment_write_meta
 * has the same rule).  Generic WAL, so a standby has it at promotion.
 */
void
kp_segment_write_prodsnap(Relation rel, const KpProducerSnapshot *snap)
{
	write_metapage_bytes(rel, PRODSNAP_AT, snap, sizeof(KpProducerSnapshot));
}

static BlockNumber
segment_nblocks(Relation rel)
{
	return smgrnblocks(RelationGetSmgr(rel), MAIN_FORKNUM);
}

/* Check a data page before trusting its contents. */
static void
check_data_page(Relation rel, BlockNumber blkno, Page page)
{
	if (PageIsNew(page) || KpSegOpaque(page)->magic != KP_SEG_MAGIC ||
		((PageHeader) page)->pd_special != BLCKSZ - MAXALIGN(sizeof(KpSegPageOpaque)) ||
		((PageHeader) page)->pd_lower > SizeOfPageHeaderData + KP_SEG_DATA_PER_PAGE)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("kafka_pg segment %u block %u is not a segment data page",
						rel->rd_node.relNode, blkno)));
}

/*
 * The last block holding data, 0 if none.  Blocks past it may exist and be
 * new (all zeroes): the relation is extended before a page is written, so a
 * crash between the two, or a reader racing the appender, sees such pages;
 * they hold nothing.
 */
static bool
block_is_new(Relation rel, BlockNumber blkno)
{
	Buffer		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
	bool		isnew;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	isnew = PageIsNew(BufferGetPage(buf));
	UnlockReleaseBuffer(buf);
	return isnew;
}

static BlockNumber
segment_last_block(Relation rel)
{
	BlockNumber nblocks = segment_nblocks(rel);
	BlockNumber lo = 1;
	BlockNumber hi;
	BlockNumber last = 0;

	if (nblocks <= 1)
		return 0;
	if (!block_is_new(rel, nblocks - 1))
		return nblocks - 1;
	/* data pages come first, zero pages after them: bisect */
	hi = nblocks - 1;
	while (lo < hi)
	{
		BlockNumber mid = lo + (hi - lo) / 2;

		if (block_is_new(rel, mid))
			hi = mid;
		else
		{
			last = mid;
			lo = mid + 1;
		}
	}
	return last;
}

int64
kp_segment_data_size(Relation rel)
{
	BlockNumber last = segment_last_block(rel);
	Buffer		buf;
	int64		size;

	if (last == 0)
		return 0;
	buf = ReadBufferExtended(rel, MAIN_FORKNUM, last, RBM_NORMAL, NULL);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	check_data_page(rel, last, BufferGetPage(buf));
	size = (int64) (last - 1) * C_PER_PAGE + KpPageDataLen(BufferGetPage(buf));
	UnlockReleaseBuffer(buf);
	return size;
}

/*
 * One fragment header of a generic WAL delta, as core's generic_redo reads
 * it (generic_xlog.c): the region's offset in the page and its length, two
 * OffsetNumbers, followed by the region's bytes.
 */
static inline void
put_fragment(char *dst, Size offset, Size length)
{
	OffsetNumber o = (OffsetNumber) offset;
	OffsetNumber l = (OffsetNumber) length;

	Assert(offset + length <= BLCKSZ);
	memcpy(dst, &o, sizeof(o));
	memcpy(dst + sizeof(o), &l, sizeof(l));
}

/*
 * Append len bytes at stream position pos, which must be the current end.
 *
 * The WAL records are core's generic WAL records (RM_GENERIC_ID, replayed by
 * core's generic_redo: a standby needs no extension), at most
 * MAX_GENERIC_XLOG_PAGES pages each, but built here rather than through
 * GenericXLogStart/RegisterBuffer/Finish, because an append knows exactly
 * what it changes and that API does not: it copies every page into a
 * scratch image and back, and for a page that is not logged whole it finds
 * the changes by comparing the two 8 kB images byte by byte.  Instead:
 *
 * - a fresh page (the append starts it at its first byte) is initialised
 *   in the buffer and logged as a full-page image (REGBUF_FORCE_IMAGE |
 *   REGBUF_STANDARD: the hole after pd_lower left out), as
 *   GENERIC_XLOG_FULL_IMAGE logs it;
 * - the partly filled tail page gets the delta generic_redo applies, in
 *   generic_xlog.c's format (fragments of offset and length, two
 *   OffsetNumbers, then the bytes): pd_lower, the appended bytes, and the
 *   page's max_timestamp when it grows.  Nothing else on the page changes.
 *   generic_redo then zeroes the hole [pd_lower, pd_upper): it is already
 *   zero here (every writer of a data page leaves it so: PageInit, core's
 *   GenericXLogFinish (kp_segment_truncate), generic_redo, a full-page image's
 *   restore; this function writes only below pd_lower), so replay gives the
 *   same page.
 *
 * Pages are changed in a critical section, marked dirty, and the record
 * inserted, the order core's own WAL-logged changes follow; everything that
 * can fail (reading and locking the buffers, checking the tail page) comes
 * before it.
 *
 * A batch spanning several records can be torn by a crash between them;
 * recovery finds it by its length and CRC and cuts it off (recovery.c).
 * It was never acknowledged durably: COMMIT and Produce acks=all wait for
 * the WAL flush of the last record.
 */
XLogRecPtr
kp_segment_write(Relation rel, int64 pos, const char *data, size_t len,
				 int64 base_offset, int64 max_timestamp)
{
	const int64 batch_pos = pos;
	const int64 end = pos + (int64) len;
	const bool	needwal = RelationNeedsWAL(rel);
	XLogRecPtr	lsn = InvalidXLogRecPtr;
	int64		running_max = max_timestamp;
	BlockNumber nblocks = segment_nblocks(rel);

	/*
	 * The time index is the running maximum up to each page's end: start from
	 * the page holding the byte before this batch.  When that is the page the
	 * batch starts on (a tail page), it is read below, under its exclusive
	 * lock; otherwise it is the page before.
	 */
	if (pos > 0 && pos % C_PER_PAGE == 0)
	{
		KpSegPageOpaque prev;

		if (read_opaque(rel, (BlockNumber) (pos / C_PER_PAGE), &prev))
			running_max = Max(running_max, prev.max_timestamp);
	}

	while (pos < end)
	{
		Buffer		bufs[MAX_GENERIC_XLOG_PAGES];
		int64		inpages[MAX_GENERIC_XLOG_PAGES];
		int64		chunks[MAX_GENERIC_XLOG_PAGES];
		int64		startpos = pos;
		int			nbufs = 0;
		int			i;

		/* a tail page's delta: two fragment headers and pd_lower; the time */
		char		taildelta[2 * 2 * sizeof(OffsetNumber) + sizeof(uint16)];
		char		tsdelta[2 * sizeof(OffsetNumber) + sizeof(int64)];
		bool		tsgrew = false;

		/* pin and lock the pages of this record: all that can fail */
		while (nbufs < MAX_GENERIC_XLOG_PAGES && pos < end)
		{
			BlockNumber blkno = (BlockNumber) (1 + pos / C_PER_PAGE);
			int64		inpage = pos % C_PER_PAGE;
			int64		chunk = Min(C_PER_PAGE - inpage, end - pos);
			Buffer		buf;

			if (inpage == 0)
			{
				if (blkno >= nblocks && preextend(rel, blkno))
					nblocks = segment_nblocks(rel);
				if (blkno < nblocks)
				{
					/* a block of the extension: no read, no write, locked */
					buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_ZERO_AND_LOCK, NULL);
				}
				else
				{
					buf = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_NORMAL, NULL);
					if (BufferGetBlockNumber(buf) != blkno)
						elog(ERROR, "kafka_pg segment %u: new block %u where %u was expected",
							 rel->rd_node.relNode, BufferGetBlockNumber(buf), blkno);
					LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
					nblocks = blkno + 1;
				}
			}
			else
			{
				Page		page;

				/* only the first page of a write can be a tail page */
				Assert(pos == batch_pos && nbufs == 0);
				buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
				LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
				page = BufferGetPage(buf);
				check_data_page(rel, blkno, page);
				if (KpPageDataLen(page) != inpage)
					elog(ERROR, "kafka_pg segment %u block %u holds %d bytes where %d were expected",
						 rel->rd_node.relNode, blkno, (int) KpPageDataLen(page), (int) inpage);
				if (KpSegOpaque(page)->max_timestamp >= running_max)
					running_max = KpSegOpaque(page)->max_timestamp;
				else
					tsgrew = true;
			}
			bufs[nbufs] = buf;
			inpages[nbufs] = inpage;
			chunks[nbufs] = chunk;
			nbufs++;
			pos += chunk;
		}

		START_CRIT_SECTION();

		for (i = 0; i < nbufs; i++)
		{
			Page		page = BufferGetPage(bufs[i]);
			KpSegPageOpaque *opaque;

			if (inpages[i] == 0)
			{
				PageInit(page, BLCKSZ, sizeof(KpSegPageOpaque));
				opaque = KpSegOpaque(page);
				opaque->magic = KP_SEG_MAGIC;
				opaque->cover_offset = base_offset;
				opaque->cover_pos = batch_pos;
			}
			else
				opaque = KpSegOpaque(page);
			opaque->max_timestamp = running_max;
			memcpy(KpPageData(page) + inpages[i], data + (startpos - batch_pos), chunks[i]);
			((PageHeader) page)->pd_lower = SizeOfPageHeaderData + inpages[i] + chunks[i];
			startpos += chunks[i];
			MarkBufferDirty(bufs[i]);
		}

		if (needwal)
		{
			XLogBeginInsert();
			for (i = 0; i < nbufs; i++)
			{
				Page		page = BufferGetPage(bufs[i]);

				if (inpages[i] == 0)
				{
					XLogRegisterBuffer(i, bufs[i], REGBUF_FORCE_IMAGE | REGBUF_STANDARD);
					continue;
				}
				XLogRegisterBuffer(i, bufs[i], REGBUF_STANDARD);
				put_fragment(taildelta, offsetof(PageHeaderData, pd_lower), sizeof(uint16));
				memcpy(taildelta + 2 * sizeof(OffsetNumber), &((PageHeader) page)->pd_lower,
					   sizeof(uint16));
				put_fragment(taildelta + 2 * sizeof(OffsetNumber) + sizeof(uint16),
							 SizeOfPageHeaderData + inpages[i], chunks[i]);
				XLogRegisterBufData(i, taildelta, sizeof(taildelta));
				XLogRegisterBufData(i, KpPageData(page) + inpages[i], chunks[i]);
				if (tsgrew)
				{
					put_fragment(tsdelta, ((PageHeader) page)->pd_special +
								 offsetof(KpSegPageOpaque, max_timestamp), sizeof(int64));
					memcpy(tsdelta + 2 * sizeof(OffsetNumber), &running_max, sizeof(int64));
					XLogRegisterBufData(i, tsdelta, sizeof(tsdelta));
				}
			}
			lsn = XLogInsert(RM_GENERIC_ID, 0);
			for (i = 0; i < nbufs; i++)
				PageSetLSN(BufferGetPage(bufs[i]), lsn);
		}

		END_CRIT_SECTION();

		while (nbufs > 0)
			UnlockReleaseBuffer(bufs[--nbufs]);
	}
	return lsn;
}

/*
 * Copy len bytes from stream position pos into dst.  Returns false if the
 * stream ends before (the caller is reading past what has been written, or
 * on a standby, past what has been replayed).
 */
bool
kp_segment_read(Relation rel, int64 pos, char *dst, size_t len)
{
	BlockNumber nblocks = InvalidBlockNumber;

	return kp_segment_read_cached(rel, &nblocks, pos, dst, len);
}

/*
 * The block count of a segment that holds size bytes of data: its metapage
 * and the data pages (segment.c's layout; pages past them may exist too).
 */
BlockNumber
kp_segment_blocks_for(int64 size)
{
	return (BlockNumber) (1 + (size + C_PER_PAGE - 1) / C_PER_PAGE);
}

/*
 * The segment's block count as the caller caches it (*nblocks, or
 * InvalidBlockNumber when not known yet): smgrnblocks() is an lseek().  A
 * segment only grows while it is active (the appender pre-extends it) and
 * is never truncated while it is read (tail recovery cuts before anyone
 * reads, on load), and a reader never reads past the high watermark, so a
 * cached count is refreshed only when a read needs a block past it.
 */
static BlockNumber
cached_nblocks(Relation rel, BlockNumber *nblocks, BlockNumber need)
{
	if (*nblocks == InvalidBlockNumber || need >= *nblocks)
		*nblocks = segment_nblocks(rel);
	return *nblocks;
}

/*
 * Pin and share-lock data page blkno; false (nothing held) if the segment
 * has no such block yet or the page is new (extended, not written yet).
 *
 * keep (may be NULL) is a pin the caller holds between reads of this
 * segment, InvalidBuffer if none (a reader keeps the page it read last, so
 * that the next batches on that page cost a share lock, not a buffer
 * mapping lookup and a pin each).  When it is the page wanted, its pin is
 * handed over (*keep becomes InvalidBuffer); otherwise it is released.  A
 * kept page had data when it was kept, so it is not new.
 */
static bool
pin_data_page(Relation rel, BlockNumber *nblocks, BlockNumber blkno, Buffer *keep,
			  Buffer *bufp)
{
	Buffer		buf;

	if (keep != NULL && BufferIsValid(*keep))
	{
		buf = *keep;
		*keep = InvalidBuffer;
		if (BufferGetBlockNumber(buf) == blkno)
		{
			LockBuffer(buf, BUFFER_LOCK_SHARE);
			*bufp = buf;
			return true;
		}
		ReleaseBuffer(buf);
	}
	if (blkno >= cached_nblocks(rel, nblocks, blkno))
		return false;
	buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	if (PageIsNew(BufferGetPage(buf)))
	{
		UnlockReleaseBuffer(buf);
		return false;
	}
	check_data_page(rel, blkno, BufferGetPage(buf));
	*bufp = buf;
	return true;
}

/* Unlock a page pinned by pin_data_page; keep its pin in *keep if asked. */
static void
unlock_data_page(Buffer buf, Buffer *keep)
{
	if (keep != NULL)
	{
		Assert(!BufferIsValid(*keep));
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		*keep = buf;
	}
	else
		UnlockReleaseBuffer(buf);
}

static bool read_cached_keep(Relation rel, BlockNumber *nblocksp, int64 pos,
							 char *dst, size_t len, Buffer *keep);

/*
 * Read the batch at stream position pos in one pass over its pages: the
 * header is parsed on the pinned page (copied aside only when it straddles
 * two pages), decide() says what to do with it (it runs under the page's
 * share lock: it must be quick and take no lock), and only a batch it
 * accepts is copied, once, straight from the pages onto the end of dst,
 * which grows once to hold it.  *hdr gets the header in every case but
 * KP_SEGBATCH_END.  *nblocks is the caller's cache of the block count
 * (cached_nblocks); *keep the caller's kept pin (pin_data_page): on return
 * it holds the last page read (unlocked), for the next call to start from.
 */
KpSegBatchStatus
kp_segment_read_batch(Relation rel, BlockNumber *nblocks, Buffer *keep, int64 pos,
					  KpSegBatchDecide decide, void *arg,
					  KpBatchHeader *hdr, StringInfo dst)
{
	BlockNumber blkno = (BlockNumber) (1 + pos / C_PER_PAGE);
	int64		inpage = pos % C_PER_PAGE;
	Buffer		buf = InvalidBuffer;
	Page		page = NULL;
	int64		avail = 0;
	const char *hp;
	char		hbuf[KP_BATCH_HEADER_SIZE];
	KpSegBatchStatus st;
	size_t		total;
	size_t		chunk = 0;
	char	   *out;

	if (!pin_data_page(rel, nblocks, blkno, keep, &buf))
		return KP_SEGBATCH_END;
	page = BufferGetPage(buf);
	avail = (int64) KpPageDataLen(page) - inpage;
	if (avail <= 0)
	{
		unlock_data_page(buf, keep);
		return KP_SEGBATCH_END;
	}
	if (avail >= KP_BATCH_HEADER_SIZE)
		hp = KpPageData(page) + inpage;
	else
	{
		/* the header straddles two pages */
		unlock_data_page(buf, keep);
		buf = InvalidBuffer;
		if (!read_cached_keep(rel, nblocks, pos, hbuf, KP_BATCH_HEADER_SIZE, keep))
			return KP_SEGBATCH_END;
		hp = hbuf;
	}
	if (kp_batch_parse_header(hp, KP_BATCH_HEADER_SIZE, hdr) != KP_CODEC_OK)
		st = KP_SEGBATCH_BAD_HEADER;
	else
		st = decide(hdr, arg);
	if (st != KP_SEGBATCH_OK)
	{
		if (BufferIsValid(buf))
			unlock_data_page(buf, keep);
		return st;
	}

	total = KpBatchTotalSize(hdr);
	enlargeStringInfo(dst, (int) total);
	out = dst->data + dst->len;
	if (BufferIsValid(buf))
	{
		chunk = Min((size_t) avail, total);
		memcpy(out, KpPageData(page) + inpage, chunk);
		unlock_data_page(buf, keep);
	}
	if (chunk < total &&
		!read_cached_keep(rel, nblocks, pos + (int64) chunk, out + chunk, total - chunk, keep))
		return KP_SEGBATCH_SHORT;
	dst->len += (int) total;
	dst->data[dst->len] = '\0';
	return KP_SEGBATCH_OK;
}

/* kp_segment_read with the caller's cache of the block count */
bool
kp_segment_read_cached(Relation rel, BlockNumber *nblocksp, int64 pos,
					   char *dst, size_t len)
{
	return read_cached_keep(rel, nblocksp, pos, dst, len, NULL);
}

/* ... and its kept pin (pin_data_page; NULL: none) */
static bool
read_cached_keep(Relation rel, BlockNumber *nblocksp, int64 pos,
				 char *dst, size_t len, Buffer *keep)
{
	int64		end = pos + (int64) len;

	while (pos < end)
	{
		BlockNumber blkno = (BlockNumber) (1 + pos / C_PER_PAGE);
		int64		inpage = pos % C_PER_PAGE;
		int64		chunk = Min(C_PER_PAGE - inpage, end - pos);
		Buffer		buf;
		Page		page;
		bool		ok;

		/*
		 * past the end, or extended but not yet (or, after a crash, never)
		 * written
		 */
		if (!pin_data_page(rel, nblocksp, blkno, keep, &buf))
			return false;
		page = BufferGetPage(buf);
		ok = (KpPageDataLen(page) >= inpage + chunk);
		if (ok)
			memcpy(dst, KpPageData(page) + inpage, chunk);
		unlock_data_page(buf, keep);
		if (!ok)
			return false;
		dst += chunk;
		pos += chunk;
	}
	return true;
}

/* Read one page's index entry; false if the page does not exist. */
static bool
read_opaque(Relation rel, BlockNumber blkno, KpSegPageOpaque *out)
{
	Buffer		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
	Page		page;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (PageIsNew(page))
	{
		UnlockReleaseBuffer(buf);
		return false;
	}
	check_data_page(rel, blkno, page);
	*out = *KpSegOpaque(page);
	UnlockReleaseBuffer(buf);
	return true;
}

/*
 * Binary search for the last page whose cover batch starts at or before
 * offset; return that batch's stream position.  O(log pages) page reads.
 */
int64
kp_segment_seek_offset(Relation rel, int64 offset)
{
	BlockNumber nblocks = InvalidBlockNumber;

	return kp_segment_seek_offset_cached(rel, &nblocks, offset);
}

/*
 * ... with the caller's cache of the block count (cached_nblocks): when it
 * is known (the blocks holding data the caller knows of: the reader's
 * published size, kp_segment_blocks_for) the search is over those blocks
 * only, with no smgrnblocks(); otherwise over every block of the file,
 * pre-extended zero pages included, and the count found is given back.
 */
int64
kp_segment_seek_offset_cached(Relation rel, BlockNumber *nblocksp, int64 offset)
{
	BlockNumber nblocks = *nblocksp != InvalidBlockNumber ? *nblocksp : segment_nblocks(rel);
	BlockNumber lo = 1;
	BlockNumber hi;
	int64		best = 0;

	*nblocksp = nblocks;
	if (nblocks <= 1)
		return 0;
	hi = nblocks - 1;
	while (lo <= hi)
	{
		BlockNumber mid = lo + (hi - lo) / 2;
		KpSegPageOpaque op;

		if (read_opaque(rel, mid, &op) && op.cover_offset <= offset)
		{
			best = op.cover_pos;
			lo = mid + 1;
		}
		else
		{
			if (mid == 1)
				break;
			hi = mid - 1;
		}
	}
	return best;
}

/* A batch's leader epoch; unstamped ones (-1) count as epoch 0. */
static int32
batch_epoch(const KpBatchHeader *hdr)
{
	return Max(hdr->partition_leader_epoch, 0);
}

/* The header of the batch at stream position pos; false past the data. */
static bool
read_header_at(Relation rel, int64 pos, KpBatchHeader *hdr)
{
	char		buf[KP_BATCH_HEADER_SIZE];

	return kp_segment_read(rel, pos, buf, KP_BATCH_HEADER_SIZE) &&
		kp_batch_parse_header(buf, KP_BATCH_HEADER_SIZE, hdr) == KP_CODEC_OK;
}

/*
 * The base offset of the segment's first batch whose leader epoch is above
 * epoch, among the batches below end_offset; -1 if none.  Epochs never go
 * down along the log (every batch is stamped with its leader's epoch when
 * appended), so a binary search over the pages' cover batches finds the
 * page, and a walk of its batches the batch.  O(log pages) page reads.
 */
int64
kp_segment_epoch_end(Relation rel, int32 epoch, int64 end_offset)
{
	BlockNumber nblocks = segment_nblocks(rel);
	BlockNumber lo = 1;
	BlockNumber hi;
	int64		pos = 0;
	KpBatchHeader hdr;

	if (nblocks <= 1)
		return -1;
	hi = nblocks - 1;
	while (lo <= hi)
	{
		BlockNumber mid = lo + (hi - lo) / 2;
		KpSegPageOpaque op;

		if (read_opaque(rel, mid, &op) && op.cover_offset < end_offset &&
			read_header_at(rel, op.cover_pos, &hdr) && batch_epoch(&hdr) <= epoch)
		{
			pos = op.cover_pos;
			lo = mid + 1;
		}
		else
		{
			if (mid == 1)
				break;
			hi = mid - 1;
		}
	}
	while (read_header_at(rel, pos, &hdr) && hdr.base_offset < end_offset)
	{
		if (batch_epoch(&hdr) > epoch)
			return hdr.base_offset;
		pos += KpBatchTotalSize(&hdr);
	}
	return -1;
}

/*
 * Where to start looking for the first record with timestamp >= ts: the
 * cover batch of the first page whose running max timestamp reaches ts
 * (earlier pages cannot hold such a record).  -1 if no page does.
 */
int64
kp_segment_seek_timestamp(Relation rel, int64 ts)
{
	BlockNumber nblocks = segment_nblocks(rel);
	BlockNumber lo = 1;
	BlockNumber hi;
	int64		found = -1;

	if (nblocks <= 1)
		return -1;
	hi = nblocks - 1;
	while (lo <= hi)
	{
		BlockNumber mid = lo + (hi - lo) / 2;
		KpSegPageOpaque op;

		if (!read_opaque(rel, mid, &op))
		{
			/* nothing written there yet: look earlier */
			if (mid == 1)
				break;
			hi = mid - 1;
		}
		else if (op.max_timestamp >= ts)
		{
			found = op.cover_pos;
			if (mid == 1)
				break;
			hi = mid - 1;
		}
		else
			lo = mid + 1;
	}
	return found;
}

int64
kp_segment_max_timestamp(Relation rel)
{
	BlockNumber last = segment_last_block(rel);
	KpSegPageOpaque op;

	if (last == 0 || !read_opaque(rel, last, &op))
		return -1;
	return op.max_timestamp;
}

/* Does the relation have blocks past those that hold size bytes? */
bool
kp_segment_has_excess_blocks(Relation rel, int64 size)
{
	BlockNumber need = (BlockNumber) (size == 0 ? 1 : 1 + (size + C_PER_PAGE - 1) / C_PER_PAGE);

	return segment_nblocks(rel) > need;
}

/*
 * Cut the stream back to size bytes: pages past the one holding the new end
 * are truncated away, and that page's pd_lower is lowered.  Used only by
 * tail recovery on a primary.
 */
void
kp_segment_truncate(Relation rel, int64 size)
{
	BlockNumber keep = (BlockNumber) (1 + (size + C_PER_PAGE - 1) / C_PER_PAGE);
	BlockNumber nblocks = segment_nblocks(rel);

	if (size % C_PER_PAGE == 0 && size > 0)
		keep = (BlockNumber) (1 + size / C_PER_PAGE);
	if (size == 0)
		keep = 1;
	if (keep < nblocks)
		RelationTruncate(rel, keep);

	if (size % C_PER_PAGE != 0)
	{
		BlockNumber blkno = (BlockNumber) (1 + size / C_PER_PAGE);
		Buffer		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
		GenericXLogState *xstate;
		Page		page;

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		xstate = GenericXLogStart(rel);
		page = GenericXLogRegisterBuffer(xstate, buf, 0);
		((PageHeader) page)->pd_lower = SizeOfPageHeaderData + size % C_PER_PAGE;
		GenericXLogFinish(xstate);
		UnlockReleaseBuffer(buf);
	}
}
