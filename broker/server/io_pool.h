// broker/server/io_pool.h: the request handler pool (num.io.threads) for the
// work a network thread must not do: handlers that create or delete topics
// on one node (directories, files and their fsyncs, the topic table's
// rewrite), a Metadata request that auto-creates a topic, config changes
// on one node (persisted and fsynced), and a Produce whose records are
// compressed anew (a topic's compression.type) or hold 64 KiB or more of
// compressed batches to validate (CPU in proportion to the records). The
// network thread decodes the request and posts the rest here with
// post_request(), which holds the connection's later requests until this
// one is answered (none overtakes it), or until the handler releases them
// earlier (RequestContext::release_later_requests: a Produce whose records
// have offsets); the pool answers through RequestContext::respond, which
// any thread may call.
//
// Bounded without a queue limit of its own: every request posted here is in
// flight on its connection until answered, so the broker-wide request
// budget (queued.max.requests, queued.max.request.bytes) bounds the queue.
//
// num.io.threads is a dynamic broker config, as in Kafka
// (KafkaRequestHandlerPool.resizeThreadPool): resize() starts threads at
// once, or lets the surplus ones finish the task they run and exit (a
// thread may resize its own pool).
//
// A Broker service: `broker.service<IoPool>().post_request(ctx, fn)`. stop() (broker
// shutdown) finishes the tasks running and drops the queued ones; post()
// then returns false and the caller closes the connection.
//
// Thread-safety: every method may be called from any thread (stop() not
// from a pool thread); on_pool_thread() tells whether the caller is one of
// the pool's threads.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "broker/broker.h"
#include "broker/server/request_context.h"

namespace ciuickafka::broker {

class IoPool {
 public:
  explicit IoPool(Broker& broker) { resize(broker.config().get_int("num.io.threads")); }
  ~IoPool() { stop(); }
  IoPool(const IoPool&) = delete;
  IoPool& operator=(const IoPool&) = delete;

  // Runs fn on a pool thread; false (fn dropped) once stopped.
  bool post(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return false;
      queue_.push_back(std::move(fn));
      ++posted_;
    }
    cv_.notify_one();
    return true;
  }

  // Tasks accepted by post() so far (tests: whether a request went here).
  uint64_t posted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return posted_;
  }

  // The rest of a request's handling, fn (holding a copy of ctx), runs on
  // the pool. Later requests on ctx's connection wait for its answer
  // (RequestContext::hold_later_requests: none overtakes it, as in Kafka);
  // when the pool is stopped the connection is closed instead.
  // The task's time counts against the client's request_percentage quota
  // (RequestContext::worker_span).
  void post_request(RequestContext& ctx, std::function<void()> fn) {
    if (ctx.hold_later_requests) ctx.hold_later_requests();
    if (ctx.worker_span) fn = timed_work(ctx, std::move(fn));
    if (!post(std::move(fn))) ctx.respond(Response::close());
  }

  // The pool's size becomes max(1, n).
  void resize(int64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    target_ = static_cast<int>(std::clamp<int64_t>(n, 1, 1 << 16));
    while (running_ < target_) {
      ++running_;
      threads_.emplace_back([this] { run(); });
    }
    cv_.notify_all();  // surplus threads exit
  }

  // The size asked for and the threads still running (a shrinking pool's
  // surplus threads finish their task first).
  int size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return target_;
  }
  int running() const {
    std::lock_guard<std::mutex> lock(mu_);
    return running_;
  }
  // Waits until running() == n (tests); false on timeout.
  bool wait_running(int n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return exited_.wait_for(lock, timeout, [&] { return running_ == n; });
  }

  static bool on_pool_thread() { return on_pool_; }

  void stop() {
    std::vector<std::thread> threads;
    std::deque<std::function<void()>> dropped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopped_ = true;
      threads.swap(threads_);
      dropped.swap(queue_);
    }
    cv_.notify_all();
    for (std::thread& t : threads) t.join();
    // dropped's tasks (and the request contexts they hold) go here, outside the lock.
  }

 private:
  void run() {
    on_pool_ = true;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stopped_ || running_ > target_ || !queue_.empty(); });
      if (stopped_ || running_ > target_) break;
      std::function<void()> fn = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      fn();
      fn = nullptr;  // what the task held goes before the lock is taken again
      lock.lock();
    }
    --running_;
    exited_.notify_all();
  }

  static inline thread_local bool on_pool_ = false;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable exited_;  // a thread left run()
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;  // every thread started, exited ones joined at stop()
  int target_ = 0;
  int running_ = 0;
  bool stopped_ = false;
  uint64_t posted_ = 0;
};

}  // namespace ciuickafka::broker
