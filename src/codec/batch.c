/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  RecordBatch v2: header parsing, validation, building, control batches.
 *
 * The layout is in codec.h (Kafka docs, implementation.html "Record Batch";
 * the format came with KIP-98).  Three facts drive this file:
 *
 *	- batchLength counts the bytes after itself, i.e. total - 12;
 *	- the CRC-32C covers attributes to the end, so baseOffset and
 *	  partitionLeaderEpoch can be rewritten by the broker without
 *	  re-checksumming;
 *	- the broker assigns offsets: records carry only deltas, and we write
 *	  baseOffset 0 and let the log overwrite it.
 *
 * kp_batch_validate is what the produce path runs on client bytes, so it
 * checks before it reads and returns a KpCodecError rather than raising.
 * The builder is on the hot path of the SQL API: records are encoded
 * straight into one geometrically grown StringInfo, with no allocation per
 * record and one CRC pass at the end.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "codec/codec.h"
#include "codec/codec_internal.h"
#ifndef FRONTEND
#include "utils/memutils.h"
#endif

/* Field offsets inside the 61-byte header */
#define OFF_BASE_OFFSET			0
#define OFF_BATCH_LENGTH		8
#define OFF_LEADER_EPOCH		12
#define OFF_MAGIC				16
#define OFF_CRC					17
#define OFF_ATTRIBUTES			21
#define OFF_LAST_OFFSET_DELTA	23
#define OFF_BASE_TIMESTAMP		27
#define OFF_MAX_TIMESTAMP		35
#define OFF_PRODUCER_ID			43
#define OFF_PRODUCER_EPOCH		51
#define OFF_BASE_SEQUENCE		53
#define OFF_RECORDS_COUNT		57

/* smallest legal batchLength: the header after the first 12 bytes */
#define MIN_BATCH_LENGTH	(KP_BATCH_HEADER_SIZE - KP_BATCH_LOG_OVERHEAD)

const char *
kp_codec_error_message(KpCodecError err)
{
	switch (err)
	{
		case KP_CODEC_OK:
			return "no error";
		case KP_CODEC_TRUNCATED:
			return "record batch is truncated";
		case KP_CODEC_BAD_MAGIC:
			return "record batch magic is not 2";
		case KP_CODEC_BAD_LENGTH:
			return "record batch length is invalid";
		case KP_CODEC_BAD_CRC:
			return "record batch CRC-32C mismatch";
		case KP_CODEC_BAD_RECORD:
			return "malformed record in record batch";
		case KP_CODEC_BAD_COMPRESSION:
			return "unknown compression codec or corrupt compressed data";
		case KP_CODEC_TOO_LARGE:
			return "decompressed record batch exceeds the size limit";
		case KP_CODEC_BAD_COUNT:
			return "inconsistent batch offset range and count of records";
		case KP_CODEC_RECORD_TOO_LARGE:
			return "a record exceeds max.decompressed.message.bytes";
	}
	return "unknown record codec error";
}

/*
 * Parse the fixed header.  The magic is looked at first, as soon as its byte
 * is present, so that an old-format (magic 0/1) message set shorter than 61
 * bytes is reported as BAD_MAGIC (Kafka answers
 * UNSUPPORTED_FOR_MESSAGE_FORMAT) rather than as truncated.
 */
KpCodecError
kp_batch_parse_header(const char *buf, size_t len, KpBatchHeader *hdr)
{
	if (len <= OFF_MAGIC)
		return KP_CODEC_TRUNCATED;
	if (buf[OFF_MAGIC] != KP_BATCH_MAGIC)
		return KP_CODEC_BAD_MAGIC;
	if (len < KP_BATCH_HEADER_SIZE)
		return KP_CODEC_TRUNCATED;

	hdr->base_offset = kp_get_int64(buf + OFF_BASE_OFFSET);
	hdr->batch_length = kp_get_int32(buf + OFF_BATCH_LENGTH);
	hdr->partition_leader_epoch = kp_get_int32(buf + OFF_LEADER_EPOCH);
	hdr->magic = (int8) buf[OFF_MAGIC];
	hdr->crc = (uint32) kp_get_int32(buf + OFF_CRC);
	hdr->attributes = kp_get_int16(buf + OFF_ATTRIBUTES);
	hdr->last_offset_delta = kp_get_int32(buf + OFF_LAST_OFFSET_DELTA);
	hdr->base_timestamp = kp_get_int64(buf + OFF_BASE_TIMESTAMP);
	hdr->max_timestamp = kp_get_int64(buf + OFF_MAX_TIMESTAMP);
	hdr->producer_id = kp_get_int64(buf + OFF_PRODUCER_ID);
	hdr->producer_epoch = kp_get_int16(buf + OFF_PRODUCER_EPOCH);
	hdr->base_sequence = kp_get_int32(buf + OFF_BASE_SEQUENCE);
	hdr->records_count = kp_get_int32(buf + OFF_RECORDS_COUNT);

	if (hdr->batch_length < MIN_BATCH_LENGTH)
		return KP_CODEC_BAD_LENGTH;
	return KP_CODEC_OK;
}

