/*-------------------------------------------------------------------------
 *
 * handlers_scram.c
 *	  DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554):
 *	  Kafka's SCRAM users are PostgreSQL's roles.
 *
 * A role logs in to Kafka with its PostgreSQL password (issue 10), so a
 * user's SCRAM-SHA-256 credential is the role's own verifier
 * (pg_authid.rolpassword); its SCRAM-SHA-512 credential, which PostgreSQL
 * cannot keep, is kafka_pg's (kafka.scram_credentials).  Both live in
 * src/catalog/scram.c.  Describe reports, as Kafka does, the mechanisms and
 * iteration counts per user and nothing of the secrets.
 *
 * Alter takes what Kafka's clients send (kafka-configs.sh --add-config
 * 'SCRAM-SHA-512=[iterations=8192,password=...]'): the salt and the salted
 * password, never the password.  The server derives StoredKey and ServerKey
 * (RFC 5802) and keeps only those.  A SCRAM-SHA-256 upsertion sets the
 * role's PostgreSQL password verifier (ALTER ROLE ... PASSWORD), a deletion
 * removes it: the Kafka and the PostgreSQL login are one password.  Users
 * must be existing roles.
 *
 * Who may alter: CLUSTER ALTER is checked before the handler runs
 * (kp_authz_admit, authz.c), as Kafka checks it.  On top of it, since a
 * credential is a login: an authenticated principal (a SASL login, not an
 * anonymous client, whatever kafka.anonymous_role is) that is a superuser,
 * or a member of kafka_admin altering a role that is not a superuser (as
 * PostgreSQL lets only superusers change a superuser's password).  Anyone
 * else gets CLUSTER_AUTHORIZATION_FAILED (may_alter_credentials).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "catalog/pg_authid.h"
#include "common/base64.h"
#include "listener/handlers.h"
#include "listener/sasl.h"

/* org.apache.kafka.clients.admin.ScramMechanism */
#define SCRAM_SHA_256	1
#define SCRAM_SHA_512	2

/* ScramMechanism.minIterations / maxIterations (both mechanisms) */
#define SCRAM_MIN_ITERATIONS	4096
#define SCRAM_MAX_ITERATIONS	16384

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static void
describe_user(KpDescribeUserScramCredentialsResponseDescribeUserScramCredentialsResult *out,
			  const char *user, int iterations256, int iterations512)
{
	out->user = pstrdup(user);
	if (iterations256 <= 0 && iterations512 <= 0)
	{
		out->error_code = KP_ERR_RESOURCE_NOT_FOUND;
		out->error_message = psprintf("Attempt to describe a user credential that does not exist: %s",
									  user);
		out->n_credential_infos = 0;
		return;
	}
	out->error_code = KP_ERR_NONE;
	out->error_message = NULL;
	out->n_credential_infos = 0;
	out->credential_infos = palloc0(sizeof(KpDescribeUserScramCredentialsResponseCredentialInfo) * 2);
	if (iterations256 > 0)
	{
		out->credential_infos[out->n_credential_infos].mechanism = SCRAM_SHA_256;
		out->credential_infos[out->n_credential_infos++].iterations = iterations256;
	}
	if (iterations512 > 0)
	{
		out->credential_infos[out->n_credential_infos].mechanism = SCRAM_SHA_512;
		out->credential_infos[out->n_credential_infos++].iterations = iterations512;
	}
}

/*
 * No users named (null or empty): every role with a SCRAM verifier.  Named
 * users: one result per distinct name, RESOURCE_NOT_FOUND for a role
 * without a SCRAM-SHA-256 verifier (or no such role), DUPLICATE_RESOURCE
 * for a name asked twice (Kafka's ScramImage.describe).
 */
