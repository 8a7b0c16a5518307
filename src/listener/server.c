/*-------------------------------------------------------------------------
 *
 * server.c
 *	  Listener workers: sockets, connections, framing, the event loop.
 *
 * The postmaster binds the Kafka port; every worker inherits the socket and
 * accepts from it (EPOLLEXCLUSIVE: one worker wakes per connection), and
 * runs one non-blocking loop: an epoll set of its connections (plus the listening
 * socket) sits inside a Postgres WaitEventSet beside the worker's latch, so
 * the loop wakes for network traffic, for appends that parked fetches wait
 * for, and for postmaster death alike.
 *
 * Framing is Kafka's: a 4-byte big-endian size, then the request.  Sizes
 * outside 1..socket.request.max.bytes close the connection before a byte of
 * the body is buffered.  Requests of one connection are handled one at a
 * time in arrival order; a parked fetch (long poll) holds back the requests
 * behind it, and answers waiting for the WAL flush hold back all but later
 * Produce requests (whose answers queue behind theirs), so responses always
 * go out in request order.  A connection
 * whose output backs up is not read until it drains: a slow client slows
 * only itself; one that stops reading is closed when its unsent output
 * passes kafka.connection_output_max_bytes, or when nothing was sent to it
 * or read from it for connections.max.idle.ms.  Connections over
 * max.connections or max.connections.per.ip are closed as they are
 * accepted (limits.c).  When accept fails for want of file descriptors
 * (EMFILE, ENFILE) the worker stops accepting for a moment instead of
 * retrying in a loop.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/pmsignal.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "listener/fetch_session.h"
#include "listener/handlers.h"
#include "listener/handlers_share.h"
#include "listener/listener.h"
#include "listener/listener_int.h"
#include "listener/sasl.h"
#include "listener/tls.h"
#include "common/settings.h"
#include "common/workers.h"
#include "store/store.h"

/* settings */
char	   *kp_listen_address = NULL;
int			kp_port = 9092;
char	   *kp_advertised_host = NULL;
int			kp_advertised_port = 0;
int			kp_listener_workers = 2;
int			kp_socket_request_max_bytes = 104857600;
int			kp_connections_max_idle_ms = 600000;
bool		kp_auto_create_topics_enable = true;
int			kp_num_partitions = 1;
int			kp_node_id = 0;
int			kp_listener_worker_index = -1;	/* this worker's number */

#define MAX_EVENTS			64
#define READ_CHUNK			65536
#define OUTPUT_BACKLOG_MAX	(16 * 1024 * 1024)	/* stop reading above this */
#define SEND_IOV_MAX		64	/* pieces of output per sendmsg */

static MemoryContext listener_cxt = NULL;
static KpConn *connections = NULL;
static int	nconnections = 0;
static int	epfd = -1;
static int	listen_fd = -1;
static uint64 next_conn_id = 1;
static int	waiter_slot = -1;
static int	nacks_waiting = 0;	/* answers waiting for the in-sync replicas,
								 * on all connections (KpAckEntry) */
static uint32 *bucket_refs = NULL;	/* per wait bucket (src/store/waiters.c):
									 * parked fetches watching it */

/* accepting paused after EMFILE/ENFILE until then (0: accepting) */
#define ACCEPT_BACKOFF_MS	500
static int64 accept_paused_until_ms = 0;
static bool accept_failure_logged = false;

/*
 * An answer waiting for the in-sync replicas (run_acks), in its connection's
 * queue (KpConn.acks): a Produce acks=all's response, kept decoded so that
 * the partitions still waiting at its timeout get their error codes, or an
 * encoded response that waits for its request's commit record, or only for
 * the answers before it.  The entry and what it keeps live in cxt.
 */
typedef struct KpAckEntry
{
	struct KpAckEntry *next;
	MemoryContext cxt;
	void	   *response;		/* KpProduceResponse, or NULL */
	struct KpAckWait *wait;		/* ... and its partitions */
	char	   *bytes;			/* or the encoded response */
	int			bytes_len;
	XLogRecPtr	lsn;			/* answered once the ISR has it (Invalid: at
								 * once) */
	int64		until_ms;		/* ... or then */
	int32		correlation_id;
	int16		version;
#ifdef KP_TRACE_LATENCY
	int64		trace_read_us;
	int64		trace_disp_us;
	int64		trace_done_us;
#endif
} KpAckEntry;

/*
 * How many answers a connection may have waiting before its next Produce
 * waits too (a client's max.in.flight.requests.per.connection is 5 by
 * default; this bounds the memory of a client that pipelines more).
 */
#define ACK_PIPELINE_MAX	32

static bool open_listen_socket(int elevel, bool do_listen);
static void park_unwatch(int nkeys, const int *keys);
static void ack_queue_free(KpConn *c);

#ifdef KP_TRACE_LATENCY
/*
 * Latency tracing for developers (make COPT=-DKP_TRACE_LATENCY;
 * docs/performance.md, bench/tuning/walinit.sh): the worker logs each WAL
 * flush it makes of 2 ms or more or across a segment boundary, a histogram
 * of all of them every 10 s, and each acks=all answer sent 5 ms or more
 * after its request was read, with where the time went.  Timestamps are
 * CLOCK_MONOTONIC microseconds, the clock of Java's System.nanoTime.
 *
 * With the WAL flusher (kafka.wal_flusher) the hand-off is traced too
 * (flusher.c's ring of events): each answer sent 10 ms or more after its
 * append is logged as "kp_trace slow_ack" with when its flush was asked
 * for, when the flush that covered it ended, when the flusher set our latch,
 * when this worker ran again and answered (trace_slow_ack), and every 10 s
 * "kp_trace ack_hist" counts them by where most of their time went, and
 * "kp_trace worker_hist" / "flusher_hist" give how long each process took
 * to run after the other woke it (the scheduler's share) and the flushes'
 * durations.  docs/performance.md ("The WAL flusher's acknowledgement
 * tail") reads them.
 */
int64
kp_trace_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
static int64 trace_hist[8];
static int64 trace_last_flush_end = 0;
static int64 trace_turn_woke_us = 0;	/* when this turn's wait returned */
static bool trace_turn_latch = false;	/* ... with our latch set */
static KpFtraceEvent *trace_evs = NULL;
static int64 trace_dumped_at = 0;
static int64 trace_slow[6];		/* slow answers by where their time went */
static int64 trace_answered = 0;
static int64 trace_slow_at = 0;
static int64 trace_sleep_at = 0;
static int64 trace_wake_hist[7];	/* the flusher set our latch -> we ran */

#define TRACE_EVS 16384
static const char *const ftrace_names[] = {
	"F_LOOK", "F_FLUSHED", "F_SET", "F_MOVED", "F_SLEEP",
	"W_REQUEST", "W_ARMED", "W_SLEEP", "W_WOKE", "W_SLOW"
};

/*
 * A slow acks=all answer (10 ms or more after its append): where its time
 * went, from the hand-off's trace (flusher.c).  From the append on:
 * "requested" when a flush request covering it was first seen (the worker's
 * or the flusher's look at the request), "covered" when the first flush
 * that reached it ended (the flusher's, or this worker's own, inline),
 * "latch" when the flusher set this worker's latch after that, "woke" when
 * the turn that answered began, and the worker's last sleep before it.
 * Counted by the largest share: waiting for the flush to start, the flush
 * itself, the wake-up (covered -> woke), the turn (woke -> answered).  Once
 * every 2 s the events around a slow answer are logged whole.
 */
