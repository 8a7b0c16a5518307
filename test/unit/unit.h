/*-------------------------------------------------------------------------
 *
 * unit.h
 *	  What the codec unit test files share: the CHECK macros and counters,
 *	  the codec list, fixture paths and the round-trip record set.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_TEST_UNIT_H
#define KP_TEST_UNIT_H

#include "codec/codec.h"
#include "check.h"


/* CHECK for loops: count one test, report the first failure only */
#define LOOP_FAIL(flag, ...) \
	do { \
		if (!(flag)) \
		{ \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__); \
			printf("\n"); \
		} \
		(flag) = true; \
	} while (0)

#define NCODECS 5
extern const KpCompression all_codecs[NCODECS];

extern const char *fixture_dir;
extern const char *out_dir;
extern const char *python;

/* a record set used in round trips (test_records.c) */
typedef struct TestRecord
{
	int64		timestamp;
	const char *key;
	int			key_len;
	const char *value;
	int			value_len;
	KpHeader	headers[3];
	int			nheaders;
} TestRecord;

extern char *big_value;			/* 1 MiB */
#define BIG_VALUE_LEN (1024 * 1024)

extern int	make_records(TestRecord *r);
extern bool bytes_eq(const char *a, int alen, const char *b, int blen);
extern char *build_batch(KpCompression codec, const TestRecord *r, int n, size_t *len);
extern const char *check_batch_records(const char *batch, size_t len,
									   const TestRecord *want, int n,
									   int64 base_offset);

extern void test_varints(void);
extern void test_murmur2(void);
extern void test_crc32c(void);
extern void test_round_trips(void);
extern void test_record_size_limit(void);
extern void test_control_batches(void);
extern void test_batch_filter(void);
extern void test_corruption(void);
extern void test_malformed_records(void);
extern void test_decompression(void);
extern void test_fixtures(void);
extern void test_python_reads_ours(void);
extern void test_large_batch(void);

#endif							/* KP_TEST_UNIT_H */
