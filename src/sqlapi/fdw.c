/*-------------------------------------------------------------------------
 *
 * fdw.c
 *	  kafka_pg_fdw: topics as foreign tables.
 *
 * A foreign table of server kafka_pg (wrapper kafka_pg_fdw) is a topic
 * (option topic, default the table's name).  Its columns are picked by
 * name from those kafka.fetch returns: partition integer, "offset" bigint,
 * "timestamp" timestamptz, key and value (bytea, text or jsonb, as the
 * fetch_text and fetch_json forms), headers kafka.header[]; any subset, in
 * any order.
 *
 * INSERT and COPY FROM produce: rows go to bulk.c's streaming producer (one
 * open record batch per partition, appended when full, the rest at the end
 * of the statement), as transactional batches of the calling transaction:
 * kafka.produce's semantics.  SELECT reads through the store's
 * read_committed cursor, as kafka.fetch, partition by partition in offset
 * order; conditions on partition and "offset" compared with a constant or
 * a parameter (=, <, <=, >, >=) decide which partitions are read and from
 * and to which offset (they are not evaluated again per row).
 *
 * Privileges: the Kafka ACLs of current_user, as kafka.produce (WRITE) and
 * kafka.fetch (READ) check them, when the statement starts; the catalog and
 * store work then runs with the extension's rights (acls.c).  Table
 * privileges of the foreign table itself are PostgreSQL's, on top.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/stratnum.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "catalog/kafka_catalog.h"
#include "codec/codec.h"
#include "common/kafka_errors.h"
#include "sqlapi/sqlapi.h"
#include "store/store.h"

PG_FUNCTION_INFO_V1(kp_fdw_handler);
PG_FUNCTION_INFO_V1(kp_fdw_validator);

/* the columns a foreign table may have, by name: kafka.fetch's (KP_COL_*) */
static const char *const col_names[KP_NCOLS] = {
	"partition", "offset", "timestamp", "key", "value", "headers"
};

/* A foreign table as the wrapper sees it. */
typedef struct FdwTable
{
	char	   *relname;
	char	   *topic;
	bool		read_committed;
	int			batch_size;
	int			natts;
	int			att[KP_NCOLS];	/* 0-based attribute number, -1: absent */
	KpOutForm	key_form;
	KpOutForm	value_form;
	Oid			header_type;	/* element type of headers */
} FdwTable;

static Oid
header_type_oid(void)
{
	Oid			nsp = get_namespace_oid("kafka", false);

	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("header"),
						   ObjectIdGetDatum(nsp));
}

static KpOutForm
key_value_form(const FdwTable *t, Form_pg_attribute a)
{
	switch (a->atttypid)
	{
		case BYTEAOID:
			return KP_OUT_BYTEA;
		case TEXTOID:
			return KP_OUT_TEXT;
		case JSONBOID:
			return KP_OUT_JSONB;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of foreign table \"%s\" has type %s",
							NameStr(a->attname), t->relname, format_type_be(a->atttypid)),
					 errhint("A key or value column is bytea, text or jsonb.")));
	}
	return KP_OUT_BYTEA;
}

static void
expect_type(const FdwTable *t, Form_pg_attribute a, Oid type)
{
	if (a->atttypid != type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of foreign table \"%s\" has type %s, not %s",
						NameStr(a->attname), t->relname, format_type_be(a->atttypid),
						format_type_be(type))));
}

/* The table's options and its columns' mapping; ERROR for a column we do not know. */
static void
fdw_table_load(Relation rel, FdwTable *t)
{
	ForeignTable *ft = GetForeignTable(RelationGetRelid(rel));
	ForeignServer *srv = GetForeignServer(ft->serverid);
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *opts = list_concat(list_copy(srv->options), ft->options);
	ListCell   *lc;
	int			i;

	memset(t, 0, sizeof(*t));
	t->relname = pstrdup(RelationGetRelationName(rel));
	t->topic = t->relname;
	t->read_committed = true;
	t->batch_size = 1;
	foreach(lc, opts)
	{
		DefElem    *d = lfirst_node(DefElem, lc);

		if (strcmp(d->defname, "topic") == 0)
			t->topic = defGetString(d);
		else if (strcmp(d->defname, "isolation_level") == 0)
			t->read_committed = kp_parse_isolation(defGetString(d));
		else if (strcmp(d->defname, "batch_size") == 0)
			t->batch_size = (int) strtol(defGetString(d), NULL, 10);
	}
	t->natts = desc->natts;
	for (i = 0; i < KP_NCOLS; i++)
		t->att[i] = -1;
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);
		int			c;

		if (a->attisdropped)
			continue;
		for (c = 0; c < KP_NCOLS; c++)
			if (strcmp(NameStr(a->attname), col_names[c]) == 0)
				break;
		if (c == KP_NCOLS)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_COLUMN_NAME),
					 errmsg("foreign table \"%s\" has a column \"%s\" that a topic does not have",
							t->relname, NameStr(a->attname)),
					 errhint("The columns of a topic are partition, \"offset\", \"timestamp\", key, value and headers.")));
		t->att[c] = i;
		switch (c)
		{
			case KP_COL_PARTITION:
				expect_type(t, a, INT4OID);
				break;
			case KP_COL_OFFSET:
				expect_type(t, a, INT8OID);
				break;
			case KP_COL_TIMESTAMP:
				expect_type(t, a, TIMESTAMPTZOID);
				break;
			case KP_COL_KEY:
				t->key_form = key_value_form(t, a);
				break;
			case KP_COL_VALUE:
				t->value_form = key_value_form(t, a);
				break;
			case KP_COL_HEADERS:
				t->header_type = header_type_oid();
				if (get_element_type(a->atttypid) != t->header_type)
					ereport(ERROR,
							(errcode(ERRCODE_DATATYPE_MISMATCH),
							 errmsg("column \"headers\" of foreign table \"%s\" has type %s, not kafka.header[]",
									t->relname, format_type_be(a->atttypid))));
				break;
		}
	}
}

