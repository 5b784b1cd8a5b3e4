// replication/controller/controller_state.h: the ZooKeeper-mode controller's
// partition and replica state machine (Kafka 3.9's PartitionStateMachine,
// ReplicaStateMachine and the KafkaController steps that drive them), as a
// library over zk::Session.
//
// It owns a ControllerContext loaded from ZooKeeper and, for each event the
// controller handles, writes the new partition states and returns the
// control requests to send (StepResult::requests), built but not sent.
//
// Every ZooKeeper write is a multi that begins with check(/controller_epoch,
// the zkVersion the election returned) (fenced_zk.h). A failed check means
// another broker became controller: the step stops at once, returns
// Outcome::kResign, and every later call returns kResign without touching
// ZooKeeper. A partition state znode is written with a conditional set on
// the zkVersion the context holds; if it moved (a legacy leader's ISR
// write), the state is re-read and the step re-applied, up to 3 times.
//
// Rules (election.h): new partitions get leader = first live replica,
// ISR = live replicas, epoch 0, and stay without a state znode while none is
// live; leaders of dead brokers are re-elected from the live ISR (or
// uncleanly when the topic allows it); dead brokers leave ISRs (never
// emptied; leader -1 when the last one goes); every controller-driven change
// bumps leader_epoch.
//
// Where it differs from Kafka, on purpose:
// - A topic id is written with a conditional set on the topic znode's
//   version (Kafka sets it with any version); a concurrent rewrite of the
//   assignment is re-read instead of overwritten.
// - New partitions of one topic are created in one multi (check, then
//   .../partitions, .../partitions/P, .../P/state as missing); Kafka sends
//   one fenced multi per znode.
// - Deletion is one step: the topic's znodes, its config and the marker go
//   in one fenced multi, and the StopReplica(delete)/UpdateMetadata(-2)
//   requests are returned for sending; Kafka first waits for every
//   StopReplica answer (and retries failed ones) before deleting znodes.
//   Replicas on dead brokers still make the deletion wait (pending).
// - Dead replicas of a topic being deleted are not removed from its ISRs.
// - Reassignment: a removed replica gets one StopReplica(delete=true) where
//   Kafka sends delete=false then delete=true; a completion that finds no
//   live ISR member of TRS to lead waits (the reassignment stays in flight)
//   where Kafka goes on and may leave the partition leaderless. The topic
//   znode is written conditionally on its version (re-read on a conflict);
//   Kafka writes it unconditionally from its cache.
//
// Thread-safety: none; the controller runs every step on its one event
// thread (the ZooKeeper calls block).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "replication/controller/controller_context.h"
#include "replication/controller/fenced_zk.h"
#include "replication/controller/request_batch.h"
#include "replication/zk/session.h"

namespace ciuickafka::replication::controller {

// Whether the topic allows unclean leader election (its
// unclean.leader.election.enable, falling back to the broker's).
using UncleanAllowed = std::function<bool(const std::string& topic)>;

// Leader elections written to ZooKeeper (Kafka's ControllerStats
// LeaderElectionRateAndTimeMs and UncleanLeaderElectionsPerSec): a partition
// state whose leader changed to a live broker; unclean when that broker was
// not in the previous ISR. Owned by the running controller, so the counts
// span activations.
struct ElectionCounters {
  std::atomic<uint64_t> elections{0};
  std::atomic<uint64_t> unclean{0};
};

class PartitionStateMachine {
 public:
  // live: the brokers registered now (from /brokers/ids), with their epochs.
  PartitionStateMachine(zk::Session& zk, ControllerIdentity id, std::vector<LiveBroker> live);

  // Reads every topic under /brokers/topics and every partition state.
  // Topics without a topic id (v1/v2 written by CMAK or old tools) get a
  // random one and their znode is rewritten as v3 (Kafka's setTopicIds).
  StepResult load();
  // After load(), on failover: full UpdateMetadata to every live broker,
  // LeaderAndIsr for every partition to its live replicas, and elections
  // for new and offline partitions.
  StepResult startup(const UncleanAllowed& unclean);

