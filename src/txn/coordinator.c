/*-------------------------------------------------------------------------
 *
 * coordinator.c
 *	  The transaction coordinator of wire producers: transactional ids,
 *	  producer epochs, the transaction state machine, timeouts (KIP-98).
 *
 * The state of each transactional id is a row in the catalog (src/catalog/
 * transactions.c moves the rows; the rules are here), so it is durable,
 * replicated and backed up, and every listener worker is the same
 * coordinator: each operation takes the row's lock (SELECT ... FOR UPDATE).
 *
 * States are Kafka's (TransactionState):
 *
 *	 Empty --AddPartitions/AddOffsets--> Ongoing --EndTxn--> PrepareCommit
 *	   ^                                   |                 PrepareAbort
 *	   |                         timeout / fence                  |
 *	   |                                   v                      v
 *	   +--InitProducerId (epoch + 1)-- CompleteCommit/CompleteAbort <-+
 *	                                   (markers written)
 *
 * Ending a transaction takes two PostgreSQL transactions, as Kafka's
 * coordinator writes PrepareCommit to its log before any marker: first the
 * decision (Prepare*, and for a commit the pending offsets become committed
 * offsets in the same PostgreSQL transaction: atomically with the
 * decision), committed; then kp_txn_complete writes the markers to every
 * partition of the transaction through the store's one marker path
 * (kp_log_decide_txn + kp_log_write_pending_markers) and records Complete*.
 * A crash between the two leaves Prepare*, which the resolver's upkeep
 * completes; writing a marker is idempotent (a partition whose transaction
 * already has its marker has nothing left to decide).  Markers are never
 * written before the decision is durable: a marker is not undone if the
 * PostgreSQL transaction around it aborts.
 *
 * Fencing (KIP-98): InitProducerId of an existing transactional id bumps the
 * epoch; an older epoch is refused everywhere (PRODUCER_FENCED, or
 * INVALID_PRODUCER_EPOCH where the request version predates it — the
 * caller maps it).  An Ongoing transaction is aborted first, with the epoch
 * bumped once more, as Kafka does, so its producer is fenced even if it
 * never calls again.  A transaction Ongoing longer than its timeout is
 * aborted the same way by the resolver's upkeep.
 *
 * Transactions version 2 (KIP-890 part 2; EndTxn v5+, TxnOffsetCommit v5+,
 * Produce v12+): every end bumps the epoch, and Produce and TxnOffsetCommit
 * add their partition or group themselves (end_version2,
 * kp_txn_check_produce).
 *
 * Produce of a transactional batch is checked here (KIP-890 part 1, the
 * server-side defence of a transactions-version-1 broker): the producer id
 * must map to a transactional id at the batch's epoch, Ongoing, with the
 * partition added.  The check holds a share lock on the producer id until
 * the request's transaction ends; fencing and timeouts take it exclusively,
 * so a batch is either in the log before the abort's markers or refused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "catalog/kafka_catalog.h"
#include "common/subxact.h"
#include "group/group.h"
#include "protocol/errors.h"
#include "store/store.h"
#include "txn/txn.h"

/* kafka.transaction_max_timeout_ms: Kafka's transaction.max.timeout.ms */
int			kp_transaction_max_timeout_ms = 900000;

/* kafka.transactional_id_expiration_ms: Kafka's transactional.id.expiration.ms */
int			kp_transactional_id_expiration_ms = 604800000;

/* the advisory lock class of producer ids ('KT'); the store uses 'KP' */
#define KP_TXN_LOCK_CLASS	0x4B54

/* Kafka: an epoch that cannot be bumped again gets a new producer id */
#define KP_MAX_EPOCH		(PG_INT16_MAX - 1)

static void
lock_producer(int64 producer_id, LOCKMODE mode)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) ((uint64) producer_id >> 32),
						 (uint32) producer_id, KP_TXN_LOCK_CLASS);
	(void) LockAcquire(&tag, mode, false, false);
}

static bool
state_is(const KpTxnRow *row, const char *state)
{
	return strcmp(row->state, state) == 0;
}

static bool
is_preparing(const KpTxnRow *row)
{
	return state_is(row, "PrepareCommit") || state_is(row, "PrepareAbort");
}