/*
 * Full validation of one batch occupying exactly len bytes.
 *
 * Checks, in order: header and magic; that batchLength matches len
 * (TRUNCATED if the batch claims more, BAD_LENGTH if less); the CRC-32C;
 * recordsCount >= 0 and lastOffsetDelta >= recordsCount - 1; a known codec.
 * For an uncompressed batch every record is parsed, offset deltas must rise
 * strictly within lastOffsetDelta, and the records must end exactly at the
 * end of the batch with exactly recordsCount of them.
 *
 * Rules that belong to the produce path and not to the format are in
 * kp_batch_validate_produced (the record count) and with the caller (control
 * batches from clients, LogValidator).
 */
KpCodecError
kp_batch_validate(const char *buf, size_t len, KpBatchHeader *hdr)
{
	KpCodecError err;
	const char *pos;
	const char *end;
	int64		prev_delta = -1;
	int32		count = 0;

	err = kp_batch_parse_header(buf, len, hdr);
	if (err != KP_CODEC_OK)
		return err;
	if (KpBatchTotalSize(hdr) > len)
		return KP_CODEC_TRUNCATED;
	if (KpBatchTotalSize(hdr) < len)
		return KP_CODEC_BAD_LENGTH;

	if (kp_crc32c(buf + KP_BATCH_ATTR_OFFSET, len - KP_BATCH_ATTR_OFFSET) != hdr->crc)
		return KP_CODEC_BAD_CRC;

	if (hdr->records_count < 0 ||
		(int64) hdr->last_offset_delta < (int64) hdr->records_count - 1)
		return KP_CODEC_BAD_RECORD;

	if (KpBatchCompression(hdr) > KP_COMPRESSION_ZSTD)
		return KP_CODEC_BAD_COMPRESSION;
	if (KpBatchCompression(hdr) != KP_COMPRESSION_NONE)
		return KP_CODEC_OK;		/* payload checked when iterated */

	/* each record takes at least 7 bytes: refuse an impossible count early */
	if ((size_t) hdr->records_count > (len - KP_BATCH_HEADER_SIZE) / KP_RECORD_MIN_SIZE)
		return KP_CODEC_BAD_RECORD;

	pos = buf + KP_BATCH_HEADER_SIZE;
	end = buf + len;
	while (pos < end)
	{
		KpRawRecord rec;

		if (count >= hdr->records_count)
			return KP_CODEC_BAD_RECORD; /* bytes after the last record */
		err = kp_record_parse(&pos, end, &rec);
		if (err != KP_CODEC_OK)
			return err;
		err = kp_records_check_offset(hdr, prev_delta, rec.offset_delta);
		if (err != KP_CODEC_OK)
			return err;
		prev_delta = rec.offset_delta;
		count++;
	}
	if (count != hdr->records_count)
		return KP_CODEC_BAD_RECORD;
	return KP_CODEC_OK;
}

KpCodecError
kp_batch_validate_produced(const char *buf, size_t len, KpBatchHeader *hdr)
{
	KpCodecError err = kp_batch_validate(buf, len, hdr);

	if (err != KP_CODEC_OK)
		return err;
	/* LogValidator.validateBatch: "Inconsistent batch offset range" */
	if (hdr->records_count <= 0 ||
		(int64) hdr->last_offset_delta + 1 != (int64) hdr->records_count)
		return KP_CODEC_BAD_COUNT;
	return KP_CODEC_OK;
}

void
kp_batch_set_base_offset(char *batch, int64 base_offset)
{
	kp_put_int64(batch + OFF_BASE_OFFSET, base_offset);
}

