// broker/handlers/txn_offset_commit.cc: TxnOffsetCommit (key 28), versions
// 0-4: the group coordinator stages the offsets in the transaction
// (groups/txn_offsets.cc); they become visible with the COMMIT marker.
#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "broker/groups/respond.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/generated/txn_offset_commit.h"

namespace ciuickafka::broker {
namespace {

void handle_txn_offset_commit(RequestContext&& ctx) {
  protocol::TxnOffsetCommitRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  const int16_t version = ctx.api_version();
  auto shared = groups::share(std::move(ctx));
  shared->broker->service<groups::GroupCoordinator>().txn_commit_offsets(
      req, version, [shared](protocol::TxnOffsetCommitResponse resp) { shared->respond(make_response(*shared, resp)); });
}

}  // namespace

CK_REGISTER_HANDLER(protocol::TxnOffsetCommitRequest, 0, 4, handle_txn_offset_commit);

}  // namespace ciuickafka::broker
