/*-------------------------------------------------------------------------
 *
 * coordinator.c
 *	  The classic consumer-group protocol and committed offsets.
 *
 * This follows Kafka's GroupCoordinator state machine (Empty,
 * PreparingRebalance, CompletingRebalance, Stable) over catalog rows:
 *
 * - A JoinGroup puts the member into the current rebalance round (starting
 *   one if the group was not rebalancing) and waits until every member has
 *   joined the round or the round's deadline (the largest rebalance timeout,
 *   max.poll.interval.ms for Java) passes; members that did not rejoin are
 *   removed.  Then the generation advances, the protocol most members prefer
 *   among those all support is chosen, a leader is picked (the old one if it
 *   rejoined), and the group waits for the leader's SyncGroup.
 * - The leader's SyncGroup stores every member's assignment (members it did
 *   not assign get empty bytes) and makes the group Stable; followers wait
 *   for it.
 * - Heartbeats keep members alive; a member silent for longer than its
 *   session timeout is removed by kp_group_expire (the resolver runs it every
 *   second), which starts a rebalance.
 * - Static members (group.instance.id, KIP-345) keep their place across
 *   restarts: a rejoin with a known instance id replaces the old member id
 *   (fencing it) and, if the group is Stable, answers at once with the
 *   current generation and the member's assignment: no rebalance.
 *
 * Every operation takes the group row's lock (SELECT ... FOR UPDATE), so
 * whichever listener worker or SQL session runs it, the group changes one
 * step at a time.  Waiters are woken after the changing transaction commits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "group/group.h"
#include "protocol/errors.h"
#include "protocol/protocol.h"
#include "store/store.h"

int			kp_group_initial_rebalance_delay_ms = 3000;
int			kp_group_min_session_timeout_ms = 6000;
int			kp_group_max_session_timeout_ms = 1800000;
int			kp_offsets_retention_minutes = 10080;

static bool wake_at_commit = false;

typedef struct GroupRow
{
	bool		exists;
	char	   *protocol_type;
	char	   *state;
	int32		generation;
	char	   *protocol_name;
	char	   *leader_id;
	int32		round;
	int64		deadline_ms;	/* -1 when none */
	int64		not_before_ms;	/* -1 when none */
} GroupRow;

typedef struct MemberRow
{
	char	   *member_id;
	char	   *instance_id;
	char	   *client_id;
	char	   *client_host;
	int32		session_timeout_ms;
	int32		rebalance_timeout_ms;
	int32		join_round;
	int			nprotocols;
	char	  **protocol_names;
	KpBlob	   *protocol_metadata;
	KpBlob		assignment;
	int64		last_heartbeat_ms;
} MemberRow;

/* ---------------------------------------------------------------------
 * Settings, wakeups
 * ---------------------------------------------------------------------
 */

static void
group_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT && wake_at_commit)
		kp_log_wake_waiters();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT)
		wake_at_commit = false;
}

void
kp_group_init_gucs(void)
{
	DefineCustomIntVariable("kafka.group_initial_rebalance_delay_ms",
							"How long a new group waits for more members before its first rebalance completes (Kafka's group.initial.rebalance.delay.ms).",
							NULL, &kp_group_initial_rebalance_delay_ms, 3000, 0, 300000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.group_min_session_timeout_ms",
							"Smallest session timeout a member may ask for (Kafka's group.min.session.timeout.ms).",
							NULL, &kp_group_min_session_timeout_ms, 6000, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.group_max_session_timeout_ms",
							"Largest session timeout a member may ask for (Kafka's group.max.session.timeout.ms).",
							NULL, &kp_group_max_session_timeout_ms, 1800000, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.offsets_retention_minutes",
							"Committed offsets of an empty group are dropped after this long (Kafka's offsets.retention.minutes).",
							NULL, &kp_offsets_retention_minutes, 10080, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MIN, NULL, NULL, NULL);
	RegisterXactCallback(group_xact_callback, NULL);
	kp_group_consumer_init_gucs();
}

void
kp_group_wakeup(void)
{
	wake_at_commit = true;
}

/* ---------------------------------------------------------------------
 * SPI helpers
 * ---------------------------------------------------------------------
 */

static int
run(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls)
{
	int			ret = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);

	if (ret < 0)
		elog(ERROR, "kafka_pg group coordinator: statement failed (%d): %s", ret, sql);
	return ret;
}

static char *
col_text(int row, int col)
{
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
}

static int64
col_int64(int row, int col, int64 if_null)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);

	if (isnull)
		return if_null;
	switch (SPI_gettypeid(SPI_tuptable->tupdesc, col))
	{
		case INT4OID:
			return DatumGetInt32(d);
		case INT2OID:
			return DatumGetInt16(d);
		default:
			return DatumGetInt64(d);
	}
}

static KpBlob
col_blob(int row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);
	KpBlob		b = {NULL, -1};

	if (!isnull)
	{
		bytea	   *v = DatumGetByteaPP(d);

		b.len = VARSIZE_ANY_EXHDR(v);
		b.data = palloc(Max(b.len, 1));
		memcpy((char *) b.data, VARDATA_ANY(v), b.len);
	}
	return b;
}

static Datum
blob_datum(KpBlob b)
{
	bytea	   *v = palloc(VARHDRSZ + Max(b.len, 0));

	SET_VARSIZE(v, VARHDRSZ + Max(b.len, 0));
	if (b.len > 0)
		memcpy(VARDATA(v), b.data, b.len);
	return PointerGetDatum(v);
}

static void read_group(const char *group_id, bool create, bool for_update, GroupRow *g);

