/*-------------------------------------------------------------------------
 *
 * handlers_group.c
 *	  The group APIs on the wire: FindCoordinator, JoinGroup, SyncGroup,
 *	  Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups,
 *	  ListGroups, DeleteGroups, OffsetDelete.
 *
 * These translate between the wire structs and the group coordinator
 * (src/group), which SQL consumers use too.  A JoinGroup or a follower's
 * SyncGroup that must wait parks (the dispatcher calls it again when a
 * group changes or its deadline comes); the member id handed out on the
 * first call travels in the park cookie.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "group/group.h"
#include "share/share.h"
#include "listener/handlers.h"
#include "listener/handlers_admin.h"
#include "listener/handlers_share.h"
#include "listener/listener.h"
#include "listener/listener_int.h"

static KpBytes
to_bytes(KpBlob b)
{
	KpBytes		out;

	out.data = (const uint8 *) b.data;
	out.len = b.len < 0 ? 0 : b.len;
	if (out.data == NULL)
		out.data = (const uint8 *) "";
	return out;
}

/*
 * A member's client host as Kafka reports it ("/" + address) from the
 * connection's peer ("address:port"); shared with the share-group handlers.
 */
char *
kp_peer_host(const char *peer)
{
	char	   *host = pstrdup(peer);
	char	   *colon = strrchr(host, ':');

	if (colon)
		*colon = '\0';
	return psprintf("/%s", host);
}

/* ---------------------------------------------------------------------
 * FindCoordinator: this node coordinates every group, transactional id
 * (key type 1) and share partition (key type 2, brokers' own)
 * ---------------------------------------------------------------------
 */

/* GROUP op on the group, or GROUP_AUTHORIZATION_FAILED */
static bool
group_allowed(KpRequestContext *ctx, const char *group_id, int op)
{
	return kp_authz(ctx, KP_ACL_RESOURCE_GROUP, group_id ? group_id : "", op);
}

/* FindCoordinator's key types (Kafka's CoordinatorType) */
#define COORDINATOR_GROUP		0
#define COORDINATOR_TRANSACTION 1
#define COORDINATOR_SHARE		2

/* Errors.INVALID_REQUEST.message(), which Kafka sends with a refused request */
#define INVALID_REQUEST_TEXT \
	"This most likely occurs because of a request being malformed by the client library or " \
	"the message was sent to an incompatible broker. See the broker logs for more details."

/*
 * A share-partition key ("group:topicId:partition", key type 2, which
 * brokers send to find a share coordinator) as Kafka's
 * SharePartitionKey.getInstance reads it: the partition is after the last
 * ':', the topic id after the one before, the group (which may hold ':')
 * the rest, not blank; Java's split drops trailing empty parts, so
 * "g:id:0:" is read as "g:id:0".  The topic id as Uuid.fromString decodes
 * it: base64url of 16 bytes (22 characters, or 24 ending "=="); the
 * partition as Integer.parseInt (a sign, digits, a Java int).
 */
static bool
share_coordinator_key_valid(const char *key)
{
	int			len = key ? strlen(key) : 0;
	int			c1 = -1;
	int			c2 = -1;
	int			i;
	int64		v = 0;
	char	   *group;

	while (len > 0 && key[len - 1] == ':')
		len--;
	for (i = len - 1; i >= 0 && c1 < 0; i--)
		if (key[i] == ':')
		{
			if (c2 < 0)
				c2 = i;
			else
				c1 = i;
		}
	if (c1 < 0)
		return false;
	group = pnstrdup(key, c1);
	if (kp_java_blank(group))
		return false;
	/* the topic id: key[c1 + 1 .. c2) */
	if (!kp_uuid_string_valid(key + c1 + 1, c2 - c1 - 1))
		return false;
	/* the partition: key[c2 + 1 .. len) */
	i = c2 + 1;
	if (i < len && (key[i] == '+' || key[i] == '-'))
		i++;
	if (i == len)
		return false;
	for (; i < len; i++)
	{
		if (key[i] < '0' || key[i] > '9')
			return false;
		v = v * 10 + (key[i] - '0');
		if (v > (int64) PG_INT32_MAX + 1)
			return false;
	}
	return v <= PG_INT32_MAX || key[c2 + 1] == '-';
}

/*
 * FindCoordinator: DESCRIBE on the group or transactional id; a share key
 * (from v6; CLUSTER_ACTION was checked for the whole request) must be one
 */
static int16
coordinator_key_code(KpRequestContext *ctx, int8 key_type, const char *key)
{
	if (key_type == COORDINATOR_TRANSACTION)
		return kp_authz(ctx, KP_ACL_RESOURCE_TRANSACTIONAL_ID, key ? key : "", KP_ACL_OP_DESCRIBE) ?
			KP_ERR_NONE : KP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	if (key_type == COORDINATOR_SHARE)
		return ctx->version >= 6 && share_coordinator_key_valid(key) ? KP_ERR_NONE :
			KP_ERR_INVALID_REQUEST;
	return group_allowed(ctx, key, KP_ACL_OP_DESCRIBE) ? KP_ERR_NONE :
		KP_ERR_GROUP_AUTHORIZATION_FAILED;
}

/*
 * The error message of a v0-3 answer, as Kafka sets it (Errors.message():
 * the exception's default message, "NONE" for none).  A v4+ coordinator
 * carries none ("").
 */
static char *
coordinator_message(int16 code)
{
	switch (code)
	{
		case KP_ERR_NONE:
			return pstrdup("NONE");
		case KP_ERR_COORDINATOR_NOT_AVAILABLE:
			return pstrdup("The coordinator is not available.");
		case KP_ERR_GROUP_AUTHORIZATION_FAILED:
			return pstrdup("Group authorization failed.");
		case KP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
			return pstrdup("Transactional Id authorization failed.");
		case KP_ERR_CLUSTER_AUTHORIZATION_FAILED:
			return pstrdup("Cluster authorization failed.");
		case KP_ERR_INVALID_REQUEST:
			return pstrdup(INVALID_REQUEST_TEXT);
	}
	return pstrdup(kp_error_name(code));
}

/*
 * One key's answer, the same in the v0-3 response and in each v4+
 * coordinator: the primary coordinates every group, transactional id and
 * share partition (leader.c), or COORDINATOR_NOT_AVAILABLE while it is not
 * known.
 */
