/*-------------------------------------------------------------------------
 *
 * handlers_share.h
 *	  The share-group handlers (handlers_share.c), and what ListGroups,
 *	  DescribeGroups and DeleteGroups ask it about share groups.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_LISTENER_HANDLERS_SHARE_H
#define KP_LISTENER_HANDLERS_SHARE_H

#include "listener/handlers.h"

extern void kp_handle_share_group_heartbeat(KpRequestContext *ctx);
extern void kp_handle_share_group_describe(KpRequestContext *ctx);
extern void kp_handle_share_fetch(KpRequestContext *ctx);
extern void kp_handle_share_acknowledge(KpRequestContext *ctx);

/* A connection closed: the share sessions it opened end (their records released). */
extern void kp_share_conn_closed(struct KpConn *c);
extern void kp_handle_describe_share_group_offsets(KpRequestContext *ctx);
extern void kp_handle_alter_share_group_offsets(KpRequestContext *ctx);
extern void kp_handle_delete_share_group_offsets(KpRequestContext *ctx);

/* ListGroups: append the share groups the filters let through */
extern void kp_share_list_groups(KpRequestContext *ctx, KpListGroupsRequest *req,
								 KpListGroupsResponse *resp);

/*
 * JoinGroup and ConsumerGroupHeartbeat for the id of a share group: answer as
 * Kafka does (INCONSISTENT_GROUP_PROTOCOL, GROUP_ID_NOT_FOUND) and return true.
 */
extern bool kp_share_refuse_other_protocol(KpRequestContext *ctx, const char *group_id);

/* DescribeGroups: fill g when group_id is a share group */

#endif							/* KP_LISTENER_HANDLERS_SHARE_H */
