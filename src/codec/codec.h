/*-------------------------------------------------------------------------
 *
 * codec.h
 *	  Kafka record codec: the whole public face of src/codec.
 *
 * Everything that touches record bytes goes through here: varints (the one
 * varint coder of the project), CRC-32C (Postgres's pg_crc32c), RecordBatch
 * v2 ("magic 2") build, parse, validate and iterate, the four compression
 * codecs Kafka uses, and the Java client's murmur2 default partitioner.
 *
 * Decoders never ereport: they see client bytes, so they return a
 * KpCodecError and leave the caller (SQL front door or the wire listener) to
 * turn it into an SQLSTATE or a Kafka error code.  Every read is
 * bounds-checked against the length the caller passed.  Memory comes from
 * palloc in the caller's current memory context.
 *
 * Record batch layout (Kafka docs, implementation.html "Record Batch"):
 *
 *	baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 |
 *	magic int8 | crc uint32 | attributes int16 | lastOffsetDelta int32 |
 *	baseTimestamp int64 | maxTimestamp int64 | producerId int64 |
 *	producerEpoch int16 | baseSequence int32 | recordsCount int32 | records
 *
 * batchLength counts from partitionLeaderEpoch to the end (total - 12); the
 * CRC-32C covers attributes to the end.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_CODEC_H
#define KP_CODEC_H

#include "postgres.h"
#include "lib/stringinfo.h"

/* Fixed header of a v2 record batch */
#define KP_BATCH_HEADER_SIZE		61
#define KP_BATCH_LOG_OVERHEAD		12	/* baseOffset + batchLength */
#define KP_BATCH_CRC_OFFSET			17	/* where the crc field starts */
#define KP_BATCH_ATTR_OFFSET		21	/* CRC covers from here to the end */
#define KP_BATCH_MAGIC				2

/* Batch attributes (int16) */
#define KP_ATTR_COMPRESSION_MASK	0x07
#define KP_ATTR_TIMESTAMP_TYPE		0x08	/* 1 = LogAppendTime */
#define KP_ATTR_TRANSACTIONAL		0x10
#define KP_ATTR_CONTROL				0x20
#define KP_ATTR_DELETE_HORIZON		0x40

/* Compression codec ids, as in the attributes field */
typedef enum KpCompression
{
	KP_COMPRESSION_NONE = 0,
	KP_COMPRESSION_GZIP = 1,
	KP_COMPRESSION_SNAPPY = 2,
	KP_COMPRESSION_LZ4 = 3,
	KP_COMPRESSION_ZSTD = 4
} KpCompression;

/* Control record types (key: int16 version, int16 type) */
#define KP_CONTROL_ABORT			0
#define KP_CONTROL_COMMIT			1

#define KP_NO_PRODUCER_ID			INT64CONST(-1)
#define KP_NO_PRODUCER_EPOCH		(-1)
#define KP_NO_SEQUENCE				(-1)
#define KP_NO_TIMESTAMP				INT64CONST(-1)

typedef enum KpCodecError
{
	KP_CODEC_OK = 0,
	KP_CODEC_TRUNCATED,			/* fewer bytes than the lengths claim */
	KP_CODEC_BAD_MAGIC,			/* magic != 2 */
	KP_CODEC_BAD_LENGTH,		/* batchLength or a record length is
								 * impossible */
	KP_CODEC_BAD_CRC,			/* CRC-32C mismatch */
	KP_CODEC_BAD_RECORD,		/* malformed record inside a batch */
	KP_CODEC_BAD_COMPRESSION,	/* unknown codec id, or corrupt compressed
								 * data */
	KP_CODEC_TOO_LARGE,			/* decompressed size above the caller's limit */
	KP_CODEC_BAD_COUNT,			/* from a producer: recordsCount is not
								 * lastOffsetDelta + 1, or is 0 */
	KP_CODEC_RECORD_TOO_LARGE	/* a record above the caller's
								 * max.decompressed.message.bytes */
} KpCodecError;

extern const char *kp_codec_error_message(KpCodecError err);

/* ---------- varints (zig-zag for records, unsigned for compact types) ---------- */

