// tests/unit/storage/index_cache_test.cc: the byte budget for inactive
// segments' indexes (storage/index_cache.h): the LRU itself, the bound on
// what a log's segments hold, identical answers at any budget, reloads from
// missing or corrupt files, and readers racing eviction and rolls.
#include "storage/index_cache.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fs_fixtures.h"
#include "log_test_util.h"
#include "storage/file_names.h"
#include "storage/segment.h"

namespace ciuickafka::storage::test {
namespace {

constexpr size_t kUnlimited = std::numeric_limits<size_t>::max();

std::shared_ptr<const SegmentIndexes> indexes_with(io::FileSystem& fs, size_t entries) {
  auto oi = OffsetIndex::in_memory(fs, "/x.index", 0);
  auto ti = TimeIndex::in_memory(fs, "/x.timeindex", 0);
  for (size_t i = 0; i < entries; ++i) {
    REQUIRE(oi.append(static_cast<int64_t>(i + 1), static_cast<uint32_t>(100 * (i + 1))).is_ok());
    REQUIRE(ti.maybe_append(static_cast<int64_t>(1000 + i), static_cast<int64_t>(i + 1)).is_ok());
  }
  return std::make_shared<const SegmentIndexes>(SegmentIndexes{std::move(oi), std::move(ti)});
}

// A log of many small segments: each batch gets an index entry.
LogConfig small_segments(IndexCache* cache, FdCache* fds = nullptr) {
  LogConfig cfg;
  cfg.segment.segment_bytes = 1500;
  cfg.segment.index_interval_bytes = 100;
  cfg.segment.index_cache = cache;
  cfg.segment.fd_cache = fds;
  cfg.retention_ms = -1;
  return cfg;
}

// Appends the same batches to every log: 2 records each, timestamps
// 1000 + 10 * i (and + 1).
void fill(const std::vector<Log*>& logs, int batches) {
  for (int i = 0; i < batches; ++i)
    for (Log* log : logs) {
      Bytes b = make_batch(2, 1000 + 10 * i, 40);
      append_ok(*log, b);
    }
}

// What the budget promises: the cache holds at most its capacity, and no
// segment but the active one holds index entries of its own.
void check_bound(const Log& log, const IndexCache& cache) {
  auto segs = log.segments();
  for (size_t i = 0; i + 1 < segs->size(); ++i) {
    CHECK((*segs)[i]->indexes_released());
    CHECK((*segs)[i]->owned_index_bytes() == 0);
  }
  CHECK_FALSE(segs->back()->indexes_released());
  CHECK(cache.stats().bytes <= cache.capacity());
}

// Every lookup the indexes serve, answered by log against reference.
void check_same_answers(const Log& log, const Log& reference, const IndexCache& cache) {
  const int64_t leo = reference.log_end_offset();
  REQUIRE(log.log_end_offset() == leo);
  for (int64_t o = 0; o < leo; ++o) {
    CHECK(read_bytes(log, o, 700) == read_bytes(reference, o, 700));
    CHECK(read_bytes(log, o, 1) == read_bytes(reference, o, 1));  // one batch (last_boundary not used)
    CHECK(cache.stats().bytes <= cache.capacity());
  }
  const int64_t last_ts = 1000 + 10 * (leo / 2) + 20;
  for (int64_t t = 990; t <= last_ts; t += 3) {
    auto a = log.offset_for_timestamp(t), b = reference.offset_for_timestamp(t);
    REQUIRE(a.is_ok());
    REQUIRE(b.is_ok());
    CHECK(*a == *b);
  }
  auto segs = log.segments(), ref = reference.segments();
  REQUIRE(segs->size() == ref->size());
  for (size_t i = 0; i < segs->size(); ++i) {
    const Segment& s = *(*segs)[i];
    const Segment& r = *(*ref)[i];
    for (int64_t o = s.base_offset(); o < (i + 1 < segs->size() ? (*segs)[i + 1]->base_offset() : leo); ++o) {
      auto a = s.find_offset_position(o, s.published_size());
      auto b = r.find_offset_position(o, r.published_size());
      REQUIRE(a.is_ok());
      REQUIRE(b.is_ok());
      REQUIRE(a->has_value());
      REQUIRE(b->has_value());
      CHECK((*a)->position == (*b)->position);
      CHECK((*a)->last_offset == (*b)->last_offset);
    }
    const OffsetIndex oi = s.offset_index(), roi = r.offset_index();
    REQUIRE(oi.entries() == roi.entries());
    for (size_t n = 0; n < oi.entries(); ++n) CHECK(oi.entry(n) == roi.entry(n));
    const TimeIndex ti = s.time_index(), rti = r.time_index();
    REQUIRE(ti.entries() == rti.entries());
    for (size_t n = 0; n < ti.entries(); ++n) CHECK(ti.entry(n) == rti.entry(n));
  }
}

std::string index_file(const Log& log, const Segment& s, SegmentFileKind kind) {
  return log.dir() + "/" + segment_file_name(s.base_offset(), kind);
}

void overwrite(io::FileSystem& fs, const std::string& path, uint64_t at, std::vector<uint8_t> bytes) {
  auto f = fs.open(path, io::OpenMode::kCreate);
  REQUIRE(f.is_ok());
  REQUIRE((*f)->write_at(at, bytes).is_ok());
  REQUIRE((*f)->close().is_ok());
}

}  // namespace

TEST_CASE("IndexCache evicts the least recently used indexes past its byte capacity") {
  MemFs env;
  auto one = indexes_with(env.fs, 10);
  const size_t cost = IndexCache::cost(*one);
  IndexCache cache(2 * cost);
  const uint64_t a = cache.new_key(), b = cache.new_key(), c = cache.new_key();
  cache.insert(a, one);
  cache.insert(b, indexes_with(env.fs, 10));
  CHECK(cache.stats().bytes == 2 * cost);
  REQUIRE(cache.lookup(a) != nullptr);  // a is the most recent: b goes next
  std::weak_ptr<const SegmentIndexes> b_weak = cache.lookup(b);
  cache.lookup(a);
  cache.insert(c, indexes_with(env.fs, 10));
  CHECK(cache.contains(a));
  CHECK_FALSE(cache.contains(b));
  CHECK(cache.contains(c));
  CHECK(b_weak.expired());  // nobody held b: its memory is gone
  auto s = cache.stats();
  CHECK(s.held == 2);
  CHECK(s.bytes == 2 * cost);
  CHECK(s.evictions == 1);
  CHECK(s.misses == 3);
}

TEST_CASE("IndexCache eviction keeps indexes alive while a reader holds them - capacity 0 holds none") {
  MemFs env;
  IndexCache cache(0);
  const uint64_t a = cache.new_key();
  auto held = cache.insert(a, indexes_with(env.fs, 5));
  REQUIRE(held != nullptr);
  CHECK_FALSE(cache.contains(a));
  CHECK(cache.stats().bytes == 0);
  CHECK(held->offset.entries() == 5);
  CHECK(held->offset.lookup(3) == OffsetPosition{3, 300});
  // set_capacity, erase, and a lost insert race.
  cache.set_capacity(kUnlimited);
  auto first = cache.insert(a, indexes_with(env.fs, 5));
  auto second = cache.insert(a, indexes_with(env.fs, 7));
  CHECK(second == first);  // the first insert wins
  CHECK(cache.stats().held == 1);
  CHECK(cache.erase(a));
  CHECK_FALSE(cache.erase(a));
  CHECK(cache.stats().bytes == 0);
  cache.insert(a, indexes_with(env.fs, 5));
  cache.set_capacity(1);
  CHECK(cache.stats().held == 0);
}

TEMPLATE_TEST_CASE("Inactive segments' indexes stay within the budget and answer as unbounded ones", "",
                   PosixFs, MemFs) {
  TestType env;
  const size_t budget = GENERATE(size_t{0}, size_t{600}, size_t{3000});
  CAPTURE(budget);
  IndexCache small(budget), big(kUnlimited);
  REQUIRE(env.fs.create_dir(env.root() + "/small").is_ok());
  REQUIRE(env.fs.create_dir(env.root() + "/big").is_ok());
  auto log = open_log(env.fs, env.root() + "/small", small_segments(&small));
  auto ref = open_log(env.fs, env.root() + "/big", small_segments(&big));
  for (int round = 0; round < 4; ++round) {
    fill({log.get(), ref.get()}, 30);
    check_bound(*log, small);
  }
  REQUIRE(log->segment_count() > 10);
  check_same_answers(*log, *ref, small);
  check_bound(*log, small);
  CHECK(small.stats().rebuilds == 0);  // every reload found the files intact
  // The unbounded cache held every inactive segment; the small one did not.
  CHECK(big.stats().held == ref->segment_count() - 1);
  CHECK(small.stats().bytes <= budget);
  CHECK(small.stats().evictions > 0);

  SECTION("after a reopen (clean shutdown): released again, same answers") {
    REQUIRE(log->close().is_ok());
    log.reset();
    LogOpenOptions clean;
    clean.clean_shutdown = true;
    auto again = Log::open(env.fs, env.root() + "/small", small_segments(&small), 0, clean);
    REQUIRE(again.is_ok());
    check_bound(**again, small);
    check_same_answers(**again, *ref, small);
  }
  SECTION("after a reopen with recovery of every segment") {
    REQUIRE(log->close().is_ok());
    log.reset();
    auto again = Log::open(env.fs, env.root() + "/small", small_segments(&small), 0, LogOpenOptions{});
    REQUIRE(again.is_ok());
    CHECK((*again)->recovered_segments() > 10);
    check_bound(**again, small);
    check_same_answers(**again, *ref, small);
  }
}

TEMPLATE_TEST_CASE("A reload from missing, corrupt or foreign index files rebuilds from the log", "", PosixFs,
                   MemFs) {
  TestType env;
  IndexCache none(0), big(kUnlimited);
  REQUIRE(env.fs.create_dir(env.root() + "/small").is_ok());
  REQUIRE(env.fs.create_dir(env.root() + "/big").is_ok());
  auto log = open_log(env.fs, env.root() + "/small", small_segments(&none));
  auto ref = open_log(env.fs, env.root() + "/big", small_segments(&big));
  fill({log.get(), ref.get()}, 60);
  auto segs = log->segments();
  REQUIRE(segs->size() > 6);
  const Segment& s1 = *(*segs)[1];
  const Segment& s2 = *(*segs)[2];
  const Segment& s3 = *(*segs)[3];
  const Segment& s4 = *(*segs)[4];
  REQUIRE(s1.offset_index().entries() > 2);
  // s1: both files removed.
  REQUIRE(env.fs.remove_file(index_file(*log, s1, SegmentFileKind::kIndex)).is_ok());
  REQUIRE(env.fs.remove_file(index_file(*log, s1, SegmentFileKind::kTimeIndex)).is_ok());
  // s2: a position in the offset index points elsewhere; still sorted, so
  // only the fingerprint can tell.
  {
    auto ix = s2.offset_index();
    const OffsetPosition last = ix.entry(ix.entries() - 1);
    overwrite(env.fs, index_file(*log, s2, SegmentFileKind::kIndex), (ix.entries() - 1) * 8 + 4,
              {0x00, 0x00, 0x7f, 0xff});
    REQUIRE(last.position < 0x7fff);
  }
  // s3: garbage over the time index's first entries.
  overwrite(env.fs, index_file(*log, s3, SegmentFileKind::kTimeIndex), 5,
            {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  // s4: a shorter index (sane, only fewer entries, as an older copy of the
  // file would be): not what was unloaded, so it is rebuilt, not trusted.
  {
    const std::string path = index_file(*log, s4, SegmentFileKind::kIndex);
    auto bytes = io::read_file(env.fs, path);
    REQUIRE(bytes.is_ok());
    REQUIRE(bytes->size() >= 16);
    bytes->resize(bytes->size() / 16 * 8);
    REQUIRE(env.fs.remove_file(path).is_ok());
    overwrite(env.fs, path, 0, *bytes);
  }
  const uint64_t rebuilds_before = none.stats().rebuilds;
  check_same_answers(*log, *ref, none);
  CHECK(none.stats().rebuilds > rebuilds_before);
  CHECK(none.stats().bytes == 0);
}

TEST_CASE("A reload whose log is gone too is an error, not a crash or a wrong position") {
  PosixFs env;
  IndexCache none(0);
  FdCache fds(1);  // the .log is reopened on use, so its removal is seen
  auto log = open_log(env.fs, env.root(), small_segments(&none, &fds));
  fill({log.get()}, 40);
  auto segs = log->segments();
  REQUIRE(segs->size() > 3);
  const Segment& s = *(*segs)[1];
  REQUIRE(env.fs.remove_file(index_file(*log, s, SegmentFileKind::kIndex)).is_ok());
  REQUIRE(env.fs.remove_file(index_file(*log, s, SegmentFileKind::kLog)).is_ok());
  (void)log->read(0, 100);  // makes another segment's .log the one cached
  auto r = s.find_offset_position(s.base_offset() + 1, s.published_size());
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kNotFound);
  auto read = log->read(s.base_offset() + 1, 1000);
  CHECK_FALSE(read.is_ok());
  // Other segments still answer.
  CHECK(read_bytes(*log, (*segs)[2]->base_offset(), 1).size() > 0);
}

TEMPLATE_TEST_CASE("Readers racing eviction and rolls see the same answers", "", PosixFs, MemFs) {
  TestType env;
  IndexCache cache(800);  // room for about two segments
  auto log = open_log(env.fs, env.root(), small_segments(&cache));
  fill({log.get()}, 150);
  // The answers before any concurrency; appends past them change none.
  const int64_t leo = log->log_end_offset();
  std::vector<Bytes> expected(static_cast<size_t>(leo));
  for (int64_t o = 0; o < leo; ++o) expected[static_cast<size_t>(o)] = read_bytes(*log, o, 500, leo);
  std::map<int64_t, TimestampOffset> by_time;
  // Targets up to the largest timestamp (2491): the appends below add
  // later ones, which would change the answer past it.
  for (int64_t t = 995; t <= 2491; t += 7) {
    auto r = log->offset_for_timestamp(t);
    REQUIRE(r.is_ok());
    by_time[t] = *r;
  }
  std::atomic<int> mismatches{0}, errors{0};
  std::atomic<bool> writing{true};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < 400; ++i) {
        const int64_t o = std::uniform_int_distribution<int64_t>(0, leo - 1)(rng);
        auto r = log->read(o, 500, leo);
        if (!r) {
          ++errors;
          continue;
        }
        auto b = read_slices(*r);
        if (!b || *b != expected[static_cast<size_t>(o)]) ++mismatches;
        if (i % 8 == 0) {
          auto it = by_time.lower_bound(std::uniform_int_distribution<int64_t>(995, 2490)(rng));
          if (it == by_time.end()) continue;
          auto f = log->offset_for_timestamp(it->first);
          if (!f)
            ++errors;
          else if (*f != it->second)
            ++mismatches;
        }
      }
    });
  }
  // The writer rolls segments meanwhile (each roll releases indexes into the
  // cache), and the budget changes under the readers.
  threads.emplace_back([&] {
    for (int i = 0; i < 60; ++i) {
      Bytes b = make_batch(2, 3000 + 10 * i, 40);
      auto r = log->append(b, 7, 0);
      if (!r) ++errors;
      cache.set_capacity(i % 3 == 0 ? 0 : 800);
    }
    writing = false;
  });
  for (auto& th : threads) th.join();
  CHECK_FALSE(writing.load());
  CHECK(errors.load() == 0);
  CHECK(mismatches.load() == 0);
  cache.set_capacity(800);
  check_bound(*log, cache);
  CHECK(cache.stats().evictions > 0);
  CHECK(cache.stats().rebuilds == 0);
}

}  // namespace ciuickafka::storage::test
