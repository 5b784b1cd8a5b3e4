// replication/controller/controller_reassign_events.cc: partition
// reassignment on the controller's event thread: the
// /admin/reassign_partitions znode (Kafka's processZkPartitionReassignment),
// AlterPartitionReassignments and ListPartitionReassignments (Kafka's
// processApiPartitionReassignment and processListPartitionReassignments in
// ZooKeeper mode). The steps themselves are in controller_reassign.cc. See
// controller.h.
//
// Requests are queued with generation 0 so they are always answered:
// NOT_CONTROLLER (top level) when the activation they were queued under
// has ended.
//
// Thread-safety: the public methods may be called from any thread; the
// rest runs on the event thread.
#include <map>
#include <utility>

#include "protocol/error_code.h"
#include "replication/controller/controller.h"
#include "replication/controller/controller_log.h"
#include "replication/controller/fenced_zk.h"

namespace ciuickafka::replication::controller {

using protocol::AlterPartitionReassignmentsRequest;
using protocol::AlterPartitionReassignmentsResponse;
using protocol::ErrorCode;
using protocol::ListPartitionReassignmentsRequest;
using protocol::ListPartitionReassignmentsResponse;
using protocol::to_wire;

namespace {

template <typename Response>
Response not_controller() {
  Response resp;
  resp.error_code = to_wire(ErrorCode::NOT_CONTROLLER);
  resp.error_message = std::nullopt;
  return resp;
}

}  // namespace

// ---- /admin/reassign_partitions

bool Controller::process_reassign_znode(uint64_t gen, bool run, std::set<TopicPartitionRef>* started) {
  int32_t wait_ms = options_.retry_backoff_ms;
  const std::string path(kReassignPartitionsPath);
  const int slot = static_cast<int>(Watch::kReassign);
  std::string data;
  bool present = false;
  for (;;) {
    if (!current(gen) || !psm_) return false;
    const bool arming = !armed_[slot];
    zk::WatchFn w = arming ? watcher(gen, Watch::kReassign) : zk::WatchFn{};
    zk::Code c = session_->exists(path, nullptr, w);
    if (c == zk::Code::kOk || c == zk::Code::kNoNode) {
      if (arming) armed_[slot] = true;
      present = c == zk::Code::kOk && run && session_->get(path, &data) == zk::Code::kOk;
      break;
    }
    if (!backoff(gen, &wait_ms)) return false;
  }
  if (!present) return true;
  auto entries = decode_reassign_partitions(data);
  if (!entries) {
    // Kafka ignores it and leaves it there, which blocks every later
    // reassignment through the znode; it is deleted instead.
    log_warn(path + ": " + entries.error().message + " (deleted)");
    FencedWrite w = fenced_multi(*session_, psm_->identity().epoch_zk_version, {zk::Op::remove(path, -1)});
    if (w.outcome == FenceOutcome::kFenced) {
      resign(gen, "controller epoch check failed removing " + path);
      return false;
    }
    return true;
  }
  std::vector<PartitionStateMachine::ReassignItem> items;
  for (auto& e : entries.value()) {
    PartitionStateMachine::ReassignItem item;
    item.partition = {e.topic, e.partition};
    item.target = std::move(e.replicas);
    items.push_back(std::move(item));
  }
  log_info(path + ": " + std::to_string(items.size()) + " partition reassignment(s)");
  if (!run_step(gen, "reassignment from /admin/reassign_partitions", [&] { return psm_->reassign(items, /*validate=*/false); }))
    return false;
  for (const auto& item : items) {
    if (item.error_code == 0) {
      if (started) started->insert(item.partition);
    } else {
      log_warn(path + ": " + item.partition.topic + "-" + std::to_string(item.partition.partition) + ": error " +
               std::to_string(item.error_code) + (item.error_message ? " (" + *item.error_message + ")" : ""));
    }
  }
  return true;
}

// ---- AlterPartitionReassignments

void Controller::alter_partition_reassignments(AlterPartitionReassignmentsRequest request,
                                               AlterReassignmentsDone done) {
  const uint64_t gen = generation_.load();
  if (!active_.load()) return done(not_controller<AlterPartitionReassignmentsResponse>());
  auto shared = std::make_shared<std::pair<AlterPartitionReassignmentsRequest, AlterReassignmentsDone>>(
      std::move(request), std::move(done));
  const bool queued = post(0, [this, gen, shared] { do_alter_reassignments(gen, shared->first, shared->second); });
  if (!queued) shared->second(not_controller<AlterPartitionReassignmentsResponse>());
}

void Controller::do_alter_reassignments(uint64_t gen, const AlterPartitionReassignmentsRequest& req,
                                        const AlterReassignmentsDone& done) {
  if (!current(gen) || !psm_ || psm_->resigned()) return done(not_controller<AlterPartitionReassignmentsResponse>());
  // Kafka builds a map: a partition named twice takes its last entry and is
  // answered once.
  std::map<TopicPartitionRef, size_t> index;
  std::vector<PartitionStateMachine::ReassignItem> items;
  std::vector<std::string> topic_order;
  for (const auto& t : req.topics) {
    bool seen = false;
    for (const auto& n : topic_order) seen = seen || n == t.name;
    if (!seen) topic_order.push_back(t.name);
    for (const auto& p : t.partitions) {
      TopicPartitionRef tp{t.name, p.partition_index};
      auto [it, fresh] = index.try_emplace(tp, items.size());
      if (fresh) items.emplace_back();
      items[it->second].partition = tp;
      items[it->second].target = p.replicas;
    }
  }
  std::string what;
  for (const auto& item : items)
    what += (what.empty() ? "" : ", ") + item.partition.topic + "-" + std::to_string(item.partition.partition) +
            (item.target ? "" : " (cancel)");
  if (!items.empty()) log_info("AlterPartitionReassignments: " + what);
  const bool ran = items.empty() ||
                   run_step(gen, "AlterPartitionReassignments", [&] { return psm_->reassign(items, true); });
  if (!ran) return done(not_controller<AlterPartitionReassignmentsResponse>());
  AlterPartitionReassignmentsResponse resp;
  for (const auto& name : topic_order) {
    AlterPartitionReassignmentsResponse::ReassignableTopicResponse rt;
    rt.name = name;
    for (const auto& item : items) {
      if (item.partition.topic != name) continue;
      AlterPartitionReassignmentsResponse::ReassignablePartitionResponse rp;
      rp.partition_index = item.partition.partition;
      rp.error_code = item.error_code;
      rp.error_message = item.error_message;
      rt.partitions.push_back(std::move(rp));
    }
    resp.responses.push_back(std::move(rt));
  }
  done(std::move(resp));
}

// ---- ListPartitionReassignments

void Controller::list_partition_reassignments(ListPartitionReassignmentsRequest request, ListReassignmentsDone done) {
  const uint64_t gen = generation_.load();
  if (!active_.load()) return done(not_controller<ListPartitionReassignmentsResponse>());
  auto shared = std::make_shared<std::pair<ListPartitionReassignmentsRequest, ListReassignmentsDone>>(
      std::move(request), std::move(done));
  const bool queued = post(0, [this, gen, shared] { do_list_reassignments(gen, shared->first, shared->second); });
  if (!queued) shared->second(not_controller<ListPartitionReassignmentsResponse>());
}

void Controller::do_list_reassignments(uint64_t gen, const ListPartitionReassignmentsRequest& req,
                                       const ListReassignmentsDone& done) {
  if (!current(gen) || !psm_ || psm_->resigned()) return done(not_controller<ListPartitionReassignmentsResponse>());
  const ControllerContext& ctx = psm_->context();
  std::vector<TopicPartitionRef> asked;
  if (req.topics) {
    for (const auto& t : *req.topics)
      for (int32_t p : t.partition_indexes) asked.push_back({t.name, p});
  } else {
    asked = psm_->reassigning();
  }
  std::map<std::string, ListPartitionReassignmentsResponse::OngoingTopicReassignment> by_topic;
  for (const auto& tp : asked) {
    const PartitionInfo* info = ctx.partition(tp.topic, tp.partition);
    if (!info || !being_reassigned(info->assignment)) continue;  // unknown or not moving: left out, as Kafka
    auto& t = by_topic[tp.topic];
    t.name = tp.topic;
    bool dup = false;
    for (const auto& have : t.partitions) dup = dup || have.partition_index == tp.partition;
    if (dup) continue;
    ListPartitionReassignmentsResponse::OngoingPartitionReassignment o;
    o.partition_index = tp.partition;
    o.replicas = info->assignment.replicas;
    o.adding_replicas = info->assignment.adding_replicas;
    o.removing_replicas = info->assignment.removing_replicas;
    t.partitions.push_back(std::move(o));
  }
  ListPartitionReassignmentsResponse resp;
  for (auto& [name, t] : by_topic) resp.topics.push_back(std::move(t));
  done(std::move(resp));
}

}  // namespace ciuickafka::replication::controller
