// broker/handlers/api_versions.cc: ApiVersions (key 18), versions 0-4.
//
// The answer is the handler registry itself, so the broker advertises
// exactly what it implements. A version we lack is answered at v0 with
// UNSUPPORTED_VERSION and ApiVersions' own range alone (KIP-511, as Kafka
// answers), which is how librdkafka and the Java client learn the version
// to retry with. v3+ requests carry the client's software name and version,
// which Kafka validates; a malformed one gets INVALID_REQUEST and no list
// (as Kafka's).
#include <algorithm>
#include <cctype>

#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/api_versions.h"

namespace ciuickafka::broker {
namespace {

using protocol::ApiVersionsRequest;
using protocol::ApiVersionsResponse;
using protocol::ErrorCode;

bool valid_software_field(const std::string& s) {
  // Kafka: [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
  if (s.empty()) return false;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-' || c == '.'; });
}

ApiVersionsResponse our_versions() {
  ApiVersionsResponse resp;
  for (const HandlerEntry& h : registered_handlers()) {
    ApiVersionsResponse::ApiVersion v;
    v.api_key = h.api_key;
    v.min_version = h.min_version;
    v.max_version = h.max_version;
    resp.api_keys.push_back(v);
  }
  return resp;
}

void handle_api_versions(RequestContext&& ctx) {
  ApiVersionsResponse resp = our_versions();
  if (ctx.api_version() > ApiVersionsRequest::kHighestVersion || ctx.api_version() < 0) {
    std::erase_if(resp.api_keys, [](const ApiVersionsResponse::ApiVersion& v) { return v.api_key != ApiVersionsRequest::kApiKey; });
    resp.error_code = protocol::to_wire(ErrorCode::UNSUPPORTED_VERSION);
    ctx.header.request_api_version = 0;  // answer in a version the client can read
    ctx.respond(make_response(ctx, resp, resp.error_code));
    return;
  }
  ApiVersionsRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  if (ctx.api_version() >= 3 &&
      (!valid_software_field(req.client_software_name) || !valid_software_field(req.client_software_version))) {
    resp.error_code = protocol::to_wire(ErrorCode::INVALID_REQUEST);
    resp.api_keys.clear();
  }
  ctx.respond(make_response(ctx, resp, resp.error_code));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::ApiVersionsRequest, 0, 4, handle_api_versions);

}  // namespace ciuickafka::broker
