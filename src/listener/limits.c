/*-------------------------------------------------------------------------
 *
 * limits.c
 *	  The listener's resource limits: their settings, and the count of open
 *	  connections per client address that max.connections and
 *	  max.connections.per.ip are checked against.
 *
 * Every listener worker accepts from the same port, so the counts live in
 * shared memory: a hash keyed by (client address, worker) under one LWLock,
 * each worker adding and removing its own connections.  Keyed by worker so
 * that a worker that restarts (an ERROR ends it; the postmaster starts it
 * again) can forget the counts of the connections that died with it.  The
 * hash has room for KP_CONN_ADDRESSES entries; a connection from a new
 * address while it is full is still counted in the total, only not per
 * address (and the log says so once).
 *
 * A connection over a cap is closed right after accept, as Kafka closes one
 * over max.connections.per.ip (ConnectionQuotas); refusals are logged at
 * most once a second per worker, with their count, so that a flood of
 * connections cannot flood the log.  Kafka does not close a connection over
 * max.connections but stops accepting until one closes; kafka_pg closes it,
 * so the client learns at once and the accept queue stays short.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/hsearch.h"

#include "listener/listener.h"
#include "listener/listener_int.h"

/* settings */
int			kp_fetch_max_bytes = 57671680;	/* 55 MiB, Kafka's default */
int			kp_max_connections = INT_MAX;
int			kp_max_connections_per_ip = INT_MAX;
int			kp_connection_output_max_bytes = 134217728;

#define KP_CONN_ADDRESSES	8192
#define KP_MAX_WORKERS		64	/* kafka.listener_workers' upper bound */

typedef struct KpAddrKey
{
	uint8		addr[16];		/* IPv6, or IPv4 mapped into it */
	int32		worker;
} KpAddrKey;

typedef struct KpAddrCount
{
	KpAddrKey	key;
	int32		count;
} KpAddrCount;

typedef struct KpConnShared
{
	LWLock	   *lock;			/* guards everything here */
	int32		worker_total[KP_MAX_WORKERS];
} KpConnShared;

static KpConnShared *conn_shared = NULL;
static HTAB *addr_hash = NULL;
static int	my_worker = -1;

/* refusals not logged yet (at most one line a second) */
static int64 refused_since_log = 0;
static int64 last_refusal_log_ms = 0;
static bool table_full_logged = false;

void
kp_listener_limits_init(void)
{
	DefineCustomIntVariable("kafka.fetch_max_bytes",
							"Most record bytes one Fetch response returns (Kafka's broker fetch.max.bytes).",
							"A Fetch's own max_bytes is capped by it; the first batch is returned even if larger (KIP-74).",
							&kp_fetch_max_bytes, 57671680, 1024, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_BYTE, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.max_connections",
							"Most Kafka client connections open at once, over all listener workers (Kafka's max.connections).",
							"Connections over it are closed when accepted.",
							&kp_max_connections, INT_MAX, 0, INT_MAX,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.max_connections_per_ip",
							"Most Kafka client connections open at once from one address (Kafka's max.connections.per.ip).",
							"Connections over it are closed when accepted.",
							&kp_max_connections_per_ip, INT_MAX, 0, INT_MAX,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.connection_output_max_bytes",
							"Most response bytes a connection may leave unread before it is closed.",
							"A connection stops being read while 16 MB of its responses are unsent, so this is "
							"passed only by a client that stops reading; it must exceed kafka.fetch_max_bytes.",
							&kp_connection_output_max_bytes, 134217728, 1048576, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_BYTE, NULL, NULL, NULL);
	kp_quota_init();
}

Size
kp_listener_shmem_size(void)
{
	return add_size(add_size(MAXALIGN(sizeof(KpConnShared)),
							 hash_estimate_size(KP_CONN_ADDRESSES, sizeof(KpAddrCount))),
					add_size(add_size(kp_quota_shmem_size(), kp_share_sessions_shmem_size()),
							 kp_wal_flusher_shmem_size()));
}

void
kp_listener_request_locks(void)
{
	RequestNamedLWLockTranche("kafka_pg listener connections", 1);
	kp_quota_request_locks();
	kp_share_sessions_request_locks();
}

void
kp_listener_shmem_init(void)
{
	HASHCTL		info;
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	conn_shared = ShmemInitStruct("kafka_pg listener connections", sizeof(KpConnShared), &found);
	if (!found)
	{
		memset(conn_shared, 0, sizeof(KpConnShared));
		conn_shared->lock = &(GetNamedLWLockTranche("kafka_pg listener connections"))->lock;
	}
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(KpAddrKey);
	info.entrysize = sizeof(KpAddrCount);
	addr_hash = ShmemInitHash("kafka_pg listener connections per address",
							  KP_CONN_ADDRESSES, KP_CONN_ADDRESSES, &info,
							  HASH_ELEM | HASH_BLOBS);
	kp_quota_shmem_init();
	kp_share_sessions_shmem_init();
	kp_wal_flusher_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}

