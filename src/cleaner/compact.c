/*-------------------------------------------------------------------------
 *
 * compact.c
 *	  One compaction pass over a topic: its configs from the catalog, its
 *	  partitions to the store (src/store/compaction.c), and the deferred
 *	  drops of the segments earlier cleans replaced.
 *
 * The worker (cleaner.c) calls kp_cleaner_compact_topic one partition at a
 * time, each in a transaction of its own; kafka.run_log_compaction and
 * kafka.run_log_cleaner (src/sqlapi/cleaner.c) call it for every partition
 * in the caller's transaction.  The configs are read as they are now, so an
 * ALTER of min.cleanable.dirty.ratio, delete.retention.ms and the like
 * applies at the next pass.
 *
 * Locking: the topic is opened with ShareUpdateExclusiveLock, as retention
 * does (retain.c): one pass at a time per topic, and no DeleteRecords or
 * retention meanwhile; produce and fetch take weaker locks and go on.
 *
 * file.delete.delay.ms: a segment a clean replaced stays readable (but
 * listed to no new reader) until the topic's file.delete.delay.ms has passed
 * since it left the log, so that a reader that listed it just before the
 * swap can finish, as Kafka keeps a replaced segment's files (renamed
 * .deleted) for that long.  The store keeps the time
 * (kp_log_drop_replaced_segments, src/store/logstart.c); after a restart no
 * reader can hold one, and the first pass drops them at once, as Kafka
 * deletes .deleted files at startup.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "catalog/kafka_catalog.h"
#include "cleaner/cleaner.h"
#include "store/store.h"

int			kp_log_cleaner_threads = 1;
int			kp_log_cleaner_backoff_ms = 15000;
double		kp_log_cleaner_io_max_bytes_per_second = 1.7976931348623157e308;
int			kp_log_cleaner_dedupe_buffer_size = 128 * 1024 * 1024;

/* ms since the Unix epoch, as Kafka timestamps are */
static int64
now_unix_ms(void)
{
	return GetCurrentTimestamp() / 1000 +
		((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)) * SECS_PER_DAY * 1000;
}

static bool
compact_partition(const char *topic_name, const KpTopicConfig *tc, int32 p,
				  int64 partition_id, int64 now_ms, KpCompactionReport report,
				  void *arg)
{
	KpCleanerStat st;
	bool		have_stat = kp_cleaner_stat(partition_id, &st);
	KpCompactConfig cfg;
	KpCompactResult result;
	int			dropped = 0;

	/*
	 * The segments that left the log (earlier cleans, retention,
	 * DeleteRecords), once nobody can be reading them
	 */
	dropped = kp_log_drop_replaced_segments(partition_id, tc->file_delete_delay_ms);

	memset(&cfg, 0, sizeof(cfg));
	cfg.segment_bytes = tc->log.segment_bytes;
	cfg.delete_retention_ms = tc->delete_retention_ms;
	cfg.min_compaction_lag_ms = tc->min_compaction_lag_ms;
	cfg.max_compaction_lag_ms = tc->max_compaction_lag_ms;
	cfg.min_cleanable_dirty_ratio = tc->min_cleanable_dirty_ratio;
	/* Kafka divides the buffer among its cleaner threads */
	cfg.dedupe_buffer_size = kp_log_cleaner_dedupe_buffer_size /
		Max(kp_log_cleaner_threads, 1);
	cfg.io_max_bytes_per_second = kp_log_cleaner_io_max_bytes_per_second;
	cfg.delete_horizon_due = have_stat && st.next_delete_horizon_ms >= 0 &&
		st.next_delete_horizon_ms <= now_ms;

	kp_log_compact(partition_id, &cfg, now_ms, &result);
	kp_cleaner_note_compaction(partition_id, &result, now_ms);

	/* no delay: the segments just replaced go with this transaction */
	if (result.cleaned && tc->file_delete_delay_ms == 0)
		dropped += kp_log_drop_replaced_segments(partition_id, 0);

	if (report)
		report(topic_name, p, &result, dropped, arg);
	return result.cleaned;
}

int
kp_cleaner_compact_topic(const char *name, int32 partition,
						 KpCompactionReport report, void *arg,
						 int32 *npartitions)
{
	const KpTopic *topic;
	int64		now_ms = now_unix_ms();
	int			cleaned = 0;
	int32		p;

	if (npartitions)
		*npartitions = 0;
	topic = kp_topic_open(name, ShareUpdateExclusiveLock, true);
	if (topic == NULL || !topic->config.cleanup_compact)
		return 0;
	if (npartitions)
		*npartitions = topic->partition_count;
	for (p = 0; p < topic->partition_count; p++)
	{
		if ((partition >= 0 && p != partition) ||
			kp_log_no_room(topic->partition_ids[p], KP_CLEANER_NO_ROOM))
			continue;
		if (compact_partition(topic->name, &topic->config, p,
							  topic->partition_ids[p], now_ms, report, arg))
			cleaned++;
	}
	return cleaned;
}
