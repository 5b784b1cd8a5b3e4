// metrics/log/rate_limit.h: at most N log lines per key per interval.
//
// A line that may repeat without bound (a rejected produce, a closed
// connection) asks admit(key) first. Within one interval the first
// `per_interval` lines of a key pass; the rest are counted and dropped.
// The next line that passes for that key carries the count
// (Admission::suppressed), so the operator sees "suppressed K similar"
// instead of a flood, and nothing is hidden without a trace.
//
// Memory is bounded: at most `max_keys` keys are tracked; when full, keys
// whose interval has passed are forgotten (their pending count is lost only
// if no line for them came back), and if none has, new keys share one
// overflow key.
//
// Thread-safety: admit() may be called from any thread (one mutex).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace ciuickafka::metrics::log {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  struct Admission {
    bool admitted = false;
    uint64_t suppressed = 0;  // lines of this key dropped since the last admitted one
  };

  RateLimiter(size_t per_interval, std::chrono::milliseconds interval, size_t max_keys = 1024);

  Admission admit(std::string_view key, Clock::time_point now = Clock::now());

  size_t tracked_keys() const;

 private:
  struct State {
    Clock::time_point window_start;
    size_t in_window = 0;
    uint64_t suppressed = 0;
  };

  const size_t per_interval_;
  const std::chrono::milliseconds interval_;
  const size_t max_keys_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, State> keys_;
};

// " (suppressed K similar)" when K > 0, else "": appended to the message.
std::string suppressed_note(uint64_t suppressed);

}  // namespace ciuickafka::metrics::log
