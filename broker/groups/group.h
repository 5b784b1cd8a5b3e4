// broker/groups/group.h: one classic consumer group's state: its members,
// the state machine (Empty / PreparingRebalance / CompletingRebalance /
// Stable / Dead), the held JoinGroup and SyncGroup answers, and its
// committed offsets.
//
// The coordinator (coordinator.h) drives the transitions; this file holds
// the data and the pure helpers (protocol selection, the persisted form).
// Held answers are callbacks, never threads: a JoinGroup waiting for the
// rebalance is just `Member::awaiting_join`.
//
// Thread-safety: every field is guarded by `mu`; callbacks collected while
// holding it are run after it is released (see Outbox).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/groups/offsets_records.h"
#include "protocol/generated/group_metadata_record.h"
#include "protocol/generated/join_group.h"
#include "protocol/generated/sync_group.h"
#include "protocol/wire/types.h"

namespace ciuickafka::broker::groups {

enum class GroupState : uint8_t { kEmpty, kPreparingRebalance, kCompletingRebalance, kStable, kDead };

// Kafka's names ("Empty", "PreparingRebalance", ...).
std::string_view state_name(GroupState s);
// Case-insensitive parse of a ListGroups states filter entry.
std::optional<GroupState> parse_state(std::string_view s);

// Work to do once the group lock is released (answers to clients).
using Outbox = std::vector<std::function<void()>>;
inline void run(Outbox& out) {
  for (auto& f : out) f();
  out.clear();
}

using JoinCallback = std::function<void(protocol::JoinGroupResponse)>;
using SyncCallback = std::function<void(protocol::SyncGroupResponse)>;

struct Member {
  std::string member_id;
  std::optional<std::string> instance_id;
  std::string client_id;
  std::string client_host;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = 0;
  std::string protocol_type;
  std::vector<std::pair<std::string, protocol::Bytes>> protocols;  // in preference order
  protocol::Bytes assignment;
  uint64_t join_seq = 0;            // order of first join (the leader is the earliest)
  int64_t heartbeat_deadline = 0;   // steady ms
  bool is_new = false;              // joined during the current rebalance
  JoinCallback awaiting_join;       // a held JoinGroup
  int16_t join_version = 0;
  SyncCallback awaiting_sync;       // a held SyncGroup
  uint64_t connection_id = 0;       // the connection it last spoke on (0: unknown)

  const protocol::Bytes* metadata_for(std::string_view protocol) const;
  bool same_protocols(const std::vector<std::pair<std::string, protocol::Bytes>>& other) const;
};

using TopicPartitionKey = std::pair<std::string, int32_t>;

struct Group {
  explicit Group(std::string group_id) : id(std::move(group_id)) {}

  std::mutex mu;
  const std::string id;
  GroupState state = GroupState::kEmpty;
  int32_t generation = 0;
  std::string protocol_type;               // "" until a member joins
  std::optional<std::string> protocol;     // selected protocol of the generation
  std::string leader;                      // "" without members
  std::map<std::string, Member> members;   // by member id
  std::map<std::string, std::string> static_members;  // group.instance.id -> member id
  std::map<std::string, int64_t> pending_members;     // MEMBER_ID_REQUIRED ids -> steady deadline
  int64_t join_deadline = 0;               // PreparingRebalance: when the join phase ends
  bool initial_delay = false;              // the join phase is a new group's initial delay
  int64_t initial_delay_limit = 0;         // new-group delay: the latest the join phase may end
  int64_t state_timestamp_ms = 0;          // wall clock of the last state change
  uint64_t next_join_seq = 0;
  std::map<TopicPartitionKey, CommittedOffset> offsets;  // visible (durable) commits
  // Commits written but not yet durable (ciuic.acks.all.fsync): key -> the
  // end offset of the append that wrote the newest one. OffsetFetch does not
  // see them (Kafka's pending offsets); a later tombstone erases the entry so
  // that the older commit is never made visible.
  std::map<TopicPartitionKey, int64_t> pending_offsets;
  // Transactional commits (TxnOffsetCommit) per producer id, invisible
  // until the COMMIT marker for this group's offsets partition applies them
  // (an ABORT drops them). OffsetFetch with require_stable answers
  // UNSTABLE_OFFSET_COMMIT for a key held here.
  std::map<int64_t, std::map<TopicPartitionKey, CommittedOffset>> txn_offsets;

  // Rebalance metrics: a rebalance runs from entering PreparingRebalance
  // until Stable (or Empty); re-entering PreparingRebalance continues it.
  int64_t rebalance_started_ms = 0;        // steady ms; 0: none running
  uint64_t rebalances = 0;                 // completed
  double rebalance_seconds = 0;            // their total duration
  double last_rebalance_seconds = 0;
  void rebalance_begin(int64_t now_steady_ms) {
    if (rebalance_started_ms == 0) rebalance_started_ms = now_steady_ms;
  }
  void rebalance_end(int64_t now_steady_ms) {
    if (rebalance_started_ms == 0) return;
    last_rebalance_seconds = static_cast<double>(now_steady_ms - rebalance_started_ms) / 1000.0;
    rebalance_seconds += last_rebalance_seconds;
    ++rebalances;
    rebalance_started_ms = 0;
  }

  bool has(const std::string& member_id) const { return members.count(member_id) != 0; }
  // A static member whose instance id maps to another member id is fenced.
  bool fenced(const std::optional<std::string>& instance_id, const std::string& member_id) const;
  size_t awaiting_join_count() const;
  bool all_joined() const { return awaiting_join_count() == members.size() && pending_members.empty(); }
  // Protocols every member supports, in the order `m` prefers them.
  std::vector<std::string> common_protocols(const Member* extra = nullptr) const;
  // Would a member of this type with these protocols fit the group?
  bool supports(std::string_view type, const std::vector<std::pair<std::string, protocol::Bytes>>& protos) const;
  // The protocol with the most first-choice votes among the common ones.
  std::optional<std::string> select_protocol() const;
  // Members in join order.
  std::vector<const Member*> ordered() const;
  // The persisted form of the current generation.
  protocol::GroupMetadataValue to_metadata(int64_t now_ms) const;
  // Subscribed topics of "consumer" members (ConsumerProtocolSubscription).
  std::vector<std::string> subscribed_topics() const;
};

}  // namespace ciuickafka::broker::groups
