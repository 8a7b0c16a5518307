/*-------------------------------------------------------------------------
 *
 * sqlapi.h
 *	  Helpers shared by the SQL front door's files (src/sqlapi only).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_SQLAPI_H
#define KP_SQLAPI_H

#include "fmgr.h"
#include "datatype/timestamp.h"

/* A text argument as a C string; ERROR naming the argument if it is null. */
extern char *kp_arg_text(FunctionCallInfo fcinfo, int argno, const char *argname);

/* Kafka timestamps (ms since the Unix epoch) <-> timestamptz */
#define KP_UNIX_EPOCH_OFFSET_MS \
	(((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)) * SECS_PER_DAY * 1000)
#define KpMsToTimestampTz(ms)	((TimestampTz) (((ms) - KP_UNIX_EPOCH_OFFSET_MS) * 1000))
#define KpTimestampTzToMs(ts)	((int64) ((ts) / 1000) + KP_UNIX_EPOCH_OFFSET_MS)

#endif							/* KP_SQLAPI_H */
