// broker/handlers/list_groups.cc: ListGroups (key 16), versions 0-5.
//
// Every group this node coordinates (all of them), filtered by state (v4+,
// case-insensitive) and type (v5+; all groups here are "classic").
#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/generated/list_groups.h"

namespace ciuickafka::broker {
namespace {

void handle_list_groups(RequestContext&& ctx) {
  protocol::ListGroupsRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  auto resp = ctx.broker->service<groups::GroupCoordinator>().list_groups(req, ctx.api_version());
  ctx.respond(make_response(ctx, resp, resp.error_code));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::ListGroupsRequest, 0, 5, handle_list_groups);

}  // namespace ciuickafka::broker
