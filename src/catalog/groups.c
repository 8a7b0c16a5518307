/*-------------------------------------------------------------------------
 *
 * groups.c
 *	  The rows of consumer groups, their members and their configs: the
 *	  only code that reads or writes kafka.consumer_groups,
 *	  kafka.group_members and kafka.group_configs.
 *
 * As pg_cron's job_metadata.c owns its tables, this file owns these two,
 * and kafka.group_configs;
 * the group coordinator (src/group) decides what the rows must say and
 * calls these functions to read and write them.  Each function runs its
 * statements through SPI inside the caller's transaction and returns its
 * results in the caller's memory context.  kp_cat_group_read with
 * for_update is the coordinator's group lock (see src/group/README).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "catalog/catalog_spi.h"
#include "catalog/kafka_catalog.h"

/* ---------------------------------------------------------------------
 * SPI helpers: results are copied into the caller's context
 * ---------------------------------------------------------------------
 */

static void
begin(void)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

static void
run(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls)
{
	int			ret = kp_spi_execute_with_args(sql, nargs, types, values, nulls, false, 0);

	if (ret < 0)
		elog(ERROR, "kafka_pg group catalog: statement failed (%d): %s", ret, sql);
}

/* A statement whose parameters are all text. */
static void
run_texts(const char *sql, int nargs, const char *arg1, const char *arg2, const char *arg3)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3];
	const char *args[3] = {arg1, arg2, arg3};
	int			i;

	for (i = 0; i < nargs; i++)
		values[i] = CStringGetTextDatum(args[i]);
	begin();
	run(sql, nargs, types, values, NULL);
	SPI_finish();
}

/*
 * Set by the listener around the group requests it can run again from the
 * start (dispatch.c): the group lock is then taken FOR UPDATE NOWAIT, and
 * a group's creation does not wait for a transaction creating the same one
 * (kafka_catalog.h).
 */
bool		kp_group_locks_nowait = false;

/* the advisory lock class of a group's creation ('KG') */
#define KP_GROUP_CREATE_LOCK_CLASS 0x4B47

/*
 * Insert the group's row unless there is one.  Its creators take an advisory
 * lock on the name's hash first, to the end of their transaction: the insert
 * would otherwise wait, in ON CONFLICT, for a transaction still open that
 * inserted the same name (a SQL session's first kafka.consume of the group),
 * and a process that must not wait (kp_group_locks_nowait) tries the lock
 * instead, refused with ERRCODE_LOCK_NOT_AVAILABLE.  A group that exists
 * takes no lock at all, so SQL consumers hold none on it.  In SPI.
 */
static void
create_group(Datum group_id)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {group_id};

	run("SELECT 1 FROM kafka.consumer_groups WHERE group_id = $1", 1, types, values, NULL);
	if (SPI_processed > 0)
		return;
	kp_cat_group_lock_creation(TextDatumGetCString(group_id));
	run("INSERT INTO kafka.consumer_groups (group_id) VALUES ($1) ON CONFLICT DO NOTHING",
		1, types, values, NULL);
}

void
kp_cat_group_lock_creation(const char *group_id)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId,
						 hash_bytes((const unsigned char *) group_id, strlen(group_id)),
						 0, KP_GROUP_CREATE_LOCK_CLASS);
	if (LockAcquire(&tag, ExclusiveLock, false, kp_group_locks_nowait) == LOCKACQUIRE_NOT_AVAIL)
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("group \"%s\" is being created by another transaction", group_id),
				 errdetail("A SQL transaction that created it (kafka.consume, kafka.group_heartbeat) is still open.")));
}

static char *
col_text(int row, int col)
{
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
}

/* A query's first column as C strings in the caller's context; how many. */
static int
select_texts(const char *sql, int nargs, Oid *types, Datum *values, char ***out)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext old;
	int			n;
	int			i;

	begin();
	run(sql, nargs, types, values, NULL);
	n = (int) SPI_processed;
	old = MemoryContextSwitchTo(caller);
	*out = palloc(sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
		(*out)[i] = col_text(i, 1);
	MemoryContextSwitchTo(old);
	SPI_finish();
	return n;
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
		case OIDOID:
			return DatumGetObjectId(d);
		default:
			return DatumGetInt64(d);
	}
}

