/*-------------------------------------------------------------------------
 *
 * handlers_fetch.c
 *	  Fetch and ListOffsets: reading the log over the wire, through the
 *	  store's cursor (src/store/reader.c), which bounds a read by the high
 *	  watermark or, for read_committed, the last stable offset, and gives the
 *	  aborted transactions a read_committed client drops.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "codec/codec.h"
#include "listener/fetch_session.h"
#include "listener/handlers_admin.h"
#include "listener/handlers.h"
#include "listener/listener.h"
#include "listener/listener_int.h"
#include "store/store.h"
#include "txn/txn.h"

/* ---------------------------------------------------------------------
 * Fetch
 * ---------------------------------------------------------------------
 */

/*
 * The records of a Fetch's partitions, one after the other, in one buffer
 * that the worker keeps from one Fetch to the next: a batch is copied out
 * of shared buffers into memory that is already mapped, not into a fresh
 * allocation per partition that the kernel faults in page by page (and
 * malloc maps and unmaps: a partition's buffer was sized for its
 * partition_max_bytes, 1 MiB by default).  The response's partitions point
 * into it until the response is encoded, which dispatch.c does right after
 * the handler, before any other request runs.
 *
 * The response is sent from it, not copied: the encoder hands the records
 * to the connection by reference (kp_fetch_send_by_reference,
 * kp_records_sink), and the connection holds the buffer (refs) until they
 * are sent (server.c, conn_flush).  A Fetch that finds the buffer still
 * held takes the spare one, or a new one; a buffer let go of becomes the
 * spare, unless there is one, or it is larger than FETCH_ARENA_KEEP.
 */
typedef struct FetchArena
{
	StringInfoData buf;
	int			refs;			/* pieces of output pointing into it */
} FetchArena;

static FetchArena *fetch_arena;
static FetchArena *fetch_arena_spare;

#define FETCH_ARENA_KEEP	(64 * 1024 * 1024)
/* smaller records are copied: an iovec costs more than such a copy */
#define FETCH_BY_REFERENCE_MIN	4096

static void
fetch_arena_free(FetchArena *a)
{
	pfree(a->buf.data);
	pfree(a);
}

/* the last piece pointing into a was sent (or taken back) */
static void
fetch_arena_unref(void *owner)
{
	FetchArena *a = owner;

	Assert(a->refs > 0);
	if (--a->refs > 0 || a == fetch_arena)
		return;
	if (fetch_arena_spare == NULL && a->buf.maxlen <= FETCH_ARENA_KEEP)
		fetch_arena_spare = a;
	else
		fetch_arena_free(a);
}

static void
fetch_arena_reset(void)
{
	if (fetch_arena != NULL && fetch_arena->refs > 0)
		fetch_arena = NULL;		/* a connection sends from it */
	else if (fetch_arena != NULL && fetch_arena->buf.maxlen > FETCH_ARENA_KEEP)
	{
		fetch_arena_free(fetch_arena);
		fetch_arena = NULL;
	}
	if (fetch_arena == NULL && fetch_arena_spare != NULL)
	{
		fetch_arena = fetch_arena_spare;
		fetch_arena_spare = NULL;
	}
	if (fetch_arena == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		fetch_arena = palloc(sizeof(FetchArena));
		fetch_arena->refs = 0;
		initStringInfo(&fetch_arena->buf);
		enlargeStringInfo(&fetch_arena->buf, 1024 * 1024);
		MemoryContextSwitchTo(old);
	}
	resetStringInfo(&fetch_arena->buf);
}

/*
 * kp_records_sink's take: records that lie in the worker's records buffer
 * go out by reference, anything else (a ShareFetch's) is copied.
 */
static bool
fetch_records_take(StringInfo out, const uint8 *data, int32 len, void *arg)
{
	KpConn	   *c = arg;
	FetchArena *a = fetch_arena;

	if (a == NULL || (const char *) data < a->buf.data ||
		(const char *) data + len > a->buf.data + a->buf.len)
		return false;
	kp_conn_add_piece(c, (const char *) data, len, fetch_arena_unref, a);
	a->refs++;
	return true;
}

void
kp_fetch_send_by_reference(KpConn *c, bool on)
{
	static KpRecordsSink sink;

	if (!on)
	{
		kp_records_sink = NULL;
		return;
	}
	sink.out = kp_conn_output(c);
	sink.min_len = FETCH_BY_REFERENCE_MIN;
	sink.take = fetch_records_take;
	sink.arg = c;
	kp_records_sink = &sink;
}

typedef struct FetchBudget
{
	int64		total_left;		/* max_bytes left for the response */
	int64		bytes;			/* record bytes collected so far */
	bool		any;			/* some partition returned data */
	bool		below_hw;		/* some partition stopped at a high watermark
								 * below its log end */
	XLogRecPtr	hw_next_lsn;	/* the earliest ISR position that moves one of
								 * those high watermarks */
	/* the partitions with records: where theirs start in fetch_arena */
	KpFetchResponsePartitionData **with_records;
	int		   *records_start;
	int			nwith_records;
} FetchBudget;

