/*-------------------------------------------------------------------------
 *
 * bulk.c
 *	  A streaming producer, and kafka.produce_agg on top of it.
 *
 * kafka.produce_batch takes arrays: a million records are a million-element
 * array in memory first.  The streaming producer takes records one at a
 * time and keeps one open record batch per partition, appending a batch as
 * soon as it is full (the topic's max.message.bytes) or the open batches
 * together reach the memory bound (work_mem, at least 1 MB); the rest is
 * appended at the end.  Batches go through produce.c's kp_sql_append_batch
 * as transactional batches of the calling (sub)transaction, exactly as
 * kafka.produce's: visible at COMMIT, never after ROLLBACK.  Partitioning is
 * produce_batch's: explicit partition, else murmur2 of the key, else the
 * sticky round-robin of KIP-480 (a new partition when a batch is full).
 *
 * Users: the aggregate kafka.produce_agg (below) and the foreign tables of
 * fdw.c (INSERT, COPY FROM).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/primnodes.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "catalog/kafka_catalog.h"
#include "codec/codec.h"
#include "common/kafka_errors.h"
#include "sqlapi/sqlapi.h"
#include "store/store.h"
#include "txn/txn.h"

/* One partition's open batch. */
typedef struct BulkPending
{
	bool		started;
	KpBatchBuilder builder;
	int64		last_offset;	/* of the last batch appended, -1: none */
	size_t		last_size;		/* bytes of the last batch appended,
								 * uncompressed; 0: none */
} BulkPending;

struct KpBulkTopic
{
	char	   *name;
	int			name_len;
	const KpTopic *topic;		/* a copy in the producer's context */
	BulkPending *pending;		/* [partition_count] */
	int32		sticky;			/* unkeyed records go here; -1: not chosen */
	size_t		max_bytes;		/* max.message.bytes */
	KpCompression compression;
};

struct KpBulkProducer
{
	MemoryContext cxt;
	SubTransactionId subid;		/* the (sub)transaction it began in */
	KpBulkTopic **topics;
	int			ntopics;
	int			maxtopics;
	KpBulkTopic *last;			/* the topic of the previous record */
	int64		now_ms;
	size_t		buffered;		/* bytes in the open batches */
	size_t		max_buffered;
	int64		records;
	KpBulkAppendCallback on_append;
	void	   *on_append_arg;
};

KpBulkProducer *
kp_bulk_begin(const char *cmdname)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "kafka_pg bulk producer",
											  ALLOCSET_DEFAULT_SIZES);
	KpBulkProducer *bp = MemoryContextAllocZero(cxt, sizeof(KpBulkProducer));

	kp_sql_check_writable(cmdname);
	bp->cxt = cxt;
	bp->subid = GetCurrentSubTransactionId();
	bp->now_ms = KpTimestampTzToMs(GetCurrentTimestamp());
	bp->max_buffered = Max((size_t) work_mem * 1024, (size_t) 1024 * 1024);
	return bp;
}

/*
 * Records are added and batches appended in the (sub)transaction the
 * producer began in: its open batches carry that (sub)transaction's
 * producer id, and records added elsewhere would commit or roll back with
 * the wrong one.  Only a cursor over kafka.produce_agg can get there (a
 * hash aggregate takes all its rows at the first FETCH and appends each
 * group's rest when the group is fetched or the cursor closed).
 */
static void
check_subtransaction(KpBulkProducer *bp)
{
	if (GetCurrentSubTransactionId() != bp->subid)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("a bulk produce cannot go on in another subtransaction than the one it began in"),
				 errdetail("Its open record batches belong to the (sub)transaction that began it."),
				 errhint("Fetch a cursor over kafka.produce_agg to its end, or close it, before SAVEPOINT, RELEASE or ROLLBACK TO.")));
}

void
kp_bulk_set_append_callback(KpBulkProducer *bp, KpBulkAppendCallback cb, void *arg)
{
	bp->on_append = cb;
	bp->on_append_arg = arg;
}

int64
kp_bulk_now_ms(KpBulkProducer *bp)
{
	return bp->now_ms;
}

const KpTopic *
kp_bulk_topic_info(KpBulkTopic *bt)
{
	return bt->topic;
}