/*
 * A partition or group was added: the transaction is under way, begun now
 * if it was not (Empty, Complete*), which starts its timeout.
 */
static void
begin_if_none(KpTxnRow *row)
{
	if (state_is(row, "Ongoing"))
		return;
	strlcpy(row->state, "Ongoing", sizeof(row->state));
	kp_cat_txn_update(row, true, false);
}

/*
 * Decide the transaction: PrepareCommit or PrepareAbort.  A commit turns the
 * pending offsets into committed offsets now, in this PostgreSQL
 * transaction; an abort drops them.  The markers follow in
 * kp_txn_complete, after this has committed.
 */
static void
prepare_end(KpTxnRow *row, bool commit, bool start_now)
{
	if (commit)
	{
		KpTxnOffset *offsets;
		int			n = kp_cat_txn_offsets(row->transactional_id, &offsets);
		int			i;

		/* one call of the group's offset writer per group, in group order */
		for (i = 0; i < n;)
		{
			KpCommitter committer = {KP_COMMIT_TRANSACTION, offsets[i].group_id, NULL, NULL, -1};
			KpOffsetToCommit *items = palloc0(sizeof(KpOffsetToCommit) * n);
			int			k = 0;
			int			first = i;

			for (; i < n && strcmp(offsets[i].group_id, offsets[first].group_id) == 0; i++, k++)
			{
				items[k].topic = offsets[i].topic;
				items[k].partition = offsets[i].partition;
				items[k].offset = offsets[i].offset;
				items[k].leader_epoch = offsets[i].leader_epoch;
				items[k].metadata = offsets[i].metadata;
			}
			(void) kp_group_commit_offsets(&committer, k, items);
		}
	}
	kp_cat_txn_clear(row->transactional_id, false);
	strlcpy(row->state, commit ? "PrepareCommit" : "PrepareAbort", sizeof(row->state));
	kp_cat_txn_update(row, start_now, false);
}

/* Abort an Ongoing transaction and fence its producer (epoch + 1). */
static void
fence_and_abort(KpTxnRow *row)
{
	lock_producer(row->producer_id, ExclusiveLock);
	if (row->producer_epoch < KP_MAX_EPOCH)
		row->producer_epoch++;
	prepare_end(row, false, false);
}

/* ---------------------------------------------------------------------
 * InitProducerId
 * ---------------------------------------------------------------------
 */

int16
kp_txn_init_producer(const char *transactional_id, int32 timeout_ms,
					 int64 expected_producer_id, int16 expected_epoch,
					 int64 *producer_id, int16 *producer_epoch, bool *complete)
{
	KpTxnRow	row;

	*producer_id = -1;
	*producer_epoch = -1;
	*complete = false;
	if (timeout_ms <= 0 || timeout_ms > kp_transaction_max_timeout_ms)
		return KP_ERR_INVALID_TRANSACTION_TIMEOUT;
	if (!kp_cat_txn_get(transactional_id, true, &row))
	{
		kp_cat_txn_create(transactional_id, kp_catalog_next_producer_id(), timeout_ms, &row);
		*producer_id = row.producer_id;
		*producer_epoch = row.producer_epoch;
		return KP_ERR_NONE;
	}

	/*
	 * KIP-360: a producer that asks with its id and epoch resumes only if
	 * they are still the current ones, or the epoch just before a bump that
	 * aborted its transaction (a timeout, or this very request's fence on its
	 * first round: Kafka's lastProducerEpoch).
	 */
	if (expected_producer_id >= 0 &&
		(expected_producer_id != row.producer_id ||
		 (expected_epoch != row.producer_epoch &&
		  !(expected_epoch == row.producer_epoch - 1 &&
			(state_is(&row, "PrepareAbort") || state_is(&row, "CompleteAbort"))))))
		return KP_ERR_PRODUCER_FENCED;

	if (is_preparing(&row))
	{
		*complete = true;
		return KP_ERR_CONCURRENT_TRANSACTIONS;
	}
	if (state_is(&row, "Ongoing"))
	{
		/* the open transaction of the old epoch is aborted first */
		fence_and_abort(&row);
		*complete = true;
		return KP_ERR_CONCURRENT_TRANSACTIONS;
	}

	/* Empty, CompleteCommit, CompleteAbort: a new epoch fences the old one */
	if (row.producer_epoch >= KP_MAX_EPOCH)
	{
		row.producer_id = kp_catalog_next_producer_id();
		row.producer_epoch = 0;
	}
	else
		row.producer_epoch++;
	strlcpy(row.state, "Empty", sizeof(row.state));
	row.timeout_ms = timeout_ms;
	kp_cat_txn_update(&row, false, true);
	*producer_id = row.producer_id;
	*producer_epoch = row.producer_epoch;
	return KP_ERR_NONE;
}

