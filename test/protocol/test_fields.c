/*-------------------------------------------------------------------------
 *
 * test_fields.c
 *	  The values Kafka's Java classes put into each golden fixture (the rule
 *	  is in golden/Golden.java), checked field by field after decoding.
 *
 * Part of the protocol codec tests, run by test_protocol.c's main().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/protocol.h"
#include "proto_test.h"
#include "shim_alloc.h"

static bool
uuid_is(const KpUuid *u, int idx)
{
	uint64		hi = 0,
				lo = 0;

	for (int i = 0; i < 8; i++)
	{
		hi = (hi << 8) | u->b[i];
		lo = (lo << 8) | u->b[8 + i];
	}
	return hi == UINT64CONST(0x1111111111111111) + idx &&
		lo == UINT64CONST(0x2222222222222222);
}

bool
str_is(const char *s, const char *expect)
{
	return s != NULL && strcmp(s, expect) == 0;
}

/* The Java generator's records blob: 10 bytes 0xC0.. */
static bool
records_ok(const KpBytes *b)
{
	return b->len == 10 && b->data[0] == 0xC0 && b->data[9] == 0xC9;
}

/*
 * Field checks per message: values the Java generator set, at the versions
 * that carry them; absent fields must hold their JSON defaults.
 */
bool
check_fields(const char *name, int v, const void *msg)
{
	bool		ok = true;

	if (strcmp(name, "ApiVersionsRequest") == 0)
	{
		const KpApiVersionsRequest *m = msg;

		if (v >= 3)
			CHECK(str_is(m->client_software_name, "clientSoftwareName-0"));
		else
			CHECK(str_is(m->client_software_name, ""));
	}
	else if (strcmp(name, "ApiVersionsResponse") == 0)
	{
		const KpApiVersionsResponse *m = msg;

		CHECK(m->error_code == 16);
		CHECK(m->n_api_keys == 2 && m->api_keys[1].api_key == 17 &&
			  m->api_keys[1].min_version == 17 && m->api_keys[1].max_version == 17);
		CHECK(m->throttle_time_ms == (v >= 1 ? 3200 : 0));
		if (v >= 3)
			CHECK(m->n_supported_features == 2 &&
				  str_is(m->supported_features[1].name, "name-1") &&
				  m->finalized_features_epoch == 6400000000);
		else
			CHECK(m->n_supported_features == 0 && m->finalized_features_epoch == -1);
	}
	else if (strcmp(name, "MetadataRequest") == 0)
	{
		const KpMetadataRequest *m = msg;

		CHECK(m->n_topics == 2 && str_is(m->topics[1].name, "name-1"));
		CHECK(m->allow_auto_topic_creation);	/* Java's value, or default
												 * true */
		if (v >= 10)
			CHECK(uuid_is(&m->topics[1].topic_id, 1));
		CHECK(m->include_topic_authorized_operations == (v >= 8));
	}
	else if (strcmp(name, "MetadataResponse") == 0)
	{
		const KpMetadataResponse *m = msg;

		CHECK(m->n_brokers == 2 && m->brokers[1].node_id == 3201 &&
			  str_is(m->brokers[1].host, "host-1") && m->brokers[1].port == 3201);
		CHECK(m->brokers[0].rack == NULL);	/* left null by the generator */
		CHECK(m->controller_id == (v >= 1 ? 3200 : -1));
		CHECK(m->n_topics == 2 && m->topics[0].n_partitions == 2);
		CHECK(m->topics[0].partitions[1].n_replica_nodes == 3 &&
			  m->topics[0].partitions[1].replica_nodes[2] == 3202);
		CHECK(m->topics[1].partitions[0].leader_epoch == (v >= 7 ? 3200 : -1));
		if (v >= 2)
			CHECK(str_is(m->cluster_id, "clusterId-0"));
	}
	else if (strcmp(name, "ProduceRequest") == 0)
	{
		const KpProduceRequest *m = msg;

		CHECK(m->transactional_id == NULL);
		CHECK(m->acks == 16 && m->timeout_ms == 3200);
		CHECK(m->n_topic_data == 2 && m->topic_data[1].n_partition_data == 2);
		CHECK(m->topic_data[1].partition_data[1].index == 3201);
		CHECK(records_ok(&m->topic_data[1].partition_data[1].records));
		if (v >= 13)
			CHECK(uuid_is(&m->topic_data[1].topic_id, 1) && m->topic_data[1].name[0] == '\0');
		else
			CHECK(str_is(m->topic_data[1].name, "name-1"));
	}
	else if (strcmp(name, "ProduceResponse") == 0)
	{
		const KpProduceResponse *m = msg;
		const KpProduceResponsePartitionProduceResponse *p;

		CHECK(m->n_responses == 2 && m->responses[0].n_partition_responses == 2);
		p = &m->responses[0].partition_responses[1];
		CHECK(p->index == 3201 && p->error_code == 17 && p->base_offset == 6400000001);
		CHECK(p->log_start_offset == (v >= 5 ? 6400000001 : -1));
		if (v >= 8)
			CHECK(p->n_record_errors == 2 && p->record_errors[1].batch_index == 3201);
		if (v >= 10)
			CHECK(p->current_leader.leader_id == 3201 && m->n_node_endpoints == 2);
		else
			CHECK(p->current_leader.leader_id == -1 && m->n_node_endpoints == 0);
	}
	else if (strcmp(name, "FetchRequest") == 0)
	{
		const KpFetchRequest *m = msg;

		CHECK(m->max_wait_ms == 3200 && m->isolation_level == 7);
		CHECK(m->n_topics == 2 && m->topics[1].n_partitions == 2);
		CHECK(m->topics[1].partitions[0].fetch_offset == 6400000000);
		if (v >= 13)
			CHECK(uuid_is(&m->topics[1].topic_id, 1));
		else
			CHECK(str_is(m->topics[1].topic, "topic-1"));
		if (v >= 12)
			CHECK(str_is(m->cluster_id, "clusterId-0"));
		else
			CHECK(m->cluster_id == NULL);
		if (v >= 15)
			CHECK(m->replica_state.replica_epoch == 6400000000 && m->replica_id == -1);
		else
			CHECK(m->replica_id == 3200);
	}
	else if (strcmp(name, "FetchResponse") == 0)
	{
		const KpFetchResponse *m = msg;
		const KpFetchResponsePartitionData *p;

		CHECK(m->n_responses == 2 && m->responses[0].n_partitions == 2);
		p = &m->responses[0].partitions[1];
		CHECK(p->partition_index == 3201 && p->high_watermark == 6400000001);
		CHECK(records_ok(&p->records));
		CHECK(p->n_aborted_transactions == 2 &&
			  p->aborted_transactions[1].producer_id == 6400000001);
		if (v >= 12)
			CHECK(p->diverging_epoch.epoch == 3201);
		else
			CHECK(p->diverging_epoch.epoch == -1);
		CHECK(m->n_node_endpoints == 0);	/* left empty: absent tag */
	}
	else if (strcmp(name, "ListOffsetsRequest") == 0)
	{
		const KpListOffsetsRequest *m = msg;

		CHECK(m->replica_id == 3200);
		CHECK(m->isolation_level == (v >= 2 ? 7 : 0));
		CHECK(m->n_topics == 2 && str_is(m->topics[1].name, "name-1") &&
			  m->topics[1].partitions[0].timestamp == 6400000000);
	}
	else if (strcmp(name, "ListOffsetsResponse") == 0)
	{
		const KpListOffsetsResponse *m = msg;

		CHECK(m->n_topics == 2 && m->topics[0].partitions[1].offset == 6400000001);
		CHECK(m->topics[0].partitions[1].leader_epoch == (v >= 4 ? 3201 : -1));
	}
	else if (strcmp(name, "CreateTopicsRequest") == 0)
	{
		const KpCreateTopicsRequest *m = msg;

		CHECK(m->n_topics == 2 && str_is(m->topics[1].name, "name-1") &&
			  m->topics[1].num_partitions == 3201 &&
			  m->topics[1].n_configs == 2 &&
			  str_is(m->topics[1].configs[1].value, "value-1"));
		CHECK(m->timeout_ms == 3200 && m->validate_only);
	}
	else if (strcmp(name, "CreateTopicsResponse") == 0)
	{
		const KpCreateTopicsResponse *m = msg;

		CHECK(m->n_topics == 2 && m->topics[1].error_code == 17);
		if (v >= 5)
			CHECK(m->topics[1].num_partitions == 3201 &&
				  m->topics[1].topic_config_error_code == 17);
		else
			CHECK(m->topics[1].num_partitions == -1);
	}
	else if (strcmp(name, "FindCoordinatorRequest") == 0)
	{
		const KpFindCoordinatorRequest *m = msg;

		if (v < 4)
			CHECK(str_is(m->key, "key-0"));
		else
			CHECK(m->n_coordinator_keys == 3 &&
				  str_is(m->coordinator_keys[2], "coordinatorKeys-2"));
		CHECK(m->key_type == (v >= 1 ? 7 : 0));
	}
	else if (strcmp(name, "FindCoordinatorResponse") == 0)
	{
		const KpFindCoordinatorResponse *m = msg;

		if (v < 4)
			CHECK(m->node_id == 3200 && str_is(m->host, "host-0") && m->port == 3200);
		else

			/*
			 * node_id/host/port were reset by name in the whole tree (the
			 * generator's reset rule, see Golden.java)
			 */
			CHECK(m->n_coordinators == 2 && m->coordinators[1].port == 0 &&
				  str_is(m->coordinators[1].key, "key-1") &&
				  str_is(m->coordinators[1].error_message, "errorMessage-1"));
	}
	else if (strcmp(name, "JoinGroupRequest") == 0)
	{
		const KpJoinGroupRequest *m = msg;

		CHECK(str_is(m->group_id, "groupId-0") && m->session_timeout_ms == 3200);
		CHECK(m->rebalance_timeout_ms == (v >= 1 ? 3200 : -1));
		CHECK(m->group_instance_id == NULL);
		CHECK(m->n_protocols == 2 && str_is(m->protocols[1].name, "name-1") &&
			  m->protocols[1].metadata.len == 4 && m->protocols[1].metadata.data[3] == 1);
	}
	else if (strcmp(name, "JoinGroupResponse") == 0)
	{
		const KpJoinGroupResponse *m = msg;

		CHECK(m->generation_id == 3200 && str_is(m->leader, "leader-0"));
		CHECK(m->n_members == 2 && str_is(m->members[1].member_id, "memberId-1"));
		if (v >= 7)
			CHECK(str_is(m->protocol_type, "protocolType-0"));
		else
			CHECK(m->protocol_type == NULL);
	}
	else if (strcmp(name, "SyncGroupRequest") == 0)
	{
		const KpSyncGroupRequest *m = msg;

		CHECK(m->generation_id == 3200 && m->n_assignments == 2 &&
			  m->assignments[1].assignment.data[3] == 1);
	}
	else if (strcmp(name, "SyncGroupResponse") == 0)
	{
		const KpSyncGroupResponse *m = msg;

		CHECK(m->error_code == 16 && m->assignment.len == 4);
	}
	else if (strcmp(name, "OffsetCommitRequest") == 0)
	{
		const KpOffsetCommitRequest *m = msg;

		CHECK(str_is(m->group_id, "groupId-0"));
		CHECK(m->retention_time_ms == (v <= 4 ? 6400000000 : -1));
		CHECK(m->n_topics == 2 && m->topics[0].partitions[1].committed_offset == 6400000001);
		CHECK(m->topics[0].partitions[1].committed_leader_epoch == (v >= 6 ? 3201 : -1));
	}
	else if (strcmp(name, "OffsetCommitResponse") == 0)
	{
		const KpOffsetCommitResponse *m = msg;

		CHECK(m->n_topics == 2 && m->topics[1].partitions[1].error_code == 17);
	}
	else if (strcmp(name, "OffsetFetchRequest") == 0)
	{
		const KpOffsetFetchRequest *m = msg;

		if (v < 8)
			CHECK(str_is(m->group_id, "groupId-0") && m->n_topics == 2 &&
				  m->topics[1].partition_indexes[2] == 3202);
		else
			/* group_id reset by name (top-level GroupId is v0-7) */
			CHECK(m->n_groups == 2 && m->groups[1].n_topics == 0 && /* left at default */
				  (v < 9 || str_is(m->groups[1].member_id, "memberId-1")));
		CHECK(m->require_stable == (v >= 7));
	}
	else if (strcmp(name, "OffsetFetchResponse") == 0)
	{
		const KpOffsetFetchResponse *m = msg;

		if (v < 8)
			CHECK(m->n_topics == 2 && m->topics[1].partitions[0].committed_offset == 6400000000);
		else
			CHECK(m->n_groups == 2 && m->groups[1].error_code == 17);
	}
	else if (strcmp(name, "InitProducerIdRequest") == 0)
	{
		const KpInitProducerIdRequest *m = msg;

		CHECK(str_is(m->transactional_id, "transactionalId-0") &&
			  m->transaction_timeout_ms == 3200);
		CHECK(m->producer_id == (v >= 3 ? 6400000000 : -1));
	}
	else if (strcmp(name, "InitProducerIdResponse") == 0)
	{
		const KpInitProducerIdResponse *m = msg;

		CHECK(m->producer_id == 6400000000 && m->producer_epoch == 16);
	}
	else if (strcmp(name, "ConsumerGroupHeartbeatRequest") == 0)
	{
		const KpConsumerGroupHeartbeatRequest *m = msg;

		CHECK(str_is(m->group_id, "groupId-0") && m->member_epoch == 3200);
		CHECK(m->rack_id == NULL);
		CHECK(m->n_subscribed_topic_names == 3 &&
			  str_is(m->subscribed_topic_names[2], "subscribedTopicNames-2"));
		CHECK(m->n_topic_partitions == 2 && m->topic_partitions[1].partitions[2] == 3202);
	}
	else if (strcmp(name, "ConsumerGroupHeartbeatResponse") == 0)
	{
		const KpConsumerGroupHeartbeatResponse *m = msg;

		CHECK(m->heartbeat_interval_ms == 3200);
		CHECK(m->assignment != NULL && m->assignment->n_topic_partitions == 2);
	}
	else if (strcmp(name, "ConsumerProtocolSubscription") == 0)
	{
		const KpConsumerProtocolSubscription *m = msg;

		CHECK(m->n_topics == 3 && str_is(m->topics[0], "topics-0"));
		CHECK(m->user_data.len == 4);
		CHECK(m->generation_id == (v >= 2 ? 3200 : -1));
	}
	return ok;
}

