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
#include "access/xlogrecovery.h"
#include "storage/spin.h"
#include "lib/stringinfo.h"
#include "utils/guc.h"
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

static bool standby_leader_row(KpLeaderRow *row);

int32
kp_leader_epoch(void)
{
	KpLeaderRow row;

	if (!RecoveryInProgress())
		return (int32) GetWALInsertionTimeLine() - 1;
	return standby_leader_row(&row) ? row.leader_epoch : -1;
}

/* ---------------------------------------------------------------------
 * The kafka.leader row, as a hot standby's worker last read it
 * ---------------------------------------------------------------------
 */

/*
 * kafka.debug_leader_cache_ms (testing and benchmarks only): how old the
 * copy may get while replay moves; 0 reads the row for every request.
 */
int			kp_debug_leader_cache_ms = 100;

static MemoryContext leader_cxt = NULL;
static bool cached_valid = false;
static bool cached_found = false;
static KpLeaderRow cached_row;
static XLogRecPtr cached_lsn = InvalidXLogRecPtr;
static TimeLineID cached_tli = 0;
static int64 cached_at_ms = 0;

void
kp_leader_define_settings(void)
{
	DefineCustomIntVariable("kafka.debug_leader_cache_ms",
							"Testing only: how long a hot standby's listener worker keeps its copy of kafka.leader while replay moves.",
							"0 reads the row for every request that needs it (what the listener did before "
							"the copy existed; bench/replication/standby_fetch_cpu.py compares the two).",
							&kp_debug_leader_cache_ms,
							100, 0, 60000,
							PGC_SIGHUP, GUC_NOT_IN_SAMPLE | GUC_UNIT_MS,
							NULL, NULL, NULL);
}

static char *
cache_strdup(const char *s)
{
	return s ? MemoryContextStrdup(leader_cxt, s) : NULL;
}

/*
 * The kafka.leader row, on a hot standby (false: none yet).  Every request
 * that needs it (a Fetch's epoch check, Metadata, a refusal that names the
 * leader) used to read it with SPI; the worker now keeps a copy and reads
 * the row again only when replay has moved since and the copy is
 * kafka.debug_leader_cache_ms (100 ms) old, or when the standby follows a
 * new timeline.  The row changes only by replayed WAL, so while the replay
 * position stands still the copy is exact; otherwise it is at most 100 ms
 * behind what replay made visible (the primary publishes at most once a
 * second).  The replay position is taken before the row is read under a
 * snapshot taken after it, so the copy is at least as new as that
 * position.  Outside a transaction (kp_standby_answer runs before the
 * request's) the read runs in one of its own; an error reading it is
 * logged and the row taken as absent for this request.
 */
static bool
standby_leader_row(KpLeaderRow *row)
{
	TimeLineID	tli;
	XLogRecPtr	replayed = GetXLogReplayRecPtr(&tli);
	int64		now = kp_listener_now_ms();

	if (!cached_valid || kp_debug_leader_cache_ms <= 0 || tli != cached_tli ||
		now < cached_at_ms ||
		(replayed != cached_lsn && now - cached_at_ms >= kp_debug_leader_cache_ms))
	{
		MemoryContext caller = CurrentMemoryContext;
		bool		own_xact = !IsTransactionState();
		KpLeaderRow fresh;
		bool		found = false;
		bool		ok = true;

		if (leader_cxt == NULL)
			leader_cxt = AllocSetContextCreate(TopMemoryContext, "kafka_pg kafka.leader copy",
											   ALLOCSET_SMALL_SIZES);
		if (own_xact)
			StartTransactionCommand();
		/* the row's strings in the caller's memory, not the transaction's */
		MemoryContextSwitchTo(caller);
		PushActiveSnapshot(GetLatestSnapshot());
		PG_TRY();
		{
			found = kp_catalog_read_leader(&fresh);
			PopActiveSnapshot();
			if (own_xact)
				CommitTransactionCommand();
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			/* inside a request's transaction: its handler's error to take */
			if (!own_xact)
				PG_RE_THROW();
			MemoryContextSwitchTo(caller);
			edata = CopyErrorData();
			FlushErrorState();
			AbortCurrentTransaction();
			ereport(LOG,
					(errmsg("kafka_pg listener: could not read kafka.leader: %s", edata->message)));
			FreeErrorData(edata);
			ok = false;
		}
		PG_END_TRY();
		MemoryContextSwitchTo(caller);
		if (!ok)
			return false;

		/*
		 * invalid while the row is replaced (an ERROR part way: out of
		 * memory)
		 */
		cached_valid = false;
		MemoryContextReset(leader_cxt);
		memset(&cached_row, 0, sizeof(cached_row));
		cached_found = found;
		if (found)
		{
			cached_row.node_id = fresh.node_id;
			cached_row.port = fresh.port;
			cached_row.leader_epoch = fresh.leader_epoch;
			cached_row.host = cache_strdup(fresh.host);
			cached_row.rack = cache_strdup(fresh.rack);
			cached_row.brokers = cache_strdup(fresh.brokers);
			cached_row.replicas = cache_strdup(fresh.replicas);
			cached_row.isr = cache_strdup(fresh.isr);
			cached_row.offline = cache_strdup(fresh.offline);
		}
		cached_valid = true;
		cached_lsn = replayed;
		cached_tli = tli;
		cached_at_ms = now;
	}
	*row = cached_row;
	return cached_found;
}

