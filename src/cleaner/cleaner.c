/*-------------------------------------------------------------------------
 *
 * cleaner.c
 *	  The log cleaner background worker ("kafka_pg log cleaner" in
 *	  pg_stat_activity): retention every
 *	  kafka.log_retention_check_interval_ms, compaction whenever a
 *	  partition needs it (checked every kafka.log_cleaner_backoff_ms while
 *	  none does).
 *
 * Like Kafka's LogManager retention task, it wakes every
 * log.retention.check.interval.ms (Kafka's default, 300000) and applies
 * retention to every topic whose cleanup.policy includes "delete"
 * (retain.c).  Each topic is one transaction: its lock is held only for
 * that topic's pass, its segment drops commit with it, and an error in one
 * topic is logged and does not stop the others.  It runs in
 * kafka.database, does nothing while the extension is not installed there,
 * and restarts if it exits.  A reload (SIGHUP) applies a new interval at
 * once.
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
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "catalog/kafka_catalog.h"
#include "cleaner/cleaner.h"
#include "common/settings.h"
#include "common/workers.h"

#define CLEANER_NAME "kafka_pg log cleaner"

int			kp_log_retention_check_interval_ms = 300000;

void
kp_cleaner_init_gucs(void)
{
	DefineCustomIntVariable("kafka.log_retention_check_interval_ms",
							"How often the log cleaner applies retention.ms and retention.bytes (Kafka's log.retention.check.interval.ms).",
							NULL,
							&kp_log_retention_check_interval_ms,
							300000, 1, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.log_cleaner_threads",
							"How many partitions the log cleaner compacts at once (Kafka's log.cleaner.threads); 0 stops compaction.",
							"kafka_pg has one log cleaner worker, so at most 1.",
							&kp_log_cleaner_threads,
							1, 0, 1,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.log_cleaner_backoff_ms",
							"How long the log cleaner sleeps when no partition needs compacting (Kafka's log.cleaner.backoff.ms).",
							NULL,
							&kp_log_cleaner_backoff_ms,
							15000, 0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomRealVariable("kafka.log_cleaner_io_max_bytes_per_second",
							 "Bytes per second compaction reads and writes at most (Kafka's log.cleaner.io.max.bytes.per.second).",
							 NULL,
							 &kp_log_cleaner_io_max_bytes_per_second,
							 1.7976931348623157e308, 1.0, 1.7976931348623157e308,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.log_cleaner_dedupe_buffer_size",
							"Memory for compaction's offset map, across the cleaner threads (Kafka's log.cleaner.dedupe.buffer.size).",
							NULL,
							&kp_log_cleaner_dedupe_buffer_size,
							128 * 1024 * 1024, 1024, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);
}

/* The topic names, in cxt, read in a transaction of their own. */
static int
list_topics(MemoryContext cxt, char ***names)
{
	MemoryContext old;
	int			n = 0;

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	old = MemoryContextSwitchTo(cxt);
	/* another build's catalog is reported once, and left alone */
	if (kp_catalog_stamp_worker(CLEANER_NAME) == KP_CATALOG_CURRENT)
		n = kp_topic_list_names(names);
	MemoryContextSwitchTo(old);
	PopActiveSnapshot();
	CommitTransactionCommand();
	return n;
}

/*
 * The topic's lock (ShareUpdateExclusiveLock, which retention and compaction
 * take) if it is free; false if a transaction holds it in a conflicting mode.
 * The worker waits for no topic, as autovacuum waits for no table: a SQL
 * transaction still open that changed or deleted the topic (or deleted its
 * records) would otherwise stop retention and compaction of every topic
 * until it ended.  The topic is left for a later pass; kafka.run_log_cleaner
 * and kafka.run_log_compaction, asked for by a user, wait as before.
 */
static bool
lock_topic_if_free(const char *name)
{
	bool		busy;

	(void) kp_topic_try_open(name, ShareUpdateExclusiveLock, &busy);
	if (busy)
		ereport(DEBUG1,
				(errmsg_internal("kafka_pg log cleaner: topic \"%s\" left for a later pass: another transaction holds its lock",
								 name)));
	return !busy;
}

/*
 * Retention for one topic in a transaction of its own; errors are logged.
 * False if the topic's lock was taken (nothing done).
 */
static bool
retain_one_topic(const char *name, MemoryContext cxt)
{
	volatile bool locked = true;

	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, psprintf("retention of topic %s", name));
		locked = lock_topic_if_free(name);
		if (locked)
			(void) kp_cleaner_retain_topic(name, NULL, NULL);
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		/* as a backend's top level would: report, abort, go on */
		HOLD_INTERRUPTS();
		EmitErrorReport();
		AbortCurrentTransaction();
		FlushErrorState();
		RESUME_INTERRUPTS();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	return locked;
}

/*
 * Compaction for one partition in a transaction of its own; errors are
 * logged.  Returns whether it cleaned; *npartitions gets the topic's
 * partition count (0: not compacted, gone, or its lock taken: the topic is
 * left for the next pass, kafka.log_cleaner_backoff_ms later).
 */
