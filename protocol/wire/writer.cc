// protocol/wire/writer.cc: see writer.h.
#include "protocol/wire/writer.h"

#include <bit>
#include <limits>

namespace ciuickafka::protocol {

std::string_view to_string(WireError e) {
  switch (e) {
    case WireError::kNone: return "no error";
    case WireError::kTruncated: return "input truncated";
    case WireError::kBadVarint: return "malformed varint";
    case WireError::kNegativeLength: return "negative length";
    case WireError::kUnexpectedNull: return "null where not allowed";
    case WireError::kLengthTooLarge: return "length larger than the input";
    case WireError::kBadTaggedFields: return "malformed tagged fields";
    case WireError::kUnsupportedVersion: return "unsupported version";
    case WireError::kFieldNotInVersion: return "field set that this version lacks";
    case WireError::kValueTooLarge: return "value too large for its encoding";
    case WireError::kFrameTooLarge: return "frame larger than the limit";
    case WireError::kTrailingBytes: return "trailing bytes after the message";
    case WireError::kAllocationBudget: return "decoding would allocate more than the allocation budget";
  }
  return "unknown wire error";
}

void Writer::write_float64(double v) { write_be(std::bit_cast<uint64_t>(v), 8); }

void Writer::write_uvarint(uint32_t v) {
  while (v >= 0x80) {
    buf_.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  buf_.push_back(static_cast<uint8_t>(v));
}

void Writer::write_uvarlong(uint64_t v) {
  while (v >= 0x80) {
    buf_.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  buf_.push_back(static_cast<uint8_t>(v));
}

void Writer::write_varint(int32_t v) {
  write_uvarint((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
}

void Writer::write_varlong(int64_t v) {
  write_uvarlong((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

size_t Writer::uvarint_size(uint32_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

size_t Writer::uvarlong_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

size_t Writer::varint_size(int32_t v) {
  return uvarint_size((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
}

size_t Writer::varlong_size(int64_t v) {
  return uvarlong_size((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

namespace {
std::span<const uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
}  // namespace

void Writer::write_string(std::string_view s) {
  if (s.size() > static_cast<size_t>(std::numeric_limits<int16_t>::max())) {
    fail(WireError::kValueTooLarge);
    return;
  }
  write_int16(static_cast<int16_t>(s.size()));
  write_raw(as_bytes(s));
}

void Writer::write_nullable_string(const std::optional<std::string>& s) {
  if (!s) {
    write_int16(-1);
    return;
  }
  write_string(*s);
}

void Writer::write_compact_string(std::string_view s) {
  if (s.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    fail(WireError::kValueTooLarge);
    return;
  }
  write_uvarint(static_cast<uint32_t>(s.size() + 1));
  write_raw(as_bytes(s));
}

void Writer::write_compact_nullable_string(const std::optional<std::string>& s) {
  if (!s) {
    write_uvarint(0);
    return;
  }
  write_compact_string(*s);
}

void Writer::write_bytes(std::span<const uint8_t> b) {
  if (b.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    fail(WireError::kValueTooLarge);
    return;
  }
  write_int32(static_cast<int32_t>(b.size()));
  write_raw(b);
}

void Writer::write_nullable_bytes(const std::optional<std::span<const uint8_t>>& b) {
  if (!b) {
    write_int32(-1);
    return;
  }
  write_bytes(*b);
}

void Writer::write_compact_bytes(std::span<const uint8_t> b) {
  if (b.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    fail(WireError::kValueTooLarge);
    return;
  }
  write_uvarint(static_cast<uint32_t>(b.size() + 1));
  write_raw(b);
}

void Writer::write_compact_nullable_bytes(const std::optional<std::span<const uint8_t>>& b) {
  if (!b) {
    write_uvarint(0);
    return;
  }
  write_compact_bytes(*b);
}

void Writer::patch_int32(size_t pos, int32_t v) {
  auto u = static_cast<uint32_t>(v);
  for (int i = 0; i < 4; ++i) buf_[pos + i] = static_cast<uint8_t>(u >> (8 * (3 - i)));
}

}  // namespace ciuickafka::protocol
