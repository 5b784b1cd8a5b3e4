// storage/throttler.h: a token bucket capping a byte rate; the log
// cleaner's log.cleaner.io.max.bytes.per.second (its reads plus writes).
//
// acquire(n) is called after n bytes were read or written. Tokens refill at
// `rate` bytes per second up to `burst` bytes (by default 300 ms worth, the
// interval at which Kafka's Throttler checks its rate); acquire takes n of
// them. When that leaves the bucket in debt, the caller sleeps debt / rate
// seconds, which is what repays it; so over any stretch of time the bytes
// counted stay below rate * elapsed + burst plus the last acquire. Debt is
// kept, not forgiven: a second thread acquiring meanwhile sleeps for both.
//
// A rate that is not a positive number below DBL_MAX (Kafka's default,
// Double.MAX_VALUE, means unthrottled) never sleeps; the bytes are still
// counted. The broker refuses rates <= 0 in its config.
//
// The clock is injectable: tests pass a fake whose sleep advances its time
// and assert on stats() (delays and their lengths), never on wall time.
// cancel() wakes a sleeper and makes later acquires return at once, so a
// shutdown never waits out a throttle delay. set_rate() changes the rate for
// the acquires after it (a sleep already asked for is not shortened).
//
// Thread-safety: every method may be called from any thread. One mutex
// guards the bucket; the sleep happens outside it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

namespace ciuickafka::storage {

struct ThrottleClock {
  std::function<int64_t()> now_ns;        // monotonic nanoseconds
  std::function<void(int64_t ns)> sleep;  // unset: an interruptible wait (cancel())
};

class Throttler {
 public:
  struct Options {
    double burst_seconds = 0.3;  // bucket size, in seconds of the rate
    ThrottleClock clock;         // unset parts: std::chrono::steady_clock
  };
  struct Stats {
    uint64_t bytes = 0;          // every byte acquire() was told about
    uint64_t delays = 0;         // acquires that slept
    int64_t delay_ns = 0;        // the sleeps they asked for, summed
    int64_t last_delay_ns = 0;
  };

  explicit Throttler(double bytes_per_second);
  Throttler(double bytes_per_second, Options options);
  Throttler(const Throttler&) = delete;
  Throttler& operator=(const Throttler&) = delete;

  // Counts n bytes; sleeps while the bucket is in debt. Returns the delay
  // asked for (nanoseconds, 0 when none).
  int64_t acquire(uint64_t n);
  // Wakes sleepers; every later acquire only counts.
  void cancel();

  // A new rate from now on (a dynamic log.cleaner.io.max.bytes.per.second):
  // the time before it refills at the old rate, then the bucket keeps its
  // tokens (or its debt), capped at the new burst.
  void set_rate(double bytes_per_second);

  bool unthrottled() const;
  double rate() const;
  Stats stats() const;

 private:
  int64_t now_ns() const;
  void sleep_ns(int64_t ns);

  const double burst_seconds_;
  const ThrottleClock clock_;

  mutable std::mutex mu_;
  double rate_ = 0;             // under mu_: bytes per second
  bool unthrottled_ = true;     // under mu_
  double burst_ = 0;            // under mu_: bytes
  std::condition_variable cv_;  // cancel() wakes the default sleep
  bool cancelled_ = false;      // under mu_
  bool started_ = false;        // under mu_: last_ns_ is set
  double tokens_ = 0;           // under mu_; negative: debt
  int64_t last_ns_ = 0;         // under mu_
  Stats stats_;                 // under mu_
};

}  // namespace ciuickafka::storage
