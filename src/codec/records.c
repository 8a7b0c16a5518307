/*-------------------------------------------------------------------------
 *
 * records.c
 *	  Parsing the records inside a batch, and the record iterator.
 *
 * A record (Kafka docs, implementation.html "Record"):
 *
 *	length varint | attributes int8 | timestampDelta varlong |
 *	offsetDelta varint | keyLength varint | key | valueLength varint |
 *	value | headerCount varint | headers
 *
 * and each header is headerKeyLength varint | headerKey |
 * headerValueLength varint | headerValue.  A length of -1 means null for the
 * key, the value and a header value; a header key may not be null (Java's
 * DefaultRecord.readHeaders rejects it).
 *
 * These bytes come from clients.  Every field is read with a bounds check
 * against the end of its record, and the record must end exactly where its
 * length says (Java's DefaultRecord.readFrom does the same), so a record can
 * never make us read into its neighbour, let alone past the batch.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "codec/codec.h"
#include "codec/codec_internal.h"
#ifndef FRONTEND
#include "utils/memutils.h"
#endif

/*
 * Read a zig-zag varint that must fit in int32 and lie in [lo, hi].
 * Jumps to the caller's 'bad' label otherwise.
 */
#define GET_VARINT32(dst, lo, hi) \
	do { \
		int64		v_; \
		if (!kp_get_varint(&p, rend, &v_) || v_ < (lo) || v_ > (hi) || \
			v_ > PG_INT32_MAX) \
			goto bad; \
		(dst) = (int32) v_; \
	} while (0)

/* A nullable byte string: length varint (-1 = null), then the bytes. */
#define GET_NULLABLE_BYTES(ptr, len) \
	do { \
		GET_VARINT32(len, -1, rend - p); \
		(ptr) = (len) >= 0 ? p : NULL; \
		if ((len) > 0) \
			p += (len); \
	} while (0)

/*
 * Parse one record at *pos (the records section ends at end).  On success
 * fill rec and advance *pos past the record.  Headers are walked and checked
 * but not decoded; see kp_record_decode_headers.
 */
KpCodecError
kp_record_parse(const char **pos, const char *end, KpRawRecord *rec)
{
	const char *p = *pos;
	const char *rend = end;
	int32		len;
	int32		nheaders;

	/* the record length must fit in what is left of the section */
	GET_VARINT32(len, KP_RECORD_MIN_SIZE - 1, end - p);
	if (len > end - p)
		goto bad;
	rend = p + len;
	rec->body_len = len;

	if (p >= rend)
		goto bad;
	rec->attributes = (int8) *p++;

	if (!kp_get_varint(&p, rend, &rec->timestamp_delta))
		goto bad;
	GET_VARINT32(rec->offset_delta, 0, PG_INT32_MAX);

	GET_NULLABLE_BYTES(rec->key, rec->key_len);
	GET_NULLABLE_BYTES(rec->value, rec->value_len);

	/* every header takes at least two bytes, which bounds the count */
	GET_VARINT32(nheaders, 0, (rend - p) / 2);
	rec->header_count = nheaders;
	rec->headers_start = p;

	for (int32 i = 0; i < nheaders; i++)
	{
		int32		klen;
		int32		vlen;

		GET_VARINT32(klen, 0, rend - p);
		p += klen;
		GET_VARINT32(vlen, -1, rend - p);
		if (vlen > 0)
			p += vlen;
	}

	if (p != rend)
		goto bad;				/* fields do not add up to the length */

	rec->record_end = rend;
	*pos = rend;
	return KP_CODEC_OK;

bad:
	return KP_CODEC_BAD_RECORD;
}

/*
 * Decode the headers of a record that kp_record_parse accepted into out,
 * which has room for rec->header_count entries.  The bytes were checked by
 * the parse, so the reads cannot fail; they stay bounded all the same.
 */
