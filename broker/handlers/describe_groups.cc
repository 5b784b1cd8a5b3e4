// broker/handlers/describe_groups.cc: DescribeGroups (key 15), versions 0-5.
//
// An unknown group is described as state "Dead" with no error (Kafka before
// v6). Member metadata, assignments and the protocol are given only for a
// Stable group, as Kafka does. Authorized operations (v3+): READ, DELETE,
// DESCRIBE when asked for (no authorizer), else Integer.MIN_VALUE.
#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/generated/describe_groups.h"

namespace ciuickafka::broker {
namespace {

void handle_describe_groups(RequestContext&& ctx) {
  protocol::DescribeGroupsRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  auto& coordinator = ctx.broker->service<groups::GroupCoordinator>();
  protocol::DescribeGroupsResponse resp;
  for (const std::string& g : req.groups)
    resp.groups.push_back(coordinator.describe_group(g, req.include_authorized_operations));
  ctx.respond(make_response(ctx, resp));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::DescribeGroupsRequest, 0, 5, handle_describe_groups);

}  // namespace ciuickafka::broker
