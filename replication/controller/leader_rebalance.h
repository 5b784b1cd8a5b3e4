// replication/controller/leader_rebalance.h: the auto leader rebalance rule
// (Kafka 3.9's KafkaController.checkAndTriggerAutoLeaderRebalance), as a
// pure function over the controller's context.
//
// Partitions are grouped by their preferred replica (the head of the
// assignment); topics being deleted and partitions without a state are left
// out. For each broker, the imbalance ratio is the share of its group led by
// another broker. When that ratio is strictly above
// leader.imbalance.per.broker.percentage / 100, the group's partitions not
// led by their preferred replica are candidates for a preferred election,
// keeping only those whose preferred replica could lead now (online and in
// the ISR: Kafka's canPreferredReplicaBeLeader).
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <vector>

#include "replication/controller/controller_context.h"

namespace ciuickafka::replication::controller {

std::vector<TopicPartitionRef> rebalance_candidates(const ControllerContext& ctx, int32_t imbalance_percentage);

}  // namespace ciuickafka::replication::controller
