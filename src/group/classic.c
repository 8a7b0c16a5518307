/*-------------------------------------------------------------------------
 *
 * classic.c
 *	  The classic consumer-group protocol: JoinGroup, SyncGroup, Heartbeat,
 *	  LeaveGroup.
 *
 * This follows Kafka's GroupCoordinator state machine (Empty,
 * PreparingRebalance, CompletingRebalance, Stable) over catalog rows:
 *
 * - A JoinGroup puts the member into the current rebalance round (starting
 *   one if the group was not rebalancing; but a member of the generation
 *   joining again with the protocols it has is answered with the generation
 *   at once while the group waits for the leader's SyncGroup, and so is a
 *   follower of a Stable group, as Kafka's) and waits until every member has
 *   joined the round or the round's deadline (the largest rebalance timeout,
 *   max.poll.interval.ms for Java) passes; members that did not rejoin are
 *   removed.  Then the generation advances, the protocol most members prefer
 *   among those all support is chosen, a leader is picked (the old one if it
 *   rejoined), and the group waits for the leader's SyncGroup.
 * - The leader's SyncGroup stores every member's assignment (members it did
 *   not assign get empty bytes) and makes the group Stable; followers wait
 *   for it.
 * - Heartbeats keep members alive; a member silent for longer than its
 *   session timeout is removed by the upkeep (upkeep.c), which starts a
 *   rebalance.
 * - Static members (group.instance.id, KIP-345) keep their place across
 *   restarts: a rejoin with a known instance id replaces the old member id
 *   (fencing it) and, if the group is Stable, answers at once with the
 *   current generation and the member's assignment: no rebalance.
 *
 * Every operation takes the group lock first (coordinator.c).  The member
 * assignments the leader sends are opaque bytes to the coordinator, except
 * that SQL consumers must keep off the partitions they give: the one decoder
 * of them is kp_group_assignment_partitions, at the end of this file (and of
 * the members' subscriptions, for offset expiry, the same
 * kp_group_decode_consumer_protocol).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/uuid.h"

#include "group/group_int.h"
#include "protocol/errors.h"
#include "protocol/protocol.h"

/*
 * Kafka's member ids: the group instance id of a static member, else the
 * client id, a dash, a UUID.
 */
static char *
new_member_id(const char *client_id, const char *instance_id)
{
	Datum		u = DirectFunctionCall1(gen_random_uuid, (Datum) 0);

	return psprintf("%s-%s", instance_id ? instance_id : client_id ? client_id : "",
					DatumGetCString(DirectFunctionCall1(uuid_out, u)));
}

/* The member's row as its JoinGroup describes it, in join round join_round. */
static void
upsert_member(const char *group_id, const char *member_id, const KpJoinArgs *a, int32 join_round)
{
	kp_cat_member_join_classic(group_id, member_id, a->group_instance_id, a->client_id,
							   a->client_host, a->session_timeout_ms, a->rebalance_timeout_ms,
							   a->nprotocols, a->protocol_names, a->protocol_metadata,
							   join_round);
}

/* The last member is gone: a new, empty generation without a leader. */
static void
become_empty(const char *group_id, KpGroupRow *g)
{
	g->generation++;
	g->state = "Empty";
	g->protocol_name = NULL;
	g->leader_id = NULL;
	g->deadline_ms = -1;
	kp_group_save(group_id, g);
}

/*
 * Start a rebalance round: the round's deadline is the largest rebalance
 * timeout of the members (not of the pending ones, which are none yet: a
 * member joining with the id MEMBER_ID_REQUIRED gave it adds its own,
 * kp_group_join).  The caller saves the group (kp_group_save).
 */
