// broker/handlers/list_offsets.cc: ListOffsets (key 2), versions 0-9.
//
// Per partition, a timestamp names what the client wants:
//   -2 EARLIEST, -4 EARLIEST_LOCAL (v8+; no tiered storage, so the same):
//      the log start offset;
//   -1 LATEST: the high watermark (read_uncommitted), the last stable
//      offset (read_committed: min(HW, the first offset of an undecided
//      transaction); LEADER_NOT_AVAILABLE, retriable, in the moment after a
//      role change when the producer state cannot be loaded yet),
//      the log end offset for a replica (replica_id >= 0);
//   -3 MAX_TIMESTAMP (v7+): the first record carrying the largest timestamp;
//   -5 LATEST_TIERED (v9+): nothing is tiered here, so Kafka's answer for
//      a log without remote storage: offset -1, timestamp -1;
//   >= 0: the first record whose timestamp is at or after it;
//   any other negative value: UNSUPPORTED_VERSION (offset -1, timestamp -1;
//      no offsets at v0), as Kafka 3.9 answers a special timestamp it does
//      not know.
// Lookups other than LATEST/EARLIEST that land at or past the fetchable end
// answer "unknown" (offset -1, timestamp -1), as Kafka does.
// A cluster leader whose HW is still below the log end offset it had when it
// became leader (KIP-207) answers a client's (replica_id -1) LATEST, and a
// lookup past the fetchable end, with OFFSET_NOT_AVAILABLE, which clients
// retry: its HW may lag what the previous leader committed.
//
// v0 answers in old_style_offsets (up to max_num_offsets offsets, newest
// first): LATEST gives the HW followed by segment base offsets, EARLIEST the
// log start; a timestamp gives the offset found for it, if any.
// current_leader_epoch (v4+) is fenced (broker/fetch/epoch_check.h). A
// partition named twice (v1+) gets INVALID_REQUEST, as in Kafka.
// A read_committed request for a partition whose producer state is not
// loaded yet is answered on the I/O pool (server/io_pool.h): the load scans
// the log from the newest producer snapshot, which a network thread must
// not wait for.
#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/fetch/epoch_check.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/produce/produce_service.h"
#include "broker/server/io_pool.h"
#include "protocol/error_code.h"
#include "protocol/generated/list_offsets.h"

