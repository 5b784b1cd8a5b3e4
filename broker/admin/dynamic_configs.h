// broker/admin/dynamic_configs.h: dynamic broker configs (Kafka's
// DynamicBrokerConfig), a Broker service: `broker.service<DynamicConfigs>()`.
//
// AlterConfigs and IncrementalAlterConfigs on a BROKER resource replace or
// edit one of two sets: the cluster-wide default (resource name "") and this
// broker's own (its node id), this broker's winning (config/broker_config.h
// lays them over the start-up config). Only keys that take effect live here
// are accepted (config::not_dynamic_reason: the topic-level defaults such as
// log.retention.ms, message.max.bytes, min.insync.replicas,
// compression.type); after a change every topic's logs take their new
// effective settings (TopicTable::refresh_log_configs), and Produce, the
// cleaner and retention read the new values from then on. DescribeConfigs
// reports them as DYNAMIC_BROKER_CONFIG / DYNAMIC_DEFAULT_BROKER_CONFIG.
//
// Single node: persisted in `__ciuickafka_broker_configs.pb` in the first
// log dir (dynamic_configs.proto), written atomically before the change is
// answered and read by Broker::open before topics load. Cluster mode
// (ZooKeeper's /config/brokers) is not implemented: a change is refused
// there (INVALID_REQUEST) as before.
//
// Thread-safety: replace() calls are serialised by a mutex; readers of the
// broker config may run throughout (broker_config.h).
#pragma once

#include <mutex>
#include <string>

#include "broker/cluster/topic_table.h"
#include "broker/config/broker_config.h"
#include "storage/io/file.h"

namespace ciuickafka::broker {
class Broker;
}

namespace ciuickafka::broker::admin {

inline constexpr const char* kDynamicConfigsFile = "__ciuickafka_broker_configs.pb";

class DynamicConfigs {
 public:
  explicit DynamicConfigs(Broker& broker) : broker_(broker) {}

  // The set of resource "" (cluster_default) or of this broker.
  config::DynamicMap current(bool cluster_default) const;
  // Replaces that set: validated (nothing changes on an error), then, unless
  // validate_only, persisted and applied. Errors (Kafka's): INVALID_REQUEST
  // for a key that is unknown or not dynamic here, a bad value, or in
  // cluster mode; KAFKA_STORAGE_ERROR when the file cannot be written.
  TopicError replace(bool cluster_default, const config::DynamicMap& configs, bool validate_only);

  // Reads a single node's persisted sets from `dir` into `config` (nothing
  // when the file is absent). An error names the file and why.
  static storage::Status load(storage::io::FileSystem& fs, const std::string& dir, config::BrokerConfig& config);

 private:
  Broker& broker_;
  std::mutex mu_;
};

}  // namespace ciuickafka::broker::admin
