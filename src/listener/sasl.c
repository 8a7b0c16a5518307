/*-------------------------------------------------------------------------
 *
 * sasl.c
 *	  SASL authentication of Kafka clients as PostgreSQL roles:
 *	  SaslHandshake, SaslAuthenticate, SCRAM-SHA-256 and PLAIN against the
 *	  roles' own SCRAM-SHA-256 verifiers, re-authentication (KIP-368).  The
 *	  security settings, the address allowlist and the listener's safe
 *	  default are security.c.
 *
 * A role logs in to Kafka with its PostgreSQL password (issue 10).  The
 * verifier comes from src/catalog (kp_scram_verifier: LOGIN roles whose
 * rolvaliduntil has not passed); nothing here reads the catalog itself.
 *
 * The state machine is Kafka's SaslServerAuthenticator's, for handshake
 * v1 and SaslAuthenticate (the only form Java clients since 1.0 and
 * librdkafka use):
 *
 *	 HANDSHAKE	  --SaslHandshake(enabled mechanism)-->  AUTHENTICATE
 *	 AUTHENTICATE --SaslAuthenticate (1 or 2 rounds)-->  DONE
 *	 DONE		  --SaslHandshake (re-authentication)--> AUTHENTICATE
 *
 * In HANDSHAKE only ApiVersions and SaslHandshake are answered; any other
 * request closes the connection unanswered.  In AUTHENTICATE any request
 * but SaslAuthenticate is answered ILLEGAL_SASL_STATE and the connection
 * closed.  An unknown mechanism gets UNSUPPORTED_SASL_MECHANISM with the
 * enabled ones, then the connection is closed; a failed login gets
 * SASL_AUTHENTICATION_FAILED, then the connection is closed.  With
 * kafka.connections_max_reauth_ms the session lifetime is told to the
 * client (SaslAuthenticate v1+) and a request arriving after it (other
 * than the re-authentication itself) closes the connection.
 *
 * Unknown roles are not told apart from wrong passwords: SCRAM answers
 * them with a salt made from the cluster's mock authentication nonce, as
 * PostgreSQL's own SCRAM does, and fails at the proof.  SCRAM-SHA-512
 * (RFC 5802 with SHA-512, as Kafka's ScramMechanism) is checked against
 * kafka_pg's own credentials (kp_scram512_verifier, set with
 * AlterUserScramCredentials), since PostgreSQL keeps no SHA-512 verifier.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "access/xlog.h"
#include "catalog/pg_control.h"
#include "common/base64.h"
#include "common/cryptohash.h"
#include "common/hmac.h"
#include "common/saslprep.h"
#include "common/scram-common.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "catalog/kafka_catalog.h"
#include "listener/listener.h"
#include "listener/sasl.h"
#include "listener/tls.h"

StaticAssertDecl(KP_SCRAM_KEY_LEN == SCRAM_KEY_LEN, "SCRAM key length");

typedef enum KpSaslState
{
	SASL_HANDSHAKE,				/* waiting for SaslHandshake */
	SASL_AUTHENTICATE,			/* mechanism chosen, exchanging tokens */
	SASL_DONE					/* authenticated */
} KpSaslState;

typedef enum KpSaslMechanism
{
	MECH_NONE,
	MECH_SCRAM_SHA_256,
	MECH_SCRAM_SHA_512,
	MECH_PLAIN
} KpSaslMechanism;

static const char *
mechanism_name(KpSaslMechanism m)
{
	return m == MECH_PLAIN ? "PLAIN" : m == MECH_SCRAM_SHA_512 ? "SCRAM-SHA-512" : "SCRAM-SHA-256";
}

#define SCRAM_MSG_MAX 1024		/* longer SCRAM messages are refused */

