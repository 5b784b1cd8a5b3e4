// broker/replica/leader_replicas.h: the leader side of replication: the
// followers' positions per led partition, the replicated high watermark,
// ISR shrink/expand proposals sent to the controller as AlterPartition, and
// the acks=all waiting room.
//
// A ReplicaRoleListener (the replica manager calls it after set_role):
// became_leader(p) makes a replication::ReplicaState from p->role_state()
// (keeping the previous one when this broker was already leading p, so a
// re-election keeps the followers' offsets), records the new epoch's start
// in the log's epoch cache, and turns p->hw_follows_leo() off when other
// replicas exist (a single-replica leader keeps the single-node behaviour).
// became_follower / stopped forget the partition and answer its acks=all
// waiters NOT_LEADER_OR_FOLLOWER.
//
// The rules are ReplicaState's (replication/replica_state.h); this class
// only feeds it, in Kafka's order:
//   follower fetch (handlers/fetch.cc): on_follower_fetch -> propose_expand
//     (queued for sending) -> maybe_advance_hw -> Partition::set_high_watermark;
//   local append (an append listener): on_leader_append -> maybe_advance_hw;
//   every replica.lag.time.max.ms / 2: propose_shrink.
// The HW is written outside the state's lock: set_high_watermark runs the
// append listeners, one of which (ours) takes that lock.
//
// AlterPartition goes out from one sender thread over a ReconnectingClient
// to the controller (ClusterView controller_id, its endpoint on the
// inter-broker listener; tests inject the endpoint). Version: the highest of
// 0-3 the controller offers; v2+ names topics by id, v3 carries
// NewIsrWithEpochs with the broker epochs of the view. The answer goes to
// on_alter_partition_response; a committed ISR is installed with
// Partition::set_role (same leader epoch, new ISR and partition epoch). A
// retriable error, or no answer, resends the pending proposal after a
// 100 ms backoff.
//
// acks=all: acks_all_check_before_append before the write; after it,
// wait_for_replication parks the request (no thread waits) until every
// partition's HW reaches its end offset (acks_all_complete), the timeout
// (REQUEST_TIMED_OUT, a timer on the broker's background thread) or lost
// leadership (NOT_LEADER_OR_FOLLOWER). HW moves wake it through the append
// listeners, as they wake long-polling fetches.
//
// Thread-safety: every method may be called from any thread. One mutex per
// partition guards its ReplicaState; a map mutex guards the partition map;
// neither is held while calling into Partition listeners or the network.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "broker/cluster/partition.h"
#include "broker/cluster/replica_roles.h"
#include "protocol/error_code.h"
#include "replication/replica_selector.h"
#include "replication/replica_state.h"

namespace ciuickafka::replication::net {
class Interrupter;
}

namespace ciuickafka::broker {

class Broker;

namespace replica {

// Where AlterPartition goes.
struct ControllerEndpoint {
  int32_t id = -1;
  std::string host;
  uint16_t port = 0;
  bool operator==(const ControllerEndpoint&) const = default;
};

// One partition of an acks=all produce waiting for its HW.
struct ReplicationTarget {
  std::shared_ptr<Partition> partition;
  int64_t end_offset = 0;  // the last appended offset + 1
};

using ReplicationFinish = std::function<void(const std::vector<protocol::ErrorCode>&)>;

// What a broker-internal write (a coordinator's record, a transaction
// marker) waits for before it counts, as Kafka appends them with acks=-1:
// when p is a replicated leader (cluster mode, followers in the ISR), until
// the HW covers end_offset (within timeout_ms: REQUEST_TIMED_OUT; lost
// leadership: NOT_LEADER_OR_FOLLOWER); then, with ciuic.acks.all.fsync,
// until log is fsynced up to end_offset (a failed sync:
// KAFKA_STORAGE_ERROR). done gets NONE or that error, once, on whichever
// thread completes it.
void when_acks_all_durable(Broker& broker, const std::shared_ptr<Partition>& p, std::shared_ptr<storage::Log> log,
                           int64_t end_offset, int32_t timeout_ms, std::function<void(protocol::ErrorCode)> done);

class LeaderReplicas : public ReplicaRoleListener {
 public:
  explicit LeaderReplicas(Broker& broker);
  ~LeaderReplicas() override;
  LeaderReplicas(const LeaderReplicas&) = delete;
  LeaderReplicas& operator=(const LeaderReplicas&) = delete;