/* partitionLeaderEpoch: outside the CRC, the leader stamps it (KIP-101) */
void
kp_batch_set_leader_epoch(char *batch, int32 epoch)
{
	kp_put_int32(batch + OFF_LEADER_EPOCH, epoch);
}

void
kp_batch_update_crc(char *batch, size_t len)
{
	kp_put_int32(batch + OFF_CRC,
				 (int32) kp_crc32c(batch + KP_BATCH_ATTR_OFFSET,
								   len - KP_BATCH_ATTR_OFFSET));
}

/*
 * Re-encode the records section of a whole, validated batch with codec
 * (what Kafka's LogValidator does when a topic's compression.type is not
 * "producer" and differs from the batch's).  Every header field stays as
 * it was (offsets, timestamps, producer id, epoch and sequence, count, the
 * other attribute bits) and so do the records' bytes; only the section's
 * compression, the attributes' codec bits, batchLength and the CRC change.
 * Inflating more than max_uncompressed bytes is refused (KP_CODEC_TOO_LARGE).
 * On success *out is a palloc'd batch of *out_len bytes.
 */
KpCodecError
kp_batch_recompress(const char *batch, size_t len, KpCompression codec,
					size_t max_uncompressed, char **out, size_t *out_len)
{
	KpBatchHeader hdr;
	KpCodecError err;
	StringInfoData raw;
	StringInfoData buf;
	const char *section = batch + KP_BATCH_HEADER_SIZE;
	size_t		section_len;

	err = kp_batch_parse_header(batch, len, &hdr);
	if (err != KP_CODEC_OK)
		return err;
	if (KpBatchTotalSize(&hdr) != len)
		return KP_CODEC_BAD_LENGTH;
	section_len = len - KP_BATCH_HEADER_SIZE;

	/* the records, uncompressed */
	initStringInfo(&raw);
	if (KpBatchCompression(&hdr) != KP_COMPRESSION_NONE)
	{
		err = kp_decompress(KpBatchCompression(&hdr), section, section_len,
							&raw, max_uncompressed);
		if (err != KP_CODEC_OK)
		{
			pfree(raw.data);
			return err;
		}
	}
	else
		appendBinaryStringInfo(&raw, section, section_len);

	/* header, then the section in the new codec */
	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, batch, KP_BATCH_HEADER_SIZE);
	if (codec == KP_COMPRESSION_NONE)
		appendBinaryStringInfo(&buf, raw.data, raw.len);
	else if (!kp_compress(codec, raw.data, raw.len, &buf))
	{
		pfree(raw.data);
		pfree(buf.data);
		return KP_CODEC_BAD_COMPRESSION;
	}
	pfree(raw.data);

	kp_put_int32(buf.data + OFF_BATCH_LENGTH, buf.len - KP_BATCH_LOG_OVERHEAD);
	kp_put_int16(buf.data + OFF_ATTRIBUTES,
				 (int16) ((hdr.attributes & ~KP_ATTR_COMPRESSION_MASK) | (int16) codec));
	kp_batch_update_crc(buf.data, buf.len);
	*out = buf.data;
	*out_len = buf.len;
	return KP_CODEC_OK;
}

/* ---------- building ---------- */

void
kp_batch_builder_init(KpBatchBuilder *b, KpCompression compression,
					  int64 producer_id, int16 producer_epoch,
					  int32 base_sequence, bool transactional)
{
	/* the header's room first: finish writes the header in place */
	initStringInfo(&b->records);
	b->records.len = KP_BATCH_HEADER_SIZE;
	b->records.data[b->records.len] = '\0';
	b->count = 0;
	b->base_timestamp = KP_NO_TIMESTAMP;
	b->max_timestamp = KP_NO_TIMESTAMP;
	b->attributes = (int16) (compression & KP_ATTR_COMPRESSION_MASK);
	if (transactional)
		b->attributes |= KP_ATTR_TRANSACTIONAL;
	b->producer_id = producer_id;
	b->producer_epoch = producer_epoch;
	b->base_sequence = base_sequence;
}

