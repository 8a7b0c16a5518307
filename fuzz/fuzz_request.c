/*-------------------------------------------------------------------------
 *
 * fuzz_request.c
 *	  libFuzzer target for the Kafka protocol codec (src/protocol/).
 *
 * The input is a request frame without its int32 size: a request header,
 * then a body.  The header is decoded (v1 or v2, by api key and version);
 * for a known api key the body is decoded as the request at the version the
 * header names, then at every version the codec supports for that key, and
 * as the response at the named version.  Whatever decodes is re-encoded,
 * decoded again and re-encoded again: the two encodings must be identical
 * (the first may differ from the input, e.g. a non-minimal varint) and the
 * second decode must succeed.  A mismatch aborts.
 *
 * Memory comes from test/protocol/shim_alloc.c, reset after every input.
 *
 *   make -f fuzz/request.mk fuzz     build fuzz/fuzz_request
 *   make -f fuzz/request.mk run      fuzz for FUZZ_TIME seconds (600)
 *   make -f fuzz/request.mk replay   run the seed corpus once, exit 0 if clean
 *
 * fuzz/fuzz_request.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdio.h>
#include <stdlib.h>

#include "protocol/protocol.h"
#include "shim_alloc.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decode body as desc/version; if it decodes, check encode is a fixpoint. */
static void
roundtrip(const KpMessageDesc *desc, int version, const uint8 *body, size_t len)
{
	void	   *m1 = palloc(desc->root->size);
	void	   *m2 = palloc(desc->root->size);
	KpError		err;
	StringInfoData e1,
				e2;

	if (version < desc->min_version || version > desc->max_version)
		return;
	if (!kp_decode(desc, version, body, len, m1, &err))
	{
		if (err.code == KP_DECODE_OK || err.message[0] == '\0')
		{
			fprintf(stderr, "%s v%d: failed without an error\n", desc->name, version);
			abort();
		}
		return;
	}
	initStringInfo(&e1);
	kp_encode(desc, version, m1, &e1);
	if (!kp_decode(desc, version, (const uint8 *) e1.data, e1.len, m2, &err))
	{
		fprintf(stderr, "%s v%d: re-encoding does not decode: %s\n",
				desc->name, version, err.message);
		abort();
	}
	initStringInfo(&e2);
	kp_encode(desc, version, m2, &e2);
	if (e1.len != e2.len || memcmp(e1.data, e2.data, e1.len) != 0)
	{
		fprintf(stderr, "%s v%d: encoding is not a fixpoint (%d vs %d bytes)\n",
				desc->name, version, e1.len, e2.len);
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	KpRequestHeader hdr,
				hdr2;
	size_t		used,
				used2;
	KpError		err;
	const KpApiEntry *api;
	StringInfoData h;

	if (!kp_decode_request_header(data, size, &hdr, &used, &err))
	{
		kp_arena_reset();
		return 0;
	}
	if (used > size)
		abort();

	/* the header round-trips too */
	initStringInfo(&h);
	kp_encode_request_header(&hdr, &h);
	if (!kp_decode_request_header((const uint8 *) h.data, h.len, &hdr2, &used2, &err) ||
		used2 != (size_t) h.len || hdr2.correlation_id != hdr.correlation_id ||
		(hdr.client_id == NULL) != (hdr2.client_id == NULL) ||
		(hdr.client_id && strcmp(hdr.client_id, hdr2.client_id) != 0))
	{
		fprintf(stderr, "request header does not round-trip\n");
		abort();
	}

	api = kp_api_lookup(hdr.request_api_key);
	if (api != NULL)
	{
		const uint8 *body = data + used;
		size_t		len = size - used;

		roundtrip(api->request, hdr.request_api_version, body, len);
		for (int v = api->min_version; v <= api->max_version; v++)
			if (v != hdr.request_api_version)
				roundtrip(api->request, v, body, len);
		roundtrip(api->response, hdr.request_api_version, body, len);
	}
	kp_arena_reset();
	return 0;
}
