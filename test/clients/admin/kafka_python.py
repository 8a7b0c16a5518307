#!/usr/bin/env python3
"""kafka-python 3.x's admin client on the cluster-management APIs, against $KAFKA_BOOTSTRAP:
describe_topic_partitions (with its cursor), elect_leaders, list/alter_partition_reassignments,
describe_metadata_quorum, list_config_resources, describe_user_scram_credentials, describe_log_dirs
and alter_replica_log_dirs. Run with the
interpreter of test/clients/python's virtualenv that holds kafka-python 3 (test/clients/admin/run
finds it). Prints "ok - ..." / "not ok - ..." and "N passed, M failed".
"""
import sys
import uuid

from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import NoError
from kafka.structs import TopicPartitionReplica
from kafka.admin import NewTopic

import describe_partitions as w
from describe_partitions import BS, check


def attempt(name, fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        check(name, False, "%s: %s" % (type(e).__name__, e))
        return None


def main():
    admin = KafkaAdminClient(bootstrap_servers=BS, request_timeout_ms=30000)
    t = "kp-admin-" + uuid.uuid4().hex[:8]
    admin.create_topics([NewTopic(t, 3, 1)])
    node = admin.describe_cluster()["brokers"][0]["broker_id"]

    r = attempt("describe_topic_partitions", lambda: admin.describe_topic_partitions([t], response_partition_limit=2))
    if r is not None:
        topic = r["topics"][0] if r["topics"] else {}
        parts = [p["partition_index"] for p in topic.get("partitions", [])]
        check("describe_topic_partitions, limit 2: partitions 0 and 1, next cursor (%s, 2)" % t,
              parts == [0, 1] and r["next_cursor"] == {"topic_name": t, "partition_index": 2}, r)
        r2 = attempt("describe_topic_partitions from the cursor",
                     lambda: admin.describe_topic_partitions([t], response_partition_limit=2, cursor=r["next_cursor"]))
        if r2 is not None:
            p2 = r2["topics"][0]["partitions"] if r2["topics"] else []
            check("describe_topic_partitions from the cursor: partition 2, led by the broker, no next cursor",
                  [p["partition_index"] for p in p2] == [2] and p2[0]["leader_id"] == node
                  and r2["next_cursor"] is None, r2)

    r = attempt("elect_leaders", lambda: admin.elect_leaders(0, {t: [0, 1]}))
    if r is not None:
        codes = sorted(p.error_code for res in r.replica_election_results for p in res.partition_result)
        check("elect_leaders preferred: ELECTION_NOT_NEEDED (84) for both partitions", codes == [84, 84], r)

    r = attempt("list_partition_reassignments", lambda: admin.list_partition_reassignments())
    if r is not None:
        check("list_partition_reassignments: none", r == {}, r)
    r = attempt("alter_partition_reassignments to the broker",
                lambda: admin.alter_partition_reassignments({TopicPartition(t, 0): [node]}))
    if r is not None:
        check("alter_partition_reassignments to the broker: accepted", True)

    q = attempt("describe_metadata_quorum", lambda: admin.describe_metadata_quorum())
    if q is not None:
        p = q["topics"][0]["partitions"][0]
        check("describe_metadata_quorum: one voter, the leader, no observers",
              [v["replica_id"] for v in p["current_voters"]] == [p["leader_id"]] and p["observers"] == []
              , q)

    r = attempt("list_config_resources", lambda: admin.list_config_resources())
    if r is not None:
        check("list_config_resources: the topic and the broker",
              t in r.get("topic", []) and str(node) in r.get("broker", []), r)

    r = attempt("describe_user_scram_credentials", lambda: admin.describe_user_scram_credentials())
    if r is not None:
        check("describe_user_scram_credentials: mechanisms and iterations only",
              all(set(v) == {"error", "credential_infos"} for v in r.values()), r)
    missing = "kp-nobody-" + uuid.uuid4().hex[:8]
    r = attempt("describe_user_scram_credentials of an unknown user",
                lambda: admin.describe_user_scram_credentials([missing]))
    if r is not None:
        check("describe_user_scram_credentials of an unknown user: an error, no credentials",
              r.get(missing, {}).get("error") and not r[missing]["credential_infos"], r)

    # as kafka-python's own test_describe_log_dirs and test_alter_replica_log_dirs
    r = attempt("describe_log_dirs", lambda: admin.describe_log_dirs())
    if r is not None:
        dirs = {x["broker"]: x["log_dirs"] for x in r}.get(node, [])
        check("describe_log_dirs: one log dir on the broker, no error",
              len(dirs) == 1 and dirs[0]["log_dir"].startswith("/") and dirs[0]["error_code"] == 0, r)
        if dirs:
            tpr = TopicPartitionReplica(t, 0, node)
            a = attempt("alter_replica_log_dirs",
                        lambda: admin.alter_replica_log_dirs({tpr: dirs[0]["log_dir"]}))
            if a is not None:
                check("alter_replica_log_dirs to the partition's own log dir: NoError",
                      a.get(tpr) is NoError, a)

    admin.delete_topics([t])
    admin.close()
    print("%d passed, %d failed" % (w.passed, w.failed))
    return 1 if w.failed else 0


if __name__ == "__main__":
    sys.exit(main())
