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
 * reconciles each member toward its target, incrementally:
 *
 * - a member is told to keep the partitions of its current assignment that
 *   are still in its target (revoked ones are simply left out);
 * - it is given a partition of its target only once no other member owns
 *   it: neither by the assignment we gave that member nor by what that
 *   member last reported owning.  So a partition moves only after its
 *   previous owner has let go of it, and is never owned by two members at
 *   once.
 * - a member's epoch becomes the assignment epoch once its assignment is
 *   its target (its commits are fenced by that epoch).
 *
 * Members that miss kafka.group_consumer_session_timeout_ms are removed by
 * the resolver's upkeep (kp_group_expire); their partitions become free.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/uuid.h"

#include "catalog/kafka_catalog.h"
#include "group/group.h"
#include "protocol/errors.h"

int			kp_group_consumer_heartbeat_interval_ms = 5000;
int			kp_group_consumer_session_timeout_ms = 45000;

/* ---------------------------------------------------------------------
 * Sets of topic partitions, kept sorted; stored as "t:0,1|u:3"
 * ---------------------------------------------------------------------
 */

typedef struct TP
{
	char	   *topic;
	int32		partition;
} TP;

typedef struct TPSet
{
	int			n;
	int			cap;
	TP		   *items;
} TPSet;

static int
tp_cmp(const void *a, const void *b)
{
	const TP   *x = a;
	const TP   *y = b;
	int			c = strcmp(x->topic, y->topic);

	if (c != 0)
		return c;
	return (x->partition > y->partition) - (x->partition < y->partition);
}

static bool
tps_contains(const TPSet *s, const char *topic, int32 partition)
{
	TP			key;

	if (s->n == 0)
		return false;
	key.topic = (char *) topic;
	key.partition = partition;
	return bsearch(&key, s->items, s->n, sizeof(TP), tp_cmp) != NULL;
}

static void
tps_add(TPSet *s, const char *topic, int32 partition)
{
	if (tps_contains(s, topic, partition))
		return;
	if (s->n == s->cap)
	{
		s->cap = s->cap ? s->cap * 2 : 16;
		s->items = s->items ? repalloc(s->items, sizeof(TP) * s->cap) : palloc(sizeof(TP) * s->cap);
	}
	s->items[s->n].topic = pstrdup(topic);
	s->items[s->n].partition = partition;
	s->n++;
	qsort(s->items, s->n, sizeof(TP), tp_cmp);
}

static void
tps_remove(TPSet *s, const char *topic, int32 partition)
{
	int			i;

	for (i = 0; i < s->n; i++)
	{
		if (s->items[i].partition == partition && strcmp(s->items[i].topic, topic) == 0)
		{
			memmove(&s->items[i], &s->items[i + 1], sizeof(TP) * (s->n - i - 1));
			s->n--;
			return;
		}
	}
}

static void
tps_parse(const char *str, TPSet *out)
{
	char	   *copy = pstrdup(str ? str : "");
	char	   *save1;
	char	   *topic_part;

	memset(out, 0, sizeof(*out));
	for (topic_part = strtok_r(copy, "|", &save1); topic_part; topic_part = strtok_r(NULL, "|", &save1))
	{
		char	   *colon = strchr(topic_part, ':');
		char	   *save2;
		char	   *num;

		if (colon == NULL)
			continue;
		*colon = '\0';
		for (num = strtok_r(colon + 1, ",", &save2); num; num = strtok_r(NULL, ",", &save2))
			tps_add(out, topic_part, (int32) strtol(num, NULL, 10));
	}
}

static char *
tps_format(const TPSet *s)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	for (i = 0; i < s->n; i++)
	{
		if (i == 0 || strcmp(s->items[i - 1].topic, s->items[i].topic) != 0)
			appendStringInfo(&buf, "%s%s:%d", i ? "|" : "", s->items[i].topic, s->items[i].partition);
		else
			appendStringInfo(&buf, ",%d", s->items[i].partition);
	}
	return buf.data;
}