static KpBlob
copy_bytea(Datum d)
{
	bytea	   *v = DatumGetByteaPP(d);
	KpBlob		b;
	char	   *data;

	b.len = VARSIZE_ANY_EXHDR(v);
	data = palloc(Max(b.len, 1));
	memcpy(data, VARDATA_ANY(v), b.len);
	b.data = data;
	return b;
}

static KpBlob
col_blob(int row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);
	KpBlob		b = {NULL, -1};

	if (!isnull)
		b = copy_bytea(d);
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

static Datum
text_array_datum(int n, char *const *items)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
		elems[i] = CStringGetTextDatum(items[i]);
	return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/* A text[] column as C strings; 0 when null. */
static int
col_text_array(int row, int col, char ***out)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);
	Datum	   *elems;
	bool	   *enulls;
	int			n;
	int			k;

	*out = NULL;
	if (isnull)
		return 0;
	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &enulls, &n);
	*out = palloc(sizeof(char *) * Max(n, 1));
	for (k = 0; k < n; k++)
		(*out)[k] = enulls[k] ? pstrdup("") : TextDatumGetCString(elems[k]);
	return n;
}

/* ---------------------------------------------------------------------
 * kafka.consumer_groups
 * ---------------------------------------------------------------------
 */

#define GROUP_COLUMNS \
	"group_type, protocol_type, state, generation_id, protocol_name, leader_id, rebalance_round, " \
	"(extract(epoch FROM rebalance_deadline) * 1000)::bigint, " \
	"(extract(epoch FROM join_not_before) * 1000)::bigint, " \
	"(extract(epoch FROM state_changed_at) * 1000)::bigint, " \
	"group_epoch, assignment_epoch, metadata_signature "
#define GROUP_SELECT "SELECT " GROUP_COLUMNS "FROM kafka.consumer_groups WHERE group_id = $1"

void
kp_cat_group_read(const char *group_id, bool create, bool for_update, KpGroupRow *g)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(group_id)};
	MemoryContext old;
	const char *sql;

	if (!for_update)
		sql = GROUP_SELECT;
	else if (kp_group_locks_nowait)
		sql = GROUP_SELECT " FOR UPDATE NOWAIT";
	else
		sql = GROUP_SELECT " FOR UPDATE";

	memset(g, 0, sizeof(*g));
	begin();
	run(sql, 1, types, values, NULL);
	/* created only when missing: one statement for a group that exists */
	if (SPI_processed == 0 && create)
	{
		create_group(values[0]);
		run(sql, 1, types, values, NULL);
	}
	if (SPI_processed > 0)
	{
		old = MemoryContextSwitchTo(caller);
		g->exists = true;
		g->group_type = col_text(0, 1);
		g->protocol_type = col_text(0, 2);
		g->state = col_text(0, 3);
		g->generation = (int32) col_int64(0, 4, 0);
		g->protocol_name = col_text(0, 5);
		g->leader_id = col_text(0, 6);
		g->round = (int32) col_int64(0, 7, 0);
		g->deadline_ms = col_int64(0, 8, -1);
		g->not_before_ms = col_int64(0, 9, -1);
		g->state_changed_ms = col_int64(0, 10, 0);
		g->group_epoch = (int32) col_int64(0, 11, 0);
		g->assignment_epoch = (int32) col_int64(0, 12, 0);
		g->metadata_signature = col_text(0, 13);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
}

void
kp_cat_group_ensure(const char *group_id)
{
	begin();
	create_group(CStringGetTextDatum(group_id));
	SPI_finish();
}