/*
 * The checks every request of a transactional producer passes: the id is
 * known and maps to this producer id, at this epoch.  Locks the row.
 */
static int16
check_producer(const char *transactional_id, int64 producer_id, int16 producer_epoch,
			   KpTxnRow *row)
{
	if (transactional_id == NULL || !kp_cat_txn_get(transactional_id, true, row))
		return KP_ERR_INVALID_PRODUCER_ID_MAPPING;
	if (row->producer_id != producer_id)
		return KP_ERR_INVALID_PRODUCER_ID_MAPPING;
	if (row->producer_epoch != producer_epoch)
		return KP_ERR_PRODUCER_FENCED;
	return KP_ERR_NONE;
}

/* ---------------------------------------------------------------------
 * AddPartitionsToTxn, AddOffsetsToTxn
 * ---------------------------------------------------------------------
 */

int16
kp_txn_add_partitions(const char *transactional_id, int64 producer_id, int16 producer_epoch,
					  int n, const KpTxnPartition *partitions, bool verify_only,
					  int16 *partition_errors)
{
	KpTxnRow	row;
	int16		code = check_producer(transactional_id, producer_id, producer_epoch, &row);
	int			i;

	if (code == KP_ERR_NONE && is_preparing(&row))
		code = KP_ERR_CONCURRENT_TRANSACTIONS;
	if (code != KP_ERR_NONE)
	{
		for (i = 0; i < n; i++)
			partition_errors[i] = code;
		return code;
	}
	if (verify_only)
	{
		/*
		 * KIP-890 part 1 (v4+): is each partition in the ongoing transaction?
		 * One that is not is TRANSACTION_ABORTABLE, as Kafka 4.4 answers.
		 */
		KpTxnPartition *in;
		int			nin = kp_cat_txn_partitions(transactional_id, &in);

		for (i = 0; i < n; i++)
		{
			int			k;

			partition_errors[i] = KP_ERR_TRANSACTION_ABORTABLE;
			if (!state_is(&row, "Ongoing"))
				continue;
			for (k = 0; k < nin; k++)
				if (strcmp(in[k].topic, partitions[i].topic) == 0 &&
					in[k].partition == partitions[i].partition)
					partition_errors[i] = KP_ERR_NONE;
		}
		return KP_ERR_NONE;
	}
	for (i = 0; i < n; i++)
	{
		kp_cat_txn_add_partition(transactional_id, partitions[i].topic,
								 partitions[i].partition, partitions[i].partition_id);
		partition_errors[i] = KP_ERR_NONE;
	}
	begin_if_none(&row);
	return KP_ERR_NONE;
}

int16
kp_txn_add_offsets(const char *transactional_id, int64 producer_id, int16 producer_epoch,
				   const char *group_id)
{
	KpTxnRow	row;
	int16		code = check_producer(transactional_id, producer_id, producer_epoch, &row);

	if (code != KP_ERR_NONE)
		return code;
	if (is_preparing(&row))
		return KP_ERR_CONCURRENT_TRANSACTIONS;
	if (group_id == NULL || group_id[0] == '\0')
		return KP_ERR_INVALID_GROUP_ID;
	kp_cat_txn_add_group(transactional_id, group_id);
	begin_if_none(&row);
	return KP_ERR_NONE;
}

/* ---------------------------------------------------------------------
 * TxnOffsetCommit
 * ---------------------------------------------------------------------
 */

