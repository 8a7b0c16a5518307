/*-------------------------------------------------------------------------
 *
 * kafka_errors.h
 *	  SQLSTATEs for Kafka errors raised from SQL.
 *
 * Kafka-domain errors use class "KP" with Kafka's own error code as the
 * three digits, so KP003 is UNKNOWN_TOPIC_OR_PARTITION (code 3) and a user
 * who knows one knows the other.  docs/sql-api.md has the table.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_COMMON_ERRORS_H
#define KP_COMMON_ERRORS_H

#include "utils/elog.h"

#define ERRCODE_KP_OFFSET_OUT_OF_RANGE		MAKE_SQLSTATE('K','P','0','0','1')
#define ERRCODE_KP_CORRUPT_MESSAGE			MAKE_SQLSTATE('K','P','0','0','2')
#define ERRCODE_KP_UNKNOWN_TOPIC_OR_PARTITION MAKE_SQLSTATE('K','P','0','0','3')
#define ERRCODE_KP_MESSAGE_TOO_LARGE		MAKE_SQLSTATE('K','P','0','1','0')
#define ERRCODE_KP_INVALID_TOPIC			MAKE_SQLSTATE('K','P','0','1','7')
#define ERRCODE_KP_INVALID_TIMESTAMP		MAKE_SQLSTATE('K','P','0','3','2')
#define ERRCODE_KP_TOPIC_ALREADY_EXISTS		MAKE_SQLSTATE('K','P','0','3','6')
#define ERRCODE_KP_INVALID_PARTITIONS		MAKE_SQLSTATE('K','P','0','3','7')
#define ERRCODE_KP_UNKNOWN_MEMBER_ID		MAKE_SQLSTATE('K','P','0','2','5')
#define ERRCODE_KP_INVALID_CONFIG			MAKE_SQLSTATE('K','P','0','4','0')
#define ERRCODE_KP_INVALID_REQUEST			MAKE_SQLSTATE('K','P','0','4','2')
#define ERRCODE_KP_POLICY_VIOLATION			MAKE_SQLSTATE('K','P','0','4','4')
#define ERRCODE_KP_INVALID_RECORD			MAKE_SQLSTATE('K','P','0','8','7')

#endif							/* KP_COMMON_ERRORS_H */
