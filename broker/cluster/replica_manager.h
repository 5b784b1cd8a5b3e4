// broker/cluster/replica_manager.h: the broker side of the controller's
// requests (ZooKeeper mode): LeaderAndIsr, StopReplica and UpdateMetadata,
// as Kafka 3.9's ReplicaManager applies them.
//
// LeaderAndIsr (becomeLeaderOrFollower): a broker epoch below ours is
// STALE_BROKER_EPOCH and an older controller epoch than the newest seen is
// STALE_CONTROLLER_EPOCH, for the whole request. Per partition: a topic id
// that differs from the local log's is INCONSISTENT_TOPIC_ID; a leader epoch
// newer than the one last applied is applied when this broker is among the
// replicas (else UNKNOWN_TOPIC_OR_PARTITION); an equal or older one is
// STALE_CONTROLLER_EPOCH (Kafka's code for both). "Last applied" starts at -1
// for every partition when the broker starts (Kafka makes its Partition
// objects afresh), so the controller's first LeaderAndIsr after a restart is
// always taken. Applying creates the log when missing (topic id from the
// request, v5+; config overrides from ZooKeeper's /config/topics/T), sets the
// role (Partition::set_role) and tells the role listeners, one partition at a
// time in request order. A leader whose ISR is itself alone keeps the single
// node HW rule (hw_follows_leo); a follower does not (the fetchers branch
// replaces this with the replicated HW).
//
// StopReplica: controller epoch fencing as above; per partition a leader
// epoch of -1 (none, old versions) or -2 (deletion) or >= the current one
// stops the replica (role kOffline, listeners' stopped()), an older one is
// FENCED_LEADER_EPOCH; DeletePartition also removes the log (synchronously,
// through TopicTable; LogManager renames the directory at once and deletes
// it later, as Kafka's async delete does).
//
// UpdateMetadata: the metadata cache (metadata_cache.h).
//
// Thread-safety: every method may be called from any thread; the control
// requests are serialised by one mutex (Kafka's replicaStateChangeLock).
// Listeners are called with it held and must not block.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/cluster/metadata_cache.h"
#include "broker/cluster/partition.h"
#include "broker/cluster/replica_roles.h"
#include "broker/cluster/topic_table.h"
#include "protocol/error_code.h"
#include "protocol/generated/leader_and_isr.h"
#include "protocol/generated/stop_replica.h"
#include "protocol/generated/update_metadata.h"

namespace ciuickafka::broker {

class Broker;

class ReplicaManager {
 public:
  explicit ReplicaManager(Broker& broker);

  MetadataCache& metadata_cache() { return cache_; }
  void add_role_listener(ReplicaRoleListener* l);

  // After a controlled shutdown the controller answered with no partition
  // remaining: every leadership here of a partition with other replicas has
  // moved, but the LeaderAndIsr saying so may never arrive (the controller
  // may be this broker, its channel to itself cut when the listeners stop).
  // Each such partition stops being served here, as StopReplica without
  // delete: acks=all produces waiting on it, and new ones, get
  // NOT_LEADER_OR_FOLLOWER and go to the new leader, instead of waiting for
  // followers that now follow someone else until the shutdown's grace ends.
  // Returns how many partitions stepped down.
  size_t step_down_after_controlled_shutdown();
  // After a controlled shutdown, before the listeners stop: blocks until
  // this broker's metadata cache names no partition with other replicas as
  // led here, or bound_ms passes; returns whether it did (the others are
  // asked too: wait_others_routed_off in controlled_shutdown.h says why).
  bool wait_metadata_moved_off(int64_t bound_ms);

  // The topic config overrides for a log LeaderAndIsr creates; nullopt when
  // they cannot be read (the log then takes the broker defaults). Default:
  // broker.cluster()->read_topic_config. Tests inject their own.
  using TopicConfigReader = std::function<std::optional<ConfigMap>(const std::string& topic)>;
  void set_topic_config_reader(TopicConfigReader r);
  // This broker's registration epoch (-1: unknown). Default: the cluster
  // view's broker_epoch. Tests inject their own.
  void set_broker_epoch_source(std::function<int64_t()> f);

  protocol::LeaderAndIsrResponse leader_and_isr(const protocol::LeaderAndIsrRequest& req, int16_t version);
  protocol::StopReplicaResponse stop_replica(const protocol::StopReplicaRequest& req, int16_t version);
  protocol::UpdateMetadataResponse update_metadata(const protocol::UpdateMetadataRequest& req, int16_t version);

  // Error responses naming every partition of the request (single-node
  // mode, fencing): Kafka's getErrorResponse.
  static protocol::LeaderAndIsrResponse leader_and_isr_error(const protocol::LeaderAndIsrRequest& req,
                                                             int16_t version, protocol::ErrorCode e);
  static protocol::StopReplicaResponse stop_replica_error(const protocol::StopReplicaRequest& req, int16_t version,
                                                          protocol::ErrorCode e);

  // The error a client request (produce, consumer fetch, list offsets, ...)
  // gets for this partition: NONE when this broker leads it (and the
  // leadership fence lets it serve), else NOT_LEADER_OR_FOLLOWER when the
  // cluster knows it (or it is hosted here), else UNKNOWN_TOPIC_OR_PARTITION.
  // p may be null (not hosted). The hosted leader case is a few atomic reads
  // and a clock read.
  // Whether the leadership fence (broker/cluster/leadership_fence.h) lets
  // a leader partition serve now; always on a single node.
  static bool may_serve(Broker& broker, const Partition& p);
  static protocol::ErrorCode leader_error(Broker& broker, const Partition* p, std::string_view topic,
                                          int32_t partition);

 private:
  struct PartitionRequest {
    std::string topic;
    protocol::Uuid topic_id{};
    const protocol::LeaderAndIsrRequest::LeaderAndIsrPartitionState* state = nullptr;
  };
  // Stops serving p here (StopReplica's role change): offline, the HW no
  // longer following the LEO. The caller tells the listeners.
  static void take_offline(Partition& p);
  protocol::ErrorCode apply_one(const PartitionRequest& pr, const protocol::LeaderAndIsrRequest& req,
                                int64_t now_ms);
  LeaderEndpoint leader_endpoint(int32_t leader, const protocol::LeaderAndIsrRequest& req) const;
  int64_t broker_epoch() const;

  Broker& broker_;
  MetadataCache cache_;
  std::mutex mu_;  // serialises the control requests (and the fields below)
  std::vector<ReplicaRoleListener*> listeners_;
  TopicConfigReader config_reader_;
  std::function<int64_t()> broker_epoch_source_;
  // The leader epoch last applied per partition (absent: -1).
  std::map<std::pair<std::string, int32_t>, int32_t> applied_epoch_;
};

}  // namespace ciuickafka::broker