/* ---------------------------------------------------------------------
 * Conditions on partition and "offset" (planning)
 * ---------------------------------------------------------------------
 */

/* A bound: (column KP_COL_PARTITION/KP_COL_OFFSET) (btree strategy) (expression). */
#define BOUND_KIND(col, strategy)	((col) * 8 + (strategy))
#define BOUND_COL(kind)				((kind) / 8)
#define BOUND_STRATEGY(kind)		((kind) % 8)

/*
 * Is clause "partition|offset <op> expr" (or commuted), with op an integer
 * comparison and expr free of this relation's columns and of volatile
 * functions?  Then *kind and *expr say the bound.
 */
static bool
match_bound(Expr *clause, Index relid, const FdwTable *t, int *kind, Expr **expr)
{
	OpExpr	   *op;
	Node	   *left;
	Node	   *right;
	Var		   *var;
	Node	   *other;
	int			strategy;
	int			col;
	Oid			type;

	if (!IsA(clause, OpExpr))
		return false;
	op = (OpExpr *) clause;
	if (list_length(op->args) != 2)
		return false;
	left = strip_implicit_coercions(linitial(op->args));
	right = strip_implicit_coercions(lsecond(op->args));
	strategy = get_op_opfamily_strategy(op->opno, INTEGER_BTREE_FAM_OID);
	if (strategy == 0)
		return false;
	if (IsA(left, Var) && ((Var *) left)->varno == relid && ((Var *) left)->varlevelsup == 0)
	{
		var = (Var *) left;
		other = (Node *) lsecond(op->args);
	}
	else if (IsA(right, Var) && ((Var *) right)->varno == relid &&
			 ((Var *) right)->varlevelsup == 0)
	{
		var = (Var *) right;
		other = (Node *) linitial(op->args);
		strategy = BTMaxStrategyNumber + 1 - strategy;	/* commute */
	}
	else
		return false;
	if (var->varattno - 1 == t->att[KP_COL_PARTITION] && t->att[KP_COL_PARTITION] >= 0)
		col = KP_COL_PARTITION;
	else if (var->varattno - 1 == t->att[KP_COL_OFFSET] && t->att[KP_COL_OFFSET] >= 0)
		col = KP_COL_OFFSET;
	else
		return false;
	type = exprType(other);
	if (type != INT2OID && type != INT4OID && type != INT8OID)
		return false;
	if (contain_var_clause(other) || contain_volatile_functions(other) ||
		contain_subplans(other))
		return false;
	*kind = BOUND_KIND(col, strategy);
	*expr = (Expr *) other;
	return true;
}

/* The bounds [lo, hi] of one column, narrowed by "col <strategy> v". */
static void
apply_bound(int strategy, int64 v, int64 *lo, int64 *hi)
{
	switch (strategy)
	{
		case BTLessStrategyNumber:
			if (v == PG_INT64_MIN)
				*hi = PG_INT64_MIN, *lo = PG_INT64_MAX;
			else
				*hi = Min(*hi, v - 1);
			break;
		case BTLessEqualStrategyNumber:
			*hi = Min(*hi, v);
			break;
		case BTEqualStrategyNumber:
			*lo = Max(*lo, v);
			*hi = Min(*hi, v);
			break;
		case BTGreaterEqualStrategyNumber:
			*lo = Max(*lo, v);
			break;
		case BTGreaterStrategyNumber:
			if (v == PG_INT64_MAX)
				*hi = PG_INT64_MIN, *lo = PG_INT64_MAX;
			else
				*lo = Max(*lo, v + 1);
			break;
	}
}

