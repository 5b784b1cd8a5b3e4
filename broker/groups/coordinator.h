// broker/groups/coordinator.h: the group coordinator, a broker service
// (`broker.service<groups::GroupCoordinator>()`): classic consumer groups
// and committed offsets, persisted in the compacted internal topic
// __consumer_offsets in Kafka's record format (offsets_records.h).
//
// Single node (no zookeeper.connect). On first use it creates nothing; it
// loads every partition of __consumer_offsets (when the topic exists) on
// the background thread, last value per key winning and tombstones
// deleting. Until that is done every group request is answered
// COORDINATOR_LOAD_IN_PROGRESS. The topic itself is created on demand
// (FindCoordinator, first write) with offsets.topic.num.partitions
// partitions, replication factor 1, segment.bytes =
// offsets.topic.segment.bytes, cleanup.policy=compact.
//
// Cluster mode (zookeeper.connect set): coordination follows leadership,
// as Kafka 3.9's GroupMetadataManager. __consumer_offsets is created in
// ZooKeeper like any topic (admin/auto_create.h, on the admin worker:
// offsets.topic.replication.factor replicas, compact, producer
// compression); FindCoordinator names the leader of the group's partition
// from the metadata cache. This class is a ReplicaRoleListener (registered
// in Broker::start_cluster): becoming leader of an offsets partition marks
// it loading (COORDINATOR_LOAD_IN_PROGRESS for its groups) and queues a
// load, on the coordinator's own loader thread, of that partition's groups
// and offsets up to its log end at that moment; becoming follower or being
// stopped unloads it: its groups leave the map, turn Dead and their held
// JoinGroup/SyncGroup answers get NOT_COORDINATOR. A group of a partition
// not led here gets NOT_COORDINATOR for every request (ownership.h holds
// the table; a load overtaken by a role change is dropped). Writes check
// leadership before appending, and an OffsetCommit / GroupMetadata write is
// answered only once the partition's HW covers it (as acks=all, within
// offsets.commit.timeout.ms), then, with ciuic.acks.all.fsync, once it is
// fsynced. Kafka's mapping of a failed append: NOT_ENOUGH_REPLICAS(_AFTER_
// APPEND), REQUEST_TIMED_OUT, UNKNOWN_TOPIC_OR_PARTITION ->
// COORDINATOR_NOT_AVAILABLE; NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR ->
// NOT_COORDINATOR.
//
// Writes. Each group maps to one partition (partition_for.h). A write is
// queued on the calling network thread's io_uring, never a blocking write
// there (cluster/coordinator_write.h); its answer waits for it. An
// OffsetCommit is appended and, when ciuic.acks.all.fsync is true, answered
// only after the group-commit fsync covers it, so an acknowledged commit
// survives kill -9; until then OffsetFetch does not see it (Kafka's pending
// offsets). GroupMetadata is written when a generation becomes stable (the
// SyncGroup answers wait for its fsync too) and when a group empties;
// DeleteGroups/OffsetDelete write tombstones (DeleteGroups answers after
// their fsync). Offset expiry (offset_expiry.cc, KIP-211) writes tombstones
// for expired offsets and for groups that end up Empty without offsets.
//
// Disconnects (disconnects.cc): a dynamic member whose connection is gone
// is evicted after ciuic.group.disconnect.grace.ms unless it speaks again
// from another connection; Kafka waits for session.timeout.ms instead.
//
// The classic protocol (membership.cc) runs Kafka's state machine; held
// JoinGroup/SyncGroup answers are callbacks kept in the group, completed by
// later requests or by the timer (a 50 ms tick on broker.background() that
// expires sessions, pending MEMBER_ID_REQUIRED members and join phases).
//
// Thread-safety: every method may be called from any thread. One mutex per
// group (Group::mu) plus one for the group map and one for the ownership
// table (taken after either, never before); callbacks (client answers)
// always run after the group's lock is released. Role changes never block:
// loads run on the loader thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <string>
#include <vector>

