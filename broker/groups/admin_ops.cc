// broker/groups/admin_ops.cc: ListGroups, DescribeGroups and DeleteGroups on
// the coordinator, the metrics snapshot, and the coordinator's entry points
// into the classic protocol (membership.h).
#include <algorithm>
#include <atomic>
#include <cctype>
#include <climits>

#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "broker/groups/membership.h"

namespace ciuickafka::broker::groups {

using protocol::ErrorCode;

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// READ, DELETE and DESCRIBE: what a group supports (AclOperation codes 3, 6, 8).
constexpr int32_t kGroupOperations = (1 << 3) | (1 << 6) | (1 << 8);

}  // namespace

void GroupCoordinator::join(const protocol::JoinGroupRequest& req, int16_t version, const ClientInfo& client,
                            JoinCallback done) {
  track_connection(client.connection_id, req.group_id);
  Membership::join(*this, req, version, client, std::move(done));
}

void GroupCoordinator::sync(const protocol::SyncGroupRequest& req, int16_t version, SyncCallback done,
                            uint64_t connection_id) {
  track_connection(connection_id, req.group_id);
  Membership::sync(*this, req, version, std::move(done), connection_id);
}

ErrorCode GroupCoordinator::heartbeat(const protocol::HeartbeatRequest& req, uint64_t connection_id) {
  track_connection(connection_id, req.group_id);
  return Membership::heartbeat(*this, req, connection_id);
}

protocol::LeaveGroupResponse GroupCoordinator::leave(const protocol::LeaveGroupRequest& req, int16_t version) {
  return Membership::leave(*this, req, version);
}

