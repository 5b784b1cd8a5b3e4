// tests/unit/replication/alter_partition_rules_test.cc: the controller's
// AlterPartition checks, one case per branch of Kafka 3.9's
// KafkaController.tryProcessAlterPartition, in its order, and requests that
// fail two checks (the earlier one is reported).
#include <catch2/catch.hpp>

#include "replication/alter_partition_rules.h"

using namespace ciuickafka::replication;
using ciuickafka::protocol::ErrorCode;
using Action = AlterPartitionDecision::Action;

namespace {

constexpr auto kRecovered = LeaderRecoveryState::kRecovered;
constexpr auto kRecovering = LeaderRecoveryState::kRecovering;

ControllerView controller() {
  ControllerView v;
  v.active = true;
  v.controller_epoch = 4;
  v.broker_epochs = {{1, 100}, {2, 200}, {3, 300}, {5, 500}};
  v.shutting_down = {5};
  return v;
}

// Leader 1, leader epoch 5, written by controller epoch 3, ISR [1,2], partition epoch 7.
CurrentPartition current(std::vector<int32_t> isr = {1, 2}, LeaderRecoveryState rs = kRecovered) {
  return CurrentPartition{PartitionState{1, 5, 3, std::move(isr), rs}, 7};
}

struct Case {
  const char* what;
  ControllerView view;
  int16_t version;
  int32_t broker_id;
  int64_t broker_epoch;
  std::optional<CurrentPartition> cur;
  AlterPartitionItem item;
  Action action;
  ErrorCode error;
};

}  // namespace

TEST_CASE("alter_partition: every check, in order (KafkaController.tryProcessAlterPartition)") {
  ControllerView inactive = controller();
  inactive.active = false;
  const AlterPartitionItem expand{5, 7, {1, 2, 3}, kRecovered};
  const Case cases[] = {
      // request level
      {"not the controller", inactive, 2, 1, 100, current(), expand, Action::kReject, ErrorCode::NOT_CONTROLLER},
      {"not the controller beats a stale broker epoch", inactive, 2, 1, 99, current(), {4, 6, {1, 4}, kRecovered},
       Action::kReject, ErrorCode::NOT_CONTROLLER},
      {"unknown broker", controller(), 2, 4, 400, current(), expand, Action::kReject, ErrorCode::STALE_BROKER_EPOCH},
      {"broker epoch mismatch", controller(), 2, 1, 99, current(), expand, Action::kReject,
       ErrorCode::STALE_BROKER_EPOCH},
      {"newer broker epoch is a mismatch too", controller(), 2, 1, 101, current(), expand, Action::kReject,
       ErrorCode::STALE_BROKER_EPOCH},
      {"stale broker epoch beats a fenced leader epoch", controller(), 2, 1, 99, current(), {4, 7, {1, 2, 3}, kRecovered},
       Action::kReject, ErrorCode::STALE_BROKER_EPOCH},
      // partition level
      {"unknown partition", controller(), 2, 1, 100, std::nullopt, expand, Action::kReject,
       ErrorCode::UNKNOWN_TOPIC_OR_PARTITION},
      {"leader epoch newer than the controller's", controller(), 2, 1, 100, current(), {6, 7, {1, 2, 3}, kRecovered},
       Action::kReject, ErrorCode::NOT_CONTROLLER},
      {"partition epoch newer than the controller's", controller(), 2, 1, 100, current(), {5, 8, {1, 2, 3}, kRecovered},
       Action::kReject, ErrorCode::NOT_CONTROLLER},
      {"newer partition epoch beats an older leader epoch", controller(), 2, 1, 100, current(), {4, 8, {1, 2, 3}, kRecovered},
       Action::kReject, ErrorCode::NOT_CONTROLLER},
      {"older leader epoch", controller(), 2, 1, 100, current(), {4, 7, {1, 2, 3}, kRecovered}, Action::kReject,
       ErrorCode::FENCED_LEADER_EPOCH},
      {"older leader epoch beats an identical state", controller(), 2, 1, 100, current(), {4, 7, {1, 2}, kRecovered},
       Action::kReject, ErrorCode::FENCED_LEADER_EPOCH},
      {"older leader epoch beats an older partition epoch", controller(), 2, 1, 100, current(), {4, 6, {1, 2, 3}, kRecovered},
       Action::kReject, ErrorCode::FENCED_LEADER_EPOCH},
      {"identical state", controller(), 2, 1, 100, current(), {5, 7, {1, 2}, kRecovered}, Action::kAlreadyCurrent,
       ErrorCode::NONE},
      {"identical state with an older partition epoch (a retry already applied)", controller(), 2, 1, 100, current(),
       {5, 6, {1, 2}, kRecovered}, Action::kAlreadyCurrent, ErrorCode::NONE},
      {"identical state beats ineligible members", controller(), 2, 1, 100, current({1, 4}), {5, 6, {1, 4}, kRecovered},
       Action::kAlreadyCurrent, ErrorCode::NONE},
      {"same members in another order is not identical", controller(), 2, 1, 100, current(), {5, 6, {2, 1}, kRecovered},
       Action::kReject, ErrorCode::INVALID_UPDATE_VERSION},
      {"identical ISR from another broker is not identical", controller(), 2, 2, 200, current(), {5, 6, {1, 2}, kRecovered},
       Action::kReject, ErrorCode::INVALID_UPDATE_VERSION},
      {"older partition epoch", controller(), 2, 1, 100, current(), {5, 6, {1, 2, 3}, kRecovered}, Action::kReject,
       ErrorCode::INVALID_UPDATE_VERSION},
      {"older partition epoch beats RECOVERING with ISR > 1", controller(), 2, 1, 100, current({1}, kRecovering),
       {5, 6, {1, 2}, kRecovering}, Action::kReject, ErrorCode::INVALID_UPDATE_VERSION},
      {"RECOVERING with ISR > 1", controller(), 2, 1, 100, current({1}, kRecovering), {5, 7, {1, 2}, kRecovering},
       Action::kReject, ErrorCode::INVALID_REQUEST},
      {"RECOVERING with ISR > 1 beats an ineligible member", controller(), 2, 1, 100, current({1}, kRecovering),
       {5, 7, {1, 4}, kRecovering}, Action::kReject, ErrorCode::INVALID_REQUEST},
      {"RECOVERED back to RECOVERING", controller(), 2, 1, 100, current({1, 2}), {5, 7, {1}, kRecovering},
       Action::kReject, ErrorCode::INVALID_REQUEST},
      {"ISR names a dead broker, v2", controller(), 2, 1, 100, current(), {5, 7, {1, 2, 4}, kRecovered}, Action::kReject,
       ErrorCode::INELIGIBLE_REPLICA},
      {"ISR names a dead broker, v3", controller(), 3, 1, 100, current(), {5, 7, {1, 2, 4}, kRecovered}, Action::kReject,
       ErrorCode::INELIGIBLE_REPLICA},
      {"ISR names a dead broker, v1", controller(), 1, 1, 100, current(), {5, 7, {1, 2, 4}, kRecovered}, Action::kReject,
       ErrorCode::OPERATION_NOT_ATTEMPTED},
      {"ISR names a dead broker, v0", controller(), 0, 1, 100, current(), {5, 7, {1, 2, 4}, kRecovered}, Action::kReject,
       ErrorCode::OPERATION_NOT_ATTEMPTED},
      {"ISR names a shutting-down broker", controller(), 2, 1, 100, current(), {5, 7, {1, 2, 5}, kRecovered}, Action::kReject,
       ErrorCode::INELIGIBLE_REPLICA},
      {"a shrink", controller(), 2, 1, 100, current(), {5, 7, {1}, kRecovered}, Action::kWrite, ErrorCode::NONE},
      {"an expansion", controller(), 2, 1, 100, current(), expand, Action::kWrite, ErrorCode::NONE},
      {"RECOVERING to RECOVERED with more members", controller(), 2, 1, 100, current({1}, kRecovering),
       {5, 7, {1, 2}, kRecovered}, Action::kWrite, ErrorCode::NONE},
      {"RECOVERING kept with one member", controller(), 2, 1, 100, current({2}, kRecovering),
       {5, 7, {1}, kRecovering}, Action::kWrite, ErrorCode::NONE},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    const auto d = check_alter_partition(c.view, c.version, c.broker_id, c.broker_epoch, c.cur, c.item);
    CHECK(d.action == c.action);
    CHECK(d.error == c.error);
  }
}

