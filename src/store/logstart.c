/*-------------------------------------------------------------------------
 *
 * logstart.c
 *	  Moving a partition's log start offset forward: Kafka's DeleteRecords
 *	  (KIP-107), and the segment drops that follow from it.
 *
 * Retention (retention.c, driven by src/cleaner) moves the log start through
 * the same two steps, kp_logstart_advance: record the new log start, then
 * drop the segments below it.
 *
 * The log start offset is the first offset a consumer can read.  It starts
 * at the first segment's base offset; DeleteRecords raises it to any offset
 * up to the high watermark, possibly into the middle of a segment.  The new
 * value is recorded in the segment directory as an entry of its own
 * (KP_DIRENT_LOG_START, directory.c), written with generic WAL at once, so
 * it survives a restart (recovery.c reads it back) and a standby sees it
 * by replay (reader.c).  Like Kafka's, the move is not transactional: a
 * ROLLBACK does not bring deleted records back.
 *
 * Segments that end at or below the new log start (the next segment's base
 * offset is <= it; the active segment never does, as in Kafka's
 * deleteLogStartOffsetBreachedSegments) leave the log with that same
 * directory entry: every backend's directory cache moves them to the
 * partition's replaced list as it reads the entry (directory.c), so no
 * reader lists them from then on, and the partition's segment count and
 * size lose them at once.  Their storage is not dropped then: a reader that
 * listed them a moment before may still be reading them.  As Kafka deletes
 * a segment's files file.delete.delay.ms after the segment left the log,
 * kp_log_drop_replaced_segments (below; driven by src/cleaner for every
 * topic) drops them once the topic's file.delete.delay.ms has passed, the
 * same way as the segments a clean replaced (compaction.c).
 *
 * The delay.  Each partition's shared state keeps one mark: "the replaced
 * list up to segment M had left the log by time T".  A drop pass drops that
 * prefix once now - T >= file.delete.delay.ms, then marks what is left of
 * the list with the current time; with no mark it only sets one.  So a
 * segment is dropped at least file.delete.delay.ms after it left the log,
 * and at most about twice that plus the passes' interval.  The list is in
 * the order segments left (directory.c), so a prefix is always the oldest.
 * Nothing of this is durable, and need not be: at a partition's first load
 * after a restart the mark covers the whole list with time 0, so the first
 * pass drops it (no reader can hold a segment across a restart), as Kafka
 * deletes its .deleted files at startup.
 *
 * A drop is RelationDropStorage, which empties the file when the
 * transaction commits.  The directory entry is flagged dropped just before
 * that commit (XACT_EVENT_PRE_COMMIT), so the directory never lists a
 * segment whose file is gone, and an aborted transaction keeps both; a
 * later pass finds the segments again.  A crash between the pre-commit flag
 * and the commit record leaves an unreferenced file (space, not data).
 *
 * Locking: the partition's appender lock while the offsets are read and the
 * log start moves, as for an append; the WAL flush and the measuring of the
 * segments that left come after it is released.  Callers hold a topic lock
 * that keeps concurrent DeleteRecords on the same topic apart until
 * commit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/storage.h"
#include "utils/memutils.h"

#include "common/kafka_errors.h"
#include "store/store_int.h"

/* A segment dropped by the current transaction, to flag at pre-commit. */
typedef struct KpPendingDrop
{
	int64		partition_id;
	Oid			relnode;
	int64		size_bytes;
	int			nest_level;		/* subtransaction that dropped it */
} KpPendingDrop;

static List *pending_drops = NIL;
static bool callbacks_registered = false;

static void
flag_pending_drops(void)
{
	ListCell   *lc;

	foreach(lc, pending_drops)
	{
		KpPendingDrop *d = lfirst(lc);
		KpPartitionState *state;

		kp_directory_mark_dropped(d->partition_id, d->relnode);
		if (d->size_bytes < 0)
			continue;			/* replaced by compaction: not counted */
		state = kp_partition_lock(d->partition_id, false);
		if (state != NULL)
		{
			state->segment_count--;
			state->closed_bytes -= d->size_bytes;
			kp_partition_unlock(state);
		}
	}
}

static void
forget_pending_drops(void)
{
	list_free_deep(pending_drops);
	pending_drops = NIL;
}

static void
logstart_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			flag_pending_drops();
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (pending_drops != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that deleted records of a partition")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			forget_pending_drops();
			break;
	}
}

