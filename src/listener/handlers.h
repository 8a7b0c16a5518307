/*-------------------------------------------------------------------------
 *
 * handlers.h
 *	  What a request handler sees (internal to src/listener).
 *
 * A handler gets the decoded request struct and a response struct already
 * filled with the response's defaults; it fills the response and returns.
 * It runs inside a Postgres transaction that the dispatcher commits after
 * it returns.  An ERROR it raises closes the connection (the client
 * reconnects and retries), so a handler turns expected failures (unknown
 * topic, bad config, ...) into the response's Kafka error codes instead;
 * kp_handler_try() runs catalog work in a subtransaction and maps its
 * SQLSTATE to the Kafka error code (class KP: the digits are the code).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_LISTENER_HANDLERS_H
#define KP_LISTENER_HANDLERS_H

#include "postgres.h"

#include "access/xlogdefs.h"
#include "catalog/kafka_catalog.h"
#include "protocol/protocol.h"

typedef struct KpRequestContext
{
	const KpRequestHeader *header;
	const KpApiEntry *api;
	int16		version;
	void	   *request;		/* the decoded request struct */
	void	   *response;		/* the response struct, defaults filled */
	const char *peer;			/* client address, for logs */
	struct KpConn *conn;		/* the connection (SASL handlers, share
								 * sessions) */
	const char *principal;		/* the authenticated role, or "ANONYMOUS" */
	Oid			principal_oid;	/* its OID; InvalidOid when anonymous */

	/* authz.c: the role the request is authorized as, resolved on first use */
	bool		authz_resolved;
	bool		authz_all;		/* allowed everything */
	Oid			authz_role;
	char		authz_host[64]; /* the client's address, for host ACLs */

	/* set by the handler */
	bool		no_response;	/* Produce with acks=0 */
	bool		close_after_response;	/* e.g. a failed authentication */
	bool		park;			/* wait (for data, for the group), then call
								 * again */
	int64		park_until_ms;	/* ... at the latest then */
	const char *park_cookie;	/* kept for the next call (a member id, a
								 * session's step), "" for none: set it with
								 * kp_set_park_cookie (any length: a member id
								 * is up to 32,767 bytes) */

	/*
	 * Produce acks=all (handlers_produce.c): answer once the in-sync replicas
	 * have the WAL up to ack_lsn, at the latest at ack_until_ms
	 * (REQUEST_TIMED_OUT then for the partitions still waiting).  The
	 * dispatcher keeps the response until then (server.c).
	 */
	XLogRecPtr	ack_lsn;
	int64		ack_until_ms;
	struct KpAckWait *ack_wait;

	/*
	 * A parked Fetch that stopped at a high watermark below the log end: also
	 * run again once the in-sync replicas' position reaches isr_wait_lsn (the
	 * WAL end of the oldest append that moves one of its high watermarks; on
	 * a hot standby, any replay past what it saw).
	 */
	bool		park_on_isr;
	XLogRecPtr	isr_wait_lsn;

	/*
	 * A parked Fetch (or ShareFetch) waits by partition
	 * (src/store/waiters.c): it is run again only when the change count of
	 * one of these wait buckets moves from what the handler read before it
	 * read the partition (or at its deadline, or for park_on_isr).  Other
	 * parked requests (park_keyed false) are run again on every wake-up.
	 */
	bool		park_keyed;
	int			park_nkeys;
	int		   *park_keys;		/* wait buckets, repeats allowed */
	uint64	   *park_seen;		/* their change counts as read */

	/* parked only to try a lock again (kp_handler_park_for_locks) */
	bool		park_for_lock;

	/*
	 * controller_mutation_rate (throttle.c, KIP-599): the throttle time a
	 * CreateTopics, CreatePartitions or DeleteTopics earned; the dispatcher
	 * sets it in the response and mutes the connection.
	 */
	int64		mutation_throttle_ms;

	/* set by the dispatcher */
	bool		final_attempt;	/* a parked request's last call: answer now */

	/*
	 * Run again after its first run failed reading the store (a damaged
	 * segment page: kp_storage_try): read each partition in a subtransaction,
	 * and answer one whose read fails KAFKA_STORAGE_ERROR.
	 */
	bool		storage_guard;

	/*
	 * A Produce's first run: what it appended to each partition, which a
	 * guarded run answers from rather than appending again
	 * (handlers_produce.c).  The dispatcher keeps it for that run.
	 */
	struct KpProduceLedger *produce_ledger;
	int64		received_ms;	/* when the request first arrived: a parked
								 * request's re-runs keep its first arrival,
								 * so deadlines measured from it stand */
	int64		quota_fetch_max_bytes;	/* a Fetch's cap under the client's
										 * consumer_byte_rate (throttle.c);
										 * -1: none */
} KpRequestContext;

