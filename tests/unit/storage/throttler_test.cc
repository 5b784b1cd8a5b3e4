// tests/unit/storage/throttler_test.cc: the token bucket behind
// log.cleaner.io.max.bytes.per.second (storage/throttler.h). Time is a fake
// clock whose sleep advances it, so every assertion is on the delays the
// throttler asks for, never on wall time.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "storage/throttler.h"

using namespace ciuickafka::storage;

namespace {

constexpr int64_t kMs = 1'000'000;  // nanoseconds
constexpr int64_t kSec = 1'000'000'000;

// A clock that only moves when told to, or when the throttler sleeps.
struct FakeClock {
  int64_t now = 5 * kSec;
  std::vector<int64_t> sleeps;
  ThrottleClock clock() {
    return {[this] { return now; },
            [this](int64_t ns) {
              sleeps.push_back(ns);
              now += ns;
            }};
  }
};

Throttler::Options with(FakeClock& c, double burst_seconds = 0.3) {
  Throttler::Options o;
  o.burst_seconds = burst_seconds;
  o.clock = c.clock();
  return o;
}

}  // namespace

TEST_CASE("throttler: a full bucket, then debt repaid by sleeping debt / rate", "[storage][throttler][cleaner]") {
  FakeClock c;
  Throttler t(1000.0, with(c));  // 1000 B/s, burst 300 B
  CHECK_FALSE(t.unthrottled());
  CHECK(t.acquire(300) == 0);  // the burst
  CHECK(c.sleeps.empty());
  CHECK(t.acquire(100) == 100 * kMs);  // 100 B of debt at 1000 B/s
  REQUIRE(c.sleeps == std::vector<int64_t>{100 * kMs});
  // The sleep refilled exactly the debt: the next 50 B wait 50 ms.
  CHECK(t.acquire(50) == 50 * kMs);
  // Idle time refills, but never past the burst.
  c.now += 10 * kSec;
  CHECK(t.acquire(300) == 0);
  CHECK(t.acquire(1) == 1 * kMs);
  // One acquire larger than the bucket: its whole debt at once.
  c.now += 10 * kSec;
  CHECK(t.acquire(2300) == 2 * kSec);
  const auto s = t.stats();
  CHECK(s.bytes == 300 + 100 + 50 + 300 + 1 + 2300);
  CHECK(s.delays == 4);
  CHECK(s.delay_ns == 100 * kMs + 50 * kMs + 1 * kMs + 2 * kSec);
  CHECK(s.last_delay_ns == 2 * kSec);
  CHECK(c.sleeps.size() == 4);
}

TEST_CASE("throttler: partial refill between acquires", "[storage][throttler][cleaner]") {
  FakeClock c;
  Throttler t(2000.0, with(c, 0.5));  // 2000 B/s, burst 1000 B
  CHECK(t.acquire(1000) == 0);
  c.now += 250 * kMs;  // +500 B
  CHECK(t.acquire(400) == 0);    // 100 B left
  CHECK(t.acquire(600) == 250 * kMs);  // 500 B of debt at 2000 B/s
  c.now += 100 * kMs;  // +200 B: 200 B held
  CHECK(t.acquire(200) == 0);
  CHECK(t.stats().delays == 1);
}

TEST_CASE("throttler: over a long run the sleeps add up to (bytes - burst) / rate", "[storage][throttler][cleaner]") {
  FakeClock c;
  const double rate = 64 * 1024;  // 64 KiB/s
  Throttler t(rate, with(c));
  const int64_t start = c.now;
  std::mt19937 rng(7);
  uint64_t bytes = 0;
  for (int i = 0; i < 2000; ++i) {
    const uint64_t n = 1 + rng() % 20'000;
    t.acquire(n);
    bytes += n;
  }
  // End on an acquire that surely sleeps (more than the burst), so no
  // unspent tokens are left over.
  CHECK(t.acquire(20'000) > 0);
  bytes += 20'000;
  const auto s = t.stats();
  CHECK(s.bytes == bytes);
  // Time only passed in sleeps, so the clock moved by exactly the delays.
  CHECK(c.now - start == s.delay_ns);
  const double want_ns = (static_cast<double>(bytes) - rate * 0.3) / rate * 1e9;
  // Each delay is rounded up to a whole nanosecond.
  CHECK(static_cast<double>(s.delay_ns) >= want_ns - 1.0);
  CHECK(static_cast<double>(s.delay_ns) <= want_ns + static_cast<double>(s.delays) + 1.0);
}

TEST_CASE("throttler: Kafka's default rate (Double.MAX_VALUE) and nonsense rates only count", "[storage][throttler][cleaner]") {
  for (double rate : {std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity(), 0.0, -5.0,
                      std::numeric_limits<double>::quiet_NaN()}) {
    FakeClock c;
    Throttler t(rate, with(c));
    CHECK(t.unthrottled());
    CHECK(t.acquire(uint64_t{1} << 40) == 0);
    CHECK(t.acquire(123) == 0);
    CHECK(c.sleeps.empty());
    CHECK(t.stats().bytes == (uint64_t{1} << 40) + 123);
    CHECK(t.stats().delays == 0);
  }
}

TEST_CASE("throttler: cancel wakes a sleeper and later acquires only count", "[storage][throttler][cleaner]") {
  // The real clock: a debt of an hour would hang the test (and hit ctest's
  // timeout) unless cancel() wakes the sleeper.
  Throttler t(1.0, Throttler::Options{});  // 1 B/s, burst 0.3 B
  int64_t asked = 0;
  std::thread sleeper([&] { asked = t.acquire(3600); });  // Catch2 assertions stay on this thread
  while (t.stats().delays == 0) std::this_thread::yield();
  t.cancel();
  sleeper.join();
  CHECK(asked > 3000 * kSec);
  CHECK(t.acquire(1'000'000) == 0);
  CHECK(t.stats().delays == 1);
  CHECK(t.stats().bytes == 3600 + 1'000'000);
}

TEST_CASE("throttler: a new rate applies to the next acquires, the bucket capped at its new burst",
          "[storage][throttler][cleaner]") {
  FakeClock c;
  Throttler t(1000.0, with(c));  // burst 300 B
  CHECK(t.acquire(300) == 0);
  CHECK(t.acquire(100) == 100 * kMs);  // repaid by the sleep, at the old rate: the bucket is at 0
  t.set_rate(4000.0);                  // burst 1200 B, the bucket still at 0
  CHECK(t.rate() == 4000.0);
  CHECK(t.acquire(100) == 25 * kMs);  // 100 B of debt at 4000 B/s
  c.now += 10 * kSec;                 // refills to the new burst, no more
  CHECK(t.acquire(1200) == 0);
  CHECK(t.acquire(4) == 1 * kMs);
  // Lowered: what the bucket holds is capped at the new burst.
  c.now += 10 * kSec;
  t.set_rate(100.0);  // burst 30 B
  CHECK(t.acquire(30) == 0);
  CHECK(t.acquire(10) == 100 * kMs);
  // Unthrottled (Kafka's Double.MAX_VALUE): never sleeps, still counts;
  // throttled again, it starts from a full bucket.
  t.set_rate(std::numeric_limits<double>::max());
  CHECK(t.unthrottled());
  CHECK(t.acquire(1'000'000) == 0);
  t.set_rate(1000.0);
  CHECK_FALSE(t.unthrottled());
  CHECK(t.acquire(300) == 0);
  CHECK(t.acquire(1) == 1 * kMs);
  CHECK(t.stats().bytes == 300 + 100 + 100 + 1200 + 4 + 30 + 10 + 1'000'000 + 300 + 1);
}
