// broker/groups/lag_metrics.cc: the lag collector (see the header).
#include "broker/groups/lag_metrics.h"

#include <prometheus/metric_family.h>

#include <algorithm>
#include <map>
#include <string>

#include "broker/broker.h"
#include "broker/groups/coordinator.h"

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

}  // namespace

uint64_t register_lag_metrics(GroupCoordinator& coordinator) {
  Broker& broker = coordinator.broker();
  return broker.metrics_registry().add_collector([&coordinator, &broker](std::vector<prometheus::MetricFamily>& out) {
    auto current = family("kafka_consumergroup_current_offset", "Committed offset of a consumer group per partition.");
    auto lag = family("kafka_consumergroup_lag", "High watermark minus the committed offset, per partition.");
    auto lag_sum = family("kafka_consumergroup_lag_sum", "Lag of a consumer group summed over a topic's partitions.");
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
    std::map<std::string, int64_t> by_state;
    for (const auto& g : coordinator.snapshot()) {
      ++by_state[std::string(state_name(g.state))];
      members.metric.push_back(gauge({{"consumergroup", g.group_id}}, static_cast<double>(g.members)));
      if (g.rebalances > 0) {
        prometheus::ClientMetric c;
        c.label = {{"consumergroup", g.group_id}};
        c.counter.value = static_cast<double>(g.rebalances);
        rebalances.metric.push_back(c);
        prometheus::ClientMetric s;
        s.label = {{"consumergroup", g.group_id}};
        s.summary.sample_count = g.rebalances;
        s.summary.sample_sum = g.rebalance_seconds;
        durations.metric.push_back(s);
        last.metric.push_back(gauge({{"consumergroup", g.group_id}}, g.last_rebalance_seconds));
      }
      std::map<std::string, int64_t> sums;
      for (const auto& [tp, offset] : g.offsets) {
        auto p = broker.topics().partition(tp.first, tp.second);
        if (!p) continue;
        const std::string part = std::to_string(tp.second);
        const int64_t l = std::max<int64_t>(0, p->high_watermark() - offset);
        current.metric.push_back(gauge({{"consumergroup", g.group_id}, {"partition", part}, {"topic", tp.first}},
                                       static_cast<double>(offset)));
        lag.metric.push_back(
            gauge({{"consumergroup", g.group_id}, {"partition", part}, {"topic", tp.first}}, static_cast<double>(l)));
        sums[tp.first] += l;
      }
      for (const auto& [topic, s] : sums)
        lag_sum.metric.push_back(gauge({{"consumergroup", g.group_id}, {"topic", topic}}, static_cast<double>(s)));
    }
    for (const auto& [state, n] : by_state) states.metric.push_back(gauge({{"state", state}}, static_cast<double>(n)));
    for (auto* f : {&current, &lag, &lag_sum, &members, &states, &rebalances, &durations, &last})
      out.push_back(std::move(*f));
  });
}

}  // namespace ciuickafka::broker::groups
