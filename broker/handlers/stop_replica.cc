// broker/handlers/stop_replica.cc: StopReplica (key 5), versions 0-4.
//
// The controller stops (and with DeletePartition deletes) replicas on this
// broker; the replica manager does it (broker/cluster/replica_manager.h).
// Single-node mode: STALE_CONTROLLER_EPOCH for the request and each
// partition, for the reason leader_and_isr.cc gives. Stopping a replica
// with DeletePartition waits on the disk (the log's directory renamed and
// its parent synced, the broker's checkpoints and topic registry written
// again): on the I/O pool, as DeleteTopics and LeaderAndIsr.
#include <memory>

#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/server/io_pool.h"
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
  if (broker.cluster() == nullptr) {
    protocol::StopReplicaResponse resp =
        ReplicaManager::stop_replica_error(req, version, protocol::ErrorCode::STALE_CONTROLLER_EPOCH);
    ctx.respond(make_response(ctx, resp, resp.error_code));
    return;
  }
  auto shared = std::make_shared<protocol::StopReplicaRequest>(std::move(req));
  broker.service<IoPool>().post_request(ctx, [ctx, shared, version]() mutable {
    protocol::StopReplicaResponse resp = ctx.broker->service<ReplicaManager>().stop_replica(*shared, version);
    ctx.respond(make_response(ctx, resp, resp.error_code));
  });
}

}  // namespace

CK_REGISTER_HANDLER(protocol::StopReplicaRequest, 0, 4, handle_stop_replica);

}  // namespace ciuickafka::broker
