/*-------------------------------------------------------------------------
 *
 * retention.c
 *	  Kafka's retention (cleanup.policy=delete): deleting a partition's
 *	  oldest closed segments by retention.ms and retention.bytes.
 *
 * The rules are UnifiedLog.deleteOldSegments': a segment may go when its
 * largest timestamp is more than retention.ms old
 * (deleteRetentionMsBreachedSegments), or while the partition without it is
 * still at least retention.bytes large (deleteRetentionSizeBreachedSegments),
 * or when it lies wholly below the log start offset
 * (deleteLogStartOffsetBreachedSegments: left by a DeleteRecords whose drops
 * were rolled back).  Deletion is always of a prefix of the log: the walk
 * stops at the first segment that must stay, so offsets stay contiguous
 * from the log start.  -1 disables either limit.
 *
 * One difference from Kafka, by design: the active segment is never
 * deleted.  Kafka rolls an expired active segment and then deletes it
 * (UnifiedLog.deleteSegments calls roll() when every segment is deletable);
 * here segments roll only on append (append.c, segment.ms and
 * segment.bytes), so an idle partition keeps its last segment, and its
 * records, until the next append rolls it.
 *
 * The deletion itself is logstart.c's: the log start offset moves to the
 * first kept segment's base offset (durably, replayed by standbys), the
 * segments below it leave the log with that directory entry, and their
 * storage is dropped file.delete.delay.ms later, by a later cleaner pass
 * (kp_log_drop_replaced_segments), so that a reader that listed them just
 * before can finish.  The segments are measured (size, largest timestamp) with no
 * store LWLock held, only buffer content locks for a page at a time; only
 * the log start move takes the appender lock, briefly, as DeleteRecords
 * does.  The caller holds a topic lock that keeps DeleteRecords and other
 * retention passes of the same topic away until its commit
 * (src/cleaner/cleaner.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"

#include "store/store_int.h"

/*
 * Apply retention.ms and retention.bytes (-1: unlimited) to the partition at
 * now_ms; fills *result.  The storage goes later (logstart.c).
 */
void
kp_log_apply_retention(int64 partition_id, int64 retention_ms,
					   int64 retention_bytes, int64 now_ms,
					   KpRetentionResult *result)
{
	const KpSegInfo *dsegs;
	KpSegInfo  *segs;
	int64	   *sizes;
	int			nsegs;
	int			ndelete = 0;
	int64		size_excess;
	int64		log_start;
	int64		total_size = 0;
	int			i;

	memset(result, 0, sizeof(*result));
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot apply retention during recovery"),
				 errhint("Retention runs on the primary; standbys follow it by replay.")));

	/*
	 * Everything from the store, as a standby's reader does (reader.c), not
	 * from the partition's state: a pass with nothing to delete need not load
	 * (recover) a partition nobody uses.  A copy: the directory cache is only
	 * valid until the next call.
	 */
	dsegs = kp_directory_segments(partition_id, &nsegs);
	if (nsegs == 0)
		return;
	segs = palloc(sizeof(KpSegInfo) * nsegs);
	memcpy(segs, dsegs, sizeof(KpSegInfo) * nsegs);
	log_start = Max(segs[0].base_offset, kp_directory_log_start(partition_id));
	result->log_start_offset = log_start;
	if (nsegs < 2)
	{
		pfree(segs);
		return;					/* only the active segment: nothing to do */
	}
	sizes = palloc0(sizeof(int64) * nsegs);
	for (i = 0; i < nsegs; i++)
	{
		Relation	rel = kp_segment_open(segs[i].relnode);

		sizes[i] = kp_segment_data_size(rel);
		total_size += sizes[i];
		kp_segment_close(rel);
	}

	/*
	 * Walk the closed segments (all but the last of this snapshot; a roll
	 * since then only adds segments after it) from the oldest, while one of
	 * the three rules lets the segment go.
	 */
	size_excess = retention_bytes >= 0 ? total_size - retention_bytes : -1;
	for (i = 0; i + 1 < nsegs; i++)
	{
		Relation	rel = kp_segment_open(segs[i].relnode);
		int64		max_ts;
		bool		by_log_start;
		bool		by_time;
		bool		by_size;

		max_ts = kp_segment_max_timestamp(rel);
		if (max_ts < 0)
		{
			/*
			 * Only transaction markers, which keep out of the time index
			 * (append.c).  Kafka takes the file's modification time
			 * (LogSegment.largestTimestamp); here the segment's creation.
			 * Deleting markers early is harmless: retention deletes a prefix,
			 * and a marker's records come before it.
			 */
			KpSegmentMeta meta;

			kp_segment_read_meta(rel, &meta);
			max_ts = meta.created_ms;
		}
		kp_segment_close(rel);

		by_log_start = segs[i + 1].base_offset <= log_start;
		by_time = retention_ms >= 0 && now_ms - max_ts > retention_ms;
		by_size = retention_bytes >= 0 && size_excess - sizes[i] >= 0;
		if (!by_log_start && !by_time && !by_size)
			break;
		if (by_size)
			size_excess -= sizes[i];
		if (!by_log_start)
		{
			result->segments_deleted++;
			result->bytes_deleted += sizes[i];
		}
		ndelete = i + 1;
	}

	if (ndelete > 0)
		result->log_start_offset =
			kp_logstart_advance(partition_id, segs[ndelete].base_offset, false);
	pfree(sizes);
	pfree(segs);
}
