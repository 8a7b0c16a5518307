/*-------------------------------------------------------------------------
 *
 * resolver.c
 *	  The resolver background worker: writes transaction markers.
 *
 * Backends decide their transactions' outcome in shared memory at commit
 * or abort and set this worker's latch if it is idle; the worker appends
 * the COMMIT or ABORT control batch to each partition and so advances its
 * last stable offset.  While there is work it polls every 10 ms instead of
 * being signalled by every commit (the next append to a partition writes
 * its pending markers too).  Once a second it also sweeps for SQL transactions that finished
 * without telling anyone (prepared transactions, crash survivors found by
 * recovery), and does the group coordinator's upkeep (expired sessions,
 * join phases past their deadline, old offsets); it also wakes for the
 * upkeep at the moment the coordinator names (kp_group_next_upkeep), so that
 * a session expires at its timeout, not up to a second later (the upkeep
 * waits for no lock a SQL transaction holds: a group it could not lock is
 * tried again GROUP_UPKEEP_RETRY_MS later).  When it
 * starts (after every restart) it first loads every partition, so the
 * transactions a crash cut short are found and aborted while the commit log
 * still knows them.  It runs in kafka.database and restarts if it exits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "catalog/kafka_catalog.h"
#include "group/group.h"
#include "common/settings.h"
#include "common/workers.h"
#include "store/store.h"
#include "txn/txn.h"

#define RESOLVER_NAME "kafka_pg resolver"

/* a group upkeep left for a lock a SQL transaction holds: tried again after */
#define GROUP_UPKEEP_RETRY_MS 100

/*
 * After a restart, load every partition of this database once, before
 * anything else: recovery (src/store/recovery.c) finds the transactions a
 * crash cut short and decides the SQL ones from the commit log, which
 * still covers them now but may not when the partition is first read,
 * perhaps billions of transactions later; the markers and index entries
 * follow in the first round (README, the commit-log horizon defect).  An
 * error is reported and the resolver goes on: the partitions left load at
 * first use, as before.
 */
/*
 * Run work(arg) in a transaction of its own, if the catalog is this
 * build's (another build's is reported by kp_catalog_stamp_worker, and
 * left alone).  An error is reported and the resolver goes on; false then.
 */
static bool
in_transaction(void (*work) (void *arg), void *arg)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	bool		ok = true;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	PG_TRY();
	{
		if (kp_catalog_stamp_worker(RESOLVER_NAME) == KP_CATALOG_CURRENT)
			work(arg);
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

static void
load_work(void *arg)
{
	int		   *loaded = (int *) arg;
	char	  **names;
	int			n = kp_topic_list_names(&names);
	int			i;
	int			p;

	for (i = 0; i < n; i++)
	{
		const KpTopic *t = kp_topic_open(names[i], AccessShareLock, true);

		if (t == NULL)
			continue;
		for (p = 0; p < t->partition_count; p++)
		{
			kp_log_load_partition(t->partition_ids[p]);
			(*loaded)++;
		}
		/* one topic lock at a time, not one per topic to the end */
		kp_topic_close(t, AccessShareLock);
	}
}

static void
load_all_partitions(void)
{
	TimestampTz started = GetCurrentTimestamp();
	int			loaded = 0;
	uint64		snapshots = kp_recovery_snapshots_used;
	uint64		walked = kp_recovery_batches_walked;

	if (!in_transaction(load_work, &loaded))
		return;

	/*
	 * Logged: the load reads the batch headers of each active segment from
	 * its producer-state snapshot on (recovery.c, prodsnap.c), or all of them
	 * where it has none: what a DBA waits for after a start or a promotion
	 * (docs/architecture.md, Recovery).
	 */
	ereport(LOG,
			(errmsg("kafka_pg resolver: loaded %d partitions in %.2f s (%llu from a producer-state snapshot, %llu batches read)",
					loaded,
					(double) TimestampDifferenceMilliseconds(started, GetCurrentTimestamp()) / 1000.0,
					(unsigned long long) (kp_recovery_snapshots_used - snapshots),
					(unsigned long long) (kp_recovery_batches_walked - walked))));
}

static int
cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y;
}

