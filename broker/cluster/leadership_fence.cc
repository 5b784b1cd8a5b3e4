// broker/cluster/leadership_fence.cc: the pause and session-expiry fences
// on serving leaders (design in the header).
#include "broker/cluster/leadership_fence.h"

#include <chrono>

#include "metrics/log/log.h"

namespace ciuickafka::broker {

int64_t LeadershipFence::steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

LeadershipFence::LeadershipFence(int64_t pause_threshold_ms, std::function<void()> on_pause)
    : threshold_ms_(pause_threshold_ms), on_pause_(std::move(on_pause)), last_tick_ms_(steady_ms()) {}

LeadershipFence::~LeadershipFence() { stop(); }

void LeadershipFence::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  last_tick_ms_.store(steady_ms());
  thread_ = std::thread([this] { run(); });
}

void LeadershipFence::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LeadershipFence::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; });
    const int64_t now = steady_ms();
    if (now - last_tick_ms_.load() > threshold_ms_) notice_gap(now);
    last_tick_ms_.store(now);
  }
}

void LeadershipFence::notice_gap(int64_t now) {
  last_tick_ms_.store(now);  // this gap is noticed once
  int64_t seen = paused_since_.load();
  // Only the first to notice this gap raises the fence and asks for a sync.
  while (seen < now - threshold_ms_) {
    if (paused_since_.compare_exchange_weak(seen, now)) {
      pauses_.fetch_add(1, std::memory_order_relaxed);
      CK_LOG_WARN("cluster",
                  "this process did not run for more than %lld ms (paused or starved): leaders stop serving "
                  "until ZooKeeper confirms the session",
                  static_cast<long long>(threshold_ms_));
      if (on_pause_) on_pause_();
      return;
    }
  }
}

bool LeadershipFence::may_serve(int64_t confirmed_ms) {
  const int64_t now = steady_ms();
  if (now - last_tick_ms_.load(std::memory_order_relaxed) > threshold_ms_) notice_gap(now);
  if (paused_since_.load(std::memory_order_acquire) != 0) return false;
  const int64_t expired = expired_since_.load(std::memory_order_acquire);
  return expired == 0 || confirmed_ms >= expired;
}

void LeadershipFence::sync_succeeded(int64_t started_ms) {
  int64_t p = paused_since_.load();
  while (p != 0 && started_ms >= p) {
    if (paused_since_.compare_exchange_weak(p, 0)) {
      CK_LOG_INFO("cluster", "ZooKeeper answered after the pause: leaders serve again");
      return;
    }
  }
}

void LeadershipFence::session_expired() { expired_since_.store(steady_ms(), std::memory_order_release); }

void LeadershipFence::registered_anew() {
  // Only what the controller says from now on counts.
  if (expired_since_.load() != 0) expired_since_.store(steady_ms(), std::memory_order_release);
}

}  // namespace ciuickafka::broker
