// broker/handlers/heartbeat.cc: Heartbeat (key 12), versions 0-4.
//
// Keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin
// (see broker/groups/membership_sync.cc for the order of checks).
#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/generated/heartbeat.h"

namespace ciuickafka::broker {
namespace {

void handle_heartbeat(RequestContext&& ctx) {
  protocol::HeartbeatRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  protocol::HeartbeatResponse resp;
  resp.error_code = protocol::to_wire(ctx.broker->service<groups::GroupCoordinator>().heartbeat(req, ctx.connection_id));
  ctx.respond(make_response(ctx, resp, resp.error_code));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::HeartbeatRequest, 0, 4, handle_heartbeat);

}  // namespace ciuickafka::broker
