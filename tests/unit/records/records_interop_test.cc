// Interop: batches and message sets written by kafka-python's own record
// builders (tests/data/records/, made by gen_vectors.py) decode here with the
// right CRCs and contents, and convert between formats.
#include <catch2/catch.hpp>

#include "protocol/records/legacy.h"
#include "protocol/records/record_batch.h"
#include "tests/unit/records/test_util.h"

using namespace ciuickafka::protocol;
using ck_test::str_of;

namespace {

void check_v2_batch(const RecordBatchView& v, Codec codec) {
  CHECK(v.codec() == codec);
  CHECK(v.producer_id() == 1234);
  CHECK(v.producer_epoch() == 5);
  CHECK(v.base_sequence() == 42);
  CHECK(v.record_count() == ck_test::kV2Records);
  CHECK(v.last_offset_delta() == ck_test::kV2Records - 1);
  auto d = decode_records(v, 1 << 20);
  REQUIRE(d.ok());
  auto rd = d->reader();
  RecordView rec;
  for (int i = 0; i < ck_test::kV2Records; ++i) {
    REQUIRE(rd.next(&rec));
    auto e = ck_test::v2_record(i);
    CHECK(rec.offset == v.base_offset() + i);
    CHECK(rec.timestamp == e.timestamp);
    CHECK(str_of(rec.key) == e.key);
    CHECK(str_of(rec.value) == e.value);
    REQUIRE(rec.header_count == static_cast<int32_t>(e.headers.size()));
    auto it = rec.headers();
    HeaderView h;
    for (auto& [k, val] : e.headers) {
      REQUIRE(it.next(&h));
      CHECK(std::string(h.key.begin(), h.key.end()) == k);
      CHECK(str_of(h.value) == val);
    }
  }
  CHECK_FALSE(rd.next(&rec));
  CHECK(rd.error() == RecordError::kNone);
}

void check_legacy(const DecodedMessageSet& set, int magic, Codec codec) {
  REQUIRE(set.messages.size() == ck_test::kLegacyRecords);
  CHECK_FALSE(set.partial);
  for (int i = 0; i < ck_test::kLegacyRecords; ++i) {
    const auto& m = set.messages[static_cast<size_t>(i)];
    auto e = ck_test::legacy_record(magic, i);
    CHECK(m.magic == magic);
    // kafka-python (like any producer) leaves offsets for the broker: plain
    // messages count from 0, a compressed wrapper says 0 and its v1 inner
    // set is relative (0..3), so those decode as -3..0. Check the spacing.
    CHECK(m.offset - set.messages[0].offset == i);
    CHECK(set.messages[0].offset == (magic == 1 && codec != Codec::kNone ? -3 : 0));
    CHECK(m.timestamp == e.timestamp);
    CHECK(str_of(m.key) == e.key);
    CHECK(str_of(m.value) == e.value);
    CHECK(m.wrapper_codec == codec);
  }
}

const std::pair<const char*, Codec> kV2Files[] = {
    {"v2_none.bin", Codec::kNone},     {"v2_gzip.bin", Codec::kGzip}, {"v2_snappy.bin", Codec::kSnappy},
    {"v2_lz4.bin", Codec::kLz4},       {"v2_zstd.bin", Codec::kZstd},
};
const std::pair<const char*, Codec> kLegacyCodecs[] = {
    {"none", Codec::kNone}, {"gzip", Codec::kGzip}, {"snappy", Codec::kSnappy}, {"lz4", Codec::kLz4}};

}  // namespace

TEST_CASE("kafka-python v2 batches decode for every codec") {
  for (auto [file, codec] : kV2Files) {
    INFO(file);
    Bytes b = ck_test::read_vector(file);
    REQUIRE(b.size() > batch_v2::kHeaderSize);
    auto v = RecordBatchView::parse_and_validate(b);
    REQUIRE(v.ok());
    CHECK(v->size_bytes() == b.size());
    CHECK_FALSE(v->is_transactional());
    check_v2_batch(*v, codec);
  }
  Bytes t = ck_test::read_vector("v2_zstd_txn.bin");
  auto v = RecordBatchView::parse_and_validate(t);
  REQUIRE(v.ok());
  CHECK(v->is_transactional());
  check_v2_batch(*v, Codec::kZstd);
}

TEST_CASE("kafka-python fetch-like blob: two batches then a partial one") {
  Bytes b = ck_test::read_vector("v2_fetch_partial.bin");
  BatchSplitter s(b);
  RecordsEntry e;
  Codec expect[] = {Codec::kNone, Codec::kGzip};
  for (Codec c : expect) {
    REQUIRE(s.next(&e) == SplitStatus::kEntry);
    auto v = RecordBatchView::parse_and_validate(e.bytes);
    REQUIRE(v.ok());
    check_v2_batch(*v, c);
  }
  CHECK(s.next(&e) == SplitStatus::kPartial);
  CHECK(s.remaining() == 100);
}

