// broker/config/topic_config.h: topic-level configs seen through the broker
// registry.
//
// A topic config (retention.ms, cleanup.policy, ...) takes its type and
// validator from the broker key it is the topic-level name of
// (log.retention.ms, log.cleanup.policy, ...), and its default is that broker
// key's effective value: for retention.ms the broker's log.retention.ms, else
// .minutes, else .hours, in milliseconds. CreateTopics, AlterConfigs and
// DescribeConfigs for topics build on these two functions.
//
// Limits of this first cut: only topic configs that have a broker key are
// known (no topic-only keys such as message.downconversion.enable yet), and a
// topic config shares its broker key's validator even where Kafka's topic-level
// one is a little stricter (retention.ms >= -1).
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "broker/config/broker_config.h"
#include "broker/config/types.h"

namespace ciuickafka::broker::config {

// Parses a topic config value. Errors: unknown topic configuration "x"; or
// invalid value "abc" for retention.ms: expected an integer.
Result<Value> parse_topic_value(std::string_view topic_name, std::string_view raw);

// The broker-wide default of a topic config as DescribeConfigs writes it;
// nullopt for an unknown name or a null default.
std::optional<std::string> topic_default(const BrokerConfig& config, std::string_view topic_name);

}  // namespace ciuickafka::broker::config
