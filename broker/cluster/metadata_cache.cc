// broker/cluster/metadata_cache.cc: UpdateMetadata applied to snapshots.
#include "broker/cluster/metadata_cache.h"

#include <cctype>

namespace ciuickafka::broker {
namespace {

using protocol::ErrorCode;
using protocol::UpdateMetadataRequest;

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// Versions 1-2 name no listener: it is the security protocol's name.
std::string protocol_name(int16_t id) {
  switch (id) {
    case 1: return "SSL";
    case 2: return "SASL_PLAINTEXT";
    case 3: return "SASL_SSL";
    default: return "PLAINTEXT";
  }
}

void apply_partition(MetadataSnapshot& s, const std::string& topic, const protocol::Uuid* id,
                     const UpdateMetadataRequest::UpdateMetadataPartitionState& in,
                     std::vector<std::pair<std::string, int32_t>>* deleted) {
  if (in.leader == kLeaderDuringDelete) {
    auto t = s.topics.find(topic);
    if (t != s.topics.end()) {
      t->second.partitions.erase(in.partition_index);
      if (t->second.partitions.empty()) s.topics.erase(t);
    }
    if (deleted != nullptr) deleted->emplace_back(topic, in.partition_index);
    return;
  }
  CachedTopic& t = s.topics[topic];
  t.name = topic;
  if (id != nullptr && !id->is_zero()) t.id = *id;
  CachedPartition& p = t.partitions[in.partition_index];
  p.partition = in.partition_index;
  p.controller_epoch = in.controller_epoch;
  p.leader = in.leader;
  p.leader_epoch = in.leader_epoch;
  p.isr = in.isr;
  p.zk_version = in.zk_version;
  p.replicas = in.replicas;
  p.offline_replicas = in.offline_replicas;
}

}  // namespace

const CachedEndpoint* CachedBroker::endpoint(std::string_view listener) const {
  for (const auto& e : endpoints)
    if (same_name(e.listener, listener)) return &e;
  return nullptr;
}

const CachedBroker* MetadataSnapshot::broker(int32_t id) const {
  auto it = brokers.find(id);
  return it == brokers.end() ? nullptr : &it->second;
}

const CachedTopic* MetadataSnapshot::topic(std::string_view name) const {
  auto it = topics.find(name);
  return it == topics.end() ? nullptr : &it->second;
}

const CachedTopic* MetadataSnapshot::topic(const protocol::Uuid& id) const {
  if (id.is_zero()) return nullptr;
  for (const auto& [name, t] : topics)
    if (t.id == id) return &t;
  return nullptr;
}

const CachedPartition* MetadataSnapshot::partition(std::string_view topic_name, int32_t partition) const {
  const CachedTopic* t = topic(topic_name);
  if (t == nullptr) return nullptr;
  auto it = t->partitions.find(partition);
  return it == t->partitions.end() ? nullptr : &it->second;
}

std::vector<std::string> MetadataSnapshot::topics_led_with_followers(int32_t broker) const {
  std::vector<std::string> out;
  for (const auto& [name, t] : topics)
    for (const auto& [index, p] : t.partitions)
      if (p.leader == broker && p.replicas.size() > 1) {
        out.push_back(name);
        break;
      }
  return out;
}

MetadataCache::MetadataCache() : snap_(std::make_shared<const MetadataSnapshot>()) {}

std::shared_ptr<const MetadataSnapshot> MetadataCache::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snap_;
}

ErrorCode MetadataCache::check_fence(int32_t controller_epoch, int64_t request_broker_epoch,
                                     int64_t current_broker_epoch) const {
  if (request_broker_epoch != -1 && current_broker_epoch != -1 && request_broker_epoch < current_broker_epoch)
    return ErrorCode::STALE_BROKER_EPOCH;
  if (controller_epoch < controller_epoch_.load(std::memory_order_acquire)) return ErrorCode::STALE_CONTROLLER_EPOCH;
  return ErrorCode::NONE;
}

void MetadataCache::note_controller_epoch(int32_t controller_epoch) {
  int32_t cur = controller_epoch_.load(std::memory_order_relaxed);
  while (cur < controller_epoch &&
         !controller_epoch_.compare_exchange_weak(cur, controller_epoch, std::memory_order_acq_rel)) {
  }
}

ErrorCode MetadataCache::update(const UpdateMetadataRequest& req, int16_t version,
                                std::vector<std::pair<std::string, int32_t>>* deleted) {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard<std::mutex> ulock(update_mu_);
    if (req.controller_epoch < controller_epoch()) return ErrorCode::STALE_CONTROLLER_EPOCH;
    auto next = std::make_shared<MetadataSnapshot>(*snapshot());
    next->controller_id = req.controller_id < 0 ? -1 : req.controller_id;

    next->brokers.clear();
    for (const auto& b : req.live_brokers) {
      CachedBroker cb;
      cb.id = b.id;
      if (version == 0) {
        cb.endpoints.push_back(CachedEndpoint{"PLAINTEXT", b.v0_host, b.v0_port, 0});
      } else {
        for (const auto& e : b.endpoints)
          cb.endpoints.push_back(CachedEndpoint{version >= 3 ? e.listener : protocol_name(e.security_protocol),
                                                e.host, e.port, e.security_protocol});
      }
      if (version >= 2 && b.rack.has_value() && !b.rack->empty()) cb.rack = b.rack;
      next->brokers[cb.id] = std::move(cb);
    }

    if (version < 5) {
      for (const auto& p : req.ungrouped_partition_states) apply_partition(*next, p.topic_name, nullptr, p, deleted);
    } else {
      for (const auto& t : req.topic_states)
        for (const auto& p : t.partition_states)
          apply_partition(*next, t.topic_name, version >= 7 ? &t.topic_id : nullptr, p, deleted);
    }
    note_controller_epoch(req.controller_epoch);
    initialized_.store(true, std::memory_order_release);
    std::shared_ptr<const MetadataSnapshot> published = next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      snap_ = std::move(next);
    }
    // After the publish: a when() that read the old snapshot has registered
    // by the time this lock is ours, and is checked against the new one.
    std::lock_guard<std::mutex> wlock(waiters_mu_);
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->second.pred(*published)) {
        ready.push_back(std::move(it->second.fn));
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& fn : ready) fn();  // outside the locks: a waiter may read the cache
  return ErrorCode::NONE;
}

MetadataCache::WaiterId MetadataCache::when(std::function<bool(const MetadataSnapshot&)> pred,
                                            std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> wlock(waiters_mu_);
    if (!pred(*snapshot())) {
      const WaiterId id = next_waiter_++;
      waiters_.emplace(id, Waiter{std::move(pred), std::move(fn)});
      return id;
    }
  }
  fn();
  return 0;
}

bool MetadataCache::cancel(WaiterId id) {
  std::lock_guard<std::mutex> wlock(waiters_mu_);
  return waiters_.erase(id) > 0;
}

size_t MetadataCache::waiters() const {
  std::lock_guard<std::mutex> wlock(waiters_mu_);
  return waiters_.size();
}

}  // namespace ciuickafka::broker