int16
kp_txn_offset_commit(const char *transactional_id, int64 producer_id, int16 producer_epoch,
					 const char *group_id, const char *member_id,
					 const char *group_instance_id, int32 generation_id,
					 bool add_group, int n, const KpTxnOffset *offsets)
{
	KpTxnRow	row;
	int16		code = check_producer(transactional_id, producer_id, producer_epoch, &row);
	char	  **groups;
	int			ngroups;
	bool		added = false;
	int			i;

	/* TxnOffsetCommit has no PRODUCER_FENCED: Java maps this one to it */
	if (code == KP_ERR_PRODUCER_FENCED)
		return KP_ERR_INVALID_PRODUCER_EPOCH;
	if (code != KP_ERR_NONE)
		return code;
	if (is_preparing(&row))
		return KP_ERR_CONCURRENT_TRANSACTIONS;
	ngroups = kp_cat_txn_groups(transactional_id, &groups);
	for (i = 0; i < ngroups; i++)
		if (strcmp(groups[i], group_id) == 0)
			added = true;

	/*
	 * KIP-890 part 1: the group must have been added (AddOffsetsToTxn); part
	 * 2 (TxnOffsetCommit v5+) adds it here, beginning a transaction if none
	 * is under way, as AddOffsetsToTxn would.
	 */
	if (!added && add_group && group_id != NULL && group_id[0] != '\0')
	{
		kp_cat_txn_add_group(transactional_id, group_id);
		begin_if_none(&row);
		added = true;
	}
	if (!state_is(&row, "Ongoing") || !added)
		return KP_ERR_INVALID_TXN_STATE;

	/*
	 * Fenced by the group as OffsetCommit is, when the member says who it is
	 * (the wire fence of the one offset writer, with nothing to write).
	 */
	if ((member_id && member_id[0]) || generation_id >= 0)
	{
		KpCommitter committer = {KP_COMMIT_WIRE, group_id, member_id, group_instance_id,
		generation_id};

		code = kp_group_commit_offsets(&committer, 0, NULL);
		if (code != KP_ERR_NONE)
			return code;
	}
	else
	{
		/*
		 * No member: not fenced (Kafka takes a transaction's offsets without
		 * a generation even while the group has members), and the group is
		 * made if it does not exist, as Kafka makes a simple group.
		 */
		KpCommitter committer = {KP_COMMIT_TRANSACTION, group_id, NULL, NULL, -1};

		(void) kp_group_commit_offsets(&committer, 0, NULL);
	}
	for (i = 0; i < n; i++)
		kp_cat_txn_put_offset(transactional_id, &offsets[i]);
	return KP_ERR_NONE;
}

bool
kp_txn_offsets_pending(const char *group_id, const char *topic, int32 partition)
{
	return kp_cat_txn_offsets_pending(group_id, topic, partition);
}

/* ---------------------------------------------------------------------
 * EndTxn and completing a decided transaction
 * ---------------------------------------------------------------------
 */

/*
 * Transactions version 2 (KIP-890 part 2): every end of a transaction bumps
 * the producer's epoch, and the producer goes on with the epoch the EndTxn
 * answers, so a late batch or request of the ended transaction is fenced.
 * An epoch that cannot be bumped again (32766) goes to 32767, which only the
 * decided transaction keeps, and the producer goes on with a new producer id
 * at epoch 0 (next_producer_id, taken when the markers are written).
 */
static void
bump_for_end(KpTxnRow *row)
{
	if (row->producer_epoch >= KP_MAX_EPOCH)
		row->next_producer_id = kp_catalog_next_producer_id();
	row->producer_epoch++;
}

/* The producer id and epoch the producer goes on with: the EndTxn's answer. */
static void
continues_with(const KpTxnRow *row, int64 *producer_id, int16 *epoch)
{
	*producer_id = row->next_producer_id >= 0 ? row->next_producer_id : row->producer_id;
	*epoch = row->next_producer_id >= 0 ? 0 : row->producer_epoch;
}

