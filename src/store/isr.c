/*-------------------------------------------------------------------------
 *
 * isr.c
 *	  The in-sync replicas of every partition, as PostgreSQL sees them: this
 *	  server (the leader) and the standbys whose acknowledgement a
 *	  synchronous commit waits for (docs/replication.md).
 *
 * What every in-sync replica has is a WAL position: the one flushed here,
 * and, while synchronous_standby_names is in effect, the one the
 * synchronous standbys confirmed (WalSndCtl->lsn[mode], which the
 * walsenders advance only once as many synchronous standbys as the setting
 * asks for have the WAL; read without SyncRepLock: sync_confirmed says
 * why).  Produce acks=all is answered once this position passes the batch's
 * end (src/listener), without waiting inside SyncRepWaitForLSN: the worker
 * queues itself where SyncRepWaitForLSN would, without sleeping there
 * (kp_isr_wake_at).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xlogrecovery.h"
#include "miscadmin.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"

#include "store/store.h"

/* the sync rep wait mode synchronous_commit asks for (core's SyncRepWaitMode) */
static int
sync_wait_mode(void)
{
	switch (synchronous_commit)
	{
		case SYNCHRONOUS_COMMIT_REMOTE_WRITE:
			return SYNC_REP_WAIT_WRITE;
		case SYNCHRONOUS_COMMIT_REMOTE_APPLY:
			return SYNC_REP_WAIT_APPLY;
		default:
			return SYNC_REP_WAIT_FLUSH;
	}
}

static bool
standby_names_set(void)
{
	return SyncRepStandbyNames != NULL && SyncRepStandbyNames[0] != '\0';
}

/*
 * Everything inserted into the WAL so far, as a position XLogFlush accepts.
 * GetXLogInsertRecPtr() gives the next record's start: on a page boundary
 * that is past the next page's header, which is not generated yet, and
 * XLogFlush of it fails ("xlog flush request ... is not satisfied", an
 * ERROR that ends a listener worker).  The end of what was inserted is then
 * the page boundary itself.
 */
XLogRecPtr
kp_xlog_insert_end(void)
{
	XLogRecPtr	p = GetXLogInsertRecPtr();

	if (XLogSegmentOffset(p, wal_segment_size) == SizeOfXLogLongPHD)
		return p - SizeOfXLogLongPHD;
	if (p % XLOG_BLCKSZ == SizeOfXLogShortPHD)
		return p - SizeOfXLogShortPHD;
	return p;
}

/*
 * Whether synchronous replication is in effect (the walsenders' view), read
 * without SyncRepLock.  Core's SyncRepWaitForLSN reads it so too before it
 * decides to wait: a commit that finds it unset does not wait either.
 */
static bool
sync_standbys_defined(void)
{
	volatile WalSndCtlData *ctl = WalSndCtl;

#ifdef SYNC_STANDBY_DEFINED
	bits8		status = ctl->sync_standbys_status;

	/* before the checkpointer has read the setting, the setting decides */
	return (status & SYNC_STANDBY_INIT) ?
		(status & SYNC_STANDBY_DEFINED) != 0 : standby_names_set();
#else
	return ctl->sync_standbys_defined;
#endif
}

/*
 * The synchronous standbys' confirmed position in mode.  Without
 * SyncRepLock where 8-byte reads are atomic: the walsenders only ever move
 * WalSndCtl->lsn[] forward (SyncRepReleaseWaiters), so a read without the
 * lock sees a position the standbys did confirm, at worst an older one than
 * a locked read would: a high watermark or an answer computed from it may
 * lag a moment, never lead.  (Taking the lock for every partition a reader
 * looks at, as kp_partition_offsets does, made the readers and the
 * walsenders queue on it.)  Waiting for a position is another matter: see
 * kp_isr_wake_at.
 */
static XLogRecPtr
sync_confirmed(int mode)
{
	XLogRecPtr	lsn;

#ifdef PG_HAVE_8BYTE_SINGLE_COPY_ATOMICITY
	lsn = ((volatile WalSndCtlData *) WalSndCtl)->lsn[mode];
#else
	LWLockAcquire(SyncRepLock, LW_SHARED);
	lsn = WalSndCtl->lsn[mode];
	LWLockRelease(SyncRepLock);
#endif
	return lsn;
}

void
kp_isr_position(KpIsrPosition *pos)
{
	memset(pos, 0, sizeof(*pos));
	if (RecoveryInProgress())
	{
		/* a hot standby: what it has is what it replayed */
		pos->flushed = GetXLogReplayRecPtr(NULL);
		pos->confirmed = pos->flushed;
		return;
	}
	pos->flushed = GetFlushRecPtr(NULL);
	pos->confirmed = pos->flushed;
	if (!SyncRepRequested() || WalSndCtl == NULL)
		return;

	pos->sync_wait = sync_standbys_defined();
	pos->sync_confirmed = sync_confirmed(sync_wait_mode());
	if (pos->sync_wait && pos->sync_confirmed < pos->confirmed)
		pos->confirmed = pos->sync_confirmed;
}