static bool
kp_group_is_consumer_type(const char *group_id)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(group_id)};

	run("SELECT 1 FROM kafka.consumer_groups WHERE group_id = $1 AND group_type = 'consumer'",
		1, types, values, NULL);
	return SPI_processed > 0;
}

static void
lock_group(const char *group_id, bool create, GroupRow *g)
{
	read_group(group_id, create, true, g);
}

/* The group's row, locked FOR UPDATE when for_update. */
static void
read_group(const char *group_id, bool create, bool for_update, GroupRow *g)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(group_id)};

	memset(g, 0, sizeof(*g));
	if (create)
		run("INSERT INTO kafka.consumer_groups (group_id) VALUES ($1) ON CONFLICT DO NOTHING",
			1, types, values, NULL);
	run("SELECT protocol_type, state, generation_id, protocol_name, leader_id, rebalance_round, "
		"  (extract(epoch FROM rebalance_deadline) * 1000)::bigint, "
		"  (extract(epoch FROM join_not_before) * 1000)::bigint "
		"FROM kafka.consumer_groups WHERE group_id = $1",
		1, types, values, NULL);
	if (for_update && SPI_processed > 0)
		run("SELECT protocol_type, state, generation_id, protocol_name, leader_id, rebalance_round, "
			"  (extract(epoch FROM rebalance_deadline) * 1000)::bigint, "
			"  (extract(epoch FROM join_not_before) * 1000)::bigint "
			"FROM kafka.consumer_groups WHERE group_id = $1 FOR UPDATE",
			1, types, values, NULL);
	if (SPI_processed == 0)
		return;
	g->exists = true;
	g->protocol_type = col_text(0, 1);
	g->state = col_text(0, 2);
	g->generation = (int32) col_int64(0, 3, 0);
	g->protocol_name = col_text(0, 4);
	g->leader_id = col_text(0, 5);
	g->round = (int32) col_int64(0, 6, 0);
	g->deadline_ms = col_int64(0, 7, -1);
	g->not_before_ms = col_int64(0, 8, -1);
}

static void
save_group(const char *group_id, const GroupRow *g)
{
	Oid			types[8] = {TEXTOID, TEXTOID, TEXTOID, INT4OID, TEXTOID, TEXTOID, INT4OID, INT8OID};
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = CStringGetTextDatum(group_id);
	values[1] = CStringGetTextDatum(g->protocol_type ? g->protocol_type : "");
	values[2] = CStringGetTextDatum(g->state);
	values[3] = Int32GetDatum(g->generation);
	if (g->protocol_name)
		values[4] = CStringGetTextDatum(g->protocol_name);
	else
		nulls[4] = 'n';
	if (g->leader_id)
		values[5] = CStringGetTextDatum(g->leader_id);
	else
		nulls[5] = 'n';
	values[6] = Int32GetDatum(g->round);
	values[7] = Int64GetDatum(g->deadline_ms);
	run("UPDATE kafka.consumer_groups SET protocol_type = $2, "
		"  state_changed_at = CASE WHEN state = $3 THEN state_changed_at ELSE now() END, "
		"  state = $3, generation_id = $4, protocol_name = $5, leader_id = $6, rebalance_round = $7, "
		"  rebalance_deadline = CASE WHEN $8 < 0 THEN NULL ELSE to_timestamp($8 / 1000.0) END "
		"WHERE group_id = $1",
		8, types, values, nulls);
	kp_group_wakeup();
}

static int
load_members(const char *group_id, MemberRow **out)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(group_id)};
	int			n;
	int			i;
	MemberRow  *m;

	run("SELECT member_id, group_instance_id, client_id, client_host, session_timeout_ms, "
		"  rebalance_timeout_ms, join_round, protocol_names, protocol_metadata, assignment, "
		"  (extract(epoch FROM last_heartbeat) * 1000)::bigint "
		"FROM kafka.group_members WHERE group_id = $1 ORDER BY member_id",
		1, types, values, NULL);
	n = (int) SPI_processed;
	m = palloc0(sizeof(MemberRow) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		bool		isnull;
		Datum		d;

		m[i].member_id = col_text(i, 1);
		m[i].instance_id = col_text(i, 2);
		m[i].client_id = col_text(i, 3);
		m[i].client_host = col_text(i, 4);
		m[i].session_timeout_ms = (int32) col_int64(i, 5, 0);
		m[i].rebalance_timeout_ms = (int32) col_int64(i, 6, 0);
		m[i].join_round = (int32) col_int64(i, 7, -1);
		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 8, &isnull);
		if (!isnull)
		{
			Datum	   *elems;
			bool	   *enulls;
			int			ne;
			int			k;

			deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
							  &elems, &enulls, &ne);
			m[i].nprotocols = ne;
			m[i].protocol_names = palloc(sizeof(char *) * Max(ne, 1));
			for (k = 0; k < ne; k++)
				m[i].protocol_names[k] = TextDatumGetCString(elems[k]);
		}
		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 9, &isnull);
		m[i].protocol_metadata = palloc0(sizeof(KpBlob) * Max(m[i].nprotocols, 1));
		if (!isnull)
		{
			Datum	   *elems;
			bool	   *enulls;
			int			ne;
			int			k;

			deconstruct_array(DatumGetArrayTypeP(d), BYTEAOID, -1, false, TYPALIGN_INT,
							  &elems, &enulls, &ne);
			for (k = 0; k < ne && k < m[i].nprotocols; k++)
			{
				bytea	   *v = DatumGetByteaPP(elems[k]);

				m[i].protocol_metadata[k].len = VARSIZE_ANY_EXHDR(v);
				m[i].protocol_metadata[k].data = VARDATA_ANY(v);
			}
		}
		m[i].assignment = col_blob(i, 10);
		m[i].last_heartbeat_ms = col_int64(i, 11, 0);
	}
	*out = m;
	return n;
}

