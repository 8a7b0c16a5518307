/*-------------------------------------------------------------------------
 *
 * scram.c
 *	  The SCRAM credentials Kafka clients will log in with: PostgreSQL's own
 *	  SCRAM-SHA-256 verifiers in pg_authid.rolpassword.
 *
 * A role logs in to Kafka with the same password as to PostgreSQL (issue
 * 10), so the Kafka user of a SCRAM credential is the role and its
 * credential is the role's verifier,
 * 'SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>'.
 * DescribeUserScramCredentials reports a mechanism and an iteration count
 * per user, as Kafka does, and nothing else: the verifier is parsed here
 * and wiped, never returned.  Roles with an MD5 password or none have no
 * SCRAM credential, and neither do NOLOGIN roles (they cannot log in to
 * PostgreSQL, so they will not log in to Kafka).  PostgreSQL keeps no
 * SCRAM-SHA-512 verifier.
 *
 * kp_scram_verifier hands the listener's SASL code (src/listener/sasl.c)
 * the decoded verifier of one LOGIN role whose password has not expired.
 *
 * Read-only: changing a role's password from the Kafka listener waits for
 * authorization (issue 10).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_authid.h"
#include "common/base64.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "catalog/kafka_catalog.h"

/*
 * The iteration count of a rolpassword value if it is a SCRAM-SHA-256
 * verifier, 'SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>'
 * (the format of PostgreSQL's parse_scram_secret, whose header cannot be
 * included by an extension built without GSSAPI headers), else 0.  Only
 * the iteration count is read; the copy of the secret is wiped.
 */
static int
scram_iterations(Datum rolpassword)
{
	static const char prefix[] = "SCRAM-SHA-256$";
	char	   *secret = TextDatumGetCString(rolpassword);
	int			iterations = 0;

	if (strncmp(secret, prefix, sizeof(prefix) - 1) == 0)
	{
		const char *p = secret + sizeof(prefix) - 1;
		char	   *end;
		long		v;

		errno = 0;
		v = strtol(p, &end, 10);
		/* <iterations>:<salt>$<StoredKey>:<ServerKey> */
		if (errno == 0 && end != p && *end == ':' && v > 0 && v <= PG_INT32_MAX &&
			strchr(end + 1, '$') != NULL && strchr(strchr(end + 1, '$'), ':') != NULL)
			iterations = (int) v;
	}
	explicit_bzero(secret, strlen(secret));
	pfree(secret);
	return iterations;
}

static int
credential_cmp(const void *a, const void *b)
{
	return strcmp(((const KpScramCredential *) a)->user,
				  ((const KpScramCredential *) b)->user);
}

/*
 * Every LOGIN role with a SCRAM-SHA-256 verifier, sorted by name, with its
 * iteration count.  Returns the count; *out is palloc'd.
 */
