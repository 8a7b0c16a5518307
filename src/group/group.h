/*-------------------------------------------------------------------------
 *
 * group.h
 *	  The group coordinator: the whole public face of src/group.
 *
 * Consumer groups of the classic protocol (JoinGroup / SyncGroup /
 * Heartbeat / LeaveGroup, KIP-345 static membership) and committed offsets.
 * The state lives in the catalog (kafka.consumer_groups, group_members,
 * committed_offsets) and every operation takes the group's row lock, so the
 * listener workers and SQL sessions are one coordinator, whichever process
 * a request lands in.  Operations that must wait (a JoinGroup until the
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

typedef struct KpBlob
{
	const char *data;
	int			len;			/* -1: null */
} KpBlob;

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

/* Offsets */
extern int16 kp_group_check_commit(const char *group_id, const char *member_id,
								   const char *group_instance_id, int32 generation_id);
/* metadata: bytes, NUL bytes included (NULL or len -1: null) */
extern int16 kp_group_commit_offset(const char *group_id, const char *topic,
									int32 partition, int64 offset, int32 leader_epoch,
									const KpBlob *metadata);

/* -1 when there is none; *metadata len -1 when null */
extern int64 kp_group_fetch_offset(const char *group_id, const char *topic,
								   int32 partition, int32 *leader_epoch, KpBlob *metadata);

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
	char	   *state;			/* Kafka's names: Empty, Stable, ... ; Dead if none */
	char	   *protocol_type;
	char	   *protocol_name;
	int32		generation_id;
	int			nmembers;
	KpGroupMemberInfo *members;
} KpGroupInfo;

extern void kp_group_describe(const char *group_id, KpGroupInfo *info);
extern int	kp_group_list(char ***group_ids, char ***states, char ***protocol_types);
extern int16 kp_group_delete(const char *group_id);
extern int16 kp_group_delete_offsets(const char *group_id, const char *topic, int32 partition);

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
	const char *server_assignor;	/* NULL: unchanged / default */
	int			nowned;			/* -1: unchanged */
	char	  **owned_topics;	/* (topic, partition) pairs */
	int32	   *owned_partitions;
	const char *client_id;
	const char *client_host;
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

/* -1 when the member is not a consumer-protocol member of the group */
extern int32 kp_group_consumer_member_epoch(const char *group_id, const char *member_id);

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

/* Periodic upkeep (the resolver): expire members, old offsets. */
extern void kp_group_expire(void);

/* Wake processes waiting for group changes (parked requests). */
extern void kp_group_wakeup(void);

/* settings */
extern int	kp_group_initial_rebalance_delay_ms;
extern int	kp_group_min_session_timeout_ms;
extern int	kp_group_max_session_timeout_ms;
extern int	kp_offsets_retention_minutes;
extern void kp_group_init_gucs(void);

#endif							/* KP_GROUP_H */
