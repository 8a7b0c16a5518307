/*-------------------------------------------------------------------------
 *
 * crc.c
 *	  CRC-32C for record batches.
 *
 * Kafka's v2 batches carry a CRC-32C (Castagnoli) from the attributes field
 * to the end of the batch (KIP-98 moved from CRC-32 to CRC-32C with magic 2).
 * Postgres already has a hardware-accelerated CRC-32C for its WAL, so we use
 * that one rather than carry our own table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "codec/codec.h"
#include "port/pg_crc32c.h"

/* CRC-32C of one contiguous span, computed in a single pass. */
uint32
kp_crc32c(const void *data, size_t len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, len);
	FIN_CRC32C(crc);
	return (uint32) crc;
}
