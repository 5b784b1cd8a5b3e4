// broker/admin/dynamic_configs.h: dynamic broker configs (Kafka's
// DynamicBrokerConfig), a Broker service: `broker.service<DynamicConfigs>()`.
//
// AlterConfigs and IncrementalAlterConfigs on a BROKER resource replace or
// edit one of two sets: the cluster-wide default (resource name "") and this
// broker's own (its node id), this broker's winning (config/broker_config.h
// lays them over the start-up config). Only keys that take effect live here
// are accepted (config::not_dynamic_reason: the topic-level defaults such as
// log.retention.ms, message.max.bytes, min.insync.replicas,
// compression.type; num.io.threads; num.network.threads;
// num.recovery.threads.per.data.dir,
// which only the next start-up's log recovery reads (Broker::open loads
// these sets before it opens the logs); log.cleaner.backoff.ms,
// log.cleaner.dedupe.buffer.size, log.cleaner.io.max.bytes.per.second,
// log.cleaner.io.buffer.size, log.cleaner.io.buffer.load.factor,
// log.cleaner.threads (Kafka's LogCleaner rule: at least 1, within half and
// double the current value, with its text);
// max.connections, max.connections.per.ip and its overrides;
// listeners, advertised.listeners and listener.security.protocol.map,
// below); after a change every topic's
// logs take their new effective settings (TopicTable::refresh_log_configs),
// and Produce, the cleaner and retention read the new values from then on;
// the request handler pool takes its new size (server/io_pool.h), the log
// cleaner its new backoff, offset-map size, I/O rate and threads
// (storage::LogManager::set_cleaner_settings, as Kafka's LogCleaner
// reconfigures) and the network server its new connection limits and
// number of threads (subscribe()). A client's change of num.io.threads,
// num.network.threads, num.replica.fetchers or
// num.recovery.threads.per.data.dir follows Kafka's DynamicThreadPool
// rule: at least half and at most double the current value, else
// INVALID_REQUEST. DescribeConfigs
// reports them as DYNAMIC_BROKER_CONFIG / DYNAMIC_DEFAULT_BROKER_CONFIG.
//
// Listeners (Kafka's DynamicListenerConfig): per broker
// (the cluster default refuses them, as Kafka's PerBrokerConfigs), checked
// as at start-up plus Kafka's rules (a listener keeps its security
// protocol; PLAINTEXT only here, as at start-up). A change that alters the
// listeners binds the new ones before anything is written
// (Broker::switch_listeners, server/server.h); one that cannot be bound
// (a port in use) is refused with INVALID_REQUEST naming it, and nothing
// changes. Then Metadata advertises the new set, the removed listeners stop
// and their connections close, as in Kafka. The set is kept in the file
// below and wins over server.properties at the next start too. Kafka keys
// a listener by name, so it ignores a new port for a listener it has
// until a restart; CiuicKafka moves it (closes and binds anew; a listener
// renamed or moved on the port of one that goes takes that port over). A cluster
// broker keeps its set in /config/brokers/<id> like the others, rewrites
// its registration after a switch (ZkCluster::update_registration: the
// same /brokers/ids/N, so the same broker epoch; the controller spreads
// it), applies a change another tool wrote there the same way
// (apply_locked), and refuses to move or remove its inter-broker
// listener (followers and the controller reach it there).
//
// Single node: persisted in `__ciuickafka_broker_configs.pb` in the first
// log dir (dynamic_configs.proto), written atomically before the change is
// answered and read by Broker::open before the logs open.
//
// Cluster mode: Kafka's ZooKeeper layout. The sets live in
// /config/brokers/<default> and /config/brokers/<id> ({"version":1,
// "config":{...}}); a change writes the znode and a /config/changes
// notification (entity_path "brokers/<default>" or "brokers/<id>") in one
// multi, on the admin worker, and applies it here at once; every other
// broker applies it when the ConfigChangeListener sees the notification
// (and each broker reads both znodes at start, so a change made while it was
// down is applied too). What another tool wrote there and this broker does
// not accept (unknown, static or invalid keys) is skipped with a warning.
//
// Thread-safety: changes (replace*, apply_from_zk) are serialised by a
// mutex; readers of the broker config may run throughout (broker_config.h).
// The *_zk calls use the ZooKeeper session they are given on the caller's
// thread (the admin worker or the config change listener).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "broker/cluster/topic_table.h"
#include "broker/config/broker_config.h"
#include "broker/config/listeners.h"
#include "storage/cleaner.h"
#include "storage/io/file.h"

