/*-------------------------------------------------------------------------
 *
 * stamp.c
 *	  The catalog stamp (kafka.catalog_stamp): which build of kafka_pg's
 *	  install script created the catalog, checked against the library.
 *
 * The extension's version stays '0.1' while the catalog (tables, columns,
 * functions) changes from build to build, so a server restarted on a newer
 * library keeps the catalog an older build's CREATE EXTENSION made, and the
 * library's statements then fail on what is missing there ("column ... does
 * not exist").  The Makefile computes a hash of sql/kafka_pg--0.1.sql, puts
 * it into the installed copy of that script (which stores it as the one row
 * of kafka.catalog_stamp, its first statement) and compiles the same hash
 * into the library (KP_CATALOG_STAMP).  A catalog whose stamp differs, or
 * that has no kafka.catalog_stamp (a build older than the stamps), was made
 * by another build: the SQL functions refuse to run on it (55000, with the
 * remedy in the hint) and the background workers report it once and leave
 * the catalog alone until the extension is re-created.
 *
 * The check is cached per process: a stamp found equal to the library's
 * is not read again while kafka.catalog_stamp is the same relation (a
 * re-created extension has a new one).  Changing the row by hand is not
 * noticed by a process that has already checked it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "catalog/kafka_catalog.h"

#ifndef KP_CATALOG_STAMP
#error "KP_CATALOG_STAMP (a hash of the install script) is defined by the Makefile"
#endif

/* kafka.catalog_stamp found to hold this library's stamp, if any */
static Oid	verified_relid = InvalidOid;

/* the other build's catalog this process last reported (workers) */
static Oid	reported_key = InvalidOid;
static char reported_stamp[NAMEDATALEN];

const char *
kp_catalog_stamp_library(void)
{
	return KP_CATALOG_STAMP;
}

/* The stamp in kafka.catalog_stamp (palloc'd), or NULL if it has none. */
static char *
read_stamp(Oid relid)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	char	   *stamp = NULL;

	rel = table_open(relid, AccessShareLock);
	scan = table_beginscan(rel, GetTransactionSnapshot(), 0, NULL);
	tup = heap_getnext(scan, ForwardScanDirection);
	if (HeapTupleIsValid(tup) && RelationGetDescr(rel)->natts >= 1 &&
		TupleDescAttr(RelationGetDescr(rel), 0)->atttypid == TEXTOID)
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, 1, RelationGetDescr(rel), &isnull);

		if (!isnull)
			stamp = TextDatumGetCString(d);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	return stamp;
}

/*
 * The state of this database's catalog.  For KP_CATALOG_OTHER_BUILD, *key
 * identifies the catalog (its kafka.catalog_stamp, or schema kafka if it
 * has none) and *stamp is its stamp (NULL: none).  In a transaction.
 */
static KpCatalogStampState
stamp_state(Oid *key, char **stamp)
{
	Oid			nsp = get_namespace_oid("kafka", true);
	Oid			relid;

	*key = InvalidOid;
	*stamp = NULL;
	if (!OidIsValid(nsp))
		return KP_CATALOG_ABSENT;
	relid = get_relname_relid("catalog_stamp", nsp);
	if (OidIsValid(relid) && relid == verified_relid)
		return KP_CATALOG_CURRENT;
	/* a schema kafka that is not the extension's */
	if (!OidIsValid(get_extension_oid("kafka_pg", true)))
		return KP_CATALOG_ABSENT;
	if (OidIsValid(relid))
	{
		*stamp = read_stamp(relid);
		if (*stamp != NULL && strcmp(*stamp, KP_CATALOG_STAMP) == 0)
		{
			verified_relid = relid;
			return KP_CATALOG_CURRENT;
		}
	}
	*key = OidIsValid(relid) ? relid : nsp;
	return KP_CATALOG_OTHER_BUILD;
}

/* The report of a catalog another build made: WHO is the reporting part. */
static void
report_other_build(int elevel, const char *who, const char *stamp)
{
	char	   *db = get_database_name(MyDatabaseId);

	if (creating_extension)
		ereport(elevel,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s: the install script is from a different build of kafka_pg than the library the server runs",
						who),
				 errdetail("The script's catalog stamp is %s, the library's is %s.",
						   stamp ? stamp : "(none)", KP_CATALOG_STAMP),
				 errhint("kafka_pg was installed again since the server started: restart the server, then CREATE EXTENSION kafka_pg.")));
	else
		ereport(elevel,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s: the catalog in database \"%s\" was created by a different build of kafka_pg",
						who, db ? db : "?"),
				 stamp ?
				 errdetail("The catalog's stamp is %s, this library's is %s: the catalog's tables and functions may not be the ones this library uses.",
						   stamp, KP_CATALOG_STAMP) :
				 errdetail("The catalog has no stamp: a build older than catalog stamps created it (this library's stamp is %s).",
						   KP_CATALOG_STAMP),
				 errhint("Either re-create the extension, which drops every topic and its records: DROP EXTENSION kafka_pg CASCADE; CREATE EXTENSION kafka_pg; or install the build that created the catalog and restart the server.")));
}

void
kp_catalog_stamp_check(void)
{
	Oid			key;
	char	   *stamp;

	if (stamp_state(&key, &stamp) == KP_CATALOG_OTHER_BUILD)
		report_other_build(ERROR, "kafka_pg", stamp);
}

/* Log the report as an ERROR without leaving the caller's transaction. */
static void
log_other_build(const char *who, const char *stamp)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	BeginInternalSubTransaction(NULL);
	PG_TRY();
	{
		report_other_build(ERROR, who, stamp);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		EmitErrorReport();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_END_TRY();
}

KpCatalogStampState
kp_catalog_stamp_worker(const char *who)
{
	Oid			key;
	char	   *stamp;
	KpCatalogStampState st = stamp_state(&key, &stamp);

	if (st == KP_CATALOG_OTHER_BUILD)
	{
		/* once per catalog (and stamp) */
		if (key != reported_key ||
			strncmp(stamp ? stamp : "", reported_stamp, sizeof(reported_stamp) - 1) != 0)
		{
			log_other_build(who, stamp);
			reported_key = key;
			strlcpy(reported_stamp, stamp ? stamp : "", sizeof(reported_stamp));
		}
	}
	else if (st == KP_CATALOG_CURRENT && OidIsValid(reported_key))
	{
		/* re-created (dropped in between, or not) by this build */
		ereport(LOG,
				(errmsg("%s: the catalog in database \"%s\" was created by this build of kafka_pg (catalog stamp %s): resuming",
						who, get_database_name(MyDatabaseId), KP_CATALOG_STAMP)));
		reported_key = InvalidOid;
		reported_stamp[0] = '\0';
	}
	return st;
}

bool
kp_catalog_stamp_worker_start(const char *who)
{
	KpCatalogStampState st;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	st = kp_catalog_stamp_worker(who);
	PopActiveSnapshot();
	CommitTransactionCommand();
	return st != KP_CATALOG_OTHER_BUILD;
}
