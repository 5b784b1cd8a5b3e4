// broker/broker.cc: opening the broker's state and shutting it down.
#include "broker/broker.h"

#include "broker/admin/dynamic_configs.h"

#include "broker/cluster/config_changes.h"
#include "broker/cluster/controlled_shutdown.h"
#include "broker/cluster/replica_manager.h"
#include "broker/cluster/zk_producer_ids.h"
#include "broker/groups/coordinator.h"
#include "broker/txn/coordinator.h"
#include "broker/log_metrics.h"
#include "broker/produce/produce_service.h"
#include "broker/quotas/client_quotas.h"
#include "broker/replica/replica_roles_listener.h"

#include <prometheus/metric_family.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "metrics/log/log.h"
#include "metrics/process_metrics.h"
#include "replication/membership_codec.h"
#include "storage/checkpoint.h"
#include "storage/fd_cache.h"
#include "storage/index_cache.h"
#ifdef CK_TEST_HOOKS
#include "broker/test_hooks.h"
#endif

namespace ciuickafka::broker {
namespace {

constexpr char kMetaProperties[] = "meta.properties";
constexpr auto kTickInterval = std::chrono::seconds(1);

// The index budget's figures (storage/index_cache.h), read at scrape time.
void collect_index_cache(std::vector<prometheus::MetricFamily>& out) {
  const storage::IndexCache& cache = storage::IndexCache::process_default();
  const storage::IndexCache::Stats s = cache.stats();
  const auto add = [&out](const char* name, const char* help, prometheus::MetricType type, double value) {
    out.push_back(metrics::single_sample_family(name, help, type, value));
  };
  add("ciuic_log_index_cache_bytes",
      "Memory held by the indexes of inactive segments (ciuic.log.index.cache.bytes bounds it).",
      prometheus::MetricType::Gauge, static_cast<double>(s.bytes));
  add("ciuic_log_index_cache_capacity_bytes", "ciuic.log.index.cache.bytes.", prometheus::MetricType::Gauge,
      static_cast<double>(cache.capacity()));
  add("ciuic_log_index_cache_evictions_total",
      "Inactive segments whose indexes were unloaded to stay in the budget.", prometheus::MetricType::Counter,
      static_cast<double>(s.evictions));
  add("ciuic_log_index_cache_rebuilds_total",
      "Index reloads that found the files missing or changed and rebuilt the indexes from the .log.",
      prometheus::MetricType::Counter, static_cast<double>(s.rebuilds));
}

// Reads `key=value` lines of a Kafka meta.properties; empty when absent.
std::string read_meta(storage::io::FileSystem& fs, const std::string& path, const std::string& key) {
  auto bytes = storage::io::read_file(fs, path);
  if (!bytes.is_ok()) return {};
  std::istringstream in(std::string(bytes->begin(), bytes->end()));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
  }
  return {};
}


}  // namespace

Broker::Broker(config::BrokerConfig config) : config_(std::move(config)) {}

bool Broker::switch_listeners(const config::Listeners& next, std::string* error) {
  std::lock_guard<std::mutex> lock(listener_switch_mu_);
  const std::function<void()> publish = [&] {
    listeners_.store(std::make_shared<const config::Listeners>(next), std::memory_order_release);
  };
  if (listener_switch_) return listener_switch_(next, publish, error);
  publish();
  return true;
}

void Broker::set_listener_switch(ListenerSwitch fn) {
  std::lock_guard<std::mutex> lock(listener_switch_mu_);
  listener_switch_ = std::move(fn);
}

