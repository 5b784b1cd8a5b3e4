// Legacy message sets built here: v1 relative offsets, LogAppendTime
// wrappers, partial trailing entries, the magic-0 LZ4 checksum, errors.
#include <catch2/catch.hpp>

#include "protocol/records/batch_builder.h"
#include "protocol/records/legacy.h"
#include "tests/unit/records/test_util.h"

using namespace ciuickafka::protocol;
using ck_test::str_of;

namespace {

// A v1 wrapper holding inner messages with relative offsets 0..n-1.
Bytes v1_wrapper(Codec codec, int64_t wrapper_offset, int n, bool log_append, int64_t wrapper_ts) {
  Bytes inner;
  for (int i = 0; i < n; ++i)
    write_legacy_message(inner, 1, i, 0, 100 + i, std::nullopt, as_bytes("m" + std::to_string(i)));
  auto packed = compress(codec, inner);
  REQUIRE(packed.ok());
  Bytes out;
  auto attrs = static_cast<int8_t>(static_cast<int>(codec) | (log_append ? 0x08 : 0));
  write_legacy_message(out, 1, wrapper_offset, attrs, wrapper_ts, std::nullopt, std::span<const uint8_t>(*packed));
  return out;
}

}  // namespace

TEST_CASE("v1 wrapper: inner offsets are relative to the wrapper's") {
  Bytes b = v1_wrapper(Codec::kGzip, 41, 3, false, 0);
  auto set = decode_message_set(b);
  REQUIRE(set.ok());
  REQUIRE(set->messages.size() == 3);
  CHECK(set->messages[0].offset == 39);
  CHECK(set->messages[2].offset == 41);
  CHECK(set->messages[1].timestamp == 101);
  CHECK(set->messages[1].timestamp_type == TimestampType::kCreateTime);
}

TEST_CASE("v1 wrapper under LogAppendTime overrides inner timestamps") {
  Bytes b = v1_wrapper(Codec::kSnappy, 2, 3, true, 9999);
  auto set = decode_message_set(b);
  REQUIRE(set.ok());
  for (auto& m : set->messages) {
    CHECK(m.timestamp == 9999);
    CHECK(m.timestamp_type == TimestampType::kLogAppendTime);
  }
  auto v2 = message_set_to_v2(b);
  REQUIRE(v2.ok());
  auto v = RecordBatchView::parse_and_validate(*v2);
  REQUIRE(v.ok());
  CHECK(v->timestamp_type() == TimestampType::kLogAppendTime);
  CHECK(v->max_timestamp() == 9999);
}

TEST_CASE("keeping offsets when converting") {
  Bytes b = v1_wrapper(Codec::kLz4, 12, 3, false, 0);
  LegacyToV2Options o;
  o.assign_offsets = false;
  auto v2 = message_set_to_v2(b, o);
  REQUIRE(v2.ok());
  auto v = RecordBatchView::parse_and_validate(*v2);
  CHECK(v->base_offset() == 10);
  CHECK(v->last_offset() == 12);
}

TEST_CASE("partial trailing message") {
  Bytes b;
  write_legacy_message(b, 0, 0, 0, -1, as_bytes("k"), as_bytes("v"));
  size_t one = b.size();
  write_legacy_message(b, 0, 1, 0, -1, as_bytes("k"), as_bytes("v"));
  for (size_t n = one; n < b.size(); ++n) {
    Bytes cut(b.begin(), b.begin() + static_cast<long>(n));
    auto set = decode_message_set(cut);
    REQUIRE(set.ok());
    CHECK(set->messages.size() == 1);
    CHECK(set->partial == (n > one));
    if (n > one) CHECK(message_set_to_v2(cut).error() == RecordError::kTruncated);
  }
}