static void
coordinator_for(KpRequestContext *ctx, const KpClusterView *view, int8 key_type, const char *key,
				int16 *error_code, char **error_message, int32 *node_id, char **host, int32 *port)
{
	*error_code = coordinator_key_code(ctx, key_type, key);
	if (*error_code == KP_ERR_NONE && view->leader_id < 0)
		*error_code = KP_ERR_COORDINATOR_NOT_AVAILABLE;
	*error_message = ctx->version >= 4 ? pstrdup("") : coordinator_message(*error_code);
	*node_id = *error_code == KP_ERR_NONE ? view->leader_id : -1;
	*host = pstrdup(*error_code == KP_ERR_NONE ? view->leader_host : "");
	*port = *error_code == KP_ERR_NONE ? view->leader_port : -1;
}

/*
 * A FindCoordinator Kafka refuses as a whole (an unknown key type; a share
 * key without CLUSTER_ACTION): its error answer, every key with the error
 * and the error's message
 */
static void
coordinator_refuse_all(KpRequestContext *ctx, int16 code)
{
	KpFindCoordinatorRequest *req = ctx->request;
	KpFindCoordinatorResponse *resp = ctx->response;
	int			i;

	resp->error_code = code;
	resp->error_message = coordinator_message(code);
	resp->node_id = -1;
	resp->host = pstrdup("");
	resp->port = -1;
	if (ctx->version < 4)
		return;
	resp->n_coordinators = Max(req->n_coordinator_keys, 0);
	resp->coordinators = palloc0(sizeof(KpFindCoordinatorResponseCoordinator) *
								 Max(resp->n_coordinators, 1));
	for (i = 0; i < resp->n_coordinators; i++)
	{
		KpFindCoordinatorResponseCoordinator *c = &resp->coordinators[i];

		c->key = pstrdup(req->coordinator_keys[i] ? req->coordinator_keys[i] : "");
		c->error_code = code;
		c->error_message = coordinator_message(code);
		c->node_id = -1;
		c->host = pstrdup("");
		c->port = -1;
	}
}

void
kp_handle_find_coordinator(KpRequestContext *ctx)
{
	KpFindCoordinatorRequest *req = ctx->request;
	KpFindCoordinatorResponse *resp = ctx->response;
	int			i;
	KpClusterView view;

	kp_cluster_view(&view);
	if (req->key_type != COORDINATOR_GROUP && req->key_type != COORDINATOR_TRANSACTION &&
		req->key_type != COORDINATOR_SHARE)
	{
		coordinator_refuse_all(ctx, KP_ERR_INVALID_REQUEST);
		return;
	}
	if (req->key_type == COORDINATOR_SHARE && ctx->version >= 6 && req->n_coordinator_keys > 0 &&
		!kp_authz_cluster(ctx, KP_ACL_OP_CLUSTER_ACTION))
	{
		coordinator_refuse_all(ctx, KP_ERR_CLUSTER_AUTHORIZATION_FAILED);
		return;
	}
	if (ctx->version < 4)
	{
		coordinator_for(ctx, &view, req->key_type, req->key, &resp->error_code,
						&resp->error_message, &resp->node_id, &resp->host, &resp->port);
		return;
	}
	resp->n_coordinators = req->n_coordinator_keys < 0 ? 0 : req->n_coordinator_keys;
	resp->coordinators = palloc0(sizeof(KpFindCoordinatorResponseCoordinator) *
								 Max(resp->n_coordinators, 1));
	for (i = 0; i < resp->n_coordinators; i++)
	{
		KpFindCoordinatorResponseCoordinator *c = &resp->coordinators[i];

		c->key = pstrdup(req->coordinator_keys[i] ? req->coordinator_keys[i] : "");
		coordinator_for(ctx, &view, req->key_type, c->key, &c->error_code,
						&c->error_message, &c->node_id, &c->host, &c->port);
	}
}

/* ---------------------------------------------------------------------
 * JoinGroup / SyncGroup / Heartbeat / LeaveGroup
 * ---------------------------------------------------------------------
 */

void
kp_handle_join_group(KpRequestContext *ctx)
{
	KpJoinGroupRequest *req = ctx->request;
	KpJoinGroupResponse *resp = ctx->response;
	KpJoinArgs	a;
	KpJoinResult r;
	int16		code;
	int			i;

	if (!group_allowed(ctx, req->group_id, KP_ACL_OP_READ))
	{
		kp_refuse(ctx, KP_ERR_GROUP_AUTHORIZATION_FAILED, NULL);
		return;
	}
	if (kp_share_refuse_other_protocol(ctx, req->group_id))
		return;
	memset(&a, 0, sizeof(a));
	a.group_id = req->group_id;
	a.member_id = req->member_id ? req->member_id : "";
	a.group_instance_id = req->group_instance_id;
	a.client_id = ctx->header->client_id ? ctx->header->client_id : "";
	a.client_host = kp_peer_host(ctx->peer);
	a.session_timeout_ms = req->session_timeout_ms;
	/* v0 had no rebalance timeout: the session timeout served */
	a.rebalance_timeout_ms = req->rebalance_timeout_ms > 0 ? req->rebalance_timeout_ms :
		req->session_timeout_ms;
	a.protocol_type = req->protocol_type;
	a.nprotocols = req->n_protocols < 0 ? 0 : req->n_protocols;
	a.protocol_names = palloc(sizeof(char *) * Max(a.nprotocols, 1));
	a.protocol_metadata = palloc(sizeof(KpBlob) * Max(a.nprotocols, 1));
	for (i = 0; i < a.nprotocols; i++)
	{
		KpBlob	   *b = (KpBlob *) &a.protocol_metadata[i];

		a.protocol_names[i] = req->protocols[i].name ? req->protocols[i].name : "";
		b->data = (const char *) req->protocols[i].metadata.data;
		b->len = req->protocols[i].metadata.len;
	}
	/* MEMBER_ID_REQUIRED exists from v4 on (KIP-394) */
	a.require_known_member_id = ctx->version >= 4;
	if (ctx->park_cookie[0])
		a.retry_member_id = ctx->park_cookie;

	code = kp_group_join(&a, &r);
	if (code == KP_ERR_NONE && r.wait)
	{
		/* the join phase is not over: wait for it (it ends by its deadline) */
		ctx->park = true;
		ctx->park_until_ms = r.wait_until_ms;
		kp_set_park_cookie(ctx, r.member_id);
		return;
	}
	resp->error_code = code;
	resp->generation_id = r.generation_id;
	resp->protocol_type = r.protocol_type;
	resp->protocol_name = r.protocol_name ? r.protocol_name : (ctx->version >= 7 ? NULL : pstrdup(""));
	resp->leader = r.leader_id ? r.leader_id : pstrdup("");
	resp->skip_assignment = r.skip_assignment;
	resp->member_id = r.member_id ? r.member_id : pstrdup("");
	resp->n_members = r.nmembers;
	resp->members = palloc0(sizeof(KpJoinGroupResponseMember) * Max(r.nmembers, 1));
	for (i = 0; i < r.nmembers; i++)
	{
		resp->members[i].member_id = r.members[i].member_id;
		resp->members[i].group_instance_id = r.members[i].group_instance_id;
		resp->members[i].metadata = to_bytes(r.members[i].metadata);
	}
	if (code != KP_ERR_NONE && code != KP_ERR_MEMBER_ID_REQUIRED)
	{
		resp->generation_id = -1;
		resp->n_members = 0;
	}
}