static bool
tps_equal(const TPSet *a, const TPSet *b)
{
	int			i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++)
		if (tp_cmp(&a->items[i], &b->items[i]) != 0)
			return false;
	return true;
}

/* ---------------------------------------------------------------------
 * Members
 * ---------------------------------------------------------------------
 */

typedef struct CMember
{
	char	   *member_id;
	char	   *instance_id;
	char	   *client_id;
	char	   *client_host;
	char	   *rack_id;
	int32		member_epoch;
	int			nsubscribed;
	char	  **subscribed;
	TPSet		assigned;
	TPSet		target;
	TPSet		owned;
	bool		dirty;
} CMember;

static int
load_cmembers(const char *group_id, CMember **out)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(group_id)};
	int			n;
	int			i;
	CMember    *m;

	if (SPI_execute_with_args("SELECT member_id, group_instance_id, member_epoch, subscribed_topics, "
							  "  assigned, target, owned, client_id, client_host, rack_id "
							  "FROM kafka.group_members WHERE group_id = $1 ORDER BY member_id",
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg: cannot read group members");
	n = (int) SPI_processed;
	m = palloc0(sizeof(CMember) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		bool		isnull;
		Datum		d;

		m[i].member_id = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		m[i].instance_id = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		m[i].member_epoch = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3, &isnull));
		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 4, &isnull);
		if (!isnull)
		{
			Datum	   *elems;
			bool	   *enulls;
			int			k;

			deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
							  &elems, &enulls, &m[i].nsubscribed);
			m[i].subscribed = palloc(sizeof(char *) * Max(m[i].nsubscribed, 1));
			for (k = 0; k < m[i].nsubscribed; k++)
				m[i].subscribed[k] = TextDatumGetCString(elems[k]);
		}
		tps_parse(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 5), &m[i].assigned);
		tps_parse(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 6), &m[i].target);
		tps_parse(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 7), &m[i].owned);
		m[i].client_id = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 8);
		m[i].client_host = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 9);
		m[i].rack_id = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 10);
	}
	*out = m;
	return n;
}

static void
save_cmember(const char *group_id, const CMember *m)
{
	Oid			types[6] = {TEXTOID, TEXTOID, INT4OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[6];

	values[0] = CStringGetTextDatum(group_id);
	values[1] = CStringGetTextDatum(m->member_id);
	values[2] = Int32GetDatum(m->member_epoch);
	values[3] = CStringGetTextDatum(tps_format(&m->assigned));
	values[4] = CStringGetTextDatum(tps_format(&m->target));
	values[5] = CStringGetTextDatum(tps_format(&m->owned));
	if (SPI_execute_with_args("UPDATE kafka.group_members SET member_epoch = $3, assigned = $4, "
							  "  target = $5, owned = $6 WHERE group_id = $1 AND member_id = $2",
							  6, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "kafka_pg: cannot update a group member");
}

static bool
subscribes(const CMember *m, const char *topic)
{
	int			i;

	for (i = 0; i < m->nsubscribed; i++)
		if (strcmp(m->subscribed[i], topic) == 0)
			return true;
	return false;
}

/* Partition counts of every subscribed topic; "t:6|u:3" as a signature. */
static char *
subscription_signature(CMember *m, int n, TPSet *all)
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
			tps_add(all, topics[i], p);
	}
	return sig.data;
}

/*
 * The uniform assignor: every member gets an even share of the partitions
 * of the topics it subscribes to, keeping what it has where it can.
 */