typedef struct KpSaslSession
{
	KpSaslState state;
	KpSaslMechanism mechanism;
	bool		reauthenticating;	/* KIP-368: a second login, same principal */
	int64		session_expiry_ms;	/* 0: none */
	/* a SCRAM exchange between its first and final message */
	bool		scram_first_done;
	bool		scram_mock;		/* unknown role: fail at the proof */
	const char *mock_why;		/* why there is no verifier (for the log) */
	char		scram_user[NAMEDATALEN];
	char		gs2_header[NAMEDATALEN + 8];
	char		client_first_bare[SCRAM_MSG_MAX];
	char		server_first[SCRAM_MSG_MAX];
	char		nonce[SCRAM_MSG_MAX];	/* client nonce + server nonce */
	KpScramVerifier verifier;
} KpSaslSession;

/* ---------------------------------------------------------------------
 * Connections
 * ---------------------------------------------------------------------
 */

void
kp_sasl_conn_init(KpConn *c)
{
	strlcpy(c->principal, "ANONYMOUS", sizeof(c->principal));
	c->principal_oid = InvalidOid;
	c->sasl = NULL;
	if (kp_sasl_enabled())
		c->sasl = MemoryContextAllocZero(GetMemoryChunkContext(c), sizeof(KpSaslSession));
}

void
kp_sasl_conn_free(KpConn *c)
{
	if (c->sasl)
	{
		explicit_bzero(c->sasl, sizeof(KpSaslSession));
		pfree(c->sasl);
		c->sasl = NULL;
	}
}

KpSaslVerdict
kp_sasl_admit(KpConn *c, int16 api_key, const char *client_id, int64 received_ms)
{
	KpSaslSession *s = c->sasl;

	if (s == NULL)
		return KP_SASL_RUN;
	switch (s->state)
	{
		case SASL_HANDSHAKE:
			if (api_key == KP_API_API_VERSIONS || api_key == KP_API_SASL_HANDSHAKE)
				return KP_SASL_RUN;
			ereport(LOG,
					(errmsg("kafka_pg listener: closing connection from %s (client %s): API key %d before SASL authentication",
							c->peer, kp_log_client_id(client_id), api_key)));
			return KP_SASL_CLOSE;
		case SASL_AUTHENTICATE:
			if (api_key == KP_API_SASL_AUTHENTICATE)
				return KP_SASL_RUN;
			ereport(LOG,
					(errmsg("kafka_pg listener: closing connection from %s (client %s, principal %s): API key %d during SASL authentication",
							c->peer, kp_log_client_id(client_id), c->principal, api_key)));
			return KP_SASL_REFUSE_ANSWER;
		case SASL_DONE:
			if (s->session_expiry_ms > 0 && received_ms >= s->session_expiry_ms)
			{
				ereport(LOG,
						(errmsg("kafka_pg listener: closing connection from %s (client %s, principal %s): the SASL session expired without re-authentication (kafka.connections_max_reauth_ms)",
								c->peer, kp_log_client_id(client_id), c->principal)));
				return KP_SASL_CLOSE;
			}
			return KP_SASL_RUN;
	}
	return KP_SASL_CLOSE;
}

bool
kp_sasl_pending(KpConn *c)
{
	return c->sasl != NULL && c->sasl->state != SASL_DONE;
}

/* ---------------------------------------------------------------------
 * SaslHandshake
 * ---------------------------------------------------------------------
 */

/* Is mechanism m enabled on this listener? */
static bool
mechanism_enabled(const char *m)
{
	char	   *copy;
	char	   *tok;
	char	   *save;
	bool		found = false;

	/* PLAIN sends the password itself: only over TLS, or when allowed */
	if (strcmp(m, "PLAIN") == 0 && !kp_tls_enabled() && !kp_sasl_plain_allow_plaintext)
		return false;
	copy = pstrdup(kp_sasl_enabled_mechanisms);
	for (tok = strtok_r(copy, ", ", &save); tok && !found; tok = strtok_r(NULL, ", ", &save))
		found = strcmp(tok, m) == 0;
	pfree(copy);
	return found;
}