extern int	kp_varint_size(int64 value);	/* zig-zag encoded size */
extern char *kp_put_varint(char *dst, int64 value); /* zig-zag, returns end */
extern char *kp_put_uvarint(char *dst, uint64 value);
extern void kp_append_varint(StringInfo buf, int64 value);
extern void kp_append_uvarint(StringInfo buf, uint64 value);

/*
 * Read a zig-zag varint (int64 range) or unsigned varint from [*pos, end).
 * Return false if truncated or longer than 10 bytes; *pos advances on success.
 */
extern bool kp_get_varint(const char **pos, const char *end, int64 *value);
extern bool kp_get_uvarint(const char **pos, const char *end, uint64 *value);

/* ---------- big-endian fixed-width helpers ---------- */

static inline void
kp_put_int16(char *dst, int16 v)
{
	uint16		u = (uint16) v;

	dst[0] = (char) (u >> 8);
	dst[1] = (char) u;
}

static inline void
kp_put_int32(char *dst, int32 v)
{
	uint32		u = (uint32) v;

	dst[0] = (char) (u >> 24);
	dst[1] = (char) (u >> 16);
	dst[2] = (char) (u >> 8);
	dst[3] = (char) u;
}

static inline void
kp_put_int64(char *dst, int64 v)
{
	kp_put_int32(dst, (int32) ((uint64) v >> 32));
	kp_put_int32(dst + 4, (int32) v);
}

static inline int16
kp_get_int16(const char *src)
{
	const unsigned char *s = (const unsigned char *) src;

	return (int16) (((uint16) s[0] << 8) | s[1]);
}

static inline int32
kp_get_int32(const char *src)
{
	const unsigned char *s = (const unsigned char *) src;

	return (int32) (((uint32) s[0] << 24) | ((uint32) s[1] << 16) |
					((uint32) s[2] << 8) | s[3]);
}

static inline int64
kp_get_int64(const char *src)
{
	return (int64) (((uint64) (uint32) kp_get_int32(src) << 32) |
					(uint32) kp_get_int32(src + 4));
}

/* ---------- CRC-32C ---------- */

extern uint32 kp_crc32c(const void *data, size_t len);

/* ---------- batch header ---------- */

typedef struct KpBatchHeader
{
	int64		base_offset;
	int32		batch_length;	/* bytes after the first 12 */
	int32		partition_leader_epoch;
	int8		magic;
	uint32		crc;
	int16		attributes;
	int32		last_offset_delta;
	int64		base_timestamp;
	int64		max_timestamp;
	int64		producer_id;
	int16		producer_epoch;
	int32		base_sequence;
	int32		records_count;
} KpBatchHeader;

#define KpBatchTotalSize(h)		((size_t) (h)->batch_length + KP_BATCH_LOG_OVERHEAD)
#define KpBatchLastOffset(h)	((h)->base_offset + (h)->last_offset_delta)
#define KpBatchCompression(h)	((KpCompression) ((h)->attributes & KP_ATTR_COMPRESSION_MASK))
#define KpBatchIsTransactional(h) (((h)->attributes & KP_ATTR_TRANSACTIONAL) != 0)
#define KpBatchIsControl(h)		(((h)->attributes & KP_ATTR_CONTROL) != 0)

/*
 * Parse the 61-byte header at buf (len bytes available, len >= 61 needed).
 * Checks magic and that batch_length is sane (>= 49); does not check that
 * the whole batch is present, nor the CRC.
 */
extern KpCodecError kp_batch_parse_header(const char *buf, size_t len,
										  KpBatchHeader *hdr);

/*
 * Full validation of one batch that must occupy exactly len bytes: header,
 * CRC-32C, records_count >= 0, last_offset_delta consistent with the count
 * (for uncompressed batches also that each record parses and the records
 * end exactly at the batch end).  Compressed payloads are not inflated here.
 */
extern KpCodecError kp_batch_validate(const char *buf, size_t len,
									  KpBatchHeader *hdr);

/*
 * kp_batch_validate plus the rules of a batch that comes from a producer
 * (Kafka's LogValidator.validateBatch for clients): at least one record, and
 * recordsCount == lastOffsetDelta + 1 (KP_CODEC_BAD_COUNT otherwise).  The
 * log itself may hold batches with fewer records than their offset range
 * (compaction removes records and keeps lastOffsetDelta), so readers use
 * kp_batch_validate; every path that accepts a batch from outside uses this.
 */
