// broker/server/connection_events.h: "this client connection is gone", for
// services that keep per-connection state (the group coordinator evicts
// members whose connection closed sooner than their session timeout).
//
// A broker service: `broker.service<ConnectionEvents>()` (broker.h), so the
// Broker class does not know it. A connection reports itself gone once: when
// the peer's end of stream or a read/write error is seen, or when the broker
// closes it, whichever comes first (Connection::report_gone). The id is
// RequestContext::connection_id. A connection destroyed by a server shutdown
// reports nothing. Do not call service<ConnectionEvents>() from a service's
// constructor (Broker::service holds its lock while constructing).
//
// Thread-safety: subscribe/unsubscribe/closed from any thread. Callbacks run
// on the reporting connection's thread, outside the lock, and must not block;
// after unsubscribe() returns a callback may still be running on another
// thread, so a subscriber must stay valid until the network threads are gone
// (services do: they live until the Broker is destroyed, after the server).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace ciuickafka::broker {

class Broker;

class ConnectionEvents {
 public:
  using Callback = std::function<void(uint64_t connection_id)>;

  explicit ConnectionEvents(Broker& /*broker*/) {}
  ConnectionEvents(const ConnectionEvents&) = delete;
  ConnectionEvents& operator=(const ConnectionEvents&) = delete;

  // Returns a token for unsubscribe().
  uint64_t subscribe(Callback cb) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t token = ++next_token_;
    callbacks_.emplace(token, std::make_shared<Callback>(std::move(cb)));
    return token;
  }

  void unsubscribe(uint64_t token) {
    std::lock_guard<std::mutex> lock(mu_);
    callbacks_.erase(token);
  }

  // Called by a connection once it is gone.
  void closed(uint64_t connection_id) {
    std::vector<std::shared_ptr<Callback>> run;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (callbacks_.empty()) return;
      run.reserve(callbacks_.size());
      for (auto& [token, cb] : callbacks_) run.push_back(cb);
    }
    for (auto& cb : run) (*cb)(connection_id);
  }

 private:
  std::mutex mu_;
  uint64_t next_token_ = 0;
  std::map<uint64_t, std::shared_ptr<Callback>> callbacks_;
};

}  // namespace ciuickafka::broker
