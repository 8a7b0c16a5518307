/*-------------------------------------------------------------------------
 *
 * consumer_protocol.c
 *	  The consumer group protocol of KIP-848: ConsumerGroupHeartbeat with
 *	  server-side assignment.
 *
 * Members send heartbeats with their subscription and the partitions they
 * own; the coordinator keeps a group epoch (bumped by every change of
 * membership, subscriptions or the subscribed topics' partitions), computes
 * a target assignment for it with the group's assignor (uniform: balanced
 * and sticky, so a member keeps what does not have to move; or range), and
 * reconciles each member toward its target, incrementally, as Kafka's
 * CurrentAssignmentBuilder (reconcile):
 *
 * - a member is told to keep the partitions of its current assignment that
 *   are still in its target (revoked ones are simply left out);
 * - while it still owns a revoked one, it keeps its epoch and is given
 *   nothing new (its commits are fenced by its epoch);
 * - then it moves to the assignment epoch, and is given a partition of its
 *   target only once no other member owns it: neither by the assignment we
 *   gave that member nor by what that member still owns.  So a partition
 *   moves only after its previous owner has let go of it, and is never
 *   owned by two members at once.
 *
 * A member subscribes to topic names, to a regular expression
 * (SubscribedTopicRegex, ConsumerGroupHeartbeat v1), or both; the pattern
 * is matched again at every heartbeat, so a topic created or deleted
 * changes the subscribed topics' signature and bumps the group epoch.
 *
 * Members that miss their group's consumer.session.timeout.ms (configs.c)
 * are removed by the upkeep (upkeep.c); their partitions become free.  The
 * assignors are pure functions in assignor.c; the rows go through
 * src/catalog/groups.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "regex/regex.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/uuid.h"

#include "group/assignor.h"
#include "group/group_int.h"
#include "protocol/errors.h"

int			kp_group_consumer_heartbeat_interval_ms = 5000;
int			kp_group_consumer_session_timeout_ms = 45000;

/*
 * A member as the heartbeat works on it: its row with the sets parsed and
 * its subscription resolved (the topics it names and those its regular
 * expression matches now).
 */
typedef struct CMember
{
	KpMemberRow *row;
	char	   *member_id;
	int32		member_epoch;
	int32		previous_epoch; /* its epoch before (-1: none) */
	int			nnames;			/* SubscribedTopicNames */
	char	  **names;
	char	   *regex;			/* SubscribedTopicRegex; NULL: none */
	Oid			authz_role;		/* its topics are those this role may DESCRIBE */
	char	   *authz_host;
	int			nsubscribed;	/* names and matched topics */
	char	  **subscribed;
	KpTPSet		assigned;		/* what it was told it owns */
	KpTPSet		target;			/* where the assignor wants it */
	KpTPSet		owned;			/* what it owns, as we can tell */
	int32		rebalance_ms;	/* its rebalance timeout */
	KpRevokeTimer revoke;		/* what becomes of its revoke deadline */
	bool		dirty;
} CMember;

/* ---------------------------------------------------------------------
 * Regular-expression subscriptions (KIP-848 SubscribedTopicRegex)
 *
 * Clients write RE2/J patterns; they are evaluated with PostgreSQL's
 * regular expressions (advanced, ARE), which agree with RE2 on the syntax
 * topic patterns use (classes, repetition, alternation, (?i)).  As Java's
 * Matcher.matches(), a pattern must match the whole topic name.
 *
 * A pattern matches only the topics the member's principal may DESCRIBE
 * (Kafka's GroupMetadataManager.filterTopicDescribeAuthorizedTopics), so a
 * regex reveals no topic its member could not list with Metadata.  The
 * principal is the one of the member's latest heartbeat (its row's
 * authz_role and authz_host), checked whenever the pattern is matched
 * again: an ACL granted or revoked moves the topic in or out at the next
 * heartbeat of any member of the group.  Kafka resolves a group's pattern
 * once for all its members, with the context of whichever member's
 * heartbeat triggered the refresh; here each member's topics are its own
 * principal's.
 * ---------------------------------------------------------------------
 */

/* The pattern anchored at both ends; leading embedded options stay first. */
static char *
anchored(const char *re)
{
	const char *body = re;

	if (re[0] == '(' && re[1] == '?')
	{
		const char *p = re + 2;

		while (*p >= 'a' && *p <= 'z')
			p++;
		if (*p == ')' && p > re + 2)
			body = p + 1;
	}
	return psprintf("%.*s^(?:%s)$", (int) (body - re), re, body);
}

