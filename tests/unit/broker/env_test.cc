// Environment variable names as the Kafka images map them.
#include <catch2/catch.hpp>

#include <algorithm>

#include "broker/config/env.h"

using namespace ciuickafka::broker::config;

namespace {

std::string prop(std::string_view var) {
  EnvMapping m = map_env_var(var);
  REQUIRE(m.kind == EnvKind::kProperty);
  return m.key;
}

}  // namespace

TEST_CASE("KAFKA_ and KAFKA_CFG_ names map to properties") {
  CHECK(prop("KAFKA_NUM_PARTITIONS") == "num.partitions");
  CHECK(prop("KAFKA_ADVERTISED_LISTENERS") == "advertised.listeners");
  CHECK(prop("KAFKA_CFG_LOG_RETENTION_HOURS") == "log.retention.hours");
  CHECK(prop("KAFKA_NODE_ID") == "node.id");
  CHECK(prop("KAFKA_LOG_DIRS") == "log.dirs");
  CHECK(prop("CLUSTER_ID") == "cluster.id");
  CHECK(prop("KAFKA_KRAFT_CLUSTER_ID") == "cluster.id");
}

TEST_CASE("___ is a dash, __ an underscore, _ a dot, in that order") {
  CHECK(prop("KAFKA_FOO__BAR") == "foo_bar");
  CHECK(prop("KAFKA_FOO___BAR") == "foo-bar");
  CHECK(prop("KAFKA_CFG_FOO___BAR__BAZ_QUX") == "foo-bar_baz.qux");
  CHECK(prop("KAFKA_A____B") == "a-.b");   // 4: a dash, then a dot
  CHECK(prop("KAFKA_A_____B") == "a-_b");  // 5: a dash, then an underscore
  CHECK(prop("KAFKA_LISTENER_NAME_INTERNAL_SSL_KEYSTORE_LOCATION") == "listener.name.internal.ssl.keystore.location");
}

TEST_CASE("script and JVM variables are ignored") {
  for (std::string_view v : {"KAFKA_HEAP_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS", "KAFKA_JMX_PORT", "KAFKA_JMX_HOSTNAME",
                             "KAFKA_LOG4J_OPTS", "KAFKA_LOG4J_LOGGERS", "KAFKA_VERSION",
                             "KAFKA_HOME", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_DEBUG", "KAFKA_"}) {
    INFO(v);
    CHECK(map_env_var(v).kind == EnvKind::kIgnored);
  }
}

TEST_CASE("KAFKA_LOG4J_ROOT_LOGLEVEL sets log.level") {
  const EnvMapping m = map_env_var("KAFKA_LOG4J_ROOT_LOGLEVEL");
  CHECK(m.kind == EnvKind::kProperty);
  CHECK(m.key == "log.level");
}

TEST_CASE("other variables are unrelated") {
  for (std::string_view v : {"PATH", "HOME", "KAFKA", "kafka_num_partitions", "MY_KAFKA_X"}) {
    INFO(v);
    CHECK(map_env_var(v).kind == EnvKind::kUnrelated);
  }
}

TEST_CASE("process_environment is sorted and holds name=value pairs") {
  Environment env = process_environment();
  CHECK(std::is_sorted(env.begin(), env.end()));
  for (const auto& [name, value] : env) CHECK(name.find('=') == std::string::npos);
}
