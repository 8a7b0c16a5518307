/*-------------------------------------------------------------------------
 *
 * share.c
 *	  Share groups (KIP-932) in SQL: a SQL session acquires records of a
 *	  share group and acknowledges them in its own transaction, beside the
 *	  wire's KafkaShareConsumers of the same group (src/share/README, "SQL:
 *	  the caller's transaction").
 *
 *	  kafka.share_acquire(group_id, topic, max_records)
 *	      -> (partition, offset, delivery_count, timestamp, key, value,
 *	      headers): the records acquired, read from the log here (TOPIC
 *	      READ checked as kafka.fetch does).
 *	  kafka.share_acknowledge(group_id, topic, partition, first_offset,
 *	      last_offset, type) -> how many records were acknowledged.
 *	  kafka._fetch_wait_changes(partition_id) -> how many times the parked
 *	      fetches of the partition's wait bucket were woken (a diagnostic:
 *	      test/wire/share_wake.py checks whom a release wakes).
 *
 * The member of the acquired records is the session ("sql:<pid>"): what
 * one session acquired, another cannot acknowledge.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/tuplestore.h"

#include "catalog/kafka_catalog.h"
#include "catalog/share_catalog.h"
#include "common/kafka_errors.h"
#include "protocol/errors.h"
#include "share/share.h"
#include "codec/codec.h"
#include "store/store.h"
#include "sqlapi/sqlapi.h"

/* Kafka error code as SQLSTATE KPnnn, as consume.c raises them */
#define KAFKA_SQLSTATE(code) \
	MAKE_SQLSTATE('K', 'P', '0' + ((code) / 100) % 10, '0' + ((code) / 10) % 10, '0' + (code) % 10)

PG_FUNCTION_INFO_V1(kp_sql_share_acquire);
PG_FUNCTION_INFO_V1(kp_sql_share_acknowledge);
PG_FUNCTION_INFO_V1(kp_sql_fetch_wait_changes);

static char *
session_member(void)
{
	return psprintf("sql:%d", MyProcPid);
}

static void
check_group_id(const char *group_id)
{
	if (group_id[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("group_id must not be empty")));
}

static void
check_group(const char *group_id)
{
	check_group_id(group_id);
	if (kp_cat_share_is_other_group(group_id))
		ereport(ERROR,
				(errcode(KAFKA_SQLSTATE(KP_ERR_GROUP_ID_NOT_FOUND)),
				 errmsg("group \"%s\" is not a share group", group_id),
				 errdetail("It is a classic or consumer group: kafka.consume reads those.")));
}

/*
 * Emit the acquired records of one partition (acq: sorted offsets with
 * their delivery counts) from the log into the caller's tuplestore:
 * (partition, offset, delivery_count, timestamp, key, value, headers).
 * An offset whose record is gone (retention, compaction) gives no row.
 */
