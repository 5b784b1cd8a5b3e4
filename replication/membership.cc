// replication/membership.cc: registration, controller election and the
// cluster view over one ZooKeeper session at a time.
#include "replication/membership.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "metrics/log/log.h"
#include "replication/membership_codec.h"
#include "replication/zk_data.h"

namespace ciuickafka::replication {
namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void log_line(const char* level, const std::string& what) {
  const auto l = metrics::log::parse_level(level).value_or(metrics::log::Level::kInfo);
  if (metrics::log::enabled(l)) metrics::log::write(l, "cluster", "cluster: " + what);
}

}  // namespace

ClusterMembership::ClusterMembership(zk::Client& client, MembershipConfig config)
    : client_(client), config_(std::move(config)) {}

std::unique_ptr<ClusterMembership> ClusterMembership::open(zk::Client& client, MembershipConfig config,
                                                           std::string* error) {
  std::unique_ptr<ClusterMembership> m(new ClusterMembership(client, std::move(config)));
  if (!m->connect(error)) return nullptr;
  for (std::string_view p : kPersistentPaths) {
    if (zk::Code c = zk::ensure_path(*m->session_, std::string(p)); c != zk::Code::kOk) {
      *error = "zookeeper.connect: cannot create " + std::string(p) + ": " + std::string(zk::to_string(c));
      return nullptr;
    }
  }
  if (!m->settle_cluster_id(error)) return nullptr;
  return m;
}

ClusterMembership::~ClusterMembership() { stop(); }

