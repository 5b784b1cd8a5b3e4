// replication/alter_partition_rules.h: the ZooKeeper-mode controller's
// checks of an AlterPartition request, as pure functions.
//
// From Kafka 3.9's KafkaController.tryProcessAlterPartition (core/src/main/
// scala/kafka/controller/KafkaController.scala) and
// LeaderAndIsr.equalsAllowStalePartitionEpoch (core/.../api/LeaderAndIsr.scala).
// The request-level checks come first and answer the whole request (a
// top-level error code); then each partition is checked on its own, in
// Kafka's order, so a partition failing two checks reports the earlier one.
// Resolving topic ids (UNKNOWN_TOPIC_ID, v2+) is the caller's: it passes the
// controller's current state, or nothing for an unknown partition.
//
// An accepted change is written to .../partitions/P/state conditionally on
// the request's partition epoch (the znode version); its new version is the
// partition epoch the response carries. The leader epoch is never bumped.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "protocol/error_code.h"
#include "replication/election.h"
#include "replication/zk_data.h"

namespace ciuickafka::replication {

// What the controller knows when a request arrives.
struct ControllerView {
  bool active = false;                        // this broker is the controller
  int32_t controller_epoch = 0;
  std::map<int32_t, int64_t> broker_epochs;   // live brokers, shutting-down ones included
  BrokerSet shutting_down;                    // in controlled shutdown: not ISR-eligible
};

// Checks that answer the whole request: NOT_CONTROLLER, then
// STALE_BROKER_EPOCH for an unknown broker or a different epoch.
protocol::ErrorCode check_alter_partition_request(const ControllerView& controller, int32_t broker_id,
                                                  int64_t broker_epoch);

// One partition of the request.
struct AlterPartitionItem {
  int32_t leader_epoch = 0;
  int32_t partition_epoch = 0;
  std::vector<int32_t> new_isr;  // broker ids (v3's broker epochs are not checked in ZK mode)
  LeaderRecoveryState leader_recovery_state = LeaderRecoveryState::kRecovered;  // v0: RECOVERED
};

// The controller's state for the partition: the state znode and its version.
struct CurrentPartition {
  PartitionState state;
  int32_t partition_epoch = 0;
};

struct AlterPartitionDecision {
  enum class Action {
    kReject,         // error says why
    kAlreadyCurrent, // idempotent: answer with the current state, write nothing
    kWrite,          // write state at version expected_partition_epoch
  };
  Action action = Action::kReject;
  protocol::ErrorCode error = protocol::ErrorCode::NONE;
  PartitionState state;                // kAlreadyCurrent: the current; kWrite: the new one
  int32_t expected_partition_epoch = 0;  // kAlreadyCurrent: the current partition epoch
};

// The per-partition checks of tryProcessAlterPartition, in order:
//   unknown partition                          -> UNKNOWN_TOPIC_OR_PARTITION
//   partition or leader epoch newer than ours  -> NOT_CONTROLLER
//   leader epoch older                         -> FENCED_LEADER_EPOCH
//   same leader, epoch, ISR (in order) and recovery state, partition
//   epoch not newer                            -> already current (success)
//   partition epoch older                      -> INVALID_UPDATE_VERSION
//   RECOVERING with more than one ISR member   -> INVALID_REQUEST
//   RECOVERED -> RECOVERING                    -> INVALID_REQUEST
//   an ISR member not live or shutting down    -> INELIGIBLE_REPLICA (v2+),
//                                                 OPERATION_NOT_ATTEMPTED (v0-1)
// An accepted state has leader = broker_id (the requester, as Kafka writes
// it), the request's leader epoch, ISR and recovery state, and the
// controller's epoch.
AlterPartitionDecision check_alter_partition_item(const ControllerView& controller, int16_t request_version,
                                                  int32_t broker_id, const std::optional<CurrentPartition>& current,
                                                  const AlterPartitionItem& item);

// Both, for a one-partition request: a request-level error is reported as
// the partition's (action kReject).
AlterPartitionDecision check_alter_partition(const ControllerView& controller, int16_t request_version,
                                             int32_t broker_id, int64_t broker_epoch,
                                             const std::optional<CurrentPartition>& current,
                                             const AlterPartitionItem& item);

}  // namespace ciuickafka::replication
