/*-------------------------------------------------------------------------
 *
 * dispatch.c
 *	  From a request frame to a response: decode, route, run, encode.
 *
 * What a broker does with a bad request follows Kafka: a frame whose header
 * cannot be read, an API key the broker does not serve, a version outside
 * the advertised range or a body that does not decode closes the
 * connection (Kafka's InvalidRequestException), except that ApiVersions at
 * an unsupported version is answered in v0 with UNSUPPORTED_VERSION and the
 * supported range, so a client can retry lower.
 *
 * Each request runs in its own transaction and memory context.  An ERROR
 * from a handler is logged, the transaction aborted, and the connection
 * closed; the worker carries on with its other connections.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "common/string.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "storage/pmsignal.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "common/kafka_errors.h"
#include "common/settings.h"
#include "common/subxact.h"
#include "listener/fetch_session.h"
#include "listener/handlers.h"
#include "listener/handlers_share.h"
#include "listener/listener.h"
#include "listener/listener_int.h"
#include "listener/sasl.h"
#include "listener/tls.h"
#include "store/store.h"

typedef struct KpHandlerEntry
{
	int16		api_key;
	KpHandlerFn fn;
} KpHandlerEntry;

/* The APIs this broker serves; versions are the codec's (Kafka 4.3's). */
static const KpHandlerEntry handler_table[] = {
	{KP_API_PRODUCE, kp_handle_produce},
	{KP_API_FETCH, kp_handle_fetch},
	{KP_API_LIST_OFFSETS, kp_handle_list_offsets},
	{KP_API_METADATA, kp_handle_metadata},
	{KP_API_API_VERSIONS, kp_handle_api_versions},
	{KP_API_INIT_PRODUCER_ID, kp_handle_init_producer_id},
	{KP_API_DESCRIBE_CLUSTER, kp_handle_describe_cluster},
	{KP_API_FIND_COORDINATOR, kp_handle_find_coordinator},
	{KP_API_JOIN_GROUP, kp_handle_join_group},
	{KP_API_SYNC_GROUP, kp_handle_sync_group},
	{KP_API_HEARTBEAT, kp_handle_heartbeat},
	{KP_API_LEAVE_GROUP, kp_handle_leave_group},
	{KP_API_OFFSET_COMMIT, kp_handle_offset_commit},
	{KP_API_OFFSET_FETCH, kp_handle_offset_fetch},
	{KP_API_DESCRIBE_GROUPS, kp_handle_describe_groups},
	{KP_API_LIST_GROUPS, kp_handle_list_groups},
	{KP_API_DELETE_GROUPS, kp_handle_delete_groups},
	{KP_API_OFFSET_DELETE, kp_handle_offset_delete},
	{KP_API_CONSUMER_GROUP_HEARTBEAT, kp_handle_consumer_group_heartbeat},
	{KP_API_CONSUMER_GROUP_DESCRIBE, kp_handle_consumer_group_describe},
	/* share groups (KIP-932): handlers_share.c */
	{KP_API_SHARE_GROUP_HEARTBEAT, kp_handle_share_group_heartbeat},
	{KP_API_SHARE_GROUP_DESCRIBE, kp_handle_share_group_describe},
	{KP_API_SHARE_FETCH, kp_handle_share_fetch},
	{KP_API_SHARE_ACKNOWLEDGE, kp_handle_share_acknowledge},
	{KP_API_DESCRIBE_SHARE_GROUP_OFFSETS, kp_handle_describe_share_group_offsets},
	{KP_API_ALTER_SHARE_GROUP_OFFSETS, kp_handle_alter_share_group_offsets},
	{KP_API_DELETE_SHARE_GROUP_OFFSETS, kp_handle_delete_share_group_offsets},
	{KP_API_CREATE_TOPICS, kp_handle_create_topics},
	{KP_API_DELETE_TOPICS, kp_handle_delete_topics},
	{KP_API_CREATE_PARTITIONS, kp_handle_create_partitions},
	{KP_API_DESCRIBE_CONFIGS, kp_handle_describe_configs},
	{KP_API_ALTER_CONFIGS, kp_handle_alter_configs},
	{KP_API_INCREMENTAL_ALTER_CONFIGS, kp_handle_incremental_alter_configs},
	{KP_API_DELETE_RECORDS, kp_handle_delete_records},
	{KP_API_OFFSET_FOR_LEADER_EPOCH, kp_handle_offset_for_leader_epoch},
	{KP_API_DESCRIBE_TOPIC_PARTITIONS, kp_handle_describe_topic_partitions},
	{KP_API_ELECT_LEADERS, kp_handle_elect_leaders},
	{KP_API_ALTER_PARTITION_REASSIGNMENTS, kp_handle_alter_partition_reassignments},
	{KP_API_LIST_PARTITION_REASSIGNMENTS, kp_handle_list_partition_reassignments},
	{KP_API_DESCRIBE_QUORUM, kp_handle_describe_quorum},
	{KP_API_LIST_CONFIG_RESOURCES, kp_handle_list_config_resources},
	{KP_API_UPDATE_FEATURES, kp_handle_update_features},
	{KP_API_DESCRIBE_CLIENT_QUOTAS, kp_handle_describe_client_quotas},
	{KP_API_ALTER_CLIENT_QUOTAS, kp_handle_alter_client_quotas},
	{KP_API_DESCRIBE_USER_SCRAM_CREDENTIALS, kp_handle_describe_user_scram_credentials},
	{KP_API_ALTER_USER_SCRAM_CREDENTIALS, kp_handle_alter_user_scram_credentials},
	{KP_API_DESCRIBE_LOG_DIRS, kp_handle_describe_log_dirs},
	{KP_API_ALTER_REPLICA_LOG_DIRS, kp_handle_alter_replica_log_dirs},
	/* transactions over the wire: handlers_txn.c */
	{KP_API_ADD_PARTITIONS_TO_TXN, kp_handle_add_partitions_to_txn},
	{KP_API_ADD_OFFSETS_TO_TXN, kp_handle_add_offsets_to_txn},
	{KP_API_TXN_OFFSET_COMMIT, kp_handle_txn_offset_commit},
	{KP_API_END_TXN, kp_handle_end_txn},
	{KP_API_DESCRIBE_TRANSACTIONS, kp_handle_describe_transactions},
	{KP_API_LIST_TRANSACTIONS, kp_handle_list_transactions},
	{KP_API_DESCRIBE_PRODUCERS, kp_handle_describe_producers},
	/* ACLs: handlers_acls.c */
	{KP_API_CREATE_ACLS, kp_handle_create_acls},
	{KP_API_DESCRIBE_ACLS, kp_handle_describe_acls},
	{KP_API_DELETE_ACLS, kp_handle_delete_acls},
	/* SASL authentication: sasl.c */
	{KP_API_SASL_HANDSHAKE, kp_handle_sasl_handshake},
	{KP_API_SASL_AUTHENTICATE, kp_handle_sasl_authenticate},
};

