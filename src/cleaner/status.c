/*-------------------------------------------------------------------------
 *
 * status.c
 *	  What the log cleaner last did to each partition, for the
 *	  kafka.log_cleaner_status view.
 *
 * A shared hash table, kafka.max_partitions entries keyed by (database,
 * partition id): when retention last ran on the partition, and the segments
 * and bytes it has deleted since the server started.  Like Kafka's cleaner
 * metrics it is not durable: a restart starts it empty.  It is written by
 * every retention pass (the worker's and kafka.run_log_cleaner's, counted
 * when the pass runs, even if a kafka.run_log_cleaner caller then rolls its
 * drops back) and read by kafka._log_cleaner_status.  Partition ids are never
 * reused, so an entry of a deleted partition is only stale, never wrong; once
 * the table is full, partitions not in it yet are not tracked.
 *
 * Locking: one LWLock, "kafka_pg cleaner status", held for a hash lookup
 * and a copy; no other lock is taken under it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"

#include "cleaner/cleaner.h"
#include "common/settings.h"

typedef struct KpCleanerStatKey
{
	Oid			dboid;
	int64		partition_id;
} KpCleanerStatKey;

typedef struct KpCleanerStatEntry
{
	KpCleanerStatKey key;		/* hash key: must be first */
	KpCleanerStat stat;
} KpCleanerStatEntry;

static HTAB *status_hash = NULL;
static LWLock *status_lock = NULL;

Size
kp_cleaner_shmem_size(void)
{
	return hash_estimate_size(kp_max_partitions, sizeof(KpCleanerStatEntry));
}

void
kp_cleaner_request_locks(void)
{
	RequestNamedLWLockTranche("kafka_pg cleaner status", 1);
}

void
kp_cleaner_shmem_init(void)
{
	HASHCTL		info;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(KpCleanerStatKey);
	info.entrysize = sizeof(KpCleanerStatEntry);
	status_hash = ShmemInitHash("kafka_pg cleaner status", kp_max_partitions,
								kp_max_partitions, &info, HASH_ELEM | HASH_BLOBS);
	status_lock = &(GetNamedLWLockTranche("kafka_pg cleaner status"))[0].lock;
	LWLockRelease(AddinShmemInitLock);
}

static KpCleanerStatEntry *
stat_enter(int64 partition_id)
{
	KpCleanerStatKey key;
	KpCleanerStatEntry *e;
	bool		found;

	memset(&key, 0, sizeof(key));
	key.dboid = MyDatabaseId;
	key.partition_id = partition_id;
	e = hash_search(status_hash, &key, HASH_ENTER_NULL, &found);
	if (e != NULL && !found)
	{
		memset(&e->stat, 0, sizeof(e->stat));
		e->stat.dirty_ratio = -1;
		e->stat.next_delete_horizon_ms = -1;
	}
	return e;
}

/* Record a retention pass over a partition at now (ms since the Unix epoch). */
void
kp_cleaner_note_retention(int64 partition_id, const KpRetentionResult *result,
						  int64 now_ms)
{
	KpCleanerStatEntry *e;

	LWLockAcquire(status_lock, LW_EXCLUSIVE);
	e = stat_enter(partition_id);
	if (e != NULL)
	{
		e->stat.last_retention_ms = now_ms;
		e->stat.segments_deleted += result->segments_deleted;
		e->stat.bytes_reclaimed += result->bytes_deleted;
	}
	LWLockRelease(status_lock);
}

/* Record a compaction pass over a partition at now_ms. */
void
kp_cleaner_note_compaction(int64 partition_id, const KpCompactResult *result,
						   int64 now_ms)
{
	KpCleanerStatEntry *e;

	LWLockAcquire(status_lock, LW_EXCLUSIVE);
	e = stat_enter(partition_id);
	if (e != NULL)
	{
		e->stat.last_check_ms = now_ms;
		if (result->first_dirty_offset >= 0)
			e->stat.dirty_ratio = result->dirty_ratio;
		if (result->cleaned)
		{
			e->stat.last_compaction_ms = now_ms;
			e->stat.last_swap_ms = now_ms;
			e->stat.compactions++;
			e->stat.compaction_bytes_before += result->bytes_before;
			e->stat.compaction_bytes_after += result->bytes_after;
			e->stat.records_removed += result->records_removed;
			e->stat.next_delete_horizon_ms = result->next_delete_horizon_ms;
		}
	}
	LWLockRelease(status_lock);
}

/* What the cleaner did to a partition; false if nothing is recorded. */
bool
kp_cleaner_stat(int64 partition_id, KpCleanerStat *out)
{
	KpCleanerStatKey key;
	KpCleanerStatEntry *e;

	memset(&key, 0, sizeof(key));
	key.dboid = MyDatabaseId;
	key.partition_id = partition_id;
	LWLockAcquire(status_lock, LW_SHARED);
	e = hash_search(status_hash, &key, HASH_FIND, NULL);
	if (e != NULL)
		*out = e->stat;
	LWLockRelease(status_lock);
	return e != NULL;
}
