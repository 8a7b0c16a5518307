/*-------------------------------------------------------------------------
 *
 * fetch_session.c
 *	  Incremental fetch sessions (KIP-227), as Kafka's FetchSession keeps
 *	  them: a full Fetch (session epoch 0) creates a session holding its
 *	  partitions and what was last answered for each; an incremental one
 *	  (epoch > 0) lists only the partitions it adds or changes and those it
 *	  forgets, and is answered only the partitions with records, an error,
 *	  or a new high watermark or log start offset (Kafka's rule: the last
 *	  stable offset alone does not count), plus a preferred read replica or
 *	  a diverging epoch.
 *
 *	  The cache is the worker's (a connection stays on its worker), and a
 *	  session belongs to the connection that created it: it dies with it,
 *	  and its id sent on any other connection is FETCH_SESSION_ID_NOT_FOUND,
 *	  after which the client fetches in full again (Kafka's sessions outlive
 *	  a connection; clients start a new session after a reconnect anyway).
 *	  kafka.max_incremental_fetch_session_cache_slots is split evenly over
 *	  the workers, as Kafka splits it over the shards of its cache; a full
 *	  cache evicts as Kafka's does (a session unused for two minutes, else a
 *	  smaller one at least two minutes old, a replica's fetch any consumer's)
 *	  or answers session id 0: the client then fetches in full, sessionless.
 *
 *	  Every session has a memory context of its own under the worker's
 *	  "kafka_pg fetch sessions", deleted with the session.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "common/hashfn.h"
#include "common/pg_prng.h"
#include "lib/ilist.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "listener/fetch_session.h"
#include "listener/listener.h"
#include "listener/listener_int.h"

/* Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS */
#define FETCH_SESSION_EVICTION_MS	120000

int			kp_max_incremental_fetch_session_cache_slots = 1000;

/* One partition of a session: Kafka's CachedPartition */
typedef struct FsPart
{
	char	   *topic;			/* by name (v7-12 sessions) */
	KpUuid		topic_id;		/* by id (v13+ sessions) */
	int32		partition;
	uint32		hash;
	/* the request's, as last sent */
	int32		current_leader_epoch;
	int32		last_fetched_epoch;
	int32		max_bytes;
	int64		fetch_offset;
	int64		fetcher_log_start_offset;
	/* the response's, as last answered (-1: answer it next time) */
	int64		high_watermark;
	int64		log_start_offset;
} FsPart;

typedef struct KpFetchSession
{
	dlist_node	lru;			/* the worker's sessions, least recently used
								 * first */
	struct KpFetchSession *conn_next;	/* the connection's sessions */
	KpConn	   *conn;
	MemoryContext cxt;
	int32		id;
	int32		epoch;			/* the epoch the next request must carry */
	bool		by_id;
	bool		privileged;
	bool		fresh;			/* created, no incremental fetch yet */
	int64		created_ms;
	int64		last_used_ms;
	int			nparts;
	int			maxparts;
	FsPart	   *parts;			/* in the session's order */
	int			nslots;			/* a power of two */
	int32	   *slots;			/* index + 1 into parts; 0: empty */
} KpFetchSession;

static MemoryContext sessions_cxt = NULL;
static dlist_head sessions_lru = DLIST_STATIC_INIT(sessions_lru);
static int	nsessions = 0;

