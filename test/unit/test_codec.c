/*-------------------------------------------------------------------------
 *
 * test_codec.c
 *	  Unit tests of src/codec, run without a server.
 *
 * Built as frontend code (see shim/postgres.h) by `make -C test/unit check`.
 * main() runs the parts in the order of the codec's specification: varints
 * and murmur2 (this file), batch build/validate/iterate for every codec and
 * control batches (test_records.c), what corruption, truncation and
 * malformed records must do (test_corruption.c), the decompression limit and
 * client variants (test_compression.c), and agreement with a real client
 * (kafka-python) in both directions (test_fixtures.c).
 *
 * The last line printed is "N passed, M failed"; the exit code is nonzero
 * if anything failed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "port/pg_crc32c.h"
#include "unit.h"

int			n_passed = 0;
int			n_failed = 0;

const KpCompression all_codecs[NCODECS] = {
	KP_COMPRESSION_NONE, KP_COMPRESSION_GZIP, KP_COMPRESSION_SNAPPY,
	KP_COMPRESSION_LZ4, KP_COMPRESSION_ZSTD
};

const char *fixture_dir = "fixtures";
const char *out_dir = "out";
const char *python = "/usr/bin/python3";

/* ---------- varints ---------- */

void
test_varints(void)
{
	static const int64 values[] = {
		0, 1, -1, 2, -2, 63, -64, 64, -65, 127, 128, 300, -300,
		8191, 8192, PG_INT32_MAX, PG_INT32_MIN, (int64) PG_INT32_MAX + 1,
		INT64CONST(1) << 62, -(INT64CONST(1) << 62), PG_INT64_MAX, PG_INT64_MIN
	};
	char		buf[16];
	bool		ok = true;
	bool		failed = false;

	/* round trips, and kp_varint_size agrees with what is written */
	for (int i = 0; i < (int) lengthof(values); i++)
	{
		char	   *end = kp_put_varint(buf, values[i]);
		const char *pos = buf;
		int64		v;

		if (end - buf != kp_varint_size(values[i]) ||
			!kp_get_varint(&pos, end, &v) || v != values[i] || pos != end)
		{
			LOOP_FAIL(failed, "varint round trip of " INT64_FORMAT, values[i]);
			ok = false;
		}
	}
	for (int shift = 0; shift < 64; shift++)
	{
		for (int d = -1; d <= 1; d++)
		{
			int64		x = (int64) (((uint64) 1 << shift) + d);
			char	   *end = kp_put_varint(buf, x);
			const char *pos = buf;
			int64		v;

			if (!kp_get_varint(&pos, end, &v) || v != x ||
				end - buf != kp_varint_size(x))
			{
				LOOP_FAIL(failed, "varint 2^%d%+d", shift, d);
				ok = false;
			}
		}
	}
	CHECK(ok, "zig-zag varints round-trip");

	/* zig-zag encodings from the protobuf documentation */
	CHECK(kp_put_varint(buf, 0) - buf == 1 && buf[0] == 0, "0 -> 00");
	CHECK(kp_put_varint(buf, -1) - buf == 1 && buf[0] == 1, "-1 -> 01");
	CHECK(kp_put_varint(buf, 1) - buf == 1 && buf[0] == 2, "1 -> 02");
	CHECK(kp_put_varint(buf, 300) - buf == 2 && (unsigned char) buf[0] == 0xd8 &&
		  buf[1] == 0x04, "300 -> d8 04");
	CHECK(kp_varint_size(PG_INT64_MIN) == 10 && kp_varint_size(PG_INT64_MAX) == 10,
		  "INT64 extremes take 10 bytes");
	CHECK(kp_varint_size(-64) == 1 && kp_varint_size(64) == 2, "one-byte range is [-64, 63]");

	/* unsigned */
	{
		char	   *end = kp_put_uvarint(buf, PG_UINT64_MAX);
		const char *pos = buf;
		uint64		u;

		CHECK(end - buf == 10 && kp_get_uvarint(&pos, end, &u) &&
			  u == PG_UINT64_MAX, "UINT64_MAX as a 10-byte uvarint");
		end = kp_put_uvarint(buf, 127);
		pos = buf;
		CHECK(end - buf == 1 && kp_get_uvarint(&pos, end, &u) && u == 127, "uvarint 127");
		end = kp_put_uvarint(buf, 128);
		CHECK(end - buf == 2 && (unsigned char) buf[0] == 0x80 && buf[1] == 1, "uvarint 128 -> 80 01");
	}

	/* truncated input fails at every length and does not move pos */
	ok = true;
	for (int i = 0; i < (int) lengthof(values); i++)
	{
		char	   *end = kp_put_varint(buf, values[i]);

		for (int n = 0; n < end - buf; n++)
		{
			const char *pos = buf;
			int64		v;

			if (kp_get_varint(&pos, buf + n, &v) || pos != buf)
				ok = false;
		}
	}
	CHECK(ok, "truncated varints are refused without advancing");

	/* over-long encodings */
	{
		const char *pos;
		int64		v;
		uint64		u;

		memset(buf, 0x80, 11);
		buf[10] = 0;
		pos = buf;
		CHECK(!kp_get_varint(&pos, buf + 11, &v) && pos == buf,
			  "11-byte varint refused");
		memset(buf, 0xff, 9);
		buf[9] = 0x02;			/* 10th byte carrying bit 64 */
		pos = buf;
		CHECK(!kp_get_uvarint(&pos, buf + 10, &u), "10th byte > 1 refused");
		buf[9] = 0x01;
		pos = buf;
		CHECK(kp_get_uvarint(&pos, buf + 10, &u) && u == PG_UINT64_MAX,
			  "10th byte == 1 accepted");
		/* non-minimal but in range (Java accepts it): 0 as 80 00 */
		buf[0] = (char) 0x80;
		buf[1] = 0;
		pos = buf;
		CHECK(kp_get_varint(&pos, buf + 2, &v) && v == 0 && pos == buf + 2,
			  "padded varint accepted");
	}

	/* StringInfo appenders */
	{
		StringInfoData s;
		const char *pos;
		int64		v;
		uint64		u;

		initStringInfo(&s);
		kp_append_varint(&s, -12345);
		kp_append_uvarint(&s, 999999);
		pos = s.data;
		CHECK(kp_get_varint(&pos, s.data + s.len, &v) && v == -12345 &&
			  kp_get_uvarint(&pos, s.data + s.len, &u) && u == 999999 &&
			  pos == s.data + s.len, "append varint/uvarint");
		pfree(s.data);
	}
}