void
kp_group_start_rebalance(const char *group_id, KpGroupRow *g, KpMemberRow *m, int n)
{
	int32		max_rebalance = 0;
	int			i;
	int64		now = kp_group_now_ms();

	for (i = 0; i < n; i++)
		if (!KP_MEMBER_PENDING(&m[i]))
			max_rebalance = Max(max_rebalance, m[i].rebalance_timeout_ms);
	if (strcmp(g->state, "Empty") == 0)
	{
		/* group.initial.rebalance.delay.ms: let the first members gather */
		g->not_before_ms = now + kp_group_initial_rebalance_delay_ms;
		max_rebalance = Max(max_rebalance, kp_group_initial_rebalance_delay_ms);
	}
	else
		g->not_before_ms = -1;
	g->state = "PreparingRebalance";
	g->round++;
	g->deadline_ms = now + Max(max_rebalance, 1000);
}

/*
 * The protocol to use: among the protocols every member supports, the one
 * most members list first (Kafka's vote).
 */
static char *
choose_protocol(KpMemberRow *m, int n)
{
	char	   *best = NULL;
	int			best_votes = -1;
	int			i;
	int			k;

	if (n == 0)
		return NULL;
	for (k = 0; k < m[0].nprotocols; k++)
	{
		const char *cand = m[0].protocol_names[k];
		bool		all = true;
		int			votes = 0;

		for (i = 0; i < n && all; i++)
		{
			int			j;
			bool		has = false;
			int			first = -1;

			for (j = 0; j < m[i].nprotocols; j++)
				if (strcmp(m[i].protocol_names[j], cand) == 0)
					has = true;
			all = has;
			/* the member votes for its first supported-by-all choice */
			for (j = 0; j < m[i].nprotocols && first < 0; j++)
			{
				int			x;
				bool		everyone = true;

				for (x = 0; x < n && everyone; x++)
				{
					int			y;
					bool		h = false;

					for (y = 0; y < m[x].nprotocols; y++)
						if (strcmp(m[x].protocol_names[y], m[i].protocol_names[j]) == 0)
							h = true;
					everyone = h;
				}
				if (everyone)
					first = j;
			}
			if (first >= 0 && strcmp(m[i].protocol_names[first], cand) == 0)
				votes++;
		}
		if (all && votes > best_votes)
		{
			best = pstrdup(cand);
			best_votes = votes;
		}
	}
	return best;
}

/*
 * Finish the join phase if it can be finished: everyone has joined (and the
 * initial delay is over), or the deadline has passed.  Members that did not
 * join are removed; pending members (KIP-394) are kept, as Kafka keeps them,
 * until they join with their id, leave or their session ends.
 */
void
kp_group_try_complete_join(const char *group_id, KpGroupRow *g)
{
	KpMemberRow *m;
	int			n = kp_cat_members_load(group_id, &m);
	int			i;
	int			njoined = 0;
	int			nlate = 0;
	int64		now = kp_group_now_ms();
	KpMemberRow *joined;
	bool		leader_joined = false;
	int32		max_rebalance = 0;

	if (strcmp(g->state, "PreparingRebalance") != 0)
		return;
	for (i = 0; i < n; i++)
	{
		if (m[i].join_round == g->round)
			njoined++;
		else
			nlate++;			/* pending members (-1, KIP-394) too, as
								 * Kafka's hasAllMembersJoined */
	}
	if (now < g->deadline_ms &&
		(nlate > 0 || (g->not_before_ms >= 0 && now < g->not_before_ms)))
		return;

	joined = palloc0(sizeof(KpMemberRow) * Max(njoined, 1));
	njoined = 0;
	for (i = 0; i < n; i++)
	{
		if (m[i].join_round == g->round)
			joined[njoined++] = m[i];
		else if (!KP_MEMBER_PENDING(&m[i]))
			kp_cat_member_delete(group_id, m[i].member_id);
	}
	if (njoined == 0)
	{
		become_empty(group_id, g);
		return;
	}
	g->generation++;
	for (i = 0; i < njoined; i++)
		if (g->leader_id && strcmp(joined[i].member_id, g->leader_id) == 0)
			leader_joined = true;
	if (!leader_joined)
		g->leader_id = joined[0].member_id;
	g->protocol_name = choose_protocol(joined, njoined);
	g->state = "CompletingRebalance";
	for (i = 0; i < njoined; i++)
		max_rebalance = Max(max_rebalance, joined[i].rebalance_timeout_ms);
	g->deadline_ms = now + Max(max_rebalance, 1000);
	kp_cat_members_clear_assignments(group_id);
	kp_group_save(group_id, g);
}