/*
 * Call fn(partition_id, arg) for each partition among ids (freed here)
 * holding its topic's AccessShareLock, as an append does, so that nothing
 * is written into a topic being deleted; a topic whose lock is not free at
 * once (a deletion in progress) is skipped, so that an open delete_topic
 * transaction never holds up the resolver's round.  Returns how many calls
 * returned true.
 */
static int
under_topic_locks(List *ids, bool (*fn) (int64 partition_id, void *arg), void *arg)
{
	int64	   *sorted;
	int			nids = list_length(ids);
	int			done = 0;
	char	  **names;
	int			n;
	int			i;
	int			p;
	ListCell   *lc;

	if (nids == 0)
		return 0;
	sorted = palloc(sizeof(int64) * nids);
	i = 0;
	foreach(lc, ids)
		sorted[i++] = *(int64 *) lfirst(lc);
	qsort(sorted, nids, sizeof(int64), cmp_int64);
	list_free_deep(ids);

	n = kp_topic_list_names(&names);
	for (i = 0; i < n; i++)
	{
		/* a topic being deleted is skipped, not waited for */
		const KpTopic *t = kp_topic_try_open(names[i], AccessShareLock, NULL);

		if (t == NULL)
			continue;
		for (p = 0; p < t->partition_count; p++)
		{
			CHECK_FOR_INTERRUPTS();
			if (bsearch(&t->partition_ids[p], sorted, nids, sizeof(int64), cmp_int64) &&
				fn(t->partition_ids[p], arg))
				done++;
		}
		/* done: the lock has done its work (one at a time, not all) */
		kp_topic_close(t, AccessShareLock);
	}
	pfree(sorted);
	return done;
}

static bool
snapshot_one(int64 partition_id, void *arg)
{
	return kp_log_snapshot_partition(partition_id, *(bool *) arg);
}

/*
 * Producer-state snapshots (src/store/prodsnap.c) of the partitions that
 * need one: every 8 MB an active segment grows, or with all (at shutdown)
 * any change, each under its topic's lock (under_topic_locks).  Returns
 * how many were written.
 */
static int
snapshot_producers(bool all)
{
	return under_topic_locks(kp_log_snapshot_due(all), snapshot_one, &all);
}

static bool
load_one(int64 partition_id, void *arg)
{
	kp_log_load_partition(partition_id);
	return true;
}

/*
 * Load again, each under its topic's lock (under_topic_locks), the
 * partitions an error left unloaded (a write that failed half-way under
 * the appender lock), so that the markers of their decided transactions
 * are written (the load wakes us) without waiting for an append.  The
 * marker writers never load a partition themselves: they hold no topic
 * lock (src/store/README, invariant 13).
 */
static void
reload_work(void *arg)
{
	*(int *) arg = under_topic_locks(kp_log_unloaded_partitions(), load_one, NULL);
}

static void
snapshot_work(void *arg)
{
	*(int *) arg = snapshot_producers(true);
}

/*
 * At shutdown, a producer-state snapshot of every partition that changed
 * since its last one (src/store/prodsnap.c), so that the next start (a
 * clean shutdown's) reads no log to load them, as Kafka's snapshot at a
 * clean shutdown.  The postmaster's shutdown checkpoint waits for this
 * worker to exit, so they are in it.  A listener may still append after
 * one: recovery then walks only what came after.
 */
static void
snapshot_at_shutdown(void)
{
	int			taken = 0;

	if (in_transaction(snapshot_work, &taken))
		ereport(DEBUG1,
				(errmsg_internal("kafka_pg resolver: %d producer-state snapshots at shutdown",
								 taken)));
}

