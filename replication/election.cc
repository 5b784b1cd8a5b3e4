// replication/election.cc: see election.h.
#include "replication/election.h"

#include <algorithm>

#include "replication/id_list.h"

namespace ciuickafka::replication {

namespace {

// LeaderAndIsr.newLeaderAndIsr: a new leader and ISR under the next epoch.
PartitionState next(const PartitionState& current, int32_t leader, std::vector<int32_t> isr, int32_t controller_epoch) {
  PartitionState s = current;
  s.leader = leader;
  s.isr = std::move(isr);
  s.leader_epoch = current.leader_epoch + 1;
  s.controller_epoch = controller_epoch;
  return s;
}

}  // namespace

std::optional<PartitionState> initial_partition_state(const std::vector<int32_t>& assignment, const BrokerSet& live,
                                                      int32_t controller_epoch) {
  std::vector<int32_t> live_replicas;
  for (int32_t r : assignment)
    if (live.contains(r)) live_replicas.push_back(r);
  if (live_replicas.empty()) return std::nullopt;
  PartitionState s;
  s.leader = live_replicas.front();
  s.leader_epoch = 0;
  s.controller_epoch = controller_epoch;
  s.isr = std::move(live_replicas);
  return s;
}

std::optional<PartitionState> elect_offline(const std::vector<int32_t>& assignment, const PartitionState& current,
                                            const BrokerSet& live, bool unclean_allowed, int32_t controller_epoch,
                                            bool leader_recovery_supported) {
  std::optional<int32_t> leader;
  for (int32_t r : assignment)
    if (live.contains(r) && contains(current.isr, r)) { leader = r; break; }
  if (!leader && unclean_allowed)
    for (int32_t r : assignment)
      if (live.contains(r)) { leader = r; break; }
  if (!leader) return std::nullopt;
  if (contains(current.isr, *leader)) {
    std::vector<int32_t> isr;
    for (int32_t r : current.isr)
      if (live.contains(r)) isr.push_back(r);
    return next(current, *leader, std::move(isr), controller_epoch);
  }
  PartitionState s = next(current, *leader, {*leader}, controller_epoch);
  if (leader_recovery_supported) s.leader_recovery_state = LeaderRecoveryState::kRecovering;
  return s;
}

std::optional<PartitionState> elect_reassignment(const std::vector<int32_t>& target_replicas,
                                                 const PartitionState& current, const BrokerSet& live,
                                                 int32_t controller_epoch) {
  for (int32_t r : target_replicas)
    if (live.contains(r) && contains(current.isr, r)) return next(current, r, current.isr, controller_epoch);
  return std::nullopt;
}

std::optional<PartitionState> elect_preferred(const std::vector<int32_t>& assignment, const PartitionState& current,
                                              const BrokerSet& live, int32_t controller_epoch) {
  if (assignment.empty()) return std::nullopt;
  int32_t preferred = assignment.front();
  if (!live.contains(preferred) || !contains(current.isr, preferred)) return std::nullopt;
  return next(current, preferred, current.isr, controller_epoch);
}

bool preferred_leader_elected(const std::vector<int32_t>& assignment, const PartitionState& current) {
  return !assignment.empty() && current.leader == assignment.front();
}

std::optional<PartitionState> elect_controlled_shutdown(const std::vector<int32_t>& assignment,
                                                        const PartitionState& current, const BrokerSet& live,
                                                        const BrokerSet& shutting_down, int32_t controller_epoch) {
  std::optional<int32_t> leader;
  for (int32_t r : assignment)
    if ((live.contains(r) || shutting_down.contains(r)) && contains(current.isr, r) && !shutting_down.contains(r)) {
      leader = r;
      break;
    }
  if (!leader) return std::nullopt;
  std::vector<int32_t> isr;
  for (int32_t r : current.isr)
    if (!shutting_down.contains(r)) isr.push_back(r);
  return next(current, *leader, std::move(isr), controller_epoch);
}

std::optional<PartitionState> remove_replica_from_isr(const PartitionState& current, int32_t replica,
                                                      int32_t controller_epoch) {
  if (!contains(current.isr, replica)) return std::nullopt;
  int32_t leader = replica == current.leader ? kNoLeader : current.leader;
  std::vector<int32_t> isr = current.isr;
  if (isr.size() > 1) isr.erase(std::remove(isr.begin(), isr.end(), replica), isr.end());
  return next(current, leader, std::move(isr), controller_epoch);
}

}  // namespace ciuickafka::replication
