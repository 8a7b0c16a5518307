/*-------------------------------------------------------------------------
 *
 * acls.c
 *	  Kafka ACLs (kafka.acls) and the authorizer both front doors ask.
 *
 * An ACL is Kafka's: principal "User:<role>" or "User:*", a resource (type
 * TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID; a LITERAL name, "*" for every
 * one, or a PREFIXED name), an operation, ALLOW or DENY, and a host ("*" or
 * one client address).  The principal is a PostgreSQL role, and role
 * membership applies: an ACL on a group role covers the roles that have its
 * privileges (has_privs_of_role).
 *
 * The decision is Kafka's AclAuthorizer/StandardAuthorizer's:
 *   - superusers and members of kafka_admin are allowed everything (Kafka's
 *     super.users), DENY ACLs included;
 *   - a matching DENY for the operation (or ALL) denies;
 *   - otherwise a matching ALLOW for the operation (or ALL) allows, where
 *     READ, WRITE, DELETE and ALTER imply DESCRIBE and ALTER_CONFIGS implies
 *     DESCRIBE_CONFIGS; members of kafka_read_all_data are allowed READ and
 *     DESCRIBE on every topic and group, members of kafka_write_all_data
 *     WRITE and DESCRIBE on every topic and transactional id and
 *     IDEMPOTENT_WRITE on the cluster, as if by an ALLOW ACL (a DENY still
 *     wins over them);
 *   - otherwise denied, unless kafka.allow_everyone_if_no_acl_found is on
 *     and no ACL at all names the resource.
 *
 * The check is on every request's path, so it works from a backend-local
 * cache: every row of kafka.acls (its principal resolved to a role OID),
 * and per role that asked, the rows that apply to it.  The cache is dropped
 * by the relcache invalidation of kafka.acls (its statement trigger sends
 * one for every change, whoever makes it, at commit) and by any change of
 * pg_authid or pg_auth_members (syscache invalidation), so a check made in
 * a transaction that started after a change committed sees the change.
 *
 * This file is the only one that issues SQL on kafka.acls.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "catalog/catalog_spi.h"
#include "catalog/kafka_catalog.h"
#include "common/kafka_errors.h"

/* settings */
bool		kp_allow_everyone_if_no_acl_found = false;
char	   *kp_anonymous_role = NULL;

typedef struct KpAclRow
{
	KpAclBinding b;
	Oid			role;			/* the principal's role; InvalidOid if none */
	bool		wildcard;		/* User:* */
} KpAclRow;

/* Per role: what it is allowed regardless of ACLs, and the rows for it. */
#define ROLE_ALL		0x01	/* superuser or kafka_admin */
#define ROLE_READ_ALL	0x02	/* kafka_read_all_data */
#define ROLE_WRITE_ALL	0x04	/* kafka_write_all_data */

typedef struct KpAclRoleEntry
{
	Oid			role;			/* hash key */
	int			flags;
	int			n;
	int		   *rows;			/* indexes into acl_rows */
	HTAB	   *decisions;		/* KpAclDecision by resource, op and host */
} KpAclRoleEntry;

/*
 * A decision already made for the role: the same check on every request of
 * a client (WRITE on its topic, say) costs a hash lookup, however many ACLs
 * there are.  Dropped with the rest of the cache.
 */
#define DECISION_KEY_LEN	(2 * NAMEDATALEN + 256 + 8)
#define MAX_DECISIONS		8192	/* per role; past it, decide every time */

typedef struct KpAclDecision
{
	char		key[DECISION_KEY_LEN];	/* hash key: type, op, host, name */
	bool		allowed;
} KpAclDecision;

static MemoryContext acl_cxt = NULL;
static KpAclRow *acl_rows = NULL;
static int	n_acl_rows = 0;
static HTAB *role_cache = NULL;
static bool acl_valid = false;
static uint64 acl_generation = 0;
static Oid	acls_relid = InvalidOid;
static bool callbacks_registered = false;

static const char *const resource_type_names[] = {
	"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID",
	"DELEGATION_TOKEN", "USER"
};
static const char *const pattern_type_names[] = {
	"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"
};
static const char *const operation_names[] = {
	"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER",
	"DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
	"IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS", "TWO_PHASE_COMMIT"
};
static const char *const permission_names[] = {
	"UNKNOWN", "ANY", "DENY", "ALLOW"
};

