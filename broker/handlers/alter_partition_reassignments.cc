// broker/handlers/alter_partition_reassignments.cc:
// AlterPartitionReassignments (key 45), version 0 (KIP-455): move a
// partition's replicas to a new list, or cancel a move with a null list.
//
// Cluster mode, as Kafka 3.9 in ZooKeeper mode: the request goes to this
// broker's controller (replication/controller/controller.h); on the active
// controller it runs on the event thread and is answered once the new
// assignments are in ZooKeeper, per partition NONE,
// INVALID_REPLICA_ASSIGNMENT (empty, duplicate or negative ids, a broker
// that is not alive), NO_REASSIGNMENT_IN_PROGRESS (cancelling nothing),
// UNKNOWN_TOPIC_OR_PARTITION (unknown, or being deleted). Any other broker
// answers the top-level NOT_CONTROLLER; admin clients send it to the
// controller named in Metadata.
//
// Single-node mode answers as a one-broker Kafka cluster would: the only
// possible list is [this broker], a no-op move that completes at once
// (NONE); any other broker is INVALID_REPLICA_ASSIGNMENT (not alive);
// cancelling is NO_REASSIGNMENT_IN_PROGRESS (nothing ever moves).
#include <map>
#include <memory>

#include "broker/broker.h"
#include "broker/cluster/zk_cluster.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/alter_partition_reassignments.h"
#include "replication/controller/controller.h"

namespace ciuickafka::broker {
namespace {

using protocol::AlterPartitionReassignmentsRequest;
using protocol::AlterPartitionReassignmentsResponse;
using protocol::ErrorCode;
using protocol::to_wire;

std::pair<ErrorCode, std::optional<std::string>> single_node_answer(
    Broker& broker, const std::string& topic, const AlterPartitionReassignmentsRequest::ReassignablePartition& p) {
  if (!p.replicas) return {ErrorCode::NO_REASSIGNMENT_IN_PROGRESS, std::nullopt};
  if (auto why = replication::controller::malformed_reassignment(*p.replicas))
    return {ErrorCode::INVALID_REPLICA_ASSIGNMENT, why};
  const int32_t me = broker.node_id();
  for (int32_t b : *p.replicas)
    if (b != me)
      return {ErrorCode::INVALID_REPLICA_ASSIGNMENT,
              "Replica assignment has brokers that are not alive. Live broker list: [" + std::to_string(me) + "]"};
  auto found = broker.topics().find(topic);
  if (!found || p.partition_index < 0 || static_cast<size_t>(p.partition_index) >= found->partitions.size())
    return {ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."};
  return {ErrorCode::NONE, std::nullopt};
}

AlterPartitionReassignmentsResponse single_node(Broker& broker, const AlterPartitionReassignmentsRequest& req) {
  AlterPartitionReassignmentsResponse resp;
  for (const auto& t : req.topics) {
    AlterPartitionReassignmentsResponse::ReassignableTopicResponse rt;
    rt.name = t.name;
    for (const auto& p : t.partitions) {
      AlterPartitionReassignmentsResponse::ReassignablePartitionResponse rp;
      rp.partition_index = p.partition_index;
      auto [code, message] = single_node_answer(broker, t.name, p);
      rp.error_code = to_wire(code);
      rp.error_message = std::move(message);
      rt.partitions.push_back(std::move(rp));
    }
    resp.responses.push_back(std::move(rt));
  }
  return resp;
}

void handle_alter_partition_reassignments(RequestContext&& ctx) {
  AlterPartitionReassignmentsRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  ZkCluster* cluster = ctx.broker->cluster();
  replication::controller::Controller* controller = cluster ? cluster->controller() : nullptr;
  if (controller == nullptr) {
    AlterPartitionReassignmentsResponse resp = single_node(*ctx.broker, req);
    ctx.respond(make_response(ctx, resp, resp.error_code));
    return;
  }
  auto shared = std::make_shared<RequestContext>(std::move(ctx));
  controller->alter_partition_reassignments(std::move(req), [shared](AlterPartitionReassignmentsResponse resp) {
    shared->respond(make_response(*shared, resp, resp.error_code));
  });
}

}  // namespace

CK_REGISTER_HANDLER(protocol::AlterPartitionReassignmentsRequest, 0, 0, handle_alter_partition_reassignments);

}  // namespace ciuickafka::broker