void
kp_handle_sync_group(KpRequestContext *ctx)
{
	KpSyncGroupRequest *req = ctx->request;
	KpSyncGroupResponse *resp = ctx->response;
	KpSyncAssignment *as;
	int			n = req->n_assignments < 0 ? 0 : req->n_assignments;
	int			i;
	KpBlob		mine;
	char	   *ptype = NULL;
	char	   *pname = NULL;
	bool		wait;
	int64		until;
	int16		code;

	if (!group_allowed(ctx, req->group_id, KP_ACL_OP_READ))
	{
		kp_refuse(ctx, KP_ERR_GROUP_AUTHORIZATION_FAILED, NULL);
		return;
	}
	as = palloc(sizeof(KpSyncAssignment) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		as[i].member_id = req->assignments[i].member_id ? req->assignments[i].member_id : "";
		as[i].assignment.data = (const char *) req->assignments[i].assignment.data;
		as[i].assignment.len = req->assignments[i].assignment.len;
	}
	code = kp_group_sync(req->group_id, req->member_id ? req->member_id : "",
						 req->group_instance_id, req->generation_id, n, as,
						 ctx->final_attempt, &mine, &ptype, &pname, &wait, &until);
	if (code == KP_ERR_NONE && wait)
	{
		ctx->park = true;
		ctx->park_until_ms = until;
		return;
	}
	resp->error_code = code;
	resp->protocol_type = ptype;
	resp->protocol_name = pname;
	resp->assignment = to_bytes(mine);
}

void
kp_handle_heartbeat(KpRequestContext *ctx)
{
	KpHeartbeatRequest *req = ctx->request;
	KpHeartbeatResponse *resp = ctx->response;

	if (!group_allowed(ctx, req->group_id, KP_ACL_OP_READ))
	{
		resp->error_code = KP_ERR_GROUP_AUTHORIZATION_FAILED;
		return;
	}
	resp->error_code = kp_group_heartbeat(req->group_id, req->member_id ? req->member_id : "",
										  req->group_instance_id, req->generation_id);
}

void
kp_handle_leave_group(KpRequestContext *ctx)
{
	KpLeaveGroupRequest *req = ctx->request;
	KpLeaveGroupResponse *resp = ctx->response;
	int			i;

	if (!group_allowed(ctx, req->group_id, KP_ACL_OP_READ))
	{
		resp->error_code = KP_ERR_GROUP_AUTHORIZATION_FAILED;
		return;
	}
	if (ctx->version < 3)
	{
		resp->error_code = kp_group_leave(req->group_id, req->member_id, NULL);
		return;
	}
	resp->error_code = KP_ERR_NONE;
	resp->n_members = req->n_members < 0 ? 0 : req->n_members;
	resp->members = palloc0(sizeof(KpLeaveGroupResponseMemberResponse) * Max(resp->n_members, 1));
	for (i = 0; i < resp->n_members; i++)
	{
		KpLeaveGroupRequestMemberIdentity *m = &req->members[i];

		resp->members[i].member_id = m->member_id ? pstrdup(m->member_id) : pstrdup("");
		resp->members[i].group_instance_id = m->group_instance_id ? pstrdup(m->group_instance_id) : NULL;
		resp->members[i].error_code = kp_group_leave(req->group_id, m->member_id, m->group_instance_id);
	}
}

/* ---------------------------------------------------------------------
 * Offsets
 * ---------------------------------------------------------------------
 */

