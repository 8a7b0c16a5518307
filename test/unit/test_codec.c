/*-------------------------------------------------------------------------
 *
 * test_codec.c
 *	  Unit tests of src/codec, run without a server.
 *
 * Built as frontend code (see shim/postgres.h) by `make -C test/unit check`.
 * Read top to bottom it is the codec's specification: varints, murmur2,
 * batch build/validate/iterate for every codec, control batches, what
 * corruption and truncation must do, the decompression limit, the malformed
 * records a decoder must refuse, and agreement with a real client
 * (kafka-python) in both directions.
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
#include <sys/stat.h>
#include <time.h>

#include <snappy-c.h>
#include <zlib.h>
#include <lz4frame.h>
#include <zstd.h>

#include "codec/codec.h"

static int	n_passed = 0;
static int	n_failed = 0;

#define CHECK(cond, ...) \
	do { \
		if (cond) \
			n_passed++; \
		else \
		{ \
			n_failed++; \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__); \
			printf("\n"); \
		} \
	} while (0)

/* CHECK for loops: count one test, report the first failure only */
#define LOOP_FAIL(flag, ...) \
	do { \
		if (!(flag)) \
		{ \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__); \
			printf("\n"); \
		} \
		(flag) = true; \
	} while (0)

static const KpCompression all_codecs[] = {
	KP_COMPRESSION_NONE, KP_COMPRESSION_GZIP, KP_COMPRESSION_SNAPPY,
	KP_COMPRESSION_LZ4, KP_COMPRESSION_ZSTD
};

#define NCODECS (int) lengthof(all_codecs)

static const char *fixture_dir = "fixtures";
static const char *out_dir = "out";
static const char *python = "/usr/bin/python3";

/* ---------- varints ---------- */

static void
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

static void
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

/* ---------- a record set used in round trips ---------- */

typedef struct TestRecord
{
	int64		timestamp;
	const char *key;
	int			key_len;
	const char *value;
	int			value_len;
	KpHeader	headers[3];
	int			nheaders;
} TestRecord;

static char *big_value;			/* 1 MiB */
#define BIG_VALUE_LEN (1024 * 1024)

static int
make_records(TestRecord *r)
{
	int			n = 0;

	memset(r, 0, sizeof(TestRecord) * 8);
	/* key, value, two headers (one with an empty value) */
	r[n++] = (TestRecord) {1700000000000, "key-0", 5, "value-0", 7,
	{{"h1", 2, "v1", 2}, {"h2", 2, "", 0}}, 2};
	/* null key */
	r[n++] = (TestRecord) {1700000001000, NULL, -1, "value-1", 7, {{0}}, 0};
	/* tombstone (null value), timestamp earlier than the base */
	r[n++] = (TestRecord) {1699999999000, "key-2", 5, NULL, -1, {{0}}, 0};
	/* empty key, empty value, a null header value, an empty header key */
	r[n++] = (TestRecord) {1700000003000, "", 0, "", 0,
	{{"h-null", 6, NULL, -1}, {"", 0, "empty-key", 9}}, 2};
	/* 1 MiB value */
	r[n++] = (TestRecord) {1700000004000, "big", 3, big_value, BIG_VALUE_LEN, {{0}}, 0};
	return n;
}

static bool
bytes_eq(const char *a, int alen, const char *b, int blen)
{
	if ((a == NULL) != (b == NULL))
		return false;
	if (a == NULL)
		return alen == -1 && blen == -1;
	return alen == blen && memcmp(a, b, alen) == 0;
}

static bool
record_matches(const KpRecord *got, const TestRecord *want, int64 offset)
{
	if (got->offset != offset || got->timestamp != want->timestamp)
		return false;
	if (!bytes_eq(got->key, got->key_len, want->key, want->key_len) ||
		!bytes_eq(got->value, got->value_len, want->value, want->value_len))
		return false;
	if (got->header_count != want->nheaders)
		return false;
	for (int h = 0; h < want->nheaders; h++)
	{
		const KpHeader *g = &got->headers[h];
		const KpHeader *w = &want->headers[h];

		if (!bytes_eq(g->key, g->key_len, w->key, w->key_len) ||
			!bytes_eq(g->value, g->value_len, w->value, w->value_len))
			return false;
	}
	return true;
}

static char *
build_batch(KpCompression codec, const TestRecord *r, int n, size_t *len)
{
	KpBatchBuilder b;

	kp_batch_builder_init(&b, codec, 1234, 5, 42, false);
	for (int i = 0; i < n; i++)
		kp_batch_builder_add(&b, r[i].timestamp, r[i].key, r[i].key_len,
							 r[i].value, r[i].value_len,
							 r[i].nheaders ? r[i].headers : NULL, r[i].nheaders);
	return kp_batch_builder_finish(&b, len);
}

