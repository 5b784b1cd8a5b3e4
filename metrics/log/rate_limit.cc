// metrics/log/rate_limit.cc: fixed windows per key, bounded key table.
#include "metrics/log/rate_limit.h"

namespace ciuickafka::metrics::log {

RateLimiter::RateLimiter(size_t per_interval, std::chrono::milliseconds interval, size_t max_keys)
    : per_interval_(per_interval), interval_(interval), max_keys_(max_keys == 0 ? 1 : max_keys) {}

RateLimiter::Admission RateLimiter::admit(std::string_view key_view, Clock::time_point now) {
  std::lock_guard lock(mu_);
  std::string key(key_view);
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    if (keys_.size() >= max_keys_) {
      for (auto e = keys_.begin(); e != keys_.end();) {
        if (now - e->second.window_start >= interval_) {
          e = keys_.erase(e);
        } else {
          ++e;
        }
      }
    }
    if (keys_.size() >= max_keys_) {
      key = std::string();  // the shared overflow key
      it = keys_.find(key);
    }
    if (it == keys_.end()) it = keys_.emplace(key, State{now, 0, 0}).first;
  }
  State& s = it->second;
  if (now - s.window_start >= interval_) {
    s.window_start = now;
    s.in_window = 0;
  }
  if (s.in_window >= per_interval_) {
    ++s.suppressed;
    return {false, 0};
  }
  ++s.in_window;
  Admission a{true, s.suppressed};
  s.suppressed = 0;
  return a;
}

size_t RateLimiter::tracked_keys() const {
  std::lock_guard lock(mu_);
  return keys_.size();
}

std::string suppressed_note(uint64_t suppressed) {
  if (suppressed == 0) return {};
  return " (suppressed " + std::to_string(suppressed) + " similar)";
}

}  // namespace ciuickafka::metrics::log
