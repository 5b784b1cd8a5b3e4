// tests/unit/storage/segment_test.cc: one segment's offset lookup against a
// linear scan, reads bounded by position, recovery of index files, and
// readers running while an appender writes.
#include "storage/segment.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <random>
#include <thread>

#include "fs_fixtures.h"
#include "log_test_util.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::test;

namespace {

std::unique_ptr<Segment> new_segment(io::FileSystem& fs, const std::string& dir, int64_t base,
                                     uint32_t interval) {
  SegmentConfig c;
  c.index_interval_bytes = interval;
  auto s = Segment::open(fs, dir, base, c, true);
  if (!s) FAIL(s.status().to_string());
  return std::move(s).value();
}

// Appends n random batches with offsets from the segment's base (gaps of
// `gap` offsets between batches, as compaction leaves); returns their infos.
std::vector<BatchInfo> fill(Segment& s, int n, uint32_t seed, int64_t gap = 0) {
  std::mt19937 rng(seed);
  int64_t next = s.base_offset();
  std::vector<BatchInfo> out;
  for (int i = 0; i < n; ++i) {
    Bytes b = random_batch(rng, 100 + i);
    REQUIRE(ciuickafka::protocol::set_base_offset(b, next));
    auto pos = s.append(b, 0);
    REQUIRE(pos.is_ok());
    auto info = batches_of(b).front();
    out.push_back(info);
    next = info.last + 1 + gap;
  }
  return out;
}

}  // namespace

TEST_CASE("segment: offset lookups agree with a linear scan", "[storage][segment]") {
  MemFs t;
  for (int64_t gap : {0, 5}) {
    for (uint32_t interval : {0u, 100u, 4096u}) {
      auto s = new_segment(t.fs, t.root(), 5000 + gap * 1000 + interval * 10, interval);
      const auto infos = fill(*s, 150, 3 + interval, gap);
      if (interval == 0) CHECK(s->offset_index().entries() == infos.size() - 1);
      const int64_t end = infos.back().last + 1;
      for (int64_t o = s->base_offset() - 1; o <= end; ++o) {
        // Linear: the first batch whose last offset is >= o.
        std::optional<BatchLocation> want;
        uint64_t pos = 0;
        for (const auto& b : infos) {
          if (b.last >= o) {
            want = BatchLocation{pos, b.size, b.base, b.last};
            break;
          }
          pos += b.size;
        }
        auto got = s->find_offset_position(o, s->published_size());
        REQUIRE(got.is_ok());
        REQUIRE(got->has_value() == want.has_value());
        if (want) {
          CHECK((*got)->position == want->position);
          CHECK((*got)->size == want->size);
          CHECK((*got)->base_offset == want->base_offset);
          CHECK((*got)->last_offset == want->last_offset);
        }
      }
    }
  }
}

TEST_CASE("segment: read honours max_position and never skips into a batch", "[storage][segment]") {
  MemFs t;
  auto s = new_segment(t.fs, t.root(), 0, 200);
  const auto infos = fill(*s, 30, 21);
  uint64_t pos = 0;
  for (size_t i = 0; i < infos.size(); ++i) {
    // max_position at the start of batch i: reads of batch i see nothing.
    auto r = s->read(infos[i].base, 1 << 20, pos, INT64_MAX, true);
    REQUIRE(r.is_ok());
    CHECK(!r->has_value());
    if (i > 0) {
      auto all = s->read(0, 1 << 20, pos, INT64_MAX, true);
      REQUIRE(all.is_ok());
      REQUIRE(all->has_value());
      CHECK((*all)->length == pos);
    }
    // min_one_batch off: a budget below the batch returns nothing.
    auto none = s->read(infos[i].base, infos[i].size - 1, s->published_size(), INT64_MAX, false);
    REQUIRE(none.is_ok());
    CHECK(!none->has_value());
    pos += infos[i].size;
  }
}

