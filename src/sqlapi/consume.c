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
 * kafka.consume takes with pg_try_advisory_xact_lock, skipping partitions
 * another session holds.  Concurrent SQL consumers of one group therefore
 * never receive the same records.  The committed offset is read with a row
 * lock, so under REPEATABLE READ a consumer whose snapshot is older than a
 * concurrent commit gets a serialization error rather than old offsets.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/builtins.h"

#include "catalog/kafka_catalog.h"
#include "common/kafka_errors.h"
#include "group/group.h"
#include "sqlapi/sqlapi.h"
#include "store/store.h"

PG_FUNCTION_INFO_V1(kp_sql_consume);

/* Advisory lock keys for (group, topic, partition): a hash and the partition. */
static bool
try_lock_partition(const char *group_id, const char *topic, int32 partition)
{
	char	   *key = psprintf("%s/%s", group_id, topic);
	uint32		h = hash_bytes((const unsigned char *) key, strlen(key));
	LOCKTAG		tag;

	/* the same tag as pg_try_advisory_xact_lock(int4, int4) */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, h, (uint32) partition, 2);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

static int64
committed_offset_for_update(const char *group_id, const char *topic, int32 partition,
							bool *found)
{
	Oid			types[3] = {TEXTOID, TEXTOID, INT4OID};
	Datum		values[3] = {CStringGetTextDatum(group_id), CStringGetTextDatum(topic),
	Int32GetDatum(partition)};
	int64		offset = -1;
	bool		isnull;

	*found = false;
	if (SPI_execute_with_args("SELECT committed_offset FROM kafka.committed_offsets "
							  "WHERE group_id = $1 AND topic = $2 AND partition = $3 FOR UPDATE",
							  3, types, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg: cannot read the committed offset");
	if (SPI_processed > 0)
	{
		offset = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		*found = true;
	}
	return offset;
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

	topic = kp_topic_open(topic_name, AccessShareLock, false);
	partition_count = topic->partition_count;
	strlcpy(topic_copy, topic->name, sizeof(topic_copy));
	nheld = kp_group_held_partitions(group_id, topic_copy, &held);

	/* start at a different partition in each session, so they spread out */
	start = (int32) (MyProcPid % partition_count);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
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
		if (held_by_member || !try_lock_partition(group_id, topic_copy, p))
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
		{
			Oid			types[4] = {TEXTOID, TEXTOID, INT4OID, INT8OID};
			Datum		values[4] = {CStringGetTextDatum(group_id), CStringGetTextDatum(topic_copy),
			Int32GetDatum(p), Int64GetDatum(position)};

			if (SPI_execute_with_args("INSERT INTO kafka.consumer_groups (group_id) VALUES ($1) "
									  "ON CONFLICT DO NOTHING", 1, types, values, NULL, false, 0) < 0 ||
				SPI_execute_with_args("INSERT INTO kafka.committed_offsets (group_id, topic, partition, "
									  "  committed_offset, commit_time) VALUES ($1, $2, $3, $4, now()) "
									  "ON CONFLICT (group_id, topic, partition) DO UPDATE "
									  "SET committed_offset = $4, commit_time = now()",
									  4, types, values, NULL, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "kafka_pg: cannot record the committed offset");
		}
	}
	SPI_finish();
	return (Datum) 0;
}