static void
assign_uniform(CMember *m, int n, const TPSet *all)
{
	int			i;
	int			k;
	int			rounds;

	/* drop what is gone or no longer subscribed; a partition goes to one member */
	for (i = 0; i < n; i++)
	{
		TPSet		keep;

		memset(&keep, 0, sizeof(keep));
		for (k = 0; k < m[i].target.n; k++)
		{
			TP		   *tp = &m[i].target.items[k];
			int			j;
			bool		taken = false;

			if (!tps_contains(all, tp->topic, tp->partition) || !subscribes(&m[i], tp->topic))
				continue;
			for (j = 0; j < i; j++)
				if (tps_contains(&m[j].target, tp->topic, tp->partition))
					taken = true;
			if (!taken)
				tps_add(&keep, tp->topic, tp->partition);
		}
		m[i].target = keep;
	}
	/* unassigned partitions to the eligible member with the fewest */
	for (k = 0; k < all->n; k++)
	{
		TP		   *tp = &all->items[k];
		int			best = -1;
		bool		assigned = false;

		for (i = 0; i < n; i++)
			if (tps_contains(&m[i].target, tp->topic, tp->partition))
				assigned = true;
		if (assigned)
			continue;
		for (i = 0; i < n; i++)
			if (subscribes(&m[i], tp->topic) && (best < 0 || m[i].target.n < m[best].target.n))
				best = i;
		if (best >= 0)
			tps_add(&m[best].target, tp->topic, tp->partition);
	}
	/* even out: move from the fullest to the emptiest while they differ by 2+ */
	for (rounds = 0; rounds < all->n + n; rounds++)
	{
		int			hi = -1;
		int			lo = -1;
		bool		moved = false;

		for (i = 0; i < n; i++)
		{
			if (hi < 0 || m[i].target.n > m[hi].target.n)
				hi = i;
			if (lo < 0 || m[i].target.n < m[lo].target.n)
				lo = i;
		}
		if (hi < 0 || m[hi].target.n - m[lo].target.n < 2)
			break;
		for (k = m[hi].target.n - 1; k >= 0; k--)
		{
			TP			tp = m[hi].target.items[k];

			if (subscribes(&m[lo], tp.topic))
			{
				tps_remove(&m[hi].target, tp.topic, tp.partition);
				tps_add(&m[lo].target, tp.topic, tp.partition);
				moved = true;
				break;
			}
		}
		if (!moved)
			break;
	}
}

/* The range assignor: per topic, contiguous ranges in member order. */
static void
assign_range(CMember *m, int n, const TPSet *all)
{
	int			i;
	int			k;

	for (i = 0; i < n; i++)
		memset(&m[i].target, 0, sizeof(TPSet));
	for (k = 0; k < all->n;)
	{
		const char *topic = all->items[k].topic;
		int			count = 0;
		int			nsub = 0;
		int			j;
		int			idx = 0;

		while (k + count < all->n && strcmp(all->items[k + count].topic, topic) == 0)
			count++;
		for (i = 0; i < n; i++)
			if (subscribes(&m[i], topic))
				nsub++;
		for (i = 0; i < n && nsub > 0; i++)
		{
			int			share;

			if (!subscribes(&m[i], topic))
				continue;
			share = count / nsub + (idx < count % nsub ? 1 : 0);
			for (j = 0; j < share; j++)
				tps_add(&m[i].target, topic, all->items[k + j + (idx * (count / nsub)) + Min(idx, count % nsub)].partition);
			idx++;
		}
		k += count;
	}
}

/* ---------------------------------------------------------------------
 * The heartbeat
 * ---------------------------------------------------------------------
 */

static char *
new_member_id(void)
{
	Datum		u = DirectFunctionCall1(gen_random_uuid, (Datum) 0);

	return DatumGetCString(DirectFunctionCall1(uuid_out, u));
}

static void
group_counters(const char *group_id, int32 *group_epoch, int32 *assignment_epoch,
			   char **signature, char **group_type, char **state)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(group_id)};
	bool		isnull;

	SPI_execute_with_args("INSERT INTO kafka.consumer_groups (group_id) VALUES ($1) ON CONFLICT DO NOTHING",
						  1, types, values, NULL, false, 0);
	if (SPI_execute_with_args("SELECT group_epoch, assignment_epoch, metadata_signature, group_type, state "
							  "FROM kafka.consumer_groups WHERE group_id = $1 FOR UPDATE",
							  1, types, values, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "kafka_pg: cannot lock group \"%s\"", group_id);
	*group_epoch = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	*assignment_epoch = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	*signature = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
	*group_type = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4);
	*state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 5);
}

