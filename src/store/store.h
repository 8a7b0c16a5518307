/*-------------------------------------------------------------------------
 *
 * store.h
 *	  The segment store: the whole public face of src/store.
 *
 * Each partition is an append-only log of Kafka record batches, split into
 * segments.  A segment is a relation file in the buffer manager (storage
 * option A of docs/architecture.md): block 0 is a metapage, blocks 1..n hold
 * the segment's batches as one contiguous byte stream, each page carrying a
 * small sparse-index entry in its special space.  Every change is WAL-logged
 * with generic WAL, so checkpoints, crash recovery, streaming standbys,
 * pg_basebackup and PITR need nothing from this extension at replay time.
 *
 * Segment files are created non-transactionally (a write on behalf of a
 * transaction that later aborts must not take other producers' batches with
 * it); which segments a partition has is kept in the segment directory, a
 * relation of the same kind (directory.c).
 *
 * Offsets are assigned by kp_log_append (append.c) under the partition's
 * appender lock in shared memory (partition.c); that is the only path that
 * writes to a partition, shared by the SQL API, the transaction resolver and
 * the wire listener.  src/store/README has the invariants and the locks.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_STORE_H
#define KP_STORE_H

#include "postgres.h"
#include "access/transam.h"
#include "access/xlogdefs.h"
#include "storage/lwlock.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"

#include "codec/codec.h"

/* The log configuration a partition is appended with (from the topic). */
typedef struct KpLogConfig
{
	int64		segment_bytes;	/* segment.bytes */
	int64		segment_ms;		/* segment.ms */
	int32		max_message_bytes;	/* max.message.bytes */
	bool		log_append_time;	/* message.timestamp.type=LogAppendTime */
} KpLogConfig;

/* What the log needs to know about a partition to address it. */
typedef struct KpPartitionRef
{
	int64		partition_id;	/* kafka.partitions.partition_id */
	bool		created_in_xact;	/* the partition is not yet committed */
} KpPartitionRef;

/* Outcome of an append (idempotent producers, KIP-98). */
typedef enum KpAppendStatus
{
	KP_APPEND_OK = 0,
	KP_APPEND_DUPLICATE,		/* a retry of a batch already in the log:
								 * result holds its original offsets */
	KP_APPEND_OUT_OF_ORDER,		/* sequence gap: OUT_OF_ORDER_SEQUENCE_NUMBER */
	KP_APPEND_STALE_EPOCH		/* epoch older than the producer's latest:
								 * INVALID_PRODUCER_EPOCH */
} KpAppendStatus;

/* Result of an append. */
typedef struct KpAppendResult
{
	KpAppendStatus status;
	int64		base_offset;
	int64		last_offset;
	int64		log_append_time;	/* -1 unless LogAppendTime */
	XLogRecPtr	end_lsn;		/* flush up to here for durability */
} KpAppendResult;

/* ---------- store-wide ---------- */

/* Shared-memory sizing and creation (called from _PG_init's hooks). */
extern Size kp_store_shmem_size(void);
extern void kp_store_shmem_init(void);
extern void kp_store_request_locks(void);

/* CREATE EXTENSION: create the segment directory, return its relfilenode. */
extern Oid	kp_store_create_directory(void);

/* ---------- appending (the one path that writes a partition) ---------- */

/*
 * Append one record batch (v2, already validated by the caller, baseOffset
 * arbitrary) to the partition.  Assigns offsets, rolls segments as config
 * says, and returns where the batch landed.  If txn_producer_id is not -1,
 * the batch opens (or continues) that transaction in the partition, which
 * holds back the last stable offset until kp_log_end_txn.
 *
 * The batch bytes are modified in place (baseOffset, and for LogAppendTime
 * maxTimestamp plus CRC).
 *
 * A batch of an idempotent producer (producer id >= 0, base sequence >= 0,
 * not a SQL transaction) is checked against the producer's last five
 * batches in this partition: a retry of one of them is not appended again
 * (status DUPLICATE, with its original offsets), a gap in the sequence is
 * refused (OUT_OF_ORDER), an epoch older than the producer's latest is
 * refused (STALE_EPOCH); a new epoch must start at sequence 0.
 */
