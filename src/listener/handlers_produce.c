/*-------------------------------------------------------------------------
 *
 * handlers_produce.c
 *	  Produce: every batch of a request is validated (the codec, the topic's
 *	  policy, the transaction coordinator's check for transactional batches)
 *	  before any is appended, recompressed to the topic's compression.type, and
 *	  appended through the store's one append path.  acks=-1 (all): refused
 *	  at once with NOT_ENOUGH_REPLICAS when fewer replicas are in sync than
 *	  the topic's min.insync.replicas; otherwise the handler returns the
 *	  batches' WAL position (ctx->ack_lsn) and the worker answers once the
 *	  in-sync replicas have it (server.c, docs/replication.md), serving its
 *	  other connections meanwhile.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "codec/codec.h"
#include "listener/handlers.h"
#include "listener/handlers_admin.h"
#include "listener/listener.h"
#include "listener/listener_int.h"
#include "store/store.h"
#include "txn/txn.h"

/* how far a batch may inflate while its records are checked */
#define KP_WIRE_MAX_INFLATE		((size_t) 128 * 1024 * 1024)

/* ---------------------------------------------------------------------
 * Produce
 * ---------------------------------------------------------------------
 */

/* Check one batch of a produce request; returns a Kafka error code. */
static int16
check_produce_batch(const KpTopic *t, const uint8 *data, size_t len,
					KpBatchHeader *hdr, const char **why)
{
	KpCodecError err;
	int64		now;
	int			state;
	char	   *msg;

	if (len < KP_BATCH_HEADER_SIZE)
	{
		*why = "record batch shorter than its header";
		return KP_ERR_CORRUPT_MESSAGE;
	}
	if (((const char *) data)[16] != KP_BATCH_MAGIC)
	{
		*why = "only record batches of magic 2 are accepted (Produce v3 and later)";
		return KP_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT;
	}
	err = kp_batch_validate_produced((const char *) data, len, hdr);
	if (err == KP_CODEC_BAD_COUNT)
	{
		/* Kafka's words and code (LogValidator, InvalidRecordException) */
		if (hdr->records_count <= 0)
			*why = psprintf("Invalid reported count for record batch: %d",
							hdr->records_count);
		else
			*why = psprintf("Inconsistent batch offset range [0, %d] and count of records %d",
							hdr->last_offset_delta, hdr->records_count);
		return KP_ERR_INVALID_RECORD;
	}
	if (err != KP_CODEC_OK)
	{
		*why = kp_codec_error_message(err);
		return err == KP_CODEC_BAD_CRC ? KP_ERR_CORRUPT_MESSAGE : KP_ERR_INVALID_RECORD;
	}
	if ((state = kp_topic_check_batch_size(t, len, false, &msg)) != 0)
	{
		*why = msg;
		return kp_handler_code_for_sqlstate(state);
	}
	if (KpBatchIsControl(hdr))
	{
		*why = "producers cannot write control batches";
		return KP_ERR_INVALID_RECORD;
	}
	if (KpBatchIsTransactional(hdr) && hdr->producer_id < 0)
	{
		*why = "a transactional batch needs a producer id";
		return KP_ERR_INVALID_RECORD;
	}

	/*
	 * kp_batch_validate checks an uncompressed batch's records; a compressed
	 * one's are checked here, inflated, as Kafka's LogValidator does, so that
	 * no batch a reader cannot decode is ever stored.
	 */
	if (KpBatchCompression(hdr) != KP_COMPRESSION_NONE)
	{
		int32		record_len;

		err = kp_batch_check_records_max((const char *) data, len, KP_WIRE_MAX_INFLATE,
										 t->config.max_decompressed_message_bytes, &record_len);
		if (err == KP_CODEC_RECORD_TOO_LARGE)
		{
			/* Kafka's words and code (DefaultRecord.readFrom) */
			*why = psprintf("Invalid record size: %d exceeds the configured maximum record size of %d.",
							record_len, t->config.max_decompressed_message_bytes);
			return KP_ERR_INVALID_RECORD;
		}
		if (err != KP_CODEC_OK)
		{
			*why = kp_codec_error_message(err);
			return KP_ERR_CORRUPT_MESSAGE;
		}
	}
	now = GetCurrentTimestamp() / 1000 +
		((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)) * SECS_PER_DAY * 1000;
	if ((state = kp_topic_check_timestamp(t, hdr->max_timestamp, now, false, &msg)) != 0)
	{
		*why = msg;
		return kp_handler_code_for_sqlstate(state);
	}
	return KP_ERR_NONE;
}

