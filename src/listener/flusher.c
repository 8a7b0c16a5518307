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
#ifdef KP_TRACE_LATENCY
	pg_atomic_uint64 set_at_us; /* when the flusher last set the latch */
#endif
} KpFlushWaiter;

typedef struct KpFlusherShared
{
	slock_t		mutex;			/* latch fields, slot allocation */
	Latch	   *flusher_latch;	/* the running flusher's, or NULL */
	pg_atomic_uint32 running;	/* 1 while a flusher serves requests */
	pg_atomic_uint64 request;	/* the furthest position asked for */
	KpFlushWaiter waiters[KP_FLUSH_WAITERS];
#ifdef KP_TRACE_LATENCY
	pg_atomic_uint64 ftrace_next;	/* events written so far */
	pg_atomic_uint64 request_at_us; /* when the request last moved */
	KpFtraceEvent ftrace[KP_FTRACE_SIZE];
#endif
} KpFlusherShared;

static KpFlusherShared *flusher = NULL;

#ifdef KP_TRACE_LATENCY
/*
 * The hand-off's trace (make COPT=-DKP_TRACE_LATENCY): a ring of timestamped
 * events in shared memory that the flusher and the workers write (requests,
 * wake-up positions published, flushes, latches set, the workers' sleeps and
 * wake-ups), so that a slow answer can be told apart: the flush started
 * late, took long, the wake-up came late or never.  A worker reads it when
 * it sends a slow answer (server.c, run_acks).  Writers race only for the
 * slot (an atomic increment); a reader may see an event half-written, which
 * a trace can afford.
 */
static int	ftrace_who = -2;	/* -1: the flusher; else the worker's slot */

void
kp_ftrace(int ev, uint64 a, uint64 b)
{
	uint64		i;
	KpFtraceEvent *e;

	if (flusher == NULL)
		return;
	i = pg_atomic_fetch_add_u64(&flusher->ftrace_next, 1);
	e = &flusher->ftrace[i % KP_FTRACE_SIZE];
	e->t = kp_trace_us();
	e->who = ftrace_who;
	e->ev = ev;
	e->a = a;
	e->b = b;
}

/* latency histograms: <100us <1ms <5 <10 <50 <100 >=100ms */
void
kp_ftrace_hist_add(int64 *hist, int64 us)
{
	static const int64 lim[6] = {100, 1000, 5000, 10000, 50000, 100000};
	int			b = 0;

	while (b < 6 && us >= lim[b])
		b++;
	hist[b]++;
}

char *
kp_ftrace_hist_str(int64 *hist)
{
	char	   *r = psprintf("<100us %lld <1ms %lld <5 %lld <10 %lld <50 %lld <100 %lld >=100ms %lld",
							 (long long) hist[0], (long long) hist[1], (long long) hist[2],
							 (long long) hist[3], (long long) hist[4], (long long) hist[5],
							 (long long) hist[6]);

	memset(hist, 0, sizeof(int64) * 7);
	return r;
}

/* when the flusher last set this worker's latch */
int64
kp_ftrace_set_at(void)
{
	if (flusher == NULL || ftrace_who < 0)
		return 0;
	return (int64) pg_atomic_read_u64(&flusher->waiters[ftrace_who].set_at_us);
}

int
kp_ftrace_self(void)
{
	return ftrace_who;
}

/*
 * Copy the events written at or after from_us (at most max, the newest if
 * more) into out, oldest first; returns how many.
 */
int
kp_ftrace_read(int64 from_us, KpFtraceEvent *out, int max)
{
	uint64		next;
	uint64		i;
	int			n = 0;

	if (flusher == NULL)
		return 0;
	next = pg_atomic_read_u64(&flusher->ftrace_next);
	i = next;
	while (i > 0 && next - i < KP_FTRACE_SIZE - 1024 && n < max)
	{
		KpFtraceEvent *e = &flusher->ftrace[(i - 1) % KP_FTRACE_SIZE];

		if (e->t < from_us)
			break;
		i--;
		n++;
	}
	for (int k = 0; k < n; k++)
		out[k] = flusher->ftrace[(i + k) % KP_FTRACE_SIZE];
	return n;
}
#endif

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
#ifdef KP_TRACE_LATENCY
		pg_atomic_init_u64(&flusher->ftrace_next, 0);
		pg_atomic_init_u64(&flusher->request_at_us, 0);
		for (i = 0; i < KP_FLUSH_WAITERS; i++)
			pg_atomic_init_u64(&flusher->waiters[i].set_at_us, 0);
		memset(flusher->ftrace, 0, sizeof(flusher->ftrace));
