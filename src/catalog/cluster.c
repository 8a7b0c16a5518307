/*-------------------------------------------------------------------------
 *
 * cluster.c
 *	  Catalog state that belongs to the whole "cluster" rather than to one
 *	  topic: the producer id sequence (kafka.producer_id_seq), the row
 *	  of kafka.store that records the segment directory's relfilenode, and
 *	  the row of kafka.leader, the leader's view that the primary's listener
 *	  publishes for the hot standbys to report (src/listener/leader.c).
 *
 * These are the statements the listener and the SQL API used to issue
 * themselves; they live here so that all SQL against kafka.* catalog
 * objects is in src/catalog (topics.c owns the topic tables) and the front
 * doors only call functions.  src/store/directory.c reads kafka.store; this
 * file writes its one row when the extension is created.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "catalog/catalog_spi.h"
#include "catalog/kafka_catalog.h"

/*
 * A new producer id from kafka.producer_id_seq (InitProducerId without a
 * producer id).  Nontransactional, as nextval is: an id is never reused even
 * if the request's transaction aborts.
 */
int64
kp_catalog_next_producer_id(void)
{
	bool		isnull;
	int64		id;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute("SELECT nextval('kafka.producer_id_seq')", false, 1) != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg: cannot allocate a producer id");
	id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return id;
}

/* Record the segment directory's relfilenode in kafka.store (install script). */
void
kp_catalog_record_store_directory(Oid relnode)
{
	char	   *sql = psprintf("INSERT INTO kafka.store VALUES (%u)", relnode);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute(sql, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "kafka_pg: could not record the segment directory");
	SPI_finish();
}

/*
 * kafka.leader: the leader's view as its listener published it.  False when
 * there is no row (no primary listener has run since CREATE EXTENSION).
 */
bool
kp_catalog_read_leader(KpLeaderRow *out)
{
	MemoryContext caller = CurrentMemoryContext;
	bool		found = false;

	memset(out, 0, sizeof(*out));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute("SELECT node_id, host, port, leader_epoch, brokers, replicas::text, "
					   "isr::text, offline::text, rack FROM kafka.leader", true, 1) != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg: could not read kafka.leader");
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		out->node_id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		out->port = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
		out->leader_epoch = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
		/* the strings outlive SPI_finish: copied into the caller's memory */
		out->host = MemoryContextStrdup(caller, SPI_getvalue(tup, desc, 2));
		out->brokers = MemoryContextStrdup(caller, SPI_getvalue(tup, desc, 5));
		out->replicas = MemoryContextStrdup(caller, SPI_getvalue(tup, desc, 6));
		out->isr = MemoryContextStrdup(caller, SPI_getvalue(tup, desc, 7));
		out->offline = MemoryContextStrdup(caller, SPI_getvalue(tup, desc, 8));
		out->rack = SPI_getvalue(tup, desc, 9);
		if (out->rack)
			out->rack = MemoryContextStrdup(caller, out->rack);
		found = true;
	}
	SPI_finish();
	return found;
}

/*
 * Publish the leader's view in kafka.leader.  A bookkeeping row, not a
 * client's write: its commit does not wait for synchronous standbys, so a
 * primary whose synchronous standby is away still publishes (the row then
 * reaches the standbys when they stream again).
 */
void
kp_catalog_write_leader(const KpLeaderRow *row)
{
	Oid			types[9] = {INT4OID, TEXTOID, INT4OID, INT4OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
	TEXTOID};
	Datum		values[9];
	char		nulls[9] = "        ";

	values[0] = Int32GetDatum(row->node_id);
	values[1] = CStringGetTextDatum(row->host);
	values[2] = Int32GetDatum(row->port);
	values[3] = Int32GetDatum(row->leader_epoch);
	values[4] = CStringGetTextDatum(row->brokers);
	values[5] = CStringGetTextDatum(row->replicas);
	values[6] = CStringGetTextDatum(row->isr);
	values[7] = CStringGetTextDatum(row->offline);
	values[8] = row->rack ? CStringGetTextDatum(row->rack) : (Datum) 0;
	nulls[8] = row->rack ? ' ' : 'n';
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (kp_spi_execute("SET LOCAL synchronous_commit = local", false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "kafka_pg: could not set synchronous_commit");
	if (kp_spi_execute_with_args("INSERT INTO kafka.leader AS l (node_id, host, port, leader_epoch, "
								 "brokers, replicas, isr, offline, rack) "
								 "VALUES ($1, $2, $3, $4, $5, $6::int[], $7::int[], $8::int[], $9) "
								 "ON CONFLICT (one) DO UPDATE SET node_id = excluded.node_id, "
								 "host = excluded.host, port = excluded.port, "
								 "leader_epoch = excluded.leader_epoch, brokers = excluded.brokers, "
								 "replicas = excluded.replicas, isr = excluded.isr, "
								 "offline = excluded.offline, rack = excluded.rack, "
								 "published_at = now()",
								 9, types, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "kafka_pg: could not write kafka.leader");
	SPI_finish();
}
