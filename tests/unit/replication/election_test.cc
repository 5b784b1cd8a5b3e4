// tests/unit/replication/election_test.cc: the controller's election and ISR
// rules, one case per branch of Kafka 3.9's Election.scala,
// PartitionLeaderElectionAlgorithms, initializeLeaderAndIsrForPartitions and
// ReplicaStateMachine.doRemoveReplicasFromIsr.
#include <catch2/catch.hpp>

#include "replication/election.h"

using namespace ciuickafka::replication;

namespace {

PartitionState state(int32_t leader, int32_t epoch, std::vector<int32_t> isr,
                     LeaderRecoveryState rs = LeaderRecoveryState::kRecovered) {
  return PartitionState{leader, epoch, 1, std::move(isr), rs};
}

}  // namespace

TEST_CASE("election: a new partition starts with the live replicas") {
  auto s = initial_partition_state({3, 1, 2}, {1, 2}, 7);
  REQUIRE(s);
  CHECK(*s == PartitionState{1, 0, 7, {1, 2}, LeaderRecoveryState::kRecovered});
  CHECK(*initial_partition_state({3, 1, 2}, {1, 2, 3}, 7) == PartitionState{3, 0, 7, {3, 1, 2}});
  CHECK_FALSE(initial_partition_state({3, 1, 2}, {4}, 7));
  CHECK_FALSE(initial_partition_state({}, {1}, 7));
}

TEST_CASE("election: offline, clean: first live ISR member in assignment order") {
  // Assignment order wins over ISR order: 2 before 3 although the ISR lists 3 first.
  auto s = elect_offline({1, 2, 3}, state(1, 4, {3, 1, 2}), {2, 3}, false, 9);
  REQUIRE(s);
  CHECK(*s == PartitionState{2, 5, 9, {3, 2}, LeaderRecoveryState::kRecovered});  // ISR keeps its order, drops 1
  // A live replica outside the ISR is not eligible when unclean is off.
  CHECK_FALSE(elect_offline({1, 2, 3}, state(1, 4, {1}), {2, 3}, false, 9));
  // A clean election keeps a RECOVERING state as it was.
  auto rec = elect_offline({1, 2}, state(1, 4, {1, 2}, LeaderRecoveryState::kRecovering), {2}, true, 9);
  REQUIRE(rec);
  CHECK(rec->leader_recovery_state == LeaderRecoveryState::kRecovering);
}

TEST_CASE("election: offline, unclean: first live replica, ISR of one, RECOVERING") {
  auto s = elect_offline({1, 2, 3}, state(1, 4, {1}), {3, 2}, true, 9);
  REQUIRE(s);
  CHECK(*s == PartitionState{2, 5, 9, {2}, LeaderRecoveryState::kRecovering});
  auto old_ibp = elect_offline({1, 2, 3}, state(1, 4, {1}), {3}, true, 9, /*leader_recovery_supported=*/false);
  REQUIRE(old_ibp);
  CHECK(*old_ibp == PartitionState{3, 5, 9, {3}, LeaderRecoveryState::kRecovered});
  CHECK_FALSE(elect_offline({1, 2, 3}, state(1, 4, {1}), {}, true, 9));
}

TEST_CASE("election: reassignment picks from the target replicas") {
  auto s = elect_reassignment({4, 2}, state(1, 3, {1, 2, 4}), {1, 2, 4}, 2);
  REQUIRE(s);
  CHECK(*s == PartitionState{4, 4, 2, {1, 2, 4}});
  auto skip = elect_reassignment({4, 2}, state(1, 3, {1, 2}), {1, 2, 4}, 2);  // 4 not in ISR yet
  REQUIRE(skip);
  CHECK(skip->leader == 2);
  CHECK_FALSE(elect_reassignment({4, 5}, state(1, 3, {1, 2}), {1, 2, 4, 5}, 2));
}

TEST_CASE("election: preferred is only the head of the assignment") {
  auto s = elect_preferred({2, 1, 3}, state(1, 3, {1, 2, 3}), {1, 2, 3}, 2);
  REQUIRE(s);
  CHECK(*s == PartitionState{2, 4, 2, {1, 2, 3}});
  CHECK_FALSE(elect_preferred({2, 1, 3}, state(1, 3, {1, 3}), {1, 2, 3}, 2));  // head not in ISR
  CHECK_FALSE(elect_preferred({2, 1, 3}, state(1, 3, {1, 2, 3}), {1, 3}, 2));  // head not live
  CHECK_FALSE(elect_preferred({}, state(1, 3, {1}), {1}, 2));
  CHECK(preferred_leader_elected({2, 1}, state(2, 0, {2, 1})));
  CHECK_FALSE(preferred_leader_elected({2, 1}, state(1, 0, {2, 1})));
}

TEST_CASE("election: controlled shutdown moves leadership off the shutting-down brokers") {
  auto s = elect_controlled_shutdown({1, 2, 3}, state(1, 3, {1, 2, 3}), {2, 3}, {1}, 5);
  REQUIRE(s);
  CHECK(*s == PartitionState{2, 4, 5, {2, 3}});
  // Two shutting down: both leave the ISR.
  auto two = elect_controlled_shutdown({1, 2, 3}, state(1, 3, {1, 2, 3}), {3}, {1, 2}, 5);
  REQUIRE(two);
  CHECK(*two == PartitionState{3, 4, 5, {3}});
  // Only shutting-down brokers or non-ISR replicas left: no leader.
  CHECK_FALSE(elect_controlled_shutdown({1, 2}, state(1, 3, {1, 2}), {}, {1, 2}, 5));
  CHECK_FALSE(elect_controlled_shutdown({1, 2, 3}, state(1, 3, {1}), {2, 3}, {1}, 5));
}

TEST_CASE("election: removing a replica from the ISR never empties it") {
  auto follower = remove_replica_from_isr(state(1, 3, {1, 2, 3}), 2, 6);
  REQUIRE(follower);
  CHECK(*follower == PartitionState{1, 4, 6, {1, 3}});
  auto leader = remove_replica_from_isr(state(1, 3, {1, 2}), 1, 6);
  REQUIRE(leader);
  CHECK(*leader == PartitionState{kNoLeader, 4, 6, {2}});
  auto last = remove_replica_from_isr(state(1, 3, {1}), 1, 6);
  REQUIRE(last);
  CHECK(*last == PartitionState{kNoLeader, 4, 6, {1}});  // stays listed, partition leaderless
  CHECK_FALSE(remove_replica_from_isr(state(1, 3, {1, 3}), 2, 6));
}