extern KpCodecError kp_batch_validate_produced(const char *buf, size_t len,
											   KpBatchHeader *hdr);

/* Overwrite the baseOffset field (outside the CRC, so no re-checksum). */
extern void kp_batch_set_base_offset(char *batch, int64 base_offset);
extern void kp_batch_set_leader_epoch(char *batch, int32 epoch);

/* Recompute and store the CRC after changing fields it covers. */
extern void kp_batch_update_crc(char *batch, size_t len);

/*
 * The same batch with its records section in another codec (a topic's
 * compression.type); header fields and record bytes are kept.  palloc'd.
 */
extern KpCodecError kp_batch_recompress(const char *batch, size_t len,
										KpCompression codec, size_t max_uncompressed,
										char **out, size_t *out_len);

/*
 * The same batch with only some of its records (log compaction): keep[i]
 * says whether the i-th record stays.  baseOffset, lastOffsetDelta,
 * partitionLeaderEpoch, producer id, epoch and base sequence and the codec
 * are kept; attributes become the given ones (the codec bits excepted);
 * every kept record keeps its offset and its timestamp, stored as a delta
 * from base_timestamp (the new baseTimestamp, e.g. a KIP-534 delete
 * horizon).  A compressed batch is inflated (at most max_uncompressed
 * bytes) and compressed again with its codec.  palloc'd; *kept_count gets
 * the records kept.
 */
extern KpCodecError kp_batch_filter(const char *batch, size_t len,
									size_t max_uncompressed,
									const bool *keep, int nkeep,
									int16 attributes, int64 base_timestamp,
									char **out, size_t *out_len,
									int32 *kept_count);

/* ---------- records ---------- */

typedef struct KpHeader
{
	const char *key;
	int			key_len;
	const char *value;			/* NULL for a null header value */
	int			value_len;		/* -1 when value is NULL */
} KpHeader;

typedef struct KpRecord
{
	int64		offset;			/* base_offset + offset_delta */
	int64		timestamp;		/* base_timestamp + timestamp_delta */
	const char *key;			/* NULL when the key is null */
	int			key_len;		/* -1 when null */
	const char *value;			/* NULL when the value is null (tombstone) */
	int			value_len;		/* -1 when null */
	int			header_count;
	KpHeader   *headers;		/* points into the iterator's scratch array */
	int8		attributes;		/* record-level attributes (unused, 0) */
	int32		body_len;		/* the record's length field: its size after
								 * that field (Kafka's sizeInBytes check) */
} KpRecord;

/*
 * Iterator over the records of one batch.  For a compressed batch the
 * payload is inflated once into palloc'd memory (refusing more than
 * max_uncompressed bytes).  Record pointers stay valid until kp_record_iter_end.
 */
typedef struct KpRecordIter
{
	KpBatchHeader hdr;
	const char *pos;
	const char *end;
	int32		remaining;
	char	   *inflated;		/* owned decompressed payload, or NULL */
	KpHeader   *hdr_scratch;
	int			hdr_scratch_size;
	int64		prev_offset_delta;	/* added: deltas must rise; -1 at start */
} KpRecordIter;

extern KpCodecError kp_record_iter_begin(KpRecordIter *it, const char *batch,
										 size_t len, size_t max_uncompressed);

/* Returns KP_CODEC_OK and fills rec, or sets *done at the end. */
extern KpCodecError kp_record_iter_next(KpRecordIter *it, KpRecord *rec,
										bool *done);
extern void kp_record_iter_end(KpRecordIter *it);

/* Decode every record of a batch (inflating it); KP_CODEC_OK if all are sound. */
extern KpCodecError kp_batch_check_records(const char *batch, size_t len,
										   size_t max_uncompressed);

/*
 * The same, and KP_CODEC_RECORD_TOO_LARGE for a record whose body_len is
 * above max_record (the topic's max.decompressed.message.bytes), its
 * body_len in *record_len.
 */
