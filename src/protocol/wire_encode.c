/*-------------------------------------------------------------------------
 *
 * wire_encode.c
 *	  The table-driven Kafka protocol encoder (responses, and requests for
 *	  the tests), the primitive writers handlers use for hand-built frames,
 *	  the API table lookup and the header versions.
 *
 * Like the decoder (wire_decode.c) it interprets the descriptor tables that
 * tools/gen_protocol.py generates (messages_gen.c) and knows no particular
 * message.  The encoder trusts its input: response structs are built by
 * our own handlers, so a bad one is a bug (Assert), not a client error.
 * Tagged fields are written only when they differ from their defaults
 * (KIP-482).
 *
 * src/protocol/wire_encode.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <string.h>

#include "common/base64.h"

#include "codec/codec.h"
#include "protocol/protocol.h"

static void encode_struct(StringInfo out, const KpStructDesc *sdesc,
						  int version, bool flexible, const void *in);

KpRecordsSink *kp_records_sink = NULL;

/* ------------------------------------------------------------------------
 * Primitive writers
 */

void
kp_wire_put_int16(StringInfo out, int16 v)
{
	uint8		b[2] = {(uint8) ((uint16) v >> 8), (uint8) v};

	appendBinaryStringInfo(out, (const char *) b, 2);
}

void
kp_wire_put_int32(StringInfo out, int32 v)
{
	uint32		u = (uint32) v;
	uint8		b[4] = {u >> 24, u >> 16, u >> 8, u};

	appendBinaryStringInfo(out, (const char *) b, 4);
}

void
kp_wire_put_int64(StringInfo out, int64 v)
{
	uint64		u = (uint64) v;
	uint8		b[8];

	for (int i = 7; i >= 0; i--, u >>= 8)
		b[i] = (uint8) u;
	appendBinaryStringInfo(out, (const char *) b, 8);
}

/* The one varint encoder of the project is the record codec's. */
void
kp_wire_put_uvarint(StringInfo out, uint32 v)
{
	kp_append_uvarint(out, v);
}

void
kp_wire_put_varint(StringInfo out, int32 v)
{
	kp_append_varint(out, v);	/* zig-zag of an int32 is its int64 zig-zag */
}

void
kp_wire_put_varlong(StringInfo out, int64 v)
{
	kp_append_varint(out, v);
}

void
kp_uuid_to_string(const uint8 *uuid, char *out)
{
	char		b64[32];
	int			len PG_USED_FOR_ASSERTS_ONLY = pg_b64_encode((const char *) uuid, 16, b64, sizeof(b64));
	int			i;

	Assert(len == KP_UUID_STRING_LEN + 2);	/* and the padding "==" */
	for (i = 0; i < KP_UUID_STRING_LEN; i++)
		out[i] = b64[i] == '+' ? '-' : b64[i] == '/' ? '_' : b64[i];
	out[KP_UUID_STRING_LEN] = '\0';
}

