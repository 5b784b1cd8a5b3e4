// protocol/wire/codec_support.h: small helpers the generated message codecs
// call, so that each generated field is one line instead of an if/else per
// encoding.
//
// Kafka picks a field's encoding by version: classic (int16/int32 length
// prefixes) or compact (unsigned varint length + 1) in flexible versions, and
// whether null is allowed. The generated code computes those two booleans
// from the version and passes them here. Rules enforced:
//  - null where the version does not allow it fails with kUnexpectedNull,
//    on encode and on decode;
//  - tagged fields are read in strictly increasing tag order (anything else
//    is kBadTaggedFields), unknown ones are kept as raw bytes, and a known
//    one must consume exactly the bytes its size announced;
//  - unknown tagged fields are written back merged, in tag order, with the
//    known ones.
//
// Thread-safety: stateless functions; TaggedReader/TaggedWriter are cursors
// over one Reader/Writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/wire/reader.h"
#include "protocol/wire/types.h"
#include "protocol/wire/writer.h"

namespace ciuickafka::protocol::codec {

// Strings.
void write_string(Writer& w, std::string_view s, bool compact);
void write_nullable_string(Writer& w, const std::optional<std::string>& s, bool compact,
                           bool nullable);
size_t string_size(std::string_view s, bool compact);
size_t nullable_string_size(const std::optional<std::string>& s, bool compact);
std::string read_string(Reader& r, bool compact);
std::optional<std::string> read_nullable_string(Reader& r, bool compact, bool nullable);

// Bytes (owning copies: small fields such as SASL tokens and member metadata).
void write_bytes(Writer& w, std::span<const uint8_t> b, bool compact);
void write_nullable_bytes(Writer& w, const std::optional<Bytes>& b, bool compact, bool nullable);
size_t bytes_size(size_t n, bool compact);
size_t nullable_bytes_size(const std::optional<Bytes>& b, bool compact);
Bytes read_bytes(Reader& r, bool compact);
std::optional<Bytes> read_nullable_bytes(Reader& r, bool compact, bool nullable);

// Records: encoded like bytes, decoded as a view into the input.
void write_records(Writer& w, const Records& rec, bool compact, bool nullable);
size_t records_size(const Records& rec, bool compact);
Records read_records(Reader& r, bool compact, bool nullable);

// Array length prefixes. read_array_length returns -1 for null; it fails
// before the caller allocates when n * min_element_size exceeds the input.
void write_array_length(Writer& w, size_t n, bool compact);
void write_null_array(Writer& w, bool compact, bool nullable);
size_t array_length_size(size_t n, bool compact);
size_t null_array_size(bool compact);
int32_t read_array_length(Reader& r, bool compact, bool nullable, size_t min_element_size);
// Charges n elements of the vector's type to r's allocation budget (see
// reader.h): true when the caller may reserve them; false with r failed.
template <class Vec>
bool charge_elements(Reader& r, const Vec&, int32_t n) {
  return n <= 0 || r.charge(static_cast<uint64_t>(n) * sizeof(typename Vec::value_type));
}

// Bytes taken by the unknown tagged fields, headers included.
size_t unknown_tagged_size(const UnknownTaggedFields& unknown);
// Bytes taken by a tagged field's tag and size prefixes.
size_t tagged_header_size(uint32_t tag, size_t size);
// Reads a whole tagged-field section keeping every field as unknown (for
// structs that declare no tagged fields).
void read_unknown_tagged(Reader& r, UnknownTaggedFields& out);

struct TaggedEntry {
  uint32_t tag = 0;
  std::span<const uint8_t> data;
};

// Walks a tagged-field section: reads the count, then one entry per next().
class TaggedReader {
 public:
  explicit TaggedReader(Reader& r);
  // False at the end of the section or on error.
  bool next(TaggedEntry& e);
  static void keep_unknown(UnknownTaggedFields& out, const TaggedEntry& e);
  // A reader over a known field's bytes that continues this section's
  // reader's allocation budget.
  Reader sub(const TaggedEntry& e) const { return Reader(e.data, r_.budget()); }
  // A known field was decoded from `sub`: it must have consumed all of it;
  // what it charged is taken from the parent's budget.
  void finish_known(const Reader& sub);

 private:
  Reader& r_;
  uint32_t left_;
  int64_t last_tag_ = -1;
};

// Writes a tagged-field section: the count (known + unknown), then the
// fields in tag order. Call field() for each known field in increasing tag
// order (then write its value), then finish().
class TaggedWriter {
 public:
  TaggedWriter(Writer& w, const UnknownTaggedFields& unknown, uint32_t known_count);
  void field(uint32_t tag, size_t size);
  void finish();

 private:
  void flush_below(uint64_t tag);

  Writer& w_;
  std::vector<const TaggedField*> unknown_;  // sorted by tag
  size_t next_ = 0;
};

}  // namespace ciuickafka::protocol::codec