void
kp_handle_offset_commit(KpRequestContext *ctx)
{
	KpOffsetCommitRequest *req = ctx->request;
	KpOffsetCommitResponse *resp = ctx->response;
	KpCommitter committer;
	KpOffsetToCommit *items;
	int			nitems = 0;
	int			total = 0;
	bool		any_busy = false;
	int16		group_code;
	int			i;
	int			j;

	/* Kafka: GROUP READ for the whole request, TOPIC READ per topic */
	if (!group_allowed(ctx, req->group_id, KP_ACL_OP_READ))
	{
		kp_refuse(ctx, KP_ERR_GROUP_AUTHORIZATION_FAILED, NULL);
		return;
	}
	resp->n_topics = req->n_topics < 0 ? 0 : req->n_topics;
	resp->topics = palloc0(sizeof(KpOffsetCommitResponseTopic) * Max(resp->n_topics, 1));
	for (i = 0; i < resp->n_topics; i++)
		total += Max(req->topics[i].n_partitions, 0);
	items = palloc0(sizeof(KpOffsetToCommit) * Max(total, 1));

	/* the partitions of known topics go to the coordinator, in one call */
	for (i = 0; i < resp->n_topics; i++)
	{
		KpOffsetCommitRequestTopic *rt = &req->topics[i];
		KpOffsetCommitResponseTopic *ot = &resp->topics[i];
		const KpTopic *t = kp_handler_topic(ctx->version >= 10 ? NULL : rt->name, &rt->topic_id);
		bool		allowed = kp_authz_topic(ctx, ctx->version >= 10 ? NULL : rt->name, t,
											 KP_ACL_OP_READ);

		ot->name = rt->name ? pstrdup(rt->name) : NULL;
		memcpy(ot->topic_id.b, rt->topic_id.b, 16);
		ot->n_partitions = rt->n_partitions < 0 ? 0 : rt->n_partitions;
		ot->partitions = palloc0(sizeof(KpOffsetCommitResponsePartition) * Max(ot->n_partitions, 1));
		for (j = 0; j < ot->n_partitions; j++)
		{
			KpOffsetCommitRequestPartition *rp = &rt->partitions[j];
			KpOffsetCommitResponsePartition *op = &ot->partitions[j];

			op->partition_index = rp->partition_index;
			if (!allowed)
			{
				op->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}
			if (t == NULL || rp->partition_index < 0 || rp->partition_index >= t->partition_count)
			{
				op->error_code = (ctx->version >= 10 && t == NULL) ? KP_ERR_UNKNOWN_TOPIC_ID :
					KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
				continue;
			}

			/*
			 * A SQL transaction that consumed the partition for the group
			 * (kafka.consume, kafka.group_poll) holds its offset row until it
			 * ends: the worker does not wait for it (below)
			 */
			if (!kp_group_try_lock_offset(req->group_id ? req->group_id : "", t->name,
										  rp->partition_index))
			{
				op->error_code = KP_ERR_REQUEST_TIMED_OUT;
				any_busy = true;
				continue;
			}
			op->error_code = -1;	/* answered by the coordinator */
			items[nitems].topic = pstrdup(t->name);
			items[nitems].partition = rp->partition_index;
			items[nitems].offset = rp->committed_offset;
			items[nitems].leader_epoch = rp->committed_leader_epoch;
			items[nitems].metadata.data = (const char *) rp->committed_metadata.data;
			items[nitems].metadata.len = rp->committed_metadata.len;
			nitems++;
		}
	}

	/*
	 * Nothing written yet: park until those partitions are free or 5 s
	 * (kp_handler_park_for_locks; OffsetCommit has no timeout of its own),
	 * then commit the others and answer REQUEST_TIMED_OUT for them, which
	 * consumers retry.
	 */
	if (any_busy && kp_handler_park_for_locks(ctx, 0))
		return;

	memset(&committer, 0, sizeof(committer));
	committer.kind = KP_COMMIT_WIRE;
	committer.group_id = req->group_id;
	committer.member_id = req->member_id;
	committer.group_instance_id = req->group_instance_id;
	committer.generation_id = req->generation_id_or_member_epoch;
	committer.before_v9 = ctx->version < 9;
	group_code = kp_group_commit_offsets(&committer, nitems, items);
	/* a group that does not exist: as Kafka, before v9 ILLEGAL_GENERATION */
	if (group_code == KP_ERR_GROUP_ID_NOT_FOUND && ctx->version < 9)
		group_code = KP_ERR_ILLEGAL_GENERATION;

	/*
	 * The group's error, if any, is every partition's that went to the
	 * coordinator; unknown topics keep their own error, as in Kafka, which
	 * drops them before it asks the group.
	 */
	nitems = 0;
	for (i = 0; i < resp->n_topics; i++)
		for (j = 0; j < resp->topics[i].n_partitions; j++)
		{
			KpOffsetCommitResponsePartition *op = &resp->topics[i].partitions[j];

			if (op->error_code == -1)
				op->error_code = group_code != KP_ERR_NONE ? group_code :
					items[nitems].error_code;
			else
				continue;
			nitems++;
		}

	/* Kafka answers by partition: a topic listed with none is not answered */
	resp->n_topics = KP_DROP_EMPTY(resp->topics, resp->n_topics, KpOffsetCommitResponseTopic,
								   n_partitions);
}

/* One group's offsets, into the v8+ shapes (v1-7 are converted below). */
static void
fetch_group_offsets(KpRequestContext *ctx, const char *group_id, const char *member_id,
					int32 member_epoch, int ntopics, KpOffsetFetchRequestTopics *topics,
					KpOffsetFetchResponseGroup *out)
{
	int			i;

	out->group_id = pstrdup(group_id ? group_id : "");
	out->error_code = KP_ERR_NONE;
	/* Kafka: GROUP DESCRIBE; topics the role may not describe are left out */
	if (!group_allowed(ctx, group_id, KP_ACL_OP_DESCRIBE))
	{
		out->error_code = KP_ERR_GROUP_AUTHORIZATION_FAILED;
		out->n_topics = 0;
		return;
	}
	/* then the member asking, if it says (v9+, KIP-848) */
	if (group_id != NULL &&
		(out->error_code = kp_group_check_offset_fetch(group_id, member_id,
													   member_epoch)) != KP_ERR_NONE)
	{
		out->n_topics = 0;
		return;
	}
	if (ntopics < 0)
	{
		/* all committed offsets of the group */
		char	  **names;
		int32	   *parts;
		int			n = kp_group_committed_partitions(group_id, &names, &parts);
		int			t = 0;

		out->topics = palloc0(sizeof(KpOffsetFetchResponseTopics) * Max(n, 1));
		for (i = 0; i < n; i++)
		{
			KpOffsetFetchResponseTopics *ot;
			KpOffsetFetchResponsePartitions *op;
			int32		epoch;
			KpBlob		md;

			if (!kp_authz_topic(ctx, names[i], NULL, KP_ACL_OP_DESCRIBE))
				continue;
			if (t == 0 || strcmp(out->topics[t - 1].name, names[i]) != 0)
			{
				const KpTopic *topic = kp_handler_topic(names[i], NULL);

				/* v10 names topics by id only */
				if (topic)
					memcpy(out->topics[t].topic_id.b, topic->topic_uuid.data, 16);
				out->topics[t].name = names[i];
				out->topics[t].partitions = palloc0(sizeof(KpOffsetFetchResponsePartitions) * n);
				t++;
			}
			ot = &out->topics[t - 1];
			op = &ot->partitions[ot->n_partitions++];
			op->partition_index = parts[i];
			op->committed_offset = kp_group_fetch_offset(group_id, names[i], parts[i], false, &epoch, &md);
			op->committed_leader_epoch = epoch;
			op->metadata = to_bytes(md);
			op->error_code = KP_ERR_NONE;
		}
		out->n_topics = t;
		return;
	}
	out->n_topics = ntopics;
	out->topics = palloc0(sizeof(KpOffsetFetchResponseTopics) * Max(ntopics, 1));
	for (i = 0; i < ntopics; i++)
	{
		KpOffsetFetchRequestTopics *rt = &topics[i];
		KpOffsetFetchResponseTopics *ot = &out->topics[i];
		const KpTopic *t = kp_handler_topic(rt->name, &rt->topic_id);
		bool		allowed = kp_authz_topic(ctx, rt->name, t, KP_ACL_OP_DESCRIBE);
		int			j;

		ot->name = rt->name ? pstrdup(rt->name) : (t ? pstrdup(t->name) : NULL);
		if (t)
			memcpy(ot->topic_id.b, t->topic_uuid.data, 16);
		else
			memcpy(ot->topic_id.b, rt->topic_id.b, 16);
		ot->n_partitions = rt->n_partition_indexes < 0 ? 0 : rt->n_partition_indexes;
		ot->partitions = palloc0(sizeof(KpOffsetFetchResponsePartitions) * Max(ot->n_partitions, 1));
		for (j = 0; j < ot->n_partitions; j++)
		{
			KpOffsetFetchResponsePartitions *op = &ot->partitions[j];
			int32		epoch = -1;
			KpBlob		md = {NULL, -1};

			op->partition_index = rt->partition_indexes[j];
			op->committed_offset = -1;
			op->committed_leader_epoch = -1;
			op->metadata = to_bytes(md);
			if (!allowed)
			{
				op->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}
			if (t == NULL)
			{
				/*
				 * A topic named that does not exist (or no longer: its
				 * offsets went with it) has no offset, and no error, as Kafka
				 * 4.4 answers it; by topic id (v10) it is UNKNOWN_TOPIC_ID,
				 * as Kafka 4.4 answers it (the zero id too).
				 */
				op->error_code = ctx->version >= 10 ? KP_ERR_UNKNOWN_TOPIC_ID : KP_ERR_NONE;
				continue;
			}
			op->committed_offset = kp_group_fetch_offset(group_id, t->name, op->partition_index,
														 false, &epoch, &md);
			op->committed_leader_epoch = epoch;
			op->metadata = to_bytes(md);
			op->error_code = KP_ERR_NONE;
		}
	}
}