TEST_CASE("segment: an upper bound at or past the published end costs no scan of the tail", "[storage][segment]") {
  MemFs t;
  auto s = new_segment(t.fs, t.root(), 0, 4096);
  // 200 small uncompressed batches (one record): dozens between index entries.
  std::vector<BatchInfo> infos;
  for (int i = 0; i < 200; ++i) {
    Bytes b = make_batch(1, i, 60, ciuickafka::protocol::Codec::kNone);
    REQUIRE(ciuickafka::protocol::set_base_offset(b, i));
    REQUIRE(s->append(b, 0).is_ok());
    infos.push_back(batches_of(b).front());
  }
  REQUIRE(s->offset_index().entries() >= 2);
  const int64_t end = infos.back().last + 1;
  const uint64_t size = s->published_size();
  // Every start and bound: the slice ends before the first batch whose last
  // offset reaches the bound, as a scan finds it.
  std::vector<uint64_t> position;
  uint64_t pos = 0;
  for (const auto& b : infos) {
    position.push_back(pos);
    pos += b.size;
  }
  for (size_t i = 0; i < infos.size(); ++i) {
    for (int64_t upper : {infos[i].last, infos[infos.size() / 2].last, end - 1, end, end + 100, INT64_MAX}) {
      uint64_t want_end = size;
      for (size_t j = 0; j < infos.size(); ++j)
        if (infos[j].last >= upper) {
          want_end = position[j];
          break;
        }
      auto r = s->read(infos[i].base, 1 << 20, size, upper, true);
      REQUIRE(r.is_ok());
      if (want_end <= position[i]) {
        CHECK(!r->has_value());
        continue;
      }
      REQUIRE(r->has_value());
      CHECK((*r)->position == position[i]);
      CHECK((*r)->position + (*r)->length == want_end);
    }
  }
  // From the first batch after the last index entry: bounded at the end (a
  // caught-up reader's HW), the read costs what an unbounded one does; a
  // bound inside the tail must still be found by reading headers.
  const OffsetPosition last_entry = s->offset_index().entry(s->offset_index().entries() - 1);
  size_t k = 0;
  while (k < infos.size() && position[k] <= last_entry.position) ++k;
  REQUIRE(k + 3 < infos.size());
  auto reads_of = [&](int64_t upper) {
    const uint64_t before = t.fs.read_count();
    auto r = s->read(infos[k].base, 1 << 20, size, upper, true);
    REQUIRE(r.is_ok());
    REQUIRE(r->has_value());
    return t.fs.read_count() - before;
  };
  const uint64_t unbounded = reads_of(INT64_MAX);
  CHECK(reads_of(end) == unbounded);
  CHECK(reads_of(end + 100) == unbounded);
  CHECK(reads_of(infos.back().last) > unbounded);
  // After a truncation the bound is found by a scan again, and still right.
  REQUIRE(s->truncate_to(infos[k + 1].base, 0).is_ok());
  auto r = s->read(infos[k].base, 1 << 20, s->published_size(), infos[k + 1].base, true);
  REQUIRE(r.is_ok());
  REQUIRE(r->has_value());
  CHECK((*r)->length == infos[k].size);
}

TEMPLATE_TEST_CASE("segment: recover rebuilds missing index entries", "[storage][segment]", PosixFs, MemFs) {
  TestType t;
  std::vector<OffsetPosition> oi;
  std::vector<TimestampOffset> ti;
  {
    auto s = new_segment(t.fs, t.root(), 100, 300);
    fill(*s, 60, 8);
    REQUIRE(s->offset_index().entries() > 5);
    for (size_t i = 0; i < s->offset_index().entries(); ++i) oi.push_back(s->offset_index().entry(i));
    for (size_t i = 0; i < s->time_index().entries(); ++i) ti.push_back(s->time_index().entry(i));
    REQUIRE(s->close().is_ok());  // indexes never flushed: their files are empty
  }
  SegmentConfig c;
  c.index_interval_bytes = 300;
  auto s = Segment::open(t.fs, t.root(), 100, c, false);
  REQUIRE(s.is_ok());
  CHECK((*s)->offset_index().entries() == 0);
  auto cut = (*s)->recover();
  REQUIRE(cut.is_ok());
  CHECK(*cut == 0);
  REQUIRE((*s)->offset_index().entries() == oi.size());
  for (size_t i = 0; i < oi.size(); ++i) CHECK((*s)->offset_index().entry(i) == oi[i]);
  REQUIRE((*s)->time_index().entries() == ti.size());
  for (size_t i = 0; i < ti.size(); ++i) CHECK((*s)->time_index().entry(i) == ti[i]);
}

TEST_CASE("log: readers running during appends see only whole, published batches",
          "[storage][log][threads]") {
  MemFs t;
  LogConfig c;
  c.segment.segment_bytes = 20'000;
  c.segment.index_interval_bytes = 500;
  auto log = open_log(t.fs, "/t/p-0", c);
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::thread reader([&] {
    std::mt19937 rng(1);
    while (!done.load()) {
      const int64_t end = log->log_end_offset();
      const int64_t from = end == 0 ? 0 : std::uniform_int_distribution<int64_t>(0, end - 1)(rng);
      auto r = log->read(from, 8000);
      if (!r) {
        failures++;
        continue;
      }
      auto bytes = read_slices(*r);
      if (!bytes) {
        failures++;
        continue;
      }
      // Whole valid batches, contiguous, starting at the one holding `from`.
      ciuickafka::protocol::BatchSplitter split(*bytes);
      ciuickafka::protocol::RecordsEntry e;
      int64_t expect = -1;
      ciuickafka::protocol::SplitStatus st;
      while ((st = split.next(&e)) == ciuickafka::protocol::SplitStatus::kEntry) {
        auto v = ciuickafka::protocol::RecordBatchView::parse_and_validate(e.bytes);
        if (!v || (expect >= 0 && v->base_offset() != expect) ||
            (expect < 0 && !(v->base_offset() <= from && v->last_offset() >= from)))
          failures++;
        if (!v) break;
        expect = v->last_offset() + 1;
      }
      if (st != ciuickafka::protocol::SplitStatus::kEnd) failures++;
    }
  });
  std::mt19937 rng(2);
  for (int i = 0; i < 400; ++i) {
    Bytes b = random_batch(rng, i);
    append_ok(*log, b);
  }
  done = true;
  reader.join();
  CHECK(failures.load() == 0);
  CHECK(log->segments()->size() > 3);
}
