/*-------------------------------------------------------------------------
 *
 * handlers_core.c
 *	  ApiVersions, Metadata, Produce, Fetch, ListOffsets, InitProducerId,
 *	  DescribeCluster: what every client needs to produce and consume.
 *
 * The broker is a single node (node id kafka.node_id) that leads every
 * partition at leader epoch 0; its replicas and ISR are itself.  Produce
 * and Fetch go through the same store calls as kafka.produce and
 * kafka.fetch (src/store), so records written by either front door are
 * read by the other.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "codec/codec.h"
#include "listener/handlers.h"
#include "listener/listener.h"
#include "listener/listener_int.h"
#include "store/store.h"
#include "txn/txn.h"

/* the largest batch we inflate to check it: anything bigger is refused */
#define KP_WIRE_MAX_INFLATE		((size_t) 128 * 1024 * 1024)

/* ---------------------------------------------------------------------
 * ApiVersions
 * ---------------------------------------------------------------------
 */

void
kp_handle_api_versions(KpRequestContext *ctx)
{
	KpApiVersionsResponse *resp = ctx->response;
	int			n = 0;
	int			key;

	resp->api_keys = palloc0(sizeof(KpApiVersionsResponseApiVersion) * (KP_API_KEY_MAX + 1));
	for (key = 0; key <= KP_API_KEY_MAX; key++)
	{
		const KpApiEntry *api = kp_api_lookup((int16) key);

		if (api == NULL || kp_handler_for((int16) key) == NULL)
			continue;
		resp->api_keys[n].api_key = (int16) key;
		resp->api_keys[n].min_version = api->min_version;
		resp->api_keys[n].max_version = api->max_version;
		n++;
	}
	resp->n_api_keys = n;
	resp->error_code = KP_ERR_NONE;
	/* no features: in particular no transaction.version >= 2 (KIP-890 part 2) */
	resp->n_supported_features = 0;
	resp->n_finalized_features = 0;
}

/* ---------------------------------------------------------------------
 * Metadata
 * ---------------------------------------------------------------------
 */

static void
fill_topic_metadata(KpMetadataResponseTopic *out, const KpTopic *t, bool with_ops)
{
	int			p;

	out->error_code = KP_ERR_NONE;
	out->name = pstrdup(t->name);
	memcpy(out->topic_id.b, t->topic_uuid.data, 16);
	out->is_internal = false;
	out->n_partitions = t->partition_count;
	out->partitions = palloc0(sizeof(KpMetadataResponsePartition) * Max(t->partition_count, 1));
	for (p = 0; p < t->partition_count; p++)
	{
		KpMetadataResponsePartition *mp = &out->partitions[p];

		mp->error_code = KP_ERR_NONE;
		mp->partition_index = p;
		mp->leader_id = kp_node_id;
		mp->leader_epoch = 0;
		mp->n_replica_nodes = 1;
		mp->replica_nodes = palloc(sizeof(int32));
		mp->replica_nodes[0] = kp_node_id;
		mp->n_isr_nodes = 1;
		mp->isr_nodes = palloc(sizeof(int32));
		mp->isr_nodes[0] = kp_node_id;
		mp->n_offline_replicas = 0;
		mp->offline_replicas = NULL;
	}
	out->topic_authorized_operations = with_ops ? KP_TOPIC_AUTHORIZED_OPERATIONS : PG_INT32_MIN;
}

typedef struct AutoCreateArg
{
	const char *name;
} AutoCreateArg;

static void
auto_create_topic(void *arg)
{
	kp_topic_create(((AutoCreateArg *) arg)->name, kp_num_partitions, NULL, 0);
}

