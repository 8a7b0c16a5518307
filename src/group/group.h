/*-------------------------------------------------------------------------
 *
 * group.h
 *	  The group coordinator: the whole public face of src/group.
 *
 * Consumer groups of the classic protocol (JoinGroup / SyncGroup /
 * Heartbeat / LeaveGroup, KIP-345 static membership), of the consumer
 * protocol (KIP-848), and committed offsets.  The state lives in the
 * catalog (kafka.consumer_groups, group_members, committed_offsets, read
 * and written through src/catalog/groups.c and offsets.c) and every
 * operation that changes a group takes the group's row lock (see README),
 * so the listener workers and SQL sessions are one coordinator, whichever
 * process a request lands in.  Operations that must wait (a JoinGroup until the
 * group's members have joined, a follower's SyncGroup until the leader's
 * assignment) return wait = true with a deadline; the caller retries then
 * or when kp_group_wakeup() fires.
 *
 * Every function returns a Kafka error code (KP_ERR_*); they run inside
 * the caller's transaction.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_GROUP_H
#define KP_GROUP_H

#include "postgres.h"

#include "datatype/timestamp.h"

#include "catalog/kafka_catalog.h"	/* KpBlob; the group tables' rows */

typedef struct KpJoinArgs
{
	const char *group_id;
	const char *member_id;		/* "" for a new member */
	const char *group_instance_id;	/* NULL: dynamic member */
	const char *client_id;
	const char *client_host;
	int32		session_timeout_ms;
	int32		rebalance_timeout_ms;
	const char *protocol_type;
	int			nprotocols;
	const char **protocol_names;
	const KpBlob *protocol_metadata;
	bool		require_known_member_id;	/* JoinGroup v4+ (KIP-394) */
	const char *retry_member_id;	/* set on a retry: the id given out before */
} KpJoinArgs;

typedef struct KpJoinMember
{
	char	   *member_id;
	char	   *group_instance_id;
	KpBlob		metadata;
} KpJoinMember;

typedef struct KpJoinResult
{
	int32		generation_id;
	char	   *protocol_type;
	char	   *protocol_name;
	char	   *leader_id;
	char	   *member_id;
	bool		skip_assignment;	/* static leader rejoined a stable group */
	int			nmembers;		/* for the leader */
	KpJoinMember *members;
	bool		wait;			/* not complete yet: call again */
	int64		wait_until_ms;	/* ... at the latest then (Unix ms) */
} KpJoinResult;

extern int16 kp_group_join(const KpJoinArgs *args, KpJoinResult *result);

typedef struct KpSyncAssignment
{
	const char *member_id;
	KpBlob		assignment;
} KpSyncAssignment;

extern int16 kp_group_sync(const char *group_id, const char *member_id,
						   const char *group_instance_id, int32 generation_id,
						   int nassignments, const KpSyncAssignment *assignments,
						   bool final_attempt, KpBlob *assignment,
						   char **protocol_type, char **protocol_name,
						   bool *wait, int64 *wait_until_ms);

extern int16 kp_group_heartbeat(const char *group_id, const char *member_id,
								const char *group_instance_id, int32 generation_id);

extern int16 kp_group_leave(const char *group_id, const char *member_id,
							const char *group_instance_id);

/*
 * Offsets.  kp_group_commit_offsets is the one writer of committed offsets,
 * for every kind of committer, and applies the committer's fence first:
 *
 * - KP_COMMIT_WIRE (OffsetCommit): a classic member with its generation, a
 *   consumer-protocol member with its member epoch (STALE_MEMBER_EPOCH),
 *   or a simple commit (no member id, generation -1: assign() consumers)
 *   while the group has no members;
 * - KP_COMMIT_SQL_MEMBER (kafka.group_poll): a consumer-protocol member with
 *   the member epoch its assignment was read at;
 * - KP_COMMIT_SQL_SESSION (kafka.consume): no member; only partitions that
 *   no member holds by its current assignment;
 * - KP_COMMIT_TRANSACTION (src/txn, at a transaction's COMMIT decision): no
 *   fence now; TxnOffsetCommit applied the wire fence when it sent them, as
 *   Kafka materializes transactional offsets at the marker.
 */
typedef enum KpCommitterKind
{
	KP_COMMIT_WIRE,
	KP_COMMIT_SQL_MEMBER,
	KP_COMMIT_SQL_SESSION,
	KP_COMMIT_TRANSACTION
} KpCommitterKind;

typedef struct KpCommitter
{
	KpCommitterKind kind;
	const char *group_id;
	const char *member_id;		/* NULL or "": none */
	const char *group_instance_id;
	int32		generation_id;	/* or the member epoch (KIP-848) */
	bool		before_v9;		/* an OffsetCommit below v9, which a KIP-848
								 * member may not use (UNSUPPORTED_VERSION) */
} KpCommitter;

