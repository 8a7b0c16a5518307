/*-------------------------------------------------------------------------
 *
 * table.c
 *	  kafka.table (and its text/json forms): the latest value per key of a
 *	  topic, what Kafka Streams calls a KTable (StreamsBuilder#table).
 *
 * One pass over each partition with the store's cursor (src/store/reader.c,
 * the read_committed algorithm, as kafka.fetch reads), from the log start
 * to where the cursor ends: the last stable offset with read_committed (the
 * default; aborted transactions' records are never seen), the high
 * watermark with read_uncommitted.  A hash table keyed by the key's bytes
 * keeps, per key, the latest record (offset, timestamp, value, headers); a
 * tombstone (null value) removes its key.  Records without a key are not
 * part of a table and are skipped, as a KTable drops them.  Then the live
 * keys are emitted in offset order, partition after partition.
 *
 * Memory: one partition's table at a time, in a memory context of its own
 * (keys, latest values and headers, the hash array), bounded by the
 * PostgreSQL hash memory limit (work_mem x hash_mem_multiplier, what a hash
 * aggregate may use); past it the call fails with 53200 rather than spill.
 * Superseded values are freed as the pass goes, so what counts is the live
 * keys' latest records, not the log's size: on a compacted topic the cleaned
 * part holds about that, plus the dirty tail.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "catalog/kafka_catalog.h"
#include "codec/codec.h"
#include "common/kafka_errors.h"
#include "sqlapi/sqlapi.h"
#include "store/store.h"

PG_FUNCTION_INFO_V1(kp_sql_table);

/* A key: its bytes (in the record while looking up, copied once inserted). */
typedef struct KtKey
{
	const char *data;
	int			len;
} KtKey;

/* The latest record of one key. */
typedef struct KtEntry
{
	KtKey		key;
	uint32		hash;
	char		status;			/* simplehash's */
	int64		offset;
	int64		timestamp;		/* ms */
	int			value_len;
	int			header_count;
	char	   *payload;		/* headers array, then value and header bytes */
	const char *value;			/* in payload */
	KpHeader   *headers;		/* in payload */
} KtEntry;

static inline bool
kt_key_equal(KtKey a, KtKey b)
{
	return a.len == b.len && memcmp(a.data, b.data, a.len) == 0;
}

#define SH_PREFIX		kt
#define SH_ELEMENT_TYPE	KtEntry
#define SH_KEY_TYPE		KtKey
#define SH_KEY			key
#define SH_HASH_KEY(tb, k)	hash_bytes((const unsigned char *) (k).data, (k).len)
#define SH_EQUAL(tb, a, b)	kt_key_equal(a, b)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a)	((a)->hash)
#define SH_SCOPE		static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* Replace the entry's record by rec's (copied into the table's context). */
static void
kt_set_record(KtEntry *e, const KpRecord *rec, int64 ts)
{
	Size		size = MAXALIGN(sizeof(KpHeader) * rec->header_count) + rec->value_len;
	char	   *p;
	int			i;

	for (i = 0; i < rec->header_count; i++)
		size += rec->headers[i].key_len + Max(rec->headers[i].value_len, 0);
	if (e->payload != NULL)
		pfree(e->payload);
	e->payload = MemoryContextAllocHuge(CurrentMemoryContext, Max(size, 1));
	e->headers = (KpHeader *) e->payload;
	p = e->payload + MAXALIGN(sizeof(KpHeader) * rec->header_count);
	memcpy(p, rec->value, rec->value_len);
	e->value = p;
	p += rec->value_len;
	for (i = 0; i < rec->header_count; i++)
	{
		const KpHeader *h = &rec->headers[i];

		memcpy(p, h->key, h->key_len);
		e->headers[i].key = p;
		e->headers[i].key_len = h->key_len;
		p += h->key_len;
		if (h->value == NULL)
		{
			e->headers[i].value = NULL;
			e->headers[i].value_len = -1;
		}
		else
		{
			memcpy(p, h->value, h->value_len);
			e->headers[i].value = p;
			e->headers[i].value_len = h->value_len;
			p += h->value_len;
		}
	}
	e->offset = rec->offset;
	e->timestamp = ts;
	e->value_len = rec->value_len;
	e->header_count = rec->header_count;
}

static int
kt_entry_cmp(const void *a, const void *b)
{
	int64		oa = (*(KtEntry *const *) a)->offset;
	int64		ob = (*(KtEntry *const *) b)->offset;

	return oa < ob ? -1 : oa > ob ? 1 : 0;
}

/*
 * Read one partition into a table in table_cxt (which the caller resets),
 * then emit its live keys in offset order into the result.
 */
