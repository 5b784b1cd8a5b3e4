// broker/admin/config_describe.h: DescribeConfigs entries for a topic or for
// the broker, computed from the config registry (broker/config/registry.h).
//
// A topic config's value is its override (source TOPIC_CONFIG), else the
// broker default it inherits: STATIC_BROKER_CONFIG when any key of that
// broker key's synonym group was set (file, --override, environment), else
// DEFAULT_CONFIG. Its synonyms, as Kafka lists them: the override first,
// then the broker keys of the group in precedence order (each set value,
// then its default). The known topic configs are the topic-level names of
// the registry (one per synonym group), in name order.
//
// Broker configs: every registry key, read_only unless it can be set
// dynamically here, source from where it was set, then the listener
// overrides that are set (listener.name.<l>.max.connections, ...).
// Passwords are reported as null and sensitive.
//
// CreateTopics v5+ reuses describe_topic_configs for the configs of the
// topic it made. Header-only (inline functions).
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "broker/cluster/topic_table.h"
#include "broker/config/broker_config.h"
#include "broker/config/registry.h"
#include "broker/config/types.h"

namespace ciuickafka::broker::admin {

struct ConfigSynonym {
  std::string name;
  std::optional<std::string> value;
  config::DescribeSource source = config::DescribeSource::kDefaultConfig;
};

struct DescribedConfig {
  std::string name;
  std::optional<std::string> value;
  bool read_only = false;
  config::DescribeSource source = config::DescribeSource::kDefaultConfig;
  bool is_sensitive = false;
  std::vector<ConfigSynonym> synonyms;  // filled only when asked for
  int8_t config_type = 0;              // DescribeConfigs v3 ConfigType code
  std::string documentation;
};

// DescribeConfigsResponse ConfigType codes (v3+).
inline int8_t describe_type(config::ConfigType t) {
  switch (t) {
    case config::ConfigType::kBoolean: return 1;
    case config::ConfigType::kString: return 2;
    case config::ConfigType::kInt: return 3;
    case config::ConfigType::kLong: return 5;
    case config::ConfigType::kDouble: return 6;
    case config::ConfigType::kList: return 7;
    case config::ConfigType::kClass: return 8;
    case config::ConfigType::kPassword: return 9;
  }
  return 0;
}

// The topic-level config names we know, sorted.
inline std::vector<std::string> known_topic_configs() {
  std::set<std::string> names;
  for (const config::KeyDef& k : config::all_keys())
    if (!k.topic_name.empty()) names.insert(std::string(k.topic_name));
  return {names.begin(), names.end()};
}

inline bool wanted(const std::optional<std::vector<std::string>>& keys, std::string_view name) {
  // null or (as older clients send) empty: every key.
  if (!keys || keys->empty()) return true;
  return std::find(keys->begin(), keys->end(), name) != keys->end();
}

inline std::vector<ConfigSynonym> broker_synonyms(const config::BrokerConfig& cfg, std::string_view broker_key) {
  std::vector<ConfigSynonym> out;
  for (const config::Synonym& s : cfg.synonyms(broker_key))
    out.push_back({std::string(s.name), s.value, config::describe_source(s.source)});
  return out;
}

inline std::vector<DescribedConfig> describe_topic_configs(const TopicTable& topics, const Topic& topic,
                                                           const std::optional<std::vector<std::string>>& keys,
                                                           bool with_synonyms) {
  const config::BrokerConfig& cfg = topics.broker_config();
  std::vector<DescribedConfig> out;
  for (const std::string& name : known_topic_configs()) {
    if (!wanted(keys, name)) continue;
    const config::KeyDef* bk = config::find_by_topic_name(name);
    if (bk == nullptr) continue;
    DescribedConfig d;
    d.name = name;
    d.config_type = describe_type(bk->type);
    d.is_sensitive = bk->type == config::ConfigType::kPassword;
    d.documentation = std::string(bk->doc);
    auto over = topic.configs.find(name);
    std::vector<ConfigSynonym> synonyms = broker_synonyms(cfg, bk->name);
    if (over != topic.configs.end()) {
      d.value = d.is_sensitive ? std::nullopt : std::optional<std::string>(over->second);
      synonyms.insert(synonyms.begin(), ConfigSynonym{name, d.value, config::DescribeSource::kTopicConfig});
    } else {
      d.value = d.is_sensitive ? std::nullopt : topics.config_value(topic, name);
    }
    // Kafka's rule: the source is the first synonym's, DEFAULT_CONFIG when
    // there is none (so a retention.ms inherited from a static
    // log.retention.hours, which is not among log.retention.ms's listed
    // synonyms, says DEFAULT_CONFIG although its value is the hours').
    d.source = synonyms.empty() ? config::DescribeSource::kDefaultConfig : synonyms.front().source;
    if (with_synonyms) d.synonyms = std::move(synonyms);
    out.push_back(std::move(d));
  }
  return out;
}

// A broker's configs (resource "<node id>"): every key, read-only unless it
// can be set dynamically here. The cluster-wide default resource ("") lists
// only the keys set dynamically for it, as Kafka does.
inline std::vector<DescribedConfig> describe_broker_configs(const config::BrokerConfig& cfg,
                                                            const std::optional<std::vector<std::string>>& keys,
                                                            bool with_synonyms, bool cluster_default = false) {
  std::vector<DescribedConfig> out;
  const config::DynamicMap defaults = cluster_default ? cfg.dynamic_default() : config::DynamicMap{};
  for (const config::KeyDef& k : config::all_keys()) {
    if (!wanted(keys, k.name)) continue;
    if (cluster_default && !defaults.contains(std::string(k.name))) continue;
    DescribedConfig d;
    d.name = std::string(k.name);
    d.value = cfg.describe_value(k.name);
    d.read_only = config::not_dynamic_reason(k).has_value();
    d.source = config::describe_source(cfg.source(k.name));
    if (cluster_default) {
      auto v = defaults.find(std::string(k.name));
      d.value = k.type == config::ConfigType::kPassword ? std::nullopt : std::optional<std::string>(v->second);
      d.source = config::DescribeSource::kDynamicDefaultBrokerConfig;
    }
    d.is_sensitive = k.type == config::ConfigType::kPassword;
    d.config_type = describe_type(k.type);
    d.documentation = std::string(k.doc);
    if (with_synonyms) d.synonyms = broker_synonyms(cfg, k.name);
    // The default resource shows only the dynamic defaults among them (Kafka).
    if (cluster_default)
      std::erase_if(d.synonyms, [](const ConfigSynonym& s) {
        return s.source != config::DescribeSource::kDynamicDefaultBrokerConfig;
      });
    out.push_back(std::move(d));
  }
  // The listener overrides that are set (config/broker_config.h), as Kafka
  // lists the listener-prefixed keys among a broker's configs.
  for (const std::string& name : cfg.listener_overrides()) {
    if (!wanted(keys, name)) continue;
    const config::Entry* e = cfg.listener_entry(name);
    auto in_default = defaults.find(name);
    if (cluster_default && in_default == defaults.end()) continue;
    DescribedConfig d;
    d.name = name;
    d.value = cluster_default ? std::optional<std::string>(in_default->second) : config::format_value(e->value);
    d.source = cluster_default ? config::DescribeSource::kDynamicDefaultBrokerConfig : config::describe_source(e->source);
    // Kafka 3.9 says read-only of these (its check looks the prefixed name
    // up among its dynamic keys), although they change live there as here.
    d.read_only = true;
    d.config_type = describe_type(config::ConfigType::kInt);
    d.documentation =
        "The listener's own value of " + std::string(config::parse_listener_key(name)->base->name) + ".";
    if (with_synonyms) d.synonyms = broker_synonyms(cfg, name);
    if (cluster_default)
      std::erase_if(d.synonyms, [](const ConfigSynonym& s) {
        return s.source != config::DescribeSource::kDynamicDefaultBrokerConfig;
      });
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace ciuickafka::broker::admin
