/*-------------------------------------------------------------------------
 *
 * consume.c
 *	  kafka.consume: a consumer group from SQL, exactly-once with the
 *	  caller's transaction.
 *
 * kafka.consume(group, topic, max_records) returns records from the
 * partitions of topic that no other consumer of the group holds right now,
 * each from the group's committed offset, and records the group's new
 * offsets in the caller's transaction.  So
 *
 *		BEGIN;
 *		INSERT INTO t SELECT ... FROM kafka.consume('g', 'orders', 100);
 *		COMMIT;
 *
 * is exactly-once: the business rows and the offsets commit together, and
 * a rollback leaves the offsets where they were.
 *
 * Who holds a partition: a wire member of the group through its current
 * assignment (src/group decodes it), and a SQL session through a
 * transaction-scoped advisory lock on (group, topic, partition) that
 * kafka.consume takes with pg_try_advisory_xact_lock semantics
 * (kp_group_try_lock_offset, src/group), skipping partitions
 * another session holds.  Concurrent SQL consumers of one group therefore
 * never receive the same records.  The committed offset is read with a row
 * lock, so under REPEATABLE READ a consumer whose snapshot is older than a
 * concurrent commit gets a serialization error rather than old offsets.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "catalog/kafka_catalog.h"
#include "common/kafka_errors.h"
#include "group/group.h"
#include "protocol/errors.h"
#include "sqlapi/sqlapi.h"
#include "store/store.h"

PG_FUNCTION_INFO_V1(kp_sql_consume);

/* The group's committed offset, locked to the end of the transaction. */
static int64
committed_offset_for_update(const char *group_id, const char *topic, int32 partition,
							bool *found)
{
	int32		leader_epoch;
	KpBlob		metadata;
	int64		offset = kp_group_fetch_offset(group_id, topic, partition, true,
											   &leader_epoch, &metadata);

	*found = offset >= 0;
	return offset;
}

/* Kafka error code as SQLSTATE KPnnn (as kafka.group_heartbeat reports them) */
#define KAFKA_SQLSTATE(code) \
	MAKE_SQLSTATE('K', 'P', '0' + ((code) / 100) % 10, '0' + ((code) / 10) % 10, '0' + (code) % 10)

/*
 * The new committed offset, through the coordinator's one writer and its
 * fence for this kind of SQL committer (group.h).
 */
static void
commit_position(const KpCommitter *committer, const char *topic, int32 partition, int64 position)
{
	KpOffsetToCommit o;

	memset(&o, 0, sizeof(o));
	o.topic = topic;
	o.partition = partition;
	o.offset = position;
	o.leader_epoch = -1;
	o.metadata.data = NULL;
	o.metadata.len = -1;
	kp_group_commit_offsets(committer, 1, &o);
	if (o.error_code != 0)
		ereport(ERROR,
				(errcode(KAFKA_SQLSTATE(o.error_code)),
				 errmsg("cannot commit the offset of group \"%s\" on %s:%d: Kafka error %d",
						committer->group_id, topic, partition, o.error_code),
				 o.error_code == KP_ERR_STALE_MEMBER_EPOCH ?
				 errhint("The member's assignment changed: heartbeat, then poll again.") : 0));
}