static void
fill_join_result(const char *group_id, const KpGroupRow *g, const char *member_id,
				 KpJoinResult *r)
{
	r->generation_id = g->generation;
	r->protocol_type = pstrdup(g->protocol_type ? g->protocol_type : "");
	r->protocol_name = g->protocol_name ? pstrdup(g->protocol_name) : NULL;
	r->leader_id = g->leader_id ? pstrdup(g->leader_id) : pstrdup("");
	r->member_id = pstrdup(member_id);
	r->nmembers = 0;
	if (g->leader_id && strcmp(g->leader_id, member_id) == 0)
	{
		KpMemberRow *m;
		int			n = kp_cat_members_load(group_id, &m);
		int			i;

		r->members = palloc0(sizeof(KpJoinMember) * Max(n, 1));
		for (i = 0; i < n; i++)
		{
			int			k;
			KpJoinMember *jm = &r->members[r->nmembers];

			if (m[i].join_round != g->round)
				continue;
			jm->member_id = m[i].member_id;
			jm->group_instance_id = m[i].instance_id;
			jm->metadata.data = NULL;
			jm->metadata.len = 0;
			for (k = 0; k < m[i].nprotocols; k++)
				if (g->protocol_name && strcmp(m[i].protocol_names[k], g->protocol_name) == 0)
					jm->metadata = m[i].protocol_metadata[k];
			r->nmembers++;
		}
	}
}

/* Do all current members support at least one of these protocols? */
static bool
protocols_compatible(KpMemberRow *m, int n, const char *self, const KpJoinArgs *a)
{
	int			k;

	for (k = 0; k < a->nprotocols; k++)
	{
		bool		all = true;
		int			i;

		for (i = 0; i < n && all; i++)
		{
			int			j;
			bool		has = false;

			if (self && strcmp(m[i].member_id, self) == 0)
				continue;
			if (KP_MEMBER_PENDING(&m[i]))
				continue;
			for (j = 0; j < m[i].nprotocols; j++)
				if (strcmp(m[i].protocol_names[j], a->protocol_names[k]) == 0)
					has = true;
			all = has;
		}
		if (all)
			return true;
	}
	return false;
}

/*
 * Does a member join again with the protocols it has, names and metadata in
 * the same order (Kafka's ClassicGroupMember.matches)?
 */
static bool
same_protocols(const KpMemberRow *me, const KpJoinArgs *a)
{
	int			k;

	if (me->nprotocols != a->nprotocols)
		return false;
	for (k = 0; k < a->nprotocols; k++)
		if (strcmp(me->protocol_names[k], a->protocol_names[k]) != 0 ||
			me->protocol_metadata[k].len != a->protocol_metadata[k].len ||
			(a->protocol_metadata[k].len > 0 &&
			 memcmp(me->protocol_metadata[k].data, a->protocol_metadata[k].data,
					a->protocol_metadata[k].len) != 0))
			return false;
	return true;
}