/*
 * Collect the batches of one partition from fetch_offset: whole batches,
 * at least one if nothing was returned yet (KIP-74), never past the bound
 * (high watermark, or last stable offset for read_committed).  For
 * read_committed readers the store's cursor also gives the aborted
 * transactions of the range returned (src/store/reader.c), which the
 * client drops: aborted_transactions.
 */
static void
fetch_partition(KpFetchResponsePartitionData *out, int64 partition_id, int64 fetch_offset,
				int32 partition_max_bytes, bool read_committed, FetchBudget *budget,
				int max_batches, int *nbatches)
{
	KpLogOffsets off;
	KpLogOffsets read_off;
	KpLogReader *reader;
	size_t		len;
	StringInfo	records = &fetch_arena->buf;
	int			start = records->len;
	int64		bound;
	int64		part_left = partition_max_bytes;
	int64		upper = fetch_offset;	/* past the last batch returned */
	KpBatchVisibility vis;

	kp_log_offsets(partition_id, &off);
	read_off = off;
	/* clients see what every in-sync replica has (docs/replication.md) */
	off.last_stable_offset = kp_client_lso(&off);
	out->high_watermark = off.high_watermark;
	out->last_stable_offset = off.last_stable_offset;
	out->log_start_offset = off.log_start_offset;
	out->preferred_read_replica = -1;
	out->n_aborted_transactions = read_committed ? 0 : -1;
	if (fetch_offset < off.log_start_offset || fetch_offset > off.log_end_offset)
	{
		/* empty, not null, records: librdkafka < 2.1 chokes on null */
		out->error_code = KP_ERR_OFFSET_OUT_OF_RANGE;
		out->records.data = (const uint8 *) "";
		out->records.len = 0;
		return;
	}
	bound = read_committed ? off.last_stable_offset : off.high_watermark;
	if (off.high_watermark < off.log_end_offset)
	{
		budget->below_hw = true;
		if (!XLogRecPtrIsInvalid(off.hw_next_lsn) &&
			(XLogRecPtrIsInvalid(budget->hw_next_lsn) || off.hw_next_lsn < budget->hw_next_lsn))
			budget->hw_next_lsn = off.hw_next_lsn;
	}
	out->records.len = 0;
	out->records.data = NULL;
	if (fetch_offset >= bound)
		return;

	/*
	 * The response is full (fetch.max.bytes), or this partition may take
	 * nothing: no batch can go out (KIP-74's one batch is for the first
	 * partition with any), so do not open the log to find that out.
	 */
	if (budget->any && Min(part_left, budget->total_left) <= 0)
		return;

	/* the offsets just read: the cursor need not look them up again */
	reader = kp_log_cursor_open_at(partition_id, fetch_offset,
								   read_committed ? KP_READ_COMMITTED : KP_READ_UNCOMMITTED,
								   &read_off);
	kp_log_reader_set_bound(reader, bound);
	for (;;)
	{
		KpBatchHeader hdr;
		int			before = records->len;

		if (max_batches >= 0 && *nbatches >= max_batches)
			break;

		/*
		 * Whole batches only, copied straight from the segment's pages; the
		 * first one even if it is too big (KIP-74).  Aborted batches go out
		 * as they are: the client drops them.
		 */
		if (!kp_log_cursor_next_into(reader, records,
									 (budget->any || records->len > start) ?
									 Min(part_left, budget->total_left) : -1,
									 &hdr, &vis))
			break;
		len = records->len - before;
		if (hdr.base_offset >= bound)
		{
			records->len = before;
			records->data[before] = '\0';
			break;
		}
		upper = KpBatchLastOffset(&hdr) + 1;
		(*nbatches)++;
		part_left -= len;
		budget->total_left -= len;
		if (part_left <= 0 || budget->total_left <= 0)
			break;
	}
	if (records->len > start)
	{
		/* out->records.data is set once every partition is read */
		budget->with_records[budget->nwith_records] = out;
		budget->records_start[budget->nwith_records] = start;
		budget->nwith_records++;
		out->records.len = records->len - start;
		budget->bytes += records->len - start;
		budget->any = true;
	}
	if (read_committed)
	{
		KpAbortedTxn *aborted;
		int			naborted = kp_log_cursor_aborted(reader, fetch_offset, upper, &aborted);
		int			k;

		out->n_aborted_transactions = naborted;
		out->aborted_transactions = naborted > 0 ?
			palloc(sizeof(KpFetchResponseAbortedTransaction) * naborted) : NULL;
		for (k = 0; k < naborted; k++)
		{
			out->aborted_transactions[k].producer_id = aborted[k].producer_id;
			out->aborted_transactions[k].first_offset = aborted[k].first_offset;
		}
	}
	kp_log_reader_close(reader);
}

/*
 * A Fetch run again after a storage error (dispatch.c, ctx->storage_guard)
 * reads each partition in a subtransaction.  One whose read fails is read
 * again, in another, up to the batches its first try read whole (the same
 * pages, which were read then): those are answered, and the client's next
 * Fetch, from the batch after them, fails at once.  With none, the
 * partition is answered KAFKA_STORAGE_ERROR, as Kafka answers a partition on
 * a log directory that failed; the other partitions as usual.  One WARNING
 * a minute per worker.
 */
typedef struct GuardedFetch
{
	KpFetchResponsePartitionData *out;
	int64		partition_id;
	int64		fetch_offset;
	int32		partition_max_bytes;
	bool		read_committed;
	FetchBudget *budget;
	int			max_batches;
	int			nbatches;
} GuardedFetch;

