/*-------------------------------------------------------------------------
 *
 * transactions.c
 *	  The rows of the transaction coordinator: the only code that reads or
 *	  writes kafka.transactions, transaction_partitions, transaction_groups
 *	  and transaction_offsets.
 *
 * One row per transactional id (Kafka's __transaction_state record): its
 * producer id and epoch, state, timeout and when its transaction began;
 * beside it the partitions and groups of the current transaction and the
 * offsets it commits.  Which changes are allowed is decided by
 * src/txn/coordinator.c, the one caller of the writers here; this file only
 * moves rows.  Results are allocated in the caller's memory context.
 *
 * Being catalog tables, the state is durable with the transaction that
 * writes it, replicated to standbys and in every base backup.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "catalog/catalog_spi.h"
#include "catalog/kafka_catalog.h"

#define ROW_COLUMNS \
	"transactional_id, producer_id, producer_epoch, state, timeout_ms, " \
	"(extract(epoch from txn_start_time) * 1000)::bigint, " \
	"(extract(epoch from last_update_time) * 1000)::bigint, " \
	"next_producer_id, previous_producer_id"

static void
run(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls)
{
	int			ret;

	ret = kp_spi_execute_with_args(sql, nargs, types, values, nulls, false, 0);
	if (ret < 0)
		elog(ERROR, "kafka_pg transactions catalog: statement failed (%d): %s", ret, sql);
}

static void
spi_begin(void)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

static char *
text_col(HeapTuple tup, TupleDesc desc, int col, MemoryContext cxt)
{
	char	   *v = SPI_getvalue(tup, desc, col);

	return v ? MemoryContextStrdup(cxt, v) : NULL;
}

static int64
int_col(HeapTuple tup, TupleDesc desc, int col, int64 if_null)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);
	Oid			type = SPI_gettypeid(desc, col);

	if (isnull)
		return if_null;
	if (type == INT2OID)
		return DatumGetInt16(d);
	if (type == INT4OID)
		return DatumGetInt32(d);
	return DatumGetInt64(d);
}

/* The row of SPI_tuptable's i-th tuple (ROW_COLUMNS first). */
static void
read_row(int i, KpTxnRow *row, MemoryContext cxt)
{
	HeapTuple	tup = SPI_tuptable->vals[i];
	TupleDesc	desc = SPI_tuptable->tupdesc;
	char	   *state = SPI_getvalue(tup, desc, 4);

	row->transactional_id = text_col(tup, desc, 1, cxt);
	row->producer_id = int_col(tup, desc, 2, -1);
	row->producer_epoch = (int16) int_col(tup, desc, 3, -1);
	strlcpy(row->state, state ? state : "", sizeof(row->state));
	row->timeout_ms = (int32) int_col(tup, desc, 5, 0);
	row->txn_start_ms = int_col(tup, desc, 6, -1);
	row->last_update_ms = int_col(tup, desc, 7, -1);
	row->next_producer_id = int_col(tup, desc, 8, -1);
	row->previous_producer_id = int_col(tup, desc, 9, -1);
}

bool
kp_cat_txn_get(const char *transactional_id, bool for_update, KpTxnRow *row)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(transactional_id)};
	bool		found;

	spi_begin();
	run(for_update ?
		"SELECT " ROW_COLUMNS " FROM kafka.transactions WHERE transactional_id = $1 FOR UPDATE" :
		"SELECT " ROW_COLUMNS " FROM kafka.transactions WHERE transactional_id = $1",
		1, types, values, NULL);
	found = SPI_processed > 0;
	if (found)
		read_row(0, row, caller);
	SPI_finish();
	return found;
}

/*
 * The row, locked for update, if nobody else holds its lock: false when it
 * is absent or locked.  For a caller that holds a lock the row's lockers
 * take after the row's.
 */
bool
kp_cat_txn_get_unless_locked(const char *transactional_id, KpTxnRow *row)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(transactional_id)};
	bool		found;

	spi_begin();
	run("SELECT " ROW_COLUMNS " FROM kafka.transactions WHERE transactional_id = $1 "
		"FOR UPDATE SKIP LOCKED", 1, types, values, NULL);
	found = SPI_processed > 0;
	if (found)
		read_row(0, row, caller);
	SPI_finish();
	return found;
}

/*
 * The row of a producer id, and whether the partition is in its current
 * transaction: what Produce checks a transactional batch against.  A saved
 * plan: this is on the produce path.
 */
