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
 * The parts: this file (fixtures round trip and truncations, the fuzzer
 * corpus), test_fields.c (the values in each fixture), test_edges.c (hostile
 * lengths, unknown tags, headers, the version plan, rejects, defaults).
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
#include "proto_test.h"
#include "protocol/protocol.h"
#include "shim_alloc.h"
int			passed;
int			failed;
const char *current;

void
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

const KpMessageDesc *
find_desc(const char *name)
{
	for (int i = 0; i < kp_all_messages_len; i++)
		if (strcmp(kp_all_messages[i]->name, name) == 0)
			return kp_all_messages[i];
	return NULL;
}

/* The 8 high bytes of a Java fixture uuid: 0x1111111111111111 + idx. */
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