void
kp_handle_describe_user_scram_credentials(KpRequestContext *ctx)
{
	KpDescribeUserScramCredentialsRequest *req = ctx->request;
	KpDescribeUserScramCredentialsResponse *resp = ctx->response;
	char	  **names;
	int			i;

	resp->error_code = KP_ERR_NONE;
	resp->error_message = pstrdup("");	/* Kafka sends "", not null */

	if (req->n_users <= 0)
	{
		KpScramCredential *c256;
		KpScramCredential *c512;
		int			n256 = kp_scram_credentials(&c256);
		int			n512 = kp_scram512_credentials(&c512);
		int			a = 0;
		int			b = 0;

		/* merge the two lists, both sorted by name */
		resp->results = palloc0(sizeof(*resp->results) * Max(n256 + n512, 1));
		resp->n_results = 0;
		while (a < n256 || b < n512)
		{
			int			cmp = a >= n256 ? 1 : b >= n512 ? -1 : strcmp(c256[a].user, c512[b].user);

			describe_user(&resp->results[resp->n_results++], cmp <= 0 ? c256[a].user : c512[b].user,
						  cmp <= 0 ? c256[a].iterations : 0, cmp >= 0 ? c512[b].iterations : 0);
			if (cmp <= 0)
				a++;
			if (cmp >= 0)
				b++;
		}
		return;
	}

	names = palloc(sizeof(char *) * req->n_users);
	for (i = 0; i < req->n_users; i++)
		names[i] = req->users[i].name ? req->users[i].name : "";
	qsort(names, req->n_users, sizeof(char *), name_cmp);
	resp->results = palloc0(sizeof(*resp->results) * req->n_users);
	resp->n_results = 0;
	for (i = 0; i < req->n_users; i++)
	{
		KpDescribeUserScramCredentialsResponseDescribeUserScramCredentialsResult *out;
		bool		dup = (i + 1 < req->n_users && strcmp(names[i], names[i + 1]) == 0);

		if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
			continue;			/* answered with the first */
		out = &resp->results[resp->n_results++];
		if (dup)
		{
			out->user = pstrdup(names[i]);
			out->error_code = KP_ERR_DUPLICATE_RESOURCE;
			out->error_message = psprintf("Cannot describe SCRAM credentials for the same user twice in a single request: %s",
										  names[i]);
			out->n_credential_infos = 0;
			continue;
		}
		describe_user(out, names[i], kp_scram_credential_iterations(names[i]),
					  kp_scram512_credential_iterations(names[i]));
	}
}

/*
 * May the connection's principal change target's credentials (beyond CLUSTER
 * ALTER, which kp_authz_admit checked)?  NULL if so, else why not.
 */
static const char *
may_alter_credentials(KpRequestContext *ctx, const char *target)
{
	Oid			admin;
	Oid			role;

	if (!OidIsValid(ctx->principal_oid))
		return "altering SCRAM credentials needs an authenticated principal (a SASL login) that is a superuser or a member of kafka_admin";
	if (superuser_arg(ctx->principal_oid))
		return NULL;
	admin = get_role_oid("kafka_admin", true);
	if (!OidIsValid(admin) || !has_privs_of_role(ctx->principal_oid, admin))
		return "altering SCRAM credentials needs a principal that is a superuser or a member of kafka_admin";
	role = get_role_oid(target, true);
	if (OidIsValid(role) && superuser_arg(role))
		return "only a superuser may alter the SCRAM credentials of a superuser";
	return NULL;
}

typedef struct ScramOp
{
	const char *name;
	int			order;			/* deletions first, then upsertions, in
								 * request order */
	bool		upsert;
	int8		mechanism;
	KpAlterUserScramCredentialsRequestScramCredentialUpsertion *up;
	bool		done;			/* applied: logged at the end */
} ScramOp;

static int
op_cmp(const void *a, const void *b)
{
	const ScramOp *x = a;
	const ScramOp *y = b;
	int			c = strcmp(x->name, y->name);

	return c != 0 ? c : (x->order > y->order) - (x->order < y->order);
}