static MemoryContext request_cxt = NULL;
#ifdef KP_TRACE_LATENCY
int64		kp_trace_disp_us;
#endif
static MemoryContext listener_cxt = NULL;
static char cluster_id[32];

/*
 * The commits of the listener's transactions do not wait for the synchronous
 * standbys inside COMMIT (core's SyncRepWaitForLSN would block the worker and
 * every connection on it while no synchronous standby is connected).  The
 * commit is local, and its response waits on its connection until the
 * in-sync replicas have the commit record, as a Produce acks=all does
 * (kp_conn_wait_commit, server.c run_acks).
 *
 * xact_callback makes it so: at PRE_COMMIT, if a commit would wait for
 * synchronous standbys, synchronous_commit is lowered to local for this
 * commit only (restored at COMMIT or ABORT; RecordTransactionCommit, which
 * runs between the two, is the only reader in between), and at COMMIT the
 * end of the commit record of a transaction with an XID is kept in
 * frame_commit_lsn: the furthest of the request's commits (EndTxn commits
 * twice).  The synchronous_commit variable is set directly rather than
 * through the GUC machinery: this runs for every request, and a SET LOCAL
 * costs a lookup, a parse and a GUC stack entry each time; nothing reads the
 * setting between the two callbacks but the commit itself.
 *
 * A server set to synchronous_commit = off (as a DBA may, for its SQL
 * sessions) does not make the listener's commits asynchronous: an answered
 * OffsetCommit, EndTxn or ShareAcknowledge whose commit record was still in
 * the WAL buffers would be lost by a crash of any process, which restarts
 * the server.  Such a commit is raised to local for the commit only, in the
 * same way: what the request committed is flushed before it is answered, as
 * an acks=all batch is (which off leaves waiting for the local flush only).
 */
/*
 * It matters twice: a worker may be in core's sync rep queue while its
 * requests wait (src/store/isr.c, kp_isr_wake_at), and a commit that waited
 * in SyncRepWaitForLSN would queue it a second time.
 */
static XLogRecPtr frame_commit_lsn = InvalidXLogRecPtr;
static bool commit_async = false;	/* kp_handler_next_transaction(false) */
static bool commit_set = false; /* set to local for this commit */
static bool commit_standbys = false;	/* ... as it would wait for standbys */
static int	commit_saved_mode = SYNCHRONOUS_COMMIT_ON;

static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:

			/*
			 * commit_async: nothing answered depends on this commit alone
			 * (kp_handler_next_transaction's caller says why): off, not local
			 */
			if (!commit_set && (commit_async || SyncRepRequested() ||
								synchronous_commit < SYNCHRONOUS_COMMIT_LOCAL_FLUSH))
			{
				commit_standbys = !commit_async && SyncRepRequested();
				commit_saved_mode = synchronous_commit;
				synchronous_commit = commit_async ? SYNCHRONOUS_COMMIT_OFF :
					SYNCHRONOUS_COMMIT_LOCAL_FLUSH;
				commit_set = true;
			}
			break;
		case XACT_EVENT_COMMIT:
			commit_async = false;
			if (commit_set)
			{
				synchronous_commit = commit_saved_mode;
				commit_set = false;
				/* what SyncRepWaitForLSN would have waited for */
				if (commit_standbys && TransactionIdIsValid(GetTopTransactionIdIfAny()) &&
					XactLastCommitEnd > frame_commit_lsn)
					frame_commit_lsn = XactLastCommitEnd;
			}
			break;
		case XACT_EVENT_ABORT:
			commit_async = false;
			if (commit_set)
			{
				synchronous_commit = commit_saved_mode;
				commit_set = false;
			}
			break;
		default:
			break;
	}
}

void
kp_dispatch_init(MemoryContext parent)
{
	listener_cxt = parent;
	request_cxt = AllocSetContextCreate(parent, "kafka_pg request",
										ALLOCSET_DEFAULT_SIZES);
	RegisterXactCallback(xact_callback, NULL);
}

int
kp_conn_put_response(KpConn *c, int16 api_key, int16 version, int32 correlation_id,
					 void *response)
{
	/*
	 * Encode straight into the connection's output buffer (which lives in the
	 * listener's context: appending keeps it there), after a 4-byte size
	 * filled in at the end.  No copy of the response.  Returns where the
	 * frame starts in the buffer.  The size counts the bytes the encoder gave
	 * the connection by reference (kp_records_sink: a Fetch's records).
	 */
	StringInfo	out = kp_conn_output(c);
	int			start = out->len;
	int			mark = kp_conn_pieces_mark(c);
	int32		size;

	kp_wire_put_int32(out, 0);
	kp_encode_string_too_long = false;
	kp_encode_response_header(api_key, version, correlation_id, out);
	kp_encode(kp_api_lookup(api_key)->response, version, response, out);

	/*
	 * a name sent back longer than this version's int16 length: Kafka's
	 * serializer refuses it too; the caller closes the connection
	 */
	if (kp_encode_string_too_long)
	{
		kp_conn_pieces_truncate(c, mark);
		out->len = start;
		out->data[start] = '\0';
		ereport(LOG,
				(errmsg("kafka_pg listener: closing connection from %s: the answer has a string longer than the 32767 bytes %s v%d can carry",
						c->peer, kp_api_lookup(api_key)->name, version)));
		return -1;
	}
	size = (int32) (out->len - start - 4 + kp_conn_pieces_bytes(c, mark));
	out->data[start] = (char) (size >> 24);
	out->data[start + 1] = (char) (size >> 16);
	out->data[start + 2] = (char) (size >> 8);
	out->data[start + 3] = (char) size;
	return start;
}

/*
 * A Fetch response, its records sent by reference (handlers_fetch.c): the
 * encoder hands them to the connection instead of copying them into its
 * output buffer.
 */
static int
put_fetch_response(KpConn *c, int16 version, int32 correlation_id, void *response)
{
	volatile int start = -1;

	kp_fetch_send_by_reference(c, true);
	PG_TRY();
	{
		start = kp_conn_put_response(c, KP_API_FETCH, version, correlation_id, response);
	}
	PG_FINALLY();
	{
		kp_fetch_send_by_reference(c, false);
	}
	PG_END_TRY();
	return start;
}

KpHandlerFn
kp_handler_for(int16 api_key)
{
	int			i;

	for (i = 0; i < lengthof(handler_table); i++)
		if (handler_table[i].api_key == api_key)
			return handler_table[i].fn;
	return NULL;
}