TEST_CASE("legacy errors") {
  Bytes good;
  write_legacy_message(good, 1, 0, 0, 5, std::nullopt, as_bytes("v"));
  SECTION("crc") {
    Bytes b = good;
    b.back() ^= 1;
    CHECK(decode_message_set(b).error() == RecordError::kCrcMismatch);
  }
  SECTION("zstd codec id is not allowed in v1") {
    Bytes b;
    write_legacy_message(b, 1, 0, 4, 5, std::nullopt, as_bytes("v"));
    CHECK(decode_message_set(b).error() == RecordError::kBadCodec);
  }
  SECTION("corrupt compressed value") {
    Bytes b;
    write_legacy_message(b, 1, 0, 1, 5, std::nullopt, as_bytes("not gzip"));
    CHECK(decode_message_set(b).error() == RecordError::kCompression);
  }
  SECTION("nested compression") {
    Bytes inner = v1_wrapper(Codec::kGzip, 0, 1, false, 0);
    auto packed = compress(Codec::kGzip, inner);
    Bytes b;
    write_legacy_message(b, 1, 0, 1, 5, std::nullopt, std::span<const uint8_t>(*packed));
    CHECK(decode_message_set(b).error() == RecordError::kBadRecord);
  }
  SECTION("size too small") {
    Bytes b = good;
    b[11] = 3;
    CHECK(decode_message_set(b).error() == RecordError::kBadLength);
  }
  SECTION("every truncation and bit flip") {
    Bytes w = v1_wrapper(Codec::kLz4, 5, 4, false, 0);
    for (size_t n = 0; n < w.size(); ++n) {
      Bytes cut(w.begin(), w.begin() + static_cast<long>(n));
      auto s = decode_message_set(cut);
      if (s.ok()) CHECK(s->messages.empty());
    }
    for (size_t i = 12; i < w.size(); ++i) {
      Bytes bad = w;
      bad[i] ^= 0x04;
      CHECK_FALSE(decode_message_set(bad).ok());
    }
  }
}

TEST_CASE("decompression bomb inside a legacy wrapper") {
  Bytes inner;
  Bytes big(1 << 20, 0);
  write_legacy_message(inner, 1, 0, 0, 0, std::nullopt, std::span<const uint8_t>(big));
  auto packed = compress(Codec::kGzip, inner);
  Bytes b;
  write_legacy_message(b, 1, 0, 1, 0, std::nullopt, std::span<const uint8_t>(*packed));
  LegacyDecodeOptions o;
  o.max_decompressed_bytes = 64 * 1024;
  CHECK(decode_message_set(b, o).error() == RecordError::kTooLarge);
}

TEST_CASE("down-conversion to magic 0 writes lz4 with Kafka's old header checksum") {
  BatchOptions bo;
  bo.codec = Codec::kLz4;
  BatchBuilder bb(bo);
  REQUIRE(bb.add(1, as_bytes("k"), as_bytes("hello hello hello hello")));
  auto batch = bb.build();
  V2ToLegacyOptions o;
  o.magic = 0;
  auto v0 = v2_to_message_set(*batch, o);
  REQUIRE(v0.ok());
  auto set = decode_message_set(*v0);
  REQUIRE(set.ok());
  REQUIRE(set->messages.size() == 1);
  CHECK(str_of(set->messages[0].value) == "hello hello hello hello");
  // The wrapper value's header checksum is the broken one, which plain lz4
  // frame readers reject: compare with a correct frame of the same input.
  Bytes inner;
  write_legacy_message(inner, 0, 0, 0, -1, as_bytes("k"), as_bytes("hello hello hello hello"));
  auto correct = lz4_frame_compress(inner, std::nullopt, false);
  auto broken = lz4_frame_compress(inner, std::nullopt, true);
  REQUIRE(correct.ok());
  REQUIRE(broken.ok());
  CHECK((*correct)[6] != (*broken)[6]);
  CHECK(std::equal(correct->begin() + 7, correct->end(), broken->begin() + 7));
}

TEST_CASE("control batches are dropped when converting down") {
  auto marker = build_end_txn_marker_batch(ControlRecordType::kAbort, 1, 1, 1, 1);
  BatchBuilder bb(BatchOptions{});
  REQUIRE(bb.add(1, std::nullopt, as_bytes("v")));
  Bytes blob = *marker;
  auto data = bb.build();
  blob.insert(blob.end(), data->begin(), data->end());
  auto out = v2_to_message_set(blob);
  REQUIRE(out.ok());
  auto set = decode_message_set(*out);
  REQUIRE(set.ok());
  CHECK(set->messages.size() == 1);
}