void
kp_cat_group_save_classic(const char *group_id, const KpGroupRow *g)
{
	Oid			types[9] = {TEXTOID, TEXTOID, TEXTOID, INT4OID, TEXTOID, TEXTOID, INT4OID, INT8OID,
	INT8OID};
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

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
	values[8] = Int64GetDatum(g->not_before_ms);
	begin();
	run("UPDATE kafka.consumer_groups SET protocol_type = $2, "
		"  state_changed_at = CASE WHEN state = $3 THEN state_changed_at ELSE now() END, "
		"  state = $3, generation_id = $4, protocol_name = $5, leader_id = $6, rebalance_round = $7, "
		"  rebalance_deadline = CASE WHEN $8 < 0 THEN NULL ELSE to_timestamp($8 / 1000.0) END, "
		"  join_not_before = CASE WHEN $9 < 0 THEN NULL ELSE to_timestamp($9 / 1000.0) END "
		"WHERE group_id = $1",
		9, types, values, nulls);
	SPI_finish();
}

void
kp_cat_group_save_consumer(const char *group_id, int32 group_epoch, int32 assignment_epoch,
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
	begin();
	run("UPDATE kafka.consumer_groups SET group_type = 'consumer', protocol_type = 'consumer', "
		"  group_epoch = $2, assignment_epoch = $3, metadata_signature = $4, "
		"  protocol_name = $5, generation_id = $2, "
		"  state_changed_at = CASE WHEN state = $6 THEN state_changed_at ELSE now() END, "
		"  state = $6 WHERE group_id = $1",
		6, types, values, NULL);
	SPI_finish();
}

void
kp_cat_group_consumer_members_gone(const char *group_id)
{
	run_texts("UPDATE kafka.consumer_groups SET group_epoch = group_epoch + 1, "
			  "  state = CASE WHEN EXISTS (SELECT 1 FROM kafka.group_members m WHERE m.group_id = $1) "
			  "               THEN 'Stable' ELSE 'Empty' END WHERE group_id = $1",
			  1, group_id, NULL, NULL);
}

void
kp_cat_group_delete(const char *group_id)
{
	run_texts("DELETE FROM kafka.consumer_groups WHERE group_id = $1", 1, group_id, NULL, NULL);
}

int
kp_cat_groups_list(char ***group_ids, char ***states, char ***protocol_types)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext old;
	int			n;
	int			i;

	begin();
	run("SELECT group_id, state, CASE WHEN group_type = 'consumer' THEN 'consumer:' || protocol_type "
		"ELSE protocol_type END FROM kafka.consumer_groups ORDER BY 1", 0, NULL, NULL, NULL);
	n = (int) SPI_processed;
	old = MemoryContextSwitchTo(caller);
	*group_ids = palloc(sizeof(char *) * Max(n, 1));
	*states = palloc(sizeof(char *) * Max(n, 1));
	*protocol_types = palloc(sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		(*group_ids)[i] = col_text(i, 1);
		(*states)[i] = col_text(i, 2);
		(*protocol_types)[i] = col_text(i, 3);
	}
	MemoryContextSwitchTo(old);
	SPI_finish();
	return n;
}

/*
 * The moments the upkeep acts on, as one expression per group: a member's
 * session end (its own timeout, or the consumer group's: its config, else
 * the broker's, consumer_session_ms), a consumer-protocol member's end of
 * its rebalance timeout to give partitions up, a join phase's
 * deadline, the end of a first join's initial delay.  Members that joined
 * the round in progress cannot expire: they are waiting for it.
 */
#define MEMBER_SESSION_END \
	"m.last_heartbeat + (CASE WHEN g.group_type = 'consumer' " \
	"  THEN coalesce((SELECT c.value::int FROM kafka.group_configs c WHERE c.group_id = g.group_id " \
	"                 AND c.name = 'consumer.session.timeout.ms'), $1) " \
	"  ELSE m.session_timeout_ms END) * interval '1 ms'"
#define MEMBER_CAN_EXPIRE \
	"NOT (g.state = 'PreparingRebalance' AND m.join_round = g.rebalance_round)"

