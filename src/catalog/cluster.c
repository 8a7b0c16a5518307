/*-------------------------------------------------------------------------
 *
 * cluster.c
 *	  Catalog state that belongs to the whole "cluster" rather than to one
 *	  topic: the producer id sequence (kafka.producer_id_seq) and the row
 *	  of kafka.store that records the segment directory's relfilenode.
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

#include "executor/spi.h"

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
	if (SPI_execute("SELECT nextval('kafka.producer_id_seq')", false, 1) != SPI_OK_SELECT)
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
	if (SPI_execute(sql, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "kafka_pg: could not record the segment directory");
	SPI_finish();
}
