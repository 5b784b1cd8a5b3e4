// protocol/wire/types.h: the small value types shared by every codec.
//
// WireError is what a decoder or encoder reports; Uuid, Bytes, Records and
// TaggedField are the field types the generated messages use beyond the
// built-in integers and std::string.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace ciuickafka::protocol {

enum class WireError : uint8_t {
  kNone = 0,
  kTruncated,          // input ended inside a value
  kBadVarint,          // a varint ran past its maximum width
  kNegativeLength,     // a length below -1 (or below 0 where null is not allowed)
  kUnexpectedNull,     // null where this version does not allow it
  kLengthTooLarge,     // a length or count larger than the bytes that remain
  kBadTaggedFields,    // tags out of order, duplicated, or a malformed known tag
  kUnsupportedVersion, // the message does not exist in this version
  kFieldNotInVersion,  // encode: a non-ignorable field set that this version lacks
  kValueTooLarge,      // encode: a string or array too long for its length prefix
  kFrameTooLarge,      // a frame bigger than the configured limit
  kTrailingBytes,      // bytes left over after a complete message
  kAllocationBudget,   // decoding would allocate more than the input's budget (Reader::charge)
};

std::string_view to_string(WireError e);

struct Uuid {
  std::array<uint8_t, 16> bytes{};
  bool is_zero() const {
    for (auto b : bytes)
      if (b != 0) return false;
    return true;
  }
  auto operator<=>(const Uuid&) const = default;
};

// Owning byte string for `bytes` fields (small: member metadata, SASL
// tokens). Record data uses Records instead, which never copies.
using Bytes = std::vector<uint8_t>;

// A `records` field: a view of record-batch bytes that the message codec
// never parses. On decode it points into the frame buffer, which must outlive
// the message. `null` distinguishes a null record set from an empty one.
//
// Zero-copy encode: a Records made by external(token, size) holds no bytes.
// The encoder writes its length prefix and then, instead of the bytes, asks
// the Writer to mark a splice (see Writer::splices): whoever sends the
// encoded buffer fills that gap from elsewhere (the broker: segment files
// with sendfile). The token is opaque here; it names the source for that
// caller.
struct Records {
  std::span<const uint8_t> bytes;
  bool null = false;
  const void* external_token = nullptr;
  uint64_t external_size = 0;

  Records() = default;
  explicit Records(std::span<const uint8_t> b) : bytes(b) {}
  static Records make_null() {
    Records r;
    r.null = true;
    return r;
  }
  static Records external(const void* token, uint64_t size) {
    Records r;
    r.external_token = token;
    r.external_size = size;
    return r;
  }
  bool is_external() const { return external_token != nullptr; }
  size_t size() const { return is_external() ? external_size : bytes.size(); }
  bool operator==(const Records& o) const {
    if (is_external() || o.is_external())
      return external_token == o.external_token && external_size == o.external_size;
    return null == o.null && bytes.size() == o.bytes.size() &&
           (bytes.empty() || std::memcmp(bytes.data(), o.bytes.data(), bytes.size()) == 0);
  }
};

// A tagged field the codec does not know: kept so it can be re-emitted.
struct TaggedField {
  uint32_t tag = 0;
  Bytes data;
  bool operator==(const TaggedField&) const = default;
};
using UnknownTaggedFields = std::vector<TaggedField>;

}  // namespace ciuickafka::protocol