/*
 * Records without a key on a compacted topic (src/catalog/policy.c):
 * INVALID_RECORD with, at v8+, one record_errors entry (batch_index,
 * message) per refused record, as Kafka's LogValidator reports them.
 */
static int16
check_batch_keys(const KpTopic *t, const uint8 *data, size_t len, int16 version,
				 KpProduceResponsePartitionProduceResponse *pr, const char **why)
{
	int		   *bad;
	int			nbad;
	char	   *msg;
	int			i;

	if (kp_topic_check_batch_keys(t, (const char *) data, len, KP_WIRE_MAX_INFLATE,
								  &bad, &nbad, &msg) == 0)
		return KP_ERR_NONE;
	*why = psprintf("One or more records have been rejected due to %d record errors in total: %s",
					nbad, msg);
	if (version >= 8)
	{
		pr->n_record_errors = nbad;
		pr->record_errors = palloc0(sizeof(KpProduceResponseBatchIndexAndErrorMessage) * nbad);
		for (i = 0; i < nbad; i++)
		{
			pr->record_errors[i].batch_index = bad[i];
			pr->record_errors[i].batch_index_error_message = msg;
		}
	}
	return KP_ERR_INVALID_RECORD;
}

/*
 * The batch at *batch in the topic's compression.type (t->config.compression
 * >= 0), as Kafka's LogValidator recompresses it: offsets, timestamps and
 * producer fields are kept.  The recompressed batch must still fit
 * max.message.bytes (Kafka checks again after recompression).
 */
static int16
recompress_batch(const KpTopic *t, char **batch, size_t *len, const char **why)
{
	KpCodecError err;
	char	   *out;
	size_t		out_len;
	char	   *msg;
	int			state;

	err = kp_batch_recompress(*batch, *len, (KpCompression) t->config.compression,
							  KP_WIRE_MAX_INFLATE, &out, &out_len);
	if (err != KP_CODEC_OK)
	{
		*why = kp_codec_error_message(err);
		return KP_ERR_CORRUPT_MESSAGE;
	}
	if ((state = kp_topic_check_batch_size(t, out_len, false, &msg)) != 0)
	{
		*why = msg;
		return kp_handler_code_for_sqlstate(state);
	}
	*batch = out;
	*len = out_len;
	return KP_ERR_NONE;
}

/*
 * The transaction coordinator's check of every transactional batch of one
 * partition (KIP-890 part 1), once per producer id and epoch.
 */
static int16
check_transactional_batches(char **batches, size_t *lens, int nbatches, int64 partition_id)
{
	int64		checked_pid = -1;
	int16		checked_epoch = -1;
	int			b;

	for (b = 0; b < nbatches; b++)
	{
		KpBatchHeader hdr;
		int16		code;

		if (kp_batch_parse_header(batches[b], lens[b], &hdr) != KP_CODEC_OK ||
			!KpBatchIsTransactional(&hdr) ||
			(hdr.producer_id == checked_pid && hdr.producer_epoch == checked_epoch))
			continue;
		code = kp_txn_check_produce(hdr.producer_id, hdr.producer_epoch, partition_id, NULL,
									NULL, 0, NULL);
		if (code != KP_ERR_NONE)
			return code;
		checked_pid = hdr.producer_id;
		checked_epoch = hdr.producer_epoch;
	}
	return KP_ERR_NONE;
}

/*
 * The min.insync.replicas an acks=all Produce to t needs.  Like Kafka (its
 * effective min ISR) no more than the replicas there are:
 * kafka.replica_nodes.  The ISR's size and the replication factor are asked
 * once per request (*in_sync < 0: not yet).
 */
