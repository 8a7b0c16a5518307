/*-------------------------------------------------------------------------
 *
 * acquirer.c
 *	  The share acquirer: background workers that acquire records of a
 *	  share group for SQL sessions, each acquisition in a short transaction
 *	  of their own that commits before the SQL session goes on.
 *
 * Why (src/share/README, "SQL: the caller's transaction"): an acquisition
 * must be seen by every other consumer at once, without anyone waiting for
 * the SQL caller's transaction, and its delivery count must stay when that
 * transaction rolls back.  Both need a write that commits on its own, and a
 * backend cannot commit inside its caller's transaction.  So the SQL
 * session hands the request to a share acquirer and waits: the acquirer
 * acquires in its own transaction, stamping the records with the SQL
 * transaction's id (share_records.acq_xid), and commits.  From then on the
 * records are held for that transaction: while it runs, by it; when it
 * commits, until their lock expires (or what it acknowledged, done); when it
 * aborts (or the server crashes), they are available again at the next
 * acquisition, their delivery counted.
 *
 * Shared memory: one request slot per backend (MyBackendId), so a backend
 * never waits for a slot, and KP_SHARE_ACQUIRERS worker latches.  A slot
 * goes idle -> requested (by its backend) -> working (10 + the number of
 * the acquirer that claimed it with a compare-and-swap) -> done (results
 * written; the backend's latch set) -> idle (by the backend).  An acquirer
 * that starts again puts back to requested what it was working on when it
 * died.  A backend
 * interrupted while it waits leaves its slot requested or working; its
 * next request first waits for that one to be done (what it acquired was
 * for a transaction that has aborted by then, so it is available again).
 *
 * The acquirer's commits are asynchronous (synchronous_commit off): a SQL
 * transaction's COMMIT flushes the WAL up to its own commit record, which
 * comes after the acquisition's, so no acknowledgement can be durable
 * without the acquisition it acknowledges; an acquisition lost in a crash
 * is one whose SQL transaction was lost too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "common/workers.h"
#include "catalog/kafka_catalog.h"
#include "protocol/errors.h"
#include "share/share.h"

extern char *kp_database;

#define SLOT_IDLE		0
#define SLOT_REQUESTED	1
#define SLOT_DONE		2
#define SLOT_WORKING	10		/* + the acquirer's number */

#define GROUP_ID_MAX	1024
#define MEMBER_MAX		64
#define ERRMSG_MAX		512

typedef struct AcqSlot
{
	pg_atomic_uint32 state;
	Latch	   *latch;			/* the requesting backend's */
	uint64		xid;			/* its top transaction (FullTransactionId) */
	int32		partition;
	int32		max_records;
	int16		error_code;		/* Kafka's; -1: an error, errmsg */
	int32		n;
	char		group_id[GROUP_ID_MAX + 1];
	char		topic[KP_TOPIC_NAME_MAX + 1];
	char		member[MEMBER_MAX + 1];
	char		errmsg[ERRMSG_MAX];
	int			sqlerrcode;		/* the error's SQLSTATE, raised again */
	int64		offsets[KP_SHARE_ACQUIRER_MAX_RECORDS];
	int16		counts[KP_SHARE_ACQUIRER_MAX_RECORDS];
} AcqSlot;

typedef struct AcqShared
{
	slock_t		mutex;			/* workers[], dboid */
	Latch	   *workers[KP_SHARE_ACQUIRERS];
	Oid			dboid;			/* the database the acquirers serve */
	int			nslots;
	AcqSlot		slots[FLEXIBLE_ARRAY_MEMBER];
} AcqShared;

static AcqShared *acq = NULL;
static int	my_worker = -1;

Size
kp_share_acquirer_shmem_size(void)
{
	return add_size(offsetof(AcqShared, slots), mul_size(sizeof(AcqSlot), MaxBackends));
}

void
kp_share_acquirer_shmem_init(void)
{
	bool		found;
	int			i;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	acq = ShmemInitStruct("kafka_pg share acquirer", kp_share_acquirer_shmem_size(), &found);
	if (!found)
	{
		SpinLockInit(&acq->mutex);
		for (i = 0; i < KP_SHARE_ACQUIRERS; i++)
			acq->workers[i] = NULL;
		acq->dboid = InvalidOid;
		acq->nslots = MaxBackends;
		for (i = 0; i < MaxBackends; i++)
			pg_atomic_init_u32(&acq->slots[i].state, SLOT_IDLE);
	}
	LWLockRelease(AddinShmemInitLock);
}

