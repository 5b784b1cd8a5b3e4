// broker/groups/txn_offsets.cc: TxnOffsetCommit on the group coordinator
// (Kafka 3.9's handleTxnCommitOffsets) and the markers that end it.
//
// A transactional commit is checked (the group's offsets partition must be
// in the producer's transaction: KIP-890 verification, asked of the
// transaction coordinator in-process where it runs on this broker (cluster
// mode: it may not, and is then not asked); KIP-447 generation/member fencing
// when the request names them), written to __consumer_offsets as a
// transactional batch of the producer (so the partition's producer state
// opens a transaction there and the LSO holds), staged in
// Group::txn_offsets, and answered once durable (cluster mode: replicated to
// the ISR first, as the coordinator's other writes). The transaction
// coordinator's COMMIT marker on that partition makes the staged offsets
// visible (complete_txn_offsets); ABORT drops them. Loading replays the
// same rule batch by batch (coordinator.cc, load_partition).
//
// Thread-safety: as the coordinator (group lock, then the append).
#include <map>
#include <memory>

#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/groups/coordinator.h"
#include "broker/replica/leader_replicas.h"
#include "broker/produce/produce_service.h"
#include "broker/txn/coordinator.h"

namespace ciuickafka::broker::groups {

using protocol::ErrorCode;

void GroupCoordinator::txn_commit_offsets(const protocol::TxnOffsetCommitRequest& req, int16_t version,
                                          TxnCommitDone done) {
  using Resp = protocol::TxnOffsetCommitResponse;
  // The request's topics, kept for an answer that may come after it is gone.
  auto topics = std::make_shared<const std::vector<protocol::TxnOffsetCommitRequest::TxnOffsetCommitRequestTopic>>(
      req.topics);
  auto answer = [topics](const std::function<ErrorCode(const std::string&, int32_t)>& error_of) {
    Resp r;
    for (const auto& t : *topics) {
      Resp::TxnOffsetCommitResponseTopic rt;
      rt.name = t.name;
      for (const auto& p : t.partitions) {
        Resp::TxnOffsetCommitResponsePartition rp;
        rp.partition_index = p.partition_index;
        rp.error_code = protocol::to_wire(error_of(t.name, p.partition_index));
        rt.partitions.push_back(rp);
      }
      r.topics.push_back(std::move(rt));
    }
    return r;
  };
  auto fail_all = [&](ErrorCode e) { done(answer([e](const std::string&, int32_t) { return e; })); };

  if (const ErrorCode e = coordinator_error(req.group_id); e != ErrorCode::NONE) return fail_all(e);
  Broker* broker = &broker_;
  auto topic_exists = [broker](const std::string& topic, int32_t partition) {
    if (broker->cluster() != nullptr)  // the cluster's topics, as Kafka's metadataCache.contains
      return broker->service<ReplicaManager>().metadata_cache().snapshot()->partition(topic, partition) != nullptr;
    auto t = broker->topics().find(topic);
    return t && t->partition(partition) != nullptr;
  };
  // The offsets partition must be in the transaction (AddOffsetsToTxn first);
  // checked where the transaction coordinator is this broker (cluster mode:
  // it may be another, which is not asked; see txn/coordinator.h).
  auto& txn_coordinator = txn::coordinator(broker_);
  const ErrorCode v = !txn_coordinator.verifies(req.transactional_id)
                          ? ErrorCode::NONE
                          : txn_coordinator.verify_partition(req.transactional_id, req.producer_id,
                                                             req.producer_epoch, kOffsetsTopic,
                                                             partition_of(req.group_id));
  if (v != ErrorCode::NONE) {
    ErrorCode mapped = version >= 4 ? ErrorCode::TRANSACTION_ABORTABLE : ErrorCode::INVALID_TXN_STATE;
    if (v == ErrorCode::PRODUCER_FENCED) mapped = ErrorCode::INVALID_PRODUCER_EPOCH;
    if (v == ErrorCode::INVALID_PRODUCER_ID_MAPPING) mapped = ErrorCode::INVALID_PRODUCER_ID_MAPPING;
    if (v == ErrorCode::COORDINATOR_LOAD_IN_PROGRESS) mapped = ErrorCode::COORDINATOR_LOAD_IN_PROGRESS;
    return fail_all(mapped);
  }

  std::shared_ptr<Group> gp = get_or_create(req.group_id);
  if (!gp) return fail_all(ErrorCode::NOT_COORDINATOR);
  auto staged = std::make_shared<std::map<TopicPartitionKey, CommittedOffset>>();
  ErrorCode group_error = ErrorCode::NONE;
  produce::MarkerResult appended;
  std::shared_ptr<Partition> appended_partition;
  {
    std::lock_guard<std::mutex> lock(gp->mu);
    Group& g = *gp;
    // Kafka's validateOffsetCommit for transactional commits (KIP-447).
    if (g.state == GroupState::kDead) {
      group_error = ErrorCode::COORDINATOR_NOT_AVAILABLE;
    } else if (req.generation_id >= 0 || !req.member_id.empty()) {
      if (g.fenced(req.group_instance_id, req.member_id)) group_error = ErrorCode::FENCED_INSTANCE_ID;
      else if (!g.has(req.member_id)) group_error = ErrorCode::UNKNOWN_MEMBER_ID;
      else if (req.generation_id != g.generation) group_error = ErrorCode::ILLEGAL_GENERATION;
    }
    if (group_error == ErrorCode::NONE) {
      const int64_t now = Broker::now_ms();
      std::vector<OffsetsRecord> records;
      for (const auto& t : req.topics) {
        for (const auto& p : t.partitions) {
          if (!topic_exists(t.name, p.partition_index)) continue;
          CommittedOffset c;
          c.offset = p.committed_offset;
          c.leader_epoch = p.committed_leader_epoch;
          c.metadata = p.committed_metadata.value_or("");
          c.commit_timestamp = now;
          records.push_back(offset_commit_record(g.id, t.name, p.partition_index, c));
          (*staged)[TopicPartitionKey{t.name, p.partition_index}] = std::move(c);
        }
      }
      if (!records.empty()) {
        auto partition = offsets_partition(g.id);
        auto batch = build_txn_offsets_batch(records, now, req.producer_id, req.producer_epoch);
        if (!partition) {
          appended.error = ErrorCode::COORDINATOR_NOT_AVAILABLE;
        } else if (cluster_ && !partition->is_leader()) {
          appended.error = ErrorCode::NOT_COORDINATOR;
        } else if (cluster_ && !partition->hw_follows_leo() &&
                   broker_.service<replica::LeaderReplicas>().acks_all_check_before_append(*partition) !=
                       ErrorCode::NONE) {
          appended.error = ErrorCode::COORDINATOR_NOT_AVAILABLE;  // below min ISR, as Kafka's NOT_ENOUGH_REPLICAS maps
        } else if (!batch) {
          appended.error = ErrorCode::UNKNOWN_SERVER_ERROR;
        } else {
          appended = broker_.service<produce::ProduceService>().append_transactional(
              *partition, req.producer_id, req.producer_epoch, std::move(*batch));
        }
        if (appended.error == ErrorCode::NONE) {
          appended_partition = partition;
          auto& held = g.txn_offsets[req.producer_id];
          for (const auto& [k, c] : *staged) held[k] = c;
        } else if (appended.error == ErrorCode::KAFKA_STORAGE_ERROR) {
          appended.error = ErrorCode::NOT_COORDINATOR;
        }
      }
    }
  }
  if (group_error != ErrorCode::NONE) return fail_all(group_error);
  if (appended.error != ErrorCode::NONE) return fail_all(appended.error);
  auto finish = [answer, staged, topic_exists, done](ErrorCode e) {
    done(answer([&](const std::string& topic, int32_t partition) {
      if (!topic_exists(topic, partition)) return ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
      return e;
    }));
  };
  if (!appended.log) return finish(ErrorCode::NONE);
  // Replicated (cluster mode) and fsynced as the coordinator's other writes.
  Appended a;
  a.log = appended.log;
  a.partition = appended_partition;
  a.end_offset = appended.end_offset;
  when_durable(std::move(a), std::move(finish));
}

void GroupCoordinator::complete_txn_offsets(int64_t producer_id, bool commit, int32_t partition) {
  for (auto& g : all_groups()) {
    if (partition_of(g->id) != partition) continue;
    std::lock_guard<std::mutex> lock(g->mu);
    auto it = g->txn_offsets.find(producer_id);
    if (it == g->txn_offsets.end()) continue;
    if (commit)
      for (auto& [k, v] : it->second) g->offsets[k] = std::move(v);
    g->txn_offsets.erase(it);
  }
}

}  // namespace ciuickafka::broker::groups
