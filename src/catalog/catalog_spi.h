/*-------------------------------------------------------------------------
 *
 * catalog_spi.h
 *	  The SPI calls src/catalog makes, under KP_SAFE_SEARCH_PATH (spi.c).
 *	  For src/catalog only: nothing else issues SQL.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_CATALOG_SPI_H
#define KP_CATALOG_SPI_H

#include "executor/spi.h"

#include "catalog/kafka_catalog.h"

extern int	kp_spi_execute(const char *sql, bool read_only, long count);
extern int	kp_spi_execute_with_args(const char *sql, int nargs, Oid *types, Datum *values,
									 const char *nulls, bool read_only, long count);
extern SPIPlanPtr kp_spi_prepare(const char *sql, int nargs, Oid *types);
extern int	kp_spi_execute_plan(SPIPlanPtr plan, Datum *values, const char *nulls,
								bool read_only, long count);
extern int	kp_spi_execute_snapshot(SPIPlanPtr plan, Datum *values, const char *nulls,
									Snapshot snapshot, Snapshot crosscheck_snapshot,
									bool read_only, bool fire_triggers, long tcount);

#endif							/* KP_CATALOG_SPI_H */
