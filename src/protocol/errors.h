/*-------------------------------------------------------------------------
 *
 * errors.h
 *	  Kafka's protocol error codes, named as Kafka spells them.
 *
 * The full table of org.apache.kafka.common.protocol.Errors (kafka-clients
 * 4.4.0; the protocol guide's "Error Codes" table lists the same codes),
 * printed by `mvn -q exec:java -Dexec.args=errors` in test/protocol/golden/.
 * A code is part of the wire protocol and never changes meaning; which codes
 * a client understands depends on the request version (FACTS.md).
 *
 * src/protocol/errors.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_ERRORS_H
#define KP_ERRORS_H

#define KP_ERR_UNKNOWN_SERVER_ERROR                              (-1)
#define KP_ERR_NONE                                              0
#define KP_ERR_OFFSET_OUT_OF_RANGE                               1
#define KP_ERR_CORRUPT_MESSAGE                                   2
#define KP_ERR_UNKNOWN_TOPIC_OR_PARTITION                        3
#define KP_ERR_INVALID_FETCH_SIZE                                4
#define KP_ERR_LEADER_NOT_AVAILABLE                              5
#define KP_ERR_NOT_LEADER_OR_FOLLOWER                            6
#define KP_ERR_REQUEST_TIMED_OUT                                 7
#define KP_ERR_BROKER_NOT_AVAILABLE                              8
#define KP_ERR_REPLICA_NOT_AVAILABLE                             9
#define KP_ERR_MESSAGE_TOO_LARGE                                 10
#define KP_ERR_STALE_CONTROLLER_EPOCH                            11
#define KP_ERR_OFFSET_METADATA_TOO_LARGE                         12
#define KP_ERR_NETWORK_EXCEPTION                                 13
#define KP_ERR_COORDINATOR_LOAD_IN_PROGRESS                      14
#define KP_ERR_COORDINATOR_NOT_AVAILABLE                         15
#define KP_ERR_NOT_COORDINATOR                                   16
#define KP_ERR_INVALID_TOPIC_EXCEPTION                           17
#define KP_ERR_RECORD_LIST_TOO_LARGE                             18
#define KP_ERR_NOT_ENOUGH_REPLICAS                               19
#define KP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND                  20
#define KP_ERR_INVALID_REQUIRED_ACKS                             21
#define KP_ERR_ILLEGAL_GENERATION                                22
#define KP_ERR_INCONSISTENT_GROUP_PROTOCOL                       23
#define KP_ERR_INVALID_GROUP_ID                                  24
#define KP_ERR_UNKNOWN_MEMBER_ID                                 25
#define KP_ERR_INVALID_SESSION_TIMEOUT                           26
#define KP_ERR_REBALANCE_IN_PROGRESS                             27
#define KP_ERR_INVALID_COMMIT_OFFSET_SIZE                        28
#define KP_ERR_TOPIC_AUTHORIZATION_FAILED                        29
#define KP_ERR_GROUP_AUTHORIZATION_FAILED                        30
#define KP_ERR_CLUSTER_AUTHORIZATION_FAILED                      31
#define KP_ERR_INVALID_TIMESTAMP                                 32
#define KP_ERR_UNSUPPORTED_SASL_MECHANISM                        33
#define KP_ERR_ILLEGAL_SASL_STATE                                34
#define KP_ERR_UNSUPPORTED_VERSION                               35
#define KP_ERR_TOPIC_ALREADY_EXISTS                              36
#define KP_ERR_INVALID_PARTITIONS                                37
#define KP_ERR_INVALID_REPLICATION_FACTOR                        38
#define KP_ERR_INVALID_REPLICA_ASSIGNMENT                        39
#define KP_ERR_INVALID_CONFIG                                    40
#define KP_ERR_NOT_CONTROLLER                                    41
#define KP_ERR_INVALID_REQUEST                                   42
#define KP_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT                    43
#define KP_ERR_POLICY_VIOLATION                                  44
#define KP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER                      45
#define KP_ERR_DUPLICATE_SEQUENCE_NUMBER                         46
#define KP_ERR_INVALID_PRODUCER_EPOCH                            47
#define KP_ERR_INVALID_TXN_STATE                                 48
#define KP_ERR_INVALID_PRODUCER_ID_MAPPING                       49
#define KP_ERR_INVALID_TRANSACTION_TIMEOUT                       50
#define KP_ERR_CONCURRENT_TRANSACTIONS                           51
#define KP_ERR_TRANSACTION_COORDINATOR_FENCED                    52
#define KP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED             53
#define KP_ERR_SECURITY_DISABLED                                 54
#define KP_ERR_OPERATION_NOT_ATTEMPTED                           55
#define KP_ERR_KAFKA_STORAGE_ERROR                               56
#define KP_ERR_LOG_DIR_NOT_FOUND                                 57
#define KP_ERR_SASL_AUTHENTICATION_FAILED                        58
#define KP_ERR_UNKNOWN_PRODUCER_ID                               59
#define KP_ERR_REASSIGNMENT_IN_PROGRESS                          60
#define KP_ERR_DELEGATION_TOKEN_AUTH_DISABLED                    61
#define KP_ERR_DELEGATION_TOKEN_NOT_FOUND                        62
#define KP_ERR_DELEGATION_TOKEN_OWNER_MISMATCH                   63
#define KP_ERR_DELEGATION_TOKEN_REQUEST_NOT_ALLOWED              64
#define KP_ERR_DELEGATION_TOKEN_AUTHORIZATION_FAILED             65
#define KP_ERR_DELEGATION_TOKEN_EXPIRED                          66
#define KP_ERR_INVALID_PRINCIPAL_TYPE                            67
#define KP_ERR_NON_EMPTY_GROUP                                   68
#define KP_ERR_GROUP_ID_NOT_FOUND                                69
#define KP_ERR_FETCH_SESSION_ID_NOT_FOUND                        70
#define KP_ERR_INVALID_FETCH_SESSION_EPOCH                       71
#define KP_ERR_LISTENER_NOT_FOUND                                72
#define KP_ERR_TOPIC_DELETION_DISABLED                           73
#define KP_ERR_FENCED_LEADER_EPOCH                               74
#define KP_ERR_UNKNOWN_LEADER_EPOCH                              75
#define KP_ERR_UNSUPPORTED_COMPRESSION_TYPE                      76
#define KP_ERR_STALE_BROKER_EPOCH                                77
#define KP_ERR_OFFSET_NOT_AVAILABLE                              78
#define KP_ERR_MEMBER_ID_REQUIRED                                79
#define KP_ERR_PREFERRED_LEADER_NOT_AVAILABLE                    80
#define KP_ERR_GROUP_MAX_SIZE_REACHED                            81
#define KP_ERR_FENCED_INSTANCE_ID                                82
#define KP_ERR_ELIGIBLE_LEADERS_NOT_AVAILABLE                    83
#define KP_ERR_ELECTION_NOT_NEEDED                               84
#define KP_ERR_NO_REASSIGNMENT_IN_PROGRESS                       85
#define KP_ERR_GROUP_SUBSCRIBED_TO_TOPIC                         86
#define KP_ERR_INVALID_RECORD                                    87
#define KP_ERR_UNSTABLE_OFFSET_COMMIT                            88
#define KP_ERR_THROTTLING_QUOTA_EXCEEDED                         89
#define KP_ERR_PRODUCER_FENCED                                   90
#define KP_ERR_RESOURCE_NOT_FOUND                                91
#define KP_ERR_DUPLICATE_RESOURCE                                92
#define KP_ERR_UNACCEPTABLE_CREDENTIAL                           93
#define KP_ERR_INCONSISTENT_VOTER_SET                            94
#define KP_ERR_INVALID_UPDATE_VERSION                            95
#define KP_ERR_FEATURE_UPDATE_FAILED                             96
#define KP_ERR_PRINCIPAL_DESERIALIZATION_FAILURE                 97
#define KP_ERR_SNAPSHOT_NOT_FOUND                                98
#define KP_ERR_POSITION_OUT_OF_RANGE                             99
#define KP_ERR_UNKNOWN_TOPIC_ID                                  100
#define KP_ERR_DUPLICATE_BROKER_REGISTRATION                     101
#define KP_ERR_BROKER_ID_NOT_REGISTERED                          102
#define KP_ERR_INCONSISTENT_TOPIC_ID                             103
#define KP_ERR_INCONSISTENT_CLUSTER_ID                           104
#define KP_ERR_TRANSACTIONAL_ID_NOT_FOUND                        105
#define KP_ERR_FETCH_SESSION_TOPIC_ID_ERROR                      106
#define KP_ERR_INELIGIBLE_REPLICA                                107
#define KP_ERR_NEW_LEADER_ELECTED                                108
#define KP_ERR_OFFSET_MOVED_TO_TIERED_STORAGE                    109
#define KP_ERR_FENCED_MEMBER_EPOCH                               110
#define KP_ERR_UNRELEASED_INSTANCE_ID                            111
#define KP_ERR_UNSUPPORTED_ASSIGNOR                              112
#define KP_ERR_STALE_MEMBER_EPOCH                                113
#define KP_ERR_MISMATCHED_ENDPOINT_TYPE                          114
#define KP_ERR_UNSUPPORTED_ENDPOINT_TYPE                         115
#define KP_ERR_UNKNOWN_CONTROLLER_ID                             116
#define KP_ERR_UNKNOWN_SUBSCRIPTION_ID                           117
#define KP_ERR_TELEMETRY_TOO_LARGE                               118
#define KP_ERR_INVALID_REGISTRATION                              119
#define KP_ERR_TRANSACTION_ABORTABLE                             120
#define KP_ERR_INVALID_RECORD_STATE                              121
#define KP_ERR_SHARE_SESSION_NOT_FOUND                           122
#define KP_ERR_INVALID_SHARE_SESSION_EPOCH                       123
#define KP_ERR_FENCED_STATE_EPOCH                                124
#define KP_ERR_INVALID_VOTER_KEY                                 125
#define KP_ERR_DUPLICATE_VOTER                                   126
#define KP_ERR_VOTER_NOT_FOUND                                   127
#define KP_ERR_INVALID_REGULAR_EXPRESSION                        128
#define KP_ERR_REBOOTSTRAP_REQUIRED                              129
#define KP_ERR_STREAMS_INVALID_TOPOLOGY                          130
#define KP_ERR_STREAMS_INVALID_TOPOLOGY_EPOCH                    131
#define KP_ERR_STREAMS_TOPOLOGY_FENCED                           132
#define KP_ERR_SHARE_SESSION_LIMIT_REACHED                       133
#define KP_ERR_GROUP_DELETION_FAILED                             134
#define KP_ERR_STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED        135
#define KP_ERR_CONTROLLER_ID_NOT_REGISTERED                      136

/* The highest code in the table above. */
#define KP_ERR_MAX_CODE 136

/* Kafka's name of an error code ("UNKNOWN_TOPIC_OR_PARTITION"), or
 * "UNKNOWN_ERROR_CODE" for a code not in the table. */
extern const char *kp_error_name(int16 code);

#endif							/* KP_ERRORS_H */