static int64
int_datum(Datum d, Oid type)
{
	switch (type)
	{
		case INT2OID:
			return DatumGetInt16(d);
		case INT4OID:
			return DatumGetInt32(d);
		default:
			return DatumGetInt64(d);
	}
}

static const char *const strategy_ops[] = {"?", "<", "<=", "=", ">=", ">"};

/* ---------------------------------------------------------------------
 * Planning
 * ---------------------------------------------------------------------
 */

typedef struct FdwPlanState
{
	FdwTable	t;
	List	   *bound_kinds;	/* int, per pushed clause */
	List	   *bound_exprs;	/* Expr *, per pushed clause */
	List	   *bound_rinfos;	/* RestrictInfo *, per pushed clause */
} FdwPlanState;

static void
fdw_get_rel_size(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	FdwPlanState *ps = palloc0(sizeof(FdwPlanState));
	Relation	rel = table_open(foreigntableid, NoLock);
	ListCell   *lc;
	List	   *local = NIL;
	int64		plo = 0;
	int64		phi = PG_INT64_MAX;
	int64		olo = 0;
	int64		ohi = PG_INT64_MAX;
	double		rows = 1000;

	fdw_table_load(rel, &ps->t);
	table_close(rel, NoLock);

	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		int			kind;
		Expr	   *expr;

		if (!ri->pseudoconstant &&
			match_bound(ri->clause, baserel->relid, &ps->t, &kind, &expr))
		{
			ps->bound_kinds = lappend_int(ps->bound_kinds, kind);
			ps->bound_exprs = lappend(ps->bound_exprs, expr);
			ps->bound_rinfos = lappend(ps->bound_rinfos, ri);
			if (IsA(expr, Const) && !((Const *) expr)->constisnull)
			{
				int64		v = int_datum(((Const *) expr)->constvalue,
										  ((Const *) expr)->consttype);

				if (BOUND_COL(kind) == KP_COL_PARTITION)
					apply_bound(BOUND_STRATEGY(kind), v, &plo, &phi);
				else
					apply_bound(BOUND_STRATEGY(kind), v, &olo, &ohi);
			}
		}
		else
			local = lappend(local, ri);
	}

	/*
	 * The log's offsets give the row count, for a role that may DESCRIBE the
	 * topic (kafka.list_offsets's right); otherwise a guess.
	 */
	if (kp_acl_authorize(GetUserId(), NULL, KP_ACL_RESOURCE_TOPIC, ps->t.topic,
						 KP_ACL_OP_DESCRIBE))
	{
		KpSqlOwner	owner;
		const KpTopic *topic;

		kp_sql_as_owner(&owner);
		topic = kp_topic_open(ps->t.topic, AccessShareLock, true);
		if (topic != NULL)
		{
			int32		p;

			rows = 0;
			for (p = (int32) Max(plo, 0); p < topic->partition_count && p <= phi; p++)
			{
				KpLogOffsets off;
				KpPartitionRef ref;
				int64		from;
				int64		to;

				kp_topic_partition(topic, p, &ref);
				kp_log_offsets(ref.partition_id, &off);
				from = Max(off.log_start_offset, olo);
				to = ohi == PG_INT64_MAX ? off.log_end_offset : Min(off.log_end_offset, ohi + 1);
				if (to > from)
					rows += (double) (to - from);
			}
		}
		kp_sql_as_caller(&owner);
	}
	rows *= clauselist_selectivity(root, local, baserel->relid, JOIN_INNER, NULL);
	baserel->rows = clamp_row_est(rows);
	baserel->fdw_private = ps;
}

/*
 * One path.  Rows come partition by partition in offset order: with both
 * columns that is the sort order (partition, "offset"), which the path says,
 * so ORDER BY "offset" with partition = x (or ORDER BY partition, "offset")
 * needs no sort and a LIMIT stops the read early.
 */
static void
fdw_get_paths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	FdwPlanState *ps = (FdwPlanState *) baserel->fdw_private;
	Cost		startup = 10;
	Cost		total = startup + baserel->rows * (cpu_tuple_cost + 0.002);
	List	   *pathkeys = NIL;

	if (ps->t.att[KP_COL_PARTITION] >= 0 && ps->t.att[KP_COL_OFFSET] >= 0)
	{
		Var		   *pv = makeVar(baserel->relid, ps->t.att[KP_COL_PARTITION] + 1, INT4OID, -1,
								 InvalidOid, 0);
		Var		   *ov = makeVar(baserel->relid, ps->t.att[KP_COL_OFFSET] + 1, INT8OID, -1,
								 InvalidOid, 0);

		List	   *pk = build_expression_pathkey(root, (Expr *) pv, NULL, Int4LessOperator,
												  baserel->relids, true);

		/* partition = x makes the partition's key redundant: order by offset */
		if (pk != NIL && EC_MUST_BE_REDUNDANT(linitial_node(PathKey, pk)->pk_eclass))
			pk = NIL;
		pathkeys = list_concat(pk, build_expression_pathkey(root, (Expr *) ov, NULL,
															Int8LessOperator,
															baserel->relids, true));
	}
	add_path(baserel, (Path *) create_foreignscan_path(root, baserel, NULL, baserel->rows,
													   startup, total, pathkeys, NULL, NULL,
													   NIL));
}

