/*-------------------------------------------------------------------------
 *
 * partition.c
 *	  The partition table: hot per-partition state in shared memory, found
 *	  and locked by partition id, loaded from the store on first use, and
 *	  forgotten when the partition's storage is dropped.
 *
 * Each partition that has been touched since the server started has a
 * KpPartitionState in a shared hash table (kafka.max_partitions entries)
 * keyed by (database, partition id): its log end offset (= high watermark,
 * a single node), log start offset, last stable offset, active segment,
 * the transactions open in it (txnstate.c) and its idempotent producers
 * (producer.c).  Nothing in it is authoritative: it is rebuilt from the
 * store by recovery.c the first time the partition is touched after a
 * restart, and again after any error in the middle of a change.
 *
 * The hash table is guarded by the partition map lock; each entry's fields
 * by its own LWLock, the appender lock (lock order and waits: README).
 *
 * On a hot standby nothing here is used for reading: the state would not
 * follow WAL replay, so readers there work from the pages (reader.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/storage.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "common/kafka_errors.h"
#include "store/store_int.h"

/* GUC: kafka.max_partitions, defined in src/main */
extern int	kp_max_partitions;

KpStoreShared *kp_store_shared = NULL;
static HTAB *partition_hash = NULL;

/*
 * A partition the current transaction dropped or created storage for, and
 * the subtransaction that did it: PostgreSQL drops or keeps the storage
 * with that subtransaction (smgr's pending deletes are per nesting level),
 * so the shared state follows it (store_subxact_callback).
 */
typedef struct RememberedPartition
{
	int64		partition_id;
	Oid			relnode;		/* created: the segment; dropped: invalid */
	SubTransactionId subid;
} RememberedPartition;

/* partitions dropped by the current transaction, forgotten at commit */
static List *dropped_partitions = NIL;

/* partitions whose storage this transaction created, gone if it aborts */
static List *created_partitions = NIL;

static bool xact_callback_registered = false;

static void remember_partition(List **list, int64 partition_id, Oid relnode);

/* whether a partition exists now: src/catalog's (kp_log_register_partition_exists) */
static KpPartitionExistsCallback partition_exists_callback = NULL;

/* Whether the list of RememberedPartition has partition_id. */
static bool
partition_listed(List *list, int64 partition_id)
{
	ListCell   *lc;

	foreach(lc, list)
	{
		if (((RememberedPartition *) lfirst(lc))->partition_id == partition_id)
			return true;
	}
	return false;
}

/* ms since the Unix epoch, as Kafka timestamps are */
int64
kp_now_ms(void)
{
	TimestampTz now = GetCurrentTimestamp();

	return now / 1000 +
		((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)) * SECS_PER_DAY * 1000;
}

/* ---------------------------------------------------------------------
 * Shared memory
 * ---------------------------------------------------------------------
 */

Size
kp_store_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(KpStoreShared)),
					hash_estimate_size(kp_max_partitions, sizeof(KpPartitionState)));
}

void
kp_store_request_locks(void)
{
	RequestNamedLWLockTranche("kafka_pg store", 2);
}

void
kp_store_shmem_init(void)
{
	bool		found;
	HASHCTL		info;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	kp_store_shared = ShmemInitStruct("kafka_pg store", sizeof(KpStoreShared), &found);
	if (!found)
	{
		LWLockPadded *locks = GetNamedLWLockTranche("kafka_pg store");

		kp_store_shared->partition_tranche = LWLockNewTrancheId();
		kp_store_shared->map_lock = &locks[0].lock;
		kp_store_shared->directory_lock = &locks[1].lock;
		kp_store_shared->resolver_latch = NULL;
		pg_atomic_init_u64(&kp_store_shared->appends, 0);
		pg_atomic_init_u32(&kp_store_shared->nwaiting, 0);
		pg_atomic_init_u32(&kp_store_shared->resolver_idle, 1);
		SpinLockInit(&kp_store_shared->waiter_mutex);
		for (int i = 0; i < KP_MAX_APPEND_WAITERS; i++)
		{
			kp_store_shared->waiters[i].latch = NULL;
			pg_atomic_init_u32(&kp_store_shared->waiters[i].waiting, 0);
		}
		for (int i = 0; i < KP_FETCH_WAIT_BUCKETS; i++)
		{
			pg_atomic_init_u64(&kp_store_shared->fetch_buckets[i].changes, 0);
			pg_atomic_init_u64(&kp_store_shared->fetch_buckets[i].waiters, 0);
		}
	}
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(KpPartitionKey);
	info.entrysize = sizeof(KpPartitionState);
	partition_hash = ShmemInitHash("kafka_pg partitions", kp_max_partitions,
								   kp_max_partitions, &info,
								   HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);
	LWLockRegisterTranche(kp_store_shared->partition_tranche, "kafka_pg partition");
}

/* ---------------------------------------------------------------------
 * Pins
 *
 * A process that found an entry holds a pointer to it until it is done:
 * it waits for the entry's appender lock, or for its load lock, and may
 * find the partition dropped meanwhile.  The entry must not be removed from
 * the map under it: dynahash would hand the element to the next new
 * partition, whose LWLockInitialize would reset a lock the process holds
 * or waits for.  So every lookup pins the entry (KpPartitionState.pins,
 * taken under the map lock) and every user drops the pin when it is done:
 * kp_partition_unlock for the lock's users, kp_partition_unpin for the
 * others.  Forgetting a partition (its storage dropped at commit, or its
 * creating transaction aborted) marks its entry forgotten under the map
 * lock, which no lookup then returns, and the last pin out removes it.
 *
 * A process remembers its pins with the resource owner current when it
 * took each: an ERROR between a lookup and its release (a failed load, a
 * failed append) releases them with that owner, as PostgreSQL releases a
 * buffer pin; a pin left at a commit is a bug, released with a WARNING.
 * ---------------------------------------------------------------------
 */

