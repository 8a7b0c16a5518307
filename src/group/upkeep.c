/*-------------------------------------------------------------------------
 *
 * upkeep.c
 *	  What the coordinator does by the clock, not by a request: expire
 *	  members whose session ended, finish join phases whose deadline passed,
 *	  and drop the offsets past offsets.retention.minutes (Kafka's
 *	  conditions: kp_cat_offsets_expire).
 *
 * The resolver worker (src/txn/resolver.c) runs kp_group_expire in its own
 * transaction, once a second and at the moment kp_group_next_upkeep names:
 * the earliest session end or join deadline still to come.  So a member is
 * removed at its session timeout, as Kafka's timer does it, not up to a
 * second later.  Each group the upkeep acts on is locked (the group lock)
 * and looked at again under the lock, so a heartbeat that came in meanwhile
 * wins.
 *
 * The upkeep waits for no group lock: a SQL transaction still open may hold
 * one (kafka.group_heartbeat run inside a longer transaction), and the
 * resolver waiting for it would write no transaction markers meanwhile, so
 * that read_committed consumers of every topic stalled (by hand until
 * 2026-12-05: the last stable offset stayed put for as long as the SQL
 * transaction did).  Each group's upkeep runs in a subtransaction with
 * kp_group_locks_nowait set; a group whose lock is taken is rolled back and
 * left for a later pass, which the resolver makes soon (its caller's
 * retry), and the offsets' expiry skips rows a transaction holds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "common/subxact.h"
#include "group/group_int.h"

/*
 * A consumer-protocol group: drop the members silent for longer than the
 * group's consumer.session.timeout.ms, and those told to give partitions up
 * that have not within their rebalance timeout (Kafka fences them: "failed
 * to transition from epoch"); the epoch moves on.
 */
static void
expire_consumer_members(const char *group_id)
{
	int			silent = kp_cat_members_delete_expired(group_id,
													   kp_group_consumer_session_ms(group_id), -2,
													   NULL);
	int			unrevoked = kp_cat_members_delete_unrevoked(group_id);

	if (silent > 0)
		ereport(LOG,
				(errmsg("kafka_pg: %d member%s of consumer group \"%s\" missed their session timeout",
						silent, silent == 1 ? "" : "s", group_id)));
	if (unrevoked > 0)
		ereport(LOG,
				(errmsg("kafka_pg: %d member%s of consumer group \"%s\" did not give partitions up within their rebalance timeout",
						unrevoked, unrevoked == 1 ? "" : "s", group_id)));
	if (silent + unrevoked > 0)
		kp_cat_group_consumer_members_gone(group_id);
}

/*
 * A classic group: drop the silent members (not those waiting in a join of
 * the round in progress) and rebalance the rest (not for pending members
 * alone); else finish a join phase that may finish, or restart one whose
 * leader never sent its assignment.
 */
static void
upkeep_classic_group(const char *group_id, KpGroupRow *g)
{
	int			removed;
	int			pending;

	removed = kp_cat_members_delete_expired(group_id, -1,
											strcmp(g->state, "PreparingRebalance") == 0 ? g->round : -2,
											&pending);
	if (removed > 0)
	{
		ereport(LOG,
				(errmsg("kafka_pg: %d member%s of group \"%s\" missed their session timeout",
						removed, removed == 1 ? "" : "s", group_id),
				 pending > 0 ? errdetail("%d of them pending (handed an id by MEMBER_ID_REQUIRED, never joined with it).",
										 pending) : 0));
		kp_group_after_members_removed(group_id, g, removed > pending);
	}
	else if (strcmp(g->state, "PreparingRebalance") == 0)
		kp_group_try_complete_join(group_id, g);
	else if (strcmp(g->state, "CompletingRebalance") == 0 && g->deadline_ms >= 0 &&
			 kp_group_now_ms() > g->deadline_ms)
	{
		/* the leader never sent its assignment: start over */
		KpMemberRow *m;
		int			nm = kp_cat_members_load(group_id, &m);

		kp_group_start_rebalance(group_id, g, m, nm);
		kp_group_save(group_id, g);
	}
}

static void
upkeep_group(void *arg)
{
	const char *group_id = arg;
	KpGroupRow	g;

	kp_cat_group_read(group_id, false, true, &g);
	if (!g.exists)
		return;
	if (strcmp(g.protocol_type, "consumer") == 0 && strcmp(g.group_type, "consumer") == 0)
		expire_consumer_members(group_id);
	else
		upkeep_classic_group(group_id, &g);
}

/*
 * upkeep_group in a subtransaction, the group's lock taken only if free:
 * false (nothing done) if it was not.  Any other error is raised.
 */
static bool
try_upkeep_group(const char *group_id)
{
	ErrorData  *edata;

	kp_group_locks_nowait = true;
	edata = kp_try_subxact(upkeep_group, (void *) group_id);
	kp_group_locks_nowait = false;
	if (edata == NULL)
		return true;
	if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
		ReThrowError(edata);
	ereport(DEBUG1,
			(errmsg_internal("kafka_pg: group upkeep of \"%s\" left for later: %s",
							 group_id, edata->message)));
	FreeErrorData(edata);
	return false;
}