static MemberRow *
find_member(MemberRow *m, int n, const char *member_id)
{
	int			i;

	for (i = 0; i < n; i++)
		if (strcmp(m[i].member_id, member_id) == 0)
			return &m[i];
	return NULL;
}

static MemberRow *
find_instance(MemberRow *m, int n, const char *instance_id)
{
	int			i;

	if (instance_id == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if (m[i].instance_id && strcmp(m[i].instance_id, instance_id) == 0)
			return &m[i];
	return NULL;
}

/*
 * Lock an existing group and find a member in it: UNKNOWN_MEMBER_ID when
 * the group or the member is gone, FENCED_INSTANCE_ID when the member's
 * static instance id now belongs to another member id.
 */
static int16
lock_group_member(const char *group_id, const char *member_id, const char *instance_id,
				  GroupRow *g, MemberRow **m, int *n, MemberRow **me)
{
	*m = NULL;
	*n = 0;
	*me = NULL;
	lock_group(group_id, false, g);
	if (!g->exists)
		return KP_ERR_UNKNOWN_MEMBER_ID;
	*n = load_members(group_id, m);
	*me = find_member(*m, *n, member_id);
	if (*me == NULL)
		return find_instance(*m, *n, instance_id) ? KP_ERR_FENCED_INSTANCE_ID : KP_ERR_UNKNOWN_MEMBER_ID;
	return KP_ERR_NONE;
}

static int64
now_ms(void)
{
	return GetCurrentTimestamp() / 1000 +
		((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)) * SECS_PER_DAY * 1000;
}

/* Kafka's member ids: client id, a dash, a UUID. */
static char *
new_member_id(const char *client_id)
{
	Datum		u = DirectFunctionCall1(gen_random_uuid, (Datum) 0);

	return psprintf("%s-%s", client_id ? client_id : "",
					DatumGetCString(DirectFunctionCall1(uuid_out, u)));
}

static void
upsert_member(const char *group_id, const char *member_id, const KpJoinArgs *a, int32 join_round)
{
	Oid			types[10] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID, INT4OID,
	TEXTARRAYOID, BYTEAARRAYOID, INT4OID};
	Datum		values[10];
	char		nulls[10] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	Datum	   *names = palloc(sizeof(Datum) * Max(a->nprotocols, 1));
	Datum	   *metas = palloc(sizeof(Datum) * Max(a->nprotocols, 1));
	int			i;

	for (i = 0; i < a->nprotocols; i++)
	{
		names[i] = CStringGetTextDatum(a->protocol_names[i]);
		metas[i] = blob_datum(a->protocol_metadata[i]);
	}
	values[0] = CStringGetTextDatum(group_id);
	values[1] = CStringGetTextDatum(member_id);
	if (a->group_instance_id)
		values[2] = CStringGetTextDatum(a->group_instance_id);
	else
		nulls[2] = 'n';
	values[3] = CStringGetTextDatum(a->client_id ? a->client_id : "");
	values[4] = CStringGetTextDatum(a->client_host ? a->client_host : "");
	values[5] = Int32GetDatum(a->session_timeout_ms);
	values[6] = Int32GetDatum(a->rebalance_timeout_ms);
	values[7] = PointerGetDatum(construct_array(names, a->nprotocols, TEXTOID, -1, false, TYPALIGN_INT));
	values[8] = PointerGetDatum(construct_array(metas, a->nprotocols, BYTEAOID, -1, false, TYPALIGN_INT));
	values[9] = Int32GetDatum(join_round);
	run("INSERT INTO kafka.group_members AS m (group_id, member_id, group_instance_id, client_id, "
		"  client_host, session_timeout_ms, rebalance_timeout_ms, protocol_names, protocol_metadata, "
		"  join_round, last_heartbeat) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now()) "
		"ON CONFLICT (group_id, member_id) DO UPDATE SET group_instance_id = $3, client_id = $4, "
		"  client_host = $5, session_timeout_ms = $6, rebalance_timeout_ms = $7, protocol_names = $8, "
		"  protocol_metadata = $9, join_round = $10, last_heartbeat = now()",
		10, types, values, nulls);
}

static void
delete_member(const char *group_id, const char *member_id)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2] = {CStringGetTextDatum(group_id), CStringGetTextDatum(member_id)};

	run("DELETE FROM kafka.group_members WHERE group_id = $1 AND member_id = $2",
		2, types, values, NULL);
}

static void
start_rebalance(const char *group_id, GroupRow *g, MemberRow *m, int n)
{
	int32		max_rebalance = 0;
	int			i;
	int64		now = now_ms();

	for (i = 0; i < n; i++)
		max_rebalance = Max(max_rebalance, m[i].rebalance_timeout_ms);
	if (strcmp(g->state, "Empty") == 0)
	{
		/* group.initial.rebalance.delay.ms: let the first members gather */
		Oid			types[2] = {TEXTOID, INT8OID};
		Datum		values[2] = {CStringGetTextDatum(group_id),
		Int64GetDatum(now + kp_group_initial_rebalance_delay_ms)};

		run("UPDATE kafka.consumer_groups SET join_not_before = to_timestamp($2 / 1000.0) WHERE group_id = $1",
			2, types, values, NULL);
		g->not_before_ms = now + kp_group_initial_rebalance_delay_ms;
		max_rebalance = Max(max_rebalance, kp_group_initial_rebalance_delay_ms);
	}
	else
	{
		Oid			types[1] = {TEXTOID};
		Datum		values[1] = {CStringGetTextDatum(group_id)};

		run("UPDATE kafka.consumer_groups SET join_not_before = NULL WHERE group_id = $1",
			1, types, values, NULL);
		g->not_before_ms = -1;
	}
	g->state = "PreparingRebalance";
	g->round++;
	g->deadline_ms = now + Max(max_rebalance, 1000);
}

