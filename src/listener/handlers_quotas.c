/*-------------------------------------------------------------------------
 *
 * handlers_quotas.c
 *	  DescribeClientQuotas and AlterClientQuotas (KIP-546): the client quotas
 *	  of kafka.client_quotas (src/catalog/quotas.c), which throttle.c
 *	  enforces.
 *
 * Entities and keys are Kafka's: a user part, a client-id part or both, each
 * a name or <default> (null name); keys producer_byte_rate and
 * consumer_byte_rate (bytes per second, integral), request_percentage
 * (percent of one request thread) and controller_mutation_rate (partitions
 * created or deleted per second), each > 0.  The rules follow Kafka's
 * ClientQuotaControlManager (alter) and ClientQuotasImage (describe),
 * messages included.  kafka_pg refuses, with INVALID_REQUEST and a message
 * that says so, what it does not enforce: the ip entity
 * (connection_creation_rate).
 *
 * Who may call them: CLUSTER ALTER_CONFIGS / DESCRIBE_CONFIGS, checked
 * before the handler runs (authz.c, kp_authz_admit).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "listener/handlers.h"

/* DescribeClientQuotasRequest.MatchType */
#define MATCH_TYPE_EXACT		0
#define MATCH_TYPE_DEFAULT		1
#define MATCH_TYPE_SPECIFIED	2

static bool
known_key(const char *key, bool *integral)
{
	*integral = true;
	if (strcmp(key, "producer_byte_rate") == 0 || strcmp(key, "consumer_byte_rate") == 0)
		return true;
	*integral = false;
	return strcmp(key, "request_percentage") == 0 ||
		strcmp(key, "controller_mutation_rate") == 0;
}

/* ---------------------------------------------------------------------
 * DescribeClientQuotas
 * ---------------------------------------------------------------------
 */

typedef struct QuotaFilter
{
	/* per type: 0 not in the filter, 1 exact name, 2 default, 3 any name */
	int			user;
	const char *user_name;
	int			client;
	const char *client_name;
	bool		strict;
} QuotaFilter;

static bool
part_matches(int want, const char *want_name, bool has, const char *name)
{
	switch (want)
	{
		case 1:
			return has && name != NULL && strcmp(name, want_name) == 0;
		case 2:
			return has && name == NULL;
		case 3:
			return has;
		default:
			return true;
	}
}

/* Kafka's ClientQuotasImage.matches */
static bool
entity_matches(const QuotaFilter *f, const KpQuotaEntity *e)
{
	if (f->strict &&
		(int) e->has_user + (int) e->has_client_id != (f->user != 0) + (f->client != 0))
		return false;
	return part_matches(f->user, f->user_name, e->has_user, e->user) &&
		part_matches(f->client, f->client_name, e->has_client_id, e->client_id);
}

static bool
same_entity(const KpQuotaEntity *a, const KpQuotaEntity *b)
{
	return a->has_user == b->has_user && a->has_client_id == b->has_client_id &&
		((a->user == NULL) == (b->user == NULL)) &&
		(a->user == NULL || strcmp(a->user, b->user) == 0) &&
		((a->client_id == NULL) == (b->client_id == NULL)) &&
		(a->client_id == NULL || strcmp(a->client_id, b->client_id) == 0);
}

static void
describe_error(KpDescribeClientQuotasResponse *resp, int16 code, char *message)
{
	resp->error_code = code;
	resp->error_message = message;
	resp->n_entries = -1;		/* null, as Kafka's error response */
	resp->entries = NULL;
}

