/*-------------------------------------------------------------------------
 *
 * fetch.c
 *	  kafka.fetch (and its text/json forms) and kafka.list_offsets.
 *
 * Fetch follows Kafka's consumer semantics: records in offset order from
 * from_offset, control batches never shown; with read_committed (the
 * default) a reader stops at the first batch of a transaction still in
 * progress (the last stable offset) and skips the batches of aborted ones;
 * read_uncommitted shows everything up to the high watermark.  Which
 * batches those are is the store's cursor's to say (src/store/reader.c,
 * the read_committed algorithm); this file only turns records into rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "catalog/kafka_catalog.h"
#include "codec/codec.h"
#include "common/kafka_errors.h"
#include "sqlapi/sqlapi.h"
#include "store/store.h"

PG_FUNCTION_INFO_V1(kp_sql_fetch);
PG_FUNCTION_INFO_V1(kp_sql_list_offsets);
PG_FUNCTION_INFO_V1(kp_sql_dump_log);

/*
 * Key or value bytes of a record as the result column's type: bytea as is,
 * text and jsonb checked, with an error naming the record's offset.
 */
Datum
kp_sql_bytes_datum(const char *data, int len, KpOutForm form, int64 offset, const char *what)
{
	if (form == KP_OUT_BYTEA)
	{
		bytea	   *b = palloc(VARHDRSZ + len);

		SET_VARSIZE(b, VARHDRSZ + len);
		memcpy(VARDATA(b), data, len);
		return PointerGetDatum(b);
	}
	if (!pg_verifymbstr(data, len, true))
		ereport(ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 errmsg("%s of the record at offset %lld is not valid text in the database encoding",
						what, (long long) offset),
				 errhint("Use kafka.fetch, which returns bytea.")));
	if (form == KP_OUT_TEXT)
		return PointerGetDatum(cstring_to_text_with_len(data, len));
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(pnstrdup(data, len)));
}

/*
 * A record's headers as kafka.header[].  Keys are text (Kafka's header keys
 * are strings): a key that is not valid in the database encoding is an
 * ERROR (22021) naming the record, as a text value is, rather than text
 * PostgreSQL would refuse later.  Header values are bytea.
 */
Datum
kp_sql_headers_datum(const KpRecord *rec, Oid header_type)
{
	TupleDesc	desc = lookup_rowtype_tupdesc(header_type, -1);
	Datum	   *elems = palloc(sizeof(Datum) * Max(rec->header_count, 1));
	int			i;
	ArrayType  *arr;

	for (i = 0; i < rec->header_count; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};
		const KpHeader *h = &rec->headers[i];

		if (!pg_verifymbstr(h->key, h->key_len, true))
			ereport(ERROR,
					(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
					 errmsg("header key %d of the record at offset %lld is not valid text in the database encoding",
							i + 1, (long long) rec->offset),
					 errhint("Kafka clients read the key as UTF-8 with each invalid sequence replaced by U+FFFD.")));
		values[0] = PointerGetDatum(cstring_to_text_with_len(h->key, h->key_len));
		if (h->value == NULL)
			nulls[1] = true;
		else
			values[1] = kp_sql_bytes_datum(h->value, h->value_len, KP_OUT_BYTEA, 0, NULL);
		elems[i] = HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
	}
	arr = construct_array(elems, rec->header_count, header_type, -1, false, TYPALIGN_DOUBLE);
	ReleaseTupleDesc(desc);
	return PointerGetDatum(arr);
}

/* The form of a key or value column of a result type. */
KpOutForm
kp_sql_out_form(Oid typid)
{
	switch (typid)
	{
		case BYTEAOID:
			return KP_OUT_BYTEA;
		case JSONBOID:
			return KP_OUT_JSONB;
		default:
			return KP_OUT_TEXT;
	}
}

void
kp_sql_record_row_init(KpRecordRow *rr, KpOutForm key_form, KpOutForm value_form,
					   Oid header_type)
{
	int			c;

	for (c = 0; c < KP_NCOLS; c++)
		rr->need[c] = true;
	rr->key_form = key_form;
	rr->value_form = value_form;
	rr->header_type = header_type;
	rr->no_headers = OidIsValid(header_type) ?
		PointerGetDatum(construct_empty_array(header_type)) : (Datum) 0;
}

/*
 * The one place a record becomes a row: kafka.fetch and its forms (below),
 * and the foreign tables' scan (fdw.c).
 */