/*
 * Iterate a batch and compare with the expected records; returns a short
 * description of the first difference, or NULL.
 */
static const char *
check_batch_records(const char *batch, size_t len, const TestRecord *want,
					int n, int64 base_offset)
{
	KpRecordIter it;
	KpRecord	rec;
	bool		done;
	static char msg[128];
	KpCodecError err;

	err = kp_record_iter_begin(&it, batch, len, 64 * 1024 * 1024);
	if (err != KP_CODEC_OK)
	{
		snprintf(msg, sizeof(msg), "iter_begin: %s", kp_codec_error_message(err));
		return msg;
	}
	for (int i = 0; i <= n; i++)
	{
		err = kp_record_iter_next(&it, &rec, &done);
		if (err != KP_CODEC_OK)
		{
			snprintf(msg, sizeof(msg), "record %d: %s", i, kp_codec_error_message(err));
			kp_record_iter_end(&it);
			return msg;
		}
		if (i == n)
		{
			kp_record_iter_end(&it);
			return done ? NULL : "more records than expected";
		}
		if (done)
		{
			kp_record_iter_end(&it);
			return "fewer records than expected";
		}
		if (!record_matches(&rec, &want[i], base_offset + i))
		{
			snprintf(msg, sizeof(msg), "record %d differs", i);
			kp_record_iter_end(&it);
			return msg;
		}
	}
	kp_record_iter_end(&it);
	return NULL;
}

/* ---------- round trips ---------- */

