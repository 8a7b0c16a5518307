/*-------------------------------------------------------------------------
 *
 * cleaner.c
 *	  kafka.run_log_cleaner: one retention pass now, from SQL; and
 *	  kafka._log_cleaner_status, under the kafka.log_cleaner_status view.
 *
 * The same pass the log cleaner worker runs every
 * kafka.log_retention_check_interval_ms (src/cleaner), over every topic, in
 * the caller's transaction: for a DBA who wants the space back now, and for
 * tests that cannot wait for the interval.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "catalog/kafka_catalog.h"
#include "cleaner/cleaner.h"
#include "sqlapi/sqlapi.h"

PG_FUNCTION_INFO_V1(kp_sql_run_log_cleaner);
PG_FUNCTION_INFO_V1(kp_sql_log_cleaner_status);
PG_FUNCTION_INFO_V1(kp_sql_run_log_compaction);

static void
report_row(const char *topic, int32 partition, const KpRetentionResult *r,
		   void *arg)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) arg;
	Datum		values[5];
	bool		nulls[5] = {0};

	values[0] = CStringGetTextDatum(topic);
	values[1] = Int32GetDatum(partition);
	values[2] = Int32GetDatum(r->segments_deleted);
	values[3] = Int64GetDatum(r->bytes_deleted);
	values[4] = Int64GetDatum(r->log_start_offset);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* kafka.run_log_cleaner() -> (topic, partition, segments_deleted, ...) */
Datum
kp_sql_run_log_cleaner(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	  **names;
	int			n;
	int			i;
	KpSqlOwner	owner;

	PreventCommandDuringRecovery("kafka.run_log_cleaner()");
	kp_acl_check(KP_ACL_RESOURCE_CLUSTER, KP_ACL_CLUSTER_NAME, KP_ACL_OP_ALTER);
	InitMaterializedSRF(fcinfo, 0);
	kp_sql_as_owner(&owner);
	n = kp_topic_list_names(&names);
	for (i = 0; i < n; i++)
		(void) kp_cleaner_retain_topic(names[i], report_row, rsinfo);
	/* and compaction, whose results kafka.log_cleaner_status shows */
	for (i = 0; i < n; i++)
		(void) kp_cleaner_compact_topic(names[i], -1, NULL, NULL, NULL);
	kp_sql_as_caller(&owner);
	return (Datum) 0;
}

static void
compaction_row(const char *topic, int32 partition, const KpCompactResult *r,
			   int replaced_dropped, void *arg)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) arg;
	Datum		values[13];
	bool		nulls[13] = {0};

	values[0] = CStringGetTextDatum(topic);
	values[1] = Int32GetDatum(partition);
	values[2] = BoolGetDatum(r->cleaned);
	values[3] = BoolGetDatum(r->forced);
	values[4] = Float8GetDatum(r->dirty_ratio);
	values[5] = Int64GetDatum(r->first_dirty_offset);
	nulls[5] = r->first_dirty_offset < 0;
	values[6] = Int64GetDatum(r->first_uncleanable_offset);
	nulls[6] = r->first_uncleanable_offset < 0;
	values[7] = Int64GetDatum(r->end_offset);
	nulls[7] = !r->cleaned;
	values[8] = Int32GetDatum(r->segments_before);
	values[9] = Int32GetDatum(r->segments_after);
	values[10] = Int64GetDatum(r->bytes_before);
	values[11] = Int64GetDatum(r->bytes_after);
	values[12] = Int32GetDatum(replaced_dropped);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * kafka.run_log_compaction(topic) -> one row per partition of the compacted
 * topics (all of them if topic is null): one compaction pass now, in the
 * caller's transaction, as the worker runs it.
 */
Datum
kp_sql_run_log_compaction(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	  **names;
	int			n;
	int			i;
	KpSqlOwner	owner;

	PreventCommandDuringRecovery("kafka.run_log_compaction()");
	kp_acl_check(KP_ACL_RESOURCE_CLUSTER, KP_ACL_CLUSTER_NAME, KP_ACL_OP_ALTER);
	InitMaterializedSRF(fcinfo, 0);
	kp_sql_as_owner(&owner);
	if (!PG_ARGISNULL(0))
	{
		char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
		int32		np;

		(void) kp_cleaner_compact_topic(name, -1, compaction_row, rsinfo, &np);
		kp_sql_as_caller(&owner);
		return (Datum) 0;
	}
	n = kp_topic_list_names(&names);
	for (i = 0; i < n; i++)
		(void) kp_cleaner_compact_topic(names[i], -1, compaction_row, rsinfo, NULL);
	kp_sql_as_caller(&owner);
	return (Datum) 0;
}

/*
 * kafka._log_cleaner_status(partition_id) -> (last_retention_run,
 * segments_deleted, bytes_reclaimed, last_compaction_run, compactions,
 * dirty_ratio, compaction_bytes_reclaimed, first_dirty_offset): what the
 * cleaner did to the partition since the server started
 * (src/cleaner/status.c), nulls if nothing; first_dirty_offset is the
 * store's (durable: the cleaner checkpoint, or the log start offset).
 */
Datum
kp_sql_log_cleaner_status(PG_FUNCTION_ARGS)
{
	int64		partition_id = PG_GETARG_INT64(0);
	KpCleanerStat st;
	TupleDesc	tupdesc;
	Datum		values[8];
	bool		nulls[8];
	int64		checkpoint;
	int			i;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	for (i = 0; i < 8; i++)
		nulls[i] = true;
	if (kp_cleaner_stat(partition_id, &st))
	{
		if (st.last_retention_ms > 0)
		{
			values[0] = TimestampTzGetDatum(KpMsToTimestampTz(st.last_retention_ms));
			nulls[0] = false;
		}
		values[1] = Int32GetDatum(st.segments_deleted);
		values[2] = Int64GetDatum(st.bytes_reclaimed);
		nulls[1] = nulls[2] = false;
		if (st.last_compaction_ms > 0)
		{
			values[3] = TimestampTzGetDatum(KpMsToTimestampTz(st.last_compaction_ms));
			nulls[3] = false;
		}
		values[4] = Int32GetDatum(st.compactions);
		nulls[4] = false;
		if (st.dirty_ratio >= 0)
		{
			values[5] = Float8GetDatum(st.dirty_ratio);
			nulls[5] = false;
		}
		values[6] = Int64GetDatum(st.compaction_bytes_before - st.compaction_bytes_after);
		nulls[6] = false;
	}
	checkpoint = kp_log_first_dirty_offset(partition_id);
	values[7] = Int64GetDatum(checkpoint);
	nulls[7] = false;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
