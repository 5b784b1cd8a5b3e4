// broker/handlers/end_txn.cc: EndTxn (key 26), versions 0-4: the
// transaction coordinator's commit or abort (txn/coordinator.h), answered
// once PrepareCommit/PrepareAbort is durable; the markers follow.
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v2.
#include "broker/broker.h"
#include "broker/groups/respond.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/txn/coordinator.h"
#include "protocol/generated/end_txn.h"

namespace ciuickafka::broker {
namespace {

using protocol::ErrorCode;

void handle_end_txn(RequestContext&& ctx) {
  protocol::EndTxnRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  const int16_t version = ctx.api_version();
  auto shared = groups::share(std::move(ctx));
  txn::coordinator(*shared->broker).end_txn(
      req.transactional_id, req.producer_id, req.producer_epoch, req.committed, [shared, version](ErrorCode e) {
        if (e == ErrorCode::PRODUCER_FENCED && version < 2) e = ErrorCode::INVALID_PRODUCER_EPOCH;
        protocol::EndTxnResponse resp;
        resp.error_code = protocol::to_wire(e);
        shared->respond(make_response(*shared, resp, resp.error_code));
      });
}

}  // namespace

CK_REGISTER_HANDLER(protocol::EndTxnRequest, 0, 4, handle_end_txn);

}  // namespace ciuickafka::broker
