// broker/quotas/client_quotas.cc: see client_quotas.h.
#include "broker/quotas/client_quotas.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "broker/broker.h"
#include "broker/quotas/client_quotas.pb.h"
#include "metrics/log/log.h"
#include "replication/zk/session.h"
#include "replication/zk_data.h"
#include "storage/io/file.h"

namespace ciuickafka::broker::quotas {

namespace zk = replication::zk;
using protocol::ErrorCode;

namespace {

constexpr int kIpRates = 7;  // the kind slot of per-ip connection rates (after every Kind)

constexpr Kind kKinds[] = {Kind::kProduce, Kind::kFetch, Kind::kRequest, Kind::kMutation};

std::string path_in(const std::string& dir) { return dir + "/" + kClientQuotasFile; }

const char* key_of(Kind kind) {
  switch (kind) {
    case Kind::kProduce:
      return kProducerByteRate;
    case Kind::kFetch:
      return kConsumerByteRate;
    case Kind::kRequest:
      return kRequestPercentage;
    case Kind::kMutation:
      return kControllerMutationRate;
  }
  return kProducerByteRate;
}

storage::Status persist(storage::io::FileSystem& fs, const std::string& dir, const Table& table) {
  pb::ClientQuotas m;
  m.set_version(1);
  for (const auto& [entity, values] : table) {
    pb::ClientQuotaEntity* e = m.add_entities();
    for (const auto& [type, name] : entity) {
      pb::ClientQuotaEntity::Part* p = e->add_parts();
      p->set_type(type);
      p->set_is_default(!name.has_value());
      if (name) p->set_name(*name);
    }
    for (const auto& [k, v] : values) (*e->mutable_values())[k] = v;
  }
  std::string bytes;
  if (!m.SerializeToString(&bytes)) return storage::Status::corruption("cannot serialise the client quotas");
  return storage::io::write_file_atomically(
      fs, path_in(dir), std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

std::string text(const Table& t) {
  std::string out;
  for (const auto& [entity, values] : t) {
    std::string v;
    for (const auto& [k, x] : values) {
      const std::optional<KeyType> type = key_type(entity, k);
      v += (v.empty() ? "" : ", ") + k + "=" + value_text(type.value_or(KeyType::kDouble), x);
    }
    out += (out.empty() ? "" : "; ") + to_string(entity) + " {" + v + "}";
  }
  return out.empty() ? "none" : out;
}

// The quota keys of one znode's config (others, such as SCRAM credentials
// under /config/users, are not ours); an unparsable value is skipped.
Values quota_values(const Entity& entity, const replication::ConfigEntries& config, const std::string& path) {
  Values out;
  for (const auto& [k, v] : config) {
    if (!key_type(entity, k)) continue;
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (v.empty() || end == nullptr || *end != '\0' || !(d > 0)) {
      CK_LOG_WARN("quotas", "%s: %s=%s skipped: not a positive number", path.c_str(), k.c_str(), v.c_str());
      continue;
    }
    out[k] = d;
  }
  return out;
}

// A znode's config (absent or empty data: none); false on a failure.
bool read_config(zk::Session& zk, const std::string& path, replication::ConfigEntries* out, zk::Stat* stat,
                 bool* exists, std::string* error) {
  std::string data;
  zk::Stat st;
  const zk::Code c = zk.get(path, &data, &st);
  out->clear();
  *exists = c == zk::Code::kOk;
  if (stat != nullptr) *stat = st;
  if (c == zk::Code::kNoNode) return true;
  if (c != zk::Code::kOk) {
    *error = "reading " + path + ": " + std::string(zk::to_string(c));
    return false;
  }
  if (data.empty()) return true;  // a parent made on the way to users/<u>/clients/<c>
  auto decoded = replication::decode_entity_config(data);
  if (!decoded.ok()) {
    CK_LOG_WARN("quotas", "%s skipped: %s", path.c_str(), decoded.error().message.c_str());
    return true;
  }
  *out = std::move(decoded.value());
  return true;
}

// Children of path (absent: none); false on a failure.
bool children_of(zk::Session& zk, const std::string& path, std::vector<std::string>* out, std::string* error) {
  out->clear();
  const zk::Code c = zk.children(path, out);
  if (c == zk::Code::kNoNode) return true;
  if (c != zk::Code::kOk) {
    *error = "listing " + path + ": " + std::string(zk::to_string(c));
    return false;
  }
  return true;
}

}  // namespace

ClientQuotas::ClientQuotas(Broker& broker)
    : broker_(broker),
      samples_(std::max(1, broker.config().get_int("quota.window.num"))),
      window_ms_(std::max<int64_t>(1, int64_t{broker.config().get_int("quota.window.size.seconds")} * 1000)),
      mutation_samples_(std::max(1, broker.config().get_int("controller.quota.window.num"))),
      mutation_window_ms_(
          std::max<int64_t>(1, int64_t{broker.config().get_int("controller.quota.window.size.seconds")} * 1000)),
      table_(std::make_shared<const Table>()) {}

std::shared_ptr<const Table> ClientQuotas::table() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_;
}

void ClientQuotas::install(Table next, const char* why) {
  // Under change_mu_.
  if (*table() == next) return;
  CK_LOG_INFO("quotas", "client quotas (%s): %s", why, text(next).c_str());
  if (!next.empty()) enabled_.store(true, std::memory_order_relaxed);
  unsigned kinds = 0;
  for (const auto& [entity, values] : next)
    for (Kind k : kKinds)
      if (values.count(key_of(k)) != 0) kinds |= 1u << static_cast<unsigned>(k);
  kinds_set_.store(kinds, std::memory_order_relaxed);
  auto ips = std::make_shared<const IpRates>(resolve_ip_rates(next));  // (may resolve host names)
  auto t = std::make_shared<const Table>(std::move(next));
  std::lock_guard<std::mutex> lock(mu_);
  table_ = std::move(t);
  ip_rates_ = std::move(ips);
}


std::vector<AlterResult> ClientQuotas::alter(const std::vector<Alteration>& alterations, bool validate_only) {
  std::lock_guard<std::mutex> lock(change_mu_);
  const std::shared_ptr<const Table> current = table();
  Table next = *current;
  std::vector<AlterResult> results = quotas::alter(&next, alterations);
  if (validate_only || next == *current) return results;
  const std::string dir = broker_.config().log_dirs().front();
  if (storage::Status s = persist(broker_.fs(), dir, next); !s.is_ok()) {
    for (AlterResult& r : results)
      if (r.error.ok()) r.error = {ErrorCode::KAFKA_STORAGE_ERROR, "cannot write " + path_in(dir) + ": " + s.to_string()};
    return results;
  }
  install(std::move(next), "changed by a client");
  return results;
}

storage::Status ClientQuotas::load(const std::string& dir) {
  const std::string path = path_in(dir);
  auto type = broker_.fs().file_type(path);
  if (!type.is_ok() || type.value() != storage::io::FileType::kFile) return storage::Status::ok();
  auto data = storage::io::read_file(broker_.fs(), path);
  if (!data.is_ok()) return data.status();
  pb::ClientQuotas m;
  if (!m.ParseFromArray(data.value().data(), static_cast<int>(data.value().size())))
    return storage::Status::corruption(path + ": not a valid client quota file");
  Table t;
  for (const pb::ClientQuotaEntity& e : m.entities()) {
    Entity entity;
    for (const auto& p : e.parts())
      entity[p.type()] = p.is_default() ? std::nullopt : std::optional<std::string>(p.name());
    Values values(e.values().begin(), e.values().end());
    if (!entity.empty() && !values.empty()) t[std::move(entity)] = std::move(values);
  }
  std::lock_guard<std::mutex> lock(change_mu_);
  install(std::move(t), path.c_str());
  return storage::Status::ok();
}

bool ClientQuotas::read_zk(zk::Session& zk, Table* out, std::string* error) {
  out->clear();
  auto add = [&](const std::string& entity_path) -> bool {
    const std::optional<Entity> entity = entity_of_zk_path(entity_path);
    if (!entity) return true;
    const std::string path = "/config/" + entity_path;
    replication::ConfigEntries config;
    bool exists = false;
    if (!read_config(zk, path, &config, nullptr, &exists, error)) return false;
    Values v = quota_values(*entity, config, path);
    if (!v.empty()) (*out)[*entity] = std::move(v);
    return true;
  };
  std::vector<std::string> kids, clients;
  for (const char* root : {"clients", "ips"}) {
    if (!children_of(zk, std::string("/config/") + root, &kids, error)) return false;
    for (const auto& k : kids)
      if (!add(std::string(root) + "/" + k)) return false;
  }
  if (!children_of(zk, "/config/users", &kids, error)) return false;
  for (const auto& u : kids) {
    if (!add("users/" + u)) return false;
    if (!children_of(zk, "/config/users/" + u + "/clients", &clients, error)) return false;
    for (const auto& c : clients)
      if (!add("users/" + u + "/clients/" + c)) return false;
  }
  return true;
}

bool ClientQuotas::apply_from_zk(zk::Session& zk) {
  Table t;
  std::string error;
  if (!read_zk(zk, &t, &error)) {
    CK_LOG_WARN("quotas", "client quotas not read from ZooKeeper: %s", error.c_str());
    return false;
  }
  std::lock_guard<std::mutex> lock(change_mu_);
  install(std::move(t), "from ZooKeeper");
  return true;
}

bool ClientQuotas::is_quota_entity_path(const std::string& p) {
  return p.rfind("users/", 0) == 0 || p.rfind("clients/", 0) == 0 || p.rfind("ips/", 0) == 0;
}

std::vector<AlterResult> ClientQuotas::alter_in_zk(zk::Session& zk, const std::vector<Alteration>& alterations,
                                                   bool validate_only) {
  std::lock_guard<std::mutex> lock(change_mu_);
  auto fail_all = [&](const std::string& why) {
    return fail_each(alterations, {ErrorCode::REQUEST_TIMED_OUT, why});
  };
  Table current;
  std::string error;
  if (!read_zk(zk, &current, &error)) return fail_all(error);
  Table next = current;
  std::vector<AlterResult> results = quotas::alter(&next, alterations);
  if (validate_only) return results;
  // Each entity whose quotas changed: its znode rewritten (keeping what
  // else it holds) and a notification, all in one multi.
  std::vector<zk::Op> ops;
  std::set<std::string> parents;
  for (const AlterResult& r : results) {
    if (!r.error.ok()) continue;
    auto before = current.find(r.entity);
    auto after = next.find(r.entity);
    const Values none;
    if ((before == current.end() ? none : before->second) == (after == next.end() ? none : after->second)) continue;
    const std::optional<std::string> entity_path = zk_entity_path(r.entity);
    if (!entity_path) continue;  // (validated shapes always have one)
    const std::string path = "/config/" + *entity_path;
    replication::ConfigEntries config;
    zk::Stat stat;
    bool exists = false;
    if (!read_config(zk, path, &config, &stat, &exists, &error)) return fail_all(error);
    replication::ConfigEntries kept;
    for (auto& [k, v] : config)
      if (!key_type(r.entity, k)) kept.emplace_back(k, v);
    if (after != next.end())
      for (const auto& [k, v] : after->second) kept.emplace_back(k, value_text(*key_type(r.entity, k), v));
    const std::string data = replication::encode_entity_config(kept);
    if (exists) {
      ops.push_back(zk::Op::set_data(path, data, stat.version));
    } else {
      const std::string parent = path.substr(0, path.rfind('/'));
      parents.insert(parent);
      ops.push_back(zk::Op::create(path, data));
    }
    ops.push_back(zk::Op::create(std::string(replication::kConfigChangePrefix),
                                 replication::encode_config_change(*entity_path), zk::CreateMode::kPersistentSequential));
  }
  if (ops.empty()) return results;
  for (const std::string& parent : parents)
    if (zk::Code c = zk::ensure_path(zk, parent); c != zk::Code::kOk && c != zk::Code::kNodeExists)
      return fail_all("creating " + parent + ": " + std::string(zk::to_string(c)));
  if (zk::Code c = zk::ensure_path(zk, std::string(replication::kConfigChangesPath));
      c != zk::Code::kOk && c != zk::Code::kNodeExists)
    return fail_all("creating /config/changes: " + std::string(zk::to_string(c)));
  std::vector<zk::OpResult> op_results;
  const zk::Code c = zk.multi(ops, &op_results);
  if (c == zk::Code::kBadVersion || c == zk::Code::kNodeExists)
    return fail_all("the client quotas changed concurrently; try again.");
  if (c != zk::Code::kOk) return fail_all("writing the client quotas: " + std::string(zk::to_string(c)));
  install(std::move(next), "changed by a client");
  return results;
}

ConnectionRate& ClientQuotas::rate_locked(const std::tuple<int, std::string, std::string>& key, int64_t now_ms) {
  // Forget rates idle for all their windows now and then (their rate is 0).
  if (++records_since_sweep_ >= 1024) {
    records_since_sweep_ = 0;
    const int64_t idle = static_cast<int64_t>(samples_) * window_ms_;
    for (auto it = rates_.begin(); it != rates_.end();)
      it = now_ms - it->second.last_record_ms() >= idle ? rates_.erase(it) : std::next(it);
  }
  auto it = rates_.find(key);
  if (it == rates_.end()) it = rates_.emplace(key, ConnectionRate(samples_, window_ms_)).first;
  return it->second;
}

std::optional<Match> ClientQuotas::match(Kind kind, const std::string& client_id) const {
  if (!enabled() || !kind_set(kind)) return std::nullopt;
  return find(*table(), key_of(kind), kAnonymousUser, client_id);
}

int64_t ClientQuotas::record(Kind kind, const std::string& client_id, double value, int64_t now_ms) {
  const std::optional<Match> m = match(kind, client_id);
  if (!m) return 0;
  int64_t throttle = 0;
  {
    std::lock_guard<std::mutex> lock(rates_mu_);
    throttle = rate_locked({static_cast<int>(kind), m->user_tag, m->client_tag}, now_ms)
                   .record_value(now_ms, value, m->limit);
  }
  if (kind == Kind::kRequest) throttle = std::min(throttle, window_ms_);  // Kafka's bound for request quotas
  if (throttle > 0) {
    throttled_[static_cast<int>(kind)].fetch_add(1, std::memory_order_relaxed);
    throttled_ms_[static_cast<int>(kind)].fetch_add(static_cast<uint64_t>(throttle), std::memory_order_relaxed);
  }
  return std::min<int64_t>(throttle, INT32_MAX);
}

void ClientQuotas::unrecord(Kind kind, const std::string& client_id, double value, int64_t now_ms) {
  const std::optional<Match> m = match(kind, client_id);
  if (!m) return;
  std::lock_guard<std::mutex> lock(rates_mu_);
  (void)rate_locked({static_cast<int>(kind), m->user_tag, m->client_tag}, now_ms)
      .record_value(now_ms, -value, std::numeric_limits<double>::infinity());
}

int64_t ClientQuotas::max_value_in_window(Kind kind, const std::string& client_id) const {
  const std::optional<Match> m = match(kind, client_id);
  if (!m) return -1;
  const double v = m->limit * static_cast<double>(samples_ - 1) * (static_cast<double>(window_ms_) / 1000.0);
  return v >= static_cast<double>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
}

bool ClientQuotas::limits(std::string_view client_id) const {
  if (!enabled() || kinds_set_.load(std::memory_order_relaxed) == 0) return false;
  const std::string client(client_id);
  for (Kind k : kKinds)
    if (match(k, client)) return true;
  return false;
}

MutationQuota ClientQuotas::mutation_quota(const std::string& client_id, bool strict) {
  MutationQuota q;
  const std::optional<Match> m = match(Kind::kMutation, client_id);
  if (!m) return q;
  q.owner_ = this;
  q.limit_ = m->limit;
  q.user_tag_ = m->user_tag;
  q.client_tag_ = m->client_tag;
  q.strict_ = strict;
  return q;
}

double ClientQuotas::take_tokens(const MutationQuota& q, double permits, int64_t now_ms, bool* refused) {
  // Kafka's TokenBucket: refilled at the quota per second up to the burst,
  // quota * samples * window; a bucket starts full.
  const double window_s = static_cast<double>(mutation_window_ms_) / 1000.0;
  auto burst_of = [&](double limit) { return limit * static_cast<double>(mutation_samples_) * window_s; };
  auto refilled = [&](const Bucket& b, double limit) {
    return b.tokens + limit * static_cast<double>(std::max<int64_t>(0, now_ms - b.last_ms)) / 1000.0;
  };
  const double burst = burst_of(q.limit_);
  std::lock_guard<std::mutex> lock(rates_mu_);
  if (++takes_since_sweep_ >= 256) {  // forget buckets that are full again
    takes_since_sweep_ = 0;
    for (auto it = buckets_.begin(); it != buckets_.end();)
      it = refilled(it->second, it->second.limit) >= burst_of(it->second.limit) ? buckets_.erase(it) : std::next(it);
  }
  auto [it, fresh] = buckets_.try_emplace({q.user_tag_, q.client_tag_});
  Bucket& b = it->second;
  b.tokens = fresh ? burst : std::min(burst, refilled(b, q.limit_));
  b.last_ms = now_ms;
  b.limit = q.limit_;
  *refused = q.strict_ && b.tokens < 0;
  if (!*refused) b.tokens = std::min(burst, b.tokens - permits);
  return b.tokens;
}

bool MutationQuota::record(double permits) {
  if (owner_ == nullptr) return true;
  const int64_t now = steady_ms();
  bool refused = false;
  const double tokens = owner_->take_tokens(*this, permits, now, &refused);
  // Strict: only a refused record throttles (the bucket was below zero
  // before it); permissive: any record that leaves the bucket below zero.
  if ((strict_ && refused) || (!strict_ && tokens < 0)) {
    last_throttle_ms_ = std::llround(-tokens / limit_ * 1000.0);
    last_recorded_ms_ = now;
  }
  return !refused;
}

int64_t MutationQuota::throttle_ms() const {
  if (last_throttle_ms_ <= 0) return 0;
  return std::clamp<int64_t>(last_throttle_ms_ - (steady_ms() - last_recorded_ms_), 0, INT32_MAX);
}

int64_t MutationQuota::answer_throttle_ms() {
  const int64_t t = throttle_ms();
  if (t > 0 && !counted_) {
    counted_ = true;
    owner_->throttled_[static_cast<int>(Kind::kMutation)].fetch_add(1, std::memory_order_relaxed);
    owner_->throttled_ms_[static_cast<int>(Kind::kMutation)].fetch_add(static_cast<uint64_t>(t),
                                                                       std::memory_order_relaxed);
  }
  return t;
}

int64_t ClientQuotas::record_connection(const std::string& ip, int64_t now_ms) {
  if (!enabled()) return 0;
  std::shared_ptr<const IpRates> rates;
  {
    std::lock_guard<std::mutex> lock(mu_);
    rates = ip_rates_;
  }
  const std::optional<double> limit = find_ip(*rates, ip);
  if (!limit) return 0;
  int64_t throttle = 0;
  {
    std::lock_guard<std::mutex> lock(rates_mu_);
    ConnectionRate& r = rate_locked({kIpRates, ip, std::string()}, now_ms);
    throttle = std::min(window_ms_, r.record_value(now_ms, 1, *limit));
    // A connection closed unserved does not count (Kafka takes it back).
    if (throttle > 0) (void)r.record_value(now_ms, -1, std::numeric_limits<double>::infinity());
  }
  if (throttle > 0) conn_throttled_.fetch_add(1, std::memory_order_relaxed);
  return throttle;
}

}  // namespace ciuickafka::broker::quotas