void
kp_handle_describe_client_quotas(KpRequestContext *ctx)
{
	KpDescribeClientQuotasRequest *req = ctx->request;
	KpDescribeClientQuotasResponse *resp = ctx->response;
	QuotaFilter f;
	KpClientQuota *rows;
	int			nrows;
	int			i;
	bool		ip = false;

	memset(&f, 0, sizeof(f));
	f.strict = req->strict;
	resp->error_code = KP_ERR_NONE;
	resp->error_message = pstrdup("");	/* Kafka sends "", not null */
	resp->n_entries = 0;
	for (i = 0; i < req->n_components; i++)
	{
		KpDescribeClientQuotasRequestComponentData *c = &req->components[i];
		const char *type = c->entity_type ? c->entity_type : "";
		int		   *slot = NULL;
		const char **name = NULL;
		int			want;

		if (type[0] == '\0')
		{
			describe_error(resp, KP_ERR_INVALID_REQUEST, pstrdup("Invalid empty entity type."));
			return;
		}
		if (strcmp(type, "user") == 0)
		{
			slot = &f.user;
			name = &f.user_name;
		}
		else if (strcmp(type, "client-id") == 0)
		{
			slot = &f.client;
			name = &f.client_name;
		}
		else if (strcmp(type, "ip") != 0)
		{
			describe_error(resp, KP_ERR_UNSUPPORTED_VERSION,
						   psprintf("Unsupported entity type %s", type));
			return;
		}
		if ((slot && *slot != 0) || (slot == NULL && ip))
		{
			describe_error(resp, KP_ERR_INVALID_REQUEST,
						   psprintf("Entity type %s cannot appear more than once in the filter.", type));
			return;
		}
		switch (c->match_type)
		{
			case MATCH_TYPE_EXACT:
				if (c->match == NULL)
				{
					describe_error(resp, KP_ERR_INVALID_REQUEST,
								   pstrdup("Request specified MATCH_TYPE_EXACT, but set match string to null."));
					return;
				}
				want = 1;
				break;
			case MATCH_TYPE_DEFAULT:
				if (c->match != NULL)
				{
					describe_error(resp, KP_ERR_INVALID_REQUEST,
								   pstrdup("Request specified MATCH_TYPE_DEFAULT, but also specified a match string."));
					return;
				}
				want = 2;
				break;
			case MATCH_TYPE_SPECIFIED:
				if (c->match != NULL)
				{
					describe_error(resp, KP_ERR_INVALID_REQUEST,
								   pstrdup("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."));
					return;
				}
				want = 3;
				break;
			default:
				describe_error(resp, KP_ERR_UNSUPPORTED_VERSION,
							   psprintf("Unknown match type %d", c->match_type));
				return;
		}
		if (slot)
		{
			*slot = want;
			*name = c->match;
		}
		else
			ip = true;
	}
	if (ip && (f.user || f.client))
	{
		describe_error(resp, KP_ERR_INVALID_REQUEST,
					   pstrdup("Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."));
		return;
	}
	if (ip)
		return;					/* kafka_pg keeps no ip quotas */

	nrows = kp_client_quotas(&rows);
	resp->entries = palloc0(sizeof(KpDescribeClientQuotasResponseEntryData) * Max(nrows, 1));
	for (i = 0; i < nrows;)
	{
		const KpQuotaEntity *e = &rows[i].entity;
		int			j = i;

		while (j < nrows && same_entity(e, &rows[j].entity))
			j++;
		if (entity_matches(&f, e))
		{
			KpDescribeClientQuotasResponseEntryData *out = &resp->entries[resp->n_entries++];
			int			k;

			out->entity = palloc0(sizeof(KpDescribeClientQuotasResponseEntityData) * 2);
			out->n_entity = 0;
			if (e->has_user)
			{
				out->entity[out->n_entity].entity_type = "user";
				out->entity[out->n_entity++].entity_name = (char *) e->user;
			}
			if (e->has_client_id)
			{
				out->entity[out->n_entity].entity_type = "client-id";
				out->entity[out->n_entity++].entity_name = (char *) e->client_id;
			}
			out->n_values = j - i;
			out->values = palloc0(sizeof(KpDescribeClientQuotasResponseValueData) * (j - i));
			for (k = i; k < j; k++)
			{
				out->values[k - i].key = rows[k].key;
				out->values[k - i].value = rows[k].value;
			}
		}
		i = j;
	}
}

/* ---------------------------------------------------------------------
 * AlterClientQuotas
 * ---------------------------------------------------------------------
 */

