// broker/groups/offset_expiry.cc: committed offsets expire as Kafka 2.1+
// expires them (KIP-211), checked every offsets.retention.check.interval.ms:
//   - a group with members keeps its offsets, except a Stable "consumer"
//     group whose members' subscriptions all decode: offsets of topics none
//     of them subscribes to expire retention after their commit;
//   - an Empty group that had members (it has a protocol type) loses all
//     its offsets retention after it became Empty;
//   - a group that never had members (simple commits of assign() users)
//     loses each offset retention after its commit;
//   - an offset committed with an explicit retention (OffsetCommit v2-v4
//     retention_time_ms) expires at its own expire timestamp instead;
//   - a commit not yet durable never expires (it is not visible yet).
// retention = offsets.retention.minutes. Expired offsets get tombstones in
// __consumer_offsets; an Empty group left without offsets (and nobody
// waiting for a member id) becomes Dead, gets a GroupMetadata tombstone and
// leaves the map, as in Kafka. When the append fails nothing is dropped
// from memory: the next check tries again.
//
// Thread-safety: any thread; each group is handled under its own lock.
#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "protocol/generated/consumer_protocol_subscription.h"
#include "protocol/wire/reader.h"

namespace ciuickafka::broker::groups {
namespace {

// Every member's subscribed topics, or nullopt when any subscription does
// not decode (then Kafka expires nothing of a Stable group).
std::optional<std::set<std::string>> all_subscriptions(const Group& g) {
  if (g.protocol_type != "consumer" || !g.protocol) return std::nullopt;
  std::set<std::string> topics;
  for (const auto& [id, m] : g.members) {
    const protocol::Bytes* meta = m.metadata_for(*g.protocol);
    if (meta == nullptr) return std::nullopt;
    protocol::Reader r(*meta);
    const int16_t version = r.read_int16();
    if (!r.ok() || version < 0) return std::nullopt;
    protocol::ConsumerProtocolSubscription sub;
    sub.decode(r, std::min(version, protocol::ConsumerProtocolSubscription::kHighestVersion));
    if (!r.ok()) return std::nullopt;
    topics.insert(sub.topics.begin(), sub.topics.end());
  }
  return topics;
}

}  // namespace

size_t GroupCoordinator::expire_offsets(int64_t now_ms) {
  if (!loaded()) return 0;
  const int64_t retention = broker_.config().offsets_retention_ms();
  size_t expired_total = 0;
  for (auto& gp : all_groups()) {
    std::lock_guard<std::mutex> lock(gp->mu);
    Group& g = *gp;
    if (g.state == GroupState::kDead) continue;
    // base(c): the time retention counts from; nullopt: never expires now.
    std::function<std::optional<int64_t>(const TopicPartitionKey&, const CommittedOffset&)> base;
    if (g.state == GroupState::kEmpty && !g.protocol_type.empty()) {
      base = [&g](const TopicPartitionKey&, const CommittedOffset&) { return std::optional<int64_t>(g.state_timestamp_ms); };
    } else if (g.protocol_type.empty() && g.members.empty()) {
      base = [](const TopicPartitionKey&, const CommittedOffset& c) { return std::optional<int64_t>(c.commit_timestamp); };
    } else if (g.state == GroupState::kStable) {
      auto subscribed = all_subscriptions(g);
      if (!subscribed) continue;
      base = [s = std::move(*subscribed)](const TopicPartitionKey& k, const CommittedOffset& c) {
        return s.count(k.first) != 0 ? std::nullopt : std::optional<int64_t>(c.commit_timestamp);
      };
    } else {
      continue;  // rebalancing: nothing expires
    }
    std::vector<TopicPartitionKey> expired;
    for (const auto& [k, c] : g.offsets) {
      if (g.pending_offsets.count(k) != 0) continue;
      const std::optional<int64_t> from = base(k, c);
      if (!from) continue;
      const bool gone = c.expire_timestamp >= 0 ? now_ms >= c.expire_timestamp : *from + retention <= now_ms;
      if (gone) expired.push_back(k);
    }
    const bool dead = g.state == GroupState::kEmpty && g.members.empty() && g.pending_members.empty() &&
                      g.pending_offsets.empty() && expired.size() == g.offsets.size();
    if (expired.empty() && !dead) continue;
    std::vector<OffsetsRecord> tombstones;
    for (const auto& k : expired) tombstones.push_back(offset_commit_record(g.id, k.first, k.second, std::nullopt));
    if (dead) tombstones.push_back(group_metadata_record(g.id, std::nullopt));
    if (append(g.id, tombstones).error != protocol::ErrorCode::NONE) continue;
    for (const auto& k : expired) g.offsets.erase(k);
    expired_total += expired.size();
    if (dead) {
      g.state = GroupState::kDead;
      g.state_timestamp_ms = now_ms;
      forget(gp);
    }
  }
  return expired_total;
}

}  // namespace ciuickafka::broker::groups
