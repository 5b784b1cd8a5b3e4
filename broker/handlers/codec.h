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
// Thread-safety: pure functions of their arguments.
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

template <class ResponseBody>
Response make_response(const RequestContext& ctx, const ResponseBody& body, int16_t error_code = 0) {
  const int16_t version = ctx.api_version();
  protocol::Writer w(64 + body.compute_size(version));
  w.write_int32(0);  // size, patched by finish_response
  protocol::ResponseHeader header;
  header.correlation_id = ctx.correlation_id();
  header.encode(w, protocol::response_header_version(ctx.api_key(), version));
  body.encode(w, version);
  return finish_response(std::move(w), error_code, ctx.api_key(), version);
}

}  // namespace ciuickafka::broker
