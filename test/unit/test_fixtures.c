/*-------------------------------------------------------------------------
 *
 * test_fixtures.c
 *	  Agreement with a real client: kafka-python's batches read by the codec,
 *	  the codec's batches read by kafka-python; one batch of a million records.
 *
 * Part of the codec unit tests, run in order by test_codec.c's main().
 * Built as frontend code (see shim/postgres.h) by `make -C test/unit check`.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codec/codec.h"
#include "unit.h"

/* ---------- a real client's bytes ---------- */

static char *
read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	char	   *data;
	long		n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = palloc(n + 1);
	if (fread(data, 1, n, f) != (size_t) n)
	{
		fclose(f);
		pfree(data);
		return NULL;
	}
	fclose(f);
	*len = n;
	return data;
}

/* The records make_fixtures.py writes; keep in sync with it. */
static int
fixture_records(TestRecord *r, char *xs)
{
	memset(r, 0, sizeof(TestRecord) * 5);
	memset(xs, 'x', 1000);
	r[0] = (TestRecord)
	{
		1700000000000, "key-0", 5, "value-0", 7,
		{
			{
				"h1", 2, "v1", 2
			},
			{
				"h2", 2, "", 0
			}
		}, 2
	};
	r[1] = (TestRecord)
	{
		1700000001000, NULL, -1, "value-1", 7,
		{
			{
				0
			}
		}, 0
	};
	r[2] = (TestRecord)
	{
		1700000002000, "key-2", 5, NULL, -1,
		{
			{
				0
			}
		}, 0
	};
	r[3] = (TestRecord)
	{
		1700000003000, "", 0, "", 0,
		{
			{
				"h-null", 6, NULL, -1
			}
		}, 1
	};
	r[4] = (TestRecord)
	{
		1700000004000, "k4", 2, xs, 1000,
		{
			{
				0
			}
		}, 0
	};
	return 5;
}

void
test_fixtures(void)
{
	static const char *const names[] = {"none", "gzip", "snappy", "lz4", "zstd", "txn_gzip"};
	TestRecord	r[5];
	char		xs[1000];
	int			n = fixture_records(r, xs);

	for (int i = 0; i < (int) lengthof(names); i++)
	{
		char		path[1024];
		size_t		len;
		char	   *batch;
		KpBatchHeader hdr;
		KpCodecError err;
		const char *diff;
		KpCompression want = i < 5 ? all_codecs[i] : KP_COMPRESSION_GZIP;

		snprintf(path, sizeof(path), "%s/kpython_%s.bin", fixture_dir, names[i]);
		batch = read_file(path, &len);
		CHECK(batch != NULL, "read %s", path);
		if (batch == NULL)
			continue;
		err = kp_batch_validate(batch, len, &hdr);
		CHECK(err == KP_CODEC_OK, "kafka-python %s: validate: %s", names[i],
			  kp_codec_error_message(err));
		CHECK(KpBatchCompression(&hdr) == want && hdr.records_count == n &&
			  hdr.last_offset_delta == n - 1 && hdr.producer_id == 1234 &&
			  hdr.producer_epoch == 5 && hdr.base_sequence == 42 &&
			  hdr.base_timestamp == 1700000000000 && hdr.max_timestamp == 1700000004000 &&
			  KpBatchIsTransactional(&hdr) == (i == 5),
			  "kafka-python %s: header", names[i]);
		diff = check_batch_records(batch, len, r, n, 0);
		CHECK(diff == NULL, "kafka-python %s: records: %s", names[i], diff);
		pfree(batch);
	}
}

/* Write our batches for check_c_batches.py and let kafka-python read them. */
void
test_python_reads_ours(void)
{
	TestRecord	r[5];
	char		xs[1000];
	int			n = fixture_records(r, xs);
	char		cmd[2048];
	int			rc;

	mkdir(out_dir, 0755);
	for (int c = 0; c < NCODECS; c++)
	{
		char		path[1024];
		size_t		len;
		char	   *batch = build_batch(all_codecs[c], r, n, &len);
		FILE	   *f;

		snprintf(path, sizeof(path), "%s/c_%s.bin", out_dir,
				 kp_compression_name(all_codecs[c]));
		f = fopen(path, "wb");
		CHECK(f != NULL && fwrite(batch, 1, len, f) == len, "write %s", path);
		if (f)
			fclose(f);
		pfree(batch);
	}
	{
		size_t		len;
		char	   *batch = kp_build_control_batch(1234, 5, KP_CONTROL_COMMIT, 1700000000000, 9, &len);
		FILE	   *f;

		snprintf(cmd, sizeof(cmd), "%s/c_control_commit.bin", out_dir);
		f = fopen(cmd, "wb");
		CHECK(f != NULL && fwrite(batch, 1, len, f) == len, "write control batch");
		if (f)
			fclose(f);
		pfree(batch);
	}

	snprintf(cmd, sizeof(cmd), "%s check_c_batches.py %s", python, out_dir);
	fflush(stdout);
	rc = system(cmd);
	CHECK(rc == 0, "kafka-python decodes our batches (%s exited %d)", cmd, rc);
}

/* ---------- one batch of a million records ---------- */

/*
 * A batch of a million small records builds, validates and iterates to the
 * last record.  (How fast is a benchmark's question, not a test's.)
 */
void
test_large_batch(void)
{
	const int	nrec = 1000000;
	KpBatchBuilder b;
	char		value[64];
	size_t		len;
	char	   *batch;
	KpBatchHeader hdr;
	KpRecordIter it;
	KpRecord	rec;
	bool		done = false;
	int			count = 0;
	bool		in_order = true;

	memset(value, 'v', sizeof(value));
	kp_batch_builder_init(&b, KP_COMPRESSION_NONE, -1, -1, -1, false);
	for (int i = 0; i < nrec; i++)
		kp_batch_builder_add(&b, 1700000000000 + i, (char *) &i, 4, value, 40, NULL, 0);
	batch = kp_batch_builder_finish(&b, &len);

	CHECK(kp_batch_validate(batch, len, &hdr) == KP_CODEC_OK, "1M-record batch validates");
	if (kp_record_iter_begin(&it, batch, len, 0) == KP_CODEC_OK)
	{
		while (kp_record_iter_next(&it, &rec, &done) == KP_CODEC_OK && !done)
		{
			int32		k;

			if (rec.key_len != 4 || rec.offset != count)
				in_order = false;
			else
			{
				memcpy(&k, rec.key, 4);
				if (k != count || rec.timestamp != 1700000000000 + count)
					in_order = false;
			}
			count++;
		}
		kp_record_iter_end(&it);
	}
	CHECK(count == nrec && in_order, "1M records iterate in order with their keys and timestamps (%d)", count);
	pfree(batch);
}