bool ClusterMembership::connect(std::string* error) {
  std::string why;
  // Events of a session this one replaces are stale (start() replaces an
  // expired session itself; its expiry may be delivered after that).
  const uint64_t gen = session_gen_.fetch_add(1) + 1;
  auto s = client_.connect(
      config_.zk,
      [this, gen](zk::SessionState st) {
        if (gen != session_gen_.load()) return;
        if (st == zk::SessionState::kExpired) post(Event::kSessionExpired);
        else if (st == zk::SessionState::kConnected) post(Event::kSync);
      },
      &why);
  if (!s) {
    *error = "zookeeper.connect=" + config_.zk.connect + ": " + why;
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  session_ = std::shared_ptr<zk::Session>(std::move(s));
  controller_watch_armed_ = false;
  brokers_watch_armed_ = false;
  return true;
}

std::shared_ptr<zk::Session> ClusterMembership::session() const {
  std::lock_guard<std::mutex> lock(mu_);
  return session_;
}

// Kafka creates /cluster/id with a fresh random id when absent; we propose
// the id the log dirs already carry, so a single-node data dir joins a new
// ZooKeeper with its own id instead of failing the id check.
bool ClusterMembership::settle_cluster_id(std::string* error) {
  auto s = session();
  std::string proposed = config_.local_cluster_id.empty() ? random_cluster_id() : config_.local_cluster_id;
  for (int attempt = 0; attempt < 50; ++attempt) {
    std::string data;
    zk::Code c = s->get(std::string(kClusterIdPath), &data);
    if (c == zk::Code::kOk) {
      auto decoded = decode_cluster_id(data);
      if (!decoded.ok()) {
        *error = std::string(kClusterIdPath) + ": " + decoded.error().message;
        return false;
      }
      const std::string id = decoded.value();
      if (!config_.local_cluster_id.empty() && id != config_.local_cluster_id) {
        *error = "the cluster id " + id + " in ZooKeeper (" + config_.zk.connect +
                 ") does not match the cluster id " + config_.local_cluster_id +
                 " in the log dirs' meta.properties: this broker is trying to join the wrong cluster";
        return false;
      }
      cluster_id_ = id;
      return true;
    }
    if (c == zk::Code::kNoNode) {
      c = zk::ensure_path(*s, "/cluster");  // not among Kafka's persistent paths
      if (c == zk::Code::kOk)
        c = s->create(std::string(kClusterIdPath), encode_cluster_id(proposed), zk::CreateMode::kPersistent);
      if (c == zk::Code::kOk) {
        log_line("INFO", "created cluster id " + proposed + " in ZooKeeper");
        cluster_id_ = proposed;
        return true;
      }
      if (c == zk::Code::kNodeExists) continue;  // another broker won: read it
    }
    if (!zk::retriable(c)) {
      *error = "zookeeper.connect: reading /cluster/id: " + std::string(zk::to_string(c));
      return false;
    }
  }
  *error = "zookeeper.connect: could not settle /cluster/id";
  return false;
}

bool ClusterMembership::start(std::vector<ListenerEndpoint> endpoints, int64_t deadline_ms, std::string* error) {
  endpoints_ = std::move(endpoints);
  int64_t deadline = steady_ms() + deadline_ms;
  bool waited = false;
  for (;;) {
    ++registration_attempts_;
    const zk::Code c = register_broker();
    if (c == zk::Code::kOk) break;
    if (c == zk::Code::kSessionExpired) {
      // Expired before it was registered (the process was paused, or
      // ZooKeeper stalled, past the session timeout): a new session, as
      // run() makes one later on. Its expiry event is stale now.
      std::string why;
      if (connect(&why)) {
        log_line("WARN", "ZooKeeper session expired while registering: registering with a new session");
        std::lock_guard<std::mutex> lock(mu_);
        std::erase(events_, Event::kSessionExpired);
        continue;
      }
      log_line("WARN", why + " (retrying)");
    } else if (c != zk::Code::kNodeExists && !zk::retriable(c)) {
      *error = "registering " + broker_id_path(config_.broker_id) + ": " + std::string(zk::to_string(c));
      return false;
    }
    if (c == zk::Code::kNodeExists && !waited) {
      log_line("WARN", broker_id_path(config_.broker_id) +
                           " is held by another ZooKeeper session (an earlier process of broker.id " +
                           std::to_string(config_.broker_id) + "?): waiting for it to expire");
      waited = true;
    }
    if (steady_ms() >= deadline) {
      *error = c == zk::Code::kNodeExists
                   ? "broker.id " + std::to_string(config_.broker_id) +
                         " is registered by another live broker (" + broker_id_path(config_.broker_id) +
                         " did not go away within the session timeout)"
                   : "cannot reach ZooKeeper (" + config_.zk.connect + ") to register";
      return false;
    }
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t before = steady_ms();
    cv_.wait_for(lock, std::chrono::milliseconds(config_.retry_backoff_ms), [this] { return stopping_.load(); });
    if (stopping_.load()) {
      *error = "stopped while registering";
      return false;
    }
    // A wait that overslept by seconds is a process that did not run
    // (SIGSTOP, a starved machine): that time is not the old session's.
    const int64_t overslept = steady_ms() - before - config_.retry_backoff_ms;
    if (overslept > 1000) deadline += overslept;
  }
  registered_ = true;
  sync();
  thread_ = std::thread([this] { run(); });
  return true;
}

void ClusterMembership::stop() {
  if (stopping_.exchange(true)) {
    if (thread_.joinable()) thread_.join();
    return;
  }
  post(Event::kStop);
  if (thread_.joinable()) thread_.join();
  auto s = session();
  if (s && is_controller_) {
    // Resign at once rather than at session close: same effect, explicit.
    (void)s->remove(std::string(kControllerPath), -1);
  }
  std::lock_guard<std::mutex> lock(mu_);
  session_.reset();  // closes the session: the ephemeral nodes go now
}

std::shared_ptr<const ClusterView> ClusterMembership::view() const {
  std::lock_guard<std::mutex> lock(mu_);
  return view_;
}

void ClusterMembership::set_listener(MembershipListener l) {
  std::lock_guard<std::mutex> lock(mu_);
  listener_ = std::move(l);
}

void ClusterMembership::post(Event e) {
  std::lock_guard<std::mutex> lock(mu_);
  if (e == Event::kSync && std::find(events_.begin(), events_.end(), Event::kSync) != events_.end()) return;
  events_.push_back(e);
  cv_.notify_all();
}

void ClusterMembership::run() {
  int64_t retry_at = -1;
  for (;;) {
    Event e;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (retry_at >= 0) {
        const auto wait = std::chrono::milliseconds(std::max<int64_t>(0, retry_at - steady_ms()));
        if (!cv_.wait_for(lock, wait, [this] { return !events_.empty(); })) {
          retry_at = -1;
          events_.push_back(Event::kSync);
        }
      } else {
        cv_.wait(lock, [this] { return !events_.empty(); });
      }
      e = events_.front();
      events_.pop_front();
    }
    if (e == Event::kStop) return;
    if (e == Event::kSessionExpired) {
      ++expirations_;
      log_line("WARN", "ZooKeeper session expired: making a new session and registering again");
      const bool was_controller = is_controller_;
      is_controller_ = false;
      broker_epoch_ = -1;
      needs_new_session_ = true;
      MembershipListener l;
      {
        std::lock_guard<std::mutex> lock(mu_);
        l = listener_;
      }
      if (was_controller && l.controller_changed) l.controller_changed(false);
      was_controller_reported_ = false;
      if (l.session_expired) l.session_expired();
    }
    if (needs_new_session_) {
      std::string why;
      if (!connect(&why)) {
        log_line("WARN", why + " (retrying)");
        retry_at = steady_ms() + config_.retry_backoff_ms;
        continue;
      }
      needs_new_session_ = false;
    }
    if (sync()) {
      retry_at = -1;
    } else {
      ++failed_syncs_;
      retry_at = steady_ms() + config_.retry_backoff_ms;
    }
  }
}