extern void kp_log_append(const KpPartitionRef *part, const KpLogConfig *config,
						  char *batch, size_t len, int64 txn_producer_id,
						  KpAppendResult *result);

/* Transaction outcome for a partition's open transaction. */
typedef enum KpTxnOutcome
{
	KP_TXN_OPEN = 0,
	KP_TXN_COMMITTED,
	KP_TXN_ABORTED
} KpTxnOutcome;

/*
 * Mark the open transaction of producer_id in the partition as decided.  No
 * I/O, no ERROR: safe in transaction callbacks.  The resolver later writes
 * the marker (kp_log_write_pending_markers).  marker_epoch: the epoch the
 * coordinator ended it with; a marker above the transaction's own epoch
 * carries it and moves the partition's producer state to it (Kafka's
 * transactions version 2 and fencing aborts); -1 for none.
 */
extern void kp_log_decide_txn(Oid dboid, int64 partition_id, int64 producer_id,
							  KpTxnOutcome outcome, int16 marker_epoch);

/*
 * Write COMMIT/ABORT control batches for every decided transaction of this
 * database, advancing the last stable offset.  Returns the number written.
 */
extern int	kp_log_write_pending_markers(void);

/* Decide open SQL transactions that finished without telling us. */
extern void kp_log_sweep_sql_txns(void);

/*
 * Producer-state snapshots (prodsnap.c).  kp_log_snapshot_due: the ids
 * (palloc'd int64s) of this database's loaded partitions whose active
 * segment grew by 8 MB since their last snapshot, or with all, changed at
 * all (at shutdown): a hint, checked again under the appender lock.
 * kp_log_snapshot_partition writes one if the partition still needs it;
 * the caller holds the partition's topic lock (AccessShareLock at least),
 * as for an append.  In a transaction; not on a standby.
 */
extern List *kp_log_snapshot_due(bool all);
extern bool kp_log_snapshot_partition(int64 partition_id, bool all);

/*
 * How many walks for open transactions by this process started from a
 * producer-state snapshot, and how many batch headers they read
 * (recovery.c): the resolver's load line after a start.
 */
extern uint64 kp_recovery_snapshots_used;
extern uint64 kp_recovery_batches_walked;

/*
 * The outcome of a SQL transaction that has no marker yet, from the commit
 * log: OPEN while it runs (or is the caller's own), else COMMITTED or
 * ABORTED (a crashed one aborted).  src/txn registers it (sqltxn.c); the
 * store asks it only about transactions without a marker (the sweep,
 * recovery, readers past the last stable offset), never about decided
 * ones, which the aborted-transaction index decides (txnindex.c).
 */
typedef KpTxnOutcome (*KpSqlOutcomeCallback) (int64 producer_id);

extern void kp_log_register_sql_outcome(KpSqlOutcomeCallback callback);

/*
 * Whether the partition exists now (committed, or created by the caller's
 * own transaction): the catalog's answer, under the latest snapshot.  The
 * store asks it before it loads a partition that has segments, holding
 * the partition's load lock, once no transaction is dropping the partition
 * (a load waits for one to end): a partition whose deletion committed is
 * never loaded, whatever the caller looked up (its storage is going or
 * gone, and recovery would read it, or cut it as a torn tail; README,
 * invariant 14).  src/catalog registers it (src/main).
 */
typedef bool (*KpPartitionExistsCallback) (int64 partition_id);

extern void kp_log_register_partition_exists(KpPartitionExistsCallback callback);

/*
 * Load the partition's state now if it is not loaded (recovery.c): the
 * resolver does it for every partition after a restart, so transactions
 * cut short by a crash get their ABORT markers while the commit log still
 * covers them (src/txn/README).  Not on a standby.
 */
