/*-------------------------------------------------------------------------
 *
 * test_edges.c
 *	  Hand-made cases: hostile lengths, unknown tagged fields, headers, the
 *	  version plan librdkafka needs, old Produce, rejects and defaults.
 *
 * Part of the protocol codec tests, run by test_protocol.c's main().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/protocol.h"
#include "proto_test.h"
#include "shim_alloc.h"

/* ------------------------------------------------------------------------
 * Hand-made cases
 */

/* Decode buf as desc/version; expect failure with `code` and no more than
 * `max_alloc` bytes allocated. */
static bool
expect_error(const KpMessageDesc *desc, int version, const uint8 *buf,
			 size_t len, KpDecodeErrorCode code, size_t max_alloc)
{
	bool		ok = true;
	KpError		err;
	union
	{
		char		b[4096];
		max_align_t align;
	}			msg;

	kp_arena_reset();
	Assert(desc->root->size <= sizeof(msg));
	if (kp_decode(desc, version, buf, len, &msg, &err))
	{
		printf("FAIL %s: decoded, expected error %d\n", current, code);
		return false;
	}
	if (err.code != code)
	{
		printf("FAIL %s: error %d (%s), expected %d\n", current, err.code, err.message, code);
		ok = false;
	}
	if (kp_arena_bytes() > max_alloc)
	{
		printf("FAIL %s: allocated %zu bytes before failing\n", current, kp_arena_bytes());
		ok = false;
	}
	kp_arena_reset();
	return ok;
}

void
test_huge_lengths(void)
{
	bool		ok = true;

	current = "huge lengths fail without allocating";
	{
		/* MetadataRequest v4: topics array of 2^31-1 */
		uint8		b[] = {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1};

		ok &= expect_error(&kp_MetadataRequest_desc, 4, b, sizeof(b),
						   KP_DECODE_BAD_LENGTH, 0);
	}
	{
		/* same, 0x80000000 is negative = null, not allowed at v0 */
		uint8		b[] = {0x80, 0x00, 0x00, 0x00};

		ok &= expect_error(&kp_MetadataRequest_desc, 0, b, sizeof(b),
						   KP_DECODE_NULL_NOT_ALLOWED, 0);
	}
	{
		/* MetadataRequest v12 (flexible): compact count 2^32-2 */
		uint8		b[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0};

		ok &= expect_error(&kp_MetadataRequest_desc, 12, b, sizeof(b),
						   KP_DECODE_BAD_LENGTH, 0);
	}
	{
		/* a varint of 6 bytes */
		uint8		b[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0};

		ok &= expect_error(&kp_MetadataRequest_desc, 12, b, sizeof(b),
						   KP_DECODE_BAD_VARINT, 0);
	}
	{
		/* FindCoordinator v0: key string of 32767 bytes, 3 present */
		uint8		b[] = {0x7f, 0xff, 'a', 'b', 'c'};

		ok &= expect_error(&kp_FindCoordinatorRequest_desc, 0, b, sizeof(b),
						   KP_DECODE_BAD_LENGTH, 0);
	}
	{
		/* SyncGroupResponse v0: error_code, assignment bytes of 2^31-1 */
		uint8		b[] = {0, 0, 0x7f, 0xff, 0xff, 0xff, 1, 2};

		ok &= expect_error(&kp_SyncGroupResponse_desc, 0, b, sizeof(b),
						   KP_DECODE_BAD_LENGTH, 0);
	}
	{
		/*
		 * Fetch v4: 1 topic, then a partitions array of 10^6 elements of 28
		 * bytes
		 */
		uint8		b[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 1, 0, 1, 't', 0, 0x0f, 0x42, 0x40, 0, 0, 0, 0, 0, 0, 0, 0};

		ok &= expect_error(&kp_FetchRequest_desc, 4, b, sizeof(b),
						   KP_DECODE_BAD_LENGTH, 256);
	}
	{
		/* a tagged field longer than the message */
		uint8		b[] = {1, 1, 0, 1, 5, 0x7f, 0};

		ok &= expect_error(&kp_MetadataRequest_desc, 12, b, sizeof(b),
						   KP_DECODE_BAD_LENGTH, 64);
	}
	report(ok, current);
}

