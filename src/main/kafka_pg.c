/*-------------------------------------------------------------------------
 *
 * kafka_pg.c
 *	  Module load: settings, shared memory, background workers.
 *
 * kafka_pg must be in shared_preload_libraries: it keeps per-partition state
 * in shared memory and runs background workers.  This file only wires the
 * components together; each one owns its own state.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "main/kafka_pg.h"
#include "store/store.h"
#include "txn/txn.h"

PG_MODULE_MAGIC;

/* settings */
char	   *kp_database = NULL;
int			kp_max_partitions = 4096;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

void		_PG_init(void);

static void
kp_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(kp_store_shmem_size());
	kp_store_request_locks();
}

static void
kp_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	kp_store_shmem_init();
}

static void
register_worker(const char *name, const char *function, int restart_secs)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	snprintf(worker.bgw_name, BGW_MAXLEN, "%s", name);
	snprintf(worker.bgw_type, BGW_MAXLEN, "%s", name);
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = restart_secs;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "kafka_pg");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "%s", function);
	RegisterBackgroundWorker(&worker);
}

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("kafka_pg must be loaded via shared_preload_libraries"),
				 errhint("Add kafka_pg to shared_preload_libraries in postgresql.conf and restart the server.")));

	DefineCustomStringVariable("kafka.database",
							   "Database in which kafka_pg's background workers run.",
							   "The database where CREATE EXTENSION kafka_pg was run.",
							   &kp_database,
							   "postgres",
							   PGC_POSTMASTER,
							   0,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("kafka.max_partitions",
							"Maximum number of partitions in use at once (shared memory).",
							NULL,
							&kp_max_partitions,
							4096, 16, 1000000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("kafka");

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = kp_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = kp_shmem_startup;

	kp_txn_init();

	register_worker("kafka_pg resolver", "kp_resolver_main", 1);
}