static int
produce_min_isr(const KpTopic *t, int *in_sync, int *replicas)
{
	if (*in_sync < 0)
	{
		*in_sync = kp_isr_count();
		*replicas = kp_replication_factor();
	}
	return Min(t->config.min_insync_replicas, *replicas);
}

/*
 * What the first run of a Produce did to each of its partitions, in the
 * order of the request (ctx->produce_ledger).  An append is not undone when
 * the request's transaction aborts: the batch stays in the log.  So when an
 * append fails part way through a request (the disk full, an I/O error, the
 * partition's open-transaction limit) and the dispatcher runs the request
 * again guarded, the partitions the first run appended are answered from
 * here, not appended a second time; the rest are appended each in a
 * subtransaction of its own, and the one that fails again is answered
 * KAFKA_STORAGE_ERROR, as Kafka answers a partition whose log append failed.
 * In the produce context (dispatch.c), which the abort leaves alone.
 */
typedef struct ProduceNote
{
	bool		done;			/* produce_partition appended (or refused) */
	KpProduceResponsePartitionProduceResponse answer;	/* its answer then */
	XLogRecPtr	lsn;			/* what acks=all waits for */
} ProduceNote;

typedef struct KpProduceLedger
{
	int			n;
	ProduceNote parts[FLEXIBLE_ARRAY_MEMBER];
} KpProduceLedger;

/*
 * The coordinator's answer for one partition's transactional batch, asked
 * before any append (add_partitions_first), when it still stands: a refusal,
 * or an acceptance under the locks this request's transaction holds.
 */
typedef struct TxnPrecheck
{
	bool		asked;
	int16		code;
} TxnPrecheck;

/* One partition's append: produce_partition's arguments and results */
typedef struct ProduceAppend
{
	KpRequestContext *ctx;
	const KpTopic *t;
	KpProduceRequestPartitionProduceData *pd;
	KpProduceResponsePartitionProduceResponse *pr;
	char	  **batches;
	size_t	   *batch_lens;
	int			nbatches;
	ProduceNote *note;			/* the first run's ledger entry, or NULL */
	const TxnPrecheck *pre;		/* add_partitions_first's answer, or NULL */
	XLogRecPtr	part_lsn;		/* out: the end of its batches' WAL */
} ProduceAppend;

/*
 * Append one partition's validated batches and fill its answer: the room on
 * the disk first, the transaction coordinator's check, then the store.
 */
static void
produce_partition(ProduceAppend *pa)
{
	KpProduceResponsePartitionProduceResponse *pr = pa->pr;
	KpPartitionRef ref;
	KpAppendResult res;
	int16		code = KP_ERR_NONE;
	bool		first = true;
	int			b;

	kp_topic_partition(pa->t, pa->pd->index, &ref);
	if (kp_handler_no_room(ref.partition_id, pa->ctx->version >= 8 ? &pr->error_message : NULL))
		code = KP_ERR_KAFKA_STORAGE_ERROR;

	/*
	 * Transactional batches: the coordinator must have the partition in their
	 * producer's ongoing transaction (handlers_txn.c, src/txn/coordinator.c),
	 * checked for all before any is appended.
	 */
	if (code == KP_ERR_NONE)
	{
		/* Produce v12+: asked already, and added (add_partitions_first) */
		if (pa->pre && pa->pre->asked)
			code = pa->pre->code;
		else
			code = check_transactional_batches(pa->batches, pa->batch_lens, pa->nbatches,
											   ref.partition_id);

		/*
		 * A partition not in the transaction: TRANSACTION_ABORTABLE for the
		 * clients that know it (v11+), as Kafka answers them
		 */
		if (code == KP_ERR_INVALID_TXN_STATE && pa->ctx->version >= 11)
			code = KP_ERR_TRANSACTION_ABORTABLE;
	}
	for (b = 0; code == KP_ERR_NONE && b < pa->nbatches; b++)
	{
		KpBatchHeader hdr;
		int64		txn_pid = KP_NO_PRODUCER_ID;

		/* a transactional batch opens or continues its transaction */
		if (kp_batch_parse_header(pa->batches[b], pa->batch_lens[b], &hdr) == KP_CODEC_OK &&
			KpBatchIsTransactional(&hdr))
			txn_pid = hdr.producer_id;
		kp_log_append(&ref, &pa->t->config.log, pa->batches[b], pa->batch_lens[b], txn_pid, &res);
		if (res.status == KP_APPEND_OUT_OF_ORDER)
			code = KP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
		else if (res.status == KP_APPEND_STALE_EPOCH)
			code = KP_ERR_INVALID_PRODUCER_EPOCH;
		else
		{
			if (first)
			{
				pr->base_offset = res.base_offset;
				pr->log_append_time_ms = res.log_append_time;
				first = false;
			}
			if (res.status == KP_APPEND_OK && res.end_lsn > pa->part_lsn)
				pa->part_lsn = res.end_lsn;

			/*
			 * A retry of a batch already in the log: its first append may not
			 * be flushed yet; everything inserted so far covers it.
			 */
			if (res.status == KP_APPEND_DUPLICATE)
				pa->part_lsn = Max(pa->part_lsn, kp_xlog_insert_end());
		}
	}
	pr->error_code = code;
	if (code != KP_ERR_NONE)
		pr->base_offset = -1;

	/* noted at once: what follows may fail, and a second run must not append */
	if (pa->note)
	{
		pa->note->done = true;
		pa->note->answer = *pr;
		pa->note->lsn = pa->part_lsn;
	}
	if (code == KP_ERR_NONE)
	{
		KpLogOffsets off;

		kp_log_offsets(ref.partition_id, &off);
		pr->log_start_offset = off.log_start_offset;
	}
}