void
kp_share_acquirer_register(void)
{
	int			i;

	for (i = 0; i < KP_SHARE_ACQUIRERS; i++)
	{
		char		name[BGW_MAXLEN];

		snprintf(name, sizeof(name), "kafka_pg share acquirer %d", i);
		kp_register_worker(name, "kafka_pg share acquirer", "kp_share_acquirer_main",
						   BgWorkerStart_RecoveryFinished, 5, Int32GetDatum(i));
	}
}

/* ---------------------------------------------------------------------
 * The SQL session's side
 * ---------------------------------------------------------------------
 */

/* Wait on our latch until the slot is idle or done. */
static void
wait_done(AcqSlot *slot)
{
	TimestampTz since = GetCurrentTimestamp();

	for (;;)
	{
		uint32		st = pg_atomic_read_u32(&slot->state);

		if (st == SLOT_IDLE || st == SLOT_DONE)
			return;
		if (TimestampDifferenceExceeds(since, GetCurrentTimestamp(), 10000))
		{
			bool		any = false;
			int			i;

			SpinLockAcquire(&acq->mutex);
			for (i = 0; i < KP_SHARE_ACQUIRERS; i++)
				any |= acq->workers[i] != NULL;
			SpinLockRelease(&acq->mutex);
			if (!any)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("the kafka_pg share acquirer is not running"),
						 errhint("It is a background worker started with the server; see the server log.")));
			since = GetCurrentTimestamp();
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

int16
kp_share_acquire_for_sql(const char *group_id, const char *topic, int32 partition,
						 const char *member_id, int max_records, KpShareAcquired *out)
{
	AcqSlot    *slot;
	Oid			dboid;
	int			i;

	memset(out, 0, sizeof(*out));
	if (acq == NULL || MyBackendId < 1 || MyBackendId > acq->nslots)
		elog(ERROR, "kafka_pg share acquirer: no request slot for this process");
	if (strlen(group_id) > GROUP_ID_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("group_id is longer than %d bytes", GROUP_ID_MAX)));
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("kafka.share_acquire needs the READ COMMITTED isolation level"),
				 errdetail("Records are acquired in a transaction that commits on its own; a snapshot taken before it would not see them.")));
	SpinLockAcquire(&acq->mutex);
	dboid = acq->dboid;
	SpinLockRelease(&acq->mutex);
	if (OidIsValid(dboid) && dboid != MyDatabaseId)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("share groups can be used from SQL only in database \"%s\" (kafka.database)",
						kp_database)));
	max_records = Min(Max(max_records, 0), KP_SHARE_ACQUIRER_MAX_RECORDS);
	if (max_records == 0)
		return KP_ERR_NONE;

	slot = &acq->slots[MyBackendId - 1];
	/* a request left by an interrupted wait ends first */
	wait_done(slot);

	slot->latch = MyLatch;
	slot->xid = U64FromFullTransactionId(GetTopFullTransactionId());
	slot->partition = partition;
	slot->max_records = max_records;
	slot->error_code = 0;
	slot->n = 0;
	strlcpy(slot->group_id, group_id, sizeof(slot->group_id));
	strlcpy(slot->topic, topic, sizeof(slot->topic));
	strlcpy(slot->member, member_id, sizeof(slot->member));
	slot->errmsg[0] = '\0';
	pg_write_barrier();
	pg_atomic_write_u32(&slot->state, SLOT_REQUESTED);

	{
		Latch	   *workers[KP_SHARE_ACQUIRERS];

		SpinLockAcquire(&acq->mutex);
		memcpy(workers, acq->workers, sizeof(workers));
		SpinLockRelease(&acq->mutex);
		for (i = 0; i < KP_SHARE_ACQUIRERS; i++)
			if (workers[i] != NULL)
				SetLatch(workers[i]);
	}

	wait_done(slot);
	pg_read_barrier();
	if (slot->error_code == -1)
	{
		char		msg[ERRMSG_MAX];
		int			sqlerrcode = slot->sqlerrcode;

		strlcpy(msg, slot->errmsg, sizeof(msg));
		pg_atomic_write_u32(&slot->state, SLOT_IDLE);

		/*
		 * with the acquirer's SQLSTATE (XX001 for a segment page it could not
		 * read, as a read in this session would fail)
		 */
		ereport(ERROR,
				(errcode(sqlerrcode),
				 errmsg("the share acquirer could not acquire records of partition %d of topic \"%s\": %s",
						partition, topic, msg)));
	}
	out->n = slot->n;
	out->offsets = palloc(sizeof(int64) * Max(out->n, 1));
	out->delivery_counts = palloc(sizeof(int16) * Max(out->n, 1));
	memcpy(out->offsets, slot->offsets, sizeof(int64) * out->n);
	memcpy(out->delivery_counts, slot->counts, sizeof(int16) * out->n);
	{
		int16		code = slot->error_code;

		pg_atomic_write_u32(&slot->state, SLOT_IDLE);

		/*
		 * held for this transaction: should it roll back, they are available
		 * again, and the ShareFetches parked on the partition may take them
		 * (wake.c)
		 */
		if (out->n > 0)
			kp_share_wake_at_abort(kp_share_partition_id(topic, partition));
		return code;
	}
}

