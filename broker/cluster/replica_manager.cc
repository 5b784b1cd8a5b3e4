// broker/cluster/replica_manager.cc: LeaderAndIsr, StopReplica and
// UpdateMetadata applied (see replica_manager.h).
#include "broker/cluster/replica_manager.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>

#include "broker/broker.h"
#include "broker/cluster/zk_cluster.h"
#include "broker/config/topic_config.h"
#include "metrics/log/log.h"

namespace ciuickafka::broker {
namespace {

using protocol::ErrorCode;
using protocol::LeaderAndIsrRequest;
using protocol::LeaderAndIsrResponse;
using protocol::StopReplicaRequest;
using protocol::StopReplicaResponse;
using protocol::to_wire;

constexpr int32_t kNoEpoch = -1;
constexpr int32_t kEpochDuringDelete = -2;

// The request's partitions with their topic, whatever the version
// (v0-1 ungrouped, v2-4 grouped by name, v5+ with topic ids).
template <class F>
void for_each_partition(const LeaderAndIsrRequest& req, int16_t version, F&& f) {
  if (version < 2) {
    for (const auto& p : req.ungrouped_partition_states) f(p.topic_name, protocol::Uuid{}, p);
    return;
  }
  for (const auto& t : req.topic_states)
    for (const auto& p : t.partition_states) f(t.topic_name, version >= 5 ? t.topic_id : protocol::Uuid{}, p);
}

struct StopEntry {
  std::string topic;
  int32_t partition = 0;
  int32_t leader_epoch = kNoEpoch;
  bool delete_partition = false;
};

std::vector<StopEntry> stop_entries(const StopReplicaRequest& req, int16_t version) {
  std::vector<StopEntry> out;
  if (version == 0) {
    for (const auto& p : req.ungrouped_partitions)
      out.push_back({p.topic_name, p.partition_index, kNoEpoch, req.delete_partitions});
  } else if (version <= 2) {
    for (const auto& t : req.topics)
      for (int32_t p : t.partition_indexes) out.push_back({t.name, p, kNoEpoch, req.delete_partitions});
  } else {
    for (const auto& t : req.topic_states)
      for (const auto& p : t.partition_states)
        out.push_back({t.topic_name, p.partition_index, p.leader_epoch, p.delete_partition});
  }
  return out;
}

// Adds one partition's error to a LeaderAndIsr response in the version's shape.
void add_error(LeaderAndIsrResponse& resp, int16_t version, const std::string& topic, const protocol::Uuid& id,
               int32_t partition, ErrorCode e) {
  LeaderAndIsrResponse::LeaderAndIsrPartitionError pe;
  pe.topic_name = topic;
  pe.partition_index = partition;
  pe.error_code = to_wire(e);
  if (version < 5) {
    resp.partition_errors.push_back(std::move(pe));
    return;
  }
  if (resp.topics.empty() || resp.topics.back().topic_id != id) {
    resp.topics.emplace_back();
    resp.topics.back().topic_id = id;
  }
  resp.topics.back().partition_errors.push_back(std::move(pe));
}

// The overrides ZooKeeper has that this broker knows and accepts.
ConfigMap usable_configs(const std::string& topic, const ConfigMap& in) {
  ConfigMap out;
  for (const auto& [k, v] : in) {
    if (config::parse_topic_value(k, v).is_ok()) {
      out[k] = v;
    } else {
      CK_LOG_WARN("cluster", "topic %s: config %s=%s from ZooKeeper ignored", topic.c_str(),
                  k.c_str(), v.c_str());
    }
  }
  return out;
}

}  // namespace

ReplicaManager::ReplicaManager(Broker& broker) : broker_(broker) {
  config_reader_ = [this](const std::string& topic) -> std::optional<ConfigMap> {
    ZkCluster* c = broker_.cluster();
    if (c == nullptr) return ConfigMap{};
    std::string error;
    auto configs = c->read_topic_config(topic, &error);
    if (!configs) {
      CK_LOG_WARN("cluster", "topic %s: cannot read its configs from ZooKeeper (%s)",
                  topic.c_str(), error.c_str());
      return std::nullopt;
    }
    return ConfigMap(configs->begin(), configs->end());
  };
  broker_epoch_source_ = [this]() -> int64_t {
    ZkCluster* c = broker_.cluster();
    auto view = c ? c->view() : nullptr;
    return view ? view->broker_epoch : -1;
  };
}

void ReplicaManager::add_role_listener(ReplicaRoleListener* l) {
  std::lock_guard<std::mutex> lock(mu_);
  listeners_.push_back(l);
}

void ReplicaManager::set_topic_config_reader(TopicConfigReader r) {
  std::lock_guard<std::mutex> lock(mu_);
  config_reader_ = std::move(r);
}

void ReplicaManager::set_broker_epoch_source(std::function<int64_t()> f) {
  std::lock_guard<std::mutex> lock(mu_);
  broker_epoch_source_ = std::move(f);
}

int64_t ReplicaManager::broker_epoch() const { return broker_epoch_source_ ? broker_epoch_source_() : -1; }

bool ReplicaManager::may_serve(Broker& broker, const Partition& p) {
  ZkCluster* c = broker.cluster();
  return c == nullptr || c->fence().may_serve(p.confirmed_ms());
}

ErrorCode ReplicaManager::leader_error(Broker& broker, const Partition* p, std::string_view topic,
                                       int32_t partition) {
  if (p != nullptr && p->is_leader())
    return may_serve(broker, *p) ? ErrorCode::NONE : ErrorCode::NOT_LEADER_OR_FOLLOWER;
  if (p != nullptr && broker.cluster() == nullptr) return ErrorCode::NOT_LEADER_OR_FOLLOWER;
  if (broker.cluster() == nullptr) return ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
  // Kafka: a partition the metadata knows but this broker does not lead.
  auto snap = broker.service<ReplicaManager>().metadata_cache().snapshot();
  if (snap->partition(topic, partition) != nullptr) return ErrorCode::NOT_LEADER_OR_FOLLOWER;
  return p != nullptr ? ErrorCode::NOT_LEADER_OR_FOLLOWER : ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
}

LeaderAndIsrResponse ReplicaManager::leader_and_isr_error(const LeaderAndIsrRequest& req, int16_t version,
                                                          ErrorCode e) {
  LeaderAndIsrResponse resp;
  resp.error_code = to_wire(e);
  for_each_partition(req, version, [&](const std::string& topic, const protocol::Uuid& id, const auto& p) {
    add_error(resp, version, topic, id, p.partition_index, e);
  });
  return resp;
}

StopReplicaResponse ReplicaManager::stop_replica_error(const StopReplicaRequest& req, int16_t version, ErrorCode e) {
  StopReplicaResponse resp;
  resp.error_code = to_wire(e);
  for (const StopEntry& s : stop_entries(req, version)) {
    StopReplicaResponse::StopReplicaPartitionError pe;
    pe.topic_name = s.topic;
    pe.partition_index = s.partition;
    pe.error_code = to_wire(e);
    resp.partition_errors.push_back(std::move(pe));
  }
  return resp;
}

LeaderEndpoint ReplicaManager::leader_endpoint(int32_t leader, const LeaderAndIsrRequest& req) const {
  LeaderEndpoint ep;
  ep.broker_id = leader;
  for (const auto& l : req.live_leaders)
    if (l.broker_id == leader) {
      ep.host = l.host_name;
      ep.port = l.port;
      return ep;
    }
  // Not named in LiveLeaders: the metadata cache, on the inter-broker listener.
  auto snap = cache_.snapshot();
  if (const CachedBroker* b = snap->broker(leader)) {
    const CachedEndpoint* e = b->endpoint(broker_.listeners()->inter_broker);
    if (e != nullptr) {
      ep.host = e->host;
      ep.port = e->port;
    }
  }
  return ep;  // host empty: the leader's endpoint is not known yet
}

ErrorCode ReplicaManager::apply_one(const PartitionRequest& pr, const LeaderAndIsrRequest& req, int64_t now_ms) {
  const auto& st = *pr.state;
  const int32_t me = broker_.node_id();
  const auto key = std::make_pair(pr.topic, st.partition_index);

  auto local = broker_.topics().find(pr.topic);
  if (local && !pr.topic_id.is_zero() && !local->id.is_zero() && local->id != pr.topic_id)
    return ErrorCode::INCONSISTENT_TOPIC_ID;
  auto it = applied_epoch_.find(key);
  const int32_t current = it == applied_epoch_.end() ? kNoEpoch : it->second;
  if (st.leader_epoch <= current) {
    // The epoch it already has: the controller confirms the role (the
    // leadership fence counts that after a session expiry).
    if (st.leader_epoch == current && local)
      if (auto same = local->partition(st.partition_index)) same->set_confirmed_ms(LeadershipFence::steady_ms());
    return ErrorCode::STALE_CONTROLLER_EPOCH;
  }
  if (std::find(st.replicas.begin(), st.replicas.end(), me) == st.replicas.end())
    return ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;

  std::shared_ptr<Partition> p = local ? local->partition(st.partition_index) : nullptr;
  if (!p) {
    ConfigMap configs;
    if (!local) {
      if (auto read = config_reader_ ? config_reader_(pr.topic) : std::optional<ConfigMap>(ConfigMap{}))
        configs = usable_configs(pr.topic, *read);
    }
    TopicTable::Ensured e = broker_.topics().ensure_partition(pr.topic, pr.topic_id, st.partition_index, configs,
                                                              now_ms);
    if (!e.error.ok()) {
      CK_LOG_ERROR("cluster", "LeaderAndIsr %s-%d: %s", pr.topic.c_str(), st.partition_index,
                   e.error.message.c_str());
      return e.error.code == ErrorCode::INCONSISTENT_TOPIC_ID ? e.error.code : ErrorCode::KAFKA_STORAGE_ERROR;
    }
    p = e.partition;
  }

  PartitionRoleState role;
  role.role = st.leader == me ? ReplicaRole::kLeader : ReplicaRole::kFollower;
  role.leader_id = st.leader;
  role.leader_epoch = st.leader_epoch;
  role.partition_epoch = st.partition_epoch;
  role.controller_epoch = st.controller_epoch;
  role.replicas = st.replicas;
  role.isr = st.isr;
  role.adding_replicas = st.adding_replicas;
  role.removing_replicas = st.removing_replicas;
  const bool leader = role.role == ReplicaRole::kLeader;
  const bool alone = st.isr.size() == 1 && st.isr[0] == me;
  {
    std::string isr;
    for (int32_t r : st.isr) isr += (isr.empty() ? "" : ",") + std::to_string(r);
    CK_LOG_INFO("cluster", "partition %s-%d: %s at leader epoch %d (leader %d, ISR [%s], LEO %lld)",
                pr.topic.c_str(), st.partition_index, leader ? "leader" : "follower", st.leader_epoch, st.leader,
                isr.c_str(), static_cast<long long>(p->log_end_offset()));
  }
  // Kafka's makeLeaders order: the fetcher for the partition is removed
  // (and its in-flight append finished) before the partition becomes leader,
  // so no follower append lands after the first leader append.
  if (leader)
    for (ReplicaRoleListener* l : listeners_) l->will_lead(p);
  // Every epoch applied here is new to this process (older ones were
  // refused above), as Kafka's isNewLeaderEpoch after a restart: the
  // epoch starts at the log's end, taken by set_role under the lock leader
  // appends hold (a leader staying leader may have appends in flight).
  p->set_role(std::move(role), /*starts_epoch=*/leader);
  p->set_confirmed_ms(LeadershipFence::steady_ms());
  applied_epoch_[key] = st.leader_epoch;
  if (leader) {
    // ZooKeeper mode, until the replicated HW lands: a leader alone in its
    // ISR moves the HW with its LEO, as a single node does.
    p->set_hw_follows_leo(alone);
    if (alone) p->set_high_watermark(p->log_end_offset());
    for (ReplicaRoleListener* l : listeners_) l->became_leader(p);
  } else {
    // The HW stays where it is (never past the LEO: set_high_watermark caps
    // it); the fetchers move it from the leader's answers.
    p->set_hw_follows_leo(false);
    const LeaderEndpoint ep = leader_endpoint(st.leader, req);
    for (ReplicaRoleListener* l : listeners_) l->became_follower(p, ep);
  }
  return ErrorCode::NONE;
}

LeaderAndIsrResponse ReplicaManager::leader_and_isr(const LeaderAndIsrRequest& req, int16_t version) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ErrorCode e = cache_.check_fence(req.controller_epoch, version >= 2 ? req.broker_epoch : -1, broker_epoch());
      e != ErrorCode::NONE)
    return leader_and_isr_error(req, version, e);
  cache_.note_controller_epoch(req.controller_epoch);
  LeaderAndIsrResponse resp;
  const int64_t now = Broker::now_ms();
  for_each_partition(req, version, [&](const std::string& topic, const protocol::Uuid& id, const auto& p) {
    PartitionRequest pr{topic, id, &p};
    add_error(resp, version, topic, id, p.partition_index, apply_one(pr, req, now));
  });
  return resp;
}

