// broker/cluster/metadata_cache.h: the cluster metadata the controller sends
// (Kafka's ZkMetadataCache), filled by UpdateMetadata.
//
// Holds the live brokers (id, endpoints per listener name, rack), the
// controller id, topic ids and, per partition, the controller's state
// (leader, leader epoch, ISR, replicas, offline replicas, zk version).
// Metadata and DescribeCluster answer from it in cluster mode.
//
// Update rules (Kafka 3.9): the live broker list is replaced by every
// UpdateMetadata; only the partitions a request names change (a full one
// simply names them all). A partition whose leader is -2 (LeaderDuringDelete)
// belongs to a topic being deleted: it is removed, so the topic disappears
// from Metadata at once (Kafka answers UNKNOWN_TOPIC_OR_PARTITION for it);
// a topic left with no partitions loses its id as well.
//
// Fencing for all three control requests lives here too: a request from an
// older controller epoch than the newest seen is STALE_CONTROLLER_EPOCH; a
// broker_epoch other than -1 (a pre-KIP-380 controller) that is below this
// broker's registration epoch is STALE_BROKER_EPOCH (KafkaApis's
// isBrokerEpochStale: a higher one is accepted, the controller may have
// learnt our new epoch first).
//
// Thread-safety: every method may be called from any thread. Readers take
// an immutable snapshot (a shared_ptr swapped under a short lock) and never
// wait for an update; updates are serialised by their own mutex. Waiters
// (when()) run on the thread that applies the update they waited for.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/error_code.h"
#include "protocol/generated/update_metadata.h"
#include "protocol/wire/types.h"

namespace ciuickafka::broker {

inline constexpr int32_t kLeaderDuringDelete = -2;
inline constexpr int32_t kNoLeader = -1;

struct CachedEndpoint {
  std::string listener;
  std::string host;
  int32_t port = 0;
  int16_t security_protocol = 0;
};

struct CachedBroker {
  int32_t id = -1;
  std::vector<CachedEndpoint> endpoints;
  std::optional<std::string> rack;
  // The endpoint on this listener name (case-insensitive), or null.
  const CachedEndpoint* endpoint(std::string_view listener) const;
};

struct CachedPartition {
  int32_t partition = 0;
  int32_t controller_epoch = 0;
  int32_t leader = kNoLeader;
  int32_t leader_epoch = 0;
  std::vector<int32_t> isr;
  int32_t zk_version = 0;
  std::vector<int32_t> replicas;
  std::vector<int32_t> offline_replicas;
};

struct CachedTopic {
  std::string name;
  protocol::Uuid id{};
  std::map<int32_t, CachedPartition> partitions;
};

// One immutable view of the cluster.
struct MetadataSnapshot {
  int32_t controller_id = -1;
  std::map<int32_t, CachedBroker> brokers;  // live brokers by id
  std::map<std::string, CachedTopic, std::less<>> topics;

  const CachedBroker* broker(int32_t id) const;
  const CachedTopic* topic(std::string_view name) const;
  const CachedTopic* topic(const protocol::Uuid& id) const;
  const CachedPartition* partition(std::string_view topic, int32_t partition) const;
  // The topics with a partition `broker` leads that has other replicas (what
  // a controlled shutdown of it moves).
  std::vector<std::string> topics_led_with_followers(int32_t broker) const;
};

class MetadataCache {
 public:
  MetadataCache();

  // The current snapshot; never null (empty until the first update).
  std::shared_ptr<const MetadataSnapshot> snapshot() const;
  // True once an UpdateMetadata has been applied.
  bool initialized() const { return initialized_.load(std::memory_order_acquire); }

  // Control request fencing (see the header comment). current_broker_epoch
  // is this broker's registration epoch (-1 when unknown: nothing is stale).
  protocol::ErrorCode check_fence(int32_t controller_epoch, int64_t request_broker_epoch,
                                  int64_t current_broker_epoch) const;
  // Records a controller epoch a request was accepted from (max kept).
  void note_controller_epoch(int32_t controller_epoch);
  int32_t controller_epoch() const { return controller_epoch_.load(std::memory_order_acquire); }

  // Applies an UpdateMetadata of any version (0-8; old versions' ungrouped
  // partitions and v0 host/port are normalised). Returns the error code for
  // the response (NONE or STALE_CONTROLLER_EPOCH; broker epoch fencing is
  // the caller's, see check_fence) and, in *deleted, the partitions removed
  // as being deleted.
  protocol::ErrorCode update(const protocol::UpdateMetadataRequest& req, int16_t version,
                             std::vector<std::pair<std::string, int32_t>>* deleted = nullptr);

  // Runs fn once pred(snapshot) holds, without holding a thread while it
  // waits (CreateTopics waiting for its leaders, as Kafka's
  // DelayedCreatePartitions): at once on the calling thread when it holds
  // already (the answer is then 0), else on the thread that applies the
  // update after which it holds, once that update is published; pred is
  // checked after every update (no polling). fn must be quick: that thread
  // answers the controller. Returns an id for cancel().
  using WaiterId = uint64_t;
  WaiterId when(std::function<bool(const MetadataSnapshot&)> pred, std::function<void()> fn);
  // Drops a waiter before its fn runs: true when dropped, false when its fn
  // has run or is running (or id is 0). With a timeout, exactly one of the
  // fn and the caller whose cancel() returned true goes on.
  bool cancel(WaiterId id);
  size_t waiters() const;

 private:
  struct Waiter {
    std::function<bool(const MetadataSnapshot&)> pred;
    std::function<void()> fn;
  };
  mutable std::mutex mu_;       // guards snap_ (the pointer)
  std::mutex update_mu_;        // serialises updates
  mutable std::mutex waiters_mu_;  // guards waiters_, next_waiter_; never taken while mu_ is held
  std::map<WaiterId, Waiter> waiters_;
  WaiterId next_waiter_ = 1;
  std::shared_ptr<const MetadataSnapshot> snap_;
  std::atomic<bool> initialized_{false};
  std::atomic<int32_t> controller_epoch_{-1};
};

}  // namespace ciuickafka::broker
