// broker/handlers/leader_and_isr.cc: LeaderAndIsr (key 4), versions 0-7.
//
// The controller's partition roles for this broker, applied by the replica
// manager (broker/cluster/replica_manager.h: fencing, per-partition epoch
// checks, log creation, roles, listeners). v0-4 answer per-partition errors
// with topic names, v5+ per topic id.
//
// Single-node mode (no zookeeper.connect) has no controller, so nothing can
// legitimately send this: every partition and the request get
// STALE_CONTROLLER_EPOCH, the code that tells a sender "you are not the
// controller this broker follows" (a sender acting as a controller stops, as
// one that lost its election would). CLUSTER_AUTHORIZATION_FAILED would claim
// an authorizer we do not have.
//
// The work waits on the disk and on ZooKeeper: a log created per new
// partition (directories, files, fsyncs), the start of each new leader
// epoch recorded in the partition's leader-epoch-checkpoint (a file write
// and two fsyncs per partition led), a read of the topic's configs. It runs
// on the I/O pool (broker/server/io_pool.h), as CreateTopics does its own,
// so the network thread's other connections are not held meanwhile; the
// controller's later requests on the connection wait for the answer.
#include <memory>

#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/server/io_pool.h"
#include "protocol/error_code.h"
#include "protocol/generated/leader_and_isr.h"

namespace ciuickafka::broker {
namespace {

void handle_leader_and_isr(RequestContext&& ctx) {
  protocol::LeaderAndIsrRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  Broker& broker = *ctx.broker;
  const int16_t version = ctx.api_version();
  if (broker.cluster() == nullptr) {
    protocol::LeaderAndIsrResponse resp =
        ReplicaManager::leader_and_isr_error(req, version, protocol::ErrorCode::STALE_CONTROLLER_EPOCH);
    ctx.respond(make_response(ctx, resp, resp.error_code));
    return;
  }
  auto shared = std::make_shared<protocol::LeaderAndIsrRequest>(std::move(req));
  broker.service<IoPool>().post_request(ctx, [ctx, shared, version]() mutable {
    protocol::LeaderAndIsrResponse resp =
        ctx.broker->service<ReplicaManager>().leader_and_isr(*shared, version);
    ctx.respond(make_response(ctx, resp, resp.error_code));
  });
}

}  // namespace

CK_REGISTER_HANDLER(protocol::LeaderAndIsrRequest, 0, 7, handle_leader_and_isr);

}  // namespace ciuickafka::broker