/* NULL when the pattern compiles, else PostgreSQL's reason. */
static char *
regex_error(const char *re)
{
	char	   *pattern = anchored(re);
	int			len = strlen(pattern);
	pg_wchar   *wide = palloc(sizeof(pg_wchar) * (len + 1));
	int			wlen = pg_mb2wchar_with_len(pattern, wide, len);
	regex_t		compiled;
	int			rc = pg_regcomp(&compiled, wide, wlen, REG_ADVANCED, C_COLLATION_OID);
	char		reason[256];

	if (rc == REG_OKAY)
	{
		pg_regfree(&compiled);
		return NULL;
	}
	pg_regerror(rc, &compiled, reason, sizeof(reason));
	return pstrdup(reason);
}

typedef struct RegexMatches
{
	const char *regex;
	int			n;
	char	  **topics;
} RegexMatches;

/* A member's topics: the names it gave, and those its pattern matches now. */
static void
resolve_subscription(CMember *m, RegexMatches *cache, int *ncache)
{
	RegexMatches *rm = NULL;
	int			i;

	m->nsubscribed = m->nnames;
	m->subscribed = m->names;
	if (m->regex == NULL)
		return;
	for (i = 0; i < *ncache && rm == NULL; i++)
		if (strcmp(cache[i].regex, m->regex) == 0)
			rm = &cache[i];
	if (rm == NULL)
	{
		rm = &cache[(*ncache)++];
		rm->regex = m->regex;
		rm->n = kp_cat_topics_matching(anchored(m->regex), &rm->topics);
	}
	m->subscribed = palloc(sizeof(char *) * Max(m->nnames + rm->n, 1));
	memcpy(m->subscribed, m->names, sizeof(char *) * m->nnames);
	m->nsubscribed = m->nnames;
	for (i = 0; i < rm->n; i++)
	{
		int			k;
		bool		named = false;

		for (k = 0; k < m->nnames && !named; k++)
			named = strcmp(m->names[k], rm->topics[i]) == 0;
		if (!named &&
			kp_acl_authorize(m->authz_role, m->authz_host, KP_ACL_RESOURCE_TOPIC, rm->topics[i],
							 KP_ACL_OP_DESCRIBE))
			m->subscribed[m->nsubscribed++] = rm->topics[i];
	}
}

static int
load_cmembers(const char *group_id, CMember **out)
{
	KpMemberRow *rows;
	int			n = kp_cat_members_load(group_id, &rows);
	CMember    *m = palloc0(sizeof(CMember) * Max(n, 1));
	RegexMatches *cache = palloc(sizeof(RegexMatches) * Max(n, 1));
	int			ncache = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		m[i].row = &rows[i];
		m[i].member_id = rows[i].member_id;
		m[i].member_epoch = rows[i].member_epoch;
		m[i].previous_epoch = rows[i].previous_member_epoch;
		m[i].rebalance_ms = rows[i].rebalance_timeout_ms;
		m[i].nnames = rows[i].nsubscribed;
		m[i].names = rows[i].subscribed;
		m[i].regex = rows[i].subscribed_regex;
		m[i].authz_role = rows[i].authz_role;
		m[i].authz_host = rows[i].authz_host;
		resolve_subscription(&m[i], cache, &ncache);
		kp_tps_parse(rows[i].assigned, &m[i].assigned);
		kp_tps_parse(rows[i].target, &m[i].target);
		kp_tps_parse(rows[i].owned, &m[i].owned);
	}
	*out = m;
	return n;
}

/*
 * Which of topics some member of the consumer group subscribes to, by name
 * or by its pattern (Kafka's ConsumerGroup.isSubscribedToTopic; OffsetDelete
 * refuses those).  The caller holds the group's lock.
 */
void
kp_group_consumer_subscribed(const char *group_id, char *const *topics, int ntopics, bool *subscribed)
{
	CMember    *m;
	int			n = load_cmembers(group_id, &m);
	int			i;
	int			j;
	int			k;

	for (i = 0; i < ntopics; i++)
		for (j = 0; j < n && !subscribed[i]; j++)
			for (k = 0; k < m[j].nsubscribed && !subscribed[i]; k++)
				subscribed[i] = strcmp(m[j].subscribed[k], topics[i]) == 0;
}

static void
save_cmember(const char *group_id, const CMember *m)
{
	kp_cat_member_save_consumer(group_id, m->member_id, m->member_epoch, m->previous_epoch,
								kp_tps_format(&m->assigned), kp_tps_format(&m->target),
								kp_tps_format(&m->owned), m->rebalance_ms, m->revoke);
}

/*
 * The member takes epoch (Kafka's updateMemberEpoch): the one it had becomes
 * its previous one, even when the two are the same.
 */
static void
set_member_epoch(CMember *me, int32 epoch)
{
	me->previous_epoch = me->member_epoch;
	me->member_epoch = epoch;
	me->dirty = true;
}

