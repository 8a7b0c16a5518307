/*-------------------------------------------------------------------------
 *
 * directory.c
 *	  The segment directory: which segment relations each partition has.
 *
 * Segments are created and dropped outside the transactions that cause
 * them (a roll inside a transaction that later aborts must not lose the
 * other producers' batches), so the list of segments cannot live in an
 * ordinary table.  It lives in a relation of its own, written with generic
 * WAL like the segments themselves: a metapage with counters and then an
 * append-only array of KpDirEntry.  Entries are never removed, only flagged
 * dropped; entries of partitions that no longer exist in the catalog (a
 * deleted topic, an aborted create) are simply never asked for, because
 * partition ids are never reused.
 *
 * The directory also records raised log start offsets (DeleteRecords,
 * logstart.c) as entries flagged KP_DIRENT_LOG_START: the log start offset
 * of a partition is the larger of its first segment's base offset and the
 * largest such entry, on the primary after a restart and on a standby alike.
 *
 * Log compaction (compaction.c) publishes a cleaned segment as a
 * KP_DIRENT_CLEANED entry followed, in the same WAL record, by a
 * KP_DIRENT_CLEANED_END entry: the cleaned segment replaces the listed
 * segments whose base offsets lie in [its base offset, the END entry's);
 * they go to the partition's replaced list until they are flagged dropped.
 * The cleaner checkpoint is a KP_DIRENT_CLEANER_CHECKPOINT entry.
 *
 * Segments wholly below the log start offset go to the replaced list too,
 * as the entries are read (seglist_trim_below_log_start): they leave the
 * log when the log start passes them, and their storage is dropped later,
 * like that of the segments a clean replaced.  The replaced list is in the
 * order the segments left the log, in every backend and after a restart
 * (it is derived from the entries in directory order), which the delayed
 * drops rely on (kp_log_drop_replaced_segments).
 *
 * Each backend keeps a cache of the directory, revalidated against the
 * metapage's change counter on every lookup: appends are read
 * incrementally, drops force a full reload.  The same code serves a hot
 * standby, where the directory changes by WAL replay.
 *
 * Writers serialise on kp_store_shared->directory_lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xlogutils.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "commands/dbcommands.h"
#include "catalog/storage.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/smgr.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "store/store_int.h"

typedef struct KpSegList
{
	int64		partition_id;	/* hash key */
	int			nsegs;
	int			capacity;
	KpSegInfo  *segs;
	int64		log_start_offset;	/* from KP_DIRENT_LOG_START, -1 if none */
	int64		checkpoint;		/* from KP_DIRENT_CLEANER_CHECKPOINT, or -1 */
	int			nreplaced;		/* segments a cleaned one replaced */
	int			repcap;
	KpSegInfo  *replaced;
} KpSegList;

typedef struct KpDirCache
{
	Oid			store_relid;	/* kafka.store, for invalidation */
	Oid			relnode;		/* the directory relation */
	uint64		change_count;
	uint64		drop_count;
	uint32		nentries;		/* entries read so far */

	/*
	 * A refresh began and did not end: entries are applied as they are read
	 * and nentries advances at the end, so after a read that failed part way
	 * (an I/O error, a cancel) the next refresh would apply the first ones
	 * again (a segment listed twice, a compacted segment taken for one it
	 * replaced).  It reads them all instead.
	 */
	bool		incomplete;
	HTAB	   *lists;
	MemoryContext cxt;
} KpDirCache;

static KpDirCache dircache;
static bool callback_registered = false;

static void
dircache_reset(void)
{
	if (dircache.cxt)
		MemoryContextDelete(dircache.cxt);
	memset(&dircache, 0, sizeof(dircache));
}

static void
dircache_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == dircache.store_relid)
		dircache_reset();
}

/*
 * The directory's relfilenode, read from kafka.store once per backend (and
 * again after kafka.store changes, i.e. the extension was re-created).
 */
Oid
kp_directory_relnode(void)
{
	Oid			nsp;
	Oid			relid;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	Oid			relnode = InvalidOid;

	if (OidIsValid(dircache.relnode))
		return dircache.relnode;

	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(dircache_relcache_callback, (Datum) 0);
		callback_registered = true;
	}

	nsp = get_namespace_oid("kafka", true);
	relid = OidIsValid(nsp) ? get_relname_relid("store", nsp) : InvalidOid;
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"kafka_pg\" is not installed in database \"%s\"",
						get_database_name(MyDatabaseId))));

	rel = table_open(relid, AccessShareLock);
	scan = table_beginscan(rel, GetTransactionSnapshot(), 0, NULL);
	tup = heap_getnext(scan, ForwardScanDirection);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, 1, RelationGetDescr(rel), &isnull);

		if (!isnull)
			relnode = DatumGetObjectId(d);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);

	if (!OidIsValid(relnode))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("kafka.store has no segment directory")));

	dircache_reset();
	dircache.store_relid = relid;
	dircache.relnode = relnode;
	return relnode;
}