/*
 * The protocol to use: among the protocols every member supports, the one
 * most members list first (Kafka's vote).
 */
static char *
choose_protocol(MemberRow *m, int n)
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
 * join are removed.
 */
static void
try_complete_join(const char *group_id, GroupRow *g)
{
	MemberRow  *m;
	int			n = load_members(group_id, &m);
	int			i;
	int			njoined = 0;
	int			nlate = 0;
	int64		now = now_ms();
	MemberRow  *joined;
	bool		leader_joined = false;

	if (strcmp(g->state, "PreparingRebalance") != 0)
		return;
	for (i = 0; i < n; i++)
	{
		if (m[i].join_round == g->round)
			njoined++;
		else if (m[i].join_round >= 0)
			nlate++;			/* pending members (-1) do not hold it up */
	}
	if (now < g->deadline_ms &&
		(nlate > 0 || (g->not_before_ms >= 0 && now < g->not_before_ms)))
		return;

	joined = palloc0(sizeof(MemberRow) * Max(njoined, 1));
	njoined = 0;
	for (i = 0; i < n; i++)
	{
		if (m[i].join_round == g->round)
			joined[njoined++] = m[i];
		else
			delete_member(group_id, m[i].member_id);
	}
	g->generation++;
	if (njoined == 0)
	{
		g->state = "Empty";
		g->protocol_name = NULL;
		g->leader_id = NULL;
		g->deadline_ms = -1;
		save_group(group_id, g);
		return;
	}
	for (i = 0; i < njoined; i++)
		if (g->leader_id && strcmp(joined[i].member_id, g->leader_id) == 0)
			leader_joined = true;
	if (!leader_joined)
		g->leader_id = joined[0].member_id;
	g->protocol_name = choose_protocol(joined, njoined);
	g->state = "CompletingRebalance";
	{
		int32		max_rebalance = 0;
		Oid			types[1] = {TEXTOID};
		Datum		values[1] = {CStringGetTextDatum(group_id)};

		for (i = 0; i < njoined; i++)
			max_rebalance = Max(max_rebalance, joined[i].rebalance_timeout_ms);
		g->deadline_ms = now + Max(max_rebalance, 1000);
		run("UPDATE kafka.group_members SET assignment = NULL, last_heartbeat = now() WHERE group_id = $1",
			1, types, values, NULL);
	}
	save_group(group_id, g);
}