static void
save_group_counters(const char *group_id, int32 group_epoch, int32 assignment_epoch,
					const char *signature, const char *assignor, int nmembers)
{
	Oid			types[6] = {TEXTOID, INT4OID, INT4OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[6];

	values[0] = CStringGetTextDatum(group_id);
	values[1] = Int32GetDatum(group_epoch);
	values[2] = Int32GetDatum(assignment_epoch);
	values[3] = CStringGetTextDatum(signature ? signature : "");
	values[4] = CStringGetTextDatum(assignor ? assignor : "uniform");
	values[5] = CStringGetTextDatum(nmembers > 0 ? "Stable" : "Empty");
	if (SPI_execute_with_args("UPDATE kafka.consumer_groups SET group_type = 'consumer', protocol_type = 'consumer', "
							  "  group_epoch = $2, assignment_epoch = $3, metadata_signature = $4, "
							  "  protocol_name = $5, generation_id = $2, "
							  "  state_changed_at = CASE WHEN state = $6 THEN state_changed_at ELSE now() END, "
							  "  state = $6 WHERE group_id = $1",
							  6, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "kafka_pg: cannot update group \"%s\"", group_id);
}

int16
kp_group_consumer_heartbeat(const KpCgHeartbeatArgs *a, KpCgHeartbeatResult *r)
{
	int32		group_epoch;
	int32		assignment_epoch;
	char	   *signature;
	char	   *group_type;
	char	   *state;
	CMember    *m;
	int			n;
	int			i;
	CMember    *me = NULL;
	TPSet		all;
	char	   *new_signature;
	bool		changed = false;
	int16		code = KP_ERR_NONE;
	const char *assignor = a->server_assignor ? a->server_assignor : "uniform";

	memset(r, 0, sizeof(*r));
	r->member_epoch = a->member_epoch;
	r->heartbeat_interval_ms = kp_group_consumer_heartbeat_interval_ms;
	if (a->group_id == NULL || a->group_id[0] == '\0')
		return KP_ERR_INVALID_REQUEST;
	if (strcmp(assignor, "uniform") != 0 && strcmp(assignor, "range") != 0)
	{
		r->error_message = psprintf("unknown server assignor \"%s\": use uniform or range", assignor);
		return KP_ERR_UNSUPPORTED_ASSIGNOR;
	}

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	group_counters(a->group_id, &group_epoch, &assignment_epoch, &signature, &group_type, &state);
	if (strcmp(group_type, "classic") == 0 && strcmp(state, "Empty") != 0)
	{
		r->error_message = pstrdup("the group is a classic group with members");
		code = KP_ERR_GROUP_ID_NOT_FOUND;
		goto out;
	}
	n = load_cmembers(a->group_id, &m);

	/*
	 * -2: a static member leaving to come back (KIP-848).  It keeps its
	 * place and its partitions until its session times out; rejoining with
	 * its instance id takes them over, without moving anyone else.
	 */
	if (a->member_epoch == -2 && a->instance_id != NULL)
	{
		r->member_id = pstrdup(a->member_id ? a->member_id : "");
		r->member_epoch = -2;
		goto out;
	}

	/* leaving: -1 */
	if (a->member_epoch < 0)
	{
		Oid			types[2] = {TEXTOID, TEXTOID};
		Datum		values[2] = {CStringGetTextDatum(a->group_id), CStringGetTextDatum(a->member_id ? a->member_id : "")};

		SPI_execute_with_args("DELETE FROM kafka.group_members WHERE group_id = $1 AND member_id = $2",
							  2, types, values, NULL, false, 0);
		save_group_counters(a->group_id, group_epoch + 1, assignment_epoch, signature, assignor, n - 1);
		r->member_id = pstrdup(a->member_id ? a->member_id : "");
		r->member_epoch = a->member_epoch;
		kp_group_wakeup();
		goto out;
	}

	if (a->member_epoch == 0)
	{
		/* joining: the client's id (KIP-1082) or one of ours */
		char	   *id = (a->member_id && a->member_id[0]) ? pstrdup(a->member_id) : new_member_id();
		Oid			types[8] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID, TEXTOID, TEXTARRAYOID};
		Datum		values[8];
		char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
		Datum	   *subs = palloc(sizeof(Datum) * Max(a->nsubscribed, 1));
		char	   *inherit_assigned = NULL;

		for (i = 0; i < Max(a->nsubscribed, 0); i++)
			subs[i] = CStringGetTextDatum(a->subscribed[i]);
		if (a->instance_id)
		{
			/* a static member coming back takes over its old place */
			for (i = 0; i < n; i++)
				if (m[i].instance_id && strcmp(m[i].instance_id, a->instance_id) == 0)
				{
					Oid			t2[2] = {TEXTOID, TEXTOID};
					Datum		v2[2] = {CStringGetTextDatum(a->group_id), CStringGetTextDatum(m[i].member_id)};

					inherit_assigned = tps_format(&m[i].target);
					SPI_execute_with_args("DELETE FROM kafka.group_members WHERE group_id = $1 AND member_id = $2",
										  2, t2, v2, NULL, false, 0);
				}
		}
		values[0] = CStringGetTextDatum(a->group_id);
		values[1] = CStringGetTextDatum(id);
		if (a->instance_id)
			values[2] = CStringGetTextDatum(a->instance_id);
		else
			nulls[2] = 'n';
		values[3] = CStringGetTextDatum(a->client_id ? a->client_id : "");
		values[4] = CStringGetTextDatum(a->client_host ? a->client_host : "");
		values[5] = Int32GetDatum(a->rebalance_timeout_ms > 0 ? a->rebalance_timeout_ms : 300000);
		if (a->rack_id)
			values[6] = CStringGetTextDatum(a->rack_id);
		else
			nulls[6] = 'n';
		values[7] = PointerGetDatum(construct_array(subs, Max(a->nsubscribed, 0), TEXTOID, -1, false, TYPALIGN_INT));
		if (SPI_execute_with_args("INSERT INTO kafka.group_members (group_id, member_id, group_instance_id, "
								  "  client_id, client_host, session_timeout_ms, rebalance_timeout_ms, "
								  "  rack_id, subscribed_topics, join_round) "
								  "VALUES ($1, $2, $3, $4, $5, " CppAsString2(0) ", $6, $7, $8, 0) "
								  "ON CONFLICT (group_id, member_id) DO UPDATE SET subscribed_topics = $8, "
								  "  last_heartbeat = now(), member_epoch = 0",
								  8, types, values, nulls, false, 0) < 0)
			elog(ERROR, "kafka_pg: cannot add a group member");
		if (inherit_assigned)
		{
			Oid			t3[3] = {TEXTOID, TEXTOID, TEXTOID};
			Datum		v3[3] = {CStringGetTextDatum(a->group_id), CStringGetTextDatum(id),
			CStringGetTextDatum(inherit_assigned)};

			SPI_execute_with_args("UPDATE kafka.group_members SET target = $3 WHERE group_id = $1 AND member_id = $2",
								  3, t3, v3, NULL, false, 0);
		}
		n = load_cmembers(a->group_id, &m);
		for (i = 0; i < n; i++)
			if (strcmp(m[i].member_id, id) == 0)
				me = &m[i];
		if (inherit_assigned == NULL)
		{
			/* a new member changes the group; a returning static one does not */
			group_epoch++;
			changed = true;
		}
		else
		{
			/* it still holds what its previous incarnation held */
			tps_parse(inherit_assigned, &me->assigned);
			me->member_epoch = assignment_epoch;
			me->dirty = true;
		}
	}
	else
	{
		for (i = 0; i < n; i++)
			if (a->member_id && strcmp(m[i].member_id, a->member_id) == 0)
				me = &m[i];
		if (me == NULL)
		{
			code = KP_ERR_UNKNOWN_MEMBER_ID;
			goto out;
		}
		if (a->member_epoch > me->member_epoch)
		{
			code = KP_ERR_FENCED_MEMBER_EPOCH;
			goto out;
		}
		if (a->nsubscribed >= 0)
		{
			/* a subscription change bumps the group epoch */
			bool		same = (a->nsubscribed == me->nsubscribed);

			for (i = 0; same && i < a->nsubscribed; i++)
				same = subscribes(me, a->subscribed[i]);
			if (!same)
			{
				Oid			types[3] = {TEXTOID, TEXTOID, TEXTARRAYOID};
				Datum	   *subs = palloc(sizeof(Datum) * Max(a->nsubscribed, 1));
				Datum		values[3];

				for (i = 0; i < a->nsubscribed; i++)
					subs[i] = CStringGetTextDatum(a->subscribed[i]);
				values[0] = CStringGetTextDatum(a->group_id);
				values[1] = CStringGetTextDatum(me->member_id);
				values[2] = PointerGetDatum(construct_array(subs, a->nsubscribed, TEXTOID, -1, false, TYPALIGN_INT));
				SPI_execute_with_args("UPDATE kafka.group_members SET subscribed_topics = $3 "
									  "WHERE group_id = $1 AND member_id = $2",
									  3, types, values, NULL, false, 0);
				me->nsubscribed = a->nsubscribed;
				me->subscribed = a->subscribed;
				group_epoch++;
				changed = true;
			}
		}
	}
	{
		Oid			types[2] = {TEXTOID, TEXTOID};
		Datum		values[2] = {CStringGetTextDatum(a->group_id), CStringGetTextDatum(me->member_id)};

		SPI_execute_with_args("UPDATE kafka.group_members SET last_heartbeat = now() "
							  "WHERE group_id = $1 AND member_id = $2", 2, types, values, NULL, false, 0);
	}

	/* what the member says it owns now */
	if (a->nowned >= 0)
	{
		memset(&me->owned, 0, sizeof(TPSet));
		for (i = 0; i < a->nowned; i++)
			tps_add(&me->owned, a->owned_topics[i], a->owned_partitions[i]);
		/* what it no longer owns is no longer in its assignment either */
		for (i = me->assigned.n - 1; i >= 0; i--)
			if (!tps_contains(&me->owned, me->assigned.items[i].topic, me->assigned.items[i].partition) &&
				!tps_contains(&me->target, me->assigned.items[i].topic, me->assigned.items[i].partition))
				tps_remove(&me->assigned, me->assigned.items[i].topic, me->assigned.items[i].partition);
		me->dirty = true;
	}

	/* new partitions in a subscribed topic also bump the group epoch */
	new_signature = subscription_signature(m, n, &all);
	if (strcmp(new_signature, signature) != 0)
	{
		group_epoch++;
		changed = true;
	}

	if (assignment_epoch < group_epoch)
	{
		if (strcmp(assignor, "range") == 0)
			assign_range(m, n, &all);
		else
			assign_uniform(m, n, &all);
		assignment_epoch = group_epoch;
		for (i = 0; i < n; i++)
			m[i].dirty = true;
		changed = true;
	}

	/* reconcile this member toward its target */
	{
		TPSet		next;
		bool		converged;

		memset(&next, 0, sizeof(next));
		for (i = 0; i < me->assigned.n; i++)
			if (tps_contains(&me->target, me->assigned.items[i].topic, me->assigned.items[i].partition))
				tps_add(&next, me->assigned.items[i].topic, me->assigned.items[i].partition);
		for (i = 0; i < me->target.n; i++)
		{
			TP		   *tp = &me->target.items[i];
			int			j;
			bool		busy = false;

			if (tps_contains(&next, tp->topic, tp->partition))
				continue;
			for (j = 0; j < n && !busy; j++)
			{
				if (&m[j] == me)
					continue;
				busy = tps_contains(&m[j].assigned, tp->topic, tp->partition) ||
					tps_contains(&m[j].owned, tp->topic, tp->partition);
			}
			if (!busy)
				tps_add(&next, tp->topic, tp->partition);
		}
		converged = tps_equal(&next, &me->target);
		if (!tps_equal(&next, &me->assigned) || a->member_epoch == 0)
			r->send_assignment = true;
		me->assigned = next;
		if (converged || me->member_epoch == 0)
			me->member_epoch = assignment_epoch;
		me->dirty = true;
	}

	for (i = 0; i < n; i++)
		if (m[i].dirty)
			save_cmember(a->group_id, &m[i]);
	save_group_counters(a->group_id, group_epoch, assignment_epoch, new_signature, assignor, n);
	if (changed)
		kp_group_wakeup();

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
	if (!r->send_assignment && a->nowned < 0)
		r->send_assignment = false;
out:
	SPI_finish();
	return code;
}

/* The member epoch a commit of a consumer-protocol member must carry. */
int32
kp_group_consumer_member_epoch(const char *group_id, const char *member_id)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2] = {CStringGetTextDatum(group_id), CStringGetTextDatum(member_id)};
	int32		epoch = -1;
	bool		isnull;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT m.member_epoch FROM kafka.group_members m "
							  "JOIN kafka.consumer_groups g USING (group_id) "
							  "WHERE g.group_type = 'consumer' AND m.group_id = $1 AND m.member_id = $2",
							  2, types, values, NULL, true, 1) == SPI_OK_SELECT && SPI_processed == 1)
		epoch = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return epoch;
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
}

