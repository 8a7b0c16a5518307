/*-------------------------------------------------------------------------
 *
 * protocol.h
 *	  The Kafka wire protocol codec: the whole public face of src/protocol/.
 *
 * Every Kafka request and response is a C struct generated from Kafka's own
 * message definitions (messages_gen.h, by tools/gen_protocol.py), plus a
 * static descriptor table that tells the one table-driven decoder
 * (wire_decode.c) and encoder (wire_encode.c), field by field, what is on
 * the wire at which version.  Handlers see decoded structs, never raw bytes.
 *
 * How a handler uses it:
 *
 *		KpRequestHeader hdr;
 *		size_t		hlen;
 *		KpError		err;
 *
 *		if (!kp_decode_request_header(frame, frame_len, &hdr, &hlen, &err))
 *			... drop the connection (no correlation id to answer to) ...
 *		api = kp_api_lookup(hdr.request_api_key);	-- NULL: unknown API
 *		if (hdr.request_api_version outside api->min_version..max_version)
 *			... answer UNSUPPORTED_VERSION ...
 *
 *		KpMetadataRequest req;
 *		if (!kp_decode(api->request, hdr.request_api_version,
 *					   frame + hlen, frame_len - hlen, &req, &err))
 *			... answer with an error / close ...
 *
 *		KpMetadataResponse resp;
 *		kp_init_struct(api->response, &resp);
 *		resp.throttle_time_ms = 0; ...
 *		initStringInfo(&out);
 *		kp_encode_response_header(hdr.request_api_key, hdr.request_api_version,
 *								  hdr.correlation_id, &out);
 *		kp_encode(api->response, hdr.request_api_version, &resp, &out);
 *		-- prefix with the int32 frame length when sending
 *
 * Representation (same for every message):
 *	- integers, bool, float64: the C type of the same width;
 *	- string: NUL-terminated palloc'd char *; NULL = null.  The few STRING
 *	  fields that carry bytes rather than text (offset commit metadata;
 *	  BINARY_STRINGS in tools/gen_protocol.py, flag KP_F_BINARY_STRING) are
 *	  KpBytes instead, pointing into the buffer, len -1 = null;
 *	- bytes, records: KpBytes, pointing INTO the decoded buffer (zero copy; the
 *	  buffer must outlive the struct); len -1 = null;
 *	- uuid: KpUuid (16 bytes, big-endian as on the wire);
 *	- array: a member "n_x" (int32 count, -1 = null array) and "x", a palloc'd
 *	  C array of the element type;
 *	- struct: embedded; a nullable struct (ConsumerGroupHeartbeat's Assignment)
 *	  is a pointer, NULL = null.
 *
 * Decoding rules:
 *	- A field absent at the decoded version gets its JSON default (arrays:
 *	  empty, or null when the default is "null").
 *	- Kafka accepts NUL bytes in strings (Java strings may hold U+0000).  A
 *	  KP_F_BINARY_STRING keeps them.  In a char * string the value is kept
 *	  whole but C sees it up to the NUL, so the decode succeeds and notes the
 *	  first such field in KpError.embedded_nul: the caller must refuse the
 *	  request (the listener answers INVALID_REQUEST, kp_error_response)
 *	  rather than act on a shortened name; Postgres text cannot hold a NUL.
 *	- A null where the version does not allow one is an error, like Kafka's
 *	  "non-nullable field was serialized as null".
 *	- Unknown tagged fields are skipped; bytes left over after the body are an
 *	  error (KP_DECODE_TRAILING_BYTES).
 *	- Every length is checked against the bytes that remain before anything is
 *	  allocated, and one decode allocates at most 16 times its input plus
 *	  64kB (a C struct holds a message's fields over all versions, so a
 *	  crafted message could otherwise ask for far more memory than it has
 *	  bytes); allocation failure is an error too (MCXT_ALLOC_NO_OOM).  Errors are returned in a KpError (code + message); nothing
 *	  here calls ereport/elog, so the codec also runs in frontend tests and
 *	  the fuzzer.
 *	- Memory is palloc'd in CurrentMemoryContext: decode inside a per-request
 *	  context and reset it afterwards.
 *
 * Encoding rules:
 *	- Only the fields present at the version are written.  A non-default value
 *	  in a field the version lacks is silently dropped, as Kafka does for
 *	  "ignorable" fields (we do not distinguish non-ignorable ones; a handler
 *	  that must refuse an old version does so before encoding).
 *	- A tagged field is written only when it differs from its default, in tag
 *	  order (as Kafka's generated Java code does).
 *	- NULL in a field that is not nullable at the version is written as empty.
 *
 * Portions of the protocol rules: Kafka's protocol guide and the message
 * definitions' README (flexible versions, KIP-482 tagged fields).
 *
 * src/protocol/protocol.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_PROTOCOL_H
#define KP_PROTOCOL_H

#include "lib/stringinfo.h"
#include "protocol/errors.h"

/* A bytes/records value: points into the decoded buffer.  len -1 = null. */
typedef struct KpBytes
{
	const uint8 *data;
	int32		len;
} KpBytes;