typedef struct HeldPin
{
	KpPartitionState *state;
	ResourceOwner owner;
} HeldPin;

static HeldPin *held_pins = NULL;
static int	nheld_pins = 0;
static int	max_held_pins = 0;

static void pins_release_callback(ResourceReleasePhase phase, bool isCommit,
								  bool isTopLevel, void *arg);

/* Room for one more pin, made before the map lock is taken. */
static void
reserve_pin(void)
{
	if (held_pins == NULL)
	{
		max_held_pins = 8;
		held_pins = MemoryContextAlloc(TopMemoryContext, sizeof(HeldPin) * max_held_pins);
		RegisterResourceReleaseCallback(pins_release_callback, NULL);
	}
	else if (nheld_pins == max_held_pins)
	{
		/* the capacity once the memory is there (an ERROR of repalloc) */
		held_pins = repalloc(held_pins, sizeof(HeldPin) * max_held_pins * 2);
		max_held_pins *= 2;
	}
}

/* Pin an entry that is not forgotten, under the map lock (reserve_pin first). */
static void
pin_locked(KpPartitionState *state)
{
	pg_atomic_fetch_add_u32(&state->pins, 1);
	held_pins[nheld_pins].state = state;
	held_pins[nheld_pins].owner = CurrentResourceOwner;
	nheld_pins++;
}

/*
 * Drop a pin.  The decrement is a full barrier, and so is the map lock the
 * forgetter sets the flag under while it holds a pin of its own: whoever
 * drops the last pin sees the flag, and removes the entry.
 */
static void
release_pin(KpPartitionState *state)
{
	if (pg_atomic_sub_fetch_u32(&state->pins, 1) == 0 && state->forgotten)
	{
		KpPartitionKey key;

		LWLockAcquire(kp_store_shared->map_lock, LW_EXCLUSIVE);

		/*
		 * Another last one out (a pin taken before the flag and dropped at
		 * the same time) may have removed it, and the element may hold a new
		 * entry by now: remove only the entry found at this address, still
		 * forgotten and unpinned.
		 */
		key = state->key;
		if (hash_search(partition_hash, &key, HASH_FIND, NULL) == state &&
			state->forgotten && pg_atomic_read_u32(&state->pins) == 0)
			hash_search(partition_hash, &key, HASH_REMOVE, NULL);
		LWLockRelease(kp_store_shared->map_lock);
	}
}

/* Drop a pin this process took (a lookup's). */
void
kp_partition_unpin(KpPartitionState *state)
{
	int			i;

	for (i = nheld_pins - 1; i >= 0; i--)
	{
		if (held_pins[i].state == state)
		{
			held_pins[i] = held_pins[--nheld_pins];
			release_pin(state);
			return;
		}
	}
	/* not an ERROR: commit callbacks (kp_log_decide_txn) come here */
	elog(WARNING, "kafka_pg: dropping a partition state pin that is not held");
}

/*
 * A resource owner is released: the pins taken under it go (at the end of
 * the top transaction, every pin: those taken with no owner too).
 */
static void
pins_release_callback(ResourceReleasePhase phase, bool isCommit,
					  bool isTopLevel, void *arg)
{
	int			i;

	if (phase != RESOURCE_RELEASE_BEFORE_LOCKS)
		return;
	for (i = nheld_pins - 1; i >= 0; i--)
	{
		KpPartitionState *state = held_pins[i].state;

		if (!isTopLevel && held_pins[i].owner != CurrentResourceOwner)
			continue;
		if (isCommit)
			elog(WARNING, "kafka_pg: a partition state pin was left held");
		held_pins[i] = held_pins[--nheld_pins];
		release_pin(state);
	}
}

/*
 * Mark a pinned entry forgotten: no lookup returns it any more, and the
 * last pin out (perhaps the caller's) removes it.
 */
static void
forget_entry(KpPartitionState *state)
{
	LWLockAcquire(kp_store_shared->map_lock, LW_EXCLUSIVE);
	state->forgotten = true;
	LWLockRelease(kp_store_shared->map_lock);
}

/* ---------------------------------------------------------------------
 * Finding and locking partition state
 * ---------------------------------------------------------------------
 */

/*
 * The partition's entry, pinned, or NULL if it has none (or a forgotten
 * one).  No lock is held on return: the caller takes the entry's appender
 * lock, and drops the pin when done (kp_partition_unlock, or
 * kp_partition_unpin).
 */
KpPartitionState *
kp_partition_find(Oid dboid, int64 partition_id)
{
	KpPartitionKey key;
	KpPartitionState *state;

	memset(&key, 0, sizeof(key));
	key.dboid = dboid;
	key.partition_id = partition_id;
	reserve_pin();
	LWLockAcquire(kp_store_shared->map_lock, LW_SHARED);
	state = hash_search(partition_hash, &key, HASH_FIND, NULL);
	if (state != NULL && state->forgotten)
		state = NULL;
	if (state != NULL)
		pin_locked(state);
	LWLockRelease(kp_store_shared->map_lock);
	return state;
}

/*
 * Loading a partition (recovery.c) reads the segment directory, the
 * segments' last pages and every batch header of the active segment, asks
 * the commit log about open SQL transactions, and may cut a torn tail: I/O
 * that grows with the segment.  It must not run under the appender lock,
 * an LWLock, whose waiters can neither be cancelled nor seen by the
 * deadlock detector.  So the loader builds the state in local memory with
 * no LWLock held, serialised against other loaders of the partition by a
 * heavyweight lock (an advisory lock tag of our own class: in pg_locks as
 * locktype advisory, objid the partition id, objsubid this class), and
 * installs it under the appender lock in one copy.  Processes that find the
 * partition unloaded meanwhile wait for that heavyweight lock, where a
 * wait is cancellable.  The lock is taken for the transaction and released
 * as soon as the state is installed; an ERROR releases it at abort.
 *
 * While the partition is unloaded nobody appends to it, reads its offsets
 * or writes its markers: all of those go through kp_partition_lock, which
 * loads it first (the markers through kp_partition_lock_loaded, which
 * leaves it to those who hold its topic's lock).  Only
 * kp_log_decide_txn may still mark a transaction of the old list decided
 * (a commit callback cannot wait for a load); install_state keeps those
 * decisions.
 */