typedef struct KpOffsetToCommit
{
	const char *topic;
	int32		partition;
	int64		offset;
	int32		leader_epoch;
	KpBlob		metadata;		/* bytes, NUL bytes included; len -1: null */
	int16		error_code;		/* out */
} KpOffsetToCommit;

/*
 * Returns the fence's error (then nothing is written and every item gets
 * it); else each item's error_code says whether it was stored.
 */
extern int16 kp_group_commit_offsets(const KpCommitter *committer, int n,
									 KpOffsetToCommit *offsets);

/*
 * OffsetFetch v9+ names the member asking (KIP-848): in a consumer group a
 * member id or epoch given must be a member's, at its epoch
 * (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH), as Kafka's
 * ConsumerGroup.validateOffsetFetch; neither (a null id and epoch -1: the
 * admin client) and other groups are not checked.
 */
extern int16 kp_group_check_offset_fetch(const char *group_id, const char *member_id,
										 int32 member_epoch);

/*
 * The SQL consumers' lock on a group's partition: a transaction-scoped
 * advisory lock on (hash of group and topic, partition), the tag of
 * pg_advisory_xact_lock(int4, int4), taken before the committed-offset row
 * (src/group/README, "Locks").  kafka.consume tries it (a partition another
 * session holds is skipped) and so does the wire OffsetCommit (a worker waits
 * for no SQL transaction); kafka.group_poll waits for it.
 */
extern bool kp_group_try_lock_offset(const char *group_id, const char *topic, int32 partition);
extern void kp_group_lock_offset(const char *group_id, const char *topic, int32 partition);

/* -1 when there is none; for_update locks it to the end of the transaction */
extern int64 kp_group_fetch_offset(const char *group_id, const char *topic,
								   int32 partition, bool for_update,
								   int32 *leader_epoch, KpBlob *metadata);

/* Every committed (topic, partition) of a group: arrays palloc'd. */
extern int	kp_group_committed_partitions(const char *group_id, char ***topics,
										  int32 **partitions);

/*
 * Partitions of topic that members of the group hold by their current
 * assignment (consumer-protocol assignments decoded): SQL consumers keep
 * off them.  Returns how many; *partitions palloc'd.
 */
extern int	kp_group_held_partitions(const char *group_id, const char *topic,
									 int32 **partitions);

/* Describe / list / delete */
typedef struct KpGroupMemberInfo
{
	char	   *member_id;
	char	   *group_instance_id;
	char	   *client_id;
	char	   *client_host;
	KpBlob		metadata;		/* of the chosen protocol */
	KpBlob		assignment;
} KpGroupMemberInfo;

typedef struct KpGroupInfo
{
	bool		exists;
	bool		classic;		/* a classic group, not a consumer group */
	char	   *state;			/* Kafka's: Empty, Stable, ...; Dead if none */
	char	   *protocol_type;
	char	   *protocol_name;
	int32		generation_id;
	int			nmembers;
	KpGroupMemberInfo *members;
} KpGroupInfo;

extern void kp_group_describe(const char *group_id, KpGroupInfo *info);
extern int	kp_group_list(char ***group_ids, char ***states, char ***protocol_types);
extern int16 kp_group_delete(const char *group_id);
extern int16 kp_group_offset_delete_check(const char *group_id, char *const *topics, int ntopics,
										  bool *subscribed);
extern void kp_group_delete_offset(const char *group_id, const char *topic, int32 partition);

/* ---------- the consumer protocol (KIP-848), consumer_protocol.c ---------- */

typedef struct KpCgHeartbeatArgs
{
	const char *group_id;
	const char *member_id;
	int32		member_epoch;	/* 0 join, -1 leave, -2 static leave */
	const char *instance_id;
	const char *rack_id;
	int32		rebalance_timeout_ms;
	int			nsubscribed;	/* -1: unchanged */
	char	  **subscribed;
	const char *subscribed_regex;	/* RE2/J; NULL: unchanged, "": none */
	const char *server_assignor;	/* NULL: unchanged / default */
	int			nowned;			/* -1: unchanged */
	char	  **owned_topics;	/* (topic, partition) pairs */
	int32	   *owned_partitions;
	bool		owned_unknown;	/* an owned topic id names no topic */

	/*
	 * Fence a heartbeat with an epoch below the member's, as Kafka does, but
	 * the one whose answer may have been lost (the member's previous epoch,
	 * owning no more than it was given): the wire's members.  SQL members
	 * (kafka.group_heartbeat) send no owned partitions and are not fenced.
	 */
	bool		fence_older_epoch;

	/*
	 * The member holds exactly its assignment as the coordinator keeps it
	 * (kafka.group_poll reads that at each call), so a partition taken from
	 * it is let go at once: SQL members.  A wire member holds what it
	 * reports, and, when it reports nothing, what it was given.
	 */
	bool		holds_assignment;
	const char *client_id;
	const char *client_host;
	/* who asks: a regex matches only topics this role may DESCRIBE */
	Oid			authz_role;		/* a superuser for "allowed everything" */
	const char *authz_host;		/* the client address for host ACLs; NULL:
								 * none */
} KpCgHeartbeatArgs;

