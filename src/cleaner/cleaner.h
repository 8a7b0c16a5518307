/*-------------------------------------------------------------------------
 *
 * cleaner.h
 *	  The log cleaner: the whole public face of src/cleaner.
 *
 * A background worker in kafka.database that applies each topic's
 * cleanup.policy to its partitions: retention (retention.ms,
 * retention.bytes) for "delete" every kafka.log_retention_check_interval_ms,
 * as Kafka's log.retention.check.interval.ms.  It reads the topic configs
 * from the catalog (src/catalog) and lets the store delete the segments
 * (src/store/retention.c); README has the rules.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_CLEANER_H
#define KP_CLEANER_H

#include "postgres.h"

#include "store/store.h"

/* kafka.log_retention_check_interval_ms (Kafka's default 300000) */
extern int	kp_log_retention_check_interval_ms;

/* Called from _PG_init: defines the cleaner's settings. */
extern void kp_cleaner_init_gucs(void);

/* The worker's entry point (registered by src/main/kafka_pg.c). */
extern void kp_cleaner_main(Datum arg);

/*
 * The detail of the WARNING for a partition with no room for its state in
 * shared memory (kp_log_no_room): retention and compaction leave it alone
 * (but for dropping its replaced segments, which needs no state), and go on
 * with the topic's other partitions.
 */
#define KP_CLEANER_NO_ROOM	"The log cleaner skips it: no retention or compaction for it."

/* What one retention pass did to one partition. */
typedef void (*KpRetentionReport) (const char *topic, int32 partition,
								   const KpRetentionResult *result, void *arg);

/*
 * Apply retention to every partition of one topic, in the caller's
 * transaction, if its cleanup.policy includes "delete"; the topic's lock
 * (the one DeleteRecords takes) is held to the end of that transaction.
 * report (if not NULL) is called for each partition retention applies to.
 * A topic that no longer exists is skipped, and so is a partition with no
 * room for its state (KP_CLEANER_NO_ROOM).  Returns the segments deleted.
 */
extern int	kp_cleaner_retain_topic(const char *topic, KpRetentionReport report,
									void *arg);

/* ---------- status (status.c): the kafka.log_cleaner_status view ---------- */

/* What the cleaner did to one partition since the server started. */
typedef struct KpCleanerStat
{
	int64		last_retention_ms;	/* Unix ms of the last retention pass */
	int32		segments_deleted;	/* by retention */
	int64		bytes_reclaimed;	/* data bytes of those segments */
	/* compaction; 0 or -1 until a compaction pass looks at the partition */
	int64		last_check_ms;	/* Unix ms of the last compaction pass */
	int64		last_compaction_ms; /* ... of the last clean, 0 if none */
	int64		last_swap_ms;	/* of the last swap (file.delete.delay.ms) */
	int32		compactions;	/* cleans since the start */
	double		dirty_ratio;	/* as the last pass measured it */
	int64		compaction_bytes_before;	/* rewritten segments, in total */
	int64		compaction_bytes_after; /* cleaned segments, in total */
	int64		records_removed;
	int64		next_delete_horizon_ms; /* earliest horizon kept, or -1 */
} KpCleanerStat;

extern Size kp_cleaner_shmem_size(void);
extern void kp_cleaner_request_locks(void);
extern void kp_cleaner_shmem_init(void);
extern void kp_cleaner_note_retention(int64 partition_id,
									  const KpRetentionResult *result, int64 now_ms);
extern void kp_cleaner_note_compaction(int64 partition_id,
									   const KpCompactResult *result, int64 now_ms);
extern bool kp_cleaner_stat(int64 partition_id, KpCleanerStat *out);

/* ---------- compaction (compact.c) ---------- */

/* kafka.log_cleaner_threads, _backoff_ms, _io_max_bytes_per_second, _dedupe_buffer_size */
extern int	kp_log_cleaner_threads;
extern int	kp_log_cleaner_backoff_ms;
extern double kp_log_cleaner_io_max_bytes_per_second;
extern int	kp_log_cleaner_dedupe_buffer_size;

/* What one compaction pass did to one partition. */
typedef void (*KpCompactionReport) (const char *topic, int32 partition,
									const KpCompactResult *result,
									int replaced_dropped, void *arg);

/*
 * Compact one partition of a topic (or every partition, partition = -1)
 * in the caller's transaction, if its cleanup.policy includes "compact";
 * first drops the storage of segments earlier cleans replaced once the
 * topic's file.delete.delay.ms has passed.  The topic's lock (the one
 * retention takes) is held to the end of the transaction; a partition
 * with no room for its state is skipped (KP_CLEANER_NO_ROOM).  Returns the
 * partitions cleaned; *npartitions (if not NULL) gets the topic's
 * partition count, 0 if it is not compacted or gone.
 */
extern int	kp_cleaner_compact_topic(const char *topic, int32 partition,
									 KpCompactionReport report, void *arg,
									 int32 *npartitions);

#endif							/* KP_CLEANER_H */
