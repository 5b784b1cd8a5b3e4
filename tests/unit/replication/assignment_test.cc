// tests/unit/replication/assignment_test.cc: Kafka's replica assignment.
// The exact cases are Kafka 3.9's own, from core/src/test/scala/unit/kafka/
// admin/AdminRackAwareTest.scala and the example in the javadoc of
// server-common/.../org/apache/kafka/admin/AdminUtils.java; the property
// checks follow RackAwareTest.checkReplicaDistribution.
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "replication/assignment.h"

using namespace ciuickafka::replication;

namespace {

std::vector<BrokerRack> unracked(std::vector<int32_t> ids) {
  std::vector<BrokerRack> out;
  for (int32_t id : ids) out.push_back({id, std::nullopt});
  return out;
}

std::vector<BrokerRack> racked(const std::map<int32_t, std::string>& m) {
  std::vector<BrokerRack> out;
  for (const auto& [id, rack] : m) out.push_back({id, rack});
  return out;
}

ReplicaAssignment assign_ok(const std::vector<BrokerRack>& b, int32_t parts, int32_t rf, int32_t start, int32_t shift,
                            int32_t first = 0) {
  auto r = assign_replicas(b, parts, rf, start, shift, first);
  INFO((r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  return *r;
}

AssignmentErrc code_of(const AssignmentResult<ReplicaAssignment>& r) {
  REQUIRE_FALSE(r.ok());
  return r.error().code;
}

}  // namespace

TEST_CASE("assignment: rack-unaware, Kafka's testReplicaAssignment (and the AdminUtils javadoc table)") {
  ReplicaAssignment expected = {{0, {0, 1, 2}}, {1, {1, 2, 3}}, {2, {2, 3, 4}}, {3, {3, 4, 0}}, {4, {4, 0, 1}},
                                {5, {0, 2, 3}}, {6, {1, 3, 4}}, {7, {2, 4, 0}}, {8, {3, 0, 1}}, {9, {4, 1, 2}}};
  CHECK(assign_ok(unracked({0, 1, 2, 3, 4}), 10, 3, 0, 0) == expected);
}

TEST_CASE("assignment: start index and shift move leaders and followers") {
  // Start 1: partition 0 leads on the second broker; shift 1: followers skip one more.
  // By hand from AdminUtils: gap = 1 + (shift + j) % (n - 1); the shift becomes 2 at p3.
  ReplicaAssignment expected = {{0, {2, 1}}, {1, {3, 2}}, {2, {1, 3}}, {3, {2, 3}}};
  CHECK(assign_ok(unracked({1, 2, 3}), 4, 2, 1, 1) == expected);
  // Adding partitions (CreatePartitions) continues the numbering and the shift.
  auto added = assign_ok(unracked({0, 1, 2, 3, 4}), 5, 3, 0, 0, 5);
  CHECK(added == ReplicaAssignment{{5, {0, 2, 3}}, {6, {1, 3, 4}}, {7, {2, 4, 0}}, {8, {3, 0, 1}}, {9, {4, 1, 2}}});
}

TEST_CASE("assignment: Kafka's rack alternated list and rack-aware example") {
  std::map<int32_t, std::string> racks = {{0, "rack1"}, {1, "rack3"}, {2, "rack3"},
                                          {3, "rack2"}, {4, "rack2"}, {5, "rack1"}};
  CHECK(rack_alternated_brokers(racked(racks)) == std::vector<int32_t>{0, 3, 1, 5, 4, 2});
  auto without5 = racks;
  without5.erase(5);
  CHECK(rack_alternated_brokers(racked(without5)) == std::vector<int32_t>{0, 3, 1, 4, 2});
  ReplicaAssignment expected = {{0, {0, 3, 1}}, {1, {3, 1, 5}}, {2, {1, 5, 4}}, {3, {5, 4, 2}},
                                {4, {4, 2, 0}}, {5, {2, 0, 3}}, {6, {0, 4, 2}}};
  CHECK(assign_ok(racked(racks), 7, 3, 0, 0) == expected);
}

TEST_CASE("assignment: errors Kafka gives") {
  auto five = unracked({0, 1, 2, 3, 4});
  CHECK(code_of(assign_replicas(five, 0, 1, 0, 0)) == AssignmentErrc::kInvalidPartitions);
  CHECK(code_of(assign_replicas(five, 10, 0, 0, 0)) == AssignmentErrc::kInvalidReplicationFactor);
  auto too_many = assign_replicas(five, 10, 6, 0, 0);
  CHECK(code_of(too_many) == AssignmentErrc::kInvalidReplicationFactor);
  CHECK(too_many.error().message == "Replication factor: 6 larger than available brokers: 5.");
  CHECK(code_of(assign_replicas({}, 1, 1, 0, 0)) == AssignmentErrc::kInvalidReplicationFactor);
  // testAssignReplicasToBrokersWithInvalidParameters: one broker without a rack.
  std::vector<BrokerRack> partial = {{0, "rack1"}, {1, "rack3"}, {2, "rack3"}, {3, "rack2"}, {4, std::nullopt}};
  auto missing = assign_replicas(partial, 10, 5, 0, 0);
  CHECK(code_of(missing) == AssignmentErrc::kMissingRack);
  CHECK(missing.error().message == "Not all brokers have rack information for replica rack aware assignment.");
  CHECK(code_of(assign_replicas(unracked({1, 1}), 1, 1, 0, 0)) == AssignmentErrc::kInvalidArgument);
  CHECK(code_of(assign_replicas(five, 1, 1, -1, 0)) == AssignmentErrc::kInvalidArgument);
  CHECK(code_of(assign_replicas(five, 10, 1, 0, 0, INT32_MAX - 3)) == AssignmentErrc::kInvalidPartitions);

  // RackAwareMode (AdminZkClient.getBrokerMetadatas).
  auto enforced = brokers_for_assignment(partial, RackMode::kEnforced);
  REQUIRE_FALSE(enforced.ok());
  CHECK(enforced.error().code == AssignmentErrc::kMissingRack);
  auto safe = brokers_for_assignment(partial, RackMode::kSafe);
  REQUIRE(safe.ok());
  for (const auto& b : *safe) CHECK_FALSE(b.rack.has_value());
  auto kept = brokers_for_assignment({{2, "b"}, {1, "a"}}, RackMode::kSafe);
  REQUIRE(kept.ok());
  CHECK(kept->at(0).id == 1);  // sorted by id
  CHECK(kept->at(0).rack == "a");
  auto disabled = brokers_for_assignment({{2, "b"}, {1, "a"}}, RackMode::kDisabled);
  REQUIRE(disabled.ok());
  CHECK_FALSE(disabled->at(1).rack.has_value());
}

TEST_CASE("assignment: every partition gets distinct replicas and leaders spread evenly") {
  for (int32_t n = 1; n <= 7; ++n) {
    std::vector<int32_t> ids;
    for (int32_t i = 0; i < n; ++i) ids.push_back(100 + i * 3);
    for (int32_t rf = 1; rf <= n; ++rf)
      for (int32_t start = 0; start < n; ++start)
        for (int32_t shift = 0; shift < n; ++shift) {
          auto a = assign_ok(unracked(ids), 4 * n, rf, start, shift);
          REQUIRE(a.size() == static_cast<size_t>(4 * n));
          std::map<int32_t, int> leaders;
          for (const auto& [p, replicas] : a) {
            REQUIRE(replicas.size() == static_cast<size_t>(rf));
            CHECK(std::set<int32_t>(replicas.begin(), replicas.end()).size() == replicas.size());
            ++leaders[replicas[0]];
          }
          REQUIRE(leaders.size() == static_cast<size_t>(n));
          for (const auto& [broker, count] : leaders) CHECK(count == 4);
        }
  }
}

TEST_CASE("assignment: rack-aware spreads replicas over racks (RackAwareTest's checks)") {
  // testAssignmentWithRackAware's brokers: three racks of two.
  std::map<int32_t, std::string> racks = {{0, "rack1"}, {1, "rack2"}, {2, "rack2"},
                                          {3, "rack3"}, {4, "rack3"}, {5, "rack1"}};
  for (int32_t rf = 1; rf <= 6; ++rf)
    for (int32_t start = 0; start < 6; ++start)
      for (int32_t shift = 0; shift < 6; ++shift) {
        auto a = assign_ok(racked(racks), 12, rf, start, shift);
        std::map<int32_t, int> leaders, replicas_per_broker;
        for (const auto& [p, replicas] : a) {
          REQUIRE(replicas.size() == static_cast<size_t>(rf));
          CHECK(std::set<int32_t>(replicas.begin(), replicas.end()).size() == replicas.size());
          std::set<std::string> used;
          for (int32_t b : replicas) used.insert(racks.at(b));
          CHECK(used.size() == static_cast<size_t>(std::min(rf, 3)));  // one per rack until all have one
          ++leaders[replicas[0]];
          for (int32_t b : replicas) ++replicas_per_broker[b];
        }
        for (const auto& [b, c] : leaders) CHECK(c == 2);
        if (rf <= 3)  // racks of equal size: replicas even too
          for (const auto& [b, c] : replicas_per_broker) CHECK(c == 2 * rf);
      }
  // testMoreReplicasThanRacks / testSingleRack shapes.
  std::map<int32_t, std::string> uneven = {{0, "rack1"}, {1, "rack2"}, {2, "rack2"},
                                           {3, "rack3"}, {4, "rack3"}, {5, "rack2"}};
  for (const auto& [p, replicas] : assign_ok(racked(uneven), 6, 5, 2, 4)) {
    std::set<std::string> used;
    for (int32_t b : replicas) used.insert(uneven.at(b));
    CHECK(used.size() == 3);
  }
  std::vector<BrokerRack> one_rack = {{0, "r"}, {1, "r"}, {2, "r"}};
  CHECK(assign_ok(one_rack, 3, 3, 0, 0) == assign_ok(unracked({0, 1, 2}), 3, 3, 0, 0));
}

TEST_CASE("assignment: the random wrapper is Kafka's with drawn parameters") {
  std::mt19937_64 rng(42);
  auto brokers = unracked({1, 2, 3});
  for (int i = 0; i < 50; ++i) {
    auto a = assign_replicas_random(brokers, 6, 3, rng);
    REQUIRE(a.ok());
    std::map<int32_t, int> leaders;
    for (const auto& [p, r] : *a) ++leaders[r[0]];
    for (const auto& [b, c] : leaders) CHECK(c == 2);
  }
  CHECK(code_of(assign_replicas_random({}, 1, 1, rng)) == AssignmentErrc::kInvalidReplicationFactor);
}
