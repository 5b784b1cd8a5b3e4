// protocol/error_code.h: Kafka's error codes, as data.
//
// Hot paths return these values instead of throwing: a handler that cannot
// serve a partition puts the code in that partition's response and carries
// on. The numbers are Kafka's wire values (Apache Kafka 3.9); the short
// descriptions are ours. `retriable` says whether Kafka's clients retry on it.
#pragma once

#include <cstdint>
#include <string_view>

namespace ciuickafka::protocol {

// X(name, code, retriable, description)
#define CK_KAFKA_ERRORS(X)                                                                              \
  X(UNKNOWN_SERVER_ERROR, -1, false, "unexpected server error")                                       \
  X(NONE, 0, false, "no error")                                                                       \
  X(OFFSET_OUT_OF_RANGE, 1, false, "offset outside the partition's range")                            \
  X(CORRUPT_MESSAGE, 2, true, "record failed its CRC, is too large or otherwise corrupt")             \
  X(UNKNOWN_TOPIC_OR_PARTITION, 3, true, "this broker does not host the topic-partition")             \
  X(INVALID_FETCH_SIZE, 4, false, "invalid fetch size")                                               \
  X(LEADER_NOT_AVAILABLE, 5, true, "no leader for the partition right now")                           \
  X(NOT_LEADER_OR_FOLLOWER, 6, true, "this broker is not the leader (or a replica) of the partition") \
  X(REQUEST_TIMED_OUT, 7, true, "the request timed out")                                              \
  X(BROKER_NOT_AVAILABLE, 8, false, "broker not available")                                           \
  X(REPLICA_NOT_AVAILABLE, 9, true, "replica not available")                                          \
  X(MESSAGE_TOO_LARGE, 10, false, "batch larger than the maximum the server accepts")                 \
  X(STALE_CONTROLLER_EPOCH, 11, false, "the controller moved")                                        \
  X(OFFSET_METADATA_TOO_LARGE, 12, false, "offset commit metadata too large")                         \
  X(NETWORK_EXCEPTION, 13, true, "server disconnected before responding")                             \
  X(COORDINATOR_LOAD_IN_PROGRESS, 14, true, "coordinator is still loading")                           \
  X(COORDINATOR_NOT_AVAILABLE, 15, true, "coordinator not available")                                 \
  X(NOT_COORDINATOR, 16, true, "this broker is not the coordinator")                                  \
  X(INVALID_TOPIC_EXCEPTION, 17, false, "invalid topic name or operation on an internal topic")       \
  X(RECORD_LIST_TOO_LARGE, 18, false, "record batch larger than the segment size")                    \
  X(NOT_ENOUGH_REPLICAS, 19, true, "fewer in-sync replicas than required")                            \
  X(NOT_ENOUGH_REPLICAS_AFTER_APPEND, 20, true, "written, but fewer in-sync replicas than required")  \
  X(INVALID_REQUIRED_ACKS, 21, false, "invalid acks value")                                           \
  X(ILLEGAL_GENERATION, 22, false, "group generation id is not current")                              \
  X(INCONSISTENT_GROUP_PROTOCOL, 23, false, "group protocol incompatible with the group's")           \
  X(INVALID_GROUP_ID, 24, false, "invalid group id")                                                  \
  X(UNKNOWN_MEMBER_ID, 25, false, "member id not known to the coordinator")                           \
  X(INVALID_SESSION_TIMEOUT, 26, false, "session timeout outside the allowed range")                  \
  X(REBALANCE_IN_PROGRESS, 27, false, "the group is rebalancing")                                     \
  X(INVALID_COMMIT_OFFSET_SIZE, 28, false, "offset commit too large")                                 \
  X(TOPIC_AUTHORIZATION_FAILED, 29, false, "topic authorization failed")                              \
  X(GROUP_AUTHORIZATION_FAILED, 30, false, "group authorization failed")                              \
  X(CLUSTER_AUTHORIZATION_FAILED, 31, false, "cluster authorization failed")                          \
  X(INVALID_TIMESTAMP, 32, false, "timestamp outside the accepted range")                             \
  X(UNSUPPORTED_SASL_MECHANISM, 33, false, "SASL mechanism not supported")                            \
  X(ILLEGAL_SASL_STATE, 34, false, "request not valid in the current SASL state")                     \
  X(UNSUPPORTED_VERSION, 35, false, "API version not supported")                                      \
  X(TOPIC_ALREADY_EXISTS, 36, false, "topic already exists")                                          \
  X(INVALID_PARTITIONS, 37, false, "invalid number of partitions")                                    \
  X(INVALID_REPLICATION_FACTOR, 38, false, "invalid replication factor")                              \
  X(INVALID_REPLICA_ASSIGNMENT, 39, false, "invalid replica assignment")                              \
  X(INVALID_CONFIG, 40, false, "invalid configuration")                                               \
  X(NOT_CONTROLLER, 41, true, "this broker is not the controller")                                    \
  X(INVALID_REQUEST, 42, false, "malformed or invalid request")                                       \
  X(UNSUPPORTED_FOR_MESSAGE_FORMAT, 43, false, "not supported by the message format")                 \
  X(POLICY_VIOLATION, 44, false, "request violates a configured policy")                              \
  X(OUT_OF_ORDER_SEQUENCE_NUMBER, 45, false, "producer sequence number out of order")                 \
  X(DUPLICATE_SEQUENCE_NUMBER, 46, false, "duplicate producer sequence number")                       \
  X(INVALID_PRODUCER_EPOCH, 47, false, "producer epoch is stale")                                     \
  X(INVALID_TXN_STATE, 48, false, "operation invalid in the transaction's state")                     \
  X(INVALID_PRODUCER_ID_MAPPING, 49, false, "producer id does not match the transactional id")        \
  X(INVALID_TRANSACTION_TIMEOUT, 50, false, "transaction timeout too large")                          \
  X(CONCURRENT_TRANSACTIONS, 51, true, "another transaction operation is in progress")                \
  X(TRANSACTION_COORDINATOR_FENCED, 52, false, "transaction coordinator was fenced")                  \
  X(TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 53, false, "transactional id authorization failed")        \
  X(SECURITY_DISABLED, 54, false, "security features are disabled")                                   \
  X(OPERATION_NOT_ATTEMPTED, 55, false, "not attempted because another part failed")                  \
  X(KAFKA_STORAGE_ERROR, 56, true, "disk error accessing the log")                                    \
  X(LOG_DIR_NOT_FOUND, 57, false, "log directory not found")                                          \
  X(SASL_AUTHENTICATION_FAILED, 58, false, "SASL authentication failed")                              \
  X(UNKNOWN_PRODUCER_ID, 59, false, "producer id unknown to the broker")                              \
  X(REASSIGNMENT_IN_PROGRESS, 60, false, "partition reassignment in progress")                        \
  X(DELEGATION_TOKEN_AUTH_DISABLED, 61, false, "delegation tokens are disabled")                      \
  X(DELEGATION_TOKEN_NOT_FOUND, 62, false, "delegation token not found")                              \
  X(DELEGATION_TOKEN_OWNER_MISMATCH, 63, false, "delegation token owner mismatch")                    \
  X(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, 64, false, "delegation token request not allowed")          \
  X(DELEGATION_TOKEN_AUTHORIZATION_FAILED, 65, false, "delegation token authorization failed")        \
  X(DELEGATION_TOKEN_EXPIRED, 66, false, "delegation token expired")                                  \
  X(INVALID_PRINCIPAL_TYPE, 67, false, "principal type not supported")                                \
  X(NON_EMPTY_GROUP, 68, false, "group is not empty")                                                 \
  X(GROUP_ID_NOT_FOUND, 69, false, "group id not found")                                              \
  X(FETCH_SESSION_ID_NOT_FOUND, 70, true, "fetch session id not found")                               \
  X(INVALID_FETCH_SESSION_EPOCH, 71, true, "fetch session epoch invalid")                             \
  X(LISTENER_NOT_FOUND, 72, true, "no matching listener on the leader")                               \
  X(TOPIC_DELETION_DISABLED, 73, false, "topic deletion is disabled")                                 \
  X(FENCED_LEADER_EPOCH, 74, true, "leader epoch older than the broker's")                            \
  X(UNKNOWN_LEADER_EPOCH, 75, true, "leader epoch newer than the broker's")                           \
  X(UNSUPPORTED_COMPRESSION_TYPE, 76, false, "compression type not supported by this version")        \
  X(STALE_BROKER_EPOCH, 77, false, "broker epoch has changed")                                        \
  X(OFFSET_NOT_AVAILABLE, 78, true, "offset not available yet")                                       \
  X(MEMBER_ID_REQUIRED, 79, false, "rejoin with the given member id")                                 \
  X(PREFERRED_LEADER_NOT_AVAILABLE, 80, true, "preferred leader not available")                       \
  X(GROUP_MAX_SIZE_REACHED, 81, false, "group is at its maximum size")                                \
  X(FENCED_INSTANCE_ID, 82, false, "static member fenced by a newer instance")                        \
  X(ELIGIBLE_LEADERS_NOT_AVAILABLE, 83, true, "no eligible leader")                                   \
  X(ELECTION_NOT_NEEDED, 84, true, "leader election not needed")                                      \
  X(NO_REASSIGNMENT_IN_PROGRESS, 85, false, "no reassignment in progress")                            \
  X(GROUP_SUBSCRIBED_TO_TOPIC, 86, false, "group is subscribed to the topic")                         \
  X(INVALID_RECORD, 87, false, "record failed broker-side validation")                                \
  X(UNSTABLE_OFFSET_COMMIT, 88, true, "pending transactional offset commits")                         \
  X(THROTTLING_QUOTA_EXCEEDED, 89, true, "throttling quota exceeded")                                 \
  X(PRODUCER_FENCED, 90, false, "a newer producer with the same transactional id exists")             \
  X(RESOURCE_NOT_FOUND, 91, false, "resource not found")                                              \
  X(DUPLICATE_RESOURCE, 92, false, "resource named twice in one request")                             \
  X(UNACCEPTABLE_CREDENTIAL, 93, false, "credential rejected")                                        \
  X(INCONSISTENT_VOTER_SET, 94, false, "voter sets disagree")                                         \
  X(INVALID_UPDATE_VERSION, 95, false, "invalid update version")                                      \
  X(FEATURE_UPDATE_FAILED, 96, false, "feature update failed")                                        \
  X(PRINCIPAL_DESERIALIZATION_FAILURE, 97, false, "could not deserialize the principal")              \
  X(SNAPSHOT_NOT_FOUND, 98, false, "snapshot not found")                                              \
  X(POSITION_OUT_OF_RANGE, 99, false, "position outside the snapshot")                                \
  X(UNKNOWN_TOPIC_ID, 100, true, "topic id not known")                                                \
  X(DUPLICATE_BROKER_REGISTRATION, 101, false, "broker id already registered")                        \
  X(BROKER_ID_NOT_REGISTERED, 102, false, "broker id not registered")                                 \
  X(INCONSISTENT_TOPIC_ID, 103, true, "topic id does not match the log's")                            \
  X(INCONSISTENT_CLUSTER_ID, 104, false, "cluster id mismatch")                                       \
  X(TRANSACTIONAL_ID_NOT_FOUND, 105, false, "transactional id not found")                             \
  X(FETCH_SESSION_TOPIC_ID_ERROR, 106, true, "fetch session topic ids inconsistent")                  \
  X(INELIGIBLE_REPLICA, 107, false, "replica not eligible for the ISR")                               \
  X(NEW_LEADER_ELECTED, 108, false, "a new leader was elected")                                       \
  X(OFFSET_MOVED_TO_TIERED_STORAGE, 109, false, "offset moved to tiered storage")                     \
  X(FENCED_MEMBER_EPOCH, 110, false, "member epoch fenced")                                           \
  X(UNRELEASED_INSTANCE_ID, 111, false, "instance id still in use")                                   \
  X(UNSUPPORTED_ASSIGNOR, 112, false, "assignor not supported")                                       \
  X(STALE_MEMBER_EPOCH, 113, false, "member epoch is stale")                                          \
  X(MISMATCHED_ENDPOINT_TYPE, 114, false, "request sent to the wrong endpoint type")                  \
  X(UNSUPPORTED_ENDPOINT_TYPE, 115, false, "endpoint type not supported")                             \
  X(UNKNOWN_CONTROLLER_ID, 116, false, "controller id not known")                                     \
  X(UNKNOWN_SUBSCRIPTION_ID, 117, false, "telemetry subscription id not known")                       \
  X(TELEMETRY_TOO_LARGE, 118, false, "telemetry payload too large")                                   \
  X(INVALID_REGISTRATION, 119, false, "invalid controller registration")                              \
  X(TRANSACTION_ABORTABLE, 120, false, "transaction must be aborted")                                 \
  X(INVALID_RECORD_STATE, 121, false, "record state invalid for the operation")                       \
  X(SHARE_SESSION_NOT_FOUND, 122, true, "share session not found")                                    \
  X(INVALID_SHARE_SESSION_EPOCH, 123, true, "share session epoch invalid")                            \
  X(FENCED_STATE_EPOCH, 124, false, "share state epoch fenced")                                       \
  X(INVALID_VOTER_KEY, 125, false, "voter key mismatch")                                              \
  X(DUPLICATE_VOTER, 126, false, "voter already exists")                                              \
  X(VOTER_NOT_FOUND, 127, false, "voter not found")

enum class ErrorCode : int16_t {
#define CK_ERROR_ENUM(name, code, retriable, desc) name = code,
  CK_KAFKA_ERRORS(CK_ERROR_ENUM)
#undef CK_ERROR_ENUM
};

constexpr int16_t to_wire(ErrorCode e) { return static_cast<int16_t>(e); }

// Kafka's upper-case name ("UNKNOWN_TOPIC_OR_PARTITION"), or "UNKNOWN_ERROR_CODE".
std::string_view error_name(ErrorCode e);
std::string_view error_description(ErrorCode e);
bool is_retriable(ErrorCode e);

}  // namespace ciuickafka::protocol