static void
emit_acquired(ReturnSetInfo *rsinfo, const char *topic, int64 partition_id, int32 partition,
			  const KpShareAcquired *acq, Oid header_type, Datum no_headers, MemoryContext record_cxt)
{
	KpLogReader *reader;
	const char *batch;
	size_t		len;
	int			k = 0;
	KpSqlOwner	owner;

	if (acq->n == 0)
		return;
	kp_sql_as_owner(&owner);
	reader = kp_log_reader_open(partition_id, acq->offsets[0]);
	while (k < acq->n && kp_log_reader_next(reader, &batch, &len))
	{
		KpBatchHeader hdr;
		KpRecordIter it;
		KpRecord	rec;
		KpCodecError err;
		bool		done = false;

		if (kp_batch_parse_header(batch, len, &hdr) != KP_CODEC_OK)
			break;
		while (k < acq->n && acq->offsets[k] < hdr.base_offset)
			k++;				/* gone meanwhile */
		if (k >= acq->n || acq->offsets[k] > KpBatchLastOffset(&hdr))
			continue;
		err = kp_record_iter_begin(&it, batch, len, KP_SQL_MAX_INFLATE);
		if (err != KP_CODEC_OK)
			ereport(ERROR,
					(errcode(ERRCODE_KP_CORRUPT_MESSAGE),
					 errmsg("cannot decode a batch of partition %d of topic \"%s\": %s",
							partition, topic, kp_codec_error_message(err))));
		while (k < acq->n)
		{
			Datum		values[7];
			bool		nulls[7] = {false, false, false, false, false, false, false};
			int64		ts;
			MemoryContext oldcxt;

			err = kp_record_iter_next(&it, &rec, &done);
			if (err != KP_CODEC_OK)
				ereport(ERROR,
						(errcode(ERRCODE_KP_CORRUPT_MESSAGE),
						 errmsg("cannot decode a record of partition %d of topic \"%s\": %s",
								partition, topic, kp_codec_error_message(err))));
			if (done)
				break;
			while (k < acq->n && acq->offsets[k] < rec.offset)
				k++;
			if (k >= acq->n || acq->offsets[k] != rec.offset)
				continue;
			ts = (it.hdr.attributes & KP_ATTR_TIMESTAMP_TYPE) ? it.hdr.max_timestamp : rec.timestamp;
			oldcxt = MemoryContextSwitchTo(record_cxt);
			values[0] = Int32GetDatum(partition);
			values[1] = Int64GetDatum(rec.offset);
			values[2] = Int32GetDatum(acq->delivery_counts[k]);
			values[3] = TimestampTzGetDatum(KpMsToTimestampTz(ts));
			if (rec.key == NULL)
				nulls[4] = true;
			else
				values[4] = kp_sql_bytes_datum(rec.key, rec.key_len, KP_OUT_BYTEA, rec.offset, "key");
			if (rec.value == NULL)
				nulls[5] = true;
			else
				values[5] = kp_sql_bytes_datum(rec.value, rec.value_len, KP_OUT_BYTEA, rec.offset, "value");
			values[6] = rec.header_count > 0 ? kp_sql_headers_datum(&rec, header_type) : no_headers;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			MemoryContextSwitchTo(oldcxt);
			MemoryContextReset(record_cxt);
			k++;
		}
		kp_record_iter_end(&it);
	}
	kp_log_reader_close(reader);
	kp_sql_as_caller(&owner);
}

/*
 * Acquire partition after partition, each through the share acquirer
 * (src/share/acquirer.c): the acquisition commits on its own before this
 * returns, stamped with this transaction's id, so other consumers skip the
 * records at once and nobody waits for this transaction.  The records are
 * read from the log here, one pass per partition.
 */
Datum
kp_sql_share_acquire(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *group_id = kp_arg_text(fcinfo, 0, "group_id");
	char	   *topic_name = kp_arg_text(fcinfo, 1, "topic");
	int32		max_records = PG_ARGISNULL(2) ? 100 : PG_GETARG_INT32(2);
	char	   *member = session_member();
	const KpTopic *topic;
	int32		partition_count;
	int32		start;
	int32		i;
	int			left;
	char		topic_copy[KP_TOPIC_NAME_MAX + 1];
	Oid			header_type;
	Datum		no_headers;
	MemoryContext record_cxt;
	int64	   *partition_ids;

	kp_sql_check_writable_fn(fcinfo);
	InitMaterializedSRF(fcinfo, 0);
	check_group(group_id);
	if (max_records < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_records must not be negative")));
	kp_acl_check(KP_ACL_RESOURCE_TOPIC, topic_name, KP_ACL_OP_READ);
	topic = kp_topic_open(topic_name, AccessShareLock, false);
	partition_count = topic->partition_count;
	strlcpy(topic_copy, topic->name, sizeof(topic_copy));
	/* the topic cache entry may be rebuilt while the acquirer works: a copy */
	partition_ids = palloc(sizeof(int64) * Max(partition_count, 1));
	memcpy(partition_ids, topic->partition_ids, sizeof(int64) * partition_count);
	left = max_records;
	header_type = get_element_type(TupleDescAttr(rsinfo->setDesc, 6)->atttypid);
	no_headers = PointerGetDatum(construct_empty_array(header_type));
	record_cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_pg share record",
									   ALLOCSET_DEFAULT_SIZES);

	/* start at a different partition in each session, so they spread out */
	start = (int32) (MyProcPid % Max(partition_count, 1));
	for (i = 0; i < partition_count && left > 0; i++)
	{
		int32		p = (start + i) % partition_count;

		for (;;)
		{
			int			ask = Min(left, KP_SHARE_ACQUIRER_MAX_RECORDS);
			KpShareAcquired acq;
			int16		code;

			code = kp_share_acquire_for_sql(group_id, topic_copy, p, member, ask, &acq);
			if (code != KP_ERR_NONE)
				ereport(ERROR,
						(errcode(KAFKA_SQLSTATE(code)),
						 errmsg("cannot acquire records of partition %d of topic \"%s\": Kafka error %d",
								p, topic_copy, code)));
			emit_acquired(rsinfo, topic_copy, partition_ids[p], p, &acq, header_type, no_headers, record_cxt);
			left -= acq.n;
			if (acq.n < ask || left == 0)
				break;
		}
	}
	MemoryContextDelete(record_cxt);
	return (Datum) 0;
}

