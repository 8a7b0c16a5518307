/*-------------------------------------------------------------------------
 *
 * crc.c
 *	  CRC-32C for record batches.
 *
 * Kafka's v2 batches carry a CRC-32C (Castagnoli) from the attributes field
 * to the end of the batch (KIP-98 moved from CRC-32 to CRC-32C with magic 2).
 * The produce path checks it once per batch over the whole batch (64 kB and
 * more), so it is a per-byte cost of every produced record.
 *
 * PostgreSQL's pg_comp_crc32c (port/pg_crc32c.h) uses the SSE 4.2 crc32
 * instruction when the CPU has it, but as one chain: each crc32 waits for
 * the one before (3 cycles of latency), while the CPU could start one every
 * cycle.  On x86-64 with SSE 4.2 this file therefore runs three chains at
 * once over three adjacent blocks of KP_CRC_BLOCK bytes and joins them:
 *
 *	The CRC register update (no initial or final inversion, which is what
 *	the instruction computes) is linear over GF(2) in the register and the
 *	data together, so for data X followed by Y
 *		reg(r, X || Y) = zeros_|Y|(reg(r, X)) xor reg(0, Y)
 *	where zeros_n(v) = reg(v, n zero bytes) is itself linear in v: a
 *	32 x 32 bit matrix, applied as four lookups in 256-entry tables (one per
 *	byte of v).  For blocks A, B, C of KP_CRC_BLOCK bytes:
 *		reg(r, A || B || C) = zeros_2K(reg(r, A)) xor zeros_K(reg(0, B))
 *							  xor reg(0, C).
 *
 * The tables (8 kB) are built at the first call, from the instruction itself
 * (zeros_n of the 32 one-bit registers).  The result is exactly the CRC-32C
 * of the bytes (test/unit checks it against pg_comp_crc32c); elsewhere, or
 * without SSE 4.2, pg_comp_crc32c computes it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "codec/codec.h"
#include "port/pg_crc32c.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KP_CRC_THREE_WAY 1
#include <nmmintrin.h>
#endif

#ifdef KP_CRC_THREE_WAY

/* bytes per chain per step: two table joins per 3 * KP_CRC_BLOCK bytes */
#define KP_CRC_BLOCK	512

static int	crc_hw = -1;		/* -1: not known yet; 0: no SSE 4.2; 1: yes */
static uint32 zeros_1[4][256];	/* zeros_K, byte k of the register in [k] */
static uint32 zeros_2[4][256];	/* zeros_2K */

__attribute__((target("sse4.2")))
static uint32
crc_zeros(uint32 reg, size_t n)
{
	uint64		r = reg;
	size_t		i;

	for (i = 0; i < n / 8; i++)
		r = _mm_crc32_u64(r, 0);
	return (uint32) r;
}

static void
build_table(uint32 table[4][256], size_t n)
{
	uint32		bit[32];
	int			k;
	int			b;

	for (b = 0; b < 32; b++)
		bit[b] = crc_zeros((uint32) 1 << b, n);
	for (k = 0; k < 4; k++)
	{
		table[k][0] = 0;
		/* each entry: the entry without its lowest bit, xor that bit's image */
		for (b = 1; b < 256; b++)
			table[k][b] = table[k][b & (b - 1)] ^ bit[8 * k + __builtin_ctz(b)];
	}
}

static inline uint32
apply_zeros(const uint32 table[4][256], uint32 reg)
{
	return table[0][reg & 0xff] ^ table[1][(reg >> 8) & 0xff] ^
		table[2][(reg >> 16) & 0xff] ^ table[3][reg >> 24];
}

__attribute__((target("sse4.2")))
static uint32
crc_three_way(uint32 reg, const char *p, size_t len)
{
	uint64		r0 = reg;

	while (len >= 3 * KP_CRC_BLOCK)
	{
		uint64		r1 = 0;
		uint64		r2 = 0;
		size_t		i;

		for (i = 0; i < KP_CRC_BLOCK; i += 8)
		{
			uint64		a,
						b,
						c;

			memcpy(&a, p + i, 8);
			memcpy(&b, p + KP_CRC_BLOCK + i, 8);
			memcpy(&c, p + 2 * KP_CRC_BLOCK + i, 8);
			r0 = _mm_crc32_u64(r0, a);
			r1 = _mm_crc32_u64(r1, b);
			r2 = _mm_crc32_u64(r2, c);
		}
		r0 = apply_zeros(zeros_2, (uint32) r0) ^
			apply_zeros(zeros_1, (uint32) r1) ^ (uint32) r2;
		p += 3 * KP_CRC_BLOCK;
		len -= 3 * KP_CRC_BLOCK;
	}
	while (len >= 8)
	{
		uint64		a;

		memcpy(&a, p, 8);
		r0 = _mm_crc32_u64(r0, a);
		p += 8;
		len -= 8;
	}
	while (len > 0)
	{
		r0 = _mm_crc32_u8((uint32) r0, (unsigned char) *p);
		p++;
		len--;
	}
	return (uint32) r0;
}

static bool
crc_hw_ready(void)
{
	if (crc_hw < 0)
	{
		__builtin_cpu_init();
		if (__builtin_cpu_supports("sse4.2"))
		{
			build_table(zeros_1, KP_CRC_BLOCK);
			build_table(zeros_2, 2 * KP_CRC_BLOCK);
			crc_hw = 1;
		}
		else
			crc_hw = 0;
	}
	return crc_hw == 1;
}
#endif							/* KP_CRC_THREE_WAY */

/* CRC-32C of one contiguous span, computed in a single pass. */
uint32
kp_crc32c(const void *data, size_t len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
#ifdef KP_CRC_THREE_WAY
	/* short spans gain nothing from three chains */
	if (len >= 3 * KP_CRC_BLOCK && crc_hw_ready())
		crc = crc_three_way(crc, data, len);
	else
#endif
		COMP_CRC32C(crc, data, len);
	FIN_CRC32C(crc);
	return (uint32) crc;
}