void
kp_sql_record_row(const KpRecordRow *rr, int32 partition, const KpBatchHeader *hdr,
				  const KpRecord *rec, Datum *values, bool *nulls)
{
	memset(nulls, true, sizeof(bool) * KP_NCOLS);
	if (rr->need[KP_COL_PARTITION])
	{
		values[KP_COL_PARTITION] = Int32GetDatum(partition);
		nulls[KP_COL_PARTITION] = false;
	}
	if (rr->need[KP_COL_OFFSET])
	{
		values[KP_COL_OFFSET] = Int64GetDatum(rec->offset);
		nulls[KP_COL_OFFSET] = false;
	}
	if (rr->need[KP_COL_TIMESTAMP])
	{
		/* LogAppendTime: the batch's time for every record */
		int64		ts = (hdr->attributes & KP_ATTR_TIMESTAMP_TYPE) ?
		hdr->max_timestamp : rec->timestamp;

		values[KP_COL_TIMESTAMP] = TimestampTzGetDatum(KpMsToTimestampTz(ts));
		nulls[KP_COL_TIMESTAMP] = false;
	}
	if (rr->need[KP_COL_KEY] && rec->key != NULL)
	{
		values[KP_COL_KEY] = kp_sql_bytes_datum(rec->key, rec->key_len, rr->key_form,
												rec->offset, "key");
		nulls[KP_COL_KEY] = false;
	}
	if (rr->need[KP_COL_VALUE] && rec->value != NULL)
	{
		values[KP_COL_VALUE] = kp_sql_bytes_datum(rec->value, rec->value_len, rr->value_form,
												  rec->offset, "value");
		nulls[KP_COL_VALUE] = false;
	}
	if (rr->need[KP_COL_HEADERS])
	{
		values[KP_COL_HEADERS] = rec->header_count > 0 ?
			kp_sql_headers_datum(rec, rr->header_type) : rr->no_headers;
		nulls[KP_COL_HEADERS] = false;
	}
}

void
kp_sql_record_iter_begin(KpRecordIter *it, const char *batch, size_t len,
						 const KpTopic *topic, int32 partition)
{
	KpCodecError err = kp_record_iter_begin(it, batch, len, KP_SQL_MAX_INFLATE);

	if (err != KP_CODEC_OK)
		ereport(ERROR,
				(errcode(ERRCODE_KP_CORRUPT_MESSAGE),
				 errmsg("cannot decode a batch of partition %d of topic \"%s\": %s",
						partition, topic->name, kp_codec_error_message(err))));
}

bool
kp_sql_record_iter_next(KpRecordIter *it, KpRecord *rec, const KpTopic *topic, int32 partition)
{
	bool		done = false;
	KpCodecError err = kp_record_iter_next(it, rec, &done);

	if (err != KP_CODEC_OK)
		ereport(ERROR,
				(errcode(ERRCODE_KP_CORRUPT_MESSAGE),
				 errmsg("cannot decode a record of partition %d of topic \"%s\": %s",
						partition, topic->name, kp_codec_error_message(err))));
	return !done;
}

bool
kp_parse_isolation(const char *s)
{
	if (strcmp(s, "read_committed") == 0)
		return true;
	if (strcmp(s, "read_uncommitted") == 0)
		return false;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid isolation_level \"%s\"", s),
			 errhint("Use read_committed or read_uncommitted.")));
	return true;
}

/*
 * Emit records of one partition into the caller's tuplestore (columns:
 * partition, offset, timestamp, key, value, headers; key/value types as
 * the result type says), from from_offset, at most max_records.  Returns
 * how many were emitted; *position is where a consumer goes on from: past
 * every record emitted and every batch skipped (markers, aborted
 * transactions), not past a transaction still in progress.
 */