/*
 * The cluster id clients see: 16 bytes from the database system identifier
 * and the database OID, base64url without padding, the shape of Kafka's
 * (22 characters).  Stable across restarts, different per cluster.
 */
const char *
kp_cluster_id(void)
{
	uint8		raw[16];
	uint64		sysid;
	int			i;

	if (cluster_id[0])
		return cluster_id;
	sysid = GetSystemIdentifier();
	memset(raw, 0, sizeof(raw));
	for (i = 0; i < 8; i++)
		raw[i] = (uint8) (sysid >> (56 - 8 * i));
	raw[8] = (uint8) (MyDatabaseId >> 24);
	raw[9] = (uint8) (MyDatabaseId >> 16);
	raw[10] = (uint8) (MyDatabaseId >> 8);
	raw[11] = (uint8) MyDatabaseId;
	memcpy(raw + 12, "kpg", 3);
	kp_uuid_to_string(raw, cluster_id);
	return cluster_id;
}

const char *
kp_advertised_host_name(void)
{
	if (kp_advertised_host && kp_advertised_host[0])
		return kp_advertised_host;
	if (kp_listen_address == NULL || kp_listen_address[0] == '\0' ||
		strcmp(kp_listen_address, "0.0.0.0") == 0 || strcmp(kp_listen_address, "::") == 0 ||
		strcmp(kp_listen_address, "*") == 0)
		return "127.0.0.1";
	return kp_listen_address;
}

int
kp_advertised_port_number(void)
{
	return kp_advertised_port > 0 ? kp_advertised_port : kp_port;
}

