/*-------------------------------------------------------------------------
 *
 * group_int.h
 *	  What the files of src/group share with each other and nobody else.
 *
 * coordinator.c: the group lock, member lookup, wakeups, settings;
 * classic.c: the classic protocol's rebalance steps (the upkeep finishes
 * join phases too); offsets.c, admin.c, upkeep.c: as named;
 * consumer_protocol.c: KIP-848; assignor.c and tpset.c: pure functions
 * (see assignor.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_GROUP_INT_H
#define KP_GROUP_INT_H

#include "catalog/kafka_catalog.h"
#include "group/group.h"
#include "protocol/protocol.h"

/* coordinator.c */
extern int64 kp_group_now_ms(void);
extern KpMemberRow *kp_group_find_member(KpMemberRow *m, int n, const char *member_id);
extern KpMemberRow *kp_group_find_instance(KpMemberRow *m, int n, const char *instance_id);
extern int	kp_group_count_members(const KpMemberRow *m, int n);
extern int16 kp_group_check_instance(KpMemberRow *m, int n, const char *member_id,
									 const char *instance_id);
extern int16 kp_group_lock_member(const char *group_id, const char *member_id,
								  const char *instance_id, KpGroupRow *g,
								  KpMemberRow **m, int *n, KpMemberRow **me);

/* Store a classic group's row and wake the waiters at commit. */
extern void kp_group_save(const char *group_id, const KpGroupRow *g);

/* classic.c */
extern void kp_group_start_rebalance(const char *group_id, KpGroupRow *g,
									 KpMemberRow *m, int n);
extern void kp_group_try_complete_join(const char *group_id, KpGroupRow *g);
extern void kp_group_after_members_removed(const char *group_id, KpGroupRow *g,
										   bool members);

/*
 * Decode a classic member's ConsumerProtocolSubscription or
 * ConsumerProtocolAssignment bytes (desc; an int16 version first, one newer
 * than the codec's read as the newest, as Kafka's ConsumerProtocol does)
 * into out; false if they do not decode.
 */
extern bool kp_group_decode_consumer_protocol(const KpMessageDesc *desc, KpBlob blob, void *out);
extern int	kp_group_classic_subscriptions(const char *group_id, const char *protocol,
										   char ***topics, int *ntopics);
extern void kp_group_consumer_subscribed(const char *group_id, char *const *topics, int ntopics,
										 bool *subscribed);

/*
 * The partitions of topic in a member's ConsumerProtocolAssignment bytes
 * (the one decoder of them): how many, *partitions palloc'd.
 */
extern int	kp_group_assignment_partitions(KpBlob assignment, const char *topic,
										   int32 **partitions);

/* configs.c: a consumer group's settings in effect (its config, else the broker's) */
extern int32 kp_group_consumer_session_ms(const char *group_id);
extern int32 kp_group_consumer_heartbeat_ms(const char *group_id);

#endif							/* KP_GROUP_INT_H */
