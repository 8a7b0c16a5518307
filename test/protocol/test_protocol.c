/*-------------------------------------------------------------------------
 *
 * test_protocol.c
 *	  Specification tests of the Kafka protocol codec (src/protocol/).
 *
 * The strongest check: fixtures/NAME.vN.bin are bytes written by Kafka's own
 * Java message classes (golden/, kafka-clients 4.4).  Each must decode, show
 * the values the Java generator put in (its rule is in golden/Golden.java:
 * int32 3200+idx, string "<field>-<idx>", ...), and re-encode byte for byte.
 * Then: every truncation of every fixture fails cleanly; hostile lengths fail
 * without allocating; unknown tagged fields are skipped; headers; the
 * version plan that librdkafka needs.
 *
 *   make -C test/protocol check
 *   ./test_protocol --write-corpus DIR    request frames for the fuzzer seed
 *
 * The last line printed is "N passed, M failed".
 *
 * test/protocol/test_protocol.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/protocol.h"
#include "shim_alloc.h"

static int	passed;
static int	failed;
static const char *current;		/* what is being tested, for messages */

#define CHECK(cond) \
	do { \
		if (!(cond)) \
		{ \
			printf("FAIL %s: %s (line %d)\n", current, #cond, __LINE__); \
			ok = false; \
		} \
	} while (0)

static void
report(bool ok, const char *what)
{
	if (ok)
		passed++;
	else
	{
		failed++;
		printf("failed: %s\n", what);
	}
}

static const KpMessageDesc *
find_desc(const char *name)
{
	for (int i = 0; i < kp_all_messages_len; i++)
		if (strcmp(kp_all_messages[i]->name, name) == 0)
			return kp_all_messages[i];
	return NULL;
}

/* The 8 high bytes of a Java fixture uuid: 0x1111111111111111 + idx. */
static bool
uuid_is(const KpUuid *u, int idx)
{
	uint64		hi = 0,
				lo = 0;

	for (int i = 0; i < 8; i++)
	{
		hi = (hi << 8) | u->b[i];
		lo = (lo << 8) | u->b[8 + i];
	}
	return hi == UINT64CONST(0x1111111111111111) + idx &&
		lo == UINT64CONST(0x2222222222222222);
}

static bool
str_is(const char *s, const char *expect)
{
	return s != NULL && strcmp(s, expect) == 0;
}

/* The Java generator's records blob: 10 bytes 0xC0.. */
static bool
records_ok(const KpBytes *b)
{
	return b->len == 10 && b->data[0] == 0xC0 && b->data[9] == 0xC9;
}

/*
 * Field checks per message: values the Java generator set, at the versions
 * that carry them; absent fields must hold their JSON defaults.
 */
static bool
check_fields(const char *name, int v, const void *msg)
{
	bool		ok = true;

	if (strcmp(name, "ApiVersionsRequest") == 0)
	{
		const KpApiVersionsRequest *m = msg;

		if (v >= 3)
			CHECK(str_is(m->client_software_name, "clientSoftwareName-0"));
		else
			CHECK(str_is(m->client_software_name, ""));
	}
	else if (strcmp(name, "ApiVersionsResponse") == 0)
	{
		const KpApiVersionsResponse *m = msg;

		CHECK(m->error_code == 16);
		CHECK(m->n_api_keys == 2 && m->api_keys[1].api_key == 17 &&
			  m->api_keys[1].min_version == 17 && m->api_keys[1].max_version == 17);
		CHECK(m->throttle_time_ms == (v >= 1 ? 3200 : 0));
		if (v >= 3)
			CHECK(m->n_supported_features == 2 &&
				  str_is(m->supported_features[1].name, "name-1") &&
				  m->finalized_features_epoch == 6400000000);
		else
			CHECK(m->n_supported_features == 0 && m->finalized_features_epoch == -1);
	}
	else if (strcmp(name, "MetadataRequest") == 0)
	{
		const KpMetadataRequest *m = msg;

		CHECK(m->n_topics == 2 && str_is(m->topics[1].name, "name-1"));
		CHECK(m->allow_auto_topic_creation);	/* Java's value, or default true */
		if (v >= 10)
			CHECK(uuid_is(&m->topics[1].topic_id, 1));
		CHECK(m->include_topic_authorized_operations == (v >= 8));
	}
	else if (strcmp(name, "MetadataResponse") == 0)
	{
		const KpMetadataResponse *m = msg;

		CHECK(m->n_brokers == 2 && m->brokers[1].node_id == 3201 &&
			  str_is(m->brokers[1].host, "host-1") && m->brokers[1].port == 3201);
		CHECK(m->brokers[0].rack == NULL);	/* left null by the generator */
		CHECK(m->controller_id == (v >= 1 ? 3200 : -1));
		CHECK(m->n_topics == 2 && m->topics[0].n_partitions == 2);
		CHECK(m->topics[0].partitions[1].n_replica_nodes == 3 &&
			  m->topics[0].partitions[1].replica_nodes[2] == 3202);
		CHECK(m->topics[1].partitions[0].leader_epoch == (v >= 7 ? 3200 : -1));
		if (v >= 2)
			CHECK(str_is(m->cluster_id, "clusterId-0"));
	}
	else if (strcmp(name, "ProduceRequest") == 0)
	{
		const KpProduceRequest *m = msg;

		CHECK(m->transactional_id == NULL);
		CHECK(m->acks == 16 && m->timeout_ms == 3200);
		CHECK(m->n_topic_data == 2 && m->topic_data[1].n_partition_data == 2);
		CHECK(m->topic_data[1].partition_data[1].index == 3201);
		CHECK(records_ok(&m->topic_data[1].partition_data[1].records));
		if (v >= 13)
			CHECK(uuid_is(&m->topic_data[1].topic_id, 1) && m->topic_data[1].name[0] == '\0');
		else
			CHECK(str_is(m->topic_data[1].name, "name-1"));
	}
	else if (strcmp(name, "ProduceResponse") == 0)
	{
		const KpProduceResponse *m = msg;
		const KpProduceResponsePartitionProduceResponse *p;

		CHECK(m->n_responses == 2 && m->responses[0].n_partition_responses == 2);
		p = &m->responses[0].partition_responses[1];
		CHECK(p->index == 3201 && p->error_code == 17 && p->base_offset == 6400000001);
		CHECK(p->log_start_offset == (v >= 5 ? 6400000001 : -1));
		if (v >= 8)
			CHECK(p->n_record_errors == 2 && p->record_errors[1].batch_index == 3201);
		if (v >= 10)
			CHECK(p->current_leader.leader_id == 3201 && m->n_node_endpoints == 2);
		else
			CHECK(p->current_leader.leader_id == -1 && m->n_node_endpoints == 0);
	}
	else if (strcmp(name, "FetchRequest") == 0)
	{
		const KpFetchRequest *m = msg;

		CHECK(m->max_wait_ms == 3200 && m->isolation_level == 7);
		CHECK(m->n_topics == 2 && m->topics[1].n_partitions == 2);
		CHECK(m->topics[1].partitions[0].fetch_offset == 6400000000);
		if (v >= 13)
			CHECK(uuid_is(&m->topics[1].topic_id, 1));
		else
			CHECK(str_is(m->topics[1].topic, "topic-1"));
		if (v >= 12)
			CHECK(str_is(m->cluster_id, "clusterId-0"));
		else
			CHECK(m->cluster_id == NULL);
		if (v >= 15)
			CHECK(m->replica_state.replica_epoch == 6400000000 && m->replica_id == -1);
		else
			CHECK(m->replica_id == 3200);
	}
	else if (strcmp(name, "FetchResponse") == 0)
	{
		const KpFetchResponse *m = msg;
		const KpFetchResponsePartitionData *p;

		CHECK(m->n_responses == 2 && m->responses[0].n_partitions == 2);
		p = &m->responses[0].partitions[1];
		CHECK(p->partition_index == 3201 && p->high_watermark == 6400000001);
		CHECK(records_ok(&p->records));
		CHECK(p->n_aborted_transactions == 2 &&
			  p->aborted_transactions[1].producer_id == 6400000001);
		if (v >= 12)
			CHECK(p->diverging_epoch.epoch == 3201);
		else
			CHECK(p->diverging_epoch.epoch == -1);
		CHECK(m->n_node_endpoints == 0);	/* left empty: absent tag */
	}
	else if (strcmp(name, "ListOffsetsRequest") == 0)
	{
		const KpListOffsetsRequest *m = msg;

		CHECK(m->replica_id == 3200);
		CHECK(m->isolation_level == (v >= 2 ? 7 : 0));
		CHECK(m->n_topics == 2 && str_is(m->topics[1].name, "name-1") &&
			  m->topics[1].partitions[0].timestamp == 6400000000);
	}
	else if (strcmp(name, "ListOffsetsResponse") == 0)
	{
		const KpListOffsetsResponse *m = msg;

		CHECK(m->n_topics == 2 && m->topics[0].partitions[1].offset == 6400000001);
		CHECK(m->topics[0].partitions[1].leader_epoch == (v >= 4 ? 3201 : -1));
	}
	else if (strcmp(name, "CreateTopicsRequest") == 0)
	{
		const KpCreateTopicsRequest *m = msg;

		CHECK(m->n_topics == 2 && str_is(m->topics[1].name, "name-1") &&
			  m->topics[1].num_partitions == 3201 &&
			  m->topics[1].n_configs == 2 &&
			  str_is(m->topics[1].configs[1].value, "value-1"));
		CHECK(m->timeout_ms == 3200 && m->validate_only);
	}
	else if (strcmp(name, "CreateTopicsResponse") == 0)
	{
		const KpCreateTopicsResponse *m = msg;

		CHECK(m->n_topics == 2 && m->topics[1].error_code == 17);
		if (v >= 5)
			CHECK(m->topics[1].num_partitions == 3201 &&
				  m->topics[1].topic_config_error_code == 17);
		else
			CHECK(m->topics[1].num_partitions == -1);
	}
	else if (strcmp(name, "FindCoordinatorRequest") == 0)
	{
		const KpFindCoordinatorRequest *m = msg;

		if (v < 4)
			CHECK(str_is(m->key, "key-0"));
		else
			CHECK(m->n_coordinator_keys == 3 &&
				  str_is(m->coordinator_keys[2], "coordinatorKeys-2"));
		CHECK(m->key_type == (v >= 1 ? 7 : 0));
	}
	else if (strcmp(name, "FindCoordinatorResponse") == 0)
	{
		const KpFindCoordinatorResponse *m = msg;

		if (v < 4)
			CHECK(m->node_id == 3200 && str_is(m->host, "host-0") && m->port == 3200);
		else
			/* node_id/host/port were reset by name in the whole tree
			 * (the generator's reset rule, see Golden.java) */
			CHECK(m->n_coordinators == 2 && m->coordinators[1].port == 0 &&
				  str_is(m->coordinators[1].key, "key-1") &&
				  str_is(m->coordinators[1].error_message, "errorMessage-1"));
	}
	else if (strcmp(name, "JoinGroupRequest") == 0)
	{
		const KpJoinGroupRequest *m = msg;

		CHECK(str_is(m->group_id, "groupId-0") && m->session_timeout_ms == 3200);
		CHECK(m->rebalance_timeout_ms == (v >= 1 ? 3200 : -1));
		CHECK(m->group_instance_id == NULL);
		CHECK(m->n_protocols == 2 && str_is(m->protocols[1].name, "name-1") &&
			  m->protocols[1].metadata.len == 4 && m->protocols[1].metadata.data[3] == 1);
	}
	else if (strcmp(name, "JoinGroupResponse") == 0)
	{
		const KpJoinGroupResponse *m = msg;

		CHECK(m->generation_id == 3200 && str_is(m->leader, "leader-0"));
		CHECK(m->n_members == 2 && str_is(m->members[1].member_id, "memberId-1"));
		if (v >= 7)
			CHECK(str_is(m->protocol_type, "protocolType-0"));
		else
			CHECK(m->protocol_type == NULL);
	}
	else if (strcmp(name, "SyncGroupRequest") == 0)
	{
		const KpSyncGroupRequest *m = msg;

		CHECK(m->generation_id == 3200 && m->n_assignments == 2 &&
			  m->assignments[1].assignment.data[3] == 1);
	}
	else if (strcmp(name, "SyncGroupResponse") == 0)
	{
		const KpSyncGroupResponse *m = msg;

		CHECK(m->error_code == 16 && m->assignment.len == 4);
	}
	else if (strcmp(name, "OffsetCommitRequest") == 0)
	{
		const KpOffsetCommitRequest *m = msg;

		CHECK(str_is(m->group_id, "groupId-0"));
		CHECK(m->retention_time_ms == (v <= 4 ? 6400000000 : -1));
		CHECK(m->n_topics == 2 && m->topics[0].partitions[1].committed_offset == 6400000001);
		CHECK(m->topics[0].partitions[1].committed_leader_epoch == (v >= 6 ? 3201 : -1));
	}
	else if (strcmp(name, "OffsetCommitResponse") == 0)
	{
		const KpOffsetCommitResponse *m = msg;

		CHECK(m->n_topics == 2 && m->topics[1].partitions[1].error_code == 17);
	}
	else if (strcmp(name, "OffsetFetchRequest") == 0)
	{
		const KpOffsetFetchRequest *m = msg;

		if (v < 8)
			CHECK(str_is(m->group_id, "groupId-0") && m->n_topics == 2 &&
				  m->topics[1].partition_indexes[2] == 3202);
		else
			/* group_id reset by name (top-level GroupId is v0-7) */
			CHECK(m->n_groups == 2 && m->groups[1].n_topics == 0 &&	/* left at default */
				  (v < 9 || str_is(m->groups[1].member_id, "memberId-1")));
		CHECK(m->require_stable == (v >= 7));
	}
	else if (strcmp(name, "OffsetFetchResponse") == 0)
	{
		const KpOffsetFetchResponse *m = msg;

		if (v < 8)
			CHECK(m->n_topics == 2 && m->topics[1].partitions[0].committed_offset == 6400000000);
		else
			CHECK(m->n_groups == 2 && m->groups[1].error_code == 17);
	}
	else if (strcmp(name, "InitProducerIdRequest") == 0)
	{
		const KpInitProducerIdRequest *m = msg;

		CHECK(str_is(m->transactional_id, "transactionalId-0") &&
			  m->transaction_timeout_ms == 3200);
		CHECK(m->producer_id == (v >= 3 ? 6400000000 : -1));
	}
	else if (strcmp(name, "InitProducerIdResponse") == 0)
	{
		const KpInitProducerIdResponse *m = msg;

		CHECK(m->producer_id == 6400000000 && m->producer_epoch == 16);
	}
	else if (strcmp(name, "ConsumerGroupHeartbeatRequest") == 0)
	{
		const KpConsumerGroupHeartbeatRequest *m = msg;

		CHECK(str_is(m->group_id, "groupId-0") && m->member_epoch == 3200);
		CHECK(m->rack_id == NULL);
		CHECK(m->n_subscribed_topic_names == 3 &&
			  str_is(m->subscribed_topic_names[2], "subscribedTopicNames-2"));
		CHECK(m->n_topic_partitions == 2 && m->topic_partitions[1].partitions[2] == 3202);
	}
	else if (strcmp(name, "ConsumerGroupHeartbeatResponse") == 0)
	{
		const KpConsumerGroupHeartbeatResponse *m = msg;

		CHECK(m->heartbeat_interval_ms == 3200);
		CHECK(m->assignment != NULL && m->assignment->n_topic_partitions == 2);
	}
	else if (strcmp(name, "ConsumerProtocolSubscription") == 0)
	{
		const KpConsumerProtocolSubscription *m = msg;

		CHECK(m->n_topics == 3 && str_is(m->topics[0], "topics-0"));
		CHECK(m->user_data.len == 4);
		CHECK(m->generation_id == (v >= 2 ? 3200 : -1));
	}
	return ok;
}

/* Print a decoded struct (KP_DUMP=1 ./test_protocol), for debugging. */
static void
dump_struct(const KpStructDesc *sd, const char *base, int version, int depth)
{
	for (int i = 0; i < sd->nfields; i++)
	{
		const KpFieldDesc *f = &sd->fields[i];
		const char *p = base + f->offset;
		int			n = 1;

		if (!((f->versions >> version) & 1))
			continue;
		printf("%*s%s", depth * 2, "", f->name);
		if (f->flags & KP_F_ARRAY)
		{
			n = *(const int32 *) (base + f->count_offset);
			printf("[%d]", n);
			p = *(const char *const *) p;
		}
		printf(":");
		for (int e = 0; e < n; e++)
		{
			size_t		es = f->type == KP_T_STRUCT ? f->struct_desc->size :
				f->type == KP_T_STRING ? sizeof(char *) : f->type == KP_T_INT64 ? 8 :
				f->type == KP_T_INT32 ? 4 : f->type == KP_T_INT16 ? 2 :
				f->type == KP_T_UUID ? 16 : f->type == KP_T_BYTES ||
				f->type == KP_T_RECORDS ? sizeof(KpBytes) : 1;
			const char *q = (f->flags & KP_F_ARRAY) ? p + es * e : p;

			switch (f->type)
			{
				case KP_T_INT8: printf(" %d", *(const int8 *) q); break;
				case KP_T_BOOL: printf(" %d", *(const bool *) q); break;
				case KP_T_INT16: printf(" %d", *(const int16 *) q); break;
				case KP_T_INT32: printf(" %d", *(const int32 *) q); break;
				case KP_T_INT64: printf(" %lld", (long long) *(const int64 *) q); break;
				case KP_T_STRING: printf(" \"%s\"", *(const char *const *) q ? *(const char *const *) q : "(null)"); break;
				case KP_T_BYTES:
				case KP_T_RECORDS: printf(" bytes(%d)", ((const KpBytes *) q)->len); break;
				case KP_T_UUID: printf(" uuid(%02x..)", ((const KpUuid *) q)->b[7]); break;
				case KP_T_STRUCT:
					printf("\n");
					if (f->flags & KP_F_POINTER)
						q = *(const char *const *) q;
					if (q)
						dump_struct(f->struct_desc, q, version, depth + 1);
					break;
				default: printf(" ?"); break;
			}
		}
		printf("\n");
	}
}

/* ------------------------------------------------------------------------
 * Golden fixtures
 */

typedef struct Fixture
{
	char		name[96];		/* message name */
	int			version;
	uint8	   *data;
	size_t		len;
} Fixture;

static Fixture fixtures[512];
static int	nfixtures;

static int
cmp_fixture(const void *a, const void *b)
{
	const Fixture *x = a,
			   *y = b;
	int			c = strcmp(x->name, y->name);

	return c ? c : x->version - y->version;
}

static void
load_fixtures(const char *dir)
{
	DIR		   *d = opendir(dir);
	struct dirent *e;

	if (d == NULL)
	{
		printf("cannot open %s\n", dir);
		exit(2);
	}
	while ((e = readdir(d)) != NULL && nfixtures < (int) lengthof(fixtures))
	{
		Fixture    *f = &fixtures[nfixtures];
		char		path[1024];
		const char *dot = strstr(e->d_name, ".v");
		FILE	   *fp;
		long		n;

		if (dot == NULL || strstr(e->d_name, ".bin") == NULL)
			continue;
		snprintf(f->name, sizeof(f->name), "%.*s", (int) (dot - e->d_name), e->d_name);
		f->version = atoi(dot + 2);
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		fp = fopen(path, "rb");
		fseek(fp, 0, SEEK_END);
		n = ftell(fp);
		fseek(fp, 0, SEEK_SET);
		f->data = malloc(n > 0 ? n : 1);
		f->len = fread(f->data, 1, n, fp);
		fclose(fp);
		nfixtures++;
	}
	closedir(d);
	qsort(fixtures, nfixtures, sizeof(Fixture), cmp_fixture);
}

/* Decode, check fields, re-encode byte for byte. */
static void
test_fixture_roundtrip(const Fixture *f)
{
	const KpMessageDesc *desc = find_desc(f->name);
	char		what[160];
	bool		ok = true;
	void	   *msg;
	KpError		err;
	StringInfoData out;

	snprintf(what, sizeof(what), "%s v%d golden round trip", f->name, f->version);
	current = what;
	if (desc == NULL)
	{
		printf("FAIL %s: no descriptor\n", what);
		report(false, what);
		return;
	}
	msg = palloc(desc->root->size);
	if (!kp_decode(desc, f->version, f->data, f->len, msg, &err))
	{
		printf("FAIL %s: decode: %s\n", what, err.message);
		report(false, what);
		kp_arena_reset();
		return;
	}
	if (getenv("KP_DUMP"))
		dump_struct(desc->root, msg, f->version, 0);
	ok = check_fields(f->name, f->version, msg);
	initStringInfo(&out);
	kp_encode(desc, f->version, msg, &out);
	if ((size_t) out.len != f->len || memcmp(out.data, f->data, f->len) != 0)
	{
		size_t		i = 0;

		while (i < f->len && i < (size_t) out.len && (uint8) out.data[i] == f->data[i])
			i++;
		printf("FAIL %s: re-encoding differs (%d bytes vs %zu, first difference at %zu)\n",
			   what, out.len, f->len, i);
		ok = false;
	}
	report(ok, what);
	kp_arena_reset();
}

/* Every strict prefix of a fixture must fail with a clean error. */
static void
test_fixture_truncations(const Fixture *f)
{
	const KpMessageDesc *desc = find_desc(f->name);
	char		what[160];
	bool		ok = true;
	void	   *msg;

	snprintf(what, sizeof(what), "%s v%d every truncation fails", f->name, f->version);
	current = what;
	if (desc == NULL)
	{
		report(false, what);
		return;
	}
	msg = malloc(desc->root->size);
	for (size_t n = 0; n < f->len && ok; n++)
	{
		KpError		err;
		/* a copy of exactly n bytes, so ASan catches any read past the end */
		uint8	   *copy = malloc(n ? n : 1);

		memcpy(copy, f->data, n);
		if (kp_decode(desc, f->version, copy, n, msg, &err))
		{
			printf("FAIL %s: %zu-byte prefix decoded\n", what, n);
			ok = false;
		}
		else if (err.code != KP_DECODE_TRUNCATED && err.code != KP_DECODE_BAD_LENGTH)
		{
			printf("FAIL %s: %zu-byte prefix: unexpected error %d: %s\n",
				   what, n, err.code, err.message);
			ok = false;
		}
		free(copy);
		kp_arena_reset();
	}
	free(msg);
	report(ok, what);
}

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

static void
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
		/* Fetch v4: 1 topic, then a partitions array of 10^6 elements of 28 bytes */
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

static void
test_unknown_tags_skipped(void)
{
	bool		ok = true;
	KpMetadataRequest m;
	KpError		err;
	StringInfoData out;

	current = "unknown tagged fields are skipped";
	/*
	 * MetadataRequest v12: topics [ {topic_id 0*16, name "t", tags {99: 3
	 * bytes}} ], allow_auto 1, include_topic_ops 0, tags {7: 0 bytes, 200:
	 * 2 bytes}.  Tag 200 needs a 2-byte varint (0xc8 0x01).
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

static void
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

static void
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
static void
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

static void
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

static void
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
static int
write_corpus(const char *dir)
{
	int			n = 0;

	for (int i = 0; i < nfixtures; i++)
	{
		const KpMessageDesc *desc = find_desc(fixtures[i].name);
		KpRequestHeader h;
		StringInfoData out;
		char		path[1024];
		FILE	   *fp;

		if (desc == NULL || desc->api_key < 0 ||
			strstr(fixtures[i].name, "Request") == NULL)
			continue;
		kp_init_struct(&kp_RequestHeader_desc, &h);
		h.request_api_key = desc->api_key;
		h.request_api_version = fixtures[i].version;
		h.correlation_id = 1000 + i;
		h.client_id = "kafka_pg-seed";
		initStringInfo(&out);
		kp_encode_request_header(&h, &out);
		appendBinaryStringInfo(&out, (const char *) fixtures[i].data, fixtures[i].len);
		snprintf(path, sizeof(path), "%s/%s.v%d", dir, fixtures[i].name, fixtures[i].version);
		fp = fopen(path, "wb");
		if (fp == NULL)
		{
			perror(path);
			return 1;
		}
		fwrite(out.data, 1, out.len, fp);
		fclose(fp);
		n++;
		kp_arena_reset();
	}
	/* hand-made frames: Produce v0 (MessageSet era), a too-new ApiVersions */
	{
		static const uint8 produce_v0[] = {0, 0, 0, 0, 0, 0, 0, 5, 0, 1, 'c',
			0, 1, 0, 0, 0x03, 0xe8, 0, 0, 0, 1, 0, 1, 't',
			0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4, 'a', 'b', 'c', 'd'};
		static const uint8 api_versions_v99[] = {0, 18, 0, 99, 0, 0, 0, 1, 0, 0, 0,
			2, 'x', 2, '1', 0};
		const struct
		{
			const char *name;
			const uint8 *data;
			size_t		len;
		}			extra[] = {
			{"ProduceRequest.v0", produce_v0, sizeof(produce_v0)},
			{"ApiVersionsRequest.v99", api_versions_v99, sizeof(api_versions_v99)},
		};

		for (int i = 0; i < (int) lengthof(extra); i++)
		{
			char		path[1024];
			FILE	   *fp;

			snprintf(path, sizeof(path), "%s/%s", dir, extra[i].name);
			fp = fopen(path, "wb");
			if (fp == NULL)
			{
				perror(path);
				return 1;
			}
			fwrite(extra[i].data, 1, extra[i].len, fp);
			fclose(fp);
			n++;
		}
	}
	printf("wrote %d request frames to %s\n", n, dir);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *dir = getenv("FIXTURES") ? getenv("FIXTURES") : "fixtures";

	setvbuf(stdout, NULL, _IOLBF, 0);
	load_fixtures(dir);
	if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0)
		return write_corpus(argv[2]);

	for (int i = 0; i < nfixtures; i++)
		test_fixture_roundtrip(&fixtures[i]);
	for (int i = 0; i < nfixtures; i++)
		test_fixture_truncations(&fixtures[i]);
	if (nfixtures < 100)
	{
		printf("FAIL: only %d fixtures found in %s\n", nfixtures, dir);
		failed++;
	}
	test_huge_lengths();
	test_unknown_tags_skipped();
	test_headers();
	test_version_plan();
	test_produce_v0();
	test_rejects();
	test_defaults();

	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
