// replication/election.h: the ZooKeeper-mode controller's leader election
// and ISR rules, as pure functions over a partition's state.
//
// From Kafka 3.9's core/src/main/scala/kafka/controller/: Election.scala and
// PartitionLeaderElectionAlgorithms (PartitionStateMachine.scala), the new
// partition initialisation (PartitionStateMachine.initializeLeaderAndIsr
// ForPartitions) and ReplicaStateMachine.doRemoveReplicasFromIsr.
//
// Every election that returns a state bumps leader_epoch by one (Kafka's
// newLeaderAndIsr); nothing is returned when no replica qualifies, which the
// caller reports (NoReplicaOnline / PREFERRED_LEADER_NOT_AVAILABLE ...).
// controller_epoch is set to the caller's epoch: the state is what the
// controller writes to .../partitions/P/state next. "live" is the set of
// brokers the controller sees alive (their replicas online).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "replication/zk_data.h"

namespace ciuickafka::replication {

using BrokerSet = std::set<int32_t>;

// A new partition: leader = first live replica, ISR = the live replicas in
// assignment order, leader_epoch 0. Nothing when no replica is live.
std::optional<PartitionState> initial_partition_state(const std::vector<int32_t>& assignment, const BrokerSet& live,
                                                      int32_t controller_epoch);

// Offline (or new, with a state) partition: the first replica in assignment
// order that is live and in the ISR; the ISR becomes its live members. If
// none and unclean is allowed: the first live replica, ISR = [it], and the
// state RECOVERING (when leader recovery is supported, IBP >= 3.2);
// otherwise the previous recovery state is kept.
std::optional<PartitionState> elect_offline(const std::vector<int32_t>& assignment, const PartitionState& current,
                                            const BrokerSet& live, bool unclean_allowed, int32_t controller_epoch,
                                            bool leader_recovery_supported = true);

// Reassignment: the first target replica that is live and in the ISR; ISR unchanged.
std::optional<PartitionState> elect_reassignment(const std::vector<int32_t>& target_replicas,
                                                 const PartitionState& current, const BrokerSet& live,
                                                 int32_t controller_epoch);

// Preferred: only the head of the assignment, if live and in the ISR; ISR unchanged.
std::optional<PartitionState> elect_preferred(const std::vector<int32_t>& assignment, const PartitionState& current,
                                              const BrokerSet& live, int32_t controller_epoch);
// Kafka answers ELECTION_NOT_NEEDED when the preferred replica already leads.
bool preferred_leader_elected(const std::vector<int32_t>& assignment, const PartitionState& current);

// Controlled shutdown: the first replica that is live (shutting-down brokers
// count as live here, as in Kafka), in the ISR and not shutting down; the
// ISR drops every shutting-down broker.
std::optional<PartitionState> elect_controlled_shutdown(const std::vector<int32_t>& assignment,
                                                        const PartitionState& current, const BrokerSet& live,
                                                        const BrokerSet& shutting_down, int32_t controller_epoch);

// A replica going offline (broker failure, or a follower in controlled
// shutdown): it leaves the ISR, unless it is the last member (the ISR never
// becomes empty); if it led, the leader becomes -1. leader_epoch is bumped.
// Nothing when the replica is not in the ISR (Kafka leaves such states alone).
std::optional<PartitionState> remove_replica_from_isr(const PartitionState& current, int32_t replica,
                                                      int32_t controller_epoch);

inline constexpr int32_t kNoLeader = -1;

}  // namespace ciuickafka::replication
