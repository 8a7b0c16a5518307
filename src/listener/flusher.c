/*-------------------------------------------------------------------------
 *
 * flusher.c
 *	  The WAL flusher: a background worker that flushes the WAL for the
 *	  listener workers, so that none of them waits for the disk.
 *
 * An acks=all Produce (or a request whose commit the answer waits for) is
 * answered once the WAL up to its position is flushed (and on the
 * synchronous standbys: src/store/isr.c).  A worker that called XLogFlush
 * itself would sit in fdatasync for milliseconds, reading, appending and
 * answering nothing on any of its connections meanwhile.  Instead the worker
 * asks for the flush here (kp_wal_flush_request: an atomic maximum of the
 * positions asked for, and the flusher's latch set when that moved) and
 * goes on serving; the flusher flushes the WAL up to what was asked for
 * (XLogFlush writes everything inserted by then: one fdatasync covers every
 * request of every worker appended meanwhile, and core's group commit covers
 * the backends that flush at the same time), and then sets the latch of each
 * worker whose wake-up position the flush passed (kp_wal_flush_wake_at).  A
 * flush asked for while one runs is made right after it.
 *
 * A worker publishes its wake-up position, then reads the flushed position;
 * the flusher flushes, then reads the wake-up positions (a full barrier
 * between the write and the read on both sides): so either the worker sees
 * its position flushed, or the flusher sees the worker waiting.  The
 * flusher clears a position it woke (compare-and-exchange), so a worker is
 * woken once per position it publishes; a wake-up is a hint, the worker
 * looks at GetFlushRecPtr() itself.
 *
 * When no flusher runs (before it started, between a crash and its
 * restart, or when max_worker_processes left no room for it) the worker
 * flushes itself, as before: nothing waits for a flusher that is not there.
 * The flusher marks itself gone before it exits and wakes every waiting
 * worker, which then flushes.  On a hot standby nothing is flushed (the
 * flusher starts once recovery has finished; the workers wait for replay).
 *
 * kafka.debug_wal_flush_delay_ms (testing only) delays every flush made for
 * the listener, here and in a worker's own, by that long: a slow disk.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"

#include "common/workers.h"
#include "listener/listener.h"
#include "listener/listener_int.h"
#include "store/store.h"

#define KP_FLUSH_WAITERS	64	/* kafka.listener_workers' upper bound */

typedef struct KpFlushWaiter
{
	Latch	   *latch;			/* NULL: slot free (under mutex) */
	pg_atomic_uint64 wake_lsn;	/* 0: not waiting */
} KpFlushWaiter;

typedef struct KpFlusherShared
{
	slock_t		mutex;			/* latch fields, slot allocation */
	Latch	   *flusher_latch;	/* the running flusher's, or NULL */
	pg_atomic_uint32 running;	/* 1 while a flusher serves requests */
	pg_atomic_uint64 request;	/* the furthest position asked for */
	KpFlushWaiter waiters[KP_FLUSH_WAITERS];
} KpFlusherShared;

static KpFlusherShared *flusher = NULL;

int			kp_debug_wal_flush_delay_ms = 0;
bool		kp_wal_flusher_enabled = false;

Size
kp_wal_flusher_shmem_size(void)
{
	return MAXALIGN(sizeof(KpFlusherShared));
}

void
kp_wal_flusher_shmem_init(void)
{
	bool		found;

	/* under AddinShmemInitLock (kp_listener_shmem_init) */
	flusher = ShmemInitStruct("kafka_pg WAL flusher", kp_wal_flusher_shmem_size(), &found);
	if (!found)
	{
		int			i;

		SpinLockInit(&flusher->mutex);
		flusher->flusher_latch = NULL;
		pg_atomic_init_u32(&flusher->running, 0);
		pg_atomic_init_u64(&flusher->request, 0);
		for (i = 0; i < KP_FLUSH_WAITERS; i++)
		{
			flusher->waiters[i].latch = NULL;
			pg_atomic_init_u64(&flusher->waiters[i].wake_lsn, 0);
		}
	}
}

