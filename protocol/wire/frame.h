// protocol/wire/frame.h: Kafka's request/response framing.
//
// On the wire every request and response is a 4-byte big-endian size
// followed by that many bytes (header + body). FrameDecoder is incremental:
// it is fed whatever bytes the socket produced and says when a whole frame is
// there. A size above the configured limit (socket.request.max.bytes) is
// reported as soon as the 4 size bytes arrive, before anything of that size
// is allocated; a negative size is an error too.
//
// Thread-safety: one connection, one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "protocol/wire/types.h"

namespace ciuickafka::protocol {

// Reads the size prefix of a frame from the first 4 bytes of `prefix`.
// Returns the body size, or sets `err` (kTruncated if fewer than 4 bytes,
// kNegativeLength, kFrameTooLarge when the size exceeds max_frame_bytes).
std::optional<int32_t> parse_frame_size(std::span<const uint8_t> prefix, int32_t max_frame_bytes,
                                        WireError& err);

class FrameDecoder {
 public:
  explicit FrameDecoder(int32_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

  // Consumes bytes from `in` up to the end of the current frame; returns how
  // many were consumed. After a frame completes, frame_ready() is true until
  // take_frame() is called. On a bad size prefix error() is set and nothing
  // more is consumed.
  size_t feed(std::span<const uint8_t> in);

  bool frame_ready() const { return ready_; }
  std::vector<uint8_t> take_frame();
  WireError error() const { return error_; }
  // Bytes the decoder still needs for the current frame (for read sizing).
  size_t wanted() const;

 private:
  int32_t max_frame_bytes_;
  uint8_t size_buf_[4]{};
  size_t size_have_ = 0;
  std::vector<uint8_t> body_;
  size_t body_want_ = 0;
  bool have_size_ = false;
  bool ready_ = false;
  WireError error_ = WireError::kNone;
};

}  // namespace ciuickafka::protocol