int
kp_sql_emit_records(ReturnSetInfo *rsinfo, const KpTopic *topic, int32 partition,
					int64 from_offset, int max_records, bool read_committed,
					int64 *position)
{
	KpPartitionRef ref;
	KpLogOffsets off;
	KpLogReader *reader;
	const char *batch;
	size_t		len;
	int			emitted = 0;
	KpRecordRow row;
	KpBatchVisibility vis;
	MemoryContext record_cxt;
	MemoryContext oldcxt;

	*position = from_offset;

	kp_topic_partition(topic, partition, &ref);
	kp_log_offsets(ref.partition_id, &off);
	if (from_offset < off.log_start_offset || from_offset > off.log_end_offset)
		ereport(ERROR,
				(errcode(ERRCODE_KP_OFFSET_OUT_OF_RANGE),
				 errmsg("offset %lld is out of range for partition %d of topic \"%s\"",
						(long long) from_offset, partition, topic->name),
				 errdetail("The log starts at offset %lld and ends at %lld.",
						   (long long) off.log_start_offset, (long long) off.log_end_offset)));
	if (max_records == 0 || from_offset == off.log_end_offset)
		return 0;

	kp_sql_record_row_init(&row,
						   kp_sql_out_form(TupleDescAttr(rsinfo->setDesc, KP_COL_KEY)->atttypid),
						   kp_sql_out_form(TupleDescAttr(rsinfo->setDesc, KP_COL_VALUE)->atttypid),
						   get_element_type(TupleDescAttr(rsinfo->setDesc,
														  KP_COL_HEADERS)->atttypid));
	/* what a record's datums need lives until it is in the tuplestore */
	record_cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_pg fetched record",
									   ALLOCSET_DEFAULT_SIZES);

	/* the store's cursor applies read_committed (src/store/reader.c) */
	reader = kp_log_cursor_open(ref.partition_id, from_offset,
								read_committed ? KP_READ_COMMITTED : KP_READ_UNCOMMITTED);
	while (emitted < max_records && kp_log_cursor_next(reader, &batch, &len, &vis))
	{
		KpRecordIter it;
		KpRecord	rec;
		bool		whole = true;

		/*
		 * Markers and aborted transactions: skipped, not inflated; the
		 * position moves past them.
		 */
		if (vis != KP_BATCH_VISIBLE)
		{
			KpBatchHeader hdr;

			if (kp_batch_parse_header(batch, len, &hdr) == KP_CODEC_OK)
				*position = Max(*position, KpBatchLastOffset(&hdr) + 1);
			continue;
		}
		kp_sql_record_iter_begin(&it, batch, len, topic, partition);
		for (;;)
		{
			Datum		values[KP_NCOLS];
			bool		nulls[KP_NCOLS];

			if (!kp_sql_record_iter_next(&it, &rec, topic, partition))
				break;
			if (rec.offset < from_offset)
				continue;
			if (emitted >= max_records)
			{
				whole = false;
				break;
			}
			oldcxt = MemoryContextSwitchTo(record_cxt);
			kp_sql_record_row(&row, partition, &it.hdr, &rec, values, nulls);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			MemoryContextSwitchTo(oldcxt);
			MemoryContextReset(record_cxt);
			emitted++;
			*position = rec.offset + 1;
		}
		if (whole)
			*position = Max(*position, KpBatchLastOffset(&it.hdr) + 1);
		kp_record_iter_end(&it);
	}
	kp_log_reader_close(reader);
	MemoryContextDelete(record_cxt);
	return emitted;
}