/* Apply one validated operation (in a subtransaction). */
static void
apply_op(void *arg)
{
	ScramOp    *op = arg;
	KpAlterUserScramCredentialsRequestScramCredentialUpsertion *up = op->up;
	int			klen = op->mechanism == SCRAM_SHA_512 ? KP_SCRAM512_KEY_LEN : KP_SCRAM_KEY_LEN;
	uint8		stored[KP_SCRAM512_KEY_LEN];
	uint8		server[KP_SCRAM512_KEY_LEN];

	if (!op->upsert)
	{
		if (op->mechanism == SCRAM_SHA_512)
			(void) kp_scram512_delete(op->name);
		else
			kp_scram256_set_verifier(op->name, NULL);
		return;
	}
	if (!kp_scram_keys(klen, up->salted_password.data, stored, server))
		ereport(ERROR, (errmsg("could not derive the SCRAM keys")));
	if (op->mechanism == SCRAM_SHA_512)
		kp_scram512_store(op->name, up->iterations, up->salt.data, up->salt.len, stored, server);
	else
	{
		/* PostgreSQL's verifier format (scram_build_secret) */
		char		salt64[128];
		char		stored64[64];
		char		server64[64];
		int			n1 = pg_b64_encode((const char *) up->salt.data, up->salt.len, salt64, sizeof(salt64) - 1);
		int			n2 = pg_b64_encode((const char *) stored, klen, stored64, sizeof(stored64) - 1);
		int			n3 = pg_b64_encode((const char *) server, klen, server64, sizeof(server64) - 1);

		if (n1 < 0 || n2 < 0 || n3 < 0)
			ereport(ERROR, (errmsg("could not encode the SCRAM verifier")));
		salt64[n1] = stored64[n2] = server64[n3] = '\0';
		kp_scram256_set_verifier(op->name, psprintf("SCRAM-SHA-256$%d:%s$%s:%s", up->iterations,
													salt64, stored64, server64));
	}
	explicit_bzero(stored, sizeof(stored));
	explicit_bzero(server, sizeof(server));
}

/* Kafka's ScramControlManager checks; KP_ERR_NONE or the code with *msg. */
static int16
check_op(KpRequestContext *ctx, const ScramOp *op, char **msg)
{
	const char *why;
	Oid			role;

	if (op->mechanism != SCRAM_SHA_256 && op->mechanism != SCRAM_SHA_512)
	{
		*msg = pstrdup("Unknown SCRAM mechanism");
		return KP_ERR_UNSUPPORTED_SASL_MECHANISM;
	}
	if (op->name[0] == '\0')
	{
		*msg = pstrdup("Username must not be empty");
		return KP_ERR_UNACCEPTABLE_CREDENTIAL;
	}
	why = may_alter_credentials(ctx, op->name);
	if (why)
	{
		*msg = pstrdup(why);
		return KP_ERR_CLUSTER_AUTHORIZATION_FAILED;
	}
	role = strlen(op->name) < NAMEDATALEN ? get_role_oid(op->name, true) : InvalidOid;
	if (!op->upsert)
	{
		if (!OidIsValid(role) ||
			(op->mechanism == SCRAM_SHA_512 ? kp_scram512_credential_iterations(op->name) :
			 kp_scram_credential_iterations(op->name)) <= 0)
		{
			*msg = pstrdup("Attempt to delete a user credential that does not exist");
			return KP_ERR_RESOURCE_NOT_FOUND;
		}
		return KP_ERR_NONE;
	}
	if (op->up->iterations < SCRAM_MIN_ITERATIONS)
	{
		*msg = pstrdup("Too few iterations");
		return KP_ERR_UNACCEPTABLE_CREDENTIAL;
	}
	if (op->up->iterations > SCRAM_MAX_ITERATIONS)
	{
		*msg = pstrdup("Too many iterations");
		return KP_ERR_UNACCEPTABLE_CREDENTIAL;
	}
	if (op->up->salt.len <= 0 || op->up->salt.len > KP_SCRAM_SALT_MAX ||
		op->up->salted_password.len !=
		(op->mechanism == SCRAM_SHA_512 ? KP_SCRAM512_KEY_LEN : KP_SCRAM_KEY_LEN))
	{
		*msg = pstrdup("The salt (1 to 64 bytes) or the salted password (the mechanism's hash size) has the wrong length");
		return KP_ERR_UNACCEPTABLE_CREDENTIAL;
	}
	if (!OidIsValid(role))
	{
		*msg = psprintf("There is no PostgreSQL role \"%s\": Kafka users are roles (CREATE ROLE ... LOGIN)",
						op->name);
		return KP_ERR_UNACCEPTABLE_CREDENTIAL;
	}
	return KP_ERR_NONE;
}

/*
 * The whole request refused with code and message (kp_refuse): one result
 * per distinct user of the deletions and upsertions, sorted, as Kafka's
 * AlterUserScramCredentialsRequest.getErrorResponse answers (the generic
 * kp_error_response cannot pair two request arrays with one result array).
 */
