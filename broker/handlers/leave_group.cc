// broker/handlers/leave_group.cc: LeaveGroup (key 13), versions 0-5.
//
// v0-v2 name one member; v3+ a batch (KIP-345), static members by
// group.instance.id. A leaving member triggers a rebalance of the rest.
#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/generated/leave_group.h"

namespace ciuickafka::broker {
namespace {

void handle_leave_group(RequestContext&& ctx) {
  protocol::LeaveGroupRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  auto resp = ctx.broker->service<groups::GroupCoordinator>().leave(req, ctx.api_version());
  ctx.respond(make_response(ctx, resp, resp.error_code));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::LeaveGroupRequest, 0, 5, handle_leave_group);

}  // namespace ciuickafka::broker