static ForeignScan *
fdw_get_plan(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
			 ForeignPath *best_path, List *tlist, List *scan_clauses, Plan *outer_plan)
{
	FdwPlanState *ps = (FdwPlanState *) baserel->fdw_private;
	List	   *local = NIL;
	List	   *exprs = NIL;
	List	   *kinds = NIL;
	List	   *needed = NIL;
	Bitmapset  *attrs = NULL;
	StringInfoData desc;
	ListCell   *lc;
	ListCell   *lr;
	int			c;

	initStringInfo(&desc);
	foreach(lc, scan_clauses)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		int			i;

		if (ri->pseudoconstant)
			continue;
		i = -1;
		foreach(lr, ps->bound_rinfos)
		{
			if (lfirst(lr) == ri)
			{
				i = foreach_current_index(lr);
				break;
			}
		}
		if (i < 0)
		{
			local = lappend(local, ri->clause);
			continue;
		}
		{
			int			kind = list_nth_int(ps->bound_kinds, i);
			Expr	   *e = (Expr *) list_nth(ps->bound_exprs, i);

			kinds = lappend_int(kinds, kind);
			exprs = lappend(exprs, e);
			appendStringInfo(&desc, "%s%s %s ", desc.len ? " AND " : "",
							 BOUND_COL(kind) == KP_COL_PARTITION ? "partition" : "\"offset\"",
							 strategy_ops[BOUND_STRATEGY(kind)]);
			if (IsA(e, Const) && ((Const *) e)->constisnull)
				appendStringInfoString(&desc, "NULL");
			else if (IsA(e, Const))
				appendStringInfo(&desc, INT64_FORMAT,
								 int_datum(((Const *) e)->constvalue, ((Const *) e)->consttype));
			else
				appendStringInfoString(&desc, "(expression)");
		}
	}

	/* the columns anything above the scan reads: only those are built */
	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid, &attrs);
	pull_varattnos((Node *) local, baserel->relid, &attrs);
	for (c = 0; c < KP_NCOLS; c++)
	{
		int			att = ps->t.att[c];

		if (att >= 0 &&
			(bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, attrs) ||
			 bms_is_member(att + 1 - FirstLowInvalidHeapAttributeNumber, attrs)))
			needed = lappend_int(needed, c);
	}

	return make_foreignscan(tlist, local, baserel->relid, exprs,
							list_make3(makeString(desc.data), kinds, needed),
							NIL, NIL, outer_plan);
}

/* ---------------------------------------------------------------------
 * Scanning
 * ---------------------------------------------------------------------
 */

typedef struct FdwScanState
{
	FdwTable	t;
	const KpTopic *topic;
	List	   *bound_states;	/* ExprState * */
	List	   *bound_kinds;
	/* the range to read, from the bounds */
	int64		plo;
	int64		phi;
	int64		olo;
	int64		ohi;
	/* where the scan is */
	int32		cur;			/* partition being read; plo - 1 before */
	int64		start;			/* first offset wanted in it */
	KpLogReader *reader;
	bool		in_batch;
	KpRecordIter it;
	MemoryContext scan_cxt;		/* reader, iterator */
	MemoryContext row_cxt;		/* one row's datums */
	KpRecordRow row;			/* how a record becomes a row (fetch.c) */
} FdwScanState;

static void
scan_compute_bounds(FdwScanState *ss, ExprContext *econtext)
{
	ListCell   *lk;
	ListCell   *le;

	ss->plo = 0;
	ss->phi = PG_INT64_MAX;
	ss->olo = 0;
	ss->ohi = PG_INT64_MAX;
	forboth(lk, ss->bound_kinds, le, ss->bound_states)
	{
		int			kind = lfirst_int(lk);
		ExprState  *es = (ExprState *) lfirst(le);
		bool		isnull;
		Datum		d = ExecEvalExpr(es, econtext, &isnull);
		int64		v;

		if (isnull)
		{
			/* a comparison with NULL is never true */
			ss->plo = 1;
			ss->phi = 0;
			continue;
		}
		v = int_datum(d, exprType((Node *) es->expr));
		if (BOUND_COL(kind) == KP_COL_PARTITION)
			apply_bound(BOUND_STRATEGY(kind), v, &ss->plo, &ss->phi);
		else
			apply_bound(BOUND_STRATEGY(kind), v, &ss->olo, &ss->ohi);
	}
	ss->plo = Max(ss->plo, 0);
	ss->cur = -1;
	ss->reader = NULL;
	ss->in_batch = false;
}

