// replication/replica_state.h: one partition's replica state on its leader:
// the followers' fetch positions, the committed ISR and at most one pending
// ISR change, the high watermark, and the acks=all rules.
//
// The facts are Kafka 3.9's (ZooKeeper mode): core/src/main/scala/kafka/
// cluster/Replica.scala (ReplicaState, updateFetchStateOrThrow,
// resetReplicaState, isCaughtUp) and cluster/Partition.scala (makeLeader,
// updateFollowerFetchState, maybeExpandIsr, maybeShrinkIsr,
// getOutOfSyncReplicas, maybeIncrementLeaderHW, checkEnoughReplicasReachOffset,
// appendRecordsToLeader, prepareIsrExpand/Shrink, handleAlterPartition*).
//
// Nothing here reads a clock, a log or the network: times, the leader's log
// end offset and the set of live brokers are arguments. The caller runs the
// steps Kafka runs after a follower fetch in Kafka's order:
// on_follower_fetch, then propose_expand (send it if one comes back), then
// maybe_advance_hw; on a local append: on_leader_append, then
// maybe_advance_hw; every replica.lag.time.max.ms / 2: propose_shrink.
//
// Thread-safety: a value type; one owner mutates it (the partition's lock).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "protocol/error_code.h"
#include "replication/election.h"
#include "replication/zk_data.h"

namespace ciuickafka::replication {

inline constexpr int64_t kUnknownOffset = -1;  // Kafka's UnifiedLog.UnknownOffset

// What the leader knows of one follower (Kafka's ReplicaState).
struct FollowerState {
  int64_t log_end_offset = kUnknownOffset;        // the last fetch offset
  int64_t log_start_offset = kUnknownOffset;      // as the follower reported it
  int64_t last_fetch_leader_leo = kUnknownOffset; // leader LEO at the last fetch
  int64_t last_fetch_time_ms = 0;
  int64_t last_caught_up_time_ms = 0;             // largest t with fetch offset >= leader LEO at t
  bool operator==(const FollowerState&) const = default;
};

// Replica.updateFetchStateOrThrow: the state after a fetch at fetch_offset
// received at now_ms while the leader's LEO was leader_leo.
FollowerState follower_after_fetch(const FollowerState& prev, int64_t fetch_offset, int64_t log_start_offset,
                                   int64_t now_ms, int64_t leader_leo);
// ReplicaState.isCaughtUp: at the leader's LEO, or caught up within max_lag_ms.
bool follower_caught_up(const FollowerState& f, int64_t leader_leo, int64_t now_ms, int64_t max_lag_ms);

// The AlterPartition entry the leader sends (leader id = this broker).
struct AlterPartitionProposal {
  uint64_t id = 0;  // names this proposal; its response must carry it back
  int32_t leader_id = -1;
  int32_t leader_epoch = 0;
  int32_t partition_epoch = 0;
  std::vector<int32_t> new_isr;  // never empty, always holds the leader
  LeaderRecoveryState leader_recovery_state = LeaderRecoveryState::kRecovered;
  bool operator==(const AlterPartitionProposal&) const = default;
};

// One in-flight ISR change (Kafka's PendingExpandIsr / PendingShrinkIsr).
struct PendingIsrChange {
  enum class Kind { kExpand, kShrink };
  Kind kind = Kind::kExpand;
  std::vector<int32_t> changed;  // the replica added, or the replicas removed
  AlterPartitionProposal sent;
};

// The controller's answer for this partition: error, or the state it wrote.
struct AlterPartitionAnswer {
  protocol::ErrorCode error = protocol::ErrorCode::NONE;
  int32_t leader_epoch = 0;  // the rest only when error is NONE
  int32_t partition_epoch = 0;
  std::vector<int32_t> isr;
  LeaderRecoveryState leader_recovery_state = LeaderRecoveryState::kRecovered;
};

// What on_alter_partition_response did (Partition.submitAlterPartition's
// completion, handleAlterPartitionUpdate, handleAlterPartitionError).
enum class AlterPartitionEffect {
  kCommitted,         // ISR and partition epoch taken from the answer, nothing pending
  kResetToCommitted,  // OPERATION_NOT_ATTEMPTED / INELIGIBLE_REPLICA: pending dropped, ISR unchanged
  kKeptPending,       // stale success or a non-retriable error: wait for new leadership metadata
  kRetry,             // any other error: still pending, send pending()->sent again
  kIgnored,           // not the proposal in flight (a newer leadership replaced it)
};

// checkEnoughReplicasReachOffset: done=false means keep waiting.
struct AcksAllOutcome {
  bool done = false;
  protocol::ErrorCode error = protocol::ErrorCode::NONE;
  bool operator==(const AcksAllOutcome&) const = default;
};

class ReplicaState {
 public:
  // Partition.makeLeader with a new leader epoch. Followers are reset as
  // Replica.resetReplicaState does: ISR members caught up at now_ms, others
  // at 0; a newly elected leader forgets their offsets, a re-elected one keeps
  // them. The epoch starts at epoch_start, else at leader_leo (the leader's
  // log records it; it is past leader_leo when writes of the previous epoch
  // were in flight); the recovery state becomes RECOVERED.
  static ReplicaState become_leader(int32_t local_id, int32_t leader_epoch, int32_t partition_epoch,
                                    std::vector<int32_t> replicas, std::vector<int32_t> isr, int64_t leader_leo,
                                    int64_t high_watermark, int64_t now_ms, const ReplicaState* previous = nullptr,
                                    std::optional<int64_t> epoch_start = std::nullopt);