/* Size of a record body: everything after its length varint. */
static inline size_t
record_body_size(int64 timestamp_delta, int32 offset_delta,
				 int key_len, int value_len,
				 const KpHeader *headers, int nheaders)
{
	size_t		size;

	size = 1					/* attributes */
		+ kp_varint_size(timestamp_delta)
		+ kp_varint_size(offset_delta)
		+ kp_varint_size(key_len < 0 ? -1 : key_len) + Max(key_len, 0)
		+ kp_varint_size(value_len < 0 ? -1 : value_len) + Max(value_len, 0)
		+ kp_varint_size(nheaders);

	for (int i = 0; i < nheaders; i++)
	{
		int			hv = headers[i].value ? headers[i].value_len : -1;

		size += kp_varint_size(headers[i].key_len) + headers[i].key_len
			+ kp_varint_size(hv) + Max(hv, 0);
	}
	return size;
}

/*
 * Bytes a record adds to the records section, uncompressed, including its
 * own length varint.  key_len/value_len of -1 stand for null.
 */
size_t
kp_record_encoded_size(int64 timestamp_delta, int32 offset_delta,
					   int key_len, int value_len,
					   const KpHeader *headers, int nheaders)
{
	size_t		body = record_body_size(timestamp_delta, offset_delta,
										key_len, value_len,
										headers, nheaders);

	return kp_varint_size((int64) body) + body;
}

/*
 * At least the bytes a record adds to the records section, whatever its
 * timestamp and offset deltas: the key, value and header bytes plus the
 * largest every varint can be.  Sums lengths, sizes no varint: what a
 * producer deciding whether a record still fits its open batch needs.
 */
size_t
kp_record_size_bound(int key_len, int value_len, const KpHeader *headers, int nheaders)
{
	size_t		size = KP_RECORD_MAX_OVERHEAD + Max(key_len, 0) + Max(value_len, 0);

	for (int i = 0; i < nheaders; i++)
		size += 2 * KP_VARINT32_MAX + headers[i].key_len +
			(headers[i].value ? Max(headers[i].value_len, 0) : 0);
	return size;
}

/*
 * Room for a batch of batch_size bytes, header included, allocated at that
 * size (not doubled up to it); a hint: a batch that grows larger grows as
 * any StringInfo does, and one that could never be that large is left be.
 */
void
kp_batch_builder_reserve(KpBatchBuilder *b, size_t batch_size)
{
	StringInfo	s = &b->records;

	if (batch_size + 1 <= (size_t) s->maxlen || batch_size + 1 >= MaxAllocSize)
		return;
	s->data = repalloc(s->data, batch_size + 1);
	s->maxlen = (int) (batch_size + 1);
}

static inline char *
put_bytes(char *p, const char *data, int len)
{
	if (data == NULL)
		return kp_put_varint(p, -1);
	p = kp_put_varint(p, len);
	memcpy(p, data, len);
	return p + len;
}

/*
 * Append one record.  The first record's timestamp becomes baseTimestamp
 * and the others are stored as deltas from it; the offset delta is the
 * record's position in the batch.  The record is sized once and encoded in
 * place, so adding a record costs no allocation beyond StringInfo's
 * occasional doubling.  A header with a NULL value is a null header value.
 */
size_t
kp_batch_builder_add(KpBatchBuilder *b, int64 timestamp,
					 const char *key, int key_len,
					 const char *value, int value_len,
					 const KpHeader *headers, int nheaders)
{
	int64		ts_delta;
	size_t		body;
	size_t		total;
	char	   *p;

	if (key == NULL)
		key_len = -1;
	if (value == NULL)
		value_len = -1;

	if (b->count == 0)
	{
		b->base_timestamp = timestamp;
		b->max_timestamp = timestamp;
	}
	else if (timestamp > b->max_timestamp)
		b->max_timestamp = timestamp;
	ts_delta = (int64) ((uint64) timestamp - (uint64) b->base_timestamp);

	body = record_body_size(ts_delta, b->count, key_len, value_len,
							headers, nheaders);
	total = kp_varint_size((int64) body) + body;

	enlargeStringInfo(&b->records, (int) total);
	p = b->records.data + b->records.len;

	p = kp_put_varint(p, (int64) body);
	*p++ = 0;					/* record attributes: unused */
	p = kp_put_varint(p, ts_delta);
	p = kp_put_varint(p, b->count);
	p = put_bytes(p, key, key_len);
	p = put_bytes(p, value, value_len);
	p = kp_put_varint(p, nheaders);
	for (int i = 0; i < nheaders; i++)
	{
		p = put_bytes(p, headers[i].key, headers[i].key_len);
		p = put_bytes(p, headers[i].value, headers[i].value_len);
	}

	Assert(p == b->records.data + b->records.len + total);
	b->records.len += (int) total;
	b->records.data[b->records.len] = '\0';
	b->count++;
	return total;
}

