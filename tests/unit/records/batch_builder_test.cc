// BatchBuilder -> RecordBatchView/RecordReader round trips for every codec,
// plus the builder's special cases (explicit deltas, empty batches, delete
// horizon, LogAppendTime, recompression).
#include <catch2/catch.hpp>

#include "protocol/records/batch_builder.h"
#include "tests/unit/records/test_util.h"

using namespace ciuickafka::protocol;
using ck_test::str_of;

namespace {

const Codec kAllCodecs[] = {Codec::kNone, Codec::kGzip, Codec::kSnappy, Codec::kLz4, Codec::kZstd};

// Adds the interop formula's records to b.
void add_v2_records(BatchBuilder& b, int n) {
  for (int i = 0; i < n; ++i) {
    auto e = ck_test::v2_record(i % ck_test::kV2Records);
    std::vector<Bytes> storage;
    std::vector<HeaderView> hs;
    storage.reserve(e.headers.size() * 2);
    for (auto& [k, v] : e.headers) {
      storage.push_back(ck_test::bytes_of(k));
      HeaderView h{storage.back(), std::nullopt};
      if (v) {
        storage.push_back(ck_test::bytes_of(*v));
        h.value = std::span<const uint8_t>(storage.back());
      }
      hs.push_back(h);
    }
    std::optional<std::span<const uint8_t>> key, value;
    if (e.key) key = as_bytes(*e.key);
    if (e.value) value = as_bytes(*e.value);
    REQUIRE(b.add(e.timestamp, key, value, hs));
  }
}

// Checks a batch's records against the formula.
void check_v2_records(const RecordBatchView& v, int n, int64_t base_offset) {
  REQUIRE(v.record_count() == n);
  auto d = decode_records(v, 16 << 20);
  REQUIRE(d.ok());
  auto rd = d->reader();
  RecordView rec;
  for (int i = 0; i < n; ++i) {
    REQUIRE(rd.next(&rec));
    auto e = ck_test::v2_record(i % ck_test::kV2Records);
    CHECK(rec.offset == base_offset + i);
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
    CHECK_FALSE(it.next(&h));
  }
  CHECK_FALSE(rd.next(&rec));
  CHECK(rd.error() == RecordError::kNone);
}

}  // namespace

TEST_CASE("builder round trip for every codec") {
  for (Codec c : kAllCodecs) {
    for (int n : {1, 7, 300}) {
      INFO("codec " << to_string(c) << " records " << n);
      BatchOptions o;
      o.codec = c;
      o.base_offset = 1000;
      o.producer_id = 5;
      o.producer_epoch = 1;
      o.base_sequence = 10;
      BatchBuilder b(o);
      add_v2_records(b, n);
      auto r = b.build();
      REQUIRE(r.ok());
      auto v = RecordBatchView::parse_and_validate(*r);
      REQUIRE(v.ok());
      CHECK(v->codec() == c);
      CHECK(v->last_offset_delta() == n - 1);
      CHECK(v->base_timestamp() == ck_test::v2_record(0).timestamp);
      int64_t max_ts = 0;
      for (int i = 0; i < n; ++i) max_ts = std::max(max_ts, ck_test::v2_record(i % ck_test::kV2Records).timestamp);
      CHECK(v->max_timestamp() == max_ts);
      CHECK(v->producer_id() == 5);
      CHECK(v->base_sequence() == 10);
      check_v2_records(*v, n, 1000);
      if (c != Codec::kNone && n == 300) CHECK(r->size() < b.estimated_size());
    }
  }
}

TEST_CASE("recompression keeps every record field") {
  BatchOptions o;
  o.codec = Codec::kGzip;
  BatchBuilder b(o);
  add_v2_records(b, 7);
  auto src = b.build();
  REQUIRE(src.ok());
  auto sv = RecordBatchView::parse_and_validate(*src);
  for (Codec c : kAllCodecs) {
    BatchOptions o2;
    o2.codec = c;
    BatchBuilder b2(o2);
    auto d = decode_records(*sv, 1 << 20);
    auto rd = d->reader();
    RecordView rec;
    while (rd.next(&rec)) REQUIRE(b2.add(rec));
    auto out = b2.build();
    REQUIRE(out.ok());
    auto v = RecordBatchView::parse_and_validate(*out);
    REQUIRE(v.ok());
    check_v2_records(*v, 7, 0);
  }
}

