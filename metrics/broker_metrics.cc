// metrics/broker_metrics.cc: registers the fixed families, and one collect
// function for the series kept outside prometheus-cpp (topic table, latency
// histograms, process figures). Everything is unregistered on destruction.
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
                                     "Open client connections", registry)),
      connections_created_family_(build(prometheus::BuildCounter(),
                                        "kafka_server_socketservermetrics_connection_creation_total",
                                        "Client connections accepted", registry)),
      connections_closed_family_(build(prometheus::BuildCounter(),
                                       "kafka_server_socketservermetrics_connection_close_total",
                                       "Client connections closed", registry)),
      partition_count_family_(build(prometheus::BuildGauge(), "kafka_server_replicamanager_partitioncount",
                                    "Partitions hosted by this broker", registry)),
      purgatory_family_(build(prometheus::BuildGauge(), "kafka_server_delayedoperationpurgatory_purgatorysize",
                              "Requests waiting in a purgatory (acks=-1 produce, long-poll fetch)", registry)),
      connection_count_(connection_count_family_.Add({})),
      connections_created_(connections_created_family_.Add({})),
      connections_closed_(connections_closed_family_.Add({})),
      partition_count_(partition_count_family_.Add({})),
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
  prom.Remove(partition_count_family_);
  prom.Remove(purgatory_family_);
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
}

}  // namespace ciuickafka::metrics