void
kp_record_decode_headers(const KpRawRecord *rec, KpHeader *out)
{
	const char *p = rec->headers_start;
	const char *rend = rec->record_end;

	for (int i = 0; i < rec->header_count; i++)
	{
		int64		klen = 0;
		int64		vlen = -1;

		(void) kp_get_varint(&p, rend, &klen);
		out[i].key = p;
		out[i].key_len = (int) klen;
		p += klen;
		(void) kp_get_varint(&p, rend, &vlen);
		if (vlen >= 0)
		{
			out[i].value = p;
			out[i].value_len = (int) vlen;
			p += vlen;
		}
		else
		{
			out[i].value = NULL;
			out[i].value_len = -1;
		}
	}
}

/*
 * Offset deltas must rise strictly and stay within lastOffsetDelta: the log
 * assigns offsets by rewriting baseOffset only, so a delta out of that range
 * would give a record an offset owned by another batch.  (Kafka's
 * LogValidator requires contiguous deltas on produce; strictly rising ones
 * also admit batches thinned by compaction.)
 */
KpCodecError
kp_records_check_offset(const KpBatchHeader *hdr, int64 prev_delta, int32 delta)
{
	if ((int64) delta <= prev_delta || delta > hdr->last_offset_delta)
		return KP_CODEC_BAD_RECORD;
	return KP_CODEC_OK;
}

/*
 * Start iterating the records of the batch at batch, which must be exactly
 * len bytes.  The header is parsed and its length checked, but the CRC is
 * not (kp_batch_validate does that once, when the batch arrives).  A
 * compressed payload is inflated into palloc'd memory, refusing more than
 * max_uncompressed bytes.  On error nothing is left allocated.
 */
KpCodecError
kp_record_iter_begin(KpRecordIter *it, const char *batch, size_t len,
					 size_t max_uncompressed)
{
	KpCodecError err;
	KpCompression codec;

	memset(it, 0, sizeof(*it));

	err = kp_batch_parse_header(batch, len, &it->hdr);
	if (err != KP_CODEC_OK)
		return err;
	if (KpBatchTotalSize(&it->hdr) > len)
		return KP_CODEC_TRUNCATED;
	if (KpBatchTotalSize(&it->hdr) < len)
		return KP_CODEC_BAD_LENGTH;
	if (it->hdr.records_count < 0 ||
		(int64) it->hdr.last_offset_delta < (int64) it->hdr.records_count - 1)
		return KP_CODEC_BAD_RECORD;

	codec = KpBatchCompression(&it->hdr);
	if (codec == KP_COMPRESSION_NONE)
	{
		it->pos = batch + KP_BATCH_HEADER_SIZE;
		it->end = batch + len;
	}
	else
	{
		StringInfoData buf;

		if (codec > KP_COMPRESSION_ZSTD)
			return KP_CODEC_BAD_COMPRESSION;
		initStringInfo(&buf);
		err = kp_decompress(codec, batch + KP_BATCH_HEADER_SIZE,
							len - KP_BATCH_HEADER_SIZE, &buf,
							max_uncompressed);
		if (err != KP_CODEC_OK)
		{
			pfree(buf.data);
			return err;
		}
		it->inflated = buf.data;
		it->pos = buf.data;
		it->end = buf.data + buf.len;
	}
	it->remaining = it->hdr.records_count;
	it->prev_offset_delta = -1;
	return KP_CODEC_OK;
}

/*
 * Next record of the batch.  Sets *done (and returns OK) after the last one,
 * at which point the records section must also be used up exactly: trailing
 * bytes or a count that promises more records than there are is an error.
 */