#define NAME_OF(tab, code) \
	((code) >= 0 && (code) < (int) lengthof(tab) ? (tab)[(code)] : "UNKNOWN")

const char *
kp_acl_resource_type_name(int code)
{
	return NAME_OF(resource_type_names, code);
}

const char *
kp_acl_pattern_type_name(int code)
{
	return NAME_OF(pattern_type_names, code);
}

const char *
kp_acl_operation_name(int code)
{
	return NAME_OF(operation_names, code);
}

const char *
kp_acl_permission_name(int code)
{
	return NAME_OF(permission_names, code);
}

static int
code_of(const char *const *tab, int n, const char *name)
{
	int			i;

	for (i = 0; i < n; i++)
		if (pg_strcasecmp(tab[i], name) == 0)
			return i;
	return KP_ACL_UNKNOWN;
}

int
kp_acl_resource_type_code(const char *name)
{
	return code_of(resource_type_names, lengthof(resource_type_names), name);
}

int
kp_acl_pattern_type_code(const char *name)
{
	return code_of(pattern_type_names, lengthof(pattern_type_names), name);
}

int
kp_acl_operation_code(const char *name)
{
	return code_of(operation_names, lengthof(operation_names), name);
}

int
kp_acl_permission_code(const char *name)
{
	return code_of(permission_names, lengthof(permission_names), name);
}

void
kp_acl_init_gucs(void)
{
	DefineCustomBoolVariable("kafka.allow_everyone_if_no_acl_found",
							 "Allow every principal access to a resource that no ACL names (Kafka's allow.everyone.if.no.acl.found).",
							 NULL, &kp_allow_everyone_if_no_acl_found, false,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("kafka.anonymous_role",
							   "Role whose ACLs apply to clients that did not authenticate (PLAINTEXT and SSL listeners).",
							   "Empty: anonymous clients are the listener's own role, the bootstrap superuser, allowed everything (the listener then serves only loopback unless kafka.allow_anonymous is on).",
							   &kp_anonymous_role, "",
							   PGC_SIGHUP, 0, NULL, NULL, NULL);
}

/* ---------------------------------------------------------------------
 * The cache
 * ---------------------------------------------------------------------
 */

static void
acl_cache_reset(void)
{
	if (acl_cxt)
		MemoryContextDelete(acl_cxt);
	acl_cxt = NULL;
	acl_rows = NULL;
	n_acl_rows = 0;
	role_cache = NULL;
	acl_valid = false;
	acl_generation++;
}

static void
acl_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == acls_relid)
		acl_cache_reset();
}

static void
acl_syscache_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	acl_cache_reset();
}

static Oid
acls_table(void)
{
	Oid			nsp;
	Oid			relid;

	nsp = get_namespace_oid("kafka", true);
	relid = OidIsValid(nsp) ? get_relname_relid("acls", nsp) : InvalidOid;
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"kafka_pg\" is not installed in this database")));
	kp_catalog_stamp_check();	/* another build's catalog (stamp.c) */
	return relid;
}

/* The role of "User:<name>"; *wildcard for "User:*". */
static Oid
principal_role(const char *principal, bool *wildcard)
{
	*wildcard = false;
	if (strncmp(principal, "User:", 5) != 0)
		return InvalidOid;
	if (strcmp(principal + 5, "*") == 0)
	{
		*wildcard = true;
		return InvalidOid;
	}
	return get_role_oid(principal + 5, true);
}

/*
 * kafka.acls is read and written as the bootstrap superuser (the extension
 * is superuser-only, so that is who owns it): what a caller may do with
 * ACLs is decided by the ACLs (CLUSTER ALTER / DESCRIBE), and the
 * authorizer must be able to read them whoever asks.
 */
typedef struct AsOwner
{
	Oid			user;
	int			sec;
} AsOwner;

static void
as_owner_begin(AsOwner *saved)
{
	GetUserIdAndSecContext(&saved->user, &saved->sec);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   saved->sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
}

