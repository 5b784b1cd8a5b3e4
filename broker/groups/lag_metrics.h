// broker/groups/lag_metrics.h: consumer-group lag as Prometheus series,
// named as kafka_exporter names them so existing dashboards work:
//   kafka_consumergroup_current_offset{consumergroup,topic,partition}   committed partitions only
//   kafka_consumergroup_lag{consumergroup,topic,partition,committed}
//   kafka_consumergroup_lag_sum{consumergroup,topic}
//   kafka_consumergroup_members{consumergroup}
//   kafka_coordinator_groups{state}                           groups per state
//   kafka_coordinator_rebalances_total{consumergroup}         completed rebalances
//   kafka_coordinator_rebalance_duration_seconds{consumergroup}  summary: _count, _sum
//   kafka_coordinator_rebalance_last_duration_seconds{consumergroup}
// and Kafka's GroupMetadataManager gauges:
//   kafka_coordinator_group_groupmetadatamanager_numgroups    groups held
//   kafka_coordinator_group_groupmetadatamanager_numoffsets   committed offsets held
//
// Lag covers every partition of every topic the group consumes: the topics
// it has committed offsets for, and the topics its members subscribe to
// (the consumer protocol's subscription in the members' metadata, as
// DescribeGroups shows it while the group is Stable; the last subscription
// seen is kept through a rebalance and dropped when the group empties). A
// partition with a commit lags by HW - committed (committed="true"); one
// without counts as unread from the log start, HW - log start offset
// (committed="false"). Partitions this broker does not host are left out.
//
// A rebalance runs from PreparingRebalance until Stable (the leader's
// SyncGroup) or Empty; going back to PreparingRebalance from
// CompletingRebalance continues the same one.
// For training jobs the lag is the "GPU starvation" signal.
//
// The series are computed at scrape time from the coordinator's snapshot,
// describe_group and the partitions' offsets (a collector on the broker's
// metrics registry), so there is nothing to keep in step.
//
// Thread-safety: the collector runs on the scrape thread; snapshot() and
// describe_group() lock each group briefly; the kept subscriptions are
// under the collector's own mutex.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "protocol/wire/types.h"

namespace ciuickafka::broker::groups {

class GroupCoordinator;

// Registers the collector; the id removes it (metrics::Registry::remove_collector).
uint64_t register_lag_metrics(GroupCoordinator& coordinator);

// The topics of a consumer-protocol subscription (JoinGroup metadata);
// adds nothing for bytes that do not decode.
void add_subscribed_topics(const protocol::Bytes& metadata, std::set<std::string>& out);

}  // namespace ciuickafka::broker::groups