int16
kp_group_join(const KpJoinArgs *a, KpJoinResult *r)
{
	KpGroupRow	g;
	KpMemberRow *m;
	int			n;
	const char *member_id = a->retry_member_id ? a->retry_member_id : a->member_id;
	KpMemberRow *me;
	int16		code = KP_ERR_NONE;

	memset(r, 0, sizeof(*r));
	r->generation_id = -1;
	r->member_id = pstrdup(member_id ? member_id : "");
	if (a->group_id == NULL || a->group_id[0] == '\0')
		return KP_ERR_INVALID_GROUP_ID;
	if (a->session_timeout_ms < kp_group_min_session_timeout_ms ||
		a->session_timeout_ms > kp_group_max_session_timeout_ms)
		return KP_ERR_INVALID_SESSION_TIMEOUT;
	if (a->nprotocols <= 0 || a->protocol_type == NULL || a->protocol_type[0] == '\0')
		return KP_ERR_INCONSISTENT_GROUP_PROTOCOL;

	kp_cat_group_read(a->group_id, true, true, &g);
	n = kp_cat_members_load(a->group_id, &m);

	if (strcmp(g.state, "Empty") != 0 && g.protocol_type[0] != '\0' &&
		strcmp(g.protocol_type, a->protocol_type) != 0)
	{
		code = KP_ERR_INCONSISTENT_GROUP_PROTOCOL;
		goto out;
	}
	if (!protocols_compatible(m, n, member_id, a))
	{
		code = KP_ERR_INCONSISTENT_GROUP_PROTOCOL;
		goto out;
	}

	if (member_id == NULL || member_id[0] == '\0')
	{
		KpMemberRow *old = kp_group_find_instance(m, n, a->group_instance_id);
		char	   *id = new_member_id(a->client_id, a->group_instance_id);

		if (old != NULL)
		{
			/* static member restarting: the old id is fenced from now on */
			bool		was_leader = g.leader_id && strcmp(g.leader_id, old->member_id) == 0;

			kp_cat_member_rename(a->group_id, old->member_id, id);
			if (was_leader)
			{
				g.leader_id = id;
				kp_group_save(a->group_id, &g);
			}
			if (strcmp(g.state, "Stable") == 0)
			{
				/* KIP-345: no rebalance; back with the current assignment */
				fill_join_result(a->group_id, &g, id, r);
				r->skip_assignment = was_leader;
				goto out;
			}
			old->member_id = id;
		}
		else if (a->require_known_member_id && a->group_instance_id == NULL)
		{
			/* KIP-394: hand out an id; the member joins again with it */
			upsert_member(a->group_id, id, a, -1);
			r->member_id = id;
			code = KP_ERR_MEMBER_ID_REQUIRED;
			goto out;
		}
		member_id = id;
	}
	else
	{
		/*
		 * Kafka's validateExistingMember: with an instance id, the member
		 * that holds it decides (none: UNKNOWN_MEMBER_ID; another member id:
		 * FENCED_INSTANCE_ID, which a static member that was replaced gets
		 * here as from its heartbeat, so it stops rather than joining afresh
		 * and fencing its replacement in turn).
		 */
		code = kp_group_check_instance(m, n, member_id, a->group_instance_id);
		if (code != KP_ERR_NONE)
			goto out;
		me = kp_group_find_member(m, n, member_id);
		if (me == NULL)
		{
			code = KP_ERR_UNKNOWN_MEMBER_ID;
			goto out;
		}

		/*
		 * A parked join called again: it is in this round already, so only
		 * see whether the round is complete (someone else may have completed
		 * it); never start another round for it.
		 */
		if (a->retry_member_id && me->join_round == g.round)
		{
			kp_group_try_complete_join(a->group_id, &g);
			goto result;
		}

		/*
		 * A member of the generation joining again with the protocols it has
		 * (its answer was lost, say) is answered at once with the generation,
		 * and nothing rebalances, as Kafka's classicGroupJoinExistingMember:
		 * any member while the group waits for the leader's SyncGroup (the
		 * leader gets the members again), a follower of a Stable group.  The
		 * leader of a Stable group, or a member with other protocols, starts
		 * a round below.
		 */
		if (me->join_round == g.round && same_protocols(me, a) &&
			(strcmp(g.state, "CompletingRebalance") == 0 ||
			 (strcmp(g.state, "Stable") == 0 &&
			  !(g.leader_id && strcmp(g.leader_id, member_id) == 0))))
		{
			fill_join_result(a->group_id, &g, member_id, r);
			goto out;
		}
	}

	g.protocol_type = pstrdup(a->protocol_type);
	if (strcmp(g.state, "PreparingRebalance") != 0)
	{
		/* a round starts (the leader of a Stable group rejoining, say) */
		n = kp_cat_members_load(a->group_id, &m);
		kp_group_start_rebalance(a->group_id, &g, m, n);
		/* the round this join starts waits for it too (Kafka adds it first) */
		g.deadline_ms = Max(g.deadline_ms, kp_group_now_ms() + a->rebalance_timeout_ms);
	}
	upsert_member(a->group_id, member_id, a, g.round);
	kp_group_save(a->group_id, &g);
	kp_group_try_complete_join(a->group_id, &g);

result:
	if (strcmp(g.state, "CompletingRebalance") == 0 || strcmp(g.state, "Stable") == 0)
	{
		n = kp_cat_members_load(a->group_id, &m);
		me = kp_group_find_member(m, n, member_id);
		if (me != NULL && me->join_round == g.round)
		{
			fill_join_result(a->group_id, &g, member_id, r);
			goto out;
		}
		if (me == NULL)
		{
			code = KP_ERR_UNKNOWN_MEMBER_ID;
			goto out;
		}
	}
	r->member_id = pstrdup(member_id);
	r->wait = true;
	/* look again when the initial delay ends, at the latest at the deadline */
	r->wait_until_ms = (g.not_before_ms > kp_group_now_ms() && g.not_before_ms < g.deadline_ms) ?
		g.not_before_ms : g.deadline_ms;

out:
	return code;
}