protocol::ListGroupsResponse GroupCoordinator::list_groups(const protocol::ListGroupsRequest& req, int16_t version) {
  protocol::ListGroupsResponse resp;
  if (!loaded()) {
    resp.error_code = protocol::to_wire(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
    return resp;
  }
  if (cluster_) {
    // Kafka: the loaded groups, and LOAD_IN_PROGRESS while any partition loads.
    std::lock_guard<std::mutex> lock(own_mu_);
    if (ownership_.any_loading()) resp.error_code = protocol::to_wire(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
  }
  const bool by_state = version >= 4 && !req.states_filter.empty();
  const bool by_type = version >= 5 && !req.types_filter.empty();
  if (by_type && std::none_of(req.types_filter.begin(), req.types_filter.end(),
                              [](const std::string& t) { return iequals(t, "classic"); }))
    return resp;  // every group here is a classic group
  for (auto& g : all_groups()) {
    std::lock_guard<std::mutex> lock(g->mu);
    if (g->state == GroupState::kDead) continue;
    const std::string_view state = state_name(g->state);
    if (by_state && std::none_of(req.states_filter.begin(), req.states_filter.end(),
                                 [&](const std::string& s) { return iequals(s, state); }))
      continue;
    protocol::ListGroupsResponse::ListedGroup lg;
    lg.group_id = g->id;
    lg.protocol_type = g->protocol_type;
    lg.group_state = std::string(state);
    lg.group_type = "classic";
    resp.groups.push_back(std::move(lg));
  }
  return resp;
}

protocol::DescribeGroupsResponse::DescribedGroup GroupCoordinator::describe_group(const std::string& group_id,
                                                                                  bool include_operations) {
  protocol::DescribeGroupsResponse::DescribedGroup d;
  d.group_id = group_id;
  d.authorized_operations = include_operations ? kGroupOperations : INT32_MIN;
  if (const ErrorCode e = coordinator_error(group_id); e != ErrorCode::NONE) {
    d.error_code = protocol::to_wire(e);
    return d;
  }
  auto g = find(group_id);
  if (!g) {
    d.group_state = "Dead";
    return d;
  }
  std::lock_guard<std::mutex> lock(g->mu);
  d.group_state = std::string(state_name(g->state));
  d.protocol_type = g->protocol_type;
  const bool stable = g->state == GroupState::kStable;
  if (stable) d.protocol_data = g->protocol.value_or("");
  for (const Member* m : g->ordered()) {
    protocol::DescribeGroupsResponse::DescribedGroupMember dm;
    dm.member_id = m->member_id;
    dm.group_instance_id = m->instance_id;
    dm.client_id = m->client_id;
    dm.client_host = m->client_host;
    if (stable && g->protocol) {
      if (const protocol::Bytes* meta = m->metadata_for(*g->protocol)) dm.member_metadata = *meta;
      dm.member_assignment = m->assignment;
    }
    d.members.push_back(std::move(dm));
  }
  return d;
}

ErrorCode GroupCoordinator::delete_group(const std::string& group_id) {
  Appended appended;
  return delete_one(group_id, &appended);
}

void GroupCoordinator::delete_groups(const std::vector<std::string>& group_ids, DeleteGroupsDone done) {
  // Every group's tombstones are appended first; one wait covers them all
  // (the last append of each offsets partition is the one to wait for, and
  // the group commit covers every partition it flushes; waiting on each is
  // simplest and costs one fsync round at most).
  auto errors = std::make_shared<std::vector<ErrorCode>>(group_ids.size(), ErrorCode::NONE);
  std::vector<std::pair<size_t, Appended>> waits;
  for (size_t i = 0; i < group_ids.size(); ++i) {
    Appended a;
    (*errors)[i] = delete_one(group_ids[i], &a);
    if ((*errors)[i] == ErrorCode::NONE && a.log) waits.emplace_back(i, std::move(a));
  }
  if (waits.empty()) return done(std::move(*errors));
  auto left = std::make_shared<std::atomic<size_t>>(waits.size());
  auto shared_done = std::make_shared<DeleteGroupsDone>(std::move(done));
  for (auto& [i, a] : waits) {
    when_durable(std::move(a), [errors, left, shared_done, i = i](ErrorCode e) {
      if (e != ErrorCode::NONE) (*errors)[i] = e;  // each index written by one callback
      if (left->fetch_sub(1) == 1) (*shared_done)(std::move(*errors));
    });
  }
}

ErrorCode GroupCoordinator::delete_one(const std::string& group_id, Appended* appended_out) {
  if (const ErrorCode e = coordinator_error(group_id); e != ErrorCode::NONE) return e;
  auto gp = find(group_id);
  if (!gp) return ErrorCode::GROUP_ID_NOT_FOUND;
  Appended& appended = *appended_out;
  {
    std::lock_guard<std::mutex> lock(gp->mu);
    Group& g = *gp;
    if (g.state == GroupState::kDead) return ErrorCode::GROUP_ID_NOT_FOUND;
    if (g.state != GroupState::kEmpty || !g.members.empty()) return ErrorCode::NON_EMPTY_GROUP;
    std::vector<OffsetsRecord> tombstones;
    for (const auto& [k, c] : g.offsets) tombstones.push_back(offset_commit_record(g.id, k.first, k.second, std::nullopt));
    for (const auto& [k, at] : g.pending_offsets)
      if (g.offsets.count(k) == 0) tombstones.push_back(offset_commit_record(g.id, k.first, k.second, std::nullopt));
    tombstones.push_back(group_metadata_record(g.id, std::nullopt));
    appended = append(g.id, tombstones);
    if (appended.error != ErrorCode::NONE) return appended.error;
    g.offsets.clear();
    g.pending_offsets.clear();  // commits not yet durable stay invisible
    g.state = GroupState::kDead;
    forget(gp);
  }
  return ErrorCode::NONE;
}

std::vector<GroupCoordinator::GroupView> GroupCoordinator::snapshot() {
  std::vector<GroupView> out;
  for (auto& g : all_groups()) {
    std::lock_guard<std::mutex> lock(g->mu);
    GroupView v;
    v.group_id = g->id;
    v.state = g->state;
    v.members = g->members.size();
    for (const auto& [k, c] : g->offsets) v.offsets[k] = c.offset;
    v.rebalances = g->rebalances;
    v.rebalance_seconds = g->rebalance_seconds;
    v.last_rebalance_seconds = g->last_rebalance_seconds;
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace ciuickafka::broker::groups
