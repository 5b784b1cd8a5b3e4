// broker/server/request_budget.cc: the shared request-byte budget.
#include "broker/server/request_budget.h"

namespace ciuickafka::broker {

bool RequestBudget::try_acquire(uint64_t n, std::function<void()> waiter) {
  std::lock_guard<std::mutex> lock(mu_);
  if (limit_ < 0 || in_use_ == 0 || in_use_ + n <= static_cast<uint64_t>(limit_)) {
    in_use_ += n;
    return true;
  }
  waiters_.push_back(std::move(waiter));
  return false;
}

void RequestBudget::release(uint64_t n) {
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_use_ = n > in_use_ ? 0 : in_use_ - n;
    if (limit_ >= 0 && in_use_ >= static_cast<uint64_t>(limit_)) return;
    wake.swap(waiters_);
  }
  for (auto& w : wake) w();
}

uint64_t RequestBudget::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

size_t RequestBudget::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiters_.size();
}

}  // namespace ciuickafka::broker
