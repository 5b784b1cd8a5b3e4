// replication/controller/controller.h: the active ZooKeeper-mode controller
// (Kafka's KafkaController event loop), driving PartitionStateMachine and
// sending what it returns through a RequestSender.
//
// activate() (membership won the election: the session and the epoch's
// zkVersion) runs on the controller's own event thread: load(), startup(),
// send; then one-shot watches, each re-armed after it fires (never two
// watchers on one path at once), on
//   /brokers/ids children        -> on_broker_failure / on_broker_startup (a
//                                   broker whose czxid changed is bounced:
//                                   failure, then startup, as Kafka);
//   /brokers/ids/N (data), each live broker -> on_broker_update when its
//                                   endpoints changed in the same session
//                                   (listeners changed live: Kafka's
//                                   BrokerModifications);
//   /brokers/topics children     -> on_new_topics for names not known yet;
//   /brokers/topics/T (data)     -> on_new_topics({T}) when its assignment
//                                   gained partitions (CreatePartitions,
//                                   kafka-topics --alter);
//   /admin/delete_topics children-> on_topic_deletion (delete.topic.enable
//                                   false: the markers are deleted instead,
//                                   as Kafka does; markers of unknown topics
//                                   are deleted too);
//   /admin/preferred_replica_election (exists/data) -> elect_preferred, then
//                                   the znode is deleted (fenced);
//   /admin/reassign_partitions (exists) -> reassign() of its entries when it
//                                   is created (or found at activation); its
//                                   data changes are not acted on (Kafka's
//                                   handler reacts to creation only); the
//                                   controller removes finished entries and
//                                   deletes it when none is left.
// Each watch event re-reads the path (ZooKeeper watches carry no data).
//
// A step returning Outcome::kResign deactivates the controller, drops its
// requests and calls on_resign; kZkError sends what succeeded and retries
// the step with a doubling backoff (200 ms .. 5 s) while still active.
// deactivate() stops at once: it bumps the activation generation, so every
// queued event and retry of the old activation is dropped without touching
// ZooKeeper, and clears the sender.
//
// controlled_shutdown() and elect_leaders() answer ControlledShutdown and
// ElectLeaders the same way (controller_requests.cc); a timer thread posts
// the auto leader rebalance check (leader_rebalance.h) while active.
//
// alter_partition() answers an AlterPartition request on the event thread
// (alter_partition_rules.h in Kafka's order; fenced conditional writes of
// the state znodes; UpdateMetadata of the changed partitions to every live
// broker) and calls done with the response (from the event thread); then
// reassignments whose target the new ISRs cover complete.
//
// Reassignment (controller_reassign_events.cc): on activation, after
// startup(), the /admin/reassign_partitions entries start and the other
// in-flight reassignments (adding/removing replicas in the topic znodes)
// resume; alter_partition_reassignments() and
// list_partition_reassignments() answer AlterPartitionReassignments (45) and
// ListPartitionReassignments (46), NOT_CONTROLLER when not active.
//
// Thread-safety: every public method may be called from any thread; the
// state machine and the session are used only on the event thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "protocol/generated/alter_partition.h"
#include "protocol/generated/alter_partition_reassignments.h"
#include "protocol/generated/controlled_shutdown.h"
#include "protocol/generated/elect_leaders.h"
#include "protocol/generated/list_partition_reassignments.h"
#include "replication/controller/channel.h"
#include "replication/controller/controller_state.h"
#include "replication/zk/session.h"

namespace ciuickafka::replication::controller {

struct ControllerOptions {
  bool delete_topic_enable = true;              // delete.topic.enable
  bool unclean_leader_election_enable = false;  // the broker's unclean.leader.election.enable
  int32_t retry_backoff_ms = 200;               // first retry of a step that hit a ZooKeeper error
  int32_t retry_backoff_max_ms = 5000;
  bool auto_leader_rebalance_enable = true;                 // auto.leader.rebalance.enable
  int64_t leader_imbalance_check_interval_ms = 300000;      // leader.imbalance.check.interval.seconds
  int32_t leader_imbalance_per_broker_percentage = 10;      // leader.imbalance.per.broker.percentage
  int64_t first_rebalance_check_delay_ms = 5000;            // after activation (Kafka: 5 s)
};

// Counts for metrics, as of the last step.
struct ControllerStats {
  bool active = false;
  int64_t topics = 0;
  int64_t partitions = 0;
  int64_t offline_partitions = 0;  // leader -1 or leader not online
  // Every broker (0 until it has been the controller), across activations:
  uint64_t leader_elections = 0;
  uint64_t unclean_leader_elections = 0;
  int64_t event_queue_size = 0;  // tasks waiting for the event thread
};

class Controller {
 public:
  Controller(RequestSender& sender, ControllerOptions options, std::function<void(const std::string&)> on_resign = {});
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  void activate(std::shared_ptr<zk::Session> session, ControllerIdentity id, std::vector<LiveBroker> live);
  void deactivate();
  // Deactivates, ends the event thread (after the step in progress) and
  // lets go of the session; later calls do nothing (alter_partition answers
  // NOT_CONTROLLER). Idempotent; the destructor calls it.
  void stop();
  // Whether an activation is current (true from activate() until
  // deactivate() or a resignation).
  bool active() const { return active_.load(); }