  // /brokers/topics children appeared (or a topic's assignment grew): reads
  // these topics' assignments and initialises partitions without a state.
  StepResult on_new_topics(const std::vector<std::string>& names);
  // Brokers whose /brokers/ids node went away (bounced ones too, before
  // on_broker_startup).
  StepResult on_broker_failure(const std::vector<int32_t>& ids, const UncleanAllowed& unclean);
  // Brokers that registered; their replicas come online and new/offline
  // partitions are elected. Pending deletions are retried.
  StepResult on_broker_startup(const std::vector<LiveBroker>& brokers, const UncleanAllowed& unclean);
  // A live broker's new registration in the same session (its endpoints or
  // rack changed): every live broker gets the broker list (UpdateMetadata
  // without partitions), as Kafka's onBrokerUpdate.
  StepResult on_broker_update(const LiveBroker& broker);

  // Preferred replica election (ElectLeaders PREFERRED, auto rebalance,
  // /admin/preferred_replica_election).
  StepResult elect_preferred(const std::vector<TopicPartitionRef>& partitions);
  // ElectLeaders UNCLEAN: partitions whose leader is -1 or not online get
  // the first live ISR member, else the first live replica (ISR = [it],
  // RECOVERING); those with an online leader are not_needed, those with no
  // live replica failed (ELIGIBLE_LEADERS_NOT_AVAILABLE).
  StepResult elect_unclean(const std::vector<TopicPartitionRef>& partitions);
  // New and offline partitions get leaders where they can (unclean ones
  // where `unclean` allows): after unclean election was turned on.
  StepResult elect_offline_partitions(const UncleanAllowed& unclean);
  // ControlledShutdown (Kafka's doControlledShutdown): BROKER_NOT_AVAILABLE
  // for a broker not registered, STALE_BROKER_EPOCH for an older epoch (-1
  // is accepted, as Kafka does for pre-KIP-380 brokers). Marks it shutting
  // down (excluded from every later election and ISR join while it stays
  // registered); for its partitions with RF > 1 (topics being deleted
  // skipped): the ones it leads get the controlled-shutdown election (first
  // live ISR member not shutting down; the ISR drops it; LeaderAndIsr to the
  // live replicas and to it, so it becomes a follower), the ones it follows
  // get StopReplica(delete=false) and it leaves their ISR. remaining = the
  // RF > 1 partitions it still leads (no other ISR member).
  StepResult controlled_shutdown(int32_t broker_id, int64_t broker_epoch);

  // /admin/delete_topics children: deletes topics whose replicas are all on
  // live brokers (StopReplica delete, UpdateMetadata with leader -2, then
  // the znodes); the others are returned as pending.
  StepResult on_topic_deletion(const std::vector<std::string>& names);

  // AlterPartition (a leader's ISR change, already checked against
  // alter_partition_rules.h): writes each state conditionally on its
  // expected partition epoch (the state znode's version), leader epoch as
  // given (not bumped). Per write: new_zk_version, or code kBadVersion when
  // the znode had moved (INVALID_UPDATE_VERSION) / another code when the
  // write failed. The requests are an UpdateMetadata of the changed
  // partitions to every live broker (Kafka's ZK controller).
  struct AlterWrite {
    TopicPartitionRef partition;
    PartitionState state;
    int32_t expected_zk_version = 0;
    int32_t new_zk_version = -1;
    zk::Code code = zk::Code::kOk;
  };
  StepResult write_alter_partition(std::vector<AlterWrite>& writes);

