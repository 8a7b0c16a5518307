/*-------------------------------------------------------------------------
 *
 * share_catalog.h
 *	  The SQL on the share-group tables (kafka.share_groups,
 *	  share_group_members, share_partitions, share_records): the only code
 *	  that touches them, src/catalog/share.c.  The rules are src/share's
 *	  (src/share/README).  Every function runs in the caller's transaction.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_SHARE_CATALOG_H
#define KP_SHARE_CATALOG_H

#include "postgres.h"

/* Kafka's RecordState codes */
#define KP_SHARE_AVAILABLE		0
#define KP_SHARE_ACQUIRED		1
#define KP_SHARE_ACKNOWLEDGED	2
#define KP_SHARE_ARCHIVED		4

/* true when group_id is a classic or consumer group (kafka.consumer_groups) */
extern bool kp_cat_share_is_other_group(const char *group_id);

/* true when it is a share group */
extern bool kp_cat_share_group_exists(const char *group_id);

/*
 * Lock the share group's row (creating it when create); returns its epoch,
 * or -1 when it does not exist and !create.
 */
extern int32 kp_cat_share_group_lock(const char *group_id, bool create);
extern void kp_cat_share_group_set_epoch(const char *group_id, int32 epoch);
extern void kp_cat_share_group_delete(const char *group_id);

typedef struct KpShareMemberRow
{
	char	   *member_id;
	int32		member_epoch;
	char	   *client_id;
	char	   *client_host;
	char	   *rack_id;		/* NULL: none */
	int			nsubscribed;
	char	  **subscribed;
	char	   *assigned;		/* 'topic:0,1|other:3' */
} KpShareMemberRow;

/* false when not a member */
extern bool kp_cat_share_member_read(const char *group_id, const char *member_id,
									 KpShareMemberRow *row);
extern void kp_cat_share_member_upsert(const char *group_id, const KpShareMemberRow *row);
extern void kp_cat_share_member_touch(const char *group_id, const char *member_id);
extern void kp_cat_share_member_delete(const char *group_id, const char *member_id);

/* Delete the members silent for longer than session_ms; their ids, how many. */
extern int	kp_cat_share_members_expire(const char *group_id, int32 session_ms, char ***member_ids);
extern int	kp_cat_share_members(const char *group_id, KpShareMemberRow **rows);

/* Every share group id, sorted; how many. */
extern int	kp_cat_share_groups_list(char ***group_ids, int32 **epochs);

/*
 * Release a member's acquired records (not those locked by others now): the
 * topics and partitions they were of, how many.
 */
extern int	kp_cat_share_release_member(const char *group_id, const char *member_id,
										char ***topics, int32 **partitions);

/*
 * Lock a share-partition (FOR UPDATE SKIP LOCKED; with wait, FOR UPDATE:
 * only for callers that hold no other share lock), creating it at
 * init_offset when it does not exist (unless init_offset < 0).  false when
 * someone else holds it (not with wait) or it does not exist.  State left by a topic of
 * the same name that was deleted (another topic_id; -1: do not check) is
 * dropped and the share-partition starts over at init_offset.
 */
extern bool kp_cat_share_partition_lock(const char *group_id, const char *topic, int32 partition,
										int32 topic_id, int64 init_offset, bool wait,
										int64 *start_offset, int64 *end_offset);

/*
 * Under the share-partition's lock: expired locks, and records held by a
 * SQL transaction that aborted (acq_xid), back to available; available
 * records at the delivery limit archived; returns how many were
 * archived.
 */
extern int64 kp_cat_share_expire(const char *group_id, const char *topic, int32 partition,
								 int32 delivery_limit);

/* A run of offsets [first, last] acquired with one delivery count */
typedef struct KpShareRun
{
	int64		first;
	int64		last;
	int16		delivery_count;
} KpShareRun;

/*
 * Under the lock: take up to max available records, lowest offsets first,
 * whole runs, the last one split when it holds more than what is left of
 * max (the rest stays available); returns how many runs (palloc'd, by
 * offset, with their new delivery counts).  holder_xid: the SQL
 * transaction the records are acquired for (a FullTransactionId; 0 for
 * the wire), kept in acq_xid.
 */
extern int	kp_cat_share_take_available(const char *group_id, const char *topic, int32 partition,
										const char *member_id, uint64 holder_xid, int32 lock_ms, int max,
										KpShareRun **runs);

/* Under the lock: records [first, last] acquired for the first time (one run). */
extern void kp_cat_share_take_new(const char *group_id, const char *topic, int32 partition,
								  const char *member_id, uint64 holder_xid, int32 lock_ms,
								  int64 first, int64 last);

/*
 * Under the lock: SPEO becomes end_offset (and SPSO at least min_start:
 * the log start), SPSO moves up to the first record still available or
 * acquired, the runs wholly behind it go (a run SPSO lands in, when the log
 * start moved past old_start, is cut at it); archived is added to the
 * count.  Returns SPSO (-1: no state).
 */
extern int64 kp_cat_share_partition_advance(const char *group_id, const char *topic, int32 partition,
											int64 end_offset, int64 min_start, int64 archived,
											int64 old_start);

/*
 * Merge the acknowledged or archived runs around [lo, hi] that follow each
 * other (same state and delivery count, nothing but done offsets between
 * them) into one row; what another transaction holds is left alone.
 */
extern void kp_cat_share_merge_done(const char *group_id, const char *topic, int32 partition,
									int64 lo, int64 hi);

/*
 * Acknowledge [first, last] for member: types has ntypes entries (1: the
 * whole range; else one per offset), Kafka's AcknowledgeType (0 gap,
 * 1 accept, 2 release, 3 reject, 4 renew; lock_ms: the new lock of a
 * renew).  Only records acquired by the member (and not held for a SQL
 * transaction that aborted) and not locked by someone else change: a run
 * partly acknowledged is split.  A run skipped because another transaction
 * held it is tried again twice, 1 and 2 ms later (a concurrent
 * acknowledgement of another part of it splits it).  Returns how many
 * records changed.
 */
extern int64 kp_cat_share_acknowledge(const char *group_id, const char *topic, int32 partition,
									  const char *member_id, int64 first, int64 last,
									  int ntypes, const int8 *types, int32 lock_ms);

/* Share-partitions of a group: topics, partitions, SPSO; how many. */
extern int	kp_cat_share_partitions(const char *group_id, char ***topics, int32 **partitions,
									int64 **start_offsets);

/*
 * SPSO, SPEO and how many records of the window are still to be delivered
 * or acknowledged (available or acquired); false: no state
 */
extern bool kp_cat_share_partition_stats(const char *group_id, const char *topic, int32 partition,
										 int64 *start_offset, int64 *end_offset, int64 *pending);

/* Set SPSO (AlterShareGroupOffsets; the in-flight window is dropped). */
extern void kp_cat_share_partition_reset(const char *group_id, const char *topic, int32 partition,
										 int32 topic_id, int64 start_offset);

/* Delete a group's share-partition state (topic NULL: all of it). */
extern void kp_cat_share_partition_delete(const char *group_id, const char *topic, int32 partition);

#endif							/* KP_SHARE_CATALOG_H */