/*
 * Being woken when the synchronous standbys confirm a position
 * (docs/replication.md, "acks=all").  Core's committing backends wait in
 * SyncRepWaitForLSN: each puts its PGPROC in WalSndCtl->SyncRepQueue[mode],
 * sorted by the LSN it waits for (waitLSN), and sleeps on its latch; a
 * walsender that moves WalSndCtl->lsn[mode] on a standby's reply takes off
 * the queue every process whose waitLSN it passed, marks it
 * SYNC_REP_WAIT_COMPLETE and sets its latch (SyncRepWakeQueue).  Only the
 * sleeping is SyncRepWaitForLSN's: a listener worker takes its place in the
 * queue the same way, for the smallest position any of its requests waits
 * for, and goes on serving its connections; the walsender's wake-up sets
 * the worker's latch, which its event loop waits on.  Once woken (off the
 * queue) the worker looks at what the standbys confirmed, answers, and
 * queues again for the next position it needs.
 *
 * The rules are core's: the queue and the links only under SyncRepLock
 * exclusive; the position is compared with lsn[mode] under that lock before
 * queueing (a walsender moves lsn[] and wakes the queue under it, so a
 * position it already passed is never queued for); waitLSN and
 * syncRepState are written by the owning process, and syncRepState set to
 * complete by the walsender only after it took the process off the queue.
 * The checkpointer wakes the whole queue when synchronous_standby_names is
 * emptied; a process leaving takes itself off (ProcKill ->
 * SyncRepCleanupAtProcExit).  The worker must not commit a transaction
 * that would wait in SyncRepWaitForLSN while it is queued: the listener's
 * commits are local (src/listener/dispatch.c, xact_callback), and
 * kp_isr_wake_cancel is there for anything else.
 *
 * The queue's layout is PostgreSQL 15's (SHM_QUEUE links); other versions
 * poll (KP_ISR_POLL).
 */
static int	queued_mode = -1;	/* the queue MyProc is in, while it may be */

#if PG_VERSION_NUM < 160000
#define KP_SYNCREP_QUEUE_LAYOUT 1
#endif

#ifdef KP_SYNCREP_QUEUE_LAYOUT
/* Under SyncRepLock exclusive: take MyProc off its queue if it is on one. */
static void
dequeue_locked(void)
{
	if (!SHMQueueIsDetached(&MyProc->syncRepLinks))
		SHMQueueDelete(&MyProc->syncRepLinks);
	MyProc->syncRepState = SYNC_REP_NOT_WAITING;
	MyProc->waitLSN = InvalidXLogRecPtr;
	queued_mode = -1;
}

/* Under SyncRepLock exclusive: queue MyProc for lsn in mode, kept sorted. */
static void
enqueue_locked(XLogRecPtr lsn, int mode)
{
	SHM_QUEUE  *queue = &WalSndCtl->SyncRepQueue[mode];
	PGPROC	   *proc;

	/* from the tail: the newest waiters wait for the furthest positions */
	proc = (PGPROC *) SHMQueuePrev(queue, queue, offsetof(PGPROC, syncRepLinks));
	while (proc && proc->waitLSN > lsn)
		proc = (PGPROC *) SHMQueuePrev(queue, &proc->syncRepLinks,
									   offsetof(PGPROC, syncRepLinks));
	MyProc->waitLSN = lsn;
	MyProc->syncRepState = SYNC_REP_WAITING;
	if (proc)
		SHMQueueInsertAfter(&proc->syncRepLinks, &MyProc->syncRepLinks);
	else
		SHMQueueInsertAfter(queue, &MyProc->syncRepLinks);
	queued_mode = mode;
}
#endif

KpIsrWake
kp_isr_wake_at(XLogRecPtr lsn)
{
#ifdef KP_SYNCREP_QUEUE_LAYOUT
	int			mode;
	KpIsrWake	result;
#endif

	if (RecoveryInProgress())
		return KP_ISR_POLL;		/* replay wakes no one */
	if (GetFlushRecPtr(NULL) < lsn)
	{
		/*
		 * the caller flushes what is inserted; a position not even inserted
		 * yet comes with WAL nobody tells us of (not what callers ask for)
		 */
		return kp_xlog_insert_end() >= lsn ? KP_ISR_NOW : KP_ISR_POLL;
	}
	if (!SyncRepRequested() || WalSndCtl == NULL || !sync_standbys_defined())
	{
		kp_isr_wake_cancel();
		return KP_ISR_NOW;		/* flushed is all the ISR needs */
	}
#ifdef KP_SYNCREP_QUEUE_LAYOUT
	mode = sync_wait_mode();

	/*
	 * Already queued for this position or an earlier one: the walsender will
	 * wake us (if it has just taken us off, it sets our latch after).
	 */
	pg_read_barrier();
	if (queued_mode == mode && MyProc->syncRepState == SYNC_REP_WAITING &&
		MyProc->waitLSN <= lsn)
		return KP_ISR_ARMED;

	LWLockAcquire(SyncRepLock, LW_EXCLUSIVE);
	dequeue_locked();
	/* under the lock, as SyncRepWaitForLSN decides */
	if (!sync_standbys_defined() || WalSndCtl->lsn[mode] >= lsn)
		result = KP_ISR_NOW;
	else
	{
		enqueue_locked(lsn, mode);
		result = KP_ISR_ARMED;
	}
	LWLockRelease(SyncRepLock);
	return result;
#else
	return KP_ISR_POLL;
#endif
}

