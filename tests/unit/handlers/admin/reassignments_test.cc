// tests/unit/handlers/admin/reassignments_test.cc:
// AlterPartitionReassignments and ListPartitionReassignments v0 on a single
// node, which answers as a one-broker Kafka cluster: [this broker] is a
// no-op move (NONE), another broker is INVALID_REPLICA_ASSIGNMENT (not
// alive), malformed lists are INVALID_REPLICA_ASSIGNMENT, a cancel is
// NO_REASSIGNMENT_IN_PROGRESS, an unknown partition
// UNKNOWN_TOPIC_OR_PARTITION, and nothing is ever in flight. The controller
// side is in tests/unit/replication/controller_reassign_test.cc.
#include <catch2/catch.hpp>

#include "protocol/generated/alter_partition_reassignments.h"
#include "protocol/generated/list_partition_reassignments.h"
#include "tests/unit/handlers/admin/admin_test_util.h"

using namespace ciuickafka;
using namespace ciuickafka::broker;
using protocol::ErrorCode;
using test::code;

TEST_CASE("AlterPartitionReassignments on a single node answers as a one-broker cluster", "[admin][reassign]") {
  test::BrokerFixture f;
  REQUIRE(test::create_topic(f, "r", 2).error_code == 0);
  const int32_t me = f.broker().node_id();
  protocol::AlterPartitionReassignmentsRequest req;
  req.topics.resize(2);
  req.topics[0].name = "r";
  auto add = [&](int32_t p, std::optional<std::vector<int32_t>> replicas) {
    protocol::AlterPartitionReassignmentsRequest::ReassignablePartition rp;
    rp.partition_index = p;
    rp.replicas = std::move(replicas);
    req.topics[0].partitions.push_back(std::move(rp));
  };
  add(0, std::vector<int32_t>{me});
  add(1, std::vector<int32_t>{me, me + 1});
  add(1, std::vector<int32_t>{});
  add(1, std::vector<int32_t>{me, me});
  add(0, std::nullopt);
  add(5, std::vector<int32_t>{me});
  req.topics[1].name = "missing";
  req.topics[1].partitions.push_back({});
  req.topics[1].partitions.back().replicas = std::vector<int32_t>{me};
  auto resp = f.call<protocol::AlterPartitionReassignmentsResponse>(req, 0);
  CHECK(resp.error_code == 0);
  REQUIRE(resp.responses.size() == 2);
  const auto& ps = resp.responses[0].partitions;
  REQUIRE(ps.size() == 6);
  CHECK(ps[0].error_code == 0);
  CHECK_FALSE(ps[0].error_message);
  for (int i : {1, 2, 3}) {
    CHECK(ps[i].error_code == code(ErrorCode::INVALID_REPLICA_ASSIGNMENT));
    CHECK(ps[i].error_message);
  }
  CHECK(ps[4].error_code == code(ErrorCode::NO_REASSIGNMENT_IN_PROGRESS));
  CHECK(ps[5].error_code == code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
  CHECK(resp.responses[1].partitions[0].error_code == code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));

  protocol::ListPartitionReassignmentsRequest list;
  auto l = f.call<protocol::ListPartitionReassignmentsResponse>(list, 0);
  CHECK(l.error_code == 0);
  CHECK(l.topics.empty());
}