/*
 * Partition counts of every subscribed topic, "t:6|u:3", as a signature
 * (a change bumps the group epoch); *all gets every one of their partitions.
 */
static char *
subscription_signature(CMember *m, int n, KpTPSet *all)
{
	StringInfoData sig;
	char	  **topics = palloc(sizeof(char *) * 1);
	int			ntopics = 0;
	int			cap = 1;
	int			i;
	int			k;

	for (i = 0; i < n; i++)
		for (k = 0; k < m[i].nsubscribed; k++)
		{
			int			j;
			bool		seen = false;

			for (j = 0; j < ntopics; j++)
				if (strcmp(topics[j], m[i].subscribed[k]) == 0)
					seen = true;
			if (!seen)
			{
				if (ntopics == cap)
				{
					cap *= 2;
					topics = repalloc(topics, sizeof(char *) * cap);
				}
				topics[ntopics++] = m[i].subscribed[k];
			}
		}
	qsort(topics, ntopics, sizeof(char *), pg_qsort_strcmp);
	initStringInfo(&sig);
	memset(all, 0, sizeof(*all));
	for (i = 0; i < ntopics; i++)
	{
		const KpTopic *t = kp_topic_open(topics[i], AccessShareLock, true);
		int			count = t ? t->partition_count : 0;
		int			p;

		appendStringInfo(&sig, "%s%s:%d", i ? "|" : "", topics[i], count);
		for (p = 0; p < count; p++)
			kp_tps_add(all, topics[i], p);
	}
	return sig.data;
}

