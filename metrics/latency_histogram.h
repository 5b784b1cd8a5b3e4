// metrics/latency_histogram.h: a lock-free latency histogram in milliseconds.
//
// prometheus-cpp 1.0's Histogram takes a mutex on every Observe; request
// latency is recorded by every network thread for every request, so this one
// keeps one atomic counter per bucket and an atomic sum in nanoseconds:
// observe() is a short scan over the bounds and two relaxed fetch_adds.
//
// Bucket bounds (upper bounds, inclusive, in ms) cover 0.1 ms to 10 s in a
// 1-2.5-5 progression, then +Inf. A scrape reads the buckets one by one, so
// under concurrent observations _count and _sum can disagree by the few
// observations in flight; each bucket is exact.
//
// Thread-safety: observe() and collect() from any thread, lock-free.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "prometheus/client_metric.h"

namespace ciuickafka::metrics {

class LatencyHistogram {
 public:
  static constexpr std::array<double, 16> kBoundsMs = {0.1, 0.25, 0.5,  1,    2.5,  5,    10,   25,
                                                       50,  100,  250,  500,  1000, 2500, 5000, 10000};

  LatencyHistogram() = default;
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  void observe(std::chrono::nanoseconds elapsed);
  void observe_ms(double ms);

  std::uint64_t count() const;
  // The histogram part of a ClientMetric: cumulative buckets, +Inf last,
  // sample count and sum in milliseconds.
  prometheus::ClientMetric::Histogram collect() const;

 private:
  std::array<std::atomic<std::uint64_t>, kBoundsMs.size() + 1> buckets_{};  // last: +Inf
  std::atomic<std::uint64_t> sum_ns_{0};
};

}  // namespace ciuickafka::metrics