static void
kt_partition(ReturnSetInfo *rsinfo, const KpTopic *topic, int32 partition,
			 bool read_committed, MemoryContext table_cxt, Size mem_limit)
{
	KpPartitionRef ref;
	KpLogOffsets off;
	KpLogReader *reader;
	const char *batch;
	size_t		len;
	KpBatchVisibility vis;
	kt_hash    *tab;
	KtEntry   **rows;
	KtEntry    *e;
	kt_iterator iter;
	int			n = 0;
	int			i;
	KpOutForm	key_form = kp_sql_out_form(TupleDescAttr(rsinfo->setDesc, 3)->atttypid);
	KpOutForm	value_form = kp_sql_out_form(TupleDescAttr(rsinfo->setDesc, 4)->atttypid);
	Oid			header_type = get_element_type(TupleDescAttr(rsinfo->setDesc, 5)->atttypid);
	Datum		no_headers;
	MemoryContext record_cxt;
	MemoryContext oldcxt;

	kp_topic_partition(topic, partition, &ref);
	kp_log_offsets(ref.partition_id, &off);
	tab = kt_create(table_cxt, 256, NULL);

	reader = kp_log_cursor_open(ref.partition_id, off.log_start_offset,
								read_committed ? KP_READ_COMMITTED : KP_READ_UNCOMMITTED);
	while (kp_log_cursor_next(reader, &batch, &len, &vis))
	{
		KpRecordIter it;
		KpRecord	rec;

		CHECK_FOR_INTERRUPTS();
		/* markers and aborted transactions' batches are never shown */
		if (vis != KP_BATCH_VISIBLE)
			continue;
		kp_sql_record_iter_begin(&it, batch, len, topic, partition);
		for (;;)
		{
			KtKey		key;
			bool		found;

			if (!kp_sql_record_iter_next(&it, &rec, topic, partition))
				break;
			if (rec.key == NULL)
				continue;		/* not part of a table */
			key.data = rec.key;
			key.len = rec.key_len;
			if (rec.value == NULL)
			{
				/* a tombstone: the key is gone (until a later value) */
				e = kt_lookup(tab, key);
				if (e != NULL)
				{
					pfree((char *) e->key.data);
					pfree(e->payload);
					kt_delete_item(tab, e);
				}
				continue;
			}
			oldcxt = MemoryContextSwitchTo(table_cxt);
			e = kt_insert(tab, key, &found);
			if (!found)
			{
				char	   *copy = palloc(Max(key.len, 1));

				memcpy(copy, key.data, key.len);
				e->key.data = copy;
				e->payload = NULL;
			}
			kt_set_record(e, &rec,
						  (it.hdr.attributes & KP_ATTR_TIMESTAMP_TYPE) ?
						  it.hdr.max_timestamp : rec.timestamp);
			MemoryContextSwitchTo(oldcxt);
			if (MemoryContextMemAllocated(table_cxt, true) > mem_limit)
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("the latest records of partition %d of topic \"%s\" need more than %zu kB of memory",
								partition, topic->name, mem_limit / 1024),
						 errdetail("%u keys were held when the record at offset %lld was read.",
								   tab->members, (long long) rec.offset),
						 errhint("kafka.table holds the latest record of every key of a partition in memory, up to work_mem times hash_mem_multiplier; raise work_mem.")));
		}
		kp_record_iter_end(&it);
	}
	kp_log_reader_close(reader);

	/* the live keys, in offset order */
	rows = MemoryContextAllocHuge(table_cxt, sizeof(KtEntry *) * Max(tab->members, 1));
	kt_start_iterate(tab, &iter);
	while ((e = kt_iterate(tab, &iter)) != NULL)
		rows[n++] = e;
	qsort(rows, n, sizeof(KtEntry *), kt_entry_cmp);

	no_headers = PointerGetDatum(construct_empty_array(header_type));
	record_cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_pg table row",
									   ALLOCSET_DEFAULT_SIZES);
	for (i = 0; i < n; i++)
	{
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};

		e = rows[i];
		oldcxt = MemoryContextSwitchTo(record_cxt);
		values[0] = Int32GetDatum(partition);
		values[1] = Int64GetDatum(e->offset);
		values[2] = TimestampTzGetDatum(KpMsToTimestampTz(e->timestamp));
		values[3] = kp_sql_bytes_datum(e->key.data, e->key.len, key_form, e->offset, "key");
		values[4] = kp_sql_bytes_datum(e->value, e->value_len, value_form, e->offset, "value");
		if (e->header_count > 0)
		{
			KpRecord	r;

			memset(&r, 0, sizeof(r));
			r.offset = e->offset;
			r.header_count = e->header_count;
			r.headers = e->headers;
			values[5] = kp_sql_headers_datum(&r, header_type);
		}
		else
			values[5] = no_headers;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(record_cxt);
	}
	MemoryContextDelete(record_cxt);
}

/*
 * kafka.table(topic, partition DEFAULT NULL, isolation_level DEFAULT
 * 'read_committed') -> (partition, offset, timestamp, key, value, headers):
 * one row per live key, of one partition or of every partition.
 */
Datum
kp_sql_table(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *topic_name = kp_arg_text(fcinfo, 0, "topic");
	bool		read_committed = kp_parse_isolation(kp_arg_text(fcinfo, 2, "isolation_level"));
	const KpTopic *topic;
	MemoryContext table_cxt;
	Size		mem_limit = get_hash_memory_limit();
	KpSqlOwner	owner;

	InitMaterializedSRF(fcinfo, 0);
	kp_acl_check(KP_ACL_RESOURCE_TOPIC, topic_name, KP_ACL_OP_READ);
	kp_sql_as_owner(&owner);
	topic = kp_topic_open(topic_name, AccessShareLock, false);
	table_cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_pg table",
									  ALLOCSET_DEFAULT_SIZES);
	if (!PG_ARGISNULL(1))
		kt_partition(rsinfo, topic, PG_GETARG_INT32(1), read_committed, table_cxt, mem_limit);
	else
	{
		int32		p;

		for (p = 0; p < topic->partition_count; p++)
		{
			kt_partition(rsinfo, topic, p, read_committed, table_cxt, mem_limit);
			MemoryContextReset(table_cxt);
		}
	}
	MemoryContextDelete(table_cxt);
	kp_sql_as_caller(&owner);
	return (Datum) 0;
}
