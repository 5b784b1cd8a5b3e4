// protocol/wire/codec_support.cc: see codec_support.h.
#include "protocol/wire/codec_support.h"

#include <algorithm>
#include <limits>

namespace ciuickafka::protocol::codec {

void write_string(Writer& w, std::string_view s, bool compact) {
  if (compact)
    w.write_compact_string(s);
  else
    w.write_string(s);
}

void write_nullable_string(Writer& w, const std::optional<std::string>& s, bool compact,
                           bool nullable) {
  if (!s && !nullable) {
    w.fail(WireError::kUnexpectedNull);
    return;
  }
  if (compact)
    w.write_compact_nullable_string(s);
  else
    w.write_nullable_string(s);
}

size_t string_size(std::string_view s, bool compact) {
  return compact ? Writer::uvarint_size(static_cast<uint32_t>(s.size() + 1)) + s.size()
                 : 2 + s.size();
}

size_t nullable_string_size(const std::optional<std::string>& s, bool compact) {
  if (!s) return compact ? 1 : 2;
  return string_size(*s, compact);
}

std::string read_string(Reader& r, bool compact) {
  return compact ? r.read_compact_string() : r.read_string();
}

std::optional<std::string> read_nullable_string(Reader& r, bool compact, bool nullable) {
  if (!nullable) return read_string(r, compact);
  return compact ? r.read_compact_nullable_string() : r.read_nullable_string();
}

void write_bytes(Writer& w, std::span<const uint8_t> b, bool compact) {
  if (compact)
    w.write_compact_bytes(b);
  else
    w.write_bytes(b);
}

void write_nullable_bytes(Writer& w, const std::optional<Bytes>& b, bool compact, bool nullable) {
  if (!b) {
    if (!nullable)
      w.fail(WireError::kUnexpectedNull);
    else if (compact)
      w.write_uvarint(0);
    else
      w.write_int32(-1);
    return;
  }
  write_bytes(w, *b, compact);
}

size_t bytes_size(size_t n, bool compact) {
  return compact ? Writer::uvarint_size(static_cast<uint32_t>(n + 1)) + n : 4 + n;
}

size_t nullable_bytes_size(const std::optional<Bytes>& b, bool compact) {
  if (!b) return compact ? 1 : 4;
  return bytes_size(b->size(), compact);
}

namespace {
Bytes to_bytes(std::span<const uint8_t> s) { return Bytes(s.begin(), s.end()); }
}  // namespace

Bytes read_bytes(Reader& r, bool compact) {
  return to_bytes(compact ? r.read_compact_bytes_view() : r.read_bytes_view());
}

std::optional<Bytes> read_nullable_bytes(Reader& r, bool compact, bool nullable) {
  if (!nullable) return read_bytes(r, compact);
  auto v = compact ? r.read_compact_nullable_bytes_view() : r.read_nullable_bytes_view();
  if (!v) return std::nullopt;
  return to_bytes(*v);
}

void write_records(Writer& w, const Records& rec, bool compact, bool nullable) {
  if (rec.null) {
    if (!nullable)
      w.fail(WireError::kUnexpectedNull);
    else if (compact)
      w.write_uvarint(0);
    else
      w.write_int32(-1);
    return;
  }
  if (rec.is_external()) {
    if (rec.external_size > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()) - 1) {
      w.fail(WireError::kValueTooLarge);
      return;
    }
    if (compact)
      w.write_uvarint(static_cast<uint32_t>(rec.external_size + 1));
    else
      w.write_int32(static_cast<int32_t>(rec.external_size));
    w.splice(rec.external_token, rec.external_size);
    return;
  }
  write_bytes(w, rec.bytes, compact);
}

size_t records_size(const Records& rec, bool compact) {
  if (rec.null) return compact ? 1 : 4;
  return bytes_size(rec.size(), compact);
}

Records read_records(Reader& r, bool compact, bool nullable) {
  auto v = compact ? r.read_compact_nullable_bytes_view() : r.read_nullable_bytes_view();
  if (!r.ok()) return Records();
  if (!v) {
    if (!nullable) r.fail(WireError::kUnexpectedNull);
    return nullable ? Records::make_null() : Records();
  }
  return Records(*v);
}

void write_array_length(Writer& w, size_t n, bool compact) {
  if (n >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    w.fail(WireError::kValueTooLarge);
    return;
  }
  if (compact)
    w.write_compact_array_length(static_cast<int32_t>(n));
  else
    w.write_array_length(static_cast<int32_t>(n));
}