typedef void (*KpHandlerFn) (KpRequestContext *ctx);

/* One partition of a Produce acks=all waiting for the in-sync replicas. */
typedef struct KpAckPartition
{
	XLogRecPtr	lsn;			/* the end of its batch's WAL */
	int16	   *error_code;		/* its error code in the kept response */
	int32		min_insync_replicas;	/* its topic's */
} KpAckPartition;

typedef struct KpAckWait
{
	int			n;
	KpAckPartition *parts;
} KpAckWait;

/*
 * A feature ApiVersions finalizes (KIP-584): supported from 0 to level and
 * finalized at level, which never changes (UpdateFeatures refuses a change).
 */
typedef struct KpFeature
{
	const char *name;
	int16		level;
} KpFeature;

/* handlers_core.c */
extern const KpFeature kp_features[];
extern const int kp_nfeatures;
extern void kp_handle_api_versions(KpRequestContext *ctx);
extern void kp_handle_metadata(KpRequestContext *ctx);
extern void kp_handle_produce(KpRequestContext *ctx);
extern void kp_handle_fetch(KpRequestContext *ctx);
extern void kp_handle_list_offsets(KpRequestContext *ctx);
extern void kp_handle_init_producer_id(KpRequestContext *ctx);
extern void kp_handle_describe_cluster(KpRequestContext *ctx);

/* handlers_group.c */
extern void kp_handle_find_coordinator(KpRequestContext *ctx);
extern void kp_handle_join_group(KpRequestContext *ctx);
extern void kp_handle_sync_group(KpRequestContext *ctx);
extern void kp_handle_heartbeat(KpRequestContext *ctx);
extern void kp_handle_leave_group(KpRequestContext *ctx);
extern void kp_handle_offset_commit(KpRequestContext *ctx);
extern void kp_handle_offset_fetch(KpRequestContext *ctx);
extern void kp_handle_describe_groups(KpRequestContext *ctx);
extern void kp_handle_list_groups(KpRequestContext *ctx);
extern void kp_handle_delete_groups(KpRequestContext *ctx);
extern void kp_handle_offset_delete(KpRequestContext *ctx);
extern void kp_handle_consumer_group_heartbeat(KpRequestContext *ctx);
extern void kp_handle_consumer_group_describe(KpRequestContext *ctx);

/* handlers_topics.c, handlers_configs.c, handlers_records.c */
extern void kp_handle_create_topics(KpRequestContext *ctx);
extern void kp_handle_delete_topics(KpRequestContext *ctx);
extern void kp_handle_create_partitions(KpRequestContext *ctx);
extern void kp_handle_describe_configs(KpRequestContext *ctx);
extern void kp_handle_alter_configs(KpRequestContext *ctx);
extern void kp_handle_incremental_alter_configs(KpRequestContext *ctx);
extern void kp_handle_delete_records(KpRequestContext *ctx);
extern void kp_handle_offset_for_leader_epoch(KpRequestContext *ctx);

/* handlers_describe_partitions.c */
extern void kp_handle_describe_topic_partitions(KpRequestContext *ctx);

/* handlers_cluster.c */
extern void kp_handle_elect_leaders(KpRequestContext *ctx);
extern void kp_handle_alter_partition_reassignments(KpRequestContext *ctx);
extern void kp_handle_list_partition_reassignments(KpRequestContext *ctx);
extern void kp_handle_describe_quorum(KpRequestContext *ctx);
extern void kp_handle_update_features(KpRequestContext *ctx);
extern void kp_handle_list_config_resources(KpRequestContext *ctx);

