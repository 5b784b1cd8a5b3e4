// protocol/client/client_codec.cc: VersionTable and error descriptions for
// the client codec (see client_codec.h). Pure; thread-safe.
#include "protocol/client/client_codec.h"

#include <algorithm>

namespace ciuickafka::protocol::client {

std::string describe(const DecodeResult& r) {
  switch (r.status) {
    case DecodeStatus::kOk: return "ok";
    case DecodeStatus::kWireError: return "malformed response: " + std::string(to_string(r.wire));
    case DecodeStatus::kCorrelationMismatch:
      return "response with unexpected correlation id " + std::to_string(r.correlation_id);
    case DecodeStatus::kTrailingBytes: return "malformed response: trailing bytes";
  }
  return "unknown decode status";
}

VersionTable VersionTable::from_response(const ApiVersionsResponse& resp) {
  VersionTable t;
  for (const auto& k : resp.api_keys) t.ranges_[k.api_key] = {k.min_version, k.max_version};
  return t;
}

std::optional<int16_t> VersionTable::pick(int16_t api_key, int16_t our_min, int16_t our_max) const {
  auto it = ranges_.find(api_key);
  if (it == ranges_.end()) return std::nullopt;
  const int16_t lo = std::max(our_min, it->second.first);
  const int16_t hi = std::min(our_max, it->second.second);
  if (lo > hi) return std::nullopt;
  return hi;
}

}  // namespace ciuickafka::protocol::client
