/*-------------------------------------------------------------------------
 *
 * sqltxn.c
 *	  SQL transactions as Kafka transactions.
 *
 * A batch produced by a SQL (sub)transaction is written at once, as a
 * transactional batch whose producer id is KP_SQL_PID_FLAG | its
 * FullTransactionId.  Nothing is undone at abort.  The resolver writes a
 * COMMIT or ABORT control batch after the outcome is known, never before (a
 * transaction can still abort after PRE_COMMIT); from then on the marker,
 * and for an ABORT the store's aborted-transaction index, decide the
 * batches for every reader.  Until then the store asks the commit log
 * through the callback registered here (kp_txn_sql_outcome).
 *
 * This backend remembers which partitions its open (sub)transactions wrote
 * to, so its commit/abort callbacks can tell the partitions at once, with no
 * I/O and no chance of ERROR, and wake the resolver.  A savepoint rolled
 * back decides its own producer id as aborted; one released hands its
 * writes to the parent.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "store/store.h"
#include "txn/txn.h"

typedef struct KpTxnWrite
{
	int64		partition_id;
	int64		producer_id;
	SubTransactionId subid;
} KpTxnWrite;

static KpTxnOutcome kp_txn_sql_outcome(int64 producer_id);

/*
 * kafka.debug_past_commit_log (developer only): answer as if every SQL
 * transaction had left the commit log, as it does once pg_xact is frozen
 * and truncated past it.  Tests use it to show that readers then still
 * decide every transaction that has a marker, from the marker alone.
 */
static bool kp_txn_debug_past_commit_log = false;

/*
 * kafka.transaction_idle_timeout_ms: how long a SQL session that produced
 * may sit idle in its transaction, holding back the last stable offset of
 * the partitions it wrote to, before the server ends it (the bound Kafka's
 * transaction.max.timeout.ms puts on wire producers).
 */
int			kp_txn_idle_timeout_ms = 900000;

static KpTxnWrite *writes = NULL;
static int	nwrites = 0;
static int	maxwrites = 0;

int64
kp_txn_sql_producer_id(void)
{
	FullTransactionId fxid = GetCurrentFullTransactionId();

	return (int64) (KP_SQL_PID_FLAG | U64FromFullTransactionId(fxid));
}

void
kp_txn_note_write(int64 partition_id, int64 producer_id)
{
	SubTransactionId subid = GetCurrentSubTransactionId();
	int			i;

	for (i = nwrites - 1; i >= 0; i--)
		if (writes[i].partition_id == partition_id &&
			writes[i].producer_id == producer_id)
			return;

	/*
	 * The first write of the transaction bounds how long it may idle: it sets
	 * idle_in_transaction_session_timeout for the rest of this transaction
	 * only (SET LOCAL), unless a shorter one is in force, so PostgreSQL ends
	 * the session of a transaction left open and its partitions' last stable
	 * offset moves on (docs/transactions.md).
	 */
	if (nwrites == 0 && kp_txn_idle_timeout_ms > 0 &&
		(IdleInTransactionSessionTimeout == 0 ||
		 IdleInTransactionSessionTimeout > kp_txn_idle_timeout_ms))
	{
		char		buf[32];

		snprintf(buf, sizeof(buf), "%d", kp_txn_idle_timeout_ms);
		(void) set_config_option("idle_in_transaction_session_timeout", buf,
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL,
								 true, 0, false);
	}
	if (nwrites == maxwrites)
	{
		int			newmax = maxwrites ? maxwrites * 2 : 16;

		/* the capacity once the memory is there (an ERROR of repalloc) */
		if (writes)
			writes = repalloc(writes, newmax * sizeof(KpTxnWrite));
		else
			writes = MemoryContextAlloc(TopMemoryContext, newmax * sizeof(KpTxnWrite));
		maxwrites = newmax;
	}
	writes[nwrites].partition_id = partition_id;
	writes[nwrites].producer_id = producer_id;
	writes[nwrites].subid = subid;
	nwrites++;
}

