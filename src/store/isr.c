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
 * asks for have the WAL, read under SyncRepLock as core's SyncRepWaitForLSN
 * reads it).  Produce acks=all is answered once this position passes the
 * batch's end (src/listener), without waiting inside SyncRepWaitForLSN.
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

	LWLockAcquire(SyncRepLock, LW_SHARED);
#ifdef SYNC_STANDBY_DEFINED
	{
		bits8		status = WalSndCtl->sync_standbys_status;

		/* before the checkpointer has read the setting, the setting decides */
		pos->sync_wait = (status & SYNC_STANDBY_INIT) ?
			(status & SYNC_STANDBY_DEFINED) != 0 : standby_names_set();
	}
#else
	pos->sync_wait = WalSndCtl->sync_standbys_defined;
#endif
	pos->sync_confirmed = WalSndCtl->lsn[sync_wait_mode()];
	LWLockRelease(SyncRepLock);

	if (pos->sync_wait && pos->sync_confirmed < pos->confirmed)
		pos->confirmed = pos->sync_confirmed;
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
