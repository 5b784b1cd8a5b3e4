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
  if (h == latency_.end()) h = latency_.emplace(std::string(api), std::make_unique<ApiLatency>()).first;
  out.latency = h->second.get();
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
  struct Split {
    const char* name;
    const char* help;
    LatencyHistogram ApiLatency::*field;
  };
  static constexpr Split kSplits[] = {
      {"kafka_network_requestmetrics_totaltimems",
       "Time from reading a request's last byte to handing its response's last byte to the kernel, in "
       "milliseconds (the sum of the five phases; a Fetch's includes its long-poll wait, an acks=-1 Produce's its "
       "fsync or ISR wait)",
       &ApiLatency::total},
      {"kafka_network_requestmetrics_requestqueuetimems",
       "Time from reading a request's last byte to its handler starting, in milliseconds (handlers run on the "
       "network thread that read the request, so this is near zero)",
       &ApiLatency::request_queue},
      {"kafka_network_requestmetrics_localtimems",
       "Time the handler ran on the network thread before returning (or answering, if sooner), in milliseconds",
       &ApiLatency::local},
      {"kafka_network_requestmetrics_remotetimems",
       "Time from the handler returning to its answer, in milliseconds: waiting rooms (acks=-1 fsync or ISR, "
       "Fetch long-poll for min.bytes/max.wait.ms, held JoinGroup/SyncGroup); zero for requests answered at once",
       &ApiLatency::remote},
      {"kafka_network_requestmetrics_responsequeuetimems",
       "Time from the answer to writing its first byte, in milliseconds: the hop back to the connection's thread "
       "and the wait behind earlier responses of the connection (responses go out in request order)",
       &ApiLatency::response_queue},
      {"kafka_network_requestmetrics_responsesendtimems",
       "Time from writing a response's first byte to handing its last to the kernel, in milliseconds (includes "
       "waiting for a full socket buffer to drain)",
       &ApiLatency::response_send},
  };
  std::lock_guard<std::mutex> lock(mu_);
  for (const Split& s : kSplits) {
    prometheus::MetricFamily fam;
    fam.name = s.name;
    fam.help = s.help;
    fam.type = prometheus::MetricType::Histogram;
    for (const auto& [api, h] : latency_) {
      prometheus::ClientMetric m;
      m.label = {{"request", api}};
      m.histogram = ((*h).*s.field).collect();
      fam.metric.push_back(std::move(m));
    }
    out.push_back(std::move(fam));
  }
}

}  // namespace ciuickafka::metrics