/*
 * throttle.c: controller_mutation_rate (KIP-599) for the partitions a
 * request creates or deletes.  Strict (the request versions since KIP-599):
 * kp_quota_mutation_refused says whether the client's token bucket is
 * already empty (the entry then gets THROTTLING_QUOTA_EXCEEDED); after a
 * mutation that went ahead, kp_quota_mutation_record takes its partitions
 * from the bucket (permissive, for older versions: only a throttle time).
 */
extern bool kp_quota_mutation_refused(KpRequestContext *ctx);
extern void kp_quota_mutation_record(KpRequestContext *ctx, double partitions, bool strict);

/* handlers_quotas.c */
extern void kp_handle_describe_client_quotas(KpRequestContext *ctx);
extern void kp_handle_alter_client_quotas(KpRequestContext *ctx);

/* handlers_scram.c */
extern void kp_handle_describe_user_scram_credentials(KpRequestContext *ctx);
extern void kp_handle_alter_user_scram_credentials(KpRequestContext *ctx);
extern void kp_alter_user_scram_credentials_refuse(KpRequestContext *ctx, int16 code,
												   const char *message);

/* handlers_logdirs.c */
extern void kp_handle_describe_log_dirs(KpRequestContext *ctx);
extern void kp_handle_alter_replica_log_dirs(KpRequestContext *ctx);

/* handlers_core.c: InitProducerId's id and epoch are both given or neither */
extern bool kp_init_producer_id_pair_valid(const KpInitProducerIdRequest *req);

/* handlers_txn.c: transactions over the wire */
extern void kp_handle_init_producer_id_txn(KpRequestContext *ctx);
extern void kp_handle_add_partitions_to_txn(KpRequestContext *ctx);
extern void kp_handle_add_offsets_to_txn(KpRequestContext *ctx);
extern void kp_handle_txn_offset_commit(KpRequestContext *ctx);
extern void kp_handle_end_txn(KpRequestContext *ctx);
extern void kp_handle_describe_transactions(KpRequestContext *ctx);
extern void kp_handle_list_transactions(KpRequestContext *ctx);
extern void kp_handle_describe_producers(KpRequestContext *ctx);

/* OffsetFetch require_stable: UNSTABLE_OFFSET_COMMIT where a transaction has pending offsets */
extern void kp_txn_mark_unstable_offsets(const char *group_id, KpOffsetFetchResponseGroup *group);

/* dispatch.c */

/* The handler for an API key, or NULL when the broker does not serve it. */
extern KpHandlerFn kp_handler_for(int16 api_key);

/*
 * Run fn(arg) in a subtransaction.  Returns KP_ERR_NONE, or the Kafka error
 * code its ERROR maps to (SQLSTATE KPnnn -> nnn, anything else
 * UNKNOWN_SERVER_ERROR) with the message in *message (palloc'd, may be
 * NULL).  The error is not re-thrown.
 */
extern int16 kp_handler_try(void (*fn) (void *arg), void *arg, char **message);

/*
 * The Kafka error code of a SQLSTATE, as kp_handler_try maps it
 * (ERRCODE_LOCK_NOT_AVAILABLE, a topic lock a worker found taken:
 * REQUEST_TIMED_OUT).
 */
extern int16 kp_handler_code_for_sqlstate(int sqlerrcode);

/*
 * ctx->park_cookie = a copy of cookie (NULL: none, "") that lasts until the
 * request's end
 */
extern void kp_set_park_cookie(KpRequestContext *ctx, const char *cookie);

/*
 * The reads and appends of a request run again after a storage error
 * (ctx->storage_guard, dispatch.c): fn(arg) in a subtransaction; NULL if it
 * returned, the error if the store's pages failed to read (a damaged page,
 * an I/O error, a missing file: what KAFKA_STORAGE_ERROR stands for) or, with
 * appending, to be written (the disk full; the partition's open-transaction
 * limit); any other ERROR is raised again, as in an unguarded run.
 */
extern ErrorData *kp_storage_try(void (*fn) (void *arg), void *arg, bool appending);