static void
test_round_trips(void)
{
	TestRecord	r[8];
	int			n = make_records(r);

	for (int c = 0; c < NCODECS; c++)
	{
		KpCompression codec = all_codecs[c];
		const char *name = kp_compression_name(codec);
		size_t		len;
		char	   *batch = build_batch(codec, r, n, &len);
		KpBatchHeader hdr;
		KpCodecError err = kp_batch_validate(batch, len, &hdr);
		const char *diff;

		CHECK(err == KP_CODEC_OK, "%s: validate: %s", name, kp_codec_error_message(err));
		err = kp_batch_check_records(batch, len, 16 * 1024 * 1024);
		CHECK(err == KP_CODEC_OK, "%s: check_records: %s", name, kp_codec_error_message(err));
		CHECK(hdr.magic == 2 && hdr.base_offset == 0 && KpBatchTotalSize(&hdr) == len &&
			  hdr.records_count == n && hdr.last_offset_delta == n - 1 &&
			  KpBatchCompression(&hdr) == codec && !KpBatchIsTransactional(&hdr) &&
			  !KpBatchIsControl(&hdr) && hdr.producer_id == 1234 &&
			  hdr.producer_epoch == 5 && hdr.base_sequence == 42 &&
			  hdr.partition_leader_epoch == -1,
			  "%s: header fields", name);
		CHECK(hdr.base_timestamp == r[0].timestamp && hdr.max_timestamp == r[4].timestamp,
			  "%s: base/max timestamp", name);
		if (codec != KP_COMPRESSION_NONE)
			CHECK(len < KpBatchTotalSize(&hdr) + 1 && len < BIG_VALUE_LEN / 10,
				  "%s: 1 MiB of 'x' compresses (batch is %zu bytes)", name, len);

		diff = check_batch_records(batch, len, r, n, 0);
		CHECK(diff == NULL, "%s: iterate: %s", name, diff);

		/* the log assigns the base offset: no re-checksum needed */
		kp_batch_set_base_offset(batch, 1000000);
		err = kp_batch_validate(batch, len, &hdr);
		CHECK(err == KP_CODEC_OK && hdr.base_offset == 1000000 &&
			  KpBatchLastOffset(&hdr) == 1000000 + n - 1,
			  "%s: base offset rewrite keeps the CRC valid", name);
		diff = check_batch_records(batch, len, r, n, 1000000);
		CHECK(diff == NULL, "%s: offsets follow the base offset: %s", name, diff);

		/* a field inside the CRC needs kp_batch_update_crc */
		kp_put_int16(batch + 51, 6);	/* producerEpoch */
		CHECK(kp_batch_validate(batch, len, &hdr) == KP_CODEC_BAD_CRC,
			  "%s: changing producerEpoch breaks the CRC", name);
		kp_batch_update_crc(batch, len);
		CHECK(kp_batch_validate(batch, len, &hdr) == KP_CODEC_OK && hdr.producer_epoch == 6,
			  "%s: update_crc repairs it", name);

		/* decompressing with too small a limit */
		if (codec != KP_COMPRESSION_NONE)
		{
			KpRecordIter it;

			err = kp_record_iter_begin(&it, batch, len, 4096);
			CHECK(err == KP_CODEC_TOO_LARGE, "%s: iter with a 4 KiB limit: %s",
				  name, kp_codec_error_message(err));
		}
		pfree(batch);
	}

	/* many small records: one batch, every codec, offsets and deltas */
	for (int c = 0; c < NCODECS; c++)
	{
		KpBatchBuilder b;
		char		key[32];
		size_t		len;
		char	   *batch;
		KpBatchHeader hdr;
		KpRecordIter it;
		KpRecord	rec;
		bool		done = false;
		int			count = 0;
		bool		ok = true;

		kp_batch_builder_init(&b, all_codecs[c], KP_NO_PRODUCER_ID,
							  KP_NO_PRODUCER_EPOCH, KP_NO_SEQUENCE, false);
		for (int i = 0; i < 10000; i++)
		{
			int			kl = snprintf(key, sizeof(key), "k%d", i);

			kp_batch_builder_add(&b, 1000 + i, key, kl, key, kl, NULL, 0);
		}
		CHECK(KpBatchBuilderSize(&b) > 61 + 10000 * 7, "builder size grows");
		batch = kp_batch_builder_finish(&b, &len);
		CHECK(kp_batch_validate(batch, len, &hdr) == KP_CODEC_OK && hdr.records_count == 10000,
			  "%s: 10000 records validate", kp_compression_name(all_codecs[c]));
		if (kp_record_iter_begin(&it, batch, len, 16 * 1024 * 1024) == KP_CODEC_OK)
		{
			while (kp_record_iter_next(&it, &rec, &done) == KP_CODEC_OK && !done)
			{
				int			kl = snprintf(key, sizeof(key), "k%d", count);

				if (rec.offset != count || rec.timestamp != 1000 + count ||
					!bytes_eq(rec.key, rec.key_len, key, kl) || rec.header_count != 0)
					ok = false;
				count++;
			}
			kp_record_iter_end(&it);
		}
		CHECK(ok && done && count == 10000, "%s: 10000 records iterate (%d)",
			  kp_compression_name(all_codecs[c]), count);
		pfree(batch);
	}

	/* kp_record_encoded_size agrees with the builder */
	{
		KpBatchBuilder b;
		size_t		expect = 0;
		size_t		len;
		char	   *batch;

		kp_batch_builder_init(&b, KP_COMPRESSION_NONE, -1, -1, -1, false);
		for (int i = 0; i < n; i++)
		{
			expect += kp_record_encoded_size(r[i].timestamp - r[0].timestamp, i,
											 r[i].key ? r[i].key_len : -1,
											 r[i].value ? r[i].value_len : -1,
											 r[i].headers, r[i].nheaders);
			kp_batch_builder_add(&b, r[i].timestamp, r[i].key, r[i].key_len,
								 r[i].value, r[i].value_len, r[i].headers, r[i].nheaders);
		}
		CHECK(KpBatchBuilderSize(&b) == 61 + expect, "encoded size %zu vs builder %zu",
			  expect, KpBatchBuilderSize(&b) - 61);
		batch = kp_batch_builder_finish(&b, &len);
		CHECK(len == 61 + expect, "finished size");
		pfree(batch);
	}

	/* transactional flag */
	{
		KpBatchBuilder b;
		size_t		len;
		char	   *batch;
		KpBatchHeader hdr;

		kp_batch_builder_init(&b, KP_COMPRESSION_NONE, 7, 1, 0, true);
		kp_batch_builder_add(&b, 1, "k", 1, "v", 1, NULL, 0);
		batch = kp_batch_builder_finish(&b, &len);
		CHECK(kp_batch_validate(batch, len, &hdr) == KP_CODEC_OK &&
			  KpBatchIsTransactional(&hdr) && !KpBatchIsControl(&hdr),
			  "transactional batch");
		pfree(batch);
	}
}

/* ---------- control batches ---------- */

