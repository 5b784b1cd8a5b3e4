// tests/unit/metrics/latency_histogram_test.cc: bucket edges (a value equal
// to a bound counts in that bound's `le` bucket), cumulative counts, the sum
// in milliseconds, and concurrent observations losing nothing.
#include "metrics/latency_histogram.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <thread>
#include <vector>

using ciuickafka::metrics::LatencyHistogram;
using namespace std::chrono_literals;

TEST_CASE("latency histogram buckets are cumulative with +Inf last") {
  LatencyHistogram h;
  h.observe(50us);     // 0.05 ms -> le 0.1
  h.observe(100us);    // exactly 0.1 ms -> le 0.1
  h.observe(101us);    // -> le 0.25
  h.observe_ms(1.0);   // -> le 1
  h.observe(10s);      // exactly the top bound -> le 10000
  h.observe(11s);      // -> +Inf only
  h.observe(-5ms);     // a clock step back counts as 0
  auto c = h.collect();
  REQUIRE(c.bucket.size() == LatencyHistogram::kBoundsMs.size() + 1);
  CHECK(c.bucket[0].upper_bound == 0.1);
  CHECK(c.bucket[0].cumulative_count == 3);
  CHECK(c.bucket[1].upper_bound == 0.25);
  CHECK(c.bucket[1].cumulative_count == 4);
  CHECK(c.bucket[2].cumulative_count == 4);  // le 0.5
  CHECK(c.bucket[3].upper_bound == 1);
  CHECK(c.bucket[3].cumulative_count == 5);
  CHECK(c.bucket[15].upper_bound == 10000);
  CHECK(c.bucket[15].cumulative_count == 6);
  CHECK(std::isinf(c.bucket[16].upper_bound));
  CHECK(c.bucket[16].cumulative_count == 7);
  CHECK(c.sample_count == 7);
  CHECK(h.count() == 7);
  CHECK(c.sample_sum == Approx(0.05 + 0.1 + 0.101 + 1 + 10000 + 11000));
}

TEST_CASE("latency histogram observe_ms ignores NaN and negatives") {
  LatencyHistogram h;
  h.observe_ms(std::nan(""));
  h.observe_ms(-3);
  auto c = h.collect();
  CHECK(c.bucket[0].cumulative_count == 2);
  CHECK(c.sample_sum == 0);
}

TEST_CASE("latency histogram counts every concurrent observation") {
  LatencyHistogram h;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < 10000; ++i) h.observe(std::chrono::microseconds(t * 1000 + i % 7));
    });
  }
  for (auto& th : threads) th.join();
  auto c = h.collect();
  CHECK(c.sample_count == 40000);
  CHECK(c.bucket.back().cumulative_count == 40000);
}