bool
kp_cat_txn_get_by_producer(int64 producer_id, int64 partition_id, KpTxnRow *row,
						   bool *in_txn)
{
	static SPIPlanPtr plan = NULL;
	MemoryContext caller = CurrentMemoryContext;
	Datum		values[2] = {Int64GetDatum(producer_id), Int64GetDatum(partition_id)};
	bool		found;
	int			ret;

	spi_begin();
	if (plan == NULL)
	{
		Oid			types[2] = {INT8OID, INT8OID};
		SPIPlanPtr	p = kp_spi_prepare("SELECT " ROW_COLUMNS ", EXISTS (SELECT 1 FROM "
									   "kafka.transaction_partitions p WHERE p.transactional_id = "
									   "t.transactional_id AND p.partition_id = $2) "
									   "FROM kafka.transactions t WHERE t.producer_id = $1",
									   2, types);

		if (p == NULL)
			elog(ERROR, "kafka_pg transactions catalog: cannot prepare the produce check");
		SPI_keepplan(p);
		plan = p;
	}

	/*
	 * Not read_only: that would read with the request's entry snapshot, taken
	 * before the caller waited for the producer's lock, and so miss an EndTxn
	 * or fence that committed meanwhile (accepting a batch after its
	 * transaction's markers).  A fresh snapshot sees what the lock waited
	 * for.
	 */
	ret = kp_spi_execute_plan(plan, values, NULL, false, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg transactions catalog: the produce check failed (%d)", ret);
	found = SPI_processed > 0;
	*in_txn = false;
	if (found)
	{
		bool		isnull;

		read_row(0, row, caller);
		*in_txn = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											 10, &isnull));
	}
	SPI_finish();
	return found;
}

void
kp_cat_txn_create(const char *transactional_id, int64 producer_id, int32 timeout_ms,
				  KpTxnRow *row)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			types[3] = {TEXTOID, INT8OID, INT4OID};
	Datum		values[3] = {CStringGetTextDatum(transactional_id), Int64GetDatum(producer_id),
	Int32GetDatum(timeout_ms)};

	spi_begin();
	run("INSERT INTO kafka.transactions (transactional_id, producer_id, producer_epoch, state, "
		"  timeout_ms) VALUES ($1, $2, 0, 'Empty', $3) RETURNING " ROW_COLUMNS,
		3, types, values, NULL);
	read_row(0, row, caller);
	SPI_finish();
}

/*
 * Write the row's producer id, epoch, state and timeout.  start_txn: the
 * transaction begins now (txn_start_time = now()); end_txn: none is under
 * way (NULL).  last_update_time is now().
 */
void
kp_cat_txn_update(const KpTxnRow *row, bool start_txn, bool end_txn)
{
	Oid			types[8] = {TEXTOID, INT8OID, INT2OID, TEXTOID, INT4OID, INT4OID, INT8OID,
	INT8OID};
	Datum		values[8];
	char		nulls[8];

	memset(nulls, ' ', sizeof(nulls));
	values[0] = CStringGetTextDatum(row->transactional_id);
	values[1] = Int64GetDatum(row->producer_id);
	values[2] = Int16GetDatum(row->producer_epoch);
	values[3] = CStringGetTextDatum(row->state);
	values[4] = Int32GetDatum(row->timeout_ms);
	values[5] = Int32GetDatum(start_txn ? 1 : end_txn ? 2 : 0);
	values[6] = Int64GetDatum(row->next_producer_id);
	nulls[6] = row->next_producer_id < 0 ? 'n' : ' ';
	values[7] = Int64GetDatum(row->previous_producer_id);
	nulls[7] = row->previous_producer_id < 0 ? 'n' : ' ';
	spi_begin();
	run("UPDATE kafka.transactions SET producer_id = $2, producer_epoch = $3, state = $4, "
		"  timeout_ms = $5, last_update_time = now(), "
		"  txn_start_time = CASE $6 WHEN 1 THEN now() WHEN 2 THEN NULL ELSE txn_start_time END, "
		"  next_producer_id = $7, previous_producer_id = $8 "
		"WHERE transactional_id = $1", 8, types, values, nulls);
	SPI_finish();
}

int
kp_cat_txn_partitions(const char *transactional_id, KpTxnPartition **out)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(transactional_id)};
	int			n;
	int			i;

	spi_begin();
	run("SELECT topic, partition, partition_id FROM kafka.transaction_partitions "
		"WHERE transactional_id = $1 ORDER BY topic COLLATE \"C\", partition",
		1, types, values, NULL);
	n = (int) SPI_processed;
	*out = MemoryContextAllocZero(caller, sizeof(KpTxnPartition) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		(*out)[i].topic = text_col(tup, desc, 1, caller);
		(*out)[i].partition = (int32) int_col(tup, desc, 2, -1);
		(*out)[i].partition_id = int_col(tup, desc, 3, -1);
	}
	SPI_finish();
	return n;
}

