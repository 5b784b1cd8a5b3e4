// broker/server/dispatch.cc: header decode, handler lookup, metrics.
#include "broker/server/dispatch.h"

#include <cstdio>

#include "broker/broker.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/request.h"

namespace ciuickafka::broker {
namespace {

constexpr int16_t kApiVersionsKey = 18;

void log_closed(const RequestContext& ctx, const char* why) {
  std::fprintf(stderr, "[ciuickafka] closing connection %llu from %s: %s (api key %d v%d, correlation id %d)\n",
               static_cast<unsigned long long>(ctx.connection_id), ctx.peer.c_str(), why, ctx.api_key(),
               ctx.api_version(), ctx.correlation_id());
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

  // Per-API metrics around the handler's answer.
  metrics::BrokerMetrics& m = ctx.broker->metrics();
  metrics::RequestMetrics rm = m.request(h->api_name, ctx.api_version());
  auto inner = std::move(ctx.respond);
  ctx.respond = [inner = std::move(inner), rm, &m, name = h->api_name,
                 received = ctx.received](Response r) mutable {
    rm.record(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - received));
    if (r.error_code != 0)
      m.request_error(name, protocol::error_name(static_cast<protocol::ErrorCode>(r.error_code))).Increment();
    inner(std::move(r));
  };
  h->fn(std::move(ctx));
}

}  // namespace ciuickafka::broker