int
kp_cat_groups_needing_upkeep(int32 consumer_session_ms, char ***group_ids)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(consumer_session_ms)};

	return select_texts("SELECT DISTINCT g.group_id FROM kafka.consumer_groups g "
						"JOIN kafka.group_members m USING (group_id) "
						"WHERE (" MEMBER_SESSION_END " < now() AND " MEMBER_CAN_EXPIRE ") "
						"   OR m.revoke_deadline < now() "
						"   OR (g.state IN ('PreparingRebalance', 'CompletingRebalance') "
						"       AND g.rebalance_deadline < now()) "
						"   OR (g.state = 'PreparingRebalance' AND g.join_not_before < now())",
						1, types, values, group_ids);
}

int64
kp_cat_groups_next_deadline(int32 consumer_session_ms)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(consumer_session_ms)};
	int64		next = -1;

	/* moments already past are the once-a-second sweep's (they may be stuck) */
	begin();
	run("SELECT (extract(epoch FROM min(t)) * 1000)::bigint FROM ("
		"  SELECT " MEMBER_SESSION_END " AS t FROM kafka.consumer_groups g "
		"    JOIN kafka.group_members m USING (group_id) WHERE " MEMBER_CAN_EXPIRE
		"  UNION ALL SELECT revoke_deadline FROM kafka.group_members "
		"  UNION ALL SELECT rebalance_deadline FROM kafka.consumer_groups g "
		"    WHERE g.state IN ('PreparingRebalance', 'CompletingRebalance') "
		"  UNION ALL SELECT join_not_before FROM kafka.consumer_groups g "
		"    WHERE g.state = 'PreparingRebalance') s WHERE t >= now()",
		1, types, values, NULL);
	if (SPI_processed > 0)
		next = col_int64(0, 1, -1);
	SPI_finish();
	return next;
}

/* ---------------------------------------------------------------------
 * kafka.group_members
 * ---------------------------------------------------------------------
 */

int
kp_cat_members_load(const char *group_id, KpMemberRow **out)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext old;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(group_id)};
	int			n;
	int			i;
	KpMemberRow *m;

	begin();
	run("SELECT member_id, group_instance_id, client_id, client_host, session_timeout_ms, "
		"  rebalance_timeout_ms, join_round, protocol_names, protocol_metadata, assignment, "
		"  (extract(epoch FROM last_heartbeat) * 1000)::bigint, "
		"  member_epoch, rack_id, subscribed_topics, assigned, target, owned, subscribed_regex, "
		"  authz_role, authz_host, previous_member_epoch "
		"FROM kafka.group_members WHERE group_id = $1 ORDER BY member_id",
		1, types, values, NULL);
	n = (int) SPI_processed;
	old = MemoryContextSwitchTo(caller);
	m = palloc0(sizeof(KpMemberRow) * Max(n, 1));
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
		m[i].nprotocols = col_text_array(i, 8, &m[i].protocol_names);
		m[i].protocol_metadata = palloc0(sizeof(KpBlob) * Max(m[i].nprotocols, 1));
		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 9, &isnull);
		if (!isnull)
		{
			Datum	   *elems;
			bool	   *enulls;
			int			ne;
			int			k;

			deconstruct_array(DatumGetArrayTypeP(d), BYTEAOID, -1, false, TYPALIGN_INT,
							  &elems, &enulls, &ne);
			for (k = 0; k < ne && k < m[i].nprotocols; k++)
				m[i].protocol_metadata[k] = copy_bytea(elems[k]);
		}
		m[i].assignment = col_blob(i, 10);
		m[i].last_heartbeat_ms = col_int64(i, 11, 0);
		m[i].member_epoch = (int32) col_int64(i, 12, 0);
		m[i].rack_id = col_text(i, 13);
		m[i].nsubscribed = col_text_array(i, 14, &m[i].subscribed);
		m[i].assigned = col_text(i, 15);
		m[i].target = col_text(i, 16);
		m[i].owned = col_text(i, 17);
		m[i].subscribed_regex = col_text(i, 18);
		m[i].authz_role = (Oid) col_int64(i, 19, InvalidOid);
		m[i].authz_host = col_text(i, 20);
		if (m[i].authz_host == NULL)
			m[i].authz_host = pstrdup("");
		m[i].previous_member_epoch = (int32) col_int64(i, 21, -1);
	}
	MemoryContextSwitchTo(old);
	SPI_finish();
	*out = m;
	return n;
}

