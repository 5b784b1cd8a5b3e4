// broker/groups/group.cc: the pure parts of a group: state names, protocol
// selection, the persisted GroupMetadataValue, subscribed topics.
#include "broker/groups/group.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "protocol/generated/consumer_protocol_subscription.h"
#include "protocol/wire/reader.h"

namespace ciuickafka::broker::groups {

std::string_view state_name(GroupState s) {
  switch (s) {
    case GroupState::kEmpty: return "Empty";
    case GroupState::kPreparingRebalance: return "PreparingRebalance";
    case GroupState::kCompletingRebalance: return "CompletingRebalance";
    case GroupState::kStable: return "Stable";
    case GroupState::kDead: return "Dead";
  }
  return "Unknown";
}

std::optional<GroupState> parse_state(std::string_view s) {
  for (GroupState g : {GroupState::kEmpty, GroupState::kPreparingRebalance, GroupState::kCompletingRebalance,
                       GroupState::kStable, GroupState::kDead}) {
    std::string_view n = state_name(g);
    if (n.size() == s.size() && std::equal(n.begin(), n.end(), s.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        }))
      return g;
  }
  return std::nullopt;
}

const protocol::Bytes* Member::metadata_for(std::string_view protocol) const {
  for (const auto& [name, meta] : protocols)
    if (name == protocol) return &meta;
  return nullptr;
}

bool Member::same_protocols(const std::vector<std::pair<std::string, protocol::Bytes>>& other) const {
  return protocols == other;
}

bool Group::fenced(const std::optional<std::string>& instance_id, const std::string& member_id) const {
  if (!instance_id) return false;
  auto it = static_members.find(*instance_id);
  return it != static_members.end() && it->second != member_id;
}

size_t Group::awaiting_join_count() const {
  size_t n = 0;
  for (const auto& [id, m] : members)
    if (m.awaiting_join) ++n;
  return n;
}

std::vector<std::string> Group::common_protocols(const Member* extra) const {
  std::vector<const Member*> all;
  for (const auto& [id, m] : members) all.push_back(&m);
  if (extra != nullptr) all.push_back(extra);
  if (all.empty()) return {};
  std::vector<std::string> out;
  for (const auto& protocol : all.front()->protocols) {
    const std::string& name = protocol.first;
    bool everyone = std::all_of(all.begin(), all.end(), [&](const Member* m) { return m->metadata_for(name); });
    if (everyone) out.push_back(name);
  }
  return out;
}

bool Group::supports(std::string_view type, const std::vector<std::pair<std::string, protocol::Bytes>>& protos) const {
  if (members.empty()) return !type.empty() && !protos.empty();
  if (type != protocol_type) return false;
  Member probe;
  probe.protocols = protos;
  return !common_protocols(&probe).empty();
}

std::optional<std::string> Group::select_protocol() const {
  std::vector<std::string> candidates = common_protocols();
  if (candidates.empty()) return std::nullopt;
  std::map<std::string, int> votes;
  for (const auto& [id, m] : members) {
    for (const auto& [name, meta] : m.protocols) {
      if (std::find(candidates.begin(), candidates.end(), name) != candidates.end()) {
        ++votes[name];
        break;
      }
    }
  }
  std::string best = candidates.front();
  for (const std::string& c : candidates)
    if (votes[c] > votes[best]) best = c;
  return best;
}

std::vector<const Member*> Group::ordered() const {
  std::vector<const Member*> out;
  for (const auto& [id, m] : members) out.push_back(&m);
  std::sort(out.begin(), out.end(), [](const Member* a, const Member* b) { return a->join_seq < b->join_seq; });
  return out;
}

protocol::GroupMetadataValue Group::to_metadata(int64_t now_ms) const {
  protocol::GroupMetadataValue v;
  v.protocol_type = protocol_type;
  v.generation = generation;
  v.protocol = protocol;
  v.leader = leader.empty() ? std::nullopt : std::optional<std::string>(leader);
  v.current_state_timestamp = now_ms;
  for (const Member* m : ordered()) {
    protocol::GroupMetadataValue::MemberMetadata mm;
    mm.member_id = m->member_id;
    mm.group_instance_id = m->instance_id;
    mm.client_id = m->client_id;
    mm.client_host = m->client_host;
    mm.rebalance_timeout = m->rebalance_timeout_ms;
    mm.session_timeout = m->session_timeout_ms;
    if (protocol) {
      if (const protocol::Bytes* meta = m->metadata_for(*protocol)) mm.subscription = *meta;
    }
    mm.assignment = m->assignment;
    v.members.push_back(std::move(mm));
  }
  return v;
}

std::vector<std::string> Group::subscribed_topics() const {
  std::set<std::string> topics;
  if (protocol_type != "consumer" || !protocol) return {};
  for (const auto& [id, m] : members) {
    const protocol::Bytes* meta = m.metadata_for(*protocol);
    if (meta == nullptr) continue;
    protocol::Reader r(*meta);
    int16_t version = r.read_int16();
    if (!r.ok() || version < 0) continue;
    protocol::ConsumerProtocolSubscription sub;
    // Newer versions only append fields: read them at the highest we know.
    sub.decode(r, std::min(version, protocol::ConsumerProtocolSubscription::kHighestVersion));
    for (auto& t : sub.topics) topics.insert(t);
  }
  return {topics.begin(), topics.end()};
}

}  // namespace ciuickafka::broker::groups