zk::Code ClusterMembership::register_broker() {
  auto s = session();
  const std::string path = broker_id_path(config_.broker_id);
  const std::string data = encode_registration(endpoints_, config_.rack, wall_ms());
  zk::Code c = s->create(path, data, zk::CreateMode::kEphemeral);
  zk::Stat st;
  if (c == zk::Code::kOk || c == zk::Code::kNodeExists) {
    // A create that reached the server before a lost connection leaves our
    // own node: accept it (Kafka's CheckedEphemeral).
    const zk::Code g = s->exists(path, &st);
    if (g == zk::Code::kNoNode) return zk::Code::kConnectionLoss;  // gone meanwhile: try again
    if (g != zk::Code::kOk) return g;
    if (st.ephemeral_owner != s->session_id()) return zk::Code::kNodeExists;
    c = zk::Code::kOk;
  }
  if (c == zk::Code::kOk) {
    if (broker_epoch_ != st.czxid)
      log_line("INFO", "registered " + path + " with broker epoch " + std::to_string(st.czxid));
    broker_epoch_ = st.czxid;
  }
  return c;
}

// Kafka's registerControllerAndIncrementControllerEpoch: one multi creates
// the ephemeral /controller and bumps /controller_epoch against the version
// read, so two brokers racing cannot both win one epoch.
zk::Code ClusterMembership::elect() {
  auto s = session();
  std::string epoch_text;
  zk::Stat epoch_stat;
  zk::Code c = s->get(std::string(kControllerEpochPath), &epoch_text, &epoch_stat);
  if (c == zk::Code::kNoNode) {
    c = s->create(std::string(kControllerEpochPath), "0", zk::CreateMode::kPersistent);
    if (c != zk::Code::kOk && c != zk::Code::kNodeExists) return c;
    c = s->get(std::string(kControllerEpochPath), &epoch_text, &epoch_stat);
  }
  if (c != zk::Code::kOk) return c;
  auto decoded_epoch = decode_controller_epoch(epoch_text);
  if (!decoded_epoch.ok()) {
    log_line("ERROR", std::string(kControllerEpochPath) + " holds '" + epoch_text + "', not an epoch");
    return zk::Code::kOther;
  }
  const int32_t next = decoded_epoch.value() + 1;
  const zk::Op ops[] = {
      zk::Op::create(std::string(kControllerPath), encode_controller(config_.broker_id, wall_ms()),
                     zk::CreateMode::kEphemeral),
      zk::Op::set_data(std::string(kControllerEpochPath), encode_controller_epoch(next), epoch_stat.version),
  };
  std::vector<zk::OpResult> results;
  c = s->multi(ops, &results);
  if (c == zk::Code::kOk) {
    is_controller_ = true;
    controller_epoch_ = next;
    won_epoch_ = next;
    controller_epoch_zk_version_ = results.size() > 1 ? results[1].stat.version : epoch_stat.version + 1;
    ++elections_won_;
    log_line("INFO", "this broker is the controller (epoch " + std::to_string(next) + ")");
    return c;
  }
  if (c == zk::Code::kNodeExists || c == zk::Code::kBadVersion || zk::retriable(c)) {
    // Lost the race, or the answer was lost: won only if the znodes say so.
    int32_t id = -1;
    const zk::Code r = read_controller(&id);
    if (r != zk::Code::kOk && r != zk::Code::kNoNode) return r;
    std::string now_text;
    zk::Stat now_stat;
    const bool epoch_read = id == config_.broker_id &&
                            s->get(std::string(kControllerEpochPath), &now_text, &now_stat) == zk::Code::kOk;
    const auto now_epoch = decode_controller_epoch(now_text);
    if (epoch_read && now_epoch.ok() && now_epoch.value() == next) {
      is_controller_ = true;
      controller_epoch_ = next;
      won_epoch_ = next;
      controller_epoch_zk_version_ = now_stat.version;
      ++elections_won_;
      log_line("INFO", "this broker is the controller (epoch " + std::to_string(next) + ")");
      return zk::Code::kOk;
    }
    return zk::retriable(c) ? c : zk::Code::kOk;
  }
  return c;
}

