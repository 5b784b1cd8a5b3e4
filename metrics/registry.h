// metrics/registry.h: the broker's one metrics registry.
//
// A Registry owns a prometheus::Registry (for the fixed families built with
// prometheus-cpp's Counter and Gauge) and a list of collect functions for
// series that are computed or kept elsewhere: lock-free histograms, the
// per-topic and per-partition tables whose series come and go, and process
// figures read at scrape time. collect() merges both into one list of
// families sorted by name; text() renders it in the Prometheus text format
// (the body an Exposer serves at /metrics).
//
// metrics/ knows no other module: the broker, storage and network code push
// numbers in through handles (see broker_metrics.h).
//
// Thread-safety: every member may be called from any thread. Collect
// functions run under the registry's collector mutex, so remove_collector()
// waits for a scrape in progress to finish; a collect function must not call
// back into the Registry.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "prometheus/metric_family.h"

namespace prometheus {
class Collectable;
class Registry;
}  // namespace prometheus

namespace ciuickafka::metrics {

class Registry {
 public:
  // Appends families to the scrape's list. Names must not clash with any
  // other family in the registry.
  using CollectFn = std::function<void(std::vector<prometheus::MetricFamily>&)>;

  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Where prometheus-cpp families are registered (BuildCounter()...Register).
  prometheus::Registry& prometheus();

  // Adds a function called at every scrape; the id removes it again.
  std::uint64_t add_collector(CollectFn fn);
  void remove_collector(std::uint64_t id);

  // Every family, sorted by name.
  std::vector<prometheus::MetricFamily> collect() const;
  // The text exposition format (version 0.0.4) of collect().
  std::string text() const;

  // What an Exposer registers; it expires when this Registry is destroyed.
  std::weak_ptr<prometheus::Collectable> collectable() const;

 private:
  class Collector;
  std::shared_ptr<Collector> collector_;
};

}  // namespace ciuickafka::metrics