void
kp_handle_offset_fetch(KpRequestContext *ctx)
{
	KpOffsetFetchRequest *req = ctx->request;
	KpOffsetFetchResponse *resp = ctx->response;
	int			i;

	if (ctx->version >= 8)
	{
		resp->n_groups = req->n_groups < 0 ? 0 : req->n_groups;
		resp->groups = palloc0(sizeof(KpOffsetFetchResponseGroup) * Max(resp->n_groups, 1));
		for (i = 0; i < resp->n_groups; i++)
		{
			KpOffsetFetchRequestGroup *rg = &req->groups[i];

			/* v9+ names the member asking (NULL and -1 before) */
			fetch_group_offsets(ctx, rg->group_id, rg->member_id, rg->member_epoch,
								rg->n_topics, rg->topics, &resp->groups[i]);
			if (req->require_stable)
				kp_txn_mark_unstable_offsets(req->groups[i].group_id, &resp->groups[i]);
		}
		return;
	}
	else
	{
		/* v1-7: one group; convert to and from the v8 shapes */
		KpOffsetFetchRequestTopics *topics = NULL;
		KpOffsetFetchResponseGroup g;
		int			n = req->n_topics;

		if (n >= 0)
		{
			topics = palloc0(sizeof(KpOffsetFetchRequestTopics) * Max(n, 1));
			for (i = 0; i < n; i++)
			{
				topics[i].name = req->topics[i].name;
				topics[i].n_partition_indexes = req->topics[i].n_partition_indexes;
				topics[i].partition_indexes = req->topics[i].partition_indexes;
			}
		}
		memset(&g, 0, sizeof(g));
		fetch_group_offsets(ctx, req->group_id, NULL, -1, n, topics, &g);
		if (ctx->version >= 7 && req->require_stable)
			kp_txn_mark_unstable_offsets(req->group_id, &g);
		resp->error_code = g.error_code;
		resp->n_topics = g.n_topics;
		resp->topics = palloc0(sizeof(KpOffsetFetchResponseTopic) * Max(g.n_topics, 1));
		for (i = 0; i < g.n_topics; i++)
		{
			int			j;

			resp->topics[i].name = g.topics[i].name;
			resp->topics[i].n_partitions = g.topics[i].n_partitions;
			resp->topics[i].partitions = palloc0(sizeof(KpOffsetFetchResponsePartition) *
												 Max(g.topics[i].n_partitions, 1));
			for (j = 0; j < g.topics[i].n_partitions; j++)
			{
				KpOffsetFetchResponsePartition *o = &resp->topics[i].partitions[j];
				KpOffsetFetchResponsePartitions *s = &g.topics[i].partitions[j];

				o->partition_index = s->partition_index;
				o->committed_offset = s->committed_offset;
				o->committed_leader_epoch = s->committed_leader_epoch;
				o->metadata = s->metadata;
				o->error_code = s->error_code;
			}
		}
	}
}

/* ---------------------------------------------------------------------
 * Describe, list, delete
 * ---------------------------------------------------------------------
 */