void
kp_fetch_session_define_settings(void)
{
	DefineCustomIntVariable("kafka.max_incremental_fetch_session_cache_slots",
							"Most incremental fetch sessions (KIP-227) kept at once (Kafka's max.incremental.fetch.session.cache.slots).",
							"Split evenly over the listener workers; 0 answers every Fetch without a session.",
							&kp_max_incremental_fetch_session_cache_slots, 1000, 0, INT_MAX,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
}

static int
worker_slots(void)
{
	int			workers = Max(kp_listener_workers, 1);

	if (kp_max_incremental_fetch_session_cache_slots <= 0)
		return 0;
	return (int) (((int64) kp_max_incremental_fetch_session_cache_slots + workers - 1) / workers);
}

/* ---------------------------------------------------------------------
 * A session's partitions: an array in order, and an open-addressing index
 * ---------------------------------------------------------------------
 */

static uint32
part_hash(bool by_id, const char *topic, const KpUuid *id, int32 partition)
{
	uint32		h;

	if (by_id)
		h = hash_bytes(id->b, 16);
	else
		h = hash_bytes((const unsigned char *) topic, (int) strlen(topic));
	return hash_combine(h, murmurhash32((uint32) partition));
}

static bool
part_matches(const KpFetchSession *s, const FsPart *p, const char *topic, const KpUuid *id,
			 int32 partition, uint32 hash)
{
	if (p->hash != hash || p->partition != partition)
		return false;
	if (s->by_id)
		return memcmp(p->topic_id.b, id->b, 16) == 0;
	return strcmp(p->topic, topic) == 0;
}

static void
index_rebuild(KpFetchSession *s)
{
	int			want = 16;
	int			i;

	while (want < s->nparts * 2)
		want *= 2;
	if (s->slots == NULL || s->nslots != want)
	{
		if (s->slots)
			pfree(s->slots);
		s->slots = MemoryContextAlloc(s->cxt, sizeof(int32) * want);
		s->nslots = want;
	}
	memset(s->slots, 0, sizeof(int32) * s->nslots);
	for (i = 0; i < s->nparts; i++)
	{
		uint32		k = s->parts[i].hash & (s->nslots - 1);

		while (s->slots[k] != 0)
			k = (k + 1) & (s->nslots - 1);
		s->slots[k] = i + 1;
	}
}

static int
part_find(const KpFetchSession *s, const char *topic, const KpUuid *id, int32 partition,
		  uint32 hash)
{
	uint32		k = hash & (s->nslots - 1);

	while (s->slots[k] != 0)
	{
		const FsPart *p = &s->parts[s->slots[k] - 1];

		if (part_matches(s, p, topic, id, partition, hash))
			return s->slots[k] - 1;
		k = (k + 1) & (s->nslots - 1);
	}
	return -1;
}

static void
part_set_request(FsPart *p, const KpFetchRequestFetchPartition *rp)
{
	p->current_leader_epoch = rp->current_leader_epoch;
	p->last_fetched_epoch = rp->last_fetched_epoch;
	p->max_bytes = rp->partition_max_bytes;
	p->fetch_offset = rp->fetch_offset;
	p->fetcher_log_start_offset = rp->log_start_offset;
}

/* Append a partition (not in the session yet); the index is kept. */
static FsPart *
part_add(KpFetchSession *s, const char *topic, const KpUuid *id, int32 partition, uint32 hash)
{
	FsPart	   *p;

	if (s->nparts == s->maxparts)
	{
		int			newmax = Max(16, s->maxparts * 2);

		/* the capacity once the memory is there (an ERROR of repalloc) */
		s->parts = s->parts ?
			repalloc(s->parts, sizeof(FsPart) * newmax) :
			MemoryContextAlloc(s->cxt, sizeof(FsPart) * newmax);
		s->maxparts = newmax;
	}
	p = &s->parts[s->nparts++];
	memset(p, 0, sizeof(*p));
	if (s->by_id)
		memcpy(p->topic_id.b, id->b, 16);
	else
		p->topic = MemoryContextStrdup(s->cxt, topic);
	p->partition = partition;
	p->hash = hash;
	p->high_watermark = -1;
	p->log_start_offset = -1;
	if (s->nparts * 2 > s->nslots)
		index_rebuild(s);
	else
	{
		uint32		k = hash & (s->nslots - 1);

		while (s->slots[k] != 0)
			k = (k + 1) & (s->nslots - 1);
		s->slots[k] = s->nparts;
	}
	return p;
}

/* ---------------------------------------------------------------------
 * The worker's cache
 * ---------------------------------------------------------------------
 */

static void
session_free(KpFetchSession *s)
{
	KpFetchSession **pp;

	for (pp = &s->conn->fetch_sessions; *pp; pp = &(*pp)->conn_next)
	{
		if (*pp == s)
		{
			*pp = s->conn_next;
			break;
		}
	}
	dlist_delete(&s->lru);
	nsessions--;
	MemoryContextDelete(s->cxt);	/* s is in it */
}

static KpFetchSession *
session_of_conn(KpConn *c, int32 id)
{
	KpFetchSession *s;

	for (s = c->fetch_sessions; s; s = s->conn_next)
		if (s->id == id)
			return s;
	return NULL;
}

static void
session_touch(KpFetchSession *s, int64 now)
{
	s->last_used_ms = now;
	dlist_delete(&s->lru);
	dlist_push_tail(&sessions_lru, &s->lru);
}

/*
 * A full cache: evict as Kafka's FetchSessionCache.tryEvict does.  The
 * session least recently used if it is stale; else the least valuable of
 * the evictable ones (a consumer's before a replica's, then fewer
 * partitions, then lower id) if the new one is worth more: a replica's
 * against a consumer's, or more partitions.  A consumer's session
 * becomes evictable by anyone two minutes after it was created; a
 * privileged fetch may evict a consumer's at once.
 */
static bool
try_evict(bool privileged, int size, int64 now)
{
	dlist_iter	it;
	KpFetchSession *victim = NULL;

	if (dlist_is_empty(&sessions_lru))
		return false;
	victim = dlist_head_element(KpFetchSession, lru, &sessions_lru);
	if (now - victim->last_used_ms > FETCH_SESSION_EVICTION_MS)
	{
		elog(DEBUG1, "kafka_pg listener: evicting the stale fetch session %d", victim->id);
		session_free(victim);
		return true;
	}
	victim = NULL;
	dlist_foreach(it, &sessions_lru)
	{
		KpFetchSession *s = dlist_container(KpFetchSession, lru, it.cur);
		bool		old = now - s->created_ms > FETCH_SESSION_EVICTION_MS;

		if (!(old || (privileged && !s->privileged)))
			continue;
		if (victim == NULL ||
			(s->privileged != victim->privileged ? !s->privileged :
			 s->nparts != victim->nparts ? s->nparts < victim->nparts :
			 s->id < victim->id))
			victim = s;
	}
	if (victim == NULL)
		return false;
	/* the new session's key (its id 0) must not be below the victim's */
	if (privileged != victim->privileged ? !privileged : size <= victim->nparts)
		return false;
	elog(DEBUG1, "kafka_pg listener: evicting fetch session %d (%d partitions) for one of %d",
		 victim->id, victim->nparts, size);
	session_free(victim);
	return true;
}

static int32
new_session_id(void)
{
	for (;;)
	{
		int32		id = (int32) (pg_prng_uint32(&pg_global_prng_state) & 0x7fffffff);
		dlist_iter	it;
		bool		taken = false;

		if (id == 0)
			continue;
		dlist_foreach(it, &sessions_lru)
		{
			if (dlist_container(KpFetchSession, lru, it.cur)->id == id)
			{
				taken = true;
				break;
			}
		}
		if (!taken)
			return id;
	}
}

static KpFetchSession *
session_create(KpConn *c, bool by_id, bool privileged, int size, int64 now)
{
	MemoryContext cxt;
	KpFetchSession *s;

	if (nsessions >= worker_slots() && !(worker_slots() > 0 && try_evict(privileged, size, now)))
		return NULL;
	if (sessions_cxt == NULL)
		sessions_cxt = AllocSetContextCreate(TopMemoryContext, "kafka_pg fetch sessions",
											 ALLOCSET_DEFAULT_SIZES);
	cxt = AllocSetContextCreate(sessions_cxt, "kafka_pg fetch session", ALLOCSET_SMALL_SIZES);
	s = MemoryContextAllocZero(cxt, sizeof(KpFetchSession));
	s->cxt = cxt;
	s->conn = c;
	s->id = new_session_id();
	s->epoch = 1;
	s->by_id = by_id;
	s->privileged = privileged;
	s->fresh = true;
	s->created_ms = now;
	s->last_used_ms = now;
	index_rebuild(s);
	s->conn_next = c->fetch_sessions;
	c->fetch_sessions = s;
	dlist_push_tail(&sessions_lru, &s->lru);
	nsessions++;
	return s;
}

void
kp_fetch_sessions_conn_closed(KpConn *c)
{
	while (c->fetch_sessions)
		session_free(c->fetch_sessions);
}

bool
kp_fetch_session_throttled(KpConn *c, int32 session_id)
{
	KpFetchSession *s;
	int			i;

	if (session_id == 0 || (s = session_of_conn(c, session_id)) == NULL)
		return false;

	/*
	 * A session created by this response: Kafka creates none for a throttled
	 * full fetch (the client starts again with a full fetch)
	 */
	if (s->fresh)
	{
		session_free(s);
		return true;
	}
	/* nothing of the response arrived: answer every partition next time */
	for (i = 0; i < s->nparts; i++)
		s->parts[i].high_watermark = -1;
	return false;
}

/* ---------------------------------------------------------------------
 * A Fetch's session
 * ---------------------------------------------------------------------
 */

static int32
next_epoch(int32 epoch)
{
	return epoch == PG_INT32_MAX ? 1 : epoch + 1;
}

static const char *
topic_name(const char *t)
{
	return t ? t : "";
}

/* req->topics: every partition of the session, consecutive ones of a topic grouped */
static void
session_listing(KpFetchSession *s, KpFetchRequest *req)
{
	KpFetchRequestFetchTopic *topics = palloc0(sizeof(KpFetchRequestFetchTopic) * Max(s->nparts, 1));
	KpFetchRequestFetchPartition *parts = palloc0(sizeof(KpFetchRequestFetchPartition) * Max(s->nparts, 1));
	int			ntopics = 0;
	int			i;

	for (i = 0; i < s->nparts; i++)
	{
		FsPart	   *p = &s->parts[i];
		KpFetchRequestFetchPartition *rp = &parts[i];
		KpFetchRequestFetchTopic *t = ntopics > 0 ? &topics[ntopics - 1] : NULL;

		if (t == NULL ||
			(s->by_id ? memcmp(t->topic_id.b, p->topic_id.b, 16) != 0 :
			 strcmp(t->topic, p->topic) != 0))
		{
			t = &topics[ntopics++];
			t->topic = p->topic;
			memcpy(t->topic_id.b, p->topic_id.b, 16);
			t->partitions = rp;
			t->n_partitions = 0;
		}
		t->n_partitions++;
		rp->partition = p->partition;
		rp->current_leader_epoch = p->current_leader_epoch;
		rp->fetch_offset = p->fetch_offset;
		rp->last_fetched_epoch = p->last_fetched_epoch;
		rp->log_start_offset = p->fetcher_log_start_offset;
		rp->partition_max_bytes = p->max_bytes;
	}
	req->topics = topics;
	req->n_topics = ntopics;
}

void
kp_fetch_session_begin(KpRequestContext *ctx, KpFetchRequest *req, KpFetchSessionRun *run)
{
	KpConn	   *c = ctx->conn;
	KpFetchSession *s;
	int32		replica = ctx->version >= 15 ? req->replica_state.replica_id : req->replica_id;
	int64		now = kp_listener_now_ms();
	bool		rerun = false;
	int32		cookie_id;
	int32		cookie_epoch;
	int			i;
	int			j;

	memset(run, 0, sizeof(*run));
	run->by_id = ctx->version >= 13;
	run->privileged = replica >= 0;
	run->mode = KP_FETCH_SESSIONLESS;
	if (ctx->version < 7)
		return;

	/*
	 * full: epoch 0 (create a session) or -1 (none); a session named is
	 * closed
	 */
	if (req->session_epoch == 0 || req->session_epoch == -1)
	{
		if (req->session_id != 0 && (s = session_of_conn(c, req->session_id)) != NULL)
			session_free(s);
		run->mode = req->session_epoch == 0 ? KP_FETCH_FULL : KP_FETCH_SESSIONLESS;
		return;
	}

	run->mode = KP_FETCH_SESSION_ERROR;
	s = req->session_id != 0 ? session_of_conn(c, req->session_id) : NULL;
	if (s == NULL)
	{
		run->error = KP_ERR_FETCH_SESSION_ID_NOT_FOUND;
		return;
	}

	/*
	 * A parked incremental fetch run again: its update and its epoch step
	 * were done by its first run, which noted the epoch it left.
	 */
	if (sscanf(ctx->park_cookie, "fetch session %d %d", &cookie_id, &cookie_epoch) == 2 &&
		cookie_id == s->id)
	{
		if (s->epoch != cookie_epoch)
		{
			run->error = KP_ERR_INVALID_FETCH_SESSION_EPOCH;
			return;
		}
		rerun = true;
	}
	else if (req->session_epoch != s->epoch)
	{
		run->error = KP_ERR_INVALID_FETCH_SESSION_EPOCH;
		return;
	}
	else if (s->by_id != run->by_id)
	{
		run->error = KP_ERR_FETCH_SESSION_TOPIC_ID_ERROR;
		return;
	}

	if (!rerun)
	{
		/*
		 * added and changed partitions, then the forgotten ones (Kafka's
		 * order)
		 */
		for (i = 0; i < Max(req->n_topics, 0); i++)
		{
			KpFetchRequestFetchTopic *rt = &req->topics[i];
			const char *name = topic_name(rt->topic);

			for (j = 0; j < Max(rt->n_partitions, 0); j++)
			{
				KpFetchRequestFetchPartition *rp = &rt->partitions[j];
				uint32		h = part_hash(s->by_id, name, &rt->topic_id, rp->partition);
				int			k = part_find(s, name, &rt->topic_id, rp->partition, h);
				FsPart	   *p;

				if (k >= 0)
					p = &s->parts[k];
				else
					p = part_add(s, name, &rt->topic_id, rp->partition, h);
				part_set_request(p, rp);
			}
		}
		if (req->n_forgotten_topics_data > 0)
		{
			bool	   *gone = palloc0(sizeof(bool) * Max(s->nparts, 1));
			bool		removed = false;
			int			n = 0;

			for (i = 0; i < req->n_forgotten_topics_data; i++)
			{
				KpFetchRequestForgottenTopic *ft = &req->forgotten_topics_data[i];
				const char *name = topic_name(ft->topic);

				for (j = 0; j < Max(ft->n_partitions, 0); j++)
				{
					uint32		h = part_hash(s->by_id, name, &ft->topic_id, ft->partitions[j]);
					int			k = part_find(s, name, &ft->topic_id, ft->partitions[j], h);

					if (k >= 0)
						gone[k] = removed = true;
				}
			}
			if (removed)
			{
				for (i = 0; i < s->nparts; i++)
				{
					if (gone[i])
					{
						if (s->parts[i].topic)
							pfree(s->parts[i].topic);
						continue;
					}
					s->parts[n++] = s->parts[i];
				}
				s->nparts = n;
				index_rebuild(s);
			}
			pfree(gone);
		}

		/* nothing left: Kafka closes the session and answers sessionless */
		if (s->nparts == 0)
		{
			session_free(s);
			run->mode = KP_FETCH_SESSIONLESS;
			return;
		}
		session_touch(s, now);
		s->epoch = next_epoch(s->epoch);
		kp_set_park_cookie(ctx, psprintf("fetch session %d %d", s->id, s->epoch));
	}
	s->fresh = false;
	run->mode = KP_FETCH_INCREMENTAL;
	run->session = s;
	session_listing(s, req);
}

/*
 * Kafka's CachedPartition.maybeUpdateResponseData: must the partition be
 * in the response?  The answer is remembered for the next one.
 */
static bool
must_respond(FsPart *p, const KpFetchResponsePartitionData *op)
{
	bool		must = false;

	if (op->records.len > 0)
		must = true;
	if (p->high_watermark != op->high_watermark)
	{
		p->high_watermark = op->high_watermark;
		must = true;
	}
	if (p->log_start_offset != op->log_start_offset)
	{
		p->log_start_offset = op->log_start_offset;
		must = true;
	}
	if (op->preferred_read_replica >= 0)
		must = true;
	if (op->error_code != KP_ERR_NONE)
	{
		/* answered again once the error is gone */
		p->high_watermark = -1;
		must = true;
	}
	if (op->diverging_epoch.epoch != -1 || op->diverging_epoch.end_offset != -1)
		must = true;
	return must;
}

void
kp_fetch_session_finish(KpRequestContext *ctx, KpFetchRequest *req, KpFetchResponse *resp,
						KpFetchSessionRun *run)
{
	KpFetchSession *s;
	int			i;
	int			j;
	int			k;

	resp->session_id = 0;
	if (run->mode == KP_FETCH_FULL)
	{
		int			size = 0;

		for (i = 0; i < resp->n_responses; i++)
			size += resp->responses[i].n_partitions;
		s = session_create(ctx->conn, run->by_id, run->privileged, size, kp_listener_now_ms());
		if (s == NULL)
			return;				/* a full cache: sessionless */
		for (i = 0; i < resp->n_responses; i++)
		{
			KpFetchRequestFetchTopic *rt = &req->topics[i];
			const char *name = topic_name(rt->topic);

			for (j = 0; j < resp->responses[i].n_partitions; j++)
			{
				KpFetchRequestFetchPartition *rp = &rt->partitions[j];
				KpFetchResponsePartitionData *op = &resp->responses[i].partitions[j];
				uint32		h = part_hash(s->by_id, name, &rt->topic_id, rp->partition);
				FsPart	   *p;

				/* the listing was merged: no partition twice */
				p = part_add(s, name, &rt->topic_id, rp->partition, h);
				part_set_request(p, rp);
				p->high_watermark = op->high_watermark;
				p->log_start_offset = op->log_start_offset;
			}
		}
		resp->session_id = s->id;
		return;
	}
	if (run->mode != KP_FETCH_INCREMENTAL)
		return;

	/* the response's partitions are the session's, in its order */
	s = run->session;
	resp->session_id = s->id;
	{
		KpFetchResponseFetchableTopicResponse *topics;
		int			ntopics = 0;
		int		   *with_records = palloc(sizeof(int) * Max(s->nparts, 1));
		int			nwith = 0;

		topics = palloc0(sizeof(KpFetchResponseFetchableTopicResponse) * Max(resp->n_responses, 1));
		k = 0;
		for (i = 0; i < resp->n_responses; i++)
		{
			KpFetchResponseFetchableTopicResponse *ot = &resp->responses[i];
			int			kept = 0;

			for (j = 0; j < ot->n_partitions; j++, k++)
			{
				Assert(k < s->nparts && s->parts[k].partition == ot->partitions[j].partition_index);
				if (ot->partitions[j].records.len > 0)
					with_records[nwith++] = k;
				if (must_respond(&s->parts[k], &ot->partitions[j]))
					ot->partitions[kept++] = ot->partitions[j];
			}
			if (kept > 0)
			{
				ot->n_partitions = kept;
				topics[ntopics++] = *ot;
			}
		}
		resp->responses = topics;
		resp->n_responses = ntopics;

		/*
		 * Partitions that returned records go to the end of the session's
		 * order, so that a response full to max_bytes leaves the others first
		 * in line next time (Kafka does the same).
		 */
		if (nwith > 0 && !(nwith == s->nparts ||
						   with_records[0] == s->nparts - nwith))
		{
			FsPart	   *order = palloc(sizeof(FsPart) * s->nparts);
			int			n = 0;
			int			w = 0;

			for (i = 0; i < s->nparts; i++)
			{
				if (w < nwith && with_records[w] == i)
				{
					w++;
					continue;
				}
				order[n++] = s->parts[i];
			}
			for (w = 0; w < nwith; w++)
				order[n++] = s->parts[with_records[w]];
			memcpy(s->parts, order, sizeof(FsPart) * s->nparts);
			index_rebuild(s);
		}
	}
}
