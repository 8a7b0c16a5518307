/*-------------------------------------------------------------------------
 *
 * workers.h
 *	  Registering kafka_pg's background workers: one function, defined in
 *	  src/main/kafka_pg.c, for every component that has workers (listener,
 *	  share acquirer, resolver, log cleaner).  Call it from
 *	  shared_preload_libraries' _PG_init only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_WORKERS_H
#define KP_WORKERS_H

#include "postmaster/bgworker.h"

/*
 * A worker connected to kafka.database, running FUNCTION of kafka_pg with
 * ARG; NAME is its process title, TYPE its pg_stat_activity.backend_type.
 */
extern void kp_register_worker(const char *name, const char *type, const char *function,
							   BgWorkerStartTime start, int restart_secs, Datum arg);

/*
 * In a worker's main: connect to kafka.database, and set for this process
 * what the worker needs whatever the server's, database's or role's defaults
 * for sessions say, as autovacuum does: default_transaction_read_only off
 * (the broker writes: records, offsets, groups, markers) and
 * default_transaction_isolation read committed (the workers are written for
 * a fresh snapshot per statement), and search_path KP_SAFE_SEARCH_PATH
 * ("pg_catalog, pg_temp"): the workers run as the bootstrap superuser, and
 * a schema on a default path that others can create objects in would
 * otherwise decide what the operators in their statements call
 * (src/catalog/spi.c pins it per statement too; here it costs nothing).
 */
extern void kp_worker_connect(void);

#endif							/* KP_WORKERS_H */