/* ---------- murmur2 ---------- */

void
test_murmur2(void)
{
	static const struct
	{
		const char *key;
		int32		hash;
	}			vectors[] = {
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	};

	for (int i = 0; i < (int) lengthof(vectors); i++)
	{
		int32		h = kp_murmur2(vectors[i].key, strlen(vectors[i].key));

		CHECK(h == vectors[i].hash, "murmur2(\"%s\") = %d, want %d",
			  vectors[i].key, h, vectors[i].hash);
	}
	/* Java: toPositive(murmur2) % n */
	CHECK(kp_partition_for_key("21", 2, 10) == (int32) ((uint32) (-973932308 & 0x7fffffff) % 10),
		  "partition of \"21\" over 10");
	CHECK(kp_partition_for_key("foobar", 6, 3) == (int32) ((-790332482 & 0x7fffffff) % 3),
		  "partition of \"foobar\" over 3");
	CHECK(kp_partition_for_key("abc", 3, 1) == 0, "one partition");
	CHECK(kp_partition_for_key("abc", 3, 0) == -1, "no partitions");
	{
		bool		ok = true;

		for (int n = 1; n < 50; n++)
		{
			int32		p = kp_partition_for_key("a-little-bit-long-string", 24, n);

			if (p < 0 || p >= n)
				ok = false;
		}
		CHECK(ok, "partition always in [0, n)");
	}
}

/* ---------- CRC-32C ---------- */

/*
 * kp_crc32c runs three chains over 512-byte blocks on x86-64 (crc.c): it
 * must give exactly PostgreSQL's pg_comp_crc32c at every length and
 * alignment, around the block boundaries above all.
 */
void
test_crc32c(void)
{
	const size_t maxlen = 3 * 3 * 512 + 64;
	char	   *buf = palloc(maxlen + 8);
	unsigned int seed = 12345;
	bool		ok = true;
	size_t		bad_len = 0;
	int			bad_off = 0;

	CHECK(kp_crc32c("123456789", 9) == 0xE3069283, "CRC-32C check value");
	CHECK(kp_crc32c("", 0) == 0, "CRC-32C of nothing");
	for (size_t i = 0; i < maxlen + 8; i++)
	{
		seed = seed * 1103515245 + 12345;
		buf[i] = (char) (seed >> 16);
	}
	for (int off = 0; off < 8 && ok; off++)
	{
		for (size_t len = 0; len <= maxlen && ok; len++)
		{
			pg_crc32c	want;

			INIT_CRC32C(want);
			COMP_CRC32C(want, buf + off, len);
			FIN_CRC32C(want);
			if (kp_crc32c(buf + off, len) != (uint32) want)
			{
				ok = false;
				bad_len = len;
				bad_off = off;
			}
		}
	}
	CHECK(ok, "kp_crc32c agrees with pg_comp_crc32c (first difference: %zu bytes at offset %d)",
		  bad_len, bad_off);
	/* all ones and all zeroes over many blocks */
	memset(buf, 0xff, maxlen);
	{
		pg_crc32c	want;

		INIT_CRC32C(want);
		COMP_CRC32C(want, buf, maxlen);
		FIN_CRC32C(want);
		CHECK(kp_crc32c(buf, maxlen) == (uint32) want, "CRC-32C of %zu bytes 0xff", maxlen);
	}
	memset(buf, 0, maxlen);
	{
		pg_crc32c	want;

		INIT_CRC32C(want);
		COMP_CRC32C(want, buf, maxlen);
		FIN_CRC32C(want);
		CHECK(kp_crc32c(buf, maxlen) == (uint32) want, "CRC-32C of %zu zero bytes", maxlen);
	}
	pfree(buf);
}

int
main(int argc, char **argv)
{
	if (getenv("KP_FIXTURES"))
		fixture_dir = getenv("KP_FIXTURES");
	if (getenv("KP_OUT"))
		out_dir = getenv("KP_OUT");
	if (getenv("PYTHON"))
		python = getenv("PYTHON");

	big_value = palloc(BIG_VALUE_LEN);
	memset(big_value, 'x', BIG_VALUE_LEN);

	test_varints();
	test_murmur2();
	test_crc32c();
	test_round_trips();
	test_record_size_limit();
	test_control_batches();
	test_batch_filter();
	test_corruption();
	test_malformed_records();
	test_decompression();
	test_fixtures();
	test_python_reads_ours();
	test_large_batch();

	pfree(big_value);
	printf("%d passed, %d failed\n", n_passed, n_failed);
	return n_failed == 0 ? 0 : 1;
}