Datum
kp_sql_consume(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *group_id = kp_arg_text(fcinfo, 0, "group_id");
	char	   *topic_name = kp_arg_text(fcinfo, 1, "topic");
	int32		max_records = PG_ARGISNULL(2) ? 100 : PG_GETARG_INT32(2);
	char	   *reset = PG_ARGISNULL(3) ? "earliest" : text_to_cstring(PG_GETARG_TEXT_PP(3));
	const KpTopic *topic;
	int32	   *held;
	int			nheld;
	int			emitted = 0;
	int32		start;
	int32		i;
	int32		partition_count;
	char		topic_copy[KP_TOPIC_NAME_MAX + 1];
	KpCommitter committer;
	KpSqlOwner	owner;

	kp_sql_check_writable_fn(fcinfo);
	InitMaterializedSRF(fcinfo, 0);
	if (group_id[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("group_id must not be empty")));
	if (max_records < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_records must not be negative")));
	if (strcmp(reset, "earliest") != 0 && strcmp(reset, "latest") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid auto_offset_reset \"%s\"", reset),
				 errhint("Use earliest or latest, as Kafka's auto.offset.reset.")));
	kp_acl_check(KP_ACL_RESOURCE_GROUP, group_id, KP_ACL_OP_READ);
	kp_acl_check(KP_ACL_RESOURCE_TOPIC, topic_name, KP_ACL_OP_READ);
	kp_sql_as_owner(&owner);

	topic = kp_topic_open(topic_name, AccessShareLock, false);
	partition_count = topic->partition_count;
	strlcpy(topic_copy, topic->name, sizeof(topic_copy));
	nheld = kp_group_held_partitions(group_id, topic_copy, &held);

	memset(&committer, 0, sizeof(committer));
	committer.kind = KP_COMMIT_SQL_SESSION;
	committer.group_id = group_id;
	committer.generation_id = -1;

	/* start at a different partition in each session, so they spread out */
	start = (int32) (MyProcPid % partition_count);
	for (i = 0; i < partition_count && emitted < max_records; i++)
	{
		int32		p = (start + i) % partition_count;
		int			k;
		bool		held_by_member = false;
		bool		found;
		int64		from;
		int64		position;
		int			n;
		KpLogOffsets off;
		KpPartitionRef ref;

		for (k = 0; k < nheld; k++)
			if (held[k] == p)
				held_by_member = true;
		if (held_by_member || !kp_group_try_lock_offset(group_id, topic_copy, p))
			continue;

		topic = kp_topic_open(topic_copy, AccessShareLock, false);
		kp_topic_partition(topic, p, &ref);
		kp_log_offsets(ref.partition_id, &off);
		from = committed_offset_for_update(group_id, topic_copy, p, &found);
		if (!found || from < off.log_start_offset || from > off.log_end_offset)
			from = strcmp(reset, "earliest") == 0 ? off.log_start_offset : off.log_end_offset;

		n = kp_sql_emit_records(rsinfo, topic, p, from, max_records - emitted, true, &position);
		emitted += n;
		if (position != from || !found)
			commit_position(&committer, topic_copy, p, position);
	}
	kp_sql_as_caller(&owner);
	return (Datum) 0;
}

/* ---------------------------------------------------------------------
 * SQL sessions as members of a consumer-protocol group (KIP-848)
 *
 * kafka.group_join / group_heartbeat / group_poll / group_leave make a SQL
 * session a member of a group under the same coordinator and rules as the
 * wire members with group.protocol=consumer: the coordinator assigns it
 * partitions (server-side), it reads them from the committed offsets and
 * commits in its own transaction, and its session expires if it stops
 * heartbeating (kafka.group_consumer_session_timeout_ms).
 * ---------------------------------------------------------------------
 */

PG_FUNCTION_INFO_V1(kp_sql_group_heartbeat);
PG_FUNCTION_INFO_V1(kp_sql_group_poll);

/*
 * kafka.group_heartbeat(group, member_id, topics[]) -> (member_id, member_epoch,
 * partitions): join with member_id NULL (or '') and epoch 0, then heartbeat;
 * topics NULL leaves the subscription unchanged.  A negative epoch leaves.
 */