static void
guarded_fetch_fn(void *arg)
{
	GuardedFetch *g = arg;

	g->nbatches = 0;
	fetch_partition(g->out, g->partition_id, g->fetch_offset, g->partition_max_bytes,
					g->read_committed, g->budget, g->max_batches, &g->nbatches);
}

/* What a failed read of a partition did to the response, undone. */
static void
fetch_partition_undo(KpFetchResponsePartitionData *out, const KpFetchResponsePartitionData *saved_out,
					 FetchBudget *budget, const FetchBudget *saved, int start)
{
	*out = *saved_out;
	*budget = *saved;
	fetch_arena->buf.len = start;
	fetch_arena->buf.data[start] = '\0';
}

static void
fetch_partition_guarded(KpFetchResponsePartitionData *out, const char *topic, int64 partition_id,
						int64 fetch_offset, int32 partition_max_bytes, bool read_committed,
						FetchBudget *budget)
{
	static int64 warned_ms = 0;
	GuardedFetch g;
	FetchBudget saved = *budget;
	KpFetchResponsePartitionData saved_out = *out;
	int			start = fetch_arena->buf.len;
	ErrorData  *edata;
	ErrorData  *again;

	g.out = out;
	g.partition_id = partition_id;
	g.fetch_offset = fetch_offset;
	g.partition_max_bytes = partition_max_bytes;
	g.read_committed = read_committed;
	g.budget = budget;
	g.max_batches = -1;
	if ((edata = kp_storage_try(guarded_fetch_fn, &g, false)) == NULL)
		return;
	again = edata;
	if (g.nbatches > 0)
	{
		fetch_partition_undo(out, &saved_out, budget, &saved, start);
		g.max_batches = g.nbatches;
		again = kp_storage_try(guarded_fetch_fn, &g, false);
	}
	if (again != NULL)
	{
		fetch_partition_undo(out, &saved_out, budget, &saved, start);
		out->error_code = KP_ERR_KAFKA_STORAGE_ERROR;
		out->high_watermark = -1;
		out->last_stable_offset = -1;
		out->log_start_offset = -1;
		out->n_aborted_transactions = -1;
		out->aborted_transactions = NULL;
		out->records.data = (const uint8 *) "";
		out->records.len = 0;
	}
	kp_storage_warning(&warned_ms, edata,
					   psprintf("cannot read %s-%d from offset " INT64_FORMAT,
								topic, (int) saved_out.partition_index, fetch_offset),
					   again == NULL ?
					   psprintf("The %d batches before the failing read were answered; a Fetch from there on is answered KAFKA_STORAGE_ERROR.",
								g.nbatches) :
					   "The partition was answered KAFKA_STORAGE_ERROR; the other partitions of the request were served.",
					   KP_STORAGE_READ_HINT);
	if (again != NULL && again != edata)
		FreeErrorData(again);
	FreeErrorData(edata);
}

/*
 * A partition listed several times in one Fetch is fetched once, as Kafka
 * does: FetchRequest.fetchData is a LinkedHashMap keyed by topic and
 * partition, so the last listing's fetch position wins, the partition keeps
 * the place of its first listing, and consecutive partitions of one topic
 * share one topic entry of the response (checked against Kafka 4.4 by
 * test/wire/limits.py), and a topic listed with no partitions gets none.
 * Sorted, not compared pairwise: a request may list many thousands.
 * Rewrites req->topics when something was listed twice, or one topic in
 * consecutive entries.
 */
typedef struct FetchListing
{
	int			topic;			/* index into req->topics */
	int			partition;		/* index into that topic's partitions */
	int			seq;			/* place in the request */
	int			first_seq;		/* place of the partition's first listing */
} FetchListing;

static int
fetch_topic_cmp(const KpFetchRequestFetchTopic *a, const KpFetchRequestFetchTopic *b, bool by_id)
{
	if (by_id)
		return memcmp(a->topic_id.b, b->topic_id.b, 16);
	return strcmp(a->topic ? a->topic : "", b->topic ? b->topic : "");
}

static KpFetchRequest *fetch_sort_req;
static bool fetch_sort_by_id;

static int
fetch_listing_cmp(const void *pa, const void *pb)
{
	const FetchListing *a = pa;
	const FetchListing *b = pb;
	int			c = fetch_topic_cmp(&fetch_sort_req->topics[a->topic],
									&fetch_sort_req->topics[b->topic], fetch_sort_by_id);
	int32		pa_idx;
	int32		pb_idx;

	if (c != 0)
		return c;
	pa_idx = fetch_sort_req->topics[a->topic].partitions[a->partition].partition;
	pb_idx = fetch_sort_req->topics[b->topic].partitions[b->partition].partition;
	if (pa_idx != pb_idx)
		return pa_idx < pb_idx ? -1 : 1;
	return a->seq - b->seq;
}

static int
fetch_first_seq_cmp(const void *pa, const void *pb)
{
	return ((const FetchListing *) pa)->first_seq - ((const FetchListing *) pb)->first_seq;
}