/*
 * The DBA's WARNING for a read or an append that failed so ("kafka_pg
 * listener: <what>: <the error>", detail, hint), at most once a minute per
 * *warned_ms.
 */
extern void kp_storage_warning(int64 *warned_ms, const ErrorData *edata, const char *what,
							   const char *detail, const char *hint);

/* the hint of a read's warning */
#define KP_STORAGE_READ_HINT \
	"Restore the partition from a backup, or move its log start past the damaged part (kafka-delete-records); see docs/durability.md. At most one such warning a minute is logged."

/*
 * The whole request refused: every entry of the response answered with code
 * and message (may be NULL), as Kafka's sendErrorResponseMaybeThrottle does
 * (CLUSTER_AUTHORIZATION_FAILED, say).
 */
extern void kp_refuse(KpRequestContext *ctx, int16 code, const char *message);

/*
 * Set while a request that is run again on a lock error runs (dispatch.c,
 * LOCK_RETRY_ROW): kp_handler_try raises ERRCODE_LOCK_NOT_AVAILABLE again
 * instead of answering it, so that the whole request is rolled back; not a
 * topic's lock refused (kp_topic_lock_refusals), which it answers
 * REQUEST_TIMED_OUT as for any request: the handler tried those locks first
 * and parked for them (kp_handler_lock_topics).
 */
extern bool kp_handler_rerun_on_lock;

/*
 * A worker waits for no lock a SQL transaction or the log cleaner may hold
 * (kp_topic_locks_nowait, kp_group_locks_nowait): a request that needs one
 * that is taken parks and runs again, after 1 ms at first and backing off to
 * every KP_LOCK_RETRY_MS (another worker's request holds such a lock for a
 * millisecond or so, a SQL transaction for as long as it lasts), until its
 * deadline, then answers an error for what is still locked: an admin request
 * its timeout_ms (KP_LOCK_WAIT_DEFAULT_MS when it has none, or it is 0 or
 * less: shorter than every client's own request timeout), REQUEST_TIMED_OUT.
 */
#define KP_LOCK_RETRY_MS 50
#define KP_LOCK_WAIT_DEFAULT_MS 5000

/*
 * Park the request (the handler then returns at once, having changed
 * nothing) to run again as above, unless its deadline has come: received_ms
 * + timeout_ms (KP_LOCK_WAIT_DEFAULT_MS if timeout_ms <= 0).  Whether it
 * parked.
 */
extern bool kp_handler_park_for_locks(KpRequestContext *ctx, int32 timeout_ms);

/*
 * Before an admin request changes topics (configs, partitions, records):
 * take the ShareUpdateExclusiveLock of each named topic that exists, if
 * free (held to the end of the request's transaction, so its changes find
 * them taken), and park as kp_handler_park_for_locks when one is not.
 * Names NULL or empty are skipped.  Whether it parked.
 */
extern bool kp_handler_lock_topics(KpRequestContext *ctx, char *const *names, int n,
								   int32 timeout_ms);

/*
 * A partition with no room for its state (kp_log_no_room, which logs the
 * DBA's WARNING): true, with KAFKA_STORAGE_ERROR's message in *message
 * (unless NULL).
 */
extern bool kp_handler_no_room(int64 partition_id, char **message);

/* authz.c: may the request's role do op on the resource? */
extern bool kp_authz(KpRequestContext *ctx, int resource_type, const char *name, int op);
extern bool kp_authz_cluster(KpRequestContext *ctx, int op);

/* op allowed on some resource of the type (Kafka's authorizeByResourceType) */
extern bool kp_authz_any(KpRequestContext *ctx, int resource_type, int op);

/* the request's role (a superuser when allowed everything), *host its address */
extern Oid	kp_authz_principal(KpRequestContext *ctx, const char **host);

/* the topic named, or t's name when asked by id (no topic: true) */
extern bool kp_authz_topic(KpRequestContext *ctx, const char *name, const KpTopic *t, int op);

/* Kafka's authorized-operations bits for the request's role */
extern int32 kp_authz_operations(KpRequestContext *ctx, int resource_type, const char *name);

/* the cluster-wide APIs' check; false: refused, the response is filled */
extern bool kp_authz_admit(KpRequestContext *ctx);

