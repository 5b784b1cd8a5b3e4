// tests/unit/handlers/admin/create_partitions_test.cc: CreatePartitions
// v0-3: growth, validate_only, assignments, and the error paths.
#include <catch2/catch.hpp>

#include "protocol/generated/create_partitions.h"
#include "tests/unit/handlers/admin/admin_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using protocol::CreatePartitionsRequest;
using protocol::CreatePartitionsResponse;
using protocol::ErrorCode;
using test::code;

namespace {

CreatePartitionsRequest::CreatePartitionsTopic grow(std::string name, int32_t count) {
  CreatePartitionsRequest::CreatePartitionsTopic t;
  t.name = std::move(name);
  t.count = count;
  t.assignments = std::nullopt;
  return t;
}

CreatePartitionsResponse call(test::BrokerFixture& f, std::vector<CreatePartitionsRequest::CreatePartitionsTopic> t,
                              int16_t v, bool validate_only = false) {
  CreatePartitionsRequest req;
  req.topics = std::move(t);
  req.validate_only = validate_only;
  return f.call<CreatePartitionsResponse>(req, v);
}

}  // namespace

TEST_CASE("CreatePartitions adds partitions at every version", "[admin][create_partitions]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "grow", 1).error_code == 0);
  int32_t count = 1;
  for (int16_t v : {0, 1, 2, 3}) {
    ++count;
    auto resp = call(f, {grow("grow", count)}, v);
    REQUIRE(resp.results.size() == 1);
    CHECK(resp.results[0].error_code == 0);
    CHECK_FALSE(resp.results[0].error_message.has_value());
    CHECK(f.broker().topics().find("grow")->partitions.size() == static_cast<size_t>(count));
  }
  f.restart();
  CHECK(f.broker().topics().find("grow")->partitions.size() == 5);
}

TEST_CASE("CreatePartitions validate_only changes nothing", "[admin][create_partitions]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "same", 2).error_code == 0);
  auto resp = call(f, {grow("same", 8)}, 3, true);
  CHECK(resp.results[0].error_code == 0);
  CHECK(f.broker().topics().find("same")->partitions.size() == 2);
}

TEST_CASE("CreatePartitions errors", "[admin][create_partitions]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "three", 3).error_code == 0);
  for (int16_t v : {0, 3}) {
    auto resp = call(f, {grow("three", 2), grow("three-b", 4), grow("missing", 2)}, v);
    REQUIRE(resp.results.size() == 3);
    CHECK(resp.results[0].error_code == code(ErrorCode::INVALID_PARTITIONS));
    REQUIRE(resp.results[0].error_message.has_value());
    CHECK_THAT(*resp.results[0].error_message, Catch::Contains("3"));
    CHECK(resp.results[2].error_code == code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
    auto same = call(f, {grow("three", 3)}, v);
    CHECK(same.results[0].error_code == code(ErrorCode::INVALID_PARTITIONS));
    // A topic named twice: one INVALID_REQUEST result for it (Kafka keys
    // results by name); the other topics are served.
    auto dup = call(f, {grow("three", 5), grow("missing", 1), grow("three", 6)}, v);
    REQUIRE(dup.results.size() == 2);
    CHECK(dup.results[0].name == "missing");
    CHECK(dup.results[0].error_code == code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
    CHECK(dup.results[1].name == "three");
    CHECK(dup.results[1].error_code == code(ErrorCode::INVALID_REQUEST));
  }
  CHECK(f.broker().topics().find("three")->partitions.size() == 3);
}

TEST_CASE("CreatePartitions assignments must be this node, one per new partition", "[admin][create_partitions]") {
  test::BrokerFixture f;
  const int32_t node = f.broker().node_id();
  REQUIRE(test::create_topic(f, "assigned", 1).error_code == 0);
  auto with = [&](int32_t count, std::vector<std::vector<int32_t>> a) {
    auto t = grow("assigned", count);
    t.assignments = std::vector<CreatePartitionsRequest::CreatePartitionsAssignment>();
    for (auto& ids : a) {
      CreatePartitionsRequest::CreatePartitionsAssignment x;
      x.broker_ids = ids;
      t.assignments->push_back(x);
    }
    return t;
  };
  CHECK(call(f, {with(3, {{node}})}, 1).results[0].error_code == code(ErrorCode::INVALID_REPLICA_ASSIGNMENT));
  CHECK(call(f, {with(2, {{node + 1}})}, 1).results[0].error_code == code(ErrorCode::INVALID_REPLICA_ASSIGNMENT));
  CHECK(f.broker().topics().find("assigned")->partitions.size() == 1);
  CHECK(call(f, {with(3, {{node}, {node}})}, 1).results[0].error_code == 0);
  CHECK(f.broker().topics().find("assigned")->partitions.size() == 3);
}
