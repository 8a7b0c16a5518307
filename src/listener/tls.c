/*-------------------------------------------------------------------------
 *
 * tls.c
 *	  TLS on the Kafka listener (security protocols SSL and SASL_SSL), with
 *	  OpenSSL, which PostgreSQL itself links.
 *
 * Configured like PostgreSQL's own TLS: kafka.ssl_cert_file and
 * kafka.ssl_key_file (PEM; empty: PostgreSQL's ssl_cert_file and
 * ssl_key_file, relative to the data directory as there).
 *
 * Client certificates (mutual TLS): kafka.ssl_client_auth is Kafka's
 * ssl.client.auth (none, requested, required), checked against the CAs of
 * kafka.ssl_ca_file (empty: PostgreSQL's ssl_ca_file).  On an SSL listener
 * a verified certificate's subject CN names the connection's principal
 * (Kafka's ssl.principal.mapping.rules reduced to "the CN is the role"):
 * kp_tls_recv notes the CN once the handshake is done, and the dispatcher
 * (kp_tls_cert_principal, in a transaction) makes it the principal if it
 * is a LOGIN role, or closes the connection.  On SASL_SSL the SASL login
 * is the principal, as in Kafka; the certificate is only checked.
 *
 * The handshake is not a separate step: the socket is put in accept state
 * and OpenSSL runs the handshake inside the first reads and writes, so the
 * worker's event loop stays as it is (server.c calls kp_tls_recv and
 * kp_tls_send where it would call recv and send).  Both are non-blocking:
 * when OpenSSL needs the socket they fail with errno EAGAIN, as recv and
 * send do.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "catalog/pg_authid.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "listener/sasl.h"
#include "listener/tls.h"

char	   *kp_ssl_cert_file = NULL;
char	   *kp_ssl_key_file = NULL;
char	   *kp_ssl_ca_file = NULL;
int			kp_ssl_client_auth = KP_SSL_CLIENT_AUTH_NONE;

static const struct config_enum_entry ssl_client_auth_options[] = {
	{"none", KP_SSL_CLIENT_AUTH_NONE, false},
	{"requested", KP_SSL_CLIENT_AUTH_REQUESTED, false},
	{"required", KP_SSL_CLIENT_AUTH_REQUIRED, false},
	{NULL, 0, false}
};

static struct ssl_ctx_st *tls_ctx = NULL;	/* SSL_CTX */