Datum
kp_sql_fetch(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *topic_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32		partition = PG_GETARG_INT32(1);
	int64		from_offset = PG_GETARG_INT64(2);
	int32		max_records = PG_GETARG_INT32(3);
	bool		read_committed = kp_parse_isolation(text_to_cstring(PG_GETARG_TEXT_PP(4)));
	const KpTopic *topic;
	int64		position;
	KpSqlOwner	owner;

	InitMaterializedSRF(fcinfo, 0);
	if (max_records < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_records must not be negative")));
	kp_acl_check(KP_ACL_RESOURCE_TOPIC, topic_name, KP_ACL_OP_READ);
	kp_sql_as_owner(&owner);
	topic = kp_topic_open(topic_name, AccessShareLock, false);
	(void) kp_sql_emit_records(rsinfo, topic, partition, from_offset, max_records,
							   read_committed, &position);
	kp_sql_as_caller(&owner);
	return (Datum) 0;
}

/* ListOffsets for one partition: -2 earliest, -1 latest, -3 max timestamp. */
Datum
kp_sql_list_offsets(PG_FUNCTION_ARGS)
{
	char	   *topic_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32		partition = PG_GETARG_INT32(1);
	int64		ts = PG_GETARG_INT64(2);
	const KpTopic *topic;
	KpPartitionRef ref;
	KpLogOffsets off;
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, true};
	int64		offset;
	int64		found_ts = -1;
	KpSqlOwner	owner;

	kp_acl_check(KP_ACL_RESOURCE_TOPIC, topic_name, KP_ACL_OP_DESCRIBE);
	kp_sql_as_owner(&owner);
	topic = kp_topic_open(topic_name, AccessShareLock, false);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	kp_topic_partition(topic, partition, &ref);
	kp_log_offsets(ref.partition_id, &off);

	if (ts == -2)
		offset = off.log_start_offset;
	else if (ts == -1)
		offset = off.log_end_offset;
	else if (ts == -3)
		offset = kp_log_max_timestamp(ref.partition_id, &found_ts);
	else if (ts < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid timestamp %lld", (long long) ts),
				 errhint("Use -2 for the earliest offset, -1 for the latest, -3 for the largest timestamp, or milliseconds since 1970.")));
	else
		offset = kp_log_offset_for_timestamp(ref.partition_id, ts, &found_ts);

	kp_sql_as_caller(&owner);
	if (offset < 0)
		nulls[0] = true;
	else
		values[0] = Int64GetDatum(offset);
	if (found_ts >= 0)
	{
		nulls[1] = false;
		values[1] = TimestampTzGetDatum(KpMsToTimestampTz(found_ts));
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/* kafka.dump_log: the stored batches, markers included, with their headers. */
Datum
kp_sql_dump_log(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *topic_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32		partition = PG_GETARG_INT32(1);
	int64		from_offset = PG_GETARG_INT64(2);
	int32		max_batches = PG_GETARG_INT32(3);
	const KpTopic *topic;
	KpPartitionRef ref;
	KpLogReader *reader;
	const char *batch;
	size_t		len;
	int			n = 0;
	KpSqlOwner	owner;

	kp_acl_check(KP_ACL_RESOURCE_TOPIC, topic_name, KP_ACL_OP_READ);
	kp_sql_as_owner(&owner);
	topic = kp_topic_open(topic_name, AccessShareLock, false);

	InitMaterializedSRF(fcinfo, 0);
	kp_topic_partition(topic, partition, &ref);
	reader = kp_log_reader_open(ref.partition_id, from_offset);
	while (n < max_batches && kp_log_reader_next(reader, &batch, &len))
	{
		KpBatchHeader hdr;
		Datum		values[14];
		bool		nulls[14];
		bool		crc_ok = (kp_batch_validate(batch, len, &hdr) == KP_CODEC_OK);

		memset(nulls, 0, sizeof(nulls));
		kp_batch_parse_header(batch, len, &hdr);
		values[0] = Int64GetDatum(hdr.base_offset);
		values[1] = Int64GetDatum(KpBatchLastOffset(&hdr));
		values[2] = Int32GetDatum(hdr.records_count);
		values[3] = Int32GetDatum((int32) len);
		values[4] = CStringGetTextDatum(kp_compression_name(KpBatchCompression(&hdr)));
		values[5] = BoolGetDatum(KpBatchIsTransactional(&hdr));
		values[6] = BoolGetDatum(KpBatchIsControl(&hdr));
		nulls[7] = true;
		if (KpBatchIsControl(&hdr))
		{
			KpRecordIter it;
			KpRecord	rec;
			bool		done;
			int16		type;

			if (kp_record_iter_begin(&it, batch, len, 1024) == KP_CODEC_OK)
			{
				if (kp_record_iter_next(&it, &rec, &done) == KP_CODEC_OK && !done &&
					kp_parse_control_key(rec.key, rec.key_len, &type))
				{
					values[7] = CStringGetTextDatum(type == KP_CONTROL_COMMIT ? "COMMIT" :
													type == KP_CONTROL_ABORT ? "ABORT" : "UNKNOWN");
					nulls[7] = false;
				}
				kp_record_iter_end(&it);
			}
		}
		values[8] = Int64GetDatum(hdr.producer_id);
		values[9] = Int16GetDatum(hdr.producer_epoch);
		values[10] = Int32GetDatum(hdr.base_sequence);
		values[11] = TimestampTzGetDatum(KpMsToTimestampTz(hdr.max_timestamp));
		values[12] = BoolGetDatum(crc_ok);
		/* KIP-534: a clean set it; then baseTimestamp is the horizon */
		values[13] = TimestampTzGetDatum(KpMsToTimestampTz(hdr.base_timestamp));
		nulls[13] = !(hdr.attributes & KP_ATTR_DELETE_HORIZON);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		n++;
	}
	kp_log_reader_close(reader);
	kp_sql_as_caller(&owner);
	return (Datum) 0;
}
