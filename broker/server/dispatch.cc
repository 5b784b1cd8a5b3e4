// broker/server/dispatch.cc: header decode, handler lookup, metrics, and a
// rate-limited WARN line for each connection closed over a bad request.
#include "broker/server/dispatch.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>

#include "broker/broker.h"
#include "broker/handlers/registry.h"
#include "broker/quotas/client_quotas.h"
#include "metrics/log/log.h"
#include "metrics/log/rate_limit.h"
#include "protocol/error_code.h"
#include "protocol/request.h"

namespace ciuickafka::broker {
namespace {

constexpr int16_t kApiVersionsKey = 18;

// A client that keeps sending bad requests reconnects and repeats: at most
// 10 lines per reason in 10 s, the next one saying how many were dropped.
void log_closed(const RequestContext& ctx, const char* why) {
  if (!metrics::log::enabled(metrics::log::Level::kWarn)) return;
  static metrics::log::RateLimiter limiter(10, std::chrono::seconds(10));
  const metrics::log::RateLimiter::Admission a = limiter.admit(why);
  if (!a.admitted) return;
  CK_LOG_WARN("network", "closing connection %llu from %s: %s (api key %d v%d, correlation id %d)%s",
              static_cast<unsigned long long>(ctx.connection_id), ctx.peer.c_str(), why, ctx.api_key(),
              ctx.api_version(), ctx.correlation_id(), metrics::log::suppressed_note(a.suppressed).c_str());
}

}  // namespace

void dispatch_frame(RequestContext ctx) {
  protocol::ParsedRequestHeader parsed;
  const protocol::WireError err = protocol::parse_request_header(*ctx.frame, parsed);
  ctx.header = parsed.header;
  ctx.header_version = parsed.header_version;
  if (err != protocol::WireError::kNone) {
    log_closed(ctx, "request header does not decode");
    ctx.respond(Response::close());
    return;
  }
  ctx.body = std::span<const uint8_t>(*ctx.frame).subspan(parsed.body_offset);

  const HandlerEntry* h = find_handler(ctx.api_key());
  if (h == nullptr) {
    log_closed(ctx, "API key not supported");
    ctx.respond(Response::close());
    return;
  }
  const bool in_range = ctx.api_version() >= h->min_version && ctx.api_version() <= h->max_version;
  if (!in_range && ctx.api_key() != kApiVersionsKey) {
    log_closed(ctx, "API version not supported");
    ctx.respond(Response::close());
    return;
  }

  // Per-API metrics around the handler's answer: counted when answered;
  // the request queue, local and remote phases are measured here, the
  // connection adds the response queue and send phases (response.h).
  using Clock = std::chrono::steady_clock;
  metrics::BrokerMetrics& m = ctx.broker->metrics();
  metrics::RequestMetrics rm = m.request(h->api_name, ctx.api_version());
  const Clock::time_point started = Clock::now();
  // When the handler returned (steady-clock ticks; 0 until then): an answer
  // before that is all local time, one after it is remote time since.
  auto returned = std::make_shared<std::atomic<Clock::rep>>(0);
  auto inner = std::move(ctx.respond);
  ctx.respond = [inner = std::move(inner), rm, &m, name = h->api_name, received = ctx.received, started,
                 returned](Response r) mutable {
    const Clock::time_point now = Clock::now();
    rm.requests->Increment();
    if (r.error_code != 0)
      m.request_error(name, protocol::error_name(static_cast<protocol::ErrorCode>(r.error_code))).Increment();
    r.timing.metrics = rm;
    r.timing.times.request_queue = std::max(Clock::duration::zero(), started - received);
    const Clock::rep ret = returned->load(std::memory_order_acquire);
    if (ret == 0) {
      r.timing.times.local = now - started;
    } else {
      const Clock::time_point at{Clock::duration(ret)};
      r.timing.times.local = at - started;
      r.timing.times.remote = std::max(Clock::duration::zero(), now - at);
    }
    r.timing.answered = now;
    inner(std::move(r));
  };
  ctx.dispatched = started;
  ctx.handler_returned = returned;
  // A client under a quota: its work off this thread is timed (worker_span,
  // for request_percentage), and it has one request in flight at a time,
  // as every client has in Kafka: a throttled answer's mute then stops its
  // very next request, where pipelined ones would already be dispatched.
  if (ctx.broker != nullptr && ctx.broker->client_quotas().enabled() &&
      ctx.broker->client_quotas().limits(ctx.header.client_id ? std::string_view(*ctx.header.client_id)
                                                              : std::string_view())) {
    ctx.worker_span = std::make_shared<WorkerSpan>();
    if (ctx.hold_later_requests) {
      ctx.hold_later_requests();
      ctx.quota_held = true;
    }
  }
  h->fn(std::move(ctx));
  returned->store(std::max<Clock::rep>(1, Clock::now().time_since_epoch().count()), std::memory_order_release);
}

}  // namespace ciuickafka::broker
