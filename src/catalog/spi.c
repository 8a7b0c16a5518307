/*-------------------------------------------------------------------------
 *
 * spi.c
 *	  The catalog's statements, run with a search_path nobody else chose.
 *
 * Every statement src/catalog issues goes through these wrappers of
 * SPI_execute, SPI_execute_with_args, SPI_prepare, SPI_execute_plan and
 * SPI_execute_snapshot.  Each sets search_path to KP_SAFE_SEARCH_PATH
 * ("pg_catalog, pg_temp", PostgreSQL's own choice for maintenance
 * commands) for the length of the call, so that the statement's operators,
 * functions and types are resolved in pg_catalog, never in a schema that
 * the caller, a role or database default, or postgresql.conf put on the
 * path.  Without it, anyone who could create an operator or function in a
 * schema on that path ran code inside kafka_pg's statements: as the
 * bootstrap superuser in the background workers (an operator
 * *(integer, interval) in public, found before pg_catalog's
 * *(double precision, interval), was called by the group upkeep) and in
 * the SQL functions that work as the catalog's owner (kafka.produce_agg,
 * the foreign tables).  Relations are always written schema-qualified
 * (kafka.*), and pg_temp last keeps temporary tables from shadowing
 * anything; functions and operators are never looked up in pg_temp.
 *
 * The setting is a GUC nest level of its own, popped when the call
 * returns; an error pops it with the (sub)transaction that catches it, as
 * for a function's SET clause.  Where search_path already is exactly
 * KP_SAFE_SEARCH_PATH nothing is pushed: in the background workers
 * (kp_worker_connect) and in the SQL functions a caller names, which the
 * install script pins to it (SET search_path = pg_catalog, pg_temp); so
 * only the entry points without a SET clause (produce_agg's transition
 * functions, the foreign tables' callbacks, the views' internal functions)
 * pay for it.  A kept plan is prepared and executed under the same path,
 * so the plan cache never replans it for a caller's path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "executor/spi.h"
#include "utils/guc.h"

#include "catalog/catalog_spi.h"

/* 0 when the path already is the safe one (nothing pushed) */
static int
safe_path_push(void)
{
	int			nest;

	if (namespace_search_path != NULL &&
		strcmp(namespace_search_path, KP_SAFE_SEARCH_PATH) == 0)
		return 0;
	nest = NewGUCNestLevel();
	(void) set_config_option("search_path", KP_SAFE_SEARCH_PATH, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return nest;
}

static void
safe_path_pop(int nest)
{
	if (nest > 0)
		AtEOXact_GUC(true, nest);
}

int
kp_spi_execute(const char *sql, bool read_only, long count)
{
	int			nest = safe_path_push();
	int			ret = SPI_execute(sql, read_only, count);

	safe_path_pop(nest);
	return ret;
}

int
kp_spi_execute_with_args(const char *sql, int nargs, Oid *types, Datum *values,
						 const char *nulls, bool read_only, long count)
{
	int			nest = safe_path_push();
	int			ret = SPI_execute_with_args(sql, nargs, types, values, nulls, read_only, count);

	safe_path_pop(nest);
	return ret;
}

SPIPlanPtr
kp_spi_prepare(const char *sql, int nargs, Oid *types)
{
	int			nest = safe_path_push();
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, types);

	safe_path_pop(nest);
	return plan;
}

int
kp_spi_execute_plan(SPIPlanPtr plan, Datum *values, const char *nulls, bool read_only,
					long count)
{
	int			nest = safe_path_push();
	int			ret = SPI_execute_plan(plan, values, nulls, read_only, count);

	safe_path_pop(nest);
	return ret;
}

int
kp_spi_execute_snapshot(SPIPlanPtr plan, Datum *values, const char *nulls,
						Snapshot snapshot, Snapshot crosscheck_snapshot, bool read_only,
						bool fire_triggers, long tcount)
{
	int			nest = safe_path_push();
	int			ret = SPI_execute_snapshot(plan, values, nulls, snapshot, crosscheck_snapshot,
										   read_only, fire_triggers, tcount);

	safe_path_pop(nest);
	return ret;
}
