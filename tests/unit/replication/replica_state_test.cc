// tests/unit/replication/replica_state_test.cc: the leader's replica state,
// one case per rule. Each names the Kafka 3.9 method it checks: Replica.scala
// (updateFetchStateOrThrow, resetReplicaState, isCaughtUp) and Partition.scala
// (maybeIncrementLeaderHW, getOutOfSyncReplicas, maybeShrinkIsr,
// maybeExpandIsr/isFollowerInSync, prepareIsr*, handleAlterPartition*,
// appendRecordsToLeader, checkEnoughReplicasReachOffset).
#include <catch2/catch.hpp>

#include "replication/replica_state.h"

using namespace ciuickafka::replication;
using ciuickafka::protocol::ErrorCode;

namespace {

constexpr int64_t kLag = 30000;  // replica.lag.time.max.ms
const BrokerSet kAll = {1, 2, 3};

// Broker 1 leads [1,2,3], leader epoch 5, partition epoch 10, at t=1000.
ReplicaState leader(std::vector<int32_t> isr, int64_t leo = 100, int64_t hw = 100) {
  return ReplicaState::become_leader(1, 5, 10, {1, 2, 3}, std::move(isr), leo, hw, 1000);
}

AlterPartitionAnswer ok(int32_t leader_epoch, int32_t partition_epoch, std::vector<int32_t> isr) {
  return {ErrorCode::NONE, leader_epoch, partition_epoch, std::move(isr), LeaderRecoveryState::kRecovered};
}
AlterPartitionAnswer err(ErrorCode e) { return {e, 0, 0, {}, LeaderRecoveryState::kRecovered}; }

}  // namespace

TEST_CASE("replica_state: lastCaughtUpTime, both branches (Replica.updateFetchStateOrThrow)") {
  const FollowerState prev{50, 0, 80, 900, 500};
  struct Case {
    const char* what;
    int64_t fetch_offset, leader_leo, prev_caught_up, want_caught_up;
  };
  const Case cases[] = {
      {"at the leader's LEO now: the fetch time", 100, 100, 500, 1000},
      {"past the leader's LEO now: the fetch time", 101, 100, 500, 1000},
      {"behind now, at the LEO of the previous fetch: the previous fetch time", 80, 100, 500, 900},
      {"behind now, past the LEO of the previous fetch: the previous fetch time", 90, 100, 500, 900},
      {"behind both: unchanged", 79, 100, 500, 500},
      {"never moves back", 90, 100, 950, 950},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    FollowerState p = prev;
    p.last_caught_up_time_ms = c.prev_caught_up;
    const FollowerState n = follower_after_fetch(p, c.fetch_offset, 7, 1000, c.leader_leo);
    CHECK(n.last_caught_up_time_ms == c.want_caught_up);
    CHECK(n.log_end_offset == c.fetch_offset);
    CHECK(n.log_start_offset == 7);
    CHECK(n.last_fetch_time_ms == 1000);
    CHECK(n.last_fetch_leader_leo == 100);
  }
  // lastFetchLeaderLogEndOffset keeps the larger of the two.
  CHECK(follower_after_fetch(FollowerState{0, 0, 120, 0, 0}, 10, 0, 5, 100).last_fetch_leader_leo == 120);
}

TEST_CASE("replica_state: becoming leader resets the followers (Replica.resetReplicaState)") {
  auto s = ReplicaState::become_leader(1, 5, 10, {1, 2, 3}, {1, 2}, 100, 90, 1000);
  REQUIRE(s.follower(2));
  REQUIRE(s.follower(3));
  CHECK_FALSE(s.follower(1));  // the leader has no follower state
  CHECK(*s.follower(2) == FollowerState{kUnknownOffset, kUnknownOffset, kUnknownOffset, 0, 1000});
  CHECK(s.follower(3)->last_caught_up_time_ms == 0);  // not in the ISR
  CHECK(s.leader_epoch_start_offset() == 100);
  CHECK(s.high_watermark() == 90);

  // Re-elected with a new epoch: offsets kept, fetch time/LEO reset.
  REQUIRE(s.on_follower_fetch(2, 95, 3, 1500, 100) == ErrorCode::NONE);
  auto r = ReplicaState::become_leader(1, 6, 11, {1, 2, 3}, {1, 2}, 100, 90, 2000, &s);
  CHECK(*r.follower(2) == FollowerState{95, 3, 100, 2000, 2000});
  CHECK(r.follower(3)->last_fetch_time_ms == 0);
}