void
kp_handle_describe_groups(KpRequestContext *ctx)
{
	KpDescribeGroupsRequest *req = ctx->request;
	KpDescribeGroupsResponse *resp = ctx->response;
	int			i;

	resp->n_groups = req->n_groups < 0 ? 0 : req->n_groups;
	resp->groups = palloc0(sizeof(KpDescribeGroupsResponseDescribedGroup) * Max(resp->n_groups, 1));
	for (i = 0; i < resp->n_groups; i++)
	{
		KpDescribeGroupsResponseDescribedGroup *g = &resp->groups[i];
		KpGroupInfo info;
		int			j;

		g->group_id = pstrdup(req->groups[i] ? req->groups[i] : "");
		g->authorized_operations = PG_INT32_MIN;
		if (!group_allowed(ctx, g->group_id, KP_ACL_OP_DESCRIBE))
		{
			g->error_code = KP_ERR_GROUP_AUTHORIZATION_FAILED;
			g->group_state = pstrdup("");
			g->protocol_type = pstrdup("");
			g->protocol_data = pstrdup("");
			continue;
		}
		kp_group_describe(g->group_id, &info);
		g->error_code = KP_ERR_NONE;

		/*
		 * Kafka 4.4 describes classic groups only: a consumer or share group
		 * is answered as one that does not exist, state Dead and no members,
		 * with (from v6, KIP-1043) GROUP_ID_NOT_FOUND and its words.
		 */
		if ((info.exists && !info.classic) ||
			(!info.exists && kp_share_group_exists_for_admin(g->group_id)))
		{
			g->group_state = pstrdup("Dead");
			g->protocol_type = pstrdup("");
			g->protocol_data = pstrdup("");
			if (ctx->version >= 6)
			{
				g->error_code = KP_ERR_GROUP_ID_NOT_FOUND;
				g->error_message = psprintf("Group %s is not a classic group.", g->group_id);
			}
			continue;
		}
		if (!info.exists && ctx->version >= 6)
		{
			g->error_code = KP_ERR_GROUP_ID_NOT_FOUND;
			g->error_message = psprintf("Group %s not found.", g->group_id);
		}
		g->group_state = info.state;
		g->protocol_type = info.protocol_type;
		g->protocol_data = info.protocol_name;
		g->authorized_operations = req->include_authorized_operations ?
			kp_authz_operations(ctx, KP_ACL_RESOURCE_GROUP, g->group_id) : PG_INT32_MIN;
		g->n_members = info.nmembers;
		g->members = palloc0(sizeof(KpDescribeGroupsResponseDescribedGroupMember) * Max(info.nmembers, 1));
		for (j = 0; j < info.nmembers; j++)
		{
			g->members[j].member_id = info.members[j].member_id;
			g->members[j].group_instance_id = info.members[j].group_instance_id;
			g->members[j].client_id = info.members[j].client_id;
			g->members[j].client_host = info.members[j].client_host;
			g->members[j].member_metadata = to_bytes(info.members[j].metadata);
			g->members[j].member_assignment = to_bytes(info.members[j].assignment);
		}
	}
}

void
kp_handle_list_groups(KpRequestContext *ctx)
{
	KpListGroupsRequest *req = ctx->request;
	KpListGroupsResponse *resp = ctx->response;
	char	  **ids;
	char	  **states;
	char	  **types;
	int			n = kp_group_list(&ids, &states, &types);
	int			i;
	bool		all = kp_authz_cluster(ctx, KP_ACL_OP_DESCRIBE);

	resp->error_code = KP_ERR_NONE;
	resp->groups = palloc0(sizeof(KpListGroupsResponseListedGroup) * Max(n, 1));
	resp->n_groups = 0;
	for (i = 0; i < n; i++)
	{
		KpListGroupsResponseListedGroup *g;

		/* Kafka: CLUSTER DESCRIBE lists all, else the groups one may describe */
		if (!all && !group_allowed(ctx, ids[i], KP_ACL_OP_DESCRIBE))
			continue;
		if (req->n_states_filter > 0)
		{
			int			k;
			bool		match = false;

			for (k = 0; k < req->n_states_filter; k++)
				if (req->states_filter[k] && pg_strcasecmp(req->states_filter[k], states[i]) == 0)
					match = true;
			if (!match)
				continue;
		}
		if (req->n_types_filter > 0)
		{
			int			k;
			bool		match = false;

			for (k = 0; k < req->n_types_filter; k++)
				if (req->types_filter[k] &&
					pg_strcasecmp(req->types_filter[k],
								  strncmp(types[i], "consumer:", 9) == 0 ? "consumer" : "classic") == 0)
					match = true;
			if (!match)
				continue;
		}
		g = &resp->groups[resp->n_groups++];
		g->group_id = ids[i];
		/* kp_group_list marks consumer-protocol groups "consumer:<type>" */
		if (strncmp(types[i], "consumer:", 9) == 0)
		{
			g->protocol_type = types[i] + 9;
			g->group_type = pstrdup("consumer");
		}
		else
		{
			g->protocol_type = types[i];
			g->group_type = pstrdup("classic");
		}
		g->group_state = states[i];
	}
	kp_share_list_groups(ctx, req, resp);
}

void
kp_handle_delete_groups(KpRequestContext *ctx)
{
	KpDeleteGroupsRequest *req = ctx->request;
	KpDeleteGroupsResponse *resp = ctx->response;
	int			n = req->n_groups_names < 0 ? 0 : req->n_groups_names;
	char	  **ids = palloc(sizeof(char *) * Max(n, 1));
	bool	   *later;
	int			i;

	for (i = 0; i < n; i++)
		ids[i] = req->groups_names[i] ? req->groups_names[i] : "";
	/* Kafka's results are keyed by group: a repeated group is answered once */
	(void) kp_mark_duplicates(ids, n, &later);

	resp->n_results = n;
	resp->results = palloc0(sizeof(KpDeleteGroupsResponseDeletableGroupResult) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		const char *id = ids[i];

		if (later[i])
			continue;
		resp->results[i].group_id = pstrdup(id);
		resp->results[i].error_code = group_allowed(ctx, id, KP_ACL_OP_DELETE) ?
			kp_group_delete(id) : KP_ERR_GROUP_AUTHORIZATION_FAILED;
		if (resp->results[i].error_code == KP_ERR_GROUP_ID_NOT_FOUND)
			resp->results[i].error_code = kp_share_delete_group(id);
	}
	resp->n_results = kp_drop_entries(resp->results, sizeof(*resp->results), later, n);
}

