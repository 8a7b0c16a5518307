/*-------------------------------------------------------------------------
 *
 * codec_internal.h
 *	  Pieces shared by the files of src/codec and nobody else.
 *
 * The record parser is used both by kp_batch_validate (uncompressed batches,
 * without materialising headers) and by the record iterator, so one piece
 * of code decides what a well-formed record is.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_CODEC_INTERNAL_H
#define KP_CODEC_INTERNAL_H

#include "codec/codec.h"

/*
 * One record as it sits in the records section, all pointers into the
 * caller's buffer.  Headers are checked but left encoded; headers_start
 * points at the first header (after the count).
 */
typedef struct KpRawRecord
{
	int8		attributes;
	int64		timestamp_delta;
	int32		offset_delta;
	const char *key;
	int			key_len;
	const char *value;
	int			value_len;
	int			header_count;
	const char *headers_start;
	const char *record_end;
	int32		body_len;		/* the length field: bytes after it */
} KpRawRecord;

/* Smallest possible record: length + 6 one-byte fields (Kafka "Record"). */
#define KP_RECORD_MIN_SIZE	7

extern KpCodecError kp_record_parse(const char **pos, const char *end,
									KpRawRecord *rec);
extern void kp_record_decode_headers(const KpRawRecord *rec, KpHeader *out);
extern KpCodecError kp_records_check_offset(const KpBatchHeader *hdr,
											int64 prev_delta, int32 delta);

#endif							/* KP_CODEC_INTERNAL_H */