static void
test_control_batches(void)
{
	for (int16 type = KP_CONTROL_ABORT; type <= KP_CONTROL_COMMIT; type++)
	{
		size_t		len;
		char	   *batch = kp_build_control_batch(4242, 3, type, 1700000000123, 17, &len);
		KpBatchHeader hdr;
		KpRecordIter it;
		KpRecord	rec;
		bool		done;
		int16		parsed = -1;

		CHECK(kp_batch_validate(batch, len, &hdr) == KP_CODEC_OK, "control %d validates", type);
		CHECK(KpBatchIsControl(&hdr) && KpBatchIsTransactional(&hdr) &&
			  hdr.producer_id == 4242 && hdr.producer_epoch == 3 &&
			  hdr.base_sequence == -1 && hdr.records_count == 1 &&
			  KpBatchCompression(&hdr) == KP_COMPRESSION_NONE,
			  "control %d header", type);
		CHECK(kp_record_iter_begin(&it, batch, len, 1024) == KP_CODEC_OK &&
			  kp_record_iter_next(&it, &rec, &done) == KP_CODEC_OK && !done,
			  "control %d record", type);
		CHECK(rec.key_len == 4 && kp_get_int16(rec.key) == 0 &&
			  kp_parse_control_key(rec.key, rec.key_len, &parsed) && parsed == type,
			  "control %d key", type);
		CHECK(rec.value_len == 6 && kp_get_int16(rec.value) == 0 &&
			  kp_get_int32(rec.value + 2) == 17 && rec.timestamp == 1700000000123,
			  "control %d value: version 0, coordinator epoch", type);
		CHECK(kp_record_iter_next(&it, &rec, &done) == KP_CODEC_OK && done,
			  "control %d has one record", type);
		kp_record_iter_end(&it);
		pfree(batch);
	}
	{
		int16		t;
		char		key[4] = {(char) 0xff, (char) 0xff, 0, 1};

		CHECK(!kp_parse_control_key("ab", 2, &t), "short control key");
		CHECK(!kp_parse_control_key(NULL, -1, &t), "null control key");
		CHECK(!kp_parse_control_key(key, 4, &t), "negative control key version");
	}
}

/* ---------- corruption and truncation ---------- */

static void
test_corruption(void)
{
	TestRecord	r[8];
	int			n = make_records(r);

	/* small batches: the first four records, uncompressed and gzip */
	for (int c = 0; c < 2; c++)
	{
		KpCompression codec = c == 0 ? KP_COMPRESSION_NONE : KP_COMPRESSION_GZIP;
		size_t		len;
		char	   *batch = build_batch(codec, r, n - 1, &len);
		KpBatchHeader good;
		bool		ok = true;
		bool		failed = false;

		CHECK(kp_batch_validate(batch, len, &good) == KP_CODEC_OK, "small batch valid");

		/* flip each byte: refused, or a field outside the CRC visibly changed */
		for (size_t i = 0; i < len; i++)
		{
			KpBatchHeader hdr;
			KpCodecError err;
			bool		detected;

			batch[i] ^= 0x5a;
			err = kp_batch_validate(batch, len, &hdr);
			if (err != KP_CODEC_OK)
				detected = true;
			else if (i < 8)
				detected = hdr.base_offset != good.base_offset;
			else if (i >= 12 && i < 16)
				detected = hdr.partition_leader_epoch != good.partition_leader_epoch;
			else
				detected = false;
			if (!detected)
			{
				LOOP_FAIL(failed, "%s: flipped byte %zu not detected",
						  kp_compression_name(codec), i);
				ok = false;
			}
			/* and whatever validate said, iterating must be safe */
			{
				KpRecordIter it;
				KpRecord	rec;
				bool		done = false;

				if (kp_record_iter_begin(&it, batch, len, 1 << 20) == KP_CODEC_OK)
				{
					while (kp_record_iter_next(&it, &rec, &done) == KP_CODEC_OK && !done)
						;
					kp_record_iter_end(&it);
				}
			}
			batch[i] ^= 0x5a;
		}
		CHECK(ok, "%s: every flipped byte is detected", kp_compression_name(codec));

		/* truncation at every length */
		ok = true;
		failed = false;
		for (size_t l = 0; l < len; l++)
		{
			KpBatchHeader hdr;
			KpRecordIter it;
			char	   *copy = palloc(l + 1);	/* exact size, for sanitizers */

			memcpy(copy, batch, l);
			if (kp_batch_validate(copy, l, &hdr) == KP_CODEC_OK ||
				kp_record_iter_begin(&it, copy, l, 1 << 20) == KP_CODEC_OK)
			{
				LOOP_FAIL(failed, "truncated to %zu accepted", l);
				ok = false;
			}
			if (kp_batch_validate(copy, l, &hdr) != KP_CODEC_TRUNCATED)
			{
				LOOP_FAIL(failed, "truncated to %zu: not TRUNCATED", l);
				ok = false;
			}
			pfree(copy);
		}
		CHECK(ok, "%s: every truncation refused", kp_compression_name(codec));

		/* trailing garbage after the batch */
		{
			char	   *copy = palloc(len + 1);
			KpBatchHeader hdr;

			memcpy(copy, batch, len);
			copy[len] = 0;
			CHECK(kp_batch_validate(copy, len + 1, &hdr) == KP_CODEC_BAD_LENGTH,
				  "extra byte after the batch");
			pfree(copy);
		}
		pfree(batch);
	}

	/* header-level refusals */
	{
		char		buf[61];
		KpBatchHeader hdr;

		memset(buf, 0, sizeof(buf));
		buf[16] = 1;
		CHECK(kp_batch_parse_header(buf, 20, &hdr) == KP_CODEC_BAD_MAGIC,
			  "magic 1 is BAD_MAGIC even when short");
		CHECK(kp_batch_parse_header(buf, 10, &hdr) == KP_CODEC_TRUNCATED, "10 bytes");
		buf[16] = 2;
		kp_put_int32(buf + 8, 48);
		CHECK(kp_batch_parse_header(buf, 61, &hdr) == KP_CODEC_BAD_LENGTH, "batchLength 48");
		kp_put_int32(buf + 8, -1);
		CHECK(kp_batch_parse_header(buf, 61, &hdr) == KP_CODEC_BAD_LENGTH, "batchLength -1");
		kp_put_int32(buf + 8, PG_INT32_MAX);
		CHECK(kp_batch_validate(buf, 61, &hdr) == KP_CODEC_TRUNCATED, "batchLength 2^31-1");
		kp_put_int32(buf + 8, 49);
		kp_batch_update_crc(buf, 61);
		/* what compaction leaves: no records, lastOffsetDelta kept */
		CHECK(kp_batch_validate(buf, 61, &hdr) == KP_CODEC_OK && hdr.records_count == 0,
			  "empty batch is well-formed");
	}
}