namespace ciuickafka::broker {
class Broker;
}
namespace ciuickafka::replication::zk {
class Session;
}

namespace ciuickafka::broker::admin {

inline constexpr const char* kDynamicConfigsFile = "__ciuickafka_broker_configs.pb";

class DynamicConfigs {
 public:
  explicit DynamicConfigs(Broker& broker) : broker_(broker) {}

  // The set of resource "" (cluster_default) or of this broker.
  config::DynamicMap current(bool cluster_default) const;
  // Single node: replaces that set: validated (nothing changes on an
  // error), then, unless validate_only, persisted and applied. Errors (Kafka's): INVALID_REQUEST
  // for a key that is unknown or not dynamic here, a bad value, or in
  // cluster mode; KAFKA_STORAGE_ERROR when the file cannot be written.
  TopicError replace(bool cluster_default, const config::DynamicMap& configs, bool validate_only);

  // Reads a single node's persisted sets from `dir` into `config` (nothing
  // when the file is absent). An error names the file and why.
  static storage::Status load(storage::io::FileSystem& fs, const std::string& dir, config::BrokerConfig& config);

  // Cluster mode: the set in ZooKeeper, and its replacement there (then
  // applied here); the same errors as replace(), REQUEST_TIMED_OUT when
  // ZooKeeper fails or the znode changed concurrently.
  TopicError current_in_zk(replication::zk::Session& zk, bool cluster_default, config::DynamicMap* out);
  TopicError replace_in_zk(replication::zk::Session& zk, bool cluster_default, const config::DynamicMap& configs,
                           bool validate_only);
  // Cluster mode: reads both znodes and applies what is valid; false when
  // ZooKeeper could not be read (nothing changed).
  bool apply_from_zk(replication::zk::Session& zk);
  // Cluster mode, at start-up before the logs open: both znodes of node_id,
  // what this broker accepts of them, into config (so the log recovery
  // takes a dynamic num.recovery.threads.per.data.dir). False, leaving
  // config as it was, when ZooKeeper fails; apply_from_zk runs again later.
  static bool load_from_zk(replication::zk::Session& zk, int32_t node_id, config::BrokerConfig& config);

  // The log cleaner's settings in config (log.cleaner.dedupe.buffer.size,
  // log.cleaner.io.max.bytes.per.second, log.cleaner.io.buffer.size,
  // log.cleaner.io.buffer.load.factor, log.cleaner.threads): at open and
  // after every change.
  static storage::CleanerConfig cleaner_config(const config::BrokerConfig& config);

  // The znode of a set and the entity path its notifications name.
  std::string znode(bool cluster_default) const;
  std::string entity(bool cluster_default) const;

  // fn runs after every change applied here (under this class's mutex, so
  // it must not call back into it), until unsubscribe(the id returned),
  // which waits for a run in progress. The network server re-reads its
  // connection limits this way.
  uint64_t subscribe(std::function<void()> fn);
  void unsubscribe(uint64_t id);

 private:
  // Checks a candidate set; fills the two sets that would result.
  // next_listeners (when given): the listeners that would result.
  TopicError validate(bool cluster_default, const config::DynamicMap& configs, config::DynamicMap* next_default,
                      config::DynamicMap* next_mine, config::Listeners* next_listeners = nullptr);
  // Lays the sets over the config and re-applies the topics' log settings.
  // A change's new listeners are bound before anything is written
  // (Broker::switch_listeners): one that cannot be bound fails the change
  // with nothing changed. switch_back() puts the old ones back after a
  // failed write.
  struct ListenerSwitch {
    std::shared_ptr<const config::Listeners> before;
    bool switched = false;
  };
  TopicError switch_first(const config::Listeners& next, ListenerSwitch* sw);
  void switch_back(const ListenerSwitch& sw);
  // listeners_switched: the caller has switched the listeners already; a
  // switch here or there re-registers a cluster broker.
  void apply_locked(const config::DynamicMap& next_default, const config::DynamicMap& next_mine, const char* why,
                    bool listeners_switched = false);

  Broker& broker_;
  std::mutex mu_;
  std::map<uint64_t, std::function<void()>> subscribers_;  // under mu_
  uint64_t next_subscriber_ = 0;
};

}  // namespace ciuickafka::broker::admin
