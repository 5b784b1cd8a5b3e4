// metrics/latency_histogram.cc: bucket selection on integer nanoseconds (so
// a value equal to a bound lands in that bound's bucket, as `le` means) and
// the cumulative view a scrape needs.
#include "metrics/latency_histogram.h"

#include <cmath>
#include <limits>

namespace ciuickafka::metrics {
namespace {

constexpr std::array<std::int64_t, LatencyHistogram::kBoundsMs.size()> bounds_ns() {
  std::array<std::int64_t, LatencyHistogram::kBoundsMs.size()> out{};
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::int64_t>(LatencyHistogram::kBoundsMs[i] * 1e6 + 0.5);
  }
  return out;
}
constexpr auto kBoundsNs = bounds_ns();

}  // namespace

void LatencyHistogram::observe(std::chrono::nanoseconds elapsed) {
  std::int64_t ns = elapsed.count();
  if (ns < 0) ns = 0;  // a clock step backwards counts as instant
  std::size_t i = 0;
  while (i < kBoundsNs.size() && ns > kBoundsNs[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<std::uint64_t>(ns), std::memory_order_relaxed);
}

void LatencyHistogram::observe_ms(double ms) {
  if (!(ms > 0)) ms = 0;  // also NaN
  constexpr double kMaxMs = 9.0e12;  // ~104 days; keeps the cast defined
  if (ms > kMaxMs) ms = kMaxMs;
  observe(std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(ms * 1e6))));
}

std::uint64_t LatencyHistogram::count() const {
  std::uint64_t n = 0;
  for (const auto& b : buckets_) n += b.load(std::memory_order_relaxed);
  return n;
}

prometheus::ClientMetric::Histogram LatencyHistogram::collect() const {
  prometheus::ClientMetric::Histogram h;
  h.bucket.reserve(buckets_.size());
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    prometheus::ClientMetric::Bucket b;
    b.cumulative_count = cumulative;
    b.upper_bound = i < kBoundsMs.size() ? kBoundsMs[i] : std::numeric_limits<double>::infinity();
    h.bucket.push_back(b);
  }
  h.sample_count = cumulative;
  h.sample_sum = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e6;
  return h;
}

}  // namespace ciuickafka::metrics
