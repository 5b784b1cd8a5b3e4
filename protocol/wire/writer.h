// protocol/wire/writer.h: encoder appending Kafka primitives to a growable
// buffer.
//
// The mirror of Reader. Encoding itself cannot run out of input, but it can
// be asked for something the wire cannot carry (a string over 32767 bytes in
// a classic string, a field the chosen version lacks): that sets a sticky
// error, and the caller checks ok() once at the end.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/wire/types.h"

namespace ciuickafka::protocol {

class Writer {
 public:
  Writer() = default;
  explicit Writer(size_t reserve) { buf_.reserve(reserve); }

  bool ok() const { return error_ == WireError::kNone; }
  WireError error() const { return error_; }
  void fail(WireError e) {
    if (error_ == WireError::kNone) error_ = e;
  }

  const std::vector<uint8_t>& buffer() const { return buf_; }
  std::vector<uint8_t>& buffer() { return buf_; }
  std::vector<uint8_t> release() { return std::move(buf_); }
  size_t size() const { return buf_.size(); }

  void write_int8(int8_t v) { buf_.push_back(static_cast<uint8_t>(v)); }
  void write_int16(int16_t v) { write_be(static_cast<uint16_t>(v), 2); }
  void write_int32(int32_t v) { write_be(static_cast<uint32_t>(v), 4); }
  void write_int64(int64_t v) { write_be(static_cast<uint64_t>(v), 8); }
  void write_uint16(uint16_t v) { write_be(v, 2); }
  void write_uint32(uint32_t v) { write_be(v, 4); }
  void write_float64(double v);
  void write_bool(bool v) { buf_.push_back(v ? 1 : 0); }
  void write_uuid(const Uuid& u) { write_raw(u.bytes); }

  void write_varint(int32_t v);
  void write_varlong(int64_t v);
  void write_uvarint(uint32_t v);
  void write_uvarlong(uint64_t v);

  void write_raw(std::span<const uint8_t> b) { buf_.insert(buf_.end(), b.begin(), b.end()); }

  void write_string(std::string_view s);
  void write_nullable_string(const std::optional<std::string>& s);
  void write_compact_string(std::string_view s);
  void write_compact_nullable_string(const std::optional<std::string>& s);

  void write_bytes(std::span<const uint8_t> b);
  void write_nullable_bytes(const std::optional<std::span<const uint8_t>>& b);
  void write_compact_bytes(std::span<const uint8_t> b);
  void write_compact_nullable_bytes(const std::optional<std::span<const uint8_t>>& b);

  // n < 0 writes null.
  void write_array_length(int32_t n) { write_int32(n); }
  void write_compact_array_length(int32_t n) { write_uvarint(static_cast<uint32_t>(n + 1)); }

  // Overwrites 4 bytes at pos (a size prefix reserved earlier).
  void patch_int32(size_t pos, int32_t v);

  // A gap of `length` bytes at buffer position `at` that the sender fills
  // from the source named by `token` (external Records, see types.h). The
  // buffer itself holds none of those bytes.
  struct Splice {
    size_t at = 0;
    const void* token = nullptr;
    uint64_t length = 0;
  };
  void splice(const void* token, uint64_t length) { splices_.push_back({buf_.size(), token, length}); }
  const std::vector<Splice>& splices() const { return splices_; }
  // Encoded size including the spliced bytes.
  uint64_t total_size() const {
    uint64_t n = buf_.size();
    for (const Splice& s : splices_) n += s.length;
    return n;
  }

  // Sizes of the variable-width encodings, for compute_size functions.
  static size_t varint_size(int32_t v);
  static size_t varlong_size(int64_t v);
  static size_t uvarint_size(uint32_t v);
  static size_t uvarlong_size(uint64_t v);

 private:
  void write_be(uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) buf_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }

  std::vector<uint8_t> buf_;
  std::vector<Splice> splices_;
  WireError error_ = WireError::kNone;
};

}  // namespace ciuickafka::protocol
