/*-------------------------------------------------------------------------
 *
 * leader.c
 *	  Who leads, as every server of the cluster tells its clients, and what
 *	  a hot standby serves (docs/replication.md).
 *
 * The primary (the server not in recovery) leads every partition, at the
 * leader epoch of its timeline: timeline 1 is epoch 0, and every promotion
 * starts a new timeline, so a new epoch.  Its listener publishes what it
 * reports in kafka.leader (src/catalog/cluster.c): its node id, advertised
 * host and port, leader epoch, the brokers serving Kafka clients (itself
 * and the standbys of kafka.replica_nodes that stream now), and the
 * replicas, ISR and offline replicas of replicas.c.  Worker 0 looks once a
 * second and writes the row when that changed, and at once after a start
 * or a promotion.  The row replicates, so a hot standby's listener answers
 * Metadata, DescribeCluster and FindCoordinator with the primary's view:
 * every server names the same leader, epoch and coordinator, and a client
 * bootstrapped with any of them finds the leader.  A standby adds itself to
 * the brokers it reports when the primary does not list it.
 *
 * Why a row and not the standby's WAL receiver (the host and port it
 * streams from): that names a PostgreSQL port, not a Kafka listener, and
 * under cascading replication not even the primary; the row says exactly
 * what the primary's listener advertises, and is replayed in WAL order with
 * everything else, so a standby never names a leader older than the data
 * it serves.
 *
 * A hot standby serves reads only: kp_standby_refusal says, before the
 * handler runs, which requests it answers with an error and which one
 * (Kafka's errors for a follower, a non-coordinator and a non-controller),
 * so that clients go to the leader.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "commands/extension.h"
#include "replication/walreceiver.h"
#include "storage/spin.h"
#include "lib/stringinfo.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "listener/handlers.h"
#include "listener/listener.h"
#include "listener/listener_int.h"
#include "store/store.h"

/* ---------------------------------------------------------------------
 * The leader epoch
 * ---------------------------------------------------------------------
 */

int32
kp_leader_epoch(void)
{
	if (!RecoveryInProgress())
		return (int32) GetWALInsertionTimeLine() - 1;
	else
	{
		KpClusterView v;

		kp_cluster_view(&v);
		return v.leader_epoch;
	}
}

/* ---------------------------------------------------------------------
 * The view
 * ---------------------------------------------------------------------
 */

/* '{1,2}' -> the ints (at most max) */
static int
parse_int_array(const char *s, int32 *out, int max)
{
	int			n = 0;

	while (s && *s && n < max)
	{
		char	   *end;
		long		v;

		if (*s == '{' || *s == ',' || *s == '}' || *s == ' ')
		{
			s++;
			continue;
		}
		v = strtol(s, &end, 10);
		if (end == s)
			break;
		out[n++] = (int32) v;
		s = end;
	}
	return n;
}

/* 'id@host:port[/rack], ...' -> brokers appended to v (kp_parse_broker_entry) */
static void
parse_brokers(const char *s, KpClusterView *v, int max)
{
	while (s && *s && v->n_brokers < max)
	{
		const char *end;
		const char *host;
		const char *rack;
		int			host_len;
		int			rack_len;
		int32		id;
		int32		port;
		KpBroker   *b;

		while (*s == ' ' || *s == ',')
			s++;
		if (*s == '\0')
			break;
		end = strchr(s, ',');
		if (end == NULL)
			end = s + strlen(s);
		if (kp_parse_broker_entry(s, end, &id, &host, &host_len, &port, &rack, &rack_len) != NULL)
			break;
		b = &v->brokers[v->n_brokers++];
		b->node_id = id;
		b->host = pnstrdup(host, host_len);
		b->port = port;
		b->rack = rack_len > 0 ? pnstrdup(rack, rack_len) : NULL;
		s = end;
	}
}

static void
add_broker(KpClusterView *v, int32 id, const char *host, int32 port, const char *rack)
{
	int			i;

	for (i = 0; i < v->n_brokers; i++)
		if (v->brokers[i].node_id == id)
			return;
	v->brokers[v->n_brokers].node_id = id;
	v->brokers[v->n_brokers].host = pstrdup(host);
	v->brokers[v->n_brokers].port = port;
	v->brokers[v->n_brokers].rack = rack && rack[0] ? pstrdup(rack) : NULL;
	v->n_brokers++;
}