TEST_CASE("replica_state: a fetch from a replica outside the assignment (Partition.followerReplicaOrThrow)") {
  auto s = leader({1, 2, 3});
  CHECK(s.on_follower_fetch(4, 100, 0, 1000, 100) == ErrorCode::UNKNOWN_LEADER_EPOCH);
  CHECK(s.on_follower_fetch(4, 100, 0, 1000, 100, false) == ErrorCode::NOT_LEADER_OR_FOLLOWER);
}

TEST_CASE("replica_state: HW is the lowest LEO in the ISR (Partition.maybeIncrementLeaderHW)") {
  auto s = leader({1, 2, 3}, 100, 50);
  REQUIRE(s.on_follower_fetch(2, 100, 0, 1100, 100) == ErrorCode::NONE);
  REQUIRE(s.on_follower_fetch(3, 60, 0, 1100, 100) == ErrorCode::NONE);
  CHECK(s.high_watermark_candidate(2, 1100, kLag, kAll) == 60);
  CHECK(s.maybe_advance_hw(2, 1100, kLag, kAll) == 60);
  CHECK(s.high_watermark() == 60);
  // Follower 3 catches up: the HW reaches the leader's LEO.
  REQUIRE(s.on_follower_fetch(3, 100, 0, 1200, 100) == ErrorCode::NONE);
  CHECK(s.maybe_advance_hw(2, 1200, kLag, kAll) == 100);
}

TEST_CASE("replica_state: HW never decreases (UnifiedLog.maybeIncrementHighWatermark)") {
  auto s = leader({1, 2, 3}, 100, 80);
  REQUIRE(s.on_follower_fetch(2, 100, 0, 1100, 100) == ErrorCode::NONE);
  REQUIRE(s.on_follower_fetch(3, 60, 0, 1100, 100) == ErrorCode::NONE);
  CHECK(s.high_watermark_candidate(2, 1100, kLag, kAll) == 60);
  CHECK_FALSE(s.maybe_advance_hw(2, 1100, kLag, kAll));
  CHECK(s.high_watermark() == 80);
  CHECK_FALSE(s.maybe_advance_hw(2, 1100, kLag, kAll));  // equal: no move either
}

TEST_CASE("replica_state: a caught-up, alive replica outside the ISR holds the HW (shouldWaitForReplicaToJoinIsr)") {
  auto s = leader({1, 2}, 100, 100);
  REQUIRE(s.on_follower_fetch(3, 100, 0, 1000, 100) == ErrorCode::NONE);  // caught up at t=1000
  s.on_leader_append(150);
  REQUIRE(s.on_follower_fetch(2, 150, 0, 1100, 150) == ErrorCode::NONE);
  CHECK(s.high_watermark_candidate(1, 1100, kLag, kAll) == 100);
  CHECK(s.high_watermark_candidate(1, 1100, kLag, {1, 2}) == 150);          // 3 not alive
  CHECK(s.high_watermark_candidate(1, 1000 + kLag + 1, kLag, kAll) == 150); // 3 no longer caught up
}