#include "broker/cluster/replica_roles.h"
#include "broker/groups/group.h"
#include "broker/groups/ownership.h"
#include "broker/net/asio.h"
#include "protocol/error_code.h"
#include "protocol/generated/delete_groups.h"
#include "protocol/generated/describe_groups.h"
#include "protocol/generated/heartbeat.h"
#include "protocol/generated/leave_group.h"
#include "protocol/generated/list_groups.h"
#include "protocol/generated/offset_commit.h"
#include "protocol/generated/offset_delete.h"
#include "protocol/generated/offset_fetch.h"
#include "protocol/generated/txn_offset_commit.h"

namespace ciuickafka::broker {
class Broker;
class CoordinatorWrite;
class Partition;
}  // namespace ciuickafka::broker
namespace ciuickafka::storage {
class Log;
}  // namespace ciuickafka::storage

namespace ciuickafka::broker::groups {

inline constexpr const char* kOffsetsTopic = "__consumer_offsets";

struct OffsetsLoadTrace;  // legacy_offsets.h

// Who sent a request (for member records and DescribeGroups).
struct ClientInfo {
  std::string client_id;
  std::string client_host;
  uint64_t connection_id = 0;  // RequestContext::connection_id (0: none)
};

// The result of an append to __consumer_offsets.
struct Appended {
  protocol::ErrorCode error = protocol::ErrorCode::NONE;
  std::shared_ptr<storage::Log> log;  // set on success
  std::shared_ptr<Partition> partition;  // set on success
  int64_t end_offset = 0;             // one past the last record written
  // The write, queued on the network thread's io_uring (or done, where the
  // thread has none: cluster/coordinator_write.h); when_durable() waits for it.
  std::shared_ptr<CoordinatorWrite> write;
};

class GroupCoordinator : public ReplicaRoleListener {
 public:
  explicit GroupCoordinator(Broker& broker);
  ~GroupCoordinator() override;
  GroupCoordinator(const GroupCoordinator&) = delete;
  GroupCoordinator& operator=(const GroupCoordinator&) = delete;
  void stop();

  bool loaded() const { return loaded_.load(std::memory_order_acquire); }
  // Blocks until loading finished (tests); false on timeout.
  bool wait_loaded(int64_t timeout_ms);

  // Creates __consumer_offsets when missing; false when it cannot (yet).
  // Cluster mode: true once the metadata cache knows the topic; otherwise
  // its ZooKeeper creation is queued on the admin worker (once at a time).
  bool ensure_offsets_topic();
  int32_t partition_of(const std::string& group_id);

  bool cluster_mode() const { return cluster_; }
  // What every request about group_id is answered before anything else:
  // NONE when served here; COORDINATOR_LOAD_IN_PROGRESS while loading (a
  // single node: until the start-up load is done); NOT_COORDINATOR when
  // this broker does not lead the group's offsets partition (cluster mode).
  protocol::ErrorCode coordinator_error(const std::string& group_id);
  // Cluster mode: __consumer_offsets' partition count (the metadata cache's,
  // else offsets.topic.num.partitions).
  int32_t offsets_partition_count();
  // Cluster mode: the state of offsets partition p here; tests wait on it.
  OwnState partition_state(int32_t p);
  bool wait_partition_state(int32_t p, OwnState want, int64_t timeout_ms);

  // --- ReplicaRoleListener (cluster mode; ownership.cc's table)
  void became_leader(const std::shared_ptr<Partition>& p) override;
  void became_follower(const std::shared_ptr<Partition>& p, const LeaderEndpoint& leader) override;
  void stopped(const storage::TopicPartition& tp, bool deleted) override;

