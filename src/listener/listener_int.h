/*-------------------------------------------------------------------------
 *
 * listener_int.h
 *	  Connection state shared by server.c and dispatch.c (src/listener only).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_LISTENER_INT_H
#define KP_LISTENER_INT_H

#include "postgres.h"
#include "access/xlogdefs.h"
#include "lib/stringinfo.h"

/* The client quotas that apply to a connection (throttle.c) */
typedef enum KpQuotaKind
{
	KP_QUOTA_PRODUCE,			/* producer_byte_rate */
	KP_QUOTA_CONSUME,			/* consumer_byte_rate */
	KP_QUOTA_REQUEST,			/* request_percentage */
	KP_QUOTA_MUTATION,			/* controller_mutation_rate (a token bucket) */
	KP_QUOTA_KINDS
} KpQuotaKind;

typedef struct KpQuotaState
{
	bool		active;			/* some kind has a bound */
	uint64		generation;		/* of the quotas it was resolved from */
	uint64		client_hash;	/* of the client id it was resolved for */
	double		bound[KP_QUOTA_KINDS];	/* 0: no quota of the kind */
	char		tag_user[KP_QUOTA_KINDS][NAMEDATALEN];	/* the sensor's tags */
	uint64		tag_client_hash[KP_QUOTA_KINDS];
} KpQuotaState;

struct KpAckEntry;				/* server.c */
struct KpAckWait;				/* handlers.h */

typedef struct KpConn
{
	struct KpConn *next;
	int			fd;
	uint64		id;
	char		peer[64];
	StringInfoData in;			/* bytes received, from in_pos on unread */
	int			in_pos;
	StringInfoData out;			/* bytes to send, from out_pos on */
	int			out_pos;
	int			out_kept;		/* out.maxlen if out counts against the
								 * worker's large-buffer allowance
								 * (conn_flush), else 0 */

	/*
	 * Bytes sent by reference (server.c, conn_flush): each piece goes out
	 * where its place in out is reached, from pieces[piece_next] (piece_off
	 * of its bytes sent) on; pieces_unsent counts their bytes not sent.
	 */
	struct KpOutPiece *pieces;
	int			npieces;
	int			maxpieces;
	int			piece_next;
	int			piece_off;
	int64		pieces_unsent;
	bool		want_read;		/* current epoll interest */
	bool		want_write;
	bool		closing;		/* close once the output is sent */
	int64		last_active_ms;
	/* a parked request (long-poll fetch), re-run when data comes */
	char	   *parked_frame;
	int			parked_len;
	int64		park_until_ms;
	int64		parked_received_ms; /* when the parked request first arrived */
	char	   *park_cookie;	/* the handler's note for its next call (in
								 * listener_cxt), or NULL */
	bool		park_lock_retry;	/* parked only to try a group lock again */
	int64		lock_busy_since_ms; /* ... which it first found taken then */
	bool		park_on_isr;	/* ... and when the ISR's position reaches */
	XLogRecPtr	park_isr_lsn;	/* this one (a Fetch below a high watermark) */
	XLogRecPtr	park_commit_lsn;	/* what its earlier runs committed */
	/* a parked Fetch: the wait buckets it watches (server.c); -1: not keyed */
	int			park_nkeys;
	int		   *park_keys;
	uint64	   *park_seen;
	/* its incremental fetch sessions (fetch_session.c), which die with it */
	struct KpFetchSession *fetch_sessions;

	/*
	 * Answers waiting for the in-sync replicas, in request order (server.c,
	 * run_acks): a Produce acks=all's response until they have its WAL (or
	 * its timeout_ms), any other request whose transaction committed (an
	 * OffsetCommit, a JoinGroup, CreateTopics...) with its response already
	 * encoded until they have its commit record, with no deadline
	 * (kp_conn_wait_commit), and any answer queued behind those.  While the
	 * first waits, later Produce requests of the connection still run (their
	 * appends join the same WAL flush) and their answers queue behind it; any
	 * other request waits until the queue is empty, as behind a parked one.
	 */
	struct KpAckEntry *acks;	/* NULL: nothing waits */
	struct KpAckEntry *acks_last;
	int			nacks;
#ifdef KP_TRACE_LATENCY
	int64		trace_read_us;
#endif
	/* counted against max.connections (limits.c) */
	bool		limits_counted;
	bool		limits_per_addr;	/* ... and max.connections.per.ip */
	uint8		limits_addr[16];

	/*
	 * Who the client is (sasl.c): the PostgreSQL role it authenticated as, or
	 * "ANONYMOUS" with InvalidOid on a PLAINTEXT listener and before
	 * authentication.  Re-authentication (KIP-368) may not change it.
	 */
	char		principal[NAMEDATALEN];
	Oid			principal_oid;
	struct KpSaslSession *sasl; /* SASL state; NULL on a PLAINTEXT listener */
	void	   *tls;			/* OpenSSL's SSL (tls.c); NULL without TLS */
	bool		tls_checked;	/* the client certificate was looked at */
	bool		cert_pending;	/* cert_cn is to become the principal */
	char		cert_cn[NAMEDATALEN];	/* its subject CN (SSL listeners) */
	/* client quotas (throttle.c): no request is read or run until then */
	int64		muted_until_ms;
	KpQuotaState quota;
} KpConn;

