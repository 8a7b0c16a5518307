/*-------------------------------------------------------------------------
 *
 * subxact.h
 *	  Run a function in an internal subtransaction, catching its ERROR.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_SUBXACT_H
#define KP_SUBXACT_H

#include "utils/elog.h"

/*
 * Run fn(arg) in an internal subtransaction.  NULL if it returned (the
 * subtransaction committed); if it raised an ERROR, the subtransaction is
 * rolled back and the error is returned, copied into the caller's memory
 * context, for the caller to map, log or raise again (ReThrowError).  The
 * caller's memory context and resource owner are current again either way.
 */
extern ErrorData *kp_try_subxact(void (*fn) (void *arg), void *arg);

#endif							/* KP_SUBXACT_H */
