// broker/handlers/update_metadata.cc: UpdateMetadata (key 6), versions 0-8.
//
// The controller's view of live brokers and partition states, kept by the
// metadata cache (broker/cluster/metadata_cache.h) that Metadata and
// DescribeCluster answer from. Fencing: STALE_BROKER_EPOCH,
// STALE_CONTROLLER_EPOCH (replica_manager.h). Single-node mode:
// STALE_CONTROLLER_EPOCH, for the reason leader_and_isr.cc gives. Memory
// only: answered inline.
#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/update_metadata.h"

namespace ciuickafka::broker {
namespace {

void handle_update_metadata(RequestContext&& ctx) {
  protocol::UpdateMetadataRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  Broker& broker = *ctx.broker;
  protocol::UpdateMetadataResponse resp;
  if (broker.cluster() == nullptr) {
    resp.error_code = protocol::to_wire(protocol::ErrorCode::STALE_CONTROLLER_EPOCH);
  } else {
    resp = broker.service<ReplicaManager>().update_metadata(req, ctx.api_version());
  }
  ctx.respond(make_response(ctx, resp, resp.error_code));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::UpdateMetadataRequest, 0, 8, handle_update_metadata);

}  // namespace ciuickafka::broker
