// storage/throttler.cc: the token bucket of throttler.h.
#include "storage/throttler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace ciuickafka::storage {

namespace {

bool is_unthrottled(double rate) {
  return !(rate > 0) || !(rate < std::numeric_limits<double>::max());  // NaN, <= 0, DBL_MAX, inf
}

}  // namespace

Throttler::Throttler(double bytes_per_second) : Throttler(bytes_per_second, Options{}) {}

Throttler::Throttler(double bytes_per_second, Options options)
    : burst_seconds_(options.burst_seconds), clock_(std::move(options.clock)) {
  set_rate(bytes_per_second);
}

void Throttler::set_rate(double bytes_per_second) {
  std::lock_guard lock(mu_);
  if (started_ && !unthrottled_) {
    // The time until now refills at the old rate (a sleep in progress was
    // asked for at that rate); the new one counts from now.
    const int64_t now = now_ns();
    if (now > last_ns_) {
      tokens_ = std::min(burst_, tokens_ + static_cast<double>(now - last_ns_) * rate_ / 1e9);
      last_ns_ = now;
    }
  }
  rate_ = bytes_per_second;
  unthrottled_ = is_unthrottled(bytes_per_second);
  burst_ = unthrottled_ ? 0 : std::max(0.0, bytes_per_second * burst_seconds_);
  tokens_ = std::min(tokens_, burst_);
  if (unthrottled_) started_ = false;  // a full bucket when a rate is set again
}

bool Throttler::unthrottled() const {
  std::lock_guard lock(mu_);
  return unthrottled_;
}

double Throttler::rate() const {
  std::lock_guard lock(mu_);
  return rate_;
}

int64_t Throttler::now_ns() const {
  if (clock_.now_ns) return clock_.now_ns();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Throttler::sleep_ns(int64_t ns) {
  if (clock_.sleep) {
    clock_.sleep(ns);
    return;
  }
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::nanoseconds(ns), [&] { return cancelled_; });
}

int64_t Throttler::acquire(uint64_t n) {
  int64_t delay = 0;
  {
    std::lock_guard lock(mu_);
    stats_.bytes += n;
    if (unthrottled_ || cancelled_ || n == 0) return 0;
    const int64_t now = now_ns();
    if (!started_) {  // a full bucket to start with
      started_ = true;
      tokens_ = burst_;
    } else if (now > last_ns_) {
      tokens_ = std::min(burst_, tokens_ + static_cast<double>(now - last_ns_) * rate_ / 1e9);
    }
    last_ns_ = std::max(last_ns_, now);
    tokens_ -= static_cast<double>(n);
    if (tokens_ >= 0) return 0;
    delay = static_cast<int64_t>(std::ceil(-tokens_ * 1e9 / rate_));
    ++stats_.delays;
    stats_.delay_ns += delay;
    stats_.last_delay_ns = delay;
  }
  sleep_ns(delay);
  return delay;
}

void Throttler::cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  cv_.notify_all();
}

Throttler::Stats Throttler::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace ciuickafka::storage
