// broker/cluster/config_changes.h: topic config changes applied live on
// every broker of a cluster, as Kafka's ZooKeeper-mode brokers do
// (ZkConfigManager over ZkNodeChangeNotificationListener).
//
// Whoever changes a topic's overrides (AlterConfigs on any broker,
// kafka-configs.sh --zookeeper, CMAK) writes /config/topics/T and creates a
// sequential /config/changes/config_change_N whose entity_path is
// "topics/T". This service watches /config/changes; for each notification
// newer than the last one it handled it reads /config/topics/T and applies
// it to the topic's local replicas (TopicTable::set_configs: the logs take
// the new retention, segment, cleanup settings at once). At start it
// handles every notification present and also re-reads the overrides of
// every topic it hosts, so a change made while this broker was down is
// applied too. Notifications older than 15 minutes are deleted (Kafka's
// changeExpirationMs), by whichever broker sees them first. A notification
// for brokers/<default> or brokers/<this id> re-reads the dynamic broker
// configs (admin/dynamic_configs.h), which are also read at start; one for
// users/..., clients/... or ips/... re-reads the client quotas
// (quotas/client_quotas.h), also read at start; other brokers' are
// skipped.
//
// ZooKeeper is called only on this service's thread. The watch is re-armed
// after each event and on every new session (after an expiry the watches
// are gone); a pass also runs every kResyncMs in case an event was lost
// while disconnected.
//
// Thread-safety: start/stop from the broker's start and shutdown; the
// counters may be read from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace ciuickafka::broker {

class Broker;

class ConfigChangeListener {
 public:
  static constexpr int64_t kResyncMs = 5000;
  static constexpr int64_t kExpirationMs = 15 * 60 * 1000;

  explicit ConfigChangeListener(Broker& broker) : broker_(broker) {}
  ~ConfigChangeListener() { stop(); }
  ConfigChangeListener(const ConfigChangeListener&) = delete;
  ConfigChangeListener& operator=(const ConfigChangeListener&) = delete;

  void start();
  void stop();

  // Topic config changes applied (a notification whose overrides differed
  // from the local ones), for tests and metrics.
  uint64_t applied() const { return applied_.load(); }

 private:
  void run();
  // One pass over /config/changes; false when ZooKeeper could not be read.
  bool process(bool first);
  void apply_topic(const std::string& topic, const char* why);

  Broker& broker_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool dirty_ = true;
  bool stopping_ = false;
  bool started_ = false;
  std::thread thread_;

  int64_t armed_session_ = 0;   // under mu_: the session the watch is set on (0: none)
  bool armed_ = false;          // under mu_
  // Thread-only state.
  int64_t last_seq_ = -1;       // the newest notification handled
  bool synced_ = false;         // hosted topics re-read once

  std::atomic<uint64_t> applied_{0};
};

}  // namespace ciuickafka::broker