void
test_unknown_tags_skipped(void)
{
	bool		ok = true;
	KpMetadataRequest m;
	KpError		err;
	StringInfoData out;

	current = "unknown tagged fields are skipped";

	/*
	 * MetadataRequest v12: topics [ {topic_id 0*16, name "t", tags {99: 3
	 * bytes}} ], allow_auto 1, include_topic_ops 0, tags {7: 0 bytes, 200: 2
	 * bytes}.  Tag 200 needs a 2-byte varint (0xc8 0x01).
	 */
	{
		uint8		b[] = {
			2,
			0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
			2, 't',
			1, 99, 3, 'x', 'y', 'z',
			1, 0,
			2, 7, 0, 0xc8, 0x01, 2, 0xaa, 0xbb
		};
		uint8		expect[] = {
			2,
			0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
			2, 't', 0,
			1, 0, 0
		};

		if (!kp_decode(&kp_MetadataRequest_desc, 12, b, sizeof(b), &m, &err))
		{
			printf("FAIL %s: %s\n", current, err.message);
			ok = false;
		}
		else
		{
			CHECK(m.n_topics == 1 && str_is(m.topics[0].name, "t"));
			CHECK(m.allow_auto_topic_creation && !m.include_topic_authorized_operations);
			initStringInfo(&out);
			kp_encode(&kp_MetadataRequest_desc, 12, &m, &out);
			CHECK(out.len == sizeof(expect) && memcmp(out.data, expect, sizeof(expect)) == 0);
		}
	}
	/* a known tag mixed with unknown ones: Fetch v12 cluster_id (tag 0) */
	{
		KpFetchRequest f;

		kp_init_struct(&kp_FetchRequest_desc, &f);
		f.cluster_id = "c1";
		initStringInfo(&out);
		kp_encode(&kp_FetchRequest_desc, 12, &f, &out);
		/* the last bytes are the top-level tags: 1, 0, 3, 3, 'c', '1' */
		CHECK(out.len > 6 && memcmp(out.data + out.len - 6, "\x01\x00\x03\x03" "c1", 6) == 0);
		if (out.len > 6)
		{
			/* splice in an unknown tag 5 before tag 0 */
			StringInfoData b2;

			initStringInfo(&b2);
			appendBinaryStringInfo(&b2, out.data, out.len - 6);
			appendBinaryStringInfo(&b2, "\x02\x05\x01\xee\x00\x03\x03" "c1", 9);
			if (!kp_decode(&kp_FetchRequest_desc, 12, (uint8 *) b2.data, b2.len, &f, &err))
			{
				printf("FAIL %s: %s\n", current, err.message);
				ok = false;
			}
			else
				CHECK(str_is(f.cluster_id, "c1"));
		}
	}
	report(ok, current);
	kp_arena_reset();
}

