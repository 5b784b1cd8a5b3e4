// broker/handlers/controlled_shutdown.cc: ControlledShutdown (key 7),
// versions 0-3, the controller side: a broker about to stop asks the
// controller to move its leaderships away first (Kafka's
// KafkaApis.handleControlledShutdownRequest in ZooKeeper mode).
//
// A broker that is not the active controller answers NOT_CONTROLLER at once
// (the sender looks the controller up again and retries). Single-node mode
// has no ZooKeeper controller at all, so it answers NOT_CONTROLLER too: that
// is what a ZooKeeper-mode Kafka broker answers whenever its KafkaController
// is not active. The active controller runs the request on its event thread
// (replication/controller/controller.h): STALE_BROKER_EPOCH,
// BROKER_NOT_AVAILABLE, or NONE with the partitions the broker still leads.
// The response goes out from that thread (respond() may be called from any
// thread).
#include <memory>

#include "broker/broker.h"
#include "broker/cluster/zk_cluster.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/controlled_shutdown.h"

namespace ciuickafka::broker {
namespace {

using protocol::ControlledShutdownRequest;
using protocol::ControlledShutdownResponse;
using protocol::ErrorCode;
using protocol::to_wire;

void handle_controlled_shutdown(RequestContext&& ctx) {
  ControlledShutdownRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  ZkCluster* cluster = ctx.broker->cluster();
  replication::controller::Controller* controller = cluster ? cluster->controller() : nullptr;
  if (controller == nullptr || !controller->active()) {
    ControlledShutdownResponse resp;
    resp.error_code = to_wire(ErrorCode::NOT_CONTROLLER);
    ctx.respond(make_response(ctx, resp, resp.error_code));
    return;
  }
  const int16_t version = ctx.api_version();
  auto shared = std::make_shared<RequestContext>(std::move(ctx));
  controller->controlled_shutdown(std::move(req), version, [shared](ControlledShutdownResponse resp) {
    shared->respond(make_response(*shared, resp, resp.error_code));
  });
}

}  // namespace

CK_REGISTER_HANDLER(protocol::ControlledShutdownRequest, 0, 3, handle_controlled_shutdown);

}  // namespace ciuickafka::broker
