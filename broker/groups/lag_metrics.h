// broker/groups/lag_metrics.h: consumer-group lag as Prometheus series,
// named as kafka_exporter names them so existing dashboards work:
//   kafka_consumergroup_current_offset{consumergroup,topic,partition}
//   kafka_consumergroup_lag{consumergroup,topic,partition}   HW - committed, >= 0
//   kafka_consumergroup_lag_sum{consumergroup,topic}
//   kafka_consumergroup_members{consumergroup}
//   kafka_coordinator_groups{state}                           groups per state
//   kafka_coordinator_rebalances_total{consumergroup}         completed rebalances
//   kafka_coordinator_rebalance_duration_seconds{consumergroup}  summary: _count, _sum
//   kafka_coordinator_rebalance_last_duration_seconds{consumergroup}
// A rebalance runs from PreparingRebalance until Stable (the leader's
// SyncGroup) or Empty; going back to PreparingRebalance from
// CompletingRebalance continues the same one.
// For training jobs the lag is the "GPU starvation" signal.
//
// The series are computed at scrape time from the coordinator's snapshot
// and the partitions' high watermarks (a collector on the broker's metrics
// registry), so there is nothing to keep in step.
//
// Thread-safety: the collector runs on the scrape thread; snapshot() locks
// each group briefly.
#pragma once

#include <cstdint>

namespace ciuickafka::broker::groups {

class GroupCoordinator;

// Registers the collector; the id removes it (metrics::Registry::remove_collector).
uint64_t register_lag_metrics(GroupCoordinator& coordinator);

}  // namespace ciuickafka::broker::groups
