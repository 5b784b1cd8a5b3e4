// protocol/compression/bounded_output.h: a growing output buffer with a hard
// cap, shared by the streaming decompressors (internal header).
//
// Streaming decoders write into free space handed out by next_space(); the
// buffer doubles from a small start, never past the cap. When the cap is
// reached and the decoder still has output, the caller reports kTooLarge, so
// a decompression bomb costs at most `cap` bytes of memory.
//
// Thread-safety: one thread at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "protocol/wire/types.h"

namespace ciuickafka::protocol::detail {

class BoundedOutput {
 public:
  BoundedOutput(size_t cap, size_t size_hint) : cap_(cap) {
    buf_.resize(std::min(cap_, std::max<size_t>(size_hint, 4096)));
  }

  // Free space to decode into; empty when the cap is reached.
  std::span<uint8_t> next_space() {
    if (used_ == buf_.size() && buf_.size() < cap_) {
      size_t grown = buf_.size() > cap_ / 2 ? cap_ : std::max<size_t>(buf_.size() * 2, 4096);
      buf_.resize(std::min(grown, cap_));
    }
    return std::span<uint8_t>(buf_).subspan(used_);
  }
  void commit(size_t n) { used_ += n; }
  bool full() const { return used_ == cap_; }
  size_t size() const { return used_; }

  Bytes take() {
    buf_.resize(used_);
    return std::move(buf_);
  }

 private:
  size_t cap_;
  size_t used_ = 0;
  Bytes buf_;
};

}  // namespace ciuickafka::protocol::detail