TEST_CASE("alter_partition: the request-level checks alone") {
  ControllerView v = controller();
  CHECK(check_alter_partition_request(v, 1, 100) == ErrorCode::NONE);
  CHECK(check_alter_partition_request(v, 5, 500) == ErrorCode::NONE);  // shutting down is still live
  CHECK(check_alter_partition_request(v, 9, 100) == ErrorCode::STALE_BROKER_EPOCH);
  v.active = false;
  CHECK(check_alter_partition_request(v, 1, 100) == ErrorCode::NOT_CONTROLLER);
}

TEST_CASE("alter_partition: what an accepted change writes") {
  // The leader epoch is not bumped; the controller epoch is the writer's;
  // the ISR and recovery state are the request's, the leader is the requester.
  const auto d = check_alter_partition(controller(), 2, 1, 100, current(), {5, 7, {1, 3, 2}, kRecovered});
  REQUIRE(d.action == Action::kWrite);
  CHECK(d.state == PartitionState{1, 5, 4, {1, 3, 2}, kRecovered});
  CHECK(d.expected_partition_epoch == 7);  // conditional on the znode version

  const auto r = check_alter_partition(controller(), 2, 1, 100, current({1}, kRecovering), {5, 7, {1, 2}, kRecovered});
  REQUIRE(r.action == Action::kWrite);
  CHECK(r.state.leader_recovery_state == kRecovered);

  // Already current: the controller's state and partition epoch come back.
  const auto same = check_alter_partition(controller(), 2, 1, 100, current(), {5, 6, {1, 2}, kRecovered});
  REQUIRE(same.action == Action::kAlreadyCurrent);
  CHECK(same.state == current().state);
  CHECK(same.expected_partition_epoch == 7);
}