/* $1-$5 of a member's row: group, member, instance (nullable), client id and host. */
static void
member_identity(Datum *values, char *nulls, const char *group_id, const char *member_id,
				const char *instance_id, const char *client_id, const char *client_host)
{
	values[0] = CStringGetTextDatum(group_id);
	values[1] = CStringGetTextDatum(member_id);
	values[2] = instance_id ? CStringGetTextDatum(instance_id) : (Datum) 0;
	nulls[2] = instance_id ? ' ' : 'n';
	values[3] = CStringGetTextDatum(client_id ? client_id : "");
	values[4] = CStringGetTextDatum(client_host ? client_host : "");
}

int
kp_cat_offsets_stable_classic_candidates(int32 retention_minutes, char ***group_ids)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(retention_minutes)};

	return select_texts("SELECT g.group_id FROM kafka.consumer_groups g "
						"WHERE g.group_type = 'classic' AND g.protocol_type = 'consumer' "
						"  AND g.state = 'Stable' AND EXISTS (SELECT 1 FROM kafka.committed_offsets o "
						"    WHERE o.group_id = g.group_id "
						"    AND o.commit_time < now() - $1 * interval '1 minute') "
						"ORDER BY g.group_id", 1, types, values, group_ids);
}

void
kp_cat_offsets_expire_unsubscribed(const char *group_id, int32 generation, char **topics,
								   int ntopics, int32 retention_minutes)
{
	Oid			types[4] = {TEXTOID, TEXTARRAYOID, INT4OID, INT4OID};
	Datum		values[4];

	values[0] = CStringGetTextDatum(group_id);
	values[1] = text_array_datum(ntopics, topics);
	values[2] = Int32GetDatum(retention_minutes);
	values[3] = Int32GetDatum(generation);
	begin();

	/*
	 * Only while the group is still Stable in that generation (its members'
	 * subscriptions were read without its lock); rows a transaction holds
	 * (kafka.consume) are left for a later pass.
	 */
	run("DELETE FROM kafka.committed_offsets WHERE (group_id, topic, partition) IN "
		"(SELECT o.group_id, o.topic, o.partition FROM kafka.committed_offsets o "
		"  WHERE o.group_id = $1 AND o.commit_time < now() - $3 * interval '1 minute' "
		"  AND o.topic <> ALL ($2) "
		"  AND EXISTS (SELECT 1 FROM kafka.consumer_groups g WHERE g.group_id = $1 "
		"              AND g.state = 'Stable' AND g.generation_id = $4) "
		"  FOR UPDATE OF o SKIP LOCKED)", 4, types, values, NULL);
	SPI_finish();
}

