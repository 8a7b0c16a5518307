/*-------------------------------------------------------------------------
 *
 * waiters.c
 *	  Waking the processes that wait for appends, and the resolver.
 *
 * Listener workers park fetches (and group requests) until data arrives
 * or a timeout passes.  Each worker registers its latch once in one of
 * KP_MAX_APPEND_WAITERS slots and flags it while it has something parked;
 * every append (append.c), every batch of markers (txnstate.c) and every
 * group change then sets the latches of the flagged ones.  With nobody
 * waiting an append pays one atomic read.  Waking is a broadcast: a woken
 * worker re-checks its parked requests itself.
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

#include "storage/ipc.h"
#include "storage/latch.h"

#include "store/store_int.h"

static void
release_waiter_slot(int code, Datum arg)
{
	int			slot = DatumGetInt32(arg);

	kp_log_set_append_waiter(slot, false);
	SpinLockAcquire(&kp_store_shared->waiter_mutex);
	kp_store_shared->waiters[slot].latch = NULL;
	SpinLockRelease(&kp_store_shared->waiter_mutex);
}

int
kp_log_register_append_waiter(Latch *latch)
{
	int			slot = -1;
	int			i;

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
