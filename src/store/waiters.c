/*-------------------------------------------------------------------------
 *
 * waiters.c
 *	  Waking the processes that wait for appends, and the resolver.
 *
 * Listener workers park fetches (and group requests) until data arrives
 * or a timeout passes.  Each worker registers its latch once in one of
 * KP_MAX_APPEND_WAITERS slots.
 *
 * Parked fetches wait by partition, as Kafka's delayed-fetch purgatory is
 * keyed by partition: a partition hashes to one of KP_FETCH_WAIT_BUCKETS
 * buckets, each a change count and a mask of the waiter slots watching it.
 * Whoever publishes a change to a partition's offsets (kp_partition_unlock:
 * appends, markers, DeleteRecords, retention) bumps its bucket's count and
 * sets the latches in its mask; a worker with fetches parked on the bucket
 * keeps its bit set, and compares the count with what it read before it
 * read the partition.  The count is bumped before the mask is read, and the
 * watcher sets its bit before it reads the count (both atomic
 * read-modify-writes, full barriers), so a change is never missed by both:
 * either the publisher sees the bit, or the watcher sees the count moved.
 * An append costs one atomic add and one read, whoever waits.
 *
 * Parked ShareFetches wait on their partitions' buckets too; their records
 * also become acquirable again without a change of offsets (a release, a
 * transaction that held them rolling back), and src/share/wake.c then bumps
 * the bucket with kp_log_wake_partition.
 *
 * Other parked requests (group requests) flag the slot "waiting"; every
 * append (append.c), every batch of markers (txnstate.c) and every group
 * change then sets the latches of the flagged ones.  With nobody flagged an
 * append pays one atomic read.  That waking is a broadcast: a woken worker
 * re-checks its parked requests itself.
 *
 * The resolver worker (src/txn/resolver.c) registers its latch too; a
 * backend that decides a transaction wakes it, but only while it is idle:
 * while markers keep coming it polls every few milliseconds, so a stream
 * of commits costs no signal each.
 *
 * No LWLock is involved: slot allocation takes a spinlock, flags are
 * atomics.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "port/pg_bitutils.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "miscadmin.h"

#include "store/store_int.h"

static void
release_waiter_slot(int code, Datum arg)
{
	int			slot = DatumGetInt32(arg);
	uint64		keep = ~(UINT64CONST(1) << slot);

	kp_log_set_append_waiter(slot, false);
	/* what a worker that died watched: the next owner of the slot does not */
	for (int i = 0; i < KP_FETCH_WAIT_BUCKETS; i++)
		if (pg_atomic_read_u64(&kp_store_shared->fetch_buckets[i].waiters) & ~keep)
			pg_atomic_fetch_and_u64(&kp_store_shared->fetch_buckets[i].waiters, keep);
	SpinLockAcquire(&kp_store_shared->waiter_mutex);
	kp_store_shared->waiters[slot].latch = NULL;
	SpinLockRelease(&kp_store_shared->waiter_mutex);
}

int
kp_log_register_append_waiter(Latch *latch)
{
	int			slot = -1;
	int			i;

	StaticAssertStmt(KP_MAX_APPEND_WAITERS <= 64, "a wait bucket's mask has a bit per waiter slot");
	SpinLockAcquire(&kp_store_shared->waiter_mutex);
	for (i = 0; i < KP_MAX_APPEND_WAITERS; i++)
	{
		if (kp_store_shared->waiters[i].latch == NULL)
		{
			kp_store_shared->waiters[i].latch = latch;
			slot = i;
			break;
		}
	}
	SpinLockRelease(&kp_store_shared->waiter_mutex);
	if (slot < 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many kafka_pg processes wait for appends (at most %d)",
						KP_MAX_APPEND_WAITERS)));
	on_shmem_exit(release_waiter_slot, Int32GetDatum(slot));
	return slot;
}

void
kp_log_set_append_waiter(int slot, bool waiting)
{
	KpAppendWaiter *w;
	uint32		was;

	if (slot < 0)
		return;
	w = &kp_store_shared->waiters[slot];
	was = pg_atomic_exchange_u32(&w->waiting, waiting ? 1 : 0);
	if (was && !waiting)
		pg_atomic_fetch_sub_u32(&kp_store_shared->nwaiting, 1);
	else if (!was && waiting)
		pg_atomic_fetch_add_u32(&kp_store_shared->nwaiting, 1);
}

