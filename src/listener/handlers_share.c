/*-------------------------------------------------------------------------
 *
 * handlers_share.c
 *	  Share groups (KIP-932) on the wire: ShareGroupHeartbeat,
 *	  ShareGroupDescribe, ShareFetch, ShareAcknowledge and the share-group
 *	  offset admin APIs; and what ListGroups, DescribeGroups and DeleteGroups
 *	  say about share groups.  The rules are src/share's (src/share/README).
 *
 * Share sessions (the ShareSessionEpoch of ShareFetch and
 * ShareAcknowledge) are keyed by group and member: epoch 0 opens one with the
 * request's partitions, the next epoch adds and forgets partitions, -1 closes
 * it and releases what the member acquired.  Which sessions exist and their
 * next epoch are in shared memory, as Kafka's share session cache is the
 * broker's: a client sends ShareFetch and ShareAcknowledge on connections
 * that different listener workers may serve (franz-go: its fetch connection
 * and its other one).  The session's partitions stay in the memory of the
 * worker that serves its ShareFetch; a ShareFetch reaching another worker
 * adopts the session there, from the member's assignment.  An epoch moves
 * back when the request that moved it fails (epoch_xact_callback).
 *
 * A ShareFetch with nothing to acquire parks on its partitions' wait
 * buckets: appends, releases and rollbacks wake it, and a timer for the
 * acquisition locks of others that expire (src/share/wake.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "common/hashfn.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "listener/handlers.h"
#include "listener/handlers_share.h"
#include "listener/listener.h"
#include "listener/listener_int.h"
#include "protocol/errors.h"
#include "share/share.h"
#include "store/store.h"

/* the primary's leader epoch (leader.c); share requests run on the primary */
#define LEADER_EPOCH (kp_leader_epoch())

/*
 * A parked ShareFetch that found a share-partition busy with another
 * acquisition looks again this soon (the other may leave records for it).
 */
#define SHARE_BUSY_RETRY_MS 10

/* ---------------------------------------------------------------------
 * Share sessions
 * ---------------------------------------------------------------------
 */

typedef struct SessionPart
{
	KpUuid		topic_id;
	int32		partition;
} SessionPart;

typedef struct ShareSession
{
	char	   *group_id;
	char	   *member_id;
	uint64		id;				/* the shared session this one belongs to */
	int			n;
	int			cap;
	SessionPart *parts;
	int			next_start;		/* round robin over the partitions */
	TimestampTz last_used;
	KpConn	   *conn;			/* the connection that opened it (epoch 0) */
} ShareSession;

static List *sessions = NIL;

/*
 * Kafka's group.share.max.share.sessions default, for the broker (the shared
 * table) and per listener worker (the partition lists).  Sessions unused for
 * longer than a member's session timeout (their member is gone: killed, or
 * its connection moved) make room first.
 */
#define MAX_SHARE_SESSIONS 2000

/*
 * The shared part of a session: that it exists, its next epoch, and an id
 * that tells a worker whether the partitions it keeps belong to this session
 * or to an earlier one of the same member.  Keyed by two independent 64-bit
 * hashes of "group\0member" (group ids have no length limit).
 */
typedef struct SharedSessionKey
{
	uint64		h[2];
} SharedSessionKey;

typedef struct SharedSession
{
	SharedSessionKey key;
	uint64		id;
	int32		epoch;			/* the next one expected */
	TimestampTz last_used;
} SharedSession;

typedef struct SharedSessions
{
	LWLock	   *lock;
	uint64		next_id;
} SharedSessions;

static SharedSessions *shared_sessions = NULL;
static HTAB *shared_session_hash = NULL;

typedef enum
{
	SESSION_OK,
	SESSION_NOT_FOUND,
	SESSION_BAD_EPOCH
} SessionCheck;

/* the epoch the running request moved, undone if it fails */
static struct
{
	bool		active;
	SharedSessionKey key;
	uint64		id;
	int32		before;
	int32		after;
} epoch_undo;
static bool epoch_callback_registered = false;

static void epoch_xact_callback(XactEvent event, void *arg);

Size
kp_share_sessions_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(SharedSessions)),
					hash_estimate_size(MAX_SHARE_SESSIONS, sizeof(SharedSession)));
}

void
kp_share_sessions_request_locks(void)
{
	RequestNamedLWLockTranche("kafka_pg share sessions", 1);
}

/* called with AddinShmemInitLock held */
void
kp_share_sessions_shmem_init(void)
{
	HASHCTL		info;
	bool		found;

	shared_sessions = ShmemInitStruct("kafka_pg share sessions", sizeof(SharedSessions), &found);
	if (!found)
	{
		shared_sessions->lock = &(GetNamedLWLockTranche("kafka_pg share sessions"))->lock;
		shared_sessions->next_id = 1;
	}
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(SharedSessionKey);
	info.entrysize = sizeof(SharedSession);
	shared_session_hash = ShmemInitHash("kafka_pg share session epochs", MAX_SHARE_SESSIONS,
										MAX_SHARE_SESSIONS, &info, HASH_ELEM | HASH_BLOBS);
}

/*
 * A member id as Kafka's KafkaApis.isMemberIdValid takes it for the share
 * APIs: not empty, at most 36 characters (UTF-16 units, as Java counts:
 * a character outside the BMP counts twice).  Kafka answers INVALID_REQUEST
 * with no message ("Invalid member id in the request." is dropped).
 */
static bool
share_member_id_valid(const char *id)
{
	int			units = 0;
	const unsigned char *p;

	if (id == NULL || id[0] == '\0')
		return false;
	for (p = (const unsigned char *) id; *p; p++)
		if ((*p & 0xC0) != 0x80)
			units += *p >= 0xF0 ? 2 : 1;
	return units <= 36;
}

static SharedSessionKey
shared_key(const char *group_id, const char *member_id)
{
	SharedSessionKey k;
	size_t		gl = strlen(group_id);
	size_t		ml = strlen(member_id);
	char	   *buf = palloc(gl + ml + 1);

	memcpy(buf, group_id, gl);
	buf[gl] = '\0';
	memcpy(buf + gl + 1, member_id, ml);
	k.h[0] = hash_bytes_extended((const unsigned char *) buf, (int) (gl + ml + 1), 0);
	k.h[1] = hash_bytes_extended((const unsigned char *) buf, (int) (gl + ml + 1),
								 UINT64CONST(0x9e3779b97f4a7c15));
	pfree(buf);
	return k;
}

/*
 * Open a session (epoch 0): replaces the member's previous one.  Returns its
 * id, or 0 when the broker's table is full of sessions in use.
 */
static uint64
shared_open(const char *group_id, const char *member_id)
{
	SharedSessionKey k = shared_key(group_id, member_id);
	TimestampTz now = GetCurrentTimestamp();
	SharedSession *e;
	bool		found;
	uint64		id = 0;

	LWLockAcquire(shared_sessions->lock, LW_EXCLUSIVE);
	e = hash_search(shared_session_hash, &k, HASH_FIND, NULL);
	if (e == NULL && hash_get_num_entries(shared_session_hash) >= MAX_SHARE_SESSIONS)
	{
		TimestampTz cutoff = now - (TimestampTz) kp_share_session_timeout_ms * 1000;
		HASH_SEQ_STATUS seq;
		SharedSession *o;

		hash_seq_init(&seq, shared_session_hash);
		while ((o = hash_seq_search(&seq)) != NULL)
			if (o->last_used < cutoff)
				hash_search(shared_session_hash, &o->key, HASH_REMOVE, NULL);
	}
	if (e != NULL || hash_get_num_entries(shared_session_hash) < MAX_SHARE_SESSIONS)
	{
		e = hash_search(shared_session_hash, &k, HASH_ENTER_NULL, &found);
		if (e != NULL)
		{
			e->id = id = shared_sessions->next_id++;
			e->epoch = 1;
			e->last_used = now;
		}
	}
	LWLockRelease(shared_sessions->lock);
	return id;
}