  void became_leader(const std::shared_ptr<Partition>& p) override;
  void became_follower(const std::shared_ptr<Partition>& p, const LeaderEndpoint& leader) override;
  void stopped(const storage::TopicPartition& tp, bool deleted) override;

  // Whether p is led here with replication state (a replicated leader).
  bool tracks(const Partition& p) const;
  // A follower's fetch of p at fetch_offset, read while the leader's LEO was
  // leader_leo: NONE, or the error for that partition (an unknown replica).
  // Moves the HW when it can.
  protocol::ErrorCode on_follower_fetch(const Partition& p, int32_t replica_id, int64_t fetch_offset,
                                        int64_t log_start_offset, int64_t leader_leo, bool has_current_leader_epoch);

  // KIP-392: the follower a consumer in client_rack fetching p at
  // fetch_offset should read from (replication/replica_selector.h), or
  // nullopt when this leader serves it. leader_rack: this broker's
  // broker.rack; live: the live brokers with an endpoint on the client's
  // listener, with their racks.
  std::optional<int32_t> preferred_read_replica(const Partition& p, std::string_view client_rack,
                                                const std::optional<std::string>& leader_rack, int64_t fetch_offset,
                                                const replication::LiveRacks& live) const;

  // acks=all before the append: NOT_ENOUGH_REPLICAS when the ISR is below
  // min.insync.replicas; NONE for a partition not tracked here.
  protocol::ErrorCode acks_all_check_before_append(const Partition& p) const;
  // Parks until every target is replicated (or fails); finish gets one code
  // per target, once, on whichever thread completes it.
  void wait_for_replication(std::vector<ReplicationTarget> targets, int32_t timeout_ms, ReplicationFinish finish);

  // The replica state of p (a copy), for tests and metrics.
  std::optional<replication::ReplicaState> state(const storage::TopicPartition& tp) const;
  // Runs the shrink check now (the timer runs it every lag/2).
  void check_shrink();
  // Tests: where AlterPartition goes, instead of the cluster view's
  // controller.
  void set_controller_endpoint(std::optional<ControllerEndpoint> ep);
  // AlterPartition requests answered so far (any outcome).
  uint64_t alter_partition_answers() const;

  void stop();

 private:
  struct Entry;
  struct Waiter;
  struct Proposal {
    storage::TopicPartition tp;
    protocol::Uuid topic_id;
    replication::AlterPartitionProposal proposal;
  };

  std::shared_ptr<Entry> find(const storage::TopicPartition& tp) const;
  int32_t min_insync_replicas(const Partition& p) const;
  replication::BrokerSet alive(const replication::ReplicaState& st) const;
  // After a state change under the entry lock: the HW to write, outside it.
  void advance_hw(Entry& e, const std::shared_ptr<Partition>& p);
  void on_append(const Partition& p);
  void wake_waiters(const storage::TopicPartition& tp);
  void try_complete(const std::shared_ptr<Waiter>& w, bool timed_out);
  void queue(Proposal p);
  void sender_loop();
  std::optional<ControllerEndpoint> controller() const;

  Broker& broker_;
  const int32_t node_id_;
  const int64_t lag_max_ms_;

  mutable std::mutex mu_;  // entries_, waiters_
  std::map<storage::TopicPartition, std::shared_ptr<Entry>> entries_;
  std::map<storage::TopicPartition, std::vector<std::weak_ptr<Waiter>>> waiters_;

  mutable std::mutex send_mu_;  // the sender's queue and settings
  std::condition_variable send_cv_;
  std::deque<Proposal> outbox_;
  bool stopping_ = false;
  std::optional<ControllerEndpoint> controller_override_;
  uint64_t answers_ = 0;
  // Metrics (the sender thread counts, scrapes read).
  std::atomic<uint64_t> isr_shrinks_{0};
  std::atomic<uint64_t> isr_expands_{0};
  std::atomic<uint64_t> isr_update_failures_{0};
  uint64_t collector_id_ = 0;
  std::shared_ptr<replication::net::Interrupter> interrupter_;  // stop() triggers it: the sender's calls end
  std::thread sender_;
  std::shared_ptr<bool> alive_token_ = std::make_shared<bool>(true);
};

}  // namespace replica
}  // namespace ciuickafka::broker
