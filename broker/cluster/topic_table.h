// broker/cluster/topic_table.h: the topics this broker hosts.
//
// A Topic is an immutable snapshot (name, id, partitions, config overrides);
// every change builds a new snapshot and swaps it in, so readers (Metadata,
// Produce, Fetch) take a shared_ptr and never hold a lock while they work.
// Changes (create, delete, add partitions, alter configs) are serialised by
// one mutex and persisted before they are visible: the partition logs first
// (LogManager), then the registry file (topics.proto, written atomically).
//
// Names follow Kafka's rules: 1-249 characters of [a-zA-Z0-9._-], not "."
// or "..". Topic configs are the topic-level names (retention.ms, ...),
// validated through the broker registry (config/topic_config.h); their
// effective value is the override, else the broker's default.
//
// Cluster mode (set_sparse(true) before load()): a broker hosts only the
// partitions the controller assigned it, so a Topic's partitions vector may
// hold null slots (index = partition id, size = highest hosted + 1). load()
// then adopts what is on disk and creates nothing, ensure_partition() adds
// one partition (LeaderAndIsr), remove_partition() drops one (StopReplica
// with delete). Partitions made in sparse mode start kOffline: nothing is
// served until a LeaderAndIsr names them. Single-node mode never has null
// slots. The registry file keeps the same format (partitions = the vector's
// size); in sparse mode a missing slot is simply not created on load.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "broker/cluster/partition.h"
#include "broker/config/broker_config.h"
#include "protocol/error_code.h"
#include "protocol/wire/types.h"
#include "storage/io/file.h"
#include "storage/log_manager.h"

namespace ciuickafka::broker {

using ConfigMap = std::map<std::string, std::string>;

struct Topic {
  std::string name;
  protocol::Uuid id{};
  int16_t replication_factor = 1;
  ConfigMap configs;  // overrides only
  std::vector<std::shared_ptr<Partition>> partitions;  // null slots: not hosted (cluster mode)

  bool is_internal() const { return name == "__consumer_offsets" || name == "__transaction_state"; }
  std::shared_ptr<Partition> partition(int32_t p) const {
    return p >= 0 && static_cast<size_t>(p) < partitions.size() ? partitions[p] : nullptr;
  }
  // The same without a reference taken (a hot path's look that keeps the
  // topic snapshot alive meanwhile); nullptr when not hosted.
  Partition* partition_ptr(int32_t p) const {
    return p >= 0 && static_cast<size_t>(p) < partitions.size() ? partitions[p].get() : nullptr;
  }
};

// An error code and the message Kafka would put next to it.
struct TopicError {
  protocol::ErrorCode code = protocol::ErrorCode::NONE;
  std::string message;
  bool ok() const { return code == protocol::ErrorCode::NONE; }
};

class TopicTable {
 public:
  TopicTable(const config::BrokerConfig& config, storage::io::FileSystem& fs, storage::LogManager& logs,
             const AppendListeners* listeners);

  // Reads the registry file and adopts the logs the LogManager opened:
  // topics in the file get their partitions' logs (created when missing),
  // logs on disk that the file does not name become topics with default
  // configs (a directory copied from Kafka, say).
  storage::Status load(int64_t now_ms);

  // Cluster mode (see the header comment); call before load().
  void set_sparse(bool sparse) { sparse_ = sparse; }
  bool sparse() const { return sparse_; }

  // Cluster mode: the partition `index` of topic `name`, its log created
  // when missing (topic id: `id`, or the topic's, or a new one when both
  // are zero; a new topic takes `configs` as its overrides). An id that
  // differs from the topic's is INCONSISTENT_TOPIC_ID; a failed log
  // creation KAFKA_STORAGE_ERROR. *created says whether the log is new.
  struct Ensured {
    TopicError error;
    std::shared_ptr<Partition> partition;
    bool created = false;
  };
  Ensured ensure_partition(std::string_view name, const protocol::Uuid& id, int32_t index, const ConfigMap& configs,
                           int64_t now_ms);
  // Cluster mode: removes one partition's log (the slot becomes null; the
  // topic goes when no slot is left). UNKNOWN_TOPIC_OR_PARTITION if absent.
  TopicError remove_partition(std::string_view name, int32_t index);

  std::shared_ptr<const Topic> find(std::string_view name) const;
  std::shared_ptr<const Topic> find(const protocol::Uuid& id) const;
  std::shared_ptr<Partition> partition(std::string_view topic, int32_t index) const;
  std::vector<std::shared_ptr<const Topic>> list() const;  // sorted by name
  size_t partition_count() const;

  // Kafka's topic name rules; an error message or nullopt.
  static std::optional<std::string> invalid_name_reason(std::string_view name);

  // partitions / replication_factor of -1 take the broker defaults
  // (num.partitions, default.replication.factor). validate_only checks
  // everything and changes nothing.
  struct Created {
    TopicError error;
    std::shared_ptr<const Topic> topic;  // set on success (or the would-be topic when validating)
  };
  Created create(std::string_view name, int32_t partitions, int16_t replication_factor,
                 const ConfigMap& configs, bool validate_only, int64_t now_ms);
  TopicError remove(std::string_view name);
  TopicError add_partitions(std::string_view name, int32_t new_total, bool validate_only, int64_t now_ms);
  // Replaces the topic's overrides with `configs` (AlterConfigs semantics;
  // IncrementalAlterConfigs builds the full map first).
  TopicError set_configs(std::string_view name, const ConfigMap& configs, bool validate_only);
  // Re-applies every topic's effective storage settings to its logs, after
  // a broker default changed (dynamic broker configs).
  void refresh_log_configs();

  // Effective value of a topic config for a topic (override, else broker
  // default); nullopt for an unknown key or a null default.
  std::optional<std::string> config_value(const Topic& topic, std::string_view key) const;
  // The topic's min.insync.replicas (override, else the broker's; 1 when
  // unreadable).
  int32_t min_insync_replicas(const Topic& topic) const;
  // Validates overrides: first bad key/value as INVALID_CONFIG with a message.
  TopicError validate_configs(const ConfigMap& configs) const;
  // The storage settings a topic's configs imply.
  storage::LogConfig log_config(const ConfigMap& overrides) const;

  const config::BrokerConfig& broker_config() const { return config_; }

 private:
  storage::Status persist_locked();  // writes the registry file; mu_ held
  void publish_locked(std::shared_ptr<const Topic> topic);
  void unpublish_locked(const std::string& name);
  std::shared_ptr<Partition> make_partition(const Topic& t, int32_t index, std::shared_ptr<storage::Log> log) const;

  const config::BrokerConfig& config_;
  storage::io::FileSystem& fs_;
  storage::LogManager& logs_;
  const AppendListeners* const listeners_;
  const std::string registry_path_;
  bool sparse_ = false;

  std::mutex write_mu_;     // serialises changes (and the registry file)
  mutable std::mutex mu_;   // guards the maps (pointer swaps only)
  std::map<std::string, std::shared_ptr<const Topic>, std::less<>> by_name_;
  std::map<protocol::Uuid, std::shared_ptr<const Topic>> by_id_;
};

}  // namespace ciuickafka::broker
