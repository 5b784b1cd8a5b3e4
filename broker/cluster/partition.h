// broker/cluster/partition.h: one partition as the broker serves it.
//
// It carries the state replication will need even on a single node (see
// the architecture notes): leader epoch, log start offset, log end offset
// (LEO) and high watermark (HW). Readers are bounded by the HW. On a single
// node the HW follows the LEO as appends complete; with replicas it will
// follow the ISR's lowest acknowledged offset instead, with no change to
// readers.
//
// append() is the one write path: it appends to the log, moves the HW and
// tells the append listeners (the fetch waiting room) so that long-polling
// fetches wake without polling.
//
// Leader appends and role changes exclude each other (Kafka's
// leaderIsrUpdateLock): append() / append_async() hold a role lock while
// they check that this replica is the leader (else
// storage::StatusCode::kFenced, nothing written) and assign offsets;
// set_role() takes the same lock. So no append that passed a caller's leadership check can
// land after a role change with the old epoch's right to write (a follower's
// log gets only its leader's batches, a new epoch's only its own).
//
// Thread-safety: every method may be called from any thread. Appends are
// serialised by the log; the offsets are atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "protocol/wire/types.h"
#include "storage/file_names.h"
#include "storage/log.h"

namespace ciuickafka::broker {

class Partition;

// A partition's replica role on this broker. Single-node mode: always the
// leader with ISR = [this node]. Cluster mode: whatever the controller's
// last LeaderAndIsr said (kOffline until one arrives, and after StopReplica).
enum class ReplicaRole : uint8_t { kLeader, kFollower, kOffline };

// The leadership the controller assigned (LeaderAndIsr's partition state).
struct PartitionRoleState {
  ReplicaRole role = ReplicaRole::kLeader;
  int32_t leader_id = -1;
  int32_t leader_epoch = 0;
  int32_t partition_epoch = 0;   // the state znode's zkVersion
  int32_t controller_epoch = 0;  // of the controller that wrote the state
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
  std::vector<int32_t> adding_replicas;
  std::vector<int32_t> removing_replicas;
  // The log end offset when this broker became leader at leader_epoch
  // (Kafka's leaderEpochStartOffset); -1 for a follower, and on a single
  // node. While the HW is below it, the HW may lag what the previous leader
  // had committed: ListOffsets answers clients OFFSET_NOT_AVAILABLE (KIP-207).
  int64_t leader_epoch_start_offset = -1;
};

using AppendListener = std::function<void(const Partition&)>;

// Who wants to hear about appends (the fetch waiting room). Listeners are
// added at any time; notify() runs them on the appending thread, so they
// must be short (post work elsewhere, never block).
class AppendListeners {
 public:
  void add(AppendListener l);
  void notify(const Partition& p) const;

 private:
  mutable std::mutex mu_;  // guards the pointer only
  std::shared_ptr<const std::vector<AppendListener>> list_ =
      std::make_shared<const std::vector<AppendListener>>();
};

class Partition {
 public:
  Partition(storage::TopicPartition tp, protocol::Uuid topic_id, std::shared_ptr<storage::Log> log,
            int32_t leader_epoch, const AppendListeners* listeners);

  const storage::TopicPartition& tp() const { return tp_; }
  const std::string& topic() const { return tp_.topic; }
  int32_t index() const { return tp_.partition; }
  const protocol::Uuid& topic_id() const { return topic_id_; }
  // The epoch every batch this broker leads is written under, and the one
  // fetches and produces are fenced against.
  int32_t leader_epoch() const { return leader_epoch_.load(std::memory_order_acquire); }

