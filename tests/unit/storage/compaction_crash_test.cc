// tests/unit/storage/compaction_crash_test.cc: the torn-tail property for a
// cleaner pass (storage/cleaner.h, storage/compact_swap.h), over 1,000 seeds
// (crash_fs.h: CK_PROPERTY_SEEDS raises it, CK_PROPERTY_SEED replays one).
//
// Each seed builds a random compacted log (keys, overwrites, tombstones,
// codecs, segment size), flushes it, and kills one cleaner pass at a random
// point: the power goes off at the Nth mutating file-system call, or the Nth
// write (torn) or sync fails and the power goes off after the pass gave up.
// Unsynced tails survive in random prefixes. After the reopen:
//   * the log opens and every batch reads back whole, offsets increasing;
//   * the log end offset is the one before the pass;
//   * every record is the one written at its offset; a record is missing only
//     when a later record of its key exists and it lies below the range the
//     pass cleans (so the latest value of every key, tombstones included, and
//     everything above the cleaned range are there);
//   * no .cleaned or .swap file is left;
//   * a second pass then leaves exactly the records an uninterrupted pass
//     leaves (it converges).
#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "crash_fs.h"
#include "fs_fixtures.h"
#include "log_test_util.h"
#include "storage/cleaner.h"
#include "storage/file_names.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::test;
using ciuickafka::protocol::Codec;
namespace protocol = ciuickafka::protocol;

// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

namespace {

const std::string kDir = "/t/c-0";

struct Rec {
  int64_t offset = 0;
  std::string key;
  std::optional<std::string> value;
  bool operator==(const Rec&) const = default;
};

struct Shape {
  LogConfig config;
  std::vector<std::vector<std::pair<std::string, bool>>> batches;  // key, live
  std::vector<Codec> codecs;
};

Shape random_shape(uint32_t seed) {
  std::mt19937 rng(seed);
  Shape s;
  s.config.segment.segment_bytes = std::uniform_int_distribution<uint64_t>(200, 400)(rng);
  s.config.segment.index_interval_bytes = std::uniform_int_distribution<uint32_t>(64, 512)(rng);
  s.config.cleanup_compact = true;
  s.config.cleanup_delete = false;
  s.config.min_cleanable_dirty_ratio = 0;  // every pass cleans (the second must converge)
  s.config.delete_retention_ms = 10'000;
  const int keys = std::uniform_int_distribution<int>(2, 16)(rng);
  const int batches = std::uniform_int_distribution<int>(6, 12)(rng);
  static constexpr Codec kCodecs[] = {Codec::kNone, Codec::kNone, Codec::kNone, Codec::kLz4};
  for (int b = 0; b < batches; ++b) {
    std::vector<std::pair<std::string, bool>> batch;
    const int n = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int i = 0; i < n; ++i)
      batch.emplace_back("k" + std::to_string(rng() % keys), rng() % 10 != 0);
    s.batches.push_back(std::move(batch));
    s.codecs.push_back(kCodecs[rng() % 4]);
  }
  return s;
}

std::string value_for(int64_t offset) { return "v" + std::to_string(offset) + std::string(offset % 20, 'x'); }

// Writes the shape, flushed; returns every record written.
std::vector<Rec> build(Log& log, const Shape& s) {
  std::vector<Rec> all;
  for (size_t i = 0; i < s.batches.size(); ++i) {
    protocol::BatchOptions o;
    o.codec = s.codecs[i];
    protocol::BatchBuilder b(o);
    int64_t offset = log.log_end_offset();
    std::vector<std::string> values;
    values.reserve(s.batches[i].size());
    for (const auto& [k, live] : s.batches[i]) {
      values.push_back(value_for(offset));
      std::optional<std::span<const uint8_t>> v;
      if (live) v = protocol::as_bytes(values.back());
      REQUIRE(b.add(1000 + offset, protocol::as_bytes(k), v));
      all.push_back({offset, k, live ? std::optional<std::string>(values.back()) : std::nullopt});
      ++offset;
    }
    auto built = b.build();
    REQUIRE(built.ok());
    Bytes bytes = std::move(built).value();
    append_ok(log, bytes);
  }
  REQUIRE(log.flush().is_ok());
  return all;
}

// Every record from the log start, every batch checked, offsets increasing.
// A read may stop early (at a segment a pass left empty): read on from the
// next offset, as a fetching client does.
std::vector<Rec> records(const Log& log) {
  std::vector<Rec> out;
  int64_t next = log.log_start_offset();
  while (next < log.log_end_offset()) {
    Bytes blob = read_bytes(log, next, 1 << 30);
    REQUIRE_FALSE(blob.empty());
    protocol::BatchSplitter split(blob);
    protocol::RecordsEntry e;
    protocol::SplitStatus st;
    while ((st = split.next(&e)) == protocol::SplitStatus::kEntry) {
      auto v = protocol::RecordBatchView::parse_and_validate(e.bytes);
      REQUIRE(v.ok());
      auto recs = protocol::decode_records(*v, 1 << 24);
      REQUIRE(recs.ok());
      auto reader = recs->reader();
      protocol::RecordView r;
      while (reader.next(&r)) {
        REQUIRE((out.empty() || r.offset > out.back().offset));
        REQUIRE(r.key);
        Rec rec{r.offset, std::string(reinterpret_cast<const char*>(r.key->data()), r.key->size()), std::nullopt};
        if (r.value) rec.value = std::string(reinterpret_cast<const char*>(r.value->data()), r.value->size());
        out.push_back(std::move(rec));
      }
      REQUIRE(reader.error() == protocol::RecordError::kNone);
      REQUIRE(v->last_offset() >= next);
      next = v->last_offset() + 1;
    }
    REQUIRE(st == protocol::SplitStatus::kEnd);
  }
  return out;
}