  using AlterPartitionDone = std::function<void(protocol::AlterPartitionResponse)>;
  void alter_partition(protocol::AlterPartitionRequest request, int16_t version, AlterPartitionDone done);

  // ControlledShutdown (key 7) on the event thread (controller_requests.cc):
  // NOT_CONTROLLER when not active, else PartitionStateMachine::
  // controlled_shutdown's error code and remaining partitions. done runs
  // exactly once, from the event thread (or the caller's when not active).
  using ControlledShutdownDone = std::function<void(protocol::ControlledShutdownResponse)>;
  void controlled_shutdown(protocol::ControlledShutdownRequest request, int16_t version, ControlledShutdownDone done);

  // unclean.leader.election.enable, the broker's default, changed live (a
  // dynamic broker config; the options' value until then). Turned on, the
  // offline partitions are elected again at once, as Kafka's
  // enableDefaultUncleanLeaderElection does, each topic's own config still
  // deciding. Any thread.
  void set_unclean_leader_election_default(bool enable);
  // A topic's unclean.leader.election.enable was set to true (Kafka's
  // enableTopicUncleanLeaderElection): while active, the offline
  // partitions are elected again at once on the event thread. Any thread.
  void elect_offline_partitions();

  // ElectLeaders (key 43) on the event thread, answered once the state
  // znodes are written (Kafka also waits for the leaders to reach its
  // metadata cache). A null partition list means every partition the
  // controller knows. Per partition: NONE, ELECTION_NOT_NEEDED,
  // PREFERRED_LEADER_NOT_AVAILABLE (preferred) / ELIGIBLE_LEADERS_NOT_AVAILABLE
  // (unclean), UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION (being
  // deleted), NOT_CONTROLLER when not active; INVALID_REQUEST for an
  // unknown election type.
  using ElectLeadersDone = std::function<void(protocol::ElectLeadersResponse)>;
  void elect_leaders(protocol::ElectLeadersRequest request, int16_t version, ElectLeadersDone done);

  // AlterPartitionReassignments (key 45) on the event thread: the
  // top-level NOT_CONTROLLER when not active, else one answer per partition
  // (PartitionStateMachine::ReassignItem), given once the new assignments
  // are written. ListPartitionReassignments (key 46): the partitions asked
  // for (null: all) that are being reassigned, with their replicas, adding
  // and removing replicas. done runs exactly once.
  using AlterReassignmentsDone = std::function<void(protocol::AlterPartitionReassignmentsResponse)>;
  void alter_partition_reassignments(protocol::AlterPartitionReassignmentsRequest request,
                                     AlterReassignmentsDone done);
  using ListReassignmentsDone = std::function<void(protocol::ListPartitionReassignmentsResponse)>;
  void list_partition_reassignments(protocol::ListPartitionReassignmentsRequest request, ListReassignmentsDone done);

  // The auto leader rebalance check (leader_rebalance.h), normally run by
  // the timer thread first_rebalance_check_delay_ms after activation and
  // then every leader_imbalance_check_interval_ms when
  // auto_leader_rebalance_enable; tests call it to run one now. Queued on
  // the event thread; returns at once.
  void check_leader_rebalance();
  // Preferred elections the rebalance check has started (partitions).
  uint64_t rebalance_elections() const { return rebalance_elections_.load(); }

  ControllerStats stats() const;
  // Steps run to completion (any outcome) since construction: lets tests
  // wait for the event thread to have handled something.
  uint64_t steps() const { return steps_.load(); }
  // Backoff waits begun (a step or read that hit a ZooKeeper error).
  uint64_t retries() const { return retries_.load(); }

 private:
  struct Task {
    uint64_t generation = 0;  // 0: run whatever the generation
    std::function<void()> fn;
  };
  enum class Watch : uint8_t { kBrokers, kTopics, kDeletions, kPreferred, kReassign };

