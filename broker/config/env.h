// broker/config/env.h: configuration from environment variables, as the
// Kafka container images map them.
//
//   KAFKA_FOO_BAR          -> foo.bar        (Confluent and apache/kafka images)
//   KAFKA_CFG_FOO_BAR      -> foo.bar        (Bitnami images)
//   KAFKA_FOO__BAR         -> foo_bar        (__ is an underscore)
//   KAFKA_FOO___BAR        -> foo-bar        (___ is a dash)
//   CLUSTER_ID             -> cluster.id     (apache/kafka image; Bitnami's
//                                            KAFKA_KRAFT_CLUSTER_ID too)
//   KAFKA_LOG4J_ROOT_LOGLEVEL -> log.level   (the images' log4j root level)
// The name is lower-cased; then every '_' becomes '.', then "..." becomes '-'
// and ".." becomes '_' (the images' order: ___ before __ before _). Variables
// that configure the JVM or the scripts rather than the broker
// (KAFKA_HEAP_OPTS, KAFKA_OPTS, KAFKA_JMX_*, the other KAFKA_LOG4J_*, KAFKA_VERSION,
// KAFKA_HOME, ...) are ignored without a word.
//
// Thread-safety: pure functions; process_environment() reads environ, which
// the caller must not modify concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ciuickafka::broker::config {

enum class EnvKind : uint8_t {
  kProperty,  // names a configuration key
  kIgnored,   // a Kafka image variable that is not a broker property
  kUnrelated, // not a Kafka variable at all (PATH, HOME, ...)
};

struct EnvMapping {
  EnvKind kind = EnvKind::kUnrelated;
  std::string key;  // for kProperty
};

EnvMapping map_env_var(std::string_view name);

using Environment = std::vector<std::pair<std::string, std::string>>;

// A copy of this process's environment, sorted by name.
Environment process_environment();

}  // namespace ciuickafka::broker::config
