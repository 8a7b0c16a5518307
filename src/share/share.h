/*-------------------------------------------------------------------------
 *
 * share.h
 *	  Share groups (KIP-932): the whole public face of src/share.
 *
 * Membership (ShareGroupHeartbeat), acquisition of records under a lock,
 * acknowledgement, and the group configs that steer them.  The state is
 * rows (src/catalog/share.c) and the rules are in src/share/README.  Every
 * function runs in the caller's transaction and returns a Kafka error code.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_SHARE_H
#define KP_SHARE_H

#include "postgres.h"

#include "access/xlogdefs.h"

#include "catalog/kafka_catalog.h"
#include "group/group.h"
#include "utils/timestamp.h"

/* ---------- membership ---------- */

typedef struct KpShareHeartbeatArgs
{
	const char *group_id;
	const char *member_id;
	int32		member_epoch;	/* 0 join, -1 leave */
	const char *rack_id;
	int			nsubscribed;	/* -1: unchanged */
	char	  **subscribed;
	const char *client_id;
	const char *client_host;
	bool		keep_records;	/* leaving: the member's share session is
								 * still open, and its end releases them */
} KpShareHeartbeatArgs;

typedef struct KpShareHeartbeatResult
{
	char	   *error_message;
	int32		member_epoch;
	int32		heartbeat_interval_ms;
	bool		send_assignment;
	int			nassigned;		/* (topic, partition) pairs, sorted */
	char	  **assigned_topics;
	int32	   *assigned_partitions;
} KpShareHeartbeatResult;

extern int16 kp_share_heartbeat(const KpShareHeartbeatArgs *args, KpShareHeartbeatResult *result);

typedef struct KpShareMemberInfo
{
	char	   *member_id;
	char	   *rack_id;
	int32		member_epoch;
	char	   *client_id;
	char	   *client_host;
	int			nsubscribed;
	char	  **subscribed;
	int			nassigned;
	char	  **assigned_topics;
	int32	   *assigned_partitions;
} KpShareMemberInfo;

typedef struct KpShareGroupInfo
{
	bool		exists;
	char	   *state;			/* Empty or Stable */
	int32		group_epoch;
	int			nmembers;
	KpShareMemberInfo *members;
} KpShareGroupInfo;

extern void kp_share_describe(const char *group_id, KpShareGroupInfo *info);

/* Share groups, sorted, with their states; how many. */
extern int	kp_share_list(char ***group_ids, char ***states);

/* DeleteGroups: NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND */
extern int16 kp_share_delete_group(const char *group_id);

/* ---------- records ---------- */

typedef struct KpShareAcquired
{
	bool		busy;			/* the share-partition was held by another */
	int			n;				/* acquired records, by offset */
	int64	   *offsets;
	int16	   *delivery_counts;
	XLogRecPtr	hw_next_lsn;	/* a wire acquirer: the WAL position that
								 * moves the high watermark past records it
								 * could not take yet (kp_log_offsets), else
								 * invalid */
} KpShareAcquired;

/*
 * Acquire up to max_records records of one partition for member_id
 * (record_limit: exactly at most max_records; else whole batches, at least
 * max_records when there are that many).  holder_xid: the SQL transaction
 * the records are acquired for (0: none, the wire, which reads only up to
 * the high watermark, where SQL reads up to the log end); wait: wait for the
 * share-partition's row lock rather than skip the partition (only for a
 * caller holding no other share lock: the share acquirer).
 */
extern int16 kp_share_acquire(const char *group_id, const KpTopic *topic, int32 partition,
							  const char *member_id, int max_records, bool record_limit,
							  uint64 holder_xid, bool wait, KpShareAcquired *out);

/*
 * The batches of a partition that hold the acquired offsets (sorted), as
 * one byte string, stopping after max_bytes (but never before the first
 * batch).
 */
extern void kp_share_read_batches(int64 partition_id, const KpShareAcquired *acq,
								  int64 max_bytes, StringInfo out);

/* Kafka's AcknowledgeType */
#define KP_ACK_GAP		0
#define KP_ACK_ACCEPT	1
#define KP_ACK_RELEASE	2
#define KP_ACK_REJECT	3
#define KP_ACK_RENEW	4

/*
 * Acknowledge [first, last]: types has ntypes entries (1: for all).
 * INVALID_RECORD_STATE when a record of the range is not acquired by
 * member_id (what was acquired by it is acknowledged anyway).  move_start:
 * move SPSO now if the share-partition is free; a SQL caller's transaction,
 * which may last, must not (it would hold the share-partition's row lock).
 */