/* Kafka error code for an ERROR: class KP carries it in its digits. */
int16
kp_handler_code_for_sqlstate(int sqlerrcode)
{
	char	   *state = unpack_sql_state(sqlerrcode);

	if (state[0] == 'K' && state[1] == 'P' &&
		isdigit((unsigned char) state[2]) && isdigit((unsigned char) state[3]) &&
		isdigit((unsigned char) state[4]))
		return (int16) atoi(state + 2);
	/* input past one of PostgreSQL's limits: a key too long for a btree */
	if (sqlerrcode == ERRCODE_INVALID_PARAMETER_VALUE ||
		ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_PROGRAM_LIMIT_EXCEEDED)
		return KP_ERR_INVALID_REQUEST;
	/* a topic lock taken (kp_topic_locks_nowait): retriable */
	if (sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
		return KP_ERR_REQUEST_TIMED_OUT;
	return KP_ERR_UNKNOWN_SERVER_ERROR;
}

void
kp_set_park_cookie(KpRequestContext *ctx, const char *cookie)
{
	/* none, the common case, costs no allocation */
	ctx->park_cookie = (cookie == NULL || cookie[0] == '\0') ? "" :
		MemoryContextStrdup(request_cxt, cookie);
}

void
kp_refuse(KpRequestContext *ctx, int16 code, const char *message)
{
	/* one result per user, which the descriptors cannot pair (two arrays) */
	if (ctx->header->request_api_key == KP_API_ALTER_USER_SCRAM_CREDENTIALS)
	{
		kp_alter_user_scram_credentials_refuse(ctx, code, message);
		return;
	}
	kp_error_response(ctx->api, ctx->version, ctx->request, ctx->response, code, message);
}

/*
 * Park ctx to try its lock again (KP_LOCK_RETRY_MS, handlers.h) unless
 * deadline_ms has come; whether it parked.  The back-off counts from when
 * the request first found a lock taken (KpConn.lock_busy_since_ms, cleared
 * by kp_dispatch_frame once a run of it no longer parks for one).
 */
static bool
park_for_lock_until(KpRequestContext *ctx, int64 deadline_ms)
{
	KpConn	   *c = ctx->conn;
	int64		now = kp_listener_now_ms();

	if (now >= deadline_ms)
		return false;
	if (c->lock_busy_since_ms == 0)
		c->lock_busy_since_ms = now;
	ctx->park = true;
	ctx->park_until_ms = Min(now + Min(Max(now - c->lock_busy_since_ms, 1), KP_LOCK_RETRY_MS),
							 deadline_ms);
	/* woken by its deadline only, not by every append */
	ctx->park_keyed = true;
	ctx->park_nkeys = 0;
	ctx->park_for_lock = true;
	return true;
}

bool
kp_handler_park_for_locks(KpRequestContext *ctx, int32 timeout_ms)
{
	return park_for_lock_until(ctx, ctx->received_ms +
							   (timeout_ms > 0 ? timeout_ms : KP_LOCK_WAIT_DEFAULT_MS));
}

bool
kp_handler_lock_topics(KpRequestContext *ctx, char *const *names, int n, int32 timeout_ms)
{
	bool		any_busy = false;
	int			i;

	for (i = 0; i < n; i++)
	{
		bool		busy = false;

		if (names[i] == NULL || names[i][0] == '\0' || strlen(names[i]) > KP_TOPIC_NAME_MAX)
			continue;
		(void) kp_topic_try_open(names[i], ShareUpdateExclusiveLock, &busy);
		any_busy |= busy;
	}
	return any_busy && kp_handler_park_for_locks(ctx, timeout_ms);
}

/*
 * Whether the partition has no room for its state in shared memory
 * (kp_log_no_room, which every handler asks before it touches one, and
 * which logs the DBA's WARNING): then the message of its
 * KAFKA_STORAGE_ERROR in *message (unless NULL).
 */
bool
kp_handler_no_room(int64 partition_id, char **message)
{
	if (!kp_log_no_room(partition_id, "Clients get KAFKA_STORAGE_ERROR for it."))
		return false;
	if (message)
		*message = psprintf("more partitions in use than kafka.max_partitions (%d) on this server",
							kp_max_partitions);
	return true;
}

int16
kp_handler_try(void (*fn) (void *arg), void *arg, char **message)
{
	uint64		refusals = kp_topic_lock_refusals;
	ErrorData  *edata = kp_try_subxact(fn, arg);
	int16		code;

	if (message)
		*message = NULL;
	if (edata == NULL)
		return KP_ERR_NONE;
	/* a cancel (pg_cancel_backend) is the request's, not an entry's */
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
		ReThrowError(edata);
	/* a row's lock (lock_timeout), not a topic's refused (answered below) */
	if (kp_handler_rerun_on_lock && edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE &&
		kp_topic_lock_refusals == refusals)
		ReThrowError(edata);
	code = kp_handler_code_for_sqlstate(edata->sqlerrcode);
	if (message)
		*message = pstrdup(edata->message);
	FreeErrorData(edata);
	return code;
}

/*
 * How a request meets a lock a SQL transaction still open holds, where a
 * worker must not wait for it (src/listener/README, "Locks").  Both kinds
 * are rolled back and run again from the start when they find one taken,
 * until KP_LOCK_WAIT_DEFAULT_MS after the first time, so both must change
 * nothing outside their transaction before their last lock.
 */
typedef enum LockRetry
{
	LOCK_RETRY_NONE,			/* waits, or handles a taken lock itself */

	/*
	 * The group requests, which take the group lock (kp_group_locks_nowait)
	 * before they change anything.  EndTxn too: a commit writes the
	 * transaction's offsets (a group's creation, and each partition's offset
	 * lock) before it commits its decision, and only then anything else. At
	 * the end: COORDINATOR_LOAD_IN_PROGRESS.
	 */
	LOCK_RETRY_GROUP,

	/*
	 * The admin requests that change catalog rows which a SQL transaction may
	 * have inserted, updated or deleted: kafka.acls (kafka.create_acl,
	 * kafka.delete_acls), kafka.client_quotas, kafka.group_configs and
	 * kafka.broker_configs (plain DML is their SQL interface), a role's
	 * password (ALTER ROLE) and kafka.scram_credentials.  An INSERT ... ON
	 * CONFLICT, an UPDATE or a DELETE of such a row waits for that
	 * transaction, and has no NOWAIT: these run with lock_timeout 1 ms (a
	 * local setting, gone with the request's transaction), and kp_handler_try
	 * raises the lock error again out of its subtransaction
	 * (kp_handler_rerun_on_lock).  Their one change outside the transaction,
	 * ALTER SYSTEM of a BROKER config, comes after every other resource's
	 * changes (handlers_configs.c).  At the end: REQUEST_TIMED_OUT.
	 */
	LOCK_RETRY_ROW,
} LockRetry;

bool		kp_handler_rerun_on_lock = false;

/* What a LOCK_RETRY_ROW request found locked, for its error message */
static const char *
row_retry_what(int16 api_key)
{
	switch (api_key)
	{
		case KP_API_CREATE_ACLS:
		case KP_API_DELETE_ACLS:
			return "ACLs the request changes";
		case KP_API_ALTER_CLIENT_QUOTAS:
			return "client quotas the request changes";
		case KP_API_ALTER_USER_SCRAM_CREDENTIALS:
			return "the roles or credentials the request changes";
		default:
			return "configs the request changes";
	}
}

/*
 * The requests that read or append segments for several partitions, and
 * answer a partition whose pages cannot be read or written with
 * KAFKA_STORAGE_ERROR rather than failing as a whole (ctx->storage_guard).
 */
static bool
storage_guarded(int16 api_key)
{
	return api_key == KP_API_FETCH || api_key == KP_API_SHARE_FETCH ||
		api_key == KP_API_PRODUCE;
}

/*
 * Whether an ERROR of this SQLSTATE is the store's pages failing to read:
 * "invalid page in block", a short read, the store's own length and CRC
 * checks (XX001, XX002); an I/O error or a missing file (class 58).  What a
 * Kafka broker's KAFKA_STORAGE_ERROR stands for.  An append also fails so
 * when the disk is full ("could not extend file", ENOSPC: 53100) and when
 * the partition has as many open transactions as it can hold (53400,
 * kp_txnstate_check_room, checked before anything is written): the
 * partition's failure, not the request's.
 */
static bool
storage_sqlstate(int sqlerrcode, bool appending)
{
	if (sqlerrcode == ERRCODE_DATA_CORRUPTED || sqlerrcode == ERRCODE_INDEX_CORRUPTED ||
		ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_SYSTEM_ERROR)
		return true;
	return appending && (sqlerrcode == ERRCODE_DISK_FULL ||
						 sqlerrcode == ERRCODE_CONFIGURATION_LIMIT_EXCEEDED);
}

ErrorData *
kp_storage_try(void (*fn) (void *arg), void *arg, bool appending)
{
	ErrorData  *edata = kp_try_subxact(fn, arg);

	/* not the store's pages (a cancel, a bug): the request's, as unguarded */
	if (edata != NULL && !storage_sqlstate(edata->sqlerrcode, appending))
		ReThrowError(edata);
	return edata;
}

void
kp_storage_warning(int64 *warned_ms, const ErrorData *edata, const char *what, const char *detail,
				   const char *hint)
{
	int64		now = kp_listener_now_ms();

	if (*warned_ms != 0 && now - *warned_ms < 60000)
		return;
	*warned_ms = now;
	ereport(WARNING,
			(errcode(edata->sqlerrcode),
			 errmsg("kafka_pg listener: %s: %s", what, edata->message),
			 errdetail_internal("%s", detail),
			 errhint("%s", hint)));
}

static LockRetry
lock_retry(int16 api_key)
{
	switch (api_key)
	{
		case KP_API_JOIN_GROUP:
		case KP_API_SYNC_GROUP:
		case KP_API_HEARTBEAT:
		case KP_API_LEAVE_GROUP:
		case KP_API_OFFSET_COMMIT:
		case KP_API_DELETE_GROUPS:
		case KP_API_OFFSET_DELETE:
		case KP_API_CONSUMER_GROUP_HEARTBEAT:
		case KP_API_TXN_OFFSET_COMMIT:
		case KP_API_END_TXN:
			return LOCK_RETRY_GROUP;
		case KP_API_CREATE_ACLS:
		case KP_API_DELETE_ACLS:
		case KP_API_ALTER_CLIENT_QUOTAS:
		case KP_API_ALTER_USER_SCRAM_CREDENTIALS:
		case KP_API_ALTER_CONFIGS:
		case KP_API_INCREMENTAL_ALTER_CONFIGS:
			return LOCK_RETRY_ROW;
		default:
			return LOCK_RETRY_NONE;
	}
}

/* This worker's name in the catalog stamp's reports */
static const char *
listener_name(void)
{
	static char name[32];

	snprintf(name, sizeof(name), "kafka_pg listener %d", kp_listener_worker_index);
	return name;
}

/* Topic by name, or (name NULL / empty) by Kafka topic id; NULL if none. */
const KpTopic *
kp_handler_topic(const char *name, const KpUuid *topic_id)
{
	const KpTopic *t;
	bool		by_id = (name == NULL || name[0] == '\0');

	if (by_id)
	{
		pg_uuid_t	u;

		if (topic_id == NULL)
			return NULL;
		memcpy(u.data, topic_id->b, 16);
		name = kp_topic_name_for_uuid(&u);
		if (name == NULL)
			return NULL;
	}
	if (strlen(name) > KP_TOPIC_NAME_MAX)
		return NULL;
	t = kp_topic_open(name, AccessShareLock, true);
	/* asked by id: a topic re-created under the same name is another topic */
	if (t && by_id && memcmp(t->topic_uuid.data, topic_id->b, 16) != 0)
		return NULL;

	/*
	 * kp_topic_open returns a copy in the request's memory: handlers keep the
	 * topic across catalog calls (Produce checks transactional batches
	 * through SPI between the partitions of a topic), and any of them may
	 * process a topic invalidation that drops the cache.
	 */
	return t;
}

void
kp_handler_next_transaction(bool durable)
{
	MemoryContext cxt = CurrentMemoryContext;

	PopActiveSnapshot();
	commit_async = !durable;
	CommitTransactionCommand();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	MemoryContextSwitchTo(cxt);
}

/* Milliseconds since start, for request_percentage. */
static double
elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/*
 * The request's client id as the server log shows it: cut at 128 bytes,
 * with "...", and cleaned by PostgreSQL's pg_clean_ascii, as
 * application_name is (each byte outside printable ASCII becomes '?'; from
 * PostgreSQL 16 on, whose pg_clean_ascii returns a copy, "\xNN").  The
 * header's client id is whatever the client sent (up to 32767 bytes): a
 * newline in it would otherwise go on over a line of its own in the log.
 */
#define KP_LOG_CLIENT_ID_MAX 128

const char *
kp_log_client_id(const char *client_id)
{
	const char *id = client_id ? client_id : "";
	char	   *out = pnstrdup(id, KP_LOG_CLIENT_ID_MAX);

#if PG_VERSION_NUM >= 160000
	out = pg_clean_ascii(out, 0);
#else
	pg_clean_ascii(out);
#endif
	return strlen(id) > KP_LOG_CLIENT_ID_MAX ? psprintf("%s...", out) : out;
}

/* ApiVersions at a version we do not know: v0 body, UNSUPPORTED_VERSION. */
static void
answer_unsupported_api_versions(KpConn *c, const KpRequestHeader *hdr)
{
	const KpApiEntry *api = kp_api_lookup(KP_API_API_VERSIONS);
	KpApiVersionsResponse resp;
	StringInfoData out;
	StringInfoData framed;

	kp_init_struct(api->response, &resp);
	resp.error_code = KP_ERR_UNSUPPORTED_VERSION;
	resp.n_api_keys = 1;
	resp.api_keys = palloc0(sizeof(KpApiVersionsResponseApiVersion));
	resp.api_keys[0].api_key = KP_API_API_VERSIONS;
	resp.api_keys[0].min_version = api->min_version;
	resp.api_keys[0].max_version = api->max_version;
	initStringInfo(&out);
	kp_encode_response_header(KP_API_API_VERSIONS, 0, hdr->correlation_id, &out);
	kp_encode(api->response, 0, &resp, &out);
	initStringInfo(&framed);
	kp_wire_put_int32(&framed, out.len);
	appendBinaryStringInfo(&framed, out.data, out.len);
	kp_conn_send(c, framed.data, framed.len);
}

/*
 * The Produce context of the request being dispatched, until it is deleted
 * or handed to the connection (kp_conn_wait_ack): kp_dispatch_frame deletes
 * it after an ERROR.
 */
static MemoryContext dispatch_produce_cxt = NULL;

static bool dispatch_frame(KpConn *c, uint8 *frame, int len, bool final);

/*
 * An ERROR outside the handler's own transaction (an error response or an
 * answer too large to allocate or encode, say: over 1 GB) used to end the
 * worker, and every connection it served, the postmaster starting it again
 * later.  It now closes this connection only: whatever transaction is open
 * is aborted, what the request added to the connection's output is taken
 * back, and the worker goes on.
 */
bool
kp_dispatch_frame(KpConn *c, uint8 *frame, int len, bool final)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	StringInfo	out = kp_conn_output(c);
	int			out_len = out->len;
	int			mark = kp_conn_pieces_mark(c);
	volatile bool ok = false;

	PG_TRY();
	{
		ok = dispatch_frame(c, frame, len, final);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		kp_fetch_send_by_reference(c, false);
		kp_group_locks_nowait = false;
		kp_handler_rerun_on_lock = false;
		kp_conn_pieces_truncate(c, mark);
		if (out->len > out_len)
		{
			out->len = out_len;
			out->data[out_len] = '\0';
		}
		if (dispatch_produce_cxt != NULL)
			MemoryContextDelete(dispatch_produce_cxt);
		dispatch_produce_cxt = NULL;
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(request_cxt);
		pgstat_report_activity(STATE_IDLE, NULL);
		ereport(LOG,
				(errmsg("kafka_pg listener: closing connection from %s: %s",
						c->peer, edata->message),
				 edata->detail ? errdetail_internal("%s", edata->detail) : 0));
		FreeErrorData(edata);
		RESUME_INTERRUPTS();
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/*
 * *ctx as the handler's first run got it (*first), with its request decoded
 * afresh from the frame's body (a handler may rewrite its listing; the
 * first decoding succeeded) and an empty response: for a second run, or an
 * answer refusing the whole request.
 */
static void
ctx_afresh(KpRequestContext *ctx, const KpRequestContext *first, const uint8 *body, int len)
{
	KpError		err;

	*ctx = *first;
	ctx->request = palloc0(ctx->api->request->root->size);
	(void) kp_decode(ctx->api->request, ctx->version, body, len, ctx->request, &err);
	ctx->response = palloc0(ctx->api->response->root->size);
}

static bool
dispatch_frame(KpConn *c, uint8 *frame, int len, bool final)
{
	MemoryContext oldcxt;
	KpRequestHeader hdr;
	size_t		hlen;
	KpError		err;
	const KpApiEntry *api;
	KpHandlerFn fn;
	KpRequestContext ctx;
	KpRequestContext ctx_first; /* as the handler's first run got it */
	bool		ok = true;
	char		header_nul[100] = "";
	bool		handled = false;	/* the handler ran and committed */
	volatile bool other_build = false;	/* another build's catalog */
	char	   *volatile lock_busy = NULL;	/* a lock taken (lock_retry): why */
	volatile bool rerun_guarded = false;	/* storage_guarded: run again */
	char	   *volatile over_limit = NULL; /* a PostgreSQL limit: why */
	LockRetry	retry;
	int64		throttle_ms = 0;
	instr_time	started;
	MemoryContext cxt = request_cxt;
	XLogRecPtr	commit_lsn = InvalidXLogRecPtr;

	INSTR_TIME_SET_CURRENT(started);
	frame_commit_lsn = InvalidXLogRecPtr;
#ifdef KP_TRACE_LATENCY
	kp_trace_disp_us = kp_trace_us();
#endif

	oldcxt = MemoryContextSwitchTo(request_cxt);

	if (!kp_decode_request_header(frame, len, &hdr, &hlen, &err))
	{
		ereport(LOG,
				(errmsg("kafka_pg listener: closing connection from %s: bad request header: %s",
						c->peer, err.message)));
		ok = false;
		goto done;
	}
	/* kept: err is reused for the body */
	if (err.embedded_nul)
		strlcpy(header_nul, err.embedded_nul_field, sizeof(header_nul));
	api = kp_api_lookup(hdr.request_api_key);
	fn = kp_handler_for(hdr.request_api_key);
	if (api == NULL || fn == NULL)
	{
		ereport(LOG,
				(errmsg("kafka_pg listener: closing connection from %s (client %s): unsupported API key %d",
						c->peer, kp_log_client_id(hdr.client_id), hdr.request_api_key)));
		ok = false;
		goto done;
	}
	if (hdr.request_api_version < api->min_version || hdr.request_api_version > api->max_version)
	{
		if (hdr.request_api_key == KP_API_API_VERSIONS)
		{
			answer_unsupported_api_versions(c, &hdr);
			goto done;
		}
		ereport(LOG,
				(errmsg("kafka_pg listener: closing connection from %s (client %s): %s version %d is not supported (%d to %d are)",
						c->peer, kp_log_client_id(hdr.client_id), api->name,
						hdr.request_api_version, api->min_version, api->max_version)));
		ok = false;
		goto done;
	}

	/* an SSL client certificate: its CN becomes the principal (tls.c) */
	if (c->cert_pending)
	{
		bool		mapped;

		StartTransactionCommand();
		mapped = kp_tls_cert_principal(c);
		CommitTransactionCommand();
		MemoryContextSwitchTo(request_cxt);
		if (!mapped)
		{
			ok = false;
			goto done;
		}
	}

	/*
	 * A Produce gets a context of its own: with acks=all its response may
	 * outlive this call, kept on the connection until the in-sync replicas
	 * have its WAL (kp_conn_wait_ack).
	 */
	if (hdr.request_api_key == KP_API_PRODUCE)
	{
		cxt = AllocSetContextCreate(listener_cxt, "kafka_pg produce",
									ALLOCSET_DEFAULT_SIZES);
		dispatch_produce_cxt = cxt;
		MemoryContextSwitchTo(cxt);
	}

	memset(&ctx, 0, sizeof(ctx));
	ctx.header = &hdr;
	ctx.api = api;
	ctx.version = hdr.request_api_version;
	ctx.peer = c->peer;
	ctx.conn = c;
	ctx.principal = c->principal;
	ctx.principal_oid = c->principal_oid;
	ctx.final_attempt = final;
	/* a re-run of a parked request keeps its arrival (run_parked clears it) */
	ctx.received_ms = c->parked_received_ms > 0 ? c->parked_received_ms :
		kp_listener_now_ms();
	kp_set_park_cookie(&ctx, c->park_cookie);
	ctx.request = palloc0(api->request->root->size);
	if (!kp_decode(api->request, ctx.version, frame + hlen, len - hlen, ctx.request, &err))
	{
		/*
		 * Kafka's parsers read what the schema says and ignore what follows;
		 * some clients rely on it (librdkafka sends Metadata's
		 * IncludeClusterAuthorizedOperations past v10).  Everything before
		 * the trailing bytes decoded, so go on.
		 */
		if (err.code == KP_DECODE_TRAILING_BYTES)
			ereport(DEBUG1,
					(errmsg("kafka_pg listener: ignoring trailing bytes of a %s v%d request from %s",
							api->name, ctx.version, c->peer)));
		else if (hdr.request_api_key == KP_API_API_VERSIONS)
		{
			/* clients may send newer ApiVersions bodies; KIP-511 says answer */
			kp_init_struct(api->request, ctx.request);
		}
		else
		{
			ereport(LOG,
					(errmsg("kafka_pg listener: closing connection from %s (client %s): malformed %s v%d request: %s",
							c->peer, kp_log_client_id(hdr.client_id), api->name,
							ctx.version, err.message)));
			ok = false;
			goto done;
		}
	}
	ctx.response = palloc0(api->response->root->size);

	/* SASL listener: only what the authentication state allows (sasl.c) */
	switch (kp_sasl_admit(c, hdr.request_api_key, hdr.client_id, ctx.received_ms))
	{
		case KP_SASL_RUN:
			break;
		case KP_SASL_CLOSE:
			ok = false;
			goto done;
		case KP_SASL_REFUSE_ANSWER:
			kp_error_response(api, ctx.version, ctx.request, ctx.response,
							  KP_ERR_ILLEGAL_SASL_STATE,
							  "Unexpected request during SASL authentication");
			ctx.close_after_response = true;
			goto respond;
	}

	/*
	 * A NUL byte in a name (or any text string) of the request or its header:
	 * Kafka accepts the bytes, but a name Postgres text cannot hold must not
	 * be acted on shortened, and the connection should not be dropped for it
	 * either.  Answer every entry with INVALID_REQUEST.
	 */
	if (header_nul[0] || err.embedded_nul)
	{
		const char *where = header_nul[0] ? header_nul : err.embedded_nul_field;

		ereport(LOG,
				(errmsg("kafka_pg listener: refusing a %s v%d request from %s: %s contains a NUL byte",
						api->name, ctx.version, c->peer, where)));
		kp_error_response(api, ctx.version, ctx.request, ctx.response, KP_ERR_INVALID_REQUEST,
						  psprintf("%s contains a NUL byte, which kafka_pg cannot store", where));
		/* acks=0 gets no answer, whatever happens (Kafka does the same) */
		if (hdr.request_api_key == KP_API_PRODUCE &&
			((KpProduceRequest *) ctx.request)->acks == 0)
			ctx.no_response = true;
		goto respond;
	}
	kp_init_struct(api->response, ctx.response);

	/* a hot standby serves reads; the rest goes to the leader (leader.c) */
	if (RecoveryInProgress())
	{
		int			r = kp_standby_answer(&ctx);

		if (r < 0)
		{
			ereport(DEBUG1,
					(errmsg("kafka_pg listener: closing connection from %s without answering its %s: this server is a hot standby (an acks=0 Produce, or no primary streams to it)",
							c->peer, api->name)));
			ok = false;
			goto done;
		}
		if (r > 0)
			goto respond;
	}

	/* run the handler in a transaction of its own */
	ctx_first = ctx;
run:
	retry = lock_retry(hdr.request_api_key);
	kp_group_locks_nowait = retry == LOCK_RETRY_GROUP;
	kp_handler_rerun_on_lock = retry == LOCK_RETRY_ROW;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (retry == LOCK_RETRY_ROW)
		(void) set_config_option("lock_timeout", "1", PGC_SUSET, PGC_S_SESSION,
								 GUC_ACTION_LOCAL, true, 0, false);
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, api->name);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		/*
		 * Nothing is served from a catalog another build of kafka_pg created
		 * (src/catalog/stamp.c): the worker logs that once, and closes every
		 * connection without an answer until the extension is re-created.
		 */
		if (kp_catalog_stamp_worker(listener_name()) == KP_CATALOG_OTHER_BUILD)
			other_build = true;
		else
		{
			ctx.quota_fetch_max_bytes = kp_quota_prepare(c, hdr.client_id);
			if (kp_authz_admit(&ctx))
				fn(&ctx);
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		if (retry == LOCK_RETRY_GROUP && edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
			lock_busy = pstrdup(edata->message);
		else if (retry == LOCK_RETRY_ROW && edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
			lock_busy = psprintf("%s are being changed by another transaction still open",
								 row_retry_what(hdr.request_api_key));
		else if (!ctx.storage_guard && storage_guarded(hdr.request_api_key) &&
				 storage_sqlstate(edata->sqlerrcode, hdr.request_api_key == KP_API_PRODUCE))
			rerun_guarded = true;
		else if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) == ERRCODE_PROGRAM_LIMIT_EXCEEDED &&
				 hdr.request_api_key != KP_API_PRODUCE)
			over_limit = pstrdup(edata->message);
		else
		{
			ereport(LOG,
					(errmsg("kafka_pg listener: %s v%d request from %s (client %s) failed: %s",
							api->name, ctx.version, c->peer,
							kp_log_client_id(hdr.client_id), edata->message),
					 edata->detail ? errdetail_internal("%s", edata->detail) : 0));
			ok = false;
		}
	}
	PG_END_TRY();
	kp_group_locks_nowait = false;
	kp_handler_rerun_on_lock = false;
	pgstat_report_activity(STATE_IDLE, NULL);
	MemoryContextSwitchTo(cxt);
	if (rerun_guarded)
	{
		/*
		 * A segment page that cannot be read or written (storage_guarded):
		 * the request runs again, from a fresh decoding of its frame (the
		 * handler may have rewritten its listing), reading each partition in
		 * a subtransaction of its own; the one that fails again is answered
		 * KAFKA_STORAGE_ERROR, the others as usual.  What the first run did
		 * outside its transaction stands (a fetch session's step to its next
		 * epoch, noted in ctx.park_cookie, which the second run keeps), but a
		 * share session's step is undone with the transaction
		 * (handlers_share.c): a ShareFetch starts again from the cookie it
		 * came with, its acknowledgements too.  A Produce's appends stand
		 * too, whatever the abort: its second run answers the partitions its
		 * first appended from ctx.produce_ledger and appends only the others
		 * (handlers_produce.c).
		 */
		const char *cookie = ctx.park_cookie;
		struct KpProduceLedger *ledger = ctx.produce_ledger;

		rerun_guarded = false;
		ctx_afresh(&ctx, &ctx_first, frame + hlen, len - hlen);
		ctx.storage_guard = true;
		ctx.produce_ledger = ledger;
		if (hdr.request_api_key != KP_API_SHARE_FETCH)
			ctx.park_cookie = cookie;
		kp_init_struct(api->response, ctx.response);
		goto run;
	}
	if (over_limit)
	{
		/*
		 * Input past one of PostgreSQL's limits (SQLSTATE class 54): a group,
		 * transactional, member or group instance id, or an ACL's resource
		 * name, too long for a catalog table's btree key (about 2,700 bytes
		 * that do not compress: "index row size ... exceeds btree version 4
		 * maximum 2704"), where Kafka takes up to 32,767.  Rolled back; every
		 * entry of the request is answered INVALID_REQUEST with PostgreSQL's
		 * words, as a NUL byte in a name is, rather than the connection
		 * closed (which clients retry for ever).  Not a Produce: what it
		 * appended before the error stays (handlers_produce.c), and must not
		 * be answered as refused.
		 */
		ereport(LOG,
				(errmsg("kafka_pg listener: refusing %s v%d request from %s (client %s): %s",
						api->name, ctx.version, c->peer, kp_log_client_id(hdr.client_id),
						over_limit)));
		ctx_afresh(&ctx, &ctx_first, frame + hlen, len - hlen);
		kp_refuse(&ctx, KP_ERR_INVALID_REQUEST, over_limit);
		handled = true;
		goto respond;
	}
	if (lock_busy)
	{
		/*
		 * A group lock a SQL transaction still open holds
		 * (kafka.group_heartbeat in a longer transaction; a group a first
		 * kafka.consume created): the request was rolled back; it runs again
		 * (park_for_lock_until) until KP_LOCK_WAIT_DEFAULT_MS after it first
		 * found the lock taken (not after it arrived: a JoinGroup parks for
		 * its rebalance, and may meet the lock of another worker's request of
		 * the group at its end), and then answers
		 * COORDINATOR_LOAD_IN_PROGRESS (retriable: the coordinator cannot
		 * serve the group now).  Its earlier runs' cookie stands.
		 */
		ctx.park = false;
		ctx.park_on_isr = false;
		kp_set_park_cookie(&ctx, c->park_cookie);
		if (c->lock_busy_since_ms == 0)
			c->lock_busy_since_ms = kp_listener_now_ms();
		if (!park_for_lock_until(&ctx, c->lock_busy_since_ms + KP_LOCK_WAIT_DEFAULT_MS))
			kp_refuse(&ctx, retry == LOCK_RETRY_ROW ? KP_ERR_REQUEST_TIMED_OUT :
					  KP_ERR_COORDINATOR_LOAD_IN_PROGRESS, lock_busy);
		handled = true;
		goto respond;
	}
	if (ok && other_build)
	{
		ereport(DEBUG1,
				(errmsg("kafka_pg listener: closing connection from %s without answering its %s: the catalog was created by a different build of kafka_pg",
						c->peer, api->name)));
		ok = false;
	}
	if (!ok)
		goto done;
	handled = true;

respond:

	/*
	 * A wait for the synchronous standbys in SyncRepWaitForLSN ends without
	 * an error when the postmaster dies or the worker is told to terminate:
	 * it sets ProcDiePending and returns.  What it waited for may then be on
	 * no standby, and a failover loses it: answer nothing (a backend would
	 * not either: the wait sets whereToSendOutput = DestNone) and exit; the
	 * client retries elsewhere (test/ha/failover.py).  The listener no longer
	 * waits there (acks=all and the request's commits wait on the connection,
	 * xact_callback), but a request must not be answered after postmaster
	 * death either way.
	 */
	if (ProcDiePending || !PostmasterIsAlive())
		ereport(FATAL,
				(errcode(ERRCODE_ADMIN_SHUTDOWN),
				 errmsg("kafka_pg listener: terminating without answering a %s request from %s: the server is shutting down or the postmaster died, and what the request waited for may not be on the synchronous standbys",
						api->name, c->peer)));

	/*
	 * The request's commits (xact_callback): its answer waits for them too. A
	 * request that parks keeps what it committed so far for its last run (a
	 * JoinGroup writes its member, then waits for the group).
	 */
	commit_lsn = Max(frame_commit_lsn, c->park_commit_lsn);
	c->park_commit_lsn = InvalidXLogRecPtr;
	/* no lock in its way this time: a later wait for one backs off anew */
	if (!ctx.park_for_lock)
		c->lock_busy_since_ms = 0;

	/* a fetch answers at its deadline; a join may wait for a later one */
	if (ctx.park && (!final || ctx.park_until_ms > kp_listener_now_ms()))
	{
		c->park_commit_lsn = commit_lsn;
		/* the time of this run counts; the bytes once it answers */
		if (handled)
			(void) kp_quota_record(c, 0, 0, elapsed_ms(started), false, kp_listener_now_ms());
		kp_conn_park(c, frame, len, ctx.received_ms, ctx.park_until_ms, ctx.park_cookie,
					 ctx.park_on_isr, ctx.isr_wait_lsn,
					 ctx.park_keyed ? ctx.park_nkeys : -1, ctx.park_keys, ctx.park_seen);
		/* a lock's retry is not the request's final attempt (server.c) */
		c->park_lock_retry = ctx.park_for_lock;
		goto done;
	}

	/*
	 * Client quotas: a Produce's bytes and the request's time count now; a
	 * Fetch's response bytes once it is encoded, below.
	 */
	if (handled)
	{
		bool		exempt = hdr.request_api_key == KP_API_API_VERSIONS ||
		hdr.request_api_key == KP_API_SASL_HANDSHAKE ||
		hdr.request_api_key == KP_API_SASL_AUTHENTICATE;

		throttle_ms = kp_quota_record(c, hdr.request_api_key == KP_API_PRODUCE ? len : 0, 0,
									  elapsed_ms(started), exempt, kp_listener_now_ms());
		throttle_ms = Max(throttle_ms, ctx.mutation_throttle_ms);
		if (throttle_ms > 0)
			kp_quota_set_throttle(api, ctx.version, ctx.response, (int32) throttle_ms);
	}
	if (!ctx.no_response && !XLogRecPtrIsInvalid(ctx.ack_lsn))
	{
		/*
		 * acks=all: the connection keeps the response (its throttle time set
		 * above) until the ISR has it, and what the request committed
		 */
		Assert(cxt != request_cxt);
		if (commit_lsn > ctx.ack_lsn)
		{
			int			i;

			ctx.ack_lsn = commit_lsn;
			for (i = 0; i < ctx.ack_wait->n; i++)
				ctx.ack_wait->parts[i].lsn = Max(ctx.ack_wait->parts[i].lsn, commit_lsn);
		}
		kp_conn_wait_ack(c, cxt, ctx.response, ctx.ack_wait, ctx.ack_lsn,
						 ctx.ack_until_ms, hdr.correlation_id, ctx.version);
		cxt = NULL;
		dispatch_produce_cxt = NULL;	/* the connection's now */
	}
	else if (!ctx.no_response)
	{
		StringInfo	out = kp_conn_output(c);
		int			mark = kp_conn_pieces_mark(c);
		bool		fetch = handled && hdr.request_api_key == KP_API_FETCH;
		int			start = fetch ?
		put_fetch_response(c, ctx.version, hdr.correlation_id, ctx.response) :
		kp_conn_put_response(c, hdr.request_api_key, ctx.version,
							 hdr.correlation_id, ctx.response);

		if (start < 0)
		{
			/* not encodable at this version (logged): as Kafka, closed */
			ok = false;
			goto done;
		}
		if (fetch)
		{
			int64		now = kp_listener_now_ms();
			int64		bytes = out->len - start + kp_conn_pieces_bytes(c, mark);
			int64		t = kp_quota_record(c, 0, bytes, 0, true, now);

			/*
			 * Throttled (over consumer_byte_rate or request_percentage):
			 * Kafka takes the bytes back and answers without records, with
			 * the throttle time; the client fetches the same offsets later.
			 */
			throttle_ms = Max(throttle_ms, t);
			if (throttle_ms > 0)
			{
				KpFetchResponse *fr = ctx.response;

				kp_quota_unrecord_fetch(c, bytes, now);
				fr->throttle_time_ms = (int32) throttle_ms;
				fr->n_responses = 0;
				kp_conn_pieces_truncate(c, mark);

				/*
				 * its session answers every partition next time; a session
				 * this full fetch created is dropped, as Kafka creates none
				 */
				if (kp_fetch_session_throttled(c, fr->session_id))
					fr->session_id = 0;
				out->len = start;
				(void) kp_conn_put_response(c, hdr.request_api_key, ctx.version,
											hdr.correlation_id, ctx.response);
			}
		}

		/*
		 * The request committed locally: the response waits on the connection
		 * until the in-sync replicas have the commit.  A Produce that ran
		 * while earlier answers wait (server.c, conn_process) queues its
		 * answer behind theirs.
		 */
		if (!XLogRecPtrIsInvalid(commit_lsn) || kp_conn_answers_waiting(c))
		{
			bool		wait = kp_conn_answers_waiting(c);

			if (!XLogRecPtrIsInvalid(commit_lsn))
			{
				KpIsrPosition pos;

				kp_isr_position(&pos);
				if (commit_lsn > pos.confirmed)
					wait = true;
			}
			if (wait && kp_conn_pieces_mark(c) > mark)
			{
				/* the answer waits as bytes of its own: encoded again, whole */
				kp_conn_pieces_truncate(c, mark);
				out->len = start;
				(void) kp_conn_put_response(c, hdr.request_api_key, ctx.version,
											hdr.correlation_id, ctx.response);
			}
			if (wait)
			{
				kp_conn_wait_commit(c, out->data + start, out->len - start, commit_lsn);
				out->len = start;
				out->data[start] = '\0';
			}
		}
	}
	if (ctx.close_after_response)
		c->closing = true;		/* once the answer is sent */
	/* KIP-219: answered at once, then no request is read until then */
	if (throttle_ms > 0)
		kp_conn_mute(c, kp_listener_now_ms() + throttle_ms);

done:
	MemoryContextSwitchTo(oldcxt);
	if (cxt != NULL && cxt != request_cxt)
		MemoryContextDelete(cxt);
	dispatch_produce_cxt = NULL;
	MemoryContextReset(request_cxt);
	return ok;
}
