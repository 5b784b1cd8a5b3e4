// tests/golden/golden_records_test.cc: the record batches inside the golden
// Produce frames, read with protocol/records and protocol/compression.
//
// For every Produce scenario the records field of every captured Produce is
// split into entries; v2 batches must parse, pass their CRC32C, carry the
// codec the client was configured with, decompress and yield exactly the
// keys, values and headers listed in expect.txt (all Produce frames of a
// scenario together, in order: sarama spreads its records over two
// requests). Magic 0/1 message sets (sarama's default version, kafka-python
// pinned to 0.10.1) go through the legacy decoder. Damaged copies of each
// batch must be rejected by the CRC check and must not crash the decoders.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "protocol/compression/codec.h"
#include "protocol/generated/api_keys.h"
#include "protocol/generated/messages.h"
#include "protocol/records/crc32c.h"
#include "protocol/records/legacy.h"
#include "protocol/records/record_batch.h"
#include "protocol/wire/reader.h"
#include "tests/golden/golden_data.h"

namespace {

using namespace ciuickafka::protocol;
using ciuickafka::golden::ExpectedRecord;
using ciuickafka::golden::Expectation;
using ciuickafka::golden::Frame;

constexpr size_t kMaxDecompressed = 1 << 20;

std::string text(std::optional<std::span<const uint8_t>> b) {
  if (!b) return "<null>";
  return std::string(reinterpret_cast<const char*>(b->data()), b->size());
}

std::optional<Codec> codec_named(const std::string& name) {
  if (name == "none") return Codec::kNone;
  if (name == "gzip") return Codec::kGzip;
  if (name == "snappy") return Codec::kSnappy;
  if (name == "lz4") return Codec::kLz4;
  if (name == "zstd") return Codec::kZstd;
  return std::nullopt;
}

// A record as read back, comparable with ExpectedRecord.
struct Seen {
  std::string key;
  std::string value;
  std::vector<std::pair<std::string, std::string>> headers;
};

void read_v2_batch(std::span<const uint8_t> bytes, const Expectation& e, std::vector<Seen>* seen) {
  auto parsed = RecordBatchView::parse_and_validate(bytes);
  REQUIRE(parsed.ok());
  const RecordBatchView& batch = parsed.value();
  CHECK(batch.size_bytes() == bytes.size());
  CHECK(batch.magic() == 2);
  // The CRC once more with the portable implementation, as a cross-check.
  CHECK(batch.crc() == crc32c_portable(bytes.subspan(batch_v2::kAttributesOffset)));
  REQUIRE(batch.codec().has_value());
  CHECK(*batch.codec() == codec_named(e.codec).value());
  CHECK(batch.timestamp_type() == TimestampType::kCreateTime);
  CHECK_FALSE(batch.is_control());
  CHECK_FALSE(batch.is_transactional());
  if (e.producer_id) {
    CHECK(batch.producer_id() == *e.producer_id);
    CHECK(batch.producer_epoch() == 0);
    CHECK(batch.base_sequence() >= 0);
  } else {
    CHECK(batch.producer_id() == batch_v2::kNoProducerId);
  }
  CHECK(validate_records(batch, kMaxDecompressed) == RecordError::kNone);

  auto decoded = decode_records(batch, kMaxDecompressed);
  REQUIRE(decoded.ok());
  RecordReader reader = decoded->reader();
  RecordView rec;
  int32_t n = 0;
  while (reader.next(&rec)) {
    CHECK(rec.offset_delta == n);
    CHECK(rec.timestamp >= batch.base_timestamp());
    // sarama 1.22 leaves maxTimestamp at -1 (the broker recomputes it).
    if (batch.max_timestamp() != batch_v2::kNoTimestamp) CHECK(rec.timestamp <= batch.max_timestamp());
    Seen s{text(rec.key), text(rec.value), {}};
    HeaderIterator it = rec.headers();
    HeaderView h;
    while (it.next(&h)) s.headers.emplace_back(text(h.key), text(h.value));
    CHECK(s.headers.size() == static_cast<size_t>(rec.header_count));
    seen->push_back(std::move(s));
    ++n;
  }
  CHECK(reader.error() == RecordError::kNone);
  CHECK(n == batch.record_count());
  CHECK(batch.last_offset_delta() == n - 1);
}

void read_legacy_entry(std::span<const uint8_t> bytes, const Expectation& e, std::vector<Seen>* seen) {
  auto set = decode_message_set(bytes);
  REQUIRE(set.ok());
  CHECK_FALSE(set->partial);
  for (const LegacyMessage& m : set->messages) {
    CHECK(m.magic == e.magic);
    CHECK(m.wrapper_codec == codec_named(e.codec).value());
    seen->push_back(Seen{text(m.key), text(m.value), {}});
  }
}

// Damaged copies of a v2 batch: any flipped bit from the magic on must fail
// parse_and_validate (magic or CRC); decoding the records of a damaged
// batch without the CRC check may fail but must not crash.
void damage_v2_batch(std::span<const uint8_t> bytes) {
  std::vector<uint8_t> copy(bytes.begin(), bytes.end());
  for (size_t i = batch_v2::kMagicOffset; i < copy.size(); ++i) {
    for (int bit : {0, 5}) {
      copy[i] ^= static_cast<uint8_t>(1u << bit);
      INFO("byte " << i << " bit " << bit);
      CHECK_FALSE(RecordBatchView::parse_and_validate(copy).ok());
      auto unchecked = RecordBatchView::parse(copy);
      if (unchecked.ok()) {
        (void)validate_records(unchecked.value(), kMaxDecompressed);
        auto decoded = decode_records(unchecked.value(), kMaxDecompressed);
        if (decoded.ok()) {
          RecordReader reader = decoded->reader();
          RecordView rec;
          while (reader.next(&rec)) {
            HeaderIterator it = rec.headers();
            HeaderView h;
            while (it.next(&h)) {
            }
          }
        }
      }
      copy[i] ^= static_cast<uint8_t>(1u << bit);
    }
  }
  // Every truncation of the batch is reported, not read past.
  for (size_t len = 0; len < copy.size(); ++len) {
    INFO("truncated to " << len);
    CHECK_FALSE(RecordBatchView::parse(std::span<const uint8_t>(copy.data(), len)).ok());
  }
}

// The records fields of every Produce frame of a scenario, decoded.
std::vector<Records> produce_records(const Frame& f) {
  Reader r(f.bytes);
  RequestHeader header;
  header.decode(r, request_header_version(f.api_key(), f.api_version()));
  ProduceRequest req;
  req.decode(r, f.api_version());
  REQUIRE(r.ok());
  REQUIRE(r.at_end());
  std::vector<Records> out;
  for (const auto& t : req.topic_data)
    for (const auto& p : t.partition_data) out.push_back(p.records);
  return out;
}

}  // namespace

