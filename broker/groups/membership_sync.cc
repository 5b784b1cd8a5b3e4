// broker/groups/membership_sync.cc: SyncGroup, Heartbeat and LeaveGroup of
// the classic protocol (see membership.h), Kafka 3.9's order of checks.
#include <algorithm>

#include "broker/broker.h"
#include "broker/groups/membership.h"

namespace ciuickafka::broker::groups {

using protocol::ErrorCode;
using protocol::SyncGroupResponse;

namespace {

SyncGroupResponse sync_answer(const Group& g, ErrorCode e, protocol::Bytes assignment = {}) {
  SyncGroupResponse r;
  r.error_code = protocol::to_wire(e);
  if (e == ErrorCode::NONE) {
    r.protocol_type = g.protocol_type;
    r.protocol_name = g.protocol;
    r.assignment = std::move(assignment);
  }
  return r;
}

}  // namespace

void Membership::sync(GroupCoordinator& c, const protocol::SyncGroupRequest& req, int16_t version,
                      SyncCallback done, uint64_t connection_id) {
  auto fail = [&](ErrorCode e) {
    SyncGroupResponse r;
    r.error_code = protocol::to_wire(e);
    done(std::move(r));
  };
  if (const ErrorCode e = c.coordinator_error(req.group_id); e != ErrorCode::NONE) return fail(e);
  if (req.group_id.empty()) return fail(ErrorCode::INVALID_GROUP_ID);
  auto gp = c.find(req.group_id);
  if (!gp) return fail(ErrorCode::UNKNOWN_MEMBER_ID);
  Outbox out;
  // The leader's SyncGroup: the answers wait for the metadata to be durable.
  Appended metadata_write;
  std::vector<std::pair<SyncCallback, protocol::Bytes>> held;
  SyncGroupResponse held_ok;  // protocol fields of the answers in `held`
  {
    std::lock_guard<std::mutex> lock(gp->mu);
    Group& g = *gp;
    ErrorCode err = ErrorCode::NONE;
    if (g.state == GroupState::kDead) err = ErrorCode::COORDINATOR_NOT_AVAILABLE;
    else if (g.fenced(req.group_instance_id, req.member_id)) err = ErrorCode::FENCED_INSTANCE_ID;
    else if (!g.has(req.member_id)) err = ErrorCode::UNKNOWN_MEMBER_ID;
    else if (req.generation_id != g.generation) err = ErrorCode::ILLEGAL_GENERATION;
    else if (version >= 5 && ((req.protocol_type && *req.protocol_type != g.protocol_type) ||
                              (req.protocol_name && req.protocol_name != g.protocol)))
      err = ErrorCode::INCONSISTENT_GROUP_PROTOCOL;
    else if (g.state == GroupState::kEmpty) err = ErrorCode::UNKNOWN_MEMBER_ID;
    else if (g.state == GroupState::kPreparingRebalance) err = ErrorCode::REBALANCE_IN_PROGRESS;

    if (err != ErrorCode::NONE) {
      out.push_back([done = std::move(done), r = sync_answer(g, err)]() mutable { done(std::move(r)); });
    } else {
      Member& m = g.members[req.member_id];
      m.heartbeat_deadline = steady_ms() + m.session_timeout_ms;
      m.connection_id = connection_id;
      if (g.state == GroupState::kStable) {
        out.push_back([done = std::move(done), r = sync_answer(g, ErrorCode::NONE, m.assignment)]() mutable {
          done(std::move(r));
        });
      } else {  // CompletingRebalance: held until the leader's assignment arrives
        m.awaiting_sync = std::move(done);
        if (req.member_id == g.leader) {
          for (auto& [id, mm] : g.members) mm.assignment.clear();
          for (const auto& a : req.assignments) {
            auto it = g.members.find(a.member_id);
            if (it != g.members.end()) it->second.assignment = a.assignment;
          }
          metadata_write = persist(c, g);
          g.state = GroupState::kStable;
          g.state_timestamp_ms = Broker::now_ms();
          g.rebalance_end(steady_ms());
          held_ok = sync_answer(g, ErrorCode::NONE);
          for (auto& [id, mm] : g.members) {
            if (!mm.awaiting_sync) continue;
            held.emplace_back(std::move(mm.awaiting_sync), mm.assignment);
            mm.awaiting_sync = nullptr;
          }
        }
      }
    }
  }
  run(out);
  if (held.empty()) return;
  // Kafka answers the SyncGroups once the group metadata is written; with
  // ciuic.acks.all.fsync that means durable. A failed write answers the error.
  auto shared = std::make_shared<decltype(held)>(std::move(held));
  c.when_durable(std::move(metadata_write), [shared, held_ok](ErrorCode e) {
    for (auto& [cb, assignment] : *shared) {
      SyncGroupResponse r = held_ok;
      if (e == ErrorCode::NONE) {
        r.assignment = std::move(assignment);
      } else {
        r = SyncGroupResponse{};
        r.error_code = protocol::to_wire(e);
      }
      cb(std::move(r));
    }
  });
}

ErrorCode Membership::heartbeat(GroupCoordinator& c, const protocol::HeartbeatRequest& req,
                                uint64_t connection_id) {
  if (const ErrorCode e = c.coordinator_error(req.group_id); e != ErrorCode::NONE) return e;
  if (req.group_id.empty()) return ErrorCode::INVALID_GROUP_ID;
  auto gp = c.find(req.group_id);
  if (!gp) return ErrorCode::UNKNOWN_MEMBER_ID;
  std::lock_guard<std::mutex> lock(gp->mu);
  Group& g = *gp;
  if (g.state == GroupState::kDead) return ErrorCode::COORDINATOR_NOT_AVAILABLE;
  if (g.fenced(req.group_instance_id, req.member_id)) return ErrorCode::FENCED_INSTANCE_ID;
  if (!g.has(req.member_id)) return ErrorCode::UNKNOWN_MEMBER_ID;
  if (req.generation_id != g.generation) return ErrorCode::ILLEGAL_GENERATION;
  Member& m = g.members[req.member_id];
  switch (g.state) {
    case GroupState::kEmpty: return ErrorCode::UNKNOWN_MEMBER_ID;
    case GroupState::kPreparingRebalance:
      m.heartbeat_deadline = steady_ms() + m.session_timeout_ms;
      m.connection_id = connection_id;
      return ErrorCode::REBALANCE_IN_PROGRESS;
    default:
      m.heartbeat_deadline = steady_ms() + m.session_timeout_ms;
      m.connection_id = connection_id;
      return ErrorCode::NONE;
  }
}

protocol::LeaveGroupResponse Membership::leave(GroupCoordinator& c, const protocol::LeaveGroupRequest& req,
                                               int16_t version) {
  protocol::LeaveGroupResponse resp;
  std::vector<protocol::LeaveGroupRequest::MemberIdentity> leaving = req.members;
  if (version < 3) {
    leaving.clear();
    protocol::LeaveGroupRequest::MemberIdentity one;
    one.member_id = req.member_id;
    leaving.push_back(one);
  }
  auto top = [&](ErrorCode e) {
    resp.error_code = protocol::to_wire(e);
    return resp;
  };
  if (const ErrorCode e = c.coordinator_error(req.group_id); e != ErrorCode::NONE) return top(e);
  if (req.group_id.empty()) return top(ErrorCode::INVALID_GROUP_ID);
  auto gp = c.find(req.group_id);
  Outbox out;
  if (!gp) {
    for (const auto& l : leaving) {
      protocol::LeaveGroupResponse::MemberResponse mr;
      mr.member_id = l.member_id;
      mr.group_instance_id = l.group_instance_id;
      mr.error_code = protocol::to_wire(ErrorCode::UNKNOWN_MEMBER_ID);
      resp.members.push_back(std::move(mr));
    }
  } else {
    std::lock_guard<std::mutex> lock(gp->mu);
    Group& g = *gp;
    if (g.state == GroupState::kDead) return top(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    for (const auto& l : leaving) {
      ErrorCode e = ErrorCode::NONE;
      if (l.group_instance_id) {
        auto it = g.static_members.find(*l.group_instance_id);
        if (it == g.static_members.end()) e = ErrorCode::UNKNOWN_MEMBER_ID;
        else if (!l.member_id.empty() && it->second != l.member_id) e = ErrorCode::FENCED_INSTANCE_ID;
        else remove_member(c, g, it->second, out);
      } else if (g.pending_members.erase(l.member_id) != 0) {
        maybe_complete_join(c, g, out);
      } else if (!g.has(l.member_id)) {
        e = ErrorCode::UNKNOWN_MEMBER_ID;
      } else {
        remove_member(c, g, l.member_id, out);
      }
      protocol::LeaveGroupResponse::MemberResponse mr;
      mr.member_id = l.member_id;
      mr.group_instance_id = l.group_instance_id;
      mr.error_code = protocol::to_wire(e);
      resp.members.push_back(std::move(mr));
    }
  }
  run(out);
  // v0-v2 carry one member: its error is the answer's.
  if (version < 3) {
    resp.error_code = resp.members.empty() ? 0 : resp.members.front().error_code;
    resp.members.clear();
  }
  return resp;
}

}  // namespace ciuickafka::broker::groups