static void
merge_fetch_listings(KpFetchRequest *req, bool by_id)
{
	int			n = 0;
	int			nunique = 0;
	int			i;
	int			j;
	FetchListing *all;
	KpFetchRequestFetchTopic *topics;
	int			ntopics = 0;

	/* a topic listed with no partitions is not answered, as in Kafka */
	req->n_topics = KP_DROP_EMPTY(req->topics, req->n_topics, KpFetchRequestFetchTopic, n_partitions);
	for (i = 0; i < req->n_topics; i++)
		n += req->topics[i].n_partitions;
	if (n < 2)
		return;
	all = palloc(sizeof(FetchListing) * n);
	for (i = 0; i < req->n_topics; i++)
		for (j = 0; j < req->topics[i].n_partitions; j++)
		{
			all[nunique].topic = i;
			all[nunique].partition = j;
			all[nunique].seq = nunique;
			nunique++;
		}
	fetch_sort_req = req;
	fetch_sort_by_id = by_id;
	qsort(all, n, sizeof(FetchListing), fetch_listing_cmp);

	/* keep the last listing of each partition, at its first listing's place */
	nunique = 0;
	for (i = 0; i < n; i = j)
	{
		for (j = i + 1; j < n &&
			 fetch_topic_cmp(&req->topics[all[i].topic], &req->topics[all[j].topic], by_id) == 0 &&
			 req->topics[all[i].topic].partitions[all[i].partition].partition ==
			 req->topics[all[j].topic].partitions[all[j].partition].partition; j++)
			;
		{
			int			first_seq = all[i].seq;

			all[nunique] = all[j - 1];
			all[nunique].first_seq = first_seq;
			nunique++;
		}
	}
	for (i = 1; i < req->n_topics; i++)
		if (fetch_topic_cmp(&req->topics[i - 1], &req->topics[i], by_id) == 0)
			break;
	if (nunique == n && i >= req->n_topics)
	{
		pfree(all);
		return;					/* nothing to merge: the request stands */
	}
	qsort(all, nunique, sizeof(FetchListing), fetch_first_seq_cmp);

	topics = palloc0(sizeof(KpFetchRequestFetchTopic) * nunique);
	for (i = 0; i < nunique; i++)
	{
		KpFetchRequestFetchTopic *src = &req->topics[all[i].topic];
		KpFetchRequestFetchTopic *dst;

		if (ntopics == 0 ||
			fetch_topic_cmp(&topics[ntopics - 1], src, by_id) != 0)
		{
			dst = &topics[ntopics++];
			*dst = *src;
			dst->n_partitions = 0;
			dst->partitions = palloc(sizeof(KpFetchRequestFetchPartition) * (nunique - i));
		}
		dst = &topics[ntopics - 1];
		dst->partitions[dst->n_partitions++] = src->partitions[all[i].partition];
	}
	req->topics = topics;
	req->n_topics = ntopics;
	pfree(all);
}

/*
 * A Fetch's last_fetched_epoch (v12+), as Kafka's Partition.readRecords
 * checks it for whoever sends it (its followers do; its consumers send -1
 * and ask OffsetForLeaderEpoch instead): the end of that epoch here
 * (kp_epoch_end_offset) below the fetch offset, or an earlier epoch ending
 * there, means the fetcher's log diverged from ours: answered with
 * diverging_epoch (that epoch and its end) and no records, at once.  An
 * epoch with no end here, or a fetch offset below the log start, is
 * OFFSET_OUT_OF_RANGE.  On a hot standby an end that is not final (the
 * epoch still being written on the primary) is lag, not divergence: the
 * fetch is served as any other (OFFSET_OUT_OF_RANGE past the replayed
 * end, and the consumer goes back to the leader).  True when the partition
 * is answered here.
 */
static bool
fetch_diverged(KpFetchResponsePartitionData *op, int64 partition_id, int64 fetch_offset,
			   int32 fetched_epoch, int32 current)
{
	KpLogOffsets off;
	int32		end_epoch;
	int64		end_offset;
	bool		final;
	bool		found;

	kp_log_offsets(partition_id, &off);
	found = kp_epoch_end_offset(partition_id, fetched_epoch, current, &off,
								&end_epoch, &end_offset, &final);
	if (found && !final)
		return false;
	op->high_watermark = off.high_watermark;
	op->last_stable_offset = kp_client_lso(&off);
	op->log_start_offset = off.log_start_offset;
	if (!found || fetch_offset < off.log_start_offset)
	{
		op->error_code = KP_ERR_OFFSET_OUT_OF_RANGE;
		return true;
	}
	if (end_epoch < fetched_epoch || end_offset < fetch_offset)
	{
		op->diverging_epoch.epoch = end_epoch;
		op->diverging_epoch.end_offset = end_offset;
		return true;
	}
	return false;
}

