/*-------------------------------------------------------------------------
 *
 * upkeep.c
 *	  What the coordinator does by the clock, not by a request: expire
 *	  members whose session ended, finish join phases whose deadline passed,
 *	  and drop the offsets of groups empty for longer than
 *	  offsets.retention.minutes.
 *
 * The resolver worker (src/txn/resolver.c) runs kp_group_expire in its own
 * transaction, once a second and at the moment kp_group_next_upkeep names:
 * the earliest session end or join deadline still to come.  So a member is
 * removed at its session timeout, as Kafka's timer does it, not up to a
 * second later.  Each group the upkeep acts on is locked (the group lock)
 * and looked at again under the lock, so a heartbeat that came in meanwhile
 * wins.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "group/group_int.h"

/*
 * A consumer-protocol group: drop the members silent for longer than the
 * group's consumer.session.timeout.ms; the epoch moves on.
 */
static void
expire_consumer_members(const char *group_id)
{
	int			removed = kp_cat_members_delete_expired(group_id,
														kp_group_consumer_session_ms(group_id), -2,
														NULL);

	if (removed == 0)
		return;
	ereport(LOG,
			(errmsg("kafka_pg: %d member%s of consumer group \"%s\" missed their session timeout",
					removed, removed == 1 ? "" : "s", group_id)));
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

void
kp_group_expire(void)
{
	char	  **groups;
	int			n;
	int			i;

	n = kp_cat_groups_needing_upkeep(kp_group_consumer_session_timeout_ms, &groups);
	for (i = 0; i < n; i++)
	{
		KpGroupRow	g;

		kp_cat_group_read(groups[i], false, true, &g);
		if (!g.exists)
			continue;
		if (strcmp(g.protocol_type, "consumer") == 0 && strcmp(g.group_type, "consumer") == 0)
			expire_consumer_members(groups[i]);
		else
			upkeep_classic_group(groups[i], &g);
	}
	kp_cat_offsets_expire(kp_offsets_retention_minutes);
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