void
kp_alter_user_scram_credentials_refuse(KpRequestContext *ctx, int16 code, const char *message)
{
	KpAlterUserScramCredentialsRequest *req = ctx->request;
	KpAlterUserScramCredentialsResponse *resp = ctx->response;
	int			n_del = Max(req->n_deletions, 0);
	int			n_up = Max(req->n_upsertions, 0);
	char	  **names = palloc(sizeof(char *) * Max(n_del + n_up, 1));
	int			n = 0;
	int			i;

	for (i = 0; i < n_del; i++)
		names[n++] = req->deletions[i].name ? req->deletions[i].name : "";
	for (i = 0; i < n_up; i++)
		names[n++] = req->upsertions[i].name ? req->upsertions[i].name : "";
	qsort(names, n, sizeof(char *), name_cmp);
	resp->results = palloc0(sizeof(*resp->results) * Max(n, 1));
	resp->n_results = 0;
	for (i = 0; i < n; i++)
	{
		if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
			continue;
		resp->results[resp->n_results].user = pstrdup(names[i]);
		resp->results[resp->n_results].error_code = code;
		resp->results[resp->n_results++].error_message = message ? pstrdup(message) : NULL;
	}
}

/*
 * One result per distinct user of the deletions and upsertions, sorted.  A
 * user named twice in one request is DUPLICATE_RESOURCE (Kafka keys its
 * operations by user); each valid operation is applied in a subtransaction
 * of its own.  A role or credential locked by a transaction still open
 * (ALTER ROLE in it) raises the lock error out of the handler (dispatch.c,
 * LOCK_RETRY_ROW): the request is rolled back and run again, so what it
 * did is logged only once every operation has run.
 */
void
kp_handle_alter_user_scram_credentials(KpRequestContext *ctx)
{
	KpAlterUserScramCredentialsRequest *req = ctx->request;
	KpAlterUserScramCredentialsResponse *resp = ctx->response;
	int			n_del = Max(req->n_deletions, 0);
	int			n_up = Max(req->n_upsertions, 0);
	ScramOp    *ops = palloc0(sizeof(ScramOp) * Max(n_del + n_up, 1));
	int			n = 0;
	int			i;

	for (i = 0; i < n_del; i++, n++)
	{
		ops[n].name = req->deletions[i].name ? req->deletions[i].name : "";
		ops[n].order = n;
		ops[n].mechanism = req->deletions[i].mechanism;
	}
	for (i = 0; i < n_up; i++, n++)
	{
		ops[n].name = req->upsertions[i].name ? req->upsertions[i].name : "";
		ops[n].order = n;
		ops[n].upsert = true;
		ops[n].mechanism = req->upsertions[i].mechanism;
		ops[n].up = &req->upsertions[i];
	}
	qsort(ops, n, sizeof(ScramOp), op_cmp);
	resp->results = palloc0(sizeof(*resp->results) * Max(n, 1));
	resp->n_results = 0;
	for (i = 0; i < n; i++)
	{
		KpAlterUserScramCredentialsResponseAlterUserScramCredentialsResult *out;
		bool		dup = i + 1 < n && strcmp(ops[i].name, ops[i + 1].name) == 0;
		char	   *msg = NULL;

		if (i > 0 && strcmp(ops[i].name, ops[i - 1].name) == 0)
			continue;			/* answered with the first */
		out = &resp->results[resp->n_results++];
		out->user = pstrdup(ops[i].name);
		if (dup)
		{
			out->error_code = KP_ERR_DUPLICATE_RESOURCE;
			out->error_message = pstrdup("A user credential cannot be altered twice in the same request");
			continue;
		}
		out->error_code = check_op(ctx, &ops[i], &msg);
		if (out->error_code == KP_ERR_NONE)
			out->error_code = kp_handler_try(apply_op, &ops[i], &msg);
		out->error_message = out->error_code == KP_ERR_NONE ? NULL : msg;
		ops[i].done = out->error_code == KP_ERR_NONE;
	}
	for (i = 0; i < n; i++)
		if (ops[i].done)
			ereport(LOG,
					(errmsg("kafka_pg listener: principal %s %s the %s credential of role \"%s\"",
							ctx->principal, ops[i].upsert ? "set" : "deleted",
							ops[i].mechanism == SCRAM_SHA_512 ? "SCRAM-SHA-512" : "SCRAM-SHA-256",
							ops[i].name)));
}
