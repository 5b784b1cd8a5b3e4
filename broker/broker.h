// broker/broker.h: the broker's shared state, one per process.
//
// Broker ties the pieces together: the resolved config, the log manager
// (storage), the topic table, the metrics registry, the append listeners
// (the fetch waiting room hangs off these), a background thread for
// the coordinators' timers and deferred work, and the maintenance pool
// (background.threads, maintenance_pool.h) for the periodic disk work:
// the log tick, checkpoints, producer snapshots. Handlers reach
// everything through ctx.broker.
//
// Subsystems that belong to one area (the fetch session cache, producer
// state, the group coordinator) are services: `broker.service<T>()` makes
// one T(Broker&) on first use and keeps it until shutdown, so each area adds
// its own state without this class knowing it. A service may define
// `void stop()`, called at shutdown in reverse creation order.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <typeindex>
#include <vector>

#include "broker/cluster/partition.h"
#include "broker/cluster/topic_table.h"
#include "broker/cluster/zk_cluster.h"
#include "broker/config/broker_config.h"
#include "broker/config/listeners.h"
#include "broker/dir_lock.h"
#include "broker/maintenance_pool.h"
#include "broker/net/asio.h"
#include "metrics/broker_metrics.h"
#include "metrics/registry.h"
#include "storage/io/file.h"
#include "storage/log_manager.h"

namespace ciuickafka::broker {
namespace quotas {
class ClientQuotas;
}

class Broker {
 public:
  // Opens the log dirs (recovery), loads topics and starts the background
  // thread. The network is started separately (server/server.h).
  static std::unique_ptr<Broker> open(config::BrokerConfig config, std::string* error);
  ~Broker();
  Broker(const Broker&) = delete;
  Broker& operator=(const Broker&) = delete;

  const config::BrokerConfig& config() const { return config_; }
  // For the dynamic configs service only (admin/dynamic_configs.h):
  // BrokerConfig::set_dynamic is safe against concurrent readers.
  config::BrokerConfig& config_for_dynamic_update() { return config_; }
  // The listeners now (listeners, advertised.listeners and
  // listener.security.protocol.map, resolved): they change
  // live (admin/dynamic_configs.h), so hold the snapshot, not a reference
  // into it, across a call.
  std::shared_ptr<const config::Listeners> listeners() const { return listeners_.load(std::memory_order_acquire); }
  // A dynamic change of the listeners (admin/dynamic_configs.cc):
  // the network server, when one runs, binds the new listeners, has the
  // snapshot published, then accepts on them and closes the removed ones
  // (set_listener_switch); with none, the snapshot just changes. False, with
  // nothing changed, when a listener cannot be bound.
  bool switch_listeners(const config::Listeners& next, std::string* error);
  // The network server's part of switch_listeners (server/server.h): it
  // calls publish() once the new listeners are bound, before it accepts on
  // them. An empty function when the server stops.
  using ListenerSwitch =
      std::function<bool(const config::Listeners& next, const std::function<void()>& publish, std::string* error)>;
  void set_listener_switch(ListenerSwitch fn);
  int32_t node_id() const { return node_id_; }
  const std::string& cluster_id() const { return cluster_id_; }

  // The ZooKeeper-mode cluster this broker belongs to; null in single-node
  // mode (no zookeeper.connect).
  ZkCluster* cluster() { return cluster_.get(); }
  // Registers the broker in ZooKeeper with its advertised endpoints (called
  // once the listeners are bound). True at once in single-node mode.
  bool start_cluster(std::vector<replication::ListenerEndpoint> endpoints, std::string* error);

  TopicTable& topics() { return *topics_; }
  storage::LogManager& logs() { return *logs_; }
  storage::io::FileSystem& fs() { return *fs_; }
  AppendListeners& append_listeners() { return append_listeners_; }
  metrics::Registry& metrics_registry() { return metrics_registry_; }
  metrics::BrokerMetrics& metrics() { return *metrics_; }

  // A thread for timers and deferred work; never blocks on I/O for long.
  asio::any_io_executor background() { return background_.get_executor(); }
  // The maintenance pool (background.threads): periodic disk work.
  asio::any_io_executor maintenance() { return maintenance_.executor(); }
  MaintenancePool& maintenance_pool() { return maintenance_; }

  static int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  template <class T>
  T& service() {
    std::lock_guard<std::mutex> lock(services_mu_);
    for (auto& s : services_)
      if (s.type == std::type_index(typeid(T))) return *static_cast<T*>(s.ptr.get());
    auto owned = std::make_shared<T>(*this);
    T* raw = owned.get();
    Service s{std::type_index(typeid(T)), owned, nullptr};
    if constexpr (requires(T & t) { t.stop(); }) s.stop = [raw] { raw->stop(); };
    services_.push_back(std::move(s));
    return *raw;
  }

  // Cluster mode with controlled.shutdown.enable: asks the controller to
  // move this broker's leaderships away (broker/cluster/controlled_shutdown.h)
  // while the listeners still serve; blocking, bounded (at most
  // controlled.shutdown.max.retries * controller.socket.timeout.ms +
  // (max.retries - 1) * controlled.shutdown.retry.backoff.ms). Call before
  // stopping the server. True when the controller confirmed it (or nothing
  // was to be done: single-node mode, or disabled).
  bool controlled_shutdown();

  // Stops services, flushes and closes the logs, writes checkpoints and the
  // clean-shutdown marker. Idempotent. Returns false when the storage
  // shutdown reported an error (the marker is then not written).
  bool shutdown();

  // The client quotas (quotas/client_quotas.h) without service()'s lock:
  // produce, fetch, the acceptor and every response ask them.
  quotas::ClientQuotas& client_quotas() { return *client_quotas_; }

 private:
  explicit Broker(config::BrokerConfig config);
  void schedule_tick();

  struct Service {
    std::type_index type;
    std::shared_ptr<void> ptr;
    std::function<void()> stop;
  };

  config::BrokerConfig config_;
  quotas::ClientQuotas* client_quotas_ = nullptr;  // service<>()'s, from open()
  std::atomic<std::shared_ptr<const config::Listeners>> listeners_;
  std::mutex listener_switch_mu_;
  ListenerSwitch listener_switch_;  // under listener_switch_mu_
  int32_t node_id_ = 1;
  std::string cluster_id_;
  std::unique_ptr<ZkCluster> cluster_;
  DirLocks dir_locks_;  // released last, when the process is done with the dirs

  std::unique_ptr<storage::io::FileSystem> fs_;
  std::unique_ptr<storage::LogManager> logs_;
  AppendListeners append_listeners_;
  std::unique_ptr<TopicTable> topics_;
  metrics::Registry metrics_registry_;
  std::unique_ptr<metrics::BrokerMetrics> metrics_;
  uint64_t log_metrics_id_ = 0;  // the scrape-time log collector (log_metrics.h)

  asio::io_context background_;
  std::thread background_thread_;
  MaintenancePool maintenance_;
  std::unique_ptr<asio::steady_timer> tick_timer_;  // on maintenance_

  std::mutex services_mu_;
  std::vector<Service> services_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace ciuickafka::broker