TEST_CASE("replica_state: a pending expansion counts in the HW, a pending shrink does not drop (maximalIsr)") {
  auto s = leader({1, 2}, 100, 100);
  REQUIRE(s.on_follower_fetch(3, 100, 0, 1000, 100) == ErrorCode::NONE);
  auto p = s.propose_expand(3, kAll);
  REQUIRE(p);
  CHECK(s.maximal_isr() == std::vector<int32_t>{1, 2, 3});
  CHECK(s.isr() == std::vector<int32_t>{1, 2});
  s.on_leader_append(120);
  REQUIRE(s.on_follower_fetch(2, 120, 0, 1100, 120) == ErrorCode::NONE);
  // 3 is not alive here, so only the maximal ISR keeps it in the minimum.
  CHECK(s.high_watermark_candidate(1, 1100, kLag, {1, 2}) == 100);
  // The controller refuses: back to the committed ISR; the HW may pass 3.
  CHECK(s.on_alter_partition_response(p->id, err(ErrorCode::INELIGIBLE_REPLICA)) ==
        AlterPartitionEffect::kResetToCommitted);
  CHECK(s.high_watermark_candidate(1, 1100, kLag, {1, 2}) == 120);

  // Pending shrink of 3: the committed ISR (with 3) is still the maximal ISR.
  auto t = leader({1, 2, 3}, 100, 100);
  REQUIRE(t.on_follower_fetch(2, 100, 0, 40000, 100) == ErrorCode::NONE);
  REQUIRE(t.propose_shrink(40000, kLag));
  CHECK(t.maximal_isr() == std::vector<int32_t>{1, 2, 3});
  t.on_leader_append(110);
  REQUIRE(t.on_follower_fetch(2, 110, 0, 40001, 110) == ErrorCode::NONE);
  CHECK(t.high_watermark_candidate(1, 40001, kLag, kAll) == kUnknownOffset);  // 3's LEO is unknown
}

TEST_CASE("replica_state: HW frozen while the committed ISR is below min ISR (KIP-966 part 1, isUnderMinIsr)") {
  struct Case {
    const char* what;
    std::vector<int32_t> isr;
    int32_t min_isr;
    bool frozen;
  };
  const Case cases[] = {
      {"ISR 1 < min ISR 2", {1}, 2, true},
      {"ISR 2 = min ISR 2", {1, 2}, 2, false},
      {"min ISR 5 capped at RF 3, ISR 3", {1, 2, 3}, 5, false},
      {"min ISR 5 capped at RF 3, ISR 2", {1, 2}, 5, true},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    auto s = leader(c.isr, 100, 50);
    for (int32_t f : {2, 3}) REQUIRE(s.on_follower_fetch(f, 100, 0, 1100, 100) == ErrorCode::NONE);
    CHECK(s.under_min_isr(c.min_isr) == c.frozen);
    CHECK(s.high_watermark_candidate(c.min_isr, 1100, kLag, kAll).has_value() == !c.frozen);
    CHECK(s.maybe_advance_hw(c.min_isr, 1100, kLag, kAll).has_value() == !c.frozen);
  }
  // A pending expansion does not lift the freeze: the committed ISR is compared.
  auto s = leader({1}, 100, 50);
  REQUIRE(s.on_follower_fetch(2, 100, 0, 1100, 100) == ErrorCode::NONE);
  REQUIRE(s.propose_expand(2, kAll));
  CHECK_FALSE(s.high_watermark_candidate(2, 1100, kLag, kAll));
}

TEST_CASE("replica_state: out of sync after the lag time, not before (getOutOfSyncReplicas, isCaughtUp)") {
  auto s = leader({1, 2, 3}, 100, 100);  // ISR members caught up at t=1000
  s.on_leader_append(110);
  CHECK(s.out_of_sync_replicas(1000 + kLag, kLag).empty());                     // lag == max: in sync
  CHECK(s.out_of_sync_replicas(1000 + kLag + 1, kLag) == std::vector<int32_t>{2, 3});
  // A follower at the leader's LEO is never out of sync, however old its caught-up time.
  auto t = leader({1, 2, 3}, 100, 100);
  REQUIRE(t.on_follower_fetch(2, 100, 0, 1000, 100) == ErrorCode::NONE);
  CHECK(t.out_of_sync_replicas(1000 + 10 * kLag, kLag) == std::vector<int32_t>{3});
  // An ISR member the leader has no state for (not assigned) is out of sync.
  auto u = ReplicaState::become_leader(1, 5, 10, {1, 2}, {1, 2, 4}, 100, 100, 1000);
  CHECK(u.out_of_sync_replicas(1000, kLag) == std::vector<int32_t>{4});
}

