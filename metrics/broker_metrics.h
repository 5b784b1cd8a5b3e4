// metrics/broker_metrics.h: the broker's metrics, as handles other modules
// push numbers into (metrics/ includes none of them).
//
// Construct one BrokerMetrics on the broker's Registry at start-up and pass
// it (or the handles it gives out) to the network layer, the handlers and
// the log manager. Names follow the Kafka JMX exporter convention; the
// catalogue is in metrics/README.md.
//
// Hot path: look a handle up once (topic(), partition(), request(),
// request_error(), purgatory_size()): that locks and may allocate. Using a
// handle (Increment/Set/add_*/record) is a relaxed atomic operation with no
// lock. prometheus::Counter and Gauge references stay valid for the
// BrokerMetrics' lifetime; topic and partition handles own their counters
// and stay valid even after remove_topic().
//
// Thread-safety: all members may be called from any thread. Destroy the
// BrokerMetrics before its Registry.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/latency_histogram.h"
#include "metrics/registry.h"
#include "metrics/request_metrics.h"
#include "metrics/topic_metrics.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"

namespace ciuickafka::metrics {

class BrokerMetrics {
 public:
  explicit BrokerMetrics(Registry& registry);
  ~BrokerMetrics();
  BrokerMetrics(const BrokerMetrics&) = delete;
  BrokerMetrics& operator=(const BrokerMetrics&) = delete;

  // --- per topic (kafka_server_brokertopicmetrics_*). Per-partition log
  // figures are a scrape-time collector of the broker (broker/log_metrics.h).
  TopicMetrics topic(std::string_view name) { return topics_.topic(name); }
  TopicMetrics all_topics() const { return topics_.all_topics(); }
  // A deleted topic's series disappear from the exposition.
  void remove_topic(std::string_view name) { topics_.remove_topic(name); }

  // --- per API (kafka_network_requestmetrics_*); `api` is Kafka's API name.
  RequestMetrics request(std::string_view api, int version) { return requests_.request(api, version); }
  prometheus::Counter& request_error(std::string_view api, std::string_view error_name) {
    return requests_.error(api, error_name);
  }

  // --- connections (kafka_server_socketservermetrics_*{listener}); once
  // per connection (looks the listener's series up under a mutex).
  void connection_opened(std::string_view listener);
  // Creates the listener's series at 0 (the server calls it for every
  // listener it binds, so they exist before the first connection).
  void add_listener(std::string_view listener);
  void connection_closed(std::string_view listener);
  // The listener's open-connection gauge (created at 0 when new).
  prometheus::Gauge& connection_count(std::string_view listener);

  // --- log flushes (kafka_log_logflushstats_logflushrateandtimems): one
  // observation per fdatasync round of the group committer.
  LatencyHistogram& log_flush() { return log_flush_; }


  // --- waiting rooms (kafka_server_delayedoperationpurgatory_purgatorysize)
  prometheus::Gauge& produce_purgatory() { return produce_purgatory_; }
  prometheus::Gauge& fetch_purgatory() { return fetch_purgatory_; }
  prometheus::Gauge& purgatory_size(std::string_view operation);

 private:
  void collect(std::vector<prometheus::MetricFamily>& out) const;

  Registry& registry_;
  TopicTable topics_;
  RequestTable requests_;
  prometheus::Family<prometheus::Gauge>& connection_count_family_;
  prometheus::Family<prometheus::Counter>& connections_created_family_;
  prometheus::Family<prometheus::Counter>& connections_closed_family_;
  prometheus::Family<prometheus::Gauge>& purgatory_family_;
  struct ListenerConnections {
    prometheus::Gauge* count;
    prometheus::Counter* created;
    prometheus::Counter* closed;
  };
  ListenerConnections& listener(std::string_view name);  // mu_ held

  std::mutex mu_;
  std::map<std::string, ListenerConnections, std::less<>> listeners_;  // guarded by mu_
  LatencyHistogram log_flush_;
  prometheus::Gauge& produce_purgatory_;
  prometheus::Gauge& fetch_purgatory_;
  std::uint64_t collector_id_ = 0;
};

}  // namespace ciuickafka::metrics
