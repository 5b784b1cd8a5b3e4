// tests/unit/storage/log_test_util.h: building record batches and
// inspecting logs in the segment and log tests.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "protocol/records/batch_builder.h"
#include "protocol/records/record_batch.h"
#include "storage/log.h"

namespace ciuickafka::storage::test {

using protocol::Bytes;

// A batch of `records` records with timestamps ts, ts+1, ... and values of
// value_size bytes that name their record index.
inline Bytes make_batch(int records, int64_t ts, size_t value_size,
                        protocol::Codec codec = protocol::Codec::kNone) {
  protocol::BatchOptions o;
  o.codec = codec;
  protocol::BatchBuilder b(o);
  for (int i = 0; i < records; ++i) {
    std::string v = "value-" + std::to_string(i) + "-";
    v.resize(std::max(v.size(), value_size), static_cast<char>('a' + i % 26));
    std::string k = "key-" + std::to_string(i);
    REQUIRE(b.add(ts + i, protocol::as_bytes(k), protocol::as_bytes(v)));
  }
  auto r = b.build();
  REQUIRE(r.ok());
  return std::move(r).value();
}

// A batch of random shape (1-20 records, values of 0-600 bytes, a codec).
inline Bytes random_batch(std::mt19937& rng, int64_t ts) {
  static constexpr protocol::Codec kCodecs[] = {protocol::Codec::kNone, protocol::Codec::kNone,
                                                protocol::Codec::kGzip, protocol::Codec::kLz4,
                                                protocol::Codec::kZstd, protocol::Codec::kSnappy};
  const int records = std::uniform_int_distribution<int>(1, 20)(rng);
  const size_t value = std::uniform_int_distribution<size_t>(0, 600)(rng);
  return make_batch(records, ts, value, kCodecs[std::uniform_int_distribution<size_t>(0, 5)(rng)]);
}

struct BatchInfo {
  int64_t base = 0;
  int64_t last = 0;
  int32_t epoch = 0;
  int64_t max_timestamp = 0;
  size_t size = 0;
};

// Every batch of a blob, each checked (framing and CRC); the blob must end
// on a batch boundary.
inline std::vector<BatchInfo> batches_of(std::span<const uint8_t> blob) {
  std::vector<BatchInfo> out;
  protocol::BatchSplitter split(blob);
  protocol::RecordsEntry e;
  protocol::SplitStatus st;
  while ((st = split.next(&e)) == protocol::SplitStatus::kEntry) {
    auto v = protocol::RecordBatchView::parse_and_validate(e.bytes);
    REQUIRE(v.ok());
    out.push_back({v->base_offset(), v->last_offset(), v->partition_leader_epoch(), v->max_timestamp(),
                   e.bytes.size()});
  }
  REQUIRE(st == protocol::SplitStatus::kEnd);
  return out;
}

inline std::unique_ptr<Log> open_log(io::FileSystem& fs, const std::string& dir, const LogConfig& cfg,
                                     int64_t now_ms = 0) {
  auto log = Log::open(fs, dir, cfg, now_ms);
  if (!log) FAIL(log.status().to_string());
  return std::move(log).value();
}

// Appends batch (rewritten in place: offsets and epoch assigned).
inline AppendResult append_ok(Log& log, Bytes& batch, int32_t epoch = 7, int64_t now_ms = 0) {
  auto r = log.append(batch, epoch, now_ms);
  if (!r) FAIL(r.status().to_string());
  return *r;
}

inline Bytes read_bytes(const Log& log, int64_t offset, uint64_t max_bytes,
                        int64_t upper = std::numeric_limits<int64_t>::max()) {
  auto r = log.read(offset, max_bytes, upper);
  if (!r) FAIL(r.status().to_string());
  auto b = read_slices(*r);
  REQUIRE(b.is_ok());
  return *b;
}

}  // namespace ciuickafka::storage::test
