// broker/admin/admin_worker.h: one thread for admin requests that block on
// ZooKeeper (CreateTopics, CreatePartitions, DeleteTopics in cluster mode),
// so that a slow or unreachable ZooKeeper never stalls a network thread or
// the broker's timer thread. Requests run one at a time, in arrival order
// (Kafka's admin manager serialises topic changes the same way).
//
// A Broker service: `broker.service<admin::AdminWorker>().post(fn)`; stop()
// at shutdown finishes the task in progress and drops the queued ones.
//
// Thread-safety: post() and stop() may be called from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

#include "broker/net/asio.h"

namespace ciuickafka::broker {
class Broker;
}

namespace ciuickafka::broker::admin {

class AdminWorker {
 public:
  explicit AdminWorker(Broker&) : guard_(asio::make_work_guard(ioc_)), thread_([this] { ioc_.run(); }) {}
  ~AdminWorker() { stop(); }
  AdminWorker(const AdminWorker&) = delete;
  AdminWorker& operator=(const AdminWorker&) = delete;

  // Runs fn on the worker thread; false (fn dropped) once stopped.
  bool post(std::function<void()> fn) {
    if (stopped_.load()) return false;
    asio::post(ioc_, std::move(fn));
    return true;
  }

  void stop() {
    if (stopped_.exchange(true)) return;
    guard_.reset();
    ioc_.stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  asio::io_context ioc_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::atomic<bool> stopped_{false};
  std::thread thread_;
};

}  // namespace ciuickafka::broker::admin
