// replication/alter_partition_rules.cc: see alter_partition_rules.h.
#include "replication/alter_partition_rules.h"

namespace ciuickafka::replication {

using protocol::ErrorCode;

namespace {

AlterPartitionDecision reject(ErrorCode e) {
  AlterPartitionDecision d;
  d.action = AlterPartitionDecision::Action::kReject;
  d.error = e;
  return d;
}

}  // namespace

ErrorCode check_alter_partition_request(const ControllerView& controller, int32_t broker_id, int64_t broker_epoch) {
  if (!controller.active) return ErrorCode::NOT_CONTROLLER;
  auto it = controller.broker_epochs.find(broker_id);
  if (it == controller.broker_epochs.end()) return ErrorCode::STALE_BROKER_EPOCH;  // unknown broker
  if (it->second != broker_epoch) return ErrorCode::STALE_BROKER_EPOCH;
  return ErrorCode::NONE;
}

AlterPartitionDecision check_alter_partition_item(const ControllerView& controller, int16_t request_version,
                                                  int32_t broker_id, const std::optional<CurrentPartition>& current,
                                                  const AlterPartitionItem& item) {
  if (!current) return reject(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
  const PartitionState& cur = current->state;
  // Newer than what we hold: we are likely no longer the controller.
  if (item.partition_epoch > current->partition_epoch || item.leader_epoch > cur.leader_epoch) {
    return reject(ErrorCode::NOT_CONTROLLER);
  }
  if (item.leader_epoch < cur.leader_epoch) return reject(ErrorCode::FENCED_LEADER_EPOCH);
  // equalsAllowStalePartitionEpoch, before partition-epoch fencing so that a
  // retried request that was already applied succeeds.
  if (broker_id == cur.leader && item.leader_epoch == cur.leader_epoch && item.new_isr == cur.isr &&
      item.leader_recovery_state == cur.leader_recovery_state && item.partition_epoch <= current->partition_epoch) {
    AlterPartitionDecision d;
    d.action = AlterPartitionDecision::Action::kAlreadyCurrent;
    d.state = cur;
    d.expected_partition_epoch = current->partition_epoch;
    return d;
  }
  if (item.partition_epoch < current->partition_epoch) return reject(ErrorCode::INVALID_UPDATE_VERSION);
  if (item.leader_recovery_state == LeaderRecoveryState::kRecovering && item.new_isr.size() > 1) {
    return reject(ErrorCode::INVALID_REQUEST);
  }
  if (cur.leader_recovery_state == LeaderRecoveryState::kRecovered &&
      item.leader_recovery_state == LeaderRecoveryState::kRecovering) {
    return reject(ErrorCode::INVALID_REQUEST);
  }
  // KIP-841: ControllerContext.liveBrokerIds excludes shutting-down brokers.
  for (int32_t id : item.new_isr) {
    if (!controller.broker_epochs.contains(id) || controller.shutting_down.contains(id)) {
      return reject(request_version > 1 ? ErrorCode::INELIGIBLE_REPLICA : ErrorCode::OPERATION_NOT_ATTEMPTED);
    }
  }
  AlterPartitionDecision d;
  d.action = AlterPartitionDecision::Action::kWrite;
  d.state = PartitionState{broker_id, item.leader_epoch, controller.controller_epoch, item.new_isr,
                           item.leader_recovery_state};
  d.expected_partition_epoch = item.partition_epoch;
  return d;
}

AlterPartitionDecision check_alter_partition(const ControllerView& controller, int16_t request_version,
                                             int32_t broker_id, int64_t broker_epoch,
                                             const std::optional<CurrentPartition>& current,
                                             const AlterPartitionItem& item) {
  const ErrorCode top = check_alter_partition_request(controller, broker_id, broker_epoch);
  if (top != ErrorCode::NONE) return reject(top);
  return check_alter_partition_item(controller, request_version, broker_id, current, item);
}

}  // namespace ciuickafka::replication