static void
as_owner_end(AsOwner *saved)
{
	SetUserIdAndSecContext(saved->user, saved->sec);
}

static char *
getstr(HeapTuple tup, TupleDesc desc, int col)
{
	char	   *v = SPI_getvalue(tup, desc, col);

	return v ? v : pstrdup("");
}

/* Read kafka.acls into the cache (again, if it was invalidated meanwhile). */
static void
acl_cache_load(void)
{
	for (;;)
	{
		uint64		gen;
		MemoryContext cxt;
		MemoryContext old;
		KpAclRow   *rows;
		int			n;
		int			i;
		HASHCTL		ctl;

		if (acl_valid)
			return;
		if (!callbacks_registered)
		{
			CacheRegisterRelcacheCallback(acl_relcache_callback, (Datum) 0);
			CacheRegisterSyscacheCallback(AUTHOID, acl_syscache_callback, (Datum) 0);
			CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, acl_syscache_callback, (Datum) 0);
			callbacks_registered = true;
		}
		acls_relid = acls_table();
		gen = acl_generation;

		cxt = AllocSetContextCreate(TopMemoryContext, "kafka_pg acls",
									ALLOCSET_SMALL_SIZES);
		PG_TRY();
		{
			AsOwner		saved;

			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "SPI_connect failed");
			as_owner_begin(&saved);
			if (kp_spi_execute("SELECT principal, resource_type, pattern_type, resource_name, "
							   "operation, permission, host FROM kafka.acls",
							   true, 0) != SPI_OK_SELECT)
				elog(ERROR, "kafka_pg: cannot read kafka.acls");
			as_owner_end(&saved);
			n = (int) SPI_processed;
			old = MemoryContextSwitchTo(cxt);
			rows = palloc0(sizeof(KpAclRow) * Max(n, 1));
			for (i = 0; i < n; i++)
			{
				HeapTuple	tup = SPI_tuptable->vals[i];
				TupleDesc	desc = SPI_tuptable->tupdesc;
				KpAclRow   *r = &rows[i];

				r->b.principal = getstr(tup, desc, 1);
				r->b.resource_type = kp_acl_resource_type_code(getstr(tup, desc, 2));
				r->b.pattern_type = kp_acl_pattern_type_code(getstr(tup, desc, 3));
				r->b.resource_name = getstr(tup, desc, 4);
				r->b.operation = kp_acl_operation_code(getstr(tup, desc, 5));
				r->b.permission = kp_acl_permission_code(getstr(tup, desc, 6));
				r->b.host = getstr(tup, desc, 7);
			}
			MemoryContextSwitchTo(old);
			SPI_finish();
			/* resolve the principals (syscache; may process invalidations) */
			for (i = 0; i < n; i++)
				rows[i].role = principal_role(rows[i].b.principal, &rows[i].wildcard);
		}
		PG_CATCH();
		{
			MemoryContextDelete(cxt);
			PG_RE_THROW();
		}
		PG_END_TRY();

		if (gen != acl_generation)
		{
			/* invalidated while reading: read again */
			MemoryContextDelete(cxt);
			continue;
		}
		if (acl_cxt)
			MemoryContextDelete(acl_cxt);
		acl_cxt = cxt;
		acl_rows = rows;
		n_acl_rows = n;
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(KpAclRoleEntry);
		ctl.hcxt = acl_cxt;
		role_cache = hash_create("kafka_pg acl roles", 16, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		acl_valid = true;
		return;
	}
}

static bool
role_has(Oid role, const char *predefined)
{
	Oid			r = get_role_oid(predefined, true);

	return OidIsValid(r) && has_privs_of_role(role, r);
}

