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

#include "commands/extension.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "replication/logicallauncher.h"
#include "nodes/parsenodes.h"
#include "storage/ipc.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "common/settings.h"
#include "common/workers.h"
#include "catalog/kafka_catalog.h"
#include "cleaner/cleaner.h"
#include "group/group.h"
#include "listener/listener.h"
#include "share/share.h"
#include "store/store.h"
#include "txn/txn.h"

PG_MODULE_MAGIC;

/* settings */
char	   *kp_database = NULL;
int			kp_max_partitions = 4096;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static ProcessUtility_hook_type prev_utility_hook = NULL;

/* the workers registered, in order, for warn_worker_room */
#define KP_MAX_WORKERS 80
static char kp_worker_names[KP_MAX_WORKERS][BGW_MAXLEN];
static int	kp_workers_registered = 0;

void		_PG_init(void);

static void
kp_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(kp_store_shmem_size());
	RequestAddinShmemSpace(kp_listener_shmem_size());
	kp_listener_request_locks();
	kp_store_request_locks();
	RequestAddinShmemSpace(kp_cleaner_shmem_size());
	kp_cleaner_request_locks();
	RequestAddinShmemSpace(kp_share_acquirer_shmem_size());
	RequestAddinShmemSpace(kp_share_wake_shmem_size());
}

static void
kp_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	kp_store_shmem_init();
	kp_listener_shmem_init();
	kp_cleaner_shmem_init();
	kp_share_acquirer_shmem_init();
	kp_share_wake_shmem_init();
}

void
kp_register_worker(const char *name, const char *type, const char *function,
				   BgWorkerStartTime start, int restart_secs, Datum arg)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	snprintf(worker.bgw_name, BGW_MAXLEN, "%s", name);
	snprintf(worker.bgw_type, BGW_MAXLEN, "%s", type);
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = start;
	worker.bgw_restart_time = restart_secs;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "kafka_pg");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "%s", function);
	worker.bgw_main_arg = arg;
	RegisterBackgroundWorker(&worker);
	if (kp_workers_registered < KP_MAX_WORKERS)
		strlcpy(kp_worker_names[kp_workers_registered], name, BGW_MAXLEN);
	kp_workers_registered++;
}

/*
 * PostgreSQL refuses a registration beyond max_worker_processes with a LOG
 * line that names no worker ("too many background workers"), and the broker
 * then runs without them.  Say which of ours are sure not to start: the
 * logical replication launcher registers before any library (when
 * max_logical_replication_workers is not 0); libraries loaded before
 * kafka_pg may take more, which this cannot see.
 */
static void
warn_worker_room(void)
{
	int			launcher = max_logical_replication_workers > 0 ? 1 : 0;
	int			room = max_worker_processes - launcher;
	StringInfoData left;
	int			i;

	if (kp_workers_registered <= room)
		return;
	initStringInfo(&left);
	for (i = Max(room, 0); i < Min(kp_workers_registered, KP_MAX_WORKERS); i++)
		appendStringInfo(&left, "%s\"%s\"", left.len > 0 ? ", " : "", kp_worker_names[i]);
	ereport(WARNING,
			(errmsg("kafka_pg: max_worker_processes (%d) has no room for %d of its %d background workers",
					max_worker_processes, kp_workers_registered - Max(room, 0), kp_workers_registered),
			 errdetail("They do not start: %s.", left.data),
			 errhint("Set max_worker_processes to at least %d (these and the logical replication launcher; more for other extensions and parallel query), and restart.",
					 kp_workers_registered + launcher)));
	pfree(left.data);
}