/*
 * A request with epoch > 0 or -1: the session must exist and a positive
 * epoch must be the next one, which then moves on.  *id gets the session's
 * id, *expected the epoch it expected.
 */
static SessionCheck
shared_check(const char *group_id, const char *member_id, int32 epoch, uint64 *id,
			 int32 *expected)
{
	SharedSessionKey k = shared_key(group_id, member_id);
	SharedSession *e;
	SessionCheck r = SESSION_OK;

	if (!epoch_callback_registered)
	{
		RegisterXactCallback(epoch_xact_callback, NULL);
		epoch_callback_registered = true;
	}
	epoch_undo. active = false;

	LWLockAcquire(shared_sessions->lock, LW_EXCLUSIVE);
	e = hash_search(shared_session_hash, &k, HASH_FIND, NULL);
	if (e == NULL)
		r = SESSION_NOT_FOUND;
	else
	{
		*id = e->id;
		*expected = e->epoch;
		e->last_used = GetCurrentTimestamp();
		if (epoch != -1 && epoch != e->epoch)
			r = SESSION_BAD_EPOCH;
		else if (epoch != -1)
		{
			e->epoch = e->epoch == PG_INT32_MAX ? 1 : e->epoch + 1;
			epoch_undo. active = true;
			epoch_undo. key = k;
			epoch_undo. id = e->id;
			epoch_undo. before = epoch;
			epoch_undo. after = e->epoch;
		}
	}
	LWLockRelease(shared_sessions->lock);
	return r;
}

/*
 * The request that moved the epoch failed: the epoch it used is the next one
 * again (unless the session changed meanwhile).
 */
static void
shared_undo_epoch(void)
{
	SharedSession *e;

	if (!epoch_undo.active)
		return;
	epoch_undo. active = false;

	LWLockAcquire(shared_sessions->lock, LW_EXCLUSIVE);
	e = hash_search(shared_session_hash, &epoch_undo.key, HASH_FIND, NULL);
	if (e != NULL && e->id == epoch_undo.id && e->epoch == epoch_undo.after)
		e->epoch = epoch_undo.before;

	LWLockRelease(shared_sessions->lock);
}

/*
 * A request's epoch counts once its transaction commits: a request that
 * fails with an ERROR (its transaction aborts, the connection is closed)
 * leaves the epoch where it was, as Kafka's ShareSessionCache moves it only
 * for a request it serves.
 */
static void
epoch_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT)
		shared_undo_epoch();
	else if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PREPARE)
		epoch_undo. active = false;
}

/* does the session this worker's partitions belong to still exist? */
static bool
shared_alive(const char *group_id, const char *member_id, uint64 local_id)
{
	SharedSessionKey k = shared_key(group_id, member_id);
	SharedSession *e;
	bool		alive;

	LWLockAcquire(shared_sessions->lock, LW_SHARED);
	e = hash_search(shared_session_hash, &k, HASH_FIND, NULL);
	alive = e != NULL && e->id == local_id;
	LWLockRelease(shared_sessions->lock);
	return alive;
}

/* does the member have a share session? */
static bool
shared_exists(const char *group_id, const char *member_id)
{
	SharedSessionKey k = shared_key(group_id, member_id);
	bool		found;

	LWLockAcquire(shared_sessions->lock, LW_SHARED);
	found = hash_search(shared_session_hash, &k, HASH_FIND, NULL) != NULL;
	LWLockRelease(shared_sessions->lock);
	return found;
}

static void
shared_close(const char *group_id, const char *member_id)
{
	SharedSessionKey k = shared_key(group_id, member_id);

	LWLockAcquire(shared_sessions->lock, LW_EXCLUSIVE);
	hash_search(shared_session_hash, &k, HASH_REMOVE, NULL);
	LWLockRelease(shared_sessions->lock);
}

static ShareSession *
session_find(const char *group_id, const char *member_id)
{
	ListCell   *lc;

	foreach(lc, sessions)
	{
		ShareSession *s = lfirst(lc);

		if (strcmp(s->group_id, group_id) == 0 && strcmp(s->member_id, member_id) == 0)
			return s;
	}
	return NULL;
}

static void
session_drop(ShareSession *s)
{
	sessions = list_delete_ptr(sessions, s);
	pfree(s->group_id);
	pfree(s->member_id);
	pfree(s->parts);
	pfree(s);
}

