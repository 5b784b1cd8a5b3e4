// tests/unit/replication/replica_selector_test.cc: fetch from follower
// (KIP-392): Kafka 3.9's RackAwareReplicaSelector.select and the candidate
// filter of ReplicaManager.findPreferredReadReplica, one case per rule.
#include <catch2/catch.hpp>

#include "replication/replica_selector.h"

using namespace ciuickafka::replication;

namespace {

// Broker 1 leads [1,2,3] at t=1000 with LEO 100; followers fetched as given.
ReplicaState leader_with(std::vector<int32_t> isr) {
  ReplicaState st = ReplicaState::become_leader(1, 5, 10, {1, 2, 3}, std::move(isr), 100, 100, 1000);
  return st;
}

const LiveRacks kRacks = {{1, "a"}, {2, "b"}, {3, "c"}};

}  // namespace

TEST_CASE("replica_selector: the rack rule (RackAwareReplicaSelector.select)") {
  const ReplicaView leader{1, "a", 100, 0};
  const std::vector<ReplicaView> followers = {{2, "b", 100, 0}, {3, "c", 90, 0}};
  CHECK(select_read_replica("", leader, followers) == std::nullopt);   // no client rack: the leader
  CHECK(select_read_replica("a", leader, followers) == std::nullopt);  // the leader is in the rack
  CHECK(select_read_replica("b", leader, followers) == 2);
  CHECK(select_read_replica("c", leader, followers) == 3);
  CHECK(select_read_replica("z", leader, followers) == std::nullopt);  // nobody in the rack: the leader
  // A replica with no rack never matches a rack.
  CHECK(select_read_replica("b", leader, {{2, std::nullopt, 100, 0}}) == std::nullopt);
  // A leader without a rack does not match either; the rack's follower is chosen.
  CHECK(select_read_replica("b", ReplicaView{1, std::nullopt, 100, 0}, followers) == 2);
}

TEST_CASE("replica_selector: the most caught-up replica of the rack (ReplicaView.comparator)") {
  const ReplicaView leader{1, "a", 100, 0};
  SECTION("highest LEO first") {
    CHECK(select_read_replica("b", leader, {{2, "b", 90, 0}, {3, "b", 95, 50}, {4, "b", 80, 0}}) == 3);
  }
  SECTION("equal LEO: caught up most recently") {
    CHECK(select_read_replica("b", leader, {{2, "b", 95, 300}, {3, "b", 95, 20}}) == 3);
  }
  SECTION("a full tie: the lowest id, whatever the order") {
    CHECK(select_read_replica("b", leader, {{4, "b", 95, 0}, {2, "b", 95, 0}, {3, "b", 95, 0}}) == 2);
  }
}

TEST_CASE("replica_selector: candidates are live ISR followers holding the offset (findPreferredReadReplica)") {
  ReplicaState st = leader_with({1, 2, 3});
  REQUIRE(st.on_follower_fetch(2, 100, 10, 1200, 100) == ciuickafka::protocol::ErrorCode::NONE);
  REQUIRE(st.on_follower_fetch(3, 60, 40, 1200, 100) == ciuickafka::protocol::ErrorCode::NONE);

  auto ids = [](const std::vector<ReplicaView>& v) {
    std::vector<int32_t> out;
    for (const auto& r : v) out.push_back(r.id);
    return out;
  };
  // Offset 50: broker 2 holds [10, 100]; broker 3 holds [40, 60].
  CHECK(ids(read_candidates(st, 50, 1300, kRacks)) == std::vector<int32_t>{2, 3});
  // Offset 80 is past broker 3's LEO (60).
  CHECK(ids(read_candidates(st, 80, 1300, kRacks)) == std::vector<int32_t>{2});
  // Offset 20 is below broker 3's log start (40).
  CHECK(ids(read_candidates(st, 20, 1300, kRacks)) == std::vector<int32_t>{2});
  // A broker not alive on the client's listener is not a candidate.
  CHECK(ids(read_candidates(st, 50, 1300, {{1, "a"}, {3, "c"}})) == std::vector<int32_t>{3});
  // The view carries rack, LEO and the time since it last caught up.
  const auto v = read_candidates(st, 50, 1300, kRacks);
  REQUIRE(v.size() == 2);
  CHECK(v[0].rack == std::optional<std::string>("b"));
  CHECK(v[0].log_end_offset == 100);
  CHECK(v[0].time_since_caught_up_ms == 100);  // caught up at 1200 (fetched at the leader's LEO)
}

TEST_CASE("replica_selector: a follower outside the ISR is never a candidate") {
  ReplicaState st = leader_with({1, 2});
  REQUIRE(st.on_follower_fetch(2, 100, 0, 1200, 100) == ciuickafka::protocol::ErrorCode::NONE);
  REQUIRE(st.on_follower_fetch(3, 100, 0, 1200, 100) == ciuickafka::protocol::ErrorCode::NONE);
  const auto v = read_candidates(st, 50, 1300, kRacks);
  REQUIRE(v.size() == 1);
  CHECK(v[0].id == 2);
  // A follower that has not fetched under this leader yet holds nothing known.
  ReplicaState fresh = leader_with({1, 2, 3});
  CHECK(read_candidates(fresh, 0, 1300, kRacks).empty());
}
