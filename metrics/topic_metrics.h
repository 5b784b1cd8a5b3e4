// metrics/topic_metrics.h: per-topic and per-partition series, and the table
// that hands out their handles and exposes them.
//
// Kafka's BrokerTopicMetrics (bytes in/out, messages in, produce and fetch
// requests, failed produce and fetch requests) exist per topic and once for
// all topics; a TopicMetrics handle adds to both. Replication bytes in/out
// exist for all topics only, as in Kafka. Per-partition log figures
// (size, offsets, segments) are not kept here: the broker reads them from
// the logs at scrape time (broker/log_metrics.h), so they are true from the
// moment a log is opened.
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
  std::atomic<std::uint64_t> total_produce{0};
  std::atomic<std::uint64_t> total_fetch{0};
  // Replication traffic, all topics only (Kafka's ReplicationBytesIn/OutPerSec
  // have no topic tag): fetched by followers here, appended here as follower.
  std::atomic<std::uint64_t> replication_bytes_out{0};
  std::atomic<std::uint64_t> replication_bytes_in{0};
  // Set by TopicTable::remove_topic: a cache holding this handle should look
  // the topic up again (a topic created again has fresh counters).
  std::atomic<bool> removed{false};
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
  // Follower fetches: counted for all topics only, never in bytes out (as Kafka).
  void add_replication_bytes_out(std::uint64_t n) const { add_all(&TopicCounters::replication_bytes_out, n); }
  void add_replication_bytes_in(std::uint64_t n) const { add_all(&TopicCounters::replication_bytes_in, n); }
  void failed_produce() const { add(&TopicCounters::failed_produce, 1); }
  void failed_fetch() const { add(&TopicCounters::failed_fetch, 1); }
  // One produce / fetch request part (a topic-partition of a request, as
  // Kafka's totalProduceRequestRate / totalFetchRequestRate count).
  void produce_request() const { add(&TopicCounters::total_produce, 1); }
  void fetch_request() const { add(&TopicCounters::total_fetch, 1); }
  // True once the topic was removed from the table (see TopicCounters::removed).
  bool stale() const { return topic_ && topic_->removed.load(std::memory_order_relaxed); }

  // The topic's own counters (null for a default or all-topics handle) and
  // the all-topics aggregate (null for a default handle); for tests.
  const TopicCounters* counters() const { return topic_.get(); }
  const TopicCounters* aggregate() const { return all_.get(); }

 private:
  void add(std::atomic<std::uint64_t> TopicCounters::*field, std::uint64_t n) const {
    if (topic_) (topic_.get()->*field).fetch_add(n, std::memory_order_relaxed);
    add_all(field, n);
  }
  void add_all(std::atomic<std::uint64_t> TopicCounters::*field, std::uint64_t n) const {
    if (all_) (all_.get()->*field).fetch_add(n, std::memory_order_relaxed);
  }

  std::shared_ptr<TopicCounters> topic_;
  std::shared_ptr<TopicCounters> all_;
};

class TopicTable {
 public:
  TopicTable();

  // The same counters for the same name until the topic is removed.
  TopicMetrics topic(std::string_view name);
  // The aggregate alone (no topic), e.g. for a request naming no topic.
  TopicMetrics all_topics() const { return TopicMetrics(nullptr, all_); }

  // Drops the topic's counters (their series leave the exposition).
  void remove_topic(std::string_view name);

  // Appends the counter families (seven per topic, two for all topics only).
  void collect(std::vector<prometheus::MetricFamily>& out) const;

 private:
  const std::shared_ptr<TopicCounters> all_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<TopicCounters>, std::less<>> topics_;  // guarded by mu_
};

}  // namespace ciuickafka::metrics
