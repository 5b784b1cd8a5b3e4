// broker/groups/membership.h: the classic group protocol's transitions
// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, session expiry), as Kafka
// 3.9's GroupCoordinator runs them. Internal to broker/groups: the
// coordinator's public methods forward here.
//
// Every function that takes a Group& expects its lock held and puts client
// answers into the Outbox, which the caller runs after unlocking.
#pragma once

#include <optional>

#include "broker/groups/coordinator.h"
#include "broker/groups/group.h"

namespace ciuickafka::broker::groups {

struct Membership {
  static void join(GroupCoordinator& c, const protocol::JoinGroupRequest& req, int16_t version,
                   const ClientInfo& client, JoinCallback done);
  static void sync(GroupCoordinator& c, const protocol::SyncGroupRequest& req, int16_t version, SyncCallback done,
                   uint64_t connection_id = 0);
  static protocol::ErrorCode heartbeat(GroupCoordinator& c, const protocol::HeartbeatRequest& req,
                                       uint64_t connection_id = 0);
  static protocol::LeaveGroupResponse leave(GroupCoordinator& c, const protocol::LeaveGroupRequest& req,
                                            int16_t version);

  // Timer: expired sessions and pending members, the end of a join phase.
  static void on_tick(GroupCoordinator& c, Group& g, int64_t now, Outbox& out);
  // Loading: the group as its last GroupMetadataValue says (nullopt: deleted).
  static void restore(Group& g, const std::optional<protocol::GroupMetadataValue>& v);
  // Answers every held JoinGroup/SyncGroup with err.
  static void fail_held(Group& g, protocol::ErrorCode err, Outbox& out);

  static void remove_member(GroupCoordinator& c, Group& g, const std::string& member_id, Outbox& out);
  static void prepare_rebalance(GroupCoordinator& c, Group& g, Outbox& out);
  static void maybe_complete_join(GroupCoordinator& c, Group& g, Outbox& out);
  static void complete_join(GroupCoordinator& c, Group& g, Outbox& out);
  // Appends the group's metadata; the result says when it is durable.
  static Appended persist(GroupCoordinator& c, Group& g);
};

protocol::JoinGroupResponse join_error(protocol::ErrorCode e, int16_t version, const std::string& member_id = "");

}  // namespace ciuickafka::broker::groups
