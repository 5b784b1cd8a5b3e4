// broker/config/topic_config.cc
#include "broker/config/topic_config.h"

#include "broker/config/registry.h"

namespace ciuickafka::broker::config {

Result<Value> parse_topic_value(std::string_view topic_name, std::string_view raw) {
  const KeyDef* broker_key = find_by_topic_name(topic_name);
  if (!broker_key) return ConfigError{"unknown topic configuration \"" + std::string(topic_name) + "\""};
  KeyDef as_topic = *broker_key;
  as_topic.name = topic_name;  // errors name the config the client sent
  return parse_value(as_topic, raw);
}

std::optional<std::string> topic_default(const BrokerConfig& config, std::string_view topic_name) {
  const KeyDef* broker_key = find_by_topic_name(topic_name);
  if (!broker_key) return std::nullopt;
  if (synonym_keys(broker_key->name).size() > 1 &&
      (broker_key->type == ConfigType::kInt || broker_key->type == ConfigType::kLong)) {
    if (std::holds_alternative<std::monostate>(config.entry(config.effective_key(broker_key->name).name).value))
      return std::nullopt;
    int64_t v = config.group_ms(broker_key->name);
    if (broker_key->name == "log.retention.ms" && v < 0) v = -1;
    return std::to_string(v);
  }
  return config.describe_value(broker_key->name);
}

}  // namespace ciuickafka::broker::config
