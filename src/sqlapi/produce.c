/*-------------------------------------------------------------------------
 *
 * produce.c
 *	  kafka.produce and kafka.produce_batch.
 *
 * Records produced from SQL belong to the calling transaction: each batch
 * is written at once as a transactional batch of the (sub)transaction's
 * producer id (src/txn), visible to readers only once the transaction
 * commits, and never if it rolls back.
 *
 * Partitioning is the Java client's: a keyed record goes to
 * toPositive(murmur2(key)) % partitions; unkeyed records go round-robin,
 * one batch at a time (the "sticky" partitioner of KIP-480).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "fmgr.h"
#include "funcapi.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "catalog/kafka_catalog.h"
#include "codec/codec.h"
#include "common/kafka_errors.h"
#include "sqlapi/sqlapi.h"
#include "store/store.h"
#include "txn/txn.h"

PG_FUNCTION_INFO_V1(kp_sql_produce);
PG_FUNCTION_INFO_V1(kp_sql_produce_text);
PG_FUNCTION_INFO_V1(kp_sql_produce_jsonb);
PG_FUNCTION_INFO_V1(kp_sql_produce_batch);

/* round-robin position for unkeyed records, per backend */
static uint32 next_unkeyed = 0;
static bool next_unkeyed_set = false;

int32
kp_sql_round_robin(int32 partitions)
{
	if (!next_unkeyed_set)
	{
		next_unkeyed = (uint32) pg_prng_uint32(&pg_global_prng_state);
		next_unkeyed_set = true;
	}
	return (int32) (next_unkeyed++ % (uint32) partitions);
}

static int32
choose_partition(const KpTopic *topic, bool has_partition, int32 partition,
				 const char *key, int key_len)
{
	if (has_partition)
		return partition;
	if (key != NULL)
		return kp_partition_for_key(key, key_len, topic->partition_count);
	return kp_sql_round_robin(topic->partition_count);
}

/* The compression the topic asks for; "producer" means none from SQL. */
KpCompression
kp_sql_topic_compression(const KpTopic *topic)
{
	return topic->config.compression < 0 ? KP_COMPRESSION_NONE :
		(KpCompression) topic->config.compression;
}

const char *
kp_sql_datum_bytes(Datum d, KpOutForm form, int *len)
{
	if (form == KP_OUT_JSONB)
	{
		Jsonb	   *jb = DatumGetJsonbP(d);
		char	   *s = JsonbToCString(NULL, &jb->root, VARSIZE(jb));

		*len = (int) strlen(s);
		return s;
	}
	else
	{
		struct varlena *v = PG_DETOAST_DATUM_PACKED(d);

		*len = VARSIZE_ANY_EXHDR(v);
		return VARDATA_ANY(v);
	}
}

/* kafka.header[] to KpHeader[]; keys must not be null. */
KpHeader *
kp_sql_headers_from_array(ArrayType *arr, int *nheaders)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;
	KpHeader   *out;
	Oid			elemtype = ARR_ELEMTYPE(arr);
	int16		typlen;
	bool		typbyval;
	char		typalign;

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, elemtype, typlen, typbyval, typalign, &elems, &nulls, &n);
	out = palloc(sizeof(KpHeader) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		HeapTupleHeader tup;
		bool		isnull;
		Datum		d;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("record header %d is null", i + 1)));
		tup = DatumGetHeapTupleHeader(elems[i]);
		d = GetAttributeByNum(tup, 1, &isnull);
		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("record header %d has a null key", i + 1),
					 errdetail("Kafka header keys are strings; only values may be null.")));
		{
			text	   *k = DatumGetTextPP(d);

			out[i].key = VARDATA_ANY(k);
			out[i].key_len = VARSIZE_ANY_EXHDR(k);
		}
		d = GetAttributeByNum(tup, 2, &isnull);
		if (isnull)
		{
			out[i].value = NULL;
			out[i].value_len = -1;
		}
		else
		{
			bytea	   *v = DatumGetByteaPP(d);

			out[i].value = VARDATA_ANY(v);
			out[i].value_len = VARSIZE_ANY_EXHDR(v);
		}
	}
	*nheaders = n;
	return out;
}

