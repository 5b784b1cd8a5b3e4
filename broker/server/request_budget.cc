// broker/server/request_budget.cc: the shared request-byte and request-count
// budget.
#include "broker/server/request_budget.h"

#include <algorithm>

namespace ciuickafka::broker {

bool RequestBudget::try_acquire(uint64_t n, bool counted, std::function<void()> waiter) {
  std::lock_guard<std::mutex> lock(mu_);
  // A big frame (over a quarter of the budget) may fill only seven eighths
  // of it, so small requests keep flowing while big ones queue.
  const uint64_t limit = static_cast<uint64_t>(std::max<int64_t>(limit_, 0));
  const uint64_t cap = n > limit / 4 ? limit - limit / 8 : limit;
  const bool bytes_ok = limit_ < 0 || in_use_ == 0 || in_use_ + n <= cap;
  const bool request_ok = !counted || !requests_full_locked();
  if (bytes_ok && request_ok) {
    in_use_ += n;
    if (counted) ++requests_;
    return true;
  }
  ++waits_;
  waiters_.push_back(std::move(waiter));
  return false;
}

void RequestBudget::release(uint64_t n, bool counted) {
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_use_ = n > in_use_ ? 0 : in_use_ - n;
    if (counted && requests_ > 0) --requests_;
    // A waiter may need either kind of room: wake them all once a bounded
    // kind has some (each tries again and waits again if it still cannot).
    const bool bytes_room = limit_ >= 0 && !bytes_full_locked();
    const bool request_room = request_limit_ >= 0 && !requests_full_locked();
    if (!bytes_room && !request_room && (limit_ >= 0 || request_limit_ >= 0)) return;
    wake.swap(waiters_);
  }
  for (auto& w : wake) w();
}

uint64_t RequestBudget::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

uint64_t RequestBudget::requests_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t RequestBudget::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiters_.size();
}

uint64_t RequestBudget::waits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waits_;
}

}  // namespace ciuickafka::broker