/*
 * End with an epoch bump, Kafka's transactions version 2 rules
 * (TransactionCoordinator.endTransaction): an EndTxn of the epoch before the
 * current one is a retry of an end that was done (or is being done); an
 * abort with no transaction under way (Empty, Complete*) is allowed, and
 * bumps the epoch: a producer that cannot tell whether a Produce added a
 * partition aborts to be sure.
 *
 *				   abort: retry / current	commit: retry / current
 *	 Empty			 PRODUCER_FENCED / bump	  PRODUCER_FENCED / INVALID_TXN_STATE
 *	 CompleteAbort	 NONE / bump			  INVALID_TXN_STATE / INVALID_TXN_STATE
 *	 CompleteCommit	 INVALID_TXN_STATE / bump NONE / INVALID_TXN_STATE
 */
static int16
end_version2(KpTxnRow *row, int64 producer_id, int16 producer_epoch, bool commit,
			 bool *complete)
{
	/* a retry of the end that moved the producer to a new id */
	bool		retry_on_new_id = row->producer_id != producer_id &&
	row->previous_producer_id == producer_id && producer_epoch == KP_MAX_EPOCH &&
	row->producer_epoch == 0;
	bool		retry = retry_on_new_id ||
	(row->producer_id == producer_id && row->producer_epoch == producer_epoch + 1);
	bool		current = row->producer_id == producer_id && row->producer_epoch == producer_epoch;
	bool		ongoing = state_is(row, "Ongoing");

	if (row->producer_id != producer_id && !retry_on_new_id)
		return KP_ERR_INVALID_PRODUCER_ID_MAPPING;
	if (is_preparing(row) ? !retry :
		(ongoing || state_is(row, "Empty")) ? !current : !(retry || current))
		return KP_ERR_PRODUCER_FENCED;
	if (is_preparing(row))
	{
		if (!state_is(row, commit ? "PrepareCommit" : "PrepareAbort"))
			return KP_ERR_INVALID_TXN_STATE;
		*complete = true;
		return KP_ERR_CONCURRENT_TRANSACTIONS;
	}
	if (retry)
		return state_is(row, commit ? "CompleteCommit" : "CompleteAbort") ?
			KP_ERR_NONE : KP_ERR_INVALID_TXN_STATE;
	if (!ongoing && commit)
		return KP_ERR_INVALID_TXN_STATE;

	/* Ongoing, or an abort of none (no markers: no partition was added) */
	lock_producer(row->producer_id, ExclusiveLock);
	bump_for_end(row);
	prepare_end(row, commit, !ongoing);
	*complete = true;
	return KP_ERR_NONE;
}

/*
 * EndTxn.  version2: the request is of transactions version 2 (EndTxn v5+),
 * whose end bumps the epoch.  *next_producer_id, *next_epoch: what the
 * producer goes on with (-1 when refused).
 */
int16
kp_txn_end(const char *transactional_id, int64 producer_id, int16 producer_epoch,
		   bool commit, bool version2, bool *complete, int64 *next_producer_id,
		   int16 *next_epoch)
{
	KpTxnRow	row;
	int16		code;

	*complete = false;
	*next_producer_id = -1;
	*next_epoch = -1;
	if (version2)
	{
		if (transactional_id == NULL || !kp_cat_txn_get(transactional_id, true, &row))
			return KP_ERR_INVALID_PRODUCER_ID_MAPPING;
		code = end_version2(&row, producer_id, producer_epoch, commit, complete);
		if (code == KP_ERR_NONE)
			continues_with(&row, next_producer_id, next_epoch);
		return code;
	}
	code = check_producer(transactional_id, producer_id, producer_epoch, &row);
	if (code != KP_ERR_NONE)
		return code;
	*next_producer_id = producer_id;
	*next_epoch = producer_epoch;
	if (state_is(&row, "Ongoing"))
	{
		lock_producer(row.producer_id, ExclusiveLock);
		prepare_end(&row, commit, false);
		*complete = true;
		return KP_ERR_NONE;
	}
	/* a retry of an EndTxn that was done, or is being done */
	if (state_is(&row, commit ? "CompleteCommit" : "CompleteAbort"))
		return KP_ERR_NONE;
	if (state_is(&row, commit ? "PrepareCommit" : "PrepareAbort"))
	{
		*complete = true;
		return KP_ERR_CONCURRENT_TRANSACTIONS;
	}
	return KP_ERR_INVALID_TXN_STATE;
}