#define KP_LOCKTAG_CLASS_PARTITION_LOAD	0x4B50	/* "KP" */

/*
 * Add an entry to the high-watermark ring (under published_mutex).  A full
 * ring keeps every other entry, the newest among them, so the oldest entry
 * not yet in sync always stays and the high watermark keeps moving under a
 * steady load.
 */
static void
hw_ring_push(KpPartitionState *state, int64 end_offset, XLogRecPtr end_lsn)
{
	int			i;

	if (state->hw_count == KP_HW_RING)
	{
		for (i = 0; i < KP_HW_RING / 2; i++)
			state->hw_ring[i] = state->hw_ring[2 * i + 1];
		state->hw_count = KP_HW_RING / 2;
	}
	state->hw_ring[state->hw_count].end_offset = end_offset;
	state->hw_ring[state->hw_count].end_lsn = end_lsn;
	state->hw_count++;
}

/*
 * Copy the freshly recovered state into the shared entry, whose appender
 * lock the caller holds.  A transaction still open in fresh that was
 * decided in the entry's old list while we loaded keeps its outcome.
 */
static void
install_state(KpPartitionState *state, KpPartitionState *fresh)
{
	int			i;
	int			j;
	XLogRecPtr	insert_lsn;

	for (i = 0; i < fresh->ntxns; i++)
	{
		if (fresh->txns[i].outcome != KP_TXN_OPEN)
			continue;
		for (j = 0; j < state->ntxns; j++)
		{
			if (state->txns[j].producer_id == fresh->txns[i].producer_id &&
				state->txns[j].outcome != KP_TXN_OPEN)
			{
				fresh->txns[i].outcome = state->txns[j].outcome;
				fresh->has_decided = true;
			}
		}
	}
	memcpy((char *) state + offsetof(KpPartitionState, loaded),
		   (char *) fresh + offsetof(KpPartitionState, loaded),
		   sizeof(KpPartitionState) - offsetof(KpPartitionState, loaded));

	/*
	 * The high watermark: at the first load since the server started, the
	 * whole log recovered from this server's disk (PostgreSQL's rule after a
	 * restart too: what is on the primary's disk is not waited for again). A
	 * reload after a failed append keeps what it was, below the log end.  If
	 * the failed append left whole batches that recovery kept, no ring entry
	 * ends at the reloaded log end: one is added with the WAL insert position
	 * of now, after every record of those batches, so the high watermark
	 * reaches the log end once the in-sync replicas have that (a little late,
	 * never early) instead of at the next append.
	 */
	/* hw_valid changes only here, under the appender lock the caller holds */
	insert_lsn = state->hw_valid && !RecoveryInProgress() ?
		GetXLogInsertRecPtr() : InvalidXLogRecPtr;
	SpinLockAcquire(&state->published_mutex);
	if (!state->hw_valid)
	{
		state->hw = state->log_end_offset;
		state->hw_count = 0;
		state->held_count = 0;
		state->hw_valid = true;
	}
	else
	{
		state->hw = Min(state->hw, state->log_end_offset);
		/* a marker the reload cut off is written again (recovery) */
		for (i = 0, j = 0; i < state->held_count; i++)
			if (state->held[i].marker_offset < state->log_end_offset)
				state->held[j++] = state->held[i];
		state->held_count = j;
		while (state->hw_count > 0 &&
			   state->hw_ring[state->hw_count - 1].end_offset > state->log_end_offset)
			state->hw_count--;
		if (state->hw < state->log_end_offset &&
			!XLogRecPtrIsInvalid(insert_lsn) &&
			(state->hw_count == 0 ||
			 state->hw_ring[state->hw_count - 1].end_offset < state->log_end_offset))
			hw_ring_push(state, state->log_end_offset, insert_lsn);
	}
	SpinLockRelease(&state->published_mutex);
}

/*
 * An append ended at log end offset end_offset, its WAL at end_lsn (under
 * the appender lock): the high watermark reaches end_offset once every
 * in-sync replica has end_lsn.
 */
void
kp_partition_note_append(KpPartitionState *state, int64 end_offset, XLogRecPtr end_lsn)
{
	SpinLockAcquire(&state->published_mutex);
	hw_ring_push(state, end_offset, end_lsn);
	SpinLockRelease(&state->published_mutex);
}

/*
 * Drop the held transactions whose marker is below hw (under
 * published_mutex); returns the lowest first offset of those left,
 * PG_INT64_MAX if none.
 */
static int64
held_drop_below(KpPartitionState *state, int64 hw)
{
	int64		lso = PG_INT64_MAX;
	int			i;
	int			j = 0;

	for (i = 0; i < state->held_count; i++)
	{
		if (state->held[i].marker_offset < hw)
			continue;
		lso = Min(lso, state->held[i].first_offset);
		state->held[j++] = state->held[i];
	}
	state->held_count = j;
	return lso;
}

/*
 * A transaction's marker was appended at marker_offset (under the appender
 * lock): readers hold the last stable offset at first_offset until the high
 * watermark passes the marker (KpPartitionState.held).  Those already
 * passed are dropped first, so a merge never holds back again what a
 * reader was shown as stable.
 */
