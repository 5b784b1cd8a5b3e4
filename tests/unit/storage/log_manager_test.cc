// tests/unit/storage/log_manager_test.cc: LogManager across several log
// dirs: create/get/remove/reopen, checkpoints, the clean-shutdown marker,
// crash recovery from the recovery point, and the log start offset kept
// across restarts.
#include "storage/log_manager.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <future>
#include <random>

#include "crash_fs.h"
#include "fs_fixtures.h"
#include "log_test_util.h"
#include "storage/checkpoint.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::test;

namespace {

const std::vector<std::string> kDirs = {"/t/a", "/t/b"};

ciuickafka::protocol::Uuid id_of(uint8_t n) {
  ciuickafka::protocol::Uuid u;
  u.bytes.fill(n);
  return u;
}

LogManagerConfig small_config() {
  LogManagerConfig c;
  c.default_config.segment.segment_bytes = 4096;
  c.default_config.segment.index_interval_bytes = 512;
  c.default_config.retention_ms = -1;
  return c;
}

std::unique_ptr<LogManager> open_manager(io::FileSystem& fs, const std::vector<std::string>& dirs = kDirs,
                                         int64_t now = 0) {
  auto m = LogManager::open(fs, dirs, small_config(), now);
  if (!m) FAIL(m.status().to_string());
  return std::move(m).value();
}

std::shared_ptr<Log> create(LogManager& m, const std::string& topic, int32_t p, uint8_t id = 1) {
  auto log = m.create({topic, p}, id_of(id), small_config().default_config);
  if (!log) FAIL(log.status().to_string());
  return *log;
}

Status wait_sync(LogManager& m, const std::shared_ptr<Log>& log, int64_t offset) {
  std::promise<Status> p;
  m.sync_to(log, offset, [&](Status s) { p.set_value(s); });
  return p.get_future().get();
}

}  // namespace

TEMPLATE_TEST_CASE("log manager: create spreads partitions over log dirs and reopen finds them",
                   "[storage][manager]", PosixFs, MemFs) {
  TestType t;
  const std::vector<std::string> dirs = {t.root() + "/a", t.root() + "/b"};
  Bytes all;
  {
    auto m = open_manager(t.fs, dirs);
    for (int p = 0; p < 4; ++p) create(*m, "orders", p, 9);
    size_t in_a = 0;
    for (const auto& [tp, log] : m->all()) in_a += log->dir().rfind(dirs[0], 0) == 0;
    CHECK(in_a == 2);
    CHECK(m->get({"orders", 4}) == nullptr);
    // Idempotent with the same topic id, refused with another.
    CHECK(*m->create({"orders", 0}, id_of(9), LogConfig{}) == m->get({"orders", 0}));
    CHECK(m->create({"orders", 0}, id_of(8), LogConfig{}).status().code() == StatusCode::kInvalidArgument);
    auto log = m->get({"orders", 2});
    for (int i = 0; i < 30; ++i) {
      Bytes b = make_batch(3, 100 + i, 100);
      append_ok(*log, b);
      all.insert(all.end(), b.begin(), b.end());
    }
    REQUIRE(m->shutdown().is_ok());
    for (const auto& d : dirs) CHECK(*t.fs.file_type(d + "/.kafka_cleanshutdown") == io::FileType::kFile);
  }
  auto m = open_manager(t.fs, dirs);
  CHECK(m->all().size() == 4);
  CHECK(m->open_stats().dirs_clean == 2);
  CHECK(m->open_stats().segments_recovered == 0);  // the marker skipped every scan
  for (const auto& d : dirs) CHECK(*t.fs.file_type(d + "/.kafka_cleanshutdown") == io::FileType::kMissing);
  auto log = m->get({"orders", 2});
  REQUIRE(log);
  CHECK(log->log_end_offset() == 90);
  CHECK(read_bytes(*log, 0, 1 << 30) == all);
  CHECK(*m->topic_id({"orders", 2}) == id_of(9));
  Bytes b = make_batch(1, 1, 1);
  CHECK(append_ok(*log, b).base_offset == 90);
}

