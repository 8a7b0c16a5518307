/*-------------------------------------------------------------------------
 *
 * varint.c
 *	  The project's one varint coder.
 *
 * Two flavours exist on the Kafka wire.  Record fields (lengths, deltas,
 * header counts) are zig-zag varints as in protocol buffers (Kafka docs,
 * implementation.html "Record"); the compact strings, arrays and bytes of
 * flexible protocol versions are plain unsigned varints (KIP-482).  Both are
 * at most 10 bytes for a 64-bit value.
 *
 * The readers see client bytes: they never read past 'end', reject a varint
 * longer than 10 bytes and reject a 10th byte that would carry bits beyond
 * 64, so no malformed input can make them misbehave.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "codec/codec.h"
#include "port/pg_bitutils.h"

#define KP_VARINT_MAX_BYTES 10

static inline uint64
zigzag_encode(int64 value)
{
	/* shift as unsigned (no UB), smear the sign bit over all 64 bits */
	return ((uint64) value << 1) ^ (uint64) (-(int64) ((uint64) value >> 63));
}

static inline int64
zigzag_decode(uint64 u)
{
	return (int64) ((u >> 1) ^ (~(u & 1) + 1));
}

/* Encoded size of an unsigned varint: 7 payload bits per byte. */
static inline int
uvarint_size(uint64 u)
{
	return pg_leftmost_one_pos64(u | 1) / 7 + 1;
}

int
kp_varint_size(int64 value)
{
	return uvarint_size(zigzag_encode(value));
}

/*
 * Write an unsigned varint at dst, which must have room for 10 bytes (or
 * kp_varint_size() bytes); returns the first byte after it.
 */
char *
kp_put_uvarint(char *dst, uint64 value)
{
	unsigned char *p = (unsigned char *) dst;

	while (value >= 0x80)
	{
		*p++ = (unsigned char) (value | 0x80);
		value >>= 7;
	}
	*p++ = (unsigned char) value;
	return (char *) p;
}

char *
kp_put_varint(char *dst, int64 value)
{
	return kp_put_uvarint(dst, zigzag_encode(value));
}

void
kp_append_uvarint(StringInfo buf, uint64 value)
{
	enlargeStringInfo(buf, KP_VARINT_MAX_BYTES);
	buf->len = kp_put_uvarint(buf->data + buf->len, value) - buf->data;
	buf->data[buf->len] = '\0';
}

void
kp_append_varint(StringInfo buf, int64 value)
{
	kp_append_uvarint(buf, zigzag_encode(value));
}

/*
 * Read an unsigned varint from [*pos, end).  On success advance *pos and
 * return true; on truncation or overlong encoding leave *pos alone and
 * return false.
 */
bool
kp_get_uvarint(const char **pos, const char *end, uint64 *value)
{
	const unsigned char *p = (const unsigned char *) *pos;
	const unsigned char *e = (const unsigned char *) end;
	uint64		result = 0;
	int			shift = 0;

	/* Fast path: one byte, the common case for small lengths and deltas. */
	if (p < e && *p < 0x80)
	{
		*value = *p;
		*pos = (const char *) (p + 1);
		return true;
	}

	for (int i = 0; i < KP_VARINT_MAX_BYTES; i++)
	{
		unsigned char b;

		if (p >= e)
			return false;		/* truncated */
		b = *p++;

		/* the 10th byte may only carry bit 63 */
		if (i == KP_VARINT_MAX_BYTES - 1 && b > 1)
			return false;

		result |= (uint64) (b & 0x7f) << shift;
		if ((b & 0x80) == 0)
		{
			*value = result;
			*pos = (const char *) p;
			return true;
		}
		shift += 7;
	}
	return false;				/* continuation bit set on the 10th byte */
}

bool
kp_get_varint(const char **pos, const char *end, int64 *value)
{
	uint64		u;

	if (!kp_get_uvarint(pos, end, &u))
		return false;
	*value = zigzag_decode(u);
	return true;
}
