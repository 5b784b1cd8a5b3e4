// broker/handlers/offset_for_leader_epoch.cc: OffsetForLeaderEpoch (key 23),
// versions 0-4.
//
// A client (or a follower) asks where a leader epoch ended, to detect log
// truncation after a leader change (librdkafka 2.x and the Java consumer do
// after every leader change, with the epoch of the last record they read):
//   requested == our current epoch, log not empty -> (our epoch, LEO)
//   anything else -> Kafka's LeaderEpochFileCache.endOffsetFor over the
//     log's epoch cache (storage/leader_epoch_cache.h): the largest epoch
//     <= the requested one and the start of the next epoch; (-1, -1) for an
//     epoch above every known one or an empty cache.
// A cluster's partitions change epochs, so an older epoch must be answered
// from the cache: (-1, -1) for it reads as "truncated" to the client, which
// then resets to auto.offset.reset (the chaos run saw consumers rewind to 0).
// current_leader_epoch (v2+) is fenced first (FENCED_LEADER_EPOCH /
// UNKNOWN_LEADER_EPOCH). replica_id (v3+) changes nothing on one node.
#include <utility>

#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/fetch/epoch_check.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/offset_for_leader_epoch.h"
#include "storage/leader_epoch_cache.h"

namespace ciuickafka::broker {
namespace {

using protocol::ErrorCode;
using protocol::OffsetForLeaderEpochRequest;
using protocol::OffsetForLeaderEpochResponse;

OffsetForLeaderEpochResponse::EpochEndOffset end_offset_for(
    const Partition& p, const OffsetForLeaderEpochRequest::OffsetForLeaderPartition& in) {
  OffsetForLeaderEpochResponse::EpochEndOffset out;
  out.partition = in.partition;
  const ErrorCode fence = fetch::check_current_leader_epoch(in.current_leader_epoch, p.leader_epoch());
  if (fence != ErrorCode::NONE) {
    out.error_code = protocol::to_wire(fence);
    return out;
  }
  const int64_t leo = p.log_end_offset();
  if (leo > 0 && in.leader_epoch == p.leader_epoch()) {
    out.leader_epoch = p.leader_epoch();
    out.end_offset = leo;
    return out;
  }
  const storage::EpochEndOffset eo = p.log().end_offset_for_epoch(in.leader_epoch);
  out.leader_epoch = eo.epoch;
  out.end_offset = eo.end_offset;
  return out;
}

void handle_offset_for_leader_epoch(RequestContext&& ctx) {
  OffsetForLeaderEpochRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  OffsetForLeaderEpochResponse resp;
  int16_t first_error = 0;
  for (const auto& t : req.topics) {
    OffsetForLeaderEpochResponse::OffsetForLeaderTopicResult tr;
    tr.topic = t.topic;
    auto topic = ctx.broker->topics().find(t.topic);
    for (const auto& in : t.partitions) {
      std::shared_ptr<Partition> p = topic ? topic->partition(in.partition) : nullptr;
      OffsetForLeaderEpochResponse::EpochEndOffset out;
      if (ErrorCode le = ReplicaManager::leader_error(*ctx.broker, p.get(), t.topic, in.partition);
          le == ErrorCode::NONE) {
        out = end_offset_for(*p, in);
      } else {
        out.partition = in.partition;
        out.error_code = protocol::to_wire(le);  // unknown, or not led here (cluster mode)
      }
      if (first_error == 0) first_error = out.error_code;
      tr.partitions.push_back(std::move(out));
    }
    resp.topics.push_back(std::move(tr));
  }
  ctx.respond(make_response(ctx, resp, first_error));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::OffsetForLeaderEpochRequest, 0, 4, handle_offset_for_leader_epoch);

}  // namespace ciuickafka::broker
