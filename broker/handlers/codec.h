// broker/handlers/codec.h: from request body to typed request, and from
// typed response to the bytes a connection sends.
//
// decode_request() decodes the body at the request's version; a body that
// does not decode is answered by closing the connection (Kafka cannot reply
// to what it cannot parse, and neither can we).
//
// make_response() writes the size prefix, the response header at the right
// version (ApiVersions always v0, flexible versions v1) and the body. Record
// data given as external Records (Records::external(&read_result, bytes),
// read_result a storage::ReadResult) becomes a Splice: the connection sends
// those bytes from the segment files with sendfile. The ReadResult only has
// to live until make_response returns; the slices are copied (they are
// reference-counted handles, not data).
//
// make_response() also measures the request against its client's
// request_percentage quota (quotas/client_quotas.h: the time the request
// held a thread, from dispatch until its handler returned or answered,
// whichever came first, plus its work's time on the I/O pool or the admin
// worker, RequestContext::worker_span): over the quota, the body's
// throttle_time_ms becomes the larger of its own and the quota's, and so
// does the Response's throttle_ms (the connection is muted for it; a body
// without the field at its version is still measured and muted). Exempt, as Kafka's cluster
// actions: LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown,
// WriteTxnMarkers, AlterPartition; and requests marked quota_exempt.
// Nothing happens until a quota has been set.
//
// Thread-safety: functions of their arguments, and the quotas' own locks.
#pragma once

#include <cstdint>

#include "broker/server/request_context.h"
#include "broker/server/response.h"
#include "protocol/generated/api_keys.h"
#include "protocol/generated/headers.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"
#include "storage/log.h"

namespace ciuickafka::broker {

template <class Request>
bool decode_request(const RequestContext& ctx, Request& out) {
  protocol::Reader r(ctx.body);
  out.decode(r, ctx.api_version());
  return r.ok();
}

// Turns an encoded Writer (size prefix at 0, reserved) into a Response.
// api_key/version only name the response in the log when it failed to encode.
Response finish_response(protocol::Writer&& w, int16_t error_code, int16_t api_key = -1, int16_t version = -1);

// The request_percentage throttle (ms) of the request being answered,
// recorded now; 0 when exempt, within its quota or without quotas.
int64_t request_quota_throttle(const RequestContext& ctx);

template <class ResponseBody>
Response encode_response(const RequestContext& ctx, const ResponseBody& body, int16_t error_code) {
  const int16_t version = ctx.api_version();
  protocol::Writer w(64 + body.compute_size(version));
  w.write_int32(0);  // size, patched by finish_response
  protocol::ResponseHeader header;
  header.correlation_id = ctx.correlation_id();
  header.encode(w, protocol::response_header_version(ctx.api_key(), version));
  body.encode(w, version);
  return finish_response(std::move(w), error_code, ctx.api_key(), version);
}

template <class ResponseBody>
Response make_response(const RequestContext& ctx, const ResponseBody& body, int16_t error_code = 0) {
  const int64_t throttle = request_quota_throttle(ctx);
  if constexpr (requires { body.throttle_time_ms; }) {
    if (throttle > body.throttle_time_ms) {
      ResponseBody throttled = body;  // rare: only a client over its quota
      throttled.throttle_time_ms = static_cast<int32_t>(throttle);
      Response r = encode_response(ctx, throttled, error_code);
      r.throttle_ms = throttle;
      return r;
    }
  }
  Response r = encode_response(ctx, body, error_code);
  r.throttle_ms = throttle;
  return r;
}

}  // namespace ciuickafka::broker