void
kp_worker_connect(void)
{
	BackgroundWorkerInitializeConnection(kp_database, NULL, 0);
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("search_path", KP_SAFE_SEARCH_PATH, PGC_SUSET, PGC_S_OVERRIDE);

	/*
	 * the catalog's foreign keys cascade through triggers, which replica
	 * turns off
	 */
	SetConfigOption("session_replication_role", "origin", PGC_SUSET, PGC_S_OVERRIDE);

	/*
	 * A server's timeouts are for its SQL sessions: as autovacuum, the
	 * workers turn them off (a lock_timeout failed their catalog reads while
	 * a DBA held a table lock: the request's connection closed, the cleaner
	 * exited).  Where a worker bounds a wait, it says so itself, in a setting
	 * local to its transaction (dispatch.c) or after this (the share
	 * acquirer).
	 */
	SetConfigOption("statement_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("lock_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("idle_in_transaction_session_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);

	/*
	 * exit_on_error turns every ERROR into FATAL, also one a worker catches
	 * in a subtransaction to answer it (a CreateTopics of a topic that
	 * exists): a listener worker exited, with its connections, on each.
	 */
	SetConfigOption("exit_on_error", "off", PGC_SUSET, PGC_S_OVERRIDE);

	/*
	 * zero_damaged_pages is a DBA's way to read past a damaged page in a SQL
	 * session.  In a worker it zeroed a damaged segment page in shared
	 * buffers, which every reader then took for the end of the partition's
	 * data (a Fetch from there answered nothing, and no error, for as long as
	 * the zeroed copy stayed): the workers keep it off and answer such a
	 * partition KAFKA_STORAGE_ERROR (docs/durability.md).
	 */
	SetConfigOption("zero_damaged_pages", "off", PGC_SUSET, PGC_S_OVERRIDE);
}

/* Is this DROP EXTENSION kafka_pg (possibly among others)? */
static bool
drops_this_extension(Node *parsetree)
{
	DropStmt   *stmt;
	ListCell   *lc;

	if (!IsA(parsetree, DropStmt))
		return false;
	stmt = (DropStmt *) parsetree;
	if (stmt->removeType != OBJECT_EXTENSION)
		return false;
	foreach(lc, stmt->objects)
	{
		Node	   *obj = lfirst(lc);

		if (IsA(obj, String) && strcmp(strVal(obj), "kafka_pg") == 0)
			return true;
	}
	return false;
}

/*
 * DROP EXTENSION kafka_pg drops the catalog tables; the segment files have
 * no catalog entries, so drop them here, transactionally, first.  Only for
 * whoever may drop the extension: the ownership check DROP EXTENSION makes
 * comes first (RemoveObjects would make it after us), so that nobody else
 * gets this far and the refusal is PostgreSQL's own.
 */
static void
kp_utility_hook(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				ProcessUtilityContext context, ParamListInfo params,
				QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Oid			extoid;

	if (drops_this_extension(pstmt->utilityStmt) &&
		(extoid = get_extension_oid("kafka_pg", true)) != InvalidOid)
	{
		if (!pg_extension_ownercheck(extoid, GetUserId()))
			aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_EXTENSION, "kafka_pg");
		kp_topic_drop_all_storage();
	}

	if (prev_utility_hook)
		prev_utility_hook(pstmt, queryString, readOnlyTree, context, params,
						  queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
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

	DefineCustomIntVariable("kafka.debug_reader_pause_lock",
							"Testing only: a reader waits for this advisory lock just after it lists its segments.",
							"0 (the default) does nothing.  A reader (SQL fetch, wire Fetch) that has listed "
							"a partition's segments takes and releases pg_advisory_lock_shared(this key), so a "
							"test holding pg_advisory_lock(key) can change the log under it.",
							&kp_debug_reader_pause_lock,
							0, 0, INT_MAX,
							PGC_SUSET,
							GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("kafka.debug_ignore_producer_snapshots",
							 "Testing only: partition loads ignore producer-state snapshots.",
							 "Recovery then walks every batch header of the active segment, as "
							 "before snapshots existed (src/store/prodsnap.c); the resolver still "
							 "writes them.  Takes effect at the next load of a partition.",
							 &kp_debug_ignore_prodsnap,
							 false,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("kafka.debug_fail_marker_index",
							 "Testing only: writing an ABORT marker's aborted-transaction index entry fails.",
							 "The marker is appended, then its index entry raises an ERROR, as a failed "
							 "write would: the partition is left for a reload, which restores the entry "
							 "from the marker (src/store/txnstate.c, recovery.c).",
							 &kp_debug_fail_marker_index,
							 false,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("kafka.debug_views_skip_recheck",
							 "Testing only: the views' per-partition functions neither lock the topic nor look again.",
							 "kafka._partition_stats and _partition_segments then pass the store a partition id "
							 "read under the statement's snapshot, as they did before they took the topic's lock: "
							 "a partition deleted since reaches the store, whose own check must refuse to load it "
							 "(src/store/README, invariant 14).",
							 &kp_debug_views_skip_recheck,
							 false,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	prev_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = kp_utility_hook;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = kp_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = kp_shmem_startup;

	kp_txn_init();
	/* the store loads no partition the catalog no longer has */
	kp_log_register_partition_exists(kp_catalog_partition_exists);
	kp_group_init_gucs();
	kp_cleaner_init_gucs();
	kp_acl_init_gucs();
	kp_share_init_gucs();

	kp_register_worker("kafka_pg resolver", "kafka_pg resolver", "kp_resolver_main",
					   BgWorkerStart_RecoveryFinished, 1, (Datum) 0);
	kp_register_worker("kafka_pg log cleaner", "kafka_pg log cleaner", "kp_cleaner_main",
					   BgWorkerStart_RecoveryFinished, 10, (Datum) 0);
	kp_listener_init();
	/* after the listener's: if max_worker_processes is short, these go first */
	kp_share_acquirer_register();
	warn_worker_room();

	/* last: every kafka.* setting must be defined before this */
	MarkGUCPrefixReserved("kafka");
}
