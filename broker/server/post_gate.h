// broker/server/post_gate.h: posting work to a network thread from anywhere,
// safely even after the server has stopped.
//
// Handlers answer from any thread (Produce after its fsync, Fetch when data
// arrives), possibly after the server stopped. Posting to an io_context that
// is being destroyed is undefined behaviour, so every cross-thread post to a
// network thread goes through that thread's gate: the server closes the gate
// before it destroys the io_context, and later posts are dropped (with them
// the response, which nobody can receive any more).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <mutex>

#include "broker/net/asio.h"

namespace ciuickafka::broker {

class PostGate {
 public:
  explicit PostGate(asio::io_context::executor_type executor) : executor_(executor) {}

  // Posts f to the thread; false (f dropped) once the gate is closed.
  template <class F>
  bool post(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!open_) return false;
    asio::post(executor_, std::forward<F>(f));
    return true;
  }

  void close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }

 private:
  std::mutex mu_;
  bool open_ = true;
  asio::io_context::executor_type executor_;
};

}  // namespace ciuickafka::broker