/* A subtransaction's drops go with it on abort, to its parent on commit. */
static void
logstart_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						  SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *lc;

	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		foreach(lc, pending_drops)
		{
			KpPendingDrop *d = lfirst(lc);

			if (d->nest_level >= level)
			{
				pending_drops = foreach_delete_current(pending_drops, lc);
				pfree(d);
			}
		}
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		foreach(lc, pending_drops)
		{
			KpPendingDrop *d = lfirst(lc);

			if (d->nest_level >= level)
				d->nest_level = level - 1;
		}
	}
}

static bool
drop_is_pending(int64 partition_id, Oid relnode)
{
	ListCell   *lc;

	foreach(lc, pending_drops)
	{
		KpPendingDrop *d = lfirst(lc);

		if (d->partition_id == partition_id && d->relnode == relnode)
			return true;
	}
	return false;
}

/*
 * Drop a segment's storage (and its aborted-transaction index) when the
 * transaction commits, its directory entry flagged dropped at pre-commit.
 * counted: the segment is listed, so the partition's segment count and
 * closed bytes go down with it; a segment a cleaned one replaced
 * (compaction.c) is no longer counted.  Returns false if already scheduled.
 */
bool
kp_logstart_schedule_drop(int64 partition_id, Oid relnode, bool counted)
{
	Relation	rel;
	KpPendingDrop *d;
	MemoryContext old;

	if (drop_is_pending(partition_id, relnode))
		return false;
	if (!callbacks_registered)
	{
		RegisterXactCallback(logstart_xact_callback, NULL);
		RegisterSubXactCallback(logstart_subxact_callback, NULL);
		callbacks_registered = true;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	d = palloc(sizeof(KpPendingDrop));
	d->partition_id = partition_id;
	d->relnode = relnode;
	d->nest_level = GetCurrentTransactionNestLevel();
	MemoryContextSwitchTo(old);
	rel = kp_segment_open(relnode);
	d->size_bytes = counted ? kp_segment_data_size(rel) : -1;
	/* a commit that deletes files must have an xid to log them with */
	(void) GetCurrentTransactionId();
	kp_txnindex_drop(rel);		/* its aborted-transaction index goes too */
	kp_segment_close(rel);
	kp_segment_drop_storage(relnode);
	old = MemoryContextSwitchTo(TopMemoryContext);
	pending_drops = lappend(pending_drops, d);
	MemoryContextSwitchTo(old);
	return true;
}

/*
 * Kafka's DeleteRecords for one partition (UnifiedLog.maybeIncrementLogStartOffset):
 * before_offset -1 means the high watermark; a negative one or one past the
 * high watermark is OFFSET_OUT_OF_RANGE (KP001); one at or below the log
 * start changes nothing.  *new_log_start gets the log start offset after the
 * call (Kafka's low watermark).
 */
void
kp_log_delete_records(int64 partition_id, int64 before_offset, int64 *new_log_start)
{
	*new_log_start = kp_logstart_advance(partition_id, before_offset, true);
}

/*
 * Raise the partition's log start offset to target (-1: the high watermark)
 * and drop the segments wholly below it when the transaction commits; returns
 * the log start offset afterwards.  With check_bounds, a target that is
 * negative or past the high watermark is OFFSET_OUT_OF_RANGE (DeleteRecords);
 * retention passes a segment's base offset, which is never past it.
 */
int64
kp_logstart_advance(int64 partition_id, int64 before_offset, bool check_bounds)
{
	KpPartitionState *state;
	int64		high_watermark;
	int64		target;
	int64		log_start;
	bool		moved = false;
	const KpSegInfo *dsegs;
	int			nleft = 0;
	int64		left_bytes = 0;
	KpSegInfo  *mid = NULL;
	int			i;

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot delete records during recovery"),
				 errhint("Delete records on the primary.")));

	/* kafka.store is read before the appender lock is taken (README) */
	(void) kp_directory_relnode();

	state = kp_partition_lock(partition_id, true);
	high_watermark = state->log_end_offset;
	target = (before_offset == -1) ? high_watermark : before_offset;
	if (target < 0 || target > high_watermark)
	{
		kp_partition_unlock(state);
		if (!check_bounds)
			elog(ERROR, "log start offset %lld of partition %lld is past its high watermark %lld",
				 (long long) target, (long long) partition_id,
				 (long long) high_watermark);
		ereport(ERROR,
				(errcode(ERRCODE_KP_OFFSET_OUT_OF_RANGE),
				 errmsg("cannot delete records before offset %lld: the high watermark is %lld",
						(long long) target, (long long) high_watermark),
				 errhint("Use an offset between the log start offset and the high watermark, or -1 for the high watermark.")));
	}

	PG_TRY();
	{
		if (target > state->log_start_offset)
		{
			int			nmid;
			int			nafter;
			const KpSegInfo *after;

			/* the list as it is now, before the move (a roll may have come) */
			dsegs = kp_directory_segments(partition_id, &nmid);
			mid = palloc(sizeof(KpSegInfo) * Max(nmid, 1));
			if (nmid > 0)
				memcpy(mid, dsegs, sizeof(KpSegInfo) * nmid);
			kp_directory_set_log_start(partition_id, target);
			state->log_start_offset = target;
			kp_txnstate_compute_lso(state);
			moved = true;

			/*
			 * Which of the segments listed before left the log with the move:
			 * those below the first one still listed (the directory cache
			 * moved them to the replaced list).  No roll can come between
			 * while we hold the appender lock; the cache is read with buffer
			 * locks only.
			 */
			after = kp_directory_segments(partition_id, &nafter);
			for (i = 0; i < nmid; i++)
			{
				if (nafter > 0 && mid[i].base_offset >= after[0].base_offset)
					break;
				nleft++;
			}
			state->segment_count -= nleft;
		}
	}
	PG_CATCH();
	{
		/* reload from the store next time rather than trust a half change */
		state->loaded = false;
		PG_RE_THROW();
	}
	PG_END_TRY();
	log_start = state->log_start_offset;
	kp_partition_unlock(state);

	/*
	 * Durable before we answer: the transaction may have no xid (this drops
	 * nothing), and then its commit flushes nothing.  The flush waits for the
	 * disk, so not under the appender lock.
	 */
	if (moved)
		XLogFlush(XactLastRecEnd);	/* the end of our directory record; the
									 * insert position may lie past a page
									 * header nothing has written yet */

	/*
	 * The partition's size loses the segments that left: closed (the active
	 * segment never has a next one), no longer listed, so their size is
	 * fixed; measured with no lock (a page or a few each).
	 */
	for (i = 0; i < nleft; i++)
	{
		Relation	rel = kp_segment_open(mid[i].relnode);

		left_bytes += kp_segment_data_size(rel);
		kp_segment_close(rel);
	}
	if (left_bytes > 0)
	{
		state = kp_partition_lock(partition_id, false);
		if (state != NULL)
		{
			state->closed_bytes -= left_bytes;
			kp_partition_unlock(state);
		}
	}
	if (mid)
		pfree(mid);
	return log_start;
}