void
kp_handle_fetch(KpRequestContext *ctx)
{
	KpFetchRequest *req = ctx->request;
	KpFetchResponse *resp = ctx->response;
	FetchBudget budget;
	KpFetchSessionRun session;
	bool		read_committed = (req->isolation_level == 1);
	bool		any_error = false;
	int32		replica = ctx->version >= 15 ? req->replica_state.replica_id : req->replica_id;
	bool		follower_denied;
	int			nlisted = 0;
	int32		epoch = kp_leader_epoch();
	int32		preferred = -1;
	XLogRecPtr	isr_seen;
	bool		answer_now = false;
	KpBroker	leader = {0};
	int32		leader_epoch = -1;
	int			leader_known = -1;	/* KIP-951: not looked up yet */
	int			i;

	/* the broker's fetch.max.bytes caps the request's max_bytes (KIP-541) */
	budget.total_left = Min(req->max_bytes > 0 ? req->max_bytes : PG_INT32_MAX,
							kp_fetch_max_bytes);
	/* and so does the client's consumer_byte_rate (throttle.c) */
	if (ctx->quota_fetch_max_bytes >= 0)
		budget.total_left = Min(budget.total_left, ctx->quota_fetch_max_bytes);
	budget.bytes = 0;
	merge_fetch_listings(req, ctx->version >= 13);

	/*
	 * KIP-227 (fetch_session.c): an incremental fetch reads every partition
	 * of its session, which replaces the request's listing; a session error
	 * is the whole answer, at once.
	 */
	kp_fetch_session_begin(ctx, req, &session);
	if (session.mode == KP_FETCH_SESSION_ERROR)
	{
		resp->error_code = session.error;
		resp->session_id = 0;
		resp->n_responses = 0;
		resp->responses = palloc0(sizeof(KpFetchResponseFetchableTopicResponse));
		return;
	}
	/* the wait buckets of the partitions read, should the fetch park */
	for (i = 0; i < req->n_topics; i++)
		nlisted += Max(req->topics[i].n_partitions, 0);

	/*
	 * Nothing to read (a Java consumer's close of its session, epoch -1 and
	 * no partitions; a session whose last partition was just forgotten):
	 * answered at once, as Kafka's ReplicaManager answers a fetch with no
	 * partitions without waiting.  Parked, it held the consumer's close() for
	 * max_wait_ms, and the forgetting fetch, run again at its deadline, no
	 * longer found the session it had closed.
	 */
	if (nlisted == 0)
		answer_now = true;
	ctx->park_nkeys = 0;
	ctx->park_keys = palloc(sizeof(int) * Max(nlisted, 1));
	ctx->park_seen = palloc(sizeof(uint64) * Max(nlisted, 1));
	budget.any = false;
	budget.below_hw = false;
	budget.hw_next_lsn = InvalidXLogRecPtr;
	budget.with_records = palloc(sizeof(KpFetchResponsePartitionData *) * Max(nlisted, 1));
	budget.records_start = palloc(sizeof(int) * Max(nlisted, 1));
	budget.nwith_records = 0;
	fetch_arena_reset();

	/*
	 * on a hot standby, before the partitions are read: more replay wakes a
	 * park
	 */
	isr_seen = RecoveryInProgress() ? GetXLogReplayRecPtr(NULL) : InvalidXLogRecPtr;

	/*
	 * KIP-392: a consumer in another rack than the leader's is sent to a
	 * standby of its rack (replicas.c), as by Kafka's
	 * RackAwareReplicaSelector: no records, the replica to read from
	 */
	if (ctx->version >= 11 && replica < 0 && !RecoveryInProgress())
		preferred = kp_preferred_read_replica(req->rack_id);
	/* Kafka: a follower's fetch (a replica id) needs CLUSTER_ACTION */
	follower_denied = replica >= 0 && !kp_authz_cluster(ctx, KP_ACL_OP_CLUSTER_ACTION);

	resp->error_code = KP_ERR_NONE;
	resp->session_id = 0;		/* set when answered: kp_fetch_session_finish */
	resp->n_responses = req->n_topics < 0 ? 0 : req->n_topics;
	resp->responses = palloc0(sizeof(KpFetchResponseFetchableTopicResponse) * Max(resp->n_responses, 1));
	for (i = 0; i < resp->n_responses; i++)
	{
		KpFetchRequestFetchTopic *rt = &req->topics[i];
		KpFetchResponseFetchableTopicResponse *ot = &resp->responses[i];
		const KpTopic *t = kp_handler_topic(ctx->version >= 13 ? NULL : rt->topic, &rt->topic_id);
		bool		allowed = !follower_denied &&
		kp_authz_topic(ctx, ctx->version >= 13 ? NULL : rt->topic, t, KP_ACL_OP_READ);
		int			j;

		ot->topic = rt->topic ? pstrdup(rt->topic) : NULL;
		memcpy(ot->topic_id.b, rt->topic_id.b, 16);
		ot->n_partitions = rt->n_partitions < 0 ? 0 : rt->n_partitions;
		ot->partitions = palloc0(sizeof(KpFetchResponsePartitionData) * Max(ot->n_partitions, 1));
		for (j = 0; j < ot->n_partitions; j++)
		{
			KpFetchRequestFetchPartition *rp = &rt->partitions[j];
			KpFetchResponsePartitionData *op = &ot->partitions[j];
			KpPartitionRef ref;

			/*
			 * the defaults of the tagged fields matter: a diverging epoch of
			 * 0 would make a client truncate
			 */
			op->diverging_epoch.epoch = -1;
			op->diverging_epoch.end_offset = -1;
			op->current_leader.leader_id = -1;
			op->current_leader.leader_epoch = -1;
			op->snapshot_id.end_offset = -1;
			op->snapshot_id.epoch = -1;
			op->last_stable_offset = -1;
			op->log_start_offset = -1;
			op->preferred_read_replica = -1;
			op->partition_index = rp->partition;
			op->records.data = (const uint8 *) "";
			op->records.len = 0;
			if (!allowed)
			{
				op->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
				op->high_watermark = -1;
				any_error = true;
				continue;
			}
			if (t == NULL || rp->partition < 0 || rp->partition >= t->partition_count)
			{
				op->error_code = (t == NULL && ctx->version >= 13) ? KP_ERR_UNKNOWN_TOPIC_ID :
					KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
				op->high_watermark = -1;
				any_error = true;
				continue;
			}

			/*
			 * The client's leader epoch (KIP-320), as Kafka checks it: older
			 * than ours, the client missed a failover; newer, we did (a
			 * standby behind the primary's kafka.leader row).
			 */
			if (rp->current_leader_epoch >= 0 && rp->current_leader_epoch != epoch)
			{
				op->error_code = rp->current_leader_epoch < epoch ?
					KP_ERR_FENCED_LEADER_EPOCH : KP_ERR_UNKNOWN_LEADER_EPOCH;
				op->high_watermark = -1;
				any_error = true;

				/*
				 * KIP-951 (v16+): a fenced client is told the leader and its
				 * epoch, and the leader's endpoint, as Kafka does
				 */
				if (op->error_code == KP_ERR_FENCED_LEADER_EPOCH && ctx->version >= 16)
				{
					if (leader_known < 0)
						leader_known = kp_current_leader(&leader, &leader_epoch) ? 1 : 0;
					if (leader_known)
					{
						op->current_leader.leader_id = leader.node_id;
						op->current_leader.leader_epoch = leader_epoch;
					}
				}
				continue;
			}
			kp_topic_partition(t, rp->partition, &ref);
			if (kp_handler_no_room(ref.partition_id, NULL))
			{
				op->error_code = KP_ERR_KAFKA_STORAGE_ERROR;
				op->high_watermark = -1;
				any_error = true;
				continue;
			}
			/* the bucket's count before the partition is read */
			ctx->park_keys[ctx->park_nkeys] = kp_log_wait_bucket(ref.partition_id);
			ctx->park_seen[ctx->park_nkeys] = kp_log_wait_bucket_changes(ctx->park_keys[ctx->park_nkeys]);
			ctx->park_nkeys++;
			if (preferred >= 0)
			{
				KpLogOffsets off;

				kp_log_offsets(ref.partition_id, &off);
				op->preferred_read_replica = preferred;
				op->high_watermark = off.high_watermark;
				op->last_stable_offset = kp_client_lso(&off);
				op->log_start_offset = off.log_start_offset;
				continue;
			}
			if (ctx->version >= 12 && rp->last_fetched_epoch >= 0 &&
				fetch_diverged(op, ref.partition_id, rp->fetch_offset, rp->last_fetched_epoch, epoch))
			{
				answer_now = true;
				if (op->error_code != KP_ERR_NONE)
					any_error = true;
				continue;
			}
			if (ctx->storage_guard)
				fetch_partition_guarded(op, t->name, ref.partition_id, rp->fetch_offset,
										rp->partition_max_bytes, read_committed, &budget);
			else
			{
				int			nbatches = 0;

				fetch_partition(op, ref.partition_id, rp->fetch_offset, rp->partition_max_bytes,
								read_committed, &budget, -1, &nbatches);
			}
			if (op->error_code != KP_ERR_NONE)
				any_error = true;
		}
	}

	/* the arena is complete: no more growing, so the pointers stay */
	for (i = 0; i < budget.nwith_records; i++)
		budget.with_records[i]->records.data =
			(const uint8 *) fetch_arena->buf.data + budget.records_start[i];

	/*
	 * Long poll: wait for min_bytes, up to max_wait_ms from the request's
	 * arrival.  A parked fetch is run again whenever one of its partitions
	 * changes (park_keys), so the deadline is measured from when it first
	 * arrived, never from this run: otherwise a busy partition would push a
	 * quiet one's answer back forever (Kafka's DelayedFetch keeps one
	 * deadline too).
	 */
	if (leader_known > 0)
	{
		resp->n_node_endpoints = 1;
		resp->node_endpoints = palloc0(sizeof(KpFetchResponseNodeEndpoint));
		resp->node_endpoints[0].node_id = leader.node_id;
		resp->node_endpoints[0].host = leader.host;
		resp->node_endpoints[0].port = leader.port;
		resp->node_endpoints[0].rack = leader.rack;
	}
	if (!any_error && !answer_now && preferred < 0 && !ctx->final_attempt && req->max_wait_ms > 0 &&
		budget.bytes < Max(req->min_bytes, 1))
	{
		ctx->park = true;
		ctx->park_keyed = true;
		ctx->park_until_ms = ctx->received_ms + req->max_wait_ms;

		/*
		 * Records are there, not yet on every in-sync replica: run again when
		 * the high watermark of one of the partitions moves, i.e. when the
		 * ISR reaches the WAL of the oldest such append (server.c has the
		 * worker woken then: src/store/isr.c).  (A high watermark below the
		 * log end with no such append only moves with the next append, which
		 * wakes the fetch by its partition anyway.)  On a hot standby, whose
		 * replay sets no latch: when it has replayed more than now.
		 */
		if (RecoveryInProgress())
		{
			ctx->park_on_isr = true;
			ctx->isr_wait_lsn = isr_seen + 1;	/* any replay */
		}
		else if (!XLogRecPtrIsInvalid(budget.hw_next_lsn))
		{
			ctx->park_on_isr = true;
			ctx->isr_wait_lsn = budget.hw_next_lsn;
		}
	}

	/*
	 * Answered now: the session is created, or the response cut to what
	 * changed since the session's last one.  A fetch that parks leaves the
	 * session as its first run left it (its epoch stepped once) until then.
	 */
	if (!ctx->park)
		kp_fetch_session_finish(ctx, req, resp, &session);
}