void
kp_cluster_view(KpClusterView *v)
{
	memset(v, 0, sizeof(*v));
	v->standby = RecoveryInProgress();
	if (!v->standby)
	{
		KpBroker   *streaming;
		int			n = kp_replica_brokers(&streaming);
		int			i;

		v->leader_id = kp_node_id;
		v->leader_host = pstrdup(kp_advertised_host_name());
		v->leader_port = kp_advertised_port_number();
		v->leader_epoch = kp_leader_epoch();
		kp_replicas_now(&v->reps);
		v->brokers = palloc(sizeof(KpBroker) * (n + 1));
		add_broker(v, v->leader_id, v->leader_host, v->leader_port, kp_broker_rack);
		for (i = 0; i < n; i++)
			add_broker(v, streaming[i].node_id, streaming[i].host, streaming[i].port,
					   streaming[i].rack);
	}
	else
	{
		KpLeaderRow row;
		int			max;

		if (!kp_catalog_read_leader(&row))
		{
			/* no primary listener has published yet: no leader known */
			v->leader_id = -1;
			v->leader_epoch = -1;
			v->brokers = palloc(sizeof(KpBroker));
			add_broker(v, kp_node_id, kp_advertised_host_name(), kp_advertised_port_number(),
					   kp_broker_rack);
			v->reps.replicas = palloc(sizeof(int32));
			v->reps.isr = palloc(sizeof(int32));
			v->reps.offline = palloc(sizeof(int32));
			v->reps.replicas[v->reps.n_replicas++] = kp_node_id;
			return;
		}
		v->leader_id = row.node_id;
		v->leader_host = row.host;
		v->leader_port = row.port;
		v->leader_epoch = row.leader_epoch;
		max = strlen(row.brokers) / 4 + 2;
		v->brokers = palloc(sizeof(KpBroker) * max);
		add_broker(v, row.node_id, row.host, row.port, row.rack);
		parse_brokers(row.brokers, v, max - 1);
		/* this standby serves Kafka clients even if the primary lists it not */
		add_broker(v, kp_node_id, kp_advertised_host_name(), kp_advertised_port_number(),
				   kp_broker_rack);
		max = strlen(row.replicas) + 1;
		v->reps.replicas = palloc(sizeof(int32) * max);
		v->reps.n_replicas = parse_int_array(row.replicas, v->reps.replicas, max);
		max = strlen(row.isr) + 1;
		v->reps.isr = palloc(sizeof(int32) * max);
		v->reps.n_isr = parse_int_array(row.isr, v->reps.isr, max);
		max = strlen(row.offline) + 1;
		v->reps.offline = palloc(sizeof(int32) * max);
		v->reps.n_offline = parse_int_array(row.offline, v->reps.offline, max);
	}
}

/* ---------------------------------------------------------------------
 * Publishing (the primary's worker 0)
 * ---------------------------------------------------------------------
 */

static char *
int_array_text(const int32 *a, int n)
{
	StringInfoData s;
	int			i;

	initStringInfo(&s);
	appendStringInfoChar(&s, '{');
	for (i = 0; i < n; i++)
		appendStringInfo(&s, "%s%d", i ? "," : "", a[i]);
	appendStringInfoChar(&s, '}');
	return s.data;
}

static bool
same_row(const KpLeaderRow *a, const KpLeaderRow *b)
{
	if ((a->rack == NULL) != (b->rack == NULL) ||
		(a->rack && strcmp(a->rack, b->rack) != 0))
		return false;
	return a->node_id == b->node_id && a->port == b->port &&
		a->leader_epoch == b->leader_epoch &&
		strcmp(a->host, b->host) == 0 && strcmp(a->brokers, b->brokers) == 0 &&
		strcmp(a->replicas, b->replicas) == 0 && strcmp(a->isr, b->isr) == 0 &&
		strcmp(a->offline, b->offline) == 0;
}