void
kp_partition_hold_lso(KpPartitionState *state, int64 first_offset, int64 marker_offset)
{
	SpinLockAcquire(&state->published_mutex);
	(void) held_drop_below(state, state->hw);
	if (state->held_count < KP_HELD_TXNS)
	{
		state->held[state->held_count].first_offset = first_offset;
		state->held[state->held_count].marker_offset = marker_offset;
		state->held_count++;
	}
	else
	{
		int			last = KP_HELD_TXNS - 1;

		state->held[last].first_offset = Min(state->held[last].first_offset, first_offset);
		state->held[last].marker_offset = Max(state->held[last].marker_offset, marker_offset);
	}
	SpinLockRelease(&state->published_mutex);
}

/*
 * The lowest first offset of the transactions whose marker is not below
 * the high watermark hw, dropping the others; PG_INT64_MAX if none.
 */
static int64
held_lso(KpPartitionState *state, int64 hw)
{
	int64		lso;

	SpinLockAcquire(&state->published_mutex);
	lso = held_drop_below(state, hw);
	SpinLockRelease(&state->published_mutex);
	return lso;
}

/*
 * Move the high watermark up to the newest append every in-sync replica
 * has (confirmed) and drop the ring entries below it; returns it, and in
 * *next_lsn the position that moves it next (invalid: none appended).
 */
static int64
advance_hw(KpPartitionState *state, XLogRecPtr confirmed, XLogRecPtr *next_lsn)
{
	int			n = 0;
	int			i;
	int64		hw;

	SpinLockAcquire(&state->published_mutex);
	while (n < state->hw_count && state->hw_ring[n].end_lsn <= confirmed)
		n++;
	if (n > 0)
	{
		state->hw = Max(state->hw, state->hw_ring[n - 1].end_offset);
		for (i = n; i < state->hw_count; i++)
			state->hw_ring[i - n] = state->hw_ring[i];
		state->hw_count -= n;
	}
	hw = state->hw;
	*next_lsn = state->hw_count > 0 ? state->hw_ring[0].end_lsn : InvalidXLogRecPtr;
	SpinLockRelease(&state->published_mutex);
	return hw;
}

static void partition_gone(int64 partition_id) pg_attribute_noreturn();

/*
 * The ERROR for a partition the store is asked to use after (or while) its
 * storage was dropped.
 */
static void
partition_gone(int64 partition_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_KP_UNKNOWN_TOPIC_OR_PARTITION),
			 errmsg("partition id " INT64_FORMAT " does not exist", partition_id),
			 errdetail("Its topic was deleted; the store does not use a deleted partition.")));
}

static void
set_load_locktag(LOCKTAG *tag, Oid dboid, int64 partition_id)
{
	SET_LOCKTAG_ADVISORY(*tag, dboid,
						 (uint32) ((uint64) partition_id >> 32),
						 (uint32) partition_id,
						 KP_LOCKTAG_CLASS_PARTITION_LOAD);
}

void
kp_log_register_partition_exists(KpPartitionExistsCallback callback)
{
	partition_exists_callback = callback;
}

/*
 * Whether the partition may be loaded (the caller holds its load lock and
 * has seen no other transaction dropping it: load_partition).  Not if this
 * transaction drops it (its storage goes at commit).  A partition whose
 * storage this transaction created, or that has no segment, is loaded
 * without asking: nobody else can have dropped the first, and loading the
 * second reads nothing.  Any other is asked of the catalog, whose latest
 * snapshot shows a deletion that committed.
 */
static bool
partition_loadable(int64 partition_id)
{
	int			nsegs;
	int			nreplaced;

	if (partition_listed(dropped_partitions, partition_id))
		return false;
	if (partition_listed(created_partitions, partition_id))
		return true;
	(void) kp_directory_segments(partition_id, &nsegs);
	(void) kp_directory_replaced(partition_id, &nreplaced);
	if (nsegs == 0 && nreplaced == 0)
		return true;
	return partition_exists_callback == NULL || partition_exists_callback(partition_id);
}

/*
 * Load the partition's state from the store.  Called without its appender
 * lock, with a pin; returns with the lock held exclusively and the state
 * loaded.  A partition that is gone is an ERROR: its storage is being
 * dropped or was, and recovery would read it, or take the file the drop
 * truncated for a torn tail and cut it, leaving buffers of the dropped
 * relation in shared buffers.  The store checks this itself, whatever its
 * caller looked up.  A transaction dropping the partition marks the entry
 * (dropping_xid) and then waits out any load in progress (it takes the
 * load lock once); a load that starts later sees the mark, and waits for
 * that transaction to end, with no lock of ours held (the dropper may be
 * waiting for the load lock): then the entry is forgotten (committed) or
 * the mark cleared (aborted).  A load after the commit finds a new entry,
 * and the catalog (partition_loadable) says the partition is gone.
 */
static void
load_partition(KpPartitionState *state)
{
	LOCKTAG		tag;
	KpPartitionState *fresh;
	Oid			mark_relnode = InvalidOid;
	int64		partition_id = state->key.partition_id;
	TransactionId dropping;

	set_load_locktag(&tag, state->key.dboid, partition_id);
	for (;;)
	{
		bool		forgotten;

		CHECK_FOR_INTERRUPTS();
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
		LWLockAcquire(&state->lock, LW_SHARED);
		dropping = state->dropping_xid;
		forgotten = state->forgotten;
		LWLockRelease(&state->lock);
		/* the dropper committed (the mark stays on the forgotten entry) */
		if (forgotten || !TransactionIdIsValid(dropping) ||
			TransactionIdIsCurrentTransactionId(dropping))
			break;
		LockRelease(&tag, ExclusiveLock, false);
		XactLockTableWait(dropping, NULL, NULL, XLTW_None);
	}

	if (state->forgotten || !partition_loadable(partition_id))
	{
		/* an entry of a partition that is gone: nothing to keep (unloaded) */
		if (!state->forgotten && !state->loaded &&
			!partition_listed(dropped_partitions, partition_id))
			forget_entry(state);
		LockRelease(&tag, ExclusiveLock, false);
		partition_gone(partition_id);
	}

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	if (state->loaded)
	{
		/* another process loaded it while we waited */
		LockRelease(&tag, ExclusiveLock, false);
		return;
	}
	LWLockRelease(&state->lock);

	fresh = palloc0(sizeof(KpPartitionState));
	fresh->key = state->key;
	kp_partition_recover(fresh);

	/*
	 * The segments that left the log before this first load left it before
	 * the server started (nothing moves a partition's log start or swaps its
	 * segments without loading it first): no reader can be holding them, so
	 * the first drop pass may drop them at once (drop_mark_ms 0).
	 */
	if (!state->drop_mark_init)
	{
		int			nrep;
		const KpSegInfo *rep = kp_directory_replaced(state->key.partition_id, &nrep);

		mark_relnode = nrep > 0 ? rep[nrep - 1].relnode : InvalidOid;
	}

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	if (!state->drop_mark_init)
	{
		state->drop_mark_init = true;
		state->drop_mark_relnode = mark_relnode;
		state->drop_mark_ms = 0;
	}
	install_state(state, fresh);
	LockRelease(&tag, ExclusiveLock, false);
	pfree(fresh);
	if (state->has_decided)
		kp_resolver_wakeup();
}

