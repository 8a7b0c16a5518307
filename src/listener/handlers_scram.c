/*-------------------------------------------------------------------------
 *
 * handlers_scram.c
 *	  DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554):
 *	  Kafka's SCRAM users are PostgreSQL's roles.
 *
 * A role logs in to Kafka with its PostgreSQL password (issue 10), so a
 * user's SCRAM credential is the role's SCRAM-SHA-256 verifier
 * (src/catalog/scram.c).  Describe reports, as Kafka does, the mechanism
 * and iteration count per user and nothing of the secret.  There is no
 * SCRAM-SHA-512 credential: PostgreSQL keeps no such verifier.
 *
 * Alter is refused with CLUSTER_AUTHORIZATION_FAILED.  PostgreSQL could
 * store the verifier a client computes from its salted password (StoredKey
 * = SHA-256(HMAC(SaltedPassword, "Client Key")), ServerKey =
 * HMAC(SaltedPassword, "Server Key")), but the listener does not
 * authenticate yet and runs every request as the bootstrap superuser: any
 * process that reaches the port could set any role's password.  It waits
 * for authentication and ACLs (issue 10); until then passwords are set in
 * SQL (ALTER ROLE ... PASSWORD).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "listener/handlers.h"

/* org.apache.kafka.clients.admin.ScramMechanism */
#define SCRAM_SHA_256	1

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static void
describe_user(KpDescribeUserScramCredentialsResponseDescribeUserScramCredentialsResult *out,
			  const char *user, int iterations)
{
	out->user = pstrdup(user);
	if (iterations <= 0)
	{
		out->error_code = KP_ERR_RESOURCE_NOT_FOUND;
		out->error_message = psprintf("Attempt to describe a user credential that does not exist: %s",
									  user);
		out->n_credential_infos = 0;
		return;
	}
	out->error_code = KP_ERR_NONE;
	out->error_message = NULL;
	out->n_credential_infos = 1;
	out->credential_infos = palloc0(sizeof(KpDescribeUserScramCredentialsResponseCredentialInfo));
	out->credential_infos[0].mechanism = SCRAM_SHA_256;
	out->credential_infos[0].iterations = iterations;
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
		KpScramCredential *creds;
		int			ncreds = kp_scram_credentials(&creds);

		resp->n_results = ncreds;
		resp->results = palloc0(sizeof(*resp->results) * Max(ncreds, 1));
		for (i = 0; i < ncreds; i++)
			describe_user(&resp->results[i], creds[i].user, creds[i].iterations);
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
		describe_user(out, names[i], kp_scram_credential_iterations(names[i]));
	}
}

/*
 * Refused until the listener authenticates (see the file comment): one
 * result per distinct user of the deletions and upsertions, sorted, as
 * Kafka's AlterUserScramCredentialsRequest.getErrorResponse answers a
 * client without ALTER on the cluster.
 */
void
kp_handle_alter_user_scram_credentials(KpRequestContext *ctx)
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
		KpAlterUserScramCredentialsResponseAlterUserScramCredentialsResult *out;

		if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
			continue;
		out = &resp->results[resp->n_results++];
		out->user = pstrdup(names[i]);
		out->error_code = KP_ERR_CLUSTER_AUTHORIZATION_FAILED;
		out->error_message = pstrdup("altering SCRAM credentials over the Kafka listener is refused until it authenticates clients (issue 10); set the role's password in SQL with ALTER ROLE ... PASSWORD");
	}
}