void
kp_handle_sasl_handshake(KpRequestContext *ctx)
{
	KpSaslHandshakeRequest *req = ctx->request;
	KpSaslHandshakeResponse *resp = ctx->response;
	KpSaslSession *s = ctx->conn->sasl;
	static const char *const all[] = {"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"};
	KpSaslMechanism mech = MECH_NONE;
	int			i;

	resp->mechanisms = palloc(sizeof(char *) * lengthof(all));
	resp->n_mechanisms = 0;
	for (i = 0; i < lengthof(all); i++)
		if (mechanism_enabled(all[i]))
			resp->mechanisms[resp->n_mechanisms++] = (char *) all[i];

	/* a PLAINTEXT listener, or a handshake in the middle of one */
	if (s == NULL || s->state == SASL_AUTHENTICATE)
	{
		resp->error_code = KP_ERR_ILLEGAL_SASL_STATE;
		if (s != NULL)
			ctx->close_after_response = true;
		return;
	}
	if (req->mechanism && mechanism_enabled(req->mechanism))
		mech = strcmp(req->mechanism, "PLAIN") == 0 ? MECH_PLAIN :
			strcmp(req->mechanism, "SCRAM-SHA-512") == 0 ? MECH_SCRAM_SHA_512 : MECH_SCRAM_SHA_256;
	if (mech == MECH_NONE)
	{
		ereport(LOG,
				(errmsg("kafka_pg listener: closing connection from %s: SASL mechanism \"%s\" is not enabled",
						ctx->peer, req->mechanism ? req->mechanism : "")));
		resp->error_code = KP_ERR_UNSUPPORTED_SASL_MECHANISM;
		ctx->close_after_response = true;
		return;
	}
	if (ctx->version < 1)
	{
		/*
		 * Handshake v0 is followed by raw SASL tokens outside Kafka's request
		 * framing; only the v1 form (SaslAuthenticate) is served.
		 */
		ereport(LOG,
				(errmsg("kafka_pg listener: closing connection from %s: SaslHandshake v0 (unframed SASL tokens) is not supported",
						ctx->peer)));
		resp->error_code = KP_ERR_UNSUPPORTED_SASL_MECHANISM;
		ctx->close_after_response = true;
		return;
	}
	if (s->state == SASL_DONE)
	{
		/* KIP-368 re-authentication keeps its mechanism */
		if (mech != s->mechanism)
		{
			ereport(LOG,
					(errmsg("kafka_pg listener: closing connection from %s (principal %s): re-authentication may not change the SASL mechanism",
							ctx->peer, ctx->conn->principal)));
			resp->error_code = KP_ERR_ILLEGAL_SASL_STATE;
			ctx->close_after_response = true;
			return;
		}
		s->reauthenticating = true;
	}
	s->mechanism = mech;
	s->state = SASL_AUTHENTICATE;
	s->scram_first_done = false;
}

/* ---------------------------------------------------------------------
 * SCRAM-SHA-256 (RFC 5802, RFC 7677) and PLAIN (RFC 4616)
 * ---------------------------------------------------------------------
 */

/*
 * HMAC of data with key into out (outlen bytes: 32 SHA-256, 64 SHA-512);
 * false on failure (OOM).
 */
static bool
hmac_hash(int outlen, const uint8 *key, int keylen, const char *data, int len, uint8 *out)
{
	pg_hmac_ctx *h = pg_hmac_create(outlen == KP_SCRAM512_KEY_LEN ? PG_SHA512 : PG_SHA256);
	bool		ok;

	if (h == NULL)
		return false;
	ok = pg_hmac_init(h, key, keylen) >= 0 &&
		pg_hmac_update(h, (const uint8 *) data, len) >= 0 &&
		pg_hmac_final(h, out, outlen) >= 0;
	pg_hmac_free(h);
	return ok;
}

static bool
hmac_sha256(const uint8 *key, int keylen, const char *data, int len, uint8 *out)
{
	return hmac_hash(SCRAM_KEY_LEN, key, keylen, data, len, out);
}

