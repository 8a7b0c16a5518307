/*-------------------------------------------------------------------------
 *
 * share.c
 *	  The SQL on the share-group tables (KIP-932).  What the rows must say
 *	  is src/share's business (src/share/README); this file only reads and
 *	  writes them.  Every statement that could meet a row another
 *	  transaction holds takes it with FOR UPDATE SKIP LOCKED, so nothing
 *	  here waits for a SQL caller's long transaction (the one wait, the
 *	  share acquirer's on a share-partition row, is on short transactions
 *	  only: src/share/README).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/xid8.h"

#include "catalog/catalog_spi.h"
#include "catalog/share_catalog.h"

#define MAX_ARGS 10

typedef struct Args
{
	int			n;
	Oid			types[MAX_ARGS];
	Datum		values[MAX_ARGS];
	char		nulls[MAX_ARGS + 1];
} Args;

static void
args_init(Args *a)
{
	a->n = 0;
	memset(a->nulls, ' ', sizeof(a->nulls));
	a->nulls[MAX_ARGS] = '\0';
}

static void
arg_text(Args *a, const char *v)
{
	a->types[a->n] = TEXTOID;
	if (v == NULL)
	{
		a->values[a->n] = (Datum) 0;
		a->nulls[a->n] = 'n';
	}
	else
		a->values[a->n] = CStringGetTextDatum(v);
	a->n++;
}

static void
arg_int4(Args *a, int32 v)
{
	a->types[a->n] = INT4OID;
	a->values[a->n++] = Int32GetDatum(v);
}

static void
arg_int8(Args *a, int64 v)
{
	a->types[a->n] = INT8OID;
	a->values[a->n++] = Int64GetDatum(v);
}

/* The acquiring SQL transaction (a FullTransactionId), NULL when 0. */
static void
arg_xid(Args *a, uint64 xid)
{
	a->types[a->n] = XID8OID;
	if (xid == 0)
	{
		a->values[a->n] = (Datum) 0;
		a->nulls[a->n] = 'n';
	}
	else
		a->values[a->n] = FullTransactionIdGetDatum(FullTransactionIdFromU64(xid));
	a->n++;
}

static void
arg_datum(Args *a, Oid type, Datum d)
{
	a->types[a->n] = type;
	a->values[a->n++] = d;
}

/* Run a statement; the caller is connected to SPI. */
static int
exec(const char *sql, Args *a)
{
	int			ret = kp_spi_execute_with_args(sql, a ? a->n : 0, a ? a->types : NULL,
											   a ? a->values : NULL, a ? a->nulls : NULL, false, 0);

	if (ret < 0)
		elog(ERROR, "kafka_pg share catalog: statement failed (%d): %s", ret, sql);
	return ret;
}

/*
 * Run a statement through a plan kept for the life of the process (*plan,
 * prepared on first use): the statements of an acquisition and an
 * acknowledgement run many times a second, and parsing and planning them
 * each time was a good part of their cost.  The argument types of one call
 * site never change.
 */
static int
exec_cached(SPIPlanPtr *plan, const char *sql, Args *a)
{
	int			ret;
	int			nest;

	if (*plan == NULL)
	{
		SPIPlanPtr	p = kp_spi_prepare(sql, a->n, a->types);

		if (p == NULL)
			elog(ERROR, "kafka_pg share catalog: cannot prepare (%d): %s", SPI_result, sql);
		SPI_keepplan(p);
		*plan = p;
	}

	/*
	 * Planned without sequential scans: the statistics of kafka.share_records
	 * say a few rows (the window), while its heap holds the row versions
	 * since the last vacuum, and a kept plan would scan them all every time.
	 */
	nest = NewGUCNestLevel();
	(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	ret = kp_spi_execute_plan(*plan, a->values, a->nulls, false, 0);
	AtEOXact_GUC(true, nest);
	if (ret < 0)
		elog(ERROR, "kafka_pg share catalog: statement failed (%d): %s", ret, sql);
	return ret;
}

static void
connect(void)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

static int64
col_int8(int row, int col, int64 if_null)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);
	Oid			t = SPI_gettypeid(SPI_tuptable->tupdesc, col);

	if (isnull)
		return if_null;
	if (t == INT8OID)
		return DatumGetInt64(d);
	if (t == INT4OID)
		return DatumGetInt32(d);
	if (t == INT2OID)
		return DatumGetInt16(d);
	elog(ERROR, "kafka_pg share catalog: unexpected type %u", t);
	return 0;
}

/* A text column copied into cxt; NULL stays NULL. */
static char *
col_text(int row, int col, MemoryContext cxt)
{
	char	   *v = SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);

	return v ? MemoryContextStrdup(cxt, v) : NULL;
}

static int
col_text_array(int row, int col, MemoryContext cxt, char ***out)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);
	Datum	   *elems;
	bool	   *enulls;
	int			n;
	int			i;

	*out = NULL;
	if (isnull)
		return 0;
	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT, &elems, &enulls, &n);
	*out = MemoryContextAlloc(cxt, sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
		(*out)[i] = enulls[i] ? MemoryContextStrdup(cxt, "") :
			MemoryContextStrdup(cxt, TextDatumGetCString(elems[i]));
	return n;
}