static Relation
directory_open(void)
{
	return kp_segment_open(kp_directory_relnode());
}

/*
 * Create the directory relation for CREATE EXTENSION.  Its storage is
 * dropped if that transaction aborts.
 */
Oid
kp_store_create_directory(void)
{
	KpDirMeta	meta;

	memset(&meta, 0, sizeof(meta));
	meta.magic = KP_DIR_MAGIC;
	meta.version = KP_STORE_VERSION;
	meta.change_count = 1;
	return kp_store_create_relation(true, &meta, sizeof(meta));
}

static KpDirMeta *
dir_meta(Page page)
{
	KpDirMeta  *meta = (KpDirMeta *) PageGetContents(page);

	if (meta->magic != KP_DIR_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("kafka_pg segment directory has a bad metapage")));
	return meta;
}

/*
 * Append an entry.  The entry page and the metapage change in one WAL
 * record, so the counters never disagree with the entries.
 */
static void
directory_append(int64 partition_id, int64 base_offset, Oid relnode,
				 uint32 flags)
{
	Relation	rel = directory_open();
	Buffer		metabuf;
	Buffer		buf;
	GenericXLogState *xstate;
	Page		metapage;
	KpDirMeta  *meta;
	KpDirEntry	entry;

	LWLockAcquire(kp_store_shared->directory_lock, LW_EXCLUSIVE);

	metabuf = ReadBufferExtended(rel, MAIN_FORKNUM, 0, RBM_NORMAL, NULL);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	meta = dir_meta(BufferGetPage(metabuf));
	memset(&entry, 0, sizeof(entry));
	entry.partition_id = partition_id;
	entry.base_offset = base_offset;
	entry.relnode = relnode;
	entry.flags = flags;
	xstate = kp_store_append_entry(rel, metabuf, meta->nentries, &entry,
								   sizeof(KpDirEntry), KP_DIR_ENTRIES_PER_PAGE,
								   &metapage, &buf);

	meta = (KpDirMeta *) PageGetContents(metapage);
	meta->nentries++;
	meta->change_count++;
	GenericXLogFinish(xstate);

	UnlockReleaseBuffer(buf);
	UnlockReleaseBuffer(metabuf);
	LWLockRelease(kp_store_shared->directory_lock);
	kp_segment_close(rel);
}

/*
 * Append up to three entries in one WAL record: the metapage and at most
 * two entry pages (three entries never span more), within generic WAL's
 * MAX_GENERIC_XLOG_PAGES.
 */