/*
 * The leader a client is sent to with NOT_LEADER_OR_FOLLOWER or
 * FENCED_LEADER_EPOCH (KIP-951: Produce v10+, Fetch v16+, ShareFetch and
 * ShareAcknowledge carry it, so that the client moves to the leader without
 * asking for Metadata): its node id, advertised listener and rack, and its
 * epoch.  This server when it is the primary; on a hot standby the
 * kafka.leader row's.  False when no leader is known (a standby with no
 * row).
 */
bool
kp_current_leader(KpBroker *leader, int32 *epoch)
{
	KpLeaderRow row;

	if (!RecoveryInProgress())
	{
		leader->node_id = kp_node_id;
		leader->host = pstrdup(kp_advertised_host_name());
		leader->port = kp_advertised_port_number();
		leader->rack = kp_broker_rack && kp_broker_rack[0] ? pstrdup(kp_broker_rack) : NULL;
		*epoch = kp_leader_epoch();
		return true;
	}
	if (!standby_leader_row(&row))
		return false;
	leader->node_id = row.node_id;
	leader->host = pstrdup(row.host);
	leader->port = row.port;
	leader->rack = row.rack ? pstrdup(row.rack) : NULL;
	*epoch = row.leader_epoch;
	return true;
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

		if (!standby_leader_row(&row))
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
		/* copied: the worker's copy of the row may be read again meanwhile */
		v->leader_host = pstrdup(row.host);
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
		/*
		 * nothing to publish into before CREATE EXTENSION, nor into another
		 * build's catalog (src/catalog/stamp.c)
		 */
		if (OidIsValid(get_extension_oid("kafka_pg", true)) &&
			kp_catalog_stamp_worker("kafka_pg listener 0") == KP_CATALOG_CURRENT)
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
			 * ListOffsets and OffsetForLeaderEpoch of a consumer (-1) or a
			 * tool (the debugging replica id -2): the handlers answer what
			 * this standby's replayed log answers for good and refuse, per
			 * partition, what only the leader knows (an end not replayed yet:
			 * handlers_fetch.c, handlers_records.c).  Kafka serves
			 * ListOffsets on a follower to -2 only and OffsetForLeaderEpoch
			 * never, and its consumers (Java, librdkafka) send both to the
			 * leader (docs/replication.md).  A replica id (a follower
			 * broker's request): the leader's.
			 */
		case KP_API_LIST_OFFSETS:
			return ((KpListOffsetsRequest *) ctx->request)->replica_id < 0 ? -1 :
				KP_ERR_NOT_LEADER_OR_FOLLOWER;
		case KP_API_OFFSET_FOR_LEADER_EPOCH:
			return ((KpOffsetForLeaderEpochRequest *) ctx->request)->replica_id < 0 ? -1 :
				KP_ERR_NOT_LEADER_OR_FOLLOWER;

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
		case KP_API_UPDATE_FEATURES:
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
standby_streaming(TimeLineID *streamed_tli)
{
	WalRcvState state;

	if (WalRcv == NULL)
		return false;
	SpinLockAcquire(&WalRcv->mutex);
	state = WalRcv->walRcvState;
	*streamed_tli = WalRcv->receivedTLI;
	SpinLockRelease(&WalRcv->mutex);
	return state == WALRCV_STREAMING;
}

/*
 * Whether the kafka.leader row this standby has replayed is older than the
 * timeline it streams: it has just started streaming from a new primary (a
 * promoted standby) whose publication of itself it has not replayed yet, so
 * the row still names the dead primary at its old epoch (0.1-0.4 s after a
 * failover in test/ha).  The primary of timeline T leads at epoch T - 1
 * (kp_leader_epoch), so a row below that is stale.
 */
static bool
standby_row_stale(TimeLineID streamed_tli)
{
	KpLeaderRow row;

	if (streamed_tli == 0 || !standby_leader_row(&row))
		return false;
	return (int64) row.leader_epoch < (int64) streamed_tli - 1;
}

/*
 * KIP-951: the refusals of a standby name the leader, in every partition
 * (current_leader) and in node_endpoints, when the response has room for
 * it (Produce v10+, Fetch v16+, ShareFetch, ShareAcknowledge), as Kafka's
 * KafkaApis does for NOT_LEADER_OR_FOLLOWER.
 */
#define SET_LEADER_ENDPOINT(resp, type, b) \
	do { \
		(resp)->n_node_endpoints = 1; \
		(resp)->node_endpoints = palloc0(sizeof(type)); \
		(resp)->node_endpoints[0].node_id = (b).node_id; \
		(resp)->node_endpoints[0].host = (b).host; \
		(resp)->node_endpoints[0].port = (b).port; \
		(resp)->node_endpoints[0].rack = (b).rack; \
	} while (0)

static void
name_the_leader(KpRequestContext *ctx)
{
	KpBroker	leader;
	int32		epoch;
	int			i;
	int			j;

	switch (ctx->header->request_api_key)
	{
		case KP_API_PRODUCE:
			if (ctx->version < 10 || !kp_current_leader(&leader, &epoch))
				return;
			{
				KpProduceResponse *r = ctx->response;

				for (i = 0; i < r->n_responses; i++)
					for (j = 0; j < r->responses[i].n_partition_responses; j++)
					{
						r->responses[i].partition_responses[j].current_leader.leader_id = leader.node_id;
						r->responses[i].partition_responses[j].current_leader.leader_epoch = epoch;
					}
				SET_LEADER_ENDPOINT(r, KpProduceResponseNodeEndpoint, leader);
			}
			break;
		case KP_API_FETCH:
			if (ctx->version < 16 || !kp_current_leader(&leader, &epoch))
				return;
			{
				KpFetchResponse *r = ctx->response;

				for (i = 0; i < r->n_responses; i++)
					for (j = 0; j < r->responses[i].n_partitions; j++)
					{
						r->responses[i].partitions[j].current_leader.leader_id = leader.node_id;
						r->responses[i].partitions[j].current_leader.leader_epoch = epoch;
					}
				SET_LEADER_ENDPOINT(r, KpFetchResponseNodeEndpoint, leader);
			}
			break;
		case KP_API_SHARE_FETCH:
			if (!kp_current_leader(&leader, &epoch))
				return;
			{
				KpShareFetchResponse *r = ctx->response;

				for (i = 0; i < r->n_responses; i++)
					for (j = 0; j < r->responses[i].n_partitions; j++)
					{
						r->responses[i].partitions[j].current_leader.leader_id = leader.node_id;
						r->responses[i].partitions[j].current_leader.leader_epoch = epoch;
					}
				SET_LEADER_ENDPOINT(r, KpShareFetchResponseNodeEndpoint, leader);
			}
			break;
		case KP_API_SHARE_ACKNOWLEDGE:
			if (!kp_current_leader(&leader, &epoch))
				return;
			{
				KpShareAcknowledgeResponse *r = ctx->response;

				for (i = 0; i < r->n_responses; i++)
					for (j = 0; j < r->responses[i].n_partitions; j++)
					{
						r->responses[i].partitions[j].current_leader.leader_id = leader.node_id;
						r->responses[i].partitions[j].current_leader.leader_epoch = epoch;
					}
				SET_LEADER_ENDPOINT(r, KpShareAcknowledgeResponseNodeEndpoint, leader);
			}
			break;
	}
}

/*
 * On a hot standby, before the handler: 0 when the standby serves the
 * request; 1 when it answered it here (ctx->response filled with the error
 * for every entry); -1 when the connection is to be closed unanswered: a
 * Produce with acks=0, and every request while no primary streams to this
 * standby (standby_streaming) or while the leader it has replayed is of an
 * older timeline than the one it streams (standby_row_stale), so that the
 * client tries another server, as it would a broker that is down.
 */
int
kp_standby_answer(KpRequestContext *ctx)
{
	bool		close;
	int16		code;
	const char *msg;
	TimeLineID	streamed_tli = 0;

	if (!standby_streaming(&streamed_tli) || standby_row_stale(streamed_tli))
		return -1;
	code = standby_refusal(ctx, &close);
	if (close)
		return -1;
	if (code < 0)
		return 0;
	msg = code == KP_ERR_NONE ? NULL :
		"This server is a hot standby: the leader serves this request.";
	kp_error_response(ctx->api, ctx->version, ctx->request, ctx->response, code, msg);
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
	if (code == KP_ERR_NOT_LEADER_OR_FOLLOWER)
		name_the_leader(ctx);
	return 1;
}