  // The role LeaderAndIsr last set (single node: leader of [this node]).
  std::shared_ptr<const PartitionRoleState> role_state() const;
  ReplicaRole role() const { return role_.load(std::memory_order_acquire); }
  bool is_leader() const { return role() == ReplicaRole::kLeader; }
  // Installs a new role; leader_epoch() follows state.leader_epoch. The
  // caller (the replica manager) checks epochs and serialises the calls.
  // starts_epoch (a LeaderAndIsr making this broker leader at an epoch new
  // to it): the epoch starts at the end of everything appended, writes in
  // flight included (Kafka's maybeAssignEpochStartOffset under the
  // partition's write lock), recorded in the log's epoch cache and in
  // state.leader_epoch_start_offset. Both happen under the lock leader
  // appends hold while they take the epoch and their offsets, so every
  // batch of the old epoch lies below the new epoch's start and every batch
  // of the new one at or above it.
  void set_role(PartitionRoleState state, bool starts_epoch = false);
  // When (steady clock, ms) the controller last spoke about this partition
  // (a LeaderAndIsr that named it, applied or at the epoch it already has);
  // 0 before any. The leadership fence compares it with a session expiry.
  int64_t confirmed_ms() const { return confirmed_ms_.load(std::memory_order_acquire); }
  void set_confirmed_ms(int64_t ms) { confirmed_ms_.store(ms, std::memory_order_release); }

  storage::Log& log() const { return *log_; }
  const std::shared_ptr<storage::Log>& log_ptr() const { return log_; }

  int64_t log_start_offset() const { return log_->log_start_offset(); }
  int64_t log_end_offset() const { return log_->log_end_offset(); }
  int64_t high_watermark() const { return high_watermark_.load(std::memory_order_acquire); }
  // Last stable offset: equal to the HW until transactions exist.
  int64_t last_stable_offset() const { return high_watermark(); }

  // Appends v2 batches (offsets and leader epoch are assigned in place),
  // then advances the HW and wakes the listeners. kFenced when this replica
  // is not the leader (nothing written).
  storage::Result<storage::AppendResult> append(std::span<uint8_t> records, int64_t now_ms);
  // The same with the write queued on ring (storage::Log::append_async):
  // offsets come back now; done(status) runs once the batches are readable
  // (the HW has moved and the listeners were woken) or failed. The caller
  // keeps the Partition and records alive until then. validated: the
  // batches' CRCs were checked already (produce/prepare.h).
  storage::Result<storage::AppendResult> append_async(std::span<uint8_t> records, int64_t now_ms,
                                                      storage::io::Ring* ring,
                                                      std::function<void(storage::Status)> done, bool validated);

  // Re-reads the LEO into the HW (after recovery or DeleteRecords).
  void refresh_high_watermark();

  // Replication: while hw_follows_leo() (single node, or a leader whose ISR
  // is itself alone) every completed append moves the HW to the LEO. A
  // replicated leader turns it off and moves the HW itself from the
  // followers' positions; a follower sets the HW the leader reported.
  bool hw_follows_leo() const { return hw_follows_leo_.load(std::memory_order_acquire); }
  void set_hw_follows_leo(bool on) { hw_follows_leo_.store(on, std::memory_order_release); }
  // Sets the HW (capped at the LEO) and wakes the listeners when it moved.
  // Forward only, unless allow_backwards (a follower truncated, a new leader
  // starting from its own HW).
  void set_high_watermark(int64_t hw, bool allow_backwards = false);

  // A follower appended a transactional or control batch from its leader
  // (sticky). Followers keep no producer state, so such a partition has no
  // last stable offset or aborted list here: a follower that holds one does
  // not serve read_committed consumers (broker/fetch/partition_read.h).
  void note_replicated_transactional() { replicated_txn_.store(true, std::memory_order_release); }
  bool holds_replicated_transactional() const { return replicated_txn_.load(std::memory_order_acquire); }

 private:
  const storage::TopicPartition tp_;
  const protocol::Uuid topic_id_;
  const std::shared_ptr<storage::Log> log_;
  const AppendListeners* const listeners_;  // owned by the broker; may be null
  void after_append();

  std::atomic<int32_t> leader_epoch_;
  std::atomic<ReplicaRole> role_{ReplicaRole::kLeader};
  std::atomic<int64_t> confirmed_ms_{0};
  std::atomic<bool> hw_follows_leo_{true};
  std::atomic<int64_t> high_watermark_{0};
  std::atomic<bool> replicated_txn_{false};
  mutable std::mutex role_mu_;  // guards role_state_ (the pointer)
  // Held by leader appends while they assign offsets, and by set_role
  // (appends to one partition are serialised by its log anyway).
  mutable std::mutex append_role_mu_;
  std::shared_ptr<const PartitionRoleState> role_state_;
};

}  // namespace ciuickafka::broker
