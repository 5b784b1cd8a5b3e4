// broker/handlers/init_producer_id.cc: InitProducerId (key 22), versions 0-5,
// for idempotent (non-transactional) producers.
//
// A null transactional id gets a new producer id with epoch 0, every time:
// Kafka 3.9 does exactly this for a null transactional id, also when v3+
// names a current producer id and epoch (an idempotent producer bumps its
// epoch itself, KIP-360, which the produce path accepts). Ids come from the
// persisted block allocator (produce/produce_service.h) and are never
// reused, across restarts too. In cluster mode they come from blocks claimed
// in ZooKeeper (cluster/zk_producer_ids.h), unique across the cluster; while
// no block is ready the answer is COORDINATOR_LOAD_IN_PROGRESS, as Kafka's.
//
// Transactions are not implemented yet: a non-null transactional id is
// answered COORDINATOR_NOT_AVAILABLE, what a Kafka broker without a usable
// transaction coordinator answers (clients retry, then fail the
// transactional producer's init); an empty one INVALID_REQUEST, as Kafka.
#include "broker/broker.h"
#include "broker/cluster/zk_producer_ids.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/produce/produce_service.h"
#include "protocol/error_code.h"
#include "protocol/generated/init_producer_id.h"

namespace ciuickafka::broker {
namespace {

using protocol::ErrorCode;

void handle_init_producer_id(RequestContext&& ctx) {
  protocol::InitProducerIdRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  protocol::InitProducerIdResponse resp;
  resp.producer_id = -1;
  resp.producer_epoch = -1;
  if (req.transactional_id.has_value()) {
    resp.error_code = protocol::to_wire(req.transactional_id->empty() ? ErrorCode::INVALID_REQUEST
                                                                      : ErrorCode::COORDINATOR_NOT_AVAILABLE);
  } else if (ctx.broker->cluster() != nullptr) {
    int64_t id = -1;
    ErrorCode e = ctx.broker->service<ZkProducerIds>().next(&id);
    if (e == ErrorCode::NONE) {
      resp.producer_id = id;
      resp.producer_epoch = 0;
    } else {
      resp.error_code = protocol::to_wire(e);
    }
  } else {
    auto id = ctx.broker->service<produce::ProduceService>().allocate_producer_id();
    if (id.is_ok()) {
      resp.producer_id = id.value();
      resp.producer_epoch = 0;
    } else {
      resp.error_code = protocol::to_wire(ErrorCode::KAFKA_STORAGE_ERROR);
    }
  }
  ctx.respond(make_response(ctx, resp, resp.error_code));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::InitProducerIdRequest, 0, 5, handle_init_producer_id);

}  // namespace ciuickafka::broker
