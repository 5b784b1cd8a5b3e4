// broker/handlers/alter_partition.cc: AlterPartition (key 56), versions
// 0-3, the controller side: a partition leader asks the controller to
// change its ISR (KIP-497).
//
// A broker that is not the active controller (single-node mode, or another
// broker holds /controller) answers NOT_CONTROLLER at once. The active one
// hands the request to its controller's event thread
// (replication/controller/controller.h), which checks it in Kafka's order,
// writes the state znodes and answers; the response goes out from that
// thread (respond() may be called from any thread).
#include <memory>

#include "broker/broker.h"
#include "broker/cluster/zk_cluster.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/alter_partition.h"

namespace ciuickafka::broker {
namespace {

using protocol::AlterPartitionRequest;
using protocol::AlterPartitionResponse;
using protocol::ErrorCode;
using protocol::to_wire;

void handle_alter_partition(RequestContext&& ctx) {
  AlterPartitionRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  ZkCluster* cluster = ctx.broker->cluster();
  replication::controller::Controller* controller = cluster ? cluster->controller() : nullptr;
  if (controller == nullptr || !controller->active()) {
    AlterPartitionResponse resp;
    resp.error_code = to_wire(ErrorCode::NOT_CONTROLLER);
    ctx.respond(make_response(ctx, resp, resp.error_code));
    return;
  }
  const int16_t version = ctx.api_version();
  auto shared = std::make_shared<RequestContext>(std::move(ctx));
  controller->alter_partition(std::move(req), version, [shared](AlterPartitionResponse resp) {
    shared->respond(make_response(*shared, resp, resp.error_code));
  });
}

}  // namespace

CK_REGISTER_HANDLER(protocol::AlterPartitionRequest, 0, 3, handle_alter_partition);

}  // namespace ciuickafka::broker
