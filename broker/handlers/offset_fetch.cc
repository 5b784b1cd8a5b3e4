// broker/handlers/offset_fetch.cc: OffsetFetch (key 9), versions 0-9.
//
// v0-v7 ask for one group (topics null from v2: every committed partition),
// v8+ for several. A partition without a commit answers offset -1, leader
// epoch -1 and empty metadata. require_stable (v7+): a partition whose
// transactional commit (TxnOffsetCommit) awaits its marker answers
// UNSTABLE_OFFSET_COMMIT, so a new consumer waits for it. Before v2 there is no top-level
// error field, so a group error is put on every partition.
#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/generated/offset_fetch.h"

namespace ciuickafka::broker {
namespace {

using protocol::OffsetFetchRequest;
using protocol::OffsetFetchResponse;

void handle_offset_fetch(RequestContext&& ctx) {
  OffsetFetchRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  auto& coordinator = ctx.broker->service<groups::GroupCoordinator>();
  OffsetFetchResponse resp;
  if (ctx.api_version() >= 8) {
    for (const auto& g : req.groups) {
      resp.groups.push_back(coordinator.fetch_offsets(g.group_id, g.topics, req.require_stable));
    }
    ctx.respond(make_response(ctx, resp));
    return;
  }
  std::optional<std::vector<OffsetFetchRequest::OffsetFetchRequestTopics>> topics;
  if (req.topics) {
    topics.emplace();
    for (const auto& t : *req.topics) {
      OffsetFetchRequest::OffsetFetchRequestTopics c;
      c.name = t.name;
      c.partition_indexes = t.partition_indexes;
      topics->push_back(std::move(c));
    }
  }
  auto group = coordinator.fetch_offsets(req.group_id, topics, ctx.api_version() >= 7 && req.require_stable);
  const bool has_top_error = ctx.api_version() >= 2;
  if (has_top_error) resp.error_code = group.error_code;
  if (group.error_code != 0 && has_top_error) {
    ctx.respond(make_response(ctx, resp, resp.error_code));
    return;
  }
  if (group.error_code != 0 && topics) {  // v0/v1: the error on every partition asked for
    for (const auto& t : *topics) {
      OffsetFetchResponse::OffsetFetchResponseTopic rt;
      rt.name = t.name;
      for (int32_t p : t.partition_indexes) {
        OffsetFetchResponse::OffsetFetchResponsePartition rp;
        rp.partition_index = p;
        rp.committed_offset = -1;
        rp.error_code = group.error_code;
        rt.partitions.push_back(rp);
      }
      resp.topics.push_back(std::move(rt));
    }
  } else {
    for (auto& t : group.topics) {
      OffsetFetchResponse::OffsetFetchResponseTopic rt;
      rt.name = std::move(t.name);
      for (auto& p : t.partitions) {
        OffsetFetchResponse::OffsetFetchResponsePartition rp;
        rp.partition_index = p.partition_index;
        rp.committed_offset = p.committed_offset;
        rp.committed_leader_epoch = p.committed_leader_epoch;
        rp.metadata = std::move(p.metadata);
        rp.error_code = p.error_code;
        rt.partitions.push_back(std::move(rp));
      }
      resp.topics.push_back(std::move(rt));
    }
  }
  ctx.respond(make_response(ctx, resp, resp.error_code));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::OffsetFetchRequest, 0, 9, handle_offset_fetch);

}  // namespace ciuickafka::broker
