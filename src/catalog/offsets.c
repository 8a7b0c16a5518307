/*-------------------------------------------------------------------------
 *
 * offsets.c
 *	  The rows of committed offsets: the only code that reads or writes
 *	  kafka.committed_offsets.
 *
 * A committed offset is "the next offset to read" of a group on a
 * partition, with the leader epoch and metadata the committer gave
 * (Kafka's OffsetCommit).  Which commits are allowed (the generation and
 * member-epoch fences) is decided by src/group/offsets.c, the one caller of
 * kp_cat_offset_store; this file only moves rows.  Results are allocated in
 * the caller's memory context.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "catalog/catalog_spi.h"
#include "catalog/kafka_catalog.h"

static void
run(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls)
{
	int			ret;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ret = kp_spi_execute_with_args(sql, nargs, types, values, nulls, false, 0);
	if (ret < 0)
		elog(ERROR, "kafka_pg offsets catalog: statement failed (%d): %s", ret, sql);
}

void
kp_cat_offset_store(const char *group_id, const char *topic, int32 partition,
					int64 offset, int32 leader_epoch, const KpBlob *metadata)
{
	Oid			types[6] = {TEXTOID, TEXTOID, INT4OID, INT8OID, INT4OID, BYTEAOID};
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = CStringGetTextDatum(group_id);
	values[1] = CStringGetTextDatum(topic);
	values[2] = Int32GetDatum(partition);
	values[3] = Int64GetDatum(offset);
	values[4] = Int32GetDatum(leader_epoch);
	/* bytes to the client: librdkafka commits binary metadata */
	if (metadata && metadata->len >= 0)
	{
		bytea	   *b = palloc(VARHDRSZ + metadata->len);

		SET_VARSIZE(b, VARHDRSZ + metadata->len);
		if (metadata->len > 0)
			memcpy(VARDATA(b), metadata->data, metadata->len);
		values[5] = PointerGetDatum(b);
	}
	else
		nulls[5] = 'n';
	run("INSERT INTO kafka.committed_offsets (group_id, topic, partition, committed_offset, "
		"  leader_epoch, metadata, commit_time) VALUES ($1, $2, $3, $4, $5, $6, now()) "
		"ON CONFLICT (group_id, topic, partition) DO UPDATE SET committed_offset = $4, "
		"  leader_epoch = $5, metadata = $6, commit_time = now()",
		6, types, values, nulls);
	SPI_finish();
}

int64
kp_cat_offset_fetch(const char *group_id, const char *topic, int32 partition, bool for_update,
					int32 *leader_epoch, KpBlob *metadata)
{
	Oid			types[3] = {TEXTOID, TEXTOID, INT4OID};
	Datum		values[3] = {CStringGetTextDatum(group_id), CStringGetTextDatum(topic),
	Int32GetDatum(partition)};
	MemoryContext caller = CurrentMemoryContext;
	int64		offset = -1;

	*leader_epoch = -1;
	metadata->data = NULL;
	metadata->len = -1;
	if (for_update)
		run("SELECT committed_offset, leader_epoch, metadata FROM kafka.committed_offsets "
			"WHERE group_id = $1 AND topic = $2 AND partition = $3 FOR UPDATE",
			3, types, values, NULL);
	else
		run("SELECT committed_offset, leader_epoch, metadata FROM kafka.committed_offsets "
			"WHERE group_id = $1 AND topic = $2 AND partition = $3",
			3, types, values, NULL);
	if (SPI_processed > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Datum		d;
		MemoryContext old = MemoryContextSwitchTo(caller);

		offset = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		d = SPI_getbinval(tup, desc, 2, &isnull);
		*leader_epoch = isnull ? -1 : DatumGetInt32(d);
		d = SPI_getbinval(tup, desc, 3, &isnull);
		if (!isnull)
		{
			/* copied into the caller's context: SPI_finish frees SPI's */
			bytea	   *b = DatumGetByteaPCopy(d);

			metadata->data = VARDATA(b);
			metadata->len = VARSIZE(b) - VARHDRSZ;
		}
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return offset;
}

int
kp_cat_offsets_list(const char *group_id, char ***topics, int32 **partitions)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(group_id)};
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext old;
	int			n;
	int			i;

	run("SELECT topic, partition FROM kafka.committed_offsets WHERE group_id = $1 ORDER BY 1, 2",
		1, types, values, NULL);
	n = (int) SPI_processed;
	old = MemoryContextSwitchTo(caller);
	*topics = palloc(sizeof(char *) * Max(n, 1));
	*partitions = palloc(sizeof(int32) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		bool		isnull;

		(*topics)[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		(*partitions)[i] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
													   SPI_tuptable->tupdesc, 2, &isnull));
	}
	MemoryContextSwitchTo(old);
	SPI_finish();
	return n;
}