static void
fdw_begin_scan(ForeignScanState *node, int eflags)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	FdwScanState *ss = palloc0(sizeof(FdwScanState));
	KpSqlOwner	owner;
	ListCell   *lc;

	node->fdw_state = ss;
	fdw_table_load(node->ss.ss_currentRelation, &ss->t);
	ss->bound_kinds = (List *) lsecond(plan->fdw_private);
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;

	kp_acl_check(KP_ACL_RESOURCE_TOPIC, ss->t.topic, KP_ACL_OP_READ);
	kp_sql_as_owner(&owner);
	ss->topic = kp_topic_open(ss->t.topic, AccessShareLock, false);
	kp_sql_as_caller(&owner);

	ss->bound_states = ExecInitExprList(plan->fdw_exprs, (PlanState *) node);
	ss->scan_cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_pg foreign scan",
										 ALLOCSET_DEFAULT_SIZES);
	ss->row_cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_pg foreign scan row",
										ALLOCSET_DEFAULT_SIZES);
	kp_sql_record_row_init(&ss->row, ss->t.key_form, ss->t.value_form, ss->t.header_type);
	memset(ss->row.need, false, sizeof(ss->row.need));
	foreach(lc, (List *) lthird(plan->fdw_private))
		ss->row.need[lfirst_int(lc)] = true;
	scan_compute_bounds(ss, node->ss.ps.ps_ExprContext);
}

static void
scan_close_partition(FdwScanState *ss)
{
	if (ss->in_batch)
		kp_record_iter_end(&ss->it);
	ss->in_batch = false;
	if (ss->reader)
		kp_log_reader_close(ss->reader);
	ss->reader = NULL;
}

/* Open the next partition that has something to read; false at the end. */
static bool
scan_next_partition(FdwScanState *ss)
{
	for (;;)
	{
		KpPartitionRef ref;
		KpLogOffsets off;
		KpSqlOwner	owner;

		if (ss->cur < 0)
			ss->cur = (int32) Min(ss->plo, (int64) PG_INT32_MAX);
		else
			ss->cur++;
		if (ss->cur >= ss->topic->partition_count || ss->cur > ss->phi || ss->olo > ss->ohi)
			return false;
		kp_topic_partition(ss->topic, ss->cur, &ref);
		kp_sql_as_owner(&owner);
		kp_log_offsets(ref.partition_id, &off);
		ss->start = Max(ss->olo, off.log_start_offset);
		if (ss->start < off.log_end_offset && ss->start <= ss->ohi)
			ss->reader = kp_log_cursor_open(ref.partition_id, ss->start,
											ss->t.read_committed ? KP_READ_COMMITTED :
											KP_READ_UNCOMMITTED);
		kp_sql_as_caller(&owner);
		if (ss->reader)
			return true;
	}
}

/* Next batch with records to show in the current partition; false at its end. */
static bool
scan_next_batch(FdwScanState *ss)
{
	for (;;)
	{
		const char *batch;
		size_t		len;
		KpBatchVisibility vis;
		KpBatchHeader hdr;
		KpSqlOwner	owner;
		bool		got;

		kp_sql_as_owner(&owner);
		got = kp_log_cursor_next(ss->reader, &batch, &len, &vis);
		kp_sql_as_caller(&owner);
		if (!got)
			return false;
		if (kp_batch_parse_header(batch, len, &hdr) != KP_CODEC_OK)
			ereport(ERROR,
					(errcode(ERRCODE_KP_CORRUPT_MESSAGE),
					 errmsg("cannot decode a batch of partition %d of topic \"%s\"",
							ss->cur, ss->topic->name)));
		if (hdr.base_offset > ss->ohi)
			return false;
		if (vis != KP_BATCH_VISIBLE || KpBatchLastOffset(&hdr) < ss->start)
			continue;
		kp_sql_record_iter_begin(&ss->it, batch, len, ss->topic, ss->cur);
		ss->in_batch = true;
		return true;
	}
}