KpBulkTopic *
kp_bulk_topic(KpBulkProducer *bp, const char *name, int name_len)
{
	KpBulkTopic *bt;
	MemoryContext old;
	KpSqlOwner	owner;
	int			i;

	if (bp->last && bp->last->name_len == name_len &&
		memcmp(bp->last->name, name, name_len) == 0)
		return bp->last;
	for (i = 0; i < bp->ntopics; i++)
	{
		bt = bp->topics[i];
		if (bt->name_len == name_len && memcmp(bt->name, name, name_len) == 0)
		{
			bp->last = bt;
			return bt;
		}
	}

	old = MemoryContextSwitchTo(bp->cxt);
	bt = palloc0(sizeof(KpBulkTopic));
	bt->name = pnstrdup(name, name_len);
	bt->name_len = name_len;
	kp_acl_check(KP_ACL_RESOURCE_TOPIC, bt->name, KP_ACL_OP_WRITE);
	kp_sql_as_owner(&owner);
	bt->topic = kp_topic_open(bt->name, AccessShareLock, false);
	kp_sql_as_caller(&owner);
	bt->pending = palloc0(sizeof(BulkPending) * bt->topic->partition_count);
	for (i = 0; i < bt->topic->partition_count; i++)
		bt->pending[i].last_offset = -1;
	bt->sticky = -1;
	bt->max_bytes = (size_t) bt->topic->config.log.max_message_bytes;
	bt->compression = kp_sql_topic_compression(bt->topic);
	if (bp->ntopics == bp->maxtopics)
	{
		bp->maxtopics = bp->maxtopics ? bp->maxtopics * 2 : 4;
		bp->topics = bp->topics ? repalloc(bp->topics, sizeof(KpBulkTopic *) * bp->maxtopics) :
			palloc(sizeof(KpBulkTopic *) * bp->maxtopics);
	}
	bp->topics[bp->ntopics++] = bt;
	MemoryContextSwitchTo(old);
	bp->last = bt;
	return bt;
}

int64
kp_bulk_flush_partition(KpBulkProducer *bp, KpBulkTopic *bt, int32 partition)
{
	BulkPending *pb = &bt->pending[partition];
	MemoryContext old;
	KpSqlOwner	owner;
	KpAppendResult res;
	char	   *batch;
	size_t		len;
	int64		producer_id;
	int32		count = pb->builder.count;

	if (!pb->started || count == 0)
		return -1;
	check_subtransaction(bp);
	producer_id = pb->builder.producer_id;
	Assert(producer_id == kp_txn_sql_producer_id());
	pb->last_size = KpBatchBuilderSize(&pb->builder);
	bp->buffered -= Min(bp->buffered, pb->last_size);
	old = MemoryContextSwitchTo(bp->cxt);
	batch = kp_batch_builder_finish(&pb->builder, &len);
	pb->started = false;
	kp_sql_as_owner(&owner);
	kp_sql_append_batch(bt->topic, partition, batch, len, producer_id, &res);
	kp_sql_as_caller(&owner);
	pfree(batch);
	MemoryContextSwitchTo(old);
	pb->last_offset = res.last_offset;
	if (bp->on_append)
		bp->on_append(bp->on_append_arg, partition, res.base_offset, count);
	return res.base_offset;
}

int64
kp_bulk_last_offset(KpBulkTopic *bt, int32 partition)
{
	return bt->pending[partition].last_offset;
}

static void flush_all(KpBulkProducer *bp, bool end_of_statement);

/*
 * Open a batch for the partition, its buffer sized from the records: for
 * the partition's first batch, its first record; then twice the last batch
 * appended, at most max.message.bytes (a full batch: that, so the next full
 * one is never copied to grow; one record per batch, as RETURNING appends:
 * a few hundred bytes, not a buffer of the topic's size per row).
 */
static void
start_batch(KpBulkProducer *bp, KpBulkTopic *bt, BulkPending *pb, size_t rec_bound)
{
	MemoryContext old = MemoryContextSwitchTo(bp->cxt);

	kp_batch_builder_init(&pb->builder, bt->compression, kp_txn_sql_producer_id(), 0,
						  KP_NO_SEQUENCE, true);
	kp_batch_builder_reserve(&pb->builder,
							 Min(Max(2 * pb->last_size, KP_BATCH_HEADER_SIZE + rec_bound),
								 bt->max_bytes));
	pb->started = true;
	bp->buffered += KpBatchBuilderSize(&pb->builder);
	MemoryContextSwitchTo(old);
}

