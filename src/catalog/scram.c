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
 * SCRAM-SHA-512, which PostgreSQL does not keep, is kafka_pg's own:
 * kafka.scram_credentials holds the salt, iteration count, StoredKey and
 * ServerKey (RFC 5802) of a role, set over the wire by
 * AlterUserScramCredentials (src/listener/handlers_scram.c decides who may)
 * and read back by kp_scram512_verifier.  A SCRAM-SHA-256 credential set
 * over the wire becomes the role's PostgreSQL password verifier (ALTER ROLE
 * ... PASSWORD), the one both front doors check.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "common/base64.h"
#include "executor/spi.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "catalog/catalog_spi.h"
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
	out->key_len = KP_SCRAM_KEY_LEN;
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

/* ---------------------------------------------------------------------
 * SCRAM-SHA-512: kafka.scram_credentials
 * ---------------------------------------------------------------------
 */

/*
 * The checks of kp_scram_verifier on the role itself: it exists, may log
 * in and has not expired.  Fills role_oid, role and valid_until_ms.
 */
static bool
login_role(const char *user, KpScramVerifier *out, const char **why)
{
	HeapTuple	tup;
	Form_pg_authid role;
	bool		isnull;
	Datum		d;

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
	d = SysCacheGetAttr(AUTHNAME, tup, Anum_pg_authid_rolvaliduntil, &isnull);
	if (!isnull)
	{
		TimestampTz until = DatumGetTimestampTz(d);

		if (until < GetCurrentTimestamp())
		{
			*why = "password has expired (rolvaliduntil)";
			ReleaseSysCache(tup);
			return false;
		}
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

static void
copy_bytea(HeapTuple tup, TupleDesc desc, int col, uint8 *dst, int cap, int *len)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);
	bytea	   *b;
	int			n;

	*len = 0;
	if (isnull)
		return;
	b = DatumGetByteaPP(d);
	n = VARSIZE_ANY_EXHDR(b);
	if (n > cap)
		return;
	memcpy(dst, VARDATA_ANY(b), n);
	*len = n;
}

bool
kp_scram512_verifier(const char *user, KpScramVerifier *out, const char **why)
{
	Oid			types[2] = {TEXTOID, OIDOID};
	Datum		args[2];
	bool		found = false;

	memset(out, 0, sizeof(*out));
	if (!login_role(user, out, why))
		return false;
	args[0] = CStringGetTextDatum(out->role);
	args[1] = ObjectIdGetDatum(out->role_oid);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute_with_args("SELECT iterations, salt, stored_key, server_key FROM kafka.scram_credentials "
								 "WHERE role_name = $1 AND role_oid = $2 AND mechanism = 'SCRAM-SHA-512'",
								 2, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg: could not read kafka.scram_credentials");
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int			ls;
		int			lv;

		out->iterations = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		copy_bytea(tup, desc, 2, out->salt, KP_SCRAM_SALT_MAX, &out->salt_len);
		copy_bytea(tup, desc, 3, out->stored_key, KP_SCRAM512_KEY_LEN, &ls);
		copy_bytea(tup, desc, 4, out->server_key, KP_SCRAM512_KEY_LEN, &lv);
		out->key_len = KP_SCRAM512_KEY_LEN;
		found = out->salt_len > 0 && ls == KP_SCRAM512_KEY_LEN && lv == KP_SCRAM512_KEY_LEN &&
			out->iterations > 0;
	}
	SPI_finish();
	if (!found)
	{
		*why = "role has no SCRAM-SHA-512 credential (set one with AlterUserScramCredentials)";
		explicit_bzero(out, sizeof(*out));
		return false;
	}
	return true;
}

/* Credentials of roles that still exist under the name and OID they were set for. */
static const char *const live_credentials =
"SELECT c.role_name, c.iterations FROM kafka.scram_credentials c "
"JOIN pg_catalog.pg_authid a ON a.oid = c.role_oid AND a.rolname = c.role_name AND a.rolcanlogin "
"WHERE c.mechanism = 'SCRAM-SHA-512'";

