/*-------------------------------------------------------------------------
 *
 * test_records.c
 *	  The round-trip record set, batches built and read back for every codec,
 *	  and control batches.
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

#include "codec/codec.h"
#include "unit.h"

/* ---------- a record set used in round trips ---------- */

char	   *big_value;			/* 1 MiB, set up by main() */

int
make_records(TestRecord *r)
{
	int			n = 0;

	memset(r, 0, sizeof(TestRecord) * 8);
	/* key, value, two headers (one with an empty value) */
	r[n++] = (TestRecord)
	{
		1700000000000, "key-0", 5, "value-0", 7,
		{
			{
				"h1", 2, "v1", 2
			},
			{
				"h2", 2, "", 0
			}
		}, 2
	};
	/* null key */
	r[n++] = (TestRecord)
	{
		1700000001000, NULL, -1, "value-1", 7,
		{
			{
				0
			}
		}, 0
	};
	/* tombstone (null value), timestamp earlier than the base */
	r[n++] = (TestRecord)
	{
		1699999999000, "key-2", 5, NULL, -1,
		{
			{
				0
			}
		}, 0
	};
	/* empty key, empty value, a null header value, an empty header key */
	r[n++] = (TestRecord)
	{
		1700000003000, "", 0, "", 0,
		{
			{
				"h-null", 6, NULL, -1
			},
			{
				"", 0, "empty-key", 9
			}
		}, 2
	};
	/* 1 MiB value */
	r[n++] = (TestRecord)
	{
		1700000004000, "big", 3, big_value, BIG_VALUE_LEN,
		{
			{
				0
			}
		}, 0
	};
	return n;
}

bool
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

char *
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
const char *
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

/* ---------- max.decompressed.message.bytes ---------- */

/*
 * kp_batch_check_records_max refuses a record whose length field is above
 * the limit, compressed or not, and names its length: a null key, no
 * headers and a value of 64 to 8191 bytes make a body of value + 7 bytes
 * (attributes, two one-byte deltas, the key's -1, a two-byte value length,
 * the header count).
 */
void
test_record_size_limit(void)
{
	static char value[200];

	memset(value, 'v', sizeof(value));
	for (int c = 0; c < NCODECS; c++)
	{
		KpCompression codec = all_codecs[c];
		const char *name = kp_compression_name(codec);
		KpBatchBuilder b;
		size_t		len;
		char	   *batch;
		int32		record_len;
		KpCodecError err;

		kp_batch_builder_init(&b, codec, -1, -1, -1, false);
		kp_batch_builder_add(&b, 1000, NULL, -1, value, 10, NULL, 0);
		kp_batch_builder_add(&b, 1000, NULL, -1, value, 94, NULL, 0);
		batch = kp_batch_builder_finish(&b, &len);
		err = kp_batch_check_records_max(batch, len, 1 << 20, 101, &record_len);
		CHECK(err == KP_CODEC_OK && record_len == 0, "%s: records of 17 and 101 bytes pass a limit of 101: %s",
			  name, kp_codec_error_message(err));
		err = kp_batch_check_records_max(batch, len, 1 << 20, 100, &record_len);
		CHECK(err == KP_CODEC_RECORD_TOO_LARGE && record_len == 101,
			  "%s: the 101-byte record is refused at 100 (%s, %d)", name, kp_codec_error_message(err),
			  record_len);
		err = kp_batch_check_records(batch, len, 1 << 20);
		CHECK(err == KP_CODEC_OK, "%s: no limit without one: %s", name, kp_codec_error_message(err));
		pfree(batch);
	}
}

/* ---------- round trips ---------- */

