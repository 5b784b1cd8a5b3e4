// tests/unit/replication/zk_contract.h: the ZooKeeper contract cases, run
// against the fake (zk_fake_test.cc) and a real server (zk_real_test.cc),
// and the event recorder they share.
//
// Thread-safety: Recorder may be fed from any thread (callbacks); the rest
// runs on the test's thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "replication/zk/session.h"

namespace ciuickafka::replication::zk::testing {

// What a backend provides to the contract cases.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual Client& client() = 0;
  // The servers, without a chroot.
  virtual std::string connect_string() = 0;
  // Where to connect a session that expire() will be given.
  virtual std::string expirable_connect_string() { return connect_string(); }
  // Ends s's session as a timeout would (the server deletes it; s learns
  // it on its next contact); false with *error if it could not.
  virtual bool expire(Session& s, std::string* error) = 0;
  // How long an asynchronous event may take to arrive.
  virtual std::chrono::milliseconds event_timeout() { return std::chrono::seconds(10); }
};

// Records watch events and state changes; waits for them with a deadline.
class Recorder {
 public:
  using Event = std::pair<EventType, std::string>;
  WatchFn watch() {
    return [this](EventType t, const std::string& p) {
      std::lock_guard lock(mu_);
      events_.emplace_back(t, p);
      cv_.notify_all();
    };
  }
  StateFn state() {
    return [this](SessionState s) {
      std::lock_guard lock(mu_);
      states_.push_back(s);
      cv_.notify_all();
    };
  }
  // True once at least n events arrived.
  bool wait_events(size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return events_.size() >= n; });
  }
  // True once state s arrived at index from or later.
  bool wait_state(SessionState s, size_t from, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      for (size_t i = from; i < states_.size(); ++i) {
        if (states_[i] == s) return true;
      }
      return false;
    });
  }
  std::vector<Event> events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  std::vector<SessionState> states() {
    std::lock_guard lock(mu_);
    return states_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Event> events_;
  std::vector<SessionState> states_;
};

// Connects (REQUIREs success).
std::unique_ptr<Session> connect_or_fail(Backend& b, const std::string& connect, StateFn on_state = {},
                                         int32_t session_timeout_ms = 6000);

// The contract: one Catch2 SECTION per behaviour. Call it from a TEST_CASE.
void run_contract(Backend& b);

}  // namespace ciuickafka::replication::zk::testing