void
kp_log_wake_waiters(void)
{
	kp_notify_append_waiters();
}

/* Wake the processes waiting for appends; free when nobody waits. */
void
kp_notify_append_waiters(void)
{
	int			i;

	if (pg_atomic_read_u32(&kp_store_shared->nwaiting) == 0)
		return;
	for (i = 0; i < KP_MAX_APPEND_WAITERS; i++)
	{
		KpAppendWaiter *w = &kp_store_shared->waiters[i];
		Latch	   *latch = w->latch;

		if (latch && pg_atomic_read_u32(&w->waiting))
			SetLatch(latch);
	}
}

/* The wait bucket of a partition of this database. */
static int
wait_bucket(Oid dboid, int64 partition_id)
{
	/* partition ids are sequential: consecutive ones share no bucket */
	return (int) (((uint64) partition_id + (uint64) dboid * 2654435761U) %
				  KP_FETCH_WAIT_BUCKETS);
}

int
kp_log_wait_bucket(int64 partition_id)
{
	return wait_bucket(MyDatabaseId, partition_id);
}

uint64
kp_log_wait_bucket_changes(int bucket)
{
	uint64		changes;

	Assert(bucket >= 0 && bucket < KP_FETCH_WAIT_BUCKETS);
	changes = pg_atomic_read_u64(&kp_store_shared->fetch_buckets[bucket].changes);
	/* what the caller reads of the partition next is at least that recent */
	pg_read_barrier();
	return changes;
}

/*
 * Set or clear the bit of waiter slot in bucket's mask; returns the change
 * count read after the bit was set.
 */
uint64
kp_log_watch_wait_bucket(int slot, int bucket, bool watch)
{
	KpFetchWaitBucket *b;
	uint64		bit;

	Assert(slot >= 0 && slot < KP_MAX_APPEND_WAITERS);
	Assert(bucket >= 0 && bucket < KP_FETCH_WAIT_BUCKETS);
	b = &kp_store_shared->fetch_buckets[bucket];
	bit = UINT64CONST(1) << slot;
	if (watch)
		pg_atomic_fetch_or_u64(&b->waiters, bit);	/* a full barrier */
	else
		pg_atomic_fetch_and_u64(&b->waiters, ~bit);
	return pg_atomic_read_u64(&b->changes);
}

/*
 * The offsets of a partition changed (kp_partition_unlock): wake the waiters
 * watching its bucket.
 */
void
kp_notify_partition_waiters(const KpPartitionKey *key)
{
	kp_log_wake_wait_bucket(wait_bucket(key->dboid, key->partition_id));
}

/*
 * Wake the fetches parked on a partition of this database whose offsets did
 * not change: share groups (src/share/wake.c), whose records became
 * acquirable again.  Plain Fetches on the bucket wake too and park again.
 */
void
kp_log_wake_partition(int64 partition_id)
{
	kp_log_wake_wait_bucket(kp_log_wait_bucket(partition_id));
}

void
kp_log_wake_wait_bucket(int bucket)
{
	KpFetchWaitBucket *b = &kp_store_shared->fetch_buckets[bucket];
	uint64		mask;

	pg_atomic_fetch_add_u64(&b->changes, 1);	/* a full barrier */
	mask = pg_atomic_read_u64(&b->waiters);
	while (mask != 0)
	{
		int			i = pg_rightmost_one_pos64(mask);
		Latch	   *latch = kp_store_shared->waiters[i].latch;

		mask &= mask - 1;
		if (latch)
			SetLatch(latch);
	}
}

static void
resolver_detach(int code, Datum arg)
{
	kp_store_shared->resolver_latch = NULL;
}

void
kp_store_set_resolver_latch(Latch *latch)
{
	kp_store_shared->resolver_latch = latch;
	on_shmem_exit(resolver_detach, (Datum) 0);
}

/*
 * Wake the resolver if it is idle.  While it is busy it polls every few
 * milliseconds anyway, so a stream of commits costs no signal each.
 */
void
kp_resolver_wakeup(void)
{
	Latch	   *latch = kp_store_shared ? kp_store_shared->resolver_latch : NULL;

	if (latch && pg_atomic_read_u32(&kp_store_shared->resolver_idle))
		SetLatch(latch);
}

void
kp_resolver_set_idle(bool idle)
{
	pg_atomic_write_u32(&kp_store_shared->resolver_idle, idle ? 1 : 0);
	pg_memory_barrier();
}
