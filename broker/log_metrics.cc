// broker/log_metrics.cc: the scrape-time collector (see the header).
#include "broker/log_metrics.h"

#include <algorithm>
#include <string>
#include <utility>

#include "broker/broker.h"
#include "broker/fetch/session_cache.h"
#include "storage/io/ring.h"

namespace ciuickafka::broker {
namespace {

using Labels = std::vector<prometheus::ClientMetric::Label>;

prometheus::MetricFamily family(const char* name, const char* help,
                                prometheus::MetricType type = prometheus::MetricType::Gauge) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  return f;
}

void add(prometheus::MetricFamily& f, Labels labels, double v) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  if (f.type == prometheus::MetricType::Counter) {
    m.counter.value = v;
  } else {
    m.gauge.value = v;
  }
  f.metric.push_back(std::move(m));
}

}  // namespace

void collect_log_metrics(Broker& broker, const fetch::FetchSessionCache& fetch_sessions,
                         std::vector<prometheus::MetricFamily>& out) {
  auto size = family("kafka_log_log_size", "Bytes of the partition's log: the sum of its segments' published sizes.");
  auto start = family("kafka_log_log_logstartoffset",
                      "The partition's log start offset: the first offset a fetch may read (moved by retention, "
                      "DeleteRecords and follower truncation).");
  auto end = family("kafka_log_log_logendoffset",
                    "The partition's log end offset (LEO): the offset its next appended record gets.");
  auto segments = family("kafka_log_log_numlogsegments", "Segments of the partition's log, the active one included.");
  auto under = family("kafka_cluster_partition_underreplicated",
                      "1 when this broker leads the partition and its ISR is smaller than its replica set, else 0.");
  auto isr = family("kafka_cluster_partition_insyncreplicascount",
                    "Size of the partition's ISR as its leader here knows it; 0 where this broker does not lead it.");
  auto replicas = family("kafka_cluster_partition_replicascount",
                         "Replicas assigned to the partition (1 on a single node); during a reassignment the "
                         "original replicas only.");
  auto under_min = family("kafka_cluster_partition_underminisr",
                          "1 when this broker leads the partition and its ISR is smaller than min(min.insync.replicas, "
                          "replicas): acks=all produce is refused and the HW does not move.");
  auto at_min = family("kafka_cluster_partition_atminisr",
                       "1 when this broker leads the partition and its ISR is exactly min(min.insync.replicas, "
                       "replicas): one more replica lost and acks=all stops.");
  int64_t hosted = 0, leaders = 0, under_count = 0, offline = 0, reassigning = 0, under_min_count = 0,
          at_min_count = 0;

  for (const auto& topic : broker.topics().list()) {
    const int32_t min_isr = broker.topics().min_insync_replicas(*topic);
    for (const auto& p : topic->partitions) {
      if (!p) continue;  // not hosted here (cluster mode)
      ++hosted;
      const storage::Log& log = p->log();
      const Labels labels{{"partition", std::to_string(p->index())}, {"topic", topic->name}};
      add(size, labels, static_cast<double>(log.size_bytes()));
      add(start, labels, static_cast<double>(log.log_start_offset()));
      add(end, labels, static_cast<double>(log.log_end_offset()));
      add(segments, labels, static_cast<double>(log.segment_count()));

      const auto role = p->role_state();
      // Single node: no LeaderAndIsr ever sets the sets; the replica is this broker alone.
      // During a reassignment the replication factor is that of the original
      // replicas, RS - AR (Kafka's OngoingReassignmentState), so a move is not
      // under-replicated while the new replicas catch up.
      const size_t n_adding = role ? role->adding_replicas.size() : 0;
      const size_t n_replicas =
          role && role->replicas.size() > n_adding ? role->replicas.size() - n_adding : 1;
      const size_t n_isr = role && !role->isr.empty() ? role->isr.size() : 1;
      const bool leads = p->is_leader();
      const bool ur = leads && n_isr < n_replicas;
      if (leads && role && (n_adding > 0 || !role->removing_replicas.empty())) ++reassigning;
      // Kafka's Partition.isUnderMinIsr / isAtMinIsr: the effective min ISR
      // is min(min.insync.replicas, replication factor).
      const size_t effective_min = std::min(static_cast<size_t>(min_isr), n_replicas);
      const bool umin = leads && n_isr < effective_min;
      const bool amin = leads && n_isr == effective_min;
      if (umin) ++under_min_count;
      if (amin) ++at_min_count;
      add(under_min, labels, umin ? 1 : 0);
      add(at_min, labels, amin ? 1 : 0);
      if (leads) ++leaders;
      if (ur) ++under_count;
      if (p->role() == ReplicaRole::kOffline) ++offline;
      add(under, labels, ur ? 1 : 0);
      add(isr, labels, leads ? static_cast<double>(n_isr) : 0);
      add(replicas, labels, static_cast<double>(n_replicas));
    }
  }
  for (auto* f : {&size, &start, &end, &segments, &under, &isr, &replicas, &under_min, &at_min})
    out.push_back(std::move(*f));

  auto partition_count = family("kafka_server_replicamanager_partitioncount",
                                "Partitions hosted by this broker (led, followed or offline).");
  add(partition_count, {}, static_cast<double>(hosted));
  out.push_back(std::move(partition_count));
  auto leader_count = family("kafka_server_replicamanager_leadercount", "Partitions this broker leads.");
  add(leader_count, {}, static_cast<double>(leaders));
  out.push_back(std::move(leader_count));
  auto urp = family("kafka_server_replicamanager_underreplicatedpartitions",
                    "Partitions this broker leads whose ISR is smaller than their replica set.");
  add(urp, {}, static_cast<double>(under_count));
  out.push_back(std::move(urp));
  auto umin_count = family("kafka_server_replicamanager_underminisrpartitioncount",
                           "Partitions this broker leads whose ISR is below min(min.insync.replicas, replicas).");
  add(umin_count, {}, static_cast<double>(under_min_count));
  out.push_back(std::move(umin_count));
  auto amin_count = family("kafka_server_replicamanager_atminisrpartitioncount",
                           "Partitions this broker leads whose ISR is exactly min(min.insync.replicas, replicas).");
  add(amin_count, {}, static_cast<double>(at_min_count));
  out.push_back(std::move(amin_count));
  auto moving = family("kafka_server_replicamanager_reassigningpartitions",
                       "Partitions this broker leads that are being reassigned (adding or removing replicas).");
  add(moving, {}, static_cast<double>(reassigning));
  out.push_back(std::move(moving));
  auto off = family("kafka_server_replicamanager_offlinereplicacount",
                    "Partitions hosted here that are neither led nor followed (cluster mode: no LeaderAndIsr yet, or "
                    "stopped).");
  add(off, {}, static_cast<double>(offline));
  out.push_back(std::move(off));

  // Fetch sessions (KIP-227).
  const fetch::FetchSessionCache::Stats fs = fetch_sessions.stats();
  auto sessions = family("kafka_server_fetchsessioncache_numincrementalfetchsessions",
                         "Fetch sessions held in the fetch session cache.");
  add(sessions, {}, static_cast<double>(fs.sessions));
  out.push_back(std::move(sessions));
  auto cached = family("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached",
                       "Partitions held by all fetch sessions together.");
  add(cached, {}, static_cast<double>(fs.partitions));
  out.push_back(std::move(cached));
  auto evicted = family("kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total",
                        "Fetch sessions evicted (least recently used) to make room for a new one.",
                        prometheus::MetricType::Counter);
  add(evicted, {}, static_cast<double>(fs.evictions));
  out.push_back(std::move(evicted));

  // Group commit (storage/group_commit.h).
  const storage::GroupCommitter::Stats gc = broker.logs().group_commit_stats();
  auto batch = family("ciuic_log_group_commit_batch_size",
                      "Group commit: _count is the rounds the flusher took, _sum the acks=-1 waits (sync requests) "
                      "they answered; _sum/_count is the mean batch size.",
                      prometheus::MetricType::Summary);
  prometheus::ClientMetric bm;
  bm.summary.sample_count = gc.rounds;
  bm.summary.sample_sum = static_cast<double>(gc.requests);
  batch.metric.push_back(std::move(bm));
  out.push_back(std::move(batch));
  auto syncs = family("ciuic_log_group_commit_syncs_total",
                      "fdatasyncs the group committer issued (one per log per round that had unsynced records).",
                      prometheus::MetricType::Counter);
  add(syncs, {}, static_cast<double>(gc.syncs));
  out.push_back(std::move(syncs));

  // The log cleaner (storage/log_manager.h): passes over every compacted log.
  const storage::CleanerManagerStats cs = broker.logs().cleaner_stats();
  auto passes = family("ciuic_log_cleaner_passes_total",
                       "Cleaner passes completed, each over every log whose cleanup.policy includes compact.",
                       prometheus::MetricType::Counter);
  add(passes, {}, static_cast<double>(cs.passes));
  out.push_back(std::move(passes));
  auto aborted = family("ciuic_log_cleaner_aborted_batches_removed_total",
                        "Batches of aborted transactions the cleaner removed from compacted logs.",
                        prometheus::MetricType::Counter);
  add(aborted, {}, static_cast<double>(cs.aborted_batches_removed));
  out.push_back(std::move(aborted));

  // io_uring, over every ring of the process (network threads' rings, the flusher's).
  const storage::io::Ring::ProcessStats rs = storage::io::Ring::process_stats();
  auto submitted = family("ciuic_io_uring_submissions_total",
                          "Submission queue entries handed to the kernel (writes, reads, fdatasyncs) by all rings.",
                          prometheus::MetricType::Counter);
  add(submitted, {}, static_cast<double>(rs.submitted));
  out.push_back(std::move(submitted));
  auto completed = family("ciuic_io_uring_completions_total", "Completion queue entries reaped by all rings.",
                          prometheus::MetricType::Counter);
  add(completed, {}, static_cast<double>(rs.completed));
  out.push_back(std::move(completed));
  auto depth = family("ciuic_io_uring_in_flight",
                      "io_uring queue depth: operations queued or submitted whose completion has not been handled, "
                      "over all rings.");
  add(depth, {}, static_cast<double>(rs.in_flight));
  out.push_back(std::move(depth));
  auto rings = family("ciuic_io_uring_rings", "io_uring instances alive (0 where the kernel refuses io_uring).");
  add(rings, {}, static_cast<double>(rs.rings));
  out.push_back(std::move(rings));
}

uint64_t register_log_metrics(Broker& broker) {
  metrics::LatencyHistogram* flush = &broker.metrics().log_flush();
  broker.logs().set_group_commit_observer(
      [flush](const storage::GroupCommitter::Round& r) { flush->observe(r.sync_time); });
  // Looked up now, not at scrape time: service<>() constructs services under
  // the broker's service mutex, and some constructors register collectors,
  // so a scrape (which holds the registry's collector mutex) must not take it.
  const fetch::FetchSessionCache* sessions = &broker.service<fetch::FetchSessionCache>();
  return broker.metrics_registry().add_collector([&broker, sessions](std::vector<prometheus::MetricFamily>& out) {
    collect_log_metrics(broker, *sessions, out);
  });
}

}  // namespace ciuickafka::broker