/* The cache entry of a role (InvalidOid: a principal with no role). */
static KpAclRoleEntry *
role_entry(Oid role)
{
	for (;;)
	{
		uint64		gen;
		int			flags = 0;
		int		   *rows;
		int			n = 0;
		int			i;
		KpAclRoleEntry *e;
		bool		found;

		acl_cache_load();
		e = hash_search(role_cache, &role, HASH_FIND, NULL);
		if (e)
			return e;
		gen = acl_generation;
		if (OidIsValid(role))
		{
			if (superuser_arg(role) || role_has(role, "kafka_admin"))
				flags |= ROLE_ALL;
			if (role_has(role, "kafka_read_all_data"))
				flags |= ROLE_READ_ALL;
			if (role_has(role, "kafka_write_all_data"))
				flags |= ROLE_WRITE_ALL;
		}
		rows = palloc(sizeof(int) * Max(n_acl_rows, 1));
		for (i = 0; i < n_acl_rows && gen == acl_generation; i++)
		{
			KpAclRow   *r = &acl_rows[i];

			if (r->wildcard ||
				(OidIsValid(role) && OidIsValid(r->role) &&
				 (r->role == role || has_privs_of_role(role, r->role))))
				rows[n++] = i;
		}
		if (gen != acl_generation)
		{
			pfree(rows);
			continue;			/* invalidated meanwhile */
		}
		{
			/*
			 * allocated before the entry exists (an ERROR leaves none half
			 * made)
			 */
			int		   *kept = MemoryContextAlloc(acl_cxt, sizeof(int) * Max(n, 1));

			memcpy(kept, rows, sizeof(int) * n);
			e = hash_search(role_cache, &role, HASH_ENTER, &found);
			e->decisions = NULL;
			e->flags = flags;
			e->n = n;
			e->rows = kept;
		}
		pfree(rows);
		return e;
	}
}

/* ---------------------------------------------------------------------
 * The decision
 * ---------------------------------------------------------------------
 */

static bool
resource_matches(const KpAclBinding *b, int type, const char *name)
{
	if (b->resource_type != type)
		return false;
	if (b->pattern_type == KP_ACL_PATTERN_LITERAL)
		return strcmp(b->resource_name, "*") == 0 || strcmp(b->resource_name, name) == 0;
	if (b->pattern_type == KP_ACL_PATTERN_PREFIXED)
		return strncmp(b->resource_name, name, strlen(b->resource_name)) == 0;
	return false;
}

static bool
host_matches(const KpAclBinding *b, const char *host)
{
	return strcmp(b->host, "*") == 0 || (host && strcmp(b->host, host) == 0);
}

/* Does an ALLOW of acl_op grant op? */
static bool
op_implies(int acl_op, int op)
{
	if (acl_op == KP_ACL_OP_ALL || acl_op == op)
		return true;
	if (op == KP_ACL_OP_DESCRIBE)
		return acl_op == KP_ACL_OP_READ || acl_op == KP_ACL_OP_WRITE ||
			acl_op == KP_ACL_OP_DELETE || acl_op == KP_ACL_OP_ALTER;
	if (op == KP_ACL_OP_DESCRIBE_CONFIGS)
		return acl_op == KP_ACL_OP_ALTER_CONFIGS;
	return false;
}

/* What the predefined roles allow, as ALLOW ACLs would. */
static bool
predefined_allows(int flags, int type, int op)
{
	if ((flags & ROLE_READ_ALL) &&
		(type == KP_ACL_RESOURCE_TOPIC || type == KP_ACL_RESOURCE_GROUP) &&
		(op == KP_ACL_OP_READ || op == KP_ACL_OP_DESCRIBE))
		return true;
	if ((flags & ROLE_WRITE_ALL) &&
		(type == KP_ACL_RESOURCE_TOPIC || type == KP_ACL_RESOURCE_TRANSACTIONAL_ID) &&
		(op == KP_ACL_OP_WRITE || op == KP_ACL_OP_DESCRIBE))
		return true;
	if ((flags & ROLE_WRITE_ALL) && type == KP_ACL_RESOURCE_CLUSTER &&
		op == KP_ACL_OP_IDEMPOTENT_WRITE)
		return true;
	return false;
}