/*
 * Publish the primary's view in kafka.leader if it differs from the row
 * there.  Called by worker 0 outside any transaction; an error (the
 * extension not created yet, say) is logged at DEBUG1 and tried again on
 * the next call.
 */
void
kp_leader_publish(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	static bool failed_logged = false;

	if (RecoveryInProgress())
		return;
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	PG_TRY();
	{
		/* nothing to publish into before CREATE EXTENSION */
		if (OidIsValid(get_extension_oid("kafka_pg", true)))
		{
			KpClusterView v;
			KpLeaderRow now;
			KpLeaderRow old;
			StringInfoData brokers;
			int			i;

			kp_cluster_view(&v);
			initStringInfo(&brokers);
			for (i = 1; i < v.n_brokers; i++)
				appendStringInfo(&brokers, "%s%d@%s:%d%s%s", i > 1 ? ", " : "",
								 v.brokers[i].node_id, v.brokers[i].host, v.brokers[i].port,
								 v.brokers[i].rack ? "/" : "",
								 v.brokers[i].rack ? v.brokers[i].rack : "");
			now.node_id = v.leader_id;
			now.host = v.leader_host;
			now.port = v.leader_port;
			now.rack = v.brokers[0].rack;
			now.leader_epoch = v.leader_epoch;
			now.brokers = brokers.data;
			now.replicas = int_array_text(v.reps.replicas, v.reps.n_replicas);
			now.isr = int_array_text(v.reps.isr, v.reps.n_isr);
			now.offline = int_array_text(v.reps.offline, v.reps.n_offline);
			if (!kp_catalog_read_leader(&old) || !same_row(&old, &now))
			{
				kp_catalog_write_leader(&now);
				ereport(DEBUG1,
						(errmsg("kafka_pg listener: published the leader: node %d at %s:%d, leader epoch %d, brokers %s, ISR %s",
								now.node_id, now.host, now.port, now.leader_epoch,
								now.brokers, now.isr)));
			}
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
		failed_logged = false;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		ereport(failed_logged ? DEBUG1 : LOG,
				(errmsg("kafka_pg listener: could not publish the leader in kafka.leader: %s",
						edata->message)));
		failed_logged = true;
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
}

/* ---------------------------------------------------------------------
 * Producer ids handed out by a hot standby
 * ---------------------------------------------------------------------
 */

/* 2026-01-01 in PostgreSQL's epoch (2000-01-01), milliseconds */
#define STANDBY_PID_CLOCK_START INT64CONST(820540800000)
#define STANDBY_PID_COUNTER_BITS 39

/*
 * An idempotent producer's id, on a hot standby.  A Kafka broker hands
 * them out from blocks the controller gives it; a standby cannot take one
 * from kafka.producer_id_seq (it writes nothing), and a client that asked
 * it would ask it again (librdkafka keeps asking the broker it is
 * connected to), so it hands them out from a range of its own, disjoint
 * from the sequence's and from every other server's and worker's: bit 61
 * set (bit 62 marks the SQL transactions' producer ids, KP_SQL_PID_FLAG),
 * then the node id (16 bits), the worker (6 bits), and a counter (39 bits,
 * 17 years) that starts at the milliseconds since 2026-01-01 and grows by one
 * per id, so that ids are not handed out twice across restarts as long as
 * the clock does not go back and the worker handed out fewer than one per
 * millisecond on average.  The producer then writes to the leader, which
 * takes any producer id.
 */
int64
kp_standby_producer_id(void)
{
	static int64 last = 0;
	int64		now = kp_listener_now_ms() - STANDBY_PID_CLOCK_START;
	int64		mask = (INT64CONST(1) << STANDBY_PID_COUNTER_BITS) - 1;

	last = Max(last + 1, now);
	StaticAssertStmt(KP_SQL_PID_FLAG == (INT64CONST(1) << 62),
					 "the standby's producer ids must stay clear of the SQL flag");
	return (INT64CONST(1) << 61) |
		((int64) (kp_node_id & 0xFFFF) << 45) |
		((int64) (Max(kp_listener_worker_index, 0) & 0x3F) << STANDBY_PID_COUNTER_BITS) |
		(last & mask);
}

/* ---------------------------------------------------------------------
 * What a hot standby serves
 * ---------------------------------------------------------------------
 */

/*
 * On a hot standby, the error a request is answered with before its
 * handler runs, or -1 when the standby serves it; *close: answer nothing
 * and close the connection (Produce with acks=0, as Kafka does for a
 * produce it cannot take, so that the producer refreshes its metadata).
 * KP_ERR_NONE: answered empty (ListGroups, ListTransactions: this server
 * coordinates no group and no transaction, as a Kafka broker that is no
 * coordinator answers).
 */
static int16
standby_refusal(KpRequestContext *ctx, bool *close)
{
	*close = false;
	switch (ctx->header->request_api_key)
	{
			/* reads that any broker answers */
		case KP_API_API_VERSIONS:
		case KP_API_METADATA:
		case KP_API_DESCRIBE_CLUSTER:
		case KP_API_FIND_COORDINATOR:
		case KP_API_DESCRIBE_CONFIGS:
		case KP_API_DESCRIBE_TOPIC_PARTITIONS:
		case KP_API_DESCRIBE_ACLS:
		case KP_API_DESCRIBE_CLIENT_QUOTAS:
		case KP_API_DESCRIBE_USER_SCRAM_CREDENTIALS:
		case KP_API_DESCRIBE_LOG_DIRS:
		case KP_API_ALTER_REPLICA_LOG_DIRS:
		case KP_API_LIST_PARTITION_REASSIGNMENTS:
		case KP_API_DESCRIBE_QUORUM:
		case KP_API_LIST_CONFIG_RESOURCES:
		case KP_API_SASL_HANDSHAKE:
		case KP_API_SASL_AUTHENTICATE:
			return -1;

			/*
			 * A consumer's fetch from a follower (KIP-392): Kafka serves it
			 * from version 11 on (the request says the client's rack); older
			 * ones, and a replica's, only the leader does
			 * (FetchParams.fetchOnlyLeader).
			 */
		case KP_API_FETCH:
			{
				KpFetchRequest *req = ctx->request;
				int32		replica = ctx->version >= 15 ?
				req->replica_state.replica_id : req->replica_id;

				return (ctx->version >= 11 && replica < 0) ? -1 :
					KP_ERR_NOT_LEADER_OR_FOLLOWER;
			}

			/*
			 * ListOffsets and OffsetForLeaderEpoch: only the leader answers a
			 * client (Kafka: fetchOnlyFromLeader unless the debugging replica
			 * id -2), since a follower's end offsets lag and a consumer would
			 * take the difference for a truncation.
			 */
		case KP_API_LIST_OFFSETS:
			return ((KpListOffsetsRequest *) ctx->request)->replica_id == -2 ? -1 :
				KP_ERR_NOT_LEADER_OR_FOLLOWER;
		case KP_API_OFFSET_FOR_LEADER_EPOCH:
			return KP_ERR_NOT_LEADER_OR_FOLLOWER;

			/* writes and reads of a partition's leader */
		case KP_API_PRODUCE:
			*close = ((KpProduceRequest *) ctx->request)->acks == 0;
			return KP_ERR_NOT_LEADER_OR_FOLLOWER;
		case KP_API_DELETE_RECORDS:
		case KP_API_DESCRIBE_PRODUCERS:
		case KP_API_SHARE_FETCH:
		case KP_API_SHARE_ACKNOWLEDGE:
			return KP_ERR_NOT_LEADER_OR_FOLLOWER;

			/* the controller's */
		case KP_API_CREATE_TOPICS:
		case KP_API_DELETE_TOPICS:
		case KP_API_CREATE_PARTITIONS:
		case KP_API_ALTER_CONFIGS:
		case KP_API_INCREMENTAL_ALTER_CONFIGS:
		case KP_API_CREATE_ACLS:
		case KP_API_DELETE_ACLS:
		case KP_API_ALTER_CLIENT_QUOTAS:
		case KP_API_ALTER_USER_SCRAM_CREDENTIALS:
		case KP_API_ELECT_LEADERS:
		case KP_API_ALTER_PARTITION_REASSIGNMENTS:
			return KP_ERR_NOT_CONTROLLER;

			/*
			 * An idempotent producer's id: any Kafka broker hands one out
			 * (kp_standby_producer_id).  With a transactional id, the
			 * coordinator's.
			 */
		case KP_API_INIT_PRODUCER_ID:
			return ((KpInitProducerIdRequest *) ctx->request)->transactional_id != NULL ?
				KP_ERR_NOT_COORDINATOR : -1;

			/* this server coordinates no group and no transaction */
		case KP_API_LIST_GROUPS:
		case KP_API_LIST_TRANSACTIONS:
			return KP_ERR_NONE;
		case KP_API_JOIN_GROUP:
		case KP_API_SYNC_GROUP:
		case KP_API_HEARTBEAT:
		case KP_API_LEAVE_GROUP:
		case KP_API_OFFSET_COMMIT:
		case KP_API_OFFSET_FETCH:
		case KP_API_DESCRIBE_GROUPS:
		case KP_API_DELETE_GROUPS:
		case KP_API_OFFSET_DELETE:
		case KP_API_CONSUMER_GROUP_HEARTBEAT:
		case KP_API_CONSUMER_GROUP_DESCRIBE:
		case KP_API_SHARE_GROUP_HEARTBEAT:
		case KP_API_SHARE_GROUP_DESCRIBE:
		case KP_API_DESCRIBE_SHARE_GROUP_OFFSETS:
		case KP_API_ALTER_SHARE_GROUP_OFFSETS:
		case KP_API_DELETE_SHARE_GROUP_OFFSETS:
		case KP_API_ADD_PARTITIONS_TO_TXN:
		case KP_API_ADD_OFFSETS_TO_TXN:
		case KP_API_TXN_OFFSET_COMMIT:
		case KP_API_END_TXN:
		case KP_API_DESCRIBE_TRANSACTIONS:
			return KP_ERR_NOT_COORDINATOR;
	}
	/* an API added later: not served until someone says it is a read */
	return KP_ERR_NOT_LEADER_OR_FOLLOWER;
}

/*
 * Whether this standby's WAL receiver streams from a primary now.  One that
 * does not (its primary died, it waits to be rewound or repointed, it
 * replays from an archive) does not know who leads: the kafka.leader row it
 * has may name a dead primary at an old epoch, and a client that keeps its
 * connection to it (the Java client asks an idle connected node for
 * metadata first) would be told so again and again.
 */
static bool
standby_streaming(void)
{
	WalRcvState state;

	if (WalRcv == NULL)
		return false;
	SpinLockAcquire(&WalRcv->mutex);
	state = WalRcv->walRcvState;
	SpinLockRelease(&WalRcv->mutex);
	return state == WALRCV_STREAMING;
}

/*
 * On a hot standby, before the handler: 0 when the standby serves the
 * request; 1 when it answered it here (ctx->response filled with the error
 * for every entry); -1 when the connection is to be closed unanswered: a
 * Produce with acks=0, and every request while no primary streams to this
 * standby (standby_streaming), so that the client tries another server, as
 * it would a broker that is down.
 */
int
kp_standby_answer(KpRequestContext *ctx)
{
	bool		close;
	int16		code;

	if (!standby_streaming())
		return -1;
	code = standby_refusal(ctx, &close);
	if (close)
		return -1;
	if (code < 0)
		return 0;
	kp_error_response(ctx->api, ctx->version, ctx->request, ctx->response, code,
					  code == KP_ERR_NONE ? NULL :
					  "This server is a hot standby: the leader serves this request.");
	/* Kafka: partition errors in a fetch, none for the whole request */
	switch (ctx->header->request_api_key)
	{
		case KP_API_FETCH:
			((KpFetchResponse *) ctx->response)->error_code = KP_ERR_NONE;
			break;
		case KP_API_SHARE_FETCH:
			((KpShareFetchResponse *) ctx->response)->error_code = KP_ERR_NONE;
			((KpShareFetchResponse *) ctx->response)->error_message = NULL;
			break;
		case KP_API_SHARE_ACKNOWLEDGE:
			((KpShareAcknowledgeResponse *) ctx->response)->error_code = KP_ERR_NONE;
			((KpShareAcknowledgeResponse *) ctx->response)->error_message = NULL;
			break;
	}
	return 1;
}
