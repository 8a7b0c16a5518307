/*-------------------------------------------------------------------------
 *
 * proto_test.h
 *	  What the protocol codec test files share: the counters, the CHECK
 *	  macro, and the parts main() runs (test_protocol.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_PROTO_TEST_H
#define KP_PROTO_TEST_H

#include "protocol/protocol.h"

extern int	passed;
extern int	failed;
extern const char *current;		/* what is being tested, for messages */

#define CHECK(cond) \
	do { \
		if (!(cond)) \
		{ \
			printf("FAIL %s: %s (line %d)\n", current, #cond, __LINE__); \
			ok = false; \
		} \
	} while (0)

extern void report(bool ok, const char *what);
extern const KpMessageDesc *find_desc(const char *name);

/* test_fields.c: the values Golden.java put into each fixture */
extern bool str_is(const char *s, const char *expect);
extern bool check_fields(const char *name, int v, const void *msg);
extern void dump_struct(const KpStructDesc *sd, const char *base, int version, int depth);

/* test_edges.c: hand-made cases */
extern void test_huge_lengths(void);
extern void test_unknown_tags_skipped(void);
extern void test_headers(void);
extern void test_version_plan(void);
extern void test_produce_v0(void);
extern void test_rejects(void);
extern void test_defaults(void);

#endif							/* KP_PROTO_TEST_H */