/* ---------- hand-made malformed records ---------- */

/* A batch around the given records section, with a correct CRC. */
static char *
wrap_records(const char *recs, int rlen, int32 count, int32 last_delta,
			 int16 attributes, size_t *len)
{
	char	   *b = palloc0(61 + rlen);

	kp_put_int32(b + 8, 49 + rlen);
	kp_put_int32(b + 12, -1);
	b[16] = 2;
	kp_put_int16(b + 21, attributes);
	kp_put_int32(b + 23, last_delta);
	kp_put_int64(b + 43, -1);
	kp_put_int16(b + 51, -1);
	kp_put_int32(b + 53, -1);
	kp_put_int32(b + 57, count);
	memcpy(b + 61, recs, rlen);
	*len = 61 + rlen;
	kp_batch_update_crc(b, *len);
	return b;
}

/* validate and a full iteration both give 'want' */
static void
expect_records_error(const char *what, const char *recs, int rlen, int32 count,
					 int32 last_delta, KpCodecError want)
{
	size_t		len;
	char	   *b = wrap_records(recs, rlen, count, last_delta, 0, &len);
	KpBatchHeader hdr;
	KpCodecError v = kp_batch_validate(b, len, &hdr);
	KpCodecError e;
	KpRecordIter it;

	e = kp_record_iter_begin(&it, b, len, 1 << 20);
	if (e == KP_CODEC_OK)
	{
		KpRecord	rec;
		bool		done = false;

		while ((e = kp_record_iter_next(&it, &rec, &done)) == KP_CODEC_OK && !done)
			;
		kp_record_iter_end(&it);
	}
	CHECK(v == want && e == want, "%s: validate %s, iterate %s", what,
		  kp_codec_error_message(v), kp_codec_error_message(e));
	pfree(b);
}

