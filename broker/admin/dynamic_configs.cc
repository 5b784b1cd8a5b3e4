// broker/admin/dynamic_configs.cc: see dynamic_configs.h.
#include "broker/admin/dynamic_configs.h"

#include <algorithm>

#include "broker/admin/cluster_info.h"
#include "broker/admin/dynamic_configs.pb.h"
#include "broker/broker.h"
#include "broker/replica/fetcher_manager.h"
#include "broker/server/io_pool.h"
#include "metrics/log/log.h"
#include "replication/zk/session.h"
#include "replication/zk_data.h"

namespace ciuickafka::broker::admin {

namespace zk = replication::zk;

namespace {

// The znode of a set: the cluster default or one broker's.
std::string znode_of(int32_t node_id, bool cluster_default) {
  return "/config/brokers/" + (cluster_default ? std::string("<default>") : std::to_string(node_id));
}


using protocol::ErrorCode;

std::string path_in(const std::string& dir) { return dir + "/" + kDynamicConfigsFile; }


storage::Status persist(storage::io::FileSystem& fs, const std::string& dir, const config::DynamicMap& dflt,
                        const config::DynamicMap& mine) {
  pb::DynamicBrokerConfigs m;
  m.set_version(1);
  for (const auto& [k, v] : dflt) (*m.mutable_cluster_default())[k] = v;
  for (const auto& [k, v] : mine) (*m.mutable_this_broker())[k] = v;
  std::string bytes;
  if (!m.SerializeToString(&bytes)) return storage::Status::corruption("cannot serialise the dynamic broker configs");
  return storage::io::write_file_atomically(
      fs, path_in(dir), std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

// "a=1, b=2" for log lines.
std::string text(const config::DynamicMap& m) {
  std::string out;
  for (const auto& [k, v] : m) out += (out.empty() ? "" : ", ") + k + "=" + v;
  return "{" + out + "}";
}

}  // namespace

config::DynamicMap DynamicConfigs::current(bool cluster_default) const {
  return cluster_default ? broker_.config().dynamic_default() : broker_.config().dynamic_broker();
}

TopicError DynamicConfigs::validate(bool cluster_default, const config::DynamicMap& configs,
                                    config::DynamicMap* next_default, config::DynamicMap* next_mine,
                                    config::Listeners* next_listeners) {
  // Kafka answers INVALID_REQUEST for a static key and for a bad value (its
  // ConfigException becomes an InvalidRequestException). An unknown key is
  // refused too, where Kafka stores it as a custom config (README).
  for (const auto& [name, value] : configs) {
    const config::KeyDef* k = config::find_key(name);
    if (k == nullptr && config::parse_listener_key(name)) continue;  // set_dynamic checks its value
    if (k == nullptr) return {ErrorCode::INVALID_REQUEST, "Unknown broker configuration '" + name + "'."};
    if (auto why = config::not_dynamic_reason(*k))
      return {ErrorCode::INVALID_REQUEST, "Cannot update " + name + " dynamically: " + *why};
  }
  const config::BrokerConfig& cfg = broker_.config();
  *next_default = cluster_default ? configs : cfg.dynamic_default();
  *next_mine = cluster_default ? cfg.dynamic_broker() : configs;
  config::BrokerConfig probe = cfg;
  if (auto r = probe.set_dynamic(*next_default, *next_mine); !r.is_ok())
    return {ErrorCode::INVALID_REQUEST, r.error().message};
  // Kafka's DynamicListenerConfig.validateReconfiguration (set_dynamic has
  // checked the listeners against each other as at start-up).
  auto listeners = config::resolve_listeners(probe);
  if (!listeners) return {ErrorCode::INVALID_REQUEST, listeners.error().message};
  const auto now = broker_.listeners();
  for (const config::Endpoint& e : listeners.value().bound) {
    const auto old = std::find_if(now->bound.begin(), now->bound.end(),
                                  [&e](const config::Endpoint& o) { return o.name == e.name; });
    if (old != now->bound.end() && old->protocol != e.protocol)
      return {ErrorCode::INVALID_REQUEST, "Security protocol cannot be updated for existing listener " + e.name};
    if (old == now->bound.end() && e.protocol != config::SecurityProtocol::kPlaintext)
      return {ErrorCode::INVALID_REQUEST, "Cannot add listener " + e.name + " with security protocol " +
                                              std::string(config::to_string(e.protocol)) +
                                              ": CiuicKafka has no TLS or SASL; PLAINTEXT only"};
  }
  // In a cluster the followers' fetchers and the controller reach this
  // broker on its inter-broker listener, at the address they were given:
  // that listener stays where it is (a restart moves it).
  if (broker_.cluster() != nullptr) {
    const auto find = [](const std::vector<config::Endpoint>& v, const std::string& name) {
      const auto it = std::find_if(v.begin(), v.end(), [&](const config::Endpoint& e) { return e.name == name; });
      return it == v.end() ? std::optional<config::Endpoint>() : std::optional<config::Endpoint>(*it);
    };
    const std::string& ib = now->inter_broker;
    if (listeners.value().inter_broker != ib || find(listeners.value().bound, ib) != find(now->bound, ib) ||
        find(listeners.value().advertised, ib) != find(now->advertised, ib))
      return {ErrorCode::INVALID_REQUEST,
              "Cannot move or remove the inter-broker listener " + ib +
                  " of a broker in a cluster live: its followers and the controller reach it there; set it in "
                  "server.properties, --override or KAFKA_* and restart the broker"};
  }
  if (next_listeners != nullptr) *next_listeners = std::move(listeners).value();
  // Kafka's DynamicThreadPool.validateReconfiguration: a pool grows or
  // shrinks by at most a factor of two per change.
  for (const char* key : {"num.io.threads", "num.network.threads", "num.replica.fetchers",
                          "num.recovery.threads.per.data.dir", "background.threads"}) {
    const int64_t now = cfg.get_int(key), next = probe.get_int(key);
    if (next == now) continue;
    const std::string failed =
        std::string("Dynamic thread count update validation failed for ") + key + "=" + std::to_string(next);
    if (next < now / 2)
      return {ErrorCode::INVALID_REQUEST, failed + ", value should be at least half the current value " + std::to_string(now)};
    if (next > now * 2)
      return {ErrorCode::INVALID_REQUEST,
              failed + ", value should not be greater than double the current value " + std::to_string(now)};
  }
  // Kafka's LogCleaner.validateReconfiguration: the same rule, its own text.
  if (const int64_t now = cfg.get_int("log.cleaner.threads"), next = probe.get_int("log.cleaner.threads"); next != now) {
    if (next < 1) return {ErrorCode::INVALID_REQUEST, "Log cleaner threads should be at least 1"};
    if (next < now / 2)
      return {ErrorCode::INVALID_REQUEST,
              "Log cleaner threads cannot be reduced to less than half the current value " + std::to_string(now)};
    if (next > now * 2)
      return {ErrorCode::INVALID_REQUEST,
              "Log cleaner threads cannot be increased to more than double the current value " + std::to_string(now)};
  }
  return {};
}

storage::CleanerConfig DynamicConfigs::cleaner_config(const config::BrokerConfig& c) {
  storage::CleanerConfig cc;
  cc.dedupe_buffer_bytes = static_cast<size_t>(std::max<int64_t>(1 << 20, c.get_long("log.cleaner.dedupe.buffer.size")));
  cc.io_max_bytes_per_second = c.get_double("log.cleaner.io.max.bytes.per.second");
  cc.io_buffer_bytes = static_cast<size_t>(std::max(0, c.get_int("log.cleaner.io.buffer.size")));
  cc.dedupe_load_factor = c.get_double("log.cleaner.io.buffer.load.factor");
  cc.threads = static_cast<unsigned>(std::max(1, c.get_int("log.cleaner.threads")));
  return cc;
}

uint64_t DynamicConfigs::subscribe(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  subscribers_[++next_subscriber_] = std::move(fn);
  return next_subscriber_;
}

void DynamicConfigs::unsubscribe(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  subscribers_.erase(id);
}

void DynamicConfigs::apply_locked(const config::DynamicMap& next_default, const config::DynamicMap& next_mine,
                                  const char* why, bool listeners_switched) {
  config::BrokerConfig& cfg = broker_.config_for_dynamic_update();
  if (cfg.dynamic_default() == next_default && cfg.dynamic_broker() == next_mine) return;
  if (auto r = cfg.set_dynamic(next_default, next_mine); !r.is_ok()) {
    CK_LOG_WARN("config", "dynamic broker configs (%s) not applied: %s", why, r.error().message.c_str());
    return;
  }
  // Listeners another tool changed in ZooKeeper: switched here (a client's
  // change through this broker was switched before it was written).
  if (auto l = config::resolve_listeners(cfg); l.is_ok() && l.value() != *broker_.listeners()) {
    std::string error;
    if (broker_.switch_listeners(l.value(), &error))
      listeners_switched = true;
    else
      CK_LOG_WARN("config", "dynamic broker configs (%s): the listeners stay as they were: %s", why, error.c_str());
  }
  // In a cluster the registration follows (the controller spreads it).
  if (listeners_switched && broker_.cluster() != nullptr)
    broker_.cluster()->update_registration(registration_endpoints(broker_));
  broker_.topics().refresh_log_configs();
  broker_.service<IoPool>().resize(cfg.get_int("num.io.threads"));
  broker_.maintenance_pool().resize(cfg.get_int("background.threads"));
  if (broker_.cluster() != nullptr) {  // single-node: no followers, no fetchers to resize, no controller
    broker_.service<replica::ReplicaFetcherManager>().resize(cfg.get_int("num.replica.fetchers"));
    broker_.cluster()->set_unclean_leader_election_default(cfg.get_bool("unclean.leader.election.enable"));
  }
  broker_.logs().set_cleaner_settings(cfg.get_long("log.cleaner.backoff.ms"), cleaner_config(cfg));
  for (const auto& [id, fn] : subscribers_) fn();
  CK_LOG_INFO("config", "dynamic broker configs (%s): every broker %s, this broker %s", why,
              text(next_default).c_str(), text(next_mine).c_str());
}

TopicError DynamicConfigs::replace(bool cluster_default, const config::DynamicMap& configs, bool validate_only) {
  std::lock_guard<std::mutex> lock(mu_);
  config::DynamicMap next_default, next_mine;
  config::Listeners next_listeners;
  if (TopicError e = validate(cluster_default, configs, &next_default, &next_mine, &next_listeners); !e.ok())
    return e;
  if (validate_only) return {};
  ListenerSwitch sw;
  if (TopicError e = switch_first(next_listeners, &sw); !e.ok()) return e;
  const std::string dir = broker_.config().log_dirs().front();
  if (storage::Status s = persist(broker_.fs(), dir, next_default, next_mine); !s.is_ok()) {
    switch_back(sw);
    return {ErrorCode::KAFKA_STORAGE_ERROR, "cannot write " + path_in(dir) + ": " + s.to_string()};
  }
  apply_locked(next_default, next_mine, "changed by a client", sw.switched);
  return {};
}

TopicError DynamicConfigs::switch_first(const config::Listeners& next, ListenerSwitch* sw) {
  sw->before = broker_.listeners();
  sw->switched = next != *sw->before;
  std::string error;
  if (sw->switched && !broker_.switch_listeners(next, &error)) {
    sw->switched = false;
    return {ErrorCode::INVALID_REQUEST, error};
  }
  return {};
}

void DynamicConfigs::switch_back(const ListenerSwitch& sw) {
  std::string error;
  if (sw.switched && !broker_.switch_listeners(*sw.before, &error))
    CK_LOG_WARN("config", "the listeners could not be put back after a failed write: %s", error.c_str());
}

std::string DynamicConfigs::znode(bool cluster_default) const { return znode_of(broker_.node_id(), cluster_default); }

std::string DynamicConfigs::entity(bool cluster_default) const {
  return "brokers/" + (cluster_default ? std::string("<default>") : std::to_string(broker_.node_id()));
}

namespace {

// One set from its znode (absent: empty); false on a ZooKeeper failure.
bool read_set(zk::Session& zk, const std::string& path, config::DynamicMap* out, std::string* error) {
  std::string data;
  const zk::Code c = zk.get(path, &data);
  out->clear();
  if (c == zk::Code::kNoNode) return true;
  if (c != zk::Code::kOk) {
    *error = "reading " + path + ": " + std::string(zk::to_string(c));
    return false;
  }
  auto decoded = replication::decode_entity_config(data);
  if (!decoded.ok()) {
    *error = path + ": " + decoded.error().message;
    return false;
  }
  for (const auto& [k, v] : decoded.value()) (*out)[k] = v;
  return true;
}

}  // namespace

TopicError DynamicConfigs::current_in_zk(zk::Session& zk, bool cluster_default, config::DynamicMap* out) {
  std::string error;
  if (!read_set(zk, znode(cluster_default), out, &error)) return {ErrorCode::REQUEST_TIMED_OUT, error};
  return {};
}

TopicError DynamicConfigs::replace_in_zk(zk::Session& zk, bool cluster_default, const config::DynamicMap& configs,
                                         bool validate_only) {
  std::lock_guard<std::mutex> lock(mu_);
  config::DynamicMap next_default, next_mine;
  config::Listeners next_listeners;
  if (TopicError e = validate(cluster_default, configs, &next_default, &next_mine, &next_listeners); !e.ok())
    return e;
  if (validate_only) return {};
  ListenerSwitch sw;
  if (TopicError e = switch_first(next_listeners, &sw); !e.ok()) return e;
  const auto put_back = [&] { switch_back(sw); };
  const std::string path = znode(cluster_default);
  if (zk::Code c = zk::ensure_path(zk, "/config/brokers"); c != zk::Code::kOk && c != zk::Code::kNodeExists) {
    put_back();
    return {ErrorCode::REQUEST_TIMED_OUT, "creating /config/brokers: " + std::string(zk::to_string(c))};
  }
  zk::Stat stat;
  zk::Code c = zk.exists(path, &stat);
  if (c != zk::Code::kOk && c != zk::Code::kNoNode) {
    put_back();
    return {ErrorCode::REQUEST_TIMED_OUT, "reading " + path + ": " + std::string(zk::to_string(c))};
  }
  const std::string data = replication::encode_entity_config(replication::ConfigEntries(configs.begin(), configs.end()));
  std::vector<zk::Op> ops;
  ops.push_back(c == zk::Code::kNoNode ? zk::Op::create(path, data) : zk::Op::set_data(path, data, stat.version));
  ops.push_back(zk::Op::create(std::string(replication::kConfigChangePrefix),
                               replication::encode_config_change(entity(cluster_default)),
                               zk::CreateMode::kPersistentSequential));
  std::vector<zk::OpResult> results;
  c = zk.multi(ops, &results);
  if (c != zk::Code::kOk) put_back();
  if (c == zk::Code::kBadVersion || c == zk::Code::kNodeExists)
    return {ErrorCode::REQUEST_TIMED_OUT, path + " changed concurrently; try again."};
  if (c != zk::Code::kOk)
    return {ErrorCode::REQUEST_TIMED_OUT, "writing " + path + ": " + std::string(zk::to_string(c))};
  apply_locked(next_default, next_mine, "changed by a client", sw.switched);
  return {};
}

namespace {

// What this broker accepts of a set another tool may have written; says
// what it skips.
config::DynamicMap accepted(const config::DynamicMap& in, const std::string& where, bool cluster_default) {
  config::DynamicMap out;
  for (const auto& [k, v] : in) {
    const config::KeyDef* def = config::find_key(k);
    std::optional<std::string> why;
    if (auto lk = def == nullptr ? config::parse_listener_key(k) : std::nullopt) {
      if (auto parsed = config::parse_listener_value(k, *lk, v); !parsed) why = parsed.error().message;
    } else if (def == nullptr) why = "unknown key";
    else if (auto nd = config::not_dynamic_reason(*def)) why = *nd;
    else if (cluster_default && config::is_listener_config(k)) why = "a per-broker config only";
    else if (auto parsed = config::parse_value(*def, v); !parsed) why = parsed.error().message;
    if (why) {
      CK_LOG_WARN("config", "%s: %s=%s skipped: %s", where.c_str(), k.c_str(), v.c_str(), why->c_str());
      continue;
    }
    out[k] = v;
  }
  return out;
}

// Both sets of node_id from ZooKeeper, filtered; false on a failure.
bool read_accepted(zk::Session& zk, int32_t node_id, config::DynamicMap* dflt, config::DynamicMap* mine) {
  config::DynamicMap raw_default, raw_mine;
  std::string error;
  if (!read_set(zk, znode_of(node_id, true), &raw_default, &error) ||
      !read_set(zk, znode_of(node_id, false), &raw_mine, &error)) {
    CK_LOG_WARN("config", "dynamic broker configs not read: %s", error.c_str());
    return false;
  }
  *dflt = accepted(raw_default, znode_of(node_id, true), true);
  *mine = accepted(raw_mine, znode_of(node_id, false), false);
  return true;
}

}  // namespace

bool DynamicConfigs::apply_from_zk(zk::Session& zk) {
  config::DynamicMap dflt, mine;
  if (!read_accepted(zk, broker_.node_id(), &dflt, &mine)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  apply_locked(dflt, mine, "from ZooKeeper");
  return true;
}

bool DynamicConfigs::load_from_zk(zk::Session& zk, int32_t node_id, config::BrokerConfig& config) {
  config::DynamicMap dflt, mine;
  if (!read_accepted(zk, node_id, &dflt, &mine)) return false;
  if (auto r = config.set_dynamic(dflt, mine); !r.is_ok()) {
    CK_LOG_WARN("config", "dynamic broker configs from ZooKeeper not applied at start-up: %s",
                r.error().message.c_str());
    return false;
  }
  return true;
}

storage::Status DynamicConfigs::load(storage::io::FileSystem& fs, const std::string& dir,
                                     config::BrokerConfig& config) {
  const std::string path = path_in(dir);
  auto type = fs.file_type(path);
  if (!type.is_ok() || type.value() != storage::io::FileType::kFile) return storage::Status::ok();
  auto data = storage::io::read_file(fs, path);
  if (!data.is_ok()) return data.status();
  pb::DynamicBrokerConfigs m;
  if (!m.ParseFromArray(data.value().data(), static_cast<int>(data.value().size())))
    return storage::Status::corruption(path + ": not a valid dynamic broker config file");
  const config::DynamicMap dflt(m.cluster_default().begin(), m.cluster_default().end());
  const config::DynamicMap mine(m.this_broker().begin(), m.this_broker().end());
  if (auto r = config.set_dynamic(dflt, mine); !r.is_ok())
    return storage::Status::corruption(path + ": " + r.error().message);
  if (!dflt.empty() || !mine.empty())
    CK_LOG_INFO("config", "dynamic broker configs from %s: cluster default %s, this broker %s", path.c_str(),
                text(dflt).c_str(), text(mine).c_str());
  return storage::Status::ok();
}

}  // namespace ciuickafka::broker::admin