/*
 * Write the markers of a decided transaction (PrepareCommit or
 * PrepareAbort) to every partition it wrote to, through the store's marker
 * path, and record CompleteCommit or CompleteAbort.  Run it in a
 * PostgreSQL transaction after the one that decided; a no-op for any other
 * state.  The markers' WAL is flushed with this transaction's commit.
 */
void
kp_txn_complete(const char *transactional_id)
{
	KpTxnRow	row;
	KpTxnPartition *parts;
	KpTxnOutcome outcome;
	int			n;
	int			i;

	if (!kp_cat_txn_get(transactional_id, true, &row) || !is_preparing(&row))
		return;
	lock_producer(row.producer_id, ExclusiveLock);
	outcome = state_is(&row, "PrepareCommit") ? KP_TXN_COMMITTED : KP_TXN_ABORTED;
	n = kp_cat_txn_partitions(transactional_id, &parts);
	for (i = 0; i < n; i++)
	{
		KpLogOffsets off;

		/* the partition's state must be loaded for the decision to land */
		kp_log_offsets(parts[i].partition_id, &off);
		kp_log_decide_txn(MyDatabaseId, parts[i].partition_id, row.producer_id, outcome,
						  row.producer_epoch);
	}
	if (n > 0)
		(void) kp_log_write_pending_markers();
	kp_cat_txn_clear(transactional_id, true);
	strlcpy(row.state, outcome == KP_TXN_COMMITTED ? "CompleteCommit" : "CompleteAbort",
			sizeof(row.state));
	if (row.next_producer_id >= 0)
	{
		/* the exhausted epoch's end (bump_for_end): on with the new id */
		row.previous_producer_id = row.producer_id;
		row.producer_id = row.next_producer_id;
		row.producer_epoch = 0;
		row.next_producer_id = -1;
	}

	/*
	 * the start time stays until the next transaction or epoch, as Kafka
	 * shows it
	 */
	kp_cat_txn_update(&row, false, false);
}

/* ---------------------------------------------------------------------
 * Produce of transactional batches (KIP-890 part 1)
 * ---------------------------------------------------------------------
 */

int16
kp_txn_check_produce(int64 producer_id, int16 producer_epoch, int64 partition_id,
					 const char *add_for, const char *topic, int32 partition, bool *added)
{
	KpTxnRow	row;
	bool		in_txn;

	if (added)
		*added = false;
	/* held to the end of the request: a fence waits for this batch */
	lock_producer(producer_id, ShareLock);
	if (!kp_cat_txn_get_by_producer(producer_id, partition_id, &row, &in_txn))
		return KP_ERR_INVALID_PRODUCER_ID_MAPPING;
	if (producer_epoch != row.producer_epoch)
		return KP_ERR_INVALID_PRODUCER_EPOCH;
	if (state_is(&row, "Ongoing") && in_txn)
		return KP_ERR_NONE;
	if (add_for == NULL || strcmp(add_for, row.transactional_id) != 0)
		return KP_ERR_INVALID_TXN_STATE;

	/*
	 * Transactions version 2 (Produce v12+): the batch adds its partition to
	 * the transaction, beginning one if none is under way, as
	 * AddPartitionsToTxn would.  The row is read again under its lock (the
	 * read above takes none), if nobody holds it: EndTxn, InitProducerId and
	 * the timeouts take the row's lock and then the producer's, which this
	 * request holds, so waiting here could deadlock.  A row being changed, or
	 * a transaction being ended, is Kafka's CONCURRENT_TRANSACTIONS, which a
	 * Produce answers NOT_ENOUGH_REPLICAS: retriable for every client.
	 */
	if (!kp_cat_txn_get_unless_locked(row.transactional_id, &row))
		return KP_ERR_NOT_ENOUGH_REPLICAS;
	if (row.producer_id != producer_id)
		return KP_ERR_INVALID_PRODUCER_ID_MAPPING;
	if (producer_epoch != row.producer_epoch)
		return KP_ERR_INVALID_PRODUCER_EPOCH;
	if (is_preparing(&row))
		return KP_ERR_NOT_ENOUGH_REPLICAS;
	kp_cat_txn_add_partition(row.transactional_id, topic, partition, partition_id);
	begin_if_none(&row);
	if (added)
		*added = true;
	return KP_ERR_NONE;
}

