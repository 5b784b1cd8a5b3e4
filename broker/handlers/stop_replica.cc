// broker/handlers/stop_replica.cc: StopReplica (key 5), versions 0-4.
//
// The controller stops (and with DeletePartition deletes) replicas on this
// broker; the replica manager does it (broker/cluster/replica_manager.h).
// Single-node mode: STALE_CONTROLLER_EPOCH for the request and each
// partition, for the reason leader_and_isr.cc gives. Log deletion runs
// inline (LogManager renames the directory now and removes it later), as
// DeleteTopics does.
#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/stop_replica.h"

namespace ciuickafka::broker {
namespace {

void handle_stop_replica(RequestContext&& ctx) {
  protocol::StopReplicaRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  Broker& broker = *ctx.broker;
  const int16_t version = ctx.api_version();
  protocol::StopReplicaResponse resp =
      broker.cluster() == nullptr
          ? ReplicaManager::stop_replica_error(req, version, protocol::ErrorCode::STALE_CONTROLLER_EPOCH)
          : broker.service<ReplicaManager>().stop_replica(req, version);
  ctx.respond(make_response(ctx, resp, resp.error_code));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::StopReplicaRequest, 0, 4, handle_stop_replica);

}  // namespace ciuickafka::broker
