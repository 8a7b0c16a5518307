/*-------------------------------------------------------------------------
 *
 * fetch_session.h
 *	  Incremental fetch sessions (KIP-227) of a listener worker
 *	  (fetch_session.c; src/listener only).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_LISTENER_FETCH_SESSION_H
#define KP_LISTENER_FETCH_SESSION_H

#include "listener/handlers.h"

struct KpConn;
struct KpFetchSession;

typedef enum KpFetchSessionMode
{
	KP_FETCH_SESSIONLESS,		/* epoch -1, version < 7, or a session emptied */
	KP_FETCH_FULL,				/* epoch 0: a session is created when answered */
	KP_FETCH_INCREMENTAL,		/* epoch > 0 of a known session */
	KP_FETCH_SESSION_ERROR		/* answered with error and nothing else */
} KpFetchSessionMode;

typedef struct KpFetchSessionRun
{
	KpFetchSessionMode mode;
	int16		error;			/* KP_FETCH_SESSION_ERROR: the code */
	bool		by_id;			/* Fetch v13+: partitions keyed by topic id */
	bool		privileged;		/* a replica's fetch (Kafka's follower) */
	struct KpFetchSession *session; /* KP_FETCH_INCREMENTAL */
} KpFetchSessionRun;

/*
 * Before a Fetch's partitions are read (its listing already merged): the
 * session's lookup, epoch check and update.  For an incremental fetch
 * req->topics becomes every partition of the session, in its order.
 */
extern void kp_fetch_session_begin(KpRequestContext *ctx, KpFetchRequest *req,
								   KpFetchSessionRun *run);

/*
 * When the Fetch is answered (not when it parks): the session created (a
 * full fetch) or the response cut to what changed (an incremental one);
 * sets resp->session_id.
 */
extern void kp_fetch_session_finish(KpRequestContext *ctx, KpFetchRequest *req,
									KpFetchResponse *resp, KpFetchSessionRun *run);

/*
 * A response of the session goes out throttled, without its partitions.
 * True: the session was created by it and is gone (answer session id 0).
 */
extern bool kp_fetch_session_throttled(struct KpConn *c, int32 session_id);

/* The connection closes: its sessions go. */
extern void kp_fetch_sessions_conn_closed(struct KpConn *c);

extern void kp_fetch_session_define_settings(void);

#endif							/* KP_LISTENER_FETCH_SESSION_H */