TEST_CASE("replica_state: shrink proposals (maybeShrinkIsr, prepareIsrShrink)") {
  auto s = leader({1, 2, 3}, 100, 100);
  s.on_leader_append(110);
  CHECK_FALSE(s.propose_shrink(1000 + kLag, kLag));  // not yet
  auto p = s.propose_shrink(1000 + kLag + 1, kLag);
  REQUIRE(p);
  CHECK(p->new_isr == std::vector<int32_t>{1});  // the leader stays
  CHECK(p->leader_id == 1);
  CHECK(p->leader_epoch == 5);
  CHECK(p->partition_epoch == 10);
  CHECK(p->leader_recovery_state == LeaderRecoveryState::kRecovered);
  REQUIRE(s.pending());
  CHECK(s.pending()->kind == PendingIsrChange::Kind::kShrink);
  CHECK(s.pending()->changed == std::vector<int32_t>{2, 3});
  CHECK(s.isr() == std::vector<int32_t>{1, 2, 3});  // committed until the controller answers
  // One change in flight.
  CHECK_FALSE(s.propose_shrink(1000 + kLag + 2, kLag));
  CHECK(s.out_of_sync_replicas(1000 + kLag + 2, kLag).empty());
  CHECK(s.on_alter_partition_response(p->id, ok(5, 11, {1})) == AlterPartitionEffect::kCommitted);
  CHECK(s.isr() == std::vector<int32_t>{1});
  CHECK(s.partition_epoch() == 11);
  CHECK_FALSE(s.pending());
  // Never empty: a leader outside its own ISR does not shrink it to nothing.
  auto t = ReplicaState::become_leader(1, 5, 10, {1, 2}, {2}, 100, 100, 1000);
  t.on_leader_append(110);
  CHECK_FALSE(t.propose_shrink(1000 + kLag + 1, kLag));
}

TEST_CASE("replica_state: expand only at/after the HW and the epoch start (isFollowerInSync, canAddReplicaToIsr)") {
  // Leader epoch starts at 100 (the LEO at election); HW 80.
  struct Case {
    const char* what;
    int64_t follower_leo;
    int64_t hw;
    BrokerSet alive;
    bool want;
  };
  const Case cases[] = {
      {"below the HW", 79, 80, kAll, false},
      {"at the HW, below the epoch start", 90, 80, kAll, false},
      {"at the epoch start, HW below", 100, 80, kAll, true},
      {"at the epoch start, below the HW", 100, 105, kAll, false},
      {"caught up but not alive", 100, 80, {1, 2}, false},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    auto s = leader({1, 2}, 100, c.hw);
    s.on_leader_append(110);
    REQUIRE(s.on_follower_fetch(3, c.follower_leo, 0, 1100, 110) == ErrorCode::NONE);
    CHECK(s.expand_candidate(3, c.alive) == c.want);
    auto p = s.propose_expand(3, c.alive);
    CHECK(p.has_value() == c.want);
    if (p) {
      CHECK(p->new_isr == std::vector<int32_t>{1, 2, 3});
      CHECK(s.pending()->kind == PendingIsrChange::Kind::kExpand);
    }
  }
  auto s = leader({1, 2}, 100, 100);
  REQUIRE(s.on_follower_fetch(2, 100, 0, 1100, 100) == ErrorCode::NONE);
  CHECK_FALSE(s.expand_candidate(2, kAll));  // already in the ISR
  CHECK_FALSE(s.expand_candidate(4, {1, 2, 3, 4}));  // no such replica
  REQUIRE(s.on_follower_fetch(3, 100, 0, 1100, 100) == ErrorCode::NONE);
  REQUIRE(s.propose_shrink(1100 + 2 * kLag, kLag) == std::nullopt);  // 2 is at the LEO
  REQUIRE(s.propose_expand(3, kAll));
  CHECK_FALSE(s.propose_expand(3, kAll));  // in flight
}

