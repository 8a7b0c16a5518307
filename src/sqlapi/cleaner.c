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
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "catalog/kafka_catalog.h"
#include "cleaner/cleaner.h"
#include "sqlapi/sqlapi.h"

PG_FUNCTION_INFO_V1(kp_sql_run_log_cleaner);
PG_FUNCTION_INFO_V1(kp_sql_log_cleaner_status);

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

	kp_acl_check(KP_ACL_RESOURCE_CLUSTER, KP_ACL_CLUSTER_NAME, KP_ACL_OP_ALTER);
	InitMaterializedSRF(fcinfo, 0);
	kp_sql_as_owner(&owner);
	n = kp_topic_list_names(&names);
	for (i = 0; i < n; i++)
		(void) kp_cleaner_retain_topic(names[i], report_row, rsinfo);
	kp_sql_as_caller(&owner);
	return (Datum) 0;
}

/*
 * kafka._log_cleaner_status(partition_id) -> (last_retention_run,
 * segments_deleted, bytes_reclaimed): what the cleaner did to the partition
 * since the server started (src/cleaner/status.c); nulls if nothing.
 */
Datum
kp_sql_log_cleaner_status(PG_FUNCTION_ARGS)
{
	int64		partition_id = PG_GETARG_INT64(0);
	KpCleanerStat st;
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {true, true, true};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (kp_cleaner_stat(partition_id, &st))
	{
		values[0] = TimestampTzGetDatum(KpMsToTimestampTz(st.last_retention_ms));
		values[1] = Int32GetDatum(st.segments_deleted);
		values[2] = Int64GetDatum(st.bytes_reclaimed);
		nulls[0] = nulls[1] = nulls[2] = false;
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