/* A Kafka UUID, 16 bytes in wire (big-endian) order. */
typedef struct KpUuid
{
	uint8		b[16];
} KpUuid;

/* Field types of the descriptor tables. */
typedef enum KpType
{
	KP_T_INT8,
	KP_T_INT16,
	KP_T_INT32,
	KP_T_INT64,
	KP_T_UINT16,
	KP_T_UINT32,
	KP_T_FLOAT64,
	KP_T_BOOL,
	KP_T_STRING,
	KP_T_BYTES,
	KP_T_RECORDS,
	KP_T_UUID,
	KP_T_STRUCT
} KpType;

/* Field flags */
#define KP_F_ARRAY			0x01	/* array of .type */
#define KP_F_CLASSIC_STRING	0x02	/* int16-length string even when flexible */
#define KP_F_POINTER		0x04	/* nullable struct held by pointer */
#define KP_F_BINARY_STRING	0x08	/* STRING kept as KpBytes: NUL bytes
									 * allowed */

struct KpStructDesc;

/*
 * One field of a struct.  Version sets are bit masks: bit v set = true at
 * version v.  A field is on the wire at version v when versions has v; it is
 * then a tagged field if tagged_versions has v, else a regular one.
 */
typedef struct KpFieldDesc
{
	const char *name;			/* Kafka's field name */
	uint8		type;			/* KpType (element type for arrays) */
	uint8		flags;			/* KP_F_* */
	uint16		offset;			/* offsetof the value (arrays: the pointer) */
	uint16		count_offset;	/* arrays: offsetof the int32 count */
	int32		tag;			/* tag number, -1 if never tagged */
	uint64		versions;
	uint64		nullable_versions;
	uint64		tagged_versions;
	const struct KpStructDesc *struct_desc; /* KP_T_STRUCT */
	/* default value (the JSON "default"), by type */
	bool		default_null;
	int64		default_int;
	double		default_float;
	const char *default_string;
} KpFieldDesc;

/* Is version v in a version bit mask (versions, nullable_versions, ...)? */
#define KP_VERSION_IN(mask, v)	((((mask) >> (v)) & 1) != 0)

/* The C size of one element of an array field (wire_decode.c). */
extern size_t kp_wire_elem_size(const KpFieldDesc *f);

typedef struct KpStructDesc
{
	const char *name;
	size_t		size;			/* sizeof the generated C struct */
	int			nfields;
	const KpFieldDesc *fields;	/* in wire order */
	int			ntagged;
	const uint8 *tag_order;		/* indexes of tagged fields, ascending tag */
} KpStructDesc;

typedef struct KpMessageDesc
{
	const char *name;			/* e.g. "MetadataRequest" */
	int16		api_key;		/* -1 for headers and data schemas */
	int16		min_version;
	int16		max_version;
	uint64		flexible_versions;	/* bit mask */
	const KpStructDesc *root;
} KpMessageDesc;

/* One API: kp_api_table[] has one entry per API key the codec knows. */
typedef struct KpApiEntry
{
	int16		api_key;
	const char *name;			/* e.g. "Metadata" */
	const KpMessageDesc *request;
	const KpMessageDesc *response;
	int16		flexible_min_version;	/* first flexible version, -1 none */
	int16		min_version;
	int16		max_version;
} KpApiEntry;

#include "protocol/messages_gen.h"

/* Decode errors */
typedef enum KpDecodeErrorCode
{
	KP_DECODE_OK = 0,
	KP_DECODE_TRUNCATED,		/* input ends inside a value */
	KP_DECODE_BAD_LENGTH,		/* negative/oversized length or count */
	KP_DECODE_BAD_VARINT,		/* varint longer than its type allows */
	KP_DECODE_NULL_NOT_ALLOWED, /* null in a non-nullable field */
	KP_DECODE_EMBEDDED_NUL,		/* NUL byte inside a string */
	KP_DECODE_TRAILING_BYTES,	/* bytes left after the body */
	KP_DECODE_UNSUPPORTED_VERSION,	/* version outside the descriptor's range */
	KP_DECODE_TOO_LARGE			/* would allocate more than 16x the input +
								 * 64kB */
} KpDecodeErrorCode;

typedef struct KpError
{
	KpDecodeErrorCode code;
	char		message[160];	/* e.g. "MetadataRequest.Topics: array length
								 * 2147483647 exceeds the 12 bytes left" */
	/* not an error: a C-string STRING held a NUL byte (the first such field) */
	bool		embedded_nul;
	char		embedded_nul_field[100];
} KpError;

/*
 * API lookups.  kp_api_lookup returns NULL for an unknown key.
 * kp_request_header_version / kp_response_header_version say which header
 * version applies to (api_key, api_version): flexible versions use request
 * header v2 / response header v1, except that ApiVersions responses always
 * use response header v0 (so that a client can parse the reply of a broker
 * it knows nothing about yet).
 */
