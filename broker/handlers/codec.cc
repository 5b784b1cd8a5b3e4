// broker/handlers/codec.cc: turning an encoded response into a Response.
#include "broker/handlers/codec.h"
#include "broker/broker.h"
#include "broker/quotas/client_quotas.h"
#include "metrics/log/log.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace ciuickafka::broker {

int64_t request_quota_throttle(const RequestContext& ctx) {
  if (ctx.broker == nullptr || ctx.quota_exempt) return 0;
  quotas::ClientQuotas& q = ctx.broker->client_quotas();
  if (!q.enabled()) return 0;
  switch (ctx.api_key()) {  // Kafka's cluster actions: never throttled
    case 4:   // LeaderAndIsr
    case 5:   // StopReplica
    case 6:   // UpdateMetadata
    case 7:   // ControlledShutdown
    case 27:  // WriteTxnMarkers
    case 56:  // AlterPartition
      return 0;
    default:
      break;
  }
  using Clock = std::chrono::steady_clock;
  Clock::time_point until = Clock::now();
  if (ctx.handler_returned) {
    const Clock::rep r = ctx.handler_returned->load(std::memory_order_acquire);
    if (r != 0) until = std::min(until, Clock::time_point(Clock::duration(r)));
  }
  int64_t ns = ctx.dispatched == Clock::time_point{}
                   ? 0
                   : std::chrono::duration_cast<std::chrono::nanoseconds>(until - ctx.dispatched).count();
  // Plus its work on the I/O pool or the admin worker.
  if (ctx.worker_span) ns = std::max<int64_t>(0, ns) + ctx.worker_span->ns(Clock::now());
  // Kafka's unit: percent of one thread per second (nanos * 100 / 1e9).
  return q.record(quotas::Kind::kRequest, ctx.header.client_id.value_or(""),
                  static_cast<double>(std::max<int64_t>(0, ns)) * 1e-7, quotas::steady_ms());
}

Response finish_response(protocol::Writer&& w, int16_t error_code, int16_t api_key, int16_t version) {
  if (!w.ok()) {
    // Our own response failed to encode: a broker bug (a field this version
    // cannot carry). Closing the connection is the only honest answer.
    const protocol::ApiInfo* api = protocol::find_api(api_key);
    CK_LOG_ERROR("handlers", "%.*s v%d response encoding failed: %s",
                 api != nullptr ? static_cast<int>(api->name.size()) : 7,
                 api != nullptr ? api->name.data() : "unknown", version,
                 std::string(protocol::to_string(w.error())).c_str());
    return Response::close();
  }
  const uint64_t frame = w.total_size() - 4;
  if (frame > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) return Response::close();
  w.patch_int32(0, static_cast<int32_t>(frame));

  Response resp;
  resp.error_code = error_code;
  resp.splices.reserve(w.splices().size());
  for (const protocol::Writer::Splice& s : w.splices()) {
    const auto* rr = static_cast<const storage::ReadResult*>(s.token);
    Splice sp;
    sp.at = s.at;
    sp.slices = rr->slices;
    sp.length = s.length;
    resp.splices.push_back(std::move(sp));
  }
  resp.bytes = w.release();
  return resp;
}

}  // namespace ciuickafka::broker