/* ---------------------------------------------------------------------
 * Upkeep: timeouts and unfinished completions (the resolver, once a second)
 * ---------------------------------------------------------------------
 */

/* Run fn(transactional_id) in a subtransaction; an ERROR is logged and swallowed. */
static bool
guarded(void (*fn) (void *), const char *transactional_id)
{
	ErrorData  *edata = kp_try_subxact(fn, (void *) transactional_id);

	if (edata == NULL)
		return true;
	ereport(LOG,
			(errmsg("kafka_pg: transaction coordinator upkeep of \"%s\" failed: %s",
					transactional_id, edata->message)));
	FreeErrorData(edata);
	return false;
}

static void
complete_fn(void *transactional_id)
{
	kp_txn_complete((const char *) transactional_id);
}

static void
time_out(const char *transactional_id)
{
	KpTxnRow	row;

	/* again under the row lock: it may have ended meanwhile */
	if (!kp_cat_txn_get(transactional_id, true, &row) || !state_is(&row, "Ongoing"))
		return;
	ereport(LOG,
			(errmsg("kafka_pg: aborting transaction of transactional id \"%s\" (producer id %lld, epoch %d): open longer than its timeout of %d ms",
					transactional_id, (long long) row.producer_id, row.producer_epoch,
					row.timeout_ms)));
	fence_and_abort(&row);
}

static void
time_out_fn(void *transactional_id)
{
	time_out((const char *) transactional_id);
}

/*
 * Complete every decided transaction (those a crash or an error left
 * between decision and markers), then decide ABORT for every transaction
 * Ongoing past its timeout, fencing its producer; those complete at the
 * next call, after this PostgreSQL transaction has committed.
 */
void
kp_txn_upkeep(void)
{
	KpTxnRow   *rows;
	int			n;
	int			i;

	if (!OidIsValid(get_relname_relid("transactions", get_namespace_oid("kafka", true))))
		return;
	n = kp_cat_txn_list(KP_TXN_LIST_PREPARED, &rows);
	for (i = 0; i < n; i++)
		(void) guarded(complete_fn, rows[i].transactional_id);
	n = kp_cat_txn_list(KP_TXN_LIST_TIMED_OUT, &rows);
	for (i = 0; i < n; i++)
		(void) guarded(time_out_fn, rows[i].transactional_id);
	/* ids unused for transactional.id.expiration.ms are forgotten, as Kafka */
	n = kp_cat_txn_expire(kp_transactional_id_expiration_ms);
	if (n > 0)
		ereport(LOG,
				(errmsg("kafka_pg: forgot %d transactional ids unused for %d ms", n,
						kp_transactional_id_expiration_ms)));
}

/* ---------------------------------------------------------------------
 * Describing
 * ---------------------------------------------------------------------
 */

bool
kp_txn_describe(const char *transactional_id, KpTxnRow *row, int *npartitions,
				KpTxnPartition **partitions, int *ngroups, char ***groups)
{
	if (!kp_cat_txn_get(transactional_id, false, row))
		return false;
	*npartitions = kp_cat_txn_partitions(transactional_id, partitions);
	*ngroups = kp_cat_txn_groups(transactional_id, groups);
	return true;
}

int
kp_txn_list(KpTxnRow **rows)
{
	return kp_cat_txn_list(KP_TXN_LIST_ALL, rows);
}

/* ---------------------------------------------------------------------
 * Settings
 * ---------------------------------------------------------------------
 */

void
kp_txn_coordinator_init_gucs(void)
{
	DefineCustomIntVariable("kafka.transaction_max_timeout_ms",
							"The longest transaction.timeout.ms a transactional producer may ask for.",
							"Kafka's transaction.max.timeout.ms: InitProducerId asking for more is "
							"refused with INVALID_TRANSACTION_TIMEOUT.",
							&kp_transaction_max_timeout_ms,
							900000, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.transactional_id_expiration_ms",
							"How long a transactional id with no transaction under way is kept unused.",
							"Kafka's transactional.id.expiration.ms: the resolver then forgets it, "
							"and its next InitProducerId starts with a new producer id.",
							&kp_transactional_id_expiration_ms,
							604800000, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
}
