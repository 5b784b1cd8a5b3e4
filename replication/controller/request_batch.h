// replication/controller/request_batch.h: collects the control requests one
// controller step causes and builds them per target broker (Kafka's
// ControllerBrokerRequestBatch, without the sending).
//
// States are snapshotted when added (a later add for the same partition
// replaces the earlier one; is_new is kept once set), so a topic removed
// from the context afterwards (deletion) still appears in the requests.
// Brokers not live (or shutting down) when build() runs get nothing.
//
// Field mapping (3.9 schemas): LeaderAndIsr v7 partition: PartitionIndex,
// ControllerEpoch (of the state), Leader, LeaderEpoch, Isr, PartitionEpoch =
// the state znode's zkVersion, Replicas, Adding/RemovingReplicas, IsNew,
// LeaderRecoveryState; LiveLeaders = the leaders named in that request, at
// their inter-broker listener. UpdateMetadata v8 partition: the same plus
// ZkVersion and OfflineReplicas (replicas not online), Leader -2 while the
// topic is being deleted; LiveBrokers = every live broker, all endpoints.
// StopReplica v4: per topic, PartitionIndex, LeaderEpoch (-2 on delete),
// DeletePartition.
//
// Thread-safety: plain data, used on the controller thread.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "replication/controller/controller_context.h"

namespace ciuickafka::replication::controller {

struct ControllerIdentity {
  int32_t broker_id = -1;        // ControllerId in every request
  int32_t epoch = 0;             // the value of /controller_epoch we wrote
  int32_t epoch_zk_version = -1; // its zkVersion: the fencing token
  std::string inter_broker_listener = "PLAINTEXT";  // for LiveLeaders
};

inline constexpr int32_t kLeaderDuringDelete = -2;
inline constexpr int32_t kEpochDuringDelete = -2;

class RequestBatch {
 public:
  // LeaderAndIsr for the partition's current state to these brokers, plus
  // the partition in the UpdateMetadata to every live broker (as Kafka does).
  void add_leader_and_isr(const ControllerContext& ctx, const std::vector<int32_t>& brokers, const std::string& topic,
                          int32_t partition, bool is_new);
  // The partition's current state in the UpdateMetadata to every live broker.
  void add_update_metadata(const ControllerContext& ctx, const std::string& topic, int32_t partition);
  // An UpdateMetadata (maybe without partitions: it carries the live broker
  // list) to these brokers; full ones get every partition that has a state.
  void add_update_metadata_brokers(const std::vector<int32_t>& brokers, bool full);
  void add_stop_replica(int32_t broker, const std::string& topic, int32_t partition, bool delete_partition,
                        int32_t leader_epoch);

  ControlRequests build(const ControllerContext& ctx, const ControllerIdentity& id) const;

 private:
  using Key = std::pair<std::string, int32_t>;
  struct Snapshot {
    protocol::Uuid topic_id;
    PartitionReplicas assignment;
    PartitionState state;
    int32_t zk_version = 0;
    std::vector<int32_t> offline;
    bool is_new = false;
  };
  static Snapshot snapshot(const ControllerContext& ctx, const std::string& topic, int32_t partition);

  std::map<int32_t, std::map<Key, Snapshot>> leader_and_isr_;
  std::map<Key, Snapshot> metadata_partitions_;
  bool metadata_to_all_ = false;
  std::set<int32_t> metadata_brokers_;
  std::set<int32_t> metadata_full_;
  std::map<int32_t, std::map<Key, std::pair<int32_t, bool>>> stop_replica_;  // (leader epoch, delete)
};

}  // namespace ciuickafka::replication::controller
