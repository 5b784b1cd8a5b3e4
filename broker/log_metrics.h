// broker/log_metrics.h: the broker's scrape-time collector: figures read
// from the logs, the partitions' replica state, the fetch session cache, the
// group committer and the io_uring rings at the moment of the scrape, so
// they are true from the moment a log is opened (a restart, a follower's
// truncation, retention, compaction, DeleteRecords, a deleted topic: there
// is nothing to keep in step). Series (names after Kafka's JMX exporter
// where Kafka has the metric; ciuic_* where it does not):
//
//   kafka_log_log_size{topic,partition}              bytes of the log's segments
//   kafka_log_log_logstartoffset{topic,partition}
//   kafka_log_log_logendoffset{topic,partition}
//   kafka_log_log_numlogsegments{topic,partition}
//   kafka_cluster_partition_underreplicated{topic,partition}   1: led here, ISR < replicas
//   kafka_cluster_partition_insyncreplicascount{topic,partition}  ISR size (leader only, else 0)
//   kafka_cluster_partition_replicascount{topic,partition}
//   kafka_server_replicamanager_partitioncount / _leadercount / _underreplicatedpartitions /
//     _offlinereplicacount
//   kafka_server_fetchsessioncache_numincrementalfetchsessions
//   kafka_server_fetchsessioncache_numincrementalfetchpartitionscached
//   kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total
//   ciuic_log_group_commit_batch_size (summary: _count rounds, _sum requests)
//   ciuic_log_group_commit_syncs_total
//   ciuic_log_cleaner_passes_total
//   ciuic_io_uring_submissions_total / _completions_total / _in_flight / _rings
//
// A scrape walks the topic table (one snapshot per topic) and reads atomics
// and the segment list of every log; it takes no append lock.
//
// Thread-safety: the collector runs on the scrape thread; everything it
// reads is safe to read from any thread. It never calls Broker::service()
// (a service constructor may register a collector while holding the
// service mutex: lock-order inversion with a scrape).
#pragma once

#include <cstdint>
#include <vector>

#include "prometheus/metric_family.h"

namespace ciuickafka::broker {

class Broker;
namespace fetch {
class FetchSessionCache;
}

// Appends the families above (what the registered collector does).
void collect_log_metrics(Broker& broker, const fetch::FetchSessionCache& fetch_sessions,
                         std::vector<prometheus::MetricFamily>& out);

// Registers collect_log_metrics on the broker's registry and feeds the
// flush-latency histogram from the group committer; the id removes the
// collector (metrics::Registry::remove_collector).
uint64_t register_log_metrics(Broker& broker);

}  // namespace ciuickafka::broker
