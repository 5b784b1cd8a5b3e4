// replication/controller/request_batch.cc: see request_batch.h.
#include "replication/controller/request_batch.h"

#include <algorithm>

namespace ciuickafka::replication::controller {

namespace {

// SecurityProtocol ids (org.apache.kafka.common.security.auth.SecurityProtocol).
int16_t security_protocol_id(const std::string& name) {
  if (name == "SSL") return 1;
  if (name == "SASL_PLAINTEXT") return 2;
  if (name == "SASL_SSL") return 3;
  return 0;  // PLAINTEXT
}

protocol::UpdateMetadataRequest::UpdateMetadataPartitionState metadata_state(int32_t partition,
                                                                             const auto& snap) {
  protocol::UpdateMetadataRequest::UpdateMetadataPartitionState p;
  p.partition_index = partition;
  p.controller_epoch = snap.state.controller_epoch;
  p.leader = snap.state.leader;
  p.leader_epoch = snap.state.leader_epoch;
  p.isr = snap.state.isr;
  p.zk_version = snap.zk_version;
  p.replicas = snap.assignment.replicas;
  p.offline_replicas = snap.offline;
  return p;
}

}  // namespace

RequestBatch::Snapshot RequestBatch::snapshot(const ControllerContext& ctx, const std::string& topic,
                                              int32_t partition) {
  Snapshot s;
  auto t = ctx.topics.find(topic);
  if (t == ctx.topics.end()) return s;
  s.topic_id = t->second.id;
  auto p = t->second.partitions.find(partition);
  if (p == t->second.partitions.end()) return s;
  s.assignment = p->second.assignment;
  if (p->second.state) s.state = *p->second.state;
  s.zk_version = p->second.zk_version;
  const BrokerSet online = ctx.online();
  for (int32_t r : s.assignment.replicas)
    if (!online.contains(r)) s.offline.push_back(r);
  if (t->second.deleting) s.state.leader = kLeaderDuringDelete;
  return s;
}

void RequestBatch::add_leader_and_isr(const ControllerContext& ctx, const std::vector<int32_t>& brokers,
                                      const std::string& topic, int32_t partition, bool is_new) {
  Snapshot s = snapshot(ctx, topic, partition);
  for (int32_t b : brokers) {
    if (b < 0) continue;
    auto& slot = leader_and_isr_[b];
    auto [it, inserted] = slot.try_emplace(Key{topic, partition}, s);
    if (!inserted) {
      bool was_new = it->second.is_new;
      it->second = s;
      it->second.is_new = was_new;
    }
    it->second.is_new = it->second.is_new || is_new;
  }
  add_update_metadata(ctx, topic, partition);
}

void RequestBatch::add_update_metadata(const ControllerContext& ctx, const std::string& topic, int32_t partition) {
  const PartitionInfo* p = ctx.partition(topic, partition);
  if (!p || !p->state) return;  // Kafka skips partitions without a leader assigned yet
  metadata_partitions_[Key{topic, partition}] = snapshot(ctx, topic, partition);
  metadata_to_all_ = true;
}

void RequestBatch::add_update_metadata_brokers(const std::vector<int32_t>& brokers, bool full) {
  for (int32_t b : brokers) (full ? metadata_full_ : metadata_brokers_).insert(b);
}

void RequestBatch::add_stop_replica(int32_t broker, const std::string& topic, int32_t partition,
                                    bool delete_partition, int32_t leader_epoch) {
  auto& entry = stop_replica_[broker][Key{topic, partition}];
  entry.first = delete_partition ? kEpochDuringDelete : leader_epoch;
  entry.second = entry.second || delete_partition;
}

ControlRequests RequestBatch::build(const ControllerContext& ctx, const ControllerIdentity& id) const {
  ControlRequests out;
  auto epoch_of = [&](int32_t b) { return ctx.live.at(b).epoch; };

  for (const auto& [broker, partitions] : leader_and_isr_) {
    if (!ctx.live.contains(broker)) continue;
    protocol::LeaderAndIsrRequest r;
    r.controller_id = id.broker_id;
    r.controller_epoch = id.epoch;
    r.broker_epoch = epoch_of(broker);
    std::set<int32_t> leaders;
    for (const auto& [key, s] : partitions) {
      if (r.topic_states.empty() || r.topic_states.back().topic_name != key.first) {
        r.topic_states.emplace_back();
        r.topic_states.back().topic_name = key.first;
        r.topic_states.back().topic_id = s.topic_id;
      }
      protocol::LeaderAndIsrRequest::LeaderAndIsrPartitionState p;
      p.partition_index = key.second;
      p.controller_epoch = s.state.controller_epoch;
      p.leader = s.state.leader;
      p.leader_epoch = s.state.leader_epoch;
      p.isr = s.state.isr;
      p.partition_epoch = s.zk_version;
      p.replicas = s.assignment.replicas;
      p.adding_replicas = s.assignment.adding_replicas;
      p.removing_replicas = s.assignment.removing_replicas;
      p.is_new = s.is_new;
      p.leader_recovery_state = static_cast<int8_t>(s.state.leader_recovery_state);
      r.topic_states.back().partition_states.push_back(std::move(p));
      leaders.insert(s.state.leader);
    }
    for (int32_t l : leaders) {
      auto b = ctx.live.find(l);
      if (b == ctx.live.end()) continue;
      for (const auto& e : b->second.endpoints)
        if (e.listener == id.inter_broker_listener) {
          r.live_leaders.push_back({.broker_id = l, .host_name = e.host, .port = e.port, .unknown_tagged_fields = {}});
          break;
        }
    }
    out.leader_and_isr.emplace(broker, std::move(r));
  }

  std::set<int32_t> metadata_targets = metadata_brokers_;
  if (metadata_to_all_)
    for (const auto& [b, _] : ctx.live) metadata_targets.insert(b);
  std::vector<protocol::UpdateMetadataRequest::UpdateMetadataBroker> live_brokers;
  for (const auto& [b, info] : ctx.live) {
    protocol::UpdateMetadataRequest::UpdateMetadataBroker ub;
    ub.id = b;
    for (const auto& e : info.endpoints) {
      protocol::UpdateMetadataRequest::UpdateMetadataEndpoint ue;
      ue.port = e.port;
      ue.host = e.host;
      ue.listener = e.listener;
      ue.security_protocol = security_protocol_id(e.security_protocol);
      ub.endpoints.push_back(std::move(ue));
    }
    ub.rack = info.rack;
    live_brokers.push_back(std::move(ub));
  }
  auto metadata_request = [&](int32_t broker, const std::map<Key, Snapshot>& partitions) {
    protocol::UpdateMetadataRequest r;
    r.controller_id = id.broker_id;
    r.controller_epoch = id.epoch;
    r.broker_epoch = epoch_of(broker);
    for (const auto& [key, s] : partitions) {
      if (r.topic_states.empty() || r.topic_states.back().topic_name != key.first) {
        r.topic_states.emplace_back();
        r.topic_states.back().topic_name = key.first;
        r.topic_states.back().topic_id = s.topic_id;
      }
      r.topic_states.back().partition_states.push_back(metadata_state(key.second, s));
    }
    r.live_brokers = live_brokers;
    return r;
  };
  std::map<Key, Snapshot> full;
  if (!metadata_full_.empty()) {
    for (const auto& [topic, t] : ctx.topics)
      for (const auto& [p, info] : t.partitions)
        if (info.state) full[Key{topic, p}] = snapshot(ctx, topic, p);
    for (const auto& [key, s] : metadata_partitions_) full[key] = s;  // deleted topics too
  }
  for (int32_t b : metadata_targets)
    if (ctx.live.contains(b) && !metadata_full_.contains(b))
      out.update_metadata.emplace(b, metadata_request(b, metadata_partitions_));
  for (int32_t b : metadata_full_)
    if (ctx.live.contains(b)) out.update_metadata.emplace(b, metadata_request(b, full));

  for (const auto& [broker, partitions] : stop_replica_) {
    if (!ctx.live.contains(broker)) continue;
    protocol::StopReplicaRequest r;
    r.controller_id = id.broker_id;
    r.controller_epoch = id.epoch;
    r.broker_epoch = epoch_of(broker);
    for (const auto& [key, v] : partitions) {
      if (r.topic_states.empty() || r.topic_states.back().topic_name != key.first) {
        r.topic_states.emplace_back();
        r.topic_states.back().topic_name = key.first;
      }
      protocol::StopReplicaRequest::StopReplicaPartitionState p;
      p.partition_index = key.second;
      p.leader_epoch = v.first;
      p.delete_partition = v.second;
      r.topic_states.back().partition_states.push_back(std::move(p));
    }
    out.stop_replica.emplace(broker, std::move(r));
  }
  return out;
}

}  // namespace ciuickafka::replication::controller
