// broker/handlers/describe_cluster.cc: DescribeCluster (key 60), versions 0-1.
//
// The brokers and the controller as Metadata answers them
// (admin/cluster_info.h): this node alone, or the ZooKeeper cluster's. v1's
// endpoint_type asks for brokers (1) or controllers (2); a broker answers
// MISMATCHED_ENDPOINT_TYPE for controllers, as Kafka does, and
// UNSUPPORTED_ENDPOINT_TYPE for any other value; the answer's endpoint_type
// is always brokers (1), as Kafka's. Cluster authorized
// operations: every cluster operation when asked for (no authorizer),
// INT32_MIN otherwise.
#include "broker/admin/cluster_info.h"
#include "broker/broker.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/describe_cluster.h"

namespace ciuickafka::broker {
namespace {

using protocol::DescribeClusterRequest;
using protocol::DescribeClusterResponse;
using protocol::ErrorCode;
using protocol::to_wire;

constexpr int8_t kBrokers = 1;
constexpr int8_t kControllers = 2;

void handle_describe_cluster(RequestContext&& ctx) {
  DescribeClusterRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  Broker& broker = *ctx.broker;
  DescribeClusterResponse resp;
  resp.endpoint_type = kBrokers;  // the type this endpoint serves, whatever was asked (as Kafka answers)
  if (ctx.api_version() >= 1 && req.endpoint_type != kBrokers) {
    const bool controllers = req.endpoint_type == kControllers;
    resp.error_code = to_wire(controllers ? ErrorCode::MISMATCHED_ENDPOINT_TYPE : ErrorCode::UNSUPPORTED_ENDPOINT_TYPE);
    resp.error_message = controllers ? "The request was sent to an endpoint of type BROKER, but we wanted an "
                                       "endpoint of type CONTROLLER"
                                     : "Unsupported endpoint type " + std::to_string(req.endpoint_type);
    ctx.respond(make_response(ctx, resp, resp.error_code));
    return;
  }
  resp.cluster_id = broker.cluster_id();
  resp.controller_id = admin::controller_id(broker);
  for (const admin::BrokerRow& row : admin::live_brokers(broker, ctx.listener)) {
    DescribeClusterResponse::DescribeClusterBroker b;
    b.broker_id = row.id;
    b.host = row.host;
    b.port = row.port;
    b.rack = row.rack;
    resp.brokers.push_back(std::move(b));
  }
  resp.cluster_authorized_operations =
      req.include_cluster_authorized_operations ? admin::kClusterOperations : admin::kOperationsOmitted;
  ctx.respond(make_response(ctx, resp));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::DescribeClusterRequest, 0, 1, handle_describe_cluster);

}  // namespace ciuickafka::broker