void
test_headers(void)
{
	bool		ok = true;
	KpRequestHeader h;
	size_t		used;
	KpError		err;
	StringInfoData out;

	current = "request and response headers";
	{
		/* v1: Metadata v4, correlation 7, client id "ab", then body */
		uint8		b[] = {0, 3, 0, 4, 0, 0, 0, 7, 0, 2, 'a', 'b', 0xee};

		CHECK(kp_decode_request_header(b, sizeof(b), &h, &used, &err));
		CHECK(used == 12 && h.request_api_key == 3 && h.request_api_version == 4 &&
			  h.correlation_id == 7 && str_is(h.client_id, "ab"));
	}
	{
		/* v2: Metadata v12: client id stays an int16 string, then tags */
		uint8		b[] = {0, 3, 0, 12, 0, 0, 0, 9, 0, 2, 'a', 'b', 1, 3, 1, 0, 0xee};

		CHECK(kp_decode_request_header(b, sizeof(b), &h, &used, &err));
		CHECK(used == 16 && h.correlation_id == 9 && str_is(h.client_id, "ab"));
	}
	{
		/* v2 with a null client id; ApiVersions v3 */
		uint8		b[] = {0, 18, 0, 3, 0, 0, 0, 1, 0xff, 0xff, 0};

		CHECK(kp_decode_request_header(b, sizeof(b), &h, &used, &err));
		CHECK(used == 11 && h.client_id == NULL);
		initStringInfo(&out);
		kp_encode_request_header(&h, &out);
		CHECK(out.len == 11 && memcmp(out.data, b, 11) == 0);
	}
	{
		/* a too-new ApiVersions (v99) is read with header v2 */
		uint8		b[] = {0, 18, 0, 99, 0, 0, 0, 1, 0, 0, 0};

		CHECK(kp_decode_request_header(b, sizeof(b), &h, &used, &err) && used == 11);
	}
	{
		uint8		b[] = {0, 3, 0};

		CHECK(!kp_decode_request_header(b, sizeof(b), &h, &used, &err));
		CHECK(!kp_decode_request_header(b, 0, &h, &used, &err));
	}
	/* response headers: ApiVersions always v0 (KIP-511) */
	initStringInfo(&out);
	kp_encode_response_header(KP_API_API_VERSIONS, 3, 0x01020304, &out);
	CHECK(out.len == 4 && memcmp(out.data, "\x01\x02\x03\x04", 4) == 0);
	resetStringInfo(&out);
	kp_encode_response_header(KP_API_METADATA, 9, 5, &out);
	CHECK(out.len == 5 && memcmp(out.data, "\x00\x00\x00\x05\x00", 5) == 0);
	resetStringInfo(&out);
	kp_encode_response_header(KP_API_METADATA, 8, 5, &out);
	CHECK(out.len == 4);
	CHECK(kp_request_header_version(KP_API_PRODUCE, 8) == 1);
	CHECK(kp_request_header_version(KP_API_PRODUCE, 9) == 2);
	report(ok, current);
	kp_arena_reset();
}

void
test_version_plan(void)
{
	bool		ok = true;

	/* exact versions librdkafka < 2.11 needs inside the ranges (FACTS.md) */
	static const int16 need[][2] = {
		{KP_API_PRODUCE, 0}, {KP_API_PRODUCE, 3}, {KP_API_PRODUCE, 7},
		{KP_API_FETCH, 4}, {KP_API_FETCH, 10}, {KP_API_FIND_COORDINATOR, 0},
		{KP_API_OFFSET_COMMIT, 2}, {KP_API_OFFSET_FETCH, 1},
		{KP_API_JOIN_GROUP, 0}, {KP_API_SYNC_GROUP, 0}, {KP_API_HEARTBEAT, 0},
		{KP_API_LEAVE_GROUP, 0}, {KP_API_INIT_PRODUCER_ID, 0},
		{KP_API_LIST_OFFSETS, 1}, {KP_API_API_VERSIONS, 0},
		{KP_API_CONSUMER_GROUP_HEARTBEAT, 0}, {KP_API_CONSUMER_GROUP_DESCRIBE, 0},
	};

	current = "version plan";
	for (int i = 0; i < (int) lengthof(need); i++)
	{
		const KpApiEntry *a = kp_api_lookup(need[i][0]);

		CHECK(a != NULL && a->min_version <= need[i][1] && need[i][1] <= a->max_version);
		if (a && (a->min_version > need[i][1] || need[i][1] > a->max_version))
			printf("  api %d version %d not in %d-%d\n", need[i][0], need[i][1],
				   a->min_version, a->max_version);
	}
	CHECK(kp_api_lookup(KP_API_PRODUCE)->max_version == 13);
	CHECK(kp_api_lookup(KP_API_FETCH)->max_version == 18);
	CHECK(kp_api_lookup(KP_API_PRODUCE)->flexible_min_version == 9);
	CHECK(kp_api_lookup(KP_API_API_VERSIONS)->flexible_min_version == 3);
	CHECK(kp_api_lookup(9999) == NULL && kp_api_lookup(-1) == NULL);
	for (int i = 1; i < kp_api_table_len; i++)
		CHECK(kp_api_table[i - 1].api_key < kp_api_table[i].api_key);
	CHECK(strcmp(kp_error_name(KP_ERR_UNKNOWN_TOPIC_OR_PARTITION),
				 "UNKNOWN_TOPIC_OR_PARTITION") == 0);
	CHECK(KP_ERR_UNSUPPORTED_VERSION == 35 && KP_ERR_UNKNOWN_SERVER_ERROR == -1);
	CHECK(strcmp(kp_error_name(-1), "UNKNOWN_SERVER_ERROR") == 0);
	CHECK(strcmp(kp_error_name(30000), "UNKNOWN_ERROR_CODE") == 0);
	report(ok, current);
}

