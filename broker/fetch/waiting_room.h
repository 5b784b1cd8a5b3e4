// broker/fetch/waiting_room.h: the fetch waiting room (Kafka's fetch
// purgatory): long-polling fetches wait here for data without polling.
//
// A fetch that found fewer than min_bytes parks a Waiter on the partitions
// it reads. The room registers one append listener with the broker; an
// append to a partition posts each of that partition's waiters to its own
// executor (the connection's thread), where the waiter re-reads and answers
// if min_bytes is now met. A steady_timer on the same executor answers it
// with whatever is there when max_wait_ms passes. Each waiter answers
// exactly once: the first of wake, timer and stop() to finish it wins.
//
// Bounded: at most kMaxWaiters wait at once (past that a fetch is answered
// at once, as if max_wait_ms were 0), and the count is the
// kafka_server_delayedoperationpurgatory_purgatorysize{operation="Fetch"}
// gauge. stop() (broker shutdown) answers every waiter with what it has.
//
// Header-only: broker/CMakeLists.txt compiles handlers/*.cc only.
// Thread-safety: every method may be called from any thread. A waiter's
// callback runs under the waiter's own mutex, on its executor (or on the
// stopping thread at shutdown, or on the Server's resizer for a leaving
// network thread: answer_waiters_on()). park() must be called on the waiter's
// executor (handlers run on their connection's thread), which owns its timer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "broker/broker.h"
#include "broker/net/asio.h"

namespace ciuickafka::broker::fetch {

class FetchWaitingRoom {
 public:
  static constexpr size_t kMaxWaiters = 100'000;

  struct Waiter {
    asio::any_io_executor executor;
    // Re-reads; answers and returns true when done. force: answer anyway.
    std::function<bool(bool force)> attempt;

    // Room bookkeeping.
    std::mutex mu;
    bool done = false;                       // under mu
    std::atomic<bool> wake_pending{false};
    std::unique_ptr<asio::steady_timer> timer;
    std::vector<std::pair<std::string, int32_t>> keys;
  };

  explicit FetchWaitingRoom(Broker& broker) : state_(std::make_shared<State>()) {
    state_->gauge = &broker.metrics().fetch_purgatory();
    std::weak_ptr<State> weak = state_;
    broker.append_listeners().add([weak](const Partition& p) {
      if (auto s = weak.lock()) wake(s, p.topic(), p.index());
    });
  }
  FetchWaitingRoom(const FetchWaitingRoom&) = delete;
  FetchWaitingRoom& operator=(const FetchWaitingRoom&) = delete;

  // Parks w on keys (topic, partition) for max_wait. Returns false (nothing
  // parked) when the room is stopping or full: the caller answers now.
  bool park(std::shared_ptr<Waiter> w, std::vector<std::pair<std::string, int32_t>> keys,
            std::chrono::milliseconds max_wait) {
    // The timer exists before anyone can wake the waiter (a wake cancels it).
    w->timer = std::make_unique<asio::steady_timer>(w->executor, max_wait);
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (state_->stopped || state_->count >= kMaxWaiters) return false;
      w->keys = std::move(keys);
      for (const auto& k : w->keys) state_->by_partition[k].insert_or_assign(w.get(), w);
      ++state_->count;
      state_->all.insert_or_assign(w.get(), w);
      state_->gauge->Increment();
    }
    std::shared_ptr<State> s = state_;
    w->timer->async_wait([s, w](const boost::system::error_code& ec) {
      if (ec) return;  // cancelled: answered elsewhere
      run(s, w, /*force=*/true);
    });
    // An append between the caller's read and the registration above would
    // have found nobody to wake: look once more.
    schedule(s, w);
    return true;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->count;
  }
  // Re-reads that found a waiter still short of min_bytes (its look right
  // after parking included): tests wait on it instead of sleeping.
  uint64_t short_attempts() const { return state_->short_attempts.load(std::memory_order_acquire); }

  // Answers now, with what they have, the waiters that answer on executor
  // (a network thread that is leaving: server.h, num.network.threads).
  void answer_waiters_on(const asio::any_io_executor& executor) {
    std::vector<std::shared_ptr<Waiter>> mine;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      for (auto& [key, weak] : state_->all)
        if (auto w = weak.lock(); w && w->executor == executor) mine.push_back(std::move(w));
    }
    for (auto& w : mine) run(state_, w, /*force=*/true);
  }

  // Shutdown: answers every waiter with what it has; later fetches do not wait.
  void stop() {
    std::vector<std::shared_ptr<Waiter>> all;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->stopped = true;
      for (auto& [key, weak] : state_->all)
        if (auto w = weak.lock()) all.push_back(std::move(w));
    }
    for (auto& w : all) {
      run(state_, w, /*force=*/true);
      asio::post(w->executor, [w] {
        if (w->timer) w->timer->cancel();
      });
    }
  }

 private:
  // Waiters by address: a finished one leaves in O(1), so a burst that
  // answers the N readers tailing a partition costs O(N), not O(N^2). (A
  // waiter is registered while alive: its timer's handler holds it until
  // it is finished and unregistered; insert_or_assign only guards against
  // a stale entry whose address a new waiter reuses.)
  using WaiterSet = std::unordered_map<const Waiter*, std::weak_ptr<Waiter>>;
  struct State {
    mutable std::mutex mu;
    bool stopped = false;
    size_t count = 0;
    std::map<std::pair<std::string, int32_t>, WaiterSet> by_partition;
    WaiterSet all;
    prometheus::Gauge* gauge = nullptr;
    std::atomic<uint64_t> short_attempts{0};
  };

  static void wake(const std::shared_ptr<State>& s, const std::string& topic, int32_t partition) {
    std::vector<std::shared_ptr<Waiter>> to_wake;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      auto it = s->by_partition.find({topic, partition});
      if (it == s->by_partition.end()) return;
      to_wake.reserve(it->second.size());
      for (auto& [key, weak] : it->second)
        if (auto w = weak.lock()) to_wake.push_back(std::move(w));
    }
    for (auto& w : to_wake) schedule(s, w);
  }

  // Posts one attempt to the waiter's executor, coalescing bursts of appends.
  static void schedule(const std::shared_ptr<State>& s, const std::shared_ptr<Waiter>& w) {
    if (w->wake_pending.exchange(true)) return;
    asio::post(w->executor, [s, w] {
      w->wake_pending.store(false);
      run(s, w, /*force=*/false);
    });
  }

  static void run(const std::shared_ptr<State>& s, const std::shared_ptr<Waiter>& w, bool force) {
    {
      std::lock_guard<std::mutex> lock(w->mu);
      if (w->done) return;
      if (!w->attempt(force)) {
        s->short_attempts.fetch_add(1, std::memory_order_acq_rel);
        return;
      }
      w->done = true;
      w->attempt = nullptr;  // drops the request state now
    }
    if (!force && w->timer) w->timer->cancel();  // on the executor: safe
    unregister(s, w);
  }

  static void unregister(const std::shared_ptr<State>& s, const std::shared_ptr<Waiter>& w) {
    std::lock_guard<std::mutex> lock(s->mu);
    for (const auto& k : w->keys) {
      auto it = s->by_partition.find(k);
      if (it == s->by_partition.end()) continue;
      it->second.erase(w.get());
      if (it->second.empty()) s->by_partition.erase(it);
    }
    s->all.erase(w.get());
    --s->count;
    s->gauge->Decrement();
  }

  std::shared_ptr<State> state_;
};

}  // namespace ciuickafka::broker::fetch
