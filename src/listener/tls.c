/*-------------------------------------------------------------------------
 *
 * tls.c
 *	  TLS on the Kafka listener (security protocols SSL and SASL_SSL), with
 *	  OpenSSL, which PostgreSQL itself links.
 *
 * Configured like PostgreSQL's own TLS: kafka.ssl_cert_file and
 * kafka.ssl_key_file (PEM; empty: PostgreSQL's ssl_cert_file and
 * ssl_key_file, relative to the data directory as there).  Clients are not
 * asked for certificates (Kafka's ssl.client.auth=none).
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

#include "utils/guc.h"
#include "utils/memutils.h"

#include "listener/sasl.h"
#include "listener/tls.h"

char	   *kp_ssl_cert_file = NULL;
char	   *kp_ssl_key_file = NULL;

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
	tls_ctx = ctx;
	return true;
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
	ERR_clear_error();
	errno = 0;
	return tls_result(c, SSL_read((SSL *) c->tls, buf, (int) Min(len, INT_MAX)), "read");
}

ssize_t
kp_tls_send(KpConn *c, const void *buf, size_t len)
{
	ERR_clear_error();
	errno = 0;
	return tls_result(c, SSL_write((SSL *) c->tls, buf, (int) Min(len, INT_MAX)), "write");
}
