// broker/handlers/offset_commit.cc: OffsetCommit (key 8), versions 0-9.
//
// The coordinator validates, appends to __consumer_offsets and answers once
// the commit is durable (after the group-commit fsync when
// ciuic.acks.all.fsync is true), possibly from the flusher thread. Simple
// commits (generation -1, no member id; every v0 commit) need no group
// membership; see broker/groups/offsets.cc for the rules.
#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "broker/groups/respond.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/generated/offset_commit.h"

namespace ciuickafka::broker {
namespace {

void handle_offset_commit(RequestContext&& ctx) {
  protocol::OffsetCommitRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  auto& coordinator = ctx.broker->service<groups::GroupCoordinator>();
  const int16_t version = ctx.api_version();
  const uint64_t connection_id = ctx.connection_id;
  auto shared = groups::share(std::move(ctx));
  coordinator.commit_offsets(
      req, version, [shared](protocol::OffsetCommitResponse resp) { shared->respond(make_response(*shared, resp)); },
      connection_id);
}

}  // namespace

CK_REGISTER_HANDLER(protocol::OffsetCommitRequest, 0, 9, handle_offset_commit);

}  // namespace ciuickafka::broker