int32
kp_bulk_add(KpBulkProducer *bp, KpBulkTopic *bt,
			const char *key, int key_len, const char *value, int value_len,
			const KpHeader *headers, int nheaders,
			bool has_partition, int32 partition,
			bool has_timestamp, int64 timestamp_ms)
{
	const KpTopic *topic = bt->topic;
	BulkPending *pb;
	size_t		rec_bound;
	int64		ts = has_timestamp ? timestamp_ms : bp->now_ms;
	bool		sticky = false;

	check_subtransaction(bp);
	if (key == NULL)
		key_len = -1;
	if (value == NULL)
		value_len = -1;
	(void) kp_topic_check_record_key(topic, key != NULL, true, NULL);
	if (has_timestamp)
		(void) kp_topic_check_timestamp(topic, ts, bp->now_ms, true, NULL);

	/*
	 * Whether the record still fits the open batch is decided on a bound of
	 * its size (lengths summed, no varint sized); the builder sizes it once,
	 * exactly, as it encodes it.  A record that cannot fit any batch is
	 * refused here, before it is encoded, when the topic does not compress
	 * (compressed, the batch it ends up in is checked when appended).
	 */
	rec_bound = kp_record_size_bound(key_len, value_len, headers, nheaders);
	if (KP_BATCH_HEADER_SIZE + rec_bound > bt->max_bytes &&
		bt->compression == KP_COMPRESSION_NONE)
		(void) kp_topic_check_batch_size(topic,
										 KP_BATCH_HEADER_SIZE +
										 kp_record_encoded_size(0, 0, key_len, value_len,
																headers, nheaders),
										 true, NULL);

	if (has_partition)
	{
		if (partition < 0 || partition >= topic->partition_count)
		{
			KpPartitionRef ref;

			kp_topic_partition(topic, partition, &ref); /* KP003 */
		}
	}
	else if (key != NULL)
		partition = kp_partition_for_key(key, key_len, topic->partition_count);
	else
	{
		if (bt->sticky < 0)
			bt->sticky = kp_sql_round_robin(topic->partition_count);
		partition = bt->sticky;
		sticky = true;
	}
	pb = &bt->pending[partition];

	if (pb->started && KpBatchBuilderSize(&pb->builder) + rec_bound > bt->max_bytes)
	{
		(void) kp_bulk_flush_partition(bp, bt, partition);
		/* the sticky partitioner moves on when a batch is full */
		if (sticky)
		{
			bt->sticky = kp_sql_round_robin(topic->partition_count);
			partition = bt->sticky;
			pb = &bt->pending[partition];
			if (pb->started && KpBatchBuilderSize(&pb->builder) + rec_bound > bt->max_bytes)
				(void) kp_bulk_flush_partition(bp, bt, partition);
		}
	}
	if (!pb->started)
		start_batch(bp, bt, pb, rec_bound);
	bp->buffered += kp_batch_builder_add(&pb->builder, ts, key, key_len, value, value_len,
										 headers, nheaders);
	bp->records++;

	/*
	 * The memory bound: append every open batch now.  Flushing only this
	 * record's partition would leave the others' bytes counted, and every
	 * later record would then go out as a batch of its own.
	 */
	if (bp->buffered > bp->max_buffered)
		flush_all(bp, false);
	return partition;
}

/* Append every open batch of every topic; end_of_statement: forget the sticky partitions too */
static void
flush_all(KpBulkProducer *bp, bool end_of_statement)
{
	int			i;
	int32		p;

	for (i = 0; i < bp->ntopics; i++)
	{
		KpBulkTopic *bt = bp->topics[i];

		for (p = 0; p < bt->topic->partition_count; p++)
			(void) kp_bulk_flush_partition(bp, bt, p);
		if (end_of_statement)
			bt->sticky = -1;
	}
}

int64
kp_bulk_finish(KpBulkProducer *bp)
{
	flush_all(bp, true);
	return bp->records;
}


/* ---------------------------------------------------------------------
 * kafka.produce_agg(topic, key, value [, partition [, headers, timestamp]])
 *
 * An aggregate whose state is a streaming producer: every row fed to it is
 * produced, and the final function appends what is still open and returns
 * how many records the group produced.  Rows of a group that is never
 * finalised (a LIMIT above a grouped aggregate) are appended when the
 * executor shuts the aggregate down, so every row that went in is
 * produced.  Not a window function.
 * ---------------------------------------------------------------------
 */

PG_FUNCTION_INFO_V1(kp_sql_produce_agg_sfunc);
PG_FUNCTION_INFO_V1(kp_sql_produce_agg_final);

typedef struct ProduceAggState
{
	KpBulkProducer *bp;
	bool		finished;
	KpOutForm	key_form;
	KpOutForm	value_form;
	bool		topic_stable;	/* the topic argument is the same for every
								 * row */
	KpBulkTopic *topic;			/* then: its topic, once the first row opened
								 * it */
} ProduceAggState;

/* The aggregate is shut down (end of the query, or a rescan). */
static void
produce_agg_shutdown(Datum arg)
{
	ProduceAggState *st = (ProduceAggState *) DatumGetPointer(arg);

	if (!st->finished)
	{
		st->finished = true;
		(void) kp_bulk_finish(st->bp);
	}
}