static void
test_malformed_records(void)
{
	/* len=6 attr=0 ts=0 off=0 klen=-1 vlen=-1 nh=0, as zig-zag bytes */
	static const char good[] = {12, 0, 0, 0, 1, 1, 0};
	char		r[64];

	expect_records_error("one good record", good, 7, 1, 0, KP_CODEC_OK);
	expect_records_error("count says 2, one record", good, 7, 2, 1, KP_CODEC_BAD_RECORD);
	expect_records_error("count says 0, one record", good, 7, 0, 0, KP_CODEC_BAD_RECORD);
	expect_records_error("negative count", good, 7, -1, 0, KP_CODEC_BAD_RECORD);
	expect_records_error("lastOffsetDelta below count - 1", good, 7, 1, -1, KP_CODEC_BAD_RECORD);

	memcpy(r, good, 7);
	memcpy(r + 7, good, 7);
	expect_records_error("two records with the same offset delta", r, 14, 2, 1,
						 KP_CODEC_BAD_RECORD);
	r[7 + 3] = 2;				/* offsetDelta 1 */
	expect_records_error("two records, deltas 0 and 1", r, 14, 2, 1, KP_CODEC_OK);
	expect_records_error("delta above lastOffsetDelta", r, 14, 2, 0, KP_CODEC_BAD_RECORD);
	r[7 + 3] = 6;				/* offsetDelta 3: a gap, as after compaction */
	expect_records_error("gap in deltas within lastOffsetDelta", r, 14, 2, 3, KP_CODEC_OK);
	r[7 + 3] = 1;				/* offsetDelta -1 */
	expect_records_error("negative offset delta", r, 14, 2, 1, KP_CODEC_BAD_RECORD);

	memcpy(r, good, 7);
	r[7] = 0;
	expect_records_error("trailing byte after the last record", r, 8, 1, 0,
						 KP_CODEC_BAD_RECORD);

	memcpy(r, good, 7);
	r[0] = 14;					/* length 7, only 6 follow */
	expect_records_error("record longer than the batch", r, 7, 1, 0, KP_CODEC_BAD_RECORD);
	r[0] = 10;					/* length 5: the header count lies past it */
	expect_records_error("record length 5 (fields overrun it)", r, 7, 1, 0,
						 KP_CODEC_BAD_RECORD);
	memcpy(r, good, 7);
	r[7] = 0;
	r[0] = 14;					/* length 7: one byte left unread inside */
	expect_records_error("record length 7 (a byte no field uses)", r, 8, 1, 0,
						 KP_CODEC_BAD_RECORD);
	r[0] = 1;					/* length -1 */
	expect_records_error("negative record length", r, 7, 1, 0, KP_CODEC_BAD_RECORD);

	/* key length -2 */
	memcpy(r, good, 7);
	r[4] = 3;
	expect_records_error("key length -2", r, 7, 1, 0, KP_CODEC_BAD_RECORD);
	/* key length 10 inside a 6-byte record */
	r[4] = 20;
	expect_records_error("key longer than the record", r, 7, 1, 0, KP_CODEC_BAD_RECORD);

	/* header with a null key: len 8 attr ts off k=-1 v=-1 nh=1 hk=-1 hv=-1 */
	{
		static const char nullkey[] = {16, 0, 0, 0, 1, 1, 2, 1, 1};
		static const char okhdr[] = {16, 0, 0, 0, 1, 1, 2, 0, 1};
		static const char manyh[] = {16, 0, 0, 0, 1, 1, 0x7e, 0, 1};

		expect_records_error("header with a null key", nullkey, 9, 1, 0, KP_CODEC_BAD_RECORD);
		expect_records_error("header with empty key, null value", okhdr, 9, 1, 0, KP_CODEC_OK);
		expect_records_error("header count 63 in 2 bytes", manyh, 9, 1, 0, KP_CODEC_BAD_RECORD);
	}

	/* a 5-byte varint length that overflows int32 */
	{
		static const char huge[] = {(char) 0xfe, (char) 0xff, (char) 0xff, (char) 0xff, 0x7f,
		0, 0, 0, 1, 1, 0};

		expect_records_error("record length 2^33", huge, 11, 1, 0, KP_CODEC_BAD_RECORD);
	}

	/* unknown codec id 5 */
	{
		size_t		len;
		char	   *b = wrap_records(good, 7, 1, 0, 5, &len);
		KpBatchHeader hdr;
		KpRecordIter it;

		CHECK(kp_batch_validate(b, len, &hdr) == KP_CODEC_BAD_COMPRESSION, "codec 5 validate");
		CHECK(kp_record_iter_begin(&it, b, len, 1024) == KP_CODEC_BAD_COMPRESSION,
			  "codec 5 iterate");
		pfree(b);
	}

	/* garbage in a compressed batch: CRC right, payload wrong */
	for (int c = 1; c < NCODECS; c++)
	{
		char		junk[40];
		size_t		len;
		char	   *b;
		KpRecordIter it;
		KpBatchHeader hdr;
		KpCodecError e;

		for (int i = 0; i < (int) sizeof(junk); i++)
			junk[i] = (char) (i * 37 + 11);
		b = wrap_records(junk, sizeof(junk), 1, 0, all_codecs[c], &len);
		CHECK(kp_batch_validate(b, len, &hdr) == KP_CODEC_OK,
			  "%s: validate does not inflate", kp_compression_name(all_codecs[c]));
		e = kp_record_iter_begin(&it, b, len, 1 << 20);
		CHECK(e == KP_CODEC_BAD_COMPRESSION, "%s: corrupt payload: %s",
			  kp_compression_name(all_codecs[c]), kp_codec_error_message(e));
		e = kp_batch_check_records(b, len, 1 << 20);
		CHECK(e == KP_CODEC_BAD_COMPRESSION, "%s: check_records refuses the corrupt payload: %s",
			  kp_compression_name(all_codecs[c]), kp_codec_error_message(e));
		pfree(b);
	}
}