/*
 * Append one finished batch on behalf of the current transaction: the one
 * path every SQL producer (produce, produce_batch, produce_agg, the foreign
 * tables) appends through.
 */
void
kp_sql_append_batch(const KpTopic *topic, int32 partition, char *batch, size_t len,
					int64 producer_id, KpAppendResult *res)
{
	KpPartitionRef ref;

	(void) kp_topic_check_batch_size(topic, len, true, NULL);
	kp_topic_partition(topic, partition, &ref);
	kp_log_append(&ref, &topic->config.log, batch, len, producer_id, res);
	kp_txn_note_write(ref.partition_id, producer_id);
}

/*
 * A function that writes (a record, a log start, a group's or a share
 * group's state, the catalog) refuses, as INSERT does, to run on a standby
 * or in a read-only transaction (BEGIN READ ONLY, default_transaction_read_only):
 * SQLSTATE 25006 read_only_sql_transaction, naming the function, before
 * anything asks for a transaction id or writes the store.  cmdname as core's
 * PreventCommandIfReadOnly takes it: "kafka.produce()".
 */
void
kp_sql_check_writable(const char *cmdname)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute %s during recovery", cmdname),
				 errhint("Call it on the primary; a standby serves reads.")));
	PreventCommandIfReadOnly(cmdname);
}

/*
 * kp_sql_check_writable for the SQL function called, named as it was
 * declared.  One test on the way through: a transaction started during
 * recovery is read-only too (StartTransaction), so XactReadOnly covers both.
 */
void
kp_sql_check_writable_fn(FunctionCallInfo fcinfo)
{
	if (XactReadOnly)
		kp_sql_check_writable(psprintf("kafka.%s()", get_func_name(fcinfo->flinfo->fn_oid)));
}

/*
 * The single-record produce shared by the bytea, text and jsonb forms.
 * Arguments 3.. are headers, partition, timestamp.
 */
static Datum
produce_one(FunctionCallInfo fcinfo, const char *key, int key_len,
			const char *value, int value_len)
{
	char	   *topic_name = kp_arg_text(fcinfo, 0, "topic");
	const KpTopic *topic;
	KpSqlOwner	owner;
	KpHeader   *headers = NULL;
	int			nheaders = 0;
	int32		partition;
	int64		now = KpTimestampTzToMs(GetCurrentTimestamp());
	int64		ts = now;
	int64		producer_id;
	KpBatchBuilder b;
	char	   *batch;
	size_t		len;
	KpAppendResult res;
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	kp_sql_check_writable_fn(fcinfo);
	kp_acl_check(KP_ACL_RESOURCE_TOPIC, topic_name, KP_ACL_OP_WRITE);
	kp_sql_as_owner(&owner);
	topic = kp_topic_open(topic_name, AccessShareLock, false);
	(void) kp_topic_check_record_key(topic, key != NULL, true, NULL);
	if (!PG_ARGISNULL(3))
		headers = kp_sql_headers_from_array(PG_GETARG_ARRAYTYPE_P(3), &nheaders);
	if (!PG_ARGISNULL(5))
	{
		ts = KpTimestampTzToMs(PG_GETARG_TIMESTAMPTZ(5));
		(void) kp_topic_check_timestamp(topic, ts, now, true, NULL);
	}
	partition = choose_partition(topic, !PG_ARGISNULL(4),
								 PG_ARGISNULL(4) ? 0 : PG_GETARG_INT32(4), key, key_len);
	if (!PG_ARGISNULL(4))
	{
		KpPartitionRef ref;

		kp_topic_partition(topic, partition, &ref); /* range check */
	}

	producer_id = kp_txn_sql_producer_id();
	kp_batch_builder_init(&b, kp_sql_topic_compression(topic), producer_id, 0,
						  KP_NO_SEQUENCE, true);
	kp_batch_builder_add(&b, ts, key, key_len, value, value_len, headers, nheaders);
	batch = kp_batch_builder_finish(&b, &len);
	kp_sql_append_batch(topic, partition, batch, len, producer_id, &res);
	kp_sql_as_caller(&owner);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = Int32GetDatum(partition);
	values[1] = Int64GetDatum(res.base_offset);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/* kafka.produce in the forms (key, value): bytea, text and (text, jsonb) */
static Datum
produce_form(FunctionCallInfo fcinfo, KpOutForm key_form, KpOutForm value_form)
{
	const char *key = NULL;
	const char *value = NULL;
	int			key_len = -1;
	int			value_len = -1;

	if (!PG_ARGISNULL(1))
		key = kp_sql_datum_bytes(PG_GETARG_DATUM(1), key_form, &key_len);
	if (!PG_ARGISNULL(2))
		value = kp_sql_datum_bytes(PG_GETARG_DATUM(2), value_form, &value_len);
	return produce_one(fcinfo, key, key_len, value, value_len);
}

Datum
kp_sql_produce(PG_FUNCTION_ARGS)
{
	return produce_form(fcinfo, KP_OUT_BYTEA, KP_OUT_BYTEA);
}

Datum
kp_sql_produce_text(PG_FUNCTION_ARGS)
{
	return produce_form(fcinfo, KP_OUT_TEXT, KP_OUT_TEXT);
}

Datum
kp_sql_produce_jsonb(PG_FUNCTION_ARGS)
{
	return produce_form(fcinfo, KP_OUT_TEXT, KP_OUT_JSONB);
}

/* produce_batch's result: a row per batch appended */
static void
batch_appended(void *arg, int32 partition, int64 base_offset, int32 count)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) arg;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	values[0] = Int32GetDatum(partition);
	values[1] = Int64GetDatum(base_offset);
	values[2] = Int32GetDatum(count);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * kafka.produce_batch(topic, keys[], values[], partition): many records in
 * one call, through the streaming producer of bulk.c (one open record batch
 * per partition, appended when it reaches max.message.bytes); a row per
 * batch appended.  keys may be NULL (all unkeyed); otherwise keys and
 * values pair up by position.
 */