void
kp_isr_wake_cancel(void)
{
#ifdef KP_SYNCREP_QUEUE_LAYOUT
	if (queued_mode < 0 || MyProc == NULL)
		return;
	pg_read_barrier();
	if (MyProc->syncRepState == SYNC_REP_WAITING)
	{
		/* maybe on the queue still: only under the lock */
		LWLockAcquire(SyncRepLock, LW_EXCLUSIVE);
		dequeue_locked();
		LWLockRelease(SyncRepLock);
	}
	else
	{
		/* the walsender took us off already */
		MyProc->syncRepState = SYNC_REP_NOT_WAITING;
		MyProc->waitLSN = InvalidXLogRecPtr;
		queued_mode = -1;
	}
#endif
}

/* priority order, as core's pg_stat_replication picks the 'sync' ones */
static int
by_priority(const void *a, const void *b)
{
	const SyncRepStandbyData *x = a;
	const SyncRepStandbyData *y = b;

	if (x->sync_standby_priority != y->sync_standby_priority)
		return x->sync_standby_priority < y->sync_standby_priority ? -1 : 1;
	return x->walsnd_index - y->walsnd_index;
}

int
kp_isr_standbys(KpIsrStandby **out, int *required)
{
	KpIsrPosition pos;
	SyncRepStandbyData *cands = NULL;
	int			n;
	int			keep;
	int			i;

	*out = NULL;
	*required = 0;
	kp_isr_position(&pos);
	if (!pos.sync_wait || SyncRepConfig == NULL)
		return 0;

	/* streaming walsenders named in synchronous_standby_names */
	n = SyncRepGetCandidateStandbys(&cands);
	if (n == 0)
	{
		if (cands)
			pfree(cands);
		*required = SyncRepConfig->num_sync;
		return 0;
	}
	keep = n;
	if (SyncRepConfig->syncrep_method == SYNC_REP_PRIORITY)
	{
		/* FIRST n: the n of highest priority are 'sync', the rest 'potential' */
		qsort(cands, n, sizeof(SyncRepStandbyData), by_priority);
		keep = Min(n, SyncRepConfig->num_sync);
	}
	*out = palloc0(sizeof(KpIsrStandby) * keep);
	for (i = 0; i < keep; i++)
	{
		(*out)[i].pid = cands[i].pid;
		(*out)[i].walsnd_index = cands[i].walsnd_index;
		(*out)[i].flush = cands[i].flush;
	}
	pfree(cands);
	*required = SyncRepConfig->num_sync;
	return keep;
}

int
kp_isr_count(void)
{
	KpIsrStandby *sb;
	int			required;
	int			n = kp_isr_standbys(&sb, &required);

	if (sb)
		pfree(sb);

	/*
	 * What acks=all guarantees: this server plus the standbys whose
	 * acknowledgement it waits for (ANY 1 of three streaming quorum standbys
	 * is this server and one of them).
	 */
	return 1 + Min(n, required);
}

/*
 * Every streaming walsender (a logical one too: the listener keeps those its
 * kafka.replica_nodes names).
 */
int
kp_replica_standbys(KpIsrStandby **out)
{
	int			n = 0;
	int			i;

	*out = NULL;
	if (WalSndCtl == NULL || RecoveryInProgress())
		return 0;
	*out = palloc0(sizeof(KpIsrStandby) * Max(max_wal_senders, 1));
	for (i = 0; i < max_wal_senders; i++)
	{
		WalSnd	   *w = &WalSndCtl->walsnds[i];
		pid_t		pid;
		WalSndState state;
		XLogRecPtr	flush;

		SpinLockAcquire(&w->mutex);
		pid = w->pid;
		state = w->state;
		flush = w->flush;
		SpinLockRelease(&w->mutex);
		if (pid == 0 || state != WALSNDSTATE_STREAMING)
			continue;
		(*out)[n].pid = pid;
		(*out)[n].walsnd_index = i;
		(*out)[n].flush = flush;
		n++;
	}
	return n;
}
