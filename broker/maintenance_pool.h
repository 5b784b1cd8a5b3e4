// broker/maintenance_pool.h: the broker's maintenance threads
// (background.threads, Kafka's KafkaScheduler pool): an io_context run by
// a resizable set of threads, for the periodic disk work that must wait
// for neither requests nor the coordinators' timers, nor hold them up:
// the log tick (flush.ms flushes, retention, checkpoints, deleted files),
// the high watermark checkpoint, producer snapshots (each roll's, the
// minute's) and producer expiry. Each such task is serial with itself (a
// timer re-armed when its handler is done, or its own locks); different
// tasks may run at once. The group and transaction coordinators keep the
// broker's single background thread (Broker::background()), whose timers
// assume one thread.
//
// resize(n) starts threads at once, or asks the surplus to leave: each
// takes one "leave" handler after the one it runs and exits; they are
// joined at the next resize() or at stop(). stop() stops the io_context
// (pending handlers are dropped, running ones finish) and joins every
// thread; it must not run on one of them.
//
// Thread-safety: every method may be called from any thread but a pool
// thread (stop(), resize() from outside).
#pragma once

#include <algorithm>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include "broker/net/asio.h"

namespace ciuickafka::broker {

class MaintenancePool {
 public:
  MaintenancePool() = default;
  ~MaintenancePool() { stop(); }
  MaintenancePool(const MaintenancePool&) = delete;
  MaintenancePool& operator=(const MaintenancePool&) = delete;

  asio::any_io_executor executor() { return ioc_.get_executor(); }

  // max(1, n) threads from now on (the ones leaving finish their handler).
  void resize(int64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    reap_locked();
    const int64_t target = std::clamp<int64_t>(n, 1, 1024);
    int64_t running = running_locked();
    for (; running < target; ++running) {
      auto w = std::make_unique<Worker>();
      Worker* raw = w.get();
      w->thread = std::thread([this, raw] { run(*raw); });
      workers_.push_back(std::move(w));
    }
    for (; running > target; --running) {
      ++leaving_;
      asio::post(ioc_, [] { leave_ = true; });
    }
  }

  // The threads it is sized for: running, less those asked to leave.
  size_t threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<size_t>(running_locked());
  }

  // Threads whose loop has not ended (those leaving included): a test
  // waits for a shrink to finish on it.
  size_t alive() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<size_t>(alive_locked());
  }

  void stop() {
    std::unique_lock<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    work_.reset();
    ioc_.stop();
    std::list<std::unique_ptr<Worker>> all;
    all.swap(workers_);
    lock.unlock();
    for (auto& w : all)
      if (w->thread.joinable()) w->thread.join();
  }

 private:
  struct Worker {
    std::thread thread;
    bool done = false;  // under mu_: its loop has ended
  };

  void run(Worker& w) {
    while (!leave_ && !ioc_.stopped()) ioc_.run_one();
    std::lock_guard<std::mutex> lock(mu_);
    if (leave_) --leaving_;
    w.done = true;
  }

  int64_t alive_locked() const {
    int64_t n = 0;
    for (const auto& w : workers_) n += w->done ? 0 : 1;
    return n;
  }
  int64_t running_locked() const { return alive_locked() - leaving_; }

  // Joins the threads that left (their loop has ended: join returns at once).
  void reap_locked() {
    for (auto it = workers_.begin(); it != workers_.end();) {
      if ((*it)->done) {
        (*it)->thread.join();
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
  }

  static inline thread_local bool leave_ = false;

  asio::io_context ioc_;
  std::unique_ptr<asio::executor_work_guard<asio::io_context::executor_type>> work_ =
      std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(ioc_.get_executor());
  mutable std::mutex mu_;
  std::list<std::unique_ptr<Worker>> workers_;  // under mu_
  int64_t leaving_ = 0;                         // under mu_: asked to leave, not yet gone
  bool stopped_ = false;                        // under mu_
};

}  // namespace ciuickafka::broker