/*
 * Is the aggregate's topic argument the same for every row (a constant or a
 * query parameter)?  The transition function's own arguments are the
 * executor's placeholders, so ask the Aggref.
 */
static bool
agg_topic_is_constant(FunctionCallInfo fcinfo)
{
	Aggref	   *aggref = AggGetAggref(fcinfo);
	Expr	   *topic;

	if (aggref == NULL || aggref->args == NIL)
		return false;
	topic = linitial_node(TargetEntry, aggref->args)->expr;
	return IsA(topic, Const) ||
		(IsA(topic, Param) && ((Param *) topic)->paramkind == PARAM_EXTERN);
}

/* key or value bytes of an argument (bytea, text or jsonb), NULL for null */
static const char *
agg_arg_bytes(FunctionCallInfo fcinfo, int argno, KpOutForm form, int *len)
{
	if (PG_ARGISNULL(argno))
	{
		*len = -1;
		return NULL;
	}
	return kp_sql_datum_bytes(PG_GETARG_DATUM(argno), form, len);
}

/*
 * (state, topic, key, value [, partition [, headers, timestamp]]); the
 * per-row allocations live in the aggregate's per-row memory, which the
 * executor resets.
 */
Datum
kp_sql_produce_agg_sfunc(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	ProduceAggState *st;
	text	   *topic;
	KpBulkTopic *bt;
	const char *key;
	const char *value;
	int			key_len;
	int			value_len;
	KpHeader   *headers = NULL;
	int			nheaders = 0;
	int			nargs = PG_NARGS();
	bool		has_partition = nargs > 4 && !PG_ARGISNULL(4);
	bool		has_ts = nargs > 6 && !PG_ARGISNULL(6);

	if (AggCheckCallContext(fcinfo, &aggcxt) != AGG_CONTEXT_AGGREGATE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("kafka.produce_agg can only be called as an aggregate"),
				 errhint("It cannot be a window function: use it in a plain or grouped SELECT.")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("topic must not be null")));

	if (PG_ARGISNULL(0))
	{
		MemoryContext old = MemoryContextSwitchTo(aggcxt);

		st = palloc0(sizeof(ProduceAggState));
		st->bp = kp_bulk_begin("kafka.produce_agg()");
		st->key_form = kp_sql_out_form(get_fn_expr_argtype(fcinfo->flinfo, 2));
		st->value_form = kp_sql_out_form(get_fn_expr_argtype(fcinfo->flinfo, 3));
		st->topic_stable = agg_topic_is_constant(fcinfo);
		MemoryContextSwitchTo(old);
		AggRegisterCallback(fcinfo, produce_agg_shutdown, PointerGetDatum(st));
	}
	else
		st = (ProduceAggState *) PG_GETARG_POINTER(0);
	if (st->finished)
		elog(ERROR, "kafka.produce_agg: transition after the final function");

	/*
	 * a constant topic (the usual case) is looked up once, not by name per
	 * row
	 */
	if (st->topic != NULL)
		bt = st->topic;
	else
	{
		topic = PG_GETARG_TEXT_PP(1);
		bt = kp_bulk_topic(st->bp, VARDATA_ANY(topic), VARSIZE_ANY_EXHDR(topic));
		if (st->topic_stable)
			st->topic = bt;
	}
	key = agg_arg_bytes(fcinfo, 2, st->key_form, &key_len);
	value = agg_arg_bytes(fcinfo, 3, st->value_form, &value_len);
	if (nargs > 5 && !PG_ARGISNULL(5))
		headers = kp_sql_headers_from_array(PG_GETARG_ARRAYTYPE_P(5), &nheaders);

	CHECK_FOR_INTERRUPTS();
	(void) kp_bulk_add(st->bp, bt, key, key_len, value, value_len, headers, nheaders,
					   has_partition, has_partition ? PG_GETARG_INT32(4) : 0,
					   has_ts, has_ts ? KpTimestampTzToMs(PG_GETARG_TIMESTAMPTZ(6)) : 0);
	PG_RETURN_POINTER(st);
}

/* Append what is open; the number of records this group produced. */
Datum
kp_sql_produce_agg_final(PG_FUNCTION_ARGS)
{
	ProduceAggState *st;

	if (PG_ARGISNULL(0))
		PG_RETURN_INT64(0);
	if (AggCheckCallContext(fcinfo, NULL) != AGG_CONTEXT_AGGREGATE)
		elog(ERROR, "kafka.produce_agg's final function called outside an aggregate");
	st = (ProduceAggState *) PG_GETARG_POINTER(0);
	if (!st->finished)
	{
		st->finished = true;
		(void) kp_bulk_finish(st->bp);
	}
	PG_RETURN_INT64(st->bp->records);
}
