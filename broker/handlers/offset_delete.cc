// broker/handlers/offset_delete.cc: OffsetDelete (key 47), version 0.
//
// Deletes a group's committed offsets (tombstones). A group with members
// keeps the offsets of topics it is subscribed to
// (GROUP_SUBSCRIBED_TO_TOPIC); a non-consumer group with members refuses
// the whole request (NON_EMPTY_GROUP).
#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "broker/groups/respond.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/generated/offset_delete.h"

namespace ciuickafka::broker {
namespace {

void handle_offset_delete(RequestContext&& ctx) {
  protocol::OffsetDeleteRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  auto& coordinator = ctx.broker->service<groups::GroupCoordinator>();
  auto shared = groups::share(std::move(ctx));
  coordinator.delete_offsets(req, [shared](protocol::OffsetDeleteResponse resp) {
    shared->respond(make_response(*shared, resp, resp.error_code));
  });
}

}  // namespace

CK_REGISTER_HANDLER(protocol::OffsetDeleteRequest, 0, 0, handle_offset_delete);

}  // namespace ciuickafka::broker