static void
fill_join_result(const char *group_id, const GroupRow *g, const char *member_id,
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
		MemberRow  *m;
		int			n = load_members(group_id, &m);
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
protocols_compatible(MemberRow *m, int n, const char *self, const KpJoinArgs *a)
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
			if (m[i].join_round < 0)
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

int16
kp_group_join(const KpJoinArgs *a, KpJoinResult *r)
{
	GroupRow	g;
	MemberRow  *m;
	int			n;
	const char *member_id = a->retry_member_id ? a->retry_member_id : a->member_id;
	MemberRow  *me;
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

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	lock_group(a->group_id, true, &g);
	n = load_members(a->group_id, &m);

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
		MemberRow  *old = find_instance(m, n, a->group_instance_id);
		char	   *id = new_member_id(a->client_id);

		if (old != NULL)
		{
			/* static member restarting: the old id is fenced from now on */
			Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
			Datum		values[3] = {CStringGetTextDatum(a->group_id),
				CStringGetTextDatum(old->member_id), CStringGetTextDatum(id)};
			bool		was_leader = g.leader_id && strcmp(g.leader_id, old->member_id) == 0;

			run("UPDATE kafka.group_members SET member_id = $3, last_heartbeat = now() "
				"WHERE group_id = $1 AND member_id = $2", 3, types, values, NULL);
			if (was_leader)
			{
				g.leader_id = id;
				save_group(a->group_id, &g);
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
		me = find_member(m, n, member_id);
		if (me == NULL)
		{
			code = KP_ERR_UNKNOWN_MEMBER_ID;
			goto out;
		}
		if (a->group_instance_id && (me->instance_id == NULL ||
									 strcmp(me->instance_id, a->group_instance_id) != 0))
		{
			code = KP_ERR_FENCED_INSTANCE_ID;
			goto out;
		}
		/*
		 * A parked join called again: it is in this round already, so only
		 * see whether the round is complete (someone else may have
		 * completed it); never start another round for it.
		 */
		if (a->retry_member_id && me->join_round == g.round)
		{
			try_complete_join(a->group_id, &g);
			goto result;
		}
	}

	g.protocol_type = pstrdup(a->protocol_type);
	if (strcmp(g.state, "PreparingRebalance") != 0)
	{
		/* a known member rejoining a stable group with nothing new waits too */
		n = load_members(a->group_id, &m);
		start_rebalance(a->group_id, &g, m, n);
	}
	upsert_member(a->group_id, member_id, a, g.round);
	save_group(a->group_id, &g);
	try_complete_join(a->group_id, &g);

result:
	if (strcmp(g.state, "CompletingRebalance") == 0 || strcmp(g.state, "Stable") == 0)
	{
		n = load_members(a->group_id, &m);
		me = find_member(m, n, member_id);
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
	r->wait_until_ms = (g.not_before_ms > now_ms() && g.not_before_ms < g.deadline_ms) ?
		g.not_before_ms : g.deadline_ms;

out:
	SPI_finish();
	return code;
}

int16
kp_group_sync(const char *group_id, const char *member_id, const char *instance_id,
			  int32 generation_id, int nassignments, const KpSyncAssignment *assignments,
			  bool final_attempt, KpBlob *assignment, char **protocol_type,
			  char **protocol_name, bool *wait, int64 *wait_until_ms)
{
	GroupRow	g;
	MemberRow  *m;
	int			n;
	MemberRow  *me;
	int16		code = KP_ERR_NONE;

	*wait = false;
	assignment->data = NULL;
	assignment->len = 0;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	code = lock_group_member(group_id, member_id, instance_id, &g, &m, &n, &me);
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
			{
				Oid			types[3] = {TEXTOID, TEXTOID, BYTEAOID};
				Datum		values[3] = {CStringGetTextDatum(group_id),
					CStringGetTextDatum(assignments[i].member_id),
				blob_datum(assignments[i].assignment)};

				run("UPDATE kafka.group_members SET assignment = $3 WHERE group_id = $1 AND member_id = $2",
					3, types, values, NULL);
			}
			{
				/* members the leader did not assign get empty bytes */
				Oid			types[1] = {TEXTOID};
				Datum		values[1] = {CStringGetTextDatum(group_id)};

				run("UPDATE kafka.group_members SET assignment = '' WHERE group_id = $1 AND assignment IS NULL",
					1, types, values, NULL);
			}
			g.state = "Stable";
			g.deadline_ms = -1;
			save_group(group_id, &g);
			n = load_members(group_id, &m);
			me = find_member(m, n, member_id);
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
	{
		Oid			types[2] = {TEXTOID, TEXTOID};
		Datum		values[2] = {CStringGetTextDatum(group_id), CStringGetTextDatum(member_id)};

		run("UPDATE kafka.group_members SET last_heartbeat = now() WHERE group_id = $1 AND member_id = $2",
			2, types, values, NULL);
	}
out:
	SPI_finish();
	return code;
}

int16
kp_group_heartbeat(const char *group_id, const char *member_id, const char *instance_id,
				   int32 generation_id)
{
	GroupRow	g;
	MemberRow  *m;
	int			n;
	MemberRow  *me;
	int16		code = KP_ERR_NONE;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	code = lock_group_member(group_id, member_id, instance_id, &g, &m, &n, &me);
	if (code != KP_ERR_NONE)
		goto out;
	{
		Oid			types[2] = {TEXTOID, TEXTOID};
		Datum		values[2] = {CStringGetTextDatum(group_id), CStringGetTextDatum(member_id)};

		run("UPDATE kafka.group_members SET last_heartbeat = now() WHERE group_id = $1 AND member_id = $2",
			2, types, values, NULL);
	}
	if (strcmp(g.state, "PreparingRebalance") == 0)
		code = KP_ERR_REBALANCE_IN_PROGRESS;
	else if (generation_id != g.generation)
		code = KP_ERR_ILLEGAL_GENERATION;
out:
	SPI_finish();
	return code;
}

/* After members left or expired: rebalance the rest, or become Empty. */
static void
after_members_removed(const char *group_id, GroupRow *g)
{
	MemberRow  *m;
	int			n = load_members(group_id, &m);

	if (n == 0)
	{
		if (strcmp(g->state, "Empty") != 0)
		{
			g->generation++;
			g->state = "Empty";
			g->protocol_name = NULL;
			g->leader_id = NULL;
			g->deadline_ms = -1;
			save_group(group_id, g);
		}
		return;
	}
	if (strcmp(g->state, "PreparingRebalance") != 0)
		start_rebalance(group_id, g, m, n);
	save_group(group_id, g);
	try_complete_join(group_id, g);
}

int16
kp_group_leave(const char *group_id, const char *member_id, const char *instance_id)
{
	GroupRow	g;
	MemberRow  *m;
	int			n;
	MemberRow  *me = NULL;
	int16		code = KP_ERR_NONE;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	lock_group(group_id, false, &g);
	if (!g.exists)
	{
		code = KP_ERR_UNKNOWN_MEMBER_ID;
		goto out;
	}
	n = load_members(group_id, &m);
	if (instance_id)
	{
		me = find_instance(m, n, instance_id);
		if (me && member_id && member_id[0] && strcmp(me->member_id, member_id) != 0)
		{
			code = KP_ERR_FENCED_INSTANCE_ID;
			goto out;
		}
	}
	else if (member_id)
		me = find_member(m, n, member_id);
	if (me == NULL)
	{
		code = KP_ERR_UNKNOWN_MEMBER_ID;
		goto out;
	}
	delete_member(group_id, me->member_id);
	after_members_removed(group_id, &g);
out:
	SPI_finish();
	return code;
}

int16
kp_group_check_commit(const char *group_id, const char *member_id,
					  const char *instance_id, int32 generation_id)
{
	GroupRow	g;
	int16		code = KP_ERR_NONE;

	if (group_id == NULL || group_id[0] == '\0')
		return KP_ERR_INVALID_GROUP_ID;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	lock_group(group_id, true, &g);
	if (member_id && member_id[0] && strcmp(g.protocol_type, "consumer") == 0 &&
		kp_group_consumer_member_epoch(group_id, member_id) >= 0)
	{
		/* KIP-848 members commit with their member epoch */
		int32		epoch = kp_group_consumer_member_epoch(group_id, member_id);

		if (generation_id != epoch)
			code = generation_id > epoch ? KP_ERR_STALE_MEMBER_EPOCH : KP_ERR_STALE_MEMBER_EPOCH;
	}
	else if (generation_id < 0 && (member_id == NULL || member_id[0] == '\0'))
	{
		/* a simple commit (assign() consumers): only while nobody is a member */
		if (strcmp(g.state, "Empty") != 0)
			code = KP_ERR_UNKNOWN_MEMBER_ID;
	}
	else
	{
		MemberRow  *m;
		int			n = load_members(group_id, &m);
		MemberRow  *me = member_id ? find_member(m, n, member_id) : NULL;

		if (me == NULL)
			code = find_instance(m, n, instance_id) ? KP_ERR_FENCED_INSTANCE_ID : KP_ERR_UNKNOWN_MEMBER_ID;
		else if (generation_id != g.generation)
			code = KP_ERR_ILLEGAL_GENERATION;
		else if (strcmp(g.state, "CompletingRebalance") == 0)
		{
			/*
			 * As Kafka: a member may commit while the group prepares a
			 * rebalance (it commits what it processed before rejoining),
			 * not between the join and the assignment.
			 */
			code = KP_ERR_REBALANCE_IN_PROGRESS;
		}
	}
	SPI_finish();
	return code;
}

int16
kp_group_commit_offset(const char *group_id, const char *topic, int32 partition,
					   int64 offset, int32 leader_epoch, const KpBlob *metadata)
{
	Oid			types[6] = {TEXTOID, TEXTOID, INT4OID, INT8OID, INT4OID, BYTEAOID};
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};

	/* metadata is bytes to the client (librdkafka commits binary metadata) */
	if (metadata && metadata->len > 4096)
		return KP_ERR_OFFSET_METADATA_TOO_LARGE;
	values[0] = CStringGetTextDatum(group_id);
	values[1] = CStringGetTextDatum(topic);
	values[2] = Int32GetDatum(partition);
	values[3] = Int64GetDatum(offset);
	values[4] = Int32GetDatum(leader_epoch);
	if (metadata && metadata->len >= 0)
		values[5] = blob_datum(*metadata);
	else
		nulls[5] = 'n';
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	run("INSERT INTO kafka.committed_offsets (group_id, topic, partition, committed_offset, "
		"  leader_epoch, metadata, commit_time) VALUES ($1, $2, $3, $4, $5, $6, now()) "
		"ON CONFLICT (group_id, topic, partition) DO UPDATE SET committed_offset = $4, "
		"  leader_epoch = $5, metadata = $6, commit_time = now()",
		6, types, values, nulls);
	SPI_finish();
	return KP_ERR_NONE;
}

int64
kp_group_fetch_offset(const char *group_id, const char *topic, int32 partition,
					  int32 *leader_epoch, KpBlob *metadata)
{
	Oid			types[3] = {TEXTOID, TEXTOID, INT4OID};
	Datum		values[3] = {CStringGetTextDatum(group_id), CStringGetTextDatum(topic),
	Int32GetDatum(partition)};
	int64		offset = -1;
	MemoryContext caller = CurrentMemoryContext;

	*leader_epoch = -1;
	metadata->data = NULL;
	metadata->len = -1;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	run("SELECT committed_offset, leader_epoch, metadata FROM kafka.committed_offsets "
		"WHERE group_id = $1 AND topic = $2 AND partition = $3", 3, types, values, NULL);
	if (SPI_processed > 0)
	{
		MemoryContext spi = MemoryContextSwitchTo(caller);

		/* copied into the caller's context: SPI_finish frees SPI's */
		*metadata = col_blob(0, 3);
		MemoryContextSwitchTo(spi);
		offset = col_int64(0, 1, -1);
		*leader_epoch = (int32) col_int64(0, 2, -1);
	}
	SPI_finish();
	return offset;
}

int
kp_group_committed_partitions(const char *group_id, char ***topics, int32 **partitions)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(group_id)};
	MemoryContext caller = CurrentMemoryContext;
	int			n;
	int			i;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	run("SELECT topic, partition FROM kafka.committed_offsets WHERE group_id = $1 ORDER BY 1, 2",
		1, types, values, NULL);
	n = (int) SPI_processed;
	*topics = MemoryContextAlloc(caller, sizeof(char *) * Max(n, 1));
	*partitions = MemoryContextAlloc(caller, sizeof(int32) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		(*topics)[i] = MemoryContextStrdup(caller, col_text(i, 1));
		(*partitions)[i] = (int32) col_int64(i, 2, 0);
	}
	SPI_finish();
	return n;
}

