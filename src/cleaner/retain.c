/*-------------------------------------------------------------------------
 *
 * retain.c
 *	  One retention pass over a topic: its configs from the catalog, its
 *	  partitions to the store.
 *
 * The worker (cleaner.c) and kafka.run_log_cleaner (src/sqlapi/cleaner.c)
 * both call kp_cleaner_retain_topic; it reads the topic's configs as they
 * are now, so an ALTER of retention.ms or retention.bytes applies at the
 * next pass, with no restart.
 *
 * Every pass also drops the storage of the segments that left the topic's
 * log at least file.delete.delay.ms ago (src/store/logstart.c), for every
 * topic, whatever its cleanup.policy.
 *
 * Locking: the topic is opened with ShareUpdateExclusiveLock, the lock
 * DeleteRecords takes, which conflicts with itself: a retention pass and a
 * DeleteRecords of the same topic, or two passes, run one after the other,
 * and delete_topic waits for the pass's transaction to end.  The store takes
 * its own locks (src/store/README).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "catalog/kafka_catalog.h"
#include "cleaner/cleaner.h"
#include "store/store.h"

/* ms since the Unix epoch, as Kafka timestamps are */
static int64
now_unix_ms(void)
{
	return GetCurrentTimestamp() / 1000 +
		((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)) * SECS_PER_DAY * 1000;
}

int
kp_cleaner_retain_topic(const char *name, KpRetentionReport report, void *arg)
{
	const KpTopic *topic;
	char		topic_name[KP_TOPIC_NAME_MAX + 1];
	int64	   *partition_ids;
	int32		npartitions;
	int64		retention_ms;
	int64		retention_bytes;
	int64		delay_ms;
	bool		cleanup_delete;
	int64		now_ms = now_unix_ms();
	int			deleted = 0;
	int32		p;

	topic = kp_topic_open(name, ShareUpdateExclusiveLock, true);
	if (topic == NULL)
		return 0;
	retention_ms = topic->config.retention_ms;
	retention_bytes = topic->config.retention_bytes;
	cleanup_delete = topic->config.cleanup_delete;
	delay_ms = topic->config.file_delete_delay_ms;

	/* the topic belongs to the catalog's cache: copy what we need */
	strlcpy(topic_name, topic->name, sizeof(topic_name));
	npartitions = topic->partition_count;
	partition_ids = palloc(sizeof(int64) * Max(npartitions, 1));
	memcpy(partition_ids, topic->partition_ids, sizeof(int64) * npartitions);

	/*
	 * First the storage of the segments that left the log (by retention,
	 * DeleteRecords or compaction) file.delete.delay.ms ago or more, whatever
	 * the topic's retention limits and cleanup.policy.
	 */
	for (p = 0; p < npartitions; p++)
		(void) kp_log_drop_replaced_segments(partition_ids[p], delay_ms);

	if (!cleanup_delete || (retention_ms < 0 && retention_bytes < 0))
	{
		pfree(partition_ids);
		return 0;
	}

	for (p = 0; p < npartitions; p++)
	{
		KpRetentionResult result;

		if (kp_log_no_room(partition_ids[p], KP_CLEANER_NO_ROOM))
			continue;
		kp_log_apply_retention(partition_ids[p], retention_ms, retention_bytes,
							   now_ms, &result);
		deleted += result.segments_deleted;
		kp_cleaner_note_retention(partition_ids[p], &result, now_ms);
		if (report)
			report(topic_name, p, &result, arg);
	}
	pfree(partition_ids);
	return deleted;
}
