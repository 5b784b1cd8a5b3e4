// broker/handlers/elect_leaders.cc: ElectLeaders (key 43), versions 0-2
// (KIP-460): preferred (type 0) or unclean (type 1) leader election for the
// given partitions, or every partition when the list is null.
//
// Cluster mode, as Kafka 3.9 in ZooKeeper mode: the request is handed to
// this broker's controller (replication/controller/controller.h). On the
// active controller it runs on the event thread and is answered once the
// new states are written; on any other broker every partition answers
// NOT_CONTROLLER (a null list: the top-level code, v1+), and admin clients
// send it to the controller named in Metadata. Per partition: NONE,
// ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
// ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION,
// INVALID_TOPIC_EXCEPTION (topic being deleted).
//
// Single-node mode: every partition's only replica is its preferred one and
// leads, so existing partitions answer ELECTION_NOT_NEEDED and unknown ones
// UNKNOWN_TOPIC_OR_PARTITION (what a one-broker Kafka answers).
//
// An election type other than 0 and 1 (v1+) is INVALID_REQUEST, at the top
// level and for every partition named, with nothing elected, as Kafka
// answers.
#include <memory>
#include <string>

#include "broker/broker.h"
#include "broker/cluster/topic_table.h"
#include "broker/cluster/zk_cluster.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/elect_leaders.h"

namespace ciuickafka::broker {
namespace {

using protocol::ElectLeadersRequest;
using protocol::ElectLeadersResponse;
using protocol::ErrorCode;
using protocol::to_wire;

ElectLeadersResponse single_node(RequestContext& ctx, const ElectLeadersRequest& req) {
  ElectLeadersResponse resp;
  auto add = [&](const std::string& topic, const std::vector<int32_t>& partitions) {
    ElectLeadersResponse::ReplicaElectionResult t;
    t.topic = topic;
    auto found = ctx.broker->topics().find(topic);
    for (int32_t p : partitions) {
      ElectLeadersResponse::PartitionResult pr;
      pr.partition_id = p;
      const bool known = found && p >= 0 && static_cast<size_t>(p) < found->partitions.size();
      pr.error_code = to_wire(known ? ErrorCode::ELECTION_NOT_NEEDED : ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
      pr.error_message = known ? std::nullopt : std::optional<std::string>("The partition does not exist.");
      t.partition_result.push_back(std::move(pr));
    }
    resp.replica_election_results.push_back(std::move(t));
  };
  if (req.topic_partitions) {
    for (const auto& t : *req.topic_partitions) add(t.topic, t.partitions);
  } else {
    for (const auto& t : ctx.broker->topics().list()) {
      std::vector<int32_t> all;
      for (size_t p = 0; p < t->partitions.size(); ++p) all.push_back(static_cast<int32_t>(p));
      add(t->name, all);
    }
  }
  return resp;
}

ElectLeadersResponse invalid_type(const ElectLeadersRequest& req) {
  const std::string why = "Unknown election type " + std::to_string(req.election_type) + " (0: preferred, 1: unclean)";
  ElectLeadersResponse resp;
  resp.error_code = to_wire(ErrorCode::INVALID_REQUEST);
  if (!req.topic_partitions) return resp;
  for (const auto& t : *req.topic_partitions) {
    ElectLeadersResponse::ReplicaElectionResult r;
    r.topic = t.topic;
    for (int32_t p : t.partitions) {
      ElectLeadersResponse::PartitionResult pr;
      pr.partition_id = p;
      pr.error_code = to_wire(ErrorCode::INVALID_REQUEST);
      pr.error_message = why;
      r.partition_result.push_back(std::move(pr));
    }
    resp.replica_election_results.push_back(std::move(r));
  }
  return resp;
}

void handle_elect_leaders(RequestContext&& ctx) {
  ElectLeadersRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  if (ctx.api_version() >= 1 && req.election_type != 0 && req.election_type != 1) {
    ElectLeadersResponse resp = invalid_type(req);
    ctx.respond(make_response(ctx, resp, resp.error_code));
    return;
  }
  ZkCluster* cluster = ctx.broker->cluster();
  replication::controller::Controller* controller = cluster ? cluster->controller() : nullptr;
  if (controller == nullptr) {
    ElectLeadersResponse resp = single_node(ctx, req);
    ctx.respond(make_response(ctx, resp, resp.error_code));
    return;
  }
  const int16_t version = ctx.api_version();
  auto shared = std::make_shared<RequestContext>(std::move(ctx));
  controller->elect_leaders(std::move(req), version, [shared](ElectLeadersResponse resp) {
    shared->respond(make_response(*shared, resp, resp.error_code));
  });
}

}  // namespace

CK_REGISTER_HANDLER(protocol::ElectLeadersRequest, 0, 2, handle_elect_leaders);

}  // namespace ciuickafka::broker