void
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

	/*
	 * kp_record_size_bound is at least the encoded size whatever the deltas
	 * (a record's deltas are only known once it is placed in a batch)
	 */
	{
		static const int64 ts_deltas[] = {0, 1, -1, 1LL << 40, PG_INT64_MIN, PG_INT64_MAX};
		static const int32 off_deltas[] = {0, 127, 128, PG_INT32_MAX};
		KpHeader	h[2] = {{"a", 1, NULL, -1}, {"key", 3, "value", 5}};
		bool		ok = true;

		for (int t = 0; t < (int) lengthof(ts_deltas); t++)
			for (int o = 0; o < (int) lengthof(off_deltas); o++)
				for (int kl = -1; kl <= 300; kl += 100)
					for (int nh = 0; nh <= 2; nh++)
						if (kp_record_encoded_size(ts_deltas[t], off_deltas[o], kl, 1 << 20, h, nh) >
							kp_record_size_bound(kl, 1 << 20, h, nh))
							ok = false;
		CHECK(ok, "record size bound covers every delta");
	}

	/* a reserved builder: the batch fills its buffer, and finishes in place */
	{
		KpBatchBuilder b;
		size_t		len;
		size_t		size;
		char	   *batch;
		KpBatchHeader hdr;
		int			i;

		kp_batch_builder_init(&b, KP_COMPRESSION_NONE, 7, 1, 0, true);
		kp_batch_builder_reserve(&b, 61 + 100 * 10);
		size = KpBatchBuilderSize(&b);
		for (i = 0; i < 100; i++)
			size += kp_batch_builder_add(&b, 1, "k", 1, "v", 1, NULL, 0);
		CHECK(size == KpBatchBuilderSize(&b) && size > 61 + 100 * 8 && size <= 61 + 100 * 10,
			  "reserved builder: the sizes add returns add up (%zu)", size);
		batch = kp_batch_builder_finish(&b, &len);
		CHECK(len == size && kp_batch_validate(batch, len, &hdr) == KP_CODEC_OK &&
			  hdr.records_count == 100, "reserved builder batch validates");
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

void
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

/*
 * kp_batch_filter (log compaction): for every codec, a batch of the record
 * set keeps only the chosen records, with their offsets, timestamps, keys,
 * values and headers; the offset range, producer fields and codec stay; a
 * new base timestamp (a KIP-534 delete horizon) moves no record's time.
 */
void
test_batch_filter(void)
{
	TestRecord	r[8];
	int			n = make_records(r);

	for (int c = 0; c < NCODECS; c++)
	{
		KpCompression codec = all_codecs[c];
		size_t		len;
		char	   *batch = build_batch(codec, r, n, &len);
		bool	   *keep = palloc(sizeof(bool) * n);
		char	   *out;
		size_t		out_len;
		int32		kept = -1;
		KpBatchHeader in_hdr;
		KpBatchHeader hdr;
		KpRecordIter it;
		KpRecord	rec;
		bool		done = false;
		int			i = 0;
		int			want = 0;
		int64		horizon = 1800000000000;
		bool		same = true;

		kp_batch_set_base_offset(batch, 1000);
		kp_put_int64(batch + 43, 77);	/* producerId */
		kp_put_int32(batch + 53, 5);	/* baseSequence */
		kp_batch_update_crc(batch, len);
		CHECK(kp_batch_validate(batch, len, &in_hdr) == KP_CODEC_OK, "filter %s: input", kp_compression_name(codec));
		for (i = 0; i < n; i++)
		{
			keep[i] = (i % 2 == 1);
			want += keep[i];
		}
		CHECK(kp_batch_filter(batch, len, 1 << 30, keep, n,
							  in_hdr.attributes | KP_ATTR_DELETE_HORIZON, horizon,
							  &out, &out_len, &kept) == KP_CODEC_OK && kept == want,
			  "filter %s: kept %d of %d", kp_compression_name(codec), kept, n);
		CHECK(kp_batch_validate(out, out_len, &hdr) == KP_CODEC_OK, "filter %s: output validates (CRC)",
			  kp_compression_name(codec));
		CHECK(hdr.base_offset == 1000 && hdr.last_offset_delta == in_hdr.last_offset_delta &&
			  hdr.records_count == want && hdr.producer_id == 77 && hdr.base_sequence == 5 &&
			  hdr.producer_epoch == in_hdr.producer_epoch &&
			  hdr.max_timestamp == in_hdr.max_timestamp && hdr.base_timestamp == horizon &&
			  (hdr.attributes & KP_ATTR_DELETE_HORIZON) &&
			  KpBatchCompression(&hdr) == KpBatchCompression(&in_hdr),
			  "filter %s: header (offset range, producer, codec, horizon)", kp_compression_name(codec));
		CHECK(kp_record_iter_begin(&it, out, out_len, 1 << 30) == KP_CODEC_OK, "filter %s: iterate",
			  kp_compression_name(codec));
		i = 1;
		while (kp_record_iter_next(&it, &rec, &done) == KP_CODEC_OK && !done)
		{
			const TestRecord *t = &r[i];

			if (rec.offset != 1000 + i || rec.timestamp != t->timestamp ||
				!bytes_eq(rec.key, rec.key ? rec.key_len : -1, t->key, t->key_len) ||
				!bytes_eq(rec.value, rec.value ? rec.value_len : -1, t->value, t->value_len) ||
				rec.header_count != t->nheaders)
				same = false;
			i += 2;
		}
		kp_record_iter_end(&it);
		CHECK(same && i == 1 + 2 * want, "filter %s: the kept records keep offset, timestamp, key, value, headers",
			  kp_compression_name(codec));

		/* keeping nothing gives an empty, valid batch with the same range */
		memset(keep, 0, sizeof(bool) * n);
		CHECK(kp_batch_filter(batch, len, 1 << 30, keep, n, in_hdr.attributes, in_hdr.base_timestamp,
							  &out, &out_len, &kept) == KP_CODEC_OK && kept == 0 &&
			  kp_batch_validate(out, out_len, &hdr) == KP_CODEC_OK &&
			  hdr.records_count == 0 && hdr.last_offset_delta == in_hdr.last_offset_delta,
			  "filter %s: nothing kept", kp_compression_name(codec));
		pfree(keep);
	}
}