int16
kp_group_sync(const char *group_id, const char *member_id, const char *instance_id,
			  int32 generation_id, int nassignments, const KpSyncAssignment *assignments,
			  bool final_attempt, KpBlob *assignment, char **protocol_type,
			  char **protocol_name, bool *wait, int64 *wait_until_ms)
{
	KpGroupRow	g;
	KpMemberRow *m;
	int			n;
	KpMemberRow *me;
	int16		code = KP_ERR_NONE;

	*wait = false;
	assignment->data = NULL;
	assignment->len = 0;
	code = kp_group_lock_member(group_id, member_id, instance_id, &g, &m, &n, &me);
	if (g.exists)
	{
		*protocol_type = pstrdup(g.protocol_type ? g.protocol_type : "");
		*protocol_name = g.protocol_name ? pstrdup(g.protocol_name) : NULL;
	}
	if (code != KP_ERR_NONE)
		goto out;
	if (generation_id != g.generation)
	{
		code = KP_ERR_ILLEGAL_GENERATION;
		goto out;
	}
	if (strcmp(g.state, "PreparingRebalance") == 0)
	{
		code = KP_ERR_REBALANCE_IN_PROGRESS;
		goto out;
	}
	if (strcmp(g.state, "CompletingRebalance") == 0)
	{
		if (g.leader_id && strcmp(g.leader_id, member_id) == 0)
		{
			int			i;

			for (i = 0; i < nassignments; i++)
				kp_cat_member_set_assignment(group_id, assignments[i].member_id,
											 assignments[i].assignment);
			/* members the leader did not assign get empty bytes */
			kp_cat_members_default_assignments(group_id);
			g.state = "Stable";
			g.deadline_ms = -1;
			kp_group_save(group_id, &g);
			n = kp_cat_members_load(group_id, &m);
			me = kp_group_find_member(m, n, member_id);
		}
		else
		{
			if (final_attempt)
				code = KP_ERR_REBALANCE_IN_PROGRESS;
			else
			{
				*wait = true;
				*wait_until_ms = g.deadline_ms;
			}
			goto out;
		}
	}
	if (me->assignment.len > 0)
		*assignment = me->assignment;
	kp_cat_member_touch(group_id, member_id);
out:
	return code;
}

int16
kp_group_heartbeat(const char *group_id, const char *member_id, const char *instance_id,
				   int32 generation_id)
{
	KpGroupRow	g;
	KpMemberRow *m;
	int			n;
	KpMemberRow *me;
	int16		code = KP_ERR_NONE;

	code = kp_group_lock_member(group_id, member_id, instance_id, &g, &m, &n, &me);
	if (code != KP_ERR_NONE)
		goto out;
	kp_cat_member_touch(group_id, member_id);
	if (strcmp(g.state, "PreparingRebalance") == 0)
		code = KP_ERR_REBALANCE_IN_PROGRESS;
	else if (generation_id != g.generation)
		code = KP_ERR_ILLEGAL_GENERATION;
out:
	return code;
}