bool
kp_cat_offsets_exist(const char *group_id)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(group_id)};
	bool		found;

	run("SELECT 1 FROM kafka.committed_offsets WHERE group_id = $1 LIMIT 1", 1, types, values, NULL);
	found = SPI_processed > 0;
	SPI_finish();
	return found;
}

void
kp_cat_offsets_delete(const char *group_id, const char *topic, int32 partition)
{
	Oid			types[3] = {TEXTOID, TEXTOID, INT4OID};
	Datum		values[3];

	values[0] = CStringGetTextDatum(group_id);
	if (topic == NULL)
		run("DELETE FROM kafka.committed_offsets WHERE group_id = $1", 1, types, values, NULL);
	else
	{
		values[1] = CStringGetTextDatum(topic);
		values[2] = Int32GetDatum(partition);
		run("DELETE FROM kafka.committed_offsets WHERE group_id = $1 AND topic = $2 AND partition = $3",
			3, types, values, NULL);
	}
	SPI_finish();
}

void
kp_cat_offsets_expire(int32 retention_minutes)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(retention_minutes)};

	/*
	 * Kafka's OffsetExpirationCondition (ClassicGroup, ConsumerGroup) and
	 * OffsetMetadataManager.cleanupExpiredOffsets: a group no member ever
	 * joined (no protocol type: assign() consumers, kafka.consume) from each
	 * offset's commit; a classic group all together once it has been Empty
	 * for the retention (a Stable one's offsets of topics its members do not
	 * subscribe to: kp_cat_offsets_expire_unsubscribed, which src/group calls
	 * with the subscriptions it decodes); a consumer group (KIP-848) from
	 * each offset's commit, for topics none of its members subscribes to (a
	 * member subscribed by regex keeps them all).  Rows a transaction holds
	 * (kafka.consume) are left for a later pass.
	 */
	run("DELETE FROM kafka.committed_offsets WHERE (group_id, topic, partition) IN "
		"(SELECT o.group_id, o.topic, o.partition FROM kafka.committed_offsets o "
		"  LEFT JOIN kafka.consumer_groups g ON g.group_id = o.group_id "
		"  WHERE CASE "
		"    WHEN g.group_id IS NULL OR (g.group_type = 'classic' AND g.protocol_type = '') "
		"      THEN o.commit_time < now() - $1 * interval '1 minute' "
		"    WHEN g.group_type = 'classic' "
		"      THEN g.state = 'Empty' AND g.state_changed_at < now() - $1 * interval '1 minute' "
		"    ELSE o.commit_time < now() - $1 * interval '1 minute' "
		"      AND NOT EXISTS (SELECT 1 FROM kafka.group_members m WHERE m.group_id = o.group_id "
		"                      AND (m.subscribed_regex IS NOT NULL OR o.topic = ANY (m.subscribed_topics))) "
		"  END "
		"  FOR UPDATE OF o SKIP LOCKED)", 1, types, values, NULL);
	SPI_finish();
}
