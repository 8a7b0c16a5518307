/*-------------------------------------------------------------------------
 *
 * txnstate.c
 *	  Transactions open in a partition, the last stable offset, and the
 *	  COMMIT/ABORT markers that close them (KIP-98).
 *
 * A partition's state lists the transactions that have written to it and
 * have no marker yet (at most KP_MAX_OPEN_TXNS), each with the offset of
 * its first batch and, once known, its outcome.  The last stable offset
 * (LSO) is the first offset of the earliest of them, else the log end
 * offset; read_committed wire readers stop there (reader.c).
 *
 * A transaction is opened by the append of its first batch (append.c) and
 * decided by kp_log_decide_txn (a backend's commit/abort callback, txn/:
 * no I/O, no ERROR), by the resolver's sweep of the commit log, or by
 * recovery.  A decided transaction stays in the list, holding the LSO,
 * until its marker is appended: by the resolver
 * (kp_log_write_pending_markers) or by the next append to the partition,
 * whichever comes first.  The marker takes an offset, as in Kafka.
 *
 * For SQL transactions the commit log is the source of truth
 * (kp_sql_xact_outcome; docs/transactions.md); the marker is for wire
 * clients.  The durable aborted-transaction index of issue 8 (Kafka's
 * .txnindex) will be written next to the ABORT marker, here.
 *
 * Everything that changes the list runs under the partition's appender
 * lock; the commit log is consulted outside it (README, "Long waits").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/procarray.h"
#include "storage/smgr.h"

#include "codec/codec.h"
#include "store/store_int.h"

/*
 * Open a transaction of producer_id in the partition at first_offset (no-op
 * if it is open already).  ERROR if KP_MAX_OPEN_TXNS are open.
 */
void
kp_txnstate_add(KpPartitionState *state, int64 producer_id, int16 epoch,
				int64 first_offset)
{
	int			i;

	for (i = 0; i < state->ntxns; i++)
		if (state->txns[i].producer_id == producer_id)
			return;
	if (state->ntxns >= KP_MAX_OPEN_TXNS)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many transactions open on one partition"),
				 errdetail("At most %d transactions can write to a partition at once.",
						   KP_MAX_OPEN_TXNS)));
	state->txns[state->ntxns].producer_id = producer_id;
	state->txns[state->ntxns].producer_epoch = epoch;
	state->txns[state->ntxns].first_offset = first_offset;
	state->txns[state->ntxns].outcome = KP_TXN_OPEN;
	state->ntxns++;
}

/* Remove the i-th open transaction (its marker is written). */
void
kp_txnstate_remove(KpPartitionState *state, int i)
{
	state->txns[i] = state->txns[state->ntxns - 1];
	state->ntxns--;
}

/* LSO: first offset of the earliest transaction without a marker (KIP-98). */
void
kp_txnstate_compute_lso(KpPartitionState *state)
{
	int64		lso = state->log_end_offset;
	int			i;

	for (i = 0; i < state->ntxns; i++)
		lso = Min(lso, state->txns[i].first_offset);

	/*
	 * Never below the log start: an open transaction whose first batch was
	 * deleted (DeleteRecords, retention) holds the offsets from the log start
	 * on, as Kafka's UnifiedLog.maybeIncrementFirstUnstableOffset clamps it.
	 */
	state->last_stable_offset = Max(lso, state->log_start_offset);
}

/*
 * Outcome of a SQL transaction's batches from the commit log.  A transaction
 * that is neither running nor committed aborted, crashed ones included.
 *
 * Known defect (issue 8): once the commit log no longer covers the xid it
 * answers COMMITTED, which would show a rolled-back transaction's batches
 * again; the aborted-transaction index is the fix (src/txn/README).
 */
KpTxnOutcome
kp_sql_xact_outcome(int64 producer_id)
{
	FullTransactionId fxid = KpPidGetFullXid(producer_id);
	FullTransactionId next = ReadNextFullTransactionId();
	TransactionId xid = XidFromFullTransactionId(fxid);

	/*
	 * Older than the commit log keeps (or than 32-bit xids can tell apart):
	 * its marker was written long ago, readers have it; see
	 * docs/transactions.md.
	 */
	if (U64FromFullTransactionId(next) - U64FromFullTransactionId(fxid) > (UINT64CONST(1) << 31) ||
		TransactionIdPrecedes(xid, ShmemVariableCache->oldestClogXid))
		return KP_TXN_COMMITTED;
	if (TransactionIdIsCurrentTransactionId(xid) || TransactionIdIsInProgress(xid))
		return KP_TXN_OPEN;
	return TransactionIdDidCommit(xid) ? KP_TXN_COMMITTED : KP_TXN_ABORTED;
}

