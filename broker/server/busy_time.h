// broker/server/busy_time.h: how long each network thread is busy, for the
// idle-ratio metric (kafka_network_socketserver_networkprocessoravgidlepercent).
//
// The server gives each network thread a ThreadBusy and binds it to the
// thread (bind_busy_counter). A BusyScope at the top of a callback the
// thread runs (a connection's read, write and response callbacks, disk-ring
// completions) adds the wall time until the scope ends; nested scopes count
// once. Work outside any scope (timers, waiting-room wake-ups, accepts)
// counts as idle. On a thread with no counter bound a scope does nothing.
//
// Cost: two steady_clock reads and one relaxed fetch_add per outermost
// scope.
//
// Thread-safety: a scope belongs to its thread; ThreadBusy::ns may be read
// from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace ciuickafka::broker {

struct ThreadBusy {
  std::atomic<uint64_t> ns{0};  // busy nanoseconds so far
};

namespace busy_detail {
inline thread_local ThreadBusy* t_counter = nullptr;
inline thread_local int t_depth = 0;
}  // namespace busy_detail

inline void bind_busy_counter(ThreadBusy* counter) { busy_detail::t_counter = counter; }

class BusyScope {
 public:
  BusyScope() : counter_(busy_detail::t_counter) {
    if (counter_ != nullptr && busy_detail::t_depth++ == 0) start_ = std::chrono::steady_clock::now();
  }
  ~BusyScope() {
    if (counter_ == nullptr || --busy_detail::t_depth != 0) return;
    const auto d = std::chrono::steady_clock::now() - start_;
    counter_->ns.fetch_add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()),
                           std::memory_order_relaxed);
  }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  ThreadBusy* const counter_;
  std::chrono::steady_clock::time_point start_{};
};

}  // namespace ciuickafka::broker