static void
produce_partition_fn(void *arg)
{
	produce_partition((ProduceAppend *) arg);
}

/*
 * The second, guarded run of a Produce (ctx->storage_guard): a partition the
 * first run appended is answered as it was then; any other is appended in a
 * subtransaction, and answered KAFKA_STORAGE_ERROR if that fails with a
 * storage error (kp_storage_try: any other ERROR fails the request, as in
 * the first run).  False if the partition is answered with an error.
 */
static bool
produce_partition_guarded(ProduceAppend *pa)
{
	static int64 warned_ms = 0;
	KpProduceResponsePartitionProduceResponse *pr = pa->pr;
	KpProduceResponsePartitionProduceResponse saved = *pr;
	ErrorData  *edata;

	if (pa->note && pa->note->done)
	{
		*pr = pa->note->answer;
		pa->part_lsn = pa->note->lsn;
		if (pr->error_code == KP_ERR_NONE)
		{
			KpPartitionRef ref;
			KpLogOffsets off;

			kp_topic_partition(pa->t, pa->pd->index, &ref);
			kp_log_offsets(ref.partition_id, &off);
			pr->log_start_offset = off.log_start_offset;
		}
		return true;
	}
	pa->note = NULL;
	edata = kp_storage_try(produce_partition_fn, pa, true);
	if (edata == NULL)
		return true;
	*pr = saved;
	pr->error_code = KP_ERR_KAFKA_STORAGE_ERROR;
	if (pa->ctx->version >= 8)
		pr->error_message = edata->detail ?
			psprintf("%s: %s", edata->message, edata->detail) : pstrdup(edata->message);
	kp_storage_warning(&warned_ms, edata,
					   psprintf("cannot append to %s-%d", pa->t->name, (int) pa->pd->index),
					   "The partition was answered KAFKA_STORAGE_ERROR, the request's other partitions as usual.",
					   edata->sqlerrcode == ERRCODE_CONFIGURATION_LIMIT_EXCEEDED ?
					   "The producer retries; it succeeds once one of the partition's open transactions ends. At most one such warning a minute is logged." :
					   "Free space on the disk, or fix the I/O error; the producer retries. See docs/durability.md. At most one such warning a minute is logged.");
	FreeErrorData(edata);
	return false;
}