/* Write the fixed header of a batch of total_len bytes and checksum it. */
static void
write_header(char *batch, size_t total_len, const KpBatchBuilder *b)
{
	kp_put_int64(batch + OFF_BASE_OFFSET, 0);
	kp_put_int32(batch + OFF_BATCH_LENGTH,
				 (int32) (total_len - KP_BATCH_LOG_OVERHEAD));
	kp_put_int32(batch + OFF_LEADER_EPOCH, -1);
	batch[OFF_MAGIC] = KP_BATCH_MAGIC;
	kp_put_int16(batch + OFF_ATTRIBUTES, b->attributes);
	kp_put_int32(batch + OFF_LAST_OFFSET_DELTA, b->count > 0 ? b->count - 1 : 0);
	kp_put_int64(batch + OFF_BASE_TIMESTAMP, b->base_timestamp);
	kp_put_int64(batch + OFF_MAX_TIMESTAMP, b->max_timestamp);
	kp_put_int64(batch + OFF_PRODUCER_ID, b->producer_id);
	kp_put_int16(batch + OFF_PRODUCER_EPOCH, b->producer_epoch);
	kp_put_int32(batch + OFF_BASE_SEQUENCE, b->base_sequence);
	kp_put_int32(batch + OFF_RECORDS_COUNT, b->count);
	kp_batch_update_crc(batch, total_len);
}

/*
 * Finish the batch and hand it over as one palloc'd buffer; the builder is
 * spent afterwards (its records buffer is handed over or freed).
 * Uncompressed, the header is written into the room kept for it in front of
 * the records: the batch is the records buffer itself, neither copied nor
 * moved.  Should the codec fail (it cannot, short of running out of memory
 * or passing 1 GB), the batch is sent uncompressed, which any reader
 * accepts since the attributes say so.
 */
char *
kp_batch_builder_finish(KpBatchBuilder *b, size_t *len)
{
	KpCompression codec = (KpCompression) (b->attributes & KP_ATTR_COMPRESSION_MASK);
	StringInfo	recs = &b->records;
	char	   *batch;

	if (codec != KP_COMPRESSION_NONE)
	{
		StringInfoData out;

		initStringInfo(&out);
		enlargeStringInfo(&out, KP_BATCH_HEADER_SIZE);
		out.len = KP_BATCH_HEADER_SIZE;
		if (kp_compress(codec, recs->data + KP_BATCH_HEADER_SIZE,
						recs->len - KP_BATCH_HEADER_SIZE, &out))
		{
			pfree(recs->data);
			recs->data = NULL;
			write_header(out.data, out.len, b);
			*len = out.len;
			return out.data;
		}
		pfree(out.data);
		b->attributes &= ~KP_ATTR_COMPRESSION_MASK;
	}
	batch = recs->data;
	write_header(batch, recs->len, b);
	*len = recs->len;
	recs->data = NULL;
	return batch;
}

/*
 * A control batch carrying one COMMIT or ABORT marker (KIP-98): attributes
 * transactional + control, key = int16 version 0 + int16 type, value =
 * int16 version 0 + int32 coordinatorEpoch.  The transaction coordinator
 * writes these; consumers in read_committed use them to drop aborted data.
 */
char *
kp_build_control_batch(int64 producer_id, int16 producer_epoch,
					   int16 control_type, int64 timestamp,
					   int32 coordinator_epoch, size_t *len)
{
	KpBatchBuilder b;
	char		key[4];
	char		value[6];

	kp_put_int16(key, 0);
	kp_put_int16(key + 2, control_type);
	kp_put_int16(value, 0);
	kp_put_int32(value + 2, coordinator_epoch);

	kp_batch_builder_init(&b, KP_COMPRESSION_NONE, producer_id,
						  producer_epoch, KP_NO_SEQUENCE, true);
	b.attributes |= KP_ATTR_CONTROL;
	kp_batch_builder_add(&b, timestamp, key, sizeof(key),
						 value, sizeof(value), NULL, 0);
	return kp_batch_builder_finish(&b, len);
}

/*
 * Read a control record key.  As Java's ControlRecordType.parse: at least
 * four bytes, a non-negative version (newer versions are read as version
 * 0, whose fields they must keep), then the int16 type.  Types other than
 * ABORT/COMMIT (LEADER_CHANGE and the like) are returned as they are.
 */
