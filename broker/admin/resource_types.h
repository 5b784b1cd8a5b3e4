// broker/admin/resource_types.h: Kafka's ConfigResource.Type codes, shared by
// DescribeConfigs, AlterConfigs and IncrementalAlterConfigs, and the check
// that a BROKER resource names this node.
//
// Thread-safety: constants and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/error_code.h"

namespace ciuickafka::broker::admin {

constexpr int8_t kResourceTopic = 2;
constexpr int8_t kResourceBroker = 4;
constexpr int8_t kResourceBrokerLogger = 8;

// A BROKER resource names this node by id, or is empty (Kafka: "the default
// broker"). Anything else is INVALID_REQUEST with Kafka's message.
inline std::optional<std::string> bad_broker_resource(const std::string& name, int32_t node) {
  if (name.empty() || name == std::to_string(node)) return std::nullopt;
  return "Unexpected broker id, expected " + std::to_string(node) + " or empty string, but received " + name;
}

}  // namespace ciuickafka::broker::admin
