// metrics/topic_metrics.h: per-topic and per-partition series, and the table
// that hands out their handles and exposes them.
//
// Kafka's BrokerTopicMetrics (bytes in/out, messages in, failed produce and
// fetch requests) exist per topic and once for all topics; a TopicMetrics
// handle adds to both. Per partition: log size and log end offset gauges.
//
// Handles own their counters (shared_ptr): removing a topic drops its series
// from the exposition at once, and a handle still cached somewhere stays
// valid, its later updates simply no longer shown. A topic created again
// under the same name starts from zero with fresh handles.
//
// Thread-safety: handle updates are relaxed atomic adds/stores, lock-free.
// TopicTable's members lock a mutex (handle creation, removal, collection);
// callers cache handles rather than looking them up per request.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "prometheus/metric_family.h"

namespace ciuickafka::metrics {

struct TopicCounters {
  std::atomic<std::uint64_t> bytes_in{0};
  std::atomic<std::uint64_t> bytes_out{0};
  std::atomic<std::uint64_t> messages_in{0};
  std::atomic<std::uint64_t> failed_produce{0};
  std::atomic<std::uint64_t> failed_fetch{0};
};

// A topic's counters plus the all-topics aggregate. Copyable and cheap to
// keep; a default-constructed handle counts nothing.
class TopicMetrics {
 public:
  TopicMetrics() = default;
  TopicMetrics(std::shared_ptr<TopicCounters> topic, std::shared_ptr<TopicCounters> all)
      : topic_(std::move(topic)), all_(std::move(all)) {}

  void add_bytes_in(std::uint64_t n) const { add(&TopicCounters::bytes_in, n); }
  void add_bytes_out(std::uint64_t n) const { add(&TopicCounters::bytes_out, n); }
  void add_messages_in(std::uint64_t n) const { add(&TopicCounters::messages_in, n); }
  void failed_produce() const { add(&TopicCounters::failed_produce, 1); }
  void failed_fetch() const { add(&TopicCounters::failed_fetch, 1); }

  // The topic's own counters (null for a default handle); for tests.
  const TopicCounters* counters() const { return topic_.get(); }

 private:
  void add(std::atomic<std::uint64_t> TopicCounters::*field, std::uint64_t n) const {
    if (topic_) (topic_.get()->*field).fetch_add(n, std::memory_order_relaxed);
    if (all_) (all_.get()->*field).fetch_add(n, std::memory_order_relaxed);
  }

  std::shared_ptr<TopicCounters> topic_;
  std::shared_ptr<TopicCounters> all_;
};

struct PartitionGauges {
  std::atomic<std::int64_t> size_bytes{0};
  std::atomic<std::int64_t> log_end_offset{0};
};

// One partition's gauges. Copyable; a default-constructed handle is inert.
class PartitionMetrics {
 public:
  PartitionMetrics() = default;
  explicit PartitionMetrics(std::shared_ptr<PartitionGauges> g) : g_(std::move(g)) {}

  void set_size(std::int64_t bytes) const {
    if (g_) g_->size_bytes.store(bytes, std::memory_order_relaxed);
  }
  void set_log_end_offset(std::int64_t offset) const {
    if (g_) g_->log_end_offset.store(offset, std::memory_order_relaxed);
  }
  const PartitionGauges* gauges() const { return g_.get(); }

 private:
  std::shared_ptr<PartitionGauges> g_;
};

class TopicTable {
 public:
  TopicTable();

  // The same counters for the same name until the topic is removed.
  TopicMetrics topic(std::string_view name);
  // The aggregate alone (no topic), e.g. for a request naming no topic.
  TopicMetrics all_topics() const { return TopicMetrics(nullptr, all_); }
  PartitionMetrics partition(std::string_view topic, std::int32_t partition);

  // Drops the topic's counters and every partition gauge of it.
  void remove_topic(std::string_view name);
  void remove_partition(std::string_view topic, std::int32_t partition);

  // Appends the seven families (five counters, two gauges).
  void collect(std::vector<prometheus::MetricFamily>& out) const;

 private:
  struct Entry {
    std::shared_ptr<TopicCounters> counters;  // null until topic() is called
    std::map<std::int32_t, std::shared_ptr<PartitionGauges>> partitions;
  };

  const std::shared_ptr<TopicCounters> all_;
  mutable std::mutex mu_;
  std::map<std::string, Entry, std::less<>> topics_;  // guarded by mu_
};

}  // namespace ciuickafka::metrics