static void
directory_append_many(const KpDirEntry *entries, int n)
{
	Relation	rel = directory_open();
	Buffer		metabuf;
	Buffer		bufs[2] = {InvalidBuffer, InvalidBuffer};
	BlockNumber blknos[2] = {InvalidBlockNumber, InvalidBlockNumber};
	Page		pages[2] = {NULL, NULL};
	int			nbufs = 0;
	GenericXLogState *xstate;
	Page		metapage;
	KpDirMeta  *meta;
	uint32		nentries;
	int			i;

	Assert(n >= 1 && n <= 3);
	LWLockAcquire(kp_store_shared->directory_lock, LW_EXCLUSIVE);
	metabuf = ReadBufferExtended(rel, MAIN_FORKNUM, 0, RBM_NORMAL, NULL);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	meta = dir_meta(BufferGetPage(metabuf));
	nentries = meta->nentries;

	/* the pages first, extending the relation as needed, in block order */
	for (i = 0; i < n; i++)
	{
		BlockNumber blkno = 1 + (nentries + i) / KP_DIR_ENTRIES_PER_PAGE;
		Buffer		buf;

		if (nbufs > 0 && blknos[nbufs - 1] == blkno)
			continue;
		if (blkno >= smgrnblocks(RelationGetSmgr(rel), MAIN_FORKNUM))
		{
			buf = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_NORMAL, NULL);
			if (BufferGetBlockNumber(buf) != blkno)
				elog(ERROR, "kafka_pg segment directory: new block %u where %u was expected",
					 BufferGetBlockNumber(buf), blkno);
		}
		else
			buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		bufs[nbufs] = buf;
		blknos[nbufs] = blkno;
		nbufs++;
	}

	xstate = GenericXLogStart(rel);
	metapage = GenericXLogRegisterBuffer(xstate, metabuf, 0);
	for (i = 0; i < nbufs; i++)
	{
		/*
		 * A page's first entry starts it afresh (a page left zero included);
		 * a second page always begins with one of ours.
		 */
		bool		fresh = (i > 0 || nentries % KP_DIR_ENTRIES_PER_PAGE == 0 ||
							 PageIsNew(BufferGetPage(bufs[i])));

		pages[i] = GenericXLogRegisterBuffer(xstate, bufs[i],
											 fresh ? GENERIC_XLOG_FULL_IMAGE : 0);
		if (fresh)
			PageInit(pages[i], BLCKSZ, 0);
	}
	for (i = 0; i < n; i++)
	{
		uint32		k = nentries + i;
		BlockNumber blkno = 1 + k / KP_DIR_ENTRIES_PER_PAGE;
		int			slot = k % KP_DIR_ENTRIES_PER_PAGE;
		Page		page = (blkno == blknos[0]) ? pages[0] : pages[1];

		memcpy((KpDirEntry *) PageGetContents(page) + slot, &entries[i],
			   sizeof(KpDirEntry));
		((PageHeader) page)->pd_lower = SizeOfPageHeaderData +
			(slot + 1) * sizeof(KpDirEntry);
	}
	meta = (KpDirMeta *) PageGetContents(metapage);
	meta->nentries += n;
	meta->change_count++;
	GenericXLogFinish(xstate);

	for (i = nbufs - 1; i >= 0; i--)
		UnlockReleaseBuffer(bufs[i]);
	UnlockReleaseBuffer(metabuf);
	LWLockRelease(kp_store_shared->directory_lock);
	kp_segment_close(rel);
}

void
kp_directory_publish_cleaned(int64 partition_id, int64 base_offset,
							 int64 end_offset, Oid relnode, int64 checkpoint)
{
	KpDirEntry	e[3];
	int			n = 2;

	memset(e, 0, sizeof(e));
	e[0].partition_id = partition_id;
	e[0].base_offset = base_offset;
	e[0].relnode = relnode;
	e[0].flags = KP_DIRENT_CLEANED;
	e[1].partition_id = partition_id;
	e[1].base_offset = end_offset;
	e[1].relnode = InvalidOid;
	e[1].flags = KP_DIRENT_CLEANED_END;
	if (checkpoint >= 0)
	{
		e[2].partition_id = partition_id;
		e[2].base_offset = checkpoint;
		e[2].relnode = InvalidOid;
		e[2].flags = KP_DIRENT_CLEANER_CHECKPOINT;
		n = 3;
	}
	directory_append_many(e, n);
}

/* partition_id has a segment starting at base_offset in relation relnode. */
void
kp_directory_add(int64 partition_id, int64 base_offset, Oid relnode)
{
	directory_append(partition_id, base_offset, relnode, 0);
}

/*
 * The partition's log start offset is now log_start_offset (DeleteRecords).
 * Like a segment entry it is written at once with generic WAL, so it
 * survives a crash and reaches standbys, whatever becomes of the current
 * transaction: moving the log start cannot be undone, as in Kafka.
 */
void
kp_directory_set_log_start(int64 partition_id, int64 log_start_offset)
{
	directory_append(partition_id, log_start_offset, InvalidOid,
					 KP_DIRENT_LOG_START);
}

/*
 * Where the live (not dropped) entry of a partition's segment is: its block
 * and slot.  Reads the directory a page at a time under share buffer
 * locks, with no LWLock of ours: entries never move, and their flags
 * change only under the directory lock, where the caller checks again.
 */