/* Where relnode is in segs[0..n), or -1. */
static int
find_relnode(const KpSegInfo *segs, int n, Oid relnode)
{
	int			i;

	for (i = 0; i < n; i++)
		if (segs[i].relnode == relnode)
			return i;
	return -1;
}

/*
 * Drop, when the current transaction commits, the storage of the segments
 * that left the partition's log (wholly below the log start, or replaced by
 * a clean) at least delay_ms ago, by the partition's mark (the top of this
 * file); returns how many.
 */
int
kp_log_drop_replaced_segments(int64 partition_id, int64 delay_ms)
{
	int			n;
	const KpSegInfo *dsegs;
	KpSegInfo  *segs;
	KpPartitionState *state;
	int64		now = kp_now_ms();
	int			ndrop = 0;
	int			dropped = 0;
	int			i;

	if (RecoveryInProgress())
		return 0;
	/* kafka.store is read before the appender lock is taken (README) */
	(void) kp_directory_relnode();
	dsegs = kp_directory_replaced(partition_id, &n);
	if (n == 0)
		return 0;
	segs = palloc(sizeof(KpSegInfo) * n);
	memcpy(segs, dsegs, sizeof(KpSegInfo) * n);

	state = kp_partition_lock(partition_id, false);
	if (state == NULL)
		ndrop = n;				/* not used since the server started */
	else
	{
		int			mark = OidIsValid(state->drop_mark_relnode) ?
		find_relnode(segs, n, state->drop_mark_relnode) : -1;

		if (mark < 0)
		{
			/* they had all left by now */
			mark = n - 1;
			state->drop_mark_relnode = segs[mark].relnode;
			state->drop_mark_ms = now;
		}
		if (now - state->drop_mark_ms >= delay_ms)
		{
			ndrop = mark + 1;
			/* the rest had left by now */
			state->drop_mark_relnode = ndrop < n ? segs[n - 1].relnode : InvalidOid;
			state->drop_mark_ms = now;
		}
		kp_partition_unlock(state);
	}

	for (i = 0; i < ndrop; i++)
		if (kp_logstart_schedule_drop(partition_id, segs[i].relnode, false))
			dropped++;
	pfree(segs);
	return dropped;
}