  // ---- partition reassignment (KIP-455; controller_reassign.cc), Kafka's
  // onPartitionReassignment. U: the topic znode gets RS = ORS + TRS with
  // adding/removing replicas (fenced conditional set), replicas a replaced
  // reassignment no longer needs are stopped and deleted. A (TRS not yet in
  // the ISR): leader epoch + 1, LeaderAndIsr to ORS and (is_new) AR. B (TRS
  // in the ISR): a leader in TRS (elected when the current one is not in
  // TRS or not online; the ISR is kept), RR leave the ISR and get
  // StopReplica(delete), the znode gets RS = TRS, the partition leaves
  // /admin/reassign_partitions, UpdateMetadata to every live broker. A B
  // step that cannot elect a leader in TRS leaves the reassignment in flight.
  struct ReassignItem {
    TopicPartitionRef partition;
    std::optional<std::vector<int32_t>> target;  // nullopt: cancel (back to ORS)
    // Answer, Kafka's: NONE, INVALID_REPLICA_ASSIGNMENT (empty, duplicate or
    // negative ids, adding a broker not online), NO_REASSIGNMENT_IN_PROGRESS
    // (cancelling nothing), UNKNOWN_TOPIC_OR_PARTITION (unknown, or the topic
    // is being deleted), UNKNOWN_SERVER_ERROR (a ZooKeeper write failed).
    int16_t error_code = 0;
    std::optional<std::string> error_message;
  };
  // AlterPartitionReassignments (validate = true: Kafka's validateReplicas;
  // those partitions also leave /admin/reassign_partitions, the latest
  // request wins) or /admin/reassign_partitions (validate = false, as
  // Kafka: its failed entries are removed from the znode).
  StepResult reassign(std::vector<ReassignItem>& items, bool validate);
  // In-flight reassignments (adding/removing replicas in the topic znodes)
  // not in skip are driven again: on failover after startup() and the
  // /admin/reassign_partitions znode (Kafka's initializePartitionReassignments).
  StepResult resume_reassignments(const std::set<TopicPartitionRef>& skip);
  // After an ISR change: the reassigning ones among these partitions whose
  // TRS is now in the ISR complete (Kafka's maybeCompleteReassignment).
  StepResult maybe_complete_reassignments(const std::vector<TopicPartitionRef>& partitions);
  // Partitions whose assignment has adding or removing replicas.
  std::vector<TopicPartitionRef> reassigning() const;

  const ControllerContext& context() const { return ctx_; }
  const ControllerIdentity& identity() const { return id_; }
  bool resigned() const { return resigned_; }
  // Where elections are counted (none by default).
  void set_election_counters(ElectionCounters* c) { elections_ = c; }

 private:
  enum class Write : uint8_t { kOk, kConflict, kStop };
  using Transform = std::function<std::optional<PartitionState>(const PartitionInfo&)>;

  Write load_topic(const std::string& topic, StepResult* r);
  Write ensure_topic_id(const std::string& topic, TopicAssignment* a, int32_t* version, StepResult* r);
  Write read_state(const std::string& topic, int32_t p, PartitionInfo* info, StepResult* r);
  // Writes transform(current) for the partition (if it returns a state);
  // kOk also when nothing needed writing (*changed says which).
  Write update_state(const std::string& topic, int32_t p, const Transform& transform, StepResult* r,
                     bool* changed);
  Write initialize_partitions(const std::string& topic, RequestBatch& batch, StepResult* r);
  Write elect_offline_and_new(const UncleanAllowed& unclean, RequestBatch& batch, StepResult* r);
  Write remove_from_isrs(int32_t broker, RequestBatch& batch, StepResult* r);
  Write delete_topics(const std::vector<std::string>& names, RequestBatch& batch, StepResult* r);
  // Reassignment steps (controller_reassign.cc).
  Write on_partition_reassignment(const std::string& topic, int32_t p, PartitionReplicas ra,
                                  RequestBatch& batch, StepResult* r);
  Write write_assignment(const std::string& topic, int32_t p, const PartitionReplicas& a, StepResult* r);
  Write bump_leader_epoch(const std::string& topic, int32_t p, StepResult* r, bool* changed);
  Write stop_removed_replicas(const std::string& topic, int32_t p, const std::vector<int32_t>& removed,
                              RequestBatch& batch, StepResult* r);
  Write remove_from_zk_reassignment(const std::function<bool(const PartitionReassignment&)>& remove,
                                    StepResult* r);
  Write resume_where(const std::function<bool(const PartitionReplicas&)>& pred,
                     const std::set<TopicPartitionRef>& skip, RequestBatch& batch, StepResult* r);
  bool topic_reassigning(const std::string& topic) const;
  bool stop_on(FenceOutcome outcome, zk::Code code, StepResult* r);
  StepResult resigned_result() const;
  void finish(RequestBatch& batch, StepResult* r) const;
  std::vector<int32_t> live_replicas(const std::vector<int32_t>& replicas) const;

  zk::Session& zk_;
  ControllerIdentity id_;
  ControllerContext ctx_;
  bool resigned_ = false;
  ElectionCounters* elections_ = nullptr;
};

}  // namespace ciuickafka::replication::controller
