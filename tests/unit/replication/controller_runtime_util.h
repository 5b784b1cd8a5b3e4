// tests/unit/replication/controller_runtime_util.h: what the tests of the
// running Controller share: a fake RequestSender that records what it was
// asked to send, and a fixture whose brokers register as real ones do
// (ephemeral /brokers/ids/N from their own sessions, so their epochs are
// czxids).
//
// Thread-safety: FakeSender is called from the controller's event thread
// and read by the test thread (a mutex); the rest is the test thread's.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "replication/controller/controller.h"
#include "replication/membership_codec.h"
#include "tests/unit/replication/controller_test_util.h"

namespace ciuickafka::replication::controller::test {

using Clock = std::chrono::steady_clock;

inline bool wait_until(const std::function<bool()>& pred, int ms = 5000) {
  const auto end = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

class FakeSender : public RequestSender {
 public:
  void set_brokers(const std::vector<LiveBroker>& live) override {
    std::lock_guard<std::mutex> lock(mu_);
    brokers_.clear();
    for (const auto& b : live) brokers_[b.id] = b.epoch;
  }
  void send(const ControlRequests& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    sent_.push_back(r);
  }
  void clear() override {
    std::lock_guard<std::mutex> lock(mu_);
    brokers_.clear();
    ++clears_;
  }
  // What was sent, from index `from` on.
  std::vector<ControlRequests> sent(size_t from = 0) const {
    std::lock_guard<std::mutex> lock(mu_);
    return {sent_.begin() + static_cast<std::ptrdiff_t>(std::min(from, sent_.size())), sent_.end()};
  }
  size_t sent_count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_.size();
  }
  std::map<int32_t, int64_t> brokers() const {
    std::lock_guard<std::mutex> lock(mu_);
    return brokers_;
  }
  // The port broker `to` was last told, in an UpdateMetadata sent at index
  // >= from, for broker `about`'s listener `listener` (0: none).
  int32_t heard_port(int32_t to, int32_t about, const std::string& listener, size_t from = 0) const {
    std::lock_guard<std::mutex> lock(mu_);
    int32_t port = 0;
    for (size_t i = from; i < sent_.size(); ++i)
      if (auto it = sent_[i].update_metadata.find(to); it != sent_[i].update_metadata.end())
        for (const auto& b : it->second.live_brokers)
          if (b.id == about)
            for (const auto& e : b.endpoints)
              if (e.listener == listener) port = e.port;
    return port;
  }
  // A LeaderAndIsr to broker b, sent at index >= from, for topic-p; its
  // leader (or -100 when none).
  int32_t lai_leader(int32_t b, const std::string& topic, int32_t p, size_t from = 0) const {
    std::lock_guard<std::mutex> lock(mu_);
    int32_t leader = -100;
    for (size_t i = from; i < sent_.size(); ++i) {
      auto it = sent_[i].leader_and_isr.find(b);
      if (it == sent_[i].leader_and_isr.end()) continue;
      for (const auto& t : it->second.topic_states)
        if (t.topic_name == topic)
          for (const auto& s : t.partition_states)
            if (s.partition_index == p) leader = s.leader;
    }
    return leader;
  }
  bool metadata_to(int32_t b, size_t from = 0) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = from; i < sent_.size(); ++i)
      if (sent_[i].update_metadata.contains(b)) return true;
    return false;
  }
  bool anything_to(int32_t b, size_t from) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = from; i < sent_.size(); ++i)
      if (sent_[i].update_metadata.contains(b) || sent_[i].leader_and_isr.contains(b) ||
          sent_[i].stop_replica.contains(b))
        return true;
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::vector<ControlRequests> sent_;
  std::map<int32_t, int64_t> brokers_;
  int clears_ = 0;
};

struct Runtime : Fixture {
  std::map<int32_t, std::unique_ptr<zk::Session>> broker_sessions;
  FakeSender sender;
  std::atomic<int> resigned{0};

  LiveBroker register_broker(int32_t id) {
    broker_sessions[id] = connect();
    LiveBroker b = broker(id);
    REQUIRE(broker_sessions[id]->create(broker_id_path(id), encode_registration(b.endpoints, b.rack, 1),
                                        zk::CreateMode::kEphemeral) == zk::Code::kOk);
    zk::Stat st;
    REQUIRE(tool->exists(broker_id_path(id), &st) == zk::Code::kOk);
    b.epoch = st.czxid;
    return b;
  }
  void unregister(int32_t id) { broker_sessions.erase(id); }  // closing the session drops the node

  std::unique_ptr<Controller> make(ControllerOptions o = {}) {
    return std::make_unique<Controller>(sender, o, [this](const std::string&) { ++resigned; });
  }
  std::shared_ptr<zk::Session> controller_session() { return std::shared_ptr<zk::Session>(connect()); }
  int64_t epoch_of(int32_t id) {
    zk::Stat st;
    REQUIRE(tool->exists(broker_id_path(id), &st) == zk::Code::kOk);
    return st.czxid;
  }
};


}  // namespace ciuickafka::replication::controller::test
