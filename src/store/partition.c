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
#include "catalog/storage.h"
#include "miscadmin.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "store/store_int.h"

/* GUC: kafka.max_partitions, defined in src/main */
extern int	kp_max_partitions;

KpStoreShared *kp_store_shared = NULL;
static HTAB *partition_hash = NULL;

/* partitions dropped by the current transaction, forgotten at commit */
static List *dropped_partitions = NIL;

/* partitions whose storage this transaction created, gone if it aborts */
static List *created_partitions = NIL;

static bool xact_callback_registered = false;

static void remember_partition(List **list, int64 partition_id);

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
 * Finding and locking partition state
 * ---------------------------------------------------------------------
 */

/*
 * The partition's entry, or NULL if it has none.  No lock is held on
 * return: the caller takes the entry's appender lock.
 */
KpPartitionState *
kp_partition_find(Oid dboid, int64 partition_id)
{
	KpPartitionKey key;
	KpPartitionState *state;

	memset(&key, 0, sizeof(key));
	key.dboid = dboid;
	key.partition_id = partition_id;
	LWLockAcquire(kp_store_shared->map_lock, LW_SHARED);
	state = hash_search(partition_hash, &key, HASH_FIND, NULL);
	LWLockRelease(kp_store_shared->map_lock);
	return state;
}

/*
 * Return the partition's state with its appender lock held exclusively,
 * recovering it from the store first if needed.  With create = false,
 * returns NULL for a partition that has no state yet.  Not on a standby.
 */
KpPartitionState *
kp_partition_lock(int64 partition_id, bool create)
{
	KpPartitionState *state = kp_partition_find(MyDatabaseId, partition_id);

	if (state == NULL)
	{
		KpPartitionKey key;
		bool		found;

		if (!create)
			return NULL;
		memset(&key, 0, sizeof(key));
		key.dboid = MyDatabaseId;
		key.partition_id = partition_id;
		LWLockAcquire(kp_store_shared->map_lock, LW_EXCLUSIVE);
		state = hash_search(partition_hash, &key, HASH_ENTER_NULL, &found);
		if (state == NULL)
		{
			LWLockRelease(kp_store_shared->map_lock);
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("too many partitions in use"),
					 errhint("Raise kafka.max_partitions (now %d) and restart the server.",
							 kp_max_partitions)));
		}
		if (!found)
		{
			LWLockInitialize(&state->lock, kp_store_shared->partition_tranche);
			ConditionVariableInit(&state->cv);
			state->loaded = false;
		}
		LWLockRelease(kp_store_shared->map_lock);
	}

	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	if (!state->loaded)
	{
		PG_TRY();
		{
			kp_partition_recover(state);
		}
		PG_CATCH();
		{
			state->loaded = false;
			PG_RE_THROW();
		}
		PG_END_TRY();
		if (state->has_decided)
			kp_resolver_wakeup();
	}
	return state;
}

void
kp_partition_unlock(KpPartitionState *state)
{
	LWLockRelease(&state->lock);
}

/*
 * The ids of this database's loaded partitions for which filter (called
 * under the map lock, without the entry's appender lock: a hint, to be
 * checked again under that lock) returns true.  A palloc'd List of
 * palloc'd int64.
 */
List *
kp_partition_ids(bool (*filter) (const KpPartitionState *state))
{
	HASH_SEQ_STATUS seq;
	KpPartitionState *entry;
	List	   *ids = NIL;

	LWLockAcquire(kp_store_shared->map_lock, LW_SHARED);
	hash_seq_init(&seq, partition_hash);
	while ((entry = hash_seq_search(&seq)) != NULL)
	{
		if (entry->key.dboid == MyDatabaseId && entry->loaded && filter(entry))
		{
			int64	   *id = palloc(sizeof(int64));

			*id = entry->key.partition_id;
			ids = lappend(ids, id);
		}
	}
	LWLockRelease(kp_store_shared->map_lock);
	return ids;
}

/* ---------------------------------------------------------------------
 * Dropping
 * ---------------------------------------------------------------------
 */

static void
forget_partitions(List *ids)
{
	ListCell   *lc;
	KpPartitionState *state;

	foreach(lc, ids)
	{
		KpPartitionKey key;

		memset(&key, 0, sizeof(key));
		key.dboid = MyDatabaseId;
		key.partition_id = *(int64 *) lfirst(lc);
		LWLockAcquire(kp_store_shared->map_lock, LW_EXCLUSIVE);
		state = hash_search(partition_hash, &key, HASH_FIND, NULL);
		if (state != NULL)
		{
			/*
			 * Empty it under its own lock first: the resolver may have
			 * found it just before and be waiting for that lock.
			 */
			LWLockAcquire(&state->lock, LW_EXCLUSIVE);
			state->ntxns = 0;
			state->has_decided = false;
			state->active_relnode = InvalidOid;
			LWLockRelease(&state->lock);
			hash_search(partition_hash, &key, HASH_REMOVE, NULL);
		}
		LWLockRelease(kp_store_shared->map_lock);
	}
}

static void
store_xact_callback(XactEvent event, void *arg)
{
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

static void
remember_partition(List **list, int64 partition_id)
{
	MemoryContext old;
	int64	   *id;

	if (!xact_callback_registered)
	{
		RegisterXactCallback(store_xact_callback, NULL);
		xact_callback_registered = true;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	id = palloc(sizeof(int64));
	*id = partition_id;
	*list = lappend(*list, id);
	MemoryContextSwitchTo(old);
}

/*
 * The current transaction created storage for the partition that goes
 * away if it aborts (append.c, a partition not yet committed): forget its
 * state then.
 */
void
kp_partition_created_in_xact(int64 partition_id)
{
	remember_partition(&created_partitions, partition_id);
}

void
kp_log_drop_partition(int64 partition_id)
{
	int			nsegs;
	const KpSegInfo *segs = kp_directory_segments(partition_id, &nsegs);
	int			i;

	for (i = 0; i < nsegs; i++)
	{
		Relation	rel = kp_segment_open(segs[i].relnode);

		RelationDropStorage(rel);
		kp_segment_close(rel);
	}

	remember_partition(&dropped_partitions, partition_id);
}
