/*-------------------------------------------------------------------------
 *
 * check.h
 *	  The unit tests' CHECK macro and counters: every test program here
 *	  defines n_passed and n_failed and prints "N passed, M failed" last.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_TEST_CHECK_H
#define KP_TEST_CHECK_H

#include <stdio.h>

extern int	n_passed;
extern int	n_failed;

#define CHECK(cond, ...) \
	do { \
		if (cond) \
			n_passed++; \
		else \
		{ \
			n_failed++; \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__); \
			printf("\n"); \
		} \
	} while (0)

#endif							/* KP_TEST_CHECK_H */
