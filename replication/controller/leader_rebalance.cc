// replication/controller/leader_rebalance.cc: the auto leader rebalance
// rule. See leader_rebalance.h.
#include "replication/controller/leader_rebalance.h"

#include <map>

#include "replication/election.h"

namespace ciuickafka::replication::controller {

std::vector<TopicPartitionRef> rebalance_candidates(const ControllerContext& ctx, int32_t imbalance_percentage) {
  struct Group {
    int64_t total = 0;
    std::vector<TopicPartitionRef> not_preferred;
  };
  std::map<int32_t, Group> by_preferred;
  for (const auto& [topic, t] : ctx.topics) {
    if (t.deleting || ctx.pending_deletions.contains(topic)) continue;
    for (const auto& [p, info] : t.partitions) {
      if (info.assignment.replicas.empty()) continue;
      Group& g = by_preferred[info.assignment.replicas.front()];
      ++g.total;  // a partition without a leader yet counts, as balanced (Kafka)
      if (info.state && info.state->leader != info.assignment.replicas.front()) g.not_preferred.push_back({topic, p});
    }
  }
  const BrokerSet online = ctx.online();
  std::vector<TopicPartitionRef> out;
  for (const auto& [broker, g] : by_preferred) {
    // ratio > percentage / 100, in integers: not_preferred * 100 > percentage * total.
    if (static_cast<int64_t>(g.not_preferred.size()) * 100 <= static_cast<int64_t>(imbalance_percentage) * g.total)
      continue;
    for (const auto& tp : g.not_preferred) {
      const PartitionInfo* info = ctx.partition(tp.topic, tp.partition);
      if (elect_preferred(info->assignment.replicas, *info->state, online, 0)) out.push_back(tp);
    }
  }
  return out;
}

}  // namespace ciuickafka::replication::controller
