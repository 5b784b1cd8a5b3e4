// broker/server/request_budget.h: the broker-wide bounds on requests read
// but not yet answered, across all connections: queued.max.request.bytes
// (bytes) and queued.max.requests (requests).
//
// A connection acquires a frame's announced size, and for a pipelined
// request one request slot, before reading its body, and releases both when
// the response arrives. When either bound is spent, the connection registers
// a waiter and stops reading (its bytes stay in the kernel's socket buffer,
// so nothing is dropped and TCP pushes back on the client); every release
// wakes the waiters, which try again.
//
// Small requests are not starved by big ones: a frame over a quarter of the
// byte budget is admitted only while the bytes held stay within seven
// eighths of it, leaving the last eighth to smaller frames.
//
// Progress is guaranteed: a frame larger than the whole byte budget is
// admitted when no bytes are held, and a connection's first request in
// flight is acquired uncounted (counted = false), so the request bound only
// ever holds back pipelined requests. Memory held is therefore at most
// max(queued.max.request.bytes, one frame) bytes and (connections +
// queued.max.requests) requests. A negative limit means no bound (Kafka's -1).
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
  explicit RequestBudget(int64_t limit, int64_t request_limit = -1) : limit_(limit), request_limit_(request_limit) {}

  // Takes n bytes and, when counted, one request; or registers waiter
  // (called once, later) and returns false.
  bool try_acquire(uint64_t n, bool counted, std::function<void()> waiter);
  bool try_acquire(uint64_t n, std::function<void()> waiter) { return try_acquire(n, false, std::move(waiter)); }
  // Gives back what one try_acquire took.
  void release(uint64_t n, bool counted = false);

  uint64_t in_use() const;
  uint64_t requests_in_use() const;  // counted requests held
  size_t waiting() const;
  // Times a connection had to wait (either bound), since start.
  uint64_t waits() const;
  int64_t limit() const { return limit_; }
  int64_t request_limit() const { return request_limit_; }

 private:
  bool bytes_full_locked() const { return limit_ >= 0 && in_use_ >= static_cast<uint64_t>(limit_); }
  bool requests_full_locked() const {
    return request_limit_ >= 0 && requests_ >= static_cast<uint64_t>(request_limit_);
  }

  const int64_t limit_;
  const int64_t request_limit_;
  mutable std::mutex mu_;
  uint64_t in_use_ = 0;
  uint64_t requests_ = 0;
  uint64_t waits_ = 0;
  std::vector<std::function<void()>> waiters_;
};

}  // namespace ciuickafka::broker