/* handlers_acls.c */
extern void kp_handle_create_acls(KpRequestContext *ctx);
extern void kp_handle_describe_acls(KpRequestContext *ctx);
extern void kp_handle_delete_acls(KpRequestContext *ctx);

/*
 * Authorized operations of a role allowed everything: everything a topic,
 * group or the cluster supports.  Bits are
 * AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7,
 * DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
 * IDEMPOTENT_WRITE 12.  Kafka's values: topic 3576, cluster 8096.
 */
#define KP_TOPIC_AUTHORIZED_OPERATIONS		3576
#define KP_CLUSTER_AUTHORIZED_OPERATIONS	8096
#define KP_GROUP_AUTHORIZED_OPERATIONS		((1 << 3) | (1 << 6) | (1 << 8))

/* The broker's identity, for Metadata and DescribeCluster. */
extern const char *kp_cluster_id(void);
extern const char *kp_advertised_host_name(void);
extern int	kp_advertised_port_number(void);

/*
 * replicas.c: the replicas, in-sync replicas and offline replicas of every
 * partition now (this server first), as node ids (docs/replication.md).
 */
typedef struct KpReplicas
{
	int			n_replicas;
	int32	   *replicas;
	int			n_isr;
	int32	   *isr;
	int			n_offline;
	int32	   *offline;
} KpReplicas;

extern void kp_replicas_now(KpReplicas *out);

/* A broker serving Kafka clients: node id and advertised listener. */
typedef struct KpBroker
{
	int32		node_id;
	char	   *host;
	int32		port;
	char	   *rack;			/* NULL: none */
} KpBroker;

/* The listed standbys streaming now, as brokers (replicas.c). */
extern int	kp_replica_brokers(KpBroker **out);
extern const char *kp_parse_broker_entry(const char *s, const char *end, int32 *node_id,
										 const char **host, int *host_len, int32 *port,
										 const char **rack, int *rack_len);

/* KIP-392: the standby a consumer of that rack reads from, or -1 (replicas.c) */
extern int32 kp_preferred_read_replica(const char *client_rack);
extern char *kp_broker_rack;

/*
 * Who leads and what every server reports (leader.c): on the primary its
 * own view, on a hot standby the primary's as published in kafka.leader.
 */
typedef struct KpClusterView
{
	bool		standby;		/* this server is a hot standby */
	int32		leader_id;		/* -1: none known (a standby, no row yet) */
	char	   *leader_host;
	int32		leader_port;
	int32		leader_epoch;	/* the primary's timeline less one */
	KpReplicas	reps;
	int			n_brokers;		/* the leader first */
	KpBroker   *brokers;
} KpClusterView;

extern void kp_cluster_view(KpClusterView *v);
extern int32 kp_leader_epoch(void);
extern bool kp_current_leader(KpBroker *leader, int32 *epoch);
extern bool kp_epoch_end_offset(int64 partition_id, int32 epoch, int32 current,
								const struct KpLogOffsets *off, int32 *end_epoch,
								int64 *end_offset, bool *final);
extern void kp_leader_define_settings(void);
extern int	kp_debug_leader_cache_ms;
extern void kp_leader_publish(void);
extern int	kp_standby_answer(KpRequestContext *ctx);
extern int64 kp_standby_producer_id(void);
extern int	kp_listener_worker_index;

/* The replicas of every partition: this server and the standbys listed. */
extern int	kp_replication_factor(void);
extern void kp_replicas_define_settings(void);

/* Open a topic for a request without raising an error when it is missing. */
extern const KpTopic *kp_handler_topic(const char *name, const KpUuid *topic_id);

/*
 * Commit the request's transaction and start another, in the request's
 * memory context.  durable: the commit is flushed first (what was decided
 * is durable before what depends on it); false: an asynchronous commit, for
 * a caller whose later WAL (which any flush covers first) is what depends
 * on it.
 */
extern void kp_handler_next_transaction(bool durable);

/* "/address" of a connection's "address:port" peer, as Kafka reports a member's host */
extern char *kp_peer_host(const char *peer);

#endif							/* KP_LISTENER_HANDLERS_H */