/*
 * The partition's entry, pinned, created (unloaded) if it has none; NULL if
 * the map is full.  An ERROR if it has a forgotten one.
 */
static KpPartitionState *
find_or_make(int64 partition_id)
{
	KpPartitionState *state = kp_partition_find(MyDatabaseId, partition_id);
	KpPartitionKey key;
	bool		found;

	if (state != NULL)
		return state;
	memset(&key, 0, sizeof(key));
	key.dboid = MyDatabaseId;
	key.partition_id = partition_id;
	reserve_pin();
	LWLockAcquire(kp_store_shared->map_lock, LW_EXCLUSIVE);
	state = hash_search(partition_hash, &key, HASH_ENTER_NULL, &found);
	if (state == NULL)
	{
		LWLockRelease(kp_store_shared->map_lock);
		return NULL;
	}
	if (found && state->forgotten)
	{
		/*
		 * The partition was dropped and a process still holds the entry (for
		 * a moment): no new one can be made beside it.  Partition ids are not
		 * used again (but after DROP and CREATE EXTENSION).
		 */
		LWLockRelease(kp_store_shared->map_lock);
		partition_gone(partition_id);
	}
	if (!found)
	{
		pg_atomic_init_u32(&state->pins, 0);
		state->forgotten = false;
		LWLockInitialize(&state->lock, kp_store_shared->partition_tranche);
		SpinLockInit(&state->published_mutex);
		state->published_valid = false;
		state->hw_valid = false;
		state->hw_count = 0;
		state->held_count = 0;
		state->loaded = false;
		state->ntxns = 0;
		state->has_decided = false;
		state->drop_mark_init = false;
		state->drop_mark_relnode = InvalidOid;
		state->drop_mark_ms = 0;
		/* forgotten by a subtransaction's abort, its parent's storage kept */
		state->no_markers = partition_listed(created_partitions, partition_id) ?
			KP_NO_MARKERS_CREATING : 0;
		state->dropping_xid = InvalidTransactionId;
	}
	pin_locked(state);
	LWLockRelease(kp_store_shared->map_lock);
	return state;
}

/*
 * The partition's entry, pinned, created (unloaded) if it has none and
 * create is set; NULL if it has none and create is not set.  An ERROR if
 * the map is full.
 */
static KpPartitionState *
find_or_create(int64 partition_id, bool create)
{
	KpPartitionState *state;

	if (!create)
		return kp_partition_find(MyDatabaseId, partition_id);
	state = find_or_make(partition_id);
	if (state == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("too many partitions in use"),
				 errhint("Raise kafka.max_partitions (now %d) and restart the server.",
						 kp_max_partitions)));
	return state;
}

/*
 * Whether the partition has its entry in the shared map or one can be made
 * for it now: false once the map's kafka.max_partitions entries, shared by
 * every database of the server, are taken.  The wire handlers ask before
 * they touch a partition, to answer it KAFKA_STORAGE_ERROR rather than let
 * the ERROR above close the connection.  Always true on a standby, which
 * keeps no partition state.
 */
bool
kp_log_has_room(int64 partition_id)
{
	KpPartitionState *state;

	if (RecoveryInProgress())
		return true;

	/*
	 * The map's first kafka.max_partitions entries are allocated with it:
	 * below that count there is room, without a second lookup of the entry
	 * beside the one the caller's next store call makes (Fetch asks for every
	 * partition of every request).  Read without map_lock, a hint: an insert
	 * racing it to the last entry leaves that caller the ERROR.
	 */
	if (hash_get_num_entries(partition_hash) < kp_max_partitions)
		return true;
	state = find_or_make(partition_id);
	if (state == NULL)
		return false;
	kp_partition_unpin(state);
	return true;
}

/*
 * Whether the partition has no room for its state (kp_log_has_room): then a
 * WARNING for the DBA, at most once a minute per process, whose detail (a
 * sentence) says what the caller does instead of using the partition.  The
 * wire handlers (as KAFKA_STORAGE_ERROR), the log cleaner and the SQL views
 * of partitions ask it before they touch one.
 */
bool
kp_log_no_room(int64 partition_id, const char *detail)
{
	static TimestampTz last_warning = 0;
	TimestampTz now;

	if (kp_log_has_room(partition_id))
		return false;
	now = GetCurrentTimestamp();
	if (last_warning == 0 || TimestampDifferenceExceeds(last_warning, now, 60000))
	{
		last_warning = now;
		ereport(WARNING,
				(errmsg("a partition cannot be served: more partitions in use than kafka.max_partitions (%d)",
						kp_max_partitions),
				 errdetail_internal("%s", detail),
				 errhint("Raise kafka.max_partitions and restart the server, or delete topics.")));
	}
	return true;
}

