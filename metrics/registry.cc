// metrics/registry.cc: the Registry: prometheus-cpp families plus collect
// functions, merged into one sorted list of families at scrape time.
#include "metrics/registry.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "prometheus/collectable.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace ciuickafka::metrics {

class Registry::Collector : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> families = families_->Collect();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [id, fn] : fns_) fn(families);
    }
    std::stable_sort(families.begin(), families.end(),
                     [](const auto& a, const auto& b) { return a.name < b.name; });
    return families;
  }

  std::shared_ptr<prometheus::Registry> families_ = std::make_shared<prometheus::Registry>();
  mutable std::mutex mu_;
  std::map<std::uint64_t, CollectFn> fns_;  // guarded by mu_
  std::uint64_t next_id_ = 1;               // guarded by mu_
};

Registry::Registry() : collector_(std::make_shared<Collector>()) {}
Registry::~Registry() = default;

prometheus::Registry& Registry::prometheus() { return *collector_->families_; }

std::uint64_t Registry::add_collector(CollectFn fn) {
  std::lock_guard<std::mutex> lock(collector_->mu_);
  std::uint64_t id = collector_->next_id_++;
  collector_->fns_.emplace(id, std::move(fn));
  return id;
}

void Registry::remove_collector(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(collector_->mu_);
  collector_->fns_.erase(id);
}

std::vector<prometheus::MetricFamily> Registry::collect() const { return collector_->Collect(); }

std::string Registry::text() const { return prometheus::TextSerializer().Serialize(collect()); }

std::weak_ptr<prometheus::Collectable> Registry::collectable() const { return collector_; }

}  // namespace ciuickafka::metrics
