// broker/txn/txn_metrics.cc: the transaction coordinator's collector (the
// families are listed in metrics/README.md). Read at scrape time: the id
// map under the coordinator's mutex, the counters, and each hosted
// partition's LSO through ProduceService::known_last_stable_offset, which
// loads nothing (a partition whose state is not loaded reports lag 0).
#include <prometheus/metric_family.h>

#include <map>
#include <string>

#include "broker/broker.h"
#include "broker/produce/produce_service.h"
#include "broker/txn/coordinator.h"

namespace ciuickafka::broker::txn {
namespace {

prometheus::MetricFamily family(const char* name, const char* help, prometheus::MetricType type) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  return f;
}

prometheus::ClientMetric value(std::vector<prometheus::ClientMetric::Label> labels, double v, bool counter) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  if (counter) m.counter.value = v;
  else m.gauge.value = v;
  return m;
}

}  // namespace

void TxnCoordinator::register_metrics() {
  metrics_id_ = broker_.metrics_registry().add_collector([this](std::vector<prometheus::MetricFamily>& out) {
    using T = prometheus::MetricType;
    auto states = family("kafka_coordinator_transactions", "Transactional ids this coordinator holds, by state.",
                         T::Gauge);
    std::map<std::string, size_t> by_state;
    for (int s = 0; s <= static_cast<int>(TxnState::kCompleteAbort); ++s)
      by_state[std::string(state_name(static_cast<TxnState>(s)))] = 0;
    size_t pending = 0;  // markers decided (Prepare*) and not written yet
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [id, m] : txns_) {
        if (m->rec.producer_epoch >= 0) ++by_state[std::string(state_name(m->rec.state))];
        if (m->rec.state == TxnState::kPrepareCommit || m->rec.state == TxnState::kPrepareAbort)
          pending += m->markers_started ? m->awaiting_markers.size() : m->rec.partitions.size();
      }
    }
    for (const auto& [name, n] : by_state) states.metric.push_back(value({{"state", name}}, double(n), false));
    out.push_back(std::move(states));

    auto waiting = family("kafka_coordinator_transaction_markers_pending",
                          "COMMIT/ABORT markers decided (PrepareCommit/PrepareAbort) and not written yet.", T::Gauge);
    waiting.metric.push_back(value({}, double(pending), false));
    out.push_back(std::move(waiting));
    auto markers = family("kafka_coordinator_transaction_markers_written_total",
                          "COMMIT/ABORT markers the coordinator wrote to partitions.", T::Counter);
    markers.metric.push_back(value({}, double(markers_written_.load()), true));
    out.push_back(std::move(markers));
    auto ended = family("kafka_coordinator_transactions_completed_total",
                        "Transactions completed (every marker written), by result.", T::Counter);
    ended.metric.push_back(value({{"result", "commit"}}, double(committed_.load()), true));
    ended.metric.push_back(value({{"result", "abort"}}, double(aborted_.load()), true));
    out.push_back(std::move(ended));
    auto timed_out = family("kafka_coordinator_transactions_timed_out_total",
                            "Transactions aborted by the coordinator because they outlived their timeout.",
                            T::Counter);
    timed_out.metric.push_back(value({}, double(timed_out_.load()), true));
    out.push_back(std::move(timed_out));
    auto load = family("kafka_coordinator_transaction_load_seconds",
                       "Duration of the last load of __transaction_state.", T::Gauge);
    load.metric.push_back(value({}, double(load_ms_.load()) / 1000.0, false));
    out.push_back(std::move(load));

    auto lag = family("kafka_cluster_partition_laststableoffsetlag",
                      "High watermark minus last stable offset: records held back from read_committed consumers "
                      "by undecided transactions.",
                      T::Gauge);
    auto& producers = broker_.service<produce::ProduceService>();
    for (const auto& topic : broker_.topics().list()) {
      for (const auto& p : topic->partitions) {
        if (!p) continue;
        const int64_t hw = p->high_watermark();
        const int64_t lso = producers.known_last_stable_offset(*p);
        lag.metric.push_back(
            value({{"topic", topic->name}, {"partition", std::to_string(p->index())}}, double(hw - lso), false));
      }
    }
    out.push_back(std::move(lag));
  });
}

}  // namespace ciuickafka::broker::txn