extern void kp_log_load_partition(int64 partition_id);

/*
 * The ids (palloc'd int64s) of this database's partitions that an error
 * left unloaded (partition.c): the resolver loads them again, holding
 * their topic's lock, so that their decided transactions get their markers
 * without waiting for an append.
 */
extern List *kp_log_unloaded_partitions(void);

/* Ask the resolver to run (sets its latch); the resolver registers it. */
extern void kp_resolver_wakeup(void);
extern void kp_store_set_resolver_latch(Latch *latch);
extern void kp_resolver_set_idle(bool idle);

/*
 * Processes that wait for appends (listener workers with parked requests)
 * register their latch once and flag when they are waiting; every append
 * then sets the latches of the waiting ones.  Parked fetches wait by
 * partition instead (below), and need no flag.
 */
extern int	kp_log_register_append_waiter(Latch *latch);
extern void kp_log_set_append_waiter(int slot, bool waiting);

/* Wake every waiting process (group changes use it too). */
extern void kp_log_wake_waiters(void);

/*
 * Waiting by partition (parked fetches): a partition of this database has a
 * wait bucket, whose change count moves whenever the partition's offsets
 * change (an append, a marker, DeleteRecords, retention).  A waiter reads
 * the count before it reads the partition, then watches the bucket: its
 * latch is set at the next change.  kp_log_watch_wait_bucket returns the
 * count as of the moment the watch began (compare it with what was read:
 * a change in between sets no latch).
 */
#define KP_FETCH_WAIT_BUCKETS	4096

extern int	kp_log_wait_bucket(int64 partition_id);
extern uint64 kp_log_wait_bucket_changes(int bucket);
extern uint64 kp_log_watch_wait_bucket(int slot, int bucket, bool watch);

/*
 * Wake the waiters of a partition's bucket (or of a bucket) without a change
 * of its offsets: share groups' records that became acquirable again
 * (src/share/wake.c).
 */
extern void kp_log_wake_partition(int64 partition_id);
extern void kp_log_wake_wait_bucket(int bucket);

/* ---------- the in-sync replicas (isr.c, docs/replication.md) ---------- */

/* What the in-sync replicas have, as a WAL position. */
typedef struct KpIsrPosition
{
	XLogRecPtr	flushed;		/* flushed here (GetFlushRecPtr) */
	bool		sync_wait;		/* synchronous_standby_names is in effect and
								 * synchronous_commit asks for standbys */
	XLogRecPtr	sync_confirmed; /* the synchronous standbys' confirmed
								 * position (meaningful when sync_wait) */
	XLogRecPtr	confirmed;		/* what every in-sync replica has: flushed, or
								 * the smaller of the two */
} KpIsrPosition;

extern void kp_isr_position(KpIsrPosition *pos);

/*
 * Have this process's latch set once the in-sync replicas have lsn (isr.c):
 * KP_ISR_NOW, they have it already, or it is not flushed here yet (the
 * caller flushes), or no synchronous standby is waited for: look again now;
 * KP_ISR_ARMED, a walsender sets the latch once the synchronous standbys
 * confirm it (the process is in core's sync rep queue, without sleeping
 * there; at most one position at a time: a call for a later one keeps the
 * earlier, a call for an earlier one replaces it); KP_ISR_POLL, nothing
 * will wake the process (a hot standby's replay, or a PostgreSQL whose
 * queue layout isr.c does not know): look again soon.
 * kp_isr_wake_cancel leaves the queue.
 */
typedef enum KpIsrWake
{
	KP_ISR_NOW,
	KP_ISR_ARMED,
	KP_ISR_POLL
} KpIsrWake;

extern KpIsrWake kp_isr_wake_at(XLogRecPtr lsn);
extern void kp_isr_wake_cancel(void);