void
kp_cat_member_join_classic(const char *group_id, const char *member_id, const char *instance_id,
						   const char *client_id, const char *client_host,
						   int32 session_timeout_ms, int32 rebalance_timeout_ms, int nprotocols,
						   const char *const *protocol_names, const KpBlob *protocol_metadata,
						   int32 join_round)
{
	Oid			types[10] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID, INT4OID,
	TEXTARRAYOID, BYTEAARRAYOID, INT4OID};
	Datum		values[10];
	char		nulls[10] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	Datum	   *metas = palloc(sizeof(Datum) * Max(nprotocols, 1));
	int			i;

	for (i = 0; i < nprotocols; i++)
		metas[i] = blob_datum(protocol_metadata[i]);
	member_identity(values, nulls, group_id, member_id, instance_id, client_id, client_host);
	values[5] = Int32GetDatum(session_timeout_ms);
	values[6] = Int32GetDatum(rebalance_timeout_ms);
	values[7] = text_array_datum(nprotocols, (char *const *) protocol_names);
	values[8] = PointerGetDatum(construct_array(metas, nprotocols, BYTEAOID, -1, false, TYPALIGN_INT));
	values[9] = Int32GetDatum(join_round);
	begin();
	run("INSERT INTO kafka.group_members AS m (group_id, member_id, group_instance_id, client_id, "
		"  client_host, session_timeout_ms, rebalance_timeout_ms, protocol_names, protocol_metadata, "
		"  join_round, last_heartbeat) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now()) "
		"ON CONFLICT (group_id, member_id) DO UPDATE SET group_instance_id = $3, client_id = $4, "
		"  client_host = $5, session_timeout_ms = $6, rebalance_timeout_ms = $7, protocol_names = $8, "
		"  protocol_metadata = $9, join_round = $10, last_heartbeat = now()",
		10, types, values, nulls);
	SPI_finish();
}

void
kp_cat_member_join_consumer(const char *group_id, const char *member_id, const char *instance_id,
							const char *client_id, const char *client_host,
							int32 rebalance_timeout_ms, const char *rack_id, int nsubscribed,
							char *const *subscribed, const char *subscribed_regex)
{
	Oid			types[9] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID, TEXTOID, TEXTARRAYOID,
	TEXTOID};
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	member_identity(values, nulls, group_id, member_id, instance_id, client_id, client_host);
	values[5] = Int32GetDatum(rebalance_timeout_ms);
	if (rack_id)
		values[6] = CStringGetTextDatum(rack_id);
	else
		nulls[6] = 'n';
	values[7] = text_array_datum(Max(nsubscribed, 0), subscribed);
	if (subscribed_regex)
		values[8] = CStringGetTextDatum(subscribed_regex);
	else
		nulls[8] = 'n';
	begin();
	run("INSERT INTO kafka.group_members (group_id, member_id, group_instance_id, "
		"  client_id, client_host, session_timeout_ms, rebalance_timeout_ms, "
		"  rack_id, subscribed_topics, subscribed_regex, join_round) "
		"VALUES ($1, $2, $3, $4, $5, 0, $6, $7, $8, $9, 0) "
		"ON CONFLICT (group_id, member_id) DO UPDATE SET subscribed_topics = $8, "
		"  subscribed_regex = $9, last_heartbeat = now(), member_epoch = 0, "
		"  previous_member_epoch = -1",
		9, types, values, nulls);
	SPI_finish();
}

void
kp_cat_member_rename(const char *group_id, const char *old_id, const char *new_id)
{
	run_texts("UPDATE kafka.group_members SET member_id = $3, last_heartbeat = now() "
			  "WHERE group_id = $1 AND member_id = $2", 3, group_id, old_id, new_id);
}

void
kp_cat_member_delete(const char *group_id, const char *member_id)
{
	run_texts("DELETE FROM kafka.group_members WHERE group_id = $1 AND member_id = $2",
			  2, group_id, member_id, NULL);
}

void
kp_cat_member_touch(const char *group_id, const char *member_id)
{
	run_texts("UPDATE kafka.group_members SET last_heartbeat = now() WHERE group_id = $1 AND member_id = $2",
			  2, group_id, member_id, NULL);
}

void
kp_cat_member_set_assignment(const char *group_id, const char *member_id, KpBlob assignment)
{
	Oid			types[3] = {TEXTOID, TEXTOID, BYTEAOID};
	Datum		values[3] = {CStringGetTextDatum(group_id), CStringGetTextDatum(member_id),
	blob_datum(assignment)};

	begin();
	run("UPDATE kafka.group_members SET assignment = $3 WHERE group_id = $1 AND member_id = $2",
		3, types, values, NULL);
	SPI_finish();
}