void
kp_handle_metadata(KpRequestContext *ctx)
{
	KpMetadataRequest *req = ctx->request;
	KpMetadataResponse *resp = ctx->response;
	bool		all_topics;
	bool		allow_create = kp_auto_create_topics_enable &&
		(ctx->version < 4 || req->allow_auto_topic_creation);
	int			i;

	resp->n_brokers = 1;
	resp->brokers = palloc0(sizeof(KpMetadataResponseBroker));
	resp->brokers[0].node_id = kp_node_id;
	resp->brokers[0].host = pstrdup(kp_advertised_host_name());
	resp->brokers[0].port = kp_advertised_port_number();
	resp->brokers[0].rack = NULL;
	resp->cluster_id = pstrdup(kp_cluster_id());
	resp->controller_id = kp_node_id;
	resp->cluster_authorized_operations = req->include_cluster_authorized_operations ?
		KP_CLUSTER_AUTHORIZED_OPERATIONS : PG_INT32_MIN;

	/* v0: an empty list means all topics; v1+: null means all */
	all_topics = (req->n_topics < 0) || (ctx->version == 0 && req->n_topics == 0);

	if (all_topics)
	{
		char	  **names = NULL;
		int			n = 0;

		n = kp_topic_list_names(&names);
		resp->topics = palloc0(sizeof(KpMetadataResponseTopic) * Max(n, 1));
		resp->n_topics = 0;
		for (i = 0; i < n; i++)
		{
			const KpTopic *t = kp_handler_topic(names[i], NULL);

			if (t == NULL)
				continue;		/* deleted meanwhile */
			fill_topic_metadata(&resp->topics[resp->n_topics], t,
								req->include_topic_authorized_operations);
			resp->n_topics++;
		}
		return;
	}

	resp->n_topics = req->n_topics;
	resp->topics = palloc0(sizeof(KpMetadataResponseTopic) * Max(req->n_topics, 1));
	for (i = 0; i < req->n_topics; i++)
	{
		KpMetadataRequestTopic *rt = &req->topics[i];
		KpMetadataResponseTopic *out = &resp->topics[i];
		const KpTopic *t = kp_handler_topic(rt->name, &rt->topic_id);

		out->topic_authorized_operations = PG_INT32_MIN;
		if (t == NULL && rt->name && rt->name[0] && allow_create)
		{
			AutoCreateArg arg = {rt->name};
			char	   *msg;
			int16		code = kp_handler_try(auto_create_topic, &arg, &msg);

			if (code == KP_ERR_NONE || code == KP_ERR_TOPIC_ALREADY_EXISTS)
				t = kp_handler_topic(rt->name, NULL);
			else
			{
				out->error_code = code;
				out->name = pstrdup(rt->name);
				continue;
			}
		}
		if (t == NULL)
		{
			out->error_code = (rt->name && rt->name[0]) ? KP_ERR_UNKNOWN_TOPIC_OR_PARTITION :
				KP_ERR_UNKNOWN_TOPIC_ID;
			out->name = rt->name ? pstrdup(rt->name) : NULL;
			memcpy(out->topic_id.b, rt->topic_id.b, 16);
			continue;
		}
		fill_topic_metadata(out, t, req->include_topic_authorized_operations);
	}
}

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
		err = kp_batch_check_records((const char *) data, len, KP_WIRE_MAX_INFLATE);
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
		code = kp_txn_check_produce(hdr.producer_id, hdr.producer_epoch, partition_id);
		if (code != KP_ERR_NONE)
			return code;
		checked_pid = hdr.producer_id;
		checked_epoch = hdr.producer_epoch;
	}
	return KP_ERR_NONE;
}