StopReplicaResponse ReplicaManager::stop_replica(const StopReplicaRequest& req, int16_t version) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ErrorCode e = cache_.check_fence(req.controller_epoch, version >= 1 ? req.broker_epoch : -1, broker_epoch());
      e != ErrorCode::NONE)
    return stop_replica_error(req, version, e);
  cache_.note_controller_epoch(req.controller_epoch);
  StopReplicaResponse resp;
  for (const StopEntry& s : stop_entries(req, version)) {
    const auto key = std::make_pair(s.topic, s.partition);
    auto it = applied_epoch_.find(key);
    const int32_t current = it == applied_epoch_.end() ? kNoEpoch : it->second;
    ErrorCode err = ErrorCode::NONE;
    if (s.leader_epoch != kNoEpoch && s.leader_epoch != kEpochDuringDelete && s.leader_epoch < current) {
      err = ErrorCode::FENCED_LEADER_EPOCH;
    } else {
      std::shared_ptr<Partition> p = broker_.topics().partition(s.topic, s.partition);
      if (p) take_offline(*p);
      if (s.delete_partition) {
        applied_epoch_.erase(key);
        if (p) {
          TopicError e = broker_.topics().remove_partition(s.topic, s.partition);
          if (!e.ok()) {
            CK_LOG_ERROR("cluster", "StopReplica %s-%d: %s", s.topic.c_str(), s.partition,
                         e.message.c_str());
            err = ErrorCode::KAFKA_STORAGE_ERROR;
          }
          // The last hosted partition of the topic gone: so are its series.
          if (!broker_.topics().find(s.topic)) broker_.metrics().remove_topic(s.topic);
        }
      }
      const storage::TopicPartition tp{s.topic, s.partition};
      for (ReplicaRoleListener* l : listeners_) l->stopped(tp, s.delete_partition);
    }
    StopReplicaResponse::StopReplicaPartitionError pe;
    pe.topic_name = s.topic;
    pe.partition_index = s.partition;
    pe.error_code = to_wire(err);
    resp.partition_errors.push_back(std::move(pe));
  }
  return resp;
}

