// metrics/request_metrics.cc: the request table. Counter families live in the
// prometheus registry (removed again on destruction); the lock-free latency
// histograms are exposed by the owner's collect function.
#include "metrics/request_metrics.h"

#include "metrics/registry.h"
#include "prometheus/registry.h"

namespace ciuickafka::metrics {

RequestTable::RequestTable(Registry& registry)
    : registry_(registry),
      requests_(prometheus::BuildCounter()
                    .Name("kafka_network_requestmetrics_requests_total")
                    .Help("Requests received, by API and version")
                    .Register(registry.prometheus())),
      errors_(prometheus::BuildCounter()
                  .Name("kafka_network_requestmetrics_errors_total")
                  .Help("Error codes returned, by API and Kafka error name")
                  .Register(registry.prometheus())) {}

RequestTable::~RequestTable() {
  registry_.prometheus().Remove(requests_);
  registry_.prometheus().Remove(errors_);
}

RequestMetrics RequestTable::request(std::string_view api, int version) {
  std::lock_guard<std::mutex> lock(mu_);
  RequestMetrics out;
  std::pair<std::string, int> key(api, version);
  auto it = request_counters_.find(key);
  if (it == request_counters_.end()) {
    auto* c = &requests_.Add({{"request", std::string(api)}, {"version", std::to_string(version)}});
    it = request_counters_.emplace(std::move(key), c).first;
  }
  out.requests = it->second;
  auto h = latency_.find(api);
  if (h == latency_.end()) h = latency_.emplace(std::string(api), std::make_unique<LatencyHistogram>()).first;
  out.total_time = h->second.get();
  return out;
}

prometheus::Counter& RequestTable::error(std::string_view api, std::string_view error) {
  std::lock_guard<std::mutex> lock(mu_);
  std::pair<std::string, std::string> key(api, error);
  auto it = error_counters_.find(key);
  if (it == error_counters_.end()) {
    auto* c = &errors_.Add({{"request", key.first}, {"error", key.second}});
    it = error_counters_.emplace(std::move(key), c).first;
  }
  return *it->second;
}

void RequestTable::collect(std::vector<prometheus::MetricFamily>& out) const {
  prometheus::MetricFamily fam;
  fam.name = "kafka_network_requestmetrics_totaltimems";
  fam.help = "Time from receiving a request to sending its response, in milliseconds";
  fam.type = prometheus::MetricType::Histogram;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [api, h] : latency_) {
    prometheus::ClientMetric m;
    m.label = {{"request", api}};
    m.histogram = h->collect();
    fam.metric.push_back(std::move(m));
  }
  out.push_back(std::move(fam));
}

}  // namespace ciuickafka::metrics
