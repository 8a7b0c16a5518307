/*-------------------------------------------------------------------------
 *
 * murmur2.c
 *	  The Java client's default partitioner hash.
 *
 * Keyed records must land in the partition a Java producer would choose, or
 * a topic written through the SQL API and through a Java client would split
 * one key over two partitions.  This is org.apache.kafka.common.utils.Utils
 * .murmur2 bit for bit: MurmurHash2 with seed 0x9747b28c, little-endian
 * 4-byte words, and Java's tail switch in which the cases fall through.
 * Java's int arithmetic wraps, so everything here is uint32.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "codec/codec.h"

#define MURMUR2_SEED	0x9747b28cU
#define MURMUR2_M		0x5bd1e995U
#define MURMUR2_R		24

int32
kp_murmur2(const char *data, int len)
{
	const unsigned char *d = (const unsigned char *) data;
	uint32		h;
	int			nwords;

	if (len < 0 || d == NULL)
		len = 0;
	h = MURMUR2_SEED ^ (uint32) len;
	nwords = len / 4;

	for (int i = 0; i < nwords; i++)
	{
		const unsigned char *w = d + i * 4;
		uint32		k = (uint32) w[0] | ((uint32) w[1] << 8) |
		((uint32) w[2] << 16) | ((uint32) w[3] << 24);

		k *= MURMUR2_M;
		k ^= k >> MURMUR2_R;
		k *= MURMUR2_M;
		h *= MURMUR2_M;
		h ^= k;
	}

	/* the remaining 1-3 bytes; cases fall through as in Java */
	switch (len % 4)
	{
		case 3:
			h ^= (uint32) d[(len & ~3) + 2] << 16;
			/* FALLTHROUGH */
		case 2:
			h ^= (uint32) d[(len & ~3) + 1] << 8;
			/* FALLTHROUGH */
		case 1:
			h ^= (uint32) d[len & ~3];
			h *= MURMUR2_M;
	}

	h ^= h >> 13;
	h *= MURMUR2_M;
	h ^= h >> 15;

	return (int32) h;
}

/*
 * Partition for a non-null key, as Java's BuiltInPartitioner.partitionForKey:
 * toPositive(murmur2(key)) % numPartitions.  Returns -1 when there are no
 * partitions.  Null keys are not hashed by Java (sticky partitioning, KIP-480)
 * and must not be routed here.
 */
int32
kp_partition_for_key(const char *key, int key_len, int32 num_partitions)
{
	if (num_partitions <= 0)
		return -1;
	return (int32) (((uint32) kp_murmur2(key, key_len) & 0x7fffffffU) %
					(uint32) num_partitions);
}