void write_null_array(Writer& w, bool compact, bool nullable) {
  if (!nullable) {
    w.fail(WireError::kUnexpectedNull);
    return;
  }
  if (compact)
    w.write_compact_array_length(-1);
  else
    w.write_array_length(-1);
}

size_t array_length_size(size_t n, bool compact) {
  return compact ? Writer::uvarint_size(static_cast<uint32_t>(n + 1)) : 4;
}

size_t null_array_size(bool compact) { return compact ? 1 : 4; }

int32_t read_array_length(Reader& r, bool compact, bool nullable, size_t min_element_size) {
  int32_t n = compact ? r.read_compact_array_length(min_element_size)
                      : r.read_array_length(min_element_size);
  if (n < 0 && r.ok() && !nullable) {
    r.fail(WireError::kUnexpectedNull);
    return 0;
  }
  return r.ok() ? n : 0;
}

size_t tagged_header_size(uint32_t tag, size_t size) {
  return Writer::uvarint_size(tag) + Writer::uvarint_size(static_cast<uint32_t>(size));
}

size_t unknown_tagged_size(const UnknownTaggedFields& unknown) {
  size_t n = 0;
  for (const auto& f : unknown) n += tagged_header_size(f.tag, f.data.size()) + f.data.size();
  return n;
}

void read_unknown_tagged(Reader& r, UnknownTaggedFields& out) {
  TaggedReader tr(r);
  TaggedEntry e;
  while (tr.next(e)) TaggedReader::keep_unknown(out, e);
}

TaggedReader::TaggedReader(Reader& r) : r_(r), left_(r.read_uvarint()) {}

bool TaggedReader::next(TaggedEntry& e) {
  if (left_ == 0 || !r_.ok()) return false;
  --left_;
  uint32_t tag = r_.read_uvarint();
  uint32_t size = r_.read_uvarint();
  if (!r_.ok()) return false;
  if (static_cast<int64_t>(tag) <= last_tag_) {
    r_.fail(WireError::kBadTaggedFields);
    return false;
  }
  last_tag_ = tag;
  e.tag = tag;
  e.data = r_.read_raw(size);
  return r_.ok();
}

void TaggedReader::keep_unknown(UnknownTaggedFields& out, const TaggedEntry& e) {
  out.push_back(TaggedField{e.tag, Bytes(e.data.begin(), e.data.end())});
}

void TaggedReader::finish_known(const Reader& sub) {
  r_.set_budget(std::min(r_.budget(), sub.budget()));
  if (sub.error() == WireError::kAllocationBudget) {
    r_.fail(WireError::kAllocationBudget);
  } else if (!sub.ok() || !sub.at_end()) {
    r_.fail(WireError::kBadTaggedFields);
  }
}

TaggedWriter::TaggedWriter(Writer& w, const UnknownTaggedFields& unknown, uint32_t known_count)
    : w_(w) {
  unknown_.reserve(unknown.size());
  for (const auto& f : unknown) unknown_.push_back(&f);
  std::stable_sort(unknown_.begin(), unknown_.end(),
                   [](const TaggedField* a, const TaggedField* b) { return a->tag < b->tag; });
  for (size_t i = 1; i < unknown_.size(); ++i)
    if (unknown_[i]->tag == unknown_[i - 1]->tag) w_.fail(WireError::kBadTaggedFields);
  w_.write_uvarint(known_count + static_cast<uint32_t>(unknown.size()));
}

void TaggedWriter::flush_below(uint64_t tag) {
  while (next_ < unknown_.size() && unknown_[next_]->tag < tag) {
    const TaggedField& f = *unknown_[next_++];
    w_.write_uvarint(f.tag);
    w_.write_uvarint(static_cast<uint32_t>(f.data.size()));
    w_.write_raw(f.data);
  }
}

void TaggedWriter::field(uint32_t tag, size_t size) {
  flush_below(tag);
  // An unknown field carrying a known tag would produce a duplicate.
  if (next_ < unknown_.size() && unknown_[next_]->tag == tag) w_.fail(WireError::kBadTaggedFields);
  w_.write_uvarint(tag);
  w_.write_uvarint(static_cast<uint32_t>(size));
}

void TaggedWriter::finish() { flush_below(uint64_t{1} << 32); }

}  // namespace ciuickafka::protocol::codec