extern const KpApiEntry *kp_api_lookup(int16 api_key);
extern int	kp_request_header_version(int16 api_key, int16 api_version);
extern int	kp_response_header_version(int16 api_key, int16 api_version);

/*
 * Decode the request header at the start of buf.  On success fills *hdr
 * (client_id palloc'd, NULL if null), sets *consumed to the header's length
 * and returns true.  An unknown API key or version is not an error here: the
 * header is decoded as v1 (v2 if the version is flexible for a known key).
 */
extern bool kp_decode_request_header(const uint8 *buf, size_t len,
									 KpRequestHeader *hdr, size_t *consumed,
									 KpError *err);

/*
 * Fill response (api's response struct, uninitialised) as an error answer
 * to request at version: defaults, every ErrorCode = code, every
 * ErrorMessage = message, arrays mirrored from the request with the
 * entries' names and indexes (wire_error.c).
 */
extern void kp_error_response(const KpApiEntry *api, int version, const void *request,
							  void *response, int16 code, const char *message);

/* Write a request header (for tests, tools and the fuzzer). */
extern void kp_encode_request_header(const KpRequestHeader *hdr, StringInfo out);

/* Write the response header for a response to (api_key, api_version). */
extern void kp_encode_response_header(int16 api_key, int16 api_version,
									  int32 correlation_id, StringInfo out);

/*
 * Decode a whole message body of `len` bytes at `version` into *out, which
 * must be the generated struct of desc (desc->root->size bytes).  Returns
 * true on success; on failure returns false with *err set and *out partly
 * filled (do not use it).  Allocations are palloc'd in CurrentMemoryContext.
 */
extern bool kp_decode(const KpMessageDesc *desc, int version,
					  const uint8 *buf, size_t len, void *out, KpError *err);

/*
 * Append the encoding of *in at `version` to out.  `version` must lie within
 * desc's range (checked with Assert only).
 */
/*
 * Set by kp_encode when a string was longer than the int16 length of a
 * classic version can give: the frame is malformed, and must not be sent.
 * The caller clears it before encoding.
 */
extern bool kp_encode_string_too_long;

extern void kp_encode(const KpMessageDesc *desc, int version,
					  const void *in, StringInfo out);

/*
 * Records by reference (the listener's Fetch responses: src/listener/README,
 * "A Fetch's records"): while kp_records_sink is set, a records field of at
 * least min_len bytes encoded into kp_records_sink->out itself (not into a
 * tagged field's scratch buffer) gets its length written as usual, then
 * take() is called with the bytes instead of their being appended.  take()
 * returns false to have them appended after all.
 */
typedef struct KpRecordsSink
{
	StringInfo	out;
	int32		min_len;
	bool		(*take) (StringInfo out, const uint8 *data, int32 len, void *arg);
	void	   *arg;
} KpRecordsSink;

extern KpRecordsSink *kp_records_sink;

/*
 * Fill *out with the defaults of every field (what a field absent at the
 * decoded version decodes to).  Use it before filling a response.
 */
extern void kp_init_struct(const KpMessageDesc *desc, void *out);

/* Initialise one nested struct (e.g. an element of a response array). */
extern void kp_init_nested(const KpStructDesc *sdesc, void *out);

/*
 * Is a decoded string empty once Java's String.trim() has removed what is
 * <= ' ' at both ends?  Kafka's coordinators refuse such ids ("GroupId can't
 * be empty.", Utils.throwIfEmptyString).  NULL is not blank: Kafka checks a
 * null id apart.
 */
static inline bool
kp_java_blank(const char *s)
{
	if (s == NULL)
		return false;
	for (; *s; s++)
		if ((unsigned char) *s > ' ')
			return false;
	return true;
}

/* Primitive writers shared with the rest of the broker (one varint encoder). */
extern void kp_wire_put_int16(StringInfo out, int16 v);
extern void kp_wire_put_int32(StringInfo out, int32 v);
extern void kp_wire_put_int64(StringInfo out, int64 v);
extern void kp_wire_put_uvarint(StringInfo out, uint32 v);
extern void kp_wire_put_varint(StringInfo out, int32 v);	/* zig-zag */
extern void kp_wire_put_varlong(StringInfo out, int64 v);	/* zig-zag */

/*
 * Kafka's Uuid in its string form (Uuid.toString / Uuid.fromString): the 16
 * bytes in base64url without padding, 22 characters.  kp_uuid_to_string
 * writes them and a NUL into out[KP_UUID_STRING_LEN + 1];
 * kp_uuid_string_valid says whether len characters at s are one Kafka
 * reads (also with the padding "==").
 */
#define KP_UUID_STRING_LEN 22
extern void kp_uuid_to_string(const uint8 *uuid, char *out);
extern bool kp_uuid_string_valid(const char *s, int len);

#endif							/* KP_PROTOCOL_H */
