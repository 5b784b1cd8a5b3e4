// tests/fuzz/fuzz_request.cc: libFuzzer target for the path every client
// byte takes: frame decoder -> request header -> typed request body.
//
// Properties checked on every input, beyond "no crash, no sanitizer report":
// - the frame decoder never accepts a frame over its limit;
// - a body that decodes re-encodes, and decoding that encoding and encoding
//   again gives the same bytes (encode(decode(e)) is a fixed point), so the
//   codec cannot silently change what a client sent.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <type_traits>
#include <vector>

#include "protocol/generated/api_keys.h"
#include "protocol/generated/messages.h"
#include "protocol/request.h"
#include "protocol/wire/frame.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"

using namespace ciuickafka::protocol;

namespace {

constexpr int32_t kMaxFrame = 1 << 20;

[[noreturn]] void property_failed(const char* what, int16_t key, int16_t version) {
  std::fprintf(stderr, "fuzz property failed: %s (api %d v%d)\n", what, key, version);
  std::abort();
}

void check_body(const ParsedRequestHeader& h, std::span<const uint8_t> body) {
  int16_t key = h.header.request_api_key;
  int16_t version = h.header.request_api_version;
  visit_request_type(key, [&](auto type) {
    using T = typename decltype(type)::type;
    T msg;
    Reader r(body);
    msg.decode(r, version);
    if (!r.ok()) return;
    Writer w1;
    msg.encode(w1, version);
    if (!w1.ok()) return;  // e.g. a decoded value this version cannot carry back
    if (w1.size() != msg.compute_size(version)) property_failed("compute_size != encoded size", key, version);
    T again;
    // The same allocation budget as the first decode (the re-encoding may be
    // shorter than a body with bytes the decoder skipped).
    Reader r2(w1.buffer(), Reader::kBudgetBase + Reader::kBudgetPerInputByte * body.size());
    again.decode(r2, version);
    if (!r2.ok() || !r2.at_end()) property_failed("re-encoded body does not decode", key, version);
    Writer w2;
    again.encode(w2, version);
    if (w2.buffer() != w1.buffer()) property_failed("encoding is not a fixed point", key, version);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  FrameDecoder frames(kMaxFrame);
  while (!in.empty()) {
    size_t used = frames.feed(in);
    in = in.subspan(used);
    if (frames.error() != WireError::kNone) break;
    if (!frames.frame_ready()) {
      if (used == 0) break;
      continue;
    }
    std::vector<uint8_t> frame = frames.take_frame();
    if (frame.size() > static_cast<size_t>(kMaxFrame)) std::abort();
    ParsedRequestHeader h;
    if (parse_request_header(frame, h) != WireError::kNone) continue;
    if (!h.supported_version) continue;
    check_body(h, std::span<const uint8_t>(frame).subspan(h.body_offset));
  }
  return 0;
}
