// broker/groups/lag_metrics.cc: the lag collector (see the header).
#include "broker/groups/lag_metrics.h"

#include <prometheus/metric_family.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "protocol/generated/consumer_protocol_subscription.h"
#include "protocol/wire/reader.h"

namespace ciuickafka::broker::groups {
namespace {

prometheus::ClientMetric gauge(std::vector<prometheus::ClientMetric::Label> labels, double v) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = v;
  return m;
}

prometheus::MetricFamily family(const char* name, const char* help,
                                prometheus::MetricType type = prometheus::MetricType::Gauge) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  return f;
}

// The last subscription seen per group (kept through rebalances).
struct KeptSubscriptions {
  std::mutex mu;
  std::map<std::string, std::set<std::string>> by_group;  // under mu
};

}  // namespace

void add_subscribed_topics(const protocol::Bytes& metadata, std::set<std::string>& out) {
  if (metadata.empty()) return;
  protocol::Reader r(metadata);
  const int16_t version = r.read_int16();
  if (!r.ok() || version < 0) return;
  protocol::ConsumerProtocolSubscription sub;
  // Newer versions only append fields: read them at the highest we know.
  sub.decode(r, std::min(version, protocol::ConsumerProtocolSubscription::kHighestVersion));
  if (!r.ok()) return;
  for (auto& t : sub.topics) out.insert(std::move(t));
}

uint64_t register_lag_metrics(GroupCoordinator& coordinator) {
  Broker& broker = coordinator.broker();
  auto kept = std::make_shared<KeptSubscriptions>();
  return broker.metrics_registry().add_collector([&coordinator, &broker,
                                                  kept](std::vector<prometheus::MetricFamily>& out) {
    auto current = family("kafka_consumergroup_current_offset",
                          "Committed offset of a consumer group per partition (partitions with a commit only).");
    auto lag = family("kafka_consumergroup_lag",
                      "Records of a partition the group has not consumed: high watermark minus the committed offset "
                      "(committed=\"true\"), or minus the log start offset where the group has no commit for the "
                      "partition (committed=\"false\"). Every partition of every topic the group subscribes to or "
                      "has commits for.");
    auto lag_sum = family("kafka_consumergroup_lag_sum",
                          "kafka_consumergroup_lag summed over the topic's partitions, committed or not.");
    auto members = family("kafka_consumergroup_members", "Members of a consumer group.");
    auto states = family("kafka_coordinator_groups", "Groups this coordinator holds, by state.");
    auto rebalances = family("kafka_coordinator_rebalances_total",
                             "Completed rebalances of a group (PreparingRebalance to Stable or Empty).",
                             prometheus::MetricType::Counter);
    auto durations = family("kafka_coordinator_rebalance_duration_seconds",
                            "Duration of a group's completed rebalances (count and sum).",
                            prometheus::MetricType::Summary);
    auto last = family("kafka_coordinator_rebalance_last_duration_seconds",
                       "Duration of a group's last completed rebalance.");
    auto num_groups = family("kafka_coordinator_group_groupmetadatamanager_numgroups",
                             "Groups this coordinator holds, in any state.");
    auto num_offsets = family("kafka_coordinator_group_groupmetadatamanager_numoffsets",
                              "Committed offsets (group, topic, partition) this coordinator holds.");
    std::map<std::string, int64_t> by_state;
    const auto groups = coordinator.snapshot();
    size_t offsets_total = 0;
    std::lock_guard<std::mutex> kept_lock(kept->mu);
    std::map<std::string, std::set<std::string>> seen;  // this scrape's kept subscriptions
    for (const auto& g : groups) {
      ++by_state[std::string(state_name(g.state))];
      offsets_total += g.offsets.size();
      const std::vector<prometheus::ClientMetric::Label> group_label{{"consumergroup", g.group_id}};
      members.metric.push_back(gauge(group_label, static_cast<double>(g.members)));
      if (g.rebalances > 0) {
        prometheus::ClientMetric c;
        c.label = group_label;
        c.counter.value = static_cast<double>(g.rebalances);
        rebalances.metric.push_back(c);
        prometheus::ClientMetric s;
        s.label = group_label;
        s.summary.sample_count = g.rebalances;
        s.summary.sample_sum = g.rebalance_seconds;
        durations.metric.push_back(s);
        last.metric.push_back(gauge(group_label, g.last_rebalance_seconds));
      }

      // The topics it consumes: subscribed (Stable: from DescribeGroups; else
      // the last seen while it has members) and committed.
      std::set<std::string> topics;
      if (g.members > 0) {
        if (g.state == GroupState::kStable) {
          const auto d = coordinator.describe_group(g.group_id, false);
          if (d.protocol_type == "consumer")
            for (const auto& m : d.members) add_subscribed_topics(m.member_metadata, topics);
          seen[g.group_id] = topics;
        } else if (auto it = kept->by_group.find(g.group_id); it != kept->by_group.end()) {
          topics = it->second;
          seen[g.group_id] = topics;
        }
      }
      for (const auto& [tp, offset] : g.offsets) topics.insert(tp.first);

      for (const std::string& name : topics) {
        auto topic = broker.topics().find(name);
        if (!topic) continue;
        int64_t sum = 0;
        for (const auto& p : topic->partitions) {
          if (!p) continue;  // not hosted here
          const std::string part = std::to_string(p->index());
          const int64_t hw = p->high_watermark();
          auto c = g.offsets.find(TopicPartitionKey(name, p->index()));
          int64_t l = 0;
          if (c != g.offsets.end()) {
            current.metric.push_back(gauge({{"consumergroup", g.group_id}, {"partition", part}, {"topic", name}},
                                           static_cast<double>(c->second)));
            l = std::max<int64_t>(0, hw - c->second);
          } else {
            l = std::max<int64_t>(0, hw - p->log_start_offset());
          }
          lag.metric.push_back(gauge({{"committed", c != g.offsets.end() ? "true" : "false"},
                                      {"consumergroup", g.group_id},
                                      {"partition", part},
                                      {"topic", name}},
                                     static_cast<double>(l)));
          sum += l;
        }
        lag_sum.metric.push_back(gauge({{"consumergroup", g.group_id}, {"topic", name}}, static_cast<double>(sum)));
      }
    }
    kept->by_group = std::move(seen);
    for (const auto& [state, n] : by_state) states.metric.push_back(gauge({{"state", state}}, static_cast<double>(n)));
    num_groups.metric.push_back(gauge({}, static_cast<double>(groups.size())));
    num_offsets.metric.push_back(gauge({}, static_cast<double>(offsets_total)));
    for (auto* f : {&current, &lag, &lag_sum, &members, &states, &rebalances, &durations, &last, &num_groups,
                    &num_offsets})
      out.push_back(std::move(*f));
  });
}

}  // namespace ciuickafka::broker::groups