static bool
compact_one_partition(const char *name, int32 p, int32 *npartitions,
					  MemoryContext cxt)
{
	volatile bool cleaned = false;	/* set in PG_TRY, read after it */

	*npartitions = 0;
	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING,
							   psprintf("compaction of topic %s partition %d", name, p));
		if (lock_topic_if_free(name))
			cleaned = kp_cleaner_compact_topic(name, p, NULL, NULL, npartitions) > 0;
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		EmitErrorReport();
		AbortCurrentTransaction();
		FlushErrorState();
		RESUME_INTERRUPTS();
		*npartitions = 0;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	return cleaned;
}

/* One compaction pass over every compacted topic; true if it cleaned any. */
static bool
compaction_pass(MemoryContext cxt)
{
	char	  **names;
	int			n;
	int			i;
	bool		cleaned = false;

	MemoryContextSwitchTo(cxt);
	n = list_topics(cxt, &names);
	for (i = 0; i < n && !ShutdownRequestPending; i++)
	{
		int32		np = 1;
		int32		p;

		for (p = 0; p < np && !ShutdownRequestPending; p++)
		{
			if (compact_one_partition(names[i], p, &np, cxt))
				cleaned = true;
			CHECK_FOR_INTERRUPTS();
		}
	}
	MemoryContextSwitchTo(TopMemoryContext);
	MemoryContextReset(cxt);
	pgstat_report_activity(STATE_IDLE, NULL);
	pgstat_report_stat(false);
	return cleaned;
}

/*
 * Kafka's log.initial.task.delay.ms (30 s): the first pass waits that long
 * after the start (or the interval, if shorter), so that a restart does not
 * start with a burst of deletions before anything else is up.
 */
#define KP_CLEANER_INITIAL_DELAY_MS	30000

/*
 * A pass that left a topic whose lock was taken (lock_topic_if_free) comes
 * again after kafka.log_cleaner_backoff_ms, if that is sooner.
 */
static TimestampTz
next_retention(TimestampTz started, TimestampTz last, bool left_topics)
{
	if (last == 0)
		return TimestampTzPlusMilliseconds(started,
										   Min(KP_CLEANER_INITIAL_DELAY_MS,
											   kp_log_retention_check_interval_ms));
	if (left_topics)
		return TimestampTzPlusMilliseconds(last, Min(kp_log_retention_check_interval_ms,
													 kp_log_cleaner_backoff_ms));
	return TimestampTzPlusMilliseconds(last, kp_log_retention_check_interval_ms);
}

void
kp_cleaner_main(Datum arg)
{
	MemoryContext cxt;
	TimestampTz started = GetCurrentTimestamp();
	TimestampTz last_retention = 0;
	bool		left_topics = false;
	TimestampTz next_compaction = 0;

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	kp_worker_connect();

	cxt = AllocSetContextCreate(TopMemoryContext, "kafka_pg log cleaner",
								ALLOCSET_DEFAULT_SIZES);
	elog(LOG, "kafka_pg log cleaner started in database \"%s\"", kp_database);
	(void) kp_catalog_stamp_worker_start(CLEANER_NAME);

	while (!ShutdownRequestPending)
	{
		TimestampTz now;
		long		timeout;

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		now = GetCurrentTimestamp();
		if (now >= next_retention(started, last_retention, left_topics))
		{
			char	  **names;
			int			n;
			int			i;

			MemoryContextSwitchTo(cxt);
			n = list_topics(cxt, &names);
			left_topics = false;
			for (i = 0; i < n && !ShutdownRequestPending; i++)
			{
				if (!retain_one_topic(names[i], cxt))
					left_topics = true;
				CHECK_FOR_INTERRUPTS();
			}
			MemoryContextSwitchTo(TopMemoryContext);
			MemoryContextReset(cxt);
			pgstat_report_activity(STATE_IDLE, NULL);
			pgstat_report_stat(false);
			last_retention = now;
		}

		now = GetCurrentTimestamp();
		if (kp_log_cleaner_threads > 0 && now >= next_compaction &&
			!ShutdownRequestPending)
		{
			/* Kafka's cleaner thread: again at once while it finds work */
			bool		cleaned = compaction_pass(cxt);

			now = GetCurrentTimestamp();
			next_compaction = cleaned ? now :
				TimestampTzPlusMilliseconds(now, kp_log_cleaner_backoff_ms);
		}

		now = GetCurrentTimestamp();
		{
			TimestampTz wake = next_retention(started, last_retention, left_topics);

			if (kp_log_cleaner_threads > 0 && next_compaction < wake)
				wake = next_compaction;
			timeout = Max(1, TimestampDifferenceMilliseconds(now, wake));
		}
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	elog(LOG, "kafka_pg log cleaner shutting down");

	/*
	 * Exit code 1, as the listener's: a worker that exits with 0 is
	 * unregistered for good, so one ended by pg_terminate_backend or DROP
	 * DATABASE ... WITH (FORCE) would never come back.  During a server
	 * shutdown the postmaster restarts nothing anyway.
	 */
	proc_exit(1);
}