void
kp_cat_txn_add_partition(const char *transactional_id, const char *topic, int32 partition,
						 int64 partition_id)
{
	Oid			types[4] = {TEXTOID, TEXTOID, INT4OID, INT8OID};
	Datum		values[4] = {CStringGetTextDatum(transactional_id), CStringGetTextDatum(topic),
	Int32GetDatum(partition), Int64GetDatum(partition_id)};

	spi_begin();
	run("INSERT INTO kafka.transaction_partitions (transactional_id, topic, partition, partition_id) "
		"VALUES ($1, $2, $3, $4) ON CONFLICT (transactional_id, topic, partition) "
		"DO UPDATE SET partition_id = $4", 4, types, values, NULL);
	SPI_finish();
}

int
kp_cat_txn_groups(const char *transactional_id, char ***groups)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(transactional_id)};
	int			n;
	int			i;

	spi_begin();
	run("SELECT group_id FROM kafka.transaction_groups WHERE transactional_id = $1 "
		"ORDER BY group_id COLLATE \"C\"", 1, types, values, NULL);
	n = (int) SPI_processed;
	*groups = MemoryContextAllocZero(caller, sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
		(*groups)[i] = text_col(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, caller);
	SPI_finish();
	return n;
}

void
kp_cat_txn_add_group(const char *transactional_id, const char *group_id)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2] = {CStringGetTextDatum(transactional_id), CStringGetTextDatum(group_id)};

	spi_begin();
	run("INSERT INTO kafka.transaction_groups (transactional_id, group_id) VALUES ($1, $2) "
		"ON CONFLICT DO NOTHING", 2, types, values, NULL);
	SPI_finish();
}

void
kp_cat_txn_put_offset(const char *transactional_id, const KpTxnOffset *o)
{
	Oid			types[7] = {TEXTOID, TEXTOID, TEXTOID, INT4OID, INT8OID, INT4OID, BYTEAOID};
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = CStringGetTextDatum(transactional_id);
	values[1] = CStringGetTextDatum(o->group_id);
	values[2] = CStringGetTextDatum(o->topic);
	values[3] = Int32GetDatum(o->partition);
	values[4] = Int64GetDatum(o->offset);
	values[5] = Int32GetDatum(o->leader_epoch);
	if (o->metadata.len >= 0)
	{
		bytea	   *b = palloc(VARHDRSZ + o->metadata.len);

		SET_VARSIZE(b, VARHDRSZ + o->metadata.len);
		if (o->metadata.len > 0)
			memcpy(VARDATA(b), o->metadata.data, o->metadata.len);
		values[6] = PointerGetDatum(b);
	}
	else
		nulls[6] = 'n';
	spi_begin();
	run("INSERT INTO kafka.transaction_offsets (transactional_id, group_id, topic, partition, "
		"  committed_offset, leader_epoch, metadata) VALUES ($1, $2, $3, $4, $5, $6, $7) "
		"ON CONFLICT (transactional_id, group_id, topic, partition) DO UPDATE SET "
		"  committed_offset = $5, leader_epoch = $6, metadata = $7",
		7, types, values, nulls);
	SPI_finish();
}

int
kp_cat_txn_offsets(const char *transactional_id, KpTxnOffset **out)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(transactional_id)};
	int			n;
	int			i;

	spi_begin();
	run("SELECT group_id, topic, partition, committed_offset, leader_epoch, metadata "
		"FROM kafka.transaction_offsets WHERE transactional_id = $1 "
		"ORDER BY group_id, topic, partition", 1, types, values, NULL);
	n = (int) SPI_processed;
	*out = MemoryContextAllocZero(caller, sizeof(KpTxnOffset) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		(*out)[i].group_id = text_col(tup, desc, 1, caller);
		(*out)[i].topic = text_col(tup, desc, 2, caller);
		(*out)[i].partition = (int32) int_col(tup, desc, 3, -1);
		(*out)[i].offset = int_col(tup, desc, 4, -1);
		(*out)[i].leader_epoch = (int32) int_col(tup, desc, 5, -1);
		{
			bool		isnull;
			Datum		d = SPI_getbinval(tup, desc, 6, &isnull);

			(*out)[i].metadata.data = NULL;
			(*out)[i].metadata.len = -1;
			if (!isnull)
			{
				bytea	   *b = DatumGetByteaPP(d);
				int			len = VARSIZE_ANY_EXHDR(b);
				char	   *copy = MemoryContextAlloc(caller, Max(len, 1));

				memcpy(copy, VARDATA_ANY(b), len);
				(*out)[i].metadata.data = copy;
				(*out)[i].metadata.len = len;
			}
		}
	}
	SPI_finish();
	return n;
}

