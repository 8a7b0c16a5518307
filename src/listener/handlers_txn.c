/*-------------------------------------------------------------------------
 *
 * handlers_txn.c
 *	  Transactions over the wire: InitProducerId with a transactional id,
 *	  AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn,
 *	  DescribeTransactions, ListTransactions, DescribeProducers.
 *
 * The rules are the transaction coordinator's (src/txn/coordinator.c);
 * these handlers translate requests and responses, and map error codes to
 * what each request version knows (PRODUCER_FENCED exists from
 * InitProducerId v4, AddPartitionsToTxn v2, AddOffsetsToTxn v2 and EndTxn
 * v2; older versions get INVALID_PRODUCER_EPOCH, as Kafka answers them).
 *
 * Ending a transaction spans two PostgreSQL transactions (coordinator.c
 * says why): the handler commits the request's transaction once the
 * decision is recorded, and writes the markers in a second one.
 *
 * Transactions version 2 (KIP-890 part 2) is told by the request versions,
 * as Kafka tells it: EndTxn v5+ bumps the epoch, TxnOffsetCommit v5+ and
 * Produce v12+ add their group or partition to the transaction themselves
 * (docs/transactions.md).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_collation.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "catalog/kafka_catalog.h"
#include "listener/handlers.h"
#include "listener/handlers_admin.h"
#include "listener/listener.h"
#include "listener/listener_int.h"
#include "store/store.h"
#include "txn/txn.h"

/* PRODUCER_FENCED where the version knows it, else INVALID_PRODUCER_EPOCH */
static int16
fenced_code(int16 code, int16 version, int16 first_version_with_fenced)
{
	if (code == KP_ERR_PRODUCER_FENCED && version < first_version_with_fenced)
		return KP_ERR_INVALID_PRODUCER_EPOCH;
	return code;
}

static void
complete_fn(void *arg)
{
	kp_txn_complete((const char *) arg);
}

/*
 * Write a decided transaction's markers in a transaction of their own.  A
 * failure is logged and left to the resolver's upkeep, which completes
 * every decided transaction; the decision stands either way.
 */
static void
complete_decided(const char *transactional_id)
{
	char	   *msg;
	int16		code;

	kp_handler_next_transaction(true);
	code = kp_handler_try(complete_fn, (void *) transactional_id, &msg);
	if (code != KP_ERR_NONE)
		ereport(LOG,
				(errmsg("kafka_pg listener: could not write the markers of transactional id \"%s\" now, the resolver will: %s",
						transactional_id, msg ? msg : "")));
}

/* ---------------------------------------------------------------------
 * InitProducerId with a transactional id (handlers_core.c calls it)
 * ---------------------------------------------------------------------
 */

void
kp_handle_init_producer_id_txn(KpRequestContext *ctx)
{
	KpInitProducerIdRequest *req = ctx->request;
	KpInitProducerIdResponse *resp = ctx->response;
	int16		code = KP_ERR_NONE;
	int			attempt;

	if (!kp_authz(ctx, KP_ACL_RESOURCE_TRANSACTIONAL_ID, req->transactional_id, KP_ACL_OP_WRITE))
	{
		resp->error_code = KP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
		return;
	}
	if (!kp_init_producer_id_pair_valid(req))
	{
		resp->error_code = KP_ERR_INVALID_REQUEST;
		return;
	}

	/*
	 * Fencing an ongoing transaction decides it (abort), completes it, then
	 * bumps the epoch again: Kafka answers CONCURRENT_TRANSACTIONS in between
	 * and lets the client retry; here the retry is done at once.
	 */
	for (attempt = 0; attempt < 3; attempt++)
	{
		bool		complete;

		code = kp_txn_init_producer(req->transactional_id, req->transaction_timeout_ms,
									ctx->version >= 3 ? req->producer_id : -1,
									ctx->version >= 3 ? req->producer_epoch : -1,
									&resp->producer_id, &resp->producer_epoch, &complete);
		if (!complete)
			break;
		complete_decided(req->transactional_id);
		kp_handler_next_transaction(true);
	}
	resp->error_code = fenced_code(code, ctx->version, 4);
}

/* ---------------------------------------------------------------------
 * AddPartitionsToTxn
 * ---------------------------------------------------------------------
 */