/* Print a decoded struct (KP_DUMP=1 ./test_protocol), for debugging. */
void
dump_struct(const KpStructDesc *sd, const char *base, int version, int depth)
{
	for (int i = 0; i < sd->nfields; i++)
	{
		const KpFieldDesc *f = &sd->fields[i];
		const char *p = base + f->offset;
		int			n = 1;

		if (!((f->versions >> version) & 1))
			continue;
		printf("%*s%s", depth * 2, "", f->name);
		if (f->flags & KP_F_ARRAY)
		{
			n = *(const int32 *) (base + f->count_offset);
			printf("[%d]", n);
			p = *(const char *const *) p;
		}
		printf(":");
		for (int e = 0; e < n; e++)
		{
			size_t		es = f->type == KP_T_STRUCT ? f->struct_desc->size :
			f->type == KP_T_STRING ? sizeof(char *) : f->type == KP_T_INT64 ? 8 :
			f->type == KP_T_INT32 ? 4 : f->type == KP_T_INT16 ? 2 :
			f->type == KP_T_UUID ? 16 : f->type == KP_T_BYTES ||
			f->type == KP_T_RECORDS ? sizeof(KpBytes) : 1;
			const char *q = (f->flags & KP_F_ARRAY) ? p + es * e : p;

			switch (f->type)
			{
				case KP_T_INT8:
					printf(" %d", *(const int8 *) q);
					break;
				case KP_T_BOOL:
					printf(" %d", *(const bool *) q);
					break;
				case KP_T_INT16:
					printf(" %d", *(const int16 *) q);
					break;
				case KP_T_INT32:
					printf(" %d", *(const int32 *) q);
					break;
				case KP_T_INT64:
					printf(" %lld", (long long) *(const int64 *) q);
					break;
				case KP_T_STRING:
					printf(" \"%s\"", *(const char *const *) q ? *(const char *const *) q : "(null)");
					break;
				case KP_T_BYTES:
				case KP_T_RECORDS:
					printf(" bytes(%d)", ((const KpBytes *) q)->len);
					break;
				case KP_T_UUID:
					printf(" uuid(%02x..)", ((const KpUuid *) q)->b[7]);
					break;
				case KP_T_STRUCT:
					printf("\n");
					if (f->flags & KP_F_POINTER)
						q = *(const char *const *) q;
					if (q)
						dump_struct(f->struct_desc, q, version, depth + 1);
					break;
				default:
					printf(" ?");
					break;
			}
		}
		printf("\n");
	}
}