  // --- offsets (offsets.cc)
  using CommitDone = std::function<void(protocol::OffsetCommitResponse)>;
  void commit_offsets(const protocol::OffsetCommitRequest& req, int16_t version, CommitDone done,
                      uint64_t connection_id = 0);
  // require_stable (OffsetFetch v7+): a partition whose transactional commit
  // awaits its marker answers UNSTABLE_OFFSET_COMMIT, decided under the same
  // group lock as the offsets read.
  protocol::OffsetFetchResponse::OffsetFetchResponseGroup fetch_offsets(
      const std::string& group_id,
      const std::optional<std::vector<protocol::OffsetFetchRequest::OffsetFetchRequestTopics>>& topics,
      bool require_stable = false);
  // --- transactional offsets (txn_offsets.cc)
  using TxnCommitDone = std::function<void(protocol::TxnOffsetCommitResponse)>;
  void txn_commit_offsets(const protocol::TxnOffsetCommitRequest& req, int16_t version, TxnCommitDone done);
  // A COMMIT/ABORT marker for producer_id was written to offsets partition
  // `partition`: apply or drop its transactional commits there.
  void complete_txn_offsets(int64_t producer_id, bool commit, int32_t partition);
  using OffsetDeleteDone = std::function<void(protocol::OffsetDeleteResponse)>;
  void delete_offsets(const protocol::OffsetDeleteRequest& req, OffsetDeleteDone done);
  // Topic `topic` was deleted: every group's committed offsets for it go
  // (tombstones appended, not awaited), as Kafka's onPartitionsDeleted, so a
  // topic re-created with the name starts with no committed positions.
  // Single node: DeleteTopics calls it once the topic is removed.
  void topic_deleted(const std::string& topic);

  // --- the classic protocol (membership.cc)
  void join(const protocol::JoinGroupRequest& req, int16_t version, const ClientInfo& client, JoinCallback done);
  void sync(const protocol::SyncGroupRequest& req, int16_t version, SyncCallback done, uint64_t connection_id = 0);
  protocol::ErrorCode heartbeat(const protocol::HeartbeatRequest& req, uint64_t connection_id = 0);
  protocol::LeaveGroupResponse leave(const protocol::LeaveGroupRequest& req, int16_t version);

  // --- admin (admin_ops.cc)
  protocol::ListGroupsResponse list_groups(const protocol::ListGroupsRequest& req, int16_t version);
  protocol::DescribeGroupsResponse::DescribedGroup describe_group(const std::string& group_id,
                                                                  bool include_operations);
  // Deletes each group (tombstones); done gets one error per id, after the
  // tombstones are durable when ciuic.acks.all.fsync is on.
  using DeleteGroupsDone = std::function<void(std::vector<protocol::ErrorCode>)>;
  void delete_groups(const std::vector<std::string>& group_ids, DeleteGroupsDone done);
  // One group, answered without waiting for the fsync (prefer delete_groups).
  protocol::ErrorCode delete_group(const std::string& group_id);

  // --- connections (disconnects.cc)
  // The connection is gone: drop held answers on it, shorten the sessions
  // of dynamic members that last spoke on it to the disconnect grace.
  void connection_closed(uint64_t connection_id);

  // --- offset expiry (offset_expiry.cc)
  // Expires offsets as of wall-clock now_ms (the timer calls it every
  // offsets.retention.check.interval.ms; tests call it with a future time).
  // Returns the number of offsets expired.
  size_t expire_offsets(int64_t now_ms);

  // Snapshot for metrics: group -> committed offsets, members, state.
  struct GroupView {
    std::string group_id;
    GroupState state = GroupState::kEmpty;
    size_t members = 0;
    std::map<TopicPartitionKey, int64_t> offsets;
    uint64_t rebalances = 0;          // completed rebalances
    double rebalance_seconds = 0;     // their total duration
    double last_rebalance_seconds = 0;
  };
  std::vector<GroupView> snapshot();

  Broker& broker() { return broker_; }

  // Tests (with a ManualGroupClock): runs the timer's work (deadlines,
  // expiry) on the background thread now and returns when it is done.
  void tick_now();

 private:
  friend struct Membership;

  std::shared_ptr<Group> find(const std::string& group_id);
  std::shared_ptr<Group> get_or_create(const std::string& group_id);
  void forget(const std::shared_ptr<Group>& g);  // removes a Dead group from the map

  std::vector<std::shared_ptr<Group>> all_groups();

  // Appends records to group_id's partition. Called with the group lock
  // held, so that log order follows state order; when_durable() is called
  // after releasing it and runs done (inline, or on the flusher thread once
  // the fsync covers the records when ciuic.acks.all.fsync is true).
  Appended append(const std::string& group_id, const std::vector<OffsetsRecord>& records);
  void when_durable(Appended a, std::function<void(protocol::ErrorCode)> done);
  // Remembers that a request about group_id came on connection_id, so that
  // its close visits the group (0: nothing). Takes conn_mu_ only.
  void track_connection(uint64_t connection_id, const std::string& group_id);
  // The group's own step of delete_groups (no waiting).
  protocol::ErrorCode delete_one(const std::string& group_id, Appended* appended);
  std::shared_ptr<Partition> offsets_partition(const std::string& group_id);