/* Produce v0-v2 (old MessageSet): records are opaque bytes. */
void
test_produce_v0(void)
{
	bool		ok = true;
	KpProduceRequest m;
	KpError		err;
	StringInfoData out;

	/* acks 1, timeout 1000, [ {"t", [ {0, 4 bytes "abcd"} ]} ] */
	uint8		b[] = {0, 1, 0, 0, 0x03, 0xe8, 0, 0, 0, 1, 0, 1, 't',
	0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4, 'a', 'b', 'c', 'd'};

	current = "Produce v0-v2 (MessageSet as opaque bytes)";
	for (int v = 0; v <= 2; v++)
	{
		if (!kp_decode(&kp_ProduceRequest_desc, v, b, sizeof(b), &m, &err))
		{
			printf("FAIL %s: v%d: %s\n", current, v, err.message);
			ok = false;
			continue;
		}
		CHECK(m.acks == 1 && m.timeout_ms == 1000 && m.transactional_id == NULL);
		CHECK(m.n_topic_data == 1 && str_is(m.topic_data[0].name, "t"));
		CHECK(m.topic_data[0].partition_data[0].records.len == 4 &&
			  memcmp(m.topic_data[0].partition_data[0].records.data, "abcd", 4) == 0);
		initStringInfo(&out);
		kp_encode(&kp_ProduceRequest_desc, v, &m, &out);
		CHECK(out.len == sizeof(b) && memcmp(out.data, b, sizeof(b)) == 0);
	}
	report(ok, current);
	kp_arena_reset();
}

