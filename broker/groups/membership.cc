// broker/groups/membership.cc: JoinGroup, SyncGroup, Heartbeat, LeaveGroup
// and session expiry for classic groups (see membership.h). The rules and
// error codes follow Kafka 3.9's classic GroupCoordinator; comments name
// the KIPs where behaviour comes from one.
#include "broker/groups/membership.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "broker/broker.h"
#include "metrics/log/log.h"

namespace ciuickafka::broker::groups {

using protocol::ErrorCode;
using protocol::JoinGroupResponse;
using protocol::SyncGroupResponse;

namespace {

std::string random_uuid() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const uint64_t a = rng(), b = rng();
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
                static_cast<unsigned>(b >> 48), static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

int16_t wire(ErrorCode e) { return protocol::to_wire(e); }

// A successful JoinGroup answer for member m of the current generation.
JoinGroupResponse join_result(const Group& g, const Member& m, bool with_members, bool skip_assignment) {
  JoinGroupResponse r;
  r.generation_id = g.generation;
  r.protocol_type = g.protocol_type;
  r.protocol_name = g.protocol.value_or("");
  r.leader = g.leader;
  r.member_id = m.member_id;
  r.skip_assignment = skip_assignment;
  if (with_members) {
    for (const Member* o : g.ordered()) {
      JoinGroupResponse::JoinGroupResponseMember jm;
      jm.member_id = o->member_id;
      jm.group_instance_id = o->instance_id;
      if (g.protocol) {
        if (const protocol::Bytes* meta = o->metadata_for(*g.protocol)) jm.metadata = *meta;
      }
      r.members.push_back(std::move(jm));
    }
  }
  return r;
}

SyncGroupResponse sync_result(const Group& g, ErrorCode e, protocol::Bytes assignment = {}) {
  SyncGroupResponse r;
  r.error_code = wire(e);
  if (e == ErrorCode::NONE) {
    r.protocol_type = g.protocol_type;
    r.protocol_name = g.protocol;
    r.assignment = std::move(assignment);
  }
  return r;
}

void answer_join(Outbox& out, JoinCallback cb, JoinGroupResponse r) {
  if (!cb) return;
  out.push_back([cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
}

void answer_sync(Outbox& out, SyncCallback cb, SyncGroupResponse r) {
  if (!cb) return;
  out.push_back([cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
}

int64_t max_rebalance_timeout(const Group& g) {
  int64_t t = 0;
  for (const auto& [id, m] : g.members) t = std::max<int64_t>(t, m.rebalance_timeout_ms);
  return t;
}

void set_state(Group& g, GroupState s) {
  g.state = s;
  g.state_timestamp_ms = Broker::now_ms();
}

// Adds a new member (or a pending one) awaiting the join, then rebalances.
void add_member_and_rebalance(GroupCoordinator& c, Group& g, Member m, Outbox& out) {
  const int64_t now = steady_ms();
  m.join_seq = g.next_join_seq++;
  m.is_new = true;
  m.heartbeat_deadline = now + m.session_timeout_ms;
  if (m.instance_id) g.static_members[*m.instance_id] = m.member_id;
  g.pending_members.erase(m.member_id);
  if (g.members.empty()) g.protocol_type = m.protocol_type;
  if (g.leader.empty()) g.leader = m.member_id;
  const std::string id = m.member_id;
  g.members[id] = std::move(m);
  if (g.state == GroupState::kPreparingRebalance) {
    if (g.initial_delay) {  // each newcomer extends a new group's delay, within the rebalance timeout
      const int64_t delay = c.broker().config().get_int("group.initial.rebalance.delay.ms");
      g.join_deadline = std::min(now + delay, g.initial_delay_limit);
    }
    Membership::maybe_complete_join(c, g, out);
  } else {
    Membership::prepare_rebalance(c, g, out);
  }
}

void update_member(Member& m, const protocol::JoinGroupRequest& req, int32_t rebalance_timeout, JoinCallback done,
                   int16_t version, uint64_t connection_id) {
  m.connection_id = connection_id;
  m.session_timeout_ms = req.session_timeout_ms;
  m.rebalance_timeout_ms = rebalance_timeout;
  m.protocols.clear();
  for (const auto& p : req.protocols) m.protocols.emplace_back(p.name, p.metadata);
  m.awaiting_join = std::move(done);
  m.join_version = version;
  m.heartbeat_deadline = steady_ms() + m.session_timeout_ms;
}

std::vector<std::pair<std::string, protocol::Bytes>> protocols_of(const protocol::JoinGroupRequest& req) {
  std::vector<std::pair<std::string, protocol::Bytes>> out;
  for (const auto& p : req.protocols) out.emplace_back(p.name, p.metadata);
  return out;
}

// KIP-345: a known group.instance.id joins with an empty member id: the
// new instance takes the old member's place (and fences it).
void replace_static_member(GroupCoordinator& c, Group& g, const protocol::JoinGroupRequest& req, int16_t version,
                           int32_t rebalance_timeout, const ClientInfo& client, JoinCallback done, Outbox& out) {
  const std::string old_id = g.static_members[*req.group_instance_id];
  Member m = std::move(g.members[old_id]);
  g.members.erase(old_id);
  answer_join(out, std::move(m.awaiting_join), join_error(ErrorCode::FENCED_INSTANCE_ID, m.join_version, old_id));
  answer_sync(out, std::move(m.awaiting_sync), sync_result(g, ErrorCode::FENCED_INSTANCE_ID));
  m.awaiting_join = nullptr;
  m.awaiting_sync = nullptr;
  m.member_id = *req.group_instance_id + "-" + random_uuid();
  m.client_id = client.client_id;
  m.client_host = client.client_host;
  g.static_members[*req.group_instance_id] = m.member_id;
  if (g.leader == old_id) g.leader = m.member_id;
  const bool same = m.same_protocols(protocols_of(req));
  const std::string id = m.member_id;
  g.members[id] = std::move(m);
  Member& nm = g.members[id];
  if (g.state == GroupState::kStable && same) {
    // Same subscription: no rebalance; it gets its old assignment by SyncGroup.
    nm.session_timeout_ms = req.session_timeout_ms;
    nm.rebalance_timeout_ms = rebalance_timeout;
    nm.heartbeat_deadline = steady_ms() + nm.session_timeout_ms;
    nm.connection_id = client.connection_id;
    Membership::persist(c, g);
    const bool leader = g.leader == id;
    JoinGroupResponse r = join_result(g, nm, leader, leader && version >= 9);
    answer_join(out, std::move(done), std::move(r));
    return;
  }
  update_member(nm, req, rebalance_timeout, std::move(done), version, client.connection_id);
  if (g.state == GroupState::kPreparingRebalance) Membership::maybe_complete_join(c, g, out);
  else Membership::prepare_rebalance(c, g, out);
}

}  // namespace

JoinGroupResponse join_error(ErrorCode e, int16_t version, const std::string& member_id) {
  JoinGroupResponse r;
  r.error_code = wire(e);
  r.generation_id = -1;
  r.member_id = member_id;
  r.protocol_name = version >= 7 ? std::nullopt : std::optional<std::string>("");
  return r;
}

void Membership::join(GroupCoordinator& c, const protocol::JoinGroupRequest& req, int16_t version,
                      const ClientInfo& client, JoinCallback done) {
  const auto& cfg = c.broker().config();
  auto fail = [&](ErrorCode e, const std::string& member = "") { done(join_error(e, version, member)); };
  if (req.group_id.empty()) return fail(ErrorCode::INVALID_GROUP_ID, req.member_id);
  if (const ErrorCode e = c.coordinator_error(req.group_id); e != ErrorCode::NONE) return fail(e, req.member_id);
  if (req.session_timeout_ms < cfg.get_int("group.min.session.timeout.ms") ||
      req.session_timeout_ms > cfg.get_int("group.max.session.timeout.ms"))
    return fail(ErrorCode::INVALID_SESSION_TIMEOUT, req.member_id);
  // v0 has no rebalance timeout: Kafka uses the session timeout.
  const int32_t rebalance_timeout = req.rebalance_timeout_ms < 0 ? req.session_timeout_ms : req.rebalance_timeout_ms;
  const bool unknown = req.member_id.empty();
  std::shared_ptr<Group> gp = unknown ? c.get_or_create(req.group_id) : c.find(req.group_id);
  // A new member finds no group only when the partition was just unloaded.
  if (!gp) return fail(unknown ? ErrorCode::NOT_COORDINATOR : ErrorCode::UNKNOWN_MEMBER_ID, req.member_id);

  Outbox out;
  {
    std::lock_guard<std::mutex> lock(gp->mu);
    Group& g = *gp;
    const auto protos = protocols_of(req);
    const size_t max_size = static_cast<size_t>(cfg.get_int("group.max.size"));
    if (g.state == GroupState::kDead) {
      answer_join(out, std::move(done), join_error(ErrorCode::COORDINATOR_NOT_AVAILABLE, version, req.member_id));
    } else if (!g.supports(req.protocol_type, protos)) {
      answer_join(out, std::move(done), join_error(ErrorCode::INCONSISTENT_GROUP_PROTOCOL, version, req.member_id));
    } else if (unknown) {
      const bool known_static = req.group_instance_id && g.static_members.count(*req.group_instance_id) != 0;
      if (known_static) {
        replace_static_member(c, g, req, version, rebalance_timeout, client, std::move(done), out);
      } else if (g.members.size() + g.pending_members.size() >= max_size) {
        answer_join(out, std::move(done), join_error(ErrorCode::GROUP_MAX_SIZE_REACHED, version));
      } else {
        const std::string id = (req.group_instance_id ? *req.group_instance_id : client.client_id) + "-" + random_uuid();
        if (!req.group_instance_id && version >= 4) {
          // KIP-394: hand out the id first; the member joins again with it.
          g.pending_members[id] = steady_ms() + req.session_timeout_ms;
          answer_join(out, std::move(done), join_error(ErrorCode::MEMBER_ID_REQUIRED, version, id));
        } else {
          Member m;
          m.member_id = id;
          m.instance_id = req.group_instance_id;
          m.client_id = client.client_id;
          m.client_host = client.client_host;
          m.protocol_type = req.protocol_type;
          update_member(m, req, rebalance_timeout, std::move(done), version, client.connection_id);
          add_member_and_rebalance(c, g, std::move(m), out);
        }
      }
    } else if (g.pending_members.count(req.member_id) != 0) {
      Member m;
      m.member_id = req.member_id;
      m.instance_id = req.group_instance_id;
      m.client_id = client.client_id;
      m.client_host = client.client_host;
      m.protocol_type = req.protocol_type;
      update_member(m, req, rebalance_timeout, std::move(done), version, client.connection_id);
      add_member_and_rebalance(c, g, std::move(m), out);
    } else if (g.fenced(req.group_instance_id, req.member_id)) {
      answer_join(out, std::move(done), join_error(ErrorCode::FENCED_INSTANCE_ID, version, req.member_id));
    } else if (!g.has(req.member_id) ||
               (req.group_instance_id && g.static_members.count(*req.group_instance_id) == 0) ||
               g.state == GroupState::kEmpty) {
      answer_join(out, std::move(done), join_error(ErrorCode::UNKNOWN_MEMBER_ID, version, req.member_id));
    } else {
      Member& m = g.members[req.member_id];
      const bool same = m.same_protocols(protos);
      switch (g.state) {
        case GroupState::kPreparingRebalance:
          // A replaced held join gets no answer in Kafka either; answer it so
          // the connection does not wait forever.
          answer_join(out, std::move(m.awaiting_join), join_error(ErrorCode::UNKNOWN_MEMBER_ID, m.join_version, m.member_id));
          update_member(m, req, rebalance_timeout, std::move(done), version, client.connection_id);
          maybe_complete_join(c, g, out);
          break;
        case GroupState::kCompletingRebalance:
          if (same) {
            m.heartbeat_deadline = steady_ms() + m.session_timeout_ms;
            m.connection_id = client.connection_id;
            answer_join(out, std::move(done), join_result(g, m, g.leader == m.member_id, false));
          } else {
            update_member(m, req, rebalance_timeout, std::move(done), version, client.connection_id);
            prepare_rebalance(c, g, out);
          }
          break;
        case GroupState::kStable:
          if (same && g.leader != m.member_id) {
            m.heartbeat_deadline = steady_ms() + m.session_timeout_ms;
            m.connection_id = client.connection_id;
            answer_join(out, std::move(done), join_result(g, m, false, false));
          } else {
            update_member(m, req, rebalance_timeout, std::move(done), version, client.connection_id);
            prepare_rebalance(c, g, out);
          }
          break;
        default:
          answer_join(out, std::move(done), join_error(ErrorCode::UNKNOWN_MEMBER_ID, version, req.member_id));
      }
    }
  }
  run(out);
}

void Membership::prepare_rebalance(GroupCoordinator& c, Group& g, Outbox& out) {
  const int64_t now = steady_ms();
  if (g.state == GroupState::kCompletingRebalance) {
    for (auto& [id, m] : g.members) {
      m.assignment.clear();
      answer_sync(out, std::move(m.awaiting_sync), sync_result(g, ErrorCode::REBALANCE_IN_PROGRESS));
      m.awaiting_sync = nullptr;
    }
  }
  const int64_t rebalance = max_rebalance_timeout(g);
  const int64_t delay = c.broker().config().get_int("group.initial.rebalance.delay.ms");
  if (g.state == GroupState::kEmpty && delay > 0) {
    g.initial_delay = true;
    g.initial_delay_limit = now + rebalance;
    g.join_deadline = std::min(now + delay, g.initial_delay_limit);
  } else {
    g.initial_delay = false;
    g.join_deadline = now + rebalance;
  }
  CK_LOG_INFO("groups", "group %s: preparing to rebalance (generation %d, %zu member(s)%s)", g.id.c_str(),
              g.generation, g.members.size(), g.initial_delay ? ", new group: group.initial.rebalance.delay.ms" : "");
  set_state(g, GroupState::kPreparingRebalance);
  g.rebalance_begin(now);
  maybe_complete_join(c, g, out);
}

void Membership::maybe_complete_join(GroupCoordinator& c, Group& g, Outbox& out) {
  if (g.state == GroupState::kPreparingRebalance && !g.initial_delay && g.all_joined()) complete_join(c, g, out);
}

void Membership::complete_join(GroupCoordinator& c, Group& g, Outbox& out) {
  // Members that did not rejoin in time leave the group (static ones too).
  std::vector<std::string> gone;
  for (const auto& [id, m] : g.members)
    if (!m.awaiting_join) gone.push_back(id);
  for (const auto& id : gone) {
    Member& m = g.members[id];
    if (m.instance_id) g.static_members.erase(*m.instance_id);
    g.members.erase(id);
  }
  g.initial_delay = false;
  if (g.leader.empty() || !g.has(g.leader)) {
    auto order = g.ordered();
    g.leader = order.empty() ? "" : order.front()->member_id;
  }
  ++g.generation;
  if (g.members.empty()) {
    CK_LOG_INFO("groups", "group %s: rebalance done: generation %d is empty (%zu member(s) did not rejoin)",
                g.id.c_str(), g.generation, gone.size());
    g.protocol.reset();
    set_state(g, GroupState::kEmpty);
    g.rebalance_end(steady_ms());
    persist(c, g);
    return;
  }
  g.protocol = g.select_protocol();
  if (metrics::log::enabled(metrics::log::Level::kInfo)) {
    const std::string proto = g.protocol.value_or("");
    metrics::log::write(metrics::log::Level::kInfo, "groups",
                        "group " + g.id + ": rebalance done: generation " + std::to_string(g.generation) + ", " +
                            std::to_string(g.members.size()) + " member(s), protocol " + g.protocol_type + "/" +
                            proto + (gone.empty() ? "" : ", " + std::to_string(gone.size()) + " left (no rejoin)"),
                        {{"group", g.id},
                         {"generation", g.generation},
                         {"members", g.members.size()},
                         {"protocol_type", g.protocol_type},
                         {"protocol", proto},
                         {"leader", g.leader}});
  }
  set_state(g, GroupState::kCompletingRebalance);
  const int64_t now = steady_ms();
  for (auto& [id, m] : g.members) {
    const bool leader = id == g.leader;
    answer_join(out, std::move(m.awaiting_join), join_result(g, m, leader, false));
    m.awaiting_join = nullptr;
    m.is_new = false;
    m.heartbeat_deadline = now + m.session_timeout_ms;
  }
}

Appended Membership::persist(GroupCoordinator& c, Group& g) {
  // Callers other than SyncGroup do not wait: a failed write only loses the
  // generation on restart (the members rejoin); offsets are written
  // separately and acknowledged.
  return c.append(g.id, {group_metadata_record(g.id, g.to_metadata(Broker::now_ms()))});
}

void Membership::remove_member(GroupCoordinator& c, Group& g, const std::string& member_id, Outbox& out) {
  auto it = g.members.find(member_id);
  if (it == g.members.end()) return;
  Member& m = it->second;
  answer_join(out, std::move(m.awaiting_join), join_error(ErrorCode::UNKNOWN_MEMBER_ID, m.join_version, member_id));
  answer_sync(out, std::move(m.awaiting_sync), sync_result(g, ErrorCode::UNKNOWN_MEMBER_ID));
  if (m.instance_id) g.static_members.erase(*m.instance_id);
  g.members.erase(it);
  if (g.leader == member_id) {
    auto order = g.ordered();
    g.leader = order.empty() ? "" : order.front()->member_id;
  }
  switch (g.state) {
    case GroupState::kStable:
    case GroupState::kCompletingRebalance: prepare_rebalance(c, g, out); break;
    case GroupState::kPreparingRebalance: maybe_complete_join(c, g, out); break;
    default: break;
  }
}

void Membership::on_tick(GroupCoordinator& c, Group& g, int64_t now, Outbox& out) {
  if (g.state == GroupState::kDead) return;
  bool pending_gone = false;
  for (auto it = g.pending_members.begin(); it != g.pending_members.end();) {
    if (it->second <= now) {
      it = g.pending_members.erase(it);
      pending_gone = true;
    } else {
      ++it;
    }
  }
  std::vector<std::string> expired;
  for (const auto& [id, m] : g.members)
    if (!m.awaiting_join && !m.awaiting_sync && m.heartbeat_deadline <= now) expired.push_back(id);
  for (const auto& id : expired) remove_member(c, g, id, out);
  if (g.state == GroupState::kPreparingRebalance && now >= g.join_deadline) complete_join(c, g, out);
  else if (pending_gone) maybe_complete_join(c, g, out);
}

void Membership::restore(Group& g, const std::optional<protocol::GroupMetadataValue>& v) {
  g.members.clear();
  g.static_members.clear();
  g.pending_members.clear();
  if (!v) {
    g.protocol_type.clear();
    g.protocol.reset();
    g.leader.clear();
    g.generation = 0;
    g.state = GroupState::kEmpty;
    return;
  }
  g.protocol_type = v->protocol_type;
  g.generation = v->generation;
  g.protocol = v->protocol;
  if (g.protocol && g.protocol->empty()) g.protocol.reset();
  g.leader = v->leader.value_or("");
  for (const auto& mm : v->members) {
    Member m;
    m.member_id = mm.member_id;
    m.instance_id = mm.group_instance_id;
    m.client_id = mm.client_id;
    m.client_host = mm.client_host;
    m.rebalance_timeout_ms = mm.rebalance_timeout;
    m.session_timeout_ms = mm.session_timeout;
    m.protocol_type = g.protocol_type;
    if (g.protocol) m.protocols.emplace_back(*g.protocol, mm.subscription);
    m.assignment = mm.assignment;
    m.join_seq = g.next_join_seq++;
    if (m.instance_id) g.static_members[*m.instance_id] = m.member_id;
    g.members[m.member_id] = std::move(m);
  }
  g.state = g.members.empty() ? GroupState::kEmpty : GroupState::kStable;
  g.state_timestamp_ms = v->current_state_timestamp;
}

void Membership::fail_held(Group& g, ErrorCode err, Outbox& out) {
  for (auto& [id, m] : g.members) {
    answer_join(out, std::move(m.awaiting_join), join_error(err, m.join_version, id));
    m.awaiting_join = nullptr;
    answer_sync(out, std::move(m.awaiting_sync), sync_result(g, err));
    m.awaiting_sync = nullptr;
  }
}

}  // namespace ciuickafka::broker::groups