void
kp_log_decide_txn(Oid dboid, int64 partition_id, int64 producer_id,
				  KpTxnOutcome outcome)
{
	KpPartitionState *state = kp_partition_find(dboid, partition_id);
	int			i;

	if (state == NULL)
		return;
	LWLockAcquire(&state->lock, LW_EXCLUSIVE);
	for (i = 0; i < state->ntxns; i++)
	{
		if (state->txns[i].producer_id == producer_id &&
			state->txns[i].outcome == KP_TXN_OPEN)
		{
			state->txns[i].outcome = outcome;
			state->has_decided = true;
		}
	}
	LWLockRelease(&state->lock);
}

/*
 * Append the markers of the partition's decided transactions, with its
 * appender lock held.  Returns how many were written.  A partition whose
 * storage is gone (its topic was deleted, or it was created by a
 * transaction that aborted) just forgets its transactions.
 */
int
kp_txnstate_write_markers(KpPartitionState *state)
{
	int			written = 0;
	int			i = 0;
	bool		exists = OidIsValid(state->active_relnode);

	/*
	 * A dropped segment's file is emptied when the dropping (or, for a
	 * partition created by an aborted transaction, the creating) transaction
	 * ends: no blocks means no partition to write to.
	 */
	if (exists)
	{
		Relation	rel = kp_segment_open(state->active_relnode);

		exists = smgrexists(RelationGetSmgr(rel), MAIN_FORKNUM) &&
			smgrnblocks(RelationGetSmgr(rel), MAIN_FORKNUM) > 0;
		kp_segment_close(rel);
	}

	while (i < state->ntxns)
	{
		KpOpenTxn  *txn = &state->txns[i];
		char	   *batch;
		size_t		len;
		KpAppendResult res;

		if (txn->outcome == KP_TXN_OPEN)
		{
			i++;
			continue;
		}
		if (exists)
		{
			batch = kp_build_control_batch(txn->producer_id, txn->producer_epoch,
										   txn->outcome == KP_TXN_COMMITTED ?
										   KP_CONTROL_COMMIT : KP_CONTROL_ABORT,
										   kp_now_ms(), 0, &len);
			kp_append_locked(state, &state->config, false, batch, len,
							 KP_NO_PRODUCER_ID, &res);
			pfree(batch);
			written++;
		}
		kp_txnstate_remove(state, i);
	}
	state->has_decided = false;
	kp_txnstate_compute_lso(state);
	return written;
}

static bool
has_open_txns(const KpPartitionState *state)
{
	return state->ntxns > 0;
}

/*
 * Decide, from the commit log, open SQL transactions of this database that
 * are no longer running: prepared transactions finished elsewhere, and any
 * whose backend could not run its callbacks.  The resolver calls it now and
 * then; it costs a scan of the partition table.  The commit log is asked
 * with no lock of ours held (it may read pg_xact from disk); an outcome
 * found is final, so it is applied afterwards as a backend's commit
 * callback would apply it.
 */
void
kp_log_sweep_sql_txns(void)
{
	List	   *ids = kp_partition_ids(has_open_txns);
	ListCell   *lc;

	foreach(lc, ids)
	{
		int64		partition_id = *(int64 *) lfirst(lc);
		KpPartitionState *entry = kp_partition_find(MyDatabaseId, partition_id);
		int64		pids[KP_MAX_OPEN_TXNS];
		int			npids = 0;
		int			i;

		if (entry == NULL)
			continue;
		LWLockAcquire(&entry->lock, LW_SHARED);
		for (i = 0; i < entry->ntxns && entry->loaded; i++)
		{
			KpOpenTxn  *txn = &entry->txns[i];

			if (txn->outcome == KP_TXN_OPEN && KpPidIsSqlXact(txn->producer_id))
				pids[npids++] = txn->producer_id;
		}
		LWLockRelease(&entry->lock);

		for (i = 0; i < npids; i++)
		{
			KpTxnOutcome outcome = kp_sql_xact_outcome(pids[i]);

			if (outcome != KP_TXN_OPEN)
				kp_log_decide_txn(MyDatabaseId, partition_id, pids[i], outcome);
		}
	}
	list_free_deep(ids);
}

static bool
has_decided_txns(const KpPartitionState *state)
{
	return state->has_decided;
}

/*
 * Write the COMMIT/ABORT marker of every decided transaction in this
 * database's partitions (the resolver's job; any backend may do it).
 */
int
kp_log_write_pending_markers(void)
{
	List	   *todo = kp_partition_ids(has_decided_txns);
	ListCell   *lc;
	int			written = 0;

	/* a marker may roll a segment: kafka.store is read before any lock */
	if (todo != NIL)
		(void) kp_directory_relnode();
	foreach(lc, todo)
	{
		int64		partition_id = *(int64 *) lfirst(lc);
		KpPartitionState *state = kp_partition_lock(partition_id, false);

		if (state == NULL)
			continue;
		written += kp_txnstate_write_markers(state);
		kp_partition_unlock(state);
	}
	if (written > 0)
		kp_notify_append_waiters();
	list_free_deep(todo);
	return written;
}
