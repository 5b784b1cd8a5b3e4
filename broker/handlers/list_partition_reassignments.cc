// broker/handlers/list_partition_reassignments.cc:
// ListPartitionReassignments (key 46), version 0 (KIP-455): the
// reassignments in flight, for the partitions named or (a null list) all.
//
// Cluster mode, as Kafka 3.9 in ZooKeeper mode: answered by the active
// controller from its context (replicas, adding and removing replicas of
// each partition being moved; partitions unknown or not moving are left
// out); any other broker answers the top-level NOT_CONTROLLER.
//
// Single-node mode: nothing ever moves, so the list is empty (what a
// one-broker Kafka cluster answers).
#include <memory>

#include "broker/broker.h"
#include "broker/cluster/zk_cluster.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/generated/list_partition_reassignments.h"
#include "replication/controller/controller.h"

namespace ciuickafka::broker {
namespace {

using protocol::ListPartitionReassignmentsRequest;
using protocol::ListPartitionReassignmentsResponse;

void handle_list_partition_reassignments(RequestContext&& ctx) {
  ListPartitionReassignmentsRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  ZkCluster* cluster = ctx.broker->cluster();
  replication::controller::Controller* controller = cluster ? cluster->controller() : nullptr;
  if (controller == nullptr) {
    ListPartitionReassignmentsResponse resp;
    ctx.respond(make_response(ctx, resp, resp.error_code));
    return;
  }
  auto shared = std::make_shared<RequestContext>(std::move(ctx));
  controller->list_partition_reassignments(std::move(req), [shared](ListPartitionReassignmentsResponse resp) {
    shared->respond(make_response(*shared, resp, resp.error_code));
  });
}

}  // namespace

CK_REGISTER_HANDLER(protocol::ListPartitionReassignmentsRequest, 0, 0, handle_list_partition_reassignments);

}  // namespace ciuickafka::broker