int
kp_scram_credentials(KpScramCredential **out)
{
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	int			n = 0;
	int			cap = 16;

	*out = palloc(sizeof(KpScramCredential) * cap);
	rel = table_open(AuthIdRelationId, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_authid role = (Form_pg_authid) GETSTRUCT(tup);
		bool		isnull;
		Datum		pw = heap_getattr(tup, Anum_pg_authid_rolpassword,
									  RelationGetDescr(rel), &isnull);
		int			iterations;

		if (isnull || !role->rolcanlogin)
			continue;
		iterations = scram_iterations(pw);
		if (iterations <= 0)
			continue;
		if (n == cap)
		{
			cap *= 2;
			*out = repalloc(*out, sizeof(KpScramCredential) * cap);
		}
		(*out)[n].user = pstrdup(NameStr(role->rolname));
		(*out)[n].iterations = iterations;
		n++;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	qsort(*out, n, sizeof(KpScramCredential), credential_cmp);
	return n;
}

/*
 * The iteration count of role user's SCRAM-SHA-256 verifier, or 0 when the
 * role does not exist, cannot log in or has no such verifier (not told
 * apart: Kafka answers RESOURCE_NOT_FOUND for all).
 */
int
kp_scram_credential_iterations(const char *user)
{
	HeapTuple	tup;
	bool		isnull;
	Datum		pw;
	int			iterations = 0;

	if (strlen(user) >= NAMEDATALEN)
		return 0;				/* no role has such a name */
	tup = SearchSysCache1(AUTHNAME, CStringGetDatum(user));
	if (!HeapTupleIsValid(tup))
		return 0;
	pw = SysCacheGetAttr(AUTHNAME, tup, Anum_pg_authid_rolpassword, &isnull);
	if (!isnull && ((Form_pg_authid) GETSTRUCT(tup))->rolcanlogin)
		iterations = scram_iterations(pw);
	ReleaseSysCache(tup);
	return iterations;
}

/* Decode base64 src[0..len) into dst (at most cap bytes); -1 if invalid. */
static int
decode_b64(const char *src, int len, uint8 *dst, int cap)
{
	char		buf[128];
	int			n;

	if (len <= 0 || pg_b64_dec_len(len) > (int) sizeof(buf))
		return -1;
	n = pg_b64_decode(src, len, buf, sizeof(buf));
	if (n < 0 || n > cap)
		return -1;
	memcpy(dst, buf, n);
	explicit_bzero(buf, sizeof(buf));
	return n;
}

/*
 * Parse 'SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>' (the
 * format of PostgreSQL's parse_scram_secret) into *out.
 */
static bool
parse_verifier(const char *secret, KpScramVerifier *out)
{
	static const char prefix[] = "SCRAM-SHA-256$";
	const char *p;
	const char *salt;
	const char *stored;
	const char *server;
	char	   *end;
	long		v;

	if (strncmp(secret, prefix, sizeof(prefix) - 1) != 0)
		return false;
	p = secret + sizeof(prefix) - 1;
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno != 0 || end == p || *end != ':' || v <= 0 || v > PG_INT32_MAX)
		return false;
	out->iterations = (int) v;
	salt = end + 1;
	stored = strchr(salt, '$');
	if (stored == NULL)
		return false;
	stored++;
	server = strchr(stored, ':');
	if (server == NULL)
		return false;
	server++;
	out->salt_len = decode_b64(salt, stored - 1 - salt, out->salt, KP_SCRAM_SALT_MAX);
	return out->salt_len > 0 &&
		decode_b64(stored, server - 1 - stored, out->stored_key, KP_SCRAM_KEY_LEN) == KP_SCRAM_KEY_LEN &&
		decode_b64(server, strlen(server), out->server_key, KP_SCRAM_KEY_LEN) == KP_SCRAM_KEY_LEN;
}

bool
kp_scram_verifier(const char *user, KpScramVerifier *out, const char **why)
{
	HeapTuple	tup;
	Form_pg_authid role;
	bool		isnull;
	Datum		d;
	char	   *secret;
	bool		ok;

	memset(out, 0, sizeof(*out));
	*why = "role does not exist";
	if (strlen(user) >= NAMEDATALEN)
		return false;
	tup = SearchSysCache1(AUTHNAME, CStringGetDatum(user));
	if (!HeapTupleIsValid(tup))
		return false;
	role = (Form_pg_authid) GETSTRUCT(tup);
	if (!role->rolcanlogin)
	{
		*why = "role is not permitted to log in";
		ReleaseSysCache(tup);
		return false;
	}
	d = SysCacheGetAttr(AUTHNAME, tup, Anum_pg_authid_rolpassword, &isnull);
	if (isnull)
	{
		*why = "role has no password";
		ReleaseSysCache(tup);
		return false;
	}
	secret = TextDatumGetCString(d);
	ok = parse_verifier(secret, out);
	explicit_bzero(secret, strlen(secret));
	pfree(secret);
	if (!ok)
	{
		*why = "role has no SCRAM-SHA-256 password (an MD5 one, or none)";
		explicit_bzero(out, sizeof(*out));
		ReleaseSysCache(tup);
		return false;
	}
	d = SysCacheGetAttr(AUTHNAME, tup, Anum_pg_authid_rolvaliduntil, &isnull);
	if (!isnull)
	{
		TimestampTz until = DatumGetTimestampTz(d);

		if (until < GetCurrentTimestamp())
		{
			*why = "password has expired (rolvaliduntil)";
			explicit_bzero(out, sizeof(*out));
			ReleaseSysCache(tup);
			return false;
		}
		/* PostgreSQL's epoch is 2000-01-01; +infinity never expires */
		if (!TIMESTAMP_NOT_FINITE(until))
			out->valid_until_ms = until / 1000 +
				(int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;
	}
	out->role_oid = role->oid;
	strlcpy(out->role, NameStr(role->rolname), NAMEDATALEN);
	ReleaseSysCache(tup);
	*why = NULL;
	return true;
}