  int32_t leader_id() const { return leader_id_; }
  int32_t leader_epoch() const { return leader_epoch_; }
  int32_t partition_epoch() const { return partition_epoch_; }
  const std::vector<int32_t>& replicas() const { return replicas_; }
  const std::vector<int32_t>& isr() const { return isr_; }  // committed by the controller
  std::vector<int32_t> maximal_isr() const;                 // committed + a pending expansion's replica
  const std::optional<PendingIsrChange>& pending() const { return pending_; }
  LeaderRecoveryState leader_recovery_state() const { return recovery_; }
  int64_t leader_leo() const { return leader_leo_; }
  int64_t high_watermark() const { return hw_; }
  int64_t leader_epoch_start_offset() const { return epoch_start_; }
  const FollowerState* follower(int32_t id) const;
  // min(min.insync.replicas, replication factor) (Partition.effectiveMinIsr).
  int32_t effective_min_isr(int32_t min_insync_replicas) const;
  // The committed ISR is smaller than the effective min ISR (isUnderMinIsr).
  bool under_min_isr(int32_t min_insync_replicas) const;

  // Records a follower's fetch. An unknown replica gets UNKNOWN_LEADER_EPOCH
  // when the fetch carried a current leader epoch, else NOT_LEADER_OR_FOLLOWER
  // (followerReplicaOrThrow). leader_leo also updates the leader's LEO.
  protocol::ErrorCode on_follower_fetch(int32_t follower, int64_t fetch_offset, int64_t log_start_offset,
                                        int64_t now_ms, int64_t leader_leo, bool has_current_leader_epoch = true);
  // The leader's log grew (or was recovered) to leo.
  void on_leader_append(int64_t leo);

  // maybeIncrementLeaderHW without the write: the leader's LEO lowered to the
  // LEO of every follower in the maximal ISR, and of every follower outside it
  // that is caught up and alive (it would join soon). Nothing while under min
  // ISR (KIP-966 strict min ISR, KAFKA-15583: the committed ISR is compared).
  std::optional<int64_t> high_watermark_candidate(int32_t min_insync_replicas, int64_t now_ms,
                                                  int64_t replica_lag_time_max_ms, const BrokerSet& alive) const;
  // Moves the HW to the candidate if it is larger; returns the new HW when it moved.
  std::optional<int64_t> maybe_advance_hw(int32_t min_insync_replicas, int64_t now_ms,
                                          int64_t replica_lag_time_max_ms, const BrokerSet& alive);

  // getOutOfSyncReplicas: committed ISR followers not caught up (or unknown);
  // never the leader; empty while a change is pending.
  std::vector<int32_t> out_of_sync_replicas(int64_t now_ms, int64_t replica_lag_time_max_ms) const;
  // canAddReplicaToIsr && isFollowerInSync: nothing pending, not in the ISR,
  // alive, LEO >= HW and >= the leader epoch's start offset.
  bool expand_candidate(int32_t follower, const BrokerSet& alive) const;

  // prepareIsrShrink / prepareIsrExpand: the AlterPartition to send, now
  // pending. Nothing when no change applies or one is already in flight.
  std::optional<AlterPartitionProposal> propose_shrink(int64_t now_ms, int64_t replica_lag_time_max_ms);
  std::optional<AlterPartitionProposal> propose_expand(int32_t follower, const BrokerSet& alive);

  AlterPartitionEffect on_alter_partition_response(uint64_t proposal_id, const AlterPartitionAnswer& answer);

  // appendRecordsToLeader with acks=-1: NOT_ENOUGH_REPLICAS before the append
  // when the committed ISR is below the effective min ISR, else NONE.
  protocol::ErrorCode acks_all_check_before_append(int32_t min_insync_replicas) const;
  // checkEnoughReplicasReachOffset(required_offset) against the current HW:
  // not done below it; at it, NONE if the maximal ISR still has the effective
  // min ISR, else NOT_ENOUGH_REPLICAS_AFTER_APPEND.
  AcksAllOutcome acks_all_complete(int64_t required_offset, int32_t min_insync_replicas) const;

 private:
  bool in_isr(int32_t id) const;
  AlterPartitionProposal make_proposal(std::vector<int32_t> new_isr);

  int32_t leader_id_ = -1;
  int32_t leader_epoch_ = 0;
  int32_t partition_epoch_ = 0;
  std::vector<int32_t> replicas_;
  std::vector<int32_t> isr_;
  LeaderRecoveryState recovery_ = LeaderRecoveryState::kRecovered;
  std::optional<PendingIsrChange> pending_;
  std::map<int32_t, FollowerState> followers_;  // every assigned replica but the leader
  int64_t leader_leo_ = 0;
  int64_t hw_ = 0;
  int64_t epoch_start_ = 0;
  uint64_t next_proposal_id_ = 1;
};

}  // namespace ciuickafka::replication