/*
 * One transaction's partitions: unknown ones are answered
 * UNKNOWN_TOPIC_OR_PARTITION and the rest OPERATION_NOT_ATTEMPTED, nothing
 * added (as Kafka); else the coordinator decides.
 */
static int16
add_partitions(KpRequestContext *ctx, const char *transactional_id, int64 producer_id, int16 producer_epoch,
			   bool verify_only, int ntopics, KpAddPartitionsToTxnRequestAddPartitionsToTxnTopic *topics,
			   int *nresults, KpAddPartitionsToTxnResponseAddPartitionsToTxnTopicResult **results)
{
	int			n = 0;
	int			i;
	int			k = 0;
	bool		unknown = false;
	KpTxnPartition *parts;
	int16	   *errors;
	int16		code;
	int16		refused = KP_ERR_NONE;
	bool		txn_allowed;

	ntopics = Max(ntopics, 0);
	for (i = 0; i < ntopics; i++)
		n += Max(topics[i].n_partitions, 0);
	parts = palloc0(sizeof(KpTxnPartition) * Max(n, 1));
	errors = palloc0(sizeof(int16) * Max(n, 1));
	/* Kafka: WRITE on the transactional id, then WRITE on each topic */
	txn_allowed = kp_authz(ctx, KP_ACL_RESOURCE_TRANSACTIONAL_ID,
						   transactional_id ? transactional_id : "", KP_ACL_OP_WRITE);
	for (i = 0; i < ntopics; i++)
	{
		const KpTopic *t = topics[i].name ? kp_handler_topic(topics[i].name, NULL) : NULL;
		bool		topic_allowed = kp_authz_topic(ctx, topics[i].name ? topics[i].name : "",
												   NULL, KP_ACL_OP_WRITE);
		int			j;

		for (j = 0; j < topics[i].n_partitions; j++, k++)
		{
			KpPartitionRef ref;
			int32		p = topics[i].partitions[j];

			parts[k].topic = topics[i].name ? topics[i].name : "";
			parts[k].partition = p;
			if (!txn_allowed)
			{
				errors[k] = refused = KP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
				continue;
			}
			if (!topic_allowed)
			{
				errors[k] = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
				if (refused == KP_ERR_NONE)
					refused = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}
			if (t == NULL || p < 0 || p >= t->partition_count)
			{
				errors[k] = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
				unknown = true;
				continue;
			}
			kp_topic_partition(t, p, &ref);
			parts[k].partition_id = ref.partition_id;
		}
	}
	if (unknown || refused != KP_ERR_NONE)
	{
		for (k = 0; k < n; k++)
			if (errors[k] == KP_ERR_NONE)
				errors[k] = KP_ERR_OPERATION_NOT_ATTEMPTED;
		code = refused != KP_ERR_NONE ? refused : KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	else
		code = kp_txn_add_partitions(transactional_id, producer_id, producer_epoch, n, parts,
									 verify_only, errors);

	*nresults = ntopics;
	*results = palloc0(sizeof(KpAddPartitionsToTxnResponseAddPartitionsToTxnTopicResult) * Max(ntopics, 1));
	k = 0;
	for (i = 0; i < ntopics; i++)
	{
		KpAddPartitionsToTxnResponseAddPartitionsToTxnTopicResult *r = &(*results)[i];
		int			j;

		r->name = topics[i].name;
		r->n_results_by_partition = Max(topics[i].n_partitions, 0);
		r->results_by_partition = palloc0(sizeof(KpAddPartitionsToTxnResponseAddPartitionsToTxnPartitionResult) *
										  Max(r->n_results_by_partition, 1));
		for (j = 0; j < r->n_results_by_partition; j++, k++)
		{
			r->results_by_partition[j].partition_index = topics[i].partitions[j];
			r->results_by_partition[j].partition_error_code = errors[k];
		}
	}
	return code;
}

static void
map_partition_errors(int n, KpAddPartitionsToTxnResponseAddPartitionsToTxnTopicResult *results,
					 int16 version)
{
	int			i;
	int			j;

	for (i = 0; i < n; i++)
		for (j = 0; j < results[i].n_results_by_partition; j++)
			results[i].results_by_partition[j].partition_error_code =
				fenced_code(results[i].results_by_partition[j].partition_error_code, version, 2);
}

void
kp_handle_add_partitions_to_txn(KpRequestContext *ctx)
{
	KpAddPartitionsToTxnRequest *req = ctx->request;
	KpAddPartitionsToTxnResponse *resp = ctx->response;
	int			i;

	if (ctx->version <= 3)
	{
		(void) add_partitions(ctx, req->v3_and_below_transactional_id, req->v3_and_below_producer_id,
							  req->v3_and_below_producer_epoch, false,
							  req->n_v3_and_below_topics, req->v3_and_below_topics,
							  &resp->n_results_by_topic_v3_and_below,
							  &resp->results_by_topic_v3_and_below);
		map_partition_errors(resp->n_results_by_topic_v3_and_below,
							 resp->results_by_topic_v3_and_below, ctx->version);
		return;
	}

	/* v4+: brokers verifying (or adding) for several transactions at once */
	resp->error_code = KP_ERR_NONE;
	resp->n_results_by_transaction = Max(req->n_transactions, 0);
	resp->results_by_transaction = palloc0(sizeof(KpAddPartitionsToTxnResponseAddPartitionsToTxnResult) *
										   Max(resp->n_results_by_transaction, 1));
	for (i = 0; i < resp->n_results_by_transaction; i++)
	{
		KpAddPartitionsToTxnRequestAddPartitionsToTxnTransaction *t = &req->transactions[i];
		KpAddPartitionsToTxnResponseAddPartitionsToTxnResult *r = &resp->results_by_transaction[i];

		r->transactional_id = t->transactional_id;
		(void) add_partitions(ctx, t->transactional_id, t->producer_id, t->producer_epoch,
							  t->verify_only, t->n_topics, t->topics,
							  &r->n_topic_results, &r->topic_results);
	}
}

/* ---------------------------------------------------------------------
 * AddOffsetsToTxn, TxnOffsetCommit
 * ---------------------------------------------------------------------
 */

void
kp_handle_add_offsets_to_txn(KpRequestContext *ctx)
{
	KpAddOffsetsToTxnRequest *req = ctx->request;
	KpAddOffsetsToTxnResponse *resp = ctx->response;

	/* Kafka: WRITE on the transactional id, READ on the group */
	if (!kp_authz(ctx, KP_ACL_RESOURCE_TRANSACTIONAL_ID, req->transactional_id, KP_ACL_OP_WRITE))
	{
		resp->error_code = KP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
		return;
	}
	if (!kp_authz(ctx, KP_ACL_RESOURCE_GROUP, req->group_id, KP_ACL_OP_READ))
	{
		resp->error_code = KP_ERR_GROUP_AUTHORIZATION_FAILED;
		return;
	}
	resp->error_code = fenced_code(kp_txn_add_offsets(req->transactional_id, req->producer_id,
													  req->producer_epoch, req->group_id),
								   ctx->version, 2);
}

void
kp_handle_txn_offset_commit(KpRequestContext *ctx)
{
	KpTxnOffsetCommitRequest *req = ctx->request;
	KpTxnOffsetCommitResponse *resp = ctx->response;
	KpTxnOffset *offsets;
	int16	   *errors;
	int			n = 0;
	int			ngood = 0;
	int			k = 0;
	int			i;
	int16		code = KP_ERR_NONE;

	/* Kafka: WRITE on the transactional id, READ on the group and topics */
	if (!kp_authz(ctx, KP_ACL_RESOURCE_TRANSACTIONAL_ID, req->transactional_id, KP_ACL_OP_WRITE))
	{
		kp_refuse(ctx, KP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED, NULL);
		return;
	}
	if (!kp_authz(ctx, KP_ACL_RESOURCE_GROUP, req->group_id ? req->group_id : "", KP_ACL_OP_READ))
	{
		kp_refuse(ctx, KP_ERR_GROUP_AUTHORIZATION_FAILED, NULL);
		return;
	}
	resp->n_topics = Max(req->n_topics, 0);
	for (i = 0; i < resp->n_topics; i++)
		n += Max(req->topics[i].n_partitions, 0);
	offsets = palloc0(sizeof(KpTxnOffset) * Max(n, 1));
	errors = palloc0(sizeof(int16) * Max(n, 1));
	for (i = 0; i < resp->n_topics; i++)
	{
		KpTxnOffsetCommitRequestTopic *rt = &req->topics[i];

		/* v6 names its topics by id (KIP-1319), as OffsetCommit v10 does */
		char	   *name = ctx->version >= 6 ? NULL : rt->name;
		const KpTopic *t = kp_handler_topic(name, ctx->version >= 6 ? &rt->topic_id : NULL);
		bool		allowed = kp_authz_topic(ctx, name, t, KP_ACL_OP_READ);
		int			j;

		if (ctx->version >= 6 && t != NULL)
			name = pstrdup(t->name);
		for (j = 0; j < Max(rt->n_partitions, 0); j++, k++)
		{
			KpTxnOffsetCommitRequestPartition *rp = &rt->partitions[j];

			offsets[k].group_id = req->group_id;
			offsets[k].topic = name ? name : "";
			offsets[k].partition = rp->partition_index;
			offsets[k].offset = rp->committed_offset;
			offsets[k].leader_epoch = ctx->version >= 2 ? rp->committed_leader_epoch : -1;
			offsets[k].metadata.data = (const char *) rp->committed_metadata.data;
			offsets[k].metadata.len = rp->committed_metadata.len;
			if (!allowed)
				errors[k] = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
			else if (t == NULL && ctx->version >= 6)
				errors[k] = KP_ERR_UNKNOWN_TOPIC_ID;
			else if (t == NULL || rp->partition_index < 0 || rp->partition_index >= t->partition_count)
				errors[k] = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
			else if (offsets[k].metadata.len > 4096)
				errors[k] = KP_ERR_OFFSET_METADATA_TOO_LARGE;
		}
	}

	/*
	 * As Kafka 4.4: the partitions refused above keep their errors and the
	 * others are committed (its KafkaApis answers unknown and unauthorized
	 * topics itself and hands the rest to the group coordinator, which
	 * refuses them all for a bad group id).
	 */
	for (k = 0; k < n; k++)
		if (errors[k] == KP_ERR_NONE)
			offsets[ngood++] = offsets[k];	/* the good ones, in place */
	if (req->group_id == NULL || req->group_id[0] == '\0')
		code = KP_ERR_INVALID_GROUP_ID;
	else if (ngood > 0)
		code = kp_txn_offset_commit(req->transactional_id, req->producer_id, req->producer_epoch,
									req->group_id, ctx->version >= 3 ? req->member_id : NULL,
									ctx->version >= 3 ? req->group_instance_id : NULL,
									ctx->version >= 3 ? req->generation_id_or_member_epoch : -1,
									ctx->version >= 5, ngood, offsets);

	/*
	 * As Kafka 4.4 answers older versions: a group that does not exist and a
	 * KIP-848 member's stale epoch are ILLEGAL_GENERATION before v6
	 * (KIP-1319), and a group not in the transaction is TRANSACTION_ABORTABLE
	 * from v4 (KIP-890 part 1's verification).
	 */
	if (ctx->version < 6 &&
		(code == KP_ERR_GROUP_ID_NOT_FOUND || code == KP_ERR_STALE_MEMBER_EPOCH))
		code = KP_ERR_ILLEGAL_GENERATION;
	if (ctx->version >= 4 && code == KP_ERR_INVALID_TXN_STATE)
		code = KP_ERR_TRANSACTION_ABORTABLE;
	for (k = 0; k < n; k++)
		if (errors[k] == KP_ERR_NONE)
			errors[k] = code;

	resp->topics = palloc0(sizeof(KpTxnOffsetCommitResponseTopic) * Max(resp->n_topics, 1));
	k = 0;
	for (i = 0; i < resp->n_topics; i++)
	{
		KpTxnOffsetCommitRequestTopic *rt = &req->topics[i];
		KpTxnOffsetCommitResponseTopic *ot = &resp->topics[i];
		int			j;

		ot->name = rt->name;
		memcpy(ot->topic_id.b, rt->topic_id.b, 16);
		ot->n_partitions = Max(rt->n_partitions, 0);
		ot->partitions = palloc0(sizeof(KpTxnOffsetCommitResponsePartition) * Max(ot->n_partitions, 1));
		for (j = 0; j < ot->n_partitions; j++, k++)
		{
			ot->partitions[j].partition_index = rt->partitions[j].partition_index;
			ot->partitions[j].error_code = errors[k];
		}
	}

	/* Kafka answers by partition: a topic listed with none is not answered */
	resp->n_topics = KP_DROP_EMPTY(resp->topics, resp->n_topics, KpTxnOffsetCommitResponseTopic,
								   n_partitions);
}

/*
 * OffsetFetch with require_stable (v7+; Java consumers always set it): a
 * partition whose offset an undecided transaction commits answers
 * UNSTABLE_OFFSET_COMMIT, and the client asks again (KIP-447).
 */
void
kp_txn_mark_unstable_offsets(const char *group_id, KpOffsetFetchResponseGroup *group)
{
	int			i;
	int			j;

	if (group_id == NULL || group->error_code != KP_ERR_NONE)
		return;
	for (i = 0; i < group->n_topics; i++)
	{
		KpOffsetFetchResponseTopics *t = &group->topics[i];

		for (j = 0; j < t->n_partitions; j++)
		{
			KpOffsetFetchResponsePartitions *p = &t->partitions[j];

			if (p->error_code == KP_ERR_NONE && t->name &&
				kp_txn_offsets_pending(group_id, t->name, p->partition_index))
			{
				p->error_code = KP_ERR_UNSTABLE_OFFSET_COMMIT;
				p->committed_offset = -1;
			}
		}
	}
}

/* ---------------------------------------------------------------------
 * EndTxn
 * ---------------------------------------------------------------------
 */

void
kp_handle_end_txn(KpRequestContext *ctx)
{
	KpEndTxnRequest *req = ctx->request;
	KpEndTxnResponse *resp = ctx->response;
	bool		complete;
	int16		code;

	resp->producer_id = -1;
	resp->producer_epoch = -1;
	if (!kp_authz(ctx, KP_ACL_RESOURCE_TRANSACTIONAL_ID, req->transactional_id, KP_ACL_OP_WRITE))
	{
		resp->error_code = KP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
		return;
	}

	/*
	 * v5+ is transactions version 2, as Kafka tells them apart: the end bumps
	 * the epoch, and the answer carries what the producer goes on with.
	 */
	code = kp_txn_end(req->transactional_id, req->producer_id, req->producer_epoch,
					  req->committed, ctx->version >= 5, &complete, &resp->producer_id,
					  &resp->producer_epoch);
	if (complete)
		complete_decided(req->transactional_id);
	resp->error_code = fenced_code(code, ctx->version, 2);
}

/* ---------------------------------------------------------------------
 * DescribeTransactions, ListTransactions
 * ---------------------------------------------------------------------
 */

/*
 * The partition of Kafka's __consumer_offsets (50 partitions by default)
 * that would hold a group: abs(groupId.hashCode()) % 50, Java's String hash.
 * DescribeTransactions names the groups of a transaction that way.
 */
static int32
offsets_partition(const char *group_id)
{
	uint32		h = 0;
	int32		sh;
	const unsigned char *c;

	/* Java hashes UTF-16 code units; group ids are ASCII in practice */
	for (c = (const unsigned char *) group_id; *c; c++)
		h = h * 31 + *c;
	sh = (int32) h;
	return (sh == PG_INT32_MIN ? 0 : (sh < 0 ? -sh : sh)) % 50;
}

void
kp_handle_describe_transactions(KpRequestContext *ctx)
{
	KpDescribeTransactionsRequest *req = ctx->request;
	KpDescribeTransactionsResponse *resp = ctx->response;
	int			i;

	resp->n_transaction_states = Max(req->n_transactional_ids, 0);
	resp->transaction_states = palloc0(sizeof(KpDescribeTransactionsResponseTransactionState) *
									   Max(resp->n_transaction_states, 1));
	for (i = 0; i < resp->n_transaction_states; i++)
	{
		KpDescribeTransactionsResponseTransactionState *s = &resp->transaction_states[i];
		const char *id = req->transactional_ids[i] ? req->transactional_ids[i] : "";
		KpTxnRow	row;
		KpTxnPartition *parts;
		char	  **groups;
		int			nparts;
		int			ngroups;
		int			j;

		s->transactional_id = pstrdup(id);
		s->transaction_state = "";
		s->transaction_start_time_ms = -1;
		s->producer_id = -1;
		if (!kp_authz(ctx, KP_ACL_RESOURCE_TRANSACTIONAL_ID, id, KP_ACL_OP_DESCRIBE))
		{
			s->error_code = KP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
			continue;
		}
		s->producer_epoch = -1;
		if (!kp_txn_describe(id, &row, &nparts, &parts, &ngroups, &groups))
		{
			s->error_code = KP_ERR_TRANSACTIONAL_ID_NOT_FOUND;
			continue;
		}
		s->error_code = KP_ERR_NONE;
		s->transaction_state = pstrdup(row.state);
		s->transaction_timeout_ms = row.timeout_ms;
		s->transaction_start_time_ms = row.txn_start_ms;
		s->producer_id = row.producer_id;
		s->producer_epoch = row.producer_epoch;

		/*
		 * topics in order, each with its partitions; groups as Kafka's
		 * offsets topic
		 */
		s->topics = palloc0(sizeof(KpDescribeTransactionsResponseTopicData) * (nparts + 1));
		s->n_topics = 0;
		for (j = 0; j < nparts; j++)
		{
			KpDescribeTransactionsResponseTopicData *td;

			if (s->n_topics == 0 || strcmp(s->topics[s->n_topics - 1].topic, parts[j].topic) != 0)
			{
				td = &s->topics[s->n_topics++];
				td->topic = parts[j].topic;
				td->partitions = palloc0(sizeof(int32) * nparts);
			}
			td = &s->topics[s->n_topics - 1];
			td->partitions[td->n_partitions++] = parts[j].partition;
		}
		if (ngroups > 0)
		{
			KpDescribeTransactionsResponseTopicData *td = &s->topics[s->n_topics++];

			td->topic = "__consumer_offsets";
			td->n_partitions = 0;
			td->partitions = palloc0(sizeof(int32) * ngroups);
			for (j = 0; j < ngroups; j++)
			{
				int32		p = offsets_partition(groups[j]);
				int			k;

				for (k = 0; k < td->n_partitions && td->partitions[k] != p; k++)
					;
				if (k == td->n_partitions)
					td->partitions[td->n_partitions++] = p;
			}
		}
	}
}

static bool
state_wanted(const KpListTransactionsRequest *req, const char *state)
{
	int			i;

	if (req->n_state_filters <= 0)
		return true;
	for (i = 0; i < req->n_state_filters; i++)
		if (req->state_filters[i] && strcmp(req->state_filters[i], state) == 0)
			return true;
	return false;
}

static bool
known_state(const char *state)
{
	static const char *const states[] = {"Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
	"CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"};
	int			i;

	for (i = 0; i < lengthof(states); i++)
		if (strcmp(states[i], state) == 0)
			return true;
	return false;
}

static void
compile_pattern(void *arg)
{
	(void) DirectFunctionCall2Coll(textregexeq, C_COLLATION_OID, CStringGetTextDatum(""),
								   CStringGetTextDatum((const char *) arg));
}

void
kp_handle_list_transactions(KpRequestContext *ctx)
{
	KpListTransactionsRequest *req = ctx->request;
	KpListTransactionsResponse *resp = ctx->response;
	KpTxnRow   *rows;
	int			n = kp_txn_list(&rows);
	int64		now = kp_listener_now_ms();
	int			i;

	resp->error_code = KP_ERR_NONE;
	/* a pattern that is not a regular expression: nothing matches it */
	if (ctx->version >= 2 && req->transactional_id_pattern && req->transactional_id_pattern[0] &&
		kp_handler_try(compile_pattern, req->transactional_id_pattern, NULL) != KP_ERR_NONE)
	{
		resp->error_code = KP_ERR_INVALID_REQUEST;
		return;
	}
	resp->unknown_state_filters = palloc0(sizeof(char *) * Max(req->n_state_filters, 1));
	for (i = 0; i < req->n_state_filters; i++)
		if (req->state_filters[i] && !known_state(req->state_filters[i]))
			resp->unknown_state_filters[resp->n_unknown_state_filters++] = req->state_filters[i];
	resp->transaction_states = palloc0(sizeof(KpListTransactionsResponseTransactionState) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		KpListTransactionsResponseTransactionState *s;
		int			k;
		bool		match;

		if (!state_wanted(req, rows[i].state))
			continue;
		/* Kafka: the transactional ids one may describe */
		if (!kp_authz(ctx, KP_ACL_RESOURCE_TRANSACTIONAL_ID, rows[i].transactional_id,
					  KP_ACL_OP_DESCRIBE))
			continue;
		if (req->n_producer_id_filters > 0)
		{
			match = false;
			for (k = 0; k < req->n_producer_id_filters; k++)
				if (req->producer_id_filters[k] == rows[i].producer_id)
					match = true;
			if (!match)
				continue;
		}
		/* KIP-994: only transactions running longer than the duration */
		if (ctx->version >= 1 && req->duration_filter >= 0 &&
			(rows[i].txn_start_ms < 0 || now - rows[i].txn_start_ms <= req->duration_filter))
			continue;
		/* KIP-1152: transactional ids matching a regular expression */
		if (ctx->version >= 2 && req->transactional_id_pattern && req->transactional_id_pattern[0] &&
			!DatumGetBool(DirectFunctionCall2Coll(textregexeq, C_COLLATION_OID,
												  CStringGetTextDatum(rows[i].transactional_id),
												  CStringGetTextDatum(req->transactional_id_pattern))))
			continue;
		s = &resp->transaction_states[resp->n_transaction_states++];
		s->transactional_id = rows[i].transactional_id;
		s->producer_id = rows[i].producer_id;
		s->transaction_state = pstrdup(rows[i].state);
	}
}

/* ---------------------------------------------------------------------
 * DescribeProducers (KIP-664)
 * ---------------------------------------------------------------------
 */

/* The max timestamp of the batch holding offset, -1 if it cannot be read. */
static int64
batch_timestamp(int64 partition_id, int64 offset)
{
	KpLogReader *r;
	const char *batch;
	size_t		len;
	int64		ts = -1;

	if (offset < 0)
		return -1;
	r = kp_log_reader_open(partition_id, offset);
	if (kp_log_reader_next(r, &batch, &len))
	{
		KpBatchHeader hdr;

		if (kp_batch_parse_header(batch, len, &hdr) == KP_CODEC_OK)
			ts = hdr.max_timestamp;
	}
	kp_log_reader_close(r);
	return ts;
}

void
kp_handle_describe_producers(KpRequestContext *ctx)
{
	KpDescribeProducersRequest *req = ctx->request;
	KpDescribeProducersResponse *resp = ctx->response;
	int			i;

	resp->n_topics = Max(req->n_topics, 0);
	resp->topics = palloc0(sizeof(KpDescribeProducersResponseTopicResponse) * Max(resp->n_topics, 1));
	for (i = 0; i < resp->n_topics; i++)
	{
		KpDescribeProducersRequestTopicRequest *rt = &req->topics[i];
		KpDescribeProducersResponseTopicResponse *ot = &resp->topics[i];
		const KpTopic *t = rt->name ? kp_handler_topic(rt->name, NULL) : NULL;
		bool		allowed = kp_authz_topic(ctx, rt->name ? rt->name : "", NULL, KP_ACL_OP_READ);
		int			j;

		ot->name = rt->name;
		ot->n_partitions = Max(rt->n_partition_indexes, 0);
		ot->partitions = palloc0(sizeof(KpDescribeProducersResponsePartitionResponse) *
								 Max(ot->n_partitions, 1));
		for (j = 0; j < ot->n_partitions; j++)
		{
			KpDescribeProducersResponsePartitionResponse *op = &ot->partitions[j];
			KpPartitionRef ref;
			KpProducerInfo *info;
			int			n;
			int			k;

			op->partition_index = rt->partition_indexes[j];
			if (!allowed)
			{
				op->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}
			if (t == NULL || op->partition_index < 0 || op->partition_index >= t->partition_count)
			{
				op->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
				continue;
			}
			kp_topic_partition(t, op->partition_index, &ref);
			if (kp_handler_no_room(ref.partition_id, &op->error_message))
			{
				op->error_code = KP_ERR_KAFKA_STORAGE_ERROR;
				continue;
			}
			n = kp_log_producers(ref.partition_id, &info);
			op->error_code = KP_ERR_NONE;
			op->n_active_producers = n;
			op->active_producers = palloc0(sizeof(KpDescribeProducersResponseProducerState) * Max(n, 1));
			for (k = 0; k < n; k++)
			{
				KpDescribeProducersResponseProducerState *ps = &op->active_producers[k];

				ps->producer_id = info[k].producer_id;
				ps->producer_epoch = info[k].producer_epoch;
				ps->last_sequence = info[k].last_sequence;
				ps->last_timestamp = batch_timestamp(ref.partition_id, info[k].last_offset);
				ps->coordinator_epoch = 0;	/* one coordinator, never moved */
				ps->current_txn_start_offset = info[k].txn_start_offset;
			}
		}
	}
}
