// protocol/request.h: splitting a request frame into its header and body.
//
// A request frame (the bytes after the 4-byte size) starts with
// api_key:int16, api_version:int16; which RequestHeader version follows
// depends on the API and version (flexible versions use header v2, see
// api_keys.h). parse_request_header decodes the header and says where the
// body starts, so the broker and the fuzzer share one path from bytes to a
// typed request.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "protocol/generated/headers.h"
#include "protocol/wire/types.h"

namespace ciuickafka::protocol {

struct ParsedRequestHeader {
  RequestHeader header;
  int16_t header_version = 1;
  size_t body_offset = 0;  // where the request body starts in the frame
  bool known_api = false;  // api key exists (0-87)
  bool supported_version = false;  // api version within the schema's range
};

// Decodes the header of `frame`. For an unknown API key or an out-of-range
// version the header is still decoded as v1 (api key, version, correlation
// id, client id are the same in every version) so the caller can answer or
// log; known_api / supported_version tell which case it is. Returns kNone or
// the wire error that made the header undecodable.
WireError parse_request_header(std::span<const uint8_t> frame, ParsedRequestHeader& out);

}  // namespace ciuickafka::protocol
