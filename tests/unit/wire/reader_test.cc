// Reader: every primitive decodes Kafka's encoding, and no malformed input
// can read past the end.
#include <catch2/catch.hpp>

#include <vector>

#include "protocol/wire/reader.h"

using namespace ciuickafka::protocol;

namespace {
Reader reader_of(const std::vector<uint8_t>& v) { return Reader(std::span<const uint8_t>(v)); }
}  // namespace

TEST_CASE("big-endian integers") {
  std::vector<uint8_t> in = {0x80, 0x01, 0x02, 0xff, 0xfe, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2a, 0xff, 0xff};
  auto r = reader_of(in);
  CHECK(r.read_int8() == -128);
  CHECK(r.read_int16() == 0x0102);
  CHECK(r.read_int16() == -2);
  CHECK(r.read_int64() == 0x100);
  CHECK(r.read_int32() == 42);
  CHECK(r.read_uint16() == 0xffff);
  CHECK(r.ok());
  CHECK(r.at_end());
}

TEST_CASE("truncated integer sets a sticky error and reads zeros") {
  std::vector<uint8_t> in = {0x00, 0x00, 0x01};
  auto r = reader_of(in);
  CHECK(r.read_int32() == 0);
  CHECK_FALSE(r.ok());
  CHECK(r.error() == WireError::kTruncated);
  CHECK(r.read_int8() == 0);
  CHECK(r.error() == WireError::kTruncated);
}

TEST_CASE("varints follow the protobuf zigzag encoding") {
  // Values and encodings from the Kafka record format documentation.
  struct Case {
    int32_t v;
    std::vector<uint8_t> enc;
  };
  std::vector<Case> cases = {{0, {0x00}},   {-1, {0x01}},         {1, {0x02}},
                             {-2, {0x03}},  {63, {0x7e}},         {-64, {0x7f}},
                             {64, {0x80, 0x01}}, {2147483647, {0xfe, 0xff, 0xff, 0xff, 0x0f}},
                             {-2147483647 - 1, {0xff, 0xff, 0xff, 0xff, 0x0f}}};
  for (auto& c : cases) {
    auto r = reader_of(c.enc);
    CHECK(r.read_varint() == c.v);
    CHECK(r.ok());
    CHECK(r.at_end());
  }
}

TEST_CASE("varlong extremes") {
  std::vector<uint8_t> max = {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  auto r = reader_of(max);
  CHECK(r.read_varlong() == INT64_MAX);
  CHECK(r.ok());
  std::vector<uint8_t> min = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  auto r2 = reader_of(min);
  CHECK(r2.read_varlong() == INT64_MIN);
  CHECK(r2.ok());
}

TEST_CASE("overlong varints are rejected") {
  std::vector<uint8_t> six = {0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
  auto r = reader_of(six);
  r.read_uvarint();
  CHECK(r.error() == WireError::kBadVarint);
  std::vector<uint8_t> fifth_too_big = {0xff, 0xff, 0xff, 0xff, 0x1f};
  auto r2 = reader_of(fifth_too_big);
  r2.read_uvarint();
  CHECK(r2.error() == WireError::kBadVarint);
  std::vector<uint8_t> eleven(11, 0x80);
  auto r3 = reader_of(eleven);
  r3.read_varlong();
  CHECK(r3.error() == WireError::kBadVarint);
  std::vector<uint8_t> unterminated = {0x80, 0x80};
  auto r4 = reader_of(unterminated);
  r4.read_uvarint();
  CHECK(r4.error() == WireError::kTruncated);
}

TEST_CASE("classic and compact strings") {
  std::vector<uint8_t> in = {0x00, 0x03, 'a', 'b', 'c',  // string "abc"
                             0xff, 0xff,                 // nullable null
                             0x04, 'x', 'y', 'z',        // compact "xyz"
                             0x00,                       // compact nullable null
                             0x01};                      // compact ""
  auto r = reader_of(in);
  CHECK(r.read_string() == "abc");
  CHECK_FALSE(r.read_nullable_string().has_value());
  CHECK(r.read_compact_string() == "xyz");
  CHECK_FALSE(r.read_compact_nullable_string().has_value());
  CHECK(r.read_compact_string().empty());
  CHECK(r.ok());
  CHECK(r.at_end());
}

TEST_CASE("null in a non-nullable string is an error") {
  std::vector<uint8_t> in = {0xff, 0xff};
  auto r = reader_of(in);
  r.read_string();
  CHECK(r.error() == WireError::kUnexpectedNull);
  std::vector<uint8_t> compact = {0x00};
  auto r2 = reader_of(compact);
  r2.read_compact_string();
  CHECK(r2.error() == WireError::kUnexpectedNull);
}

TEST_CASE("a string length past the end is truncation, not a read") {
  std::vector<uint8_t> in = {0x7f, 0xff, 'a'};
  auto r = reader_of(in);
  r.read_string();
  CHECK(r.error() == WireError::kTruncated);
  std::vector<uint8_t> neg = {0xff, 0xfe};
  auto r2 = reader_of(neg);
  r2.read_nullable_string();
  CHECK(r2.error() == WireError::kNegativeLength);
}

TEST_CASE("bytes are views into the input") {
  std::vector<uint8_t> in = {0x00, 0x00, 0x00, 0x02, 0xaa, 0xbb, 0xff, 0xff, 0xff, 0xff, 0x03, 0x01, 0x02};
  auto r = reader_of(in);
  auto b = r.read_bytes_view();
  REQUIRE(b.size() == 2);
  CHECK(b.data() == in.data() + 4);
  CHECK_FALSE(r.read_nullable_bytes_view().has_value());
  auto c = r.read_compact_bytes_view();
  CHECK(c.size() == 2);
  CHECK(r.ok());
  CHECK(r.at_end());
}

TEST_CASE("array counts cannot exceed the remaining input") {
  std::vector<uint8_t> in = {0x7f, 0xff, 0xff, 0xff, 0x00};
  auto r = reader_of(in);
  CHECK(r.read_array_length(4) == 0);
  CHECK(r.error() == WireError::kLengthTooLarge);
  std::vector<uint8_t> null_arr = {0xff, 0xff, 0xff, 0xff};
  auto r2 = reader_of(null_arr);
  CHECK(r2.read_array_length() == -1);
  CHECK(r2.ok());
  std::vector<uint8_t> compact = {0x00, 0x03, 0x01, 0x02};
  auto r3 = reader_of(compact);
  CHECK(r3.read_compact_array_length() == -1);
  CHECK(r3.read_compact_array_length() == 2);
  CHECK(r3.ok());
}

TEST_CASE("uuid and float64") {
  std::vector<uint8_t> in(16);
  for (int i = 0; i < 16; ++i) in[i] = static_cast<uint8_t>(i + 1);
  // 1.5 as IEEE-754 big-endian
  std::vector<uint8_t> f = {0x3f, 0xf8, 0, 0, 0, 0, 0, 0};
  in.insert(in.end(), f.begin(), f.end());
  auto r = reader_of(in);
  auto u = r.read_uuid();
  CHECK(u.bytes[0] == 1);
  CHECK(u.bytes[15] == 16);
  CHECK(r.read_float64() == 1.5);
  CHECK(r.ok());
}
