// tests/unit/handlers/admin/cluster_and_log_dirs_test.cc: DescribeCluster
// v0-1 and DescribeLogDirs v0-4.
#include <catch2/catch.hpp>

#include "protocol/generated/describe_cluster.h"
#include "protocol/generated/describe_log_dirs.h"
#include "tests/unit/handlers/admin/admin_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using protocol::DescribeClusterRequest;
using protocol::DescribeClusterResponse;
using protocol::DescribeLogDirsRequest;
using protocol::DescribeLogDirsResponse;
using protocol::ErrorCode;
using test::code;

TEST_CASE("DescribeCluster describes this node", "[admin][describe_cluster]") {
  test::BrokerFixture f;
  for (int16_t v : {0, 1}) {
    DescribeClusterRequest req;
    auto resp = f.call<DescribeClusterResponse>(req, v);
    CHECK(resp.error_code == 0);
    CHECK(resp.cluster_id == f.broker().cluster_id());
    CHECK(resp.controller_id == f.broker().node_id());
    REQUIRE(resp.brokers.size() == 1);
    CHECK(resp.brokers[0].broker_id == f.broker().node_id());
    CHECK(resp.brokers[0].host == "127.0.0.1");
    CHECK(resp.cluster_authorized_operations == INT32_MIN);
    if (v >= 1) CHECK(resp.endpoint_type == 1);
    req.include_cluster_authorized_operations = true;
    CHECK(f.call<DescribeClusterResponse>(req, v).cluster_authorized_operations == 8096);
  }
}

TEST_CASE("DescribeCluster v1 for controllers or an unknown endpoint type", "[admin][describe_cluster]") {
  test::BrokerFixture f;
  DescribeClusterRequest req;
  req.endpoint_type = 2;
  auto ctl = f.call<DescribeClusterResponse>(req, 1);
  CHECK(ctl.error_code == code(ErrorCode::MISMATCHED_ENDPOINT_TYPE));
  CHECK(ctl.brokers.empty());
  CHECK(ctl.endpoint_type == 1);  // the type this endpoint serves, as Kafka answers
  req.endpoint_type = 9;
  auto bad = f.call<DescribeClusterResponse>(req, 1);
  CHECK(bad.error_code == code(ErrorCode::UNSUPPORTED_ENDPOINT_TYPE));
  CHECK(bad.endpoint_type == 1);
}

TEST_CASE("DescribeLogDirs lists every partition with its size", "[admin][describe_log_dirs]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "a", 2).error_code == 0);
  REQUIRE(test::create_topic(f, "b", 1).error_code == 0);
  test::append_record(f, "a", 1, std::string(1000, 'x'));
  for (int16_t v : {0, 1, 2, 3, 4}) {
    CAPTURE(v);
    DescribeLogDirsRequest req;
    req.topics = std::nullopt;
    auto resp = f.call<DescribeLogDirsResponse>(req, v);
    CHECK(resp.error_code == 0);
    REQUIRE(resp.results.size() == 1);
    const auto& d = resp.results[0];
    CHECK(d.error_code == 0);
    CHECK(d.log_dir == f.dir());
    REQUIRE(d.topics.size() == 2);
    CHECK(d.topics[0].name == "a");
    REQUIRE(d.topics[0].partitions.size() == 2);
    CHECK(d.topics[0].partitions[0].partition_size == 0);
    CHECK(d.topics[0].partitions[1].partition_size > 1000);
    CHECK(d.topics[0].partitions[1].offset_lag == 0);
    CHECK_FALSE(d.topics[0].partitions[1].is_future_key);
    CHECK(d.topics[1].name == "b");
    if (v >= 4) {
      CHECK(d.total_bytes > 0);
      CHECK(d.usable_bytes >= 0);
      CHECK(d.usable_bytes <= d.total_bytes);
    }
  }
}

TEST_CASE("DescribeLogDirs with named partitions returns only hosted ones", "[admin][describe_log_dirs]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "a", 3).error_code == 0);
  DescribeLogDirsRequest req;
  DescribeLogDirsRequest::DescribableLogDirTopic t;
  t.topic = "a";
  t.partitions = {2, 9};
  DescribeLogDirsRequest::DescribableLogDirTopic missing;
  missing.topic = "missing";
  missing.partitions = {0};
  req.topics = std::vector<DescribeLogDirsRequest::DescribableLogDirTopic>{t, missing};
  auto resp = f.call<DescribeLogDirsResponse>(req, 2);
  REQUIRE(resp.results.size() == 1);
  REQUIRE(resp.results[0].topics.size() == 1);
  REQUIRE(resp.results[0].topics[0].partitions.size() == 1);
  CHECK(resp.results[0].topics[0].partitions[0].partition_index == 2);
  // An empty list asks for nothing.
  req.topics = std::vector<DescribeLogDirsRequest::DescribableLogDirTopic>{};
  auto none = f.call<DescribeLogDirsResponse>(req, 4);
  REQUIRE(none.results.size() == 1);
  CHECK(none.results[0].topics.empty());
}
