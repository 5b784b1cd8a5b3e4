// broker/handlers/describe_producers.cc: DescribeProducers (key 61), v0.
//
// Lists the idempotent producers a partition knows (loading its producer
// state from the snapshot and the log if no produce has yet): id, epoch,
// last sequence and the max timestamp of its last batch, the coordinator
// epoch of its last marker here (-1: none) and the first offset of its open
// transaction here (-1: none; KIP-664's find-hanging reads it). An unknown
// topic or
// partition: UNKNOWN_TOPIC_OR_PARTITION.
#include <algorithm>

#include "broker/broker.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/produce/produce_service.h"
#include "protocol/error_code.h"
#include "protocol/generated/describe_producers.h"

namespace ciuickafka::broker {
namespace {

using protocol::DescribeProducersResponse;

void handle_describe_producers(RequestContext&& ctx) {
  protocol::DescribeProducersRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  Broker& broker = *ctx.broker;
  auto& svc = broker.service<produce::ProduceService>();
  DescribeProducersResponse resp;
  for (const auto& t : req.topics) {
    DescribeProducersResponse::TopicResponse tr;
    tr.name = t.name;
    for (int32_t index : t.partition_indexes) {
      DescribeProducersResponse::PartitionResponse pr;
      pr.partition_index = index;
      auto partition = broker.topics().partition(t.name, index);
      if (!partition) {
        pr.error_code = protocol::to_wire(protocol::ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
        tr.partitions.push_back(std::move(pr));
        continue;
      }
      auto st = svc.partition_state(*partition);
      std::lock_guard<std::mutex> lock(st->mu);
      if (!svc.ensure_loaded(*st, partition->log())) {
        pr.error_code = protocol::to_wire(protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER);  // retriable: loading
        tr.partitions.push_back(std::move(pr));
        continue;
      }
      for (const auto& [pid, e] : st->table.producers()) {
        DescribeProducersResponse::ProducerState ps;
        ps.producer_id = pid;
        ps.producer_epoch = e.epoch;
        // No batch remembered: a marker bumped the epoch (Kafka reports -1).
        ps.last_sequence = e.batches.empty() ? -1 : e.batches.back().last_seq;
        ps.last_timestamp = e.last_timestamp;  // its last batch's or marker's, as Kafka's
        ps.coordinator_epoch = e.coordinator_epoch;
        ps.current_txn_start_offset = e.txn_first_offset;
        pr.active_producers.push_back(ps);
      }
      std::sort(pr.active_producers.begin(), pr.active_producers.end(),
                [](const auto& a, const auto& b) { return a.producer_id < b.producer_id; });
      tr.partitions.push_back(std::move(pr));
    }
    resp.topics.push_back(std::move(tr));
  }
  ctx.respond(make_response(ctx, resp));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::DescribeProducersRequest, 0, 0, handle_describe_producers);

}  // namespace ciuickafka::broker