TEST_CASE("explicit offset deltas (compaction gaps)") {
  BatchBuilder b(BatchOptions{});
  CHECK(b.add(1, as_bytes("a"), as_bytes("1"), {}, 2));
  CHECK_FALSE(b.add(1, as_bytes("b"), as_bytes("2"), {}, 2));  // must increase
  CHECK(b.add(1, as_bytes("c"), as_bytes("3"), {}, 9));
  CHECK(b.add(1, as_bytes("d"), as_bytes("4")));  // next: 10
  auto r = b.build();
  auto v = RecordBatchView::parse_and_validate(*r);
  REQUIRE(v.ok());
  CHECK(v->record_count() == 3);
  CHECK(v->last_offset_delta() == 10);
  auto d = decode_records(*v, 1 << 20);
  auto rd = d->reader();
  RecordView rec;
  std::vector<int32_t> deltas;
  while (rd.next(&rec)) deltas.push_back(rec.offset_delta);
  CHECK(deltas == std::vector<int32_t>{2, 9, 10});
}

TEST_CASE("empty batch keeps producer state") {
  BatchOptions o;
  o.producer_id = 8;
  o.producer_epoch = 2;
  o.base_sequence = 100;
  o.empty_last_offset_delta = 4;
  o.empty_timestamp = 777;
  auto r = BatchBuilder(o).build();
  REQUIRE(r.ok());
  CHECK(r->size() == batch_v2::kHeaderSize);
  auto v = RecordBatchView::parse_and_validate(*r);
  REQUIRE(v.ok());
  CHECK(v->record_count() == 0);
  CHECK(v->last_offset_delta() == 4);
  CHECK(v->max_timestamp() == 777);
  CHECK(validate_records(*v, 1024) == RecordError::kNone);
}

TEST_CASE("delete horizon and LogAppendTime") {
  BatchOptions o;
  o.delete_horizon_ms = 50000;
  o.timestamp_type = TimestampType::kLogAppendTime;
  o.log_append_time = 99999;
  BatchBuilder b(o);
  REQUIRE(b.add(40000, std::nullopt, as_bytes("x")));
  auto r = b.build();
  auto v = RecordBatchView::parse_and_validate(*r);
  REQUIRE(v.ok());
  CHECK(v->has_delete_horizon());
  CHECK(v->delete_horizon_ms() == 50000);
  CHECK(v->base_timestamp() == 50000);
  CHECK(v->timestamp_type() == TimestampType::kLogAppendTime);
  CHECK(v->max_timestamp() == 99999);
  auto d = decode_records(*v, 1024);
  auto rd = d->reader();
  RecordView rec;
  REQUIRE(rd.next(&rec));
  CHECK(rec.timestamp_delta == -10000);
  CHECK(rec.timestamp == 99999);  // LogAppendTime wins on read
  CHECK_FALSE(rec.key.has_value());
}

TEST_CASE("decompressed size limit applies to record iteration") {
  for (Codec c : kAllCodecs) {
    if (c == Codec::kNone) continue;
    BatchOptions o;
    o.codec = c;
    BatchBuilder b(o);
    Bytes zeros(1 << 20, 0);
    REQUIRE(b.add(0, std::nullopt, std::span<const uint8_t>(zeros)));
    auto r = b.build();
    REQUIRE(r.ok());
    CHECK(r->size() < 64 * 1024);
    auto v = RecordBatchView::parse_and_validate(*r);
    REQUIRE(v.ok());
    auto d = decode_records(*v, 64 * 1024);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error() == RecordError::kTooLarge);
  }
}