Datum
kp_sql_produce_batch(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *topic_name = kp_arg_text(fcinfo, 0, "topic");
	Oid			arrtype = get_fn_expr_argtype(fcinfo->flinfo, 2);
	Oid			elemtype = (arrtype == TEXTARRAYOID) ? TEXTOID : BYTEAOID;
	Datum	   *keys = NULL;
	bool	   *key_nulls = NULL;
	int			nkeys = 0;
	Datum	   *vals;
	bool	   *val_nulls;
	int			nvals;
	bool		has_partition = !PG_ARGISNULL(3);
	int32		fixed_partition = has_partition ? PG_GETARG_INT32(3) : 0;
	KpBulkProducer *bp;
	KpBulkTopic *bt;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("values must not be null"),
				 errhint("A null element is a tombstone; the array itself must be given.")));
	bp = kp_bulk_begin("kafka.produce_batch()");	/* refuses read-only first */
	kp_bulk_set_append_callback(bp, batch_appended, rsinfo);
	bt = kp_bulk_topic(bp, topic_name, strlen(topic_name)); /* WRITE, then open */
	if (has_partition)
	{
		KpPartitionRef ref;

		kp_topic_partition(kp_bulk_topic_info(bt), fixed_partition, &ref);
	}

	deconstruct_array(PG_GETARG_ARRAYTYPE_P(2), elemtype, -1, false, TYPALIGN_INT,
					  &vals, &val_nulls, &nvals);
	if (!PG_ARGISNULL(1))
	{
		deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), elemtype, -1, false, TYPALIGN_INT,
						  &keys, &key_nulls, &nkeys);
		if (nkeys != nvals)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("keys has %d elements and values has %d", nkeys, nvals),
					 errhint("Pass NULL as keys for unkeyed records.")));
	}

	for (i = 0; i < nvals; i++)
	{
		const char *key = NULL;
		int			key_len = -1;
		const char *value = NULL;
		int			value_len = -1;

		CHECK_FOR_INTERRUPTS();
		if (keys && !key_nulls[i])
			key = kp_sql_datum_bytes(keys[i], KP_OUT_BYTEA, &key_len);
		if (!val_nulls[i])
			value = kp_sql_datum_bytes(vals[i], KP_OUT_BYTEA, &value_len);
		(void) kp_bulk_add(bp, bt, key, key_len, value, value_len, NULL, 0,
						   has_partition, fixed_partition, false, 0);
	}
	(void) kp_bulk_finish(bp);
	return (Datum) 0;
}