void
kp_handle_produce(KpRequestContext *ctx)
{
	KpProduceRequest *req = ctx->request;
	KpProduceResponse *resp = ctx->response;
	XLogRecPtr	flush_to = InvalidXLogRecPtr;
	int			i;

	resp->n_responses = req->n_topic_data < 0 ? 0 : req->n_topic_data;
	resp->responses = palloc0(sizeof(KpProduceResponseTopicProduceResponse) * Max(resp->n_responses, 1));

	for (i = 0; i < resp->n_responses; i++)
	{
		KpProduceRequestTopicProduceData *td = &req->topic_data[i];
		KpProduceResponseTopicProduceResponse *tr = &resp->responses[i];
		const KpTopic *t = kp_handler_topic(td->name, &td->topic_id);
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
			KpPartitionRef ref;
			const char *why = NULL;
			int16		code = KP_ERR_NONE;
			size_t		pos;
			int			nbatches = 0;
			int			b;
			char	  **batches;
			size_t	   *batch_lens;
			KpAppendResult res;
			bool		first = true;

			pr->index = pd->index;
			pr->base_offset = -1;
			pr->log_append_time_ms = -1;
			pr->log_start_offset = -1;
			pr->current_leader.leader_id = -1;
			pr->current_leader.leader_epoch = -1;

			/* MessageSet formats (magic 0/1) are gone since Kafka 4.0 (KIP-896) */
			if (ctx->version < 3)
				code = KP_ERR_UNSUPPORTED_VERSION;
			else if (req->acks != 0 && req->acks != 1 && req->acks != -1)
				code = KP_ERR_INVALID_REQUIRED_ACKS;
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

			kp_topic_partition(t, pd->index, &ref);

			/*
			 * Transactional batches: the coordinator must have the partition
			 * in their producer's ongoing transaction (handlers_txn.c,
			 * src/txn/coordinator.c), checked for all before any is appended.
			 */
			code = check_transactional_batches(batches, batch_lens, nbatches, ref.partition_id);
			if (code != KP_ERR_NONE)
			{
				pr->error_code = code;
				continue;
			}
			for (b = 0; b < nbatches; b++)
			{
				KpBatchHeader hdr;
				int64		txn_pid = KP_NO_PRODUCER_ID;

				/* a transactional batch opens or continues its transaction */
				if (kp_batch_parse_header(batches[b], batch_lens[b], &hdr) == KP_CODEC_OK &&
					KpBatchIsTransactional(&hdr))
					txn_pid = hdr.producer_id;
				kp_log_append(&ref, &t->config.log, batches[b], batch_lens[b], txn_pid, &res);
				if (res.status == KP_APPEND_OUT_OF_ORDER)
				{
					code = KP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
					break;
				}
				if (res.status == KP_APPEND_STALE_EPOCH)
				{
					code = KP_ERR_INVALID_PRODUCER_EPOCH;
					break;
				}
				if (first)
				{
					pr->base_offset = res.base_offset;
					pr->log_append_time_ms = res.log_append_time;
					first = false;
				}
				if (res.status == KP_APPEND_OK && res.end_lsn > flush_to)
					flush_to = res.end_lsn;
			}
			pr->error_code = code;
			if (code != KP_ERR_NONE)
				pr->base_offset = -1;
			else
			{
				KpLogOffsets off;

				kp_log_offsets(ref.partition_id, &off);
				pr->log_start_offset = off.log_start_offset;
			}
		}
	}

	if (req->acks == 0)
		ctx->no_response = true;
	else if (req->acks == -1 && !XLogRecPtrIsInvalid(flush_to))
	{
		/*
		 * acks=all: durable before we answer, and on the synchronous
		 * standbys when there are some (the counterpart of
		 * min.insync.replicas).
		 */
		XLogFlush(flush_to);
		if (SyncRepRequested() && SyncRepStandbyNames != NULL && SyncRepStandbyNames[0] != '\0')
			SyncRepWaitForLSN(flush_to, false);
	}
}

/* ---------------------------------------------------------------------
 * Fetch
 * ---------------------------------------------------------------------
 */

typedef struct FetchBudget
{
	int64		total_left;		/* max_bytes left for the response */
	int64		bytes;			/* record bytes collected so far */
	bool		any;			/* some partition returned data */
} FetchBudget;

/*
 * Collect the batches of one partition from fetch_offset: whole batches,
 * at least one if nothing was returned yet (KIP-74), never past the bound
 * (high watermark, or last stable offset for read_committed), and the
 * aborted SQL transactions among them for read_committed readers.
 */