#endif
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

/*
 * For a request answered at once with high watermarks (ListOffsets):
 * flush what is inserted, so that records appended without
 * a flush (acks=1, acks=0, markers) are below the high watermark now
 * rather than after the WAL writer's next round, as on a Kafka broker whose
 * only in-sync replica is itself: it answers them at once.  Synchronous
 * standbys still have to confirm (docs/replication.md).  A parked Fetch
 * gets the same flush from its worker's loop.  Not on a standby.
 */
void
kp_wal_flush_for_readers(void)
{
	if (!RecoveryInProgress())
		kp_wal_flush(kp_xlog_insert_end());
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
		{
#ifdef KP_TRACE_LATENCY
			kp_ftrace(KP_FT_F_MOVED, i, want);
#endif
			continue;			/* it moved: the worker looks again itself */
		}
		latch = w->latch;
#ifdef KP_TRACE_LATENCY
		kp_ftrace(KP_FT_F_SET, i, want);
		pg_atomic_write_u64(&w->set_at_us, kp_trace_us());
#endif
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
#ifdef KP_TRACE_LATENCY
	int64		wake_hist[7] = {0};
	int64		flush_hist[7] = {0};
	int64		hist_at = kp_trace_us();
	int64		slept_at = 0;
#endif

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
#ifdef KP_TRACE_LATENCY
	ftrace_who = -1;
#endif

	for (;;)
	{
		XLogRecPtr	want;

#ifdef KP_TRACE_LATENCY
		if (slept_at != 0)
		{
			int64		r = (int64) pg_atomic_read_u64(&flusher->request_at_us);

			/* asked for while we slept: how long until we ran */
			if (r >= slept_at)
				kp_ftrace_hist_add(wake_hist, kp_trace_us() - r);
			slept_at = 0;
		}
		if (kp_trace_us() - hist_at > 10000000)
		{
			elog(LOG, "kp_trace flusher_hist woken (request -> running) %s",
				 kp_ftrace_hist_str(wake_hist));
			elog(LOG, "kp_trace flusher_hist flushes %s", kp_ftrace_hist_str(flush_hist));
			hist_at = kp_trace_us();
		}
#endif
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		want = pg_atomic_read_u64(&flusher->request);
#ifdef KP_TRACE_LATENCY
		kp_ftrace(KP_FT_F_LOOK, want, GetFlushRecPtr(NULL));
#endif
		if (want > GetFlushRecPtr(NULL))
		{
#ifdef KP_TRACE_LATENCY
			int64		t0 = kp_trace_us();

			kp_wal_flush(want);
			kp_ftrace(KP_FT_F_FLUSHED, GetFlushRecPtr(NULL), kp_trace_us() - t0);
			kp_ftrace_hist_add(flush_hist, kp_trace_us() - t0);
#else
			kp_wal_flush(want);
#endif
		}

		/*
		 * Also when someone else flushed (a committing backend, the WAL
		 * writer): a worker waiting for that position is woken all the same.
		 */
		wake_waiters(false);
		if (pg_atomic_read_u64(&flusher->request) > GetFlushRecPtr(NULL))
			continue;			/* asked for while we flushed */
		/* our syncs in pg_stat_wal (wal_sync), as the WAL writer reports its */
		pgstat_report_wal(false);
#ifdef KP_TRACE_LATENCY
		kp_ftrace(KP_FT_F_SLEEP, pg_atomic_read_u64(&flusher->request), GetFlushRecPtr(NULL));
		slept_at = kp_trace_us();
#endif
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
#ifdef KP_TRACE_LATENCY
			ftrace_who = i;
#endif
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
#ifdef KP_TRACE_LATENCY
			kp_ftrace(KP_FT_W_REQUEST, lsn, cur);
			pg_atomic_write_u64(&flusher->request_at_us, kp_trace_us());
#endif
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
#ifdef KP_TRACE_LATENCY
	kp_ftrace(KP_FT_W_ARMED, lsn, pg_atomic_read_u64(&flusher->request));
#endif
	return KP_FLUSH_ARMED;
}