/*
 * The partition's state, pinned, with its appender lock held exclusively:
 * NULL if it has none (or it was forgotten meanwhile) and create is not
 * set; loaded first if it is not loaded and load is set, else NULL for it.
 */
static KpPartitionState *
lock_partition(int64 partition_id, bool create, bool load)
{
	KpPartitionState *state = find_or_create(partition_id, create);

	if (state == NULL)
		return NULL;
	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	if (state->forgotten)
	{
		/* dropped while we waited for the lock */
		LWLockRelease(&state->lock);
		kp_partition_unpin(state);
		if (!create)
			return NULL;
		partition_gone(partition_id);
	}
	if (!state->loaded)
	{
		LWLockRelease(&state->lock);
		if (!load)
		{
			kp_partition_unpin(state);
			return NULL;
		}
		load_partition(state);
	}
	return state;
}

/*
 * Return the partition's state with its appender lock held exclusively,
 * recovering it from the store first if needed.  With create = false,
 * returns NULL for a partition that has no state yet.  Not on a standby;
 * in a transaction (a load takes a heavyweight lock).
 */
KpPartitionState *
kp_partition_lock(int64 partition_id, bool create)
{
	return lock_partition(partition_id, create, true);
}

/*
 * kp_partition_lock for a writer that holds no topic lock, the markers'
 * (README invariant 13): the state with its appender lock held
 * exclusively, or NULL if the partition has no entry or is not loaded.
 * Such a writer never loads: a load runs recovery, which may write (a
 * torn tail cut, an index entry a failed write left out), and every write
 * but a marker holds the topic's lock, which a deletion holds until its
 * storage is gone.  A partition an error left unloaded is loaded again by
 * its next writer or by the resolver, under the topic's lock
 * (kp_log_unloaded_partitions).
 */
KpPartitionState *
kp_partition_lock_loaded(int64 partition_id)
{
	return lock_partition(partition_id, false, false);
}

/*
 * The partition's offsets as readers see them (kp_log_offsets, readers'
 * bounds), without its appender lock: whoever changes the state publishes
 * them when it unlocks, under a spinlock, so a reader never waits for an
 * append in progress (it sees the offsets from before it, as if it had
 * come a moment earlier).  A partition not loaded yet is loaded first.
 */
void
kp_partition_offsets(int64 partition_id, KpLogOffsets *out)
{
	for (;;)
	{
		KpPartitionState *state = find_or_create(partition_id, true);
		bool		valid;

		bool		behind = false;
		bool		held = false;
		int64		hw = 0;

		SpinLockAcquire(&state->published_mutex);
		valid = state->published_valid;
		if (valid)
		{
			*out = state->published;
			hw = state->hw;
			behind = state->hw_count > 0;
			held = state->held_count > 0;
		}
		SpinLockRelease(&state->published_mutex);
		if (valid)
		{
			/*
			 * appends not known to be on every in-sync replica: ask (a few
			 * loads, no lock: isr.c)
			 */
			out->hw_next_lsn = InvalidXLogRecPtr;
			if (behind)
			{
				KpIsrPosition pos;

				kp_isr_position(&pos);
				hw = advance_hw(state, pos.confirmed, &out->hw_next_lsn);
			}

			/*
			 * Never below the log start: DeleteRecords may move it past the
			 * high watermark, and nothing below it can be read anyway.
			 */
			out->high_watermark = Max(Min(hw, out->log_end_offset),
									  out->log_start_offset);

			/*
			 * For Kafka clients, not past a transaction whose marker the
			 * in-sync replicas do not all have yet, as Kafka's first unstable
			 * offset (never below the log start, as the high watermark):
			 * kp_client_lso
			 */
			if (held)
				out->unreplicated_txn_offset = Max(held_lso(state, hw), out->log_start_offset);
			kp_partition_unpin(state);
			return;
		}
		kp_partition_unpin(state);
		kp_partition_unlock(kp_partition_lock(partition_id, true));
	}
}

/*
 * Release the appender lock, and the pin.  Whoever held it exclusively (and
 * so may have changed the state) publishes the offsets readers see first.
 * After an ERROR the lock is released by the abort instead and nothing is
 * published: readers keep the offsets from before the failed change.
 */
void
kp_partition_unlock(KpPartitionState *state)
{
	bool		changed = false;
	KpPartitionKey key = state->key;	/* the entry may go once unlocked */

	if (state->loaded && LWLockHeldByMeInMode(&state->lock, LW_EXCLUSIVE))
	{
		KpLogOffsets off;

		off.log_start_offset = state->log_start_offset;
		off.log_end_offset = state->log_end_offset;
		off.last_stable_offset = state->last_stable_offset;
		off.unreplicated_txn_offset = PG_INT64_MAX; /* kp_partition_offsets' */
		off.size_bytes = state->closed_bytes + state->active_size;
		off.segment_count = state->segment_count;
		off.hw_next_lsn = InvalidXLogRecPtr;	/* kp_partition_offsets' */
		off.active_relnode = state->active_relnode;
		off.active_size = state->active_size;
		SpinLockAcquire(&state->published_mutex);
		changed = !state->published_valid ||
			state->published.log_start_offset != off.log_start_offset ||
			state->published.log_end_offset != off.log_end_offset ||
			state->published.last_stable_offset != off.last_stable_offset;
		state->published = off;
		state->published_valid = true;
		SpinLockRelease(&state->published_mutex);
	}
	LWLockRelease(&state->lock);
	kp_partition_unpin(state);

	/* fetches parked on the partition look again (waiters.c) */
	if (changed)
		kp_notify_partition_waiters(&key);
}

/*
 * The ids of this database's partitions, loaded or not as asked, for which
 * filter (if given; called under the map lock, without the entry's
 * appender lock: a hint, to be checked again under that lock) returns
 * true.  A palloc'd List of palloc'd int64.
 */