std::unique_ptr<Broker> Broker::open(config::BrokerConfig config, std::string* error) {
  std::unique_ptr<Broker> b(new Broker(std::move(config)));
  const config::BrokerConfig& c = b->config_;

  auto listeners = config::resolve_listeners(c);
  if (!listeners.is_ok()) {
    *error = listeners.error().message;
    return nullptr;
  }
  b->listeners_.store(std::make_shared<const config::Listeners>(listeners.value()));
  b->node_id_ = c.node_id() >= 0 ? c.node_id() : 1;

  // A KRaft stack with several voters is a cluster, and our clusters run
  // over ZooKeeper: say so rather than start as a lone node that the other
  // brokers' clients would mistake for the cluster.
  if (c.is_null("zookeeper.connect") && !c.get_list("process.roles").empty() &&
      c.get_list("controller.quorum.voters").size() > 1) {
    *error = "controller.quorum.voters names " + std::to_string(c.get_list("controller.quorum.voters").size()) +
             " voters: a CiuicKafka cluster runs over ZooKeeper, not KRaft; set zookeeper.connect "
             "(KAFKA_ZOOKEEPER_CONNECT) to the ZooKeeper ensemble's host:port";
    return nullptr;
  }

  const auto dirs = c.log_dirs();
  if (dirs.empty()) {
    *error = "log.dirs: no log directory configured";
    return nullptr;
  }
  for (const std::string& d : dirs) {
    std::error_code ec;
    std::filesystem::create_directories(d, ec);
    if (ec) {
      *error = "log.dirs: cannot create \"" + d + "\": " + ec.message();
      return nullptr;
    }
  }

  // One broker per log dir: lock them all before reading or writing a byte
  // there (a second broker on the same dir stops here, having changed nothing).
  if (!b->dir_locks_.lock(dirs, error)) return nullptr;

  // Everything below reads and writes the dirs through fs_.
  storage::Status fs_status;
#ifdef CK_TEST_HOOKS
  // Test builds: CK_TEST_MEMFS=1 puts the dirs' contents on the process's
  // in-memory file system (test_hooks.h).
  if (storage::io::MemFileSystem* mem = test_hooks::memfs()) {
    if (!c.is_null("zookeeper.connect")) {
      *error = std::string(test_hooks::kMemFsEnv) + "=1: single-node mode only (zookeeper.connect is set)";
      return nullptr;
    }
    b->fs_ = test_hooks::borrow(*mem);
    for (const std::string& d : dirs) {
      if (auto s = test_hooks::create_dirs(*b->fs_, d); !s.is_ok()) {
        *error = "log.dirs: " + s.to_string();
        return nullptr;
      }
    }
    CK_LOG_WARN("broker", "%s=1: log dirs on an in-memory file system (test build; SIGUSR2 cuts the power)",
                test_hooks::kMemFsEnv);
  }
#endif
  if (!b->fs_) b->fs_ = storage::io::make_file_system(&fs_status);

  // Cluster id: meta.properties of any dir, else cluster.id, else new.
  for (const std::string& d : dirs) {
    b->cluster_id_ = read_meta(*b->fs_, d + "/" + kMetaProperties, "cluster.id");
    if (!b->cluster_id_.empty()) break;
  }
  if (b->cluster_id_.empty() && !c.is_null("cluster.id")) b->cluster_id_ = c.get_string("cluster.id");
  // In a cluster, ZooKeeper's /cluster/id is the truth (created from ours
  // when absent; a different one there stops startup).
  if (!c.is_null("zookeeper.connect")) {
    b->cluster_ = ZkCluster::open(c, b->node_id_, b->cluster_id_, error);
    if (!b->cluster_) return nullptr;
    b->cluster_id_ = b->cluster_->cluster_id();
  }
  if (b->cluster_id_.empty()) b->cluster_id_ = replication::random_cluster_id();

  for (const std::string& d : dirs) {
    std::string meta = "#Written by CiuicKafka\nversion=0\nbroker.id=" + std::to_string(b->node_id_) +
                       "\ncluster.id=" + b->cluster_id_ + "\n";
    auto s = storage::io::write_file_atomically(
        *b->fs_, d + "/" + kMetaProperties,
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(meta.data()), meta.size()));
    if (!s.is_ok()) {
      *error = "log.dirs: " + s.to_string();
      return nullptr;
    }
  }

  b->client_quotas_ = &b->service<quotas::ClientQuotas>();

  // The dynamic broker configs before anything reads them: the log
  // recovery below takes num.recovery.threads.per.data.dir from them, as
  // Kafka's does (a single node's from its file, a cluster's from
  // ZooKeeper; admin/dynamic_configs.h).
  if (!b->cluster_) {
    if (auto s = admin::DynamicConfigs::load(*b->fs_, dirs.front(), b->config_); !s.is_ok()) {
      *error = "cannot load the dynamic broker configs: " + s.to_string();
      return nullptr;
    }
    // A listener change a client made live is this broker's own dynamic
    // config, and wins over server.properties here too, as in Kafka.
    auto live_listeners = config::resolve_listeners(c);
    if (!live_listeners.is_ok()) {
      *error = live_listeners.error().message + " (with the dynamic broker configs of " +
               std::string(admin::kDynamicConfigsFile) + ")";
      return nullptr;
    }
    b->listeners_.store(std::make_shared<const config::Listeners>(live_listeners.value()));
    if (auto s = b->client_quotas().load(dirs.front()); !s.is_ok()) {
      *error = "cannot load the client quotas: " + s.to_string();
      return nullptr;
    }
  } else if (auto session = b->cluster_->session()) {
    // (Its listeners too: they win over server.properties, as in Kafka.)
    if (admin::DynamicConfigs::load_from_zk(*session, b->node_id_, b->config_)) {  // a failure: applied later
      if (auto live_listeners = config::resolve_listeners(c); live_listeners.is_ok())
        b->listeners_.store(std::make_shared<const config::Listeners>(live_listeners.value()));
    }
  }

  // Storage: bound the open segment files, recover the logs, then the
  // topics on top of them.
  if (const int max_open = c.get_int("ciuic.log.max.open.files"); max_open > 0) {
    if (static_cast<size_t>(max_open) > 2 * storage::FdCache::capacity_for_limit())
      CK_LOG_WARN("broker", "ciuic.log.max.open.files=%d is above the soft RLIMIT_NOFILE", max_open);
    storage::FdCache::process_default().set_capacity(static_cast<size_t>(max_open));
  } else {
    storage::FdCache::process_default().set_capacity(storage::FdCache::capacity_for_limit());
  }
  CK_LOG_INFO("broker", "segment files: at most %zu open (ciuic.log.max.open.files)",
              storage::FdCache::process_default().capacity());
  // The index budget is set before the logs open: opening releases
  // inactive segments' indexes into it.
  storage::IndexCache::process_default().set_capacity(
      static_cast<size_t>(c.get_long("ciuic.log.index.cache.bytes")));
  storage::LogManagerConfig lmc;
  lmc.recovery_threads = static_cast<unsigned>(std::max(1, c.get_int("num.recovery.threads.per.data.dir"))) *
                         static_cast<unsigned>(dirs.size());
  lmc.retention_check_interval_ms = c.get_long("log.retention.check.interval.ms");
  lmc.checkpoint_interval_ms = c.get_int("log.flush.offset.checkpoint.interval.ms");
  lmc.file_delete_delay_ms = c.get_long("log.segment.delete.delay.ms");
  lmc.cleaner_enable = c.get_bool("log.cleaner.enable") && c.get_int("log.cleaner.threads") > 0;
  lmc.cleaner_backoff_ms = c.get_long("log.cleaner.backoff.ms");
  lmc.cleaner = admin::DynamicConfigs::cleaner_config(c);
  // Logs open with storage defaults; TopicTable::load then applies each
  // topic's effective config (broker defaults and overrides) to its logs.
  const int64_t now = now_ms();
  auto logs = storage::LogManager::open(*b->fs_, dirs, lmc, now);
  if (!logs.is_ok()) {
    *error = "cannot open the log dirs: " + logs.status().to_string();
    return nullptr;
  }
  b->logs_ = std::move(logs.value());
  {
    const storage::LogManagerStats& st = b->logs_->open_stats();
    std::string names;
    for (const std::string& d : dirs) names += (names.empty() ? "" : ",") + d;
    if (st.logs_opened == 0) {
      CK_LOG_INFO("broker", "log dirs %s: no logs yet", names.c_str());
    } else if (st.dirs_clean == dirs.size()) {
      CK_LOG_INFO("broker", "log dirs %s: %zu logs opened after a clean shutdown", names.c_str(),
                  st.logs_opened);
    } else {
      CK_LOG_INFO("broker",
                  "log dirs %s: %zu logs opened with recovery (no clean-shutdown marker in %zu of %zu "
                  "dirs): %llu segments scanned, %llu bytes truncated",
                  names.c_str(), st.logs_opened, dirs.size() - st.dirs_clean, dirs.size(),
                  static_cast<unsigned long long>(st.segments_recovered),
                  static_cast<unsigned long long>(st.bytes_truncated));
    }
  }
  b->topics_ = std::make_unique<TopicTable>(b->config_, *b->fs_, *b->logs_, &b->append_listeners_);
  // Cluster mode: only what the controller assigns is hosted and served.
  if (b->cluster_) b->topics_->set_sparse(true);
  if (auto s = b->topics_->load(now); !s.is_ok()) {
    *error = "cannot load topics: " + s.to_string();
    return nullptr;
  }

  // The cleaner stops at each partition's HW (and, from the log itself, at
  // its first undecided transaction); a log no partition holds yet waits.
  b->logs_->set_stable_bound([topics = b->topics_.get()](const storage::TopicPartition& tp, const storage::Log& log) {
    auto p = topics->partition(tp.topic, tp.partition);
    if (!p || p->log_ptr().get() != &log) return log.log_start_offset();
    return p->high_watermark();
  });
  // Retention stops at the last stable offset (an open transaction's first
  // offset, else the HW) on a leader; a follower has no producer state and
  // stops at its HW (the leader's log start reaches it with its fetches).
  b->logs_->set_retention_bound([raw = b.get()](const storage::TopicPartition& tp, const storage::Log& log) {
    auto p = raw->topics().partition(tp.topic, tp.partition);
    if (!p || p->log_ptr().get() != &log) return log.log_start_offset();
    if (!p->is_leader()) return p->high_watermark();
    return raw->service<produce::ProduceService>().retention_bound(*p).value_or(log.log_start_offset());
  });

  // The first service, so every one that may run its work (the I/O pool)
  // stops before it does. Kafka snapshots the producer state at every roll
  // of a log; the listener runs under the log's append lock, so it only
  // posts the work to the maintenance pool.
  (void)b->service<produce::ProduceService>();
  b->logs_->set_roll_listener([raw = b.get()](const storage::TopicPartition& tp, int64_t base) {
    asio::post(raw->maintenance_.executor(), [raw, tp, base] {
      if (raw->shut_down_.load()) return;
      if (auto p = raw->topics().partition(tp.topic, tp.partition))
        raw->service<produce::ProduceService>().after_roll(p, base);
    });
  });

  b->metrics_ = std::make_unique<metrics::BrokerMetrics>(b->metrics_registry_);
  b->metrics_registry_.add_collector(collect_index_cache);  // removed with the registry
  b->log_metrics_id_ = register_log_metrics(*b);  // removed by shutdown()
  if (b->cluster_) b->cluster_->export_metrics(b->metrics_registry_);

  b->maintenance_.resize(b->config_.get_int("background.threads"));
  b->tick_timer_ = std::make_unique<asio::steady_timer>(b->maintenance_.executor());
  b->schedule_tick();
  b->background_thread_ = std::thread([raw = b.get()] {
    auto guard = asio::make_work_guard(raw->background_);
    raw->background_.run();
  });
  return b;
}

