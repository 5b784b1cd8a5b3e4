// protocol/client/client_codec.h: the client side of the Kafka protocol,
// without I/O: a typed request into a framed byte string, a response frame
// into its typed response, and ApiVersions negotiation.
//
// Guarantees: encode_request_frame produces exactly what a Kafka client
// sends (4-byte size, the request header version api_keys.h prescribes for
// the API and version, then the body); decode_response_frame never reads
// outside the frame and reports a mismatched correlation id, trailing bytes
// or any wire error instead of throwing. VersionTable::pick returns the
// highest version both the broker and our generated codecs support.
//
// Thread-safety: pure functions; VersionTable is a value, safe to share
// read-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/generated/api_keys.h"
#include "protocol/generated/api_versions.h"
#include "protocol/generated/headers.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/types.h"
#include "protocol/wire/writer.h"

namespace ciuickafka::protocol::client {

enum class DecodeStatus : uint8_t {
  kOk = 0,
  kWireError,            // `wire` says which
  kCorrelationMismatch,  // the response answers another request
  kTrailingBytes,        // the body decoded but bytes were left over
};

struct DecodeResult {
  DecodeStatus status = DecodeStatus::kOk;
  WireError wire = WireError::kNone;
  int32_t correlation_id = 0;  // as read from the response header
  bool ok() const { return status == DecodeStatus::kOk; }
};

// One line for a failed decode ("wire error kTruncated", ...).
std::string describe(const DecodeResult& r);

// The frame (size prefix included) of `req` at `version`. Empty with
// *error set when the request cannot be encoded at that version (a field
// the version lacks, an unsupported version).
template <class Req>
std::vector<uint8_t> encode_request_frame(const Req& req, int16_t version, int32_t correlation_id,
                                          std::string_view client_id, WireError* error) {
  const int16_t hv = request_header_version(Req::kApiKey, version);
  if (hv < 0 || version < Req::kLowestVersion || version > Req::kHighestVersion) {
    if (error) *error = WireError::kUnsupportedVersion;
    return {};
  }
  RequestHeader h;
  h.request_api_key = Req::kApiKey;
  h.request_api_version = version;
  h.correlation_id = correlation_id;
  h.client_id = std::string(client_id);
  Writer w(64);
  w.write_int32(0);  // size, patched below
  h.encode(w, hv);
  req.encode(w, version);
  if (!w.ok()) {
    if (error) *error = w.error();
    return {};
  }
  w.patch_int32(0, static_cast<int32_t>(w.size() - 4));
  if (error) *error = WireError::kNone;
  return w.release();
}

// Decodes a response frame (the bytes after the 4-byte size) answering
// `api_key` at `version`, into *out.
template <class Resp>
DecodeResult decode_response_frame(std::span<const uint8_t> frame, int16_t version,
                                   int32_t expected_correlation_id, Resp* out) {
  DecodeResult res;
  const int16_t hv = response_header_version(Resp::kApiKey, version);
  if (hv < 0) {
    res.status = DecodeStatus::kWireError;
    res.wire = WireError::kUnsupportedVersion;
    return res;
  }
  Reader r(frame);
  ResponseHeader h;
  h.decode(r, hv);
  res.correlation_id = h.correlation_id;
  if (r.ok() && h.correlation_id != expected_correlation_id) {
    res.status = DecodeStatus::kCorrelationMismatch;
    return res;
  }
  out->decode(r, version);
  if (!r.ok()) {
    res.status = DecodeStatus::kWireError;
    res.wire = r.error();
  } else if (!r.at_end()) {
    res.status = DecodeStatus::kTrailingBytes;
  }
  return res;
}

// What a broker said it supports (ApiVersions), and the choice of version.
class VersionTable {
 public:
  VersionTable() = default;
  static VersionTable from_response(const ApiVersionsResponse& resp);

  // The highest version in [our_min, our_max] ∩ the broker's range for the
  // key; nullopt when the broker lacks the API or the ranges do not meet.
  std::optional<int16_t> pick(int16_t api_key, int16_t our_min, int16_t our_max) const;
  template <class Req>
  std::optional<int16_t> pick() const {
    return pick(Req::kApiKey, Req::kLowestVersion, Req::kHighestVersion);
  }
  // The same, capped at `cap` (for an API whose later versions we do not fill).
  template <class Req>
  std::optional<int16_t> pick_at_most(int16_t cap) const {
    return pick(Req::kApiKey, Req::kLowestVersion, std::min<int16_t>(cap, Req::kHighestVersion));
  }
  bool empty() const { return ranges_.empty(); }
  const std::map<int16_t, std::pair<int16_t, int16_t>>& ranges() const { return ranges_; }

 private:
  std::map<int16_t, std::pair<int16_t, int16_t>> ranges_;  // key -> [min, max]
};

}  // namespace ciuickafka::protocol::client