/* Everything inserted into the WAL so far, as a position XLogFlush accepts. */
extern XLogRecPtr kp_xlog_insert_end(void);

/* A streaming standby (its walsender). */
typedef struct KpIsrStandby
{
	int			pid;			/* its walsender's pid */
	int			walsnd_index;
	XLogRecPtr	flush;			/* what it reported flushed */
} KpIsrStandby;

/*
 * The standbys PostgreSQL counts as synchronous now (pg_stat_replication's
 * 'sync', or 'quorum' under ANY): palloc'd array, count returned;
 * *required is how many of them a synchronous commit waits for (num_sync),
 * 0 when synchronous replication is not in effect.
 */
extern int	kp_isr_standbys(KpIsrStandby **out, int *required);

/* In-sync replicas for min.insync.replicas: 1 + the standbys acks=all waits for. */
extern int	kp_isr_count(void);

/* Every streaming walsender (the replicas). */
extern int	kp_replica_standbys(KpIsrStandby **out);

/* ---------- reading ---------- */

/* Offsets of a partition as readers see them now. */
typedef struct KpLogOffsets
{
	int64		log_start_offset;
	int64		log_end_offset;
	int64		high_watermark; /* <= log_end_offset: what every in-sync
								 * replica has (isr.c); = log_end_offset on a
								 * standby */
	int64		last_stable_offset; /* <= log_end_offset; the wire takes
									 * kp_client_lso() */
	int64		unreplicated_txn_offset;	/* the first offset of a
											 * transaction whose marker is not
											 * below high_watermark;
											 * PG_INT64_MAX if none */
	int64		size_bytes;
	int32		segment_count;
	XLogRecPtr	hw_next_lsn;	/* the WAL position the in-sync replicas must
								 * reach for the high watermark to move (the
								 * oldest append not known to be on them);
								 * invalid when it is at the log end, and on a
								 * standby */

	/*
	 * For the store's readers (reader.c): the active segment and its data
	 * bytes, published with the offsets above (InvalidOid on a standby). The
	 * blocks that hold those bytes exist, so a reader of that segment needs
	 * no smgrnblocks() (an lseek, and an open() of the file in each
	 * transaction) before it reads them.
	 */
	Oid			active_relnode;
	int64		active_size;
} KpLogOffsets;

/*
 * The last stable offset Kafka clients see: never past the high watermark,
 * nor past a transaction whose marker is not yet on every in-sync replica
 * (Kafka's first unstable offset: a consumer reads a transaction as decided
 * only once its decision would survive a failover).  SQL readers see
 * PostgreSQL's visibility instead (last_stable_offset, the commit log).
 */
static inline int64
kp_client_lso(const KpLogOffsets *off)
{
	return Min(Min(off->last_stable_offset, off->high_watermark), off->unreplicated_txn_offset);
}

extern void kp_log_offsets(int64 partition_id, KpLogOffsets *out);

/*
 * Whether the partition has, or can be given now, its state in shared
 * memory (kafka.max_partitions entries for the whole server): the wire
 * handlers answer KAFKA_STORAGE_ERROR for a partition without room instead
 * of the ERROR its first use would raise.
 */
extern bool kp_log_has_room(int64 partition_id);

/*
 * !kp_log_has_room, with a WARNING for the DBA (at most once a minute per
 * process) whose detail says what the caller does instead.
 */
extern bool kp_log_no_room(int64 partition_id, const char *detail);

/*
 * A reader over a partition's batches from a starting offset: returns whole
 * batches in offset order, the first being the one that contains
 * from_offset (Kafka's Fetch semantics).  Never returns batches at or past
 * the high watermark.
 */
typedef struct KpLogReader KpLogReader;

extern KpLogReader *kp_log_reader_open(int64 partition_id, int64 from_offset);

/*
 * Next batch: a palloc'd copy in *batch (valid until the next call or
 * close), its length in *len.  Returns false at the end of what is
 * readable now.
 */
