// broker/handlers/find_coordinator.cc: FindCoordinator (key 10), versions 0-6.
//
// A single node coordinates every group: GROUP keys get this node's
// advertised endpoint for the listener the request came in on (the first
// call also creates __consumer_offsets and starts loading it, as Kafka
// does). In cluster mode (Kafka's ZooKeeper mode) a GROUP key gets the
// current leader of its __consumer_offsets partition from the metadata
// cache, at that broker's endpoint for the request's listener; while the
// topic does not exist its creation is queued on the admin worker (refused
// while fewer brokers live than offsets.topic.replication.factor) and,
// like a partition without a leader (or a leader without that listener),
// the answer is COORDINATOR_NOT_AVAILABLE. TRANSACTION keys: a single node
// coordinates every transactional id (the first call creates
// __transaction_state; while it loads the requests that follow get
// COORDINATOR_LOAD_IN_PROGRESS, not this one, as Kafka's); in cluster mode
// the leader of the id's __transaction_state partition, found as for groups
// (the topic's creation queued while it does not exist). An empty
// transactional id is INVALID_REQUEST, as Kafka. An unknown key type is INVALID_REQUEST. v4+ batch the keys
// (coordinator_keys) and answer one Coordinator per key.
#include "broker/admin/cluster_info.h"
#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/groups/coordinator.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/txn/coordinator.h"
#include "protocol/error_code.h"
#include "protocol/generated/find_coordinator.h"

namespace ciuickafka::broker {
namespace {

using protocol::ErrorCode;
using protocol::FindCoordinatorRequest;
using protocol::FindCoordinatorResponse;

struct Answer {
  ErrorCode error = ErrorCode::NONE;
  int32_t node_id = -1;
  std::string host;
  int32_t port = -1;
};

// Cluster mode: the leader of partition `partition` of an internal topic.
Answer locate_in_cluster(RequestContext& ctx, const char* topic, int32_t partition) {
  Answer a;
  a.error = ErrorCode::COORDINATOR_NOT_AVAILABLE;
  auto snap = ctx.broker->service<ReplicaManager>().metadata_cache().snapshot();
  const CachedPartition* p = snap->partition(topic, partition);
  if (p == nullptr || p->leader < 0) return a;
  const CachedBroker* leader = snap->broker(p->leader);
  const CachedEndpoint* ep = leader ? leader->endpoint(ctx.listener) : nullptr;
  if (ep == nullptr) return a;
  a.error = ErrorCode::NONE;
  a.node_id = p->leader;
  a.host = ep->host;
  a.port = ep->port;
  return a;
}

Answer locate(RequestContext& ctx, int8_t key_type, const std::string& key) {
  Answer a;
  if (key_type == 1) {
    if (key.empty()) {
      a.error = ErrorCode::INVALID_REQUEST;
      return a;
    }
    auto& txn_coordinator = txn::coordinator(*ctx.broker);
    if (txn_coordinator.cluster_mode()) {
      if (!txn_coordinator.ensure_topic()) {
        a.error = ErrorCode::COORDINATOR_NOT_AVAILABLE;
        return a;
      }
      return locate_in_cluster(ctx, txn::kTxnTopic, txn_coordinator.partition_of(key));
    }
    a.error = txn_coordinator.find_error();
    if (a.error != ErrorCode::NONE) return a;
    auto ep = admin::advertised_endpoint(*ctx.broker, ctx.listener);
    a.node_id = ctx.broker->node_id();
    a.host = ep.host;
    a.port = ep.port;
    return a;
  }
  if (key_type != 0) {
    a.error = ErrorCode::INVALID_REQUEST;
    return a;
  }
  auto& coordinator = ctx.broker->service<groups::GroupCoordinator>();
  if (!coordinator.ensure_offsets_topic()) {
    a.error = ErrorCode::COORDINATOR_NOT_AVAILABLE;
    return a;
  }
  if (coordinator.cluster_mode()) return locate_in_cluster(ctx, groups::kOffsetsTopic, coordinator.partition_of(key));
  auto ep = admin::advertised_endpoint(*ctx.broker, ctx.listener);
  a.node_id = ctx.broker->node_id();
  a.host = ep.host;
  a.port = ep.port;
  return a;
}

void handle_find_coordinator(RequestContext&& ctx) {
  FindCoordinatorRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  FindCoordinatorResponse resp;
  if (ctx.api_version() >= 4) {
    for (const std::string& key : req.coordinator_keys) {
      Answer a = locate(ctx, req.key_type, key);
      FindCoordinatorResponse::Coordinator c;
      c.key = key;
      c.node_id = a.node_id;
      c.host = a.host;
      c.port = a.port;
      c.error_code = protocol::to_wire(a.error);
      c.error_message = a.error == ErrorCode::NONE ? std::nullopt : std::optional<std::string>(std::string(protocol::error_description(a.error)));
      resp.coordinators.push_back(std::move(c));
    }
    ctx.respond(make_response(ctx, resp));
    return;
  }
  Answer a = locate(ctx, req.key_type, req.key);
  resp.error_code = protocol::to_wire(a.error);
  resp.error_message = a.error == ErrorCode::NONE ? std::nullopt : std::optional<std::string>(std::string(protocol::error_description(a.error)));
  resp.node_id = a.node_id;
  resp.host = a.host;
  resp.port = a.port;
  ctx.respond(make_response(ctx, resp, resp.error_code));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::FindCoordinatorRequest, 0, 6, handle_find_coordinator);

}  // namespace ciuickafka::broker
