/*-------------------------------------------------------------------------
 *
 * fuzz_batch.c
 *	  libFuzzer target for the record codec's decoders.
 *
 * Everything a client can put in a Produce request reaches these entry
 * points, inside a Postgres backend where a crash restarts the server.  The
 * target feeds the input to:
 *
 *	- kp_batch_parse_header and kp_batch_validate, as is;
 *	- the same bytes with the CRC recomputed, so mutations get past the
 *	  checksum into the record parser;
 *	- the record iterator (which does not check the CRC), including
 *	  decompression with a small limit, touching every key, value and
 *	  header byte so ASan sees any out-of-bounds pointer;
 *	- kp_decompress directly, the first byte choosing the codec.
 *
 * Built with the frontend shim of test/unit; see fuzz/Makefile and README.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdint.h>

#include "codec/codec.h"

#define FUZZ_MAX_OUT	(256 * 1024)

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile unsigned sink;

static unsigned
touch(const char *p, int len)
{
	unsigned	s = 0;

	if (p == NULL)
		return len == -1 ? 0 : 1u << 31;	/* null must come with -1 */
	for (int i = 0; i < len; i++)
		s += (unsigned char) p[i];
	return s;
}

static void
iterate(const char *buf, size_t len)
{
	KpRecordIter it;
	KpRecord	rec;
	bool		done = false;
	int			n = 0;

	if (kp_record_iter_begin(&it, buf, len, FUZZ_MAX_OUT) != KP_CODEC_OK)
		return;
	while (kp_record_iter_next(&it, &rec, &done) == KP_CODEC_OK && !done)
	{
		int16		type;

		sink += touch(rec.key, rec.key_len) + touch(rec.value, rec.value_len);
		for (int h = 0; h < rec.header_count; h++)
			sink += touch(rec.headers[h].key, rec.headers[h].key_len) +
				touch(rec.headers[h].value, rec.headers[h].value_len);
		if (kp_parse_control_key(rec.key, rec.key_len, &type))
			sink += type;
		/* the iterator must stop after records_count, whatever the bytes */
		if (++n > it.hdr.records_count)
			__builtin_trap();
	}
	kp_record_iter_end(&it);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *) data;
	KpBatchHeader hdr;

	(void) kp_batch_parse_header(buf, size, &hdr);
	if (kp_batch_validate(buf, size, &hdr) == KP_CODEC_OK)
	{
		/* a batch that validates must also iterate if uncompressed */
		if (KpBatchCompression(&hdr) == KP_COMPRESSION_NONE)
		{
			KpRecordIter it;

			if (kp_record_iter_begin(&it, buf, size, FUZZ_MAX_OUT) != KP_CODEC_OK)
				__builtin_trap();
			kp_record_iter_end(&it);
		}
	}
	iterate(buf, size);

	/* past the CRC: same bytes with a correct checksum */
	if (size >= KP_BATCH_HEADER_SIZE)
	{
		char	   *copy = palloc(size);

		memcpy(copy, data, size);
		kp_batch_update_crc(copy, size);
		(void) kp_batch_validate(copy, size, &hdr);
		pfree(copy);
	}

	/* the decompressors on their own */
	if (size > 0)
	{
		StringInfoData out;
		KpCodecError err;

		initStringInfo(&out);
		err = kp_decompress((KpCompression) (data[0] % 5), buf + 1, size - 1,
							&out, FUZZ_MAX_OUT);
		if (err == KP_CODEC_OK && out.len > FUZZ_MAX_OUT)
			__builtin_trap();
		pfree(out.data);
	}
	return 0;
}