/*
 * The topics a classic member subscribes to, from its metadata for the
 * group's protocol (Kafka's ConsumerProtocolSubscription); false if it has
 * none or they do not decode.
 */
static bool
member_topics(const KpMemberRow *m, const char *protocol, char ***topics, int *ntopics)
{
	KpConsumerProtocolSubscription sub;
	KpBlob		md = {NULL, -1};
	int			k;
	KpError		err;

	for (k = 0; k < m->nprotocols; k++)
		if (protocol && m->protocol_names[k] && strcmp(m->protocol_names[k], protocol) == 0)
			md = m->protocol_metadata[k];

	/*
	 * As Kafka's ClassicGroup.computeSubscribedTopics: whatever version the
	 * int16 first says, the rest is read as version 0, the prefix of every
	 * version (the topics), so a subscription that says version 1 and stops
	 * after its user data (platformatic/kafka's) still names its topics.
	 */
	if (md.len < 2)
		return false;
	if (!kp_decode(&kp_ConsumerProtocolSubscription_desc, 0, (const uint8 *) md.data + 2, md.len - 2,
				   &sub, &err) && err.code != KP_DECODE_TRAILING_BYTES)
		return false;
	for (k = 0; k < sub.n_topics; k++)
		if (sub.topics[k])
		{
			*topics = *topics ? repalloc(*topics, sizeof(char *) * (*ntopics + 1)) :
				palloc(sizeof(char *));
			(*topics)[(*ntopics)++] = sub.topics[k];
		}
	return true;
}

/*
 * The topics a classic group's members subscribe to, by their metadata for
 * the group's protocol (Kafka's ClassicGroup.subscribedTopics): the number
 * of members read, or -1 when one's subscription does not decode (the set
 * is then unknown).
 */
int
kp_group_classic_subscriptions(const char *group_id, const char *protocol, char ***topics, int *ntopics)
{
	KpMemberRow *members;
	int			nmembers = kp_cat_members_load(group_id, &members);
	int			n = 0;
	int			j;

	*topics = NULL;
	*ntopics = 0;
	for (j = 0; j < nmembers; j++)
	{
		if (KP_MEMBER_PENDING(&members[j]))
			continue;
		if (!member_topics(&members[j], protocol, topics, ntopics))
			return -1;
		n++;
	}
	return n;
}

/*
 * Kafka's ClassicGroup.offsetExpirationCondition for a Stable group of
 * protocol type "consumer": offsets of topics none of its members subscribes
 * to expire by their commit time (a group whose members' subscriptions do
 * not all decode keeps them all, as Kafka's subscribedTopics is then
 * unknown).  The rest of the conditions are kp_cat_offsets_expire's.
 */
static void
expire_unsubscribed_classic(void)
{
	char	  **groups;
	int			n = kp_cat_offsets_stable_classic_candidates(kp_offsets_retention_minutes, &groups);
	int			i;

	for (i = 0; i < n; i++)
	{
		KpGroupRow	g;
		char	  **topics;
		int			ntopics;

		kp_cat_group_read(groups[i], false, false, &g);
		if (!g.exists)
			continue;
		if (kp_group_classic_subscriptions(groups[i], g.protocol_name, &topics, &ntopics) > 0)
			kp_cat_offsets_expire_unsubscribed(groups[i], g.generation, topics, ntopics,
											   kp_offsets_retention_minutes);
	}
}

int
kp_group_expire(bool with_offsets)
{
	static TimestampTz last_offsets_expiry = 0;

	char	  **groups;
	int			n;
	int			i;
	int			skipped = 0;

	n = kp_cat_groups_needing_upkeep(kp_group_consumer_session_timeout_ms, &groups);
	for (i = 0; i < n; i++)
		if (!try_upkeep_group(groups[i]))
			skipped++;

	/*
	 * Kafka's offsets.retention.check.interval.ms (with_offsets: once a
	 * second)
	 */
	if (with_offsets &&
		TimestampDifferenceExceeds(last_offsets_expiry, GetCurrentTimestamp(),
								   kp_offsets_retention_check_interval_ms))
	{
		last_offsets_expiry = GetCurrentTimestamp();
		kp_cat_offsets_expire(kp_offsets_retention_minutes);
		expire_unsubscribed_classic();
	}
	return skipped;
}

TimestampTz
kp_group_next_upkeep(void)
{
	int64		ms = kp_cat_groups_next_deadline(kp_group_consumer_session_timeout_ms);

	if (ms < 0)
		return 0;
	/* Unix ms to TimestampTz, one ms on: expiry needs now() past it */
	return (ms + 1) * 1000 -
		((TimestampTz) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)) * SECS_PER_DAY * USECS_PER_SEC;
}