/* Run the group's assignor over every member's target. */
static void
compute_targets(const char *assignor, CMember *m, int n, const KpTPSet *all)
{
	KpAssignMember *am = palloc0(sizeof(KpAssignMember) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
	{
		am[i].nsubscribed = m[i].nsubscribed;
		am[i].subscribed = m[i].subscribed;
		am[i].target = m[i].target;
	}
	if (strcmp(assignor, "range") == 0)
		kp_assign_range(am, n, all);
	else
		kp_assign_uniform(am, n, all);
	for (i = 0; i < n; i++)
		m[i].target = am[i].target;
}

/* ---------------------------------------------------------------------
 * The heartbeat, step by step
 * ---------------------------------------------------------------------
 */

/* What one heartbeat works on, under the group lock. */
typedef struct Heartbeat
{
	const KpCgHeartbeatArgs *a;
	const char *assignor;
	KpGroupRow	g;
	int32		group_epoch;
	int32		assignment_epoch;
	CMember    *m;
	int			n;
	CMember    *me;
	bool		changed;		/* wake the waiters at commit */
} Heartbeat;

/*
 * A member id the coordinator makes (a v0 join, and the SQL API's), as
 * Kafka's Uuid.randomUuid().toString(): a random UUID in base64url without
 * padding (22 characters), never starting with '-'.
 */
static char *
new_member_id(void)
{
	char		id[KP_UUID_STRING_LEN + 1];

	do
	{
		Datum		u = DirectFunctionCall1(gen_random_uuid, (Datum) 0);

		kp_uuid_to_string(DatumGetUUIDP(u)->data, id);
	} while (id[0] == '-');
	return pstrdup(id);
}

static CMember *
find_cmember(CMember *m, int n, const char *member_id)
{
	int			i;

	for (i = 0; i < n; i++)
		if (member_id && strcmp(m[i].member_id, member_id) == 0)
			return &m[i];
	return NULL;
}

static void
save_counters(Heartbeat *hb, int32 group_epoch, const char *signature, int nmembers)
{
	kp_cat_group_save_consumer(hb->a->group_id, group_epoch, hb->assignment_epoch, signature,
							   hb->assignor, nmembers);
}

/* Kafka's UNKNOWN_MEMBER_ID message */
static char *
unknown_member_message(const KpCgHeartbeatArgs *a)
{
	return psprintf("Member %s is not a member of group %s.", a->member_id ? a->member_id : "", a->group_id);
}

/*
 * Epoch -1: the member leaves; the group epoch moves on.  A member the group
 * does not have gets UNKNOWN_MEMBER_ID, and nothing changes.
 */
static int16
leave(Heartbeat *hb, KpCgHeartbeatResult *r)
{
	const KpCgHeartbeatArgs *a = hb->a;

	if (find_cmember(hb->m, hb->n, a->member_id ? a->member_id : "") == NULL)
	{
		r->error_message = unknown_member_message(a);
		return KP_ERR_UNKNOWN_MEMBER_ID;
	}
	kp_cat_member_delete(a->group_id, a->member_id ? a->member_id : "");
	save_counters(hb, hb->group_epoch + 1, hb->g.metadata_signature, hb->n - 1);
	r->member_id = pstrdup(a->member_id ? a->member_id : "");
	r->member_epoch = a->member_epoch;
	kp_group_wakeup();
	return KP_ERR_NONE;
}

/* The member holding a static member's instance id (KIP-345), or NULL. */
static CMember *
find_static(Heartbeat *hb, const char *instance_id)
{
	int			i;

	for (i = 0; i < hb->n; i++)
		if (hb->m[i].row->instance_id && strcmp(hb->m[i].row->instance_id, instance_id) == 0)
			return &hb->m[i];
	return NULL;
}

/*
 * A static member's heartbeat with an epoch other than 0 must come from the
 * member that holds its instance id, as Kafka's coordinator checks it:
 * UNKNOWN_MEMBER_ID when nobody holds it, FENCED_INSTANCE_ID when another
 * member took it over.
 */
static int16
check_static(Heartbeat *hb, KpCgHeartbeatResult *r)
{
	const KpCgHeartbeatArgs *a = hb->a;
	const char *id = a->member_id ? a->member_id : "";
	CMember    *s = find_static(hb, a->instance_id);

	if (s == NULL)
	{
		r->error_message = psprintf("Instance id %s is unknown.", a->instance_id);
		return KP_ERR_UNKNOWN_MEMBER_ID;
	}
	if (strcmp(s->member_id, id) != 0)
	{
		r->error_message = psprintf("Static member %s with instance id %s was fenced by member %s.",
									id, a->instance_id, s->member_id);
		return KP_ERR_FENCED_INSTANCE_ID;
	}
	return KP_ERR_NONE;
}

/*
 * Epoch 0: a member joins with the client's id (KIP-1082) or one of ours.
 * A static member coming back takes over its old place and target, but only
 * once its previous incarnation left with epoch -2: while that one is still
 * there the newcomer gets UNRELEASED_INSTANCE_ID, as in Kafka (the classic
 * protocol fences the old member instead).  The one coming back still holds
 * what its previous incarnation held, so the group epoch does not move.  A
 * new member bumps the group epoch.
 */
static int16
join(Heartbeat *hb, KpCgHeartbeatResult *r)
{
	const KpCgHeartbeatArgs *a = hb->a;
	char	   *id = (a->member_id && a->member_id[0]) ? pstrdup(a->member_id) : new_member_id();
	char	   *inherit = NULL;
	CMember    *held = a->instance_id ? find_static(hb, a->instance_id) : NULL;

	if (held != NULL && held->member_epoch != -2)
	{
		r->error_message = psprintf("Static member %s with instance id %s cannot join the group "
									"because the instance id is owned by %s member.",
									id, a->instance_id, held->member_id);
		return KP_ERR_UNRELEASED_INSTANCE_ID;
	}
	if (held != NULL)
	{
		inherit = kp_tps_format(&held->target);
		kp_cat_member_delete(a->group_id, held->member_id);
	}
	kp_cat_member_join_consumer(a->group_id, id, a->instance_id, a->client_id, a->client_host,
								a->rebalance_timeout_ms > 0 ? a->rebalance_timeout_ms : 300000,
								a->rack_id, Max(a->nsubscribed, 0), a->subscribed,
								a->subscribed_regex && a->subscribed_regex[0] ? a->subscribed_regex : NULL);
	if (inherit)
		kp_cat_member_set_target(a->group_id, id, inherit);
	hb->n = load_cmembers(a->group_id, &hb->m);
	hb->me = find_cmember(hb->m, hb->n, id);
	if (inherit == NULL)
	{
		hb->group_epoch++;
		hb->changed = true;
	}
	else
	{
		kp_tps_parse(inherit, &hb->me->assigned);
		set_member_epoch(hb->me, hb->assignment_epoch);
		hb->me->dirty = true;
	}
	return KP_ERR_NONE;
}

/*
 * Does the member say it owns no more than it was given?  Not when it says
 * nothing (TopicPartitions null), nor when it names a topic id no topic has
 * (a deleted topic's), as Kafka's isSubset.
 */
static bool
owns_within_assigned(const KpCgHeartbeatArgs *a, CMember *me)
{
	int			i;

	if (a->nowned < 0 || a->owned_unknown)
		return false;
	for (i = 0; i < a->nowned; i++)
		if (!kp_tps_contains(&me->assigned, a->owned_topics[i], a->owned_partitions[i]))
			return false;
	return true;
}

/*
 * Epoch > 0: a known member.  UNKNOWN_MEMBER_ID if it is gone,
 * FENCED_MEMBER_EPOCH if it claims an epoch it was never given, or one
 * below its own other than its previous one (the wire's members); a change
 * of its subscription (topic names or pattern) bumps the group epoch.
 */
static int16
heartbeat_member(Heartbeat *hb, KpCgHeartbeatResult *r)
{
	const KpCgHeartbeatArgs *a = hb->a;
	CMember    *me;
	bool		same = true;
	int			i;

	hb->me = me = find_cmember(hb->m, hb->n, a->member_id);
	if (me == NULL)
	{
		r->error_message = unknown_member_message(a);
		return KP_ERR_UNKNOWN_MEMBER_ID;
	}
	if (a->member_epoch > me->member_epoch)
	{
		r->error_message = psprintf("The consumer group member has a greater member epoch (%d) than the one "
									"known by the group coordinator (%d). The member must abandon all its "
									"partitions and rejoin.", a->member_epoch, me->member_epoch);
		return KP_ERR_FENCED_MEMBER_EPOCH;
	}
	if (a->fence_older_epoch && a->member_epoch < me->member_epoch &&
		(a->member_epoch != me->previous_epoch || !owns_within_assigned(a, me)))
	{
		r->error_message = psprintf("The consumer group member has a smaller member epoch (%d) than the one "
									"known by the group coordinator (%d). The member must abandon all its "
									"partitions and rejoin.", a->member_epoch, me->member_epoch);
		return KP_ERR_FENCED_MEMBER_EPOCH;
	}
	/* a rebalance timeout given (not -1) is the member's now, as Kafka's */
	if (a->rebalance_timeout_ms > 0 && a->rebalance_timeout_ms != me->rebalance_ms)
	{
		me->rebalance_ms = a->rebalance_timeout_ms;
		me->dirty = true;
	}
	if (a->nsubscribed >= 0)
	{
		same = (a->nsubscribed == me->nnames);
		for (i = 0; same && i < a->nsubscribed; i++)
		{
			int			k;
			bool		named = false;

			for (k = 0; k < me->nnames && !named; k++)
				named = strcmp(me->names[k], a->subscribed[i]) == 0;
			same = named;
		}
		if (!same)
		{
			me->nnames = a->nsubscribed;
			me->names = a->subscribed;
		}
	}
	if (a->subscribed_regex != NULL &&
		strcmp(a->subscribed_regex, me->regex ? me->regex : "") != 0)
	{
		same = false;
		me->regex = a->subscribed_regex[0] ? pstrdup(a->subscribed_regex) : NULL;
	}
	if (!same)
	{
		RegexMatches cache;
		int			ncache = 0;

		kp_cat_member_set_subscription(a->group_id, me->member_id, me->nnames, me->names, me->regex);
		resolve_subscription(me, &cache, &ncache);
		hb->group_epoch++;
		hb->changed = true;
	}
	return KP_ERR_NONE;
}

/*
 * The principal of this heartbeat becomes the member's: its pattern is
 * matched again with that principal's DESCRIBE rights.
 */
static void
note_principal(Heartbeat *hb)
{
	const KpCgHeartbeatArgs *a = hb->a;
	CMember    *me = hb->me;
	const char *host = a->authz_host ? a->authz_host : "";

	if (me->authz_role == a->authz_role && strcmp(me->authz_host ? me->authz_host : "", host) == 0)
		return;
	kp_cat_member_set_authz(a->group_id, me->member_id, a->authz_role, host);
	me->authz_role = a->authz_role;
	me->authz_host = pstrdup(host);
	if (me->regex)
	{
		RegexMatches cache;
		int			ncache = 0;

		resolve_subscription(me, &cache, &ncache);
	}
}

/*
 * What the member owns now, as far as the coordinator can tell: what it
 * reports owning of what it was last sent and of what it had not let go of
 * yet (a partition it was never given is not its); with no report
 * (TopicPartitions null), what it owned before and all it was last sent, as
 * Kafka takes a member that says nothing to own still what it was given.
 * A SQL member (holds_assignment) owns nothing beyond its assignment.
 */
static void
note_owned(Heartbeat *hb)
{
	const KpCgHeartbeatArgs *a = hb->a;
	CMember    *me = hb->me;
	KpTPSet		owned;
	int			i;

	if (a->holds_assignment)
		return;
	if (a->nowned < 0)
	{
		for (i = 0; i < me->assigned.n; i++)
			kp_tps_add(&me->owned, me->assigned.items[i].topic, me->assigned.items[i].partition);
		me->dirty = true;
		return;
	}
	memset(&owned, 0, sizeof(owned));
	for (i = 0; i < a->nowned; i++)
		if (kp_tps_contains(&me->assigned, a->owned_topics[i], a->owned_partitions[i]) ||
			kp_tps_contains(&me->owned, a->owned_topics[i], a->owned_partitions[i]))
			kp_tps_add(&owned, a->owned_topics[i], a->owned_partitions[i]);
	me->owned = owned;
	me->dirty = true;
}

/*
 * New partitions in a subscribed topic bump the group epoch too; a group
 * epoch past the assignment epoch gets a new target assignment.  Returns
 * the new signature.
 */
static char *
update_target(Heartbeat *hb)
{
	KpTPSet		all;
	char	   *signature = subscription_signature(hb->m, hb->n, &all);
	int			i;

	if (strcmp(signature, hb->g.metadata_signature) != 0)
	{
		hb->group_epoch++;
		hb->changed = true;
	}
	if (hb->assignment_epoch < hb->group_epoch)
	{
		compute_targets(hb->assignor, hb->m, hb->n, &all);
		hb->assignment_epoch = hb->group_epoch;
		for (i = 0; i < hb->n; i++)
			hb->m[i].dirty = true;
		hb->changed = true;
	}
	return signature;
}

/*
 * Does the member still own a partition taken from it (one outside its
 * assignment: Kafka's UNREVOKED_PARTITIONS)?  Its assignment is what it was
 * last sent until reconcile changes it.
 */
static bool
revoking(const CMember *m)
{
	return !kp_tps_within(&m->owned, &m->assigned);
}

/*
 * Is the member STABLE at the assignment epoch, holding its target and
 * nothing more (Kafka's isReconciledTo)?
 */
static bool
reconciled(const CMember *m, int32 assignment_epoch)
{
	return !revoking(m) && m->member_epoch == assignment_epoch &&
		kp_tps_equal(&m->assigned, &m->target);
}

/*
 * Move the member toward its target, as Kafka's CurrentAssignmentBuilder:
 *
 * - while it still owns a partition taken from it (one it owns outside what
 *   it was last sent: Kafka's UNREVOKED_PARTITIONS), nothing changes: it
 *   keeps its epoch and is given nothing new;
 * - at the assignment epoch, holding its target (STABLE), nothing changes;
 * - else what it has of its target stays.  If it owns a partition of its
 *   assignment that is not in its target, it keeps its epoch and is sent
 *   what stays; it takes nothing new until it has let go.  Otherwise it
 *   moves to the assignment epoch and is given each partition of its target
 *   that no other member has been given or owns; the others it gets at a
 *   later heartbeat, once they are let go (UNRELEASED_PARTITIONS).  Either
 *   way its previous epoch becomes the one it had.
 *
 * A member told to give partitions up has its rebalance timeout to do so:
 * the upkeep removes it at that deadline if it still has not (Kafka's
 * "failed to transition from epoch"); moving on clears the deadline.
 *
 * So the epoch a member commits with while it gives partitions up is the
 * one it had, and a heartbeat of its sent again after a lost answer carries
 * its current epoch.  Returns whether the assignment must be sent, as
 * Kafka's consumerGroupHeartbeat: to a member joining, to a full request
 * (one carrying its rebalance timeout, subscription and owned partitions: a
 * client that lost track sends it), and whenever it differs from the one
 * the member was last sent.
 */
static bool
reconcile(Heartbeat *hb)
{
	CMember    *me = hb->me;
	KpTPSet		next = me->assigned;
	bool		send;
	int			i;

	if (!revoking(me) && !reconciled(me, hb->assignment_epoch))
	{
		bool		gives_up = false;

		memset(&next, 0, sizeof(next));
		for (i = 0; i < me->assigned.n; i++)
		{
			KpTP	   *tp = &me->assigned.items[i];

			if (kp_tps_contains(&me->target, tp->topic, tp->partition))
				kp_tps_add(&next, tp->topic, tp->partition);
			else if (kp_tps_contains(&me->owned, tp->topic, tp->partition))
				gives_up = true;
		}
		for (i = 0; i < me->target.n && !gives_up; i++)
		{
			KpTP	   *tp = &me->target.items[i];
			int			j;
			bool		busy = false;

			for (j = 0; j < hb->n && !busy; j++)
				busy = &hb->m[j] != me &&
					(kp_tps_contains(&hb->m[j].assigned, tp->topic, tp->partition) ||
					 kp_tps_contains(&hb->m[j].owned, tp->topic, tp->partition));
			if (!busy)
				kp_tps_add(&next, tp->topic, tp->partition);
		}
		set_member_epoch(me, gives_up ? me->member_epoch : hb->assignment_epoch);
		me->revoke = gives_up ? KP_REVOKE_START : KP_REVOKE_CLEAR;
	}
	send = !kp_tps_equal(&next, &me->assigned) || hb->a->member_epoch == 0 ||
		(hb->a->rebalance_timeout_ms != -1 &&
		 (hb->a->nsubscribed >= 0 || hb->a->subscribed_regex != NULL) && hb->a->nowned >= 0);
	me->assigned = next;
	me->dirty = true;
	return send;
}

static void
fill_result(const CMember *me, KpCgHeartbeatResult *r)
{
	int			i;

	r->member_id = pstrdup(me->member_id);
	r->member_epoch = me->member_epoch;
	r->nassigned = me->assigned.n;
	r->assigned_topics = palloc(sizeof(char *) * Max(me->assigned.n, 1));
	r->assigned_partitions = palloc(sizeof(int32) * Max(me->assigned.n, 1));
	for (i = 0; i < me->assigned.n; i++)
	{
		r->assigned_topics[i] = me->assigned.items[i].topic;
		r->assigned_partitions[i] = me->assigned.items[i].partition;
	}
}

int16
kp_group_consumer_heartbeat(const KpCgHeartbeatArgs *a, KpCgHeartbeatResult *r)
{
	Heartbeat	hb;
	char	   *signature;
	int16		code;
	int			i;

	memset(r, 0, sizeof(*r));
	memset(&hb, 0, sizeof(hb));
	r->member_epoch = a->member_epoch;
	r->heartbeat_interval_ms = kp_group_consumer_heartbeat_interval_ms;
	hb.a = a;
	hb.assignor = a->server_assignor ? a->server_assignor : "uniform";
	if (a->group_id == NULL || a->group_id[0] == '\0')
		return KP_ERR_INVALID_REQUEST;
	/* the group's consumer.heartbeat.interval.ms (KIP-848 group configs) */
	r->heartbeat_interval_ms = kp_group_consumer_heartbeat_ms(a->group_id);
	if (strcmp(hb.assignor, "uniform") != 0 && strcmp(hb.assignor, "range") != 0)
	{
		r->error_message = psprintf("ServerAssignor %s is not supported. Supported assignors: uniform, range.",
									hb.assignor);
		return KP_ERR_UNSUPPORTED_ASSIGNOR;
	}
	if (a->subscribed_regex != NULL && a->subscribed_regex[0] != '\0')
	{
		char	   *why = regex_error(a->subscribed_regex);

		if (why != NULL)
		{
			r->error_message = psprintf("SubscribedTopicRegex `%s` is not a valid regular expression: %s.",
										a->subscribed_regex, why);
			return KP_ERR_INVALID_REGULAR_EXPRESSION;
		}
	}

	/* only a member joining (epoch 0) makes the group */
	kp_cat_group_read(a->group_id, a->member_epoch == 0, true, &hb.g);
	if (!hb.g.exists)
	{
		r->error_message = psprintf(a->member_epoch > 0 ? "Consumer group %s not found." : "Group %s not found.",
									a->group_id);
		return KP_ERR_GROUP_ID_NOT_FOUND;
	}

	/*
	 * A classic group (offsets only, too) has no consumer-protocol members;
	 * only a join to an empty one makes it a consumer group.
	 */
	if (strcmp(hb.g.group_type, "classic") == 0 &&
		(a->member_epoch != 0 || strcmp(hb.g.state, "Empty") != 0))
	{
		r->error_message = a->member_epoch != 0 ?
			psprintf("Group %s is not a consumer group.", a->group_id) :
			pstrdup("the group is a classic group with members");
		return KP_ERR_GROUP_ID_NOT_FOUND;
	}
	hb.group_epoch = hb.g.group_epoch;
	hb.assignment_epoch = hb.g.assignment_epoch;
	hb.n = load_cmembers(a->group_id, &hb.m);

	if (a->member_epoch != 0 && a->instance_id != NULL &&
		(code = check_static(&hb, r)) != KP_ERR_NONE)
		return code;

	/*
	 * -2: a static member leaving to come back (KIP-848).  It keeps its place
	 * and its partitions until its session times out, with epoch -2 (what
	 * lets another member take its instance id); rejoining with its instance
	 * id takes them over, without moving anyone else.
	 */
	if (a->member_epoch == -2 && a->instance_id != NULL)
	{
		CMember    *me = find_static(&hb, a->instance_id);

		me->member_epoch = -2;
		me->revoke = KP_REVOKE_CLEAR;	/* its timer was for its old epoch */
		save_cmember(a->group_id, me);
		kp_cat_member_touch(a->group_id, me->member_id);
		r->member_id = pstrdup(me->member_id);
		r->member_epoch = -2;
		return KP_ERR_NONE;
	}
	if (a->member_epoch < 0)
		return leave(&hb, r);
	if (a->member_epoch == 0)
		code = join(&hb, r);
	else
		code = heartbeat_member(&hb, r);
	if (code != KP_ERR_NONE)
		return code;
	note_principal(&hb);
	kp_cat_member_touch(a->group_id, hb.me->member_id);

	note_owned(&hb);
	signature = update_target(&hb);
	r->send_assignment = reconcile(&hb);

	for (i = 0; i < hb.n; i++)
		if (hb.m[i].dirty)
			save_cmember(a->group_id, &hb.m[i]);
	save_counters(&hb, hb.group_epoch, signature, hb.n);
	if (hb.changed)
		kp_group_wakeup();
	fill_result(hb.me, r);
	return KP_ERR_NONE;
}

/* The member epoch a commit of a consumer-protocol member must carry. */
int32
kp_group_consumer_member_epoch(const char *group_id, const char *member_id)
{
	return kp_cat_consumer_member_epoch(group_id, member_id);
}

bool
kp_group_consumer_assignment(const char *group_id, const char *member_id, int32 *member_epoch,
							 int *n, char ***topics, int32 **partitions)
{
	KpMemberRow *rows;
	int			nrows = kp_cat_members_load(group_id, &rows);
	KpMemberRow *me = kp_group_find_member(rows, nrows, member_id);
	KpTPSet		assigned;
	int			i;

	*n = 0;
	if (me == NULL)
		return false;
	*member_epoch = me->member_epoch;
	kp_tps_parse(me->assigned, &assigned);
	*n = assigned.n;
	*topics = palloc(sizeof(char *) * Max(assigned.n, 1));
	*partitions = palloc(sizeof(int32) * Max(assigned.n, 1));
	for (i = 0; i < assigned.n; i++)
	{
		(*topics)[i] = assigned.items[i].topic;
		(*partitions)[i] = assigned.items[i].partition;
	}
	return true;
}

void
kp_group_consumer_init_gucs(void)
{
	DefineCustomIntVariable("kafka.group_consumer_heartbeat_interval_ms",
							"Heartbeat interval of consumer-protocol members (Kafka's group.consumer.heartbeat.interval.ms).",
							NULL, &kp_group_consumer_heartbeat_interval_ms, 5000, 100, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.group_consumer_session_timeout_ms",
							"Session timeout of consumer-protocol members (Kafka's group.consumer.session.timeout.ms).",
							NULL, &kp_group_consumer_session_timeout_ms, 45000, 1000, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	kp_group_configs_init_gucs();
}

static void
tps_to_arrays(const KpTPSet *s, int *n, char ***topics, int32 **parts)
{
	int			i;

	*n = s->n;
	*topics = palloc(sizeof(char *) * Max(s->n, 1));
	*parts = palloc(sizeof(int32) * Max(s->n, 1));
	for (i = 0; i < s->n; i++)
	{
		(*topics)[i] = s->items[i].topic;
		(*parts)[i] = s->items[i].partition;
	}
}

void
kp_group_consumer_describe(const char *group_id, KpCgGroupInfo *info)
{
	KpGroupRow	g;
	CMember    *m;
	int			n;
	int			i;
	bool		converged = true;

	memset(info, 0, sizeof(*info));
	kp_cat_group_read(group_id, false, false, &g);
	if (!g.exists)
		return;
	if (strcmp(g.group_type, "consumer") != 0)
	{
		info->other_type = true;
		return;
	}
	info->exists = true;
	info->group_epoch = g.group_epoch;
	info->assignment_epoch = g.assignment_epoch;
	info->assignor = g.protocol_name ? g.protocol_name : pstrdup("uniform");
	n = load_cmembers(group_id, &m);
	info->nmembers = n;
	info->members = palloc0(sizeof(KpCgMemberInfo) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		KpCgMemberInfo *mi = &info->members[i];
		KpMemberRow *row = m[i].row;

		mi->member_id = row->member_id;
		mi->instance_id = row->instance_id;
		mi->member_epoch = m[i].member_epoch;
		mi->client_id = row->client_id ? row->client_id : "";
		mi->client_host = row->client_host ? row->client_host : "";
		mi->rack_id = row->rack_id;
		mi->nsubscribed = m[i].nnames;
		mi->subscribed = m[i].names ? m[i].names : palloc(sizeof(char *));
		mi->subscribed_regex = m[i].regex;
		tps_to_arrays(&m[i].assigned, &mi->nassigned, &mi->assigned_topics, &mi->assigned_partitions);
		tps_to_arrays(&m[i].target, &mi->ntarget, &mi->target_topics, &mi->target_partitions);
		/* Kafka: Reconciling while a member is not reconciled to the epoch */
		if (!reconciled(&m[i], g.assignment_epoch))
			converged = false;
	}
	info->state = pstrdup(n == 0 ? "Empty" : converged ? "Stable" : "Reconciling");
}