static TupleTableSlot *
fdw_iterate(ForeignScanState *node)
{
	FdwScanState *ss = (FdwScanState *) node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	MemoryContext old;
	KpRecord	rec = {0};
	Datum		values[KP_NCOLS];
	bool		nulls[KP_NCOLS];
	int			c;

	ExecClearTuple(slot);
	MemoryContextReset(ss->row_cxt);
	old = MemoryContextSwitchTo(ss->scan_cxt);
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ss->reader == NULL && !scan_next_partition(ss))
		{
			MemoryContextSwitchTo(old);
			return slot;
		}
		if (!ss->in_batch && !scan_next_batch(ss))
		{
			scan_close_partition(ss);
			continue;
		}
		if (!kp_sql_record_iter_next(&ss->it, &rec, ss->topic, ss->cur))
		{
			kp_record_iter_end(&ss->it);
			ss->in_batch = false;
			continue;
		}
		if (rec.offset < ss->start)
			continue;
		if (rec.offset > ss->ohi)
		{
			scan_close_partition(ss);
			continue;
		}
		break;
	}

	/* kafka.fetch's row, its columns put where the table has them */
	MemoryContextSwitchTo(ss->row_cxt);
	kp_sql_record_row(&ss->row, ss->cur, &ss->it.hdr, &rec, values, nulls);
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	for (c = 0; c < KP_NCOLS; c++)
	{
		if (ss->row.need[c])
		{
			slot->tts_values[ss->t.att[c]] = values[c];
			slot->tts_isnull[ss->t.att[c]] = nulls[c];
		}
	}
	MemoryContextSwitchTo(old);
	return ExecStoreVirtualTuple(slot);
}

static void
fdw_rescan(ForeignScanState *node)
{
	FdwScanState *ss = (FdwScanState *) node->fdw_state;

	scan_close_partition(ss);
	scan_compute_bounds(ss, node->ss.ps.ps_ExprContext);
}

static void
fdw_end_scan(ForeignScanState *node)
{
	FdwScanState *ss = (FdwScanState *) node->fdw_state;

	if (ss && ss->topic)
		scan_close_partition(ss);
}

static void
fdw_explain_scan(ForeignScanState *node, ExplainState *es)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	FdwScanState *ss = (FdwScanState *) node->fdw_state;
	char	   *desc = strVal(linitial(plan->fdw_private));

	ExplainPropertyText("Topic", ss->t.topic, es);
	if (desc[0])
		ExplainPropertyText("Kafka Bounds", desc, es);
}

/* ---------------------------------------------------------------------
 * INSERT and COPY FROM
 * ---------------------------------------------------------------------
 */

typedef struct FdwModifyState
{
	FdwTable	t;
	KpBulkProducer *bp;
	KpBulkTopic *bt;
	MemoryContext row_cxt;
} FdwModifyState;

static FdwModifyState *
modify_begin(EState *estate, ResultRelInfo *rinfo)
{
	FdwModifyState *ms;
	MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);

	ms = palloc0(sizeof(FdwModifyState));
	fdw_table_load(rinfo->ri_RelationDesc, &ms->t);
	ms->bp = kp_bulk_begin("INSERT");
	ms->bt = kp_bulk_topic(ms->bp, ms->t.topic, strlen(ms->t.topic));
	ms->row_cxt = AllocSetContextCreate(estate->es_query_cxt, "kafka_pg foreign insert row",
										ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(old);
	return ms;
}

static void
fdw_begin_modify(ModifyTableState *mtstate, ResultRelInfo *rinfo, List *fdw_private,
				 int subplan_index, int eflags)
{
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	rinfo->ri_FdwState = modify_begin(mtstate->ps.state, rinfo);
}

static void
fdw_begin_insert(ModifyTableState *mtstate, ResultRelInfo *rinfo)
{
	rinfo->ri_FdwState = modify_begin(mtstate->ps.state, rinfo);
}

