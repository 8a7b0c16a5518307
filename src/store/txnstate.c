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
 * Once a transaction has its marker, the marker decides it for every
 * reader: the ABORT marker's entry in the segment's aborted-transaction
 * index (txnindex.c, Kafka's .txnindex) is written here, in the same
 * locked step as the marker.  Until then a SQL transaction is decided by
 * the commit log, asked through the callback src/txn registers
 * (kp_log_register_sql_outcome; docs/transactions.md).
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

/* testing only: the ABORT marker's index entry fails (kafka.debug_...) */
bool		kp_debug_fail_marker_index = false;

/*
 * ERROR unless a batch of producer_id's transaction can be appended: its
 * transaction is open in the partition already, or there is room for one
 * more (KP_MAX_OPEN_TXNS).  Asked before the batch is written: refused
 * after it, the batch stayed in the log with no open transaction to decide
 * it, and read_committed readers saw it once the last stable offset passed
 * it, rolled back as it was (until 2026-12-07).
 */
void
kp_txnstate_check_room(KpPartitionState *state, int64 producer_id)
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
}

/*
 * Open a transaction of producer_id in the partition at first_offset (no-op
 * if it is open already).  ERROR if KP_MAX_OPEN_TXNS are open
 * (kp_txnstate_check_room, which the appender asks before it writes).
 */
void
kp_txnstate_add(KpPartitionState *state, int64 producer_id, int16 epoch,
				int64 first_offset)
{
	int			i;

	for (i = 0; i < state->ntxns; i++)
		if (state->txns[i].producer_id == producer_id)
			return;
	kp_txnstate_check_room(state, producer_id);
	state->txns[state->ntxns].producer_id = producer_id;
	state->txns[state->ntxns].producer_epoch = epoch;
	state->txns[state->ntxns].first_offset = first_offset;
	state->txns[state->ntxns].outcome = KP_TXN_OPEN;
	state->txns[state->ntxns].marker_epoch = -1;
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
 * The commit log, as src/txn answers for it (kp_log_register_sql_outcome).
 * Asked only about SQL transactions that have no marker yet: the sweep,
 * recovery's survivors, and readers past the last stable offset (reader.c).
 * A decided transaction with its marker is never asked: the commit log may
 * no longer know it (src/txn/README, the commit-log horizon defect).
 */
static KpSqlOutcomeCallback sql_outcome_callback = NULL;

void
kp_log_register_sql_outcome(KpSqlOutcomeCallback callback)
{
	sql_outcome_callback = callback;
}

/* OPEN if nobody registered (a reader then stops: never shows too much) */
KpTxnOutcome
kp_txnstate_sql_outcome(int64 producer_id)
{
	if (sql_outcome_callback == NULL)
		return KP_TXN_OPEN;
	return sql_outcome_callback(producer_id);
}

void
kp_log_decide_txn(Oid dboid, int64 partition_id, int64 producer_id,
				  KpTxnOutcome outcome, int16 marker_epoch)
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
			if (marker_epoch > state->txns[i].producer_epoch)
				state->txns[i].marker_epoch = marker_epoch;
			state->has_decided = true;
		}
	}
	LWLockRelease(&state->lock);
	kp_partition_unpin(state);
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
	 * A transaction deleting the partition is committing, or one that created
	 * it is running: its commit or abort record may be in the WAL already,
	 * and a marker after it would reach a standby after the segment's file is
	 * gone (KpPartitionState.no_markers).  The markers wait; if the partition
	 * stays, a later pass writes them (clearing the flag wakes the resolver).
	 */
	if (state->no_markers != 0)
		return 0;

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
			KpOpenTxn	decided = *txn;
			bool		bumped = txn->marker_epoch > txn->producer_epoch;

			batch = kp_build_control_batch(txn->producer_id,
										   bumped ? txn->marker_epoch : txn->producer_epoch,
										   txn->outcome == KP_TXN_COMMITTED ?
										   KP_CONTROL_COMMIT : KP_CONTROL_ABORT,
										   kp_now_ms(), 0, &len);
			kp_append_locked(state, &state->config, false, batch, len,
							 KP_NO_PRODUCER_ID, &res);
			pfree(batch);
			written++;
			if (bumped)
				kp_producer_note_bump(state, decided.producer_id, decided.marker_epoch,
									  res.base_offset);
			/* decided for readers once the in-sync replicas have the marker */
			kp_partition_hold_lso(state, decided.first_offset, res.base_offset);
			kp_txnstate_remove(state, i);
			kp_txnstate_compute_lso(state);

			/*
			 * An ABORT marker's entry goes into the index of the segment that
			 * received the marker, before anything else is appended.  Should
			 * this fail, the partition is reloaded, and recovery restores the
			 * entry from the marker (recovery.c).
			 */
			if (decided.outcome == KP_TXN_ABORTED)
			{
				KpTxnIndexEntry entry;

				entry.producer_id = decided.producer_id;
				entry.first_offset = decided.first_offset;
				entry.last_offset = res.base_offset;
				entry.last_stable_offset = state->last_stable_offset;
				PG_TRY();
				{
					Relation	segrel;

					if (kp_debug_fail_marker_index)
						ereport(ERROR,
								(errmsg("kafka_pg: the aborted-transaction index entry of producer %lld in partition %lld fails, as kafka.debug_fail_marker_index asks",
										(long long) entry.producer_id,
										(long long) state->key.partition_id)));
					segrel = kp_segment_open(state->active_relnode);
					kp_txnindex_add(segrel, &entry);
					kp_segment_close(segrel);
				}
				PG_CATCH();
				{
					state->loaded = false;
					PG_RE_THROW();
				}
				PG_END_TRY();
			}
			continue;
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
		kp_partition_unpin(entry);

		for (i = 0; i < npids; i++)
		{
			KpTxnOutcome outcome = kp_txnstate_sql_outcome(pids[i]);

			if (outcome != KP_TXN_OPEN)
				kp_log_decide_txn(MyDatabaseId, partition_id, pids[i], outcome, -1);
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

		/* no topic lock here: a partition not loaded is left to a loader */
		KpPartitionState *state = kp_partition_lock_loaded(partition_id);

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