/* Decide writes of subtransaction subid (or all, if subid is Invalid). */
static void
decide_writes(SubTransactionId subid, KpTxnOutcome outcome)
{
	int			i = 0;
	bool		any = false;

	while (i < nwrites)
	{
		if (subid == InvalidSubTransactionId || writes[i].subid == subid)
		{
			kp_log_decide_txn(MyDatabaseId, writes[i].partition_id,
							  writes[i].producer_id, outcome, -1);
			writes[i] = writes[--nwrites];
			any = true;
		}
		else
			i++;
	}
	if (any)
		kp_resolver_wakeup();
}

static void
kp_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
			decide_writes(InvalidSubTransactionId, KP_TXN_COMMITTED);
			break;
		case XACT_EVENT_ABORT:
			decide_writes(InvalidSubTransactionId, KP_TXN_ABORTED);
			break;
		case XACT_EVENT_PREPARE:

			/*
			 * COMMIT/ROLLBACK PREPARED may come from anywhere: the resolver
			 * watches the commit log for these.
			 */
			nwrites = 0;
			break;
		default:
			break;
	}
}

static void
kp_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	int			i;

	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
			decide_writes(mySubid, KP_TXN_ABORTED);
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			for (i = 0; i < nwrites; i++)
				if (writes[i].subid == mySubid)
					writes[i].subid = parentSubid;
			break;
		default:
			break;
	}
}

void
kp_txn_init(void)
{
	DefineCustomBoolVariable("kafka.debug_past_commit_log",
							 "Answers as if every SQL transaction had left the commit log (testing only).",
							 NULL,
							 &kp_txn_debug_past_commit_log,
							 false,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.transaction_idle_timeout_ms",
							"How long a SQL session that produced may sit idle in its transaction.",
							"The session is ended as by idle_in_transaction_session_timeout (set "
							"for that transaction only), so its open transaction stops holding back "
							"the last stable offset.  0 disables.",
							&kp_txn_idle_timeout_ms,
							900000, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	kp_txn_coordinator_init_gucs();
	RegisterXactCallback(kp_xact_callback, NULL);
	RegisterSubXactCallback(kp_subxact_callback, NULL);
	kp_log_register_sql_outcome(kp_txn_sql_outcome);
}

/*
 * The outcome of a SQL transaction that has no marker yet, from the commit
 * log; the store's callback (kp_log_register_sql_outcome).  A transaction
 * that is neither running nor committed aborted, crashed ones included; a
 * reader's own transaction is in progress to it, as in Kafka.
 *
 * The store asks only about transactions without a marker: a decided one
 * is decided by its marker and the aborted-transaction index, because the
 * commit log forgets (src/txn/README, the commit-log horizon defect).  A
 * transaction still without a marker gets one within moments of its end
 * (the resolver; after a restart it loads every partition at once), so its
 * id is always still in the commit log.  If it is not, that is a bug: say
 * so, and answer ABORTED, because records hidden by mistake can be found in
 * the log again, while aborted records once shown cannot be unseen.
 */
static KpTxnOutcome
kp_txn_sql_outcome(int64 producer_id)
{
	FullTransactionId fxid = KpPidGetFullXid(producer_id);
	FullTransactionId next = ReadNextFullTransactionId();
	TransactionId xid = XidFromFullTransactionId(fxid);
	bool		gone;

	gone = (U64FromFullTransactionId(next) - U64FromFullTransactionId(fxid) > (UINT64CONST(1) << 31) ||
			TransactionIdPrecedes(xid, ShmemVariableCache->oldestClogXid));
	/* a running transaction is always inside the commit log */
	if (!gone && (TransactionIdIsCurrentTransactionId(xid) || TransactionIdIsInProgress(xid)))
		return KP_TXN_OPEN;
	if (gone || kp_txn_debug_past_commit_log)
	{
		ereport(LOG,
				(errmsg("kafka_pg: SQL transaction %llu has no marker and is older than the commit log",
						(unsigned long long) U64FromFullTransactionId(fxid)),
				 errdetail("Its records are treated as rolled back."),
				 errhint("This is a bug in kafka_pg; please report it.")));
		return KP_TXN_ABORTED;
	}
	return TransactionIdDidCommit(xid) ? KP_TXN_COMMITTED : KP_TXN_ABORTED;
}