TEST_CASE("replica_state: AlterPartition answers, per error (handleAlterPartitionUpdate/Error)") {
  struct Case {
    const char* what;
    AlterPartitionAnswer answer;
    AlterPartitionEffect effect;
    bool still_pending;
    std::vector<int32_t> isr;
    int32_t partition_epoch;
  };
  const std::vector<int32_t> c3 = {1, 2};  // committed before the expansion of 3
  const Case cases[] = {
      {"success", ok(5, 11, {1, 2, 3}), AlterPartitionEffect::kCommitted, false, {1, 2, 3}, 11},
      {"success, same partition epoch (no-op on the controller)", ok(5, 10, {1, 2, 3}),
       AlterPartitionEffect::kCommitted, false, {1, 2, 3}, 10},
      {"success for another leader epoch", ok(6, 11, {1, 2, 3}), AlterPartitionEffect::kKeptPending,
       true, c3, 10},
      {"success with an older partition epoch", ok(5, 9, {1, 2, 3}),
       AlterPartitionEffect::kKeptPending, true, c3, 10},
      {"OPERATION_NOT_ATTEMPTED", err(ErrorCode::OPERATION_NOT_ATTEMPTED), AlterPartitionEffect::kResetToCommitted,
       false, c3, 10},
      {"INELIGIBLE_REPLICA", err(ErrorCode::INELIGIBLE_REPLICA), AlterPartitionEffect::kResetToCommitted, false, c3, 10},
      {"UNKNOWN_TOPIC_OR_PARTITION", err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION), AlterPartitionEffect::kKeptPending, true,
       c3, 10},
      {"UNKNOWN_TOPIC_ID", err(ErrorCode::UNKNOWN_TOPIC_ID), AlterPartitionEffect::kKeptPending, true, c3, 10},
      {"FENCED_LEADER_EPOCH", err(ErrorCode::FENCED_LEADER_EPOCH), AlterPartitionEffect::kKeptPending, true, c3, 10},
      {"INVALID_UPDATE_VERSION", err(ErrorCode::INVALID_UPDATE_VERSION), AlterPartitionEffect::kKeptPending, true, c3,
       10},
      {"INVALID_REQUEST", err(ErrorCode::INVALID_REQUEST), AlterPartitionEffect::kKeptPending, true, c3, 10},
      {"NEW_LEADER_ELECTED", err(ErrorCode::NEW_LEADER_ELECTED), AlterPartitionEffect::kKeptPending, true, c3, 10},
      {"NOT_CONTROLLER: retried", err(ErrorCode::NOT_CONTROLLER), AlterPartitionEffect::kRetry, true, c3, 10},
      {"REQUEST_TIMED_OUT: retried", err(ErrorCode::REQUEST_TIMED_OUT), AlterPartitionEffect::kRetry, true, c3, 10},
      {"UNKNOWN_SERVER_ERROR: retried", err(ErrorCode::UNKNOWN_SERVER_ERROR), AlterPartitionEffect::kRetry, true, c3,
       10},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    auto s = leader({1, 2}, 100, 100);
    REQUIRE(s.on_follower_fetch(3, 100, 0, 1100, 100) == ErrorCode::NONE);
    auto p = s.propose_expand(3, kAll);
    REQUIRE(p);
    CHECK(s.on_alter_partition_response(p->id + 1, c.answer) == AlterPartitionEffect::kIgnored);
    CHECK(s.on_alter_partition_response(p->id, c.answer) == c.effect);
    CHECK(s.pending().has_value() == c.still_pending);
    CHECK(s.isr() == c.isr);
    CHECK(s.partition_epoch() == c.partition_epoch);
    if (c.effect == AlterPartitionEffect::kRetry) CHECK(s.pending()->sent == *p);
  }
  // An answer for an earlier leadership never matches this one's proposals.
  auto old = leader({1, 2}, 100, 100);
  REQUIRE(old.on_follower_fetch(3, 100, 0, 1100, 100) == ErrorCode::NONE);
  auto p_old = old.propose_expand(3, kAll);
  auto now = ReplicaState::become_leader(1, 6, 11, {1, 2, 3}, {1, 2}, 100, 100, 2000, &old);
  REQUIRE(now.on_follower_fetch(3, 100, 0, 2100, 100) == ErrorCode::NONE);
  auto p_new = now.propose_expand(3, kAll);
  REQUIRE(p_new);
  CHECK(p_old->id != p_new->id);
  CHECK(now.on_alter_partition_response(p_old->id, ok(6, 12, {1, 2, 3})) ==
        AlterPartitionEffect::kIgnored);
}

