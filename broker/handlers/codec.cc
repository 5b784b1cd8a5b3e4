// broker/handlers/codec.cc: turning an encoded response into a Response.
#include "broker/handlers/codec.h"
#include "metrics/log/log.h"

#include <cstdio>
#include <cstdlib>
#include <limits>

namespace ciuickafka::broker {

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
