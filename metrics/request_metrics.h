// metrics/request_metrics.h: requests, errors and latency per Kafka API.
//
// The API name ("Produce", "Fetch", ...) and error name
// ("NOT_LEADER_OR_FOLLOWER") are strings from the caller: metrics/ does not
// know the protocol. Series:
//   kafka_network_requestmetrics_requests_total{request,version}  counter
//   kafka_network_requestmetrics_errors_total{request,error}       counter
//   kafka_network_requestmetrics_totaltimems{request}              histogram (ms)
//
// Thread-safety: creating a handle locks (and allocates on first use of a
// label set); RequestMetrics::record() and Counter::Increment() are
// lock-free. Handles stay valid for the RequestTable's lifetime.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "metrics/latency_histogram.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/metric_family.h"

namespace ciuickafka::metrics {

class Registry;

// One API at one version: its request counter and the API's latency histogram.
// Only handles from RequestTable::request() (or BrokerMetrics::request()) may
// be used; a default-constructed one has null pointers.
struct RequestMetrics {
  prometheus::Counter* requests = nullptr;
  LatencyHistogram* total_time = nullptr;

  // Counts one request that took `elapsed` from receipt to response sent.
  void record(std::chrono::nanoseconds elapsed) const {
    requests->Increment();
    total_time->observe(elapsed);
  }
};

class RequestTable {
 public:
  explicit RequestTable(Registry& registry);
  ~RequestTable();
  RequestTable(const RequestTable&) = delete;
  RequestTable& operator=(const RequestTable&) = delete;

  RequestMetrics request(std::string_view api, int version);
  prometheus::Counter& error(std::string_view api, std::string_view error);

  // Appends the latency histogram family.
  void collect(std::vector<prometheus::MetricFamily>& out) const;

 private:
  Registry& registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Counter>& errors_;
  mutable std::mutex mu_;
  // Keyed by (api, version) / (api, error); guarded by mu_.
  std::map<std::pair<std::string, int>, prometheus::Counter*, std::less<>> request_counters_;
  std::map<std::pair<std::string, std::string>, prometheus::Counter*, std::less<>> error_counters_;
  std::map<std::string, std::unique_ptr<LatencyHistogram>, std::less<>> latency_;
};

}  // namespace ciuickafka::metrics