static bool
decide(KpAclRoleEntry *e, const char *host, int type, const char *name, int op)
{
	int			i;
	bool		allowed = false;

	if (e->flags & ROLE_ALL)
		return true;
	for (i = 0; i < e->n; i++)
	{
		const KpAclBinding *b = &acl_rows[e->rows[i]].b;

		if (!resource_matches(b, type, name) || !host_matches(b, host))
			continue;
		if (b->permission == KP_ACL_PERMISSION_DENY)
		{
			if (b->operation == op || b->operation == KP_ACL_OP_ALL)
				return false;
		}
		else if (b->permission == KP_ACL_PERMISSION_ALLOW && op_implies(b->operation, op))
			allowed = true;
	}
	if (allowed || predefined_allows(e->flags, type, op))
		return true;
	if (kp_allow_everyone_if_no_acl_found)
	{
		for (i = 0; i < n_acl_rows; i++)
			if (resource_matches(&acl_rows[i].b, type, name))
				return false;
		return true;
	}
	return false;
}

bool
kp_acl_authorize(Oid role, const char *host, int type, const char *name, int op)
{
	KpAclRoleEntry *e;
	char		key[DECISION_KEY_LEN];
	KpAclDecision *d;
	bool		found;
	int			len;

	if (name == NULL)
		name = "";
	e = role_entry(role);
	if (e->flags & ROLE_ALL)
		return true;
	/* a string key (HASH_STRINGS hashes, compares and copies up to its NUL) */
	len = snprintf(key, sizeof(key), "%d|%d|%s|%s", type, op, host ? host : "", name);
	if (len >= (int) sizeof(key))
		return decide(e, host, type, name, op); /* too long a name to keep */
	if (e->decisions == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = DECISION_KEY_LEN;
		ctl.entrysize = sizeof(KpAclDecision);
		ctl.hcxt = acl_cxt;
		e->decisions = hash_create("kafka_pg acl decisions", 64, &ctl,
								   HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	d = hash_search(e->decisions, key, HASH_FIND, NULL);
	if (d)
		return d->allowed;
	/* decide() touches nothing that processes invalidations: e stays valid */
	found = decide(e, host, type, name, op);
	if (hash_get_num_entries(e->decisions) < MAX_DECISIONS)
	{
		d = hash_search(e->decisions, key, HASH_ENTER, NULL);
		d->allowed = found;
	}
	return found;
}

/*
 * Kafka's authorizeByResourceType: is the role allowed op on some resource
 * of the type (InitProducerId without a transactional id: WRITE on any
 * topic)?  An ALLOW whose own name a DENY covers does not count.
 */
bool
kp_acl_authorize_any(Oid role, const char *host, int type, int op)
{
	KpAclRoleEntry *e = role_entry(role);
	int			i;

	if ((e->flags & ROLE_ALL) || predefined_allows(e->flags, type, op))
		return true;
	for (i = 0; i < e->n; i++)
	{
		const KpAclBinding *b = &acl_rows[e->rows[i]].b;

		if (b->resource_type == type && b->permission == KP_ACL_PERMISSION_ALLOW &&
			op_implies(b->operation, op) && host_matches(b, host) &&
			decide(e, host, type, b->resource_name, op))
			return true;
	}
	return false;
}

bool
kp_acl_allows_everything(Oid role)
{
	return (role_entry(role)->flags & ROLE_ALL) != 0;
}

/* The AclOperation bits Kafka reports for a resource type. */
static const int topic_ops[] = {
	KP_ACL_OP_READ, KP_ACL_OP_WRITE, KP_ACL_OP_CREATE, KP_ACL_OP_DELETE, KP_ACL_OP_ALTER,
	KP_ACL_OP_DESCRIBE, KP_ACL_OP_DESCRIBE_CONFIGS, KP_ACL_OP_ALTER_CONFIGS
};
static const int group_ops[] = {
	KP_ACL_OP_READ, KP_ACL_OP_DELETE, KP_ACL_OP_DESCRIBE
};
static const int cluster_ops[] = {
	KP_ACL_OP_CREATE, KP_ACL_OP_ALTER, KP_ACL_OP_DESCRIBE, KP_ACL_OP_CLUSTER_ACTION,
	KP_ACL_OP_DESCRIBE_CONFIGS, KP_ACL_OP_ALTER_CONFIGS, KP_ACL_OP_IDEMPOTENT_WRITE
};

int32
kp_acl_authorized_operations(Oid role, const char *host, int type, const char *name)
{
	const int  *ops;
	int			n;
	int			i;
	int32		bits = 0;
	KpAclRoleEntry *e;

	switch (type)
	{
		case KP_ACL_RESOURCE_TOPIC:
			ops = topic_ops;
			n = lengthof(topic_ops);
			break;
		case KP_ACL_RESOURCE_GROUP:
			ops = group_ops;
			n = lengthof(group_ops);
			break;
		case KP_ACL_RESOURCE_CLUSTER:
			ops = cluster_ops;
			n = lengthof(cluster_ops);
			break;
		default:
			return 0;
	}
	e = role_entry(role);
	for (i = 0; i < n; i++)
		if (decide(e, host, type, name ? name : "", ops[i]))
			bits |= 1 << ops[i];
	return bits;
}

/* kafka.anonymous_role's OID; *everything when anonymous is allowed all. */
Oid
kp_acl_anonymous_role(bool *everything)
{
	*everything = (kp_anonymous_role == NULL || kp_anonymous_role[0] == '\0');
	if (*everything)
		return InvalidOid;
	return get_role_oid(kp_anonymous_role, true);
}

/* The SQL front door: current_user, any host. */
void
kp_acl_check(int type, const char *name, int op)
{
	kp_acl_check_role(GetUserId(), type, name, op);
}

void
kp_acl_check_role(Oid role, int type, const char *name, int op)
{
	if (kp_acl_authorize(role, NULL, type, name, op))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 type == KP_ACL_RESOURCE_CLUSTER ?
			 errmsg("Cluster authorization failed: role \"%s\" may not %s the cluster",
					GetUserNameFromId(role, false), kp_acl_operation_name(op)) :
			 errmsg("%s authorization failed: role \"%s\" may not %s %s \"%s\"",
					type == KP_ACL_RESOURCE_TOPIC ? "Topic" :
					type == KP_ACL_RESOURCE_GROUP ? "Group" : "Transactional id",
					GetUserNameFromId(role, false), kp_acl_operation_name(op),
					type == KP_ACL_RESOURCE_TOPIC ? "topic" :
					type == KP_ACL_RESOURCE_GROUP ? "group" : "transactional id",
					name ? name : ""),
			 errhint("A user with CLUSTER ALTER (kafka_admin, a superuser) grants it with kafka.create_acl('User:%s', '%s', '%s', '%s').",
					 GetUserNameFromId(role, false), kp_acl_resource_type_name(type),
					 name ? name : "kafka-cluster", kp_acl_operation_name(op))));
}