int
kp_scram512_credentials(KpScramCredential **out)
{
	int			n;
	int			i;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute(psprintf("%s ORDER BY c.role_name COLLATE \"C\"", live_credentials), true, 0) != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg: could not read kafka.scram_credentials");
	n = (int) SPI_processed;
	*out = SPI_palloc(sizeof(KpScramCredential) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		char	   *name = SPI_getvalue(tup, SPI_tuptable->tupdesc, 1);
		bool		isnull;

		(*out)[i].user = SPI_palloc(strlen(name) + 1);
		strcpy((*out)[i].user, name);
		(*out)[i].iterations = DatumGetInt32(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull));
	}
	SPI_finish();
	return n;
}

int
kp_scram512_credential_iterations(const char *user)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1];
	int			iterations = 0;

	args[0] = CStringGetTextDatum(user);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute_with_args(psprintf("%s AND c.role_name = $1", live_credentials),
								 1, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg: could not read kafka.scram_credentials");
	if (SPI_processed == 1)
	{
		bool		isnull;

		iterations = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	}
	SPI_finish();
	return iterations;
}

static bytea *
make_bytea(const uint8 *data, int len)
{
	bytea	   *b = palloc(VARHDRSZ + len);

	SET_VARSIZE(b, VARHDRSZ + len);
	memcpy(VARDATA(b), data, len);
	return b;
}

void
kp_scram512_store(const char *user, int iterations, const uint8 *salt, int salt_len,
				  const uint8 *stored_key, const uint8 *server_key)
{
	Oid			types[6] = {OIDOID, TEXTOID, INT4OID, BYTEAOID, BYTEAOID, BYTEAOID};
	Datum		args[6];
	Oid			role = get_role_oid(user, false);

	args[0] = ObjectIdGetDatum(role);
	args[1] = CStringGetTextDatum(user);
	args[2] = Int32GetDatum(iterations);
	args[3] = PointerGetDatum(make_bytea(salt, salt_len));
	args[4] = PointerGetDatum(make_bytea(stored_key, KP_SCRAM512_KEY_LEN));
	args[5] = PointerGetDatum(make_bytea(server_key, KP_SCRAM512_KEY_LEN));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute_with_args("INSERT INTO kafka.scram_credentials "
								 "(role_oid, role_name, mechanism, iterations, salt, stored_key, server_key) "
								 "VALUES ($1, $2, 'SCRAM-SHA-512', $3, $4, $5, $6) "
								 "ON CONFLICT (role_name, mechanism) DO UPDATE SET role_oid = excluded.role_oid, "
								 "iterations = excluded.iterations, salt = excluded.salt, "
								 "stored_key = excluded.stored_key, server_key = excluded.server_key",
								 6, types, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "kafka_pg: could not change kafka.scram_credentials");
	SPI_finish();
}

bool
kp_scram512_delete(const char *user)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1];
	bool		deleted;

	args[0] = CStringGetTextDatum(user);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute_with_args("DELETE FROM kafka.scram_credentials WHERE role_name = $1 "
								 "AND mechanism = 'SCRAM-SHA-512'",
								 1, types, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "kafka_pg: could not change kafka.scram_credentials");
	deleted = SPI_processed > 0;
	SPI_finish();
	return deleted;
}

void
kp_scram256_set_verifier(const char *user, const char *verifier)
{
	StringInfoData sql;

	(void) get_role_oid(user, false);
	initStringInfo(&sql);
	appendStringInfo(&sql, "ALTER ROLE %s PASSWORD %s", quote_identifier(user),
					 verifier ? quote_literal_cstr(verifier) : "NULL");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute(sql.data, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "kafka_pg: could not set the password of role \"%s\"", user);
	SPI_finish();
	explicit_bzero(sql.data, sql.len);
}
