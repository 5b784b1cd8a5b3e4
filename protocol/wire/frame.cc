// protocol/wire/frame.cc: see frame.h.
#include "protocol/wire/frame.h"

#include <algorithm>

namespace ciuickafka::protocol {

std::optional<int32_t> parse_frame_size(std::span<const uint8_t> prefix, int32_t max_frame_bytes,
                                        WireError& err) {
  if (prefix.size() < 4) {
    err = WireError::kTruncated;
    return std::nullopt;
  }
  auto size = static_cast<int32_t>((uint32_t{prefix[0]} << 24) | (uint32_t{prefix[1]} << 16) |
                                   (uint32_t{prefix[2]} << 8) | uint32_t{prefix[3]});
  if (size < 0) {
    err = WireError::kNegativeLength;
    return std::nullopt;
  }
  if (size > max_frame_bytes) {
    err = WireError::kFrameTooLarge;
    return std::nullopt;
  }
  err = WireError::kNone;
  return size;
}

size_t FrameDecoder::feed(std::span<const uint8_t> in) {
  size_t used = 0;
  if (ready_ || error_ != WireError::kNone) return 0;
  if (!have_size_) {
    size_t n = std::min(in.size(), 4 - size_have_);
    std::copy_n(in.begin(), n, size_buf_ + size_have_);
    size_have_ += n;
    used += n;
    if (size_have_ < 4) return used;
    WireError err;
    auto size = parse_frame_size(std::span<const uint8_t>(size_buf_, 4), max_frame_bytes_, err);
    if (!size) {
      error_ = err;
      return used;
    }
    have_size_ = true;
    body_want_ = static_cast<size_t>(*size);
    body_.clear();
    // Grow with the data that actually arrives: a client that announces a
    // large frame and sends nothing holds no more than this.
    body_.reserve(std::min<size_t>(body_want_, 64 * 1024));
  }
  size_t n = std::min(in.size() - used, body_want_ - body_.size());
  body_.insert(body_.end(), in.begin() + static_cast<std::ptrdiff_t>(used),
               in.begin() + static_cast<std::ptrdiff_t>(used + n));
  used += n;
  if (body_.size() == body_want_) ready_ = true;
  return used;
}

std::vector<uint8_t> FrameDecoder::take_frame() {
  std::vector<uint8_t> out = std::move(body_);
  body_ = {};
  ready_ = false;
  have_size_ = false;
  size_have_ = 0;
  body_want_ = 0;
  return out;
}

size_t FrameDecoder::wanted() const {
  if (!have_size_) return 4 - size_have_;
  return body_want_ - body_.size();
}

}  // namespace ciuickafka::protocol