/* ---------------------------------------------------------------------
 * The acquirer
 * ---------------------------------------------------------------------
 */

static void
acquirer_detach(int code, Datum arg)
{
	SpinLockAcquire(&acq->mutex);
	if (my_worker >= 0 && acq->workers[my_worker] == MyLatch)
		acq->workers[my_worker] = NULL;
	SpinLockRelease(&acq->mutex);
}

/* One request, in a transaction of its own. */
static void
serve(AcqSlot *slot, MemoryContext cxt)
{
	PG_TRY();
	{
		const KpTopic *topic;
		KpShareAcquired res;
		int16		code;

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "share acquisition");
		topic = kp_topic_open(slot->topic, AccessShareLock, true);
		if (topic == NULL)
		{
			code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
			res.n = 0;
		}
		else
			code = kp_share_acquire(slot->group_id, topic, slot->partition, slot->member,
									slot->max_records, true, slot->xid, true, &res);
		slot->n = Min(res.n, KP_SHARE_ACQUIRER_MAX_RECORDS);
		if (slot->n > 0)
		{
			memcpy(slot->offsets, res.offsets, sizeof(int64) * slot->n);
			memcpy(slot->counts, res.delivery_counts, sizeof(int16) * slot->n);
		}
		slot->error_code = code;
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *e;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(cxt);
		e = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		RESUME_INTERRUPTS();
		slot->n = 0;
		slot->error_code = -1;
		strlcpy(slot->errmsg, e->message ? e->message : "unknown error", sizeof(slot->errmsg));
		slot->sqlerrcode = e->sqlerrcode;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	pgstat_report_activity(STATE_IDLE, NULL);
}

PGDLLEXPORT void kp_share_acquirer_main(Datum arg);

void
kp_share_acquirer_main(Datum arg)
{
	MemoryContext cxt;
	int			i;

	my_worker = DatumGetInt32(arg);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	kp_worker_connect();

	/* see the header: asynchronous commits are safe here */
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);
	/* the one wait (a share-partition's row) is on short transactions */
	SetConfigOption("lock_timeout", "10s", PGC_SUSET, PGC_S_OVERRIDE);

	cxt = AllocSetContextCreate(TopMemoryContext, "kafka_pg share acquirer", ALLOCSET_DEFAULT_SIZES);
	/* another build's catalog: reported here; requests then fail (topics.c) */
	(void) kp_catalog_stamp_worker_start(psprintf("kafka_pg share acquirer %d", my_worker));
	before_shmem_exit(acquirer_detach, (Datum) 0);
	SpinLockAcquire(&acq->mutex);
	acq->workers[my_worker] = MyLatch;
	acq->dboid = MyDatabaseId;
	SpinLockRelease(&acq->mutex);

	/* what this acquirer was working on when it died: again */
	for (i = 0; i < acq->nslots; i++)
	{
		uint32		expected = SLOT_WORKING + my_worker;

		pg_atomic_compare_exchange_u32(&acq->slots[i].state, &expected, SLOT_REQUESTED);
	}

	while (!ShutdownRequestPending)
	{
		bool		served = false;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		for (i = 0; i < acq->nslots && !ShutdownRequestPending; i++)
		{
			AcqSlot    *slot = &acq->slots[i];
			uint32		expected = SLOT_REQUESTED;

			if (pg_atomic_read_u32(&slot->state) != SLOT_REQUESTED ||
				!pg_atomic_compare_exchange_u32(&slot->state, &expected, SLOT_WORKING + my_worker))
				continue;
			pg_read_barrier();
			serve(slot, cxt);
			MemoryContextReset(cxt);
			pg_write_barrier();
			pg_atomic_write_u32(&slot->state, SLOT_DONE);
			SetLatch(slot->latch);
			served = true;
		}
		/* what the transactions did, for autovacuum (at most once a second) */
		pgstat_report_stat(!served);
		if (!served)
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000,
							 PG_WAIT_EXTENSION);
	}
	proc_exit(1);
}
