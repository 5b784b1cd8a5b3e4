// broker/handlers/join_group.cc: JoinGroup (key 11), versions 0-9.
//
// The answer is usually held: the coordinator keeps the callback in the
// group until every known member has rejoined (or the rebalance timeout /
// the new group's initial delay ends) and answers it then, from whichever
// thread completed the join phase. No thread waits. See
// broker/groups/membership.cc for the protocol.
#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "broker/groups/respond.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/generated/join_group.h"

namespace ciuickafka::broker {
namespace {

void handle_join_group(RequestContext&& ctx) {
  protocol::JoinGroupRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  auto& coordinator = ctx.broker->service<groups::GroupCoordinator>();
  const int16_t version = ctx.api_version();
  const groups::ClientInfo client = groups::client_info(ctx);
  auto shared = groups::share(std::move(ctx));
  coordinator.join(req, version, client, [shared](protocol::JoinGroupResponse resp) {
    shared->respond(make_response(*shared, resp, resp.error_code));
  });
}

}  // namespace

CK_REGISTER_HANDLER(protocol::JoinGroupRequest, 0, 9, handle_join_group);

}  // namespace ciuickafka::broker