KpCodecError
kp_record_iter_next(KpRecordIter *it, KpRecord *rec, bool *done)
{
	KpRawRecord raw;
	KpCodecError err;

	*done = false;
	if (it->remaining <= 0)
	{
		if (it->pos != it->end)
			return KP_CODEC_BAD_RECORD;
		*done = true;
		return KP_CODEC_OK;
	}
	if (it->pos >= it->end)
		return KP_CODEC_BAD_RECORD; /* fewer records than recordsCount */

	err = kp_record_parse(&it->pos, it->end, &raw);
	if (err != KP_CODEC_OK)
		return err;

	err = kp_records_check_offset(&it->hdr, it->prev_offset_delta,
								  raw.offset_delta);
	if (err != KP_CODEC_OK)
		return err;
	it->prev_offset_delta = raw.offset_delta;
	it->remaining--;

	if (raw.header_count > it->hdr_scratch_size)
	{
		int			newsize = Max(raw.header_count, Max(8, it->hdr_scratch_size * 2));
		KpHeader   *scratch;

		if ((size_t) newsize > MaxAllocSize / sizeof(KpHeader))
			newsize = raw.header_count;
		if ((size_t) newsize > MaxAllocSize / sizeof(KpHeader))
			return KP_CODEC_TOO_LARGE;
		scratch = palloc_extended(sizeof(KpHeader) * newsize, MCXT_ALLOC_NO_OOM);
		if (scratch == NULL)
			return KP_CODEC_TOO_LARGE;
		if (it->hdr_scratch)
			pfree(it->hdr_scratch);
		it->hdr_scratch = scratch;
		it->hdr_scratch_size = newsize;
	}
	kp_record_decode_headers(&raw, it->hdr_scratch);

	/* offsets and timestamps wrap rather than overflow (no UB on junk) */
	rec->offset = (int64) ((uint64) it->hdr.base_offset + (uint64) raw.offset_delta);
	rec->timestamp = (int64) ((uint64) it->hdr.base_timestamp +
							  (uint64) raw.timestamp_delta);
	rec->key = raw.key;
	rec->key_len = raw.key_len;
	rec->value = raw.value;
	rec->value_len = raw.value_len;
	rec->header_count = raw.header_count;
	rec->headers = it->hdr_scratch;
	rec->attributes = raw.attributes;
	rec->body_len = raw.body_len;
	return KP_CODEC_OK;
}

/* Free what the iterator owns; record pointers die with it. */
void
kp_record_iter_end(KpRecordIter *it)
{
	if (it->inflated)
		pfree(it->inflated);
	if (it->hdr_scratch)
		pfree(it->hdr_scratch);
	it->inflated = NULL;
	it->hdr_scratch = NULL;
	it->hdr_scratch_size = 0;
	it->pos = it->end = NULL;
	it->remaining = 0;
}

/*
 * Decode every record of a batch, inflating a compressed one (refusing more
 * than max_uncompressed bytes); the memory is released before returning.
 */
KpCodecError
kp_batch_check_records(const char *batch, size_t len, size_t max_uncompressed)
{
	int32		record_len;

	return kp_batch_check_records_max(batch, len, max_uncompressed, PG_INT32_MAX, &record_len);
}

/*
 * kp_batch_check_records, refusing a record whose length field is above
 * max_record as Kafka's DefaultRecord.readFrom does with the topic's
 * max.decompressed.message.bytes.
 */
KpCodecError
kp_batch_check_records_max(const char *batch, size_t len, size_t max_uncompressed,
						   int32 max_record, int32 *record_len)
{
	KpRecordIter it;
	KpRecord	rec;
	KpCodecError err;
	bool		done = false;

	*record_len = 0;
	err = kp_record_iter_begin(&it, batch, len, max_uncompressed);
	if (err != KP_CODEC_OK)
		return err;
	while (err == KP_CODEC_OK && !done)
	{
		err = kp_record_iter_next(&it, &rec, &done);
		if (err == KP_CODEC_OK && !done && rec.body_len > max_record)
		{
			*record_len = rec.body_len;
			err = KP_CODEC_RECORD_TOO_LARGE;
		}
	}
	kp_record_iter_end(&it);
	return err;
}
