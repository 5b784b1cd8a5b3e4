// replication/controller/controller_context.h: what the ZooKeeper-mode
// controller knows about the cluster (Kafka's ControllerContext), and the
// result every controller step returns.
//
// The context is a cache of ZooKeeper: assignments from /brokers/topics/T,
// partition states from .../partitions/P/state with their zkVersion (the
// partition epoch), topic ids, and the brokers the controller sees alive.
// It is changed only after the ZooKeeper write it mirrors succeeded.
//
// Thread-safety: plain data, owned by the controller's single event thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "protocol/generated/leader_and_isr.h"
#include "protocol/generated/stop_replica.h"
#include "protocol/generated/update_metadata.h"
#include "protocol/wire/types.h"
#include "replication/election.h"
#include "replication/membership.h"
#include "replication/zk_data.h"

namespace ciuickafka::replication::controller {

// Kafka's ReplicaAssignment rules over a partition's full assignment
// (RS, AR, RR): the original replicas ORS = RS - AR, the target TRS =
// RS - RR, and a new target T giving RS = distinct(T ++ ORS), AR = RS - ORS,
// RR = RS - T (so cancelling, T = ORS, gives back AR = RR = []).
std::vector<int32_t> origin_replicas(const PartitionReplicas& a);
std::vector<int32_t> target_replicas(const PartitionReplicas& a);
bool being_reassigned(const PartitionReplicas& a);
PartitionReplicas reassign_to(const PartitionReplicas& current, const std::vector<int32_t>& target);
// Kafka's validateReplicas, the list's own rules: the INVALID_REPLICA_ASSIGNMENT
// message for an empty list, duplicate or negative ids; nothing when fine.
std::optional<std::string> malformed_reassignment(const std::vector<int32_t>& replicas);

struct PartitionInfo {
  PartitionReplicas assignment;
  std::optional<PartitionState> state;  // absent: NewPartition (no state znode yet)
  int32_t zk_version = -1;              // of the state znode: the partition epoch
};

struct TopicInfo {
  protocol::Uuid id;
  int32_t znode_version = -1;  // of /brokers/topics/T
  std::map<int32_t, PartitionInfo> partitions;
  bool deleting = false;  // queued for deletion: metadata shows leader -2
};

struct ControllerContext {
  std::map<std::string, TopicInfo> topics;
  std::map<int32_t, LiveBroker> live;  // live or shutting down (Kafka's liveOrShuttingDownBrokers)
  std::set<int32_t> shutting_down;     // in controlled shutdown
  std::set<std::string> pending_deletions;  // waiting for a replica's broker

  // Brokers whose replicas count as online: live and not shutting down
  // (Kafka's isReplicaOnline without includeShuttingDownBrokers).
  BrokerSet online() const;
  BrokerSet live_or_shutting_down() const;
  const PartitionInfo* partition(const std::string& topic, int32_t p) const;
  PartitionInfo* partition(const std::string& topic, int32_t p);
};

// The control requests a step asks the lead to send, built as the generated
// request structs (LeaderAndIsr v7, UpdateMetadata v8, StopReplica v4
// content), one per target broker with that broker's epoch filled in.
struct ControlRequests {
  std::map<int32_t, protocol::LeaderAndIsrRequest> leader_and_isr;
  std::map<int32_t, protocol::UpdateMetadataRequest> update_metadata;
  std::map<int32_t, protocol::StopReplicaRequest> stop_replica;
  // Send order per broker. Kafka sends LeaderAndIsr, then UpdateMetadata,
  // then StopReplica (ControllerBrokerRequestBatch.sendRequestsToBrokers);
  // on failover and broker startup the UpdateMetadata goes first, so a
  // broker knows the live brokers (leaders' endpoints) before it follows.
  bool metadata_first = false;
  bool empty() const { return leader_and_isr.empty() && update_metadata.empty() && stop_replica.empty(); }
};

enum class Outcome : uint8_t {
  kOk,
  kResign,   // /controller_epoch moved (BADVERSION/NONODE on the check): nothing more was written
  kZkError,  // ZooKeeper failed (connection loss...): what succeeded before is in the context; retry the step
};

struct PartitionFailure {
  TopicPartitionRef partition;
  std::string reason;
};

struct StepResult {
  Outcome outcome = Outcome::kOk;
  std::string message;
  // Kafka error code for request-driven steps (controlled shutdown):
  // 0, 8 BROKER_NOT_AVAILABLE or 77 STALE_BROKER_EPOCH.
  int16_t error_code = 0;
  // To send; on kResign drop them (another controller owns the cluster).
  ControlRequests requests;
  std::vector<PartitionFailure> failed;           // no leader could be elected, ...
  std::vector<TopicPartitionRef> remaining;       // controlled shutdown: still led by the broker
  std::vector<TopicPartitionRef> not_needed;      // preferred election: already led by the preferred replica
  std::vector<std::string> deleted;               // topics whose znodes were removed
  std::vector<std::string> pending;               // deletions waiting for a replica's broker
};

}  // namespace ciuickafka::replication::controller