static void
tps_to_arrays(const TPSet *s, int *n, char ***topics, int32 **parts)
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
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(group_id)};
	MemoryContext caller = CurrentMemoryContext;
	CMember    *m;
	int			n;
	int			i;
	bool		isnull;
	bool		converged = true;

	memset(info, 0, sizeof(*info));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT group_epoch, assignment_epoch, coalesce(protocol_name, 'uniform') "
							  "FROM kafka.consumer_groups WHERE group_id = $1 AND group_type = 'consumer'",
							  1, types, values, NULL, true, 1) != SPI_OK_SELECT || SPI_processed == 0)
	{
		SPI_finish();
		return;
	}
	info->exists = true;
	info->group_epoch = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	info->assignment_epoch = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	{
		MemoryContext old = MemoryContextSwitchTo(caller);

		info->assignor = pstrdup(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3));
		MemoryContextSwitchTo(old);
	}
	n = load_cmembers(group_id, &m);
	{
		MemoryContext old = MemoryContextSwitchTo(caller);

		info->nmembers = n;
		info->members = palloc0(sizeof(KpCgMemberInfo) * Max(n, 1));
		for (i = 0; i < n; i++)
		{
			KpCgMemberInfo *mi = &info->members[i];
			TPSet		a;
			TPSet		t;
			int			k;

			mi->member_id = pstrdup(m[i].member_id);
			mi->instance_id = m[i].instance_id ? pstrdup(m[i].instance_id) : NULL;
			mi->member_epoch = m[i].member_epoch;
			mi->client_id = pstrdup(m[i].client_id ? m[i].client_id : "");
			mi->client_host = pstrdup(m[i].client_host ? m[i].client_host : "");
			mi->rack_id = m[i].rack_id ? pstrdup(m[i].rack_id) : NULL;
			mi->nsubscribed = m[i].nsubscribed;
			mi->subscribed = palloc(sizeof(char *) * Max(m[i].nsubscribed, 1));
			for (k = 0; k < m[i].nsubscribed; k++)
				mi->subscribed[k] = pstrdup(m[i].subscribed[k]);
			tps_parse(tps_format(&m[i].assigned), &a);
			tps_parse(tps_format(&m[i].target), &t);
			tps_to_arrays(&a, &mi->nassigned, &mi->assigned_topics, &mi->assigned_partitions);
			tps_to_arrays(&t, &mi->ntarget, &mi->target_topics, &mi->target_partitions);
			if (!tps_equal(&m[i].assigned, &m[i].target))
				converged = false;
		}
		info->state = pstrdup(n == 0 ? "Empty" : converged ? "Stable" : "Reconciling");
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
}
