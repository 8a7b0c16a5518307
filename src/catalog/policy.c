/*-------------------------------------------------------------------------
 *
 * policy.c
 *	  The topic policy checks that both front doors apply: a record batch's
 *	  size against max.message.bytes, record timestamps against
 *	  message.timestamp.before.max.ms / after.max.ms (KIP-937), and whether
 *	  DeleteRecords is allowed by cleanup.policy.
 *
 * The SQL API (src/sqlapi/produce.c, delete_records.c) and the listener
 * (Produce and DeleteRecords handlers) call these and nothing else decides
 * the same questions.  Each check returns 0 when the topic's policy allows
 * the operation, else the SQLSTATE of the Kafka error (class KP, whose
 * digits are Kafka's error code) and a message; with raise it reports the
 * ERROR itself, which is what the SQL functions want.  The listener maps
 * the SQLSTATE to the Kafka error code of its response.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/kafka_catalog.h"
#include "common/kafka_errors.h"

/* Report or return one violation. */
static int
violation(int sqlstate, bool raise, char **why, char *message, char *detail)
{
	if (raise)
		ereport(ERROR,
				(errcode(sqlstate),
				 errmsg_internal("%s", message),
				 detail ? errdetail_internal("%s", detail) : 0));
	if (why)
		*why = message;
	return sqlstate;
}

/*
 * A record batch of len bytes (its whole wire form) for topic t: Kafka's
 * RecordTooLargeException (MESSAGE_TOO_LARGE) above max.message.bytes.
 */
int
kp_topic_check_batch_size(const KpTopic *t, size_t len, bool raise, char **why)
{
	if ((int64) len > t->config.log.max_message_bytes)
		return violation(ERRCODE_KP_MESSAGE_TOO_LARGE, raise, why,
						 psprintf("record batch of %zu bytes is larger than max.message.bytes (%d) of topic \"%s\"",
								  len, t->config.log.max_message_bytes, t->name),
						 NULL);
	return 0;
}

/*
 * A record timestamp ts (Unix ms) at now_ms: for CreateTime topics it must
 * lie within message.timestamp.before.max.ms before and
 * message.timestamp.after.max.ms after now (KIP-937), else
 * INVALID_TIMESTAMP.  LogAppendTime topics replace the timestamp anyway.
 */
int
kp_topic_check_timestamp(const KpTopic *t, int64 ts, int64 now_ms, bool raise, char **why)
{
	if (t->config.log.log_append_time)
		return 0;
	if ((now_ms - ts) > t->config.timestamp_before_max_ms ||
		(ts - now_ms) > t->config.timestamp_after_max_ms)
		return violation(ERRCODE_KP_INVALID_TIMESTAMP, raise, why,
						 psprintf("timestamp %lld of a record for topic \"%s\" is out of the accepted range",
								  (long long) ts, t->name),
						 psprintf("message.timestamp.before.max.ms is %lld and message.timestamp.after.max.ms is %lld.",
								  (long long) t->config.timestamp_before_max_ms,
								  (long long) t->config.timestamp_after_max_ms));
	return 0;
}

/*
 * DeleteRecords on topic t: only when its cleanup.policy includes "delete"
 * (Kafka's Partition.deleteRecordsOnLeader), else POLICY_VIOLATION.  The
 * offset bounds are the store's (kp_log_delete_records).
 */
int
kp_topic_check_delete_records(const KpTopic *t, bool raise, char **why)
{
	if (!t->config.cleanup_delete)
		return violation(ERRCODE_KP_POLICY_VIOLATION, raise, why,
						 psprintf("records of topic \"%s\" cannot be deleted: its cleanup.policy does not include \"delete\"",
								  t->name),
						 NULL);
	return 0;
}
