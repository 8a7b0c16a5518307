/*-------------------------------------------------------------------------
 *
 * authz.c
 *	  Authorization of wire requests: who the request is authorized as,
 *	  and the checks the handlers make (the decision is
 *	  src/catalog/acls.c's, from its per-backend cache).
 *
 * A connection that logged in with SASL is its role.  An anonymous one
 * (PLAINTEXT or SSL listener) is kafka.anonymous_role; when that is empty
 * (the default) anonymous clients are the listener's own role, the
 * bootstrap superuser, allowed everything, as before ACLs existed.  That
 * is safe by the listener's own rule (security.c): without SASL it serves
 * only loopback unless kafka.allow_anonymous says otherwise, and whoever
 * turns that on has been told in the log that anonymous clients act as a
 * superuser; setting kafka.anonymous_role makes them a role with ACLs.
 *
 * ACLs on a host match the client's address (ctx->peer without its port).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"

#include "listener/handlers.h"
#include "listener/listener_int.h"

/* Resolve the request's role once (needs the transaction: syscache). */
static void
resolve(KpRequestContext *ctx)
{
	const char *p;
	const char *end;

	if (ctx->authz_resolved)
		return;
	if (OidIsValid(ctx->principal_oid))
	{
		ctx->authz_role = ctx->principal_oid;
		ctx->authz_all = false;
	}
	else
		ctx->authz_role = kp_acl_anonymous_role(&ctx->authz_all);
	if (!ctx->authz_all)
		ctx->authz_all = kp_acl_allows_everything(ctx->authz_role);

	/* "1.2.3.4:port" or "[::1]:port" -> the address */
	p = ctx->peer ? ctx->peer : "";
	if (*p == '[')
	{
		p++;
		end = strchr(p, ']');
	}
	else
		end = strrchr(p, ':');
	if (end == NULL)
		end = p + strlen(p);
	snprintf(ctx->authz_host, sizeof(ctx->authz_host), "%.*s", (int) (end - p), p);
	ctx->authz_resolved = true;
}

bool
kp_authz(KpRequestContext *ctx, int resource_type, const char *name, int op)
{
	resolve(ctx);
	if (ctx->authz_all)
		return true;
	return kp_acl_authorize(ctx->authz_role, ctx->authz_host, resource_type, name, op);
}

bool
kp_authz_cluster(KpRequestContext *ctx, int op)
{
	return kp_authz(ctx, KP_ACL_RESOURCE_CLUSTER, KP_ACL_CLUSTER_NAME, op);
}

bool
kp_authz_topic(KpRequestContext *ctx, const char *name, const KpTopic *t, int op)
{
	const char *n = (name && name[0]) ? name : (t ? t->name : NULL);

	/* a topic id that names no topic: the handler answers UNKNOWN_TOPIC_ID */
	if (n == NULL)
		return true;
	return kp_authz(ctx, KP_ACL_RESOURCE_TOPIC, n, op);
}

bool
kp_authz_any(KpRequestContext *ctx, int resource_type, int op)
{
	resolve(ctx);
	if (ctx->authz_all)
		return true;
	return kp_acl_authorize_any(ctx->authz_role, ctx->authz_host, resource_type, op);
}

/*
 * The role the request is authorized as, for code outside the listener
 * that checks later on its own (the group coordinator matching a regex):
 * a role allowed everything by the anonymous rule is the bootstrap
 * superuser (whom it stands for); *host the client's address.
 */
Oid
kp_authz_principal(KpRequestContext *ctx, const char **host)
{
	resolve(ctx);
	*host = ctx->authz_host;
	if (ctx->authz_all && !OidIsValid(ctx->authz_role))
		return BOOTSTRAP_SUPERUSERID;
	return ctx->authz_role;
}

int32
kp_authz_operations(KpRequestContext *ctx, int resource_type, const char *name)
{
	resolve(ctx);
	if (ctx->authz_all)
	{
		switch (resource_type)
		{
			case KP_ACL_RESOURCE_TOPIC:
				return KP_TOPIC_AUTHORIZED_OPERATIONS;
			case KP_ACL_RESOURCE_GROUP:
				return KP_GROUP_AUTHORIZED_OPERATIONS;
			case KP_ACL_RESOURCE_CLUSTER:
				return KP_CLUSTER_AUTHORIZED_OPERATIONS;
		}
		return 0;
	}
	return kp_acl_authorized_operations(ctx->authz_role, ctx->authz_host, resource_type, name);
}

/*
 * The APIs that concern the whole cluster, and what they need on it (as
 * Kafka's KafkaApis/ControllerApis ask).  Per-resource APIs check in their
 * handlers.
 */
typedef struct ClusterRule
{
	int16		api_key;
	int			op;
} ClusterRule;

static const ClusterRule cluster_rules[] = {
	{KP_API_CREATE_ACLS, KP_ACL_OP_ALTER},
	{KP_API_DELETE_ACLS, KP_ACL_OP_ALTER},
	{KP_API_DESCRIBE_ACLS, KP_ACL_OP_DESCRIBE},
	{KP_API_ELECT_LEADERS, KP_ACL_OP_ALTER},
	{KP_API_ALTER_PARTITION_REASSIGNMENTS, KP_ACL_OP_ALTER},
	{KP_API_LIST_PARTITION_REASSIGNMENTS, KP_ACL_OP_DESCRIBE},
	{KP_API_DESCRIBE_QUORUM, KP_ACL_OP_DESCRIBE},
	{KP_API_LIST_CONFIG_RESOURCES, KP_ACL_OP_DESCRIBE_CONFIGS},
	{KP_API_DESCRIBE_CLIENT_QUOTAS, KP_ACL_OP_DESCRIBE_CONFIGS},
	{KP_API_ALTER_CLIENT_QUOTAS, KP_ACL_OP_ALTER_CONFIGS},
	{KP_API_DESCRIBE_USER_SCRAM_CREDENTIALS, KP_ACL_OP_DESCRIBE},
	{KP_API_ALTER_USER_SCRAM_CREDENTIALS, KP_ACL_OP_ALTER},
	{KP_API_DESCRIBE_LOG_DIRS, KP_ACL_OP_DESCRIBE},
	{KP_API_ALTER_REPLICA_LOG_DIRS, KP_ACL_OP_ALTER},
	{KP_API_UPDATE_FEATURES, KP_ACL_OP_ALTER},
};

bool
kp_authz_admit(KpRequestContext *ctx)
{
	int			i;

	for (i = 0; i < lengthof(cluster_rules); i++)
		if (cluster_rules[i].api_key == ctx->header->request_api_key)
		{
			if (kp_authz_cluster(ctx, cluster_rules[i].op))
				return true;
			kp_refuse(ctx, KP_ERR_CLUSTER_AUTHORIZATION_FAILED, NULL);
			return false;
		}
	return true;
}