/* ---------------------------------------------------------------------
 * ListOffsets
 * ---------------------------------------------------------------------
 */

/*
 * Kafka's ListOffsetsRequest: the special timestamps a version may ask for
 * (-3 MAX_TIMESTAMP from v7, -4 EARLIEST_LOCAL from v8, -5 LATEST_TIERED from
 * v9, -6 EARLIEST_PENDING_UPLOAD from v11; any other negative one never).
 * Kafka 4.4 answers the others UNSUPPORTED_VERSION, before it looks the
 * partition up.
 */
static bool
list_offsets_timestamp_unsupported(int64 timestamp, int16 version)
{
	switch (timestamp)
	{
		case -1:				/* LATEST */
		case -2:				/* EARLIEST */
			return false;
		case -3:
			return version < 7;
		case -4:
			return version < 8;
		case -5:
			return version < 9;
		case -6:
			return version < 11;
		default:
			return timestamp < 0;
	}
}

/*
 * One partition of a ListOffsets request (its topic t, NULL if unknown).
 * *flushed: the WAL was flushed for the request already.
 */
static void
list_partition_offset(KpRequestContext *ctx, const KpTopic *t, int32 epoch, bool *flushed,
					  KpListOffsetsRequestListOffsetsPartition *rp,
					  KpListOffsetsResponseListOffsetsPartitionResponse *op)
{
	KpListOffsetsRequest *req = ctx->request;
	bool		read_committed = (req->isolation_level == 1);
	KpPartitionRef ref;
	KpLogOffsets off;
	int64		found_ts = -1;
	int64		offset;

	op->partition_index = rp->partition_index;
	op->timestamp = -1;
	op->offset = -1;
	op->leader_epoch = -1;
	if (list_offsets_timestamp_unsupported(rp->timestamp, ctx->version))
	{
		op->error_code = KP_ERR_UNSUPPORTED_VERSION;
		return;
	}
	if (t == NULL || rp->partition_index < 0 || rp->partition_index >= t->partition_count)
	{
		op->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
		return;
	}
	if (rp->current_leader_epoch >= 0 && rp->current_leader_epoch != epoch)
	{
		op->error_code = rp->current_leader_epoch < epoch ?
			KP_ERR_FENCED_LEADER_EPOCH : KP_ERR_UNKNOWN_LEADER_EPOCH;
		return;
	}
	kp_topic_partition(t, rp->partition_index, &ref);
	if (kp_handler_no_room(ref.partition_id, NULL))
	{
		op->error_code = KP_ERR_KAFKA_STORAGE_ERROR;
		return;
	}
	op->error_code = KP_ERR_NONE;

	/*
	 * LATEST_TIERED and EARLIEST_PENDING_UPLOAD (KIP-1005, KIP-1023): nothing
	 * is in remote storage, and Kafka answers a topic without tiered storage
	 * no offset, no timestamp and no epoch.
	 */
	if (rp->timestamp == -5 || rp->timestamp == -6)
		return;
	kp_log_offsets(ref.partition_id, &off);

	/*
	 * Records appended but not flushed yet (acks=1): flushed now, once for
	 * the request, so that LATEST answers them as Kafka's broker does at once
	 * (kp_wal_flush_for_readers)
	 */
	if (!*flushed && off.high_watermark < off.log_end_offset &&
		!XLogRecPtrIsInvalid(off.hw_next_lsn))
	{
		kp_wal_flush_for_readers();
		*flushed = true;
		kp_log_offsets(ref.partition_id, &off);
	}
	off.last_stable_offset = kp_client_lso(&off);
	switch (rp->timestamp)
	{
		case -1:				/* LATEST: the high watermark, as Kafka's */
			offset = read_committed ? off.last_stable_offset : off.high_watermark;
			break;
		case -2:				/* EARLIEST */
		case -4:				/* EARLIEST_LOCAL (KIP-405): all is local */
			offset = off.log_start_offset;
			break;
		case -3:				/* MAX_TIMESTAMP (KIP-734) */
			offset = kp_log_max_timestamp(ref.partition_id, &found_ts);
			break;
		default:
			offset = kp_log_offset_for_timestamp(ref.partition_id, rp->timestamp, &found_ts);
			if (offset >= (read_committed ? off.last_stable_offset : off.high_watermark))
				offset = -1;

			/*
			 * On a hot standby a record found is the first of that time in
			 * the whole log (the standby's is a prefix of the primary's);
			 * none found is only true of what it replayed: a consumer is sent
			 * to the leader, the debugging replica id -2 is answered as
			 * Kafka's follower answers it (none).
			 */
			if (offset < 0 && RecoveryInProgress() && req->replica_id != -2)
			{
				op->error_code = KP_ERR_NOT_LEADER_OR_FOLLOWER;
				return;
			}
			break;
	}
	op->offset = offset;
	op->timestamp = found_ts;

	/* the epoch of the batch holding the offset (the current one at the end) */
	op->leader_epoch = offset < 0 ? -1 :
		offset >= off.high_watermark ? epoch :
		kp_log_epoch_at(ref.partition_id, offset, epoch);
}