static Datum
text_array(int n, char *const *items)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		d[i] = CStringGetTextDatum(items[i]);
	return PointerGetDatum(construct_array(d, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/* ---------------------------------------------------------------------
 * Groups and members
 * ---------------------------------------------------------------------
 */

bool
kp_cat_share_is_other_group(const char *group_id)
{
	Args		a;
	bool		found;

	args_init(&a);
	arg_text(&a, group_id);
	connect();
	{
		static SPIPlanPtr plan;

		exec_cached(&plan, "SELECT 1 FROM kafka.consumer_groups WHERE group_id = $1", &a);
	}
	found = SPI_processed > 0;
	SPI_finish();
	return found;
}

bool
kp_cat_share_group_exists(const char *group_id)
{
	Args		a;
	bool		found;

	args_init(&a);
	arg_text(&a, group_id);
	connect();
	exec("SELECT 1 FROM kafka.share_groups WHERE group_id = $1", &a);
	found = SPI_processed > 0;
	SPI_finish();
	return found;
}

int32
kp_cat_share_group_lock(const char *group_id, bool create)
{
	Args		a;
	int32		epoch = -1;

	args_init(&a);
	arg_text(&a, group_id);
	connect();
	if (create)
		exec("INSERT INTO kafka.share_groups (group_id) VALUES ($1) ON CONFLICT DO NOTHING", &a);
	exec("SELECT group_epoch FROM kafka.share_groups WHERE group_id = $1 FOR NO KEY UPDATE", &a);
	if (SPI_processed > 0)
		epoch = (int32) col_int8(0, 1, 0);
	SPI_finish();
	return epoch;
}

void
kp_cat_share_group_set_epoch(const char *group_id, int32 epoch)
{
	Args		a;

	args_init(&a);
	arg_text(&a, group_id);
	arg_int4(&a, epoch);
	connect();
	exec("UPDATE kafka.share_groups SET group_epoch = $2, state_changed_at = now() WHERE group_id = $1", &a);
	SPI_finish();
}

void
kp_cat_share_group_delete(const char *group_id)
{
	Args		a;

	args_init(&a);
	arg_text(&a, group_id);
	connect();
	exec("DELETE FROM kafka.share_records WHERE group_id = $1", &a);
	exec("DELETE FROM kafka.share_groups WHERE group_id = $1", &a);
	SPI_finish();
}

#define MEMBER_COLS "member_id, member_epoch, client_id, client_host, rack_id, subscribed_topics, assigned"

static void
member_from_row(int row, MemoryContext cxt, KpShareMemberRow *m)
{
	m->member_id = col_text(row, 1, cxt);
	m->member_epoch = (int32) col_int8(row, 2, 0);
	m->client_id = col_text(row, 3, cxt);
	m->client_host = col_text(row, 4, cxt);
	m->rack_id = col_text(row, 5, cxt);
	m->nsubscribed = col_text_array(row, 6, cxt, &m->subscribed);
	m->assigned = col_text(row, 7, cxt);
}

bool
kp_cat_share_member_read(const char *group_id, const char *member_id, KpShareMemberRow *row)
{
	MemoryContext cxt = CurrentMemoryContext;
	Args		a;
	bool		found;

	args_init(&a);
	arg_text(&a, group_id);
	arg_text(&a, member_id);
	connect();
	exec("SELECT " MEMBER_COLS " FROM kafka.share_group_members WHERE group_id = $1 AND member_id = $2", &a);
	found = SPI_processed > 0;
	if (found)
		member_from_row(0, cxt, row);
	SPI_finish();
	return found;
}

void
kp_cat_share_member_upsert(const char *group_id, const KpShareMemberRow *m)
{
	Args		a;

	args_init(&a);
	arg_text(&a, group_id);
	arg_text(&a, m->member_id);
	arg_int4(&a, m->member_epoch);
	arg_text(&a, m->client_id ? m->client_id : "");
	arg_text(&a, m->client_host ? m->client_host : "");
	arg_text(&a, m->rack_id);
	arg_datum(&a, TEXTARRAYOID, text_array(m->nsubscribed, m->subscribed));
	arg_text(&a, m->assigned ? m->assigned : "");
	connect();
	exec("INSERT INTO kafka.share_group_members AS m (group_id, member_id, member_epoch, client_id,"
		 " client_host, rack_id, subscribed_topics, assigned) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
		 " ON CONFLICT (group_id, member_id) DO UPDATE SET member_epoch = $3, client_id = $4,"
		 " client_host = $5, rack_id = $6, subscribed_topics = $7, assigned = $8, last_heartbeat = now()",
		 &a);
	SPI_finish();
}

void
kp_cat_share_member_touch(const char *group_id, const char *member_id)
{
	Args		a;

	args_init(&a);
	arg_text(&a, group_id);
	arg_text(&a, member_id);
	connect();
	exec("UPDATE kafka.share_group_members SET last_heartbeat = now() WHERE group_id = $1 AND member_id = $2", &a);
	SPI_finish();
}

void
kp_cat_share_member_delete(const char *group_id, const char *member_id)
{
	Args		a;

	args_init(&a);
	arg_text(&a, group_id);
	arg_text(&a, member_id);
	connect();
	exec("DELETE FROM kafka.share_group_members WHERE group_id = $1 AND member_id = $2", &a);
	SPI_finish();
}

int
kp_cat_share_members_expire(const char *group_id, int32 session_ms, char ***member_ids)
{
	MemoryContext cxt = CurrentMemoryContext;
	Args		a;
	int			n;
	int			i;

	args_init(&a);
	arg_text(&a, group_id);
	arg_int4(&a, session_ms);
	connect();
	exec("DELETE FROM kafka.share_group_members WHERE group_id = $1"
		 " AND last_heartbeat < now() - make_interval(secs => $2 / 1000.0) RETURNING member_id", &a);
	n = (int) SPI_processed;
	*member_ids = MemoryContextAlloc(cxt, sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
		(*member_ids)[i] = col_text(i, 1, cxt);
	SPI_finish();
	return n;
}

int
kp_cat_share_members(const char *group_id, KpShareMemberRow **rows)
{
	MemoryContext cxt = CurrentMemoryContext;
	Args		a;
	int			n;
	int			i;

	args_init(&a);
	arg_text(&a, group_id);
	connect();
	exec("SELECT " MEMBER_COLS " FROM kafka.share_group_members WHERE group_id = $1 ORDER BY member_id", &a);
	n = (int) SPI_processed;
	*rows = MemoryContextAllocZero(cxt, sizeof(KpShareMemberRow) * Max(n, 1));
	for (i = 0; i < n; i++)
		member_from_row(i, cxt, &(*rows)[i]);
	SPI_finish();
	return n;
}

int
kp_cat_share_groups_list(char ***group_ids, int32 **epochs)
{
	MemoryContext cxt = CurrentMemoryContext;
	int			n;
	int			i;

	connect();
	exec("SELECT g.group_id, g.group_epoch, (SELECT count(*) FROM kafka.share_group_members m"
		 " WHERE m.group_id = g.group_id) FROM kafka.share_groups g ORDER BY 1", NULL);
	n = (int) SPI_processed;
	*group_ids = MemoryContextAlloc(cxt, sizeof(char *) * Max(n, 1));
	*epochs = MemoryContextAlloc(cxt, sizeof(int32) * Max(n, 1) * 2);
	for (i = 0; i < n; i++)
	{
		(*group_ids)[i] = col_text(i, 1, cxt);
		(*epochs)[i] = (int32) col_int8(i, 2, 0);
		/* the member counts follow the epochs */
		(*epochs)[n + i] = (int32) col_int8(i, 3, 0);
	}
	SPI_finish();
	return n;
}

int
kp_cat_share_release_member(const char *group_id, const char *member_id, char ***topics,
							int32 **partitions)
{
	MemoryContext cxt = CurrentMemoryContext;
	Args		a;
	int			n;
	int			i;

	args_init(&a);
	arg_text(&a, group_id);
	arg_text(&a, member_id);
	connect();
	exec("WITH x AS (UPDATE kafka.share_records r SET state = 0, member_id = NULL, lock_until = NULL,"
		 "  acq_xid = NULL WHERE r.ctid = ANY (ARRAY(SELECT ctid FROM kafka.share_records"
		 "   WHERE group_id = $1 AND member_id = $2 AND state = 1 FOR UPDATE SKIP LOCKED))"
		 "  RETURNING r.topic, r.partition)"
		 " SELECT DISTINCT topic, partition FROM x", &a);
	n = (int) SPI_processed;
	*topics = MemoryContextAlloc(cxt, sizeof(char *) * Max(n, 1));
	*partitions = MemoryContextAlloc(cxt, sizeof(int32) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		(*topics)[i] = col_text(i, 1, cxt);
		(*partitions)[i] = (int32) col_int8(i, 2, 0);
	}
	SPI_finish();
	return n;
}

/* ---------------------------------------------------------------------
 * Share-partitions and their in-flight runs of records
 * ---------------------------------------------------------------------
 */

#define WHERE_SP " group_id = $1 AND topic = $2 AND partition = $3"

/*
 * An acquired run (state 1) its member still holds: its lock has not
 * expired and the transaction that acquired it (a SQL caller's) has not
 * rolled back.  The acknowledgement takes only these; kp_cat_share_expire
 * makes the others available (NOT HELD_NOW: one condition for both).
 */
#define HELD_NOW "(lock_until IS NULL OR lock_until >= clock_timestamp())" \
	" AND (acq_xid IS NULL OR pg_xact_status(acq_xid) IS DISTINCT FROM 'aborted')"

static void
args_sp(Args *a, const char *group_id, const char *topic, int32 partition)
{
	args_init(a);
	arg_text(a, group_id);
	arg_text(a, topic);
	arg_int4(a, partition);
}

static Datum
int8_array(int n, const int64 *v)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		d[i] = Int64GetDatum(v[i]);
	return PointerGetDatum(construct_array(d, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

static Datum
int2_array(int n, const int16 *v)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		d[i] = Int16GetDatum(v[i]);
	return PointerGetDatum(construct_array(d, n, INT2OID, 2, true, TYPALIGN_SHORT));
}

bool
kp_cat_share_partition_lock(const char *group_id, const char *topic, int32 partition,
							int32 topic_id, int64 init_offset, bool wait,
							int64 *start_offset, int64 *end_offset)
{
	static SPIPlanPtr lock_wait;
	static SPIPlanPtr lock_skip;
	Args		a;
	bool		got = false;
	int			attempt;

	args_sp(&a, group_id, topic, partition);
	connect();
	for (attempt = 0; attempt < 2 && !got; attempt++)
	{
		if (wait)
			exec_cached(&lock_wait,
						"SELECT start_offset, end_offset, topic_id FROM kafka.share_partitions WHERE" WHERE_SP
						" FOR UPDATE", &a);
		else
			exec_cached(&lock_skip,
						"SELECT start_offset, end_offset, topic_id FROM kafka.share_partitions WHERE" WHERE_SP
						" FOR UPDATE SKIP LOCKED", &a);
		if (SPI_processed > 0)
		{
			*start_offset = col_int8(0, 1, 0);
			*end_offset = col_int8(0, 2, 0);
			got = true;
			if (topic_id >= 0 && col_int8(0, 3, 0) != topic_id && init_offset >= 0)
			{
				Args		b;

				/* the state of a deleted topic of the same name */
				args_sp(&b, group_id, topic, partition);
				arg_int8(&b, init_offset);
				arg_int4(&b, topic_id);
				exec("DELETE FROM kafka.share_records WHERE" WHERE_SP, &b);
				exec("UPDATE kafka.share_partitions SET start_offset = $4, end_offset = $4,"
					 " topic_id = $5 WHERE" WHERE_SP, &b);
				*start_offset = *end_offset = init_offset;
			}
			break;
		}
		if (attempt > 0 || init_offset < 0)
			break;
		/* missing, or held by another transaction */
		exec("SELECT 1 FROM kafka.share_partitions WHERE" WHERE_SP, &a);
		if (SPI_processed > 0)
			break;
		{
			Args		b;

			args_sp(&b, group_id, topic, partition);
			arg_int8(&b, init_offset);
			arg_int4(&b, Max(topic_id, 0));
			exec("INSERT INTO kafka.share_groups (group_id) VALUES ($1) ON CONFLICT DO NOTHING", &b);
			exec("INSERT INTO kafka.share_partitions (group_id, topic, partition, topic_id, start_offset,"
				 " end_offset) VALUES ($1, $2, $3, $5, $4, $4) ON CONFLICT DO NOTHING", &b);
		}
	}
	SPI_finish();
	return got;
}

int64
kp_cat_share_expire(const char *group_id, const char *topic, int32 partition, int32 delivery_limit)
{
	static SPIPlanPtr plan;
	Args		a;
	int64		archived = 0;

	args_sp(&a, group_id, topic, partition);
	arg_int4(&a, delivery_limit);
	connect();
	exec_cached(&plan,
				"WITH x AS (UPDATE kafka.share_records r"
				"  SET state = CASE WHEN r.delivery_count >= $4 THEN 4 ELSE 0 END, member_id = NULL,"
				"  lock_until = NULL, acq_xid = NULL"
				"  WHERE r.ctid = ANY (ARRAY(SELECT ctid FROM kafka.share_records WHERE" WHERE_SP
				"    AND ((state = 1 AND NOT (" HELD_NOW "))"
				"      OR (state = 0 AND delivery_count >= $4))"
				"    FOR UPDATE SKIP LOCKED)) RETURNING r.state, r.last_offset - r.first_offset + 1 AS n)"
				" SELECT coalesce(sum(n) FILTER (WHERE state = 4), 0)::bigint FROM x", &a);
	if (SPI_processed > 0)
		archived = col_int8(0, 1, 0);
	SPI_finish();
	return archived;
}

int
kp_cat_share_take_available(const char *group_id, const char *topic, int32 partition,
							const char *member_id, uint64 holder_xid, int32 lock_ms, int max,
							KpShareRun **runs)
{
	static SPIPlanPtr sel;
	static SPIPlanPtr ins;
	static SPIPlanPtr upd;
	MemoryContext cxt = CurrentMemoryContext;
	Args		a;
	int			n;
	int			k = 0;
	int			i;
	int64		left = max;
	int64	   *firsts;
	int64		split_first = -1;
	int64		split_last = -1;
	int64		rest_first = -1;
	int64		rest_last = -1;
	int16		rest_count = 0;

	*runs = NULL;
	if (max <= 0)
		return 0;
	args_sp(&a, group_id, topic, partition);
	arg_int4(&a, max);
	connect();

	/* each run holds at least one record: max runs are enough */
	exec_cached(&sel,
				"SELECT first_offset, last_offset, delivery_count FROM kafka.share_records WHERE" WHERE_SP
				" AND state = 0 ORDER BY first_offset LIMIT $4 FOR UPDATE SKIP LOCKED", &a);
	n = (int) SPI_processed;
	*runs = MemoryContextAlloc(cxt, sizeof(KpShareRun) * Max(n, 1));
	firsts = palloc(sizeof(int64) * Max(n, 1));
	for (i = 0; i < n && left > 0; i++)
	{
		int64		f = col_int8(i, 1, 0);
		int64		l = col_int8(i, 2, 0);
		int16		dc = (int16) col_int8(i, 3, 0);
		int64		take = Min(l - f + 1, left);

		(*runs)[k].first = f;
		(*runs)[k].last = f + take - 1;
		(*runs)[k].delivery_count = dc + 1;
		firsts[k++] = f;
		left -= take;
		if (f + take - 1 < l)
		{
			/* split at max_records: the rest stays available */
			split_first = f;
			split_last = f + take - 1;
			rest_first = f + take;
			rest_last = l;
			rest_count = dc;
		}
	}
	if (k > 0 && rest_first >= 0)
	{
		Args		b;

		args_sp(&b, group_id, topic, partition);
		arg_int8(&b, rest_first);
		arg_int8(&b, rest_last);
		arg_int4(&b, rest_count);
		exec_cached(&ins,
					"INSERT INTO kafka.share_records (group_id, topic, partition, first_offset, last_offset,"
					" state, delivery_count) VALUES ($1, $2, $3, $4, $5, 0, $6)", &b);
	}
	if (k > 0)
	{
		Args		b;

		args_sp(&b, group_id, topic, partition);
		arg_text(&b, member_id);
		arg_int4(&b, lock_ms);
		arg_xid(&b, holder_xid);
		arg_datum(&b, INT8ARRAYOID, int8_array(k, firsts));
		arg_int8(&b, split_first);
		arg_int8(&b, split_last);
		exec_cached(&upd,
					"UPDATE kafka.share_records r SET state = 1, delivery_count = r.delivery_count + 1,"
					" member_id = $4, lock_until = clock_timestamp() + make_interval(secs => $5 / 1000.0),"
					" acq_xid = $6, last_offset = CASE WHEN r.first_offset = $8 THEN $9 ELSE r.last_offset END"
					" WHERE r.group_id = $1 AND r.topic = $2 AND r.partition = $3 AND r.first_offset = ANY ($7)",
					&b);
	}
	SPI_finish();
	return k;
}

void
kp_cat_share_take_new(const char *group_id, const char *topic, int32 partition,
					  const char *member_id, uint64 holder_xid, int32 lock_ms, int64 first, int64 last)
{
	static SPIPlanPtr plan;
	Args		a;

	args_sp(&a, group_id, topic, partition);
	arg_text(&a, member_id);
	arg_int4(&a, lock_ms);
	arg_int8(&a, first);
	arg_int8(&a, last);
	arg_xid(&a, holder_xid);
	connect();
	exec_cached(&plan,
				"INSERT INTO kafka.share_records (group_id, topic, partition, first_offset, last_offset, state,"
				" delivery_count, member_id, lock_until, acq_xid) VALUES ($1, $2, $3, $6, $7, 1, 1, $4,"
				" clock_timestamp() + make_interval(secs => $5 / 1000.0), $8)", &a);
	SPI_finish();
}

int64
kp_cat_share_partition_advance(const char *group_id, const char *topic, int32 partition,
							   int64 end_offset, int64 min_start, int64 archived, int64 old_start)
{
	static SPIPlanPtr upd;
	static SPIPlanPtr del;
	static SPIPlanPtr trim;
	Args		a;
	int64		start;

	args_sp(&a, group_id, topic, partition);
	arg_int8(&a, end_offset);
	arg_int8(&a, min_start);
	arg_int8(&a, archived);
	connect();
	exec_cached(&upd,
				"UPDATE kafka.share_partitions p SET end_offset = greatest($4, $5),"
				" start_offset = greatest($5, least(greatest($4, $5), coalesce((SELECT min(r.first_offset)"
				"   FROM kafka.share_records r WHERE r.group_id = $1 AND r.topic = $2 AND r.partition = $3"
				"   AND r.state IN (0, 1) AND r.last_offset >= $5), greatest($4, $5)))),"
				" archived_count = archived_count + $6 WHERE" WHERE_SP " RETURNING start_offset", &a);
	if (SPI_processed == 0)
	{
		SPI_finish();
		return -1;
	}
	start = col_int8(0, 1, 0);

	/* the runs wholly behind SPSO go (what another transaction holds, later) */
	args_sp(&a, group_id, topic, partition);
	arg_int8(&a, start);
	exec_cached(&del,
				"DELETE FROM kafka.share_records r WHERE r.ctid = ANY (ARRAY(SELECT s.ctid"
				" FROM kafka.share_records s WHERE s.group_id = $1 AND s.topic = $2 AND s.partition = $3"
				" AND s.first_offset < $4 AND s.last_offset < $4 FOR UPDATE OF s SKIP LOCKED))", &a);

	/*
	 * SPSO lands inside a run only when the log start moved past its
	 * beginning (retention, DeleteRecords): the records before it are gone
	 */
	if (min_start > old_start)
		exec_cached(&trim,
					"UPDATE kafka.share_records r SET first_offset = $4 WHERE r.ctid = ANY (ARRAY(SELECT s.ctid"
					" FROM kafka.share_records s WHERE s.group_id = $1 AND s.topic = $2 AND s.partition = $3"
					" AND s.first_offset < $4 AND s.last_offset >= $4 FOR UPDATE OF s SKIP LOCKED))", &a);
	SPI_finish();
	return start;
}

/*
 * What an acknowledgement type makes of a record: Kafka's AcknowledgeType
 * 0 gap and 1 accept -> acknowledged, 2 release -> available, 3 reject ->
 * archived, 4 renew -> acquired with a new lock.  PIECE_KEEP: a part of a
 * run outside the acknowledged range, unchanged.
 */
#define PIECE_KEEP	(-1)

static int16
piece_state(int8 type)
{
	switch (type)
	{
		case 0:
		case 1:
			return KP_SHARE_ACKNOWLEDGED;
		case 2:
			return KP_SHARE_AVAILABLE;
		case 3:
			return KP_SHARE_ARCHIVED;
		default:
			return KP_SHARE_ACQUIRED;
	}
}

typedef struct Pieces
{
	int			n;
	int			cap;
	int64	   *orig;			/* first offset of the run it comes from */
	int64	   *first;
	int64	   *last;
	int16	   *state;
} Pieces;

static void
pieces_add(Pieces *p, int64 orig, int64 first, int64 last, int16 state)
{
	if (p->n == p->cap)
	{
		p->cap = Max(8, p->cap * 2);
		p->orig = p->orig ? repalloc(p->orig, sizeof(int64) * p->cap) : palloc(sizeof(int64) * p->cap);
		p->first = p->first ? repalloc(p->first, sizeof(int64) * p->cap) : palloc(sizeof(int64) * p->cap);
		p->last = p->last ? repalloc(p->last, sizeof(int64) * p->cap) : palloc(sizeof(int64) * p->cap);
		p->state = p->state ? repalloc(p->state, sizeof(int16) * p->cap) : palloc(sizeof(int16) * p->cap);
	}
	p->orig[p->n] = orig;
	p->first[p->n] = first;
	p->last[p->n] = last;
	p->state[p->n] = state;
	p->n++;
}

/*
 * One pass of an acknowledgement of [lo, hi] (types indexed from base):
 * the member's acquired runs overlapping it that nobody else holds, locked;
 * each becomes the pieces its offsets' types make (the first piece is the
 * run's row, updated - a HOT update when it stays whole - the others new
 * rows).  The acknowledged sub-ranges go to *covered (two int64 each, by
 * offset); returns how many records were acknowledged.  A run whose lock
 * has expired is not the member's any more, though nobody has taken it yet
 * (expiry is applied lazily, by the next acquisition): as in Kafka, whose
 * timer makes it available at that moment, its acknowledgement is
 * INVALID_RECORD_STATE and the record is delivered again.
 */
static int64
ack_pass(const char *group_id, const char *topic, int32 partition, const char *member_id,
		 int64 lo, int64 hi, int64 base, int ntypes, const int8 *types, int32 lock_ms,
		 int64 **covered, int *ncovered)
{
	static SPIPlanPtr sel;
	static SPIPlanPtr ins;
	static SPIPlanPtr upd;
	Args		a;
	Pieces		first_pieces = {0};
	Pieces		more = {0};
	int64		done = 0;
	int			n;
	int			i;
	int64	   *rf;
	int64	   *rl;

	args_sp(&a, group_id, topic, partition);
	arg_text(&a, member_id);
	arg_int8(&a, lo);
	arg_int8(&a, hi);
	exec_cached(&sel,
				"SELECT first_offset, last_offset FROM kafka.share_records WHERE" WHERE_SP
				" AND first_offset >= coalesce((SELECT max(first_offset) FROM kafka.share_records"
				"   WHERE" WHERE_SP " AND first_offset <= $5), $5)"
				" AND first_offset <= $6 AND last_offset >= $5 AND state = 1 AND member_id = $4"
				" AND " HELD_NOW
				" ORDER BY first_offset FOR UPDATE SKIP LOCKED", &a);
	n = (int) SPI_processed;
	if (n == 0)
		return 0;
	rf = palloc(sizeof(int64) * n);
	rl = palloc(sizeof(int64) * n);
	for (i = 0; i < n; i++)
	{
		rf[i] = col_int8(i, 1, 0);
		rl[i] = col_int8(i, 2, 0);
	}
	*covered = *covered ? repalloc(*covered, sizeof(int64) * 2 * (*ncovered + n)) :
		palloc(sizeof(int64) * 2 * n);
	for (i = 0; i < n; i++)
	{
		int64		f = rf[i];
		int64		l = rl[i];
		int64		s = Max(f, lo);
		int64		e = Min(l, hi);
		Pieces		run = {0};
		int			k;

		if (f < s)
			pieces_add(&run, f, f, s - 1, PIECE_KEEP);
		if (ntypes == 1)
			pieces_add(&run, f, s, e, piece_state(types[0]));
		else
		{
			int64		o;

			for (o = s; o <= e; o++)
			{
				int16		st = piece_state(types[o - base]);

				if (run.n > 0 && run.state[run.n - 1] == st && run.last[run.n - 1] == o - 1)
					run.last[run.n - 1] = o;
				else
					pieces_add(&run, f, o, o, st);
			}
		}
		if (e < l)
			pieces_add(&run, f, e + 1, l, PIECE_KEEP);
		pieces_add(&first_pieces, f, run.first[0], run.last[0], run.state[0]);
		for (k = 1; k < run.n; k++)
			pieces_add(&more, f, run.first[k], run.last[k], run.state[k]);
		(*covered)[2 * *ncovered] = s;
		(*covered)[2 * *ncovered + 1] = e;
		(*ncovered)++;
		done += e - s + 1;
	}

	/* the new rows first: they copy the run's row as it was */
	if (more.n > 0)
	{
		Args		b;

		args_sp(&b, group_id, topic, partition);
		arg_datum(&b, INT8ARRAYOID, int8_array(more.n, more.orig));
		arg_datum(&b, INT8ARRAYOID, int8_array(more.n, more.first));
		arg_datum(&b, INT8ARRAYOID, int8_array(more.n, more.last));
		arg_datum(&b, INT2ARRAYOID, int2_array(more.n, more.state));
		arg_int4(&b, lock_ms);
		exec_cached(&ins,
					"INSERT INTO kafka.share_records (group_id, topic, partition, first_offset, last_offset,"
					" state, delivery_count, member_id, lock_until, acq_xid)"
					" SELECT r.group_id, r.topic, r.partition, p.f, p.l,"
					"  CASE WHEN p.s = -1 THEN r.state ELSE p.s END, r.delivery_count,"
					"  CASE WHEN p.s IN (-1, 1) THEN r.member_id END,"
					"  CASE WHEN p.s = -1 THEN r.lock_until"
					"   WHEN p.s = 1 THEN clock_timestamp() + make_interval(secs => $8 / 1000.0) END,"
					"  CASE WHEN p.s IN (-1, 1) THEN r.acq_xid END"
					" FROM unnest($4::bigint[], $5::bigint[], $6::bigint[], $7::smallint[]) p(o, f, l, s)"
					" JOIN kafka.share_records r ON r.group_id = $1 AND r.topic = $2 AND r.partition = $3"
					"  AND r.first_offset = p.o", &b);
	}
	{
		Args		b;

		args_sp(&b, group_id, topic, partition);
		arg_datum(&b, INT8ARRAYOID, int8_array(first_pieces.n, first_pieces.orig));
		arg_datum(&b, INT8ARRAYOID, int8_array(first_pieces.n, first_pieces.last));
		arg_datum(&b, INT2ARRAYOID, int2_array(first_pieces.n, first_pieces.state));
		arg_int4(&b, lock_ms);
		exec_cached(&upd,
					"UPDATE kafka.share_records r SET last_offset = p.l,"
					" state = CASE WHEN p.s = -1 THEN r.state ELSE p.s END,"
					" member_id = CASE WHEN p.s IN (-1, 1) THEN r.member_id END,"
					" lock_until = CASE WHEN p.s = -1 THEN r.lock_until"
					"  WHEN p.s = 1 THEN clock_timestamp() + make_interval(secs => $7 / 1000.0) END,"
					" acq_xid = CASE WHEN p.s IN (-1, 1) THEN r.acq_xid END"
					" FROM unnest($4::bigint[], $5::bigint[], $6::smallint[]) p(o, l, s)"
					" WHERE r.group_id = $1 AND r.topic = $2 AND r.partition = $3 AND r.first_offset = p.o", &b);
	}
	return done;
}

/*
 * Merge the done runs around [lo, hi] that now follow each other: after an
 * acknowledgement, the acknowledged or archived runs next to each other
 * (nothing but done offsets - markers, aborted records - between them, as
 * no row lies there) with the same state and delivery count become one row,
 * as Kafka's persister combines its state batches.  Without it,
 * acknowledgements one record at a time (or one transaction's records at a
 * time: each ends at its marker) leave a row per record until SPSO passes
 * them.  The rows from the one before lo to the one after hi are read, the
 * candidates locked FOR UPDATE SKIP LOCKED and checked unchanged: a row
 * someone else holds, or that changed meanwhile, is left alone and ends the
 * merge there.  Only done runs past a run still pending (available or
 * acquired): those with none before them go when SPSO next moves, and
 * merging them would be work for nothing.  Only terminal runs: an
 * available run merged into another
 * would stay locked by a SQL caller's transaction until it ends, its
 * records withheld from every other consumer.
 */
static void
merge_done_runs(const char *group_id, const char *topic, int32 partition, int64 lo, int64 hi)
{
	static SPIPlanPtr sel;
	static SPIPlanPtr lck;
	static SPIPlanPtr upd;
	static SPIPlanPtr del;
	Args		a;
	int			n;
	int			i;
	int			ncand = 0;
	int64	   *rf;
	int64	   *rl;
	int16	   *rs;
	int16	   *rdc;
	bool	   *cand;
	bool	   *held;
	int64	   *cf;
	int64	   *hf;
	int64	   *hl;
	int64	   *gone;
	int			nh = 0;
	int			ngone = 0;
	int64		pending;

	args_sp(&a, group_id, topic, partition);
	arg_int8(&a, lo);
	arg_int8(&a, hi);
	exec_cached(&sel,
				"SELECT first_offset, last_offset, state, delivery_count,"
				" (SELECT min(first_offset) FROM kafka.share_records WHERE" WHERE_SP " AND state IN (0, 1))"
				" FROM kafka.share_records WHERE" WHERE_SP
				" AND first_offset >= coalesce((SELECT max(first_offset) FROM kafka.share_records"
				"   WHERE" WHERE_SP " AND first_offset < $4), $4)"
				" AND first_offset <= coalesce((SELECT min(first_offset) FROM kafka.share_records"
				"   WHERE" WHERE_SP " AND first_offset > $5), $5)"
				" ORDER BY first_offset", &a);
	n = (int) SPI_processed;
	if (n < 2)
		return;
	/* the first run still to deliver or acknowledge (none: past them all) */
	pending = col_int8(0, 5, PG_INT64_MAX);
	rf = palloc(sizeof(int64) * n);
	rl = palloc(sizeof(int64) * n);
	rs = palloc(sizeof(int16) * n);
	rdc = palloc(sizeof(int16) * n);
	cand = palloc0(sizeof(bool) * n);
	held = palloc0(sizeof(bool) * n);
	cf = palloc(sizeof(int64) * n);
	for (i = 0; i < n; i++)
	{
		rf[i] = col_int8(i, 1, 0);
		rl[i] = col_int8(i, 2, 0);
		rs[i] = (int16) col_int8(i, 3, 0);
		rdc[i] = (int16) col_int8(i, 4, 0);
	}
#define MERGEABLE(i, j) \
	((rs[i] == KP_SHARE_ACKNOWLEDGED || rs[i] == KP_SHARE_ARCHIVED) && \
	 rs[i] == rs[j] && rdc[i] == rdc[j] && rl[i] < rf[j])

	/*
	 * Done runs with no run still pending before them are deleted when SPSO
	 * next moves: only the ones past a pending run stay (what fragments)
	 */
	for (i = 0; i + 1 < n; i++)
		if (MERGEABLE(i, i + 1) && rf[i] > pending)
			cand[i] = cand[i + 1] = true;
	for (i = 0; i < n; i++)
		if (cand[i])
			cf[ncand++] = rf[i];
	if (ncand == 0)
		return;

	/* lock them; what another transaction holds or changed stays as it is */
	{
		Args		b;
		int			m;
		int			j;

		args_sp(&b, group_id, topic, partition);
		arg_datum(&b, INT8ARRAYOID, int8_array(ncand, cf));
		exec_cached(&lck,
					"SELECT first_offset, last_offset, state, delivery_count FROM kafka.share_records"
					" WHERE" WHERE_SP " AND first_offset = ANY ($4) FOR UPDATE SKIP LOCKED", &b);
		m = (int) SPI_processed;
		for (j = 0; j < m; j++)
		{
			int64		f = col_int8(j, 1, 0);

			for (i = 0; i < n; i++)
				if (cand[i] && rf[i] == f)
				{
					held[i] = rl[i] == col_int8(j, 2, 0) && rs[i] == col_int8(j, 3, 0) &&
						rdc[i] == col_int8(j, 4, 0);
					break;
				}
		}
	}

	/* each chain of held rows that follow each other: one row */
	hf = palloc(sizeof(int64) * n);
	hl = palloc(sizeof(int64) * n);
	gone = palloc(sizeof(int64) * n);
	for (i = 0; i < n; i++)
	{
		int			j = i;

		if (!held[i])
			continue;
		while (j + 1 < n && held[j + 1] && MERGEABLE(j, j + 1))
			j++;
		if (j > i)
		{
			int			k;

			hf[nh] = rf[i];
			hl[nh] = rl[j];
			nh++;
			for (k = i + 1; k <= j; k++)
				gone[ngone++] = rf[k];
		}
		i = j;
	}
#undef MERGEABLE
	if (nh == 0)
		return;
	{
		Args		b;

		args_sp(&b, group_id, topic, partition);
		arg_datum(&b, INT8ARRAYOID, int8_array(ngone, gone));
		exec_cached(&del, "DELETE FROM kafka.share_records WHERE" WHERE_SP " AND first_offset = ANY ($4)", &b);
	}
	{
		Args		b;

		args_sp(&b, group_id, topic, partition);
		arg_datum(&b, INT8ARRAYOID, int8_array(nh, hf));
		arg_datum(&b, INT8ARRAYOID, int8_array(nh, hl));
		exec_cached(&upd,
					"UPDATE kafka.share_records r SET last_offset = p.l"
					" FROM unnest($4::bigint[], $5::bigint[]) p(f, l)"
					" WHERE r.group_id = $1 AND r.topic = $2 AND r.partition = $3 AND r.first_offset = p.f", &b);
	}
}

int64
kp_cat_share_acknowledge(const char *group_id, const char *topic, int32 partition,
						 const char *member_id, int64 first, int64 last,
						 int ntypes, const int8 *types, int32 lock_ms)
{
	static SPIPlanPtr busy;
	int64	   *todo = palloc(sizeof(int64) * 2);
	int			ntodo = 1;
	int64		done = 0;
	int			attempt;

	todo[0] = first;
	todo[1] = last;
	connect();
	for (attempt = 0;; attempt++)
	{
		int64	   *next = NULL;
		int			nnext = 0;
		bool		skipped = false;
		int			t;

		for (t = 0; t < ntodo; t++)
		{
			int64	   *covered = NULL;
			int			ncovered = 0;
			int64		at = todo[2 * t];
			int			c;

			done += ack_pass(group_id, topic, partition, member_id, todo[2 * t], todo[2 * t + 1], first,
							 ntypes, types, lock_ms, &covered, &ncovered);
			/* what is left of the range: not acquired by the member, or held */
			for (c = 0; c <= ncovered; c++)
			{
				int64		upto = c < ncovered ? covered[2 * c] - 1 : todo[2 * t + 1];

				if (upto >= at)
				{
					next = next ? repalloc(next, sizeof(int64) * 2 * (nnext + 1)) : palloc(sizeof(int64) * 2);
					next[2 * nnext] = at;
					next[2 * nnext + 1] = upto;
					nnext++;
				}
				if (c < ncovered)
					at = covered[2 * c + 1] + 1;
			}
		}
		if (nnext == 0 || attempt == 2)
			break;

		/*
		 * Was a run of the member's skipped because another transaction held
		 * it - a split by a concurrent acknowledgement of another part of it,
		 * an expiry about to happen?  Then once more, shortly.
		 */
		for (t = 0; t < nnext && !skipped; t++)
		{
			Args		a;

			args_sp(&a, group_id, topic, partition);
			arg_text(&a, member_id);
			arg_int8(&a, next[2 * t]);
			arg_int8(&a, next[2 * t + 1]);
			exec_cached(&busy,
						"SELECT 1 FROM kafka.share_records WHERE" WHERE_SP
						" AND first_offset <= $6 AND last_offset >= $5 AND state = 1 AND member_id = $4"
						" AND " HELD_NOW " LIMIT 1", &a);
			skipped = SPI_processed > 0;
		}
		if (!skipped)
			break;
		pg_usleep(1000L << attempt);
		CHECK_FOR_INTERRUPTS();
		todo = next;
		ntodo = nnext;
	}
	SPI_finish();
	return done;
}

void
kp_cat_share_merge_done(const char *group_id, const char *topic, int32 partition, int64 lo, int64 hi)
{
	connect();
	merge_done_runs(group_id, topic, partition, lo, hi);
	SPI_finish();
}

int
kp_cat_share_partitions(const char *group_id, char ***topics, int32 **partitions, int64 **start_offsets)
{
	MemoryContext cxt = CurrentMemoryContext;
	Args		a;
	int			n;
	int			i;

	args_init(&a);
	arg_text(&a, group_id);
	connect();
	exec("SELECT topic, partition, start_offset FROM kafka.share_partitions WHERE group_id = $1"
		 " ORDER BY topic, partition", &a);
	n = (int) SPI_processed;
	*topics = MemoryContextAlloc(cxt, sizeof(char *) * Max(n, 1));
	*partitions = MemoryContextAlloc(cxt, sizeof(int32) * Max(n, 1));
	*start_offsets = MemoryContextAlloc(cxt, sizeof(int64) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		(*topics)[i] = col_text(i, 1, cxt);
		(*partitions)[i] = (int32) col_int8(i, 2, 0);
		(*start_offsets)[i] = col_int8(i, 3, 0);
	}
	SPI_finish();
	return n;
}

void
kp_cat_share_partition_reset(const char *group_id, const char *topic, int32 partition,
							 int32 topic_id, int64 start_offset)
{
	Args		a;

	args_sp(&a, group_id, topic, partition);
	arg_int8(&a, start_offset);
	arg_int4(&a, topic_id);
	connect();
	exec("INSERT INTO kafka.share_groups (group_id) VALUES ($1) ON CONFLICT DO NOTHING", &a);
	exec("DELETE FROM kafka.share_records WHERE" WHERE_SP, &a);
	exec("INSERT INTO kafka.share_partitions (group_id, topic, partition, topic_id, start_offset, end_offset)"
		 " VALUES ($1, $2, $3, $5, $4, $4) ON CONFLICT (group_id, topic, partition)"
		 " DO UPDATE SET start_offset = $4, end_offset = $4, topic_id = $5", &a);
	SPI_finish();
}

void
kp_cat_share_partition_delete(const char *group_id, const char *topic, int32 partition)
{
	Args		a;

	args_sp(&a, group_id, topic ? topic : "", partition);
	connect();
	if (topic == NULL)
	{
		exec("DELETE FROM kafka.share_records WHERE group_id = $1", &a);
		exec("DELETE FROM kafka.share_partitions WHERE group_id = $1", &a);
	}
	else if (partition < 0)
	{
		exec("DELETE FROM kafka.share_records WHERE group_id = $1 AND topic = $2", &a);
		exec("DELETE FROM kafka.share_partitions WHERE group_id = $1 AND topic = $2", &a);
	}
	else
	{
		exec("DELETE FROM kafka.share_records WHERE" WHERE_SP, &a);
		exec("DELETE FROM kafka.share_partitions WHERE" WHERE_SP, &a);
	}
	SPI_finish();
}

bool
kp_cat_share_partition_stats(const char *group_id, const char *topic, int32 partition,
							 int64 *start_offset, int64 *end_offset, int64 *pending)
{
	Args		a;
	bool		found;

	args_sp(&a, group_id, topic, partition);
	connect();
	exec("SELECT p.start_offset, p.end_offset, (SELECT coalesce(sum(r.last_offset"
		 "   - greatest(r.first_offset, p.start_offset) + 1), 0)::bigint FROM kafka.share_records r"
		 "  WHERE r.group_id = $1 AND r.topic = $2 AND r.partition = $3 AND r.state IN (0, 1)"
		 "  AND r.last_offset >= p.start_offset)"
		 " FROM kafka.share_partitions p WHERE" WHERE_SP, &a);
	found = SPI_processed > 0;
	if (found)
	{
		*start_offset = col_int8(0, 1, 0);
		*end_offset = col_int8(0, 2, 0);
		*pending = col_int8(0, 3, 0);
	}
	SPI_finish();
	return found;
}
