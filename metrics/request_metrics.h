// metrics/request_metrics.h: requests, errors and latency per Kafka API.
//
// The API name ("Produce", "Fetch", ...) and error name
// ("NOT_LEADER_OR_FOLLOWER") are strings from the caller: metrics/ does not
// know the protocol. Series:
//   kafka_network_requestmetrics_requests_total{request,version}  counter
//   kafka_network_requestmetrics_errors_total{request,error}       counter
//   kafka_network_requestmetrics_totaltimems{request}              histogram (ms)
// and Kafka's split of the total, each a histogram (ms) per API:
//   ..._requestqueuetimems   frame read -> handler started
//   ..._localtimems          handler started -> it returned (or answered, if sooner)
//   ..._remotetimems         handler returned -> answered (waiting rooms: acks=-1,
//                            long-poll fetch, held JoinGroup/SyncGroup)
//   ..._responsequeuetimems  answered -> its first byte written (the hop back to
//                            the connection's thread, in-order wait behind earlier answers)
//   ..._responsesendtimems   first byte -> last byte handed to the kernel
// The five add up to the total.
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

// One request's time, split as Kafka splits it (see the header comment).
struct RequestTimes {
  std::chrono::nanoseconds request_queue{0};
  std::chrono::nanoseconds local{0};
  std::chrono::nanoseconds remote{0};
  std::chrono::nanoseconds response_queue{0};
  std::chrono::nanoseconds response_send{0};
  std::chrono::nanoseconds total() const { return request_queue + local + remote + response_queue + response_send; }
};

// The histograms of one API.
struct ApiLatency {
  LatencyHistogram total;
  LatencyHistogram request_queue;
  LatencyHistogram local;
  LatencyHistogram remote;
  LatencyHistogram response_queue;
  LatencyHistogram response_send;
};

// One API at one version: its request counter and the API's latency
// histograms. Only handles from RequestTable::request() (or
// BrokerMetrics::request()) may be used; a default-constructed one has null
// pointers (valid() is false).
struct RequestMetrics {
  prometheus::Counter* requests = nullptr;
  ApiLatency* latency = nullptr;

  bool valid() const { return requests != nullptr; }
  // Counts one request that took `elapsed` from receipt to response sent
  // (the total only; the split histograms are not touched).
  void record(std::chrono::nanoseconds elapsed) const {
    requests->Increment();
    latency->total.observe(elapsed);
  }
  // Counts one request with its time split; the total is their sum.
  void record(const RequestTimes& t) const {
    requests->Increment();
    observe(t);
  }
  // The histograms alone (the broker counts a request when it is answered
  // and observes its times once the response is written).
  void observe(const RequestTimes& t) const {
    latency->total.observe(t.total());
    latency->request_queue.observe(t.request_queue);
    latency->local.observe(t.local);
    latency->remote.observe(t.remote);
    latency->response_queue.observe(t.response_queue);
    latency->response_send.observe(t.response_send);
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

  // Appends the six latency histogram families.
  void collect(std::vector<prometheus::MetricFamily>& out) const;

 private:
  Registry& registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Counter>& errors_;
  mutable std::mutex mu_;
  // Keyed by (api, version) / (api, error); guarded by mu_.
  std::map<std::pair<std::string, int>, prometheus::Counter*, std::less<>> request_counters_;
  std::map<std::pair<std::string, std::string>, prometheus::Counter*, std::less<>> error_counters_;
  std::map<std::string, std::unique_ptr<ApiLatency>, std::less<>> latency_;
};

}  // namespace ciuickafka::metrics