static void
fetch_partition(KpFetchResponsePartitionData *out, int64 partition_id, int64 fetch_offset,
				int32 partition_max_bytes, bool read_committed, FetchBudget *budget)
{
	KpLogOffsets off;
	KpLogReader *reader;
	const char *batch;
	size_t		len;
	StringInfoData records;
	int64		bound;
	int64		part_left = partition_max_bytes;
	KpFetchResponseAbortedTransaction *aborted = NULL;
	int			naborted = 0;
	int			maxaborted = 0;
	int64		last_pid = -1;	/* SQL transaction of the previous batch */

	kp_log_offsets(partition_id, &off);
	out->high_watermark = off.log_end_offset;
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
	bound = read_committed ? off.last_stable_offset : off.log_end_offset;
	out->records.len = 0;
	out->records.data = NULL;
	if (fetch_offset >= bound)
		return;

	/* sized once for what this partition may return: no regrowth copies */
	initStringInfo(&records);
	enlargeStringInfo(&records, (int) Min(Max(part_left, 65536), Min(budget->total_left + 65536, 64 * 1024 * 1024)));
	reader = kp_log_reader_open(partition_id, fetch_offset);
	while (kp_log_reader_next(reader, &batch, &len))
	{
		KpBatchHeader hdr;

		if (kp_batch_parse_header(batch, len, &hdr) != KP_CODEC_OK || hdr.base_offset >= bound)
			break;
		/* whole batches only; the first one even if it is too big (KIP-74) */
		if (budget->any || records.len > 0)
		{
			if ((int64) len > part_left || (int64) len > budget->total_left)
				break;
		}
		/* a transaction's outcome is looked up once per run of its batches */
		if (read_committed && KpBatchIsTransactional(&hdr) && !KpBatchIsControl(&hdr) &&
			KpPidIsSqlXact(hdr.producer_id) && hdr.producer_id != last_pid)
		{
			last_pid = hdr.producer_id;
			if (kp_sql_xact_outcome(last_pid) == KP_TXN_ABORTED)
			{
				int			k;
				bool		known = false;

				for (k = 0; k < naborted; k++)
					if (aborted[k].producer_id == hdr.producer_id)
						known = true;
				if (!known)
				{
					if (naborted == maxaborted)
					{
						maxaborted = maxaborted ? maxaborted * 2 : 8;
						aborted = aborted ? repalloc(aborted, sizeof(*aborted) * maxaborted) :
							palloc(sizeof(*aborted) * maxaborted);
					}
					aborted[naborted].producer_id = hdr.producer_id;
					aborted[naborted].first_offset = hdr.base_offset;
					naborted++;
				}
			}
		}
		appendBinaryStringInfo(&records, batch, len);
		part_left -= len;
		budget->total_left -= len;
		if (part_left <= 0 || budget->total_left <= 0)
			break;
	}
	kp_log_reader_close(reader);
	if (records.len > 0)
	{
		out->records.data = (const uint8 *) records.data;
		out->records.len = records.len;
		budget->bytes += records.len;
		budget->any = true;
	}
	if (read_committed)
	{
		out->n_aborted_transactions = naborted;
		out->aborted_transactions = aborted;
	}
}

/*
 * A partition listed several times in one Fetch is fetched once, as Kafka
 * does: FetchRequest.fetchData is a LinkedHashMap keyed by topic and
 * partition, so the last listing's fetch position wins, the partition keeps
 * the place of its first listing, and consecutive partitions of one topic
 * share one topic entry of the response (checked against Kafka 4.4 by
 * test/wire/limits.py).  Sorted, not compared pairwise: a request may list
 * many thousands.  Rewrites req->topics when something was listed twice.
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

	for (i = 0; i < req->n_topics; i++)
		n += Max(req->topics[i].n_partitions, 0);
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
	if (nunique == n)
	{
		pfree(all);
		return;					/* nothing listed twice: the request stands */
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

