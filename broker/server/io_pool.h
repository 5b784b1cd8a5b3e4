// broker/server/io_pool.h: the request handler pool (num.io.threads) for the
// work a network thread must not do: handlers that create or delete topics
// on one node (directories, files and their fsyncs, the topic table's
// rewrite) and a Metadata request that auto-creates a topic. The network
// thread decodes the request and posts the rest here; the pool answers
// through RequestContext::respond, which any thread may call.
//
// Bounded without a queue limit of its own: every request posted here is in
// flight on its connection until answered, so the broker-wide request
// budget (queued.max.requests, queued.max.request.bytes) bounds the queue.
//
// A Broker service: `broker.service<IoPool>().post(fn)`. stop() (broker
// shutdown) finishes the tasks running and drops the queued ones; post()
// then returns false and the caller closes the connection.
//
// Thread-safety: post() and stop() may be called from any thread;
// on_pool_thread() tells whether the caller is one of the pool's threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <utility>

#include "broker/broker.h"
#include "broker/net/asio.h"

namespace ciuickafka::broker {

class IoPool {
 public:
  explicit IoPool(Broker& broker)
      : pool_(static_cast<size_t>(std::max<int64_t>(1, broker.config().get_int("num.io.threads")))) {}
  ~IoPool() { stop(); }
  IoPool(const IoPool&) = delete;
  IoPool& operator=(const IoPool&) = delete;

  // Runs fn on a pool thread; false (fn dropped) once stopped.
  bool post(std::function<void()> fn) {
    if (stopped_.load(std::memory_order_acquire)) return false;
    asio::post(pool_, [fn = std::move(fn)] {
      on_pool_ = true;
      fn();
      on_pool_ = false;
    });
    return true;
  }

  static bool on_pool_thread() { return on_pool_; }

  void stop() {
    if (stopped_.exchange(true)) return;
    pool_.stop();
    pool_.join();
  }

 private:
  static inline thread_local bool on_pool_ = false;
  asio::thread_pool pool_;
  std::atomic<bool> stopped_{false};
};

}  // namespace ciuickafka::broker