bool
kp_uuid_string_valid(const char *s, int len)
{
	int			i;

	if (len == KP_UUID_STRING_LEN + 2 && s[len - 2] == '=' && s[len - 1] == '=')
		len -= 2;
	if (len != KP_UUID_STRING_LEN)
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
			  (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_'))
			return false;
	return true;
}

static void
put_byte(StringInfo out, uint8 v)
{
	appendBinaryStringInfo(out, (const char *) &v, 1);
}

bool		kp_encode_string_too_long = false;

/* Write a length prefix; len -1 = null. */
static void
put_length(StringInfo out, bool compact, bool int16_len, int64 len)
{
	if (compact)
		kp_wire_put_uvarint(out, (uint32) (len + 1));
	else if (int16_len)
	{
		/*
		 * A string no classic (int16) length can give: a name sent back
		 * longer than it came, each ill-formed UTF-8 sequence read as U+FFFD
		 * (three bytes).  Kafka's serializer refuses it; this code raises no
		 * errors (it builds outside a backend too), so it notes it for the
		 * caller, which must not send the frame (kp_conn_put_response).
		 */
		if (len > PG_INT16_MAX)
			kp_encode_string_too_long = true;
		kp_wire_put_int16(out, (int16) len);
	}
	else
		kp_wire_put_int32(out, (int32) len);
}

static void
encode_value(StringInfo out, const KpFieldDesc *f, int version, bool flexible,
			 bool nullable, const void *src)
{
	bool		compact = flexible && !(f->flags & KP_F_CLASSIC_STRING);

	switch ((KpType) f->type)
	{
		case KP_T_INT8:
			put_byte(out, (uint8) *(const int8 *) src);
			break;
		case KP_T_BOOL:
			put_byte(out, *(const bool *) src ? 1 : 0);
			break;
		case KP_T_INT16:
			kp_wire_put_int16(out, *(const int16 *) src);
			break;
		case KP_T_UINT16:
			kp_wire_put_int16(out, (int16) *(const uint16 *) src);
			break;
		case KP_T_INT32:
			kp_wire_put_int32(out, *(const int32 *) src);
			break;
		case KP_T_UINT32:
			kp_wire_put_int32(out, (int32) *(const uint32 *) src);
			break;
		case KP_T_INT64:
			kp_wire_put_int64(out, *(const int64 *) src);
			break;
		case KP_T_FLOAT64:
			{
				int64		bits;

				memcpy(&bits, src, sizeof(bits));
				kp_wire_put_int64(out, bits);
				break;
			}
		case KP_T_UUID:
			appendBinaryStringInfo(out, (const char *) ((const KpUuid *) src)->b, 16);
			break;
		case KP_T_STRING:
			if (f->flags & KP_F_BINARY_STRING)
			{
				const KpBytes *b = src;

				if (b->len < 0 && nullable)
					put_length(out, compact, true, -1);
				else
				{
					put_length(out, compact, true, Max(b->len, 0));
					if (b->len > 0)
						appendBinaryStringInfo(out, (const char *) b->data, b->len);
				}
				break;
			}
			else
			{
				const char *s = *(const char *const *) src;

				if (s == NULL && nullable)
					put_length(out, compact, true, -1);
				else
				{
					size_t		n = s ? strlen(s) : 0;

					put_length(out, compact, true, n);
					appendBinaryStringInfo(out, s ? s : "", n);
				}
				break;
			}
		case KP_T_BYTES:
		case KP_T_RECORDS:
			{
				const KpBytes *b = src;

				if (b->len < 0 && nullable)
					put_length(out, compact, false, -1);
				else
				{
					int32		n = b->len < 0 ? 0 : b->len;

					put_length(out, compact, false, n);
					if (n > 0 && f->type == KP_T_RECORDS && kp_records_sink != NULL &&
						out == kp_records_sink->out && n >= kp_records_sink->min_len &&
						kp_records_sink->take(out, b->data, n, kp_records_sink->arg))
						break;
					if (n > 0)
						appendBinaryStringInfo(out, (const char *) b->data, n);
				}
				break;
			}
		case KP_T_STRUCT:
			if (f->flags & KP_F_POINTER)
			{
				const void *s = *(const void *const *) src;

				if (nullable)
					put_byte(out, s == NULL ? 0xff : 1);
				if (s == NULL)
				{
					if (nullable)
						break;
					/* not nullable at this version: write the defaults */
					s = palloc(f->struct_desc->size);
					kp_init_nested(f->struct_desc, (void *) s);
				}
				encode_struct(out, f->struct_desc, version, flexible, s);
			}
			else
				encode_struct(out, f->struct_desc, version, flexible, src);
			break;
	}
}

static void
encode_field(StringInfo out, const KpFieldDesc *f, int version, bool flexible,
			 const char *base)
{
	bool		nullable = KP_VERSION_IN(f->nullable_versions, version);
	int32		n;
	const char *elems;
	size_t		esize;

	if (!(f->flags & KP_F_ARRAY))
	{
		encode_value(out, f, version, flexible, nullable, base + f->offset);
		return;
	}
	n = *(const int32 *) (base + f->count_offset);
	elems = *(const char *const *) (base + f->offset);
	if (n < 0)
	{
		put_length(out, flexible, false, nullable ? -1 : 0);
		return;
	}
	put_length(out, flexible, false, n);
	esize = kp_wire_elem_size(f);
	for (int32 i = 0; i < n; i++)
	{
		if (f->type == KP_T_STRUCT)
			encode_struct(out, f->struct_desc, version, flexible, elems + esize * i);
		else
			encode_value(out, f, version, flexible, false, elems + esize * i);
	}
}

static bool struct_is_default(const KpStructDesc *sdesc, const char *base);

/* Does field f of the struct at base hold its default?  (Kafka writes a
 * tagged field only when it does not.) */
static bool
field_is_default(const KpFieldDesc *f, const char *base)
{
	const void *src = base + f->offset;

	if (f->flags & KP_F_ARRAY)
	{
		int32		n = *(const int32 *) (base + f->count_offset);

		return f->default_null ? n < 0 : n <= 0;
	}
	switch ((KpType) f->type)
	{
		case KP_T_INT8:
			return *(const int8 *) src == (int8) f->default_int;
		case KP_T_BOOL:
			return *(const bool *) src == (f->default_int != 0);
		case KP_T_INT16:
			return *(const int16 *) src == (int16) f->default_int;
		case KP_T_UINT16:
			return *(const uint16 *) src == (uint16) f->default_int;
		case KP_T_INT32:
			return *(const int32 *) src == (int32) f->default_int;
		case KP_T_UINT32:
			return *(const uint32 *) src == (uint32) f->default_int;
		case KP_T_INT64:
			return *(const int64 *) src == f->default_int;
		case KP_T_FLOAT64:
			return memcmp(src, &f->default_float, sizeof(double)) == 0;
		case KP_T_UUID:
			{
				static const KpUuid zero;

				return memcmp(src, &zero, sizeof(KpUuid)) == 0;
			}
		case KP_T_STRING:
			if (f->flags & KP_F_BINARY_STRING)
			{
				const KpBytes *b = src;

				return f->default_null ? b->len < 0 : b->len == 0;
			}
			else
			{
				const char *s = *(const char *const *) src;

				if (f->default_null || s == NULL)
					return s == NULL && f->default_null;
				return strcmp(s, f->default_string) == 0;
			}
		case KP_T_BYTES:
		case KP_T_RECORDS:
			{
				const KpBytes *b = src;

				return f->default_null ? b->len < 0 : b->len == 0;
			}
		case KP_T_STRUCT:
			if (f->flags & KP_F_POINTER)
			{
				const void *s = *(const void *const *) src;

				if (s == NULL)
					return f->default_null;
				return !f->default_null && struct_is_default(f->struct_desc, s);
			}
			return struct_is_default(f->struct_desc, src);
	}
	return false;
}

static bool
struct_is_default(const KpStructDesc *sdesc, const char *base)
{
	for (int i = 0; i < sdesc->nfields; i++)
		if (!field_is_default(&sdesc->fields[i], base))
			return false;
	return true;
}

static void
encode_struct(StringInfo out, const KpStructDesc *sdesc, int version,
			  bool flexible, const void *in)
{
	const char *base = in;
	uint32		ntags = 0;

	for (int i = 0; i < sdesc->nfields; i++)
	{
		const KpFieldDesc *f = &sdesc->fields[i];

		if (!KP_VERSION_IN(f->versions, version) ||
			KP_VERSION_IN(f->tagged_versions, version))
			continue;
		encode_field(out, f, version, flexible, base);
	}
	if (!flexible)
		return;

	for (int i = 0; i < sdesc->ntagged; i++)
	{
		const KpFieldDesc *f = &sdesc->fields[sdesc->tag_order[i]];

		if (KP_VERSION_IN(f->tagged_versions, version) && !field_is_default(f, base))
			ntags++;
	}
	kp_wire_put_uvarint(out, ntags);
	for (int i = 0; i < sdesc->ntagged && ntags > 0; i++)
	{
		const KpFieldDesc *f = &sdesc->fields[sdesc->tag_order[i]];
		StringInfoData value;

		if (!KP_VERSION_IN(f->tagged_versions, version) || field_is_default(f, base))
			continue;
		initStringInfo(&value);
		encode_field(&value, f, version, flexible, base);
		kp_wire_put_uvarint(out, (uint32) f->tag);
		kp_wire_put_uvarint(out, (uint32) value.len);
		appendBinaryStringInfo(out, value.data, value.len);
		pfree(value.data);
	}
}

void
kp_encode(const KpMessageDesc *desc, int version, const void *in,
		  StringInfo out)
{
	Assert(version >= desc->min_version && version <= desc->max_version);
	encode_struct(out, desc->root, version,
				  KP_VERSION_IN(desc->flexible_versions, version), in);
}

/* ------------------------------------------------------------------------
 * APIs and headers
 */

const KpApiEntry *
kp_api_lookup(int16 api_key)
{
	int			lo = 0,
				hi = kp_api_table_len - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (kp_api_table[mid].api_key == api_key)
			return &kp_api_table[mid];
		if (kp_api_table[mid].api_key < api_key)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

/*
 * A flexible version uses request header v2.  Kafka's flexible ranges are
 * open ("9+"), so a version above our maximum counts as flexible too, which
 * lets us read the header of a too-new ApiVersions request and answer it.
 */
int
kp_request_header_version(int16 api_key, int16 api_version)
{
	const KpApiEntry *api = kp_api_lookup(api_key);

	if (api != NULL && api->flexible_min_version >= 0 &&
		api_version >= api->flexible_min_version)
		return 2;
	return 1;
}

int
kp_response_header_version(int16 api_key, int16 api_version)
{
	const KpApiEntry *api;

	/* ApiVersions responses always use header v0 (KIP-511) */
	if (api_key == KP_API_API_VERSIONS)
		return 0;
	api = kp_api_lookup(api_key);
	if (api != NULL && api->flexible_min_version >= 0 &&
		api_version >= api->flexible_min_version)
		return 1;
	return 0;
}

void
kp_encode_request_header(const KpRequestHeader *hdr, StringInfo out)
{
	kp_encode(&kp_RequestHeader_desc,
			  kp_request_header_version(hdr->request_api_key,
										hdr->request_api_version),
			  hdr, out);
}

void
kp_encode_response_header(int16 api_key, int16 api_version,
						  int32 correlation_id, StringInfo out)
{
	KpResponseHeader h;

	kp_init_struct(&kp_ResponseHeader_desc, &h);
	h.correlation_id = correlation_id;
	kp_encode(&kp_ResponseHeader_desc,
			  kp_response_header_version(api_key, api_version), &h, out);
}
