/*-------------------------------------------------------------------------
 *
 * cluster.c
 *	  Catalog reads that the cluster-wide admin APIs need: the list of every
 *	  topic, in the order Kafka's broker walks them.
 *
 * Read-only.  The tables are written by topics.c only; this file lists
 * what is there for DescribeTopicPartitions (its cursor paging walks topics
 * in name order) and ListConfigResources.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/memutils.h"

#include "catalog/kafka_catalog.h"

/*
 * The names of every topic, sorted as Kafka sorts them (Java's
 * String.compareTo: byte order for the ASCII names Kafka allows, hence
 * COLLATE "C").  Returns the count; *names is palloc'd in the caller's
 * memory context.  Takes no lock: a topic deleted meanwhile is found
 * missing when the caller opens it.
 */
int
kp_topic_list_names(char ***names)
{
	MemoryContext caller = CurrentMemoryContext;
	int			n;
	int			i;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT name FROM kafka.topics ORDER BY name COLLATE \"C\"",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "kafka_pg: cannot list topics");
	n = (int) SPI_processed;
	*names = MemoryContextAlloc(caller, sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
		(*names)[i] = MemoryContextStrdup(caller,
										  SPI_getvalue(SPI_tuptable->vals[i],
													   SPI_tuptable->tupdesc, 1));
	SPI_finish();
	return n;
}
