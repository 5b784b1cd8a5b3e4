// replication/controller/controller_admin.cc: the request- and admin-driven
// steps: preferred and unclean election, controlled shutdown, topic deletion,
// AlterPartition's state writes. See
// controller_state.h.
#include <algorithm>

#include "replication/controller/controller_state.h"
#include "replication/controller/fenced_zk.h"
#include "replication/id_list.h"

namespace ciuickafka::replication::controller {

namespace {

constexpr int16_t kBrokerNotAvailable = 8;
constexpr int16_t kStaleBrokerEpoch = 77;

// The paths under and including root, children before parents.
zk::Code collect_subtree(zk::Session& zk, const std::string& root, std::vector<std::string>* out) {
  std::vector<std::string> kids;
  zk::Code c = zk.children(root, &kids);
  if (c != zk::Code::kOk) return c;
  std::sort(kids.begin(), kids.end());
  for (const auto& k : kids)
    if (zk::Code cc = collect_subtree(zk, root + "/" + k, out); cc != zk::Code::kOk) return cc;
  out->push_back(root);
  return zk::Code::kOk;
}

}  // namespace

StepResult PartitionStateMachine::elect_preferred(const std::vector<TopicPartitionRef>& partitions) {
  if (resigned_) return resigned_result();
  StepResult r;
  RequestBatch batch;
  const BrokerSet online = ctx_.online();
  for (const auto& tp : partitions) {
    const PartitionInfo* info = ctx_.partition(tp.topic, tp.partition);
    if (!info || !info->state) {
      r.failed.push_back({tp, "unknown partition or no leader assigned yet"});
      continue;
    }
    if (ctx_.topics.at(tp.topic).deleting) {
      r.failed.push_back({tp, "topic is being deleted"});
      continue;
    }
    if (preferred_leader_elected(info->assignment.replicas, *info->state)) {
      r.not_needed.push_back(tp);
      continue;
    }
    bool changed = false;
    Write w = update_state(tp.topic, tp.partition, [&](const PartitionInfo& cur) {
      return replication::elect_preferred(cur.assignment.replicas, *cur.state, online, id_.epoch);
    }, &r, &changed);
    if (w == Write::kStop) break;
    if (changed)
      batch.add_leader_and_isr(ctx_, live_replicas(info->assignment.replicas), tp.topic, tp.partition, false);
    else if (w == Write::kOk)
      r.failed.push_back({tp, "preferred replica is not alive or not in the ISR"});
  }
  finish(batch, &r);
  return r;
}

StepResult PartitionStateMachine::elect_unclean(const std::vector<TopicPartitionRef>& partitions) {
  if (resigned_) return resigned_result();
  StepResult r;
  RequestBatch batch;
  const BrokerSet online = ctx_.online();
  for (const auto& tp : partitions) {
    const PartitionInfo* info = ctx_.partition(tp.topic, tp.partition);
    if (!info || !info->state) {
      r.failed.push_back({tp, "unknown partition or no leader assigned yet"});
      continue;
    }
    if (ctx_.topics.at(tp.topic).deleting) {
      r.failed.push_back({tp, "topic is being deleted"});
      continue;
    }
    if (info->state->leader >= 0 && online.contains(info->state->leader)) {
      r.not_needed.push_back(tp);
      continue;
    }
    bool changed = false;
    Write w = update_state(tp.topic, tp.partition, [&](const PartitionInfo& cur) {
      return replication::elect_offline(cur.assignment.replicas, *cur.state, online, /*unclean_allowed=*/true,
                                        id_.epoch);
    }, &r, &changed);
    if (w == Write::kStop) break;
    if (changed)
      batch.add_leader_and_isr(ctx_, live_replicas(info->assignment.replicas), tp.topic, tp.partition, false);
    else if (w == Write::kOk)
      r.failed.push_back({tp, "no replica of the partition is alive"});
  }
  finish(batch, &r);
  return r;
}

StepResult PartitionStateMachine::controlled_shutdown(int32_t broker_id, int64_t broker_epoch) {
  if (resigned_) return resigned_result();
  StepResult r;
  auto b = ctx_.live.find(broker_id);
  if (b == ctx_.live.end()) {
    r.error_code = kBrokerNotAvailable;
    r.message = "broker " + std::to_string(broker_id) + " is not alive";
    return r;
  }
  if (broker_epoch != -1 && broker_epoch < b->second.epoch) {
    r.error_code = kStaleBrokerEpoch;
    r.message = "stale broker epoch";
    return r;
  }
  ctx_.shutting_down.insert(broker_id);
  RequestBatch batch;
  const BrokerSet all = ctx_.live_or_shutting_down();
  // A moved leadership goes to the live replicas and the shutting-down one
  // too (Kafka's liveOrShuttingDownReplicas), so the old leader hears it is a
  // follower now and stops taking produce requests.
  auto live_or_shutting_down = [&](const std::vector<int32_t>& replicas) {
    std::vector<int32_t> out;
    for (int32_t b : replicas)
      if (all.contains(b)) out.push_back(b);
    return out;
  };
  for (auto& [topic, t] : ctx_.topics) {
    if (t.deleting) continue;
    for (auto& [p, info] : t.partitions) {
      if (!info.state || info.assignment.replicas.size() < 2 || !contains(info.assignment.replicas, broker_id))
        continue;
      bool changed = false;
      Write w;
      const bool leads = info.state->leader == broker_id;
      if (leads) {
        w = update_state(topic, p, [&](const PartitionInfo& cur) {
          return elect_controlled_shutdown(cur.assignment.replicas, *cur.state, all, ctx_.shutting_down, id_.epoch);
        }, &r, &changed);
      } else {
        // A follower: it stops its replica and leaves the ISR (OfflineReplica).
        batch.add_stop_replica(broker_id, topic, p, /*delete=*/false, info.state->leader_epoch);
        w = update_state(topic, p, [&](const PartitionInfo& cur) {
          return remove_replica_from_isr(*cur.state, broker_id, id_.epoch);
        }, &r, &changed);
      }
      if (w == Write::kStop) {
        finish(batch, &r);
        return r;
      }
      if (changed)
        batch.add_leader_and_isr(ctx_, leads ? live_or_shutting_down(info.assignment.replicas)
                                             : live_replicas(info.assignment.replicas),
                                 topic, p, false);
    }
  }
  // Kafka's replicatedPartitionsBrokerLeads: RF 1 partitions and topics
  // being deleted are not counted.
  for (const auto& [topic, t] : ctx_.topics)
    for (const auto& [p, info] : t.partitions)
      if (!t.deleting && info.state && info.state->leader == broker_id && info.assignment.replicas.size() > 1)
        r.remaining.push_back({topic, p});
  finish(batch, &r);
  return r;
}

StepResult PartitionStateMachine::on_topic_deletion(const std::vector<std::string>& names) {
  if (resigned_) return resigned_result();
  StepResult r;
  RequestBatch batch;
  delete_topics(names, batch, &r);
  finish(batch, &r);
  return r;
}

PartitionStateMachine::Write PartitionStateMachine::delete_topics(const std::vector<std::string>& names,
                                                                  RequestBatch& batch, StepResult* r) {
  const BrokerSet online = ctx_.online();
  for (const auto& topic : names) {
    if (!ctx_.topics.contains(topic))
      if (load_topic(topic, r) == Write::kStop) return Write::kStop;
    std::vector<zk::Op> ops;
    auto t = ctx_.topics.find(topic);
    if (t != ctx_.topics.end()) {
      // A reassignment in progress makes it wait too (Kafka's
      // markTopicIneligibleForDeletion); its completion resumes it.
      bool eligible = !topic_reassigning(topic);
      for (const auto& [p, info] : t->second.partitions)
        for (int32_t b : info.assignment.replicas) eligible = eligible && online.contains(b);
      if (!eligible) {
        ctx_.pending_deletions.insert(topic);
        if (std::find(r->pending.begin(), r->pending.end(), topic) == r->pending.end()) r->pending.push_back(topic);
        continue;
      }
      std::vector<std::string> tree;
      zk::Code c = collect_subtree(zk_, topic_path(topic), &tree);
      if (c != zk::Code::kOk && c != zk::Code::kNoNode) return stop_on(FenceOutcome::kError, c, r), Write::kStop;
      for (auto& path : tree) ops.push_back(zk::Op::remove(std::move(path), -1));
    }
    for (const std::string& path : {topic_config_path(topic), delete_topic_path(topic)}) {
      zk::Code c = zk_.exists(path);
      if (c == zk::Code::kOk) ops.push_back(zk::Op::remove(path, -1));
      else if (c != zk::Code::kNoNode) return stop_on(FenceOutcome::kError, c, r), Write::kStop;
    }
    if (!ops.empty()) {
      FencedWrite w = fenced_multi(zk_, id_.epoch_zk_version, std::move(ops));
      if (stop_on(w.outcome, w.code, r)) return Write::kStop;
      if (w.outcome != FenceOutcome::kOk) {
        r->failed.push_back({{topic, -1}, "deleting the znodes failed: " + std::string(zk::to_string(w.code))});
        continue;
      }
    }
    // The requests are built from snapshots, so they outlive the context entry.
    if (t != ctx_.topics.end()) {
      t->second.deleting = true;
      for (const auto& [p, info] : t->second.partitions) {
        batch.add_update_metadata(ctx_, topic, p);  // leader -2: LeaderDuringDelete
        for (int32_t b : info.assignment.replicas)
          batch.add_stop_replica(b, topic, p, /*delete=*/true, kEpochDuringDelete);
      }
      ctx_.topics.erase(t);
    }
    ctx_.pending_deletions.erase(topic);
    r->deleted.push_back(topic);
  }
  return Write::kOk;
}

StepResult PartitionStateMachine::write_alter_partition(std::vector<AlterWrite>& writes) {
  if (resigned_) return resigned_result();
  StepResult r;
  RequestBatch batch;
  for (AlterWrite& a : writes) {
    PartitionInfo* info = ctx_.partition(a.partition.topic, a.partition.partition);
    if (!info || !info->state) {
      a.code = zk::Code::kNoNode;
      continue;
    }
    std::vector<zk::Op> ops{zk::Op::set_data(partition_state_path(a.partition.topic, a.partition.partition),
                                             encode_partition_state(a.state), a.expected_zk_version)};
    FencedWrite w = fenced_multi(zk_, id_.epoch_zk_version, std::move(ops));
    if (stop_on(w.outcome, w.code, &r)) {
      a.code = w.code == zk::Code::kOk ? zk::Code::kOther : w.code;
      break;
    }
    if (w.outcome != FenceOutcome::kOk) {
      a.code = w.code;
      // The znode moved (a write we have not seen): refresh the cache so the
      // leader's retry is judged against the truth.
      if (w.code == zk::Code::kBadVersion) (void)read_state(a.partition.topic, a.partition.partition, info, &r);
      continue;
    }
    info->state = a.state;
    info->zk_version = w.results[0].stat.version;
    a.new_zk_version = info->zk_version;
    batch.add_update_metadata(ctx_, a.partition.topic, a.partition.partition);
  }
  // Writes that did not run (a stop above) report the stop's code.
  for (AlterWrite& a : writes)
    if (a.new_zk_version < 0 && a.code == zk::Code::kOk) a.code = zk::Code::kOther;
  finish(batch, &r);
  return r;
}

}  // namespace ciuickafka::replication::controller