void
kp_resolver_main(Datum arg)
{
	MemoryContext cxt;
	TimestampTz last_upkeep = 0;
	TimestampTz group_due = 0;	/* the group upkeep's next moment; 0: none */
	TimestampTz reload_after = 0;	/* a failed reload waits a minute */

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	kp_worker_connect();

	kp_store_set_resolver_latch(&MyProc->procLatch);
	cxt = AllocSetContextCreate(TopMemoryContext, "kafka_pg resolver",
								ALLOCSET_DEFAULT_SIZES);
	elog(LOG, "kafka_pg resolver started in database \"%s\"", kp_database);
	load_all_partitions();

	while (!ShutdownRequestPending)
	{
		MemoryContext old;
		TimestampTz now = GetCurrentTimestamp();
		bool		upkeep;
		bool		group_upkeep;
		int			written;
		long		timeout;
		bool		reload = false;

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		old = MemoryContextSwitchTo(cxt);

		/*
		 * Markers at every wakeup (a commit sets our latch); the sweeps and
		 * the group upkeep, which run SQL, at most once a second.
		 */
		upkeep = TimestampDifferenceExceeds(last_upkeep, now, 1000);
		group_upkeep = upkeep || (group_due != 0 && now >= group_due);
		written = 0;
		/* idle from before the scan: a decision the scan misses wakes us */
		kp_resolver_set_idle(true);
		if (kp_catalog_stamp_worker(RESOLVER_NAME) == KP_CATALOG_CURRENT)
		{
			if (upkeep)
				kp_log_sweep_sql_txns();
			written = kp_log_write_pending_markers();
			if (group_upkeep)
			{
				/* old offsets at most once a second (at the check interval) */
				int			skipped = kp_group_expire(upkeep);

				group_due = kp_group_next_upkeep();

				/*
				 * A group whose lock a SQL transaction holds was left: its
				 * moment has passed, so try it again in a while, not at once
				 */
				if (skipped > 0)
					group_due = Max(group_due,
									TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
																GROUP_UPKEEP_RETRY_MS));
			}
			if (upkeep)
			{
				kp_txn_upkeep();	/* wire transactions: timeouts, markers */
				/* active segments grown by 8 MB: a new producer snapshot */
				(void) snapshot_producers(false);
				/* partitions an error left unloaded: loaded below */
				reload = kp_log_unloaded_partitions() != NIL;
			}
		}
		if (written > 0)
			kp_resolver_set_idle(false);	/* busy: poll, do not be signalled */
		if (upkeep)
			last_upkeep = now;
		MemoryContextSwitchTo(old);
		MemoryContextReset(cxt);
		PopActiveSnapshot();
		CommitTransactionCommand();

		/*
		 * In a transaction of its own: a partition that fails to load again
		 * is reported, and the resolver goes on (and tries again later).
		 */
		if (reload && now >= reload_after)
		{
			int			loaded = 0;

			if (in_transaction(reload_work, &loaded))
				ereport(DEBUG1,
						(errmsg_internal("kafka_pg resolver: loaded %d partitions again", loaded)));
			else
				reload_after = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 60000);
		}
		pgstat_report_stat(false);

		now = GetCurrentTimestamp();
		timeout = written > 0 ? 10 :
			Max(1, 1000 - TimestampDifferenceMilliseconds(last_upkeep, now));
		if (group_due != 0)
			timeout = Max(1, Min(timeout, TimestampDifferenceMilliseconds(now, group_due)));
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	snapshot_at_shutdown();
	elog(LOG, "kafka_pg resolver shutting down");

	/*
	 * Exit code 1, as the listener's: a worker that exits with 0 is
	 * unregistered for good, so one ended by pg_terminate_backend or DROP
	 * DATABASE ... WITH (FORCE) would never come back.  During a server
	 * shutdown the postmaster restarts nothing anyway.
	 */
	proc_exit(1);
}