static List *
partition_ids(bool loaded, bool (*filter) (const KpPartitionState *state))
{
	HASH_SEQ_STATUS seq;
	KpPartitionState *entry;
	List	   *ids = NIL;

	LWLockAcquire(kp_store_shared->map_lock, LW_SHARED);
	hash_seq_init(&seq, partition_hash);
	while ((entry = hash_seq_search(&seq)) != NULL)
	{
		if (entry->key.dboid == MyDatabaseId && entry->loaded == loaded &&
			!entry->forgotten && (filter == NULL || filter(entry)))
		{
			int64	   *id = palloc(sizeof(int64));

			*id = entry->key.partition_id;
			ids = lappend(ids, id);
		}
	}
	LWLockRelease(kp_store_shared->map_lock);
	return ids;
}

/* The loaded partitions for which filter returns true (partition_ids). */
List *
kp_partition_ids(bool (*filter) (const KpPartitionState *state))
{
	return partition_ids(true, filter);
}

/*
 * The partitions of this database that have an entry but are not loaded:
 * an error left them so (a write under the appender lock that failed
 * half-way marks the state for a reload), or a load is in progress.
 */
List *
kp_log_unloaded_partitions(void)
{
	return partition_ids(false, NULL);
}

/* ---------------------------------------------------------------------
 * Dropping
 * ---------------------------------------------------------------------
 */

/*
 * Forget the entries of partitions whose storage is gone.  Each is emptied
 * under its appender lock first (a process that found it just before and
 * waits for that lock then finds no segment and no transaction, and that
 * it is forgotten), then marked forgotten under the map lock (so the map
 * lock is never held while waiting for an appender lock that an append
 * may hold for long); the last pin out removes it ("Pins" above).
 */
static void
forget_partitions(List *ids)
{
	ListCell   *lc;

	foreach(lc, ids)
	{
		int64		partition_id = ((RememberedPartition *) lfirst(lc))->partition_id;
		KpPartitionState *state = kp_partition_find(MyDatabaseId, partition_id);

		if (state == NULL)
			continue;
		LWLockAcquire(&state->lock, LW_EXCLUSIVE);
		state->ntxns = 0;
		state->has_decided = false;
		state->active_relnode = InvalidOid;
		LWLockRelease(&state->lock);
		forget_entry(state);
		kp_partition_unpin(state);
	}
}

/*
 * CREATE EXTENSION: no partition of this database can exist yet, so any
 * entry of it in the partition table is left over from an earlier
 * installation (DROP EXTENSION forgets the partitions it drops at commit,
 * but the partition ids start again at 1 with the new kafka.partition_id_seq,
 * and an entry that survived, e.g. one a listener worker loaded again from
 * its stale topic cache while the drop committed, would be served as the new
 * partition's).  Forget them all.
 */
void
kp_store_forget_database(void)
{
	HASH_SEQ_STATUS seq;
	KpPartitionState *entry;
	List	   *ids = NIL;

	LWLockAcquire(kp_store_shared->map_lock, LW_SHARED);
	hash_seq_init(&seq, partition_hash);
	while ((entry = hash_seq_search(&seq)) != NULL)
	{
		if (entry->key.dboid == MyDatabaseId)
		{
			RememberedPartition *rp = palloc0(sizeof(RememberedPartition));

			rp->partition_id = entry->key.partition_id;
			ids = lappend(ids, rp);
		}
	}
	LWLockRelease(kp_store_shared->map_lock);
	if (ids != NIL)
		elog(LOG, "kafka_pg: forgot %d partition states left over from an earlier installation in database %u",
			 list_length(ids), MyDatabaseId);
	forget_partitions(ids);
	list_free_deep(ids);
}

/*
 * Set (on) or clear a KP_NO_MARKERS_* flag of the partitions of ids.  Those
 * with no state have nothing to write, and no state can be made for them
 * while their topic is locked (or, created by this transaction, invisible).
 * Clearing KP_NO_MARKERS_DROPPING is for a drop that aborted (the whole
 * transaction, or the subtransaction that dropped them, before the flag
 * was set at pre-commit): it clears their dropping mark too.
 */
static void
set_no_markers(List *ids, uint8 flag, bool on)
{
	ListCell   *lc;
	bool		wake = false;

	foreach(lc, ids)
	{
		int64		partition_id = ((RememberedPartition *) lfirst(lc))->partition_id;
		KpPartitionState *state = kp_partition_find(MyDatabaseId, partition_id);

		if (state == NULL)
			continue;
		LWLockAcquire(&state->lock, LW_EXCLUSIVE);
		if (on)
			state->no_markers |= flag;
		else
			state->no_markers &= ~flag;
		if (!on && flag == KP_NO_MARKERS_DROPPING)
			state->dropping_xid = InvalidTransactionId;
		/* markers the flag held back (a pass may have skipped them) */
		wake |= !on && state->no_markers == 0 && state->has_decided;
		LWLockRelease(&state->lock);
		kp_partition_unpin(state);
	}
	if (wake)
		kp_resolver_wakeup();
}

static void
store_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_PRE_PREPARE && dropped_partitions != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot prepare a transaction that deleted a topic"),
				 errdetail("A prepared deletion would leave the topic's partitions in shared memory, and their markers unwritten, until the server restarts.")));
	if (event == XACT_EVENT_PRE_PREPARE && created_partitions != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot prepare a transaction that wrote to a topic it created"),
				 errdetail("The partitions' markers would stay unwritten until the server restarts."),
				 errhint("Create the topic in a transaction of its own.")));
	if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PARALLEL_PRE_COMMIT)
	{
		kp_directory_flag_lost_segments();
		set_no_markers(dropped_partitions, KP_NO_MARKERS_DROPPING, true);
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT)
		set_no_markers(created_partitions, KP_NO_MARKERS_CREATING, false);
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		set_no_markers(dropped_partitions, KP_NO_MARKERS_DROPPING, false);
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT)
		kp_directory_forget_lost_segments();
	if (event == XACT_EVENT_COMMIT)
		forget_partitions(dropped_partitions);
	if (event == XACT_EVENT_ABORT)
		forget_partitions(created_partitions);
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT)
	{
		list_free_deep(dropped_partitions);
		dropped_partitions = NIL;
		list_free_deep(created_partitions);
		created_partitions = NIL;
	}
}