void ReplicaManager::take_offline(Partition& p) {
  PartitionRoleState st = *p.role_state();
  st.role = ReplicaRole::kOffline;
  p.set_role(std::move(st));
  p.set_hw_follows_leo(false);
}

size_t ReplicaManager::step_down_after_controlled_shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& topic : broker_.topics().list()) {
    for (const auto& p : topic->partitions) {
      if (!p || !p->is_leader()) continue;
      if (p->role_state()->replicas.size() < 2) continue;  // nowhere to move: still served until the stop
      take_offline(*p);
      for (ReplicaRoleListener* l : listeners_) l->stopped(p->tp(), false);
      ++n;
    }
  }
  return n;
}

bool ReplicaManager::wait_metadata_moved_off(int64_t bound_ms) {
  const int32_t me = broker_.node_id();
  auto moved = [me](const MetadataSnapshot& s) { return s.topics_led_with_followers(me).empty(); };
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> f = done->get_future();
  const MetadataCache::WaiterId id = cache_.when(moved, [done] { done->set_value(); });
  if (id == 0) return true;
  if (f.wait_for(std::chrono::milliseconds(std::max<int64_t>(0, bound_ms))) == std::future_status::ready) return true;
  if (cache_.cancel(id)) return false;
  f.wait();  // its fn is running: it has just moved
  return true;
}

protocol::UpdateMetadataResponse ReplicaManager::update_metadata(const protocol::UpdateMetadataRequest& req,
                                                                 int16_t version) {
  std::lock_guard<std::mutex> lock(mu_);
  protocol::UpdateMetadataResponse resp;
  ErrorCode e = cache_.check_fence(req.controller_epoch, version >= 5 ? req.broker_epoch : -1, broker_epoch());
  if (e == ErrorCode::NONE) e = cache_.update(req, version);
  resp.error_code = to_wire(e);
  return resp;
}

}  // namespace ciuickafka::broker