/*
 * ListOffsets: LATEST is the high watermark (read_committed: the last
 * stable offset), EARLIEST the log start, a timestamp the first record at
 * or after it below that bound.  On a hot standby (a consumer's request, or
 * the debugging replica id -2's: leader.c refuses a replica's) these are
 * this server's: its replayed end and its log start, as the high watermark
 * and log start of its Fetch responses; a timestamp with no record in what
 * it replayed is NOT_LEADER_OR_FOLLOWER for a consumer (docs/replication.md).
 *
 * As Kafka 4.4's broker, which keys the answers by partition: a topic listed
 * twice is answered in one entry, a partition listed twice once with
 * INVALID_REQUEST, and a topic with no partition to answer not at all; a
 * topic the client may not describe is answered as listed,
 * TOPIC_AUTHORIZATION_FAILED for each partition, after the others
 * (test/clients/admin/wire_offsets.py).
 */
void
kp_handle_list_offsets(KpRequestContext *ctx)
{
	KpListOffsetsRequest *req = ctx->request;
	KpListOffsetsResponse *resp = ctx->response;
	int			n_topics = ArrayLen(req->n_topics);
	int32		epoch = kp_leader_epoch();
	bool		flushed = false;
	char	  **names = palloc(sizeof(char *) * Max(n_topics, 1));
	int		   *counts = palloc(sizeof(int) * Max(n_topics, 1));
	bool	   *allowed = palloc(sizeof(bool) * Max(n_topics, 1));
	int32	   *partitions;
	KpPartitionKeys keys;
	int			n_keys = 0;
	int			pass;
	int			i;

	for (i = 0; i < n_topics; i++)
	{
		names[i] = req->topics[i].name;
		counts[i] = ArrayLen(req->topics[i].n_partitions);
		n_keys += counts[i];
	}
	partitions = palloc(sizeof(int32) * Max(n_keys, 1));
	n_keys = 0;
	for (i = 0; i < n_topics; i++)
	{
		int			j;

		for (j = 0; j < counts[i]; j++)
			partitions[n_keys++] = req->topics[i].partitions[j].partition_index;
	}
	kp_partition_keys(names, counts, n_topics, partitions, &keys);

	resp->n_topics = 0;
	resp->topics = palloc0(sizeof(KpListOffsetsResponseListOffsetsTopicResponse) * Max(n_topics, 1));
	for (i = 0; i < n_topics; i++)
		allowed[i] = kp_authz_topic(ctx, names[i], kp_handler_topic(names[i], NULL),
									KP_ACL_OP_DESCRIBE);

	/* first the topics the client may describe, then the others */
	for (pass = 0; pass < 2; pass++)
	{
		for (i = 0; i < n_topics; i++)
		{
			KpListOffsetsResponseListOffsetsTopicResponse *ot = &resp->topics[resp->n_topics];
			const KpTopic *t = NULL;
			int			n = 0;
			int			l;

			if (allowed[i] != (pass == 0) || (allowed[i] && keys.topic_later[i]))
				continue;
			if (allowed[i])
			{
				t = kp_handler_topic(names[i], NULL);
				for (l = i; l >= 0; l = keys.next_topic[l])
					n += counts[l];
			}
			else
				n = counts[i];
			ot->name = names[i] ? pstrdup(names[i]) : NULL;
			ot->partitions = palloc0(sizeof(KpListOffsetsResponseListOffsetsPartitionResponse) *
									 Max(n, 1));
			ot->n_partitions = 0;

			/* a topic not allowed: this listing alone; else all of them */
			for (l = i; l >= 0; l = allowed[i] ? keys.next_topic[l] : -1)
			{
				int			j;

				for (j = 0; j < counts[l]; j++)
				{
					KpListOffsetsRequestListOffsetsPartition *rp = &req->topics[l].partitions[j];
					KpListOffsetsResponseListOffsetsPartitionResponse *op;
					int			k = keys.first[l] + j;

					if (allowed[i] && keys.later[k])
						continue;
					op = &ot->partitions[ot->n_partitions++];
					op->partition_index = rp->partition_index;
					op->timestamp = -1;
					op->offset = -1;
					op->leader_epoch = -1;
					if (!allowed[i])
						op->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
					else if (KP_KEY_REPEATED(&keys, k))
						op->error_code = KP_ERR_INVALID_REQUEST;
					else
						list_partition_offset(ctx, t, epoch, &flushed, rp, op);
				}
			}
			if (allowed[i] && ot->n_partitions == 0)
				continue;		/* nothing to answer: no entry */
			resp->n_topics++;
		}
	}
	Assert(resp->n_topics <= n_topics);
}