static bool
directory_find_segment(Relation rel, int64 partition_id, Oid relnode,
					   BlockNumber *found_blkno, int *found_slot)
{
	Buffer		metabuf;
	uint32		nentries;
	BlockNumber blkno;

	metabuf = ReadBufferExtended(rel, MAIN_FORKNUM, 0, RBM_NORMAL, NULL);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	nentries = dir_meta(BufferGetPage(metabuf))->nentries;
	UnlockReleaseBuffer(metabuf);

	for (blkno = 1; (blkno - 1) * KP_DIR_ENTRIES_PER_PAGE < nentries; blkno++)
	{
		Buffer		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
		Page		page;
		int			n;
		int			i;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		n = (((PageHeader) page)->pd_lower - SizeOfPageHeaderData) / sizeof(KpDirEntry);
		for (i = 0; i < n; i++)
		{
			KpDirEntry *e = (KpDirEntry *) PageGetContents(page) + i;

			if (e->partition_id == partition_id && e->relnode == relnode &&
				!(e->flags & (KP_DIRENT_DROPPED | KP_DIRENT_NOT_SEGMENT)))
			{
				UnlockReleaseBuffer(buf);
				*found_blkno = blkno;
				*found_slot = i;
				return true;
			}
		}
		UnlockReleaseBuffer(buf);
	}
	return false;
}

/*
 * Flag a partition's segment as dropped (DeleteRecords, logstart.c).  The
 * entry is looked for first with no lock held (the directory only grows:
 * the search is as long as the directory), then flagged under the
 * directory lock, WAL-logged with the metapage's counters.
 */
void
kp_directory_mark_dropped(int64 partition_id, Oid relnode)
{
	Relation	rel = directory_open();
	Buffer		metabuf;
	Buffer		buf;
	BlockNumber blkno;
	int			slot;
	Page		page;
	KpDirEntry *e;

	if (!directory_find_segment(rel, partition_id, relnode, &blkno, &slot))
	{
		kp_segment_close(rel);
		return;
	}

	LWLockAcquire(kp_store_shared->directory_lock, LW_EXCLUSIVE);
	metabuf = ReadBufferExtended(rel, MAIN_FORKNUM, 0, RBM_NORMAL, NULL);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	(void) dir_meta(BufferGetPage(metabuf));
	buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	page = BufferGetPage(buf);
	e = (KpDirEntry *) PageGetContents(page) + slot;
	if (e->partition_id == partition_id && e->relnode == relnode &&
		!(e->flags & (KP_DIRENT_DROPPED | KP_DIRENT_NOT_SEGMENT)))
	{
		GenericXLogState *xstate = GenericXLogStart(rel);
		Page		p = GenericXLogRegisterBuffer(xstate, buf, 0);
		Page		mp = GenericXLogRegisterBuffer(xstate, metabuf, 0);

		((KpDirEntry *) PageGetContents(p) + slot)->flags |= KP_DIRENT_DROPPED;
		((KpDirMeta *) PageGetContents(mp))->change_count++;
		((KpDirMeta *) PageGetContents(mp))->drop_count++;
		GenericXLogFinish(xstate);
	}
	UnlockReleaseBuffer(buf);
	UnlockReleaseBuffer(metabuf);
	LWLockRelease(kp_store_shared->directory_lock);
	kp_segment_close(rel);
}

/* segments lost with a rolled-back subtransaction (kp_directory_lose_segment) */
typedef struct KpLostSegment
{
	int64		partition_id;
	Oid			relnode;
} KpLostSegment;

static List *lost_segments = NIL;

static bool
segment_is_lost(int64 partition_id, Oid relnode)
{
	ListCell   *lc;

	foreach(lc, lost_segments)
	{
		KpLostSegment *l = lfirst(lc);

		if (l->partition_id == partition_id && l->relnode == relnode)
			return true;
	}
	return false;
}

static void
seglist_add(KpSegList *list, int64 base_offset, Oid relnode)
{
	int			i;

	if (list->nsegs == list->capacity)
	{
		int			newcap = list->capacity ? list->capacity * 2 : 4;

		if (list->segs)
			list->segs = repalloc(list->segs, newcap * sizeof(KpSegInfo));
		else
			list->segs = MemoryContextAlloc(dircache.cxt, newcap * sizeof(KpSegInfo));
		list->capacity = newcap;
	}
	/* entries arrive in base-offset order; keep it so whatever happens */
	i = list->nsegs;
	while (i > 0 && list->segs[i - 1].base_offset > base_offset)
	{
		list->segs[i] = list->segs[i - 1];
		i--;
	}
	list->segs[i].base_offset = base_offset;
	list->segs[i].relnode = relnode;
	list->nsegs++;
}