TEST_CASE("kafka-python v0/v1 message sets decode for every codec") {
  for (int magic : {0, 1}) {
    for (auto [name, codec] : kLegacyCodecs) {
      std::string file = "legacy_v" + std::to_string(magic) + "_" + name + ".bin";
      INFO(file);
      Bytes b = ck_test::read_vector(file);
      REQUIRE(!b.empty());
      auto set = decode_message_set(b);
      REQUIRE(set.ok());
      check_legacy(*set, magic, codec);
      // A flipped bit anywhere the first entry's CRC covers is an error.
      size_t first_end = 12 + (size_t{b[8]} << 24 | size_t{b[9]} << 16 | size_t{b[10]} << 8 | b[11]);
      for (size_t i = 16; i < first_end; ++i) {
        Bytes bad = b;
        bad[i] ^= 0x20;
        CHECK_FALSE(decode_message_set(bad).ok());
      }
    }
  }
}

TEST_CASE("kafka-python message sets convert to v2 and back") {
  for (int magic : {0, 1}) {
    for (auto [name, codec] : kLegacyCodecs) {
      std::string file = "legacy_v" + std::to_string(magic) + "_" + name + ".bin";
      INFO(file);
      Bytes b = ck_test::read_vector(file);
      LegacyToV2Options o;
      o.base_offset = 500;
      auto v2 = message_set_to_v2(b, o);
      REQUIRE(v2.ok());
      auto v = RecordBatchView::parse_and_validate(*v2);
      REQUIRE(v.ok());
      CHECK(v->codec() == codec);
      CHECK(v->record_count() == ck_test::kLegacyRecords);
      auto d = decode_records(*v, 1 << 20);
      REQUIRE(d.ok());
      auto rd = d->reader();
      RecordView rec;
      for (int i = 0; i < ck_test::kLegacyRecords; ++i) {
        REQUIRE(rd.next(&rec));
        auto e = ck_test::legacy_record(magic, i);
        CHECK(rec.offset == 500 + i);
        CHECK(rec.timestamp == e.timestamp);
        CHECK(str_of(rec.key) == e.key);
        CHECK(str_of(rec.value) == e.value);
      }
      CHECK(rd.error() == RecordError::kNone);

      // And down again to the same magic: same messages, same offsets.
      V2ToLegacyOptions down;
      down.magic = static_cast<int8_t>(magic);
      auto back = v2_to_message_set(*v2, down);
      REQUIRE(back.ok());
      auto set = decode_message_set(*back);
      REQUIRE(set.ok());
      REQUIRE(set->messages.size() == ck_test::kLegacyRecords);
      for (int i = 0; i < ck_test::kLegacyRecords; ++i) {
        const auto& m = set->messages[static_cast<size_t>(i)];
        CHECK(m.offset == 500 + i);
        CHECK(m.magic == magic);
        CHECK(m.wrapper_codec == codec);
        CHECK(str_of(m.value) == ck_test::legacy_record(magic, i).value);
      }
    }
  }
}

TEST_CASE("kafka-python v2 batches convert down to v0 and v1") {
  for (auto [file, codec] : kV2Files) {
    Bytes b = ck_test::read_vector(file);
    set_base_offset(b, 70);
    for (int8_t magic : {int8_t{0}, int8_t{1}}) {
      INFO(file << " magic " << int(magic));
      V2ToLegacyOptions o;
      o.magic = magic;
      auto out = v2_to_message_set(b, o);
      if (codec == Codec::kZstd) {
        REQUIRE_FALSE(out.ok());
        CHECK(out.error() == RecordError::kBadCodec);
        continue;
      }
      REQUIRE(out.ok());
      auto set = decode_message_set(*out);
      REQUIRE(set.ok());
      REQUIRE(set->messages.size() == ck_test::kV2Records);
      for (int i = 0; i < ck_test::kV2Records; ++i) {
        const auto& m = set->messages[static_cast<size_t>(i)];
        auto e = ck_test::v2_record(i);
        CHECK(m.offset == 70 + i);
        CHECK(m.timestamp == (magic == 0 ? -1 : e.timestamp));
        CHECK(str_of(m.key) == e.key);
        CHECK(str_of(m.value) == e.value);
        CHECK(m.wrapper_codec == codec);
      }
    }
  }
}
