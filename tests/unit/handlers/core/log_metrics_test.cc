// tests/unit/handlers/core/log_metrics_test.cc: the broker's scrape-time log
// collector reads the logs themselves: series exist for a partition never
// written, follow appends and a log-start move, and leave with the topic;
// the replication gauges of a single node.
#include <catch2/catch.hpp>

#include <string>

#include "broker/log_metrics.h"
#include "tests/unit/handlers/fetch/fetch_helpers.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using namespace ciuickafka::broker::test;

namespace {

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

std::string series(const char* name, int partition, const char* topic) {
  return std::string(name) + "{partition=\"" + std::to_string(partition) + "\",topic=\"" + topic + "\"}";
}

}  // namespace

TEST_CASE("log series are read from the logs at scrape time", "[handlers][metrics]") {
  FetchFixture f;
  auto topic = create_topic(f, "m", 2);
  std::string text = f.broker().metrics_registry().text();
  // Opened, never written: present, and zero.
  CHECK(has_line(text, series("kafka_log_log_size", 0, "m") + " 0"));
  CHECK(has_line(text, series("kafka_log_log_logendoffset", 1, "m") + " 0"));
  CHECK(has_line(text, series("kafka_log_log_numlogsegments", 0, "m") + " 1"));

  append(*topic->partitions[0], make_batch(5, 100));
  append(*topic->partitions[0], make_batch(3, 100));
  Partition& p = *topic->partitions[0];
  text = f.broker().metrics_registry().text();
  CHECK(has_line(text, series("kafka_log_log_logendoffset", 0, "m") + " 8"));
  CHECK(has_line(text, series("kafka_log_log_size", 0, "m") + " " + std::to_string(p.log().size_bytes())));
  CHECK(p.log().size_bytes() > 800);
  CHECK(has_line(text, series("kafka_log_log_logstartoffset", 0, "m") + " 0"));
  CHECK(has_line(text, series("kafka_log_log_logendoffset", 1, "m") + " 0"));

  // A log-start move (DeleteRecords' path) shows at the next scrape.
  REQUIRE(p.log().advance_log_start_offset(5).is_ok());
  text = f.broker().metrics_registry().text();
  CHECK(has_line(text, series("kafka_log_log_logstartoffset", 0, "m") + " 5"));

  // Single node: leader of every hosted partition, nothing under-replicated.
  const std::string hosted = std::to_string(f.broker().topics().partition_count());
  CHECK(has_line(text, "kafka_server_replicamanager_partitioncount " + hosted));
  CHECK(has_line(text, "kafka_server_replicamanager_leadercount " + hosted));
  CHECK(has_line(text, "kafka_server_replicamanager_underreplicatedpartitions 0"));
  CHECK(has_line(text, series("kafka_cluster_partition_replicascount", 0, "m") + " 1"));
  CHECK(has_line(text, series("kafka_cluster_partition_insyncreplicascount", 0, "m") + " 1"));
  CHECK(has_line(text, "kafka_server_fetchsessioncache_numincrementalfetchsessions 0"));

  REQUIRE(f.broker().topics().remove("m").ok());
  text = f.broker().metrics_registry().text();
  CHECK(text.find("topic=\"m\"") == std::string::npos);
}