  void load();
  // Reads p's records in [log start, end) into `into`: only those of groups
  // `want` accepts when it is set; each one applied is shown to `trace`
  // when set (legacy_offsets.h).
  void load_partition(Partition& p, int64_t end, std::map<std::string, std::shared_ptr<Group>>& into,
                      std::map<std::string, bool>& has_metadata,
                      const std::function<bool(const std::string&)>& want = {}, OffsetsLoadTrace* trace = nullptr);
  // Single node, during load(): moves the groups `trace` found outside their
  // partition home (legacy_offsets.h).
  void migrate_misplaced(const OffsetsLoadTrace& trace, const std::map<std::string, std::shared_ptr<Group>>& loaded,
                         const std::map<std::string, bool>& has_metadata);
  // Cluster mode: the loader thread, one partition load, the unload.
  struct LoadJob {
    std::shared_ptr<Partition> partition;
    uint64_t token = 0;
  };
  void loader_loop();
  void load_owned(const LoadJob& job);
  void unload(int32_t p);
  // Installs loaded groups (single node: all; cluster: those of a load
  // still current). Takes mu_ (and own_mu_ through the check).
  void install(std::map<std::string, std::shared_ptr<Group>>& loaded_groups, std::map<std::string, bool>& has_metadata,
               const std::function<bool()>& still_current);
  void arm_timer();
  void tick();

  Broker& broker_;
  const bool cluster_;
  std::atomic<bool> loaded_{false};
  std::atomic<bool> stopped_{false};
  std::mutex load_mu_;
  std::condition_variable load_cv_;

  std::mutex mu_;  // guards groups_
  std::map<std::string, std::shared_ptr<Group>> groups_;

  std::mutex own_mu_;  // guards ownership_; taken after mu_ or a group's lock, never before
  std::condition_variable own_cv_;
  OffsetsOwnership ownership_;

  std::mutex loader_mu_;  // guards load_jobs_, loader_stop_
  std::condition_variable loader_cv_;
  std::deque<LoadJob> load_jobs_;
  bool loader_stop_ = false;
  std::thread loader_;  // cluster mode only

  uint64_t metrics_id_ = 0;  // the lag collector (lag_metrics.h)
  // Subscribed to ConnectionEvents on the first tracked connection (not in
  // the constructor: Broker::service holds its lock while constructing us).
  std::once_flag subscribe_once_;
  std::atomic<bool> subscribed_{false};
  uint64_t connection_events_token_ = 0;
  std::mutex conn_mu_;  // guards conn_groups_; taken after a group's lock, never before
  std::map<uint64_t, std::set<std::string>> conn_groups_;  // connection -> groups its members spoke in
  int64_t next_expiry_check_ = 0;  // steady ms (timer thread only)
  std::mutex timer_mu_;
  std::unique_ptr<asio::steady_timer> timer_;
  std::shared_ptr<std::atomic<bool>> alive_ = std::make_shared<std::atomic<bool>>(true);
};

// The groups' clock in milliseconds (session, rebalance and disconnect
// deadlines): the steady clock, unless a ManualGroupClock is alive.
int64_t steady_ms();

// Tests: while one lives, steady_ms() (for every group coordinator of the
// process) is a manual clock that starts at the steady clock's now and moves
// only by advance(); GroupCoordinator::tick_now() then runs the deadline
// checks at once, so a test of an expiry neither sleeps nor races the 50 ms
// timer. One at a time.
class ManualGroupClock {
 public:
  ManualGroupClock();
  ~ManualGroupClock();
  ManualGroupClock(const ManualGroupClock&) = delete;
  ManualGroupClock& operator=(const ManualGroupClock&) = delete;
  void advance(int64_t ms);
};

}  // namespace ciuickafka::broker::groups