void
kp_wal_flusher_define_settings(void)
{
	DefineCustomBoolVariable("kafka.wal_flusher",
							 "The WAL flusher makes the flushes acks=all answers wait for.",
							 "off (the default): each listener worker flushes the WAL itself, in its "
							 "event loop, and serves nothing meanwhile; on: the worker goes on serving "
							 "while the flusher flushes (for disks whose fdatasync is slow; "
							 "docs/durability.md).",
							 &kp_wal_flusher_enabled,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.debug_wal_flush_delay_ms",
							"Testing only: every WAL flush made for the listener waits this long first.",
							"0 (the default) does nothing.  Simulates a slow disk: an acks=all answer "
							"waits that much longer, the listener workers go on serving meanwhile.",
							&kp_debug_wal_flush_delay_ms,
							0, 0, 60000,
							PGC_SIGHUP,
							GUC_UNIT_MS | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
}

void
kp_wal_flusher_register(void)
{
	kp_register_worker("kafka_pg WAL flusher", "kafka_pg WAL flusher", "kp_wal_flusher_main",
					   BgWorkerStart_RecoveryFinished, 1, (Datum) 0);
}

/*
 * Flush the WAL up to lsn (at most what is inserted: XLogFlush of a
 * position not inserted yet is an ERROR).
 */
void
kp_wal_flush(XLogRecPtr lsn)
{
	XLogRecPtr	insert = kp_xlog_insert_end();

	if (lsn > insert)
		lsn = insert;
	if (lsn <= GetFlushRecPtr(NULL))
		return;
	if (kp_debug_wal_flush_delay_ms > 0)
	{
		int			left = kp_debug_wal_flush_delay_ms;

		while (left > 0)
		{
			CHECK_FOR_INTERRUPTS();
			pg_usleep(Min(left, 10) * 1000L);
			left -= 10;
		}
	}
	XLogFlush(lsn);
}

/* Set the latches of the workers whose wake-up position is flushed. */
static void
wake_waiters(bool all)
{
	XLogRecPtr	flushed;
	int			i;

	pg_memory_barrier();
	flushed = GetFlushRecPtr(NULL);
	for (i = 0; i < KP_FLUSH_WAITERS; i++)
	{
		KpFlushWaiter *w = &flusher->waiters[i];
		uint64		want = pg_atomic_read_u64(&w->wake_lsn);
		Latch	   *latch;

		if (want == 0 || (!all && want > flushed))
			continue;
		if (!pg_atomic_compare_exchange_u64(&w->wake_lsn, &want, 0))
			continue;			/* it moved: the worker looks again itself */
		latch = w->latch;
		if (latch)
			SetLatch(latch);
	}
}

static void
flusher_exit(int code, Datum arg)
{
	SpinLockAcquire(&flusher->mutex);
	flusher->flusher_latch = NULL;
	SpinLockRelease(&flusher->mutex);
	pg_atomic_write_u32(&flusher->running, 0);
	/* whoever waits for us flushes itself now */
	wake_waiters(true);
}

void
kp_wal_flusher_main(Datum arg)
{
	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	/* no database: this only shows the flusher in pg_stat_activity */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	SpinLockAcquire(&flusher->mutex);
	flusher->flusher_latch = MyLatch;
	SpinLockRelease(&flusher->mutex);
	on_shmem_exit(flusher_exit, (Datum) 0);
	pg_atomic_write_u32(&flusher->running, 1);
	ereport(DEBUG1, (errmsg("kafka_pg WAL flusher started")));

	for (;;)
	{
		XLogRecPtr	want;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		want = pg_atomic_read_u64(&flusher->request);
		if (want > GetFlushRecPtr(NULL))
			kp_wal_flush(want);

		/*
		 * Also when someone else flushed (a committing backend, the WAL
		 * writer): a worker waiting for that position is woken all the same.
		 */
		wake_waiters(false);
		if (pg_atomic_read_u64(&flusher->request) > GetFlushRecPtr(NULL))
			continue;			/* asked for while we flushed */
		/* our syncs in pg_stat_wal (wal_sync), as the WAL writer reports its */
		pgstat_report_wal(false);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
	}
}

/* ---------- the listener worker's side ---------- */

static int	my_slot = -1;

static void
release_slot(int code, Datum arg)
{
	int			slot = DatumGetInt32(arg);

	pg_atomic_write_u64(&flusher->waiters[slot].wake_lsn, 0);
	SpinLockAcquire(&flusher->mutex);
	flusher->waiters[slot].latch = NULL;
	SpinLockRelease(&flusher->mutex);
	my_slot = -1;
}

/* Once per worker: a slot for its latch. */
void
kp_wal_flush_register_waiter(void)
{
	int			i;

	if (my_slot >= 0 || flusher == NULL)
		return;
	SpinLockAcquire(&flusher->mutex);
	for (i = 0; i < KP_FLUSH_WAITERS; i++)
	{
		if (flusher->waiters[i].latch == NULL)
		{
			flusher->waiters[i].latch = MyLatch;
			pg_atomic_write_u64(&flusher->waiters[i].wake_lsn, 0);
			my_slot = i;
			break;
		}
	}
	SpinLockRelease(&flusher->mutex);
	/* no slot (cannot happen with at most 64 workers): it flushes itself */
	if (my_slot >= 0)
		on_shmem_exit(release_slot, Int32GetDatum(my_slot));
}

/*
 * Is a flusher there to serve requests, this worker registered, and
 * kafka.wal_flusher on?  (The flusher runs whatever the setting: turned on
 * again, it serves at once.)
 */
static bool
flusher_running(void)
{
	return kp_wal_flusher_enabled && flusher != NULL && my_slot >= 0 &&
		pg_atomic_read_u32(&flusher->running) != 0;
}

/*
 * Ask for the WAL to be flushed up to lsn.  Returns false when no flusher
 * runs: then the caller flushes itself (kp_wal_flush).
 */
bool
kp_wal_flush_request(XLogRecPtr lsn)
{
	uint64		cur;

	if (!flusher_running())
		return false;
	cur = pg_atomic_read_u64(&flusher->request);
	while (cur < lsn)
	{
		if (pg_atomic_compare_exchange_u64(&flusher->request, &cur, lsn))
		{
			Latch	   *latch;

			SpinLockAcquire(&flusher->mutex);
			latch = flusher->flusher_latch;
			SpinLockRelease(&flusher->mutex);
			if (latch)
				SetLatch(latch);
			break;
		}
		/* cur now holds what another worker asked for */
	}
	return true;
}

/*
 * Have this worker's latch set once the WAL is flushed up to lsn, and ask
 * for that flush.  KP_FLUSH_DONE: it is flushed already; KP_FLUSH_ARMED:
 * the flusher sets the latch (once); KP_FLUSH_SELF: no flusher runs, the
 * caller flushes itself.
 */
KpFlushWake
kp_wal_flush_wake_at(XLogRecPtr lsn)
{
	KpFlushWaiter *w;

	if (GetFlushRecPtr(NULL) >= lsn)
		return KP_FLUSH_DONE;
	if (!flusher_running())
		return KP_FLUSH_SELF;
	w = &flusher->waiters[my_slot];
	pg_atomic_write_u64(&w->wake_lsn, lsn);
	pg_memory_barrier();
	if (GetFlushRecPtr(NULL) >= lsn)
	{
		pg_atomic_write_u64(&w->wake_lsn, 0);
		return KP_FLUSH_DONE;
	}
	if (!kp_wal_flush_request(lsn))
		return KP_FLUSH_SELF;	/* it went away meanwhile */
	return KP_FLUSH_ARMED;
}
