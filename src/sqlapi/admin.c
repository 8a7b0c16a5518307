/*-------------------------------------------------------------------------
 *
 * admin.c
 *	  SQL functions for topic administration and the views.
 *
 * Thin wrappers: argument checking and conversion here, the work in
 * src/catalog and src/store, so the wire listener's CreateTopics and
 * friends call the same code.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "catalog/kafka_catalog.h"
#include "codec/codec.h"
#include "common/kafka_errors.h"
#include "sqlapi/sqlapi.h"
#include "store/store.h"

PG_FUNCTION_INFO_V1(kp_sql_store_init);
PG_FUNCTION_INFO_V1(kp_sql_create_topic);
PG_FUNCTION_INFO_V1(kp_sql_delete_topic);
PG_FUNCTION_INFO_V1(kp_sql_add_partitions);
PG_FUNCTION_INFO_V1(kp_sql_alter_topic_config);
PG_FUNCTION_INFO_V1(kp_sql_config_defaults);
PG_FUNCTION_INFO_V1(kp_sql_partition_stats);
PG_FUNCTION_INFO_V1(kp_sql_partition_segments);
PG_FUNCTION_INFO_V1(kp_sql_murmur2);
PG_FUNCTION_INFO_V1(kp_sql_flush_markers);
PG_FUNCTION_INFO_V1(kp_sql_partition_for_key);

char *
kp_arg_text(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", argname)));
	return text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/* Called by the install script: create the segment directory. */
Datum
kp_sql_store_init(PG_FUNCTION_ARGS)
{
	/* the library must be the build this script is (stamp.c) */
	kp_catalog_stamp_check();
	kp_store_forget_database();
	kp_catalog_record_store_directory(kp_store_create_directory());
	PG_RETURN_VOID();
}

/*
 * A jsonb object of configs to name/value pairs.  Values may be strings,
 * numbers or booleans; JSON null means "reset to the default" when
 * allow_null, else it is an error.
 */
static KpConfigSetting *
configs_from_jsonb(Jsonb *jb, int *nconfigs)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	KpConfigSetting *out;
	int			n = 0;
	int			cap = 8;
	char	   *key = NULL;

	*nconfigs = 0;
	if (jb == NULL)
		return NULL;
	if (!JB_ROOT_IS_OBJECT(jb))
		ereport(ERROR,
				(errcode(ERRCODE_KP_INVALID_CONFIG),
				 errmsg("topic configs must be a JSON object, like '{\"retention.ms\": \"3600000\"}'")));

	out = palloc(sizeof(KpConfigSetting) * cap);
	it = JsonbIteratorInit(&jb->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
			key = pnstrdup(v.val.string.val, v.val.string.len);
		else if (tok == WJB_VALUE)
		{
			char	   *value = NULL;

			switch (v.type)
			{
				case jbvString:
					value = pnstrdup(v.val.string.val, v.val.string.len);
					break;
				case jbvNumeric:
					value = DatumGetCString(DirectFunctionCall1(numeric_out,
																NumericGetDatum(v.val.numeric)));
					break;
				case jbvBool:
					value = pstrdup(v.val.boolean ? "true" : "false");
					break;
				case jbvNull:
					value = NULL;
					break;
				default:
					ereport(ERROR,
							(errcode(ERRCODE_KP_INVALID_CONFIG),
							 errmsg("topic config \"%s\" must be a string, number or boolean", key)));
			}
			if (n == cap)
			{
				cap *= 2;
				out = repalloc(out, sizeof(KpConfigSetting) * cap);
			}
			out[n].name = key;
			out[n].value = value;
			n++;
		}
	}
	*nconfigs = n;
	return out;
}

Datum
kp_sql_create_topic(PG_FUNCTION_ARGS)
{
	char	   *name = kp_arg_text(fcinfo, 0, "topic");
	KpSqlOwner	owner;
	int32		partitions;
	int			nconfigs;
	KpConfigSetting *configs;

	kp_sql_check_writable_fn(fcinfo);
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("partitions must not be null")));
	partitions = PG_GETARG_INT32(1);
	/* Kafka's CreateTopics: CLUSTER CREATE, or CREATE on the topic */
	if (!kp_acl_authorize(GetUserId(), NULL, KP_ACL_RESOURCE_CLUSTER, KP_ACL_CLUSTER_NAME,
						  KP_ACL_OP_CREATE))
		kp_acl_check(KP_ACL_RESOURCE_TOPIC, name, KP_ACL_OP_CREATE);
	configs = configs_from_jsonb(PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2), &nconfigs);
	kp_sql_as_owner(&owner);
	kp_topic_create(name, partitions, configs, nconfigs);
	kp_sql_as_caller(&owner);
	PG_RETURN_VOID();
}

