// replication/controller/controller_state.cc: loading the context, new
// topics, broker failure and startup. See controller_state.h.
#include "replication/controller/controller_state.h"

#include <algorithm>
#include <random>

#include "replication/controller/fenced_zk.h"
#include "replication/id_list.h"
#include "replication/membership_codec.h"
#include "storage/checkpoint.h"

namespace ciuickafka::replication::controller {

namespace {

constexpr int kStateWriteAttempts = 3;

std::vector<int32_t> live_ids(const ControllerContext& ctx) {
  std::vector<int32_t> out;
  for (const auto& [id, _] : ctx.live) out.push_back(id);
  return out;
}

}  // namespace

PartitionStateMachine::PartitionStateMachine(zk::Session& zk, ControllerIdentity id, std::vector<LiveBroker> live)
    : zk_(zk), id_(std::move(id)) {
  for (auto& b : live) ctx_.live[b.id] = std::move(b);
}

StepResult PartitionStateMachine::resigned_result() const {
  StepResult r;
  r.outcome = Outcome::kResign;
  r.message = "no longer the controller (epoch " + std::to_string(id_.epoch) + " was superseded)";
  return r;
}

bool PartitionStateMachine::stop_on(FenceOutcome outcome, zk::Code code, StepResult* r) {
  if (outcome == FenceOutcome::kFenced) {
    resigned_ = true;
    r->outcome = Outcome::kResign;
    r->message = "controller epoch check failed (" + std::string(zk::to_string(code)) + "): resign";
    return true;
  }
  if (outcome == FenceOutcome::kError) {
    r->outcome = Outcome::kZkError;
    r->message = "ZooKeeper: " + std::string(zk::to_string(code));
    return true;
  }
  return false;
}

void PartitionStateMachine::finish(RequestBatch& batch, StepResult* r) const {
  r->requests = batch.build(ctx_, id_);
}

std::vector<int32_t> PartitionStateMachine::live_replicas(const std::vector<int32_t>& replicas) const {
  const BrokerSet online = ctx_.online();
  std::vector<int32_t> out;
  for (int32_t b : replicas)
    if (online.contains(b)) out.push_back(b);
  return out;
}

// ---- reading

PartitionStateMachine::Write PartitionStateMachine::read_state(const std::string& topic, int32_t p,
                                                               PartitionInfo* info, StepResult* r) {
  std::string data;
  zk::Stat stat;
  zk::Code c = zk_.get(partition_state_path(topic, p), &data, &stat);
  if (c == zk::Code::kNoNode) {
    info->state.reset();
    info->zk_version = -1;
    return Write::kOk;
  }
  if (c != zk::Code::kOk) {
    stop_on(FenceOutcome::kError, c, r);
    return Write::kStop;
  }
  auto decoded = decode_partition_state(data);
  if (!decoded) {
    r->failed.push_back({{topic, p}, "unreadable partition state: " + decoded.error().message});
    return Write::kConflict;
  }
  info->state = decoded.value();
  info->zk_version = stat.version;
  return Write::kOk;
}

PartitionStateMachine::Write PartitionStateMachine::ensure_topic_id(const std::string& topic, TopicAssignment* a,
                                                                    int32_t* version, StepResult* r) {
  for (int attempt = 0; attempt < kStateWriteAttempts && !a->topic_id; ++attempt) {
    TopicAssignment with_id = *a;
    with_id.topic_id = replication::random_topic_id();
    std::vector<zk::Op> ops{zk::Op::set_data(topic_path(topic), encode_topic_assignment(with_id), *version)};
    FencedWrite w = fenced_multi(zk_, id_.epoch_zk_version, std::move(ops));
    if (stop_on(w.outcome, w.code, r)) return Write::kStop;
    if (w.outcome == FenceOutcome::kOk) {
      *a = std::move(with_id);
      *version = w.results[0].stat.version;
      return Write::kOk;
    }
    if (w.code != zk::Code::kBadVersion) break;
    // Another writer changed the assignment meanwhile: read it again.
    std::string data;
    zk::Stat stat;
    zk::Code c = zk_.get(topic_path(topic), &data, &stat);
    if (c != zk::Code::kOk) break;
    auto decoded = decode_topic_assignment(data);
    if (!decoded) break;
    *a = std::move(decoded).value();
    *version = stat.version;
  }
  if (a->topic_id) return Write::kOk;
  r->failed.push_back({{topic, -1}, "could not set the topic id"});
  return Write::kConflict;
}

PartitionStateMachine::Write PartitionStateMachine::load_topic(const std::string& topic, StepResult* r) {
  std::string data;
  zk::Stat stat;
  zk::Code c = zk_.get(topic_path(topic), &data, &stat);
  if (c == zk::Code::kNoNode) {
    ctx_.topics.erase(topic);
    return Write::kOk;
  }
  if (c != zk::Code::kOk) {
    stop_on(FenceOutcome::kError, c, r);
    return Write::kStop;
  }
  auto decoded = decode_topic_assignment(data);
  if (!decoded) {
    r->failed.push_back({{topic, -1}, "unreadable assignment: " + decoded.error().message});
    return Write::kConflict;
  }
  TopicAssignment a = std::move(decoded).value();
  int32_t version = stat.version;
  if (Write w = ensure_topic_id(topic, &a, &version, r); w != Write::kOk) return w;

  TopicInfo& t = ctx_.topics[topic];
  t.id = *a.topic_id;
  t.znode_version = version;
  std::map<int32_t, PartitionInfo> partitions;
  for (auto& [p, replicas] : a.partitions) {
    PartitionInfo info;
    info.assignment = std::move(replicas);
    if (read_state(topic, p, &info, r) == Write::kStop) return Write::kStop;
    partitions.emplace(p, std::move(info));
  }
  t.partitions = std::move(partitions);
  return Write::kOk;
}

StepResult PartitionStateMachine::load() {
  if (resigned_) return resigned_result();
  StepResult r;
  std::vector<std::string> names;
  zk::Code c = zk_.children(std::string(kTopicsPath), &names);
  if (c != zk::Code::kOk && c != zk::Code::kNoNode) {
    stop_on(FenceOutcome::kError, c, &r);
    return r;
  }
  std::sort(names.begin(), names.end());
  ctx_.topics.clear();
  for (const auto& n : names)
    if (load_topic(n, &r) == Write::kStop) return r;
  return r;
}

// ---- writing partition states

PartitionStateMachine::Write PartitionStateMachine::update_state(const std::string& topic, int32_t p,
                                                                 const Transform& transform, StepResult* r,
                                                                 bool* changed) {
  *changed = false;
  for (int attempt = 0; attempt < kStateWriteAttempts; ++attempt) {
    PartitionInfo* info = ctx_.partition(topic, p);
    if (!info || !info->state) return Write::kOk;
    std::optional<PartitionState> next = transform(*info);
    if (!next) return Write::kOk;
    std::vector<zk::Op> ops{zk::Op::set_data(partition_state_path(topic, p), encode_partition_state(*next),
                                             info->zk_version)};
    FencedWrite w = fenced_multi(zk_, id_.epoch_zk_version, std::move(ops));
    if (stop_on(w.outcome, w.code, r)) return Write::kStop;
    if (w.outcome == FenceOutcome::kOk) {
      if (elections_ != nullptr && next->leader >= 0 && next->leader != info->state->leader) {
        elections_->elections.fetch_add(1, std::memory_order_relaxed);
        if (!contains(info->state->isr, next->leader)) elections_->unclean.fetch_add(1, std::memory_order_relaxed);
      }
      info->state = std::move(next);
      info->zk_version = w.results[0].stat.version;
      *changed = true;
      return Write::kOk;
    }
    if (w.code != zk::Code::kBadVersion) {
      r->failed.push_back({{topic, p}, "state write failed: " + std::string(zk::to_string(w.code))});
      return Write::kConflict;
    }
    // The znode moved under us (a leader's legacy ISR write): re-read, re-apply.
    if (Write rw = read_state(topic, p, info, r); rw != Write::kOk) return rw;
  }
  r->failed.push_back({{topic, p}, "state znode kept changing"});
  return Write::kConflict;
}

PartitionStateMachine::Write PartitionStateMachine::initialize_partitions(const std::string& topic,
                                                                          RequestBatch& batch, StepResult* r) {
  auto t = ctx_.topics.find(topic);
  if (t == ctx_.topics.end() || t->second.deleting) return Write::kOk;
  const BrokerSet online = ctx_.online();
  std::vector<zk::Op> ops;
  std::vector<std::pair<int32_t, PartitionState>> created;
  zk::Code c = zk_.exists(topic_partitions_path(topic));
  bool partitions_exists = c == zk::Code::kOk;
  if (c != zk::Code::kOk && c != zk::Code::kNoNode) return stop_on(FenceOutcome::kError, c, r), Write::kStop;
  if (!partitions_exists) ops.push_back(zk::Op::create(topic_partitions_path(topic), ""));
  for (auto& [p, info] : t->second.partitions) {
    if (info.state) continue;
    auto initial = initial_partition_state(info.assignment.replicas, online, id_.epoch);
    if (!initial) {
      r->failed.push_back({{topic, p}, "no assigned replica is alive"});  // stays NewPartition
      continue;
    }
    if (partitions_exists) {
      c = zk_.exists(topic_partition_path(topic, p));
      if (c != zk::Code::kOk && c != zk::Code::kNoNode) return stop_on(FenceOutcome::kError, c, r), Write::kStop;
    }
    if (!partitions_exists || c == zk::Code::kNoNode) ops.push_back(zk::Op::create(topic_partition_path(topic, p), ""));
    ops.push_back(zk::Op::create(partition_state_path(topic, p), encode_partition_state(*initial)));
    created.emplace_back(p, std::move(*initial));
  }
  if (created.empty()) return Write::kOk;
  FencedWrite w = fenced_multi(zk_, id_.epoch_zk_version, std::move(ops));
  if (stop_on(w.outcome, w.code, r)) return Write::kStop;
  if (w.outcome != FenceOutcome::kOk) {
    // A state znode appeared meanwhile (NODEEXISTS): take what is there.
    for (auto& [p, _] : created) {
      if (read_state(topic, p, &t->second.partitions[p], r) == Write::kStop) return Write::kStop;
      r->failed.push_back({{topic, p}, "creating the state failed: " + std::string(zk::to_string(w.code))});
    }
    return Write::kConflict;
  }
  for (auto& [p, state] : created) {
    PartitionInfo& info = t->second.partitions[p];
    info.state = std::move(state);
    info.zk_version = 0;
    batch.add_leader_and_isr(ctx_, info.state->isr, topic, p, /*is_new=*/true);
  }
  return Write::kOk;
}

PartitionStateMachine::Write PartitionStateMachine::elect_offline_and_new(const UncleanAllowed& unclean,
                                                                          RequestBatch& batch, StepResult* r) {
  const BrokerSet online = ctx_.online();
  std::vector<std::string> names;
  for (const auto& [name, _] : ctx_.topics) names.push_back(name);
  for (const auto& topic : names) {
    if (initialize_partitions(topic, batch, r) == Write::kStop) return Write::kStop;
    TopicInfo& t = ctx_.topics.at(topic);
    if (t.deleting) continue;
    const bool allow_unclean = unclean && unclean(topic);
    for (auto& [p, info] : t.partitions) {
      if (!info.state || online.contains(info.state->leader)) continue;
      bool changed = false;
      Write w = update_state(topic, p, [&](const PartitionInfo& cur) {
        return elect_offline(cur.assignment.replicas, *cur.state, online, allow_unclean, id_.epoch);
      }, r, &changed);
      if (w == Write::kStop) return w;
      if (changed)
        batch.add_leader_and_isr(ctx_, live_replicas(info.assignment.replicas), topic, p, false);
      else if (w == Write::kOk)
        r->failed.push_back({{topic, p}, "no live replica in the ISR (unclean election not allowed)"});
    }
  }
  return Write::kOk;
}

PartitionStateMachine::Write PartitionStateMachine::remove_from_isrs(int32_t broker, RequestBatch& batch,
                                                                     StepResult* r) {
  for (auto& [topic, t] : ctx_.topics) {
    if (t.deleting) continue;
    for (auto& [p, info] : t.partitions) {
      if (!info.state || !contains(info.state->isr, broker)) continue;
      bool changed = false;
      Write w = update_state(topic, p, [&](const PartitionInfo& cur) {
        return remove_replica_from_isr(*cur.state, broker, id_.epoch);
      }, r, &changed);
      if (w == Write::kStop) return w;
      if (!changed) continue;
      std::vector<int32_t> recipients;
      for (int32_t b : live_replicas(info.assignment.replicas))
        if (b != broker) recipients.push_back(b);
      batch.add_leader_and_isr(ctx_, recipients, topic, p, false);
    }
  }
  return Write::kOk;
}

// ---- events

StepResult PartitionStateMachine::startup(const UncleanAllowed& unclean) {
  if (resigned_) return resigned_result();
  StepResult r;
  RequestBatch batch;
  std::vector<int32_t> all = live_ids(ctx_);
  batch.add_update_metadata_brokers(all, /*full=*/true);
  for (const auto& [topic, t] : ctx_.topics)
    for (const auto& [p, info] : t.partitions)
      if (info.state && !t.deleting)
        batch.add_leader_and_isr(ctx_, live_replicas(info.assignment.replicas), topic, p, false);
  // Replicas on brokers that are gone go offline: they leave the ISRs
  // (Kafka's ReplicaStateMachine.startup moves them to OfflineReplica).
  if (elect_offline_and_new(unclean, batch, &r) != Write::kStop) {
    std::set<int32_t> dead;
    for (const auto& [topic, t] : ctx_.topics)
      for (const auto& [p, info] : t.partitions)
        if (info.state)
          for (int32_t b : info.state->isr)
            if (!ctx_.live.contains(b)) dead.insert(b);
    for (int32_t b : dead)
      if (remove_from_isrs(b, batch, &r) == Write::kStop) break;
  }
  finish(batch, &r);
  r.requests.metadata_first = true;
  return r;
}

StepResult PartitionStateMachine::elect_offline_partitions(const UncleanAllowed& unclean) {
  if (resigned_) return resigned_result();
  StepResult r;
  RequestBatch batch;
  elect_offline_and_new(unclean, batch, &r);
  finish(batch, &r);
  return r;
}

StepResult PartitionStateMachine::on_new_topics(const std::vector<std::string>& names) {
  if (resigned_) return resigned_result();
  StepResult r;
  RequestBatch batch;
  for (const auto& topic : names) {
    if (ctx_.topics.contains(topic) && ctx_.topics.at(topic).deleting) continue;
    Write w = load_topic(topic, &r);
    if (w == Write::kStop) break;
    if (w == Write::kOk && initialize_partitions(topic, batch, &r) == Write::kStop) break;
  }
  finish(batch, &r);
  return r;
}

StepResult PartitionStateMachine::on_broker_failure(const std::vector<int32_t>& ids, const UncleanAllowed& unclean) {
  if (resigned_) return resigned_result();
  StepResult r;
  RequestBatch batch;
  for (int32_t id : ids) {
    ctx_.live.erase(id);
    ctx_.shutting_down.erase(id);
  }
  // Kafka's onReplicasBecomeOffline: partitions they led go offline and are
  // elected first, then the dead replicas leave the ISRs one broker at a time.
  if (elect_offline_and_new(unclean, batch, &r) != Write::kStop)
    for (int32_t id : ids)
      if (remove_from_isrs(id, batch, &r) == Write::kStop) break;
  std::vector<int32_t> all = live_ids(ctx_);
  batch.add_update_metadata_brokers(all, false);  // the live broker list changed
  finish(batch, &r);
  return r;
}

StepResult PartitionStateMachine::on_broker_startup(const std::vector<LiveBroker>& brokers,
                                                    const UncleanAllowed& unclean) {
  if (resigned_) return resigned_result();
  StepResult r;
  RequestBatch batch;
  std::vector<int32_t> existing = live_ids(ctx_);
  std::vector<int32_t> joined;
  for (const auto& b : brokers) {
    ctx_.live[b.id] = b;
    ctx_.shutting_down.erase(b.id);
    joined.push_back(b.id);
    std::erase(existing, b.id);
  }
  batch.add_update_metadata_brokers(existing, false);
  batch.add_update_metadata_brokers(joined, true);
  // Their replicas come online: each hears the state of its partitions.
  for (const auto& [topic, t] : ctx_.topics) {
    if (t.deleting) continue;
    for (const auto& [p, info] : t.partitions) {
      if (!info.state) continue;
      std::vector<int32_t> to;
      for (int32_t b : joined)
        if (contains(info.assignment.replicas, b)) to.push_back(b);
      if (!to.empty()) batch.add_leader_and_isr(ctx_, to, topic, p, false);
    }
  }
  // Reassignments whose target has a replica on a joined broker go on
  // (Kafka's maybeResumeReassignments), then pending deletions are retried.
  const std::set<int32_t> joined_set(joined.begin(), joined.end());
  auto targets_joined = [&](const PartitionReplicas& a) {
    for (int32_t b : target_replicas(a))
      if (joined_set.contains(b)) return true;
    return false;
  };
  if (elect_offline_and_new(unclean, batch, &r) != Write::kStop &&
      resume_where(targets_joined, {}, batch, &r) != Write::kStop && !ctx_.pending_deletions.empty()) {
    std::vector<std::string> pending(ctx_.pending_deletions.begin(), ctx_.pending_deletions.end());
    delete_topics(pending, batch, &r);
  }
  finish(batch, &r);
  r.requests.metadata_first = true;
  return r;
}

StepResult PartitionStateMachine::on_broker_update(const LiveBroker& broker) {
  if (resigned_) return resigned_result();
  StepResult r;
  RequestBatch batch;
  ctx_.live[broker.id] = broker;
  batch.add_update_metadata_brokers(live_ids(ctx_), false);
  finish(batch, &r);
  r.requests.metadata_first = true;
  return r;
}

}  // namespace ciuickafka::replication::controller