static KpSegList *
seglist_get(int64 partition_id)
{
	bool		found;
	KpSegList  *list = hash_search(dircache.lists, &partition_id, HASH_ENTER, &found);

	if (!found)
	{
		list->nsegs = 0;
		list->capacity = 0;
		list->segs = NULL;
		list->log_start_offset = -1;
		list->checkpoint = -1;
		list->nreplaced = 0;
		list->repcap = 0;
		list->replaced = NULL;
	}
	return list;
}

static void
seglist_add_replaced(KpSegList *list, KpSegInfo s)
{
	if (list->nreplaced == list->repcap)
	{
		int			newcap = list->repcap ? list->repcap * 2 : 4;

		if (list->replaced)
			list->replaced = repalloc(list->replaced, newcap * sizeof(KpSegInfo));
		else
			list->replaced = MemoryContextAlloc(dircache.cxt, newcap * sizeof(KpSegInfo));
		list->repcap = newcap;
	}
	list->replaced[list->nreplaced++] = s;
}

/*
 * Segments that lie wholly below the log start offset (the next segment's
 * base offset is at or below it; never the last one) leave the partition's
 * list for its replaced list, as a cleaned segment's group does: from the
 * KP_DIRENT_LOG_START entry (DeleteRecords, retention) or the roll that
 * puts them there, no reader lists them, and their storage is dropped
 * later (kp_log_drop_replaced_segments, after file.delete.delay.ms).
 */
static void
seglist_trim_below_log_start(KpSegList *list)
{
	int			n = 0;

	while (n + 1 < list->nsegs && list->segs[n + 1].base_offset <= list->log_start_offset)
	{
		seglist_add_replaced(list, list->segs[n]);
		n++;
	}
	if (n > 0)
	{
		memmove(&list->segs[0], &list->segs[n],
				(list->nsegs - n) * sizeof(KpSegInfo));
		list->nsegs -= n;
	}
}

/*
 * A cleaned segment (base_offset, relnode) takes the place of the listed
 * segments whose base offsets lie in [base_offset, end_offset); they move
 * to the partition's replaced list until their drop is flagged.
 */
static void
seglist_apply_cleaned(KpSegList *list, int64 base_offset, int64 end_offset,
					  Oid relnode)
{
	int			i = 0;

	while (i < list->nsegs)
	{
		KpSegInfo	s = list->segs[i];

		if (s.base_offset < base_offset || s.base_offset >= end_offset)
		{
			i++;
			continue;
		}
		seglist_add_replaced(list, s);
		memmove(&list->segs[i], &list->segs[i + 1],
				(list->nsegs - i - 1) * sizeof(KpSegInfo));
		list->nsegs--;
	}
	seglist_add(list, base_offset, relnode);
}