Datum
kp_sql_delete_topic(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	KpSqlOwner	owner;

	kp_sql_check_writable_fn(fcinfo);
	kp_acl_check(KP_ACL_RESOURCE_TOPIC, name, KP_ACL_OP_DELETE);
	kp_sql_as_owner(&owner);
	kp_topic_delete(name);
	kp_sql_as_caller(&owner);
	PG_RETURN_VOID();
}

Datum
kp_sql_add_partitions(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	KpSqlOwner	owner;

	kp_sql_check_writable_fn(fcinfo);
	kp_acl_check(KP_ACL_RESOURCE_TOPIC, name, KP_ACL_OP_ALTER);
	kp_sql_as_owner(&owner);
	kp_topic_add_partitions(name, PG_GETARG_INT32(1));
	kp_sql_as_caller(&owner);
	PG_RETURN_VOID();
}

Datum
kp_sql_alter_topic_config(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int			nconfigs;
	KpConfigSetting *configs;
	KpSqlOwner	owner;

	kp_sql_check_writable_fn(fcinfo);
	kp_acl_check(KP_ACL_RESOURCE_TOPIC, name, KP_ACL_OP_ALTER_CONFIGS);
	configs = configs_from_jsonb(PG_GETARG_JSONB_P(1), &nconfigs);
	kp_sql_as_owner(&owner);
	kp_topic_alter_configs(name, configs, nconfigs);
	kp_sql_as_caller(&owner);
	PG_RETURN_VOID();
}

Datum
kp_sql_config_defaults(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	for (i = 0; i < kp_topic_config_count; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		values[0] = CStringGetTextDatum(kp_topic_config_defs[i].name);
		values[1] = CStringGetTextDatum(kp_topic_config_defs[i].default_value);
		values[2] = CStringGetTextDatum(kp_topic_config_defs[i].doc);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

Datum
kp_sql_partition_stats(PG_FUNCTION_ARGS)
{
	int64		partition_id = PG_GETARG_INT64(0);
	KpLogOffsets off;
	KpTopicLock lock;
	bool		no_stats;
	TupleDesc	tupdesc;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	/* deleted since the caller's snapshot: NULLs, as a partition with no room */
	if (!kp_topic_lock_partition_id(partition_id, &lock))
		no_stats = true;
	else
	{
		no_stats = kp_log_no_room(partition_id, "Its offsets, size and segment count show as NULL.");
		if (!no_stats)
			kp_log_offsets(partition_id, &off);
		kp_topic_unlock_partition_id(&lock);
	}
	if (no_stats)
	{
		memset(nulls, true, sizeof(nulls));
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
	}
	values[0] = Int64GetDatum(off.log_start_offset);
	values[1] = Int64GetDatum(off.log_end_offset);
	values[2] = Int64GetDatum(off.size_bytes);
	values[3] = Int32GetDatum(off.segment_count);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

Datum
kp_sql_partition_segments(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KpTopicLock lock;
	int			nsegs;
	KpSegmentStat *segs;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	if (!kp_topic_lock_partition_id(PG_GETARG_INT64(0), &lock))
		return (Datum) 0;		/* deleted since the caller's snapshot */
	segs = kp_log_segment_stats(PG_GETARG_INT64(0), &nsegs);
	kp_topic_unlock_partition_id(&lock);
	for (i = 0; i < nsegs; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		values[0] = Int64GetDatum(segs[i].base_offset);
		values[1] = ObjectIdGetDatum(segs[i].relfilenode);
		values[2] = Int64GetDatum(segs[i].size_bytes);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

Datum
kp_sql_murmur2(PG_FUNCTION_ARGS)
{
	bytea	   *data = PG_GETARG_BYTEA_PP(0);

	PG_RETURN_INT32(kp_murmur2(VARDATA_ANY(data), VARSIZE_ANY_EXHDR(data)));
}

Datum
kp_sql_partition_for_key(PG_FUNCTION_ARGS)
{
	bytea	   *key = PG_GETARG_BYTEA_PP(0);
	int32		n = PG_GETARG_INT32(1);

	if (n <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_KP_INVALID_PARTITIONS),
				 errmsg("number of partitions must be larger than 0, got %d", n)));
	PG_RETURN_INT32(kp_partition_for_key(VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key), n));
}

Datum
kp_sql_flush_markers(PG_FUNCTION_ARGS)
{
	KpSqlOwner	owner;
	int32		n;

	/* as the cleaner's functions: the resolver's work, not new data */
	PreventCommandDuringRecovery("kafka.flush_markers()");
	kp_acl_check(KP_ACL_RESOURCE_CLUSTER, KP_ACL_CLUSTER_NAME, KP_ACL_OP_CLUSTER_ACTION);
	kp_sql_as_owner(&owner);
	kp_log_sweep_sql_txns();
	n = kp_log_write_pending_markers();
	kp_sql_as_caller(&owner);
	PG_RETURN_INT32(n);
}