void
kp_cat_members_clear_assignments(const char *group_id)
{
	run_texts("UPDATE kafka.group_members SET assignment = NULL, last_heartbeat = now() WHERE group_id = $1",
			  1, group_id, NULL, NULL);
}

void
kp_cat_members_default_assignments(const char *group_id)
{
	run_texts("UPDATE kafka.group_members SET assignment = '' WHERE group_id = $1 AND assignment IS NULL",
			  1, group_id, NULL, NULL);
}

/* The principal a member's regex is resolved for (its latest heartbeat's). */
void
kp_cat_member_set_authz(const char *group_id, const char *member_id, Oid role, const char *host)
{
	Oid			types[4] = {TEXTOID, TEXTOID, OIDOID, TEXTOID};
	Datum		values[4] = {CStringGetTextDatum(group_id), CStringGetTextDatum(member_id),
	ObjectIdGetDatum(role), CStringGetTextDatum(host ? host : "")};

	begin();
	run("UPDATE kafka.group_members SET authz_role = $3, authz_host = $4 "
		"WHERE group_id = $1 AND member_id = $2",
		4, types, values, NULL);
	SPI_finish();
}

void
kp_cat_member_set_subscription(const char *group_id, const char *member_id, int nsubscribed,
							   char *const *subscribed, const char *subscribed_regex)
{
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTARRAYOID, TEXTOID};
	Datum		values[4] = {CStringGetTextDatum(group_id), CStringGetTextDatum(member_id),
	text_array_datum(nsubscribed, subscribed), (Datum) 0};
	char		nulls[4] = {' ', ' ', ' ', 'n'};

	if (subscribed_regex)
	{
		values[3] = CStringGetTextDatum(subscribed_regex);
		nulls[3] = ' ';
	}
	begin();
	run("UPDATE kafka.group_members SET subscribed_topics = $3, subscribed_regex = $4 "
		"WHERE group_id = $1 AND member_id = $2",
		4, types, values, nulls);
	SPI_finish();
}

int
kp_cat_topics_matching(const char *regex, char ***names)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(regex)};

	return select_texts("SELECT name FROM kafka.topics WHERE name ~ $1 ORDER BY name",
						1, types, values, names);
}

void
kp_cat_member_set_target(const char *group_id, const char *member_id, const char *target)
{
	run_texts("UPDATE kafka.group_members SET target = $3 WHERE group_id = $1 AND member_id = $2",
			  3, group_id, member_id, target);
}

void
kp_cat_member_save_consumer(const char *group_id, const char *member_id, int32 member_epoch,
							int32 previous_member_epoch, const char *assigned,
							const char *target, const char *owned, int32 rebalance_timeout_ms,
							KpRevokeTimer revoke)
{
	Oid			types[9] = {TEXTOID, TEXTOID, INT4OID, TEXTOID, TEXTOID, TEXTOID, INT4OID, INT4OID,
	INT4OID};
	Datum		values[9];

	values[0] = CStringGetTextDatum(group_id);
	values[1] = CStringGetTextDatum(member_id);
	values[2] = Int32GetDatum(member_epoch);
	values[3] = CStringGetTextDatum(assigned);
	values[4] = CStringGetTextDatum(target);
	values[5] = CStringGetTextDatum(owned);
	values[6] = Int32GetDatum(previous_member_epoch);
	values[7] = Int32GetDatum(rebalance_timeout_ms);
	values[8] = Int32GetDatum((int32) revoke);
	begin();
	run("UPDATE kafka.group_members SET member_epoch = $3, assigned = $4, "
		"  target = $5, owned = $6, previous_member_epoch = $7, rebalance_timeout_ms = $8, "
		"  revoke_deadline = CASE $9 WHEN 1 THEN now() + $8 * interval '1 ms' "
		"                            WHEN 2 THEN NULL ELSE revoke_deadline END "
		"WHERE group_id = $1 AND member_id = $2",
		9, types, values, NULL);
	SPI_finish();
}