/* Bring the backend's cache up to date with the directory. */
static void
dircache_refresh(void)
{
	Relation	rel = directory_open();
	Buffer		metabuf;
	KpDirMeta	meta;
	BlockNumber blkno;
	uint32		from;
	KpDirEntry	pending;
	bool		have_pending;

	metabuf = ReadBufferExtended(rel, MAIN_FORKNUM, 0, RBM_NORMAL, NULL);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	meta = *dir_meta(BufferGetPage(metabuf));
	UnlockReleaseBuffer(metabuf);

	if (dircache.lists && !dircache.incomplete && meta.change_count == dircache.change_count)
	{
		kp_segment_close(rel);
		return;
	}

	if (dircache.lists == NULL || dircache.incomplete || meta.drop_count != dircache.drop_count ||
		meta.nentries < dircache.nentries)
	{
		/* full reload */
		HASHCTL		ctl;

		if (dircache.cxt)
			MemoryContextDelete(dircache.cxt);
		dircache.cxt = AllocSetContextCreate(TopMemoryContext,
											 "kafka_pg segment directory",
											 ALLOCSET_DEFAULT_SIZES);
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(KpSegList);
		ctl.hcxt = dircache.cxt;
		dircache.lists = hash_create("kafka_pg segment lists", 256, &ctl,
									 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		dircache.nentries = 0;
	}

	from = dircache.nentries;
	have_pending = false;
	dircache.incomplete = true;
	for (blkno = 1 + from / KP_DIR_ENTRIES_PER_PAGE;
		 (blkno - 1) * KP_DIR_ENTRIES_PER_PAGE < meta.nentries; blkno++)
	{
		Buffer		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
		Page		page;
		uint32		first = (blkno - 1) * KP_DIR_ENTRIES_PER_PAGE;
		uint32		n;
		uint32		i;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		n = (((PageHeader) page)->pd_lower - SizeOfPageHeaderData) / sizeof(KpDirEntry);
		for (i = (from > first ? from - first : 0); i < n && first + i < meta.nentries; i++)
		{
			KpDirEntry *e = (KpDirEntry *) PageGetContents(page) + i;
			KpSegList  *list;

			if (e->flags & KP_DIRENT_CLEANED_END)
			{
				/* it follows its KP_DIRENT_CLEANED entry in the same record */
				if (have_pending && pending.partition_id == e->partition_id)
					seglist_apply_cleaned(seglist_get(e->partition_id),
										  pending.base_offset, e->base_offset,
										  pending.relnode);
				have_pending = false;
				continue;
			}
			have_pending = false;
			if (e->flags & KP_DIRENT_DROPPED)
				continue;
			list = seglist_get(e->partition_id);
			if (e->flags & KP_DIRENT_LOG_START)
			{
				list->log_start_offset = Max(list->log_start_offset, e->base_offset);
				seglist_trim_below_log_start(list);
			}
			else if (e->flags & KP_DIRENT_CLEANER_CHECKPOINT)
				list->checkpoint = Max(list->checkpoint, e->base_offset);
			else if (e->flags & KP_DIRENT_CLEANED)
			{
				pending = *e;
				have_pending = true;
			}
			else if (!segment_is_lost(e->partition_id, e->relnode))
			{
				seglist_add(list, e->base_offset, e->relnode);
				seglist_trim_below_log_start(list);
			}
		}
		UnlockReleaseBuffer(buf);
	}
	dircache.nentries = meta.nentries;
	dircache.incomplete = false;
	dircache.change_count = meta.change_count;
	dircache.drop_count = meta.drop_count;
	kp_segment_close(rel);
}

const KpSegInfo *
kp_directory_segments(int64 partition_id, int *nsegs)
{
	KpSegList  *list;

	dircache_refresh();
	list = hash_search(dircache.lists, &partition_id, HASH_FIND, NULL);
	if (list == NULL)
	{
		*nsegs = 0;
		return NULL;
	}
	*nsegs = list->nsegs;
	return list->segs;
}

int64
kp_directory_log_start(int64 partition_id)
{
	KpSegList  *list;

	dircache_refresh();
	list = hash_search(dircache.lists, &partition_id, HASH_FIND, NULL);
	return list ? list->log_start_offset : -1;
}

int64
kp_directory_cleaner_checkpoint(int64 partition_id)
{
	KpSegList  *list;

	dircache_refresh();
	list = hash_search(dircache.lists, &partition_id, HASH_FIND, NULL);
	return list ? list->checkpoint : -1;
}

const KpSegInfo *
kp_directory_replaced(int64 partition_id, int *nsegs)
{
	KpSegList  *list;

	dircache_refresh();
	list = hash_search(dircache.lists, &partition_id, HASH_FIND, NULL);
	*nsegs = list ? list->nreplaced : 0;
	return list ? list->replaced : NULL;
}

void
kp_store_drop_directory(void)
{
	Relation	rel = directory_open();
	Oid			relnode = rel->rd_node.relNode;

	kp_segment_close(rel);
	kp_segment_drop_storage(relnode);
}

void
kp_directory_lose_segment(int64 partition_id, Oid relnode)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	KpLostSegment *l = palloc(sizeof(KpLostSegment));
	KpSegList  *list;

	l->partition_id = partition_id;
	l->relnode = relnode;
	lost_segments = lappend(lost_segments, l);
	MemoryContextSwitchTo(old);

	/* out of the cached list too, if it is there */
	if (dircache.lists &&
		(list = hash_search(dircache.lists, &partition_id, HASH_FIND, NULL)) != NULL)
	{
		int			i;

		for (i = 0; i < list->nsegs; i++)
			if (list->segs[i].relnode == relnode)
			{
				memmove(&list->segs[i], &list->segs[i + 1],
						(list->nsegs - i - 1) * sizeof(KpSegInfo));
				list->nsegs--;
				break;
			}
	}
}

/* At pre-commit: the lost segments are flagged dropped for everyone. */
void
kp_directory_flag_lost_segments(void)
{
	ListCell   *lc;

	foreach(lc, lost_segments)
	{
		KpLostSegment *l = lfirst(lc);

		kp_directory_mark_dropped(l->partition_id, l->relnode);
	}
}

void
kp_directory_forget_lost_segments(void)
{
	list_free_deep(lost_segments);
	lost_segments = NIL;
}
