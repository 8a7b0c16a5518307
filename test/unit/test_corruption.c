/*-------------------------------------------------------------------------
 *
 * test_corruption.c
 *	  What corruption and truncation of a batch must do, and the hand-made
 *	  malformed records a decoder must refuse.
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

/* ---------- corruption and truncation ---------- */

void
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

void
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
