// protocol/request.cc: see request.h.
#include "protocol/request.h"

#include "protocol/generated/api_keys.h"
#include "protocol/wire/reader.h"

namespace ciuickafka::protocol {

WireError parse_request_header(std::span<const uint8_t> frame, ParsedRequestHeader& out) {
  out = ParsedRequestHeader{};
  Reader peek(frame);
  int16_t api_key = peek.read_int16();
  int16_t api_version = peek.read_int16();
  if (!peek.ok()) return peek.error();

  const ApiInfo* api = find_api(api_key);
  out.known_api = api != nullptr;
  out.supported_version =
      api != nullptr && api_version >= api->min_version && api_version <= api->max_version;
  out.header_version = out.supported_version ? request_header_version(api_key, api_version) : 1;

  Reader r(frame);
  out.header.decode(r, out.header_version);
  if (!r.ok()) return r.error();
  out.body_offset = r.position();
  return WireError::kNone;
}

}  // namespace ciuickafka::protocol
