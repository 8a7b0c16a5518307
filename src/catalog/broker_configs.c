/*-------------------------------------------------------------------------
 *
 * broker_configs.c
 *	  The state behind the BROKER config resource: the dynamic broker
 *	  configs kafka_pg keeps without effect (kafka.broker_configs), and the
 *	  kafka.* PostgreSQL settings that Kafka broker configs map to, read from
 *	  the GUC table and changed the PostgreSQL way (ALTER SYSTEM, then a
 *	  reload).
 *
 * This file owns kafka.broker_configs: nothing else writes it.  Which Kafka
 * broker config is which (a setting, a fixed value, a kept override) is the
 * listener's business (src/listener/handlers_broker_configs.c); this file
 * only stores and applies.
 *
 * ALTER SYSTEM is not transactional: postgresql.auto.conf is rewritten at
 * once, under PostgreSQL's AutoFileLock, whatever becomes of the calling
 * transaction.  Callers therefore check every value first
 * (kp_setting_check) and change settings last.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "catalog/pg_type.h"
#include "common/shortest_dec.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "postmaster/postmaster.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"

#include "catalog/catalog_spi.h"
#include "catalog/kafka_catalog.h"

/* ---------------------------------------------------------------------
 * kafka.broker_configs
 * ---------------------------------------------------------------------
 */

/* Every kept override, by name; returns the count. */
int
kp_broker_config_overrides(char ***names, char ***values)
{
	int			n;
	int			i;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute("SELECT name, value FROM kafka.broker_configs ORDER BY name COLLATE \"C\"",
					   true, 0) != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg: could not read kafka.broker_configs");
	n = (int) SPI_processed;
	/* in the caller's context: SPI_finish frees SPI's */
	*names = SPI_palloc(sizeof(char *) * Max(n, 1));
	*values = SPI_palloc(sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *name = SPI_getvalue(tup, desc, 1);
		char	   *value = SPI_getvalue(tup, desc, 2);

		(*names)[i] = SPI_palloc(strlen(name) + 1);
		strcpy((*names)[i], name);
		(*values)[i] = SPI_palloc(strlen(value) + 1);
		strcpy((*values)[i], value);
	}
	SPI_finish();
	return n;
}

/*
 * Lock kafka.broker_configs against every writer (EXCLUSIVE: plain reads go
 * on) until the transaction ends.  An AlterConfigs of BROKER resources takes
 * it before it changes any of them: each resource's settings are changed by
 * ALTER SYSTEM, which no rollback undoes, so no later resource of the request
 * may wait for a row another transaction holds, fail, and leave the earlier
 * one's settings changed (handlers_broker_configs.c).
 */
void
kp_broker_configs_lock(void)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute("LOCK TABLE kafka.broker_configs IN EXCLUSIVE MODE", false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "kafka_pg: could not lock kafka.broker_configs");
	SPI_finish();
}

/* Keep an override (value NULL: remove it). */
void
kp_broker_config_store(const char *name, const char *value)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	int			rc;

	args[0] = CStringGetTextDatum(name);
	args[1] = value ? CStringGetTextDatum(value) : (Datum) 0;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (value)
		rc = kp_spi_execute_with_args("INSERT INTO kafka.broker_configs VALUES ($1, $2) "
									  "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
									  2, types, args, NULL, false, 0);
	else
		rc = kp_spi_execute_with_args("DELETE FROM kafka.broker_configs WHERE name = $1",
									  1, types, args, NULL, false, 0);
	if (rc != SPI_OK_INSERT && rc != SPI_OK_DELETE)
		elog(ERROR, "kafka_pg: could not change kafka.broker_configs");
	SPI_finish();
}

/* ---------------------------------------------------------------------
 * kafka.* settings
 * ---------------------------------------------------------------------
 */

static struct config_generic *
find_setting(const char *name)
{
	struct config_generic **vars = get_guc_variables();
	int			n = GetNumConfigOptions();
	int			i;

	for (i = 0; i < n; i++)
		if (vars[i] && pg_strcasecmp(vars[i]->name, name) == 0)
			return vars[i];
	return NULL;
}

/*
 * A setting's value as this process has it, where the value came from,
 * and whether it needs a restart to change.  False if there is no such
 * setting.
 */
bool
kp_setting_info(const char *name, char **value, KpSettingSource *source,
				bool *restart_only)
{
	struct config_generic *gen = find_setting(name);
	const char *v;

	if (gen == NULL)
		return false;
	v = GetConfigOption(name, false, false);
	if (gen->vartype == PGC_BOOL)
		v = strcmp(v, "on") == 0 ? "true" : "false";
	else if (gen->vartype == PGC_REAL)
	{
		/*
		 * every digit (GetConfigOption's %g keeps six), as Kafka shows a
		 * double
		 */
		v = double_to_shortest_decimal(*((struct config_real *) gen)->variable);
	}
	*value = pstrdup(v ? v : "");
	if (gen->source == PGC_S_DEFAULT)
		*source = KP_SETTING_DEFAULT;
	else if (gen->source == PGC_S_FILE && gen->sourcefile &&
			 strlen(gen->sourcefile) >= strlen(PG_AUTOCONF_FILENAME) &&
			 strcmp(gen->sourcefile + strlen(gen->sourcefile) - strlen(PG_AUTOCONF_FILENAME),
					PG_AUTOCONF_FILENAME) == 0)
		*source = KP_SETTING_ALTER_SYSTEM;
	else
		*source = KP_SETTING_STATIC;
	*restart_only = gen->context == PGC_POSTMASTER || gen->context == PGC_INTERNAL;
	return true;
}

/*
 * ERROR (ERRCODE_INVALID_PARAMETER_VALUE, PostgreSQL's message) unless
 * value is valid for the setting.  Nothing changes.
 */
void
kp_setting_check(const char *name, const char *value)
{
	(void) set_config_option(name, value, PGC_SIGHUP, PGC_S_FILE, GUC_ACTION_SET,
							 false, ERROR, false);
}

/*
 * ALTER SYSTEM SET name = value (value NULL: ALTER SYSTEM RESET name).
 * Takes effect at the next reload (kp_setting_reload).  Needs superuser,
 * as ALTER SYSTEM does.
 */
void
kp_setting_alter_system(const char *name, const char *value)
{
	AlterSystemStmt *stmt = makeNode(AlterSystemStmt);
	VariableSetStmt *set = makeNode(VariableSetStmt);

	set->name = pstrdup(name);
	if (value)
	{
		A_Const    *c = makeNode(A_Const);

		c->val.sval.type = T_String;
		c->val.sval.sval = pstrdup(value);
		c->location = -1;
		set->kind = VAR_SET_VALUE;
		set->args = list_make1(c);
	}
	else
		set->kind = VAR_RESET;
	stmt->setstmt = set;
	AlterSystemSetConfigFile(stmt);
}

/* pg_reload_conf(): every process rereads the configuration files. */
void
kp_setting_reload(void)
{
	if (kill(PostmasterPid, SIGHUP) != 0)
		ereport(WARNING,
				(errmsg("kafka_pg: failed to send a reload signal to the postmaster: %m")));
}