void
kp_handle_fetch(KpRequestContext *ctx)
{
	KpFetchRequest *req = ctx->request;
	KpFetchResponse *resp = ctx->response;
	FetchBudget budget;
	bool		read_committed = (req->isolation_level == 1);
	bool		any_error = false;
	int			i;

	/* the broker's fetch.max.bytes caps the request's max_bytes (KIP-541) */
	budget.total_left = Min(req->max_bytes > 0 ? req->max_bytes : PG_INT32_MAX,
							kp_fetch_max_bytes);
	budget.bytes = 0;
	merge_fetch_listings(req, ctx->version >= 13);
	budget.any = false;

	resp->error_code = KP_ERR_NONE;
	resp->session_id = 0;		/* no fetch sessions (KIP-227): full fetches */
	resp->n_responses = req->n_topics < 0 ? 0 : req->n_topics;
	resp->responses = palloc0(sizeof(KpFetchResponseFetchableTopicResponse) * Max(resp->n_responses, 1));
	for (i = 0; i < resp->n_responses; i++)
	{
		KpFetchRequestFetchTopic *rt = &req->topics[i];
		KpFetchResponseFetchableTopicResponse *ot = &resp->responses[i];
		const KpTopic *t = kp_handler_topic(ctx->version >= 13 ? NULL : rt->topic, &rt->topic_id);
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

			/* the defaults of the tagged fields matter: a diverging epoch of
			 * 0 would make a client truncate */
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
			if (t == NULL || rp->partition < 0 || rp->partition >= t->partition_count)
			{
				op->error_code = (t == NULL && ctx->version >= 13) ? KP_ERR_UNKNOWN_TOPIC_ID :
					KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
				op->high_watermark = -1;
				any_error = true;
				continue;
			}
			kp_topic_partition(t, rp->partition, &ref);
			fetch_partition(op, ref.partition_id, rp->fetch_offset, rp->partition_max_bytes,
							read_committed, &budget);
			if (op->error_code != KP_ERR_NONE)
				any_error = true;
		}
	}

	/*
	 * Long poll: wait for min_bytes, up to max_wait_ms from the request's
	 * arrival.  A parked fetch is run again on every wake-up (any append,
	 * any group change), so the deadline is measured from when it first
	 * arrived, never from this run: otherwise a busy server would push a
	 * quiet partition's answer back forever (Kafka's DelayedFetch keeps one
	 * deadline too).
	 */
	if (!any_error && !ctx->final_attempt && req->max_wait_ms > 0 &&
		budget.bytes < Max(req->min_bytes, 1))
	{
		ctx->park = true;
		ctx->park_until_ms = ctx->received_ms + req->max_wait_ms;
	}
}

/* ---------------------------------------------------------------------
 * ListOffsets
 * ---------------------------------------------------------------------
 */