/*
 * Transactions version 2 (Produce v12+ with a transactional id): the
 * transactional batch of each partition adds the partition to its
 * producer's transaction itself, and all the adds are committed before
 * anything is appended.  An append is not undone when the request's
 * transaction aborts, an add is: a batch in the log whose partition the
 * transaction does not list would get no marker, and would hold the
 * partition's last stable offset for good.  A partition asked about here
 * and refused is answered so without appending.  When nothing was added
 * (every later Produce of a transaction), nothing is committed and the
 * answers hold under the producer locks taken: the appends do not ask
 * again.  Per partition, in request order; NULL when not such a request.
 */
static TxnPrecheck *
add_partitions_first(KpRequestContext *ctx, int nparts)
{
	KpProduceRequest *req = ctx->request;
	TxnPrecheck *pre;
	bool		any_added = false;
	int			k = 0;
	int			i;

	if (ctx->version < 12 || req->transactional_id == NULL || req->transactional_id[0] == '\0')
		return NULL;
	pre = palloc0(sizeof(TxnPrecheck) * Max(nparts, 1));
	for (i = 0; i < req->n_topic_data; i++)
	{
		KpProduceRequestTopicProduceData *td = &req->topic_data[i];
		const KpTopic *t = kp_handler_topic(td->name, &td->topic_id);
		int			j;

		for (j = 0; j < Max(td->n_partition_data, 0); j++)
		{
			KpProduceRequestPartitionProduceData *pd = &td->partition_data[j];
			TxnPrecheck *p = &pre[k++];
			KpBatchHeader hdr;
			KpPartitionRef ref;
			bool		added;

			if (t == NULL || pd->index < 0 || pd->index >= t->partition_count ||
				pd->records.len < KP_BATCH_HEADER_SIZE ||
				kp_batch_parse_header((const char *) pd->records.data, pd->records.len,
									  &hdr) != KP_CODEC_OK ||
				!KpBatchIsTransactional(&hdr) ||
				!kp_authz_topic(ctx, td->name, t, KP_ACL_OP_WRITE))
				continue;
			kp_topic_partition(t, pd->index, &ref);
			p->asked = true;
			p->code = kp_txn_check_produce(hdr.producer_id, hdr.producer_epoch, ref.partition_id,
										   req->transactional_id, t->name, pd->index, &added);
			any_added |= added;
		}
	}

	/*
	 * Committed without waiting for its flush: the appends' WAL comes after
	 * the commit record, so whatever makes a batch durable (the acks=all
	 * flush, a standby's) makes its partition's add durable first, and a
	 * crash that loses the add loses the batches after it too.  Waiting would
	 * cost every transaction's first Produce a second fsync.
	 */
	if (any_added)
	{
		kp_handler_next_transaction(false);
		/* the locks went with the commit: the appends ask again */
		for (i = 0; i < nparts; i++)
			if (pre[i].code == KP_ERR_NONE)
				pre[i].asked = false;
	}
	return pre;
}