TEST_CASE("golden: produced batches are intact and hold what the client sent") {
  int scenarios_checked = 0;
  for (const auto& s : ciuickafka::golden::scenarios()) {
    std::vector<const Frame*> produces;
    for (const auto& f : s.frames)
      if (f.api_key() == 0) produces.push_back(&f);
    if (produces.empty()) continue;
    INFO(s.client << "/" << s.scenario);
    REQUIRE(s.expect.has_value());
    const Expectation& e = *s.expect;
    REQUIRE(codec_named(e.codec).has_value());
    std::vector<Seen> seen;
    for (const Frame* f : produces) {
      INFO(f->file);
      for (const Records& recs : produce_records(*f)) {
        BatchSplitter splitter(recs);
        RecordsEntry entry;
        SplitStatus st;
        int entries = 0;
        std::vector<size_t> ends{0};  // where complete entries end
        while ((st = splitter.next(&entry)) == SplitStatus::kEntry) {
          ++entries;
          ends.push_back(splitter.position());
          CHECK(entry.magic == e.magic);
          if (entry.magic == 2) {
            read_v2_batch(entry.bytes, e, &seen);
            damage_v2_batch(entry.bytes);
          } else {
            read_legacy_entry(entry.bytes, e, &seen);
          }
        }
        CHECK(st == SplitStatus::kEnd);
        CHECK(entries > 0);
        // A prefix of the records ends cleanly only on an entry boundary.
        for (size_t len = 0; len < recs.size(); ++len) {
          INFO("records prefix " << len);
          BatchSplitter cut(recs.bytes.first(len));
          while ((st = cut.next(&entry)) == SplitStatus::kEntry) {
          }
          const bool boundary = std::find(ends.begin(), ends.end(), len) != ends.end();
          CHECK(st == (boundary ? SplitStatus::kEnd : SplitStatus::kPartial));
        }
      }
    }
    REQUIRE(seen.size() == e.records.size());
    for (size_t i = 0; i < seen.size(); ++i) {
      INFO("record " << i);
      const ExpectedRecord& want = e.records[i];
      CHECK(seen[i].key == want.key);
      CHECK(seen[i].value == want.value);
      CHECK(seen[i].headers == want.headers);
    }
    ++scenarios_checked;
  }
  CHECK(scenarios_checked >= 15);
}