Datum
kp_sql_group_heartbeat(PG_FUNCTION_ARGS)
{
	KpCgHeartbeatArgs a;
	KpCgHeartbeatResult r;
	KpSqlOwner	owner;
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	int16		code;
	Datum	   *parts;
	int			i;

	kp_sql_check_writable_fn(fcinfo);
	memset(&a, 0, sizeof(a));
	a.group_id = kp_arg_text(fcinfo, 0, "group_id");
	a.member_id = PG_ARGISNULL(1) ? "" : text_to_cstring(PG_GETARG_TEXT_PP(1));
	a.member_epoch = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT32(2);
	a.nsubscribed = -1;
	if (!PG_ARGISNULL(3))
	{
		Datum	   *elems;
		bool	   *enulls;

		deconstruct_array(PG_GETARG_ARRAYTYPE_P(3), TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, &enulls, &a.nsubscribed);
		a.subscribed = palloc(sizeof(char *) * Max(a.nsubscribed, 1));
		for (i = 0; i < a.nsubscribed; i++)
			a.subscribed[i] = enulls[i] ? "" : TextDatumGetCString(elems[i]);
	}
	/* Kafka's ConsumerGroupHeartbeat: GROUP READ, DESCRIBE on the topics */
	kp_acl_check(KP_ACL_RESOURCE_GROUP, a.group_id, KP_ACL_OP_READ);
	for (i = 0; i < a.nsubscribed; i++)
		kp_acl_check(KP_ACL_RESOURCE_TOPIC, a.subscribed[i], KP_ACL_OP_DESCRIBE);
	a.authz_role = GetUserId(); /* the caller, before the switch */
	a.authz_host = NULL;
	kp_sql_as_owner(&owner);
	a.nowned = -1;
	a.holds_assignment = true;
	a.client_id = "postgres";
	a.client_host = "sql";
	code = kp_group_consumer_heartbeat(&a, &r);
	kp_sql_as_caller(&owner);
	if (code != 0)
		ereport(ERROR,
				(errcode(MAKE_SQLSTATE('K', 'P', '0' + (code / 100) % 10, '0' + (code / 10) % 10, '0' + code % 10)),
				 errmsg("group heartbeat failed with Kafka error %d", code),
				 r.error_message ? errdetail("%s", r.error_message) : 0));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = CStringGetTextDatum(r.member_id ? r.member_id : "");
	values[1] = Int32GetDatum(r.member_epoch);
	parts = palloc(sizeof(Datum) * Max(r.nassigned, 1));
	for (i = 0; i < r.nassigned; i++)
		parts[i] = CStringGetTextDatum(psprintf("%s:%d", r.assigned_topics[i], r.assigned_partitions[i]));
	values[2] = PointerGetDatum(construct_array(parts, r.nassigned, TEXTOID, -1, false, TYPALIGN_INT));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/*
 * kafka.group_poll(group, member_id, max_records): records of the partitions
 * the coordinator assigned to this member (per its last heartbeat), from the
 * group's committed offsets, committing the new offsets in the caller's
 * transaction.
 */
Datum
kp_sql_group_poll(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *group_id = kp_arg_text(fcinfo, 0, "group_id");
	char	   *member_id = kp_arg_text(fcinfo, 1, "member_id");
	int32		max_records = PG_ARGISNULL(2) ? 100 : PG_GETARG_INT32(2);
	KpSqlOwner	owner;
	KpCommitter committer;
	int32		member_epoch;
	int			nassigned;
	char	  **topics;
	int32	   *partitions;
	int			emitted = 0;
	int			i;

	kp_sql_check_writable_fn(fcinfo);
	InitMaterializedSRF(fcinfo, 0);
	kp_acl_check(KP_ACL_RESOURCE_GROUP, group_id, KP_ACL_OP_READ);
	kp_sql_as_owner(&owner);
	if (!kp_group_consumer_assignment(group_id, member_id, &member_epoch, &nassigned,
									  &topics, &partitions))
		ereport(ERROR,
				(errcode(ERRCODE_KP_UNKNOWN_MEMBER_ID),
				 errmsg("member \"%s\" is not in group \"%s\"", member_id, group_id),
				 errhint("Join with kafka.group_heartbeat first; a member that stops heartbeating is removed.")));
	memset(&committer, 0, sizeof(committer));
	committer.kind = KP_COMMIT_SQL_MEMBER;
	committer.group_id = group_id;
	committer.member_id = member_id;
	committer.generation_id = member_epoch;

	for (i = 0; i < nassigned && emitted < max_records; i++)
	{
		int32		p = partitions[i];
		const KpTopic *topic;
		bool		found;
		int64		from;
		int64		position;
		KpLogOffsets off;
		KpPartitionRef ref;

		kp_acl_check_role(owner.caller, KP_ACL_RESOURCE_TOPIC, topics[i], KP_ACL_OP_READ);
		topic = kp_topic_open(topics[i], AccessShareLock, true);
		if (topic == NULL)
			continue;
		kp_topic_partition(topic, p, &ref);
		kp_log_offsets(ref.partition_id, &off);
		/* as kafka.consume, the partition's lock before its offset's row */
		kp_group_lock_offset(group_id, topics[i], p);
		from = committed_offset_for_update(group_id, topics[i], p, &found);
		if (!found || from < off.log_start_offset || from > off.log_end_offset)
			from = off.log_start_offset;
		topic = kp_topic_open(topics[i], AccessShareLock, false);
		emitted += kp_sql_emit_records(rsinfo, topic, p, from, max_records - emitted, true, &position);
		if (position != from || !found)
			commit_position(&committer, topics[i], p, position);
	}
	kp_sql_as_caller(&owner);
	return (Datum) 0;
}