/* H(): SHA-256 or SHA-512 (by len) of input into out. */
static bool
hash_h(const uint8 *input, int len, uint8 *out)
{
	pg_cryptohash_ctx *h = pg_cryptohash_create(len == KP_SCRAM512_KEY_LEN ? PG_SHA512 : PG_SHA256);
	bool		ok;

	if (h == NULL)
		return false;
	ok = pg_cryptohash_init(h) >= 0 &&
		pg_cryptohash_update(h, input, len) >= 0 &&
		pg_cryptohash_final(h, out, len) >= 0;
	pg_cryptohash_free(h);
	return ok;
}

/*
 * RFC 5802's keys from a SaltedPassword of key_len bytes: StoredKey =
 * H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword,
 * "Server Key").  For AlterUserScramCredentials, whose upsertions carry the
 * salted password.
 */
bool
kp_scram_keys(int key_len, const uint8 *salted, uint8 *stored_key, uint8 *server_key)
{
	uint8		client_key[KP_SCRAM512_KEY_LEN];
	bool		ok;

	ok = hmac_hash(key_len, salted, key_len, "Client Key", 10, client_key) &&
		hash_h(client_key, key_len, stored_key) &&
		hmac_hash(key_len, salted, key_len, "Server Key", 10, server_key);
	explicit_bzero(client_key, sizeof(client_key));
	return ok;
}

/*
 * A verifier no password matches, for a role that does not exist: its
 * salt is derived from the user name and the cluster's mock authentication
 * nonce, so it is the same on every attempt (PostgreSQL's
 * scram_mock_salt does the same).
 */
static void
mock_verifier(const char *user, KpScramVerifier *v, int key_len)
{
	uint8		digest[SCRAM_KEY_LEN];

	memset(v, 0, sizeof(*v));
	v->key_len = key_len;
	if (!hmac_sha256((const uint8 *) GetMockAuthenticationNonce(), MOCK_AUTH_NONCE_LEN,
					 user, strlen(user), digest))
		memset(digest, 0, sizeof(digest));
	v->salt_len = SCRAM_DEFAULT_SALT_LEN;
	memcpy(v->salt, digest, SCRAM_DEFAULT_SALT_LEN);
	v->iterations = SCRAM_DEFAULT_ITERATIONS;
	if (!pg_strong_random(v->stored_key, key_len))
		memset(v->stored_key, 0xff, key_len);
}

