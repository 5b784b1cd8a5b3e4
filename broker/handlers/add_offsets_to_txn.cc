// broker/handlers/add_offsets_to_txn.cc: AddOffsetsToTxn (key 25), versions
// 0-4: adds the group's __consumer_offsets partition (Kafka's partitionFor
// of the group id) to the transaction, through the same path as
// AddPartitionsToTxn, with its errors. PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH below v2.
#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "broker/groups/respond.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/txn/coordinator.h"
#include "protocol/generated/add_offsets_to_txn.h"

namespace ciuickafka::broker {
namespace {

using protocol::ErrorCode;

void handle_add_offsets_to_txn(RequestContext&& ctx) {
  protocol::AddOffsetsToTxnRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  const int16_t version = ctx.api_version();
  auto shared = groups::share(std::move(ctx));
  auto answer = [shared, version](ErrorCode e) {
    if (e == ErrorCode::PRODUCER_FENCED && version < 2) e = ErrorCode::INVALID_PRODUCER_EPOCH;
    protocol::AddOffsetsToTxnResponse resp;
    resp.error_code = protocol::to_wire(e);
    shared->respond(make_response(*shared, resp, resp.error_code));
  };
  auto& groups = shared->broker->service<groups::GroupCoordinator>();
  if (!groups.ensure_offsets_topic()) return answer(ErrorCode::COORDINATOR_NOT_AVAILABLE);
  const int32_t partition = groups.partition_of(req.group_id);
  txn::coordinator(*shared->broker).add_partitions(
      req.transactional_id, req.producer_id, req.producer_epoch, {{groups::kOffsetsTopic, partition}}, answer);
}

}  // namespace

CK_REGISTER_HANDLER(protocol::AddOffsetsToTxnRequest, 0, 4, handle_add_offsets_to_txn);

}  // namespace ciuickafka::broker