void
kp_handle_list_offsets(KpRequestContext *ctx)
{
	KpListOffsetsRequest *req = ctx->request;
	KpListOffsetsResponse *resp = ctx->response;
	bool		read_committed = (req->isolation_level == 1);
	int			i;

	resp->n_topics = req->n_topics < 0 ? 0 : req->n_topics;
	resp->topics = palloc0(sizeof(KpListOffsetsResponseListOffsetsTopicResponse) * Max(resp->n_topics, 1));
	for (i = 0; i < resp->n_topics; i++)
	{
		KpListOffsetsRequestListOffsetsTopic *rt = &req->topics[i];
		KpListOffsetsResponseListOffsetsTopicResponse *ot = &resp->topics[i];
		const KpTopic *t = kp_handler_topic(rt->name, NULL);
		int			j;

		ot->name = rt->name ? pstrdup(rt->name) : NULL;
		ot->n_partitions = rt->n_partitions < 0 ? 0 : rt->n_partitions;
		ot->partitions = palloc0(sizeof(KpListOffsetsResponseListOffsetsPartitionResponse) *
								 Max(ot->n_partitions, 1));
		for (j = 0; j < ot->n_partitions; j++)
		{
			KpListOffsetsRequestListOffsetsPartition *rp = &rt->partitions[j];
			KpListOffsetsResponseListOffsetsPartitionResponse *op = &ot->partitions[j];
			KpPartitionRef ref;
			KpLogOffsets off;
			int64		found_ts = -1;
			int64		offset;

			op->partition_index = rp->partition_index;
			op->timestamp = -1;
			op->offset = -1;
			op->leader_epoch = -1;
			if (t == NULL || rp->partition_index < 0 || rp->partition_index >= t->partition_count)
			{
				op->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
				continue;
			}
			kp_topic_partition(t, rp->partition_index, &ref);
			kp_log_offsets(ref.partition_id, &off);
			switch (rp->timestamp)
			{
				case -1:		/* LATEST */
					offset = read_committed ? off.last_stable_offset : off.log_end_offset;
					break;
				case -2:		/* EARLIEST */
				case -4:		/* EARLIEST_LOCAL (KIP-405): all is local */
				case -5:		/* EARLIEST_PENDING_UPLOAD: nothing is uploaded */
					offset = off.log_start_offset;
					break;
				case -3:		/* MAX_TIMESTAMP (KIP-734) */
					offset = kp_log_max_timestamp(ref.partition_id, &found_ts);
					break;
				default:
					if (rp->timestamp < 0)
					{
						op->error_code = KP_ERR_INVALID_REQUEST;
						continue;
					}
					offset = kp_log_offset_for_timestamp(ref.partition_id, rp->timestamp, &found_ts);
					if (read_committed && offset >= off.last_stable_offset)
						offset = -1;
					break;
			}
			op->error_code = KP_ERR_NONE;
			op->offset = offset;
			op->timestamp = found_ts;
			op->leader_epoch = offset >= 0 ? 0 : -1;
		}
	}
}

/* ---------------------------------------------------------------------
 * InitProducerId (idempotent producers; transactional ids: handlers_txn.c)
 * ---------------------------------------------------------------------
 */

void
kp_handle_init_producer_id(KpRequestContext *ctx)
{
	KpInitProducerIdRequest *req = ctx->request;
	KpInitProducerIdResponse *resp = ctx->response;

	resp->producer_id = -1;
	resp->producer_epoch = -1;
	if (req->transactional_id != NULL)
	{
		/* the transaction coordinator (handlers_txn.c) */
		kp_handle_init_producer_id_txn(ctx);
		return;
	}
	if (req->producer_id >= 0)
	{
		/* KIP-360: an idempotent producer bumps its own epoch */
		resp->producer_id = req->producer_id;
		resp->producer_epoch = req->producer_epoch < PG_INT16_MAX - 1 ? req->producer_epoch + 1 : 0;
		resp->error_code = KP_ERR_NONE;
		return;
	}
	resp->producer_id = kp_catalog_next_producer_id();
	resp->producer_epoch = 0;
	resp->error_code = KP_ERR_NONE;
}

/* ---------------------------------------------------------------------
 * DescribeCluster
 * ---------------------------------------------------------------------
 */

void
kp_handle_describe_cluster(KpRequestContext *ctx)
{
	KpDescribeClusterRequest *req = ctx->request;
	KpDescribeClusterResponse *resp = ctx->response;

	resp->error_code = KP_ERR_NONE;
	resp->endpoint_type = req->endpoint_type;
	resp->cluster_id = pstrdup(kp_cluster_id());
	resp->controller_id = kp_node_id;
	resp->n_brokers = 1;
	resp->brokers = palloc0(sizeof(KpDescribeClusterResponseDescribeClusterBroker));
	resp->brokers[0].broker_id = kp_node_id;
	resp->brokers[0].host = pstrdup(kp_advertised_host_name());
	resp->brokers[0].port = kp_advertised_port_number();
	resp->brokers[0].rack = NULL;
	resp->cluster_authorized_operations = req->include_cluster_authorized_operations ?
		KP_CLUSTER_AUTHORIZED_OPERATIONS : PG_INT32_MIN;
}