typedef struct AlterArg
{
	KpQuotaEntity entity;
	KpAlterClientQuotasRequestOpData *ops;
	int			n_ops;
} AlterArg;

static void
alter_entity(void *arg)
{
	AlterArg   *a = arg;
	int			i;

	for (i = 0; i < a->n_ops; i++)
	{
		int			j;
		bool		later = false;

		/* the last op on a key wins, as Kafka's map of ops has it */
		for (j = i + 1; j < a->n_ops; j++)
			if (strcmp(a->ops[j].key, a->ops[i].key) == 0)
				later = true;
		if (!later)
			kp_client_quota_alter(&a->entity, a->ops[i].key, a->ops[i].remove, a->ops[i].value);
	}
}

/*
 * Kafka's ClientQuotaControlManager.validateEntity and
 * validateQuotaKeyValue; NULL when the entry may be applied, else the
 * message of its INVALID_REQUEST.
 */
static char *
check_entry(const KpAlterClientQuotasRequestEntryData *in, KpQuotaEntity *e)
{
	bool		ip = false;
	int			i;

	memset(e, 0, sizeof(*e));
	if (in->n_entity <= 0)
		return pstrdup("Invalid empty client quota entity");
	for (i = 0; i < in->n_entity; i++)
	{
		const char *type = in->entity[i].entity_type ? in->entity[i].entity_type : "";
		const char *name = in->entity[i].entity_name;

		if ((strcmp(type, "user") == 0 && e->has_user) ||
			(strcmp(type, "client-id") == 0 && e->has_client_id) ||
			(strcmp(type, "ip") == 0 && ip))
			return psprintf("Invalid empty client quota entity, duplicate entity entry %s", type);
		if (strcmp(type, "user") == 0)
		{
			e->has_user = true;
			e->user = name;
		}
		else if (strcmp(type, "client-id") == 0)
		{
			e->has_client_id = true;
			e->client_id = name;
		}
		else if (strcmp(type, "ip") == 0)
			ip = true;
		else
			return psprintf("Unhandled client quota entity type: %s", type);
		if (name != NULL && name[0] == '\0')
			return psprintf("Empty %s not supported", type);
	}
	if (ip && (e->has_user || e->has_client_id))
		return pstrdup("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId");
	if (ip)
		return pstrdup("kafka_pg does not enforce ip quotas (connection_creation_rate); see kafka.max_connections_per_ip");
	for (i = 0; i < in->n_ops; i++)
	{
		const KpAlterClientQuotasRequestOpData *op = &in->ops[i];
		const char *key = op->key ? op->key : "";
		bool		integral;

		if (!known_key(key, &integral))
			return psprintf("Invalid configuration key %s", key);
		if (op->remove)
			continue;
		if (!(op->value > 0.0))
			return psprintf("Quota %s must be greater than 0", key);
		if (isinf(op->value) || (integral && op->value >= 9.2233720368547758e18))
			return psprintf("Proposed value for %s is too large for a LONG.", key);
		if (integral && op->value - floor(op->value) > 1e-5)
			return psprintf("%s cannot be a fractional value.", key);
	}
	return NULL;
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * An entry's entity as one string that is the same for the same set of
 * (type, name) pairs, whatever their order: the pairs sorted.
 */
static char *
entity_key(const KpAlterClientQuotasRequestEntryData *in)
{
	int			n = Max(in->n_entity, 0);
	char	  **parts = palloc(sizeof(char *) * Max(n, 1));
	StringInfoData buf;
	int			i;

	for (i = 0; i < n; i++)
		parts[i] = psprintf("%s\x01%c%s", in->entity[i].entity_type ? in->entity[i].entity_type : "",
							in->entity[i].entity_name ? 's' : 'n',
							in->entity[i].entity_name ? in->entity[i].entity_name : "");
	qsort(parts, n, sizeof(char *), str_cmp);
	initStringInfo(&buf);
	for (i = 0; i < n; i++)
		appendStringInfo(&buf, "%s\x02", parts[i]);
	return buf.data;
}

typedef struct KeyIndex
{
	char	   *key;
	int			index;
} KeyIndex;

static int
key_index_cmp(const void *a, const void *b)
{
	const KeyIndex *x = a;
	const KeyIndex *y = b;
	int			c = strcmp(x->key, y->key);

	return c != 0 ? c : (x->index > y->index) - (x->index < y->index);
}

/*
 * For each entry: 0 its entity is listed once, 1 it is the first of
 * several, 2 a later one.  Sorted, not compared pairwise: a request is
 * bounded only by socket.request.max.bytes.
 */
static uint8 *
mark_duplicate_entities(const KpAlterClientQuotasRequest *req, int n)
{
	KeyIndex   *keys = palloc(sizeof(KeyIndex) * Max(n, 1));
	uint8	   *mark = palloc0(Max(n, 1));
	int			i;

	for (i = 0; i < n; i++)
	{
		keys[i].key = entity_key(&req->entries[i]);
		keys[i].index = i;
	}
	qsort(keys, n, sizeof(KeyIndex), key_index_cmp);
	for (i = 1; i < n; i++)
		if (strcmp(keys[i - 1].key, keys[i].key) == 0)
		{
			if (mark[keys[i - 1].index] == 0)
				mark[keys[i - 1].index] = 1;
			mark[keys[i].index] = 2;
		}
	return mark;
}

/* ClientQuotaEntity.toString, for the duplicate-entity message */
static char *
entity_string(const KpAlterClientQuotasRequestEntryData *in)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "ClientQuotaEntity(entries={");
	for (i = 0; i < in->n_entity; i++)
		appendStringInfo(&buf, "%s%s=%s", i ? ", " : "",
						 in->entity[i].entity_type ? in->entity[i].entity_type : "",
						 in->entity[i].entity_name ? in->entity[i].entity_name : "null");
	appendStringInfoString(&buf, "})");
	return buf.data;
}

