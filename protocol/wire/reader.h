// protocol/wire/reader.h: bounds-checked decoder over a byte span.
//
// Every Kafka primitive (big-endian ints, zigzag varints, unsigned varints,
// UUIDs, the four string/bytes encodings) is read through Reader. A read that
// would pass the end of the span, or that meets a malformed length, sets a
// sticky error and returns a zero value; every later read also returns zero
// values. Callers decode a whole message and check ok() once at the end, the
// way LevelDB readers report corruption instead of aborting. No read can touch
// memory outside the span, whatever the input.
//
// Allocation budget: a count is capped by the bytes left (each element takes
// at least its minimum wire size), but an element can be far bigger decoded
// than encoded (an empty topic is 3 bytes on the wire and ~80 in memory), so
// a 100 MiB frame of tiny elements could make a decoder allocate gigabytes.
// The generated decoders charge every array's elements (count x the decoded
// element's size) to the Reader before reserving them; past the budget
// (kBudgetPerInputByte x the input + kBudgetBase) the read fails with
// kAllocationBudget, as malformed. A tagged field's sub-reader continues its
// parent's budget (codec::TaggedReader).
//
// Thread-safety: a Reader is a cursor; one thread uses it at a time.
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

class Reader {
 public:
  // What decoding may allocate for arrays: 4 bytes per input byte (the
  // most a real client's request needs is about 2: a Metadata request naming
  // topics of 10 characters) plus 16 MiB for small inputs.
  static constexpr uint64_t kBudgetPerInputByte = 4;
  static constexpr uint64_t kBudgetBase = uint64_t{16} << 20;

  Reader() = default;
  explicit Reader(std::span<const uint8_t> buf)
      : buf_(buf), budget_(kBudgetBase + kBudgetPerInputByte * buf.size()) {}
  Reader(std::span<const uint8_t> buf, uint64_t budget) : buf_(buf), budget_(budget) {}

  bool ok() const { return error_ == WireError::kNone; }
  WireError error() const { return error_; }
  // Marks the input bad (first error wins). Decoders call it for semantic
  // violations too: a null where the version forbids one, say.
  void fail(WireError e) {
    if (error_ == WireError::kNone) error_ = e;
    pos_ = buf_.size();
  }

  // Takes bytes from the allocation budget; false (and kAllocationBudget)
  // when they exceed what is left.
  bool charge(uint64_t bytes) {
    if (bytes > budget_) {
      fail(WireError::kAllocationBudget);
      return false;
    }
    budget_ -= bytes;
    return true;
  }
  uint64_t budget() const { return budget_; }
  void set_budget(uint64_t b) { budget_ = b; }

  size_t position() const { return pos_; }
  size_t remaining() const { return buf_.size() - pos_; }
  bool at_end() const { return pos_ == buf_.size(); }
  std::span<const uint8_t> whole() const { return buf_; }

  int8_t read_int8();
  int16_t read_int16();
  int32_t read_int32();
  int64_t read_int64();
  uint16_t read_uint16();
  uint32_t read_uint32();
  double read_float64();
  bool read_bool();  // any non-zero byte is true, as Kafka reads it
  Uuid read_uuid();

  int32_t read_varint();    // zigzag, up to 5 bytes
  int64_t read_varlong();   // zigzag, up to 10 bytes
  uint32_t read_uvarint();  // unsigned, up to 5 bytes

  // Returns the next n bytes as a view into the input (no copy), or an empty
  // span and the error kTruncated when fewer remain.
  std::span<const uint8_t> read_raw(size_t n);
  void skip(size_t n) { (void)read_raw(n); }

  // Strings: classic (int16 length) and compact (uvarint length + 1). A
  // non-nullable read that meets null fails with kUnexpectedNull.
  std::string read_string();
  std::optional<std::string> read_nullable_string();
  std::string read_compact_string();
  std::optional<std::string> read_compact_nullable_string();

  // Bytes: classic (int32 length) and compact (uvarint length + 1). The views
  // point into the input buffer.
  std::span<const uint8_t> read_bytes_view();
  std::optional<std::span<const uint8_t>> read_nullable_bytes_view();
  std::span<const uint8_t> read_compact_bytes_view();
  std::optional<std::span<const uint8_t>> read_compact_nullable_bytes_view();

  // Array lengths. Classic: int32, -1 is null. Compact: uvarint N+1, 0 is null.
  // Returns -1 for null. A length that cannot fit in the remaining bytes
  // (each element takes at least min_element_size bytes) fails before the
  // caller allocates, so a forged count cannot trigger a huge reservation.
  int32_t read_array_length(size_t min_element_size = 1);
  int32_t read_compact_array_length(size_t min_element_size = 1);

 private:
  bool need(size_t n);
  uint64_t read_unsigned_varint(int bits);
  std::optional<std::span<const uint8_t>> take_sized(int64_t len, bool nullable);

  std::span<const uint8_t> buf_;
  size_t pos_ = 0;
  WireError error_ = WireError::kNone;
  uint64_t budget_ = kBudgetBase;
};

}  // namespace ciuickafka::protocol
