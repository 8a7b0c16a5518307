/*-------------------------------------------------------------------------
 *
 * tls.h
 *	  TLS on Kafka connections (src/listener only).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_LISTENER_TLS_H
#define KP_LISTENER_TLS_H

#include "postgres.h"

#include "listener/listener_int.h"

extern char *kp_ssl_cert_file;
extern char *kp_ssl_key_file;
extern char *kp_ssl_ca_file;
extern int	kp_ssl_client_auth;

/* kafka.ssl_client_auth (Kafka's ssl.client.auth) */
#define KP_SSL_CLIENT_AUTH_NONE			0
#define KP_SSL_CLIENT_AUTH_REQUESTED	1
#define KP_SSL_CLIENT_AUTH_REQUIRED		2

extern void kp_tls_define_settings(void);

/* Is kafka.security_protocol SSL or SASL_SSL? */
extern bool kp_tls_enabled(void);

/* Load the certificate and key (once); false, logged at elevel, on failure. */
extern bool kp_tls_load(int elevel);

/* A new connection: a TLS session in accept state when TLS is on. */
extern bool kp_tls_conn_init(KpConn *c);
extern void kp_tls_conn_free(KpConn *c);

/*
 * An SSL connection with a verified client certificate: make its CN the
 * principal (in a transaction); false if it is not a LOGIN role.
 */
extern bool kp_tls_cert_principal(KpConn *c);

/* recv and send through TLS, with their return conventions. */
extern ssize_t kp_tls_recv(KpConn *c, void *buf, size_t len);
extern ssize_t kp_tls_send(KpConn *c, const void *buf, size_t len);

#endif							/* KP_LISTENER_TLS_H */