extern bool kp_log_reader_next(KpLogReader *reader, const char **batch, size_t *len);
extern void kp_log_reader_close(KpLogReader *reader);

/*
 * The read_committed cursor (KIP-98): one algorithm for both front doors,
 * written down at the top of reader.c.
 *
 * kp_log_cursor_open: a reader as above, with an isolation level.
 * kp_log_cursor_next: the next batch and what a consumer makes of it.
 * read_uncommitted: every batch up to the high watermark, markers CONTROL,
 * the rest VISIBLE.  read_committed: data batches of aborted transactions
 * are ABORTED, and the cursor ends before the first batch of a transaction
 * that may still commit (the last stable offset, or for a SQL transaction
 * the commit log's answer past it).
 *
 * kp_log_cursor_aborted: the aborted transactions whose batches may lie in
 * [from, upper_bound): Fetch's aborted_transactions, collected from the
 * aborted-transaction indexes of the segments from the one holding from, as
 * Kafka's collectAbortedTransactions does.  A palloc'd array; returns how
 * many.
 */
typedef enum KpIsolation
{
	KP_READ_UNCOMMITTED = 0,
	KP_READ_COMMITTED = 1
} KpIsolation;

typedef enum KpBatchVisibility
{
	KP_BATCH_VISIBLE,			/* a consumer shows its records */
	KP_BATCH_ABORTED,			/* of an aborted transaction: not shown */
	KP_BATCH_CONTROL			/* a COMMIT/ABORT marker: never shown */
} KpBatchVisibility;

typedef struct KpAbortedTxn
{
	int64		producer_id;
	int64		first_offset;
	int64		last_offset;	/* its ABORT marker */
} KpAbortedTxn;

extern KpLogReader *kp_log_cursor_open(int64 partition_id, int64 from_offset,
									   KpIsolation isolation);

/*
 * kp_log_cursor_open with the partition's offsets the caller has just read
 * (kp_log_offsets), which it would otherwise read again (on a primary;
 * a hot standby reads its own).
 */
extern KpLogReader *kp_log_cursor_open_at(int64 partition_id, int64 from_offset,
										  KpIsolation isolation,
										  const KpLogOffsets *off);
extern bool kp_log_cursor_next(KpLogReader *reader, const char **batch, size_t *len,
							   KpBatchVisibility *visibility);
extern int	kp_log_cursor_aborted(KpLogReader *reader, int64 from, int64 upper_bound,
								  KpAbortedTxn **aborted);

/*
 * kp_log_cursor_next without the reader's own copy: the next batch is
 * appended to dst straight from the segment's pages (dst grows once per
 * batch, to the batch's size), *hdr gets its header.  Returns false at the
 * end, and also when the next batch is larger than max_len (-1: any size):
 * then nothing is appended and the cursor stays before it (Fetch's byte
 * limits).
 */
extern bool kp_log_cursor_next_into(KpLogReader *reader, StringInfo dst, int64 max_len,
									KpBatchHeader *hdr, KpBatchVisibility *visibility);

/* The reader stops before any batch starting at or past bound (Fetch's LSO). */
extern void kp_log_reader_set_bound(KpLogReader *reader, int64 bound);

/*
 * First offset whose record timestamp is >= ts (ms), or -1 when none;
 * *found_ts gets that record's timestamp.
 */
extern int64 kp_log_offset_for_timestamp(int64 partition_id, int64 ts, int64 *found_ts);

/* Largest timestamp in the log and its offset (ListOffsets -3); -1 if empty. */
extern int64 kp_log_max_timestamp(int64 partition_id, int64 *max_ts);

/*
 * Leader epochs (docs/replication.md): every batch is stamped with the epoch
 * of the leader that appended it.  The epoch of the batch holding offset
 * (current when none does), and the end offset of an epoch: the first
 * offset of a later one, else log_end_offset.
 */
