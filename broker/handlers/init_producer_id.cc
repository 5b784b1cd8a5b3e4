// broker/handlers/init_producer_id.cc: InitProducerId (key 22), versions 0-5.
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
// A transactional id goes to the transaction coordinator (txn/coordinator.h:
// a new id or an epoch bump, fencing an open transaction, KIP-360's
// expected producer id/epoch from v3); an empty one, or v3+ with only one of
// producer id and epoch set, is INVALID_REQUEST, as Kafka. PRODUCER_FENCED
// is answered INVALID_PRODUCER_EPOCH below v4. Cluster mode: the
// coordinator is the leader of the id's __transaction_state partition.
#include <memory>

#include "broker/broker.h"
#include "broker/cluster/zk_producer_ids.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/produce/produce_service.h"
#include "broker/txn/coordinator.h"
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
    if (req.transactional_id->empty() || (ctx.api_version() >= 3 && (req.producer_id == -1) != (req.producer_epoch == -1))) {
      resp.error_code = protocol::to_wire(ErrorCode::INVALID_REQUEST);
      ctx.respond(make_response(ctx, resp, resp.error_code));
      return;
    }
    const int16_t version = ctx.api_version();
    auto shared = std::make_shared<RequestContext>(std::move(ctx));
    txn::coordinator(*shared->broker).init_producer_id(
        *req.transactional_id, req.transaction_timeout_ms, version >= 3 ? req.producer_id : -1,
        version >= 3 ? req.producer_epoch : int16_t{-1},
        [shared, version](ErrorCode e, int64_t pid, int16_t epoch) {
          protocol::InitProducerIdResponse r;
          // PRODUCER_FENCED is new in v4; older clients know INVALID_PRODUCER_EPOCH.
          if (e == ErrorCode::PRODUCER_FENCED && version < 4) e = ErrorCode::INVALID_PRODUCER_EPOCH;
          r.error_code = protocol::to_wire(e);
          r.producer_id = e == ErrorCode::NONE ? pid : -1;
          r.producer_epoch = e == ErrorCode::NONE ? epoch : int16_t{-1};
          shared->respond(make_response(*shared, r, r.error_code));
        });
    return;
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