extern int16 kp_share_acknowledge(const char *group_id, const char *topic, int32 partition,
								  const char *member_id, int64 first, int64 last,
								  int ntypes, const int8 *types, bool move_start);

/* ---------- the share acquirer: SQL acquisitions committed on their own ---------- */

/* The most records one request to the share acquirer returns. */
#define KP_SHARE_ACQUIRER_MAX_RECORDS 500
#define KP_SHARE_ACQUIRERS 2

extern Size kp_share_acquirer_shmem_size(void);
extern void kp_share_acquirer_shmem_init(void);
extern void kp_share_acquirer_register(void);

/*
 * Acquire up to max_records (at most KP_SHARE_ACQUIRER_MAX_RECORDS) records
 * of one partition for member_id and this backend's transaction, in a
 * transaction of the share acquirer's own that commits before this returns.
 * Raises an ERROR when the acquirer fails or is not running.
 */
extern int16 kp_share_acquire_for_sql(const char *group_id, const char *topic, int32 partition,
									  const char *member_id, int max_records, KpShareAcquired *out);

/*
 * Release every record member_id holds (its share session ended); the parked
 * ShareFetches of the partitions it held records of are woken at commit.
 */
extern void kp_share_release_member(const char *group_id, const char *member_id);

/* ---------- waking parked ShareFetches (wake.c) ---------- */

/*
 * While a lock deadline noted is still to come but may have been overwritten
 * in the hint, a parked ShareFetch looks again this often.
 */
#define KP_SHARE_EXPIRY_POLL_MS 500

extern Size kp_share_wake_shmem_size(void);
extern void kp_share_wake_shmem_init(void);

/* An acquisition lock of this partition ends at deadline. */
extern void kp_share_note_lock_deadline(int64 partition_id, TimestampTz deadline);

/*
 * When a ShareFetch parked on this partition should look again for expired
 * locks (0: no lock to wait for).
 */
extern TimestampTz kp_share_expiry_timer(int64 partition_id, TimestampTz now);

/* Wake the fetches parked on a partition when this transaction commits / aborts. */
extern void kp_share_wake_at_commit(int64 partition_id);
extern void kp_share_wake_at_abort(int64 partition_id);

/* A partition's id, -1 when the topic or partition does not exist. */
extern int64 kp_share_partition_id(const char *topic, int32 partition);

/* The lock duration that applies to the group (ms). */
extern int32 kp_share_lock_duration_ms(const char *group_id);

/* ---------- admin: share-group offsets ---------- */

/* SPSO of a share-partition, -1 when it has none */
extern int64 kp_share_start_offset(const char *group_id, const char *topic, int32 partition);

/*
 * Records from SPSO to the log end not yet acknowledged or archived (the
 * markers of the window not counted); -1: no state
 */
extern int64 kp_share_lag(const char *group_id, const char *topic, int32 partition);

/* Share-partitions with state: topics, partitions, SPSOs (sorted); how many. */
extern int	kp_share_partitions(const char *group_id, char ***topics, int32 **partitions,
								int64 **start_offsets);

extern bool kp_share_group_exists_for_admin(const char *group_id);

/*
 * The admin offset APIs act on groups without members: NON_EMPTY_GROUP when
 * it has some, GROUP_ID_NOT_FOUND when it is another kind of group or (unless
 * create) does not exist.  Takes the group's lock.
 */
extern int16 kp_share_admin_check_empty(const char *group_id, bool create);

/* AlterShareGroupOffsets: SPSO = start_offset, clamped to the log */
extern int16 kp_share_alter_start_offset(const char *group_id, const KpTopic *topic, int32 partition,
										 int64 start_offset);

/* DeleteShareGroupOffsets: a topic's share-partitions forgotten */
extern void kp_share_delete_topic_state(const char *group_id, const char *topic);

/* ---------- configs ---------- */

/* DescribeConfigs of a group: the share.* configs applied here (palloc'd); how many. */
extern int	kp_share_describe_configs(const char *group_id, KpGroupConfigEntry **entries);

/*
 * A share.* group config for kp_group_alter_configs: NULL when value is
 * valid, else the message (INVALID_CONFIG); *known false when name is not
 * one kafka_pg applies.
 */
extern char *kp_share_config_check(const char *name, const char *value, bool *known);

extern int	kp_share_record_lock_duration_ms;
extern int	kp_share_delivery_count_limit;
extern int	kp_share_session_timeout_ms;
extern int	kp_share_heartbeat_interval_ms;
extern void kp_share_init_gucs(void);

#endif							/* KP_SHARE_H */