/* ---------------------------------------------------------------------
 * Creating, listing and deleting ACLs
 * ---------------------------------------------------------------------
 */

static void
invalid(const char *fmt, const char *arg)
{
	ereport(ERROR,
			(errcode(ERRCODE_KP_INVALID_REQUEST),
			 errmsg(fmt, arg)));
}

/* Refuse what Kafka refuses in an ACL binding (not a filter). */
static void
validate_binding(const KpAclBinding *b)
{
	if (b->resource_type == KP_ACL_RESOURCE_DELEGATION_TOKEN ||
		b->resource_type == KP_ACL_RESOURCE_USER)
		invalid("kafka_pg has no ACLs on %s resources (no delegation tokens; SCRAM credentials are PostgreSQL roles)",
				kp_acl_resource_type_name(b->resource_type));
	if (b->resource_type < KP_ACL_RESOURCE_TOPIC || b->resource_type > KP_ACL_RESOURCE_TRANSACTIONAL_ID)
		invalid("invalid resource type %s for an ACL", kp_acl_resource_type_name(b->resource_type));
	if (b->pattern_type != KP_ACL_PATTERN_LITERAL && b->pattern_type != KP_ACL_PATTERN_PREFIXED)
		invalid("invalid pattern type %s for an ACL: LITERAL or PREFIXED",
				kp_acl_pattern_type_name(b->pattern_type));
	if (b->operation < KP_ACL_OP_ALL || b->operation > KP_ACL_OP_TWO_PHASE_COMMIT)
		invalid("invalid operation %s for an ACL", kp_acl_operation_name(b->operation));
	if (b->permission != KP_ACL_PERMISSION_ALLOW && b->permission != KP_ACL_PERMISSION_DENY)
		invalid("invalid permission type %s for an ACL: ALLOW or DENY",
				kp_acl_permission_name(b->permission));
	if (b->resource_name == NULL || b->resource_name[0] == '\0')
		invalid("%s", "an ACL needs a resource name");
	if (b->resource_type == KP_ACL_RESOURCE_CLUSTER && strcmp(b->resource_name, "kafka-cluster") != 0)
		invalid("the CLUSTER resource is named \"kafka-cluster\", not \"%s\"", b->resource_name);
	if (b->pattern_type == KP_ACL_PATTERN_PREFIXED && strcmp(b->resource_name, "*") == 0)
		invalid("%s", "a PREFIXED ACL may not have the name \"*\" (use LITERAL \"*\")");
	if (b->principal == NULL || strncmp(b->principal, "User:", 5) != 0 || b->principal[5] == '\0')
		invalid("invalid principal \"%s\": kafka_pg principals are User:<role> or User:*",
				b->principal ? b->principal : "");
	if (b->host == NULL || b->host[0] == '\0')
		invalid("%s", "an ACL needs a host (\"*\" for any)");
}