static void
insert_row(FdwModifyState *ms, ResultRelInfo *rinfo, TupleTableSlot *slot)
{
	MemoryContext old;
	const FdwTable *t = &ms->t;
	Datum	   *v;
	bool	   *n;
	const char *key = NULL;
	const char *value = NULL;
	int			key_len = -1;
	int			value_len = -1;
	KpHeader   *headers = NULL;
	int			nheaders = 0;
	bool		has_partition;
	bool		has_ts;
	int64		ts = 0;
	int32		partition;

	MemoryContextReset(ms->row_cxt);
	old = MemoryContextSwitchTo(ms->row_cxt);
	slot_getallattrs(slot);
	v = slot->tts_values;
	n = slot->tts_isnull;

	if (t->att[KP_COL_OFFSET] >= 0 && !n[t->att[KP_COL_OFFSET]])
		ereport(ERROR,
				(errcode(ERRCODE_GENERATED_ALWAYS),
				 errmsg("cannot insert a non-null \"offset\" into foreign table \"%s\"",
						t->relname),
				 errdetail("The log assigns offsets.")));
	if (t->att[KP_COL_KEY] >= 0 && !n[t->att[KP_COL_KEY]])
		key = kp_sql_datum_bytes(v[t->att[KP_COL_KEY]], t->key_form, &key_len);
	if (t->att[KP_COL_VALUE] >= 0 && !n[t->att[KP_COL_VALUE]])
		value = kp_sql_datum_bytes(v[t->att[KP_COL_VALUE]], t->value_form, &value_len);
	if (t->att[KP_COL_HEADERS] >= 0 && !n[t->att[KP_COL_HEADERS]])
		headers = kp_sql_headers_from_array(DatumGetArrayTypeP(v[t->att[KP_COL_HEADERS]]),
											&nheaders);
	has_partition = t->att[KP_COL_PARTITION] >= 0 && !n[t->att[KP_COL_PARTITION]];
	has_ts = t->att[KP_COL_TIMESTAMP] >= 0 && !n[t->att[KP_COL_TIMESTAMP]];
	if (has_ts)
		ts = KpTimestampTzToMs(DatumGetTimestampTz(v[t->att[KP_COL_TIMESTAMP]]));

	partition = kp_bulk_add(ms->bp, ms->bt, key, key_len, value, value_len, headers, nheaders,
							has_partition,
							has_partition ? DatumGetInt32(v[t->att[KP_COL_PARTITION]]) : 0,
							has_ts, ts);

	if (rinfo->ri_projectReturning != NULL)
	{
		/* RETURNING: append this record now, to say where it went */
		int64		offset;
		TupleDesc	desc = slot->tts_tupleDescriptor;
		Datum	   *nv = palloc(sizeof(Datum) * desc->natts);
		bool	   *nn = palloc(sizeof(bool) * desc->natts);
		int			i;

		(void) kp_bulk_flush_partition(ms->bp, ms->bt, partition);
		offset = kp_bulk_last_offset(ms->bt, partition);
		for (i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute a = TupleDescAttr(desc, i);

			nn[i] = n[i];
			nv[i] = n[i] ? (Datum) 0 : datumCopy(v[i], a->attbyval, a->attlen);
		}
		if (t->att[KP_COL_PARTITION] >= 0)
		{
			nv[t->att[KP_COL_PARTITION]] = Int32GetDatum(partition);
			nn[t->att[KP_COL_PARTITION]] = false;
		}
		if (t->att[KP_COL_OFFSET] >= 0)
		{
			nv[t->att[KP_COL_OFFSET]] = Int64GetDatum(offset);
			nn[t->att[KP_COL_OFFSET]] = false;
		}
		if (t->att[KP_COL_TIMESTAMP] >= 0 && !has_ts)
		{
			nv[t->att[KP_COL_TIMESTAMP]] =
				TimestampTzGetDatum(KpMsToTimestampTz(kp_bulk_now_ms(ms->bp)));
			nn[t->att[KP_COL_TIMESTAMP]] = false;
		}
		ExecClearTuple(slot);
		memcpy(slot->tts_values, nv, sizeof(Datum) * desc->natts);
		memcpy(slot->tts_isnull, nn, sizeof(bool) * desc->natts);
		ExecStoreVirtualTuple(slot);
	}
	MemoryContextSwitchTo(old);
}

static TupleTableSlot *
fdw_exec_insert(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
				TupleTableSlot *planSlot)
{
	insert_row((FdwModifyState *) rinfo->ri_FdwState, rinfo, slot);
	return slot;
}

static TupleTableSlot **
fdw_exec_batch_insert(EState *estate, ResultRelInfo *rinfo, TupleTableSlot **slots,
					  TupleTableSlot **planSlots, int *numSlots)
{
	int			i;

	for (i = 0; i < *numSlots; i++)
		insert_row((FdwModifyState *) rinfo->ri_FdwState, rinfo, slots[i]);
	return slots;
}

static int
fdw_batch_size(ResultRelInfo *rinfo)
{
	FdwTable	t;

	if (rinfo->ri_projectReturning != NULL ||
		(rinfo->ri_TrigDesc && (rinfo->ri_TrigDesc->trig_insert_before_row ||
								rinfo->ri_TrigDesc->trig_insert_after_row)))
		return 1;
	fdw_table_load(rinfo->ri_RelationDesc, &t);
	return Max(t.batch_size, 1);
}

static void
fdw_end_modify(EState *estate, ResultRelInfo *rinfo)
{
	FdwModifyState *ms = (FdwModifyState *) rinfo->ri_FdwState;

	if (ms)
		(void) kp_bulk_finish(ms->bp);
}

static int
fdw_updatable(Relation rel)
{
	return 1 << CMD_INSERT;
}

/* ---------------------------------------------------------------------
 * IMPORT FOREIGN SCHEMA: one foreign table per topic
 * ---------------------------------------------------------------------
 */

