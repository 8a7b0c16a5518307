/*-------------------------------------------------------------------------
 *
 * test_compression.c
 *	  The decompression limit (zip bombs) and the compressed forms real
 *	  clients send (snappy-java framing, lz4 and zstd variants).
 *
 * Part of the codec unit tests, run in order by test_codec.c's main().
 * Built as frontend code (see shim/postgres.h) by `make -C test/unit check`.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>
#include <zlib.h>
#include <lz4frame.h>
#include <zstd.h>

#include "codec/codec.h"
#include "unit.h"

/* ---------- decompression limits and client variants ---------- */

void
test_decompression(void)
{
	size_t		bomb_len = 64 * 1024 * 1024;
	char	   *zeros = palloc0(bomb_len);

	for (int c = 1; c < NCODECS; c++)
	{
		KpCompression codec = all_codecs[c];
		const char *name = kp_compression_name(codec);
		StringInfoData comp;
		StringInfoData out;
		KpCodecError err;

		initStringInfo(&comp);
		CHECK(kp_compress(codec, zeros, bomb_len, &comp), "%s: compress 64 MiB", name);

		/* zip bomb: 64 MiB from a few KiB must stop at the limit */
		initStringInfo(&out);
		err = kp_decompress(codec, comp.data, comp.len, &out, 1024 * 1024);
		CHECK(err == KP_CODEC_TOO_LARGE && (size_t) out.maxlen <= 4 * 1024 * 1024,
			  "%s: bomb of %d bytes refused at 1 MiB, buffer never above 4 MiB (%s, buffer %d)",
			  name, comp.len, kp_codec_error_message(err), out.maxlen);
		pfree(out.data);

		/* exactly the limit passes, one byte less does not */
		initStringInfo(&out);
		err = kp_decompress(codec, comp.data, comp.len, &out, bomb_len);
		CHECK(err == KP_CODEC_OK && (size_t) out.len == bomb_len &&
			  memcmp(out.data, zeros, bomb_len) == 0,
			  "%s: limit == size inflates (%s)", name, kp_codec_error_message(err));
		resetStringInfo(&out);
		err = kp_decompress(codec, comp.data, comp.len, &out, bomb_len - 1);
		CHECK(err == KP_CODEC_TOO_LARGE, "%s: limit == size - 1 refused", name);
		pfree(out.data);

		/* empty input round trip */
		resetStringInfo(&comp);
		initStringInfo(&out);
		CHECK(kp_compress(codec, "", 0, &comp) &&
			  kp_decompress(codec, comp.data, comp.len, &out, 10) == KP_CODEC_OK &&
			  out.len == 0, "%s: empty round trip", name);
		/* appending keeps what dst held */
		resetStringInfo(&comp);
		resetStringInfo(&out);
		appendStringInfoString(&out, "prefix");
		CHECK(kp_compress(codec, "hello", 5, &comp) &&
			  kp_decompress(codec, comp.data, comp.len, &out, 5) == KP_CODEC_OK &&
			  out.len == 11 && memcmp(out.data, "prefixhello", 11) == 0,
			  "%s: decompress appends", name);
		/* truncated compressed stream */
		resetStringInfo(&out);
		CHECK(kp_decompress(codec, comp.data, comp.len - 1, &out, 100) ==
			  KP_CODEC_BAD_COMPRESSION, "%s: truncated stream", name);
		resetStringInfo(&out);
		CHECK(kp_decompress(codec, comp.data, 0, &out, 100) == KP_CODEC_BAD_COMPRESSION,
			  "%s: zero-length stream", name);
		pfree(out.data);
		pfree(comp.data);
	}

	/* client variants the broker must read */
	{
		const char *plain = "the quick brown fox jumps over the lazy dog, again and again";
		size_t		tlen = strlen(plain);
		StringInfoData out;
		char		buf[256];
		size_t		clen = sizeof(buf);

		initStringInfo(&out);

		/* raw snappy, as librdkafka and franz-go send it */
		CHECK(snappy_compress(plain, tlen, buf, &clen) == SNAPPY_OK &&
			  kp_decompress(KP_COMPRESSION_SNAPPY, buf, clen, &out, 1000) == KP_CODEC_OK &&
			  (size_t) out.len == tlen && memcmp(out.data, plain, tlen) == 0,
			  "raw snappy");
		resetStringInfo(&out);
		CHECK(kp_decompress(KP_COMPRESSION_SNAPPY, buf, clen, &out, tlen - 1) ==
			  KP_CODEC_TOO_LARGE, "raw snappy over the limit refused before inflating");

		/* zstd frame without a content size (streaming producers) */
		{
			ZSTD_CCtx  *cctx = ZSTD_createCCtx();
			ZSTD_inBuffer in = {plain, tlen, 0};
			ZSTD_outBuffer zo = {buf, sizeof(buf), 0};
			unsigned long long csize;

			ZSTD_compressStream2(cctx, &zo, &in, ZSTD_e_continue);
			ZSTD_compressStream2(cctx, &zo, &in, ZSTD_e_end);
			ZSTD_freeCCtx(cctx);
			csize = ZSTD_getFrameContentSize(buf, zo.pos);
			resetStringInfo(&out);
			CHECK(csize == ZSTD_CONTENTSIZE_UNKNOWN &&
				  kp_decompress(KP_COMPRESSION_ZSTD, buf, zo.pos, &out, 1000) == KP_CODEC_OK &&
				  (size_t) out.len == tlen && memcmp(out.data, plain, tlen) == 0,
				  "zstd frame without content size");
		}

		/*
		 * LZ4 with linked blocks, as python-lz4 (kafka-python) writes by
		 * default: later blocks refer back into earlier output, which must
		 * survive our output buffer moving as it grows.
		 */
		{
			size_t		n = 1024 * 1024;
			char	   *data = palloc(n);
			LZ4F_preferences_t prefs;
			size_t		bound;
			char	   *comp;
			size_t		clen;
			uint32		x = 1;

			for (size_t i = 0; i < n; i += 16)
			{
				/* 16-byte words from a small set: matches across blocks */
				x = x * 1103515245 + 12345;
				memset(data + i, 'a' + (x >> 16) % 23, 16);
				data[i] = (char) ((x >> 8) % 7);
			}
			memset(&prefs, 0, sizeof(prefs));
			prefs.frameInfo.blockSizeID = LZ4F_max64KB;
			prefs.frameInfo.blockMode = LZ4F_blockLinked;
			prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
			bound = LZ4F_compressFrameBound(n, &prefs);
			comp = palloc(bound);
			clen = LZ4F_compressFrame(comp, bound, data, n, &prefs);
			resetStringInfo(&out);
			CHECK(!LZ4F_isError(clen) &&
				  kp_decompress(KP_COMPRESSION_LZ4, comp, clen, &out, n) == KP_CODEC_OK &&
				  (size_t) out.len == n && memcmp(out.data, data, n) == 0,
				  "lz4 frame with linked blocks and content checksum, 1 MiB");
			pfree(comp);
			pfree(data);
		}

		/* zstd: a window beyond what the limit allows is refused up front */
		{
			size_t		n = 300 * 1000;
			char	   *data = palloc0(n);
			char	   *comp = palloc(ZSTD_compressBound(n));
			ZSTD_CCtx  *cctx = ZSTD_createCCtx();
			ZSTD_inBuffer in = {data, n, 0};
			ZSTD_outBuffer zo = {comp, ZSTD_compressBound(n), 0};

			ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, 26);
			/* a first call without e_end: the size stays unknown */
			ZSTD_compressStream2(cctx, &zo, &in, ZSTD_e_continue);
			ZSTD_compressStream2(cctx, &zo, &in, ZSTD_e_end);
			ZSTD_freeCCtx(cctx);
			resetStringInfo(&out);
			CHECK(kp_decompress(KP_COMPRESSION_ZSTD, comp, zo.pos, &out, 1024 * 1024) ==
				  KP_CODEC_TOO_LARGE, "zstd window 64 MiB refused at a 1 MiB limit");
			resetStringInfo(&out);
			CHECK(kp_decompress(KP_COMPRESSION_ZSTD, comp, zo.pos, &out, 64 * 1024 * 1024) ==
				  KP_CODEC_OK && (size_t) out.len == n,
				  "zstd window 64 MiB accepted at a 64 MiB limit");
			pfree(comp);
			pfree(data);
		}

		/* two gzip members back to back (GZIPInputStream reads both) */
		{
			StringInfoData two;

			initStringInfo(&two);
			kp_compress(KP_COMPRESSION_GZIP, "abc", 3, &two);
			kp_compress(KP_COMPRESSION_GZIP, "def", 3, &two);
			resetStringInfo(&out);
			CHECK(kp_decompress(KP_COMPRESSION_GZIP, two.data, two.len, &out, 100) ==
				  KP_CODEC_OK && out.len == 6 && memcmp(out.data, "abcdef", 6) == 0,
				  "concatenated gzip members");
			pfree(two.data);
		}

		/* xerial framing with several chunks (our compressor: 32 KiB blocks) */
		{
			StringInfoData comp;
			size_t		n = 100 * 1000;
			char	   *data = palloc(n);

			for (size_t i = 0; i < n; i++)
				data[i] = (char) (i % 251);
			initStringInfo(&comp);
			kp_compress(KP_COMPRESSION_SNAPPY, data, n, &comp);
			resetStringInfo(&out);
			CHECK(memcmp(comp.data, "\x82SNAPPY\0\0\0\0\1\0\0\0\1", 16) == 0 &&
				  kp_decompress(KP_COMPRESSION_SNAPPY, comp.data, comp.len, &out, n) ==
				  KP_CODEC_OK && (size_t) out.len == n && memcmp(out.data, data, n) == 0,
				  "xerial snappy, 4 chunks");
			resetStringInfo(&out);
			CHECK(kp_decompress(KP_COMPRESSION_SNAPPY, comp.data, comp.len, &out, 40000) ==
				  KP_CODEC_TOO_LARGE && out.len <= 40000,
				  "xerial snappy stops at the limit chunk by chunk");
			pfree(comp.data);
			pfree(data);
		}
		pfree(out.data);
	}

	/* names */
	{
		KpCompression c;

		CHECK(strcmp(kp_compression_name(KP_COMPRESSION_LZ4), "lz4") == 0, "name lz4");
		CHECK(kp_compression_from_name("ZSTD", &c) && c == KP_COMPRESSION_ZSTD, "from ZSTD");
		CHECK(kp_compression_from_name("uncompressed", &c) && c == KP_COMPRESSION_NONE,
			  "from uncompressed");
		CHECK(!kp_compression_from_name("producer", &c) && !kp_compression_from_name("brotli", &c),
			  "producer/brotli are not codecs");
		CHECK(strcmp(kp_compression_name((KpCompression) 7), "unknown") == 0, "name 7");
		for (int e = KP_CODEC_OK; e <= KP_CODEC_TOO_LARGE; e++)
			CHECK(kp_codec_error_message((KpCodecError) e) != NULL, "message %d", e);
	}
	pfree(zeros);
}