static int8
ack_type(const char *s)
{
	if (pg_strcasecmp(s, "accept") == 0)
		return KP_ACK_ACCEPT;
	if (pg_strcasecmp(s, "release") == 0)
		return KP_ACK_RELEASE;
	if (pg_strcasecmp(s, "reject") == 0)
		return KP_ACK_REJECT;
	if (pg_strcasecmp(s, "renew") == 0)
		return KP_ACK_RENEW;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid acknowledge type \"%s\"", s),
			 errhint("Use accept, release, reject or renew, as Kafka's AcknowledgeType.")));
	return 0;
}

Datum
kp_sql_share_acknowledge(PG_FUNCTION_ARGS)
{
	char	   *group_id = kp_arg_text(fcinfo, 0, "group_id");
	char	   *topic_name = kp_arg_text(fcinfo, 1, "topic");
	int32		partition;
	int64		first;
	int64		last;
	int8		type;
	const KpTopic *topic;
	int16		code;

	kp_sql_check_writable_fn(fcinfo);
	if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("partition and first_offset must not be null")));
	partition = PG_GETARG_INT32(2);
	first = PG_GETARG_INT64(3);
	last = PG_ARGISNULL(4) ? first : PG_GETARG_INT64(4);
	type = ack_type(PG_ARGISNULL(5) ? "accept" : text_to_cstring(PG_GETARG_TEXT_PP(5)));
	/* a classic or consumer group's id: said when the acknowledgement fails */
	check_group_id(group_id);
	topic = kp_topic_open(topic_name, AccessShareLock, false);
	if (partition < 0 || partition >= topic->partition_count)
		ereport(ERROR,
				(errcode(KAFKA_SQLSTATE(KP_ERR_UNKNOWN_TOPIC_OR_PARTITION)),
				 errmsg("topic \"%s\" has no partition %d", topic->name, partition)));
	if (first < 0 || last < first)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid offset range %lld to %lld", (long long) first, (long long) last)));
	/* SPSO moves at the next acquisition: not under this transaction's lock */
	code = kp_share_acknowledge(group_id, topic->name, partition, session_member(), first, last, 1, &type,
								false);
	if (code != KP_ERR_NONE)
		check_group(group_id);
	if (code == KP_ERR_INVALID_RECORD_STATE)
		ereport(ERROR,
				(errcode(KAFKA_SQLSTATE(code)),
				 errmsg("records %lld to %lld of partition %d of topic \"%s\" are not all acquired by this session",
						(long long) first, (long long) last, partition, topic->name),
				 errhint("Acknowledge only what kafka.share_acquire returned to this session, before its lock expired.")));
	if (code != KP_ERR_NONE)
		ereport(ERROR,
				(errcode(KAFKA_SQLSTATE(code)),
				 errmsg("cannot acknowledge: Kafka error %d", code)));
	PG_RETURN_INT64(last - first + 1);
}

/*
 * kafka._fetch_wait_changes(partition_id bigint) -> bigint: the change count
 * of the partition's fetch wait bucket (src/store/waiters.c), which every
 * append, marker and share wake-up (src/share/wake.c) of the partitions of
 * that bucket moves.  Since the server started; a diagnostic for tests.
 */
Datum
kp_sql_fetch_wait_changes(PG_FUNCTION_ARGS)
{
	int64		partition_id = PG_GETARG_INT64(0);

	if (partition_id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition_id must not be negative")));
	PG_RETURN_INT64((int64) kp_log_wait_bucket_changes(kp_log_wait_bucket(partition_id)));
}