TEST_CASE("log manager: remove renames to -delete and tick deletes it after the delay", "[storage][manager]") {
  MemFs t;
  REQUIRE(t.fs.create_dir("/t/a").is_ok());
  REQUIRE(t.fs.create_dir("/t/a/stray-dir-x").is_ok());  // not a partition: ignored
  REQUIRE(t.fs.create_dir("/t/a/old-0.abc-delete").is_ok());
  REQUIRE(io::write_file_atomically(t.fs, "/t/a/old-0.abc-delete/x", std::vector<uint8_t>{1}).is_ok());
  auto m = open_manager(t.fs, {"/t/a"}, 1000);
  CHECK(m->open_stats().delete_dirs_removed == 1);
  CHECK(*t.fs.file_type("/t/a/old-0.abc-delete") == io::FileType::kMissing);
  auto log = create(*m, "gone", 0);
  Bytes b = make_batch(2, 1, 10);
  append_ok(*log, b);
  auto slices = log->read(0, 1 << 20);
  REQUIRE(slices.is_ok());
  REQUIRE(m->remove({"gone", 0}).is_ok());
  CHECK(m->get({"gone", 0}) == nullptr);
  CHECK(m->remove({"gone", 0}).code() == StatusCode::kNotFound);
  CHECK(*t.fs.file_type("/t/a/gone-0") == io::FileType::kMissing);
  std::string renamed;
  const auto names = t.fs.list_dir("/t/a");
  REQUIRE(names.is_ok());
  for (const auto& n : *names)
    if (n.rfind("gone-0.", 0) == 0) renamed = n;
  REQUIRE(!renamed.empty());
  CHECK(renamed.size() > 7);
  CHECK(renamed.substr(renamed.size() - 7) == "-delete");
  CHECK(read_slices(*slices)->size() == b.size());  // a reader's slices still read
  CHECK(!log->append(b, 1, 0).is_ok());            // appends stop
  REQUIRE(m->tick(2000).is_ok());                  // starts the delay clock
  CHECK(*t.fs.file_type("/t/a/" + renamed) == io::FileType::kDirectory);
  REQUIRE(m->tick(2000 + 60'000).is_ok());
  CHECK(*t.fs.file_type("/t/a/" + renamed) == io::FileType::kMissing);
  REQUIRE(m->shutdown().is_ok());
  auto again = open_manager(t.fs, {"/t/a"});
  CHECK(again->all().empty());
}

TEST_CASE("log manager: after a crash, every synced batch survives and the torn tail is cut",
          "[storage][manager][recovery]") {
  // 1,000 seeds (crash_fs.h: CK_PROPERTY_SEEDS raises it, CK_PROPERTY_SEED replays one).
  const SeedRange seeds = property_seeds();
  for (uint32_t seed = seeds.first; seed <= seeds.last; ++seed) {
    CAPTURE(seed);
    MemFs t;
    std::mt19937 rng(seed);
    // Small batches, few compressed: the property is about where the tail
    // tears, and cheap seeds let the unit suite run 1,000 of them.
    Bytes written;  // as stored: append rewrites offsets into the batch
    size_t synced = 0;
    int64_t synced_end = 0;
    {
      auto m = open_manager(t.fs);
      auto log = create(*m, "t", 0);
      const int n = std::uniform_int_distribution<int>(3, 25)(rng);
      for (int i = 0; i < n; ++i) {
        const auto codec = rng() % 4 == 0 ? ciuickafka::protocol::Codec::kLz4 : ciuickafka::protocol::Codec::kNone;
        Bytes b = make_batch(std::uniform_int_distribution<int>(1, 6)(rng), 1000 + i, rng() % 300, codec);
        auto r = append_ok(*log, b);
        written.insert(written.end(), b.begin(), b.end());
        if (rng() % 3 == 0) {
          REQUIRE(wait_sync(*m, log, r.last_offset + 1).is_ok());
          synced = written.size();
          synced_end = r.last_offset + 1;
        }
      }
      if (rng() % 2) REQUIRE(m->checkpoint().is_ok());
      // Power loss: a random part of each unsynced tail survives.
      t.fs.crash([&](const std::string&, size_t tail) { return tail ? rng() % (tail + 1) : 0; });
    }
    auto m = open_manager(t.fs);
    auto log = m->get({"t", 0});
    REQUIRE(log);
    CHECK(m->open_stats().dirs_clean == 0);
    CHECK(log->log_end_offset() >= synced_end);
    Bytes now = read_bytes(*log, 0, 1 << 30);
    REQUIRE(now.size() >= synced);
    REQUIRE(now.size() <= written.size());
    CHECK(std::equal(now.begin(), now.end(), written.begin()));  // the synced prefix and more, never other bytes
    // Whatever survived is whole batches with contiguous offsets, and appends continue.
    int64_t next = 0;
    for (const auto& b : batches_of(now)) {
      CHECK(b.base == next);
      next = b.last + 1;
    }
    CHECK(next == log->log_end_offset());
    Bytes more = make_batch(1, 1, 1);
    CHECK(append_ok(*log, more).base_offset == next);
  }
}

TEST_CASE("log manager: the recovery-point checkpoint limits the scan - the log start offset persists",
          "[storage][manager][recovery]") {
  MemFs t;
  int64_t start = 0;
  size_t segments = 0;
  {
    auto m = open_manager(t.fs);
    auto log = create(*m, "t", 0);
    for (int i = 0; i < 60; ++i) {
      Bytes b = make_batch(4, 1000 + i, 200);
      append_ok(*log, b);
    }
    segments = log->segment_count();
    REQUIRE(segments > 4);
    start = (*log->segments())[2]->base_offset() + 1;
    REQUIRE(log->advance_log_start_offset(start).is_ok());
    // Rolls finish on group commit's thread (Log::set_roll_sync): a sync of
    // everything written waits for them, so the checkpoint below holds the
    // recovery point past every rolled segment.
    REQUIRE(wait_sync(*m, log, log->log_end_offset()).is_ok());
    REQUIRE(m->checkpoint().is_ok());
    auto cp = read_offset_checkpoint(t.fs, log->dir().substr(0, log->dir().rfind('/')) + "/log-start-offset-checkpoint");
    REQUIRE(cp.is_ok());
    REQUIRE(cp->size() == 1);
    CHECK((*cp)[0].offset == start);
    // Crash without a clean shutdown (everything is synced).
    t.fs.crash();
  }
  auto m = open_manager(t.fs);
  auto log = m->get({"t", 0});
  REQUIRE(log);
  CHECK(log->log_start_offset() == start);
  CHECK(log->read(start - 1, 100).status().code() == StatusCode::kOffsetOutOfRange);
  // Only the segment holding the recovery point (the active one) was scanned.
  CHECK(m->open_stats().segments_recovered == 1);
  CHECK(log->segment_count() == segments - 2);
  // Without any checkpoint, every segment is scanned.
  for (const auto& d : kDirs) {
    (void)t.fs.remove_file(d + "/recovery-point-offset-checkpoint");
  }
  m.reset();
  auto m2 = open_manager(t.fs);
  CHECK(m2->open_stats().segments_recovered == m2->get({"t", 0})->segment_count());
}

TEST_CASE("log manager: tick applies retention and writes checkpoints on their intervals",
          "[storage][manager][retention]") {
  MemFs t;
  LogManagerConfig cfg = small_config();
  cfg.retention_check_interval_ms = 1000;
  cfg.checkpoint_interval_ms = 5000;
  auto opened = LogManager::open(t.fs, {"/t/a"}, cfg, 0);
  REQUIRE(opened.is_ok());
  auto m = std::move(opened).value();
  LogConfig lc = cfg.default_config;
  lc.retention_bytes = 8000;
  auto log = *m->create({"r", 0}, id_of(1), lc);
  for (int i = 0; i < 60; ++i) {
    Bytes b = make_batch(4, 1000 + i, 200);
    append_ok(*log, b);
  }
  const size_t before = log->segment_count();
  REQUIRE(m->tick(500).is_ok());
  CHECK(log->segment_count() == before);
  REQUIRE(m->tick(1000).is_ok());
  CHECK(log->segment_count() < before);
  CHECK(log->size_bytes() >= 8000);
  CHECK(*t.fs.file_type("/t/a/recovery-point-offset-checkpoint") == io::FileType::kMissing);
  REQUIRE(m->tick(5000).is_ok());
  auto cp = read_offset_checkpoint(t.fs, "/t/a/log-start-offset-checkpoint");
  REQUIRE(cp.is_ok());
  REQUIRE(cp->size() == 1);
  CHECK((*cp)[0].offset == log->log_start_offset());
  CHECK(log->log_start_offset() > 0);
}