  bool post(uint64_t generation, std::function<void()> fn);  // false: stopped
  void run();
  bool current(uint64_t generation) const { return generation_.load() == generation; }

  // Event-thread steps.
  void do_activate(uint64_t gen, std::shared_ptr<zk::Session> session, ControllerIdentity id,
                   std::vector<LiveBroker> live);
  // Runs step until it is not kZkError (backoff between tries) or the
  // activation is gone; sends its requests; false when the activation ended.
  bool run_step(uint64_t gen, const char* what, const std::function<StepResult()>& step);
  void resign(uint64_t gen, const std::string& why);
  void arm(uint64_t gen, Watch w);
  void process_brokers(uint64_t gen);
  void arm_broker(uint64_t gen, int32_t id);
  void process_broker_change(uint64_t gen, int32_t id);
  // A live broker's new endpoints (same epoch): the channel follows, every
  // broker hears (on_broker_update). False when the activation ended.
  bool broker_updated(uint64_t gen, const LiveBroker& b);
  void process_topics(uint64_t gen);
  void process_topic_change(uint64_t gen, const std::string& topic);
  void arm_topic(uint64_t gen, const std::string& topic);
  void process_deletions(uint64_t gen);
  void process_preferred(uint64_t gen);
  // /admin/reassign_partitions: re-arms its exists watch; when run and the
  // znode is there, starts its entries (*started: those that started).
  // false when the activation ended.
  bool process_reassign_znode(uint64_t gen, bool run, std::set<TopicPartitionRef>* started = nullptr);
  void do_alter_reassignments(uint64_t gen, const protocol::AlterPartitionReassignmentsRequest& req,
                              const AlterReassignmentsDone& done);
  void do_list_reassignments(uint64_t gen, const protocol::ListPartitionReassignmentsRequest& req,
                             const ListReassignmentsDone& done);
  void do_controlled_shutdown(uint64_t gen, const protocol::ControlledShutdownRequest& req,
                              const ControlledShutdownDone& done);
  void do_elect_leaders(uint64_t gen, const protocol::ElectLeadersRequest& req, int16_t version,
                        const ElectLeadersDone& done);
  void do_rebalance(uint64_t gen);
  void run_timer();
  void do_alter_partition(uint64_t gen, const protocol::AlterPartitionRequest& req, int16_t version,
                          const AlterPartitionDone& done);
  bool unclean_allowed(const std::string& topic);
  zk::WatchFn watcher(uint64_t gen, Watch w);
  // A one-shot watch that posts fn to the event thread for activation gen
  // (a watch firing after the controller is gone posts nowhere).
  zk::WatchFn posting_watcher(uint64_t gen, std::function<void()> fn);
  void update_stats();

  RequestSender& sender_;
  const ControllerOptions options_;
  std::function<void(const std::string&)> on_resign_;

  // The event queue, shared with the ZooKeeper watch callbacks (they hold
  // it weakly: one firing after the controller is gone posts nowhere).
  struct Inbox {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Task> tasks;
    bool stopping = false;
  };
  static bool post_to(const std::shared_ptr<Inbox>& inbox, uint64_t generation, std::function<void()> fn);
  // Waits the backoff (doubling it) unless the activation ends first;
  // false when it ended.
  bool backoff(uint64_t gen, int32_t* ms);

  std::shared_ptr<Inbox> inbox_ = std::make_shared<Inbox>();
  mutable std::mutex stats_mu_;
  ControllerStats stats_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> active_{false};
  std::atomic<bool> unclean_default_{false};  // set from options_, then set_unclean_leader_election_default
  std::atomic<uint64_t> steps_{0};
  std::atomic<uint64_t> retries_{0};
  std::atomic<uint64_t> rebalance_elections_{0};
  ElectionCounters elections_;
  std::thread thread_;

  // The rebalance timer: its own thread, posting do_rebalance for the
  // activation current when it fires.
  std::mutex timer_mu_;
  std::condition_variable timer_cv_;
  bool timer_stopping_ = false;
  std::chrono::steady_clock::time_point next_rebalance_ = std::chrono::steady_clock::time_point::max();
  std::thread timer_thread_;

  // Event-thread state.
  std::shared_ptr<zk::Session> session_;
  std::unique_ptr<PartitionStateMachine> psm_;
  bool armed_[5] = {false, false, false, false, false};
  std::set<std::string> topic_armed_;  // topics with a data watch set
  std::set<int32_t> broker_armed_;     // live brokers whose /brokers/ids/N has a data watch set
};

}  // namespace ciuickafka::replication::controller