void
kp_handle_offset_delete(KpRequestContext *ctx)
{
	KpOffsetDeleteRequest *req = ctx->request;
	KpOffsetDeleteResponse *resp = ctx->response;
	const char *group_id = req->group_id ? req->group_id : "";
	int			ntopics = Max(req->n_topics, 0);
	char	  **names = palloc(sizeof(char *) * Max(ntopics, 1));
	bool	   *subscribed = palloc0(sizeof(bool) * Max(ntopics, 1));
	int			i;

	/* Kafka: GROUP DELETE, and READ on each topic */
	if (!group_allowed(ctx, group_id, KP_ACL_OP_DELETE))
	{
		resp->error_code = KP_ERR_GROUP_AUTHORIZATION_FAILED;
		return;
	}
	for (i = 0; i < ntopics; i++)
		names[i] = req->topics[i].name ? req->topics[i].name : "";

	/*
	 * The group's checks (not found, NON_EMPTY_GROUP) answer the whole
	 * request, with no topic, as Kafka's
	 */
	resp->error_code = kp_group_offset_delete_check(group_id, names, ntopics, subscribed);
	if (resp->error_code != KP_ERR_NONE)
		return;
	resp->n_topics = ntopics;
	resp->topics = palloc0(sizeof(KpOffsetDeleteResponseTopic) * Max(ntopics, 1));
	for (i = 0; i < ntopics; i++)
	{
		KpOffsetDeleteRequestTopic *rt = &req->topics[i];
		KpOffsetDeleteResponseTopic *ot = &resp->topics[i];
		bool		allowed = kp_authz_topic(ctx, names[i], NULL, KP_ACL_OP_READ);
		const KpTopic *t = allowed ? kp_handler_topic(names[i], NULL) : NULL;
		int			j;

		ot->name = pstrdup(names[i]);
		ot->n_partitions = Max(rt->n_partitions, 0);
		ot->partitions = palloc0(sizeof(KpOffsetDeleteResponsePartition) * Max(ot->n_partitions, 1));
		for (j = 0; j < ot->n_partitions; j++)
		{
			KpOffsetDeleteResponsePartition *op = &ot->partitions[j];
			int32		partition = rt->partitions[j].partition_index;

			/*
			 * in Kafka's order: the topic's READ, a partition the topic has,
			 * a topic a member subscribes to
			 */
			op->partition_index = partition;
			if (!allowed)
				op->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
			else if (t == NULL || partition < 0 || partition >= t->partition_count)
				op->error_code = KP_ERR_UNKNOWN_TOPIC_OR_PARTITION;
			else if (subscribed[i])
				op->error_code = KP_ERR_GROUP_SUBSCRIBED_TO_TOPIC;
			else
			{
				kp_group_delete_offset(group_id, names[i], partition);
				op->error_code = KP_ERR_NONE;
			}
		}
	}
}

/* ---------------------------------------------------------------------
 * The consumer protocol (KIP-848)
 * ---------------------------------------------------------------------
 */

/*
 * What Kafka's group coordinator refuses before it looks at the group
 * (GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid),
 * in its order and words: INVALID_REQUEST with this message.  From v1 the
 * client makes its member id (KIP-1082).  The SQL API's members
 * (kafka.group_heartbeat) are not checked: they join with no member id.
 */
static const char *
consumer_heartbeat_invalid(const KpConsumerGroupHeartbeatRequest *req, int16 version)
{
	if ((version >= 1 || req->member_epoch > 0 || req->member_epoch == -1) &&
		kp_java_blank(req->member_id ? req->member_id : ""))
		return "MemberId can't be empty.";
	if (kp_java_blank(req->group_id ? req->group_id : ""))
		return "GroupId can't be empty.";
	if (kp_java_blank(req->instance_id))
		return "InstanceId can't be empty.";
	if (kp_java_blank(req->rack_id))
		return "RackId can't be empty.";
	if (req->member_epoch == 0)
	{
		if (req->rebalance_timeout_ms == -1)
			return "RebalanceTimeoutMs must be provided in first request.";
		if (req->n_topic_partitions != 0)	/* null (-1) too */
			return "TopicPartitions must be empty when (re-)joining.";
		if (req->n_subscribed_topic_names < 0 && req->subscribed_topic_regex == NULL)
			return "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.";
	}
	else if (req->member_epoch == -2)
	{
		if (req->instance_id == NULL)
			return "InstanceId can't be null.";
	}
	else if (req->member_epoch < -2)
		return "MemberEpoch is invalid.";
	return NULL;
}

void
kp_handle_consumer_group_heartbeat(KpRequestContext *ctx)
{
	KpConsumerGroupHeartbeatRequest *req = ctx->request;
	KpConsumerGroupHeartbeatResponse *resp = ctx->response;
	KpCgHeartbeatArgs a;
	KpCgHeartbeatResult r;
	int			i;
	int			total = 0;
	int			k;

	/* Kafka: GROUP READ; DESCRIBE on every subscribed topic */
	if (!group_allowed(ctx, req->group_id, KP_ACL_OP_READ))
	{
		resp->error_code = KP_ERR_GROUP_AUTHORIZATION_FAILED;
		resp->member_epoch = 0;
		return;
	}
	for (i = 0; i < req->n_subscribed_topic_names; i++)
		if (!kp_authz_topic(ctx, req->subscribed_topic_names[i], NULL, KP_ACL_OP_DESCRIBE))
		{
			resp->error_code = KP_ERR_TOPIC_AUTHORIZATION_FAILED;
			resp->error_message = psprintf("Topic authorization failed for topic \"%s\"",
										   req->subscribed_topic_names[i] ? req->subscribed_topic_names[i] : "");
			resp->member_epoch = 0;
			return;
		}
	if ((resp->error_message = (char *) consumer_heartbeat_invalid(req, ctx->version)) != NULL)
	{
		resp->error_code = KP_ERR_INVALID_REQUEST;
		resp->member_epoch = 0;
		return;
	}
	if (kp_share_refuse_other_protocol(ctx, req->group_id))
		return;
	memset(&a, 0, sizeof(a));
	a.group_id = req->group_id;
	a.member_id = req->member_id;
	a.member_epoch = req->member_epoch;
	a.instance_id = req->instance_id;
	a.rack_id = req->rack_id;
	a.rebalance_timeout_ms = req->rebalance_timeout_ms;
	a.nsubscribed = req->n_subscribed_topic_names;
	a.subscribed = req->subscribed_topic_names;
	for (i = 0; i < a.nsubscribed; i++)
		if (a.subscribed[i] == NULL)
			a.subscribed[i] = "";
	a.subscribed_regex = req->subscribed_topic_regex;	/* v1 */
	a.server_assignor = req->server_assignor;
	a.client_id = ctx->header->client_id ? ctx->header->client_id : "";
	a.client_host = kp_peer_host(ctx->peer);
	a.authz_role = kp_authz_principal(ctx, &a.authz_host);
	a.nowned = -1;
	a.fence_older_epoch = true;
	if (req->n_topic_partitions >= 0)
	{
		for (i = 0; i < req->n_topic_partitions; i++)
			total += Max(req->topic_partitions[i].n_partitions, 0);
		a.owned_topics = palloc(sizeof(char *) * Max(total, 1));
		a.owned_partitions = palloc(sizeof(int32) * Max(total, 1));
		a.nowned = 0;
		for (i = 0; i < req->n_topic_partitions; i++)
		{
			const KpTopic *t = kp_handler_topic(NULL, &req->topic_partitions[i].topic_id);

			if (t == NULL)
			{
				/* a deleted topic: not among those assigned */
				a.owned_unknown = true;
				continue;
			}
			for (k = 0; k < req->topic_partitions[i].n_partitions; k++)
			{
				a.owned_topics[a.nowned] = pstrdup(t->name);
				a.owned_partitions[a.nowned] = req->topic_partitions[i].partitions[k];
				a.nowned++;
			}
		}
	}

	resp->error_code = kp_group_consumer_heartbeat(&a, &r);
	resp->error_message = r.error_message;
	/* an error is answered with no member id and epoch 0, as Kafka's */
	resp->member_id = resp->error_code == KP_ERR_NONE ? r.member_id : NULL;
	resp->member_epoch = resp->error_code == KP_ERR_NONE ? r.member_epoch : 0;
	resp->heartbeat_interval_ms = r.heartbeat_interval_ms;
	resp->assignment = NULL;
	if (resp->error_code == KP_ERR_NONE && r.send_assignment)
	{
		KpConsumerGroupHeartbeatResponseAssignment *as = palloc0(sizeof(*as));
		int			t = 0;

		as->topic_partitions = palloc0(sizeof(KpConsumerGroupHeartbeatResponseTopicPartitions) *
									   Max(r.nassigned, 1));
		for (i = 0; i < r.nassigned; i++)
		{
			if (t == 0 || (i > 0 && strcmp(r.assigned_topics[i - 1], r.assigned_topics[i]) != 0))
			{
				const KpTopic *topic = kp_handler_topic(r.assigned_topics[i], NULL);

				memset(&as->topic_partitions[t], 0, sizeof(as->topic_partitions[t]));
				if (topic)
					memcpy(as->topic_partitions[t].topic_id.b, topic->topic_uuid.data, 16);
				as->topic_partitions[t].partitions = palloc(sizeof(int32) * r.nassigned);
				t++;
			}
			as->topic_partitions[t - 1].partitions[as->topic_partitions[t - 1].n_partitions++] =
				r.assigned_partitions[i];
		}
		as->n_topic_partitions = t;
		resp->assignment = as;
	}
}

