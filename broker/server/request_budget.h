// broker/server/request_budget.h: queued.max.request.bytes, the bound on
// request bytes read but not yet answered, across all connections.
//
// A connection acquires a frame's announced size before reading its body
// and releases it when the response arrives. When the budget is spent, the
// connection registers a waiter and stops reading (its bytes stay in the
// kernel's socket buffer, so nothing is dropped and TCP pushes back on the
// client); every release wakes the waiters, which try again. A frame larger
// than the whole budget is admitted when nothing else is queued, so it can
// never wait forever. A negative limit means no bound (Kafka's -1).
//
// Thread-safety: every method may be called from any thread. Waiters are
// called without the lock held, on the releasing thread: they must only post.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace ciuickafka::broker {

class RequestBudget {
 public:
  explicit RequestBudget(int64_t limit) : limit_(limit) {}

  // Takes n bytes, or registers waiter (called once, later) and returns false.
  bool try_acquire(uint64_t n, std::function<void()> waiter);
  void release(uint64_t n);

  uint64_t in_use() const;
  size_t waiting() const;
  int64_t limit() const { return limit_; }

 private:
  const int64_t limit_;
  mutable std::mutex mu_;
  uint64_t in_use_ = 0;
  std::vector<std::function<void()>> waiters_;
};

}  // namespace ciuickafka::broker
