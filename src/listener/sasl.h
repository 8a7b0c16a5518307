/*-------------------------------------------------------------------------
 *
 * sasl.h
 *	  SASL authentication of Kafka connections (src/listener only).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_LISTENER_SASL_H
#define KP_LISTENER_SASL_H

#include "postgres.h"

#include <sys/socket.h>

#include "listener/handlers.h"
#include "listener/listener_int.h"

/* settings (sasl.c) */
extern int	kp_security_protocol;
extern bool kp_allow_anonymous;
extern bool kp_sasl_plain_allow_plaintext;
extern char *kp_sasl_enabled_mechanisms;
extern int	kp_connections_max_reauth_ms;
extern char *kp_allowed_addresses;

#define KP_SECURITY_PLAINTEXT		0
#define KP_SECURITY_SASL_PLAINTEXT	1
#define KP_SECURITY_SSL				2
#define KP_SECURITY_SASL_SSL		3

/* Define the settings above (from kp_listener_init, in the postmaster). */
extern void kp_sasl_define_settings(void);

/* Does the listener ask clients to log in?  (security.c) */
extern bool kp_sasl_enabled(void);

/*
 * May the listener start?  false (with the reason logged) when it would
 * serve a non-loopback address without authentication and
 * kafka.allow_anonymous is off.
 */
extern bool kp_listener_start_allowed(void);

/* Is a client at this address let in (kafka.allowed_addresses)? */
extern bool kp_address_allowed(const struct sockaddr *addr);

/* A new connection: anonymous on PLAINTEXT, else waiting for SaslHandshake. */
extern void kp_sasl_conn_init(KpConn *c);

/* Free a connection's SASL state (conn_close). */
extern void kp_sasl_conn_free(KpConn *c);

/*
 * What may happen to a decoded request on this connection before it runs
 * (the SASL state machine of Kafka's SaslServerAuthenticator).  received_ms
 * is when the request arrived: a session that expired after that does not
 * close the connection on a later run of a parked request (Kafka checks the
 * session when it reads a request, and answers what it read before).
 */
typedef enum KpSaslVerdict
{
	KP_SASL_RUN,				/* run it */
	KP_SASL_REFUSE_ANSWER,		/* answer ILLEGAL_SASL_STATE, then close */
	KP_SASL_CLOSE				/* close without an answer (logged) */
} KpSaslVerdict;

extern KpSaslVerdict kp_sasl_admit(KpConn *c, int16 api_key, const char *client_id,
								   int64 received_ms);

/*
 * Is the client still to authenticate (a SASL listener, before SaslAuthenticate
 * succeeded)?  Kafka's authenticator answers its ApiVersions then.
 */
extern bool kp_sasl_pending(KpConn *c);

/* handlers (sasl.c) */
extern void kp_handle_sasl_handshake(KpRequestContext *ctx);
extern void kp_handle_sasl_authenticate(KpRequestContext *ctx);

/*
 * RFC 5802's StoredKey and ServerKey from a SaltedPassword of key_len bytes
 * (32: SHA-256, 64: SHA-512); false on failure.
 */
extern bool kp_scram_keys(int key_len, const uint8 *salted, uint8 *stored_key, uint8 *server_key);

#endif							/* KP_LISTENER_SASL_H */