bool
kp_parse_control_key(const char *key, int key_len, int16 *control_type)
{
	if (key == NULL || key_len < 4)
		return false;
	if (kp_get_int16(key) < 0)
		return false;
	*control_type = kp_get_int16(key + 2);
	return true;
}

/* Encode one record (its length varint first) at the end of buf. */
static void
append_record(StringInfo buf, const KpRecord *rec, int64 ts_delta,
			  int32 offset_delta)
{
	int			key_len = rec->key ? rec->key_len : -1;
	int			value_len = rec->value ? rec->value_len : -1;
	size_t		body = record_body_size(ts_delta, offset_delta, key_len,
										value_len, rec->headers,
										rec->header_count);
	size_t		total = kp_varint_size((int64) body) + body;
	char	   *p;

	enlargeStringInfo(buf, (int) total);
	p = buf->data + buf->len;
	p = kp_put_varint(p, (int64) body);
	*p++ = (char) rec->attributes;
	p = kp_put_varint(p, ts_delta);
	p = kp_put_varint(p, offset_delta);
	p = put_bytes(p, rec->key, key_len);
	p = put_bytes(p, rec->value, value_len);
	p = kp_put_varint(p, rec->header_count);
	for (int i = 0; i < rec->header_count; i++)
	{
		p = put_bytes(p, rec->headers[i].key, rec->headers[i].key_len);
		p = put_bytes(p, rec->headers[i].value, rec->headers[i].value_len);
	}
	Assert(p == buf->data + buf->len + total);
	buf->len += (int) total;
	buf->data[buf->len] = '\0';
}

/*
 * Log compaction's rewrite of one batch (codec.h).  Kafka's
 * MemoryRecords.filterTo does the same for v2 batches: the batch keeps its
 * offset range (baseOffset and lastOffsetDelta), so offsets never move and
 * the consumer's position passes the removed records.
 */
KpCodecError
kp_batch_filter(const char *batch, size_t len, size_t max_uncompressed,
				const bool *keep, int nkeep, int16 attributes,
				int64 base_timestamp, char **out, size_t *out_len,
				int32 *kept_count)
{
	KpRecordIter it;
	KpRecord	rec;
	bool		done = false;
	StringInfoData raw;
	StringInfoData buf;
	KpCompression codec;
	KpCodecError err;
	int			i = 0;
	int32		kept = 0;

	err = kp_record_iter_begin(&it, batch, len, max_uncompressed);
	if (err != KP_CODEC_OK)
		return err;
	codec = KpBatchCompression(&it.hdr);
	initStringInfo(&raw);
	for (;;)
	{
		err = kp_record_iter_next(&it, &rec, &done);
		if (err != KP_CODEC_OK || done)
			break;
		if (i < nkeep && keep[i])
		{
			append_record(&raw, &rec,
						  (int64) ((uint64) rec.timestamp - (uint64) base_timestamp),
						  (int32) (rec.offset - it.hdr.base_offset));
			kept++;
		}
		i++;
	}
	kp_record_iter_end(&it);
	if (err != KP_CODEC_OK)
	{
		pfree(raw.data);
		return err;
	}

	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, batch, KP_BATCH_HEADER_SIZE);
	if (codec == KP_COMPRESSION_NONE || kept == 0)
	{
		if (kept == 0)
			codec = KP_COMPRESSION_NONE;
		appendBinaryStringInfo(&buf, raw.data, raw.len);
	}
	else if (!kp_compress(codec, raw.data, raw.len, &buf))
	{
		pfree(raw.data);
		pfree(buf.data);
		return KP_CODEC_BAD_COMPRESSION;
	}
	pfree(raw.data);

	kp_put_int32(buf.data + OFF_BATCH_LENGTH, buf.len - KP_BATCH_LOG_OVERHEAD);
	kp_put_int16(buf.data + OFF_ATTRIBUTES,
				 (int16) ((attributes & ~KP_ATTR_COMPRESSION_MASK) | (int16) codec));
	kp_put_int64(buf.data + OFF_BASE_TIMESTAMP, base_timestamp);
	kp_put_int32(buf.data + OFF_RECORDS_COUNT, kept);
	kp_batch_update_crc(buf.data, buf.len);
	*out = buf.data;
	*out_len = buf.len;
	*kept_count = kept;
	return KP_CODEC_OK;
}