static ShareSession *
session_new(const char *group_id, const char *member_id)
{
	MemoryContext old;
	ShareSession *s;

	if (list_length(sessions) >= MAX_SHARE_SESSIONS)
	{
		TimestampTz cutoff = GetCurrentTimestamp() - (TimestampTz) kp_share_session_timeout_ms * 1000;
		List	   *stale = NIL;
		ListCell   *lc;

		foreach(lc, sessions)
		{
			ShareSession *o = lfirst(lc);

			if (o->last_used < cutoff)
				stale = lappend(stale, o);
		}
		foreach(lc, stale)
			session_drop(lfirst(lc));
		list_free(stale);
		if (list_length(sessions) >= MAX_SHARE_SESSIONS)
			return NULL;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	s = palloc0(sizeof(ShareSession));

	s->group_id = pstrdup(group_id);
	s->member_id = pstrdup(member_id);
	s->cap = 16;
	s->parts = palloc(sizeof(SessionPart) * s->cap);
	s->last_used = GetCurrentTimestamp();
	sessions = lappend(sessions, s);
	MemoryContextSwitchTo(old);
	return s;
}

static void
session_add(ShareSession *s, const KpUuid *topic_id, int32 partition)
{
	int			i;

	for (i = 0; i < s->n; i++)
		if (memcmp(s->parts[i].topic_id.b, topic_id->b, 16) == 0 && s->parts[i].partition == partition)
			return;
	if (s->n == s->cap)
	{
		/* the capacity once the memory is there (an ERROR of repalloc) */
		s->parts = repalloc(s->parts, sizeof(SessionPart) * s->cap * 2);
		s->cap *= 2;
	}
	s->parts[s->n].topic_id = *topic_id;
	s->parts[s->n].partition = partition;
	s->n++;
}

static void
session_forget(ShareSession *s, const KpUuid *topic_id, int32 partition)
{
	int			i;

	for (i = 0; i < s->n; i++)
		if (memcmp(s->parts[i].topic_id.b, topic_id->b, 16) == 0 && s->parts[i].partition == partition)
		{
			s->parts[i] = s->parts[s->n - 1];
			s->n--;
			return;
		}
}

/*
 * A session whose earlier ShareFetches another worker served: its partitions
 * are in that worker's memory, so start from the member's assignment (every
 * partition of the topics it subscribes to, what the clients put in their
 * sessions); the request then adds and forgets as usual.
 */
static void
session_adopt_assignment(ShareSession *s, const char *group_id, const char *member_id)
{
	KpShareGroupInfo info;
	int			m;
	int			i;

	kp_share_describe(group_id, &info);
	for (m = 0; m < info.nmembers; m++)
	{
		KpShareMemberInfo *mi = &info.members[m];

		if (strcmp(mi->member_id, member_id) != 0)
			continue;
		for (i = 0; i < mi->nassigned; i++)
		{
			const KpTopic *t = kp_handler_topic(mi->assigned_topics[i], NULL);

			if (t)
			{
				KpUuid		id;

				memcpy(id.b, t->topic_uuid.data, 16);
				session_add(s, &id, mi->assigned_partitions[i]);
			}
		}
	}
}

/*
 * A connection closed (server.c): the share sessions it opened end, and their
 * members' records are released, as Kafka's ShareSessionCache does when the
 * connection that created a session disconnects.  Run outside a transaction,
 * in one of its own per session.
 */
void
kp_share_conn_closed(struct KpConn *c)
{
	List	   *mine = NIL;
	ListCell   *lc;

	foreach(lc, sessions)
	{
		ShareSession *s = lfirst(lc);

		if (s->conn == c)
			mine = lappend(mine, s);
	}
	foreach(lc, mine)
	{
		ShareSession *s = lfirst(lc);

		if (!IsTransactionState() && shared_alive(s->group_id, s->member_id, s->id))
		{
			MemoryContext old = CurrentMemoryContext;

			PG_TRY();
			{
				SetCurrentStatementStartTimestamp();
				StartTransactionCommand();
				PushActiveSnapshot(GetTransactionSnapshot());
				kp_share_release_member(s->group_id, s->member_id);
				PopActiveSnapshot();
				CommitTransactionCommand();
			}
			PG_CATCH();
			{
				ErrorData  *edata;

				MemoryContextSwitchTo(old);
				edata = CopyErrorData();
				FlushErrorState();
				AbortCurrentTransaction();
				ereport(LOG,
						(errmsg("kafka_pg listener: could not release the records of share group member \"%s\" of group \"%s\" after its connection closed: %s",
								s->member_id, s->group_id, edata->message)));
			}
			PG_END_TRY();
			MemoryContextSwitchTo(old);
			shared_close(s->group_id, s->member_id);
		}
		session_drop(s);
	}
	list_free(mine);
}

/* ---------------------------------------------------------------------
 * Authorization (src/listener/authz.c), as Kafka's KafkaApis asks it:
 * GROUP READ to be a member, fetch or acknowledge, DESCRIBE to describe,
 * DELETE to delete offsets; TOPIC READ to fetch, acknowledge or move
 * offsets, DESCRIBE to subscribe or describe offsets.
 * ---------------------------------------------------------------------
 */

static bool
group_allowed(KpRequestContext *ctx, const char *group_id, int op)
{
	return kp_authz(ctx, KP_ACL_RESOURCE_GROUP, group_id ? group_id : "", op);
}

/*
 * What ShareFetch and ShareAcknowledge refuse before they look at a session,
 * in Kafka's order: no group id (kafka_pg's message; Kafka serves ""), the
 * group's READ, a member id share_member_id_valid refuses (no message).
 * KP_ERR_NONE: go on.
 */
static int16
share_request_refused(KpRequestContext *ctx, const char *api, const char *group_id,
					  const char *member_id, char **message)
{
	if (group_id == NULL || group_id[0] == '\0')
	{
		*message = psprintf("%s needs a group id.", api);
		return KP_ERR_INVALID_REQUEST;
	}
	if (!group_allowed(ctx, group_id, KP_ACL_OP_READ))
		return KP_ERR_GROUP_AUTHORIZATION_FAILED;
	if (!share_member_id_valid(member_id))
		return KP_ERR_INVALID_REQUEST;
	return KP_ERR_NONE;
}

/* ---------------------------------------------------------------------
 * Response building: one entry per (topic, partition)
 * ---------------------------------------------------------------------
 */

typedef struct OutPart
{
	KpUuid		topic_id;
	int32		partition;
	int16		error_code;
	char	   *error_message;
	int16		ack_error_code;
	bool		acked;
	KpBytes		records;
	int			nranges;
	KpShareFetchResponseAcquiredRecords *ranges;
} OutPart;

typedef struct OutParts
{
	int			n;
	int			cap;
	OutPart    *p;
} OutParts;

static OutPart *
out_part(OutParts *o, const KpUuid *topic_id, int32 partition)
{
	int			i;

	for (i = 0; i < o->n; i++)
		if (memcmp(o->p[i].topic_id.b, topic_id->b, 16) == 0 && o->p[i].partition == partition)
			return &o->p[i];
	if (o->n == o->cap)
	{
		o->cap = Max(16, o->cap * 2);
		o->p = o->p ? repalloc(o->p, sizeof(OutPart) * o->cap) : palloc(sizeof(OutPart) * o->cap);
	}
	memset(&o->p[o->n], 0, sizeof(OutPart));
	o->p[o->n].topic_id = *topic_id;
	o->p[o->n].partition = partition;
	o->p[o->n].records.data = (const uint8 *) "";
	return &o->p[o->n++];
}

/* Acknowledge one partition's batches; the first error is the partition's. */
static int16
ack_partition(KpRequestContext *ctx, const char *group_id, const char *member_id, const KpUuid *topic_id,
			  int32 partition, int nbatches, int64 *firsts, int64 *lasts, int *ntypes, int8 **types)
{
	const KpTopic *t = kp_handler_topic(NULL, topic_id);
	int16		code = KP_ERR_NONE;
	int			i;

	if (t == NULL)
		return KP_ERR_UNKNOWN_TOPIC_ID;
	if (!kp_authz_topic(ctx, NULL, t, KP_ACL_OP_READ))
		return KP_ERR_TOPIC_AUTHORIZATION_FAILED;
	if (partition < 0 || partition >= t->partition_count)
		return KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
	for (i = 0; i < nbatches; i++)
	{
		int16		c = kp_share_acknowledge(group_id, t->name, partition, member_id,
											 firsts[i], lasts[i], ntypes[i], types[i], true);

		if (code == KP_ERR_NONE)
			code = c;
	}
	return code;
}

/* ---------------------------------------------------------------------
 * ShareGroupHeartbeat, ShareGroupDescribe
 * ---------------------------------------------------------------------
 */

void
kp_handle_share_group_heartbeat(KpRequestContext *ctx)
{
	KpShareGroupHeartbeatRequest *req = ctx->request;
	KpShareGroupHeartbeatResponse *resp = ctx->response;
	KpShareHeartbeatArgs a;
	KpShareHeartbeatResult r;
	int			i;

	if (!group_allowed(ctx, req->group_id, KP_ACL_OP_READ))
	{
		resp->error_code = KP_ERR_GROUP_AUTHORIZATION_FAILED;
		resp->member_epoch = 0;
		return;
	}
	if (!share_member_id_valid(req->member_id))
	{
		resp->error_code = KP_ERR_INVALID_REQUEST;
		resp->member_epoch = 0;
		return;
	}
	for (i = 0; i < req->n_subscribed_topic_names; i++)
		if (!kp_authz_topic(ctx, req->subscribed_topic_names[i], NULL, KP_ACL_OP_DESCRIBE))
		{
			resp->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
			resp->error_message = psprintf("Topic authorization failed for topic \"%s\"",
										   req->subscribed_topic_names[i] ? req->subscribed_topic_names[i] : "");
			resp->member_epoch = 0;
			return;
		}
	memset(&a, 0, sizeof(a));
	a.group_id = req->group_id;
	a.member_id = req->member_id;
	a.member_epoch = req->member_epoch;
	a.rack_id = req->rack_id;
	a.nsubscribed = req->n_subscribed_topic_names;
	a.subscribed = req->subscribed_topic_names;
	for (i = 0; i < a.nsubscribed; i++)
		if (a.subscribed[i] == NULL)
			a.subscribed[i] = "";
	a.client_id = ctx->header->client_id ? ctx->header->client_id : "";
	a.client_host = kp_peer_host(ctx->peer);

	/*
	 * A member leaving with its share session still open keeps its records
	 * until the session ends (a close, or its connection closing), as in
	 * Kafka: clients send their last acknowledgements with the close, which
	 * may come after the leave (librdkafka sends both at once).
	 */
	if (req->member_epoch == -1 && req->group_id && req->member_id)
		a.keep_records = shared_exists(req->group_id, req->member_id);

	resp->error_code = kp_share_heartbeat(&a, &r);
	resp->error_message = r.error_message;
	/* an error is answered with no member id and epoch 0, as Kafka's */
	resp->member_id = resp->error_code == KP_ERR_NONE && req->member_id ? pstrdup(req->member_id) : NULL;
	resp->member_epoch = resp->error_code == KP_ERR_NONE ? r.member_epoch : 0;
	resp->heartbeat_interval_ms = r.heartbeat_interval_ms;
	resp->assignment = NULL;
	if (resp->error_code == KP_ERR_NONE && r.send_assignment)
	{
		KpShareGroupHeartbeatResponseAssignment *as = palloc0(sizeof(*as));
		int			t = 0;

		as->topic_partitions = palloc0(sizeof(KpShareGroupHeartbeatResponseTopicPartitions) *
									   Max(r.nassigned, 1));
		for (i = 0; i < r.nassigned; i++)
		{
			if (t == 0 || strcmp(r.assigned_topics[i - 1], r.assigned_topics[i]) != 0)
			{
				const KpTopic *topic = kp_handler_topic(r.assigned_topics[i], NULL);

				if (topic)
					memcpy(as->topic_partitions[t].topic_id.b, topic->topic_uuid.data, 16);
				as->topic_partitions[t].partitions = palloc(sizeof(int32) * r.nassigned);
				t++;
			}
			as->topic_partitions[t - 1].partitions[as->topic_partitions[t - 1].n_partitions++] =
				r.assigned_partitions[i];
		}
		as->n_topic_partitions = t;
		resp->assignment = as;
	}
	/* a member that left without a share session: forget a stale one here */
	if (req->member_epoch == -1 && req->group_id && req->member_id && !a.keep_records)
	{
		ShareSession *s = session_find(req->group_id, req->member_id);

		if (s)
			session_drop(s);
	}
}

void
kp_handle_share_group_describe(KpRequestContext *ctx)
{
	KpShareGroupDescribeRequest *req = ctx->request;
	KpShareGroupDescribeResponse *resp = ctx->response;
	int			i;

	resp->n_groups = req->n_group_ids < 0 ? 0 : req->n_group_ids;
	resp->groups = palloc0(sizeof(KpShareGroupDescribeResponseDescribedGroup) * Max(resp->n_groups, 1));
	for (i = 0; i < resp->n_groups; i++)
	{
		KpShareGroupDescribeResponseDescribedGroup *g = &resp->groups[i];
		KpShareGroupInfo info;
		int			j;

		g->group_id = pstrdup(req->group_ids[i] ? req->group_ids[i] : "");
		g->authorized_operations = req->include_authorized_operations ?
			KP_GROUP_AUTHORIZED_OPERATIONS : PG_INT32_MIN;
		g->assignor_name = pstrdup("");
		g->group_state = pstrdup("");
		if (!group_allowed(ctx, g->group_id, KP_ACL_OP_DESCRIBE))
		{
			g->error_code = KP_ERR_GROUP_AUTHORIZATION_FAILED;
			continue;
		}
		if (req->include_authorized_operations)
			g->authorized_operations = kp_authz_operations(ctx, KP_ACL_RESOURCE_GROUP, g->group_id);
		if (g->group_id[0] == '\0')
		{
			g->error_code = KP_ERR_INVALID_GROUP_ID;
			continue;
		}
		kp_share_describe(g->group_id, &info);
		if (!info.exists)
		{
			KpGroupInfo other;

			/* Kafka's words, and no state */
			kp_group_describe(g->group_id, &other);
			g->error_code = KP_ERR_GROUP_ID_NOT_FOUND;
			g->error_message = other.exists ?
				psprintf("Group %s is not a share group.", g->group_id) :
				psprintf("Group %s not found.", g->group_id);
			continue;
		}
		g->assignor_name = pstrdup("simple");
		g->group_state = info.state;
		g->group_epoch = info.group_epoch;
		g->assignment_epoch = info.group_epoch;
		g->n_members = info.nmembers;
		g->members = palloc0(sizeof(KpShareGroupDescribeResponseMember) * Max(info.nmembers, 1));
		for (j = 0; j < info.nmembers; j++)
		{
			KpShareGroupDescribeResponseMember *m = &g->members[j];
			KpShareMemberInfo *mi = &info.members[j];
			KpShareGroupDescribeResponseAssignment *as = &m->assignment;
			int			p;
			int			t = 0;

			m->member_id = mi->member_id;
			m->rack_id = mi->rack_id;
			m->member_epoch = mi->member_epoch;
			m->client_id = mi->client_id;
			m->client_host = mi->client_host;
			m->n_subscribed_topic_names = mi->nsubscribed;
			m->subscribed_topic_names = mi->subscribed;
			as->topic_partitions = palloc0(sizeof(KpShareGroupDescribeResponseTopicPartitions) *
										   Max(mi->nassigned, 1));
			for (p = 0; p < mi->nassigned; p++)
			{
				if (t == 0 || strcmp(mi->assigned_topics[p - 1], mi->assigned_topics[p]) != 0)
				{
					const KpTopic *topic = kp_handler_topic(mi->assigned_topics[p], NULL);

					if (topic)
						memcpy(as->topic_partitions[t].topic_id.b, topic->topic_uuid.data, 16);
					as->topic_partitions[t].topic_name = mi->assigned_topics[p];
					as->topic_partitions[t].partitions = palloc(sizeof(int32) * mi->nassigned);
					t++;
				}
				as->topic_partitions[t - 1].partitions[as->topic_partitions[t - 1].n_partitions++] =
					mi->assigned_partitions[p];
			}
			as->n_topic_partitions = t;
		}
	}
}

/* ---------------------------------------------------------------------
 * ShareFetch
 * ---------------------------------------------------------------------
 */

/* Consecutive offsets with one delivery count make one AcquiredRecords. */
static void
fill_ranges(OutPart *op, const KpShareAcquired *acq)
{
	int			i;

	op->ranges = palloc(sizeof(KpShareFetchResponseAcquiredRecords) * Max(acq->n, 1));
	op->nranges = 0;
	for (i = 0; i < acq->n; i++)
	{
		KpShareFetchResponseAcquiredRecords *r = op->nranges > 0 ? &op->ranges[op->nranges - 1] : NULL;

		if (r && r->last_offset + 1 == acq->offsets[i] && r->delivery_count == acq->delivery_counts[i])
			r->last_offset = acq->offsets[i];
		else
		{
			r = &op->ranges[op->nranges++];
			r->first_offset = acq->offsets[i];
			r->last_offset = acq->offsets[i];
			r->delivery_count = acq->delivery_counts[i];
		}
	}
}

static void
fetch_acks(KpRequestContext *ctx, KpShareFetchRequest *req, OutParts *out)
{
	int			i;
	int			j;
	int			k;

	for (i = 0; i < Max(req->n_topics, 0); i++)
	{
		KpShareFetchRequestFetchTopic *rt = &req->topics[i];

		for (j = 0; j < Max(rt->n_partitions, 0); j++)
		{
			KpShareFetchRequestFetchPartition *rp = &rt->partitions[j];
			int			nb = Max(rp->n_acknowledgement_batches, 0);
			int64	   *firsts;
			int64	   *lasts;
			int		   *ntypes;
			int8	  **types;
			OutPart    *op;

			if (nb == 0)
				continue;
			firsts = palloc(sizeof(int64) * nb);
			lasts = palloc(sizeof(int64) * nb);
			ntypes = palloc(sizeof(int) * nb);
			types = palloc(sizeof(int8 *) * nb);
			for (k = 0; k < nb; k++)
			{
				firsts[k] = rp->acknowledgement_batches[k].first_offset;
				lasts[k] = rp->acknowledgement_batches[k].last_offset;
				ntypes[k] = Max(rp->acknowledgement_batches[k].n_acknowledge_types, 0);
				types[k] = rp->acknowledgement_batches[k].acknowledge_types;
			}
			op = out_part(out, &rt->topic_id, rp->partition_index);
			op->acked = true;
			op->ack_error_code = ack_partition(ctx, req->group_id, req->member_id, &rt->topic_id,
											   rp->partition_index, nb, firsts, lasts, ntypes, types);
		}
	}
}

static bool
fetch_has_acks(KpShareFetchRequest *req)
{
	int			i;
	int			j;

	for (i = 0; i < Max(req->n_topics, 0); i++)
		for (j = 0; j < Max(req->topics[i].n_partitions, 0); j++)
			if (req->topics[i].partitions[j].n_acknowledgement_batches > 0)
				return true;
	return false;
}

static void
fetch_respond(KpShareFetchResponse *resp, OutParts *out)
{
	int			i;
	int			t = 0;

	resp->responses = palloc0(sizeof(KpShareFetchResponseShareFetchableTopicResponse) * Max(out->n, 1));
	for (i = 0; i < out->n; i++)
	{
		OutPart    *op = &out->p[i];
		KpShareFetchResponseShareFetchableTopicResponse *rt = NULL;
		KpShareFetchResponsePartitionData *pd;
		int			k;

		for (k = 0; k < t; k++)
			if (memcmp(resp->responses[k].topic_id.b, op->topic_id.b, 16) == 0)
				rt = &resp->responses[k];
		if (rt == NULL)
		{
			rt = &resp->responses[t++];
			rt->topic_id = op->topic_id;
			rt->partitions = palloc0(sizeof(KpShareFetchResponsePartitionData) * out->n);
		}
		pd = &rt->partitions[rt->n_partitions++];
		pd->partition_index = op->partition;
		pd->error_code = op->error_code;
		pd->error_message = op->error_message;
		pd->acknowledge_error_code = op->ack_error_code;
		pd->current_leader.leader_id = kp_node_id;
		pd->current_leader.leader_epoch = LEADER_EPOCH;
		pd->records = op->records;
		pd->n_acquired_records = op->nranges;
		pd->acquired_records = op->ranges;
	}
	resp->n_responses = t;
}

/*
 * One share-partition's part of a ShareFetch: acquire, and read the batches
 * of what was acquired.
 */
typedef struct ShareTake
{
	const char *group_id;
	const KpTopic *topic;
	int32		partition;
	const char *member_id;
	int			max_records;
	bool		record_limit;
	int64		max_bytes;
	/* out */
	int16		code;
	KpShareAcquired acq;
	StringInfoData records;
} ShareTake;

static void
share_take(void *arg)
{
	ShareTake  *a = arg;

	a->code = kp_share_acquire(a->group_id, a->topic, a->partition, a->member_id, a->max_records,
							   a->record_limit, 0, false, &a->acq);
	a->records.data = NULL;
	a->records.len = 0;
	if (a->code == KP_ERR_NONE && a->acq.n > 0)
	{
		initStringInfo(&a->records);
		kp_share_read_batches(a->topic->partition_ids[a->partition], &a->acq, a->max_bytes,
							  &a->records);
	}
}

/*
 * A ShareFetch run again after a storage error (dispatch.c,
 * ctx->storage_guard): each share-partition in a subtransaction.  False when
 * its log could not be read: what it acquired is rolled back (the records
 * stay available), and the caller answers KAFKA_STORAGE_ERROR.  Unlike a
 * Fetch, nothing before the failing read is delivered: the acquisition and
 * the read are one step.  One WARNING a minute per worker.
 */
static bool
share_take_guarded(ShareTake *a, const char *topic, int32 partition)
{
	static int64 warned_ms = 0;
	ErrorData  *edata = kp_storage_try(share_take, a, false);

	if (edata == NULL)
		return true;
	kp_storage_warning(&warned_ms, edata,
					   psprintf("ShareFetch of group \"%s\" cannot read %s-%d", a->group_id, topic,
								(int) partition),
					   "The share-partition was answered KAFKA_STORAGE_ERROR; the other partitions of the request were served.",
					   KP_STORAGE_READ_HINT);
	FreeErrorData(edata);
	return false;
}

void
kp_handle_share_fetch(KpRequestContext *ctx)
{
	KpShareFetchRequest *req = ctx->request;
	KpShareFetchResponse *resp = ctx->response;
	OutParts	out = {0};
	ShareSession *s;
	bool		rerun = ctx->park_cookie[0] == 'S';
	bool		any_acks = false;
	int			records_left;
	int64		bytes_left;
	int			i;
	int			j;

	resp->error_code = share_request_refused(ctx, "ShareFetch", req->group_id, req->member_id,
											 &resp->error_message);
	if (resp->error_code != KP_ERR_NONE)
		return;
	resp->acquisition_lock_timeout_ms = kp_share_lock_duration_ms(req->group_id);
	s = session_find(req->group_id, req->member_id);
	if (s)
		s->last_used = GetCurrentTimestamp();

	if (!rerun)
	{
		int32		epoch = req->share_session_epoch;

		any_acks = fetch_has_acks(req);
		if (epoch == 0)
		{
			uint64		id;

			if (any_acks)
			{
				resp->error_code = KP_ERR_INVALID_REQUEST;
				resp->error_message = pstrdup("Acknowledge data present on initial fetch.");
				return;
			}
			if (s)
				session_drop(s);
			id = shared_open(req->group_id, req->member_id);
			s = id != 0 ? session_new(req->group_id, req->member_id) : NULL;
			if (s == NULL)
			{
				if (id != 0)
					shared_close(req->group_id, req->member_id);
				resp->error_code = KP_ERR_SHARE_SESSION_LIMIT_REACHED;
				resp->error_message = pstrdup("The limit of share sessions of this broker was reached.");
				return;
			}
			s->id = id;
			s->conn = ctx->conn;
		}
		else
		{
			int32		expected = 0;
			uint64		id = 0;
			SessionCheck r = shared_check(req->group_id, req->member_id, epoch, &id, &expected);

			if (r == SESSION_NOT_FOUND)
			{
				if (s)
					session_drop(s);

				/*
				 * A member closing a session the broker no longer has (made
				 * room for others when the table was full): what it holds
				 * goes back all the same, as it would with its session.
				 */
				if (epoch == -1)
					kp_share_release_member(req->group_id, req->member_id);
				resp->error_code = KP_ERR_SHARE_SESSION_NOT_FOUND;
				resp->error_message = pstrdup("The share session was not found.");
				return;
			}
			if (r == SESSION_BAD_EPOCH)
			{
				resp->error_code = KP_ERR_INVALID_SHARE_SESSION_EPOCH;
				resp->error_message = psprintf("The share session epoch %d is not the expected %d.",
											   epoch, expected);
				return;
			}
			if (epoch == -1)
			{
				/*
				 * the final request: acknowledgements only, then the session
				 * ends (its partitions are not needed, wherever they are)
				 */
				fetch_acks(ctx, req, &out);
				kp_share_release_member(req->group_id, req->member_id);
				if (s)
					session_drop(s);
				shared_close(req->group_id, req->member_id);
				fetch_respond(resp, &out);
				return;
			}
			if (s == NULL || s->id != id)
			{
				/* opened by a ShareFetch another worker served: adopt it here */
				if (s)
					session_drop(s);
				s = session_new(req->group_id, req->member_id);
				if (s == NULL)
				{
					shared_undo_epoch();
					resp->error_code = KP_ERR_SHARE_SESSION_LIMIT_REACHED;
					resp->error_message = pstrdup("The limit of share sessions of this broker was reached.");
					return;
				}
				s->id = id;
				session_adopt_assignment(s, req->group_id, req->member_id);
			}
		}

		fetch_acks(ctx, req, &out);
		for (i = 0; i < Max(req->n_topics, 0); i++)
			for (j = 0; j < Max(req->topics[i].n_partitions, 0); j++)
				session_add(s, &req->topics[i].topic_id, req->topics[i].partitions[j].partition_index);
		for (i = 0; i < Max(req->n_forgotten_topics_data, 0); i++)
			for (j = 0; j < Max(req->forgotten_topics_data[i].n_partitions, 0); j++)
				session_forget(s, &req->forgotten_topics_data[i].topic_id,
							   req->forgotten_topics_data[i].partitions[j]);
		kp_set_park_cookie(ctx, "S");
		if (req->is_renew_ack)
		{
			/* v2: acknowledgements renewing locks only; nothing is acquired */
			fetch_respond(resp, &out);
			return;
		}
	}
	else if (s == NULL || !shared_alive(req->group_id, req->member_id, s->id))
	{
		/* the session ended while this request waited */
		if (s)
			session_drop(s);
		fetch_respond(resp, &out);
		return;
	}

	/* acquire, partition after partition, within the request's limits */
	records_left = req->max_records > 0 ? req->max_records : 500;
	bytes_left = req->max_bytes > 0 ? req->max_bytes : PG_INT32_MAX;
	{
		int			n = s->n;
		int			start = n > 0 ? s->next_start % n : 0;
		bool		any = false;
		bool		busy = false;
		TimestampTz now = GetCurrentTimestamp();
		TimestampTz timer = 0;
		XLogRecPtr	hw_next_lsn = InvalidXLogRecPtr;
		int		   *keys = palloc(sizeof(int) * Max(n, 1));
		uint64	   *seen = palloc(sizeof(uint64) * Max(n, 1));
		int			nkeys = 0;
		int64		deadline_ms = ctx->received_ms + Max(req->max_wait_ms, 0);
		int64		now_ms;
		int			k;

		for (k = 0; k < n && records_left > 0 && bytes_left > 0; k++)
		{
			SessionPart *sp = &s->parts[(start + k) % n];
			const KpTopic *t = kp_handler_topic(NULL, &sp->topic_id);
			ShareTake	take;
			KpShareAcquired acq;
			OutPart    *op;
			int16		code;
			int64		partition_id = -1;

			if (t == NULL)
			{
				op = out_part(&out, &sp->topic_id, sp->partition);
				op->error_code = KP_ERR_UNKNOWN_TOPIC_ID;
				continue;
			}
			if (!kp_authz_topic(ctx, NULL, t, KP_ACL_OP_READ))
			{
				op = out_part(&out, &sp->topic_id, sp->partition);
				op->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}

			/*
			 * should this fetch park: its partition's wait bucket, read
			 * before the share-partition is, so that an append or a release
			 * committed after the acquisition's snapshot wakes it (wake.c)
			 */
			if (sp->partition >= 0 && sp->partition < t->partition_count)
			{
				char	   *message;

				partition_id = t->partition_ids[sp->partition];
				keys[nkeys] = kp_log_wait_bucket(partition_id);
				seen[nkeys] = kp_log_wait_bucket_changes(keys[nkeys]);
				nkeys++;
				if (kp_handler_no_room(partition_id, &message))
				{
					op = out_part(&out, &sp->topic_id, sp->partition);
					op->error_code = KP_ERR_KAFKA_STORAGE_ERROR;
					op->error_message = message;
					continue;
				}
			}
			take.group_id = req->group_id;
			take.topic = t;
			take.partition = sp->partition;
			take.member_id = req->member_id;
			take.max_records = records_left;
			take.record_limit = req->share_acquire_mode == 1;
			take.max_bytes = bytes_left;
			if (!ctx->storage_guard)
				share_take(&take);
			else if (!share_take_guarded(&take, t->name, sp->partition))
			{
				op = out_part(&out, &sp->topic_id, sp->partition);
				op->error_code = KP_ERR_KAFKA_STORAGE_ERROR;
				op->error_message = pstrdup("The partition's log could not be read on this broker.");
				continue;
			}
			code = take.code;
			acq = take.acq;
			if (code != KP_ERR_NONE)
			{
				op = out_part(&out, &sp->topic_id, sp->partition);
				op->error_code = code;
				continue;
			}
			if (acq.busy)
				busy = true;
			if (acq.n == 0)
			{
				/* locks of others that expire make records available */
				TimestampTz at = kp_share_expiry_timer(partition_id, now);

				if (at > 0 && (timer == 0 || at < timer))
					timer = at;
				/* records above the high watermark: acquirable when it moves */
				if (!XLogRecPtrIsInvalid(acq.hw_next_lsn) &&
					(XLogRecPtrIsInvalid(hw_next_lsn) || acq.hw_next_lsn < hw_next_lsn))
					hw_next_lsn = acq.hw_next_lsn;
				continue;
			}
			op = out_part(&out, &sp->topic_id, sp->partition);
			op->records.data = (const uint8 *) take.records.data;
			op->records.len = take.records.len;
			bytes_left -= take.records.len;
			fill_ranges(op, &acq);
			records_left -= acq.n;
			any = true;
		}
		s->next_start = start + 1;

		/*
		 * Long poll: nothing acquired, nothing acknowledged.  Woken by an
		 * append to one of its partitions or a release of their records
		 * (their wait buckets), and run again when a lock may have expired
		 * (timer) or, when a share-partition was busy with another
		 * acquisition, shortly; it answers at max_wait_ms after it arrived.
		 */
		now_ms = kp_listener_now_ms();

		/*
		 * A session of no partition has nothing to wait for: answered at
		 * once, as Kafka answers a ShareFetch with no partitions to read.
		 */
		if (n > 0 && !any && out.n == 0 && !any_acks && req->max_wait_ms > 0 && now_ms < deadline_ms)
		{
			int64		until = deadline_ms;

			if (busy)
				until = Min(until, now_ms + SHARE_BUSY_RETRY_MS);
			if (timer > 0)
				until = Min(until, timer / 1000 + 1);
			ctx->park = true;
			ctx->park_keyed = true;
			ctx->park_nkeys = nkeys;
			ctx->park_keys = keys;
			ctx->park_seen = seen;
			ctx->park_until_ms = Max(until, now_ms + 1);

			/*
			 * Records are there, above the high watermark (an acks=1 append
			 * not flushed yet): run again when it moves, as a parked Fetch
			 * does (server.c flushes for it, then the in-sync replicas'
			 * position decides); the append that woke it does not come back.
			 */
			if (!XLogRecPtrIsInvalid(hw_next_lsn))
			{
				ctx->park_on_isr = true;
				ctx->isr_wait_lsn = hw_next_lsn;
			}
			return;
		}
	}
	fetch_respond(resp, &out);
}

/* ---------------------------------------------------------------------
 * ShareAcknowledge
 * ---------------------------------------------------------------------
 */

void
kp_handle_share_acknowledge(KpRequestContext *ctx)
{
	KpShareAcknowledgeRequest *req = ctx->request;
	KpShareAcknowledgeResponse *resp = ctx->response;
	ShareSession *s;
	int			i;
	int			j;
	int			k;

	resp->error_code = share_request_refused(ctx, "ShareAcknowledge", req->group_id, req->member_id,
											 &resp->error_message);
	if (resp->error_code != KP_ERR_NONE)
		return;
	resp->acquisition_lock_timeout_ms = kp_share_lock_duration_ms(req->group_id);
	s = session_find(req->group_id, req->member_id);
	if (s)
		s->last_used = GetCurrentTimestamp();
	if (req->share_session_epoch == 0)
	{
		resp->error_code = KP_ERR_INVALID_SHARE_SESSION_EPOCH;
		resp->error_message = pstrdup("ShareAcknowledge cannot open a share session.");
		return;
	}
	/* the session may be one whose ShareFetch another worker serves */
	{
		int32		expected = 0;
		uint64		id = 0;
		SessionCheck r = shared_check(req->group_id, req->member_id, req->share_session_epoch,
									  &id, &expected);

		if (r == SESSION_NOT_FOUND)
		{
			/* closing a session the broker dropped: release all the same */
			if (req->share_session_epoch == -1)
			{
				kp_share_release_member(req->group_id, req->member_id);
				if (s)
					session_drop(s);
			}
			resp->error_code = KP_ERR_SHARE_SESSION_NOT_FOUND;
			resp->error_message = pstrdup("The share session was not found.");
			return;
		}
		if (r == SESSION_BAD_EPOCH)
		{
			resp->error_code = KP_ERR_INVALID_SHARE_SESSION_EPOCH;
			resp->error_message = psprintf("The share session epoch %d is not the expected %d.",
										   req->share_session_epoch, expected);
			return;
		}
	}

	resp->n_responses = Max(req->n_topics, 0);
	resp->responses = palloc0(sizeof(KpShareAcknowledgeResponseShareAcknowledgeTopicResponse) *
							  Max(resp->n_responses, 1));
	for (i = 0; i < resp->n_responses; i++)
	{
		KpShareAcknowledgeRequestAcknowledgeTopic *rt = &req->topics[i];
		KpShareAcknowledgeResponseShareAcknowledgeTopicResponse *ot = &resp->responses[i];

		ot->topic_id = rt->topic_id;
		ot->n_partitions = Max(rt->n_partitions, 0);
		ot->partitions = palloc0(sizeof(KpShareAcknowledgeResponsePartitionData) * Max(ot->n_partitions, 1));
		for (j = 0; j < ot->n_partitions; j++)
		{
			KpShareAcknowledgeRequestAcknowledgePartition *rp = &rt->partitions[j];
			int			nb = Max(rp->n_acknowledgement_batches, 0);
			int64	   *firsts = palloc(sizeof(int64) * Max(nb, 1));
			int64	   *lasts = palloc(sizeof(int64) * Max(nb, 1));
			int		   *ntypes = palloc(sizeof(int) * Max(nb, 1));
			int8	  **types = palloc(sizeof(int8 *) * Max(nb, 1));

			for (k = 0; k < nb; k++)
			{
				firsts[k] = rp->acknowledgement_batches[k].first_offset;
				lasts[k] = rp->acknowledgement_batches[k].last_offset;
				ntypes[k] = Max(rp->acknowledgement_batches[k].n_acknowledge_types, 0);
				types[k] = rp->acknowledgement_batches[k].acknowledge_types;
			}
			ot->partitions[j].partition_index = rp->partition_index;
			ot->partitions[j].error_code = ack_partition(ctx, req->group_id, req->member_id, &rt->topic_id,
														 rp->partition_index, nb, firsts, lasts,
														 ntypes, types);
			ot->partitions[j].current_leader.leader_id = kp_node_id;
			ot->partitions[j].current_leader.leader_epoch = LEADER_EPOCH;
		}
	}
	if (req->share_session_epoch == -1)
	{
		kp_share_release_member(req->group_id, req->member_id);
		if (s)
			session_drop(s);
		shared_close(req->group_id, req->member_id);
	}
}

/* ---------------------------------------------------------------------
 * Share-group offsets (admin)
 * ---------------------------------------------------------------------
 */

void
kp_handle_describe_share_group_offsets(KpRequestContext *ctx)
{
	KpDescribeShareGroupOffsetsRequest *req = ctx->request;
	KpDescribeShareGroupOffsetsResponse *resp = ctx->response;
	int			g;

	resp->n_groups = Max(req->n_groups, 0);
	resp->groups = palloc0(sizeof(KpDescribeShareGroupOffsetsResponseGroup) * Max(resp->n_groups, 1));
	for (g = 0; g < resp->n_groups; g++)
	{
		KpDescribeShareGroupOffsetsRequestGroup *rg = &req->groups[g];
		KpDescribeShareGroupOffsetsResponseGroup *og = &resp->groups[g];
		char	  **topics;
		int32	   *parts;
		int64	   *starts;
		int			n;
		int			i;
		int			j;

		og->group_id = pstrdup(rg->group_id ? rg->group_id : "");
		if (!group_allowed(ctx, og->group_id, KP_ACL_OP_DESCRIBE))
		{
			og->error_code = KP_ERR_GROUP_AUTHORIZATION_FAILED;
			continue;
		}

		/*
		 * As Kafka 4.4: a group with no share state (none of that name, or a
		 * consumer group) is no error; its partitions have no start offset
		 * (-1), as a topic or partition that does not exist, which is absence
		 * of data, not an error (so Admin.listShareGroupOffsets gives null
		 * offsets rather than failing).
		 */
		n = kp_share_partitions(og->group_id, &topics, &parts, &starts);
		if (rg->n_topics < 0)
		{
			/* every topic the group has state for */
			og->topics = palloc0(sizeof(KpDescribeShareGroupOffsetsResponseTopic) * Max(n, 1));
			for (i = 0; i < n; i++)
			{
				KpDescribeShareGroupOffsetsResponseTopic *ot;
				const KpTopic *t;

				if (!kp_authz_topic(ctx, topics[i], NULL, KP_ACL_OP_DESCRIBE))
					continue;	/* as Kafka: topics not authorized are left
								 * out */
				if (og->n_topics == 0 || strcmp(og->topics[og->n_topics - 1].topic_name, topics[i]) != 0)
				{
					ot = &og->topics[og->n_topics++];
					ot->topic_name = topics[i];
					t = kp_handler_topic(topics[i], NULL);
					if (t)
						memcpy(ot->topic_id.b, t->topic_uuid.data, 16);
					ot->partitions = palloc0(sizeof(KpDescribeShareGroupOffsetsResponsePartition) * n);
				}
				ot = &og->topics[og->n_topics - 1];
				ot->partitions[ot->n_partitions].partition_index = parts[i];
				ot->partitions[ot->n_partitions].start_offset = starts[i];
				ot->partitions[ot->n_partitions].leader_epoch = LEADER_EPOCH;
				ot->partitions[ot->n_partitions].lag = kp_share_lag(og->group_id, topics[i], parts[i]);
				ot->n_partitions++;
			}
			continue;
		}
		og->n_topics = rg->n_topics;
		og->topics = palloc0(sizeof(KpDescribeShareGroupOffsetsResponseTopic) * Max(og->n_topics, 1));
		for (i = 0; i < og->n_topics; i++)
		{
			KpDescribeShareGroupOffsetsRequestTopic *rt = &rg->topics[i];
			KpDescribeShareGroupOffsetsResponseTopic *ot = &og->topics[i];
			const KpTopic *t = kp_handler_topic(rt->topic_name, NULL);

			ot->topic_name = pstrdup(rt->topic_name ? rt->topic_name : "");
			if (t)
				memcpy(ot->topic_id.b, t->topic_uuid.data, 16);
			ot->n_partitions = Max(rt->n_partitions, 0);
			ot->partitions = palloc0(sizeof(KpDescribeShareGroupOffsetsResponsePartition) * Max(ot->n_partitions, 1));
			for (j = 0; j < ot->n_partitions; j++)
			{
				KpDescribeShareGroupOffsetsResponsePartition *op = &ot->partitions[j];

				op->partition_index = rt->partitions[j];
				op->leader_epoch = LEADER_EPOCH;
				if (!kp_authz_topic(ctx, ot->topic_name, t, KP_ACL_OP_DESCRIBE))
				{
					op->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
					op->start_offset = -1;
					op->lag = -1;
					continue;
				}
				if (t == NULL || op->partition_index < 0 || op->partition_index >= t->partition_count)
				{
					op->start_offset = -1;
					op->lag = -1;
					continue;
				}
				op->start_offset = kp_share_start_offset(og->group_id, ot->topic_name, op->partition_index);
				op->lag = op->start_offset < 0 ? -1 : kp_share_lag(og->group_id, ot->topic_name, op->partition_index);
			}
		}
	}
}

void
kp_handle_alter_share_group_offsets(KpRequestContext *ctx)
{
	KpAlterShareGroupOffsetsRequest *req = ctx->request;
	KpAlterShareGroupOffsetsResponse *resp = ctx->response;
	int16		group_code;
	int			i;
	int			j;

	group_code = group_allowed(ctx, req->group_id, KP_ACL_OP_READ) ?
		kp_share_admin_check_empty(req->group_id ? req->group_id : "", true) :
		KP_ERR_GROUP_AUTHORIZATION_FAILED;
	resp->error_code = group_code;
	resp->n_responses = Max(req->n_topics, 0);
	resp->responses = palloc0(sizeof(KpAlterShareGroupOffsetsResponseTopic) * Max(resp->n_responses, 1));
	for (i = 0; i < resp->n_responses; i++)
	{
		KpAlterShareGroupOffsetsRequestTopic *rt = &req->topics[i];
		KpAlterShareGroupOffsetsResponseTopic *ot = &resp->responses[i];
		const KpTopic *t = kp_handler_topic(rt->topic_name, NULL);

		ot->topic_name = pstrdup(rt->topic_name ? rt->topic_name : "");
		if (t)
			memcpy(ot->topic_id.b, t->topic_uuid.data, 16);
		ot->n_partitions = Max(rt->n_partitions, 0);
		ot->partitions = palloc0(sizeof(KpAlterShareGroupOffsetsResponsePartition) * Max(ot->n_partitions, 1));
		for (j = 0; j < ot->n_partitions; j++)
		{
			KpAlterShareGroupOffsetsResponsePartition *op = &ot->partitions[j];

			op->partition_index = rt->partitions[j].partition_index;
			if (group_code != KP_ERR_NONE)
				op->error_code = group_code;
			else if (!kp_authz_topic(ctx, ot->topic_name, t, KP_ACL_OP_READ))
				op->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
			else if (t == NULL || op->partition_index < 0 || op->partition_index >= t->partition_count)
				op->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
			else if (kp_handler_no_room(t->partition_ids[op->partition_index], &op->error_message))
				op->error_code = KP_ERR_KAFKA_STORAGE_ERROR;
			else
				op->error_code = kp_share_alter_start_offset(req->group_id, t, op->partition_index,
															 rt->partitions[j].start_offset);
		}
	}
}

void
kp_handle_delete_share_group_offsets(KpRequestContext *ctx)
{
	KpDeleteShareGroupOffsetsRequest *req = ctx->request;
	KpDeleteShareGroupOffsetsResponse *resp = ctx->response;
	int16		group_code;
	int			i;

	if (!group_allowed(ctx, req->group_id, KP_ACL_OP_DELETE))
	{
		resp->error_code = KP_ERR_GROUP_AUTHORIZATION_FAILED;
		return;
	}
	group_code = kp_share_admin_check_empty(req->group_id ? req->group_id : "", false);
	resp->error_code = group_code;
	if (group_code != KP_ERR_NONE)
	{
		resp->error_message = pstrdup(group_code == KP_ERR_NON_EMPTY_GROUP ?
									  "The group has active members." : "The group is not a share group.");
		return;
	}
	resp->n_responses = Max(req->n_topics, 0);
	resp->responses = palloc0(sizeof(KpDeleteShareGroupOffsetsResponseTopic) * Max(resp->n_responses, 1));
	for (i = 0; i < resp->n_responses; i++)
	{
		KpDeleteShareGroupOffsetsResponseTopic *ot = &resp->responses[i];
		const KpTopic *t = kp_handler_topic(req->topics[i].topic_name, NULL);

		ot->topic_name = pstrdup(req->topics[i].topic_name ? req->topics[i].topic_name : "");
		if (!kp_authz_topic(ctx, ot->topic_name, t, KP_ACL_OP_READ))
		{
			ot->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
			continue;
		}
		if (t == NULL)
		{
			ot->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
			continue;
		}
		memcpy(ot->topic_id.b, t->topic_uuid.data, 16);
		kp_share_delete_topic_state(req->group_id, t->name);
	}
}

/* ---------------------------------------------------------------------
 * Share groups in ListGroups, DescribeGroups and DeleteGroups
 * ---------------------------------------------------------------------
 */

void
kp_share_list_groups(KpRequestContext *ctx, KpListGroupsRequest *req, KpListGroupsResponse *resp)
{
	char	  **ids;
	char	  **states;
	int			n = kp_share_list(&ids, &states);
	bool		all = kp_authz_cluster(ctx, KP_ACL_OP_DESCRIBE);
	int			i;
	int			k;

	if (n == 0)
		return;
	if (req->n_types_filter > 0)
	{
		bool		match = false;

		for (k = 0; k < req->n_types_filter; k++)
			if (req->types_filter[k] && pg_strcasecmp(req->types_filter[k], "share") == 0)
				match = true;
		if (!match)
			return;
	}
	resp->groups = repalloc(resp->groups, sizeof(KpListGroupsResponseListedGroup) * (resp->n_groups + n + 1));
	for (i = 0; i < n; i++)
	{
		KpListGroupsResponseListedGroup *g;

		if (!all && !group_allowed(ctx, ids[i], KP_ACL_OP_DESCRIBE))
			continue;
		if (req->n_states_filter > 0)
		{
			bool		match = false;

			for (k = 0; k < req->n_states_filter; k++)
				if (req->states_filter[k] && pg_strcasecmp(req->states_filter[k], states[i]) == 0)
					match = true;
			if (!match)
				continue;
		}
		g = &resp->groups[resp->n_groups++];
		memset(g, 0, sizeof(*g));
		g->group_id = ids[i];
		g->protocol_type = pstrdup("share");
		g->group_type = pstrdup("share");
		g->group_state = states[i];
	}
}

bool
kp_share_refuse_other_protocol(KpRequestContext *ctx, const char *group_id)
{
	bool		join = ctx->api->api_key == KP_API_JOIN_GROUP;

	if (group_id == NULL || group_id[0] == '\0' || !kp_share_group_exists_for_admin(group_id))
		return false;

	/*
	 * Kafka's answers: the protocol of a classic join does not match; not a
	 * consumer group
	 */
	kp_error_response(ctx->api, ctx->version, ctx->request, ctx->response,
					  join ? KP_ERR_INCONSISTENT_GROUP_PROTOCOL : KP_ERR_GROUP_ID_NOT_FOUND,
					  join ? NULL : psprintf("Group %s is not a consumer group.", group_id));
	return true;
}
