// broker/handlers/sync_group.cc: SyncGroup (key 14), versions 0-5.
//
// Followers' answers are held until the leader's SyncGroup brings the
// assignments (or a rebalance / expiry answers them with an error); see
// broker/groups/membership_sync.cc.
#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "broker/groups/respond.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/generated/sync_group.h"

namespace ciuickafka::broker {
namespace {

void handle_sync_group(RequestContext&& ctx) {
  protocol::SyncGroupRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  auto& coordinator = ctx.broker->service<groups::GroupCoordinator>();
  const int16_t version = ctx.api_version();
  const uint64_t connection_id = ctx.connection_id;
  auto shared = groups::share(std::move(ctx));
  coordinator.sync(
      req, version,
      [shared](protocol::SyncGroupResponse resp) { shared->respond(make_response(*shared, resp, resp.error_code)); },
      connection_id);
}

}  // namespace

CK_REGISTER_HANDLER(protocol::SyncGroupRequest, 0, 5, handle_sync_group);

}  // namespace ciuickafka::broker