void
kp_handle_consumer_group_describe(KpRequestContext *ctx)
{
	KpConsumerGroupDescribeRequest *req = ctx->request;
	KpConsumerGroupDescribeResponse *resp = ctx->response;
	int			i;

	resp->n_groups = req->n_group_ids < 0 ? 0 : req->n_group_ids;
	resp->groups = palloc0(sizeof(KpConsumerGroupDescribeResponseDescribedGroup) * Max(resp->n_groups, 1));
	for (i = 0; i < resp->n_groups; i++)
	{
		KpConsumerGroupDescribeResponseDescribedGroup *g = &resp->groups[i];
		KpCgGroupInfo info;
		int			j;

		g->group_id = pstrdup(req->group_ids[i] ? req->group_ids[i] : "");
		if (!group_allowed(ctx, g->group_id, KP_ACL_OP_DESCRIBE))
		{
			g->error_code = KP_ERR_GROUP_AUTHORIZATION_FAILED;
			g->authorized_operations = PG_INT32_MIN;
			g->group_state = pstrdup("");
			g->assignor_name = pstrdup("");
			continue;
		}
		g->authorized_operations = req->include_authorized_operations ?
			kp_authz_operations(ctx, KP_ACL_RESOURCE_GROUP, g->group_id) : PG_INT32_MIN;
		g->group_state = pstrdup("");
		g->assignor_name = pstrdup("");
		if (g->group_id[0] == '\0')
		{
			g->error_code = KP_ERR_INVALID_GROUP_ID;
			continue;
		}
		kp_group_consumer_describe(g->group_id, &info);
		if (!info.exists)
		{
			/* Kafka's words, and no state */
			g->error_code = KP_ERR_GROUP_ID_NOT_FOUND;
			g->error_message = info.other_type ?
				psprintf("Group %s is not a consumer group.", g->group_id) :
				psprintf("Group %s not found.", g->group_id);
			continue;
		}
		g->group_state = info.state;
		g->group_epoch = info.group_epoch;
		g->assignment_epoch = info.assignment_epoch;
		g->assignor_name = info.assignor;
		g->n_members = info.nmembers;
		g->members = palloc0(sizeof(KpConsumerGroupDescribeResponseMember) * Max(info.nmembers, 1));
		for (j = 0; j < info.nmembers; j++)
		{
			KpConsumerGroupDescribeResponseMember *m = &g->members[j];
			KpCgMemberInfo *mi = &info.members[j];
			int			pass;

			m->member_id = mi->member_id;
			m->instance_id = mi->instance_id;
			m->rack_id = mi->rack_id;
			m->member_epoch = mi->member_epoch;
			m->client_id = mi->client_id;
			m->client_host = mi->client_host;
			m->n_subscribed_topic_names = mi->nsubscribed;
			m->subscribed_topic_names = mi->subscribed;
			/* Kafka answers "" for a member that subscribes by names */
			m->subscribed_topic_regex = mi->subscribed_regex ? mi->subscribed_regex : "";
			/* v1: each member here joined with the consumer protocol */
			m->member_type = 1;
			for (pass = 0; pass < 2; pass++)
			{
				KpConsumerGroupDescribeResponseAssignment *as = pass == 0 ? &m->assignment : &m->target_assignment;
				int			n = pass == 0 ? mi->nassigned : mi->ntarget;
				char	  **topics = pass == 0 ? mi->assigned_topics : mi->target_topics;
				int32	   *parts = pass == 0 ? mi->assigned_partitions : mi->target_partitions;
				int			p;
				int			t = 0;

				as->topic_partitions = palloc0(sizeof(KpConsumerGroupDescribeResponseTopicPartitions) * Max(n, 1));
				for (p = 0; p < n; p++)
				{
					if (t == 0 || strcmp(topics[p - 1], topics[p]) != 0)
					{
						const KpTopic *topic = kp_handler_topic(topics[p], NULL);

						if (topic)
							memcpy(as->topic_partitions[t].topic_id.b, topic->topic_uuid.data, 16);
						as->topic_partitions[t].topic_name = topics[p];
						as->topic_partitions[t].partitions = palloc(sizeof(int32) * n);
						t++;
					}
					as->topic_partitions[t - 1].partitions[as->topic_partitions[t - 1].n_partitions++] = parts[p];
				}
				as->n_topic_partitions = t;
			}
		}
	}
}