void
kp_handle_produce(KpRequestContext *ctx)
{
	KpProduceRequest *req = ctx->request;
	KpProduceResponse *resp = ctx->response;
	XLogRecPtr	flush_to = InvalidXLogRecPtr;
	int			in_sync = -1;	/* the ISR's size, asked once */
	int			replicas = 1;	/* the replication factor, with it */
	int			min_isr = 1;
	KpAckWait  *wait = NULL;
	KpProduceLedger *ledger = ctx->produce_ledger;
	TxnPrecheck *pre;
	int			nparts = 0;
	int			k = 0;			/* the partition's place in the request */
	int			i;

	/* a topic listed with no partitions is not answered, as in Kafka */
	req->n_topic_data = KP_DROP_EMPTY(req->topic_data, req->n_topic_data,
									  KpProduceRequestTopicProduceData, n_partition_data);

	/* Kafka: a transactional producer needs WRITE on its transactional id */
	if (req->transactional_id && req->transactional_id[0] &&
		!kp_authz(ctx, KP_ACL_RESOURCE_TRANSACTIONAL_ID, req->transactional_id, KP_ACL_OP_WRITE))
	{
		kp_refuse(ctx, KP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED, NULL);
		if (req->acks == 0)
			ctx->no_response = true;
		return;
	}

	for (i = 0; i < req->n_topic_data; i++)
		nparts += Max(req->topic_data[i].n_partition_data, 0);
	if (!ctx->storage_guard)
	{
		/* what the appends did, should the request need a guarded run */
		ledger = palloc0(offsetof(KpProduceLedger, parts) + sizeof(ProduceNote) * nparts);
		ledger->n = nparts;
		ctx->produce_ledger = ledger;
	}
	if (req->acks == -1)
	{
		wait = palloc0(sizeof(KpAckWait));
		wait->parts = palloc0(sizeof(KpAckPartition) * Max(nparts, 1));
	}
	pre = add_partitions_first(ctx, nparts);

	resp->n_responses = req->n_topic_data < 0 ? 0 : req->n_topic_data;
	resp->responses = palloc0(sizeof(KpProduceResponseTopicProduceResponse) * Max(resp->n_responses, 1));

	for (i = 0; i < resp->n_responses; i++)
	{
		KpProduceRequestTopicProduceData *td = &req->topic_data[i];
		KpProduceResponseTopicProduceResponse *tr = &resp->responses[i];
		const KpTopic *t = kp_handler_topic(td->name, &td->topic_id);
		bool		allowed = kp_authz_topic(ctx, td->name, t, KP_ACL_OP_WRITE);
		int			j;

		tr->name = td->name ? pstrdup(td->name) : NULL;
		memcpy(tr->topic_id.b, td->topic_id.b, 16);
		tr->n_partition_responses = td->n_partition_data < 0 ? 0 : td->n_partition_data;
		tr->partition_responses = palloc0(sizeof(KpProduceResponsePartitionProduceResponse) *
										  Max(tr->n_partition_responses, 1));
		for (j = 0; j < tr->n_partition_responses; j++)
		{
			KpProduceRequestPartitionProduceData *pd = &td->partition_data[j];
			KpProduceResponsePartitionProduceResponse *pr = &tr->partition_responses[j];
			const char *why = NULL;
			int16		code = KP_ERR_NONE;
			size_t		pos;
			int			nbatches = 0;
			char	  **batches;
			size_t	   *batch_lens;
			ProduceAppend pa;

			pr->index = pd->index;
			pr->base_offset = -1;
			pr->log_append_time_ms = -1;
			pr->log_start_offset = -1;
			pr->current_leader.leader_id = -1;
			pr->current_leader.leader_epoch = -1;
			k++;
			pa.ctx = ctx;
			pa.t = t;
			pa.pd = pd;
			pa.pr = pr;
			pa.note = ledger && k <= ledger->n ? &ledger->parts[k - 1] : NULL;
			pa.pre = pre ? &pre[k - 1] : NULL;
			pa.part_lsn = InvalidXLogRecPtr;

			/* appended by the first run (a guarded run): answered as then */
			if (ctx->storage_guard && pa.note && pa.note->done && t != NULL)
			{
				if (req->acks == -1)
					min_isr = produce_min_isr(t, &in_sync, &replicas);
				(void) produce_partition_guarded(&pa);
				goto ack;
			}

			/*
			 * MessageSet formats (magic 0/1) are gone since Kafka 4.0
			 * (KIP-896)
			 */
			if (ctx->version < 3)
				code = KP_ERR_UNSUPPORTED_VERSION;
			else if (req->acks != 0 && req->acks != 1 && req->acks != -1)
				code = KP_ERR_INVALID_REQUIRED_ACKS;
			else if (!allowed)
				code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
			else if (t == NULL)
				code = (td->name && td->name[0]) ? KP_ERR_UNKNOWN_TOPIC_OR_PARTITION :
					KP_ERR_UNKNOWN_TOPIC_ID;
			else if (pd->index < 0 || pd->index >= t->partition_count)
				code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
			else if (pd->records.len <= 0)
			{
				code = KP_ERR_INVALID_RECORD;
				why = "no records";
			}

			/*
			 * Validate every batch before appending any: all or nothing.  A
			 * topic whose compression.type names a codec gets its batches in
			 * that codec, recompressed here as Kafka's LogValidator does;
			 * "producer" (the default) keeps the producer's.
			 */
			batches = palloc(sizeof(char *) * (pd->records.len / KP_BATCH_HEADER_SIZE + 1));
			batch_lens = palloc(sizeof(size_t) * (pd->records.len / KP_BATCH_HEADER_SIZE + 1));
			for (pos = 0; code == KP_ERR_NONE && pos < (size_t) pd->records.len; nbatches++)
			{
				KpBatchHeader hdr;
				size_t		rest = pd->records.len - pos;
				size_t		total;

				if (rest < KP_BATCH_LOG_OVERHEAD)
				{
					code = KP_ERR_CORRUPT_MESSAGE;
					why = "truncated record batch";
					break;
				}
				total = (size_t) (uint32) kp_get_int32((const char *) pd->records.data + pos + 8) +
					KP_BATCH_LOG_OVERHEAD;
				if (total > rest || total < KP_BATCH_HEADER_SIZE)
				{
					code = KP_ERR_CORRUPT_MESSAGE;
					why = "record batch length exceeds the request";
					break;
				}
				if (total < rest)
				{
					/*
					 * ProduceRequest.validateRecords (v3+): exactly one batch
					 * per partition, so a partition's data is stored whole or
					 * not at all.
					 */
					code = KP_ERR_INVALID_RECORD;
					why = psprintf("Produce requests with version %d are only allowed to contain exactly one record batch per partition",
								   ctx->version);
					break;
				}
				batches[nbatches] = (char *) pd->records.data + pos;
				batch_lens[nbatches] = total;
				code = check_produce_batch(t, pd->records.data + pos, total, &hdr, &why);
				if (code == KP_ERR_NONE)
					code = check_batch_keys(t, pd->records.data + pos, total,
											ctx->version, pr, &why);
				if (code == KP_ERR_NONE && t->config.compression >= 0 &&
					(KpCompression) t->config.compression != KpBatchCompression(&hdr))
					code = recompress_batch(t, &batches[nbatches], &batch_lens[nbatches], &why);
				pos += total;
			}
			if (code != KP_ERR_NONE)
			{
				pr->error_code = code;
				if (why && ctx->version >= 8)
					pr->error_message = pstrdup(why);
				continue;
			}

			/*
			 * min.insync.replicas: Kafka refuses acks=all before appending
			 * when the ISR is smaller (Partition.appendRecordsToLeader), with
			 * its words.
			 */
			if (req->acks == -1)
			{
				min_isr = produce_min_isr(t, &in_sync, &replicas);
				if (in_sync < min_isr)
				{
					pr->error_code = KP_ERR_NOT_ENOUGH_REPLICAS;
					if (ctx->version >= 8)
						pr->error_message =
							psprintf("The size of the current ISR %d is insufficient to satisfy the min.isr requirement of %d for partition %s-%d",
									 in_sync, min_isr, t->name, pd->index);
					continue;
				}
			}

			pa.batches = batches;
			pa.batch_lens = batch_lens;
			pa.nbatches = nbatches;
			if (!ctx->storage_guard)
				produce_partition(&pa);
			else if (!produce_partition_guarded(&pa))
				continue;
	ack:
			if (pr->error_code == KP_ERR_NONE && wait && !XLogRecPtrIsInvalid(pa.part_lsn))
			{
				KpAckPartition *ap = &wait->parts[wait->n++];

				ap->lsn = pa.part_lsn;
				ap->error_code = &pr->error_code;
				ap->min_insync_replicas = min_isr;
				flush_to = Max(flush_to, pa.part_lsn);
			}
		}
	}

	if (req->acks == 0)
		ctx->no_response = true;
	else if (wait && wait->n > 0)
	{
		/*
		 * acks=all: answered once every in-sync replica has the WAL up to
		 * flush_to, by the worker (server.c), which flushes once for all the
		 * requests waiting on it and does not wait in SyncRepWaitForLSN.
		 * timeout_ms counts from the request's arrival, as Kafka's
		 * DelayedProduce does; then REQUEST_TIMED_OUT.
		 */
		ctx->ack_lsn = flush_to;
		ctx->ack_until_ms = ctx->received_ms + Max(req->timeout_ms, 0);
		ctx->ack_wait = wait;
	}
}
