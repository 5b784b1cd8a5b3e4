// broker/handlers/delete_records.cc: DeleteRecords (key 21), versions 0-2.
//
// Moves a partition's log start offset forward: records below it become
// unreadable at once (Fetch there is OFFSET_OUT_OF_RANGE) and whole segments
// below it are deleted by the log. offset -1 means "the high watermark";
// any other negative offset, or one past the HW, is OFFSET_OUT_OF_RANGE.
// An offset at or below the current start changes nothing. The answer is the
// new low watermark (the log start offset). A topic whose cleanup.policy
// lacks "delete" gets POLICY_VIOLATION, as in Kafka. On one node there are
// no replicas to wait for, so timeout_ms is not needed.
#include <string>
#include <utility>

#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/delete_records.h"

namespace ciuickafka::broker {
namespace {

using protocol::DeleteRecordsRequest;
using protocol::DeleteRecordsResponse;
using protocol::ErrorCode;

constexpr int64_t kHighWatermark = -1;

ErrorCode delete_below(Partition& p, int64_t requested) {
  const int64_t hw = p.high_watermark();
  const int64_t offset = requested == kHighWatermark ? hw : requested;
  if (offset < 0 || offset > hw) return ErrorCode::OFFSET_OUT_OF_RANGE;
  storage::Status s = p.log().advance_log_start_offset(offset);
  if (!s.is_ok()) return ErrorCode::KAFKA_STORAGE_ERROR;
  return ErrorCode::NONE;
}

void handle_delete_records(RequestContext&& ctx) {
  DeleteRecordsRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  Broker& broker = *ctx.broker;
  DeleteRecordsResponse resp;
  int16_t first_error = 0;
  for (const auto& t : req.topics) {
    DeleteRecordsResponse::DeleteRecordsTopicResult tr;
    tr.name = t.name;
    auto topic = broker.topics().find(t.name);
    bool deletable = true;
    if (topic) {
      auto policy = broker.topics().config_value(*topic, "cleanup.policy");
      deletable = !policy || policy->find("delete") != std::string::npos;
    }
    for (const auto& in : t.partitions) {
      DeleteRecordsResponse::DeleteRecordsPartitionResult out;
      out.partition_index = in.partition_index;
      out.low_watermark = -1;
      std::shared_ptr<Partition> p = topic ? topic->partition(in.partition_index) : nullptr;
      ErrorCode e = ErrorCode::NONE;
      if (ErrorCode le = ReplicaManager::leader_error(broker, p.get(), t.name, in.partition_index);
          le != ErrorCode::NONE) {
        e = le;  // unknown, or not led here (cluster mode)
      } else if (!deletable) {
        e = ErrorCode::POLICY_VIOLATION;
      } else {
        e = delete_below(*p, in.offset);
        if (e == ErrorCode::NONE) out.low_watermark = p->log_start_offset();
      }
      out.error_code = protocol::to_wire(e);
      if (first_error == 0) first_error = out.error_code;
      tr.partitions.push_back(std::move(out));
    }
    resp.topics.push_back(std::move(tr));
  }
  ctx.respond(make_response(ctx, resp, first_error));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::DeleteRecordsRequest, 0, 2, handle_delete_records);

}  // namespace ciuickafka::broker
