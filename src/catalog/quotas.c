/*-------------------------------------------------------------------------
 *
 * quotas.c
 *	  kafka.client_quotas: Kafka's client quotas (KIP-546), one row per
 *	  entity and quota key.
 *
 * An entity is Kafka's ClientQuotaEntity restricted to the types kafka_pg
 * enforces: a user part, a client-id part, or both, each a name or Kafka's
 * <default> (KpQuotaEntity).  This file only moves rows; which keys and
 * values are valid, and what the quotas do, is the listener's
 * (src/listener/handlers_quotas.c, throttle.c).  The table's CHECK
 * constraints hold the same rules, so a superuser's direct INSERT cannot
 * store what the wire would refuse.
 *
 * Every statement on the table fires kafka._client_quotas_changed, which
 * sends a relcache invalidation of kafka.client_quotas at commit: the
 * listener workers keep the table in memory and reread it when that
 * invalidation arrives (kp_client_quotas_relid names the table they watch).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"

#include "catalog/catalog_spi.h"
#include "catalog/kafka_catalog.h"

PG_FUNCTION_INFO_V1(kp_sql_client_quotas_changed);

Oid
kp_client_quotas_relid(void)
{
	Oid			nsp = get_namespace_oid("kafka", true);

	return OidIsValid(nsp) ? get_relname_relid("client_quotas", nsp) : InvalidOid;
}

/* The statement trigger: every backend rereads the quotas after commit. */
Datum
kp_sql_client_quotas_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("kafka._client_quotas_changed() must be called as a trigger")));
	CacheInvalidateRelcacheByRelid(RelationGetRelid(trigdata->tg_relation));
	return PointerGetDatum(NULL);
}

static char *
copy_text(HeapTuple tup, TupleDesc desc, int col)
{
	char	   *v = SPI_getvalue(tup, desc, col);
	char	   *out;

	if (v == NULL)
		return NULL;
	out = SPI_palloc(strlen(v) + 1);
	strcpy(out, v);
	return out;
}

/*
 * Every row, ordered by entity then key; returns the count.  *out and its
 * strings are palloc'd in the caller's memory context.
 */
int
kp_client_quotas(KpClientQuota **out)
{
	int			n;
	int			i;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute("SELECT user_name, user_default, client_id, client_id_default, quota_key, value "
					   "FROM kafka.client_quotas ORDER BY user_name COLLATE \"C\" NULLS FIRST, user_default, "
					   "client_id COLLATE \"C\" NULLS FIRST, client_id_default, quota_key COLLATE \"C\"",
					   true, 0) != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg: could not read kafka.client_quotas");
	n = (int) SPI_processed;
	*out = SPI_palloc(sizeof(KpClientQuota) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		KpClientQuota *q = &(*out)[i];
		bool		isnull;

		q->entity.user = copy_text(tup, desc, 1);
		q->entity.has_user = q->entity.user != NULL ||
			DatumGetBool(SPI_getbinval(tup, desc, 2, &isnull));
		q->entity.client_id = copy_text(tup, desc, 3);
		q->entity.has_client_id = q->entity.client_id != NULL ||
			DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
		q->key = copy_text(tup, desc, 5);
		q->value = DatumGetFloat8(SPI_getbinval(tup, desc, 6, &isnull));
	}
	SPI_finish();
	return n;
}

/*
 * Set one quota of an entity (remove: delete it; removing one that is not
 * set does nothing, as in Kafka).
 */
void
kp_client_quota_alter(const KpQuotaEntity *e, const char *key, bool remove, double value)
{
	Oid			types[6] = {TEXTOID, BOOLOID, TEXTOID, BOOLOID, TEXTOID, FLOAT8OID};
	Datum		args[6];
	char		nulls[6] = "      ";
	int			rc;

	args[0] = (e->has_user && e->user) ? CStringGetTextDatum(e->user) : (Datum) 0;
	if (!(e->has_user && e->user))
		nulls[0] = 'n';
	args[1] = BoolGetDatum(e->has_user && e->user == NULL);
	args[2] = (e->has_client_id && e->client_id) ? CStringGetTextDatum(e->client_id) : (Datum) 0;
	if (!(e->has_client_id && e->client_id))
		nulls[2] = 'n';
	args[3] = BoolGetDatum(e->has_client_id && e->client_id == NULL);
	args[4] = CStringGetTextDatum(key);
	args[5] = Float8GetDatum(value);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (remove)
		rc = kp_spi_execute_with_args("DELETE FROM kafka.client_quotas WHERE user_name IS NOT DISTINCT FROM $1 "
									  "AND user_default = $2 AND client_id IS NOT DISTINCT FROM $3 "
									  "AND client_id_default = $4 AND quota_key = $5",
									  5, types, args, nulls, false, 0);
	else
		rc = kp_spi_execute_with_args("INSERT INTO kafka.client_quotas "
									  "(user_name, user_default, client_id, client_id_default, quota_key, value) "
									  "VALUES ($1, $2, $3, $4, $5, $6) "
									  "ON CONFLICT (user_name, user_default, client_id, client_id_default, quota_key) "
									  "DO UPDATE SET value = excluded.value",
									  6, types, args, nulls, false, 0);
	if (rc != SPI_OK_INSERT && rc != SPI_OK_DELETE)
		elog(ERROR, "kafka_pg: could not change kafka.client_quotas");
	SPI_finish();
}
