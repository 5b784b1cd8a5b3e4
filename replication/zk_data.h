// replication/zk_data.h: Kafka's ZooKeeper layout (3.9, ZooKeeper mode):
// znode paths and the JSON payloads stored at them, as plain structs.
//
// The facts come from Kafka's core/src/main/scala/kafka/zk/ZkData.scala.
// Encoders write the bytes Kafka writes for the same content, members in the
// order Kafka's Scala maps iterate (see jvm_order.h), so zookeeper-shell,
// CMAK and Cruise Control see what they would see on a Kafka cluster.
// Decoders accept what Kafka accepts (older versions, optional members,
// payloads written by other tools) and return an Error naming the field that
// is wrong; no input crashes them.
//
// Thread-safety: constants and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/wire/types.h"
#include "replication/json.h"
#include "replication/result.h"

namespace ciuickafka::replication {

// ---- paths
inline constexpr std::string_view kControllerPath = "/controller";
inline constexpr std::string_view kControllerEpochPath = "/controller_epoch";
inline constexpr std::string_view kClusterIdPath = "/cluster/id";
inline constexpr std::string_view kBrokerIdsPath = "/brokers/ids";
inline constexpr std::string_view kTopicsPath = "/brokers/topics";
inline constexpr std::string_view kBrokerSeqIdPath = "/brokers/seqid";
inline constexpr std::string_view kConfigPath = "/config";
inline constexpr std::string_view kTopicConfigsPath = "/config/topics";
inline constexpr std::string_view kConfigChangesPath = "/config/changes";
inline constexpr std::string_view kConfigChangePrefix = "/config/changes/config_change_";  // sequential
inline constexpr std::string_view kDeleteTopicsPath = "/admin/delete_topics";
inline constexpr std::string_view kReassignPartitionsPath = "/admin/reassign_partitions";
inline constexpr std::string_view kPreferredReplicaElectionPath = "/admin/preferred_replica_election";
inline constexpr std::string_view kIsrChangeNotificationPath = "/isr_change_notification";
inline constexpr std::string_view kIsrChangePrefix = "/isr_change_notification/isr_change_";  // sequential
inline constexpr std::string_view kLatestProducerIdBlockPath = "/latest_producer_id_block";
inline constexpr std::string_view kLogDirEventNotificationPath = "/log_dir_event_notification";
inline constexpr std::string_view kLogDirEventPrefix = "/log_dir_event_notification/log_dir_event_";  // sequential
inline constexpr std::string_view kFeaturePath = "/feature";
inline constexpr std::string_view kConsumersPath = "/consumers";

// Kafka's ConfigType.ALL: the entity types under /config.
inline constexpr std::array<std::string_view, 5> kConfigEntityTypes = {"topics", "clients", "users", "brokers",
                                                                       "ips"};
// ZkData.PersistentZkPaths: created (with parents) at broker start-up, in this order.
inline constexpr std::array<std::string_view, 14> kPersistentPaths = {
    "/consumers", "/brokers/ids", "/brokers/topics", "/config/changes", "/admin/delete_topics",
    "/brokers/seqid", "/isr_change_notification", "/latest_producer_id_block", "/log_dir_event_notification",
    "/config/topics", "/config/clients", "/config/users", "/config/brokers", "/config/ips"};

std::string broker_id_path(int32_t broker_id);                                  // /brokers/ids/N
std::string topic_path(std::string_view topic);                                 // /brokers/topics/T
std::string topic_partitions_path(std::string_view topic);                      // .../T/partitions
std::string topic_partition_path(std::string_view topic, int32_t partition);    // .../partitions/P
std::string partition_state_path(std::string_view topic, int32_t partition);    // .../partitions/P/state
std::string config_entity_path(std::string_view type, std::string_view name);   // /config/<type>/<name>
std::string topic_config_path(std::string_view topic);                          // /config/topics/T
std::string delete_topic_path(std::string_view topic);                          // /admin/delete_topics/T

// ---- /brokers/ids/N (ephemeral)
struct BrokerEndPoint {
  std::string listener;           // listener name, upper case, e.g. "PLAINTEXT" or "CLIENT"
  std::string host;               // empty: the wildcard (Kafka's null); IPv6 without brackets
  int32_t port = 0;
  std::string security_protocol;  // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
  bool operator==(const BrokerEndPoint&) const = default;
};
struct BrokerRegistration {
  int32_t version = 5;                   // 2, 4 or 5 when encoding (what Kafka writes); 1..5 decoded
  std::vector<BrokerEndPoint> endpoints; // advertised, in order
  int32_t jmx_port = -1;
  int64_t timestamp_ms = -1;             // "timestamp"; -1 when absent or not a number (Kafka ignores it)
  std::optional<std::string> rack;       // written from version 3
  Json features = Json::object();        // v5 "features" object, kept as is (the ZK broker writes {})
};
// "LISTENER://host:port", IPv6 hosts in brackets (Kafka's EndPoint.connectionString).
std::string endpoint_connection_string(const BrokerEndPoint& e);
std::string encode_broker_registration(const BrokerRegistration& b);
Result<BrokerRegistration> decode_broker_registration(std::string_view bytes);

// ---- /controller (ephemeral) and /controller_epoch
struct ControllerRegistration {
  int32_t broker_id = -1;
  int64_t timestamp_ms = -1;                     // -1 when absent or not a number
  std::optional<int32_t> kraft_controller_epoch; // v2 writes -1; absent in v1
};
std::string encode_controller(int32_t broker_id, int64_t timestamp_ms, int32_t kraft_controller_epoch = -1);
Result<ControllerRegistration> decode_controller(std::string_view bytes);
std::string encode_controller_epoch(int32_t epoch);  // plain decimal text
Result<int32_t> decode_controller_epoch(std::string_view bytes);

// ---- /cluster/id
std::string encode_cluster_id(std::string_view id);
Result<std::string> decode_cluster_id(std::string_view bytes);

// ---- /brokers/topics/T
struct PartitionReplicas {
  std::vector<int32_t> replicas;
  std::vector<int32_t> adding_replicas;    // during a reassignment
  std::vector<int32_t> removing_replicas;
  bool operator==(const PartitionReplicas&) const = default;
};
struct TopicAssignment {
  std::optional<protocol::Uuid> topic_id;  // absent in v1/v2 (CMAK, old tools)
  std::map<int32_t, PartitionReplicas> partitions;
};
std::string encode_topic_assignment(const TopicAssignment& t);  // version 3
Result<TopicAssignment> decode_topic_assignment(std::string_view bytes);

// ---- /brokers/topics/T/partitions/P/state
enum class LeaderRecoveryState : int8_t { kRecovered = 0, kRecovering = 1 };
struct PartitionState {
  int32_t leader = -1;
  int32_t leader_epoch = 0;
  int32_t controller_epoch = 0;
  std::vector<int32_t> isr;
  LeaderRecoveryState leader_recovery_state = LeaderRecoveryState::kRecovered;
  bool operator==(const PartitionState&) const = default;
};
std::string encode_partition_state(const PartitionState& s);
Result<PartitionState> decode_partition_state(std::string_view bytes);

// ---- /config/<type>/<name> and /config/changes/config_change_N
// Config values are strings; pairs in the order the caller put them into
// Kafka's Properties (Kafka writes them in that Properties' hash order).
using ConfigEntries = std::vector<std::pair<std::string, std::string>>;
std::string encode_entity_config(const ConfigEntries& config);
Result<ConfigEntries> decode_entity_config(std::string_view bytes);
std::string encode_config_change(std::string_view entity_path);  // e.g. "topics/T"
Result<std::string> decode_config_change(std::string_view bytes);

// ---- /admin/reassign_partitions, /admin/preferred_replica_election,
//      /isr_change_notification/isr_change_N, /log_dir_event_notification/...
struct TopicPartitionRef {
  std::string topic;
  int32_t partition = 0;
  bool operator==(const TopicPartitionRef&) const = default;
  auto operator<=>(const TopicPartitionRef&) const = default;
};
struct PartitionReassignment {
  std::string topic;
  int32_t partition = 0;
  std::vector<int32_t> replicas;
  bool operator==(const PartitionReassignment&) const = default;
};
std::string encode_reassign_partitions(const std::vector<PartitionReassignment>& r);
Result<std::vector<PartitionReassignment>> decode_reassign_partitions(std::string_view bytes);
// Both /admin/preferred_replica_election and isr_change_N:
// {"version":1,"partitions":[{"topic":..,"partition":..}]}
std::string encode_partition_list(const std::vector<TopicPartitionRef>& partitions);
Result<std::vector<TopicPartitionRef>> decode_partition_list(std::string_view bytes);
std::string encode_log_dir_event(int32_t broker_id);  // event 1: log directory failure
Result<int32_t> decode_log_dir_event(std::string_view bytes);  // the broker id

// ---- /latest_producer_id_block
struct ProducerIdBlock {
  int32_t broker = -1;
  int64_t block_start = 0;  // first id of the block
  int64_t block_end = 0;    // last id, inclusive (Kafka's blocks hold 1000)
  bool operator==(const ProducerIdBlock&) const = default;
};
std::string encode_producer_id_block(const ProducerIdBlock& b);
Result<ProducerIdBlock> decode_producer_id_block(std::string_view bytes);

}  // namespace ciuickafka::replication