extern int32 kp_log_epoch_at(int64 partition_id, int64 offset, int32 current);
extern int64 kp_log_epoch_end_offset(int64 partition_id, int32 epoch, int64 log_end_offset);

/*
 * The producers a partition knows (DescribeProducers, KIP-664): the
 * idempotent producers it tracks with their last batch, and the producers of
 * the transactions open in it (SQL ones included).  Returns how many;
 * *producers palloc'd.  Nothing on a standby.  (producer_info.c)
 */
typedef struct KpProducerInfo
{
	int64		producer_id;
	int16		producer_epoch;
	int32		last_sequence;	/* -1: none */
	int64		last_offset;	/* of its last batch, or of the marker that
								 * bumped its epoch; -1: none */
	int64		txn_start_offset;	/* -1: no open transaction */
} KpProducerInfo;

extern int	kp_log_producers(int64 partition_id, KpProducerInfo **producers);

/* The segments of a partition, for the kafka.segments view. */
typedef struct KpSegmentStat
{
	int64		base_offset;
	Oid			relfilenode;
	int64		size_bytes;
} KpSegmentStat;

extern KpSegmentStat *kp_log_segment_stats(int64 partition_id, int *nsegs);

/* ---------- dropping ---------- */

/* Drop the segment directory when the current transaction commits. */
extern void kp_store_drop_directory(void);
extern void kp_store_forget_database(void);

/*
 * Drop all storage of a partition when the current transaction commits.
 * Marks the partition's entry as being dropped by this transaction and
 * waits out a load in progress: a load that comes later waits for the end
 * of the transaction, and then finds the partition gone (or, after an
 * abort, there).
 */
extern void kp_log_drop_partition(int64 partition_id);

/* ---------- SQL transaction producer ids ---------- */

/*
 * Batches written on behalf of a SQL (sub)transaction carry a producer id
 * derived from its FullTransactionId with this bit set, so the commit log is
 * the source of truth for their visibility (docs/architecture.md).
 */
#define KP_SQL_PID_FLAG		(INT64CONST(1) << 62)
#define KpPidIsSqlXact(pid)	((pid) >= 0 && ((pid) & KP_SQL_PID_FLAG) != 0)
#define KpPidGetFullXid(pid) FullTransactionIdFromU64((uint64) ((pid) & ~KP_SQL_PID_FLAG))

/*
 * Testing only (kafka.debug_reader_pause_lock): readers wait for a shared
 * advisory lock on this key just after listing their segments; 0: never.
 */
extern int	kp_debug_reader_pause_lock;
extern bool kp_debug_ignore_prodsnap;	/* recovery.c */
extern bool kp_debug_fail_marker_index; /* txnstate.c */

/* ---------- deleting records (logstart.c) ---------- */

/*
 * Kafka's DeleteRecords (KIP-107): raise the partition's log start offset to
 * before_offset (-1: the high watermark), durably and replicated; the
 * segments that end at or below it leave the log at once, and their storage
 * is dropped file.delete.delay.ms later (kp_log_drop_replaced_segments).
 * ERROR KP001 (OFFSET_OUT_OF_RANGE) when before_offset is negative or past
 * the high watermark; an offset at or below the log start changes nothing.
 * *new_log_start gets the log start offset afterwards (the low watermark).
 * Readers never return offsets below the log start; kp_log_offsets reports it.
 */
extern void kp_log_delete_records(int64 partition_id, int64 before_offset,
								  int64 *new_log_start);

/* ---------- retention (retention.c) ---------- */

typedef struct KpRetentionResult
{
	int32		segments_deleted;	/* by retention.ms or retention.bytes */
	int64		bytes_deleted;
	int64		log_start_offset;	/* afterwards */
} KpRetentionResult;