static void
trace_slow_ack(KpAckEntry *e, int64 t)
{
	int			n;
	int			me = kp_ftrace_self();
	int64		requested = -1,
				covered = -1,
				latch = -1,
				flush_start = -1,
				last_sleep_t = -1,
				last_sleep_ms = -1;
	int64		nflush = 0,
				maxflush = 0;
	int64		parts[4];
	int			cat = 0;
	int			i;

	trace_answered++;
	if (t - e->trace_done_us < 10000)
		goto hist;
	if (trace_evs == NULL)
		trace_evs = MemoryContextAlloc(TopMemoryContext, sizeof(KpFtraceEvent) * TRACE_EVS);
	n = kp_ftrace_read(e->trace_done_us - 200000, trace_evs, TRACE_EVS);
	for (i = 0; i < n; i++)
	{
		KpFtraceEvent *v = &trace_evs[i];

		if (v->t < e->trace_done_us)
		{
			/* before the append: only the flush in progress then counts */
			if (v->ev == KP_FT_F_FLUSHED)
				flush_start = -1;
			else if (v->ev == KP_FT_F_LOOK && v->a > v->b)
				flush_start = v->t;
			continue;
		}
		if (requested < 0 &&
			((v->ev == KP_FT_W_REQUEST && v->a >= e->lsn) ||
			 (v->ev == KP_FT_F_LOOK && v->a >= e->lsn)))
			requested = v->t;
		if (v->ev == KP_FT_F_FLUSHED && covered < 0)
		{
			nflush++;
			maxflush = Max(maxflush, (int64) v->b);
			if (v->a >= e->lsn)
				covered = v->t;
		}
		if (v->ev == KP_FT_F_SET && v->who == -1 && (int) v->a == me &&
			covered >= 0 && latch < 0)
			latch = v->t;
		if (v->ev == KP_FT_W_SLEEP && v->who == me && v->t <= trace_turn_woke_us)
		{
			last_sleep_t = v->t;
			last_sleep_ms = v->a;
		}
	}
	/* this worker's own flush (no flusher) */
	if (covered < 0 && trace_last_flush_end >= e->trace_done_us)
		covered = trace_last_flush_end;
	if (covered < 0)
		covered = trace_turn_woke_us;
	if (requested < 0)
		requested = e->trace_done_us;
	parts[0] = Max(0, requested - e->trace_done_us);
	parts[1] = Max(0, covered - requested);
	parts[2] = Max(0, trace_turn_woke_us - covered);
	parts[3] = Max(0, t - Max(trace_turn_woke_us, covered));
	for (i = 1; i < 4; i++)
		if (parts[i] > parts[cat])
			cat = i;
	trace_slow[cat]++;
	if (t - e->trace_done_us >= 50000)
		trace_slow[4]++;
	elog(LOG, "kp_trace slow_ack lsn %llX read %lld appended_us %lld requested_us %lld covered_us %lld latch_us %lld woke_us %lld answered_us %lld latch_turn %d flushes %lld max_flush_us %lld last_sleep_us %lld sleep_ms %lld flush_in_progress_us %lld cat %d",
		 (unsigned long long) e->lsn, (long long) e->trace_read_us,
		 (long long) (e->trace_done_us - e->trace_read_us),
		 (long long) (requested - e->trace_done_us),
		 (long long) (covered - e->trace_done_us),
		 (long long) (latch < 0 ? -1 : latch - e->trace_done_us),
		 (long long) (trace_turn_woke_us - e->trace_done_us),
		 (long long) (t - e->trace_done_us),
		 trace_turn_latch ? 1 : 0,
		 (long long) nflush, (long long) maxflush,
		 (long long) (last_sleep_t < 0 ? -1 : last_sleep_t - e->trace_done_us),
		 (long long) last_sleep_ms,
		 (long long) (flush_start < 0 ? -1 : e->trace_done_us - flush_start),
		 cat);
	if (t - e->trace_done_us >= 20000 && t - trace_dumped_at > 2000000)
	{
		StringInfoData buf;
		int			from = 0;

		trace_dumped_at = t;
		initStringInfo(&buf);
		while (from < n && trace_evs[from].t < e->trace_done_us - 5000)
			from++;
		for (i = from; i < n && i < from + 600; i++)
		{
			KpFtraceEvent *v = &trace_evs[i];

			appendStringInfo(&buf, "\n  %+lld %d %s %llX %llX",
							 (long long) (v->t - e->trace_done_us), v->who,
							 v->ev >= 0 && v->ev <= KP_FT_W_SLOW ? ftrace_names[v->ev] : "?",
							 (unsigned long long) v->a, (unsigned long long) v->b);
		}
		elog(LOG, "kp_trace slow_ack_events lsn %llX (worker slot %d, times in us from its append):%s",
			 (unsigned long long) e->lsn, me, buf.data);
		pfree(buf.data);
	}
hist:
	if (trace_slow_at == 0)
		trace_slow_at = t;
	if (t - trace_slow_at > 10000000)
	{
		elog(LOG, "kp_trace ack_hist answered %lld slow(>=10ms after append) start %lld flush %lld wakeup %lld turn %lld, >=50ms %lld",
			 (long long) trace_answered, (long long) trace_slow[0], (long long) trace_slow[1],
			 (long long) trace_slow[2], (long long) trace_slow[3], (long long) trace_slow[4]);
		memset(trace_slow, 0, sizeof(trace_slow));
		elog(LOG, "kp_trace worker_hist woken by the flusher (latch set -> running) %s",
			 kp_ftrace_hist_str(trace_wake_hist));
		trace_answered = 0;
		trace_slow_at = t;
	}
}
static int64 trace_hist_at = 0;

static void
trace_flush(const char *who, int64 t0, int64 t1, XLogRecPtr before, XLogRecPtr after)
{
	int64		d = t1 - t0;
	static const int64 lim[7] = {250, 500, 1000, 2000, 5000, 10000, 50000};
	int			b = 0;

	while (b < 7 && d >= lim[b])
		b++;
	trace_hist[b]++;
	trace_last_flush_end = t1;
	if (d >= 2000 || before / wal_segment_size != after / wal_segment_size)
		elog(LOG, "kp_trace flush %s at %lld dur_us %lld bytes %lld seg %llX->%llX",
			 who, (long long) t0, (long long) d, (long long) (after - before),
			 (long long) (before / wal_segment_size), (long long) (after / wal_segment_size));
	if (trace_hist_at == 0)
		trace_hist_at = t1;
	if (t1 - trace_hist_at > 10000000)
	{
		elog(LOG, "kp_trace flush_hist <250us %lld <500 %lld <1ms %lld <2 %lld <5 %lld <10 %lld <50 %lld >=50ms %lld",
			 (long long) trace_hist[0], (long long) trace_hist[1], (long long) trace_hist[2],
			 (long long) trace_hist[3], (long long) trace_hist[4], (long long) trace_hist[5],
			 (long long) trace_hist[6], (long long) trace_hist[7]);
		memset(trace_hist, 0, sizeof(trace_hist));
		trace_hist_at = t1;
	}
}
#endif