static List *
fdw_import_schema(ImportForeignSchemaStmt *stmt, Oid serverOid)
{
	ForeignServer *srv = GetForeignServer(serverOid);
	const char *key_type = "bytea";
	const char *value_type = "bytea";
	const char *isolation = NULL;
	List	   *cmds = NIL;
	char	  **names;
	int			n;
	int			i;
	ListCell   *lc;
	KpSqlOwner	owner;

	foreach(lc, stmt->options)
	{
		DefElem    *d = lfirst_node(DefElem, lc);
		const char *s = defGetString(d);

		if (strcmp(d->defname, "key_type") == 0 || strcmp(d->defname, "value_type") == 0)
		{
			if (strcmp(s, "bytea") != 0 && strcmp(s, "text") != 0 && strcmp(s, "jsonb") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("invalid %s \"%s\"", d->defname, s),
						 errhint("Use bytea, text or jsonb.")));
			if (d->defname[0] == 'k')
				key_type = s;
			else
				value_type = s;
		}
		else if (strcmp(d->defname, "isolation_level") == 0)
		{
			(void) kp_parse_isolation(s);
			isolation = s;
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("invalid option \"%s\"", d->defname),
					 errhint("IMPORT FOREIGN SCHEMA of kafka_pg_fdw takes key_type, value_type and isolation_level.")));
	}

	kp_sql_as_owner(&owner);
	n = kp_topic_list_names(&names);
	kp_sql_as_caller(&owner);
	for (i = 0; i < n; i++)
	{
		/* the topics the role may see, as Kafka's Metadata lists them */
		if (!kp_acl_authorize(GetUserId(), NULL, KP_ACL_RESOURCE_TOPIC, names[i],
							  KP_ACL_OP_DESCRIBE))
			continue;
		if (!IsImportableForeignTable(names[i], stmt))
			continue;
		cmds = lappend(cmds,
					   psprintf("CREATE FOREIGN TABLE %s (partition integer, \"offset\" bigint, "
								"\"timestamp\" timestamptz, key %s, value %s, "
								"headers kafka.header[]) SERVER %s OPTIONS (topic %s%s%s)",
								quote_identifier(names[i]), key_type, value_type,
								quote_identifier(srv->servername), quote_literal_cstr(names[i]),
								isolation ? ", isolation_level " : "",
								isolation ? quote_literal_cstr(isolation) : ""));
	}
	return cmds;
}

Datum
kp_fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *r = makeNode(FdwRoutine);

	r->GetForeignRelSize = fdw_get_rel_size;
	r->GetForeignPaths = fdw_get_paths;
	r->GetForeignPlan = fdw_get_plan;
	r->BeginForeignScan = fdw_begin_scan;
	r->IterateForeignScan = fdw_iterate;
	r->ReScanForeignScan = fdw_rescan;
	r->EndForeignScan = fdw_end_scan;
	r->ExplainForeignScan = fdw_explain_scan;
	r->BeginForeignModify = fdw_begin_modify;
	r->ExecForeignInsert = fdw_exec_insert;
	r->ExecForeignBatchInsert = fdw_exec_batch_insert;
	r->GetForeignModifyBatchSize = fdw_batch_size;
	r->EndForeignModify = fdw_end_modify;
	r->BeginForeignInsert = fdw_begin_insert;
	r->EndForeignInsert = fdw_end_modify;
	r->IsForeignRelUpdatable = fdw_updatable;
	r->ImportForeignSchema = fdw_import_schema;
	PG_RETURN_POINTER(r);
}

/* Options: topic (tables), isolation_level and batch_size (tables, servers). */
Datum
kp_fdw_validator(PG_FUNCTION_ARGS)
{
	List	   *opts = untransformRelOptions(PG_GETARG_DATUM(0));
	Oid			catalog = PG_GETARG_OID(1);
	ListCell   *lc;

	foreach(lc, opts)
	{
		DefElem    *d = lfirst_node(DefElem, lc);
		bool		ok = false;

		if (strcmp(d->defname, "topic") == 0 && catalog == ForeignTableRelationId)
		{
			const char *s = defGetString(d);

			if (s[0] == '\0')
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_STRING_FORMAT),
						 errmsg("topic must not be empty")));
			ok = true;
		}
		else if (strcmp(d->defname, "isolation_level") == 0 &&
				 (catalog == ForeignTableRelationId || catalog == ForeignServerRelationId))
		{
			(void) kp_parse_isolation(defGetString(d));
			ok = true;
		}
		else if (strcmp(d->defname, "batch_size") == 0 &&
				 (catalog == ForeignTableRelationId || catalog == ForeignServerRelationId))
		{
			char	   *end;
			long		v = strtol(defGetString(d), &end, 10);

			if (*end != '\0' || v < 1 || v > 100000)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("batch_size must be an integer between 1 and 100000")));
			ok = true;
		}
		if (!ok)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("invalid option \"%s\"", d->defname),
					 errhint(catalog == ForeignTableRelationId ?
							 "A kafka_pg foreign table takes topic, isolation_level and batch_size." :
							 catalog == ForeignServerRelationId ?
							 "A kafka_pg server takes isolation_level and batch_size." :
							 "kafka_pg_fdw takes no options here.")));
	}
	PG_RETURN_VOID();
}