/*
 * Kafka's retention for one partition (cleanup.policy=delete): delete the
 * oldest closed segments whose largest timestamp is more than retention_ms
 * before now_ms, and while the partition without them is still at least
 * retention_bytes large (-1: no limit); never the active segment.  The log
 * start offset moves durably to the first kept segment, the segments leave
 * the log with it, and their storage is dropped file.delete.delay.ms later
 * (kp_log_drop_replaced_segments).  The caller holds the topic lock
 * DeleteRecords takes.
 */
extern void kp_log_apply_retention(int64 partition_id, int64 retention_ms,
								   int64 retention_bytes, int64 now_ms,
								   KpRetentionResult *result);

/* ---------- compaction (compaction.c) ---------- */

/* A compacted topic's configs and the cleaner's settings, for one clean. */
typedef struct KpCompactConfig
{
	int64		segment_bytes;	/* segment.bytes: cleaned groups stay below */
	int64		delete_retention_ms;	/* delete.retention.ms */
	int64		min_compaction_lag_ms;	/* min.compaction.lag.ms */
	int64		max_compaction_lag_ms;	/* max.compaction.lag.ms */
	double		min_cleanable_dirty_ratio;	/* min.cleanable.dirty.ratio */
	int64		dedupe_buffer_size; /* kafka.log_cleaner_dedupe_buffer_size */
	double		io_max_bytes_per_second;	/* kafka.log_cleaner_io_max_...,
											 * <=0 unlimited */
	bool		delete_horizon_due; /* a tombstone's or marker's delete
									 * horizon has passed: clean even if the
									 * dirty ratio is low */
} KpCompactConfig;

/* What one compaction of a partition found and did. */
typedef struct KpCompactResult
{
	bool		cleaned;		/* segments were rewritten and swapped */
	bool		forced;			/* by max.compaction.lag.ms or a horizon */
	int64		first_dirty_offset; /* before the clean */
	int64		first_uncleanable_offset;
	int64		end_offset;		/* cleaned below this: the new first dirty
								 * offset */
	double		dirty_ratio;	/* dirty / cleanable bytes, before */
	int64		bytes_before;	/* data bytes of the rewritten segments */
	int64		bytes_after;	/* ... of the cleaned segments replacing them */
	int32		segments_before;
	int32		segments_after;
	int64		records_removed;
	int64		next_delete_horizon_ms; /* earliest horizon of a tombstone or
										 * marker kept, or -1 */
} KpCompactResult;

/*
 * Kafka's log compaction of one partition (Cleaner.doClean): if its dirty
 * part is cleanable (src/store/compaction.c has the rules), rewrite the
 * closed segments from the log start to the end of what the offset map
 * covers, keeping each key's latest record at its offset, and swap them in
 * atomically.  Not transactional: the swap is durable once done, whatever
 * becomes of the caller's transaction.  The caller holds the topic's
 * ShareUpdateExclusiveLock.  The replaced segments' storage is dropped by
 * kp_log_drop_replaced_segments, later (file.delete.delay.ms).
 */
extern void kp_log_compact(int64 partition_id, const KpCompactConfig *config,
						   int64 now_ms, KpCompactResult *result);

/*
 * Drop, when the current transaction commits, the storage of the segments
 * that left the partition's log (replaced by a clean, or wholly below the
 * log start after DeleteRecords or retention) at least delay_ms ago (the
 * topic's file.delete.delay.ms; all of them at the first call after a
 * restart); returns how many.  src/store/logstart.c has the rules.  The
 * caller holds the topic's ShareUpdateExclusiveLock.
 */
extern int	kp_log_drop_replaced_segments(int64 partition_id, int64 delay_ms);

/*
 * The partition's first dirty offset (Kafka's cleaner checkpoint): every
 * record below it has been through a clean, so at most one record per key
 * (and tombstones younger than their delete horizon) lies below it, while
 * the dirty tail from it on may hold older values of a key.  The log start
 * offset if no clean has run.  Reads the directory only (works on a standby).
 */
extern int64 kp_log_first_dirty_offset(int64 partition_id);

#endif							/* KP_STORE_H */
