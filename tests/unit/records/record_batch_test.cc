// RecordBatchView, the splitter and the record reader against a batch built
// byte for byte from Kafka's documented format (not by our builder), and
// against damaged input: every truncation, every bit flip.
#include <catch2/catch.hpp>

#include "protocol/records/batch_builder.h"
#include "protocol/records/record_batch.h"
#include "tests/unit/records/test_util.h"

using namespace ciuickafka::protocol;
using ck_test::str_of;

namespace {

// One transactional batch with one record (key "k", value "v"), written out
// field by field. CRC 0x39358f90 computed by kafka-python's crc32c.
Bytes hand_built_batch() {
  return Bytes{
      0, 0, 0, 0, 0, 0, 0, 100,        // baseOffset 100
      0, 0, 0, 58,                     // batchLength: 49 header bytes + 9 record bytes
      0, 0, 0, 7,                      // partitionLeaderEpoch 7
      2,                               // magic
      0x39, 0x35, 0x8f, 0x90,          // crc
      0x00, 0x10,                      // attributes: transactional
      0, 0, 0, 0,                      // lastOffsetDelta
      0, 0, 0, 0, 0, 0, 0x03, 0xe8,    // baseTimestamp 1000
      0, 0, 0, 0, 0, 0, 0x03, 0xe8,    // maxTimestamp 1000
      0, 0, 0, 0, 0, 0, 0, 77,         // producerId
      0, 3,                            // producerEpoch
      0, 0, 0, 9,                      // baseSequence
      0, 0, 0, 1,                      // recordCount
      0x10,                            // record length 8 (zigzag)
      0x00,                            // attributes
      0x00,                            // timestampDelta 0
      0x00,                            // offsetDelta 0
      0x02, 'k',                       // key length 1, key
      0x02, 'v',                       // value length 1, value
      0x00,                            // header count 0
  };
}

Bytes built_batch(Codec codec) {
  BatchOptions o;
  o.codec = codec;
  o.base_offset = 5;
  BatchBuilder b(o);
  for (int i = 0; i < 3; ++i) {
    auto k = ck_test::bytes_of("key" + std::to_string(i));
    auto v = ck_test::bytes_of(std::string(50, static_cast<char>('a' + i)));
    HeaderView h{as_bytes("hk"), std::span<const uint8_t>(v)};
    REQUIRE(b.add(1000 + i, std::span<const uint8_t>(k), std::span<const uint8_t>(v), std::span(&h, 1)));
  }
  auto r = b.build();
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("header of a hand-built batch") {
  Bytes b = hand_built_batch();
  REQUIRE(b.size() == 70);
  auto v = RecordBatchView::parse_and_validate(b);
  REQUIRE(v.ok());
  CHECK(v->base_offset() == 100);
  CHECK(v->batch_length() == 58);
  CHECK(v->partition_leader_epoch() == 7);
  CHECK(v->magic() == 2);
  CHECK(v->crc() == 0x39358f90u);
  CHECK(v->compute_crc() == 0x39358f90u);
  CHECK(v->codec() == Codec::kNone);
  CHECK(v->timestamp_type() == TimestampType::kCreateTime);
  CHECK(v->is_transactional());
  CHECK_FALSE(v->is_control());
  CHECK_FALSE(v->delete_horizon_ms().has_value());
  CHECK(v->last_offset_delta() == 0);
  CHECK(v->last_offset() == 100);
  CHECK(v->base_timestamp() == 1000);
  CHECK(v->max_timestamp() == 1000);
  CHECK(v->producer_id() == 77);
  CHECK(v->producer_epoch() == 3);
  CHECK(v->base_sequence() == 9);
  CHECK(v->record_count() == 1);
  CHECK(v->records_payload().size() == 9);

  auto d = decode_records(*v, 1 << 20);
  REQUIRE(d.ok());
  auto rd = d->reader();
  RecordView rec;
  REQUIRE(rd.next(&rec));
  CHECK(rec.offset == 100);
  CHECK(rec.timestamp == 1000);
  CHECK(str_of(rec.key) == "k");
  CHECK(str_of(rec.value) == "v");
  CHECK(rec.header_count == 0);
  CHECK_FALSE(rd.next(&rec));
  CHECK(rd.error() == RecordError::kNone);
}

TEST_CASE("BatchHeader reads the hand-built batch's header from its first 61 bytes alone") {
  Bytes b = hand_built_batch();
  auto h = BatchHeader::read(std::span<const uint8_t>(b).first(61));
  REQUIRE(h.ok());
  CHECK(h->base_offset == 100);
  CHECK(h->batch_length == 58);
  CHECK(h->size_bytes() == 70);
  CHECK(h->is_transactional());
  CHECK_FALSE(h->is_control());
  CHECK(h->last_offset_delta == 0);
  CHECK(h->last_offset() == 100);
  CHECK(h->next_offset() == 101);
  CHECK(h->max_timestamp == 1000);
  CHECK(h->producer_id == 77);
  CHECK(h->producer_epoch == 3);
  CHECK(h->base_sequence == 9);
  CHECK(BatchHeader::read(std::span<const uint8_t>(b).first(60)).error() == RecordError::kTruncated);
  Bytes bad = b;
  bad[16] = 1;
  CHECK(BatchHeader::read(bad).error() == RecordError::kBadMagic);
  bad = b;
  bad[11] = 48;
  CHECK(BatchHeader::read(bad).error() == RecordError::kBadLength);
}

TEST_CASE("the builder reproduces the hand-built batch exactly") {
  BatchOptions o;
  o.base_offset = 100;
  o.partition_leader_epoch = 7;
  o.transactional = true;
  o.producer_id = 77;
  o.producer_epoch = 3;
  o.base_sequence = 9;
  BatchBuilder b(o);
  REQUIRE(b.add(1000, as_bytes("k"), as_bytes("v")));
  auto r = b.build();
  REQUIRE(r.ok());
  CHECK(*r == hand_built_batch());
}

TEST_CASE("header constants") {
  CHECK(batch_v2::kHeaderSize == 61);
  CHECK(batch_v2::kMinBatchLength == 49);
  CHECK(batch_v2::kRecordsOffset == 61);
}

TEST_CASE("CRC mismatch, bad magic, bad length") {
  Bytes b = hand_built_batch();
  SECTION("payload byte changed") {
    b.back() ^= 0x01;
    auto v = RecordBatchView::parse_and_validate(b);
    REQUIRE_FALSE(v.ok());
    CHECK(v.error() == RecordError::kCrcMismatch);
    CHECK(RecordBatchView::parse(b).ok());  // framing alone is fine
  }
  SECTION("magic") {
    b[16] = 1;
    CHECK(RecordBatchView::parse(b).error() == RecordError::kBadMagic);
  }
  SECTION("length too small") {
    b[11] = 48;
    CHECK(RecordBatchView::parse(b).error() == RecordError::kBadLength);
  }
  SECTION("negative length") {
    b[8] = 0x80;
    CHECK(RecordBatchView::parse(b).error() == RecordError::kBadLength);
  }
  SECTION("length past the end") {
    b[11] = 59;
    CHECK(RecordBatchView::parse(b).error() == RecordError::kTruncated);
  }
}

TEST_CASE("setters rewrite base offset and leader epoch outside the CRC") {
  Bytes b = hand_built_batch();
  REQUIRE(set_base_offset(b, 1234567890123LL));
  REQUIRE(set_partition_leader_epoch(b, 42));
  auto v = RecordBatchView::parse_and_validate(b);
  REQUIRE(v.ok());
  CHECK(v->base_offset() == 1234567890123LL);
  CHECK(v->partition_leader_epoch() == 42);
  auto d = decode_records(*v, 1 << 20);
  REQUIRE(d.ok());
  RecordView rec;
  auto rd = d->reader();
  REQUIRE(rd.next(&rec));
  CHECK(rec.offset == 1234567890123LL);

  REQUIRE(set_log_append_time(b, 5555));
  v = RecordBatchView::parse_and_validate(b);
  REQUIRE(v.ok());
  CHECK(v->timestamp_type() == TimestampType::kLogAppendTime);
  CHECK(v->max_timestamp() == 5555);
  d = decode_records(*v, 1 << 20);
  rd = d->reader();
  REQUIRE(rd.next(&rec));
  CHECK(rec.timestamp == 5555);

  Bytes small(10);
  CHECK_FALSE(set_base_offset(small, 1));
}

TEST_CASE("every truncation is an error, never a crash") {
  for (Codec c : {Codec::kNone, Codec::kGzip, Codec::kSnappy, Codec::kLz4, Codec::kZstd}) {
    Bytes full = built_batch(c);
    for (size_t n = 0; n < full.size(); ++n) {
      Bytes cut(full.begin(), full.begin() + static_cast<long>(n));
      auto v = RecordBatchView::parse(cut);
      REQUIRE_FALSE(v.ok());
      BatchSplitter s(cut);
      RecordsEntry e;
      CHECK(s.next(&e) == (n == 0 ? SplitStatus::kEnd : SplitStatus::kPartial));
    }
  }
}

TEST_CASE("record section truncated inside a well-framed batch") {
  // Shorten the records section but fix batchLength and CRC, so only the
  // record reader can notice.
  Bytes full = built_batch(Codec::kNone);
  for (size_t n = batch_v2::kHeaderSize; n < full.size(); ++n) {
    Bytes cut(full.begin(), full.begin() + static_cast<long>(n));
    Writer w;
    w.write_int32(static_cast<int32_t>(n - batch_v2::kLogOverhead));
    std::copy(w.buffer().begin(), w.buffer().end(), cut.begin() + batch_v2::kBatchLengthOffset);
    REQUIRE(rewrite_crc(cut));
    auto v = RecordBatchView::parse_and_validate(cut);
    REQUIRE(v.ok());
    RecordError e = validate_records(*v, 1 << 20);
    CHECK(e != RecordError::kNone);
  }
}

TEST_CASE("every bit flip is caught by the CRC or the framing") {
  for (Codec c : {Codec::kNone, Codec::kGzip, Codec::kSnappy, Codec::kLz4, Codec::kZstd}) {
    Bytes full = built_batch(c);
    for (size_t i = batch_v2::kMagicOffset; i < full.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        Bytes b = full;
        b[i] ^= static_cast<uint8_t>(1 << bit);
        auto v = RecordBatchView::parse_and_validate(b);
        CHECK_FALSE(v.ok());
      }
    }
  }
}

TEST_CASE("damaged records with a recomputed CRC fail cleanly") {
  // The CRC cannot help here: decoding must bound-check everything itself.
  ck_test::Lcg rng(7);
  for (Codec c : {Codec::kNone, Codec::kGzip, Codec::kSnappy, Codec::kLz4, Codec::kZstd}) {
    Bytes full = built_batch(c);
    for (size_t i = batch_v2::kAttributesOffset; i < full.size(); ++i) {
      Bytes b = full;
      b[i] = static_cast<uint8_t>(rng.next());
      rewrite_crc(b);
      auto v = RecordBatchView::parse_and_validate(b);
      if (!v.ok()) continue;
      (void)validate_records(*v, 1 << 16);  // any result, but no crash or overrun
    }
  }
}

TEST_CASE("splitter walks batches and stops at a partial one") {
  Bytes a = built_batch(Codec::kNone), b = built_batch(Codec::kZstd);
  Bytes blob = a;
  blob.insert(blob.end(), b.begin(), b.end());
  blob.insert(blob.end(), a.begin(), a.begin() + 30);
  BatchSplitter s{Records(blob)};
  RecordsEntry e;
  REQUIRE(s.next(&e) == SplitStatus::kEntry);
  CHECK(e.bytes.size() == a.size());
  CHECK(e.magic == 2);
  CHECK(e.offset == 5);
  REQUIRE(s.next(&e) == SplitStatus::kEntry);
  CHECK(e.bytes.size() == b.size());
  CHECK(s.next(&e) == SplitStatus::kPartial);
  CHECK(s.remaining() == 30);
  CHECK(s.position() == a.size() + b.size());
  CHECK(s.next(&e) == SplitStatus::kPartial);

  Bytes bad = a;
  bad[16] = 7;
  BatchSplitter s2(bad);
  CHECK(s2.next(&e) == SplitStatus::kCorrupt);
}

TEST_CASE("record reader: count mismatches and malformed records") {
  SECTION("more records claimed than present") {
    Bytes b = hand_built_batch();
    b[60] = 2;
    rewrite_crc(b);
    auto v = RecordBatchView::parse_and_validate(b);
    REQUIRE(v.ok());
    CHECK(validate_records(*v, 1 << 20) == RecordError::kBadRecordCount);
  }
  SECTION("fewer records claimed: trailing bytes") {
    Bytes b = hand_built_batch();
    b[60] = 0;
    rewrite_crc(b);
    auto v = RecordBatchView::parse_and_validate(b);
    CHECK(validate_records(*v, 1 << 20) == RecordError::kBadRecordCount);
  }
  SECTION("negative count") {
    Bytes b = hand_built_batch();
    b[57] = 0xff;
    rewrite_crc(b);
    auto v = RecordBatchView::parse_and_validate(b);
    CHECK(validate_records(*v, 1 << 20) == RecordError::kBadRecordCount);
  }
  SECTION("key length past the record") {
    Bytes b = hand_built_batch();
    b[65] = 0x08;  // key length 4
    rewrite_crc(b);
    auto v = RecordBatchView::parse_and_validate(b);
    CHECK(validate_records(*v, 1 << 20) == RecordError::kBadRecord);
  }
  SECTION("record length disagrees with its body") {
    Bytes b = hand_built_batch();
    b[61] = 0x0e;  // 7 instead of 8
    rewrite_crc(b);
    auto v = RecordBatchView::parse_and_validate(b);
    CHECK(validate_records(*v, 1 << 20) != RecordError::kNone);
  }
  SECTION("unknown codec bits") {
    Bytes b = hand_built_batch();
    b[22] |= 0x06;  // codec 6
    rewrite_crc(b);
    auto v = RecordBatchView::parse_and_validate(b);
    REQUIRE(v.ok());
    CHECK_FALSE(v->codec().has_value());
    CHECK(validate_records(*v, 1 << 20) == RecordError::kBadCodec);
  }
}

TEST_CASE("control records") {
  auto r = build_end_txn_marker_batch(ControlRecordType::kCommit, 99, 4, 17, 123456, 50, 3);
  REQUIRE(r.ok());
  auto v = RecordBatchView::parse_and_validate(*r);
  REQUIRE(v.ok());
  CHECK(v->is_control());
  CHECK(v->is_transactional());
  CHECK(v->producer_id() == 99);
  CHECK(v->producer_epoch() == 4);
  CHECK(v->base_offset() == 50);
  CHECK(v->partition_leader_epoch() == 3);
  auto d = decode_records(*v, 1 << 20);
  REQUIRE(d.ok());
  auto rd = d->reader();
  RecordView rec;
  REQUIRE(rd.next(&rec));
  REQUIRE(rec.key);
  auto key = parse_control_key(*rec.key);
  REQUIRE(key.ok());
  CHECK(key->version == 0);
  CHECK(key->type == static_cast<int16_t>(ControlRecordType::kCommit));
  REQUIRE(rec.value);
  auto marker = parse_end_txn_marker(*rec.value);
  REQUIRE(marker.ok());
  CHECK(marker->coordinator_epoch == 17);
  CHECK(rec.timestamp == 123456);

  Bytes abort_key = {0, 0, 0, 0};
  CHECK(parse_control_key(abort_key)->type == 0);
  Bytes short_key = {0, 0, 0};
  CHECK(parse_control_key(short_key).error() == RecordError::kBadControlRecord);
  Bytes short_value = {0, 0, 0, 0, 1};
  CHECK(parse_end_txn_marker(short_value).error() == RecordError::kBadControlRecord);
}