namespace ciuickafka::broker {
namespace {

// Kafka's DEBUG_CONSUMER_ID: may read from any replica, not only the leader.
constexpr int32_t kDebugReplicaId = -2;

using protocol::ErrorCode;
using protocol::ListOffsetsRequest;
using protocol::ListOffsetsResponse;
using PartitionResponse = ListOffsetsResponse::ListOffsetsPartitionResponse;

constexpr int64_t kLatest = -1;
constexpr int64_t kEarliest = -2;
constexpr int64_t kMaxTimestamp = -3;
constexpr int64_t kEarliestLocal = -4;
constexpr int64_t kLatestTiered = -5;

std::vector<int64_t> old_style_offsets(const Partition& p, int64_t timestamp, int32_t max_num) {
  std::vector<int64_t> out;
  if (max_num <= 0) return out;
  const int64_t start = p.log_start_offset();
  if (timestamp == kEarliest) {
    out.push_back(start);
  } else if (timestamp == kLatest) {
    const int64_t hw = p.high_watermark();
    out.push_back(hw);
    auto segs = p.log().segments();
    for (auto it = segs->rbegin(); it != segs->rend() && out.size() < static_cast<size_t>(max_num); ++it) {
      const int64_t base = std::max((*it)->base_offset(), start);
      if (base < out.back()) out.push_back(base);
    }
  } else {
    auto found = p.log().offset_for_timestamp(timestamp);
    if (found.is_ok() && found.value().offset >= 0 && found.value().offset < p.high_watermark())
      out.push_back(found.value().offset);
  }
  return out;
}

PartitionResponse list_one(const Partition& p, const ListOffsetsRequest::ListOffsetsPartition& in,
                           int16_t version, bool from_replica, bool from_client, std::optional<int64_t> stable_end) {
  PartitionResponse out;
  out.partition_index = in.partition_index;
  const ErrorCode fence = fetch::check_current_leader_epoch(in.current_leader_epoch, p.leader_epoch());
  if (fence != ErrorCode::NONE) {
    out.error_code = protocol::to_wire(fence);
    return out;
  }
  if (in.timestamp < kLatestTiered) {
    out.error_code = protocol::to_wire(ErrorCode::UNSUPPORTED_VERSION);
    return out;
  }
  if (version == 0) {
    out.old_style_offsets = old_style_offsets(p, in.timestamp, in.max_num_offsets);
    return out;
  }
  const int64_t fetchable_end =
      from_replica ? p.log_end_offset() : stable_end.value_or(p.high_watermark());
  const int32_t epoch_if_any = p.log_end_offset() > 0 ? p.leader_epoch() : -1;
  // KIP-207: a leader whose HW has not reached the start of its epoch may
  // not know yet what the previous leader committed (a restarted broker's HW
  // comes from its checkpoint): a client asking for the end, or for a time
  // past what it can serve, gets OFFSET_NOT_AVAILABLE (retriable) instead of
  // an end that goes backwards.
  bool lagging = false;
  if (from_client) {
    auto rs = p.role_state();
    lagging = rs && rs->role == ReplicaRole::kLeader && rs->leader_epoch_start_offset > p.high_watermark();
  }
  switch (in.timestamp) {
    case kLatest:
      if (lagging) {
        out.error_code = protocol::to_wire(ErrorCode::OFFSET_NOT_AVAILABLE);
        return out;
      }
      out.offset = fetchable_end;
      out.leader_epoch = p.leader_epoch();
      return out;
    case kEarliest:
    case kEarliestLocal:
      out.offset = p.log_start_offset();
      out.leader_epoch = epoch_if_any;
      return out;
    case kLatestTiered:
      return out;  // offset -1, timestamp -1: nothing in remote storage
    default:
      break;
  }
  storage::TimestampOffset found;
  if (in.timestamp == kMaxTimestamp) {
    found = p.log().max_timestamp();
  } else {
    auto r = p.log().offset_for_timestamp(in.timestamp);
    if (!r.is_ok()) {
      out.error_code = protocol::to_wire(ErrorCode::KAFKA_STORAGE_ERROR);
      return out;
    }
    found = r.value();
  }
  if (found.offset >= 0 && found.offset < fetchable_end) {
    out.offset = found.offset;
    out.timestamp = found.timestamp;
    out.leader_epoch = epoch_if_any;
  } else if (lagging) {
    out.error_code = protocol::to_wire(ErrorCode::OFFSET_NOT_AVAILABLE);
  }
  return out;
}

// Whether a read_committed LATEST of one of req's partitions would first
// load its producer state (a scan of the log from its newest snapshot).
bool loads_producer_state(Broker& broker, const ListOffsetsRequest& req) {
  auto& producers = broker.service<produce::ProduceService>();
  for (const auto& t : req.topics) {
    auto topic = broker.topics().find(t.name);
    if (!topic) continue;
    for (const auto& in : t.partitions) {
      std::shared_ptr<Partition> p = topic->partition(in.partition_index);
      if (p && !producers.loaded_for_reads(*p)) return true;
    }
  }
  return false;
}

void answer(RequestContext& ctx, const ListOffsetsRequest& req);

void handle_list_offsets(RequestContext&& ctx) {
  auto req = std::make_shared<ListOffsetsRequest>();
  if (!decode_request(ctx, *req)) {
    ctx.respond(Response::close());
    return;
  }
  if (req->isolation_level == 1 && req->replica_id < 0 && loads_producer_state(*ctx.broker, *req)) {
    // The load reads the log: on the I/O pool, never on the network thread
    // (later requests on the connection wait for this answer).
    ctx.broker->service<IoPool>().post_request(ctx, [ctx, req]() mutable { answer(ctx, *req); });
    return;
  }
  answer(ctx, *req);
}

void answer(RequestContext& ctx, const ListOffsetsRequest& req) {
  Broker& broker = *ctx.broker;
  const int16_t version = ctx.api_version();
  const bool from_replica = req.replica_id >= 0;
  const bool read_committed = req.isolation_level == 1;

  std::set<std::pair<std::string, int32_t>> seen, duplicated;
  if (version >= 1) {
    for (const auto& t : req.topics)
      for (const auto& p : t.partitions)
        if (!seen.emplace(t.name, p.partition_index).second) duplicated.emplace(t.name, p.partition_index);
  }

  ListOffsetsResponse resp;
  int16_t first_error = 0;
  for (const auto& t : req.topics) {
    ListOffsetsResponse::ListOffsetsTopicResponse tr;
    tr.name = t.name;
    auto topic = broker.topics().find(t.name);
    for (const auto& in : t.partitions) {
      PartitionResponse out;
      out.partition_index = in.partition_index;
      std::shared_ptr<Partition> p = topic ? topic->partition(in.partition_index) : nullptr;
      if (duplicated.count({t.name, in.partition_index}) != 0) {
        out.error_code = protocol::to_wire(ErrorCode::INVALID_REQUEST);
      } else if (ErrorCode le = req.replica_id == kDebugReplicaId
                                    ? (p ? ErrorCode::NONE : ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
                                    : ReplicaManager::leader_error(broker, p.get(), t.name, in.partition_index);
                 le != ErrorCode::NONE) {
        out.error_code = protocol::to_wire(le);  // unknown, or not led here (cluster mode)
      } else {
        std::optional<int64_t> stable_end;
        if (read_committed && !from_replica)
          stable_end = broker.service<produce::ProduceService>().last_stable_offset(*p);
        if (read_committed && !from_replica && !stable_end) {
          out.partition_index = in.partition_index;
          out.error_code = protocol::to_wire(ErrorCode::LEADER_NOT_AVAILABLE);
        } else {
          out = list_one(*p, in, version, from_replica, req.replica_id == -1, stable_end);
        }
      }
      if (version < 4) out.leader_epoch = -1;  // not in v0-v3 (and not ignorable)
      if (first_error == 0) first_error = out.error_code;
      tr.partitions.push_back(std::move(out));
    }
    resp.topics.push_back(std::move(tr));
  }
  ctx.respond(make_response(ctx, resp, first_error));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::ListOffsetsRequest, 0, 9, handle_list_offsets);

}  // namespace ciuickafka::broker