TEST_CASE("replica_state: acks=all before the append (Partition.appendRecordsToLeader)") {
  struct Case {
    std::vector<int32_t> isr;
    int32_t min_isr;
    ErrorCode want;
  };
  const Case cases[] = {
      {{1}, 2, ErrorCode::NOT_ENOUGH_REPLICAS},
      {{1, 2}, 2, ErrorCode::NONE},
      {{1, 2, 3}, 5, ErrorCode::NONE},  // capped at RF 3
      {{1}, 1, ErrorCode::NONE},
  };
  for (const auto& c : cases) {
    CHECK(leader(c.isr).acks_all_check_before_append(c.min_isr) == c.want);
  }
  // A pending expansion does not count before the append (committed ISR).
  auto s = leader({1}, 100, 100);
  REQUIRE(s.on_follower_fetch(2, 100, 0, 1100, 100) == ErrorCode::NONE);
  REQUIRE(s.propose_expand(2, kAll));
  CHECK(s.acks_all_check_before_append(2) == ErrorCode::NOT_ENOUGH_REPLICAS);
}

TEST_CASE("replica_state: acks=all completion (Partition.checkEnoughReplicasReachOffset)") {
  // Waiting: the HW is below the required offset.
  auto s = leader({1, 2, 3}, 110, 100);
  CHECK(s.acks_all_complete(110, 2) == AcksAllOutcome{false, ErrorCode::NONE});
  CHECK(s.acks_all_complete(100, 2) == AcksAllOutcome{true, ErrorCode::NONE});
  // Appended with ISR {1,2,3}; the HW reached 110, then the ISR shrank to {1}.
  auto t = leader({1, 2, 3}, 100, 100);
  t.on_leader_append(110);
  for (int32_t f : {2, 3}) REQUIRE(t.on_follower_fetch(f, 110, 0, 1100, 110) == ErrorCode::NONE);
  REQUIRE(t.maybe_advance_hw(2, 1100, kLag, kAll) == 110);
  t.on_leader_append(120);
  auto p = t.propose_shrink(1100 + kLag + 1, kLag);
  REQUIRE(p);
  CHECK(t.acks_all_complete(110, 2) == AcksAllOutcome{true, ErrorCode::NONE});  // shrink pending: maximal = {1,2,3}
  REQUIRE(t.on_alter_partition_response(p->id, ok(5, 11, {1})) == AlterPartitionEffect::kCommitted);
  CHECK(t.acks_all_complete(110, 2) == AcksAllOutcome{true, ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND});
  CHECK(t.acks_all_complete(111, 2) == AcksAllOutcome{false, ErrorCode::NONE});
  // A pending expansion counts here (maximal ISR).
  auto u = leader({1}, 100, 100);
  REQUIRE(u.on_follower_fetch(2, 100, 0, 1100, 100) == ErrorCode::NONE);
  CHECK(u.acks_all_complete(100, 2) == AcksAllOutcome{true, ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND});
  REQUIRE(u.propose_expand(2, kAll));
  CHECK(u.acks_all_complete(100, 2) == AcksAllOutcome{true, ErrorCode::NONE});
}