void
test_rejects(void)
{
	bool		ok = true;

	current = "NUL in strings, nulls where not nullable, trailing bytes";
	{
		/*
		 * FindCoordinator v0 key "a\0b": decoded (Kafka accepts it) with the
		 * field noted, for the listener to refuse the request
		 */
		uint8		b[] = {0, 3, 'a', 0, 'b'};
		KpFindCoordinatorRequest m;
		KpError		err;

		if (!kp_decode(&kp_FindCoordinatorRequest_desc, 0, b, sizeof(b), &m, &err) ||
			!err.embedded_nul || strstr(err.embedded_nul_field, "Key") == NULL ||
			memcmp(m.key, "a\0b", 4) != 0)
		{
			printf("FAIL %s: a NUL in a string is not noted (%s)\n", current, err.message);
			ok = false;
		}
		kp_arena_reset();
	}
	{
		/* OffsetCommit v2 metadata "x\0y": a binary string, kept whole */
		uint8		b[] = {0, 1, 'g', 0, 0, 0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 42, 0, 3, 'x', 0, 'y'};
		KpOffsetCommitRequest m;
		KpError		err;
		StringInfoData out;

		if (!kp_decode(&kp_OffsetCommitRequest_desc, 2, b, sizeof(b), &m, &err) || err.embedded_nul ||
			m.topics[0].partitions[0].committed_metadata.len != 3 ||
			memcmp(m.topics[0].partitions[0].committed_metadata.data, "x\0y", 3) != 0)
		{
			printf("FAIL %s: binary metadata not kept (%s)\n", current, err.message);
			ok = false;
		}
		else
		{
			initStringInfo(&out);
			kp_encode(&kp_OffsetCommitRequest_desc, 2, &m, &out);
			if (out.len != sizeof(b) || memcmp(out.data, b, sizeof(b)) != 0)
			{
				printf("FAIL %s: binary metadata does not encode back\n", current);
				ok = false;
			}
		}
		kp_arena_reset();
	}
	{
		/*
		 * Ill-formed UTF-8 in a string is read as Java (Kafka) reads it: each
		 * maximal subpart becomes U+FFFD (expectations from Python's
		 * decode(errors="replace"), which follows the same rule)
		 */
		static const struct
		{
			uint8		in[8];
			int			len;
			const char *out;
			int			out_len;
		}			cases[] = {
			{{0x67, 0xff, 0xe2, 0x82}, 4, "\x67\xef\xbf\xbd\xef\xbf\xbd", 7},
			{{0x61, 0xc0, 0x80, 0x62}, 4, "\x61\xef\xbf\xbd\xef\xbf\xbd\x62", 8},
			{{0xed, 0xa0, 0x80}, 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9},
			{{0xf0, 0x9f, 0x98, 0x78}, 4, "\xef\xbf\xbd\x78", 4},
			{{0x6f, 0x6b, 0xe2, 0x82, 0xac}, 5, "\x6f\x6b\xe2\x82\xac", 5},
			{{0xf4, 0x90, 0x80, 0x80}, 4, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 12},
			{{0xe0, 0x80, 0xaf}, 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9},
		};

		for (int i = 0; i < (int) lengthof(cases); i++)
		{
			uint8		b[16];
			KpFindCoordinatorRequest m;
			KpError		err;

			b[0] = 0;
			b[1] = cases[i].len;
			memcpy(b + 2, cases[i].in, cases[i].len);
			if (!kp_decode(&kp_FindCoordinatorRequest_desc, 0, b, 2 + cases[i].len, &m, &err) ||
				strlen(m.key) != (size_t) cases[i].out_len ||
				memcmp(m.key, cases[i].out, cases[i].out_len) != 0)
			{
				printf("FAIL %s: UTF-8 case %d decoded wrong\n", current, i);
				ok = false;
			}
			kp_arena_reset();
		}
	}
	{
		/* FindCoordinator v0 key null: not nullable */
		uint8		b[] = {0xff, 0xff};

		ok &= expect_error(&kp_FindCoordinatorRequest_desc, 0, b, sizeof(b),
						   KP_DECODE_NULL_NOT_ALLOWED, 64);
	}
	{
		uint8		b[] = {0, 1, 'k', 9};

		ok &= expect_error(&kp_FindCoordinatorRequest_desc, 0, b, sizeof(b),
						   KP_DECODE_TRAILING_BYTES, 64);
	}
	{
		uint8		b[] = {0, 1, 'k'};

		ok &= expect_error(&kp_FindCoordinatorRequest_desc, 99, b, sizeof(b),
						   KP_DECODE_UNSUPPORTED_VERSION, 0);
	}
	report(ok, current);
}

void
test_defaults(void)
{
	bool		ok = true;
	KpMetadataRequest m;
	KpFetchRequest f;
	KpError		err;
	StringInfoData out;
	uint8		b[] = {0, 0, 0, 0};

	current = "absent fields decode to their defaults; encode drops them";
	CHECK(kp_decode(&kp_MetadataRequest_desc, 0, b, sizeof(b), &m, &err));
	CHECK(m.n_topics == 0 && m.allow_auto_topic_creation);
	CHECK(kp_decode(&kp_MetadataRequest_desc, 1, (uint8 *) "\xff\xff\xff\xff", 4, &m, &err));
	CHECK(m.n_topics == -1);
	kp_init_struct(&kp_FetchRequest_desc, &f);
	CHECK(f.replica_id == -1 && f.max_bytes == 0x7fffffff && f.session_epoch == -1 &&
		  f.cluster_id == NULL && str_is(f.rack_id, ""));
	/* a value in a field v4 lacks (session_id, v7+) is silently dropped */
	f.session_id = 42;
	initStringInfo(&out);
	kp_encode(&kp_FetchRequest_desc, 4, &f, &out);
	CHECK(out.len == 4 + 4 + 4 + 4 + 1 + 4);
	report(ok, current);
	kp_arena_reset();
}

/* Request frames (header + body) for the fuzzer's seed corpus. */
