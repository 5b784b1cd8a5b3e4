// broker/handlers/delete_groups.cc: DeleteGroups (key 42), versions 0-2.
//
// Only empty groups go (NON_EMPTY_GROUP otherwise; GROUP_ID_NOT_FOUND for
// unknown ones); their offsets and metadata become tombstones in
// __consumer_offsets; the answer waits until they are durable. A group named
// twice is deleted and answered once, as Kafka does (it keys the results by
// group id).
#include <set>
#include <string>
#include <vector>

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
  auto shared = std::make_shared<RequestContext>(std::move(ctx));
  std::vector<std::string> distinct;
  std::set<std::string> seen;
  for (const std::string& g : req.groups_names)
    if (seen.insert(g).second) distinct.push_back(g);
  // Answered once the tombstones are durable (ciuic.acks.all.fsync).
  coordinator.delete_groups(distinct, [shared, names = distinct](std::vector<protocol::ErrorCode> errors) {
    protocol::DeleteGroupsResponse resp;
    for (size_t i = 0; i < names.size(); ++i) {
      protocol::DeleteGroupsResponse::DeletableGroupResult r;
      r.group_id = names[i];
      r.error_code = protocol::to_wire(errors[i]);
      resp.results.push_back(std::move(r));
    }
    shared->respond(make_response(*shared, resp));
  });
}

}  // namespace

CK_REGISTER_HANDLER(protocol::DeleteGroupsRequest, 0, 2, handle_delete_groups);

}  // namespace ciuickafka::broker