void
kp_listener_init(void)
{
	int			i;

	DefineCustomStringVariable("kafka.listen_address",
							   "Address the Kafka listener binds (Kafka's listeners).",
							   NULL, &kp_listen_address, "127.0.0.1",
							   PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.port",
							"TCP port of the Kafka listener; 0 disables the listener.",
							NULL, &kp_port, 9092, 0, 65535,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("kafka.advertised_host",
							   "Host name given to clients in Metadata (Kafka's advertised.listeners).",
							   "Empty: the listen address, or 127.0.0.1 when that is a wildcard.",
							   &kp_advertised_host, "",
							   PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.advertised_port",
							"Port given to clients in Metadata; 0: kafka.port.",
							NULL, &kp_advertised_port, 0, 0, 65535,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.listener_workers",
							"Number of listener processes sharing the Kafka port.",
							NULL, &kp_listener_workers, 2, 1, 64,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);

	/*
	 * at most what one palloc'd input buffer can hold: behind a parked
	 * request, a whole second frame and a read chunk each (511 MiB; at 512
	 * MiB, two frames filled it past 1 GB and the worker ended)
	 */
	DefineCustomIntVariable("kafka.socket_request_max_bytes",
							"Largest request accepted (Kafka's socket.request.max.bytes).",
							NULL, &kp_socket_request_max_bytes, 104857600, 1024,
							511 * 1024 * 1024,
							PGC_SIGHUP, GUC_UNIT_BYTE, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.connections_max_idle_ms",
							"Idle connections are closed after this long (Kafka's connections.max.idle.ms).",
							NULL, &kp_connections_max_idle_ms, 600000, 1000, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomBoolVariable("kafka.auto_create_topics_enable",
							 "Create a topic when a client asks for its metadata (Kafka's auto.create.topics.enable).",
							 NULL, &kp_auto_create_topics_enable, true,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.num_partitions",
							"Partitions of auto-created topics (Kafka's num.partitions).",
							NULL, &kp_num_partitions, 1, 1, 100000,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.node_id",
							"The broker id clients see (Kafka's node.id).",
							NULL, &kp_node_id, 0, 0, INT_MAX,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	kp_listener_limits_init();
	kp_sasl_define_settings();
	kp_replicas_define_settings();
	kp_leader_define_settings();
	kp_fetch_session_define_settings();
	kp_wal_flusher_define_settings();

	if (kp_port == 0 || !kp_listener_start_allowed())
		return;
	if (!open_listen_socket(WARNING, false))
		ereport(WARNING,
				(errmsg("kafka_pg: the Kafka listener will try to bind port %d again when its workers restart",
						kp_port)));
	for (i = 0; i < kp_listener_workers; i++)
	{
		char		name[BGW_MAXLEN];

		snprintf(name, sizeof(name), "kafka_pg listener %d", i);
		/* on a hot standby too: it serves reads (leader.c) */
		kp_register_worker(name, "kafka_pg listener", "kp_listener_main",
						   BgWorkerStart_ConsistentState, 2, Int32GetDatum(i));
	}
	/* flushes the WAL for the workers' acks=all answers (flusher.c) */
	kp_wal_flusher_register();
}

int64
kp_listener_now_ms(void)
{
	return GetCurrentTimestamp() / 1000;
}

/*
 * Output buffers over 16 MB that the worker's connections keep once drained
 * (conn_flush), in bytes: at most OUT_LARGE_ALLOWANCE, enough for the
 * largest Fetch response of the default fetch.max.bytes (55 MiB, in a
 * buffer grown by doubling to 64 MiB).
 */
#define OUT_LARGE_ALLOWANCE ((int64) 64 * 1024 * 1024)
static int64 out_large_kept = 0;

/* ---------------------------------------------------------------------
 * Connections
 * ---------------------------------------------------------------------
 */

/* Bytes of responses not sent yet: the output buffer's and the pieces'. */
static inline int64
conn_unsent(KpConn *c)
{
	return (int64) (c->out.len - c->out_pos) + c->pieces_unsent;
}

/* Release the pieces from the from'th on (not sent) and forget them. */
static void
conn_release_pieces(KpConn *c, int from)
{
	int			i;

	for (i = from; i < c->npieces; i++)
	{
		KpOutPiece *p = &c->pieces[i];

		c->pieces_unsent -= p->len - (i == c->piece_next ? c->piece_off : 0);
		if (p->release)
			p->release(p->owner);
	}
	c->npieces = Min(c->npieces, from);
	if (c->piece_next >= c->npieces)
	{
		c->piece_off = 0;
		c->piece_next = c->npieces;
	}
}

static void
conn_close(KpConn *c, const char *why)
{
	KpConn	  **pp;

	if (why)
		ereport(DEBUG1, (errmsg("kafka_pg listener: closing connection from %s (principal %s): %s",
								c->peer, c->principal, why)));
	kp_sasl_conn_free(c);
	kp_tls_conn_free(c);
	kp_share_conn_closed(c);
	kp_fetch_sessions_conn_closed(c);
	epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	for (pp = &connections; *pp; pp = &(*pp)->next)
	{
		if (*pp == c)
		{
			*pp = c->next;
			break;
		}
	}
	nconnections--;
	kp_conn_limits_release(c);
	if (c->in.data)
		pfree(c->in.data);
	if (c->out.data)
		pfree(c->out.data);
	out_large_kept -= c->out_kept;
	conn_release_pieces(c, c->piece_next);
	if (c->pieces)
		pfree(c->pieces);
	if (c->parked_frame)
		pfree(c->parked_frame);
	if (c->park_cookie)
		pfree(c->park_cookie);
	if (c->park_keys)
	{
		park_unwatch(c->park_nkeys, c->park_keys);
		pfree(c->park_keys);
		pfree(c->park_seen);
	}
	ack_queue_free(c);
	pfree(c);
}

static void
conn_update_events(KpConn *c)
{
	struct epoll_event ev;
	bool		want_write = conn_unsent(c) > 0;
	bool		want_read = (!want_write || conn_unsent(c) < OUTPUT_BACKLOG_MAX) &&
	c->muted_until_ms == 0;

	if (want_write == c->want_write && want_read == c->want_read)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.events = (want_read ? EPOLLIN : 0) | (want_write ? EPOLLOUT : 0) | EPOLLRDHUP;
	ev.data.ptr = c;
	epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
	c->want_write = want_write;
	c->want_read = want_read;
}

/*
 * The output from where it was sent up to as iovecs, at most max: the
 * output buffer's bytes up to the next piece's place, the piece, and so on.
 */
static int
conn_iov(KpConn *c, struct iovec *iov, int max)
{
	int			pos = c->out_pos;
	int			i = c->piece_next;
	int			off = c->piece_off;
	int			k = 0;

	while (k < max)
	{
		if (i < c->npieces && c->pieces[i].at == pos)
		{
			iov[k].iov_base = (void *) (c->pieces[i].data + off);
			iov[k].iov_len = c->pieces[i].len - off;
			k++;
			i++;
			off = 0;
		}
		else
		{
			int			end = i < c->npieces ? c->pieces[i].at : c->out.len;

			if (end > pos)
			{
				iov[k].iov_base = c->out.data + pos;
				iov[k].iov_len = end - pos;
				k++;
			}
			pos = end;
			if (i >= c->npieces)
				break;
		}
	}
	return k;
}

/* n bytes of the output were sent: release the pieces sent whole */
static void
conn_advance(KpConn *c, ssize_t n)
{
	while (n > 0)
	{
		if (c->piece_next < c->npieces && c->pieces[c->piece_next].at == c->out_pos)
		{
			KpOutPiece *p = &c->pieces[c->piece_next];
			int			take = (int) Min(n, (ssize_t) (p->len - c->piece_off));

			c->piece_off += take;
			c->pieces_unsent -= take;
			n -= take;
			if (c->piece_off == p->len)
			{
				c->piece_next++;
				c->piece_off = 0;
				if (p->release)
					p->release(p->owner);
				p->release = NULL;
			}
		}
		else
		{
			int			end = c->piece_next < c->npieces ?
			c->pieces[c->piece_next].at : c->out.len;
			int			take = (int) Min(n, (ssize_t) (end - c->out_pos));

			Assert(take > 0);
			c->out_pos += take;
			n -= take;
		}
	}
}

/*
 * Write what we can; returns false if the connection died.  Pieces sent by
 * reference go out with the output buffer's bytes around them in one
 * sendmsg (TLS: one piece at a time, through OpenSSL).
 */
static bool
conn_flush(KpConn *c)
{
	while (conn_unsent(c) > 0)
	{
		struct iovec iov[SEND_IOV_MAX];
		int			niov = conn_iov(c, iov, c->tls ? 1 : SEND_IOV_MAX);
		ssize_t		n;

		if (c->tls)
			n = kp_tls_send(c, iov[0].iov_base, iov[0].iov_len);
		else if (niov == 1)
			n = send(c->fd, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL);
		else
		{
			struct msghdr msg;

			memset(&msg, 0, sizeof(msg));
			msg.msg_iov = iov;
			msg.msg_iovlen = niov;
			n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
		}
		if (n < 0)
		{
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			if (errno == EINTR)
				continue;
			return false;
		}
		conn_advance(c, n);
		c->last_active_ms = kp_listener_now_ms();	/* the client reads */
	}
	if (conn_unsent(c) == 0)
	{
		/* every piece sent: the output starts again at the beginning */
		c->npieces = 0;
		c->piece_next = 0;
		c->piece_off = 0;
		c->out_pos = 0;
		resetStringInfo(&c->out);

		/*
		 * Give back a large buffer once it has drained (keep fetch-sized
		 * ones), unless the worker's allowance for large ones has room: a
		 * consumer whose Fetch responses are larger (many partitions, up to
		 * fetch.max.bytes) would otherwise have each one encoded into fresh
		 * memory, which the kernel faults in and zeroes page by page (most of
		 * the listener's CPU for such a consumer).
		 */
		if (c->out.maxlen > 16 * 1024 * 1024)
		{
			int64		kept = out_large_kept - c->out_kept + c->out.maxlen;

			if (kept <= OUT_LARGE_ALLOWANCE)
			{
				out_large_kept = kept;
				c->out_kept = c->out.maxlen;
			}
			else
			{
				out_large_kept -= c->out_kept;
				c->out_kept = 0;
				pfree(c->out.data);
				c->out.data = MemoryContextAlloc(listener_cxt, 8192);
				c->out.maxlen = 8192;
				resetStringInfo(&c->out);
			}
		}
	}
	conn_update_events(c);
	return true;
}

StringInfo
kp_conn_output(KpConn *c)
{
	return &c->out;
}

void
kp_conn_add_piece(KpConn *c, const char *data, int len,
				  void (*release) (void *owner), void *owner)
{
	KpOutPiece *p;

	if (c->npieces == c->maxpieces)
	{
		int			n = Max(16, c->maxpieces * 2);

		c->pieces = c->pieces ?
			repalloc(c->pieces, sizeof(KpOutPiece) * n) :
			MemoryContextAlloc(listener_cxt, sizeof(KpOutPiece) * n);
		c->maxpieces = n;
	}
	p = &c->pieces[c->npieces++];
	p->at = c->out.len;
	p->data = data;
	p->len = len;
	p->release = release;
	p->owner = owner;
	c->pieces_unsent += len;
}

int
kp_conn_pieces_mark(KpConn *c)
{
	return c->npieces;
}

int64
kp_conn_pieces_bytes(KpConn *c, int mark)
{
	int64		n = 0;
	int			i;

	for (i = mark; i < c->npieces; i++)
		n += c->pieces[i].len;
	return n;
}

void
kp_conn_pieces_truncate(KpConn *c, int mark)
{
	Assert(mark >= c->piece_next);
	conn_release_pieces(c, mark);
}

void
kp_conn_send(KpConn *c, const char *data, int len)
{
	MemoryContext old = MemoryContextSwitchTo(listener_cxt);

	appendBinaryStringInfo(&c->out, data, len);
	MemoryContextSwitchTo(old);
}

/*
 * A client that does not read: its unsent output passed
 * kafka.connection_output_max_bytes.  The caller closes the connection.
 */
static bool
conn_output_over_cap(KpConn *c)
{
	if (conn_unsent(c) <= kp_connection_output_max_bytes)
		return false;
	ereport(LOG,
			(errmsg("kafka_pg listener: closing connection from %s: %lld bytes of responses unsent, more than kafka.connection_output_max_bytes (%d)",
					c->peer, (long long) conn_unsent(c), kp_connection_output_max_bytes)));
	return true;
}

/*
 * Handle the complete frames buffered for a connection, in order, until
 * one parks or the output backs up.  Returns false if the connection must
 * be closed.
 */
static bool
conn_process(KpConn *c)
{
	while (c->parked_frame == NULL && !c->closing &&
		   c->muted_until_ms == 0 &&
		   conn_unsent(c) < OUTPUT_BACKLOG_MAX)
	{
		int			avail = c->in.len - c->in_pos;
		int32		size;

		if (avail < 4)
			break;
		size = (int32) (((uint32) (uint8) c->in.data[c->in_pos] << 24) |
						((uint32) (uint8) c->in.data[c->in_pos + 1] << 16) |
						((uint32) (uint8) c->in.data[c->in_pos + 2] << 8) |
						(uint32) (uint8) c->in.data[c->in_pos + 3]);

		/*
		 * Behind answers waiting for the in-sync replicas only a complete
		 * Produce runs (its append joins their WAL flush; its answer queues
		 * behind theirs); anything else, a bad size included, waits until
		 * they are sent.
		 */
		if (c->acks != NULL &&
			(size < 2 || size > kp_socket_request_max_bytes || avail - 4 < size ||
			 c->nacks >= ACK_PIPELINE_MAX ||
			 c->in.data[c->in_pos + 4] != 0 || c->in.data[c->in_pos + 5] != KP_API_PRODUCE))
			break;
		if (size <= 0 || size > kp_socket_request_max_bytes)
		{
			ereport(LOG,
					(errmsg("kafka_pg listener: closing connection from %s: request size %d outside 1..%d (socket.request.max.bytes)",
							c->peer, size, kp_socket_request_max_bytes)));
			return false;
		}
		if (avail - 4 < size)
			break;
		c->in_pos += 4;
		if (!kp_dispatch_frame(c, (uint8 *) c->in.data + c->in_pos, size, false))
		{
			/*
			 * The connection is to be closed: the answers waiting before this
			 * request go out first, as they would have had it waited for them
			 * (run_acks closes it once they are sent).
			 */
			if (c->acks == NULL)
				return false;
			c->closing = true;
		}
		c->in_pos += size;
		if (conn_output_over_cap(c))
			return false;
	}

	/*
	 * compact the input buffer (a parked request has its own copy of its
	 * frame, a waiting answer keeps nothing of its request's)
	 */
	if (c->in_pos > 0 && c->parked_frame == NULL)
	{
		int			rest = c->in.len - c->in_pos;

		if (rest > 0)
			memmove(c->in.data, c->in.data + c->in_pos, rest);
		c->in.len = rest;
		c->in.data[rest] = '\0';
		c->in_pos = 0;
		if (rest == 0 && c->in.maxlen > 4 * 1024 * 1024)
		{
			pfree(c->in.data);
			c->in.data = MemoryContextAlloc(listener_cxt, 8192);
			c->in.maxlen = 8192;
			resetStringInfo(&c->in);
		}
	}
	return !c->closing || conn_unsent(c) > 0 || c->acks != NULL;
}

/* A closing connection whose every answer is sent. */
static inline bool
conn_finished(KpConn *c)
{
	return c->closing && conn_unsent(c) == 0 && c->acks == NULL;
}

static bool
conn_read(KpConn *c)
{
	for (;;)
	{
		ssize_t		n;
		MemoryContext old;

		old = MemoryContextSwitchTo(listener_cxt);
		enlargeStringInfo(&c->in, READ_CHUNK);
		MemoryContextSwitchTo(old);
		n = c->tls ? kp_tls_recv(c, c->in.data + c->in.len, c->in.maxlen - c->in.len - 1) :
			recv(c->fd, c->in.data + c->in.len, c->in.maxlen - c->in.len - 1, 0);
		if (n == 0)
			return false;		/* peer closed */
		if (n < 0)
		{
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			if (errno == EINTR)
				continue;
			return false;
		}
		c->in.len += n;
		c->in.data[c->in.len] = '\0';
		c->last_active_ms = kp_listener_now_ms();
#ifdef KP_TRACE_LATENCY
		c->trace_read_us = kp_trace_us();
#endif
		/* don't buffer unboundedly ahead of a parked request */
		if (c->in.len - c->in_pos > kp_socket_request_max_bytes + 4)
			break;
	}
	return true;
}

static void
accept_connections(void)
{
	for (;;)
	{
		struct sockaddr_storage addr;
		socklen_t	alen = sizeof(addr);
		int			fd = accept4(listen_fd, (struct sockaddr *) &addr, &alen,
								 SOCK_NONBLOCK | SOCK_CLOEXEC);
		KpConn	   *c;
		struct epoll_event ev;
		int			one = 1;

		if (fd < 0)
		{
			if (errno == EINTR)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			{
				/*
				 * The pending connection stays in the accept queue and the
				 * listening socket stays readable: retrying now would spin.
				 * Stop watching it for a moment (the loop waits on the latch
				 * with a timeout meanwhile); say so once until an accept
				 * succeeds again.
				 */
				if (!accept_failure_logged)
					ereport(LOG,
							(errmsg("kafka_pg listener: accept failed: %m"),
							 errdetail("Not accepting Kafka connections for %d ms at a time until it succeeds again.",
									   ACCEPT_BACKOFF_MS)));
				accept_failure_logged = true;
				epoll_ctl(epfd, EPOLL_CTL_DEL, listen_fd, NULL);
				accept_paused_until_ms = kp_listener_now_ms() + ACCEPT_BACKOFF_MS;
				return;
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				ereport(LOG, (errmsg("kafka_pg listener: accept failed: %m")));
			return;
		}
		accept_failure_logged = false;
		if (!kp_address_allowed((struct sockaddr *) &addr))
		{
			ereport(LOG,
					(errmsg("kafka_pg listener: refusing a connection from an address not in kafka.allowed_addresses")));
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

		c = MemoryContextAllocZero(listener_cxt, sizeof(KpConn));
		c->fd = fd;
		kp_sasl_conn_init(c);
		if (!kp_tls_conn_init(c))
		{
			kp_sasl_conn_free(c);
			close(fd);
			pfree(c);
			continue;
		}
		c->id = next_conn_id++;
		c->last_active_ms = kp_listener_now_ms();
		c->want_read = true;
		if (addr.ss_family == AF_INET)
		{
			struct sockaddr_in *sin = (struct sockaddr_in *) &addr;
			char		host[INET_ADDRSTRLEN];

			inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
			snprintf(c->peer, sizeof(c->peer), "%s:%d", host, ntohs(sin->sin_port));
		}
		else if (addr.ss_family == AF_INET6)
		{
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *) &addr;
			char		host[INET6_ADDRSTRLEN];

			inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
			snprintf(c->peer, sizeof(c->peer), "[%s]:%d", host, ntohs(sin6->sin6_port));
		}
		else
			snprintf(c->peer, sizeof(c->peer), "unknown");
		if (!kp_conn_limits_admit(c, &addr))
		{
			kp_sasl_conn_free(c);
			kp_tls_conn_free(c);
			close(fd);
			pfree(c);
			continue;
		}
		{
			MemoryContext old = MemoryContextSwitchTo(listener_cxt);

			initStringInfo(&c->in);
			initStringInfo(&c->out);
			MemoryContextSwitchTo(old);
		}

		memset(&ev, 0, sizeof(ev));
		ev.events = EPOLLIN | EPOLLRDHUP;
		ev.data.ptr = c;
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		{
			kp_conn_limits_release(c);
			kp_sasl_conn_free(c);
			kp_tls_conn_free(c);
			close(fd);
			pfree(c->in.data);
			pfree(c->out.data);
			pfree(c);
			continue;
		}
		c->next = connections;
		connections = c;
		nconnections++;
	}
}

/*
 * Bind the Kafka port.  The postmaster does it once, in _PG_init, and every
 * listener worker inherits the socket across fork(): the workers share one
 * accept queue, and a second cluster on the same machine cannot silently
 * share the port (SO_REUSEPORT would let it, and the kernel would spread
 * clients over two different brokers).  The postmaster only binds; the
 * workers listen() once they run, so until then (recovery before a
 * consistent state, a standby with hot_standby off) a client's connection
 * is refused at once instead of being accepted by the kernel and never
 * answered (a Java client would wait request.timeout.ms on it).
 */
static bool
open_listen_socket(int elevel, bool do_listen)
{
	struct addrinfo hints;
	struct addrinfo *res;
	char		portstr[16];
	int			one = 1;
	int			rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(portstr, sizeof(portstr), "%d", kp_port);
	rc = getaddrinfo(kp_listen_address[0] ? kp_listen_address : NULL, portstr, &hints, &res);
	if (rc != 0)
	{
		ereport(elevel,
				(errmsg("kafka_pg listener: cannot resolve kafka.listen_address \"%s\": %s",
						kp_listen_address, gai_strerror(rc))));
		return false;
	}

	listen_fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (listen_fd < 0)
	{
		ereport(elevel, (errmsg("kafka_pg listener: could not create socket: %m")));
		freeaddrinfo(res);
		return false;
	}
	setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(listen_fd, res->ai_addr, res->ai_addrlen) < 0 ||
		(do_listen && listen(listen_fd, 1024) < 0))
	{
		ereport(elevel,
				(errmsg("kafka_pg listener: could not listen on %s:%d: %m", kp_listen_address, kp_port),
				 errhint("Is another Kafka broker or kafka_pg cluster using the port? Set kafka.port.")));
		close(listen_fd);
		listen_fd = -1;
		freeaddrinfo(res);
		return false;
	}
	freeaddrinfo(res);
	return true;
}

/*
 * Close connections idle for longer than connections.max.idle.ms: nothing
 * read from them and nothing of their output taken by the client.  Unsent
 * output does not keep a connection open (a client that stops reading would
 * keep its buffer forever); a parked fetch does, until its max_wait_ms.
 */
static void
close_idle_connections(int64 now)
{
	KpConn	   *c = connections;

	while (c)
	{
		KpConn	   *next = c->next;

		if (c->parked_frame == NULL && c->acks == NULL &&
			now - c->last_active_ms > kp_connections_max_idle_ms)
			conn_close(c, "idle for longer than kafka.connections_max_idle_ms");
		c = next;
	}
}

/*
 * A parked Fetch waits by partition: while it is parked the worker watches
 * its partitions' wait buckets (src/store/waiters.c), so a change to one of
 * them sets our latch and nothing else does.  bucket_refs counts the parked
 * fetches on each bucket; the worker's bit in a bucket is set while that is
 * above zero.  A change between the handler's read of a count and the watch
 * set no latch: look at the counts once watching, and wake our own loop.
 */
static void
park_watch(KpConn *c)
{
	bool		changed = false;
	int			i;

	for (i = 0; i < c->park_nkeys; i++)
	{
		int			b = c->park_keys[i];
		uint64		changes;

		if (bucket_refs[b]++ == 0)
			changes = kp_log_watch_wait_bucket(waiter_slot, b, true);
		else
			changes = kp_log_wait_bucket_changes(b);
		if (changes != c->park_seen[i])
			changed = true;
	}
	if (changed)
		SetLatch(MyLatch);
}

static void
park_unwatch(int nkeys, const int *keys)
{
	int			i;

	for (i = 0; i < nkeys; i++)
	{
		int			b = keys[i];

		Assert(bucket_refs[b] > 0);
		if (--bucket_refs[b] == 0)
			(void) kp_log_watch_wait_bucket(waiter_slot, b, false);
	}
}

/* Did a partition of this parked Fetch change since it was read? */
static bool
park_keys_changed(KpConn *c)
{
	int			i;

	for (i = 0; i < c->park_nkeys; i++)
		if (kp_log_wait_bucket_changes(c->park_keys[i]) != c->park_seen[i])
			return true;
	return false;
}

/*
 * The WAL up to lsn, for answers that wait for it to be flushed: asked of
 * the WAL flusher (flusher.c), which flushes while this worker goes on
 * reading, appending and answering, and sets our latch when it is done
 * (next_timeout asks it to); flushed here, as before, when no flusher runs.
 */
static void
flush_for_answers(XLogRecPtr lsn, const char *who)
{
#ifdef KP_TRACE_LATENCY
	XLogRecPtr	before;
	int64		t0;
#endif

	if (lsn <= GetFlushRecPtr(NULL) || kp_wal_flush_request(lsn))
		return;
#ifdef KP_TRACE_LATENCY
	before = GetFlushRecPtr(NULL);
	t0 = kp_trace_us();
	kp_ftrace(KP_FT_F_LOOK, lsn, before);
#endif
	kp_wal_flush(lsn);
#ifdef KP_TRACE_LATENCY
	trace_flush(who, t0, kp_trace_us(), before, GetFlushRecPtr(NULL));
	kp_ftrace(KP_FT_F_FLUSHED, GetFlushRecPtr(NULL), kp_trace_us() - t0);
#endif
}

/*
 * Re-run parked requests whose data may have come or whose time is up: on
 * a wake-up (woken), a parked Fetch whose partitions changed and every
 * other parked request.  Returns whether a Fetch is left parked at a high
 * watermark below the log end (park_on_isr).
 */
static bool
run_parked(bool woken)
{
	int64		now = kp_listener_now_ms();
	KpConn	   *c = connections;
	bool		still_parked = false;
	bool		on_isr = false;
	XLogRecPtr	confirmed = InvalidXLogRecPtr;

	/*
	 * Fetches parked at a high watermark below the log end: flush the WAL for
	 * them (one flush for all, as for acks=all), then see whether the in-sync
	 * replicas reached the position that moves one of their high watermarks.
	 */
	for (c = connections; c; c = c->next)
	{
		if (c->parked_frame && c->park_on_isr)
		{
			KpIsrPosition pos;

			/* on a hot standby: what it replayed (nothing to flush) */
			if (!RecoveryInProgress())
			{
				flush_for_answers(kp_xlog_insert_end(), "fetch");
			}
			kp_isr_position(&pos);
			confirmed = pos.confirmed;
			break;
		}
	}

	c = connections;
	while (c)
	{
		KpConn	   *next = c->next;

		if (c->parked_frame &&
			(now >= c->park_until_ms ||
			 (c->park_on_isr && confirmed >= c->park_isr_lsn) ||
			 (woken && (c->park_keys == NULL || park_keys_changed(c)))))
		{
			char	   *frame = c->parked_frame;
			int			len = c->parked_len;
			int			nkeys = c->park_nkeys;
			int		   *keys = c->park_keys;
			uint64	   *seen = c->park_seen;
			bool		final = now >= c->park_until_ms && !c->park_lock_retry;
			bool		ok;

			c->parked_frame = NULL;
			c->park_nkeys = 0;
			c->park_keys = NULL;
			c->park_seen = NULL;
			c->park_lock_retry = false;
			ok = kp_dispatch_frame(c, (uint8 *) frame, len, final);
			if (c->parked_frame == NULL)
			{
				if (c->park_cookie)
					pfree(c->park_cookie);
				c->park_cookie = NULL;
				c->parked_received_ms = 0;
			}
			pfree(frame);
			/* after parking again: a bucket still watched keeps its bit */
			if (keys)
			{
				park_unwatch(nkeys, keys);
				pfree(keys);
				pfree(seen);
			}
			if (ok && conn_output_over_cap(c))
				ok = false;
			if (ok && c->parked_frame == NULL)
				ok = conn_process(c);	/* requests that queued behind it */
			if (ok)
				ok = conn_flush(c);
			if (!ok)
				conn_close(c, "error");
		}
		c = next;
	}
	/* the slot's "waiting" flag: requests woken by any append or group change */
	for (c = connections; c; c = c->next)
	{
		if (c->parked_frame && c->park_keys == NULL)
			still_parked = true;
		if (c->parked_frame && c->park_on_isr)
			on_isr = true;
	}
	kp_log_set_append_waiter(waiter_slot, still_parked);
	return on_isr;
}

/*
 * A throttled client (throttle.c): nothing of it is read or run until
 * until_ms.  Its responses still go out.
 */
void
kp_conn_mute(KpConn *c, int64 until_ms)
{
	c->muted_until_ms = Max(until_ms, 1);
}

/* Connections whose throttle time is over: serve what they sent meanwhile. */
static void
unmute_connections(int64 now)
{
	KpConn	   *c = connections;

	while (c)
	{
		KpConn	   *next = c->next;

		if (c->muted_until_ms != 0 && now >= c->muted_until_ms)
		{
			bool		ok;

			c->muted_until_ms = 0;
			c->last_active_ms = now;	/* the throttle was not idleness */
			ok = conn_process(c);
			if (ok)
				ok = conn_flush(c);
			if (!ok || conn_finished(c))
				conn_close(c, ok ? "closed" : "error");
		}
		c = next;
	}
}

/*
 * How long the loop may sleep: until the earliest deadline of a parked or
 * waiting request, a muted connection or the accept pause, at most a second.
 *
 * Requests waiting for the in-sync replicas (acks=all and committed
 * requests' answers, fetches parked at a high watermark) wait for a WAL
 * position each; the worker asks to be woken when the earliest of them is
 * reached (kp_isr_wake_at: in core's sync rep queue, where a walsender sets
 * our latch when the synchronous standbys confirm it, as it wakes a
 * committing backend).  Nothing is polled then, whether the standby
 * answers in 100 us or never: the loop sleeps until a deadline or the
 * wake-up.  What has no wake-up is polled: a hot standby's replay (every
 * 5 ms while a fetch waits for it), and a PostgreSQL whose queue isr.c does
 * not know (every millisecond).
 */
static long
next_timeout(void)
{
	int64		now = kp_listener_now_ms();
	int64		soonest = now + 1000;
	XLogRecPtr	wanted = InvalidXLogRecPtr;
	KpConn	   *c;

	for (c = connections; c; c = c->next)
	{
		if (c->parked_frame && c->park_until_ms < soonest)
			soonest = c->park_until_ms;
		if (c->muted_until_ms != 0 && c->muted_until_ms < soonest)
			soonest = c->muted_until_ms;
		if (c->acks && c->acks->until_ms < soonest)
			soonest = c->acks->until_ms;
		/* a connection's answers go out in order: its first one blocks */
		if (c->acks && (XLogRecPtrIsInvalid(wanted) || c->acks->lsn < wanted))
			wanted = c->acks->lsn;
		if (c->parked_frame && c->park_on_isr &&
			(XLogRecPtrIsInvalid(wanted) || c->park_isr_lsn < wanted))
			wanted = c->park_isr_lsn;
	}
	if (XLogRecPtrIsInvalid(wanted))
		kp_isr_wake_cancel();
	else if (!RecoveryInProgress() && GetFlushRecPtr(NULL) < wanted &&
			 kp_wal_flush_wake_at(wanted) == KP_FLUSH_ARMED)
	{
		/*
		 * Not flushed yet: the WAL flusher sets our latch once it is (then
		 * the synchronous standbys are waited for, below).  Without a flusher
		 * kp_isr_wake_at says KP_ISR_NOW: run_acks flushes itself.
		 */
	}
	else
	{
		switch (kp_isr_wake_at(wanted))
		{
			case KP_ISR_NOW:
				soonest = now;	/* reached, or ours to flush: look again */
				break;
			case KP_ISR_ARMED:
				break;
			case KP_ISR_POLL:
				soonest = Min(soonest, now + (RecoveryInProgress() ? 5 : 1));
				break;
		}
	}
	if (accept_paused_until_ms != 0 && accept_paused_until_ms < soonest)
		soonest = accept_paused_until_ms;

	/*
	 * Worker 0 of a hot standby looks for its promotion ten times a second (a
	 * promotion sets no latch of ours), so that it publishes the new leader
	 * at once (kp_listener_main).
	 */
	if (kp_listener_worker_index == 0 && soonest > now + 100 && RecoveryInProgress())
		soonest = now + 100;
	return (long) Max(0, soonest - now);
}

/* Queue an answer behind the connection's others. */
static void
ack_enqueue(KpConn *c, KpAckEntry *e)
{
#ifdef KP_TRACE_LATENCY
	e->trace_read_us = c->trace_read_us;
	e->trace_disp_us = kp_trace_disp_us;
	e->trace_done_us = kp_trace_us();
#endif
	e->next = NULL;
	if (c->acks == NULL)
		c->acks = e;
	else
		c->acks_last->next = e;
	c->acks_last = e;
	c->nacks++;
	nacks_waiting++;
}

/* Take the first waiting answer off the queue and free it. */
static void
ack_dequeue(KpConn *c)
{
	KpAckEntry *e = c->acks;

	c->acks = e->next;
	if (c->acks == NULL)
		c->acks_last = NULL;
	c->nacks--;
	nacks_waiting--;
	MemoryContextDelete(e->cxt);	/* e too */
}

static void
ack_queue_free(KpConn *c)
{
	while (c->acks)
		ack_dequeue(c);
}

void
kp_conn_wait_ack(KpConn *c, MemoryContext cxt, void *response, KpAckWait *wait,
				 XLogRecPtr lsn, int64 until_ms, int32 correlation_id, int16 version)
{
	KpAckEntry *e = MemoryContextAllocZero(cxt, sizeof(KpAckEntry));

	MemoryContextSetParent(cxt, listener_cxt);
	e->cxt = cxt;
	e->response = response;
	e->wait = wait;
	e->lsn = lsn;
	e->until_ms = until_ms;
	e->correlation_id = correlation_id;
	e->version = version;
	ack_enqueue(c, e);
}

void
kp_conn_wait_commit(KpConn *c, const char *bytes, int len, XLogRecPtr lsn)
{
	MemoryContext cxt = AllocSetContextCreate(listener_cxt, "kafka_pg commit wait",
											  ALLOCSET_SMALL_SIZES);
	KpAckEntry *e = MemoryContextAllocZero(cxt, sizeof(KpAckEntry));

	e->cxt = cxt;
	e->bytes = MemoryContextAlloc(cxt, len);
	memcpy(e->bytes, bytes, len);
	e->bytes_len = len;
	e->lsn = lsn;
	e->until_ms = PG_INT64_MAX; /* as long as a COMMIT would wait */
	ack_enqueue(c, e);
}

/*
 * Send the connection's first waiting answer.  A Produce acks=all: every
 * partition whose WAL the in-sync replicas have keeps its answer; at the
 * deadline the others get REQUEST_TIMED_OUT, or
 * NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR is now smaller than their
 * topic's min.insync.replicas (Kafka's DelayedProduce and
 * Partition.checkEnoughReplicasReachOffset).  False when the answer cannot
 * be encoded (kp_conn_put_response): the connection is to be closed.
 */
static bool
ack_answer(KpConn *c, XLogRecPtr confirmed, bool expired)
{
	KpAckEntry *e = c->acks;
	KpAckWait  *w = e->wait;
	int			in_sync = -1;
	int			i;
	MemoryContext old;
	bool		ok;

	if (e->bytes)
	{
		/* an encoded response (kp_conn_wait_commit) */
		kp_conn_send(c, e->bytes, e->bytes_len);
		ack_dequeue(c);
		return true;
	}
	old = MemoryContextSwitchTo(e->cxt);
	for (i = 0; expired && i < w->n; i++)
	{
		KpAckPartition *ap = &w->parts[i];

		if (ap->lsn <= confirmed)
			continue;
		if (in_sync < 0)
			in_sync = kp_isr_count();
		*ap->error_code = in_sync < ap->min_insync_replicas ?
			KP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND : KP_ERR_REQUEST_TIMED_OUT;
	}
	ok = kp_conn_put_response(c, KP_API_PRODUCE, e->version, e->correlation_id, e->response) >= 0;
	MemoryContextSwitchTo(old);
	ack_dequeue(c);
	return ok;
}

/*
 * The answers waiting on this worker's connections: one WAL flush for all
 * of them (a group commit: the flush of the furthest covers the others, and
 * XLogFlush writes everything inserted by then, other workers' appends
 * too), then send, in each connection's order, those whose WAL every
 * in-sync replica has, and those whose time is up.  A connection answered
 * goes on with the requests queued behind it, which may wait in turn: a few
 * more rounds take them in the same turn.
 */
static void
run_acks(void)
{
	int			round;

	/*
	 * After postmaster death answer nothing (dispatch.c says why; here the
	 * positions read are real confirmations, but nothing is lost by letting
	 * the client retry elsewhere): the loop's wait exits the worker.
	 */
	if (nacks_waiting == 0 || !PostmasterIsAlive())
		return;
	for (round = 0; round < 4 && nacks_waiting > 0; round++)
	{
		XLogRecPtr	furthest = InvalidXLogRecPtr;
		KpIsrPosition pos;
		int64		now;
		KpConn	   *c;
		bool		answered = false;

		for (c = connections; c; c = c->next)
		{
			KpAckEntry *e;

			for (e = c->acks; e; e = e->next)
				if (e->lsn > furthest)
					furthest = e->lsn;
		}
		flush_for_answers(furthest, "acks");
		kp_isr_position(&pos);
		now = kp_listener_now_ms();
		c = connections;
		while (c)
		{
			KpConn	   *next = c->next;
			bool		ok = true;
			bool		sent = false;

			while (c->acks && (c->acks->lsn <= pos.confirmed || now >= c->acks->until_ms))
			{
#ifdef KP_TRACE_LATENCY
				KpAckEntry *e = c->acks;
				int64		t = kp_trace_us();

				trace_slow_ack(e, t);
				if (t - e->trace_read_us >= 5000)
					elog(LOG, "kp_trace ack read %lld queued_us %lld appended_us %lld flush_end_us %lld answered_us %lld",
						 (long long) e->trace_read_us,
						 (long long) (e->trace_disp_us - e->trace_read_us),
						 (long long) (e->trace_done_us - e->trace_read_us),
						 (long long) (trace_last_flush_end - e->trace_read_us),
						 (long long) (t - e->trace_read_us));
#endif
				sent = true;
				if (!ack_answer(c, pos.confirmed, c->acks->lsn > pos.confirmed))
				{
					ok = false;
					break;
				}
			}
			if (sent)
			{
				answered = true;
				if (ok)
					ok = conn_process(c);	/* the requests queued behind them */
				if (ok)
					ok = conn_flush(c);
				if (!ok || conn_finished(c))
					conn_close(c, ok ? "closed" : "error");
			}
			c = next;
		}
		if (!answered)
			break;
	}
}

void
kp_conn_park(KpConn *c, const uint8 *frame, int len, int64 received_ms,
			 int64 until_ms, const char *cookie, bool on_isr, XLogRecPtr isr_lsn,
			 int nkeys, const int *keys, const uint64 *seen)
{
	Assert(c->park_keys == NULL);
	c->park_on_isr = on_isr;
	c->park_isr_lsn = isr_lsn;
	if (c->park_cookie)
		pfree(c->park_cookie);
	c->park_cookie = cookie[0] ? MemoryContextStrdup(listener_cxt, cookie) : NULL;
	c->parked_frame = MemoryContextAlloc(listener_cxt, len);
	memcpy(c->parked_frame, frame, len);
	c->parked_len = len;
	c->park_until_ms = until_ms;
	c->parked_received_ms = received_ms;
	if (nkeys >= 0)
	{
		/* a Fetch: woken by its partitions only */
		c->park_nkeys = nkeys;
		c->park_keys = MemoryContextAlloc(listener_cxt, sizeof(int) * Max(nkeys, 1));
		c->park_seen = MemoryContextAlloc(listener_cxt, sizeof(uint64) * Max(nkeys, 1));
		if (nkeys > 0)
		{
			memcpy(c->park_keys, keys, sizeof(int) * nkeys);
			memcpy(c->park_seen, seen, sizeof(uint64) * nkeys);
		}
		park_watch(c);
	}
	else
		kp_log_set_append_waiter(waiter_slot, true);
}

void
kp_listener_main(Datum arg)
{
	int			worker = DatumGetInt32(arg);
	WaitEventSet *wes;
	struct epoll_event ev;
	struct epoll_event events[MAX_EVENTS];
	int64		last_idle_check = 0;
	bool		standby;

	kp_listener_worker_index = worker;

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	kp_worker_connect();
	/* a worker waits for no topic lock (src/listener/README, "Locks") */
	kp_topic_locks_nowait = true;

	listener_cxt = AllocSetContextCreate(TopMemoryContext, "kafka_pg listener",
										 ALLOCSET_DEFAULT_SIZES);
	kp_dispatch_init(listener_cxt);
	bucket_refs = MemoryContextAllocZero(listener_cxt, sizeof(uint32) * KP_FETCH_WAIT_BUCKETS);
	if (listen_fd < 0 && !open_listen_socket(LOG, true))
	{
		/* the postmaster could not bind it either: try again after a pause */
		proc_exit(1);
	}
	if (listen(listen_fd, 1024) < 0)
	{
		ereport(LOG, (errmsg("kafka_pg listener: could not listen on %s:%d: %m",
							 kp_listen_address, kp_port)));
		proc_exit(1);
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		ereport(ERROR, (errmsg("kafka_pg listener: epoll_create1 failed: %m")));
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | EPOLLEXCLUSIVE;	/* one worker wakes per connection */
	ev.data.ptr = NULL;			/* NULL = the listening socket */
	epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd, &ev);

	wes = CreateWaitEventSet(TopMemoryContext, 3);
	AddWaitEventToSet(wes, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(wes, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	AddWaitEventToSet(wes, WL_SOCKET_READABLE, epfd, NULL, NULL);
	waiter_slot = kp_log_register_append_waiter(MyLatch);
	kp_wal_flush_register_waiter();
	kp_conn_limits_worker_start(worker);

	ereport(LOG,
			(errmsg("kafka_pg listener %d serving Kafka clients on %s:%d (database \"%s\", advertised as %s:%d)%s",
					worker, kp_listen_address, kp_port, kp_database,
					kp_advertised_host_name(), kp_advertised_port_number(),
					RecoveryInProgress() ? ", read-only: this server is a hot standby" : "")));

	/* another build's catalog: logged now, once (src/catalog/stamp.c) */
	(void) kp_catalog_stamp_worker_start(psprintf("kafka_pg listener %d", worker));

	standby = RecoveryInProgress();
	for (;;)
	{
		WaitEvent	wev[3];
		int			nwev;
		int			n;
		int			i;
		bool		latch_set = false;
		bool		on_isr;
		int64		now;

#ifdef KP_TRACE_LATENCY
		{
			long		timeout = next_timeout();

			kp_ftrace(KP_FT_W_SLEEP, timeout, nacks_waiting);
			trace_sleep_at = kp_trace_us();
			nwev = WaitEventSetWait(wes, timeout, wev, 3, PG_WAIT_EXTENSION);
		}
#else
		nwev = WaitEventSetWait(wes, next_timeout(), wev, 3, PG_WAIT_EXTENSION);
#endif
		for (i = 0; i < nwev; i++)
			if (wev[i].events & WL_LATCH_SET)
				latch_set = true;
#ifdef KP_TRACE_LATENCY
		trace_turn_woke_us = kp_trace_us();
		trace_turn_latch = latch_set;
		if (latch_set && kp_ftrace_set_at() >= trace_sleep_at)
			kp_ftrace_hist_add(trace_wake_hist, trace_turn_woke_us - kp_ftrace_set_at());
		kp_ftrace(KP_FT_W_WOKE, latch_set, nwev);
#endif
		if (latch_set)
			ResetLatch(MyLatch);

		/*
		 * pg_cancel_backend() cancels the request running (its ERROR closes
		 * that connection, dispatch.c); between requests there is nothing to
		 * cancel.  Raised here, the cancel ended the worker and every
		 * connection it served (until 2026-12-07).
		 */
		QueryCancelPending = false;
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		n = epoll_wait(epfd, events, MAX_EVENTS, 0);
		for (i = 0; i < n; i++)
		{
			KpConn	   *c = events[i].data.ptr;
			bool		ok = true;

			if (c == NULL)
			{
				accept_connections();
				continue;
			}
			if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
			{
				ok = conn_read(c);
				/* answer what arrived even if the peer half-closed */
				if (!conn_process(c))
					ok = false;
			}
			if (ok && (events[i].events & EPOLLOUT || conn_unsent(c) > 0))
				ok = conn_flush(c);
			else if (ok)
				conn_update_events(c);
			else
				(void) conn_flush(c);	/* answers to the requests before the
										 * bad one */
			if (!ok || conn_finished(c))
				conn_close(c, ok ? "closed" : "peer closed or error");
		}

		on_isr = run_parked(latch_set);
		run_acks();

		/*
		 * A Fetch that stopped at the high watermark waits for the flush of
		 * what is above it: run_acks' flush, or its own in run_parked (which
		 * waits for a flush another worker has in progress and is done with
		 * it, XLogFlush's group commit).  Answer it in this turn, when that
		 * flush ends, rather than a millisecond later.
		 */
		if (on_isr)
			(void) run_parked(false);

		now = kp_listener_now_ms();
		unmute_connections(now);
		if (accept_paused_until_ms != 0 && now >= accept_paused_until_ms)
		{
			/* accept again after the EMFILE backoff */
			memset(&ev, 0, sizeof(ev));
			ev.events = EPOLLIN | EPOLLEXCLUSIVE;
			ev.data.ptr = NULL;
			epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd, &ev);
			accept_paused_until_ms = 0;
		}

		/*
		 * Promoted: worker 0 publishes this server as the leader now, not at
		 * its next idle check, so that a standby that starts streaming from
		 * it names it (leader.c).
		 */
		if (standby && !RecoveryInProgress())
		{
			standby = false;
			if (worker == 0)
			{
				kp_leader_publish();
				ereport(LOG,
						(errmsg("kafka_pg listener: promoted: this server leads every partition now, at leader epoch %d",
								kp_leader_epoch())));
			}
		}
		if (now - last_idle_check > 1000)
		{
			close_idle_connections(now);
			last_idle_check = now;
			pgstat_report_stat(false);
			/* the primary's view, for the standbys to report (leader.c) */
			if (worker == 0)
				kp_leader_publish();
		}
	}
}
