// broker/server/frame_bytes.h: the bytes of one request frame.
//
// A byte buffer that is never zero-filled: a frame's bytes are written by
// the socket, so filling them first would be a wasted pass over every
// request byte (a large Produce's records), and growing it copies only the
// bytes it holds, once (memcpy). Like std::vector<uint8_t> otherwise, for
// what frames need: data/size, a contiguous range for std::span, reserve and
// resize (resize leaves new bytes as they are).
//
// Thread-safety: none (one owner at a time, as a vector).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>

namespace ciuickafka::broker {

class FrameBytes {
 public:
  FrameBytes() = default;
  // A copy of [first, last) (tests, tools: frames built in memory).
  template <typename It>
  FrameBytes(It first, It last) {
    const size_t n = static_cast<size_t>(std::distance(first, last));
    reserve(n);
    std::copy(first, last, data_.get());
    size_ = n;
  }
  FrameBytes(size_t n, uint8_t fill) {
    reserve(n);
    if (n > 0) std::memset(data_.get(), fill, n);
    size_ = n;
  }
  FrameBytes(FrameBytes&&) noexcept = default;
  FrameBytes& operator=(FrameBytes&&) noexcept = default;
  FrameBytes(const FrameBytes&) = delete;  // a frame is moved or shared, never copied
  FrameBytes& operator=(const FrameBytes&) = delete;

  uint8_t* data() noexcept { return data_.get(); }
  const uint8_t* data() const noexcept { return data_.get(); }
  size_t size() const noexcept { return size_; }
  size_t capacity() const noexcept { return capacity_; }
  bool empty() const noexcept { return size_ == 0; }
  uint8_t* begin() noexcept { return data_.get(); }
  uint8_t* end() noexcept { return data_.get() + size_; }
  const uint8_t* begin() const noexcept { return data_.get(); }
  const uint8_t* end() const noexcept { return data_.get() + size_; }
  uint8_t& operator[](size_t i) noexcept { return data_[i]; }
  const uint8_t& operator[](size_t i) const noexcept { return data_[i]; }

  // Room for n bytes: a new block (uninitialised) when n is more than the
  // capacity, the bytes held copied into it.
  void reserve(size_t n) {
    if (n <= capacity_) return;
    auto fresh = std::make_unique_for_overwrite<uint8_t[]>(n);
    if (size_ > 0) std::memcpy(fresh.get(), data_.get(), size_);
    data_ = std::move(fresh);
    capacity_ = n;
  }
  // Sets the size; bytes past the old size are uninitialised until written.
  void resize(size_t n) {
    reserve(n);
    size_ = n;
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace ciuickafka::broker
