/*-------------------------------------------------------------------------
 *
 * acls.c
 *	  SQL functions for Kafka ACLs: kafka.create_acl, kafka.delete_acls,
 *	  kafka.describe_acls (kafka-acls.sh's --add, --remove, --list) and
 *	  kafka.authorized.  The rows and the decision are src/catalog/acls.c's.
 *
 * Managing ACLs needs what Kafka's CreateAcls/DeleteAcls need, CLUSTER
 * ALTER (DescribeAcls: CLUSTER DESCRIBE), checked for current_user.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "catalog/kafka_catalog.h"
#include "catalog/pg_authid.h"
#include "common/kafka_errors.h"
#include "sqlapi/sqlapi.h"

void
kp_sql_as_owner(KpSqlOwner *o)
{
	GetUserIdAndSecContext(&o->caller, &o->sec_context);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   o->sec_context | SECURITY_LOCAL_USERID_CHANGE);
	o->active = true;
}

void
kp_sql_as_caller(KpSqlOwner *o)
{
	if (o->active)
		SetUserIdAndSecContext(o->caller, o->sec_context);
	o->active = false;
}

static int
code_arg(FunctionCallInfo fcinfo, int arg, int (*parse) (const char *), const char *what,
		 int dflt)
{
	char	   *s;
	int			code;

	if (PG_ARGISNULL(arg))
		return dflt;
	s = text_to_cstring(PG_GETARG_TEXT_PP(arg));
	code = parse(s);
	if (code == KP_ACL_UNKNOWN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown %s \"%s\"", what, s)));
	return code;
}

static char *
str_arg(FunctionCallInfo fcinfo, int arg)
{
	return PG_ARGISNULL(arg) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(arg));
}

/* (principal, resource_type, resource_name, operation, permission, pattern_type, host) */
static void
binding_args(FunctionCallInfo fcinfo, KpAclBinding *b, bool filter)
{
	int			any = filter ? KP_ACL_RESOURCE_ANY : KP_ACL_UNKNOWN;

	b->principal = str_arg(fcinfo, 0);
	b->resource_type = code_arg(fcinfo, 1, kp_acl_resource_type_code, "resource type", any);
	b->resource_name = str_arg(fcinfo, 2);
	b->operation = code_arg(fcinfo, 3, kp_acl_operation_code, "operation", any);
	b->permission = code_arg(fcinfo, 4, kp_acl_permission_code, "permission type", any);
	b->pattern_type = code_arg(fcinfo, 5, kp_acl_pattern_type_code, "pattern type", any);
	b->host = str_arg(fcinfo, 6);
	/* the CLUSTER resource has one name; kafka-acls.sh writes it for you */
	if (!filter && b->resource_type == KP_ACL_RESOURCE_CLUSTER && b->resource_name &&
		strcmp(b->resource_name, "") == 0)
		b->resource_name = pstrdup(KP_ACL_CLUSTER_NAME);
}

PG_FUNCTION_INFO_V1(kp_sql_create_acl);
Datum
kp_sql_create_acl(PG_FUNCTION_ARGS)
{
	KpAclBinding b;

	kp_sql_check_writable_fn(fcinfo);
	kp_acl_check(KP_ACL_RESOURCE_CLUSTER, KP_ACL_CLUSTER_NAME, KP_ACL_OP_ALTER);
	binding_args(fcinfo, &b, false);
	PG_RETURN_BOOL(kp_acl_create(&b));
}

static Datum
return_bindings(FunctionCallInfo fcinfo, List *acls)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, acls)
	{
		KpAclBinding *b = lfirst(lc);
		Datum		values[7];
		bool		nulls[7] = {false};

		values[0] = CStringGetTextDatum(b->principal);
		values[1] = CStringGetTextDatum(kp_acl_resource_type_name(b->resource_type));
		values[2] = CStringGetTextDatum(kp_acl_pattern_type_name(b->pattern_type));
		values[3] = CStringGetTextDatum(b->resource_name);
		values[4] = CStringGetTextDatum(kp_acl_operation_name(b->operation));
		values[5] = CStringGetTextDatum(kp_acl_permission_name(b->permission));
		values[6] = CStringGetTextDatum(b->host);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(kp_sql_delete_acls);
Datum
kp_sql_delete_acls(PG_FUNCTION_ARGS)
{
	KpAclBinding f;

	kp_sql_check_writable_fn(fcinfo);
	kp_acl_check(KP_ACL_RESOURCE_CLUSTER, KP_ACL_CLUSTER_NAME, KP_ACL_OP_ALTER);
	binding_args(fcinfo, &f, true);
	return return_bindings(fcinfo, kp_acl_delete(&f));
}

PG_FUNCTION_INFO_V1(kp_sql_describe_acls);
Datum
kp_sql_describe_acls(PG_FUNCTION_ARGS)
{
	KpAclBinding f;

	kp_acl_check(KP_ACL_RESOURCE_CLUSTER, KP_ACL_CLUSTER_NAME, KP_ACL_OP_DESCRIBE);
	binding_args(fcinfo, &f, true);
	return return_bindings(fcinfo, kp_acl_describe(&f));
}

/*
 * kafka.authorized(resource_type, resource_name, operation, role): the
 * decision for a role.  Anyone may ask about themselves; asking about
 * another role needs CLUSTER DESCRIBE.
 */
PG_FUNCTION_INFO_V1(kp_sql_authorized);
Datum
kp_sql_authorized(PG_FUNCTION_ARGS)
{
	char	   *type_s = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	char	   *op_s = text_to_cstring(PG_GETARG_TEXT_PP(2));
	Oid			role = get_role_oid(NameStr(*PG_GETARG_NAME(3)), false);
	int			type = kp_acl_resource_type_code(type_s);
	int			op = kp_acl_operation_code(op_s);

	if (type < KP_ACL_RESOURCE_TOPIC || type > KP_ACL_RESOURCE_TRANSACTIONAL_ID)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("resource type must be TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID, not \"%s\"",
						type_s)));
	if (op <= KP_ACL_OP_ALL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" is not an operation one is authorized for", op_s)));
	if (role != GetUserId())
		kp_acl_check(KP_ACL_RESOURCE_CLUSTER, KP_ACL_CLUSTER_NAME, KP_ACL_OP_DESCRIBE);
	PG_RETURN_BOOL(kp_acl_authorize(role, NULL, type, name, op));
}