typedef struct KpCgHeartbeatResult
{
	char	   *error_message;
	char	   *member_id;
	int32		member_epoch;
	int32		heartbeat_interval_ms;
	bool		send_assignment;
	int			nassigned;		/* (topic, partition) pairs */
	char	  **assigned_topics;
	int32	   *assigned_partitions;
} KpCgHeartbeatResult;

extern int16 kp_group_consumer_heartbeat(const KpCgHeartbeatArgs *args,
										 KpCgHeartbeatResult *result);

/*
 * -1 when the member is not a consumer-protocol member of the group; -2 while
 * a static member that left with epoch -2 keeps its place.
 */
extern int32 kp_group_consumer_member_epoch(const char *group_id, const char *member_id);

/*
 * A member's current assignment as (topic, partition) pairs sorted by topic
 * and partition, and its member epoch; false when it is not a member.
 */
extern bool kp_group_consumer_assignment(const char *group_id, const char *member_id,
										 int32 *member_epoch, int *n,
										 char ***topics, int32 **partitions);

typedef struct KpCgMemberInfo
{
	char	   *member_id;
	char	   *instance_id;
	char	   *rack_id;
	int32		member_epoch;
	char	   *client_id;
	char	   *client_host;
	int			nsubscribed;
	char	  **subscribed;
	char	   *subscribed_regex;	/* NULL: none */
	int			nassigned;
	char	  **assigned_topics;
	int32	   *assigned_partitions;
	int			ntarget;
	char	  **target_topics;
	int32	   *target_partitions;
} KpCgMemberInfo;

typedef struct KpCgGroupInfo
{
	bool		exists;			/* and is a consumer-protocol group */
	bool		other_type;		/* a group of another type has the id */
	char	   *state;
	int32		group_epoch;
	int32		assignment_epoch;
	char	   *assignor;
	int			nmembers;
	KpCgMemberInfo *members;
} KpCgGroupInfo;

extern void kp_group_consumer_describe(const char *group_id, KpCgGroupInfo *info);

extern int	kp_group_consumer_heartbeat_interval_ms;
extern int	kp_group_consumer_session_timeout_ms;
extern void kp_group_consumer_init_gucs(void);

/* ---------- group configs (KIP-848, config resource type GROUP), configs.c ---------- */

typedef struct KpGroupConfigEntry
{
	const char *name;
	char	   *value;			/* in effect: the group's, else the broker's */
	int8		source;			/* Kafka's ConfigSource (DEFAULT_CONFIG, ...) */
	const char *doc;
} KpGroupConfigEntry;

typedef struct KpGroupConfigOp
{
	const char *name;
	int8		op;				/* AlterConfigOp: 0 SET, 1 DELETE, ... */
	const char *value;
} KpGroupConfigOp;

/* DescribeConfigs: every config of the group (which need not exist); palloc'd. */
extern int	kp_group_describe_configs(const char *group_id, KpGroupConfigEntry **entries);

/*
 * IncrementalAlterConfigs: all the operations or none; INVALID_CONFIG with
 * *message for a value Kafka would refuse.
 */
extern int16 kp_group_alter_configs(const char *group_id, int n, const KpGroupConfigOp *ops,
									bool validate_only, char **message);
extern void kp_group_configs_init_gucs(void);

/*
 * Upkeep by the clock (the resolver): expire members, finish join phases
 * past their deadline, drop old offsets.  kp_group_next_upkeep: when it next
 * has work (a session end or a deadline still to come), 0 if nothing is
 * known.  The caller also runs the upkeep once a second, which covers what
 * begins after the call (sessions and join phases last longer than that,
 * unless set shorter; a parked JoinGroup also looks at its own deadline).
 * kp_group_expire waits for no lock a SQL transaction holds: a group whose
 * lock is taken is left for a later call, and it returns how many were.
 * The offsets' expiry (a scan of every committed offset) runs only when
 * with_offsets: the once-a-second call, not those at a named moment.
 */
extern int	kp_group_expire(bool with_offsets);
extern TimestampTz kp_group_next_upkeep(void);

/* Wake processes waiting for group changes (parked requests). */
extern void kp_group_wakeup(void);

/* settings */
extern int	kp_group_initial_rebalance_delay_ms;
extern int	kp_group_min_session_timeout_ms;
extern int	kp_group_max_session_timeout_ms;
extern int	kp_offsets_retention_minutes;
extern int	kp_offsets_retention_check_interval_ms;
extern void kp_group_init_gucs(void);

#endif							/* KP_GROUP_H */
