// replication/controller/controller_alter.cc: AlterPartition on the
// controller's event thread (Kafka's KafkaController.processAlterPartition
// in ZooKeeper mode). See controller.h and alter_partition_rules.h.
//
// Request-level errors (NOT_CONTROLLER, STALE_BROKER_EPOCH) answer the
// whole request in the top-level error code, as Kafka does. Topics are
// named (v0-1) or by id (v2+, UNKNOWN_TOPIC_ID for an unknown id). Each
// accepted partition is written with a fenced conditional set on the
// request's partition epoch; a znode that moved answers
// INVALID_UPDATE_VERSION; other ZooKeeper failures UNKNOWN_SERVER_ERROR (the
// leader asks again). The new states go to every live broker in one
// UpdateMetadata. Once answered, reassignments whose target replicas are
// now all in the ISR complete (Kafka's maybeCompleteReassignment).
#include <utility>

#include "protocol/error_code.h"
#include "replication/alter_partition_rules.h"
#include "replication/controller/controller.h"

namespace ciuickafka::replication::controller {

using protocol::AlterPartitionRequest;
using protocol::AlterPartitionResponse;
using protocol::ErrorCode;
using protocol::to_wire;

void Controller::alter_partition(AlterPartitionRequest request, int16_t version, AlterPartitionDone done) {
  const uint64_t gen = generation_.load();
  if (!active_.load()) {
    AlterPartitionResponse resp;
    resp.error_code = to_wire(ErrorCode::NOT_CONTROLLER);
    done(std::move(resp));
    return;
  }
  // Generation 0: runs even if the activation ended meanwhile, so that the
  // request is always answered (NOT_CONTROLLER then).
  auto shared_done = std::make_shared<AlterPartitionDone>(std::move(done));
  const bool queued = post(0, [this, gen, req = std::move(request), version, shared_done] {
    do_alter_partition(gen, req, version, *shared_done);
  });
  if (!queued) {  // stopped meanwhile
    AlterPartitionResponse resp;
    resp.error_code = to_wire(ErrorCode::NOT_CONTROLLER);
    (*shared_done)(std::move(resp));
  }
}

void Controller::do_alter_partition(uint64_t gen, const AlterPartitionRequest& req, int16_t version,
                                    const AlterPartitionDone& done) {
  AlterPartitionResponse resp;
  if (!current(gen) || !psm_ || psm_->resigned()) {
    resp.error_code = to_wire(ErrorCode::NOT_CONTROLLER);
    done(std::move(resp));
    return;
  }
  const ControllerContext& ctx = psm_->context();
  ControllerView view;
  view.active = true;
  view.controller_epoch = psm_->identity().epoch;
  for (const auto& [id, b] : ctx.live) view.broker_epochs[id] = b.epoch;
  view.shutting_down = ctx.shutting_down;
  if (ErrorCode top = check_alter_partition_request(view, req.broker_id, req.broker_epoch); top != ErrorCode::NONE) {
    resp.error_code = to_wire(top);
    done(std::move(resp));
    return;
  }

  std::vector<PartitionStateMachine::AlterWrite> writes;
  std::vector<std::pair<size_t, size_t>> write_slots;  // (topic, partition) index in resp
  for (const auto& t : req.topics) {
    AlterPartitionResponse::TopicData rt;
    std::string name;
    if (version >= 2) {
      rt.topic_id = t.topic_id;
      for (const auto& [n, info] : ctx.topics)
        if (info.id == t.topic_id) name = n;
    } else {
      rt.topic_name = t.topic_name;
      name = t.topic_name;
    }
    for (const auto& p : t.partitions) {
      AlterPartitionResponse::PartitionData rp;
      rp.partition_index = p.partition_index;
      if (name.empty()) {
        rp.error_code = to_wire(version >= 2 ? ErrorCode::UNKNOWN_TOPIC_ID : ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
        rt.partitions.push_back(std::move(rp));
        continue;
      }
      AlterPartitionItem item;
      item.leader_epoch = p.leader_epoch;
      item.partition_epoch = p.partition_epoch;
      if (version >= 3) {
        for (const auto& b : p.new_isr_with_epochs) item.new_isr.push_back(b.broker_id);
      } else {
        item.new_isr = p.new_isr;
      }
      if (version >= 1) item.leader_recovery_state = static_cast<LeaderRecoveryState>(p.leader_recovery_state);
      std::optional<CurrentPartition> current;
      if (const PartitionInfo* info = ctx.partition(name, p.partition_index); info && info->state)
        current = CurrentPartition{*info->state, info->zk_version};
      const AlterPartitionDecision d = check_alter_partition_item(view, version, req.broker_id, current, item);
      switch (d.action) {
        case AlterPartitionDecision::Action::kReject:
          rp.error_code = to_wire(d.error);
          break;
        case AlterPartitionDecision::Action::kAlreadyCurrent:
          rp.leader_id = d.state.leader;
          rp.leader_epoch = d.state.leader_epoch;
          rp.isr = d.state.isr;
          rp.leader_recovery_state = static_cast<int8_t>(d.state.leader_recovery_state);
          rp.partition_epoch = d.expected_partition_epoch;
          break;
        case AlterPartitionDecision::Action::kWrite: {
          PartitionStateMachine::AlterWrite w;
          w.partition = {name, p.partition_index};
          w.state = d.state;
          w.expected_zk_version = d.expected_partition_epoch;
          writes.push_back(std::move(w));
          write_slots.emplace_back(resp.topics.size(), rt.partitions.size());
          break;
        }
      }
      rt.partitions.push_back(std::move(rp));
    }
    resp.topics.push_back(std::move(rt));
  }

  if (!writes.empty()) {
    StepResult r = psm_->write_alter_partition(writes);
    if (r.outcome == Outcome::kResign) {
      resign(gen, r.message);
      AlterPartitionResponse nc;
      nc.error_code = to_wire(ErrorCode::NOT_CONTROLLER);
      done(std::move(nc));
      return;
    }
    for (size_t i = 0; i < writes.size(); ++i) {
      const auto& w = writes[i];
      AlterPartitionResponse::PartitionData& rp = resp.topics[write_slots[i].first].partitions[write_slots[i].second];
      if (w.new_zk_version >= 0) {
        rp.leader_id = w.state.leader;
        rp.leader_epoch = w.state.leader_epoch;
        rp.isr = w.state.isr;
        rp.leader_recovery_state = static_cast<int8_t>(w.state.leader_recovery_state);
        rp.partition_epoch = w.new_zk_version;
      } else {
        rp.error_code = to_wire(w.code == zk::Code::kBadVersion ? ErrorCode::INVALID_UPDATE_VERSION
                                                                 : ErrorCode::UNKNOWN_SERVER_ERROR);
      }
    }
    if (!r.requests.empty()) sender_.send(r.requests);
    update_stats();
  }
  if (version < 1)  // v0 has no leader recovery state
    for (auto& t : resp.topics)
      for (auto& p : t.partitions) p.leader_recovery_state = 0;
  done(std::move(resp));
  // After answering, as Kafka: a new ISR may now cover a reassignment's target.
  std::vector<TopicPartitionRef> moved;
  for (const auto& w : writes) {
    const PartitionInfo* info = psm_ ? psm_->context().partition(w.partition.topic, w.partition.partition) : nullptr;
    if (w.new_zk_version >= 0 && info && being_reassigned(info->assignment)) moved.push_back(w.partition);
  }
  if (!moved.empty())
    run_step(gen, "reassignment completion", [&] { return psm_->maybe_complete_reassignments(moved); });
}

}  // namespace ciuickafka::replication::controller
