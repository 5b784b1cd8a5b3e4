// broker/admin/alter_resource.h: what AlterConfigs and
// IncrementalAlterConfigs share: the checks on a resource before its configs
// are touched, and the answer for resources we cannot alter.
//
// A TOPIC resource must be a valid (INVALID_TOPIC_EXCEPTION) and existing
// (UNKNOWN_TOPIC_OR_PARTITION) topic; in cluster mode existence is the
// config store's to check (ZooKeeper's /brokers/topics/T, not this broker's
// replicas). BROKER resources must name this broker or "" (INVALID_REQUEST);
// their dynamic configs change (BrokerConfigStore, dynamic_configs.h). For
// BROKER_LOGGER resources a change is INVALID_REQUEST with a message saying
// so and an empty change set is accepted (it changes nothing). A resource
// named twice in one request is INVALID_REQUEST, as in Kafka.
//
// alter_each_resource() is the per-resource response loop both handlers
// share over their different generated request/response types.
//
// ConfigStore is where a topic's overrides live: this broker's TopicTable
// on a single node (LocalConfigStore), ZooKeeper in a cluster
// (ZkConfigStore: /config/topics/T plus a /config/changes notification that
// every broker applies, cluster/config_changes.h).
//
// log_alter() writes the operator's line for each change.
//
// Header-only (inline functions): small, and used by several handler files.
// Thread-safety: pure functions (reads the topic table).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/admin/dynamic_configs.h"
#include "broker/admin/resource_types.h"
#include "broker/broker.h"
#include "broker/cluster/zk_topics.h"
#include "broker/config/topic_config.h"
#include "metrics/log/log.h"
#include "protocol/error_code.h"

namespace ciuickafka::broker::admin {

class ConfigStore {
 public:
  explicit ConfigStore(Broker& broker) : broker_(broker) {}
  virtual ~ConfigStore() = default;
  // The topic's current overrides (UNKNOWN_TOPIC_OR_PARTITION if none).
  virtual TopicError current(const std::string& topic, ConfigMap* out) = 0;
  // Replaces the overrides (validated; validate_only changes nothing).
  virtual TopicError replace(const std::string& topic, const ConfigMap& configs, bool validate_only) = 0;
  // The effective value of key for a topic with these overrides.
  virtual std::optional<std::string> effective(const ConfigMap& overrides, const std::string& key) const {
    auto it = overrides.find(key);
    return it != overrides.end() ? std::optional<std::string>(it->second) : config::topic_default(broker_.config(), key);
  }
  // The definition of a config this resource takes (null: unknown).
  virtual const config::KeyDef* key_def(const std::string& name) const { return config::find_by_topic_name(name); }

 protected:
  Broker& broker_;
};

class LocalConfigStore final : public ConfigStore {
 public:
  using ConfigStore::ConfigStore;
  TopicError current(const std::string& topic, ConfigMap* out) override {
    auto t = broker_.topics().find(topic);
    if (!t) return {protocol::ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "Topic '" + topic + "' does not exist."};
    *out = t->configs;
    return {};
  }
  TopicError replace(const std::string& topic, const ConfigMap& configs, bool validate_only) override {
    return broker_.topics().set_configs(topic, configs, validate_only);
  }
};

class ZkConfigStore final : public ConfigStore {
 public:
  ZkConfigStore(Broker& broker, ZkTopicAdmin& admin) : ConfigStore(broker), admin_(admin) {}
  TopicError current(const std::string& topic, ConfigMap* out) override { return admin_.read_configs(topic, out); }
  TopicError replace(const std::string& topic, const ConfigMap& configs, bool validate_only) override {
    return admin_.alter_configs(topic, configs, validate_only);
  }

 private:
  ZkTopicAdmin& admin_;
};

// A BROKER resource: its dynamic configs ("" is the cluster-wide default,
// "<node id>" this broker's own; dynamic_configs.h), on this node's disk
// (single node) or in ZooKeeper (cluster, on the admin worker).
class BrokerConfigStore final : public ConfigStore {
 public:
  explicit BrokerConfigStore(Broker& broker, replication::zk::Session* zk = nullptr)
      : ConfigStore(broker), zk_(zk) {}
  TopicError current(const std::string& name, ConfigMap* out) override {
    auto& d = broker_.service<DynamicConfigs>();
    if (zk_ != nullptr) return d.current_in_zk(*zk_, name.empty(), out);
    *out = d.current(name.empty());
    return {};
  }
  TopicError replace(const std::string& name, const ConfigMap& configs, bool validate_only) override {
    auto& d = broker_.service<DynamicConfigs>();
    if (zk_ != nullptr) return d.replace_in_zk(*zk_, name.empty(), configs, validate_only);
    return d.replace(name.empty(), configs, validate_only);
  }
  std::optional<std::string> effective(const ConfigMap& overrides, const std::string& key) const override {
    auto it = overrides.find(key);
    if (it != overrides.end()) return it->second;
    if (config::find_key(key)) return broker_.config().describe_value(key);
    const config::Entry* e = broker_.config().listener_entry(key);
    return e ? config::format_value(e->value) : std::nullopt;
  }
  // A listener override (config/broker_config.h) is its base key's kind.
  const config::KeyDef* key_def(const std::string& name) const override {
    if (const config::KeyDef* k = config::find_key(name)) return k;
    auto lk = config::parse_listener_key(name);
    return lk ? lk->base : nullptr;
  }