void
kp_handle_alter_client_quotas(KpRequestContext *ctx)
{
	KpAlterClientQuotasRequest *req = ctx->request;
	KpAlterClientQuotasResponse *resp = ctx->response;
	int			n = Max(req->n_entries, 0);
	int			i;
	uint8	   *dups;

	dups = mark_duplicate_entities(req, n);
	resp->throttle_time_ms = 0;
	resp->n_entries = 0;
	resp->entries = palloc0(sizeof(KpAlterClientQuotasResponseEntryData) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		KpAlterClientQuotasRequestEntryData *in = &req->entries[i];
		KpAlterClientQuotasResponseEntryData *out;
		AlterArg	a;
		char	   *why;
		int			k;

		/*
		 * One answer per entity.  An entity listed again: Kafka's
		 * ControllerApis applies its first entry, ignores the others and
		 * answers the entity with INVALID_REQUEST.
		 */
		if (dups[i] == 2)
			continue;
		out = &resp->entries[resp->n_entries++];

		out->n_entity = Max(in->n_entity, 0);
		out->entity = palloc0(sizeof(KpAlterClientQuotasResponseEntityData) * Max(out->n_entity, 1));
		for (k = 0; k < out->n_entity; k++)
		{
			out->entity[k].entity_type = in->entity[k].entity_type;
			out->entity[k].entity_name = in->entity[k].entity_name;
		}
		why = check_entry(in, &a.entity);
		if (why)
		{
			out->error_code = KP_ERR_INVALID_REQUEST;
			out->error_message = why;
		}
		else
		{
			out->error_code = KP_ERR_NONE;
			out->error_message = NULL;
			a.ops = in->ops;
			a.n_ops = Max(in->n_ops, 0);
			if (!req->validate_only)
				out->error_code = kp_handler_try(alter_entity, &a, &out->error_message);
		}
		if (dups[i] == 1)
		{
			out->error_code = KP_ERR_INVALID_REQUEST;
			out->error_message = psprintf("Ignoring duplicate entity %s", entity_string(in));
		}
	}
}
