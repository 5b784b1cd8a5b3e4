// metrics/topic_metrics.cc: the topic table: handle creation under a mutex
// and the families a scrape sees (the aggregate series without labels first,
// then one series per topic in name order; partitions by topic, partition).
#include "metrics/topic_metrics.h"

#include "prometheus/client_metric.h"
#include "prometheus/metric_type.h"

namespace ciuickafka::metrics {
namespace {

struct CounterFamily {
  const char* name;
  const char* help;
  std::atomic<std::uint64_t> TopicCounters::*field;
};

constexpr CounterFamily kCounterFamilies[] = {
    {"kafka_server_brokertopicmetrics_bytesin_total", "Bytes of record batches appended from producers",
     &TopicCounters::bytes_in},
    {"kafka_server_brokertopicmetrics_bytesout_total", "Bytes of record batches sent to fetchers",
     &TopicCounters::bytes_out},
    {"kafka_server_brokertopicmetrics_messagesin_total", "Records appended from producers",
     &TopicCounters::messages_in},
    {"kafka_server_brokertopicmetrics_failedproducerequests_total",
     "Produce requests (per topic: topic parts) that failed", &TopicCounters::failed_produce},
    {"kafka_server_brokertopicmetrics_failedfetchrequests_total",
     "Fetch requests (per topic: topic parts) that failed", &TopicCounters::failed_fetch},
};

prometheus::ClientMetric counter_metric(double value, std::vector<prometheus::ClientMetric::Label> labels) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.counter.value = value;
  return m;
}

prometheus::ClientMetric gauge_metric(double value, std::vector<prometheus::ClientMetric::Label> labels) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  return m;
}

}  // namespace

TopicTable::TopicTable() : all_(std::make_shared<TopicCounters>()) {}

TopicMetrics TopicTable::topic(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(name);
  if (it == topics_.end()) it = topics_.emplace(std::string(name), Entry{}).first;
  if (!it->second.counters) it->second.counters = std::make_shared<TopicCounters>();
  return TopicMetrics(it->second.counters, all_);
}

PartitionMetrics TopicTable::partition(std::string_view topic, std::int32_t partition) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) it = topics_.emplace(std::string(topic), Entry{}).first;
  auto& slot = it->second.partitions[partition];
  if (!slot) slot = std::make_shared<PartitionGauges>();
  return PartitionMetrics(slot);
}

void TopicTable::remove_topic(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(name);
  if (it != topics_.end()) topics_.erase(it);
}

void TopicTable::remove_partition(std::string_view topic, std::int32_t partition) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) return;
  it->second.partitions.erase(partition);
  if (!it->second.counters && it->second.partitions.empty()) topics_.erase(it);
}

void TopicTable::collect(std::vector<prometheus::MetricFamily>& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const CounterFamily& f : kCounterFamilies) {
    prometheus::MetricFamily fam;
    fam.name = f.name;
    fam.help = f.help;
    fam.type = prometheus::MetricType::Counter;
    fam.metric.push_back(counter_metric(static_cast<double>(((*all_).*f.field).load()), {}));
    for (const auto& [name, entry] : topics_) {
      if (!entry.counters) continue;
      double v = static_cast<double>(((*entry.counters).*f.field).load(std::memory_order_relaxed));
      fam.metric.push_back(counter_metric(v, {{"topic", name}}));
    }
    out.push_back(std::move(fam));
  }

  prometheus::MetricFamily size;
  size.name = "kafka_log_log_size";
  size.help = "Bytes of the partition's log on disk";
  size.type = prometheus::MetricType::Gauge;
  prometheus::MetricFamily leo;
  leo.name = "kafka_log_log_logendoffset";
  leo.help = "Offset the partition's next appended record gets";
  leo.type = prometheus::MetricType::Gauge;
  for (const auto& [name, entry] : topics_) {
    for (const auto& [p, g] : entry.partitions) {
      std::vector<prometheus::ClientMetric::Label> labels = {{"partition", std::to_string(p)}, {"topic", name}};
      size.metric.push_back(gauge_metric(static_cast<double>(g->size_bytes.load()), labels));
      leo.metric.push_back(gauge_metric(static_cast<double>(g->log_end_offset.load()), std::move(labels)));
    }
  }
  out.push_back(std::move(leo));
  out.push_back(std::move(size));
}

}  // namespace ciuickafka::metrics
