// replication/controller/controller_reassign.cc: partition reassignment
// (KIP-455) in the partition state machine: Kafka 3.9's
// KafkaController.onPartitionReassignment and the steps around it
// (maybeTriggerPartitionReassignment, validateReplicas,
// maybeBuildReassignment, maybeCompleteReassignment, maybeResumeReassignments,
// maybeRemoveFromZkReassignment). See controller_state.h.
//
// The topic znode is the only place the original replicas are kept: the
// target is written last (B6), so a controller failing over at any point
// finds adding/removing replicas there and drives the partition again.
//
// Thread-safety: none; the controller's event thread.
#include <algorithm>

#include "protocol/error_code.h"
#include "replication/controller/controller_state.h"
#include "replication/controller/fenced_zk.h"
#include "replication/id_list.h"

namespace ciuickafka::replication::controller {

namespace {

using protocol::ErrorCode;
using protocol::to_wire;

constexpr int kZnodeWriteAttempts = 3;

bool subset(const std::vector<int32_t>& a, const std::vector<int32_t>& of) {
  return std::all_of(a.begin(), a.end(), [&](int32_t x) { return contains(of, x); });
}

std::vector<int32_t> minus(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  std::vector<int32_t> out;
  for (int32_t x : a)
    if (!contains(b, x)) out.push_back(x);
  return out;
}

std::string list(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

void answer(PartitionStateMachine::ReassignItem& item, ErrorCode code, std::optional<std::string> message) {
  item.error_code = to_wire(code);
  item.error_message = std::move(message);
}

}  // namespace

bool PartitionStateMachine::topic_reassigning(const std::string& topic) const {
  auto t = ctx_.topics.find(topic);
  if (t == ctx_.topics.end()) return false;
  for (const auto& [p, info] : t->second.partitions)
    if (being_reassigned(info.assignment)) return true;
  return false;
}

std::vector<TopicPartitionRef> PartitionStateMachine::reassigning() const {
  std::vector<TopicPartitionRef> out;
  for (const auto& [topic, t] : ctx_.topics)
    for (const auto& [p, info] : t.partitions)
      if (being_reassigned(info.assignment)) out.push_back({topic, p});
  return out;
}

// ---- ZooKeeper writes

PartitionStateMachine::Write PartitionStateMachine::write_assignment(const std::string& topic, int32_t p,
                                                                     const PartitionReplicas& a, StepResult* r) {
  auto t = ctx_.topics.find(topic);
  if (t == ctx_.topics.end()) {
    r->failed.push_back({{topic, p}, "topic is gone"});
    return Write::kConflict;
  }
  TopicAssignment znode;
  znode.topic_id = t->second.id;
  for (const auto& [q, info] : t->second.partitions) znode.partitions[q] = info.assignment;
  int32_t version = t->second.znode_version;
  for (int attempt = 0; attempt < kZnodeWriteAttempts; ++attempt) {
    znode.partitions[p] = a;
    std::vector<zk::Op> ops{zk::Op::set_data(topic_path(topic), encode_topic_assignment(znode), version)};
    FencedWrite w = fenced_multi(zk_, id_.epoch_zk_version, std::move(ops));
    if (stop_on(w.outcome, w.code, r)) return Write::kStop;
    if (w.outcome == FenceOutcome::kOk) {
      t->second.znode_version = w.results[0].stat.version;
      if (PartitionInfo* info = ctx_.partition(topic, p)) info->assignment = a;
      return Write::kOk;
    }
    if (w.code != zk::Code::kBadVersion) break;
    // Another writer (CreatePartitions, a tool) changed the znode: keep what
    // it wrote, replace only this partition.
    std::string data;
    zk::Stat stat;
    zk::Code c = zk_.get(topic_path(topic), &data, &stat);
    if (c == zk::Code::kNoNode) break;
    if (c != zk::Code::kOk) return stop_on(FenceOutcome::kError, c, r), Write::kStop;
    auto decoded = decode_topic_assignment(data);
    if (!decoded) break;
    znode.partitions = std::move(decoded.value().partitions);
    if (decoded.value().topic_id) znode.topic_id = decoded.value().topic_id;
    version = stat.version;
  }
  r->failed.push_back({{topic, p}, "could not write the assignment to " + topic_path(topic)});
  return Write::kConflict;
}

PartitionStateMachine::Write PartitionStateMachine::bump_leader_epoch(const std::string& topic, int32_t p,
                                                                      StepResult* r, bool* changed) {
  return update_state(topic, p, [&](const PartitionInfo& cur) -> std::optional<PartitionState> {
    PartitionState next = *cur.state;
    ++next.leader_epoch;
    next.controller_epoch = id_.epoch;
    return next;
  }, r, changed);
}

PartitionStateMachine::Write PartitionStateMachine::stop_removed_replicas(const std::string& topic, int32_t p,
                                                                          const std::vector<int32_t>& removed,
                                                                          RequestBatch& batch, StepResult* r) {
  for (int32_t b : removed) {
    // OfflineReplica: it leaves the ISR (leader epoch + 1) and the others hear it.
    bool changed = false;
    Write w = update_state(topic, p, [&](const PartitionInfo& cur) {
      return remove_replica_from_isr(*cur.state, b, id_.epoch);
    }, r, &changed);
    if (w != Write::kOk) return w;
    const PartitionInfo* info = ctx_.partition(topic, p);
    if (changed && info) {
      std::vector<int32_t> recipients;
      for (int32_t x : live_replicas(info->assignment.replicas))
        if (x != b) recipients.push_back(x);
      batch.add_leader_and_isr(ctx_, recipients, topic, p, false);
    }
    // ReplicaDeletionStarted: StopReplica with delete (one request; Kafka
    // sends delete=false first).
    batch.add_stop_replica(b, topic, p, /*delete=*/true, kEpochDuringDelete);
  }
  return Write::kOk;
}

PartitionStateMachine::Write PartitionStateMachine::remove_from_zk_reassignment(
    const std::function<bool(const PartitionReassignment&)>& remove, StepResult* r) {
  const std::string path(kReassignPartitionsPath);
  for (int attempt = 0; attempt < kZnodeWriteAttempts; ++attempt) {
    std::string data;
    zk::Stat stat;
    zk::Code c = zk_.get(path, &data, &stat);
    if (c == zk::Code::kNoNode) return Write::kOk;
    if (c != zk::Code::kOk) return stop_on(FenceOutcome::kError, c, r), Write::kStop;
    auto entries = decode_reassign_partitions(data);
    if (!entries) return Write::kOk;  // the controller's znode handler deals with it
    std::vector<PartitionReassignment> keep;
    for (auto& e : entries.value())
      if (!remove(e)) keep.push_back(std::move(e));
    if (keep.size() == entries.value().size()) return Write::kOk;
    zk::Op op = keep.empty() ? zk::Op::remove(path, stat.version)
                             : zk::Op::set_data(path, encode_reassign_partitions(keep), stat.version);
    FencedWrite w = fenced_multi(zk_, id_.epoch_zk_version, {op});
    if (stop_on(w.outcome, w.code, r)) return Write::kStop;
    if (w.outcome == FenceOutcome::kOk) return Write::kOk;
    if (w.code != zk::Code::kBadVersion && w.code != zk::Code::kNoNode) break;
  }
  r->failed.push_back({{std::string(kReassignPartitionsPath), -1}, "could not update the znode"});
  return Write::kConflict;
}

// ---- the steps

PartitionStateMachine::Write PartitionStateMachine::on_partition_reassignment(const std::string& topic, int32_t p,
                                                                              PartitionReplicas ra,
                                                                              RequestBatch& batch, StepResult* r) {
  PartitionInfo* info = ctx_.partition(topic, p);
  if (!info) return Write::kConflict;
  // U1-U3: the new RS/AR/RR in ZooKeeper first, then in memory; replicas a
  // replaced reassignment was adding that the new one does not want stop.
  const PartitionReplicas current = info->assignment;
  if (current != ra) {
    if (Write w = write_assignment(topic, p, ra, r); w != Write::kOk) return w;
    const std::vector<int32_t> unneeded = minus(current.replicas, ra.replicas);
    if (!unneeded.empty())
      if (Write w = stop_removed_replicas(topic, p, unneeded, batch, r); w != Write::kOk) return w;
    info = ctx_.partition(topic, p);
  }
  const std::vector<int32_t> target = target_replicas(ra);
  const bool complete = !being_reassigned(ra) || (info->state && subset(target, info->state->isr));

  if (!complete) {
    // A1-A2: leader epoch + 1, LeaderAndIsr with the new RS to ORS and
    // (creating their logs) AR.
    if (!info->state) return Write::kOk;  // no leader yet: nothing to send (Kafka's updateLeaderEpoch fails)
    bool changed = false;
    Write w = bump_leader_epoch(topic, p, r, &changed);
    if (w != Write::kOk) return w;
    if (changed) {
      batch.add_leader_and_isr(ctx_, origin_replicas(ra), topic, p, /*is_new=*/false);
      batch.add_leader_and_isr(ctx_, ra.adding_replicas, topic, p, /*is_new=*/true);
    }
    return Write::kOk;
  }

  // B2: RS = TRS in memory (requests carry it), put back if a step fails
  // before B6 wrote it.
  PartitionReplicas completed;
  completed.replicas = target;
  info->assignment = completed;
  auto restore = [&] {
    if (PartitionInfo* i = ctx_.partition(topic, p)) i->assignment = ra;
  };
  // B3: a leader in TRS; the ISR is kept.
  if (info->state) {
    const BrokerSet online = ctx_.online();
    const int32_t leader = info->state->leader;
    bool changed = false;
    Write w;
    if (!contains(target, leader) || !online.contains(leader)) {
      w = update_state(topic, p, [&](const PartitionInfo& cur) {
        return elect_reassignment(target, *cur.state, online, id_.epoch);
      }, r, &changed);
      if (w == Write::kOk && !changed) {
        r->failed.push_back({{topic, p}, "no replica of " + list(target) +
                                             " is online and in the ISR to lead: the reassignment waits"});
        w = Write::kConflict;
      }
    } else {
      w = bump_leader_epoch(topic, p, r, &changed);
    }
    if (w != Write::kOk) {
      restore();
      return w;
    }
    if (changed) batch.add_leader_and_isr(ctx_, target, topic, p, false);
  }
  // B4-B5: RR leave the ISR and are deleted.
  if (Write w = stop_removed_replicas(topic, p, ra.removing_replicas, batch, r); w != Write::kOk) {
    restore();
    return w;
  }
  // B6: RS = TRS, AR = RR = [] in ZooKeeper.
  restore();
  if (Write w = write_assignment(topic, p, completed, r); w != Write::kOk) return w;
  // B7: out of /admin/reassign_partitions if it came from there.
  if (Write w = remove_from_zk_reassignment([&](const PartitionReassignment& e) {
        return e.topic == topic && e.partition == p && e.replicas == completed.replicas;
      }, r);
      w == Write::kStop)
    return w;
  // B8: every broker hears the new replicas and ISR.
  batch.add_update_metadata(ctx_, topic, p);
  return Write::kOk;
}

PartitionStateMachine::Write PartitionStateMachine::resume_where(
    const std::function<bool(const PartitionReplicas&)>& pred, const std::set<TopicPartitionRef>& skip,
    RequestBatch& batch, StepResult* r) {
  for (const TopicPartitionRef& tp : reassigning()) {
    if (skip.contains(tp)) continue;
    const PartitionInfo* info = ctx_.partition(tp.topic, tp.partition);
    if (!info || !pred(info->assignment)) continue;
    if (on_partition_reassignment(tp.topic, tp.partition, info->assignment, batch, r) == Write::kStop)
      return Write::kStop;
  }
  return Write::kOk;
}

StepResult PartitionStateMachine::reassign(std::vector<ReassignItem>& items, bool validate) {
  if (resigned_) return resigned_result();
  StepResult r;
  RequestBatch batch;
  const size_t reassigning_before = reassigning().size();
  const BrokerSet online = ctx_.online();
  std::vector<ReassignItem*> run;
  for (ReassignItem& item : items) {
    answer(item, ErrorCode::NONE, std::nullopt);
    const PartitionInfo* info = ctx_.partition(item.partition.topic, item.partition.partition);
    const PartitionReplicas current = info ? info->assignment : PartitionReplicas{};
    if (item.target) {
      // The list's own rules apply to /admin/reassign_partitions too (Kafka
      // skips them there); liveness only to the API, as Kafka.
      if (auto why = malformed_reassignment(*item.target)) {
        answer(item, ErrorCode::INVALID_REPLICA_ASSIGNMENT, *why);
        continue;
      }
      if (validate) {
        const PartitionReplicas next = reassign_to(current, *item.target);
        if (!std::all_of(next.adding_replicas.begin(), next.adding_replicas.end(),
                         [&](int32_t b) { return online.contains(b); })) {
          std::vector<int32_t> live(online.begin(), online.end());
          answer(item, ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                 "Replica assignment has brokers that are not alive. Replica list: " + list(next.adding_replicas) +
                     ", live broker list: " + list(live));
          continue;
        }
      }
    } else if (!being_reassigned(current)) {
      answer(item, ErrorCode::NO_REASSIGNMENT_IN_PROGRESS, std::nullopt);
      continue;
    }
    run.push_back(&item);
  }
  // The latest reassignment wins: API ones leave /admin/reassign_partitions.
  if (validate && !run.empty()) {
    std::set<TopicPartitionRef> api;
    for (const ReassignItem* item : run) api.insert(item->partition);
    Write w = remove_from_zk_reassignment([&](const PartitionReassignment& e) {
      return api.contains(TopicPartitionRef{e.topic, e.partition});
    }, &r);
    if (w == Write::kStop) {
      finish(batch, &r);
      return r;
    }
  }
  for (ReassignItem* item : run) {
    const std::string& topic = item->partition.topic;
    const int32_t p = item->partition.partition;
    const PartitionInfo* info = ctx_.partition(topic, p);
    if (!info || info->assignment.replicas.empty() || ctx_.topics.at(topic).deleting ||
        ctx_.pending_deletions.contains(topic)) {
      answer(*item, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.");
      continue;
    }
    PartitionReplicas ra = reassign_to(info->assignment, item->target ? *item->target : origin_replicas(info->assignment));
    const size_t failures = r.failed.size();
    Write w = on_partition_reassignment(topic, p, std::move(ra), batch, &r);
    if (w == Write::kStop) break;
    if (w == Write::kConflict)
      answer(*item, ErrorCode::UNKNOWN_SERVER_ERROR,
             r.failed.size() > failures ? std::optional<std::string>(r.failed.back().reason) : std::nullopt);
  }
  if (r.outcome == Outcome::kOk && !validate) {
    // Kafka removes the entries it could not start from the znode.
    std::set<TopicPartitionRef> failed;
    for (const ReassignItem& item : items)
      if (item.error_code != 0) failed.insert(item.partition);
    if (!failed.empty())
      (void)remove_from_zk_reassignment([&](const PartitionReassignment& e) {
        return failed.contains(TopicPartitionRef{e.topic, e.partition});
      }, &r);
  }
  if (r.outcome == Outcome::kOk && reassigning().size() < reassigning_before && !ctx_.pending_deletions.empty()) {
    std::vector<std::string> pending(ctx_.pending_deletions.begin(), ctx_.pending_deletions.end());
    delete_topics(pending, batch, &r);
  }
  finish(batch, &r);
  return r;
}

StepResult PartitionStateMachine::resume_reassignments(const std::set<TopicPartitionRef>& skip) {
  if (resigned_) return resigned_result();
  StepResult r;
  RequestBatch batch;
  const size_t before = reassigning().size();
  if (resume_where([](const PartitionReplicas&) { return true; }, skip, batch, &r) == Write::kOk &&
      reassigning().size() < before && !ctx_.pending_deletions.empty()) {
    std::vector<std::string> pending(ctx_.pending_deletions.begin(), ctx_.pending_deletions.end());
    delete_topics(pending, batch, &r);
  }
  finish(batch, &r);
  return r;
}

StepResult PartitionStateMachine::maybe_complete_reassignments(const std::vector<TopicPartitionRef>& partitions) {
  if (resigned_) return resigned_result();
  StepResult r;
  RequestBatch batch;
  const size_t before = reassigning().size();
  bool stopped = false;
  for (const auto& tp : partitions) {
    const PartitionInfo* info = ctx_.partition(tp.topic, tp.partition);
    if (!info || !info->state || !being_reassigned(info->assignment)) continue;
    if (!subset(target_replicas(info->assignment), info->state->isr)) continue;
    if (on_partition_reassignment(tp.topic, tp.partition, info->assignment, batch, &r) == Write::kStop) {
      stopped = true;
      break;
    }
  }
  if (!stopped && reassigning().size() < before && !ctx_.pending_deletions.empty()) {
    std::vector<std::string> pending(ctx_.pending_deletions.begin(), ctx_.pending_deletions.end());
    delete_topics(pending, batch, &r);
  }
  finish(batch, &r);
  return r;
}

}  // namespace ciuickafka::replication::controller