void
kp_tls_define_settings(void)
{
	DefineCustomStringVariable("kafka.ssl_cert_file",
							   "TLS certificate (PEM) of the Kafka listener; empty: PostgreSQL's ssl_cert_file.",
							   NULL, &kp_ssl_cert_file, "",
							   PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("kafka.ssl_key_file",
							   "TLS private key (PEM) of the Kafka listener; empty: PostgreSQL's ssl_key_file.",
							   NULL, &kp_ssl_key_file, "",
							   PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("kafka.ssl_ca_file",
							   "CA certificates (PEM) client certificates are checked against; empty: PostgreSQL's ssl_ca_file.",
							   NULL, &kp_ssl_ca_file, "",
							   PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("kafka.ssl_client_auth",
							 "Ask TLS clients for a certificate (Kafka's ssl.client.auth): none, requested or required.",
							 "On an SSL listener the certificate's CN is the principal (a LOGIN role).",
							 &kp_ssl_client_auth, KP_SSL_CLIENT_AUTH_NONE, ssl_client_auth_options,
							 PGC_POSTMASTER, 0, NULL, NULL, NULL);
}

bool
kp_tls_enabled(void)
{
	return kp_security_protocol == KP_SECURITY_SSL ||
		kp_security_protocol == KP_SECURITY_SASL_SSL;
}

static const char *
setting_or_pg(const char *ours, const char *pg_name)
{
	if (ours && ours[0])
		return ours;
	return GetConfigOption(pg_name, true, false);
}

static const char *
tls_error(void)
{
	unsigned long e = ERR_get_error();

	return e ? ERR_reason_error_string(e) : "no OpenSSL error";
}

bool
kp_tls_load(int elevel)
{
	const char *cert = setting_or_pg(kp_ssl_cert_file, "ssl_cert_file");
	const char *key = setting_or_pg(kp_ssl_key_file, "ssl_key_file");
	SSL_CTX    *ctx;

	if (tls_ctx)
		return true;
	ctx = SSL_CTX_new(TLS_server_method());
	if (ctx == NULL)
	{
		ereport(elevel, (errmsg("kafka_pg listener: could not create a TLS context: %s", tls_error())));
		return false;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
	if (cert == NULL || SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
	{
		ereport(elevel,
				(errmsg("kafka_pg listener: could not load the TLS certificate \"%s\" (kafka.ssl_cert_file): %s",
						cert ? cert : "", tls_error())));
		SSL_CTX_free(ctx);
		return false;
	}
	if (key == NULL || SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
		SSL_CTX_check_private_key(ctx) != 1)
	{
		ereport(elevel,
				(errmsg("kafka_pg listener: could not load the TLS private key \"%s\" (kafka.ssl_key_file): %s",
						key ? key : "", tls_error())));
		SSL_CTX_free(ctx);
		return false;
	}
	if (kp_ssl_client_auth != KP_SSL_CLIENT_AUTH_NONE)
	{
		const char *ca = setting_or_pg(kp_ssl_ca_file, "ssl_ca_file");

		STACK_OF(X509_NAME) * names;

		if (ca == NULL || ca[0] == '\0' || SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1 ||
			(names = SSL_load_client_CA_file(ca)) == NULL)
		{
			ereport(elevel,
					(errmsg("kafka_pg listener: could not load the CA certificates \"%s\" (kafka.ssl_ca_file) that kafka.ssl_client_auth needs: %s",
							ca ? ca : "", tls_error())));
			SSL_CTX_free(ctx);
			return false;
		}
		SSL_CTX_set_client_CA_list(ctx, names);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER |
						   (kp_ssl_client_auth == KP_SSL_CLIENT_AUTH_REQUIRED ?
							SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0), NULL);
	}
	tls_ctx = ctx;
	return true;
}

/*
 * Once the handshake is done: note the subject CN of the client's verified
 * certificate for kp_tls_cert_principal (SSL listeners only).
 */
static void
note_client_certificate(KpConn *c)
{
	X509	   *cert;
	char		cn[256];
	int			n;

	c->tls_checked = true;
	if (kp_ssl_client_auth == KP_SSL_CLIENT_AUTH_NONE || kp_security_protocol != KP_SECURITY_SSL)
		return;
	cert = SSL_get_peer_certificate((SSL *) c->tls);
	if (cert == NULL)
		return;					/* none sent (kafka.ssl_client_auth =
								 * requested) */
	if (SSL_get_verify_result((SSL *) c->tls) == X509_V_OK)
	{
		n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn));
		if (n <= 0 || n >= NAMEDATALEN || (int) strlen(cn) != n)
			strlcpy(c->cert_cn, "\x01", sizeof(c->cert_cn));	/* unusable: refused */
		else
			strlcpy(c->cert_cn, cn, sizeof(c->cert_cn));
		c->cert_pending = true;
	}
	X509_free(cert);
}

bool
kp_tls_conn_init(KpConn *c)
{
	SSL		   *ssl;

	c->tls = NULL;
	if (!kp_tls_enabled())
		return true;
	if (!kp_tls_load(LOG))
		return false;
	ssl = SSL_new(tls_ctx);
	if (ssl == NULL || SSL_set_fd(ssl, c->fd) != 1)
	{
		ereport(LOG, (errmsg("kafka_pg listener: could not start TLS: %s", tls_error())));
		if (ssl)
			SSL_free(ssl);
		return false;
	}
	SSL_set_accept_state(ssl);
	c->tls = ssl;
	return true;
}

void
kp_tls_conn_free(KpConn *c)
{
	if (c->tls)
	{
		SSL_free((SSL *) c->tls);
		c->tls = NULL;
	}
}

/*
 * Map an SSL_read/SSL_write result to recv/send's: n > 0 bytes, 0 when
 * the peer closed, -1 with errno (EAGAIN when OpenSSL waits for the
 * socket, ECONNRESET on a TLS error, logged).
 */
static ssize_t
tls_result(KpConn *c, int n, const char *what)
{
	int			err;

	if (n > 0)
		return n;
	err = SSL_get_error((SSL *) c->tls, n);
	switch (err)
	{
		case SSL_ERROR_WANT_READ:
		case SSL_ERROR_WANT_WRITE:
			errno = EAGAIN;
			return -1;
		case SSL_ERROR_ZERO_RETURN:
			return 0;
		case SSL_ERROR_SYSCALL:
			if (errno == 0)
				return 0;		/* EOF without close_notify */
			return -1;
		default:
			ereport(LOG,
					(errmsg("kafka_pg listener: TLS %s with %s failed: %s",
							what, c->peer, tls_error())));
			ERR_clear_error();
			errno = ECONNRESET;
			return -1;
	}
}

ssize_t
kp_tls_recv(KpConn *c, void *buf, size_t len)
{
	ssize_t		n;

	ERR_clear_error();
	errno = 0;
	n = tls_result(c, SSL_read((SSL *) c->tls, buf, (int) Min(len, INT_MAX)), "read");
	if (n > 0 && !c->tls_checked)
		note_client_certificate(c);
	return n;
}

/*
 * Before a connection's request runs (in a transaction): if its client
 * certificate has not been mapped yet, make its CN the principal.  False
 * (and a log line) if the CN is not a LOGIN role: the caller closes the
 * connection.
 */
bool
kp_tls_cert_principal(KpConn *c)
{
	HeapTuple	tup;
	bool		ok = false;

	if (!c->cert_pending)
		return true;
	c->cert_pending = false;
	if (c->cert_cn[0] != '\x01')
	{
		tup = SearchSysCache1(AUTHNAME, CStringGetDatum(c->cert_cn));
		if (HeapTupleIsValid(tup))
		{
			Form_pg_authid role = (Form_pg_authid) GETSTRUCT(tup);

			if (role->rolcanlogin)
			{
				strlcpy(c->principal, NameStr(role->rolname), sizeof(c->principal));
				c->principal_oid = role->oid;
				ok = true;
			}
			ReleaseSysCache(tup);
		}
	}
	if (ok)
		ereport(DEBUG1,
				(errmsg("kafka_pg listener: connection from %s authenticated as role \"%s\" (OID %u) with a TLS client certificate",
						c->peer, c->principal, c->principal_oid)));
	else
		ereport(LOG,
				(errmsg("kafka_pg listener: closing connection from %s: the CN \"%s\" of its client certificate is not a role that may log in",
						c->peer, c->cert_cn[0] == '\x01' ? "(none or too long)" : c->cert_cn)));
	return ok;
}

ssize_t
kp_tls_send(KpConn *c, const void *buf, size_t len)
{
	ERR_clear_error();
	errno = 0;
	return tls_result(c, SSL_write((SSL *) c->tls, buf, (int) Min(len, INT_MAX)), "write");
}
