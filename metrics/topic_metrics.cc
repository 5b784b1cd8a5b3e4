// metrics/topic_metrics.cc: the topic table: handle creation under a mutex
// and the families a scrape sees (the aggregate series without labels first,
// then one series per topic in name order).
#include "metrics/topic_metrics.h"

#include "prometheus/client_metric.h"
#include "prometheus/metric_type.h"

namespace ciuickafka::metrics {
namespace {

struct CounterFamily {
  const char* name;
  const char* help;
  std::atomic<std::uint64_t> TopicCounters::*field;
  bool all_topics_only = false;
};

constexpr CounterFamily kCounterFamilies[] = {
    {"kafka_server_brokertopicmetrics_bytesin_total", "Bytes of record batches appended from producers",
     &TopicCounters::bytes_in},
    {"kafka_server_brokertopicmetrics_bytesout_total", "Bytes of record batches sent to consumers",
     &TopicCounters::bytes_out},
    {"kafka_server_brokertopicmetrics_messagesin_total", "Records appended from producers",
     &TopicCounters::messages_in},
    {"kafka_server_brokertopicmetrics_failedproducerequests_total",
     "Produce requests (per topic: topic parts) that failed", &TopicCounters::failed_produce},
    {"kafka_server_brokertopicmetrics_failedfetchrequests_total",
     "Fetch requests (per topic: topic parts) that failed", &TopicCounters::failed_fetch},
    {"kafka_server_brokertopicmetrics_totalproducerequests_total",
     "Topic-partitions named in Produce requests (Kafka's totalProduceRequestRate counts one per partition part), "
     "failed ones included",
     &TopicCounters::total_produce},
    {"kafka_server_brokertopicmetrics_totalfetchrequests_total",
     "Topic-partitions answered in Fetch requests (one per partition part, as Kafka counts), consumer and "
     "follower fetches, failed ones included",
     &TopicCounters::total_fetch},
    {"kafka_server_brokertopicmetrics_replicationbytesout_total", "Bytes of record batches sent to follower replicas",
     &TopicCounters::replication_bytes_out, true},
    {"kafka_server_brokertopicmetrics_replicationbytesin_total",
     "Bytes of record batches appended as a follower replica", &TopicCounters::replication_bytes_in, true},
};

prometheus::ClientMetric counter_metric(double value, std::vector<prometheus::ClientMetric::Label> labels) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.counter.value = value;
  return m;
}

}  // namespace

TopicTable::TopicTable() : all_(std::make_shared<TopicCounters>()) {}

TopicMetrics TopicTable::topic(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(name);
  if (it == topics_.end()) it = topics_.emplace(std::string(name), std::make_shared<TopicCounters>()).first;
  return TopicMetrics(it->second, all_);
}

void TopicTable::remove_topic(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(name);
  if (it == topics_.end()) return;
  it->second->removed.store(true, std::memory_order_relaxed);
  topics_.erase(it);
}

void TopicTable::collect(std::vector<prometheus::MetricFamily>& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const CounterFamily& f : kCounterFamilies) {
    prometheus::MetricFamily fam;
    fam.name = f.name;
    fam.help = f.help;
    fam.type = prometheus::MetricType::Counter;
    fam.metric.push_back(counter_metric(static_cast<double>(((*all_).*f.field).load()), {}));
    if (f.all_topics_only) {
      out.push_back(std::move(fam));
      continue;
    }
    for (const auto& [name, counters] : topics_) {
      double v = static_cast<double>(((*counters).*f.field).load(std::memory_order_relaxed));
      fam.metric.push_back(counter_metric(v, {{"topic", name}}));
    }
    out.push_back(std::move(fam));
  }
}

}  // namespace ciuickafka::metrics