/*
 * The partitions of *list that subtransaction subid remembered: with take,
 * removed from *list and returned (a List in TopMemoryContext); without,
 * given to the parent subtransaction (NIL returned).
 */
static List *
take_subxact_partitions(List **list, SubTransactionId subid, SubTransactionId parent,
						bool take)
{
	List	   *taken = NIL;
	List	   *kept = NIL;
	ListCell   *lc;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	foreach(lc, *list)
	{
		RememberedPartition *rp = lfirst(lc);

		if (rp->subid == subid && take)
			taken = lappend(taken, rp);
		else
		{
			if (rp->subid == subid)
				rp->subid = parent;
			kept = lappend(kept, rp);
		}
	}
	list_free(*list);
	*list = kept;
	MemoryContextSwitchTo(old);
	return taken;
}

/*
 * A subtransaction ends.  Committed: what it remembered now belongs to its
 * parent.  Aborted: the storage it created is gone already (the entries are
 * forgotten now, or they would stay until restart once the top transaction
 * commits), and the storage it dropped stays (the entries are kept).
 */
static void
store_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	List	   *taken;
	ListCell   *lc;

	if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		(void) take_subxact_partitions(&created_partitions, mySubid, parentSubid, false);
		(void) take_subxact_partitions(&dropped_partitions, mySubid, parentSubid, false);
	}
	else if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		taken = take_subxact_partitions(&created_partitions, mySubid, parentSubid, true);
		foreach(lc, taken)
		{
			RememberedPartition *rp = lfirst(lc);

			if (OidIsValid(rp->relnode))
				kp_directory_lose_segment(rp->partition_id, rp->relnode);
		}
		forget_partitions(taken);
		list_free_deep(taken);
		taken = take_subxact_partitions(&dropped_partitions, mySubid, parentSubid, true);
		set_no_markers(taken, KP_NO_MARKERS_DROPPING, false);
		list_free_deep(taken);
	}
}

static void
remember_partition(List **list, int64 partition_id, Oid relnode)
{
	MemoryContext old;
	RememberedPartition *rp;

	if (!xact_callback_registered)
	{
		RegisterXactCallback(store_xact_callback, NULL);
		RegisterSubXactCallback(store_subxact_callback, NULL);
		xact_callback_registered = true;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	rp = palloc(sizeof(RememberedPartition));
	rp->partition_id = partition_id;
	rp->relnode = relnode;
	rp->subid = GetCurrentSubTransactionId();
	*list = lappend(*list, rp);
	MemoryContextSwitchTo(old);
}

/*
 * The current (sub)transaction created segment relnode of the partition,
 * storage that goes away if it aborts (append.c, a partition not yet
 * committed): forget its state then, and at a subtransaction's abort the
 * segment's directory entry too (kp_directory_lose_segment).  No marker is
 * written to the partition until the transaction commits
 * (KP_NO_MARKERS_CREATING).  Under the appender lock.
 */
void
kp_partition_created_in_xact(KpPartitionState *state, Oid relnode)
{
	remember_partition(&created_partitions, state->key.partition_id, relnode);
	state->no_markers |= KP_NO_MARKERS_CREATING;
}

void
kp_log_drop_partition(int64 partition_id)
{
	LOCKTAG		tag;
	KpPartitionState *state;
	int			nsegs;
	const KpSegInfo *segs;
	int			i;

	/*
	 * Loads of the partition must not overlap the drop (load_partition): its
	 * entry is marked, made if it has none (a partition that has none yet was
	 * counted against kafka.max_partitions when it was created; if the map of
	 * every database is full after all, the load lock is held to the end of
	 * the transaction instead), and a load in progress is waited out.
	 * Remembered first, so that an abort clears the mark.
	 */
	remember_partition(&dropped_partitions, partition_id, InvalidOid);
	set_load_locktag(&tag, MyDatabaseId, partition_id);
	state = find_or_make(partition_id);
	if (state != NULL)
	{
		LWLockAcquire(&state->lock, LW_EXCLUSIVE);
		state->dropping_xid = GetTopTransactionId();
		LWLockRelease(&state->lock);
		kp_partition_unpin(state);
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
		LockRelease(&tag, ExclusiveLock, false);
	}
	else
		(void) LockAcquire(&tag, ExclusiveLock, false, false);

	segs = kp_directory_segments(partition_id, &nsegs);
	for (i = 0; i < nsegs; i++)
	{
		Relation	rel = kp_segment_open(segs[i].relnode);

		kp_txnindex_drop(rel);	/* its aborted-transaction index goes too */
		kp_segment_close(rel);
		kp_segment_drop_storage(segs[i].relnode);
	}

	/* and those cleaned segments replaced that are not dropped yet */
	segs = kp_directory_replaced(partition_id, &nsegs);
	if (nsegs > 0)
	{
		KpSegInfo  *copy = palloc(sizeof(KpSegInfo) * nsegs);

		memcpy(copy, segs, sizeof(KpSegInfo) * nsegs);
		for (i = 0; i < nsegs; i++)
		{
			Relation	rel = kp_segment_open(copy[i].relnode);

			kp_txnindex_drop(rel);
			kp_segment_close(rel);
			kp_segment_drop_storage(copy[i].relnode);
		}
		pfree(copy);
	}
}

void
kp_log_load_partition(int64 partition_id)
{
	if (RecoveryInProgress())
		return;
	kp_partition_unlock(kp_partition_lock(partition_id, true));
}
