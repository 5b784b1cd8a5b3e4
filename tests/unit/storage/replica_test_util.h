// tests/unit/storage/replica_test_util.h: a leader log of several epochs
// across segments, and the snapshot a reopen must reproduce, for the
// replication tests (log_replica_test.cc, log_truncate_test.cc).
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "log_test_util.h"
#include "storage/checkpoint.h"
#include "storage/io/file.h"
#include "storage/log.h"

namespace ciuickafka::storage::test {

using Entries = std::vector<EpochEntry>;


inline LogConfig small_segments() {
  LogConfig c;
  c.segment.segment_bytes = 6000;
  c.segment.index_interval_bytes = 700;
  return c;
}

// The epoch a leader wrote batch i in: 1, 3, 4 and 7 in runs.
inline int32_t epoch_of(int i) { return i < 10 ? 1 : i < 25 ? 3 : i < 40 ? 4 : 7; }

// A leader's log of n random batches across several segments; the bytes as stored.
inline Bytes fill_leader(Log& log, int n, uint32_t seed = 5) {
  std::mt19937 rng(seed);
  Bytes all;
  for (int i = 0; i < n; ++i) {
    Bytes b = random_batch(rng, 1'700'000'000'000 + i * 100);
    append_ok(log, b, epoch_of(i));
    all.insert(all.end(), b.begin(), b.end());
  }
  return all;
}

// The epoch entries a log of these batches must hold.
inline Entries epochs_of(const std::vector<BatchInfo>& infos) {
  Entries e;
  for (const auto& b : infos)
    if (e.empty() || e.back().epoch != b.epoch) e.push_back({b.epoch, b.base});
  return e;
}

inline std::string checkpoint_text(const Entries& e) {
  std::string s = "0\n" + std::to_string(e.size()) + "\n";
  for (const auto& x : e) s += std::to_string(x.epoch) + " " + std::to_string(x.start_offset) + "\n";
  return s;
}

inline std::string file_text(io::FileSystem& fs, const std::string& path) {
  auto bytes = io::read_file(fs, path);
  if (!bytes) return "<" + bytes.status().to_string() + ">";
  return std::string(bytes->begin(), bytes->end());
}

// Everything a reopen must reproduce.
struct Snapshot {
  Bytes bytes;
  int64_t leo = 0;
  int64_t start = 0;
  std::vector<int64_t> bases;
  std::vector<std::vector<OffsetPosition>> offset_indexes;
  Entries epochs;
  bool operator==(const Snapshot&) const = default;
};

inline Snapshot snapshot(const Log& log) {
  Snapshot s;
  s.leo = log.log_end_offset();
  s.start = log.log_start_offset();
  s.bytes = read_bytes(log, s.start, 1 << 30);
  for (const auto& seg : *log.segments()) {
    s.bases.push_back(seg->base_offset());
    const OffsetIndex oi = seg->offset_index();
    REQUIRE(oi.sanity_check().is_ok());
    REQUIRE(seg->time_index().sanity_check().is_ok());
    std::vector<OffsetPosition> entries;
    for (size_t i = 0; i < oi.entries(); ++i) entries.push_back(oi.entry(i));
    s.offset_indexes.push_back(std::move(entries));
  }
  s.epochs = log.leader_epochs().entries();
  return s;
}

inline std::unique_ptr<Log> open_clean(io::FileSystem& fs, const std::string& dir, int64_t recovery_point) {
  LogOpenOptions o;
  o.clean_shutdown = true;
  o.recovery_point = recovery_point;
  auto log = Log::open(fs, dir, small_segments(), 0, o);
  if (!log) FAIL(log.status().to_string());
  return std::move(log).value();
}

// The bytes of the batches whose base is below end.
inline Bytes prefix_below(const Bytes& all, int64_t end) {
  size_t n = 0;
  for (const auto& b : batches_of(all)) {
    if (b.base >= end) break;
    n += b.size;
  }
  return Bytes(all.begin(), all.begin() + static_cast<long>(n));
}

}  // namespace ciuickafka::storage::test