/*
 * After members left or expired: rebalance the rest, or become Empty.  With
 * members false, only pending members (KIP-394) expired: as Kafka's
 * removePendingMemberAndUpdateClassicGroup, that rebalances nothing, and
 * may only let a join phase they held up finish.
 */
void
kp_group_after_members_removed(const char *group_id, KpGroupRow *g, bool members)
{
	KpMemberRow *m;
	int			n = kp_cat_members_load(group_id, &m);

	if (kp_group_count_members(m, n) == 0)
	{
		if (strcmp(g->state, "Empty") != 0)
			become_empty(group_id, g);
		return;
	}
	if (!members)
	{
		kp_group_try_complete_join(group_id, g);
		return;
	}
	if (strcmp(g->state, "PreparingRebalance") != 0)
		kp_group_start_rebalance(group_id, g, m, n);
	kp_group_save(group_id, g);
	kp_group_try_complete_join(group_id, g);
}

int16
kp_group_leave(const char *group_id, const char *member_id, const char *instance_id)
{
	KpGroupRow	g;
	KpMemberRow *m;
	int			n;
	KpMemberRow *me = NULL;
	int16		code = KP_ERR_NONE;

	kp_cat_group_read(group_id, false, true, &g);
	if (!g.exists)
	{
		code = KP_ERR_UNKNOWN_MEMBER_ID;
		goto out;
	}
	n = kp_cat_members_load(group_id, &m);
	if (instance_id)
	{
		me = kp_group_find_instance(m, n, instance_id);
		if (me && member_id && member_id[0] && strcmp(me->member_id, member_id) != 0)
		{
			code = KP_ERR_FENCED_INSTANCE_ID;
			goto out;
		}
	}
	else if (member_id)
		me = kp_group_find_member(m, n, member_id);
	if (me == NULL)
	{
		code = KP_ERR_UNKNOWN_MEMBER_ID;
		goto out;
	}
	/* a pending member too: Kafka 4.4 rebalances when one leaves */
	kp_cat_member_delete(group_id, me->member_id);
	kp_group_after_members_removed(group_id, &g, true);
out:
	return code;
}


bool
kp_group_decode_consumer_protocol(const KpMessageDesc *desc, KpBlob blob, void *out)
{
	KpError		err;
	int16		version;

	if (blob.len < 2)
		return false;
	/* int16 version, then the struct; a newer version is read as ours */
	version = (int16) (((uint8) blob.data[0] << 8) | (uint8) blob.data[1]);
	version = Min(Max(version, 0), desc->max_version);
	return kp_decode(desc, version, (const uint8 *) blob.data + 2, blob.len - 2, out, &err) ||
		err.code == KP_DECODE_TRAILING_BYTES;
}

int
kp_group_assignment_partitions(KpBlob assignment, const char *topic, int32 **partitions)
{
	KpConsumerProtocolAssignment a;
	int			count = 0;
	int			t;

	*partitions = NULL;
	if (!kp_group_decode_consumer_protocol(&kp_ConsumerProtocolAssignment_desc, assignment, &a))
		return 0;
	for (t = 0; t < a.n_assigned_partitions; t++)
	{
		int			k;

		if (a.assigned_partitions[t].topic == NULL ||
			strcmp(a.assigned_partitions[t].topic, topic) != 0)
			continue;
		for (k = 0; k < a.assigned_partitions[t].n_partitions; k++)
		{
			*partitions = *partitions ? repalloc(*partitions, sizeof(int32) * (count + 1)) :
				palloc(sizeof(int32));
			(*partitions)[count++] = a.assigned_partitions[t].partitions[k];
		}
	}
	return count;
}
