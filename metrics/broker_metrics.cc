// metrics/broker_metrics.cc: registers the fixed families, and one collect
// function for the series kept outside prometheus-cpp (topic table, latency
// histograms, the waiting rooms' operation counts, process figures).
// Everything is unregistered on destruction.
#include "metrics/broker_metrics.h"

#include <string>

#include "metrics/process_metrics.h"
#include "prometheus/registry.h"

namespace ciuickafka::metrics {
namespace {

template <typename Builder>
auto& build(Builder b, const char* name, const char* help, Registry& r) {
  return b.Name(name).Help(help).Register(r.prometheus());
}

}  // namespace

BrokerMetrics::BrokerMetrics(Registry& registry)
    : registry_(registry),
      requests_(registry),
      connection_count_family_(build(prometheus::BuildGauge(), "kafka_server_socketservermetrics_connection_count",
                                     "Open client connections, by listener name", registry)),
      connections_created_family_(build(prometheus::BuildCounter(),
                                        "kafka_server_socketservermetrics_connection_creation_total",
                                        "Client connections accepted, by listener name", registry)),
      connections_closed_family_(build(prometheus::BuildCounter(),
                                       "kafka_server_socketservermetrics_connection_close_total",
                                       "Client connections closed, by listener name", registry)),
      purgatory_family_(build(prometheus::BuildGauge(), "kafka_server_delayedoperationpurgatory_purgatorysize",
                              "Requests waiting in a waiting room, by kind: Produce (acks=-1 produces waiting for "
                              "their fsync or the ISR), Fetch (fetches long-polling for min.bytes or max.wait.ms)",
                              registry)),
      produce_purgatory_(purgatory_family_.Add({{"delayedOperation", "Produce"}})),
      fetch_purgatory_(purgatory_family_.Add({{"delayedOperation", "Fetch"}})) {
  collector_id_ = registry_.add_collector([this](std::vector<prometheus::MetricFamily>& out) { collect(out); });
}

BrokerMetrics::~BrokerMetrics() {
  registry_.remove_collector(collector_id_);  // waits for a scrape in progress
  auto& prom = registry_.prometheus();
  prom.Remove(connection_count_family_);
  prom.Remove(connections_created_family_);
  prom.Remove(connections_closed_family_);
  prom.Remove(purgatory_family_);
}

BrokerMetrics::ListenerConnections& BrokerMetrics::listener(std::string_view name) {
  auto it = listeners_.find(name);
  if (it == listeners_.end()) {
    const prometheus::Labels labels{{"listener", std::string(name)}};
    ListenerConnections c{&connection_count_family_.Add(labels), &connections_created_family_.Add(labels),
                          &connections_closed_family_.Add(labels)};
    it = listeners_.emplace(std::string(name), c).first;
  }
  return it->second;
}

void BrokerMetrics::add_listener(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  listener(name);
}

prometheus::Gauge& BrokerMetrics::connection_count(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  return *listener(name).count;
}

void BrokerMetrics::connection_opened(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  ListenerConnections& c = listener(name);
  c.count->Increment();
  c.created->Increment();
}

void BrokerMetrics::connection_closed(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  ListenerConnections& c = listener(name);
  c.count->Decrement();
  c.closed->Increment();
}

prometheus::Gauge& BrokerMetrics::purgatory_size(std::string_view operation) {
  if (operation == "Produce") return produce_purgatory_;
  if (operation == "Fetch") return fetch_purgatory_;
  return purgatory_family_.Add({{"delayedOperation", std::string(operation)}});
}

void BrokerMetrics::collect(std::vector<prometheus::MetricFamily>& out) const {
  topics_.collect(out);
  requests_.collect(out);
  collect_process(out);

  // Each waiting request is one delayed operation (Kafka counts watch-list
  // entries in purgatorysize and operations here; ours coincide).
  prometheus::MetricFamily ops;
  ops.name = "kafka_server_delayedoperationpurgatory_numdelayedoperations";
  ops.help = "Delayed operations waiting, by kind (Produce: acks=-1 produces; Fetch: long-poll fetches)";
  ops.type = prometheus::MetricType::Gauge;
  for (const auto& [kind, gauge] : {std::pair<const char*, const prometheus::Gauge*>{"Produce", &produce_purgatory_},
                                    {"Fetch", &fetch_purgatory_}}) {
    prometheus::ClientMetric m;
    m.label = {{"delayedOperation", kind}};
    m.gauge.value = gauge->Value();
    ops.metric.push_back(std::move(m));
  }
  out.push_back(std::move(ops));

  prometheus::MetricFamily flush;
  flush.name = "kafka_log_logflushstats_logflushrateandtimems";
  flush.help =
      "Wall time of each group-commit fsync round (the fdatasyncs of every log with acknowledgements waiting, issued "
      "together), in milliseconds; _count is the number of rounds that synced";
  flush.type = prometheus::MetricType::Histogram;
  prometheus::ClientMetric fm;
  fm.histogram = log_flush_.collect();
  flush.metric.push_back(std::move(fm));
  out.push_back(std::move(flush));
}

}  // namespace ciuickafka::metrics