/* ---------- decompression limits and client variants ---------- */

static void
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
		clock_t		t0;
		double		secs;

		initStringInfo(&comp);
		CHECK(kp_compress(codec, zeros, bomb_len, &comp), "%s: compress 64 MiB", name);

		/* zip bomb: 64 MiB from a few KiB must stop at the limit, fast */
		initStringInfo(&out);
		t0 = clock();
		err = kp_decompress(codec, comp.data, comp.len, &out, 1024 * 1024);
		secs = (double) (clock() - t0) / CLOCKS_PER_SEC;
		CHECK(err == KP_CODEC_TOO_LARGE && (size_t) out.maxlen <= 4 * 1024 * 1024 &&
			  secs < 0.5,
			  "%s: bomb of %d bytes refused at 1 MiB (%s, buffer %d, %.3fs)",
			  name, comp.len, kp_codec_error_message(err), out.maxlen, secs);
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
		const char *text = "the quick brown fox jumps over the lazy dog, again and again";
		size_t		tlen = strlen(text);
		StringInfoData out;
		char		buf[256];
		size_t		clen = sizeof(buf);

		initStringInfo(&out);

		/* raw snappy, as librdkafka and franz-go send it */
		CHECK(snappy_compress(text, tlen, buf, &clen) == SNAPPY_OK &&
			  kp_decompress(KP_COMPRESSION_SNAPPY, buf, clen, &out, 1000) == KP_CODEC_OK &&
			  (size_t) out.len == tlen && memcmp(out.data, text, tlen) == 0,
			  "raw snappy");
		resetStringInfo(&out);
		CHECK(kp_decompress(KP_COMPRESSION_SNAPPY, buf, clen, &out, tlen - 1) ==
			  KP_CODEC_TOO_LARGE, "raw snappy over the limit refused before inflating");

		/* zstd frame without a content size (streaming producers) */
		{
			ZSTD_CCtx  *cctx = ZSTD_createCCtx();
			ZSTD_inBuffer in = {text, tlen, 0};
			ZSTD_outBuffer zo = {buf, sizeof(buf), 0};
			unsigned long long csize;

			ZSTD_compressStream2(cctx, &zo, &in, ZSTD_e_continue);
			ZSTD_compressStream2(cctx, &zo, &in, ZSTD_e_end);
			ZSTD_freeCCtx(cctx);
			csize = ZSTD_getFrameContentSize(buf, zo.pos);
			resetStringInfo(&out);
			CHECK(csize == ZSTD_CONTENTSIZE_UNKNOWN &&
				  kp_decompress(KP_COMPRESSION_ZSTD, buf, zo.pos, &out, 1000) == KP_CODEC_OK &&
				  (size_t) out.len == tlen && memcmp(out.data, text, tlen) == 0,
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

/* ---------- a real client's bytes ---------- */

static char *
read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	char	   *data;
	long		n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = palloc(n + 1);
	if (fread(data, 1, n, f) != (size_t) n)
	{
		fclose(f);
		pfree(data);
		return NULL;
	}
	fclose(f);
	*len = n;
	return data;
}

/* The records make_fixtures.py writes; keep in sync with it. */
static int
fixture_records(TestRecord *r, char *xs)
{
	memset(r, 0, sizeof(TestRecord) * 5);
	memset(xs, 'x', 1000);
	r[0] = (TestRecord) {1700000000000, "key-0", 5, "value-0", 7,
	{{"h1", 2, "v1", 2}, {"h2", 2, "", 0}}, 2};
	r[1] = (TestRecord) {1700000001000, NULL, -1, "value-1", 7, {{0}}, 0};
	r[2] = (TestRecord) {1700000002000, "key-2", 5, NULL, -1, {{0}}, 0};
	r[3] = (TestRecord) {1700000003000, "", 0, "", 0, {{"h-null", 6, NULL, -1}}, 1};
	r[4] = (TestRecord) {1700000004000, "k4", 2, xs, 1000, {{0}}, 0};
	return 5;
}

static void
test_fixtures(void)
{
	static const char *const names[] = {"none", "gzip", "snappy", "lz4", "zstd", "txn_gzip"};
	TestRecord	r[5];
	char		xs[1000];
	int			n = fixture_records(r, xs);

	for (int i = 0; i < (int) lengthof(names); i++)
	{
		char		path[1024];
		size_t		len;
		char	   *batch;
		KpBatchHeader hdr;
		KpCodecError err;
		const char *diff;
		KpCompression want = i < 5 ? all_codecs[i] : KP_COMPRESSION_GZIP;

		snprintf(path, sizeof(path), "%s/kpython_%s.bin", fixture_dir, names[i]);
		batch = read_file(path, &len);
		CHECK(batch != NULL, "read %s", path);
		if (batch == NULL)
			continue;
		err = kp_batch_validate(batch, len, &hdr);
		CHECK(err == KP_CODEC_OK, "kafka-python %s: validate: %s", names[i],
			  kp_codec_error_message(err));
		CHECK(KpBatchCompression(&hdr) == want && hdr.records_count == n &&
			  hdr.last_offset_delta == n - 1 && hdr.producer_id == 1234 &&
			  hdr.producer_epoch == 5 && hdr.base_sequence == 42 &&
			  hdr.base_timestamp == 1700000000000 && hdr.max_timestamp == 1700000004000 &&
			  KpBatchIsTransactional(&hdr) == (i == 5),
			  "kafka-python %s: header", names[i]);
		diff = check_batch_records(batch, len, r, n, 0);
		CHECK(diff == NULL, "kafka-python %s: records: %s", names[i], diff);
		pfree(batch);
	}
}

/* Write our batches for check_c_batches.py and let kafka-python read them. */
static void
test_python_reads_ours(void)
{
	TestRecord	r[5];
	char		xs[1000];
	int			n = fixture_records(r, xs);
	char		cmd[2048];
	int			rc;

	mkdir(out_dir, 0755);
	for (int c = 0; c < NCODECS; c++)
	{
		char		path[1024];
		size_t		len;
		char	   *batch = build_batch(all_codecs[c], r, n, &len);
		FILE	   *f;

		snprintf(path, sizeof(path), "%s/c_%s.bin", out_dir,
				 kp_compression_name(all_codecs[c]));
		f = fopen(path, "wb");
		CHECK(f != NULL && fwrite(batch, 1, len, f) == len, "write %s", path);
		if (f)
			fclose(f);
		pfree(batch);
	}
	{
		size_t		len;
		char	   *batch = kp_build_control_batch(1234, 5, KP_CONTROL_COMMIT, 1700000000000, 9, &len);
		FILE	   *f;

		snprintf(cmd, sizeof(cmd), "%s/c_control_commit.bin", out_dir);
		f = fopen(cmd, "wb");
		CHECK(f != NULL && fwrite(batch, 1, len, f) == len, "write control batch");
		if (f)
			fclose(f);
		pfree(batch);
	}

	snprintf(cmd, sizeof(cmd), "%s check_c_batches.py %s", python, out_dir);
	fflush(stdout);
	rc = system(cmd);
	CHECK(rc == 0, "kafka-python decodes our batches (%s exited %d)", cmd, rc);
}

/* ---------- speed (a sanity floor, not a benchmark) ---------- */

static void
test_speed(void)
{
	const int	nrec = 1000000;
	KpBatchBuilder b;
	char		value[64];
	size_t		len;
	char	   *batch;
	clock_t		t0;
	double		build_s,
				check_s;
	KpBatchHeader hdr;
	KpRecordIter it;
	KpRecord	rec;
	bool		done = false;
	int			count = 0;

	memset(value, 'v', sizeof(value));
	t0 = clock();
	kp_batch_builder_init(&b, KP_COMPRESSION_NONE, -1, -1, -1, false);
	for (int i = 0; i < nrec; i++)
		kp_batch_builder_add(&b, 1700000000000 + i, (char *) &i, 4, value, 40, NULL, 0);
	batch = kp_batch_builder_finish(&b, &len);
	build_s = (double) (clock() - t0) / CLOCKS_PER_SEC;

	t0 = clock();
	CHECK(kp_batch_validate(batch, len, &hdr) == KP_CODEC_OK, "1M-record batch validates");
	if (kp_record_iter_begin(&it, batch, len, 0) == KP_CODEC_OK)
	{
		while (kp_record_iter_next(&it, &rec, &done) == KP_CODEC_OK && !done)
			count++;
		kp_record_iter_end(&it);
	}
	check_s = (double) (clock() - t0) / CLOCKS_PER_SEC;
	CHECK(count == nrec, "1M records iterate");
	printf("speed: build %.1f M records/s, validate+iterate %.1f M records/s (%zu bytes)\n",
		   nrec / build_s / 1e6, nrec / check_s / 1e6, len);
	CHECK(nrec / build_s > 2e6 && nrec / check_s > 2e6, "at least 2 M records/s each way");
	pfree(batch);
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
	test_round_trips();
	test_control_batches();
	test_corruption();
	test_malformed_records();
	test_decompression();
	test_fixtures();
	test_python_reads_ours();
	test_speed();

	pfree(big_value);
	printf("%d passed, %d failed\n", n_passed, n_failed);
	return n_failed == 0 ? 0 : 1;
}