extern KpCodecError kp_batch_check_records_max(const char *batch, size_t len,
											   size_t max_uncompressed, int32 max_record,
											   int32 *record_len);

/* ---------- building batches ---------- */

/*
 * Builds one v2 batch in memory.  Records are encoded uncompressed into
 * 'records', behind room kept for the header; finish compresses the records
 * if asked, writes the header and the CRC and returns the whole batch
 * (baseOffset 0: the log assigns it).
 */
typedef struct KpBatchBuilder
{
	StringInfoData records;		/* KP_BATCH_HEADER_SIZE bytes of room, then
								 * the records */
	int32		count;
	int64		base_timestamp;
	int64		max_timestamp;
	int16		attributes;
	int64		producer_id;
	int16		producer_epoch;
	int32		base_sequence;
} KpBatchBuilder;

extern void kp_batch_builder_init(KpBatchBuilder *b, KpCompression compression,
								  int64 producer_id, int16 producer_epoch,
								  int32 base_sequence, bool transactional);

/*
 * Make room for a batch of batch_size bytes (header included) at once, when
 * the caller can tell how large it will grow (a hint: records fit either way).
 */
extern void kp_batch_builder_reserve(KpBatchBuilder *b, size_t batch_size);

/*
 * key/value NULL means a null key/value; headers may be NULL when
 * nheaders=0.  The record is sized once, here; returns the bytes it added.
 */
extern size_t kp_batch_builder_add(KpBatchBuilder *b, int64 timestamp,
								   const char *key, int key_len,
								   const char *value, int value_len,
								   const KpHeader *headers, int nheaders);

/* Bytes this record would add to the batch's records section, uncompressed. */
extern size_t kp_record_encoded_size(int64 timestamp_delta, int32 offset_delta,
									 int key_len, int value_len,
									 const KpHeader *headers, int nheaders);

/*
 * The most a record of these lengths adds to a records section, whatever
 * its deltas (lengths -1: null): every varint at its largest, none sized.
 */
#define KP_VARINT32_MAX			5
#define KP_RECORD_MAX_OVERHEAD	(KP_VARINT32_MAX /* length */ + 1 /* attributes */ + \
								 10 /* timestamp delta */ + KP_VARINT32_MAX /* offset delta */ + \
								 3 * KP_VARINT32_MAX /* key, value lengths, header count */)
extern size_t kp_record_size_bound(int key_len, int value_len,
								   const KpHeader *headers, int nheaders);

/* Finish: returns palloc'd batch, its total size in *len. */
extern char *kp_batch_builder_finish(KpBatchBuilder *b, size_t *len);

/* Size the batch would have now if finished uncompressed (header included). */
#define KpBatchBuilderSize(b)	((size_t) (b)->records.len)

/* A control batch (COMMIT or ABORT marker) for producer_id/epoch. */
extern char *kp_build_control_batch(int64 producer_id, int16 producer_epoch,
									int16 control_type, int64 timestamp,
									int32 coordinator_epoch, size_t *len);

/* Parse a control record's key; returns false if it is not one. */
extern bool kp_parse_control_key(const char *key, int key_len, int16 *control_type);

/* ---------- compression ---------- */

/* Compress src into dst (appending). Returns false on codec failure. */
extern bool kp_compress(KpCompression codec, const char *src, size_t len,
						StringInfo dst);

/*
 * Decompress src (appending to dst), failing with KP_CODEC_TOO_LARGE as soon
 * as more than max_out bytes would be produced.  Accepts what real clients
 * send: gzip streams, raw snappy and xerial-framed snappy (Java), LZ4 frame
 * format, zstd frames.
 */
extern KpCodecError kp_decompress(KpCompression codec, const char *src,
								  size_t len, StringInfo dst, size_t max_out);

extern const char *kp_compression_name(KpCompression codec);
extern bool kp_compression_from_name(const char *name, KpCompression *codec);

/* ---------- the Java client's default partitioner ---------- */

extern int32 kp_murmur2(const char *data, int len);

/* (murmur2(key) & 0x7fffffff) % num_partitions */
extern int32 kp_partition_for_key(const char *key, int key_len,
								  int32 num_partitions);

#endif							/* KP_CODEC_H */
