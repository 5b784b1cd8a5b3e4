// tests/unit/storage/compaction_manager_test.cc: the LogManager's cleaner
// threads: passes started by tick() after log.cleaner.backoff.ms, the
// cleaner checkpoint, a failed pass reported once, several threads sharing a
// pass and their number changed live (log.cleaner.threads), and the I/O
// throttle across passes and at shutdown.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "compaction_test_util.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::test;
using namespace ciuickafka::storage::test::compaction;
namespace protocol = ciuickafka::protocol;

// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

TEST_CASE("compaction: the LogManager's cleaner thread cleans compacted logs and checkpoints its progress",
          "[storage][compaction][manager]") {
  MemFs t;
  LogManagerConfig mc;
  mc.cleaner_enable = true;
  mc.cleaner_backoff_ms = 1000;
  auto m = LogManager::open(t.fs, {"/t/d1"}, mc, 0);
  REQUIRE(m.is_ok());
  auto& mgr = **m;
  protocol::Uuid id{};
  id.bytes[0] = 1;
  auto compacted = mgr.create({"compacted", 0}, id, compact_config(), 0);
  REQUIRE(compacted.is_ok());
  LogConfig plain = compact_config();
  plain.cleanup_compact = false;
  plain.cleanup_delete = true;
  plain.retention_ms = -1;
  protocol::Uuid id2{};
  id2.bytes[0] = 2;
  auto deleted = mgr.create({"plain", 0}, id2, plain, 0);
  REQUIRE(deleted.is_ok());
  Model model, model2;
  fill(**compacted, model, 10, 30);
  fill(**deleted, model2, 10, 30);
  REQUIRE(sync_all(mgr, *compacted).is_ok());
  REQUIRE(sync_all(mgr, *deleted).is_ok());
  const uint64_t plain_size = (*deleted)->size_bytes();
  const uint64_t before = (*compacted)->size_bytes();
  REQUIRE(mgr.tick(500).is_ok());  // before the backoff: nothing
  CHECK(mgr.cleaner_stats().passes == 0);
  REQUIRE(mgr.tick(1000).is_ok());
  // The pass runs on the cleaner thread; wait (bounded) for it.
  for (int i = 0; i < 500 && mgr.cleaner_stats().passes == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(mgr.cleaner_stats().passes == 1);
  CHECK(mgr.cleaner_stats().logs_cleaned == 1);
  CHECK(mgr.cleaner_stats().errors == 0);
  CHECK((*compacted)->size_bytes() < before);
  CHECK((*deleted)->size_bytes() == plain_size);
  check_latest(**compacted, model, (*compacted)->first_dirty_offset());
  const int64_t dirty = (*compacted)->first_dirty_offset();
  CHECK(dirty > 0);
  // A pass that fails (an fdatasync of the cleaned segment) changes nothing,
  // and the next tick reports it, once.
  fill(**compacted, model, 10, 30);
  REQUIRE(sync_all(mgr, *compacted).is_ok());
  t.fs.fail_nth_sync(1);
  REQUIRE(mgr.tick(2000).is_ok());
  for (int i = 0; i < 500 && mgr.cleaner_stats().passes < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(mgr.cleaner_stats().passes == 2);
  CHECK(mgr.cleaner_stats().errors == 1);
  CHECK_FALSE(mgr.tick(2100).is_ok());
  CHECK(mgr.tick(2200).is_ok());
  CHECK((*compacted)->first_dirty_offset() == dirty);
  CHECK(leftovers(t.fs, (*compacted)->dir()).size() % 3 == 0);  // only .deleted triples, no .cleaned
  for (const auto& n : leftovers(t.fs, (*compacted)->dir())) CHECK(n.find(".deleted") != std::string::npos);
  check_latest(**compacted, model, dirty);
  REQUIRE(mgr.shutdown().is_ok());
  compacted->reset();
  deleted->reset();
  m->reset();
  // The cleaner checkpoint brings the first dirty offset back.
  auto again = LogManager::open(t.fs, {"/t/d1"}, mc, 0);
  REQUIRE(again.is_ok());
  auto log = (*again)->get({"compacted", 0});
  REQUIRE(log);
  CHECK(log->first_dirty_offset() == dirty);
  check_latest(*log, model, dirty);
}

TEST_CASE("compaction: the LogManager's cleaner threads share a pass and their number changes live",
          "[storage][compaction][manager]") {
  MemFs t;
  LogManagerConfig mc;
  mc.cleaner_enable = true;
  mc.cleaner_backoff_ms = 1000;
  mc.cleaner.threads = 3;
  // Slow enough that a log takes a while: the threads overlap.
  mc.cleaner.io_max_bytes_per_second = 200'000;
  auto m = LogManager::open(t.fs, {"/t/d1"}, mc, 0);
  REQUIRE(m.is_ok());
  auto& mgr = **m;
  CHECK(mgr.cleaner_stats().threads == 3);
  constexpr int kLogs = 6;
  std::vector<std::shared_ptr<Log>> logs;
  std::vector<Model> models(kLogs);
  for (int i = 0; i < kLogs; ++i) {
    protocol::Uuid id{};
    id.bytes[0] = static_cast<uint8_t>(i + 1);
    auto log = mgr.create({"compacted", i}, id, compact_config(), 0);
    REQUIRE(log.is_ok());
    fill(**log, models[i], 10, 30);
    REQUIRE(sync_all(mgr, *log).is_ok());
    logs.push_back(*log);
  }
  const auto wait_passes = [&](uint64_t n) {
    for (int i = 0; i < 3000 && mgr.cleaner_stats().passes < n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return mgr.cleaner_stats().passes;
  };
  REQUIRE(mgr.tick(1000).is_ok());
  REQUIRE(wait_passes(1) == 1);
  auto st = mgr.cleaner_stats();
  CHECK(st.logs_cleaned == kLogs);
  CHECK(st.errors == 0);
  CHECK(st.last_pass_parallel == 3);  // three logs were being cleaned at once
  for (int i = 0; i < kLogs; ++i) check_latest(*logs[i], models[i], logs[i]->first_dirty_offset());

  // A new thread count, new data in every log, one more pass.
  const auto pass_with = [&](unsigned threads, uint64_t pass) {
    auto settings = mgr.cleaner_settings().second;
    settings.threads = threads;
    mgr.set_cleaner_settings(1000, settings);
    CHECK(mgr.cleaner_stats().threads == threads);
    for (int i = 0; i < kLogs; ++i) {
      fill(*logs[i], models[i], 10, 30);
      REQUIRE(sync_all(mgr, logs[i]).is_ok());
    }
    REQUIRE(mgr.tick(static_cast<int64_t>(pass) * 1000).is_ok());
    REQUIRE(wait_passes(pass) == pass);
    const auto s = mgr.cleaner_stats();
    CHECK(s.logs_cleaned == pass * kLogs);
    return s;
  };
  // Down to one: the others leave; the next pass runs one log at a time.
  CHECK(pass_with(1, 2).last_pass_parallel == 1);
  // And up to two again (the threads that left are joined and started anew).
  st = pass_with(2, 3);
  CHECK(st.last_pass_parallel == 2);
  CHECK(st.errors == 0);
  for (int i = 0; i < kLogs; ++i) check_latest(*logs[i], models[i], logs[i]->first_dirty_offset());
  REQUIRE(mgr.shutdown().is_ok());
}

TEST_CASE("compaction: the LogManager throttles its passes and shutdown does not wait out a throttle delay",
          "[storage][compaction][manager][throttler]") {
  MemFs t;
  protocol::Uuid id{};
  id.bytes[0] = 1;
  Model model;
  {
    // A rate too high to sleep: the bytes are still counted.
    LogManagerConfig mc;
    mc.cleaner.io_max_bytes_per_second = 1e15;
    auto m = LogManager::open(t.fs, {"/t/d1"}, mc, 0);
    REQUIRE(m.is_ok());
    auto log = (*m)->create({"compacted", 0}, id, compact_config(), 0);
    REQUIRE(log.is_ok());
    fill(**log, model, 10, 30);
    // The rolled segments' deferred syncs run on group commit's thread; a
    // segment not finished yet is not cleanable (this raced: logs_cleaned 0).
    REQUIRE(sync_all(**m, *log).is_ok());
    REQUIRE((*m)->clean_now(0).is_ok());
    const auto st = (*m)->cleaner_stats();
    CHECK(st.logs_cleaned == 1);
    CHECK(st.throttle.bytes >= 2 * st.bytes_read + st.bytes_written);
    check_latest(**log, model, (*log)->first_dirty_offset());
    REQUIRE((*m)->shutdown().is_ok());
  }
  // 1 byte per second: the pass would take hours. The cleaner thread falls
  // asleep in the throttle; shutdown cancels it, so the pass ends unthrottled
  // and shutdown returns (a hang here would hit ctest's timeout).
  LogManagerConfig mc;
  mc.cleaner_enable = true;
  mc.cleaner_backoff_ms = 0;
  mc.cleaner.io_max_bytes_per_second = 1;
  mc.default_config = compact_config();  // the log found on disk is compacted
  auto m = LogManager::open(t.fs, {"/t/d1"}, mc, 0);
  REQUIRE(m.is_ok());
  auto log = (*m)->get({"compacted", 0});
  REQUIRE(log);
  fill(*log, model, 10, 30);
  REQUIRE(sync_all(**m, log).is_ok());  // as above: finished segments, or the pass has nothing to clean
  REQUIRE((*m)->tick(1).is_ok());
  for (int i = 0; i < 1000 && (*m)->cleaner_stats().throttle.delays == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE((*m)->cleaner_stats().throttle.delays >= 1);
  REQUIRE((*m)->shutdown().is_ok());
  CHECK((*m)->cleaner_stats().errors == 0);
  log.reset();
  m->reset();
  auto again = LogManager::open(t.fs, {"/t/d1"}, LogManagerConfig{}, 0);
  REQUIRE(again.is_ok());
  log = (*again)->get({"compacted", 0});
  REQUIRE(log);
  check_latest(*log, model, 0);
}

}  // namespace CK_UNITY_ID
