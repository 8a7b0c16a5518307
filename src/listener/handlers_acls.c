/*-------------------------------------------------------------------------
 *
 * handlers_acls.c
 *	  CreateAcls, DescribeAcls, DeleteAcls: kafka-acls.sh and the admin
 *	  client's createAcls/describeAcls/deleteAcls on kafka.acls (the rows
 *	  and their rules are src/catalog/acls.c's).
 *
 * Who may call them is checked before the handler runs (authz.c,
 * kp_authz_admit): CLUSTER ALTER to create and delete, CLUSTER DESCRIBE to
 * describe, as in Kafka.  A binding Kafka would refuse, or one kafka_pg
 * does not keep (DELEGATION_TOKEN and USER resources, principals that are
 * not User:<role>), is INVALID_REQUEST with a message, for that entry only.
 * A row of kafka.acls that a SQL transaction still open inserted or deleted
 * is not waited for: kp_handler_try raises the lock error again, the
 * request is rolled back and run again (nothing of it committed: a
 * DeleteAcls run twice would otherwise not list what its first run
 * deleted), and after 5 s answered REQUEST_TIMED_OUT (dispatch.c,
 * LOCK_RETRY_ROW).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "listener/handlers.h"

typedef struct CreateArg
{
	KpAclBinding b;
} CreateArg;

static void
create_fn(void *arg)
{
	(void) kp_acl_create(&((CreateArg *) arg)->b);
}

void
kp_handle_create_acls(KpRequestContext *ctx)
{
	KpCreateAclsRequest *req = ctx->request;
	KpCreateAclsResponse *resp = ctx->response;
	int			n = Max(req->n_creations, 0);
	int			i;

	resp->n_results = n;
	resp->results = palloc0(sizeof(KpCreateAclsResponseAclCreationResult) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		KpCreateAclsRequestAclCreation *c = &req->creations[i];
		CreateArg	arg;
		char	   *msg = NULL;

		arg.b.resource_type = c->resource_type;
		arg.b.resource_name = c->resource_name;
		arg.b.pattern_type = c->resource_pattern_type;
		arg.b.principal = c->principal;
		arg.b.host = c->host;
		arg.b.operation = c->operation;
		arg.b.permission = c->permission_type;
		resp->results[i].error_code = kp_handler_try(create_fn, &arg, &msg);
		resp->results[i].error_message = resp->results[i].error_code != KP_ERR_NONE ? msg : NULL;
	}
}

typedef struct FilterArg
{
	KpAclBinding f;
	bool		delete;
	List	   *result;
} FilterArg;

static void
filter_fn(void *arg)
{
	FilterArg  *a = arg;

	a->result = a->delete ? kp_acl_delete(&a->f) : kp_acl_describe(&a->f);
}

void
kp_handle_describe_acls(KpRequestContext *ctx)
{
	KpDescribeAclsRequest *req = ctx->request;
	KpDescribeAclsResponse *resp = ctx->response;
	FilterArg	a;
	char	   *msg = NULL;
	ListCell   *lc;
	int			n = 0;

	a.f.resource_type = req->resource_type_filter;
	a.f.resource_name = req->resource_name_filter;
	a.f.pattern_type = req->pattern_type_filter;
	a.f.principal = req->principal_filter;
	a.f.host = req->host_filter;
	a.f.operation = req->operation;
	a.f.permission = req->permission_type;
	a.delete = false;
	a.result = NIL;
	resp->error_code = kp_handler_try(filter_fn, &a, &msg);
	if (resp->error_code != KP_ERR_NONE)
	{
		resp->error_message = msg;
		return;
	}

	/* one entry per resource (type, name, pattern); the list is sorted so */
	resp->resources = palloc0(sizeof(KpDescribeAclsResponseDescribeAclsResource) *
							  Max(list_length(a.result), 1));
	foreach(lc, a.result)
	{
		KpAclBinding *b = lfirst(lc);
		KpDescribeAclsResponseDescribeAclsResource *r = n > 0 ? &resp->resources[n - 1] : NULL;
		KpDescribeAclsResponseAclDescription *d;

		if (r == NULL || r->resource_type != b->resource_type ||
			r->pattern_type != b->pattern_type || strcmp(r->resource_name, b->resource_name) != 0)
		{
			r = &resp->resources[n++];
			r->resource_type = b->resource_type;
			r->resource_name = b->resource_name;
			r->pattern_type = b->pattern_type;
			r->acls = palloc0(sizeof(KpDescribeAclsResponseAclDescription) *
							  list_length(a.result));
		}
		d = &r->acls[r->n_acls++];
		d->principal = b->principal;
		d->host = b->host;
		d->operation = b->operation;
		d->permission_type = b->permission;
	}
	resp->n_resources = n;
}

void
kp_handle_delete_acls(KpRequestContext *ctx)
{
	KpDeleteAclsRequest *req = ctx->request;
	KpDeleteAclsResponse *resp = ctx->response;
	int			n = Max(req->n_filters, 0);
	int			i;

	resp->n_filter_results = n;
	resp->filter_results = palloc0(sizeof(KpDeleteAclsResponseDeleteAclsFilterResult) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		KpDeleteAclsRequestDeleteAclsFilter *f = &req->filters[i];
		KpDeleteAclsResponseDeleteAclsFilterResult *out = &resp->filter_results[i];
		FilterArg	a;
		char	   *msg = NULL;
		ListCell   *lc;
		int			k = 0;

		a.f.resource_type = f->resource_type_filter;
		a.f.resource_name = f->resource_name_filter;
		a.f.pattern_type = f->pattern_type_filter;
		a.f.principal = f->principal_filter;
		a.f.host = f->host_filter;
		a.f.operation = f->operation;
		a.f.permission = f->permission_type;
		a.delete = true;
		a.result = NIL;
		out->error_code = kp_handler_try(filter_fn, &a, &msg);
		if (out->error_code != KP_ERR_NONE)
		{
			out->error_message = msg;
			continue;
		}
		out->n_matching_acls = list_length(a.result);
		out->matching_acls = palloc0(sizeof(KpDeleteAclsResponseDeleteAclsMatchingAcl) *
									 Max(out->n_matching_acls, 1));
		foreach(lc, a.result)
		{
			KpAclBinding *b = lfirst(lc);
			KpDeleteAclsResponseDeleteAclsMatchingAcl *m = &out->matching_acls[k++];

			m->error_code = KP_ERR_NONE;
			m->resource_type = b->resource_type;
			m->resource_name = b->resource_name;
			m->pattern_type = b->pattern_type;
			m->principal = b->principal;
			m->host = b->host;
			m->operation = b->operation;
			m->permission_type = b->permission;
		}
	}
}