void
kp_group_describe(const char *group_id, KpGroupInfo *info)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(group_id)};
	MemoryContext caller = CurrentMemoryContext;
	MemberRow  *m;
	int			n;
	int			i;

	memset(info, 0, sizeof(*info));
	info->state = "Dead";
	info->protocol_type = "";
	info->protocol_name = "";
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	run("SELECT state, protocol_type, coalesce(protocol_name, ''), generation_id "
		"FROM kafka.consumer_groups WHERE group_id = $1", 1, types, values, NULL);
	if (SPI_processed == 0)
	{
		SPI_finish();
		return;
	}
	info->exists = true;
	info->state = MemoryContextStrdup(caller, col_text(0, 1));
	info->protocol_type = MemoryContextStrdup(caller, col_text(0, 2));
	info->protocol_name = MemoryContextStrdup(caller, col_text(0, 3));
	info->generation_id = (int32) col_int64(0, 4, 0);
	n = load_members(group_id, &m);
	info->members = MemoryContextAllocZero(caller, sizeof(KpGroupMemberInfo) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		KpGroupMemberInfo *mi = &info->members[info->nmembers];
		int			k;

		if (m[i].join_round < 0)
			continue;			/* pending */
		mi->member_id = MemoryContextStrdup(caller, m[i].member_id);
		mi->group_instance_id = m[i].instance_id ? MemoryContextStrdup(caller, m[i].instance_id) : NULL;
		mi->client_id = MemoryContextStrdup(caller, m[i].client_id);
		mi->client_host = MemoryContextStrdup(caller, m[i].client_host);
		mi->metadata.len = 0;
		for (k = 0; k < m[i].nprotocols; k++)
		{
			if (strcmp(m[i].protocol_names[k], info->protocol_name) == 0 &&
				m[i].protocol_metadata[k].len > 0)
			{
				char	   *copy = MemoryContextAlloc(caller, m[i].protocol_metadata[k].len);

				memcpy(copy, m[i].protocol_metadata[k].data, m[i].protocol_metadata[k].len);
				mi->metadata.data = copy;
				mi->metadata.len = m[i].protocol_metadata[k].len;
			}
		}
		mi->assignment.len = 0;
		if (m[i].assignment.len > 0)
		{
			char	   *copy = MemoryContextAlloc(caller, m[i].assignment.len);

			memcpy(copy, m[i].assignment.data, m[i].assignment.len);
			mi->assignment.data = copy;
			mi->assignment.len = m[i].assignment.len;
		}
		info->nmembers++;
	}
	SPI_finish();
}