void Broker::schedule_tick() {
  tick_timer_->expires_after(kTickInterval);
  tick_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec || shut_down_.load()) return;
    const int64_t now = now_ms();
    if (auto s = logs_->tick(now); !s.is_ok())
      CK_LOG_WARN("broker", "log maintenance: %s", s.to_string().c_str());
    service<produce::ProduceService>().tick(now);  // producer.id.expiration.check.interval.ms
    schedule_tick();
  });
}

bool Broker::start_cluster(std::vector<replication::ListenerEndpoint> endpoints, std::string* error) {
  if (!cluster_) return true;
  // Roles from the controller's LeaderAndIsr drive the replication
  // services (fetchers for followers, follower tracking and the HW for
  // leaders): hooked up before registering, so the first request finds them.
  service<ReplicaManager>().add_role_listener(&service<replica::ReplicaRolesListener>());
  // Idempotent-producer state is rebuilt from the log after a role change.
  service<ReplicaManager>().add_role_listener(&service<produce::ProduceService>());
  // The group coordinator loads and unloads __consumer_offsets partitions
  // as this broker gains and loses their leadership.
  service<ReplicaManager>().add_role_listener(&service<groups::GroupCoordinator>());
  // The transaction coordinator likewise with __transaction_state.
  service<ReplicaManager>().add_role_listener(&txn::coordinator(*this));
  if (!cluster_->start(std::move(endpoints), error)) return false;
  // The first producer id block is claimed at start, as Kafka's
  // ZkProducerIdManager does, so the first InitProducerId finds one ready.
  service<ZkProducerIds>().prefetch();
  // Topic config changes made anywhere in the cluster apply here too.
  service<ConfigChangeListener>().start();
  return true;
}