std::vector<std::string> swap_leftovers(io::FileSystem& fs) {
  std::vector<std::string> out;
  auto names = fs.list_dir(kDir);
  REQUIRE(names.is_ok());
  for (const auto& n : *names) {
    auto f = parse_segment_file_name(n);
    if (f && (f->suffix == FileSuffix::kCleaned || f->suffix == FileSuffix::kSwap)) out.push_back(n);
  }
  return out;
}

// Written records that the log may have dropped: superseded by a later
// record of their key and below cleaned_up_to.
void check_kept(const std::vector<Rec>& got, const std::vector<Rec>& written, int64_t cleaned_up_to) {
  std::map<std::string, int64_t> latest;
  for (const auto& r : written) latest[r.key] = r.offset;
  std::map<int64_t, const Rec*> by_offset;
  for (const auto& r : got) by_offset[r.offset] = &r;
  for (const auto& r : got) {
    INFO("offset " << r.offset);
    REQUIRE(r.offset < static_cast<int64_t>(written.size()));
    CHECK(r == written[static_cast<size_t>(r.offset)]);  // offsets are 0..n-1, one per record
  }
  for (const auto& w : written) {
    const bool droppable = latest[w.key] > w.offset && w.offset < cleaned_up_to;
    if (!droppable && !by_offset.count(w.offset)) FAIL("record " << w.offset << " (key " << w.key << ") was lost");
  }
}

}  // namespace

TEST_CASE("compaction crash property: a pass killed at any point recovers every kept record and converges",
          "[storage][compaction][crash][property]") {
  CleanerConfig cc;
  cc.dedupe_buffer_bytes = 64 * 1024;
  const SeedRange seeds = property_seeds();
  // Four seeds share a log shape (and its uninterrupted pass, run once) and
  // differ in where the pass dies: that keeps 1,000 seeds cheap.
  uint32_t shape_id = 0;
  Shape shape;
  uint64_t ops = 0, writes = 0, syncs = 0;
  int64_t cleaned_up_to = 0;
  std::vector<Rec> written, want;
  for (uint32_t seed = seeds.first; seed <= seeds.last; ++seed) {
    CAPTURE(seed);
    if (shape_id != (seed + 3) / 4) {
      shape_id = (seed + 3) / 4;
      shape = random_shape(shape_id);
      // The uninterrupted pass: how many calls it makes, and what it leaves.
      MemFs t;
      CrashFs fs(t.fs);
      auto log = open_log(fs, kDir, shape.config);
      written = build(*log, shape);
      const uint64_t ops0 = fs.ops(), w0 = t.fs.write_count(), s0 = t.fs.sync_count();
      auto r = Cleaner(cc).clean(*log, 0);
      REQUIRE(r.is_ok());
      REQUIRE(r->cleaned);  // the shapes always roll, so there is something to clean
      ops = fs.ops() - ops0;
      writes = t.fs.write_count() - w0;
      syncs = t.fs.sync_count() - s0;
      cleaned_up_to = r->cleaned_up_to;
      want = records(*log);
    }
    REQUIRE(ops > 0);
    // The interrupted pass.
    std::mt19937 rng(seed * 7919u + 1);
    const auto keep = [&rng](const std::string&, size_t tail) { return tail ? rng() % (tail + 1) : 0; };
    MemFs t;
    CrashFs fs(t.fs);
    auto log = open_log(fs, kDir, shape.config);
    (void)build(*log, shape);
    const int64_t leo = log->log_end_offset();
    const int mode = static_cast<int>(rng() % 3);
    uint64_t at = 0;
    if (mode == 0) {
      at = 1 + rng() % ops;
      fs.crash_at(at, keep);
    } else if (mode == 1) {
      at = 1 + rng() % std::max<uint64_t>(writes, 1);
      t.fs.fail_nth_write(at, EIO, rng() % 64);
    } else {
      at = 1 + rng() % std::max<uint64_t>(syncs, 1);
      t.fs.fail_nth_sync(at);
    }
    INFO("mode " << mode << " (0: power off at call, 1: write fails, 2: sync fails), at " << at << " of "
                 << (mode == 0 ? ops : mode == 1 ? writes : syncs));
    (void)Cleaner(cc).clean(*log, 0);  // ends early, or copes with the fault
    log.reset();
    if (fs.crashed()) {
      t.fs.power_on();
    } else {
      t.fs.clear_faults();
      t.fs.crash(keep);
    }
    log = open_log(t.fs, kDir, shape.config);
    CHECK(log->log_end_offset() == leo);
    CHECK(swap_leftovers(t.fs).empty());
    check_kept(records(*log), written, cleaned_up_to);
    // A second pass converges on what the uninterrupted pass leaves.
    auto again = Cleaner(cc).clean(*log, 0);
    if (!again) FAIL(again.status().to_string());
    CHECK(records(*log) == want);
    CHECK(log->log_end_offset() == leo);
    // And the next open finds nothing to trip over.
    log.reset();
    log = open_log(t.fs, kDir, shape.config);
    CHECK(records(*log) == want);
  }
}

}  // namespace CK_UNITY_ID