bool
kp_acl_create(const KpAclBinding *b)
{
	Oid			types[7] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[7];
	bool		created;
	AsOwner		saved;

	validate_binding(b);
	values[0] = CStringGetTextDatum(b->principal);
	values[1] = CStringGetTextDatum(kp_acl_resource_type_name(b->resource_type));
	values[2] = CStringGetTextDatum(kp_acl_pattern_type_name(b->pattern_type));
	values[3] = CStringGetTextDatum(b->resource_name);
	values[4] = CStringGetTextDatum(kp_acl_operation_name(b->operation));
	values[5] = CStringGetTextDatum(kp_acl_permission_name(b->permission));
	values[6] = CStringGetTextDatum(b->host);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	as_owner_begin(&saved);
	if (kp_spi_execute_with_args("INSERT INTO kafka.acls (principal, resource_type, pattern_type, "
								 "resource_name, operation, permission, host) "
								 "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
								 7, types, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "kafka_pg: cannot insert into kafka.acls");
	as_owner_end(&saved);
	created = SPI_processed > 0;
	SPI_finish();
	return created;
}

/* Does a filter (Kafka's AclBindingFilter) match a stored binding? */
static bool
filter_matches(const KpAclBinding *f, const KpAclBinding *b)
{
	if (f->resource_type != KP_ACL_RESOURCE_ANY && f->resource_type != b->resource_type)
		return false;
	if (f->principal && strcmp(f->principal, b->principal) != 0)
		return false;
	if (f->host && strcmp(f->host, b->host) != 0)
		return false;
	if (f->operation != KP_ACL_OP_ANY && f->operation != b->operation)
		return false;
	if (f->permission != KP_ACL_PERMISSION_ANY && f->permission != b->permission)
		return false;
	switch (f->pattern_type)
	{
		case KP_ACL_PATTERN_ANY:
			return f->resource_name == NULL || strcmp(f->resource_name, b->resource_name) == 0;
		case KP_ACL_PATTERN_MATCH:
			/* the ACLs that apply to the named resource */
			if (f->resource_name == NULL)
				return true;
			if (b->pattern_type == KP_ACL_PATTERN_LITERAL)
				return strcmp(b->resource_name, f->resource_name) == 0 ||
					strcmp(b->resource_name, "*") == 0;
			return strncmp(b->resource_name, f->resource_name, strlen(b->resource_name)) == 0;
		default:
			return f->pattern_type == b->pattern_type &&
				(f->resource_name == NULL || strcmp(f->resource_name, b->resource_name) == 0);
	}
}

/* Refuse a filter Kafka refuses. */
void
kp_acl_validate_filter(const KpAclBinding *f)
{
	if (f->resource_type < KP_ACL_RESOURCE_ANY || f->resource_type > KP_ACL_RESOURCE_USER)
		invalid("invalid resource type filter %s", kp_acl_resource_type_name(f->resource_type));
	if (f->pattern_type < KP_ACL_PATTERN_ANY || f->pattern_type > KP_ACL_PATTERN_PREFIXED)
		invalid("invalid pattern type filter %s", kp_acl_pattern_type_name(f->pattern_type));
	if (f->operation < KP_ACL_OP_ANY || f->operation > KP_ACL_OP_TWO_PHASE_COMMIT)
		invalid("invalid operation filter %s", kp_acl_operation_name(f->operation));
	if (f->permission < KP_ACL_PERMISSION_ANY || f->permission > KP_ACL_PERMISSION_ALLOW)
		invalid("invalid permission type filter %s", kp_acl_permission_name(f->permission));
}

static KpAclBinding *
copy_binding(const KpAclBinding *b)
{
	KpAclBinding *c = palloc(sizeof(KpAclBinding));

	*c = *b;
	c->principal = pstrdup(b->principal);
	c->resource_name = pstrdup(b->resource_name);
	c->host = pstrdup(b->host);
	return c;
}

/* The ACLs matching a filter, read from the table now (not the cache). */
static List *
matching(const KpAclBinding *f, bool for_delete)
{
	List	   *result = NIL;
	MemoryContext caller = CurrentMemoryContext;
	uint64		i;
	AsOwner		saved;

	kp_acl_validate_filter(f);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	as_owner_begin(&saved);
	if (kp_spi_execute(for_delete ?
					   "SELECT principal, resource_type, pattern_type, resource_name, operation, "
					   "permission, host FROM kafka.acls ORDER BY 2, 3, 4, 1, 7, 5, 6 FOR UPDATE" :
					   "SELECT principal, resource_type, pattern_type, resource_name, operation, "
					   "permission, host FROM kafka.acls ORDER BY 2, 3, 4, 1, 7, 5, 6",
					   !for_delete, 0) != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg: cannot read kafka.acls");
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		KpAclBinding b;

		b.principal = getstr(tup, desc, 1);
		b.resource_type = kp_acl_resource_type_code(getstr(tup, desc, 2));
		b.pattern_type = kp_acl_pattern_type_code(getstr(tup, desc, 3));
		b.resource_name = getstr(tup, desc, 4);
		b.operation = kp_acl_operation_code(getstr(tup, desc, 5));
		b.permission = kp_acl_permission_code(getstr(tup, desc, 6));
		b.host = getstr(tup, desc, 7);
		if (filter_matches(f, &b))
		{
			MemoryContext old = MemoryContextSwitchTo(caller);

			result = lappend(result, copy_binding(&b));
			MemoryContextSwitchTo(old);
		}
	}
	if (for_delete)
	{
		ListCell   *lc;
		Oid			types[7] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};

		foreach(lc, result)
		{
			KpAclBinding *b = lfirst(lc);
			Datum		values[7];

			values[0] = CStringGetTextDatum(b->principal);
			values[1] = CStringGetTextDatum(kp_acl_resource_type_name(b->resource_type));
			values[2] = CStringGetTextDatum(kp_acl_pattern_type_name(b->pattern_type));
			values[3] = CStringGetTextDatum(b->resource_name);
			values[4] = CStringGetTextDatum(kp_acl_operation_name(b->operation));
			values[5] = CStringGetTextDatum(kp_acl_permission_name(b->permission));
			values[6] = CStringGetTextDatum(b->host);
			if (kp_spi_execute_with_args("DELETE FROM kafka.acls WHERE principal = $1 AND "
										 "resource_type = $2 AND pattern_type = $3 AND "
										 "resource_name = $4 AND operation = $5 AND "
										 "permission = $6 AND host = $7",
										 7, types, values, NULL, false, 0) != SPI_OK_DELETE)
				elog(ERROR, "kafka_pg: cannot delete from kafka.acls");
		}
	}
	as_owner_end(&saved);
	SPI_finish();
	return result;
}

List *
kp_acl_describe(const KpAclBinding *filter)
{
	return matching(filter, false);
}

List *
kp_acl_delete(const KpAclBinding *filter)
{
	return matching(filter, true);
}

/* kafka._acls_changed(): the statement trigger on kafka.acls */
PG_FUNCTION_INFO_V1(kp_sql_acls_changed);
Datum
kp_sql_acls_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("kafka._acls_changed() is a trigger")));
	CacheInvalidateRelcacheByRelid(RelationGetRelid(trigdata->tg_relation));
	return PointerGetDatum(NULL);
}