/* Does a transaction hold offsets of this group and partition, not yet decided? */
bool
kp_cat_txn_offsets_pending(const char *group_id, const char *topic, int32 partition)
{
	static SPIPlanPtr plan = NULL;
	Datum		values[3] = {CStringGetTextDatum(group_id), CStringGetTextDatum(topic),
	Int32GetDatum(partition)};
	bool		found;

	spi_begin();
	if (plan == NULL)
	{
		Oid			types[3] = {TEXTOID, TEXTOID, INT4OID};
		SPIPlanPtr	p = kp_spi_prepare("SELECT 1 FROM kafka.transaction_offsets "
									   "WHERE group_id = $1 AND topic = $2 AND partition = $3 LIMIT 1",
									   3, types);

		if (p == NULL)
			elog(ERROR, "kafka_pg transactions catalog: cannot prepare the pending-offsets check");
		SPI_keepplan(p);
		plan = p;
	}
	if (kp_spi_execute_plan(plan, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg transactions catalog: the pending-offsets check failed");
	found = SPI_processed > 0;
	SPI_finish();
	return found;
}

/*
 * Forget the current transaction's groups and offsets, and with partitions
 * its partitions too.
 */
void
kp_cat_txn_clear(const char *transactional_id, bool partitions)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(transactional_id)};

	spi_begin();
	if (partitions)
		run("DELETE FROM kafka.transaction_partitions WHERE transactional_id = $1",
			1, types, values, NULL);
	run("DELETE FROM kafka.transaction_groups WHERE transactional_id = $1",
		1, types, values, NULL);
	run("DELETE FROM kafka.transaction_offsets WHERE transactional_id = $1",
		1, types, values, NULL);
	SPI_finish();
}

/*
 * Forget transactional ids idle longer than expiration_ms with no
 * transaction under way (Kafka's transactional.id.expiration.ms); their
 * partitions, groups and offsets go with them.  Returns how many.
 */
int
kp_cat_txn_expire(int64 expiration_ms)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(expiration_ms)};
	int			n;

	spi_begin();
	run("DELETE FROM kafka.transactions WHERE state IN ('Empty', 'CompleteCommit', 'CompleteAbort') "
		"AND last_update_time < now() - $1 * interval '1 ms'", 1, types, values, NULL);
	n = (int) SPI_processed;
	SPI_finish();
	return n;
}

/*
 * Rows by a filter, in transactional id order:
 * - KP_TXN_LIST_ALL: every row;
 * - KP_TXN_LIST_TIMED_OUT: Ongoing past its timeout;
 * - KP_TXN_LIST_PREPARED: PrepareCommit or PrepareAbort (markers to write).
 */
int
kp_cat_txn_list(KpTxnListFilter filter, KpTxnRow **rows)
{
	MemoryContext caller = CurrentMemoryContext;
	const char *sql;
	int			n;
	int			i;

	switch (filter)
	{
		case KP_TXN_LIST_TIMED_OUT:
			sql = "SELECT " ROW_COLUMNS " FROM kafka.transactions WHERE state = 'Ongoing' "
				"AND txn_start_time + timeout_ms * interval '1 ms' < now() "
				"ORDER BY transactional_id COLLATE \"C\"";
			break;
		case KP_TXN_LIST_PREPARED:
			sql = "SELECT " ROW_COLUMNS " FROM kafka.transactions "
				"WHERE state IN ('PrepareCommit', 'PrepareAbort') "
				"ORDER BY transactional_id COLLATE \"C\"";
			break;
		default:
			sql = "SELECT " ROW_COLUMNS " FROM kafka.transactions "
				"ORDER BY transactional_id COLLATE \"C\"";
			break;
	}
	spi_begin();
	run(sql, 0, NULL, NULL, NULL);
	n = (int) SPI_processed;
	*rows = MemoryContextAllocZero(caller, sizeof(KpTxnRow) * Max(n, 1));
	for (i = 0; i < n; i++)
		read_row(i, &(*rows)[i], caller);
	SPI_finish();
	return n;
}