namespace {
// How long a controlled shutdown waits for the controller's UpdateMetadata
// of the move before the listeners stop anyway.
constexpr int64_t kMetadataMoveWaitMs = 5000;
}  // namespace

bool Broker::controlled_shutdown() {
  if (!cluster_ || !config_.get_bool("controlled.shutdown.enable")) return true;
  ControlledShutdownSettings s;
  s.broker_id = node_id_;
  s.max_retries = config_.get_int("controlled.shutdown.max.retries");
  s.retry_backoff_ms = config_.get_long("controlled.shutdown.retry.backoff.ms");
  s.socket_timeout_ms = config_.get_int("controller.socket.timeout.ms");
  s.listener = cluster_->inter_broker_listener();
  CK_LOG_INFO("broker", "controlled shutdown: starting (at most %lld ms)",
              static_cast<long long>(s.bound_ms()));
  ZkCluster* c = cluster_.get();
  // The topics with a partition led here that has other replicas: the move's.
  const std::vector<std::string> moving =
      service<ReplicaManager>().metadata_cache().snapshot()->topics_led_with_followers(node_id_);
  const ControlledShutdownReport r = run_controlled_shutdown(s, [c] { return c->view(); });
  metrics::log::writef(r.succeeded ? metrics::log::Level::kInfo : metrics::log::Level::kWarn, "cluster",
                       "controlled shutdown: %s after %d attempt(s) in %lld ms", r.succeeded ? "succeeded" : "gave up",
                       r.attempts, static_cast<long long>(r.elapsed_ms));
  // The controller answered (attempts > 0) that nothing remains: the
  // leaderships moved. With no other broker registered nothing moved and
  // this broker keeps serving until its stop.
  if (r.succeeded && r.attempts > 0) {
    const size_t n = service<ReplicaManager>().step_down_after_controlled_shutdown();
    if (n > 0) CK_LOG_INFO("cluster", "controlled shutdown: %zu partition(s) no longer led here", n);
    // The listeners stop only once the controller's UpdateMetadata for the
    // move has reached this broker and every other one (controlled_shutdown.h
    // says why); bounded.
    const auto start = std::chrono::steady_clock::now();
    auto elapsed_ms = [&] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    };
    std::string why = "this broker's metadata does not show it yet";
    bool moved = service<ReplicaManager>().wait_metadata_moved_off(kMetadataMoveWaitMs);
    if (moved) {
      auto view = c->view();
      moved = view != nullptr && wait_others_routed_off(s, *view, moving, kMetadataMoveWaitMs - elapsed_ms(), &why);
      if (view == nullptr) why = "no cluster view";
    }
    if (moved)
      CK_LOG_INFO("cluster", "controlled shutdown: every broker's metadata shows the move after %lld ms",
                  static_cast<long long>(elapsed_ms()));
    else
      CK_LOG_WARN("cluster", "controlled shutdown: after %lld ms %s; stopping anyway",
                  static_cast<long long>(elapsed_ms()), why.c_str());
  }
  return r.succeeded;
}