/* Constant-time comparison of two keys of len bytes. */
static bool
keys_equal(const uint8 *a, const uint8 *b, int len)
{
	uint8		diff = 0;
	int			i;

	for (i = 0; i < len; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

/*
 * Decode a SCRAM saslname (',' is "=2C" and '=' is "=3D") into out;
 * false when malformed or too long.
 */
static bool
decode_saslname(const char *in, int len, char *out, int cap)
{
	int			o = 0;
	int			i;

	for (i = 0; i < len; i++)
	{
		char		ch = in[i];

		if (ch == '=')
		{
			if (i + 2 < len && in[i + 1] == '2' && in[i + 2] == 'C')
				ch = ',';
			else if (i + 2 < len && in[i + 1] == '3' && in[i + 2] == 'D')
				ch = '=';
			else
				return false;
			i += 2;
		}
		else if (ch == ',' || ch == '\0')
			return false;
		if (o + 1 >= cap)
			return false;
		out[o++] = ch;
	}
	out[o] = '\0';
	return o > 0;
}

/* Copy a token into a NUL-terminated string; false if too long or has NUL. */
static bool
token_string(const KpBytes *b, char *out, int cap)
{
	if (b->len < 0 || b->len >= cap || memchr(b->data, '\0', b->len) != NULL)
		return false;
	memcpy(out, b->data, b->len);
	out[b->len] = '\0';
	return true;
}

typedef enum KpSaslStep
{
	STEP_CONTINUE,				/* answer *out and wait for the next token */
	STEP_SUCCESS,				/* authenticated as s->verifier.role */
	STEP_FAILURE,				/* wrong credentials (why: for the log) */
	STEP_MALFORMED				/* not a valid message (why: for the log) */
} KpSaslStep;

/* The client-first-message: n,[a=authzid],n=user,r=nonce[,ext...] */
static KpSaslStep
scram_first(KpSaslSession *s, const char *msg, StringInfo out, const char **why)
{
	const char *p = msg;
	const char *gs2_end;
	const char *user;
	const char *user_end;
	const char *cnonce;
	uint8		raw_nonce[SCRAM_RAW_NONCE_LEN];
	char		snonce[64];
	char		salt64[128];
	int			n;

	*why = "malformed client-first-message";
	/* channel binding is not offered: 'n', or 'y' (client could, we can't) */
	if ((p[0] != 'n' && p[0] != 'y') || p[1] != ',')
	{
		if (p[0] == 'p')
			*why = "channel binding requested; SCRAM-SHA-256-PLUS is not offered";
		return STEP_MALFORMED;
	}
	p += 2;
	if (p[0] == 'a' && p[1] == '=')
	{
		/* an authzid may only repeat the user (Kafka's ScramSaslServer) */
		p = strchr(p, ',');
		if (p == NULL)
			return STEP_MALFORMED;
	}
	if (*p != ',')
		return STEP_MALFORMED;
	gs2_end = ++p;
	if (gs2_end - msg >= (int) sizeof(s->gs2_header))
		return STEP_MALFORMED;
	memcpy(s->gs2_header, msg, gs2_end - msg);
	s->gs2_header[gs2_end - msg] = '\0';
	if (strlcpy(s->client_first_bare, gs2_end, sizeof(s->client_first_bare)) >=
		sizeof(s->client_first_bare))
		return STEP_MALFORMED;

	if (p[0] != 'n' || p[1] != '=')
		return STEP_MALFORMED;	/* also the reserved m= extension */
	user = p + 2;
	user_end = strchr(user, ',');
	if (user_end == NULL ||
		!decode_saslname(user, user_end - user, s->scram_user, sizeof(s->scram_user)))
		return STEP_MALFORMED;
	if (user_end[1] != 'r' || user_end[2] != '=')
		return STEP_MALFORMED;
	cnonce = user_end + 3;
	n = strcspn(cnonce, ",");
	if (n == 0)
		return STEP_MALFORMED;
	for (int i = 0; i < n; i++)
		if (cnonce[i] < 0x21 || cnonce[i] > 0x7e)
			return STEP_MALFORMED;
	/* Kafka's extensions: tokenauth=true asks for a delegation token */
	if (cnonce[n] == ',' && strstr(cnonce + n, "tokenauth=true") != NULL)
	{
		*why = "delegation tokens are not supported";
		return STEP_MALFORMED;
	}
	if (gs2_end - msg > 3)
	{
		/* "n,a=<user>,": the authzid must be the user */
		char		authzid[NAMEDATALEN];

		if (!decode_saslname(msg + 4, gs2_end - msg - 5, authzid, sizeof(authzid)) ||
			strcmp(authzid, s->scram_user) != 0)
		{
			*why = "authorization id differs from the user name";
			return STEP_MALFORMED;
		}
	}

	if (!pg_strong_random(raw_nonce, sizeof(raw_nonce)))
	{
		*why = "could not generate a nonce";
		return STEP_FAILURE;
	}
	n = pg_b64_encode((char *) raw_nonce, sizeof(raw_nonce), snonce, sizeof(snonce) - 1);
	if (n < 0)
		return STEP_FAILURE;
	snonce[n] = '\0';
	snprintf(s->nonce, sizeof(s->nonce), "%.*s%s", (int) strcspn(cnonce, ","), cnonce, snonce);

	/* the verifier, or a mock one (told apart only at the proof) */
	{
		const char *whynot;

		if (s->mechanism == MECH_SCRAM_SHA_512)
			s->scram_mock = !kp_scram512_verifier(s->scram_user, &s->verifier, &whynot);
		else
			s->scram_mock = !kp_scram_verifier(s->scram_user, &s->verifier, &whynot);
		if (s->scram_mock)
		{
			mock_verifier(s->scram_user, &s->verifier,
						  s->mechanism == MECH_SCRAM_SHA_512 ? KP_SCRAM512_KEY_LEN : KP_SCRAM_KEY_LEN);
			strlcpy(s->verifier.role, s->scram_user, sizeof(s->verifier.role));
			s->mock_why = whynot;
		}
	}
	n = pg_b64_encode((char *) s->verifier.salt, s->verifier.salt_len, salt64, sizeof(salt64) - 1);
	if (n < 0)
		return STEP_FAILURE;
	salt64[n] = '\0';
	snprintf(s->server_first, sizeof(s->server_first), "r=%s,s=%s,i=%d",
			 s->nonce, salt64, s->verifier.iterations);
	appendStringInfoString(out, s->server_first);
	s->scram_first_done = true;
	return STEP_CONTINUE;
}

/* The client-final-message: c=<gs2 b64>,r=<nonce>[,ext],p=<proof> */
static KpSaslStep
scram_final(KpSaslSession *s, const char *msg, StringInfo out, const char **why)
{
	const char *proof_at;
	char		gs2_64[128];
	char		expect[SCRAM_MSG_MAX];
	int			n;
	size_t		nonce_len;
	StringInfoData auth;
	int			klen = s->verifier.key_len;
	uint8		proof[KP_SCRAM512_KEY_LEN + 8];
	uint8		client_signature[KP_SCRAM512_KEY_LEN];
	uint8		client_key[KP_SCRAM512_KEY_LEN];
	uint8		stored_key[KP_SCRAM512_KEY_LEN];
	uint8		server_signature[KP_SCRAM512_KEY_LEN];
	char		sig64[128];
	int			i;

	*why = "malformed client-final-message";
	proof_at = strstr(msg, ",p=");
	if (proof_at == NULL)
		return STEP_MALFORMED;
	n = pg_b64_encode(s->gs2_header, strlen(s->gs2_header), gs2_64, sizeof(gs2_64) - 1);
	if (n < 0)
		return STEP_MALFORMED;
	gs2_64[n] = '\0';
	snprintf(expect, sizeof(expect), "c=%s,r=", gs2_64);
	n = strlen(expect);
	if (strncmp(msg, expect, n) != 0)
	{
		*why = "client-final-message does not repeat the channel binding";
		return STEP_MALFORMED;
	}

	/*
	 * The nonce must be the server-first-message's, exactly (RFC 5802 5.1).
	 * Kafka 4.x checks the same (CVE-2024-56128); librdkafka before 2.6.1
	 * sends its client nonce twice and is refused by both.
	 */
	nonce_len = strcspn(msg + n, ",");
	if (nonce_len != strlen(s->nonce) || msg + n + nonce_len > proof_at ||
		strncmp(msg + n, s->nonce, nonce_len) != 0)
	{
		*why = "client-final-message does not repeat the nonce";
		return STEP_MALFORMED;
	}
	if (pg_b64_dec_len(strlen(proof_at + 3)) > (int) sizeof(proof) ||
		pg_b64_decode(proof_at + 3, strlen(proof_at + 3), (char *) proof, sizeof(proof)) != klen)
	{
		*why = "malformed proof";
		return STEP_MALFORMED;
	}

	/*
	 * AuthMessage = client-first-bare "," server-first ","
	 * final-without-proof
	 */
	initStringInfo(&auth);
	appendStringInfo(&auth, "%s,%s,", s->client_first_bare, s->server_first);
	appendBinaryStringInfo(&auth, msg, proof_at - msg);

	if (!hmac_hash(klen, s->verifier.stored_key, klen, auth.data, auth.len, client_signature))
	{
		*why = "HMAC failed";
		return STEP_FAILURE;
	}
	for (i = 0; i < klen; i++)
		client_key[i] = proof[i] ^ client_signature[i];
	if (!hash_h(client_key, klen, stored_key))
	{
		*why = "hash failed";
		return STEP_FAILURE;
	}
	if (s->scram_mock || !keys_equal(stored_key, s->verifier.stored_key, klen))
	{
		*why = s->scram_mock ? s->mock_why : "password does not match";
		return STEP_FAILURE;
	}
	if (!hmac_hash(klen, s->verifier.server_key, klen, auth.data, auth.len, server_signature))
		return STEP_FAILURE;
	n = pg_b64_encode((char *) server_signature, klen, sig64, sizeof(sig64) - 1);
	if (n < 0)
		return STEP_FAILURE;
	sig64[n] = '\0';
	appendStringInfo(out, "v=%s", sig64);
	return STEP_SUCCESS;
}

/* PLAIN: [authzid] NUL authcid NUL password, checked against the verifier */
static KpSaslStep
plain_login(KpSaslSession *s, const KpBytes *token, const char **why)
{
	const char *d = (const char *) token->data;
	const char *nul1;
	const char *nul2;
	char		authzid[NAMEDATALEN];
	char	   *password;
	char	   *prepared = NULL;
	uint8		salted[SCRAM_KEY_LEN];
	uint8		client_key[SCRAM_KEY_LEN];
	uint8		stored_key[SCRAM_KEY_LEN];
	const char *errstr;
	const char *whynot;
	bool		ok;

	*why = "malformed PLAIN message";
	if (token->len <= 0 || token->len > SCRAM_MSG_MAX)
		return STEP_MALFORMED;
	nul1 = memchr(d, '\0', token->len);
	if (nul1 == NULL)
		return STEP_MALFORMED;
	nul2 = memchr(nul1 + 1, '\0', token->len - (nul1 + 1 - d));
	if (nul2 == NULL || memchr(nul2 + 1, '\0', token->len - (nul2 + 1 - d)) != NULL ||
		nul1 - d >= NAMEDATALEN || nul2 - nul1 - 1 >= NAMEDATALEN || nul2 == nul1 + 1)
		return STEP_MALFORMED;
	memcpy(authzid, d, nul1 - d);
	authzid[nul1 - d] = '\0';
	memcpy(s->scram_user, nul1 + 1, nul2 - nul1 - 1);
	s->scram_user[nul2 - nul1 - 1] = '\0';
	if (authzid[0] && strcmp(authzid, s->scram_user) != 0)
	{
		*why = "authorization id differs from the user name";
		return STEP_FAILURE;
	}
	password = pnstrdup(nul2 + 1, token->len - (nul2 + 1 - d));

	/* as PostgreSQL's scram_verify_plain_password: SASLprep, then salt */
	if (!kp_scram_verifier(s->scram_user, &s->verifier, &whynot))
	{
		mock_verifier(s->scram_user, &s->verifier, KP_SCRAM_KEY_LEN);
		s->scram_mock = true;
	}
	if (pg_saslprep(password, &prepared) != SASLPREP_SUCCESS)
		prepared = NULL;
	ok = scram_SaltedPassword(prepared ? prepared : password, (const char *) s->verifier.salt,
							  s->verifier.salt_len, s->verifier.iterations, salted, &errstr) >= 0 &&
		scram_ClientKey(salted, client_key, &errstr) >= 0 &&
		scram_H(client_key, SCRAM_KEY_LEN, stored_key, &errstr) >= 0 &&
		!s->scram_mock && keys_equal(stored_key, s->verifier.stored_key, SCRAM_KEY_LEN);
	explicit_bzero(password, strlen(password));
	pfree(password);
	if (prepared)
	{
		explicit_bzero(prepared, strlen(prepared));
		pfree(prepared);
	}
	explicit_bzero(salted, sizeof(salted));
	if (!ok)
	{
		*why = s->scram_mock ? whynot : "password does not match";
		return STEP_FAILURE;
	}
	return STEP_SUCCESS;
}

/* ---------------------------------------------------------------------
 * SaslAuthenticate
 * ---------------------------------------------------------------------
 */

void
kp_handle_sasl_authenticate(KpRequestContext *ctx)
{
	KpSaslAuthenticateRequest *req = ctx->request;
	KpSaslAuthenticateResponse *resp = ctx->response;
	KpConn	   *c = ctx->conn;
	KpSaslSession *s = c->sasl;
	StringInfoData out;
	KpSaslStep	step;
	const char *why = NULL;
	const char *mech_name;

	if (s == NULL || s->state != SASL_AUTHENTICATE)
	{
		/* Kafka's KafkaApis answer, on PLAINTEXT or after authentication */
		resp->error_code = KP_ERR_ILLEGAL_SASL_STATE;
		resp->error_message = "SaslAuthenticate request received after successful authentication";
		return;
	}
	mech_name = mechanism_name(s->mechanism);
	initStringInfo(&out);
	if (s->mechanism == MECH_PLAIN)
		step = plain_login(s, &req->auth_bytes, &why);
	else
	{
		char		msg[SCRAM_MSG_MAX];

		if (!token_string(&req->auth_bytes, msg, sizeof(msg)))
		{
			why = "SCRAM message too long or not text";
			step = STEP_MALFORMED;
		}
		else if (!s->scram_first_done)
			step = scram_first(s, msg, &out, &why);
		else
			step = scram_final(s, msg, &out, &why);
	}

	if (step == STEP_CONTINUE)
	{
		resp->auth_bytes.data = (uint8 *) out.data;
		resp->auth_bytes.len = out.len;
		return;
	}
	if (step == STEP_SUCCESS && s->reauthenticating &&
		strcmp(s->verifier.role, c->principal) != 0)
	{
		why = psprintf("re-authentication may not change the principal (was \"%s\")", c->principal);
		step = STEP_FAILURE;
	}
	if (step != STEP_SUCCESS)
	{
		ereport(LOG,
				(errmsg("kafka_pg listener: SASL %s authentication of user \"%s\" from %s failed (connection principal %s), closing the connection",
						mech_name, s->scram_user, ctx->peer, c->principal),
				 errdetail_internal("%s", why ? why : "unknown reason")));
		resp->error_code = step == STEP_MALFORMED ? KP_ERR_ILLEGAL_SASL_STATE :
			KP_ERR_SASL_AUTHENTICATION_FAILED;
		/* Kafka's own messages (ScramSaslServer, PlainSaslServer) */
		if (s->mechanism == MECH_PLAIN)
			resp->error_message = "Authentication failed: Invalid username or password";
		else
			resp->error_message = psprintf("Authentication failed during authentication due to invalid credentials with SASL mechanism %s",
										   mech_name);
		if (step == STEP_MALFORMED)
			resp->error_message = psprintf("Invalid %s message", mech_name);
		resp->auth_bytes.data = (uint8 *) "";
		resp->auth_bytes.len = 0;
		ctx->close_after_response = true;
		explicit_bzero(&s->verifier, sizeof(s->verifier));
		return;
	}

	/* authenticated */
	strlcpy(c->principal, s->verifier.role, sizeof(c->principal));
	c->principal_oid = s->verifier.role_oid;
	s->state = SASL_DONE;
	s->session_expiry_ms = 0;
	if (kp_connections_max_reauth_ms > 0)
	{
		int64		now = kp_listener_now_ms();
		int64		lifetime = kp_connections_max_reauth_ms;

		/* a password expiring sooner ends the session sooner */
		if (s->verifier.valid_until_ms > 0 && s->verifier.valid_until_ms - now < lifetime)
			lifetime = Max(s->verifier.valid_until_ms - now, 1);
		s->session_expiry_ms = now + lifetime;
		resp->session_lifetime_ms = lifetime;
	}
	ereport(DEBUG1,
			(errmsg("kafka_pg listener: connection from %s authenticated as role \"%s\" (OID %u) with SASL %s%s",
					ctx->peer, c->principal, c->principal_oid, mech_name,
					s->reauthenticating ? " (re-authentication)" : "")));
	s->reauthenticating = false;
	explicit_bzero(&s->verifier, sizeof(s->verifier));
	resp->auth_bytes.data = (uint8 *) out.data;
	resp->auth_bytes.len = out.len;
}