int
kp_group_list(char ***group_ids, char ***states, char ***protocol_types)
{
	MemoryContext caller = CurrentMemoryContext;
	int			n;
	int			i;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	run("SELECT group_id, state, CASE WHEN group_type = 'consumer' THEN 'consumer:' || protocol_type "
		"ELSE protocol_type END FROM kafka.consumer_groups ORDER BY 1", 0, NULL, NULL, NULL);
	n = (int) SPI_processed;
	*group_ids = MemoryContextAlloc(caller, sizeof(char *) * Max(n, 1));
	*states = MemoryContextAlloc(caller, sizeof(char *) * Max(n, 1));
	*protocol_types = MemoryContextAlloc(caller, sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		(*group_ids)[i] = MemoryContextStrdup(caller, col_text(i, 1));
		(*states)[i] = MemoryContextStrdup(caller, col_text(i, 2));
		(*protocol_types)[i] = MemoryContextStrdup(caller, col_text(i, 3));
	}
	SPI_finish();
	return n;
}

int16
kp_group_delete(const char *group_id)
{
	GroupRow	g;
	int16		code = KP_ERR_NONE;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(group_id)};

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	lock_group(group_id, false, &g);
	run("SELECT 1 FROM kafka.committed_offsets WHERE group_id = $1 LIMIT 1", 1, types, values, NULL);
	if (!g.exists && SPI_processed == 0)
		code = KP_ERR_GROUP_ID_NOT_FOUND;
	else if (g.exists && strcmp(g.state, "Empty") != 0)
		code = KP_ERR_NON_EMPTY_GROUP;
	else
	{
		run("DELETE FROM kafka.committed_offsets WHERE group_id = $1", 1, types, values, NULL);
		run("DELETE FROM kafka.consumer_groups WHERE group_id = $1", 1, types, values, NULL);
	}
	SPI_finish();
	return code;
}

int16
kp_group_delete_offsets(const char *group_id, const char *topic, int32 partition)
{
	GroupRow	g;
	Oid			types[3] = {TEXTOID, TEXTOID, INT4OID};
	Datum		values[3] = {CStringGetTextDatum(group_id), CStringGetTextDatum(topic),
	Int32GetDatum(partition)};
	int16		code = KP_ERR_NONE;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	lock_group(group_id, false, &g);
	if (!g.exists)
		code = KP_ERR_GROUP_ID_NOT_FOUND;
	else if (strcmp(g.state, "Empty") != 0)
		code = KP_ERR_GROUP_SUBSCRIBED_TO_TOPIC;
	else
		run("DELETE FROM kafka.committed_offsets WHERE group_id = $1 AND topic = $2 AND partition = $3",
			3, types, values, NULL);
	SPI_finish();
	return code;
}

/*
 * Upkeep, once a second from the resolver: remove members whose session
 * expired (not those waiting in a join of the current round), finish join
 * phases whose deadline passed, drop the offsets of groups empty for
 * longer than offsets.retention.minutes.
 */
