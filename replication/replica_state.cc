// replication/replica_state.cc: see replica_state.h. Each rule names the
// Kafka 3.9 method whose behaviour it follows.
#include "replication/replica_state.h"

#include <algorithm>

#include "replication/id_list.h"

namespace ciuickafka::replication {

using protocol::ErrorCode;

FollowerState follower_after_fetch(const FollowerState& prev, int64_t fetch_offset, int64_t log_start_offset,
                                   int64_t now_ms, int64_t leader_leo) {
  // Replica.updateFetchStateOrThrow. The caught-up time never goes back.
  int64_t caught_up = prev.last_caught_up_time_ms;
  if (fetch_offset >= leader_leo) {
    caught_up = std::max(caught_up, now_ms);
  } else if (fetch_offset >= prev.last_fetch_leader_leo) {
    caught_up = std::max(caught_up, prev.last_fetch_time_ms);
  }
  FollowerState next;
  next.log_end_offset = fetch_offset;
  next.log_start_offset = log_start_offset;
  next.last_fetch_leader_leo = std::max(leader_leo, prev.last_fetch_leader_leo);
  next.last_fetch_time_ms = now_ms;
  next.last_caught_up_time_ms = caught_up;
  return next;
}

bool follower_caught_up(const FollowerState& f, int64_t leader_leo, int64_t now_ms, int64_t max_lag_ms) {
  // ReplicaState.isCaughtUp
  return f.log_end_offset == leader_leo || now_ms - f.last_caught_up_time_ms <= max_lag_ms;
}

ReplicaState ReplicaState::become_leader(int32_t local_id, int32_t leader_epoch, int32_t partition_epoch,
                                         std::vector<int32_t> replicas, std::vector<int32_t> isr, int64_t leader_leo,
                                         int64_t high_watermark, int64_t now_ms, const ReplicaState* previous,
                                         std::optional<int64_t> epoch_start) {
  ReplicaState s;
  s.leader_id_ = local_id;
  s.leader_epoch_ = leader_epoch;
  s.partition_epoch_ = partition_epoch;
  s.replicas_ = std::move(replicas);
  s.isr_ = std::move(isr);
  s.recovery_ = LeaderRecoveryState::kRecovered;  // makeLeader marks a RECOVERING partition RECOVERED
  s.leader_leo_ = leader_leo;
  s.hw_ = high_watermark;
  s.epoch_start_ = epoch_start.value_or(leader_leo);  // maybeAssignEpochStartOffset(epoch, LEO)
  for (int32_t id : s.replicas_) {
    if (id == local_id) continue;
    const bool in_sync = contains(s.isr_, id);
    FollowerState f;
    f.last_caught_up_time_ms = in_sync ? now_ms : 0;
    const FollowerState* old = previous ? previous->follower(id) : nullptr;
    if (previous && old) {
      // Re-elected (resetReplicaState, isNewLeader = false): offsets kept.
      f.log_end_offset = old->log_end_offset;
      f.log_start_offset = old->log_start_offset;
      f.last_fetch_leader_leo = leader_leo;
      f.last_fetch_time_ms = in_sync ? now_ms : 0;
    }
    s.followers_.emplace(id, f);
  }
  return s;
}

bool ReplicaState::in_isr(int32_t id) const { return contains(isr_, id); }

std::vector<int32_t> ReplicaState::maximal_isr() const {
  std::vector<int32_t> m = isr_;
  // PendingExpandIsr.maximalIsr = isr + new replica; a pending shrink keeps
  // the committed ISR (the shrink may still fail).
  if (pending_ && pending_->kind == PendingIsrChange::Kind::kExpand) {
    for (int32_t id : pending_->changed) {
      if (!contains(m, id)) m.push_back(id);
    }
  }
  return m;
}

const FollowerState* ReplicaState::follower(int32_t id) const {
  auto it = followers_.find(id);
  return it == followers_.end() ? nullptr : &it->second;
}

int32_t ReplicaState::effective_min_isr(int32_t min_insync_replicas) const {
  // Partition.effectiveMinIsr: min(minInSyncReplicas, remote replicas + 1).
  const auto rf = static_cast<int32_t>(followers_.size() + 1);
  return std::min(min_insync_replicas, rf);
}

bool ReplicaState::under_min_isr(int32_t min_insync_replicas) const {
  return static_cast<int32_t>(isr_.size()) < effective_min_isr(min_insync_replicas);
}

ErrorCode ReplicaState::on_follower_fetch(int32_t follower, int64_t fetch_offset, int64_t log_start_offset,
                                          int64_t now_ms, int64_t leader_leo, bool has_current_leader_epoch) {
  auto it = followers_.find(follower);
  if (it == followers_.end()) {
    return has_current_leader_epoch ? ErrorCode::UNKNOWN_LEADER_EPOCH : ErrorCode::NOT_LEADER_OR_FOLLOWER;
  }
  leader_leo_ = std::max(leader_leo_, leader_leo);
  it->second = follower_after_fetch(it->second, fetch_offset, log_start_offset, now_ms, leader_leo);
  return ErrorCode::NONE;
}

void ReplicaState::on_leader_append(int64_t leo) { leader_leo_ = leo; }

std::optional<int64_t> ReplicaState::high_watermark_candidate(int32_t min_insync_replicas, int64_t now_ms,
                                                              int64_t replica_lag_time_max_ms,
                                                              const BrokerSet& alive) const {
  // maybeIncrementLeaderHW
  if (under_min_isr(min_insync_replicas)) return std::nullopt;
  const std::vector<int32_t> maximal = maximal_isr();
  int64_t hw = leader_leo_;
  for (const auto& [id, f] : followers_) {
    if (f.log_end_offset >= hw) continue;
    const bool would_join = follower_caught_up(f, leader_leo_, now_ms, replica_lag_time_max_ms) && alive.contains(id);
    if (contains(maximal, id) || would_join) hw = f.log_end_offset;
  }
  return hw;
}

std::optional<int64_t> ReplicaState::maybe_advance_hw(int32_t min_insync_replicas, int64_t now_ms,
                                                      int64_t replica_lag_time_max_ms, const BrokerSet& alive) {
  auto candidate = high_watermark_candidate(min_insync_replicas, now_ms, replica_lag_time_max_ms, alive);
  // UnifiedLog.maybeIncrementHighWatermark: only forwards.
  if (!candidate || *candidate <= hw_) return std::nullopt;
  hw_ = *candidate;
  return hw_;
}

std::vector<int32_t> ReplicaState::out_of_sync_replicas(int64_t now_ms, int64_t replica_lag_time_max_ms) const {
  // getOutOfSyncReplicas / isFollowerOutOfSync: an ISR member the leader has
  // no state for counts as out of sync.
  std::vector<int32_t> out;
  if (pending_) return out;
  for (int32_t id : isr_) {
    if (id == leader_id_) continue;
    const FollowerState* f = follower(id);
    if (!f || !follower_caught_up(*f, leader_leo_, now_ms, replica_lag_time_max_ms)) out.push_back(id);
  }
  return out;
}

bool ReplicaState::expand_candidate(int32_t follower_id, const BrokerSet& alive) const {
  // canAddReplicaToIsr (ZK mode: the broker is alive) && isFollowerInSync.
  if (pending_ || in_isr(follower_id) || !alive.contains(follower_id)) return false;
  const FollowerState* f = follower(follower_id);
  if (!f) return false;
  return f->log_end_offset >= hw_ && f->log_end_offset >= epoch_start_;
}

AlterPartitionProposal ReplicaState::make_proposal(std::vector<int32_t> new_isr) {
  AlterPartitionProposal p;
  // Unique across leaderships too: a newer leadership has a larger epoch.
  p.id = (static_cast<uint64_t>(static_cast<uint32_t>(leader_epoch_)) << 32) | (next_proposal_id_++ & 0xffffffffu);
  p.leader_id = leader_id_;
  p.leader_epoch = leader_epoch_;
  p.partition_epoch = partition_epoch_;
  p.new_isr = std::move(new_isr);
  p.leader_recovery_state = recovery_;
  return p;
}

std::optional<AlterPartitionProposal> ReplicaState::propose_shrink(int64_t now_ms, int64_t replica_lag_time_max_ms) {
  // maybeShrinkIsr / prepareIsrShrink
  if (pending_) return std::nullopt;
  const std::vector<int32_t> out = out_of_sync_replicas(now_ms, replica_lag_time_max_ms);
  if (out.empty()) return std::nullopt;
  std::vector<int32_t> new_isr;
  for (int32_t id : isr_) {
    if (!contains(out, id)) new_isr.push_back(id);
  }
  // The leader is never out of sync, so this holds while it is in its ISR;
  // an ISR without the leader is not shrunk to nothing.
  if (new_isr.empty()) return std::nullopt;
  PendingIsrChange change{PendingIsrChange::Kind::kShrink, out, make_proposal(std::move(new_isr))};
  pending_ = change;
  return change.sent;
}

std::optional<AlterPartitionProposal> ReplicaState::propose_expand(int32_t follower_id, const BrokerSet& alive) {
  // maybeExpandIsr / prepareIsrExpand
  if (!expand_candidate(follower_id, alive)) return std::nullopt;
  std::vector<int32_t> new_isr = isr_;
  new_isr.push_back(follower_id);
  PendingIsrChange change{PendingIsrChange::Kind::kExpand, {follower_id}, make_proposal(std::move(new_isr))};
  pending_ = change;
  return change.sent;
}

AlterPartitionEffect ReplicaState::on_alter_partition_response(uint64_t proposal_id,
                                                               const AlterPartitionAnswer& answer) {
  // submitAlterPartition's completion: an answer to anything but the change
  // in flight is out of date.
  if (!pending_ || pending_->sent.id != proposal_id) return AlterPartitionEffect::kIgnored;
  switch (answer.error) {
    case ErrorCode::NONE:
      // handleAlterPartitionUpdate: a stale answer leaves the change pending.
      if (answer.leader_epoch != leader_epoch_ || answer.partition_epoch < partition_epoch_) {
        return AlterPartitionEffect::kKeptPending;
      }
      isr_ = answer.isr;
      recovery_ = answer.leader_recovery_state;
      partition_epoch_ = answer.partition_epoch;
      pending_.reset();
      return AlterPartitionEffect::kCommitted;
    // handleAlterPartitionError: the controller says it applied nothing.
    case ErrorCode::OPERATION_NOT_ATTEMPTED:
    case ErrorCode::INELIGIBLE_REPLICA:
      pending_.reset();
      return AlterPartitionEffect::kResetToCommitted;
    // Not retriable: stay pending until new leadership metadata arrives.
    case ErrorCode::UNKNOWN_TOPIC_OR_PARTITION:
    case ErrorCode::UNKNOWN_TOPIC_ID:
    case ErrorCode::FENCED_LEADER_EPOCH:
    case ErrorCode::INVALID_UPDATE_VERSION:
    case ErrorCode::INVALID_REQUEST:
    case ErrorCode::NEW_LEADER_ELECTED:
      return AlterPartitionEffect::kKeptPending;
    default:
      return AlterPartitionEffect::kRetry;
  }
}

ErrorCode ReplicaState::acks_all_check_before_append(int32_t min_insync_replicas) const {
  // appendRecordsToLeader: committed ISR size against the effective min ISR.
  return under_min_isr(min_insync_replicas) ? ErrorCode::NOT_ENOUGH_REPLICAS : ErrorCode::NONE;
}

AcksAllOutcome ReplicaState::acks_all_complete(int64_t required_offset, int32_t min_insync_replicas) const {
  // checkEnoughReplicasReachOffset: the maximal ISR is compared here.
  if (hw_ < required_offset) return {false, ErrorCode::NONE};
  if (effective_min_isr(min_insync_replicas) <= static_cast<int32_t>(maximal_isr().size())) {
    return {true, ErrorCode::NONE};
  }
  return {true, ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND};
}

}  // namespace ciuickafka::replication
