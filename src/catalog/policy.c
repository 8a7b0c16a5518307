/*-------------------------------------------------------------------------
 *
 * policy.c
 *	  The topic policy checks that both front doors apply: a record batch's
 *	  size against max.message.bytes, record timestamps against
 *	  message.timestamp.before.max.ms / after.max.ms (KIP-937), whether
 *	  DeleteRecords is allowed by cleanup.policy, and keyless records on
 *	  compacted topics.
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

/*
 * A record with or without a key for topic t: a compacted topic
 * (cleanup.policy includes "compact") refuses records without one, as
 * Kafka's LogValidator.validateKey does (INVALID_RECORD): compaction keeps
 * the latest record per key, and a keyless record has none.
 */
int
kp_topic_check_record_key(const KpTopic *t, bool has_key, bool raise, char **why)
{
	if (!has_key && t->config.cleanup_compact)
		return violation(ERRCODE_KP_INVALID_RECORD, raise, why,
						 psprintf("compacted topic \"%s\" cannot accept a record without a key",
								  t->name),
						 pstrdup("Its cleanup.policy includes \"compact\", which keeps the latest record of each key."));
	return 0;
}

/*
 * Every record of a validated batch (len bytes, inflated up to
 * max_uncompressed) for topic t, by kp_topic_check_record_key.  Returns 0,
 * or ERRCODE_KP_INVALID_RECORD with the index in the batch of each refused
 * record in *bad (palloc'd, *nbad of them; Produce's record_errors at v8+)
 * and *why set to the message of the first.
 */
int
kp_topic_check_batch_keys(const KpTopic *t, const char *batch, size_t len,
						  size_t max_uncompressed, int **bad, int *nbad, char **why)
{
	KpRecordIter it;
	KpRecord	rec;
	bool		done = false;
	int			index = 0;
	int			sqlstate = 0;

	*bad = NULL;
	*nbad = 0;
	if (!t->config.cleanup_compact)
		return 0;
	if (kp_record_iter_begin(&it, batch, len, max_uncompressed) != KP_CODEC_OK)
		return 0;				/* not decodable: the batch checks report it */
	while (kp_record_iter_next(&it, &rec, &done) == KP_CODEC_OK && !done)
	{
		char	   *msg;

		if (kp_topic_check_record_key(t, rec.key != NULL, false, &msg) != 0)
		{
			if (*bad == NULL)
			{
				*bad = palloc(sizeof(int) * Max(it.hdr.records_count, 1));
				*why = msg;
				sqlstate = ERRCODE_KP_INVALID_RECORD;
			}
			(*bad)[(*nbad)++] = index;
		}
		index++;
	}
	kp_record_iter_end(&it);
	return sqlstate;
}