/* server.c */
extern void kp_conn_send(KpConn *c, const char *data, int len);

/* The connection's output buffer, to append a response to directly. */
extern StringInfo kp_conn_output(KpConn *c);

/*
 * Bytes to send by reference, not copied: len bytes at data go out right
 * after what the connection's output holds now.  They must stay as they are
 * until release(owner) is called: once they are sent, or the connection
 * closes, or kp_conn_pieces_truncate takes them back.
 */
typedef struct KpOutPiece
{
	int			at;				/* their place: before out.data[at] */
	const char *data;
	int			len;
	void		(*release) (void *owner);
	void	   *owner;
} KpOutPiece;

extern void kp_conn_add_piece(KpConn *c, const char *data, int len,
							  void (*release) (void *owner), void *owner);

/* the number of pieces so far, a mark for the two below */
extern int	kp_conn_pieces_mark(KpConn *c);

/* the bytes of the pieces added since mark */
extern int64 kp_conn_pieces_bytes(KpConn *c, int mark);

/* take back (release) the pieces added since mark, none of them sent yet */
extern void kp_conn_pieces_truncate(KpConn *c, int mark);

/*
 * handlers_fetch.c: while on, a Fetch response encoded into c's output
 * sends its records by reference to the worker's records buffer
 * (kp_records_sink), which the connection then holds until they are sent.
 */
extern void kp_fetch_send_by_reference(KpConn *c, bool on);

/*
 * Park the request in frame: run it again at until_ms, or when woken.
 * nkeys >= 0: a Fetch woken only by changes to the wait buckets keys
 * (src/store/waiters.c) from the counts seen; -1: by every wake-up.
 */
extern void kp_conn_park(KpConn *c, const uint8 *frame, int len, int64 received_ms,
						 int64 until_ms, const char *cookie, bool on_isr,
						 XLogRecPtr isr_lsn, int nkeys, const int *keys,
						 const uint64 *seen);
extern int64 kp_listener_now_ms(void);

/*
 * Keep a Produce acks=all response (allocated in cxt, which the connection
 * now owns) until the in-sync replicas have lsn.
 */
extern void kp_conn_wait_ack(KpConn *c, MemoryContext cxt, void *response,
							 struct KpAckWait *wait, XLogRecPtr lsn, int64 until_ms,
							 int32 correlation_id, int16 version);

/*
 * Keep an encoded response (len bytes, its size first) until the in-sync
 * replicas have lsn, the end of the commit record of the request's
 * transaction (InvalidXLogRecPtr: only until the answers before it go).
 */
extern void kp_conn_wait_commit(KpConn *c, const char *bytes, int len, XLogRecPtr lsn);

/* Do answers of this connection wait for the in-sync replicas? */
static inline bool
kp_conn_answers_waiting(KpConn *c)
{
	return c->acks != NULL;
}

/*
 * Encode a response (after its 4-byte size) into the connection's output;
 * where its frame starts there, or -1 (logged, nothing added) when a string
 * is longer than the version's int16 length can carry: the caller closes
 * the connection, as Kafka's serializer refuses such an answer.
 */
extern int	kp_conn_put_response(KpConn *c, int16 api_key, int16 version,
								 int32 correlation_id, void *response);

/* limits.c */
struct sockaddr_storage;
extern void kp_listener_limits_init(void);
extern void kp_conn_limits_worker_start(int worker);
extern bool kp_conn_limits_admit(KpConn *c, const struct sockaddr_storage *addr);
extern void kp_conn_limits_release(KpConn *c);

