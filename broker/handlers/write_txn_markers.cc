// broker/handlers/write_txn_markers.cc: WriteTxnMarkers (key 27), versions
// 0-1: COMMIT/ABORT control batches written to partitions led here (what
// the transaction coordinator sends partition leaders, and what Kafka's
// admin abortTransaction sends to unblock a hanging transaction).
//
// Each marker goes through ProduceService::append_marker (Kafka's checks:
// an older producer epoch -> INVALID_PRODUCER_EPOCH, an older coordinator
// epoch -> TRANSACTION_COORDINATOR_FENCED), on the broker's background
// thread (the writes block; the network thread does not wait), then, for
// __consumer_offsets, the group coordinator applies or drops the
// producer's transactional offsets. Unknown partitions get
// UNKNOWN_TOPIC_OR_PARTITION, partitions not led here
// NOT_LEADER_OR_FOLLOWER. Written as Kafka writes them, with acks=-1: in
// cluster mode a replicated partition below min.insync.replicas refuses
// (NOT_ENOUGH_REPLICAS) and a written marker is answered once the HW covers
// it (REQUEST_TIMED_OUT after 30 s, Kafka's request.timeout.ms); then, with
// ciuic.acks.all.fsync, once fsynced. No ACLs: CLUSTER_ACTION is not checked.
#include <atomic>
#include <memory>

#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/groups/coordinator.h"
#include "broker/groups/respond.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/produce/produce_service.h"
#include "broker/replica/leader_replicas.h"
#include "protocol/generated/write_txn_markers.h"

namespace ciuickafka::broker {
namespace {

using protocol::ErrorCode;
using protocol::WriteTxnMarkersResponse;

constexpr int32_t kReplicationTimeoutMs = 30000;  // Kafka's request.timeout.ms default

void handle_write_txn_markers(RequestContext&& ctx) {
  auto req = std::make_shared<protocol::WriteTxnMarkersRequest>();
  if (!decode_request(ctx, *req)) {
    ctx.respond(Response::close());
    return;
  }
  auto shared = groups::share(std::move(ctx));
  Broker* broker = shared->broker;
  asio::post(broker->background(), [shared, req, broker] {
    auto resp = std::make_shared<WriteTxnMarkersResponse>();
    struct Durable {
      std::shared_ptr<Partition> partition;
      std::shared_ptr<storage::Log> log;
      int64_t end = 0;
      int16_t* error = nullptr;
    };
    std::vector<Durable> waits;
    auto& produce = broker->service<produce::ProduceService>();
    resp->markers.reserve(req->markers.size());
    for (const auto& m : req->markers) {
      WriteTxnMarkersResponse::WritableTxnMarkerResult& mr = resp->markers.emplace_back();
      mr.producer_id = m.producer_id;
      mr.topics.reserve(m.topics.size());
      for (const auto& t : m.topics) {
        WriteTxnMarkersResponse::WritableTxnMarkerTopicResult& tr = mr.topics.emplace_back();
        tr.name = t.name;
        tr.partitions.reserve(t.partition_indexes.size());
        auto topic = broker->topics().find(t.name);
        for (int32_t index : t.partition_indexes) {
          WriteTxnMarkersResponse::WritableTxnMarkerPartitionResult& pr = tr.partitions.emplace_back();
          pr.partition_index = index;
          std::shared_ptr<Partition> p = topic ? topic->partition(index) : nullptr;
          if (ErrorCode le = ReplicaManager::leader_error(*broker, p.get(), t.name, index); le != ErrorCode::NONE) {
            pr.error_code = protocol::to_wire(le);
            continue;
          }
          if (broker->cluster() != nullptr && !p->hw_follows_leo()) {
            const ErrorCode e = broker->service<replica::LeaderReplicas>().acks_all_check_before_append(*p);
            if (e != ErrorCode::NONE) {
              pr.error_code = protocol::to_wire(e);
              continue;
            }
          }
          produce::MarkerResult r =
              produce.append_marker(*p, m.producer_id, m.producer_epoch, m.coordinator_epoch, m.transaction_result);
          pr.error_code = protocol::to_wire(r.error);
          if (r.error != ErrorCode::NONE) continue;
          if (t.name == groups::kOffsetsTopic)
            broker->service<groups::GroupCoordinator>().complete_txn_offsets(m.producer_id, m.transaction_result,
                                                                             index);
          waits.push_back(Durable{p, r.log, r.end_offset, &pr.error_code});
        }
      }
    }
    // The response's vectors are not resized from here on: the error
    // pointers stay valid until it is sent.
    auto left = std::make_shared<std::atomic<size_t>>(waits.size() + 1);
    auto count_down = [left, shared, resp] {
      if (left->fetch_sub(1) == 1) shared->respond(make_response(*shared, *resp));
    };
    for (const Durable& d : waits) {
      int16_t* error = d.error;
      replica::when_acks_all_durable(*broker, d.partition, d.log, d.end, kReplicationTimeoutMs,
                                     [error, count_down](ErrorCode e) {
                                       if (e != ErrorCode::NONE) *error = protocol::to_wire(e);
                                       count_down();
                                     });
    }
    count_down();
  });
}

}  // namespace

CK_REGISTER_HANDLER(protocol::WriteTxnMarkersRequest, 0, 1, handle_write_txn_markers);

}  // namespace ciuickafka::broker
