// broker/handlers/delete_groups.cc: DeleteGroups (key 42), versions 0-2.
//
// Only empty groups go (NON_EMPTY_GROUP otherwise; GROUP_ID_NOT_FOUND for
// unknown ones); their offsets and metadata become tombstones in
// __consumer_offsets.
#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/generated/delete_groups.h"

namespace ciuickafka::broker {
namespace {

void handle_delete_groups(RequestContext&& ctx) {
  protocol::DeleteGroupsRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  auto& coordinator = ctx.broker->service<groups::GroupCoordinator>();
  protocol::DeleteGroupsResponse resp;
  for (const std::string& g : req.groups_names) {
    protocol::DeleteGroupsResponse::DeletableGroupResult r;
    r.group_id = g;
    r.error_code = protocol::to_wire(coordinator.delete_group(g));
    resp.results.push_back(std::move(r));
  }
  ctx.respond(make_response(ctx, resp));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::DeleteGroupsRequest, 0, 2, handle_delete_groups);

}  // namespace ciuickafka::broker