zk::Code ClusterMembership::read_controller(int32_t* id) {
  auto s = session();
  std::string data;
  zk::WatchFn watch;
  if (!controller_watch_armed_.exchange(true)) {
    watch = [this](zk::EventType, const std::string&) {
      controller_watch_armed_ = false;
      post(Event::kSync);
    };
  }
  zk::Code c = s->exists(std::string(kControllerPath), nullptr, watch);
  if (c != zk::Code::kOk && c != zk::Code::kNoNode) {
    if (watch) controller_watch_armed_ = false;
    return c;
  }
  *id = -1;
  if (c == zk::Code::kNoNode) return c;
  c = s->get(std::string(kControllerPath), &data);
  if (c != zk::Code::kOk) return c;
  auto decoded = decode_controller(data);
  if (!decoded.ok()) {
    log_line("WARN", std::string(kControllerPath) + " holds unreadable data: " + decoded.error().message);
    return zk::Code::kOk;
  }
  *id = decoded->broker_id;
  return zk::Code::kOk;
}

zk::Code ClusterMembership::read_brokers(std::vector<LiveBroker>* out) {
  auto s = session();
  zk::WatchFn watch;
  if (!brokers_watch_armed_.exchange(true)) {
    watch = [this](zk::EventType, const std::string&) {
      brokers_watch_armed_ = false;
      post(Event::kSync);
    };
  }
  std::vector<std::string> ids;
  zk::Code c = s->children(std::string(kBrokerIdsPath), &ids, watch);
  if (c != zk::Code::kOk) {
    if (watch) brokers_watch_armed_ = false;
    return c;
  }
  out->clear();
  for (const std::string& name : ids) {
    int32_t id = -1;
    if (!parse_broker_id(name, &id)) continue;
    LiveBroker b;
    std::string why;
    c = read_live_broker(*s, id, &b, &why);
    if (c == zk::Code::kNoNode) continue;  // left meanwhile; the watch tells us
    if (c != zk::Code::kOk) return c;
    if (!why.empty()) {
      log_line("WARN", broker_id_path(id) + ": " + why + " (broker left out of metadata)");
      continue;
    }
    out->push_back(std::move(b));
  }
  std::sort(out->begin(), out->end(), [](const LiveBroker& a, const LiveBroker& b) { return a.id < b.id; });
  return zk::Code::kOk;
}

void ClusterMembership::request_sync() { post(Event::kSync); }

void ClusterMembership::update_endpoints(std::vector<ListenerEndpoint> endpoints) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_endpoints_ = std::move(endpoints);
  }
  post(Event::kSync);
}