void
kp_group_expire(void)
{
	char	  **groups;
	int			n;
	int			i;
	Oid			cs_types[1] = {INT4OID};
	Datum		cs_values[1] = {Int32GetDatum(kp_group_consumer_session_timeout_ms)};

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	run("SELECT DISTINCT g.group_id FROM kafka.consumer_groups g JOIN kafka.group_members m USING (group_id) "
		"WHERE (m.last_heartbeat + (CASE WHEN g.group_type = 'consumer' THEN $1 ELSE m.session_timeout_ms END) "
		"       * interval '1 ms' < now() "
		"       AND NOT (g.state = 'PreparingRebalance' AND m.join_round = g.rebalance_round)) "
		"   OR (g.state IN ('PreparingRebalance', 'CompletingRebalance') AND g.rebalance_deadline < now()) "
		"   OR (g.state = 'PreparingRebalance' AND g.join_not_before < now())",
		1, cs_types, cs_values, NULL);
	n = (int) SPI_processed;
	groups = palloc(sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
		groups[i] = col_text(i, 1);

	for (i = 0; i < n; i++)
	{
		GroupRow	g;
		Oid			types[2] = {TEXTOID, INT4OID};
		Datum		values[2];
		int			removed;

		lock_group(groups[i], false, &g);
		if (!g.exists)
			continue;
		if (strcmp(g.protocol_type, "consumer") == 0 &&
			kp_group_is_consumer_type(groups[i]))
		{
			/* KIP-848: drop the silent members; the epoch moves on */
			Oid			t2[2] = {TEXTOID, INT4OID};
			Datum		v2[2] = {CStringGetTextDatum(groups[i]),
			Int32GetDatum(kp_group_consumer_session_timeout_ms)};

			run("DELETE FROM kafka.group_members WHERE group_id = $1 "
				"AND last_heartbeat + $2 * interval '1 ms' < now()", 2, t2, v2, NULL);
			if (SPI_processed > 0)
			{
				ereport(LOG,
						(errmsg("kafka_pg: %d member%s of consumer group \"%s\" missed their session timeout",
								(int) SPI_processed, SPI_processed == 1 ? "" : "s", groups[i])));
				run("UPDATE kafka.consumer_groups SET group_epoch = group_epoch + 1, "
					"  state = CASE WHEN EXISTS (SELECT 1 FROM kafka.group_members m WHERE m.group_id = $1) "
					"               THEN 'Stable' ELSE 'Empty' END WHERE group_id = $1", 1, t2, v2, NULL);
			}
			continue;
		}
		values[0] = CStringGetTextDatum(groups[i]);
		values[1] = Int32GetDatum(strcmp(g.state, "PreparingRebalance") == 0 ? g.round : -2);
		run("DELETE FROM kafka.group_members WHERE group_id = $1 "
			"AND last_heartbeat + session_timeout_ms * interval '1 ms' < now() AND join_round <> $2",
			2, types, values, NULL);
		removed = (int) SPI_processed;
		if (removed > 0)
		{
			ereport(LOG,
					(errmsg("kafka_pg: %d member%s of group \"%s\" missed their session timeout",
							removed, removed == 1 ? "" : "s", groups[i])));
			after_members_removed(groups[i], &g);
		}
		else if (strcmp(g.state, "PreparingRebalance") == 0)
			try_complete_join(groups[i], &g);
		else if (strcmp(g.state, "CompletingRebalance") == 0 && g.deadline_ms >= 0 &&
				 now_ms() > g.deadline_ms)
		{
			/* the leader never sent its assignment: start over */
			MemberRow  *m;
			int			nm = load_members(groups[i], &m);

			start_rebalance(groups[i], &g, m, nm);
			save_group(groups[i], &g);
		}
	}
	{
		Datum		values[1] = {Int32GetDatum(kp_offsets_retention_minutes)};
		Oid			types[1] = {INT4OID};

		run("DELETE FROM kafka.committed_offsets o WHERE o.commit_time < now() - $1 * interval '1 minute' "
			"AND NOT EXISTS (SELECT 1 FROM kafka.consumer_groups g WHERE g.group_id = o.group_id "
			"                AND g.state <> 'Empty')", 1, types, values, NULL);
	}
	SPI_finish();
}

int
kp_group_held_partitions(const char *group_id, const char *topic, int32 **partitions)
{
	GroupRow	g;
	MemberRow  *m;
	int			n;
	int			i;
	int			count = 0;
	int			cap = 16;
	MemoryContext caller = CurrentMemoryContext;

	*partitions = palloc(sizeof(int32) * cap);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	read_group(group_id, false, false, &g);	/* no lock: SQL consumers must not queue */
	if (!g.exists || strcmp(g.state, "Empty") == 0 ||
		strcmp(g.protocol_type, "consumer") != 0)
	{
		SPI_finish();
		return 0;
	}
	n = load_members(group_id, &m);
	for (i = 0; i < n; i++)
	{
		KpConsumerProtocolAssignment a;
		KpError		err;
		int16		version;
		int			t;

		if (m[i].assignment.len < 2)
			continue;
		version = (int16) (((uint8) m[i].assignment.data[0] << 8) | (uint8) m[i].assignment.data[1]);
		version = Min(Max(version, 0), kp_ConsumerProtocolAssignment_desc.max_version);
		if (!kp_decode(&kp_ConsumerProtocolAssignment_desc, version,
					   (const uint8 *) m[i].assignment.data + 2, m[i].assignment.len - 2, &a, &err) &&
			err.code != KP_DECODE_TRAILING_BYTES)
			continue;
		for (t = 0; t < a.n_assigned_partitions; t++)
		{
			int			k;

			if (a.assigned_partitions[t].topic == NULL ||
				strcmp(a.assigned_partitions[t].topic, topic) != 0)
				continue;
			for (k = 0; k < a.assigned_partitions[t].n_partitions; k++)
			{
				if (count == cap)
				{
					MemoryContext old = MemoryContextSwitchTo(caller);

					cap *= 2;
					*partitions = repalloc(*partitions, sizeof(int32) * cap);
					MemoryContextSwitchTo(old);
				}
				(*partitions)[count++] = a.assigned_partitions[t].partitions[k];
			}
		}
	}
	SPI_finish();
	return count;
}