 private:
  replication::zk::Session* zk_;
};

// Checks a resource about to be altered; `changes` = number of configs.
// NONE means: a topic, go ahead (or a broker resource with nothing to do,
// then *nothing_to_do is set).
inline TopicError check_alter_resource(Broker& broker, int8_t type, const std::string& name, size_t changes,
                                       bool* nothing_to_do) {
  using protocol::ErrorCode;
  *nothing_to_do = false;
  switch (type) {
    case kResourceTopic:
      if (auto why = TopicTable::invalid_name_reason(name)) return {ErrorCode::INVALID_TOPIC_EXCEPTION, *why};
      if (broker.cluster() == nullptr && !broker.topics().find(name))
        return {ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "Topic '" + name + "' does not exist."};
      return {};
    case kResourceBroker:
    case kResourceBrokerLogger:
      if (auto why = bad_broker_resource(name, broker.node_id())) return {ErrorCode::INVALID_REQUEST, *why};
      if (type == kResourceBroker) return {};  // BrokerConfigStore
      if (changes == 0) {
        *nothing_to_do = true;
        return {};
      }
      return {ErrorCode::INVALID_REQUEST, "Changing logger levels at runtime is not supported."};
    default:
      return {ErrorCode::INVALID_REQUEST, "Unsupported resource type " + std::to_string(type)};
  }
}

// "k=v, k=v" ({} when empty), for log lines.
inline std::string config_map_text(const ConfigMap& configs) {
  std::string out = "{";
  for (const auto& [k, v] : configs) out += (out.size() > 1 ? ", " : "") + k + "=" + v;
  return out + "}";
}

// One log line per resource an AlterConfigs-shaped request changed (INFO) or
// was refused (WARN); nothing for validate_only. `configs` is the new
// override set (null when the request never got that far).
inline void log_alter(std::string_view api, const std::optional<std::string>& client_id, int8_t type,
                      const std::string& name, const ConfigMap* configs, const TopicError& e, bool validate_only) {
  namespace lg = metrics::log;
  if (validate_only) return;
  const std::string what = (type == kResourceTopic ? "topic " : "resource ") + name;
  const std::string client = client_id.value_or("");
  if (e.ok()) {
    if (!configs || type != kResourceTopic || !lg::enabled(lg::Level::kInfo)) return;
    lg::write(lg::Level::kInfo, "config",
              std::string(api) + ": " + what + " configs set to " + config_map_text(*configs),
              {{"client_id", client}});
  } else if (lg::enabled(lg::Level::kWarn)) {
    lg::write(lg::Level::kWarn, "config",
              std::string(api) + ": " + what + " not changed: " + std::string(protocol::error_name(e.code)) +
                  (e.message.empty() ? "" : " (" + e.message + ")"),
              {{"client_id", client}});
  }
}

// Positions of resources named more than once (type and name) in a request.
template <class Resource>
std::vector<bool> duplicate_resources(const std::vector<Resource>& resources) {
  std::map<std::pair<int8_t, std::string>, int> count;
  for (const auto& r : resources) ++count[{r.resource_type, r.resource_name}];
  std::vector<bool> dup;
  dup.reserve(resources.size());
  for (const auto& r : resources) dup.push_back(count[{r.resource_type, r.resource_name}] > 1);
  return dup;
}

// The response to an AlterConfigs-shaped request (AlterConfigs,
// IncrementalAlterConfigs): one entry per resource, in request order, with
// the resource's type and name, INVALID_REQUEST for a resource named twice,
// else the error alter(resource) returns (its message only on an error).
template <class Response, class Request, class Alter>
Response alter_each_resource(const Request& req, Alter&& alter) {
  const std::vector<bool> dup = duplicate_resources(req.resources);
  Response resp;
  resp.responses.reserve(req.resources.size());
  for (size_t i = 0; i < req.resources.size(); ++i) {
    const auto& r = req.resources[i];
    const TopicError e =
        dup[i] ? TopicError{protocol::ErrorCode::INVALID_REQUEST, "Error due to duplicate resources"} : alter(r);
    auto& out = resp.responses.emplace_back();
    out.resource_type = r.resource_type;
    out.resource_name = r.resource_name;
    out.error_code = protocol::to_wire(e.code);
    out.error_message = e.ok() ? std::nullopt : std::optional<std::string>(e.message);
  }
  return resp;
}

}  // namespace ciuickafka::broker::admin