bool ClusterMembership::sync() {
  if (!registered_) return true;
  const int64_t started = steady_ms();
  const int64_t epoch_before = broker_epoch_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_endpoints_) {
      endpoints_ = std::move(*pending_endpoints_);
      pending_endpoints_.reset();
      endpoints_written_ = false;
    }
  }
  zk::Code c = register_broker();
  if (c == zk::Code::kNodeExists) {
    // Someone else holds our id while our session lives: nothing we can fix
    // here; keep serving and keep checking.
    log_line("ERROR", broker_id_path(config_.broker_id) + " is held by another session");
    return false;
  }
  if (c != zk::Code::kOk) return false;
  if (!endpoints_written_) {
    // Our znode (created now or before) gets the endpoints of now; the same
    // node, so the same broker epoch.
    const std::string path = broker_id_path(config_.broker_id);
    c = session()->set(path, encode_registration(endpoints_, config_.rack, wall_ms()), -1);
    if (c != zk::Code::kOk) return false;
    endpoints_written_ = true;
    std::string text;
    for (const auto& e : endpoints_)
      text += (text.empty() ? "" : ",") + e.listener + "://" + e.host + ":" + std::to_string(e.port);
    log_line("INFO", "registered the new endpoints " + text + " in " + path);
  }
  int32_t controller = -1;
  c = read_controller(&controller);
  if (c != zk::Code::kOk && c != zk::Code::kNoNode) return false;
  if (controller < 0) {
    if (elect() != zk::Code::kOk) return false;
    if (read_controller(&controller) != zk::Code::kOk) return false;
  }
  const bool now_controller = controller == config_.broker_id && is_controller_;
  const bool changed_role = now_controller != was_controller_reported_;
  if (controller != config_.broker_id && is_controller_) {
    log_line("INFO", "controller moved to broker " + std::to_string(controller) + ": resigning");
    is_controller_ = false;
  }
  std::string epoch_text;
  if (session()->get(std::string(kControllerEpochPath), &epoch_text) == zk::Code::kOk) {
    if (auto e = decode_controller_epoch(epoch_text); e.ok()) controller_epoch_ = e.value();
  }
  ClusterView v;
  if (read_brokers(&v.brokers) != zk::Code::kOk) return false;
  v.cluster_id = cluster_id_;
  v.controller_id = controller;
  v.controller_epoch = controller_epoch_;
  v.this_is_controller = now_controller;
  v.broker_epoch = broker_epoch_;
  publish(std::move(v));
  if (changed_role) {
    was_controller_reported_ = now_controller;
    MembershipListener l;
    {
      std::lock_guard<std::mutex> lock(mu_);
      l = listener_;
    }
    if (now_controller && l.became_controller)
      l.became_controller(session(), won_epoch_, controller_epoch_zk_version_);
    if (l.controller_changed) l.controller_changed(now_controller);
  }
  MembershipListener l;
  {
    std::lock_guard<std::mutex> lock(mu_);
    l = listener_;
  }
  if (l.synced) l.synced(started, broker_epoch_ != epoch_before);
  return true;
}

void ClusterMembership::publish(ClusterView v) {
  MembershipListener l;
  std::shared_ptr<const ClusterView> shared;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool same = view_ && view_->controller_id == v.controller_id &&
                      view_->controller_epoch == v.controller_epoch &&
                      view_->this_is_controller == v.this_is_controller && view_->broker_epoch == v.broker_epoch &&
                      view_->brokers.size() == v.brokers.size() &&
                      std::equal(view_->brokers.begin(), view_->brokers.end(), v.brokers.begin(),
                                 [](const LiveBroker& a, const LiveBroker& b) {
                                   return a.id == b.id && a.epoch == b.epoch && a.endpoints == b.endpoints &&
                                          a.rack == b.rack;
                                 });
    if (same) return;
    v.generation = ++generation_;
    view_ = std::make_shared<const ClusterView>(std::move(v));
    shared = view_;
    l = listener_;
  }
  if (l.view_changed) l.view_changed(*shared);
}

}  // namespace ciuickafka::replication