/* throttle.c */
struct KpApiEntry;
extern void kp_quota_init(void);
extern Size kp_quota_shmem_size(void);
extern void kp_quota_request_locks(void);
extern void kp_quota_shmem_init(void);
extern Size kp_share_sessions_shmem_size(void);
extern void kp_share_sessions_request_locks(void);
extern void kp_share_sessions_shmem_init(void);
extern int64 kp_quota_prepare(KpConn *c, const char *client_id);
extern int64 kp_quota_record(KpConn *c, double produce_bytes, double fetch_bytes,
							 double request_ms, bool exempt, int64 now);
extern void kp_quota_unrecord_fetch(KpConn *c, double fetch_bytes, int64 now);
extern bool kp_quota_set_throttle(const struct KpApiEntry *api, int version, void *response,
								  int32 throttle_ms);
extern void kp_conn_mute(KpConn *c, int64 until_ms);

/* flusher.c: the WAL flusher (flushes the WAL for the workers) */
extern int	kp_debug_wal_flush_delay_ms;
extern bool kp_wal_flusher_enabled;
extern Size kp_wal_flusher_shmem_size(void);
extern void kp_wal_flusher_shmem_init(void);
extern void kp_wal_flusher_define_settings(void);
extern void kp_wal_flusher_register(void);

/* Flush the WAL up to lsn (at most what is inserted) in this process. */
extern void kp_wal_flush(XLogRecPtr lsn);

/* Flush what is inserted, for an answer with high watermarks now. */
extern void kp_wal_flush_for_readers(void);

/* Once per worker, before the calls below. */
extern void kp_wal_flush_register_waiter(void);

/*
 * Ask the flusher to flush up to lsn; false: no flusher runs, flush
 * yourself (kp_wal_flush).
 */
extern bool kp_wal_flush_request(XLogRecPtr lsn);

typedef enum KpFlushWake
{
	KP_FLUSH_DONE,				/* flushed already */
	KP_FLUSH_ARMED,				/* the flusher sets our latch once it is */
	KP_FLUSH_SELF				/* no flusher: flush yourself */
} KpFlushWake;

/* Have our latch set once the WAL is flushed to lsn (and ask for it). */
extern KpFlushWake kp_wal_flush_wake_at(XLogRecPtr lsn);

#ifdef KP_TRACE_LATENCY
/* flusher.c: the hand-off's trace, a ring in shared memory */
#define KP_FTRACE_SIZE 65536
typedef struct KpFtraceEvent
{
	int64		t;				/* kp_trace_us() */
	int16		who;			/* -1 the flusher, else a worker's slot */
	int16		ev;				/* KpFtraceKind */
	uint64		a;
	uint64		b;
} KpFtraceEvent;
typedef enum KpFtraceKind
{
	KP_FT_F_LOOK,				/* flusher read the request: a request, b
								 * flushed */
	KP_FT_F_FLUSHED,			/* flusher flushed: a flushed now, b its us */
	KP_FT_F_SET,				/* flusher set a worker's latch: a slot, b its
								 * lsn */
	KP_FT_F_MOVED,				/* ... the slot moved meanwhile: a slot, b lsn */
	KP_FT_F_SLEEP,				/* flusher sleeps: a request, b flushed */
	KP_FT_W_REQUEST,			/* worker raised the request: a lsn, b before */
	KP_FT_W_ARMED,				/* worker published its wake-up: a lsn, b
								 * request */
	KP_FT_W_SLEEP,				/* worker sleeps: a timeout ms, b first ack
								 * lsn */
	KP_FT_W_WOKE,				/* worker woke: a latch set, b events */
	KP_FT_W_SLOW				/* a slow answer: a its lsn, b us since
								 * appended */
} KpFtraceKind;
extern void kp_ftrace(int ev, uint64 a, uint64 b);
extern int	kp_ftrace_read(int64 from_us, KpFtraceEvent *out, int max);
extern int	kp_ftrace_self(void);
extern int64 kp_ftrace_set_at(void);
extern void kp_ftrace_hist_add(int64 *hist, int64 us);
extern char *kp_ftrace_hist_str(int64 *hist);
#endif

/* dispatch.c */
extern void kp_dispatch_init(MemoryContext parent);
#ifdef KP_TRACE_LATENCY
extern int64 kp_trace_us(void);
extern int64 kp_trace_disp_us;
#endif

/*
 * Handle one request frame (without its size prefix); the response goes to
 * the connection's output.  final: a parked request's last chance.
 * Returns false when the connection must be closed.
 */
extern bool kp_dispatch_frame(KpConn *c, uint8 *frame, int len, bool final);

/* A request's client id as the server log shows it: cleaned and cut. */
extern const char *kp_log_client_id(const char *client_id);

#endif							/* KP_LISTENER_INT_H */