int
kp_cat_members_delete_unrevoked(const char *group_id)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(group_id)};
	int			n;

	begin();
	run("DELETE FROM kafka.group_members WHERE group_id = $1 AND revoke_deadline < now()",
		1, types, values, NULL);
	n = (int) SPI_processed;
	SPI_finish();
	return n;
}

int
kp_cat_members_delete_expired(const char *group_id, int32 session_ms, int32 spare_round,
							  int *pending)
{
	Oid			types[3] = {TEXTOID, INT4OID, INT4OID};
	Datum		values[3] = {CStringGetTextDatum(group_id), Int32GetDatum(session_ms),
	Int32GetDatum(spare_round)};
	int			n;
	int			i;

	begin();
	run("DELETE FROM kafka.group_members WHERE group_id = $1 "
		"AND last_heartbeat + (CASE WHEN $2 >= 0 THEN $2 ELSE session_timeout_ms END) "
		"    * interval '1 ms' < now() "
		"AND join_round <> $3 "
		"RETURNING join_round",
		3, types, values, NULL);
	n = (int) SPI_processed;
	if (pending)
	{
		*pending = 0;
		for (i = 0; i < n; i++)
			if (col_int64(i, 1, 0) < 0)
				(*pending)++;
	}
	SPI_finish();
	return n;
}

int32
kp_cat_consumer_member_epoch(const char *group_id, const char *member_id)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2] = {CStringGetTextDatum(group_id), CStringGetTextDatum(member_id)};
	int32		epoch = -1;

	begin();
	run("SELECT m.member_epoch FROM kafka.group_members m "
		"JOIN kafka.consumer_groups g USING (group_id) "
		"WHERE g.group_type = 'consumer' AND m.group_id = $1 AND m.member_id = $2",
		2, types, values, NULL);
	if (SPI_processed > 0)
		epoch = (int32) col_int64(0, 1, -1);
	SPI_finish();
	return epoch;
}

/* ---------------------------------------------------------------------
 * kafka.group_configs
 * ---------------------------------------------------------------------
 */

static SPIPlanPtr configs_plan = NULL;

int
kp_cat_group_configs_load(const char *group_id, char ***names, char ***values)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext old;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(group_id)};
	int			n;
	int			i;

	begin();
	/* read by every share-group acquisition: a plan kept for the process */
	if (configs_plan == NULL)
	{
		SPIPlanPtr	p = kp_spi_prepare("SELECT name, value FROM kafka.group_configs WHERE group_id = $1 ORDER BY name",
									   1, types);

		if (p == NULL)
			elog(ERROR, "kafka_pg group catalog: cannot prepare the group configs query (%d)", SPI_result);
		SPI_keepplan(p);
		configs_plan = p;
	}
	if (kp_spi_execute_plan(configs_plan, args, NULL, false, 0) < 0)
		elog(ERROR, "kafka_pg group catalog: reading the group configs failed");
	n = (int) SPI_processed;
	old = MemoryContextSwitchTo(caller);
	*names = palloc(sizeof(char *) * Max(n, 1));
	*values = palloc(sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		(*names)[i] = col_text(i, 1);
		(*values)[i] = col_text(i, 2);
	}
	MemoryContextSwitchTo(old);
	SPI_finish();
	return n;
}

/* Every group with a config override, in byte order (ListConfigResources). */
int
kp_cat_group_configs_groups(char ***group_ids)
{
	return select_texts("SELECT group_id FROM kafka.group_configs GROUP BY group_id ORDER BY group_id COLLATE \"C\"",
						0, NULL, NULL, group_ids);
}

void
kp_cat_group_config_store(const char *group_id, const char *name, const char *value)
{
	if (value == NULL)
		run_texts("DELETE FROM kafka.group_configs WHERE group_id = $1 AND name = $2",
				  2, group_id, name, NULL);
	else
		run_texts("INSERT INTO kafka.group_configs (group_id, name, value) VALUES ($1, $2, $3) "
				  "ON CONFLICT (group_id, name) DO UPDATE SET value = $3",
				  3, group_id, name, value);
}