/*
 * A listener worker starts: the counts of a previous incarnation of it are
 * of connections that closed when it ended.
 */
void
kp_conn_limits_worker_start(int worker)
{
	HASH_SEQ_STATUS seq;
	KpAddrCount *e;

	my_worker = worker;
	LWLockAcquire(conn_shared->lock, LW_EXCLUSIVE);
	conn_shared->worker_total[worker] = 0;
	hash_seq_init(&seq, addr_hash);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (e->key.worker == worker)
			hash_search(addr_hash, &e->key, HASH_REMOVE, NULL);
	LWLockRelease(conn_shared->lock);
}

static void
addr_key(const struct sockaddr_storage *addr, KpAddrKey *key)
{
	memset(key, 0, sizeof(*key));
	key->worker = my_worker;
	if (addr->ss_family == AF_INET)
	{
		key->addr[10] = 0xff;
		key->addr[11] = 0xff;
		memcpy(&key->addr[12], &((const struct sockaddr_in *) addr)->sin_addr, 4);
	}
	else if (addr->ss_family == AF_INET6)
		memcpy(key->addr, &((const struct sockaddr_in6 *) addr)->sin6_addr, 16);
}

static void
log_refusal(const char *peer, const char *why, int limit)
{
	int64		now = kp_listener_now_ms();

	refused_since_log++;
	if (now - last_refusal_log_ms < 1000)
		return;
	ereport(LOG,
			(errmsg("kafka_pg listener: refused connection from %s: %s (%d)",
					peer, why, limit),
			 refused_since_log > 1 ?
			 errdetail("%lld connections were refused since the last such message.",
					   (long long) refused_since_log) : 0));
	refused_since_log = 0;
	last_refusal_log_ms = now;
}

/*
 * Count a connection just accepted; false (and a log line) if it is over
 * kafka.max_connections or kafka.max_connections_per_ip: the caller closes
 * it then.  On true, c->limits_counted tells kp_conn_limits_release to
 * give the connection back.
 */
bool
kp_conn_limits_admit(KpConn *c, const struct sockaddr_storage *addr)
{
	KpAddrKey	key;
	int64		total = 0;
	int64		same_addr = 0;
	int			w;
	KpAddrCount *e;
	bool		found;

	addr_key(addr, &key);
	LWLockAcquire(conn_shared->lock, LW_EXCLUSIVE);
	for (w = 0; w < Min(kp_listener_workers, KP_MAX_WORKERS); w++)
	{
		KpAddrKey	k = key;

		total += conn_shared->worker_total[w];
		k.worker = w;
		e = hash_search(addr_hash, &k, HASH_FIND, NULL);
		if (e)
			same_addr += e->count;
	}
	if (total >= kp_max_connections)
	{
		LWLockRelease(conn_shared->lock);
		log_refusal(c->peer, "kafka.max_connections reached", kp_max_connections);
		return false;
	}
	if (same_addr >= kp_max_connections_per_ip)
	{
		LWLockRelease(conn_shared->lock);
		log_refusal(c->peer, "the address already has kafka.max_connections_per_ip connections",
					kp_max_connections_per_ip);
		return false;
	}
	conn_shared->worker_total[my_worker]++;
	e = hash_search(addr_hash, &key, HASH_ENTER_NULL, &found);
	if (e)
	{
		if (!found)
			e->count = 0;
		e->count++;
		memcpy(c->limits_addr, key.addr, 16);
		c->limits_per_addr = true;
	}
	LWLockRelease(conn_shared->lock);
	if (e == NULL && !table_full_logged)
	{
		ereport(LOG,
				(errmsg("kafka_pg listener: connections from more than %d addresses: kafka.max_connections_per_ip is not applied to the connection from %s",
						KP_CONN_ADDRESSES, c->peer)));
		table_full_logged = true;
	}
	c->limits_counted = true;
	return true;
}

/* Give back what kp_conn_limits_admit counted for a connection that closes. */
void
kp_conn_limits_release(KpConn *c)
{
	KpAddrKey	key;
	KpAddrCount *e;

	if (!c->limits_counted)
		return;
	LWLockAcquire(conn_shared->lock, LW_EXCLUSIVE);
	conn_shared->worker_total[my_worker]--;
	if (c->limits_per_addr)
	{
		memset(&key, 0, sizeof(key));
		memcpy(key.addr, c->limits_addr, 16);
		key.worker = my_worker;
		e = hash_search(addr_hash, &key, HASH_FIND, NULL);
		if (e && --e->count <= 0)
			hash_search(addr_hash, &key, HASH_REMOVE, NULL);
	}
	LWLockRelease(conn_shared->lock);
	c->limits_counted = false;
}