bool Broker::shutdown() {
  if (shut_down_.exchange(true)) return true;
  // Leave the cluster first: the registration goes, so the others stop
  // counting on this broker while it finishes.
  if (cluster_) cluster_->stop();
  // Services first (they may hold waiting requests), newest first.
  std::vector<Service> services;
  {
    std::lock_guard<std::mutex> lock(services_mu_);
    services = services_;
  }
  for (auto it = services.rbegin(); it != services.rend(); ++it)
    if (it->stop) it->stop();
  maintenance_.stop();
  background_.stop();
  if (background_thread_.joinable()) background_thread_.join();
  if (log_metrics_id_ != 0) {
    metrics_registry_.remove_collector(log_metrics_id_);  // waits for a scrape in progress
    log_metrics_id_ = 0;
  }
  bool ok = true;
  if (logs_) {
    logs_->set_group_commit_observer(nullptr);
    if (auto s = logs_->shutdown(); !s.is_ok()) {
      CK_LOG_ERROR("broker", "log shutdown: %s", s.to_string().c_str());
      ok = false;
    }
  }
  return ok;
}

Broker::~Broker() {
  shutdown();
  std::lock_guard<std::mutex> lock(services_mu_);
  while (!services_.empty()) services_.pop_back();
}

}  // namespace ciuickafka::broker
