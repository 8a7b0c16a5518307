/*-------------------------------------------------------------------------
 *
 * delete_records.c
 *	  kafka.delete_records: Kafka's DeleteRecords (kafka-delete-records.sh)
 *	  from SQL.
 *
 * The same steps as the wire listener's DeleteRecords handler
 * (src/listener/handlers_records.c): lock the topic against other changes,
 * refuse topics whose cleanup.policy lacks "delete" (POLICY_VIOLATION, as
 * Kafka does; src/catalog/policy.c), and let the store move the log start offset
 * (src/store/logstart.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "catalog/kafka_catalog.h"
#include "common/kafka_errors.h"
#include "sqlapi/sqlapi.h"
#include "store/store.h"

PG_FUNCTION_INFO_V1(kp_sql_delete_records);

/* kafka.delete_records(topic, partition, before_offset) -> new log start */
Datum
kp_sql_delete_records(PG_FUNCTION_ARGS)
{
	char	   *topic_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32		partition = PG_GETARG_INT32(1);
	int64		before_offset = PG_GETARG_INT64(2);
	const KpTopic *topic;
	KpPartitionRef ref;
	int64		log_start;
	KpSqlOwner	owner;

	kp_sql_check_writable_fn(fcinfo);
	kp_acl_check(KP_ACL_RESOURCE_TOPIC, topic_name, KP_ACL_OP_DELETE);
	kp_sql_as_owner(&owner);
	topic = kp_topic_open(topic_name, ShareUpdateExclusiveLock, false);
	kp_topic_partition(topic, partition, &ref);
	(void) kp_topic_check_delete_records(topic, true, NULL);
	kp_log_delete_records(ref.partition_id, before_offset, &log_start);
	kp_sql_as_caller(&owner);
	PG_RETURN_INT64(log_start);
}
