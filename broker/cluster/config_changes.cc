// broker/cluster/config_changes.cc: see config_changes.h.
#include "broker/cluster/config_changes.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "broker/admin/dynamic_configs.h"
#include "broker/broker.h"
#include "broker/cluster/zk_cluster.h"
#include "broker/quotas/client_quotas.h"
#include "metrics/log/log.h"
#include "replication/zk_data.h"

namespace ciuickafka::broker {

namespace zk = replication::zk;

namespace {

constexpr std::string_view kChangeName = "config_change_";

// The sequence number of "config_change_0000000012" (-1: not one).
int64_t sequence_of(const std::string& child) {
  if (child.size() <= kChangeName.size() || child.compare(0, kChangeName.size(), kChangeName) != 0) return -1;
  const std::string digits = child.substr(kChangeName.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::strtoll(digits.c_str(), nullptr, 10);
}

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void ConfigChangeListener::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stopping_) return;
  started_ = true;
  thread_ = std::thread([this] { run(); });
}

void ConfigChangeListener::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ConfigChangeListener::run() {
  std::unique_lock<std::mutex> lock(mu_);
  bool first = true;
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::milliseconds(kResyncMs), [&] { return dirty_ || stopping_; });
    if (stopping_) return;
    dirty_ = false;
    lock.unlock();
    if (process(first)) first = false;
    lock.lock();
  }
}

bool ConfigChangeListener::process(bool first) {
  ZkCluster* cluster = broker_.cluster();
  auto session = cluster ? cluster->session() : nullptr;
  if (!session) return false;
  bool need_watch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (session->session_id() != armed_session_) armed_ = false;  // a new session has no watches
    need_watch = !armed_;
  }
  std::vector<std::string> kids;
  zk::WatchFn watch;
  if (need_watch) {
    watch = [this](zk::EventType, const std::string&) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        dirty_ = true;
        armed_ = false;  // one-shot: set again by the next pass
      }
      cv_.notify_all();
    };
  }
  const std::string root(replication::kConfigChangesPath);
  zk::Code c = session->children(root, &kids, watch);
  if (c != zk::Code::kOk) return false;
  if (watch) {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = !dirty_;  // an event already fired is handled by the next pass
    armed_session_ = session->session_id();
  }
  admin::DynamicConfigs& dynamic = broker_.service<admin::DynamicConfigs>();
  // At start: the dynamic broker configs as ZooKeeper has them now.
  if (first && !synced_ && !dynamic.apply_from_zk(*session)) return false;
  // And the client quotas.
  auto& client_quotas = broker_.service<quotas::ClientQuotas>();
  if (first && !synced_ && !client_quotas.apply_from_zk(*session)) return false;
  std::vector<std::pair<int64_t, std::string>> changes;
  for (const auto& k : kids)
    if (int64_t seq = sequence_of(k); seq >= 0) changes.emplace_back(seq, k);
  std::sort(changes.begin(), changes.end());
  const int64_t now = wall_ms();
  for (const auto& [seq, name] : changes) {
    const std::string path = root + "/" + name;
    std::string data;
    zk::Stat stat;
    zk::Code g = session->get(path, &data, &stat);
    if (g == zk::Code::kNoNode) continue;  // purged by another broker
    if (g != zk::Code::kOk) return false;
    if (seq > last_seq_) {
      auto entity = replication::decode_config_change(data);
      if (!entity.ok()) {
        CK_LOG_WARN("config", "config change %s: %s", path.c_str(), entity.error().message.c_str());
      } else if (entity.value().rfind("topics/", 0) == 0) {
        apply_topic(entity.value().substr(7), "a config change notification");
      } else if (entity.value() == dynamic.entity(true) || entity.value() == dynamic.entity(false)) {
        if (!dynamic.apply_from_zk(*session)) return false;
      } else if (quotas::ClientQuotas::is_quota_entity_path(entity.value())) {
        if (!client_quotas.apply_from_zk(*session)) return false;
      }
      last_seq_ = seq;
    }
    if (now - stat.ctime > kExpirationMs) (void)session->remove(path, stat.version);
  }
  if (first && !synced_) {
    for (const auto& t : broker_.topics().list()) apply_topic(t->name, "start-up");
    synced_ = true;
  }
  return true;
}

void ConfigChangeListener::apply_topic(const std::string& topic, const char* why) {
  auto local = broker_.topics().find(topic);
  const bool controller = broker_.cluster()->is_active_controller();
  if (!local && !controller) return;  // no replica here, nothing to elect
  std::string error;
  auto configs = broker_.cluster()->read_topic_config(topic, &error);
  if (!configs) {
    CK_LOG_WARN("config", "config of topic %s not applied: %s", topic.c_str(), error.c_str());
    return;
  }
  // Kafka's TopicConfigHandler: unclean election turned on for a topic has
  // the controller elect its offline partitions at once.
  if (auto it = configs->find("unclean.leader.election.enable");
      controller && it != configs->end() && (it->second == "true" || it->second == "TRUE" || it->second == "True"))
    broker_.cluster()->elect_offline_partitions();
  if (!local) return;
  ConfigMap wanted(configs->begin(), configs->end());
  if (wanted == local->configs) return;
  TopicError e = broker_.topics().set_configs(topic, wanted, false);
  if (!e.ok()) {
    CK_LOG_WARN("config", "config of topic %s from ZooKeeper refused: %s", topic.c_str(),
                e.message.c_str());
    return;
  }
  applied_.fetch_add(1);
  CK_LOG_INFO("config", "topic %s: configs applied from ZooKeeper (%s)", topic.c_str(), why);
}

}  // namespace ciuickafka::broker
