// protocol/wire/reader.cc: see reader.h.
#include "protocol/wire/reader.h"

#include <bit>
#include <cstring>

namespace ciuickafka::protocol {

bool Reader::need(size_t n) {
  if (!ok()) return false;
  if (remaining() < n) {
    fail(WireError::kTruncated);
    return false;
  }
  return true;
}

namespace {
uint64_t load_be(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}
}  // namespace

int8_t Reader::read_int8() {
  if (!need(1)) return 0;
  return static_cast<int8_t>(buf_[pos_++]);
}

int16_t Reader::read_int16() {
  if (!need(2)) return 0;
  auto v = static_cast<int16_t>(load_be(buf_.data() + pos_, 2));
  pos_ += 2;
  return v;
}

int32_t Reader::read_int32() {
  if (!need(4)) return 0;
  auto v = static_cast<int32_t>(load_be(buf_.data() + pos_, 4));
  pos_ += 4;
  return v;
}

int64_t Reader::read_int64() {
  if (!need(8)) return 0;
  auto v = static_cast<int64_t>(load_be(buf_.data() + pos_, 8));
  pos_ += 8;
  return v;
}

uint16_t Reader::read_uint16() { return static_cast<uint16_t>(read_int16()); }
uint32_t Reader::read_uint32() { return static_cast<uint32_t>(read_int32()); }

double Reader::read_float64() { return std::bit_cast<double>(static_cast<uint64_t>(read_int64())); }

bool Reader::read_bool() { return read_int8() != 0; }

Uuid Reader::read_uuid() {
  Uuid u;
  if (!need(16)) return u;
  std::memcpy(u.bytes.data(), buf_.data() + pos_, 16);
  pos_ += 16;
  return u;
}

// Unsigned LEB128 of at most `bits` bits: ceil(bits / 7) bytes, and the last
// byte may carry only the bits that remain. Anything longer or wider is
// kBadVarint, so a value never silently wraps.
uint64_t Reader::read_unsigned_varint(int bits) {
  const int max_bytes = (bits + 6) / 7;
  const uint8_t last_byte_limit = static_cast<uint8_t>(1u << (bits - 7 * (max_bytes - 1)));
  uint64_t value = 0;
  for (int i = 0; i < max_bytes; ++i) {
    if (!need(1)) return 0;
    uint8_t b = buf_[pos_++];
    if (i == max_bytes - 1 && b >= last_byte_limit) {
      fail(WireError::kBadVarint);
      return 0;
    }
    value |= static_cast<uint64_t>(b & 0x7F) << (7 * i);
    if ((b & 0x80) == 0) return value;
  }
  fail(WireError::kBadVarint);
  return 0;
}

uint32_t Reader::read_uvarint() { return static_cast<uint32_t>(read_unsigned_varint(32)); }

int32_t Reader::read_varint() {
  uint32_t raw = read_uvarint();
  return static_cast<int32_t>((raw >> 1) ^ (~(raw & 1) + 1));
}

int64_t Reader::read_varlong() {
  uint64_t raw = read_unsigned_varint(64);
  return static_cast<int64_t>((raw >> 1) ^ (~(raw & 1) + 1));
}

std::span<const uint8_t> Reader::read_raw(size_t n) {
  if (!need(n)) return {};
  auto s = buf_.subspan(pos_, n);
  pos_ += n;
  return s;
}

// len is the decoded length (-1 = null). Returns nullopt for null, or on
// error (then ok() is false).
std::optional<std::span<const uint8_t>> Reader::take_sized(int64_t len, bool nullable) {
  if (!ok()) return std::span<const uint8_t>{};
  if (len == -1) {
    if (!nullable) {
      fail(WireError::kUnexpectedNull);
      return std::span<const uint8_t>{};
    }
    return std::nullopt;
  }
  if (len < -1) {
    fail(WireError::kNegativeLength);
    return std::span<const uint8_t>{};
  }
  if (static_cast<uint64_t>(len) > remaining()) {
    fail(WireError::kTruncated);
    return std::span<const uint8_t>{};
  }
  return read_raw(static_cast<size_t>(len));
}

namespace {
std::string to_std_string(std::span<const uint8_t> s) {
  return std::string(reinterpret_cast<const char*>(s.data()), s.size());
}
}  // namespace

std::string Reader::read_string() {
  auto s = take_sized(read_int16(), false);
  return s ? to_std_string(*s) : std::string();
}

std::optional<std::string> Reader::read_nullable_string() {
  auto s = take_sized(read_int16(), true);
  if (!s) return std::nullopt;
  return to_std_string(*s);
}

std::string Reader::read_compact_string() {
  auto s = take_sized(static_cast<int64_t>(read_uvarint()) - 1, false);
  return s ? to_std_string(*s) : std::string();
}

std::optional<std::string> Reader::read_compact_nullable_string() {
  auto s = take_sized(static_cast<int64_t>(read_uvarint()) - 1, true);
  if (!s) return std::nullopt;
  return to_std_string(*s);
}

std::span<const uint8_t> Reader::read_bytes_view() {
  auto s = take_sized(read_int32(), false);
  return s ? *s : std::span<const uint8_t>{};
}

std::optional<std::span<const uint8_t>> Reader::read_nullable_bytes_view() {
  return take_sized(read_int32(), true);
}

std::span<const uint8_t> Reader::read_compact_bytes_view() {
  auto s = take_sized(static_cast<int64_t>(read_uvarint()) - 1, false);
  return s ? *s : std::span<const uint8_t>{};
}

std::optional<std::span<const uint8_t>> Reader::read_compact_nullable_bytes_view() {
  return take_sized(static_cast<int64_t>(read_uvarint()) - 1, true);
}

int32_t Reader::read_array_length(size_t min_element_size) {
  int32_t n = read_int32();
  if (!ok()) return 0;
  if (n < -1) {
    fail(WireError::kNegativeLength);
    return 0;
  }
  if (n > 0 && static_cast<uint64_t>(n) * min_element_size > remaining()) {
    fail(WireError::kLengthTooLarge);
    return 0;
  }
  return n;
}

int32_t Reader::read_compact_array_length(size_t min_element_size) {
  uint32_t raw = read_uvarint();
  if (!ok()) return 0;
  int64_t n = static_cast<int64_t>(raw) - 1;
  if (n > 0 && static_cast<uint64_t>(n) * min_element_size > remaining()) {
    fail(WireError::kLengthTooLarge);
    return 0;
  }
  return static_cast<int32_t>(n);
}

}  // namespace ciuickafka::protocol
