/*-------------------------------------------------------------------------
 *
 * listener.h
 *	  The Kafka wire-protocol listener: the whole public face of
 *	  src/listener.
 *
 * kafka.listener_workers background workers share the Kafka port (the
 * postmaster binds it, the workers inherit it and accept from it).  Each runs a
 * non-blocking event loop over its connections; requests of a connection
 * are handled one at a time in order (as Kafka's broker does), each in its
 * own Postgres transaction, by the handlers in handlers_*.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_LISTENER_H
#define KP_LISTENER_H

#include "postgres.h"
#include "fmgr.h"

/* settings (src/listener/server.c) */
extern char *kp_listen_address;
extern int	kp_port;
extern char *kp_advertised_host;
extern int	kp_advertised_port;
extern int	kp_listener_workers;
extern int	kp_socket_request_max_bytes;
extern int	kp_connections_max_idle_ms;
extern bool kp_auto_create_topics_enable;
extern int	kp_num_partitions;
extern int	kp_node_id;
extern char *kp_replica_nodes;

/* resource limits (src/listener/limits.c) */
extern int	kp_fetch_max_bytes;
extern int	kp_max_connections;
extern int	kp_max_connections_per_ip;
extern int	kp_connection_output_max_bytes;

/* The listener's shared memory (connection counts), from _PG_init's hooks. */
extern Size kp_listener_shmem_size(void);
extern void kp_listener_request_locks(void);
extern void kp_listener_shmem_init(void);

/* From _PG_init: define the settings and register the workers. */
extern void kp_listener_init(void);

extern PGDLLEXPORT void kp_listener_main(Datum arg);

/* The WAL flusher background worker (flusher.c). */
extern PGDLLEXPORT void kp_wal_flusher_main(Datum arg);

#endif							/* KP_LISTENER_H */
