// tests/unit/handlers/admin/controlled_shutdown_test.cc: ControlledShutdown
// v0-3 and ElectLeaders v0-2 on a single node (no ZooKeeper controller):
// ControlledShutdown answers NOT_CONTROLLER (what a ZooKeeper-mode Kafka
// broker answers while its controller is not active); ElectLeaders answers
// ELECTION_NOT_NEEDED for existing partitions (their only replica leads) and
// UNKNOWN_TOPIC_OR_PARTITION for others; a null list covers every
// partition. The controller side is in tests/unit/replication/
// controller_runtime_test.cc, the cluster broker in tests/unit/handlers/
// cluster/serving_test.cc.
#include <catch2/catch.hpp>

#include "protocol/generated/controlled_shutdown.h"
#include "protocol/generated/elect_leaders.h"
#include "tests/unit/handlers/admin/admin_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using protocol::ErrorCode;
using test::code;

TEST_CASE("ControlledShutdown on a single node answers NOT_CONTROLLER", "[admin][controlled_shutdown]") {
  test::BrokerFixture f;
  for (int16_t v : {0, 1, 2, 3}) {
    protocol::ControlledShutdownRequest req;
    req.broker_id = 1;
    if (v >= 2) req.broker_epoch = 7;
    auto resp = f.call<protocol::ControlledShutdownResponse>(req, v);
    CHECK(resp.error_code == code(ErrorCode::NOT_CONTROLLER));
    CHECK(resp.remaining_partitions.empty());
  }
}

TEST_CASE("ElectLeaders on a single node: nothing to elect", "[admin][elect_leaders]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "e", 2).error_code == 0);
  for (int16_t v : {0, 1, 2}) {
    protocol::ElectLeadersRequest req;
    protocol::ElectLeadersRequest::TopicPartitions tp;
    tp.topic = "e";
    tp.partitions = {0, 1, 2};
    req.topic_partitions = std::vector<protocol::ElectLeadersRequest::TopicPartitions>{tp};
    auto resp = f.call<protocol::ElectLeadersResponse>(req, v);
    CHECK(resp.error_code == 0);
    REQUIRE(resp.replica_election_results.size() == 1);
    const auto& results = resp.replica_election_results[0].partition_result;
    REQUIRE(results.size() == 3);
    CHECK(results[0].error_code == code(ErrorCode::ELECTION_NOT_NEEDED));
    CHECK(results[1].error_code == code(ErrorCode::ELECTION_NOT_NEEDED));
    CHECK(results[2].error_code == code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  }
  protocol::ElectLeadersRequest all;
  all.topic_partitions = std::nullopt;
  auto resp = f.call<protocol::ElectLeadersResponse>(all, 2);
  size_t seen = 0;
  for (const auto& t : resp.replica_election_results)
    if (t.topic == "e") seen = t.partition_result.size();
  CHECK(seen == 2);
}

TEST_CASE("ElectLeaders with an election type other than preferred or unclean is INVALID_REQUEST", "[admin][elect_leaders]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "e", 1).error_code == 0);
  for (int16_t v : {1, 2}) {
    CAPTURE(v);
    protocol::ElectLeadersRequest req;
    req.election_type = 5;
    protocol::ElectLeadersRequest::TopicPartitions tp;
    tp.topic = "e";
    tp.partitions = {0, 7};
    req.topic_partitions = std::vector<protocol::ElectLeadersRequest::TopicPartitions>{tp};
    auto resp = f.call<protocol::ElectLeadersResponse>(req, v);
    CHECK(resp.error_code == code(ErrorCode::INVALID_REQUEST));
    REQUIRE(resp.replica_election_results.size() == 1);
    const auto& results = resp.replica_election_results[0].partition_result;
    REQUIRE(results.size() == 2);
    for (const auto& r : results) {
      CHECK(r.error_code == code(ErrorCode::INVALID_REQUEST));
      REQUIRE(r.error_message.has_value());
      CHECK_THAT(*r.error_message, Catch::Contains("election type 5"));
    }
    req.topic_partitions = std::nullopt;  // every partition: the top-level error alone
    auto every = f.call<protocol::ElectLeadersResponse>(req, v);
    CHECK(every.error_code == code(ErrorCode::INVALID_REQUEST));
    CHECK(every.replica_election_results.empty());
  }
}
