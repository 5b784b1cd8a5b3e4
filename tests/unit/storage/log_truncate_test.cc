// tests/unit/storage/log_truncate_test.cc: truncation for a replica at
// every interesting point, with appends continuing there and reopens (clean,
// and after a crash) giving the same log, indexes and epoch cache; a fault at
// every write and sync of a truncation; truncating fully; the LogManager's
// truncation writing the checkpoints.
#include <algorithm>
#include <catch2/catch.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fs_fixtures.h"
#include "log_test_util.h"
#include "replica_test_util.h"
#include "storage/checkpoint.h"
#include "storage/file_names.h"
#include "storage/log_manager.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::test;

TEST_CASE("log truncation: at every interesting point, then appends, then reopens",
          "[storage][log][truncate]") {
  // The layout, from one build of the leader log.
  // (The batch count is chosen so that the active segment holds a
  // multi-record batch that does not start it.)
  std::vector<BatchInfo> infos;
  std::vector<int64_t> bases;
  int count = 60;
  for (;; ++count) {
    REQUIRE(count < 100);
    MemFs t;
    auto log = open_log(t.fs, "/t/x-0", small_segments());
    infos = batches_of(fill_leader(*log, count));
    bases.clear();
    for (const auto& s : *log->segments()) bases.push_back(s->base_offset());
    if (std::any_of(infos.begin(), infos.end(),
                    [&](const BatchInfo& b) { return b.base > bases.back() && b.last > b.base; }))
      break;
  }
  REQUIRE(bases.size() >= 4);
  const int64_t leo = infos.back().last + 1;
  // A batch of more than one record in [from, to) that does not start there.
  const auto find_multi = [&](int64_t from, int64_t to) -> std::optional<int64_t> {
    for (const auto& b : infos)
      if (b.base > from && b.last < to && b.last > b.base) return b.base;
    return std::nullopt;
  };
  const auto multi_record_in = [&](int64_t from, int64_t to) -> int64_t {
    auto b = find_multi(from, to);
    if (!b) FAIL("no multi-record batch in range");
    return *b;
  };
  // An older segment (neither the first nor the active one) holding one.
  size_t older = 1;
  while (older + 1 < bases.size() && !find_multi(bases[older], bases[older + 1])) ++older;
  REQUIRE(older + 2 < bases.size());  // and one more between it and the active segment
  struct Target {
    const char* what;
    int64_t offset;
  };
  const int64_t active = bases.back();
  const std::vector<Target> targets = {
      {"a batch boundary inside the active segment", multi_record_in(active, leo)},
      {"inside a batch of the active segment", multi_record_in(active, leo) + 1},
      {"the active segment's base", active},
      {"a middle segment's base", bases[older + 1]},
      {"a batch boundary in an older segment, newer ones deleted",
       multi_record_in(bases[older], bases[older + 1])},
      {"inside a batch in an older segment", multi_record_in(bases[older], bases[older + 1]) + 1},
      {"offset 0", 0},
      {"the LEO", leo},
      {"above the LEO", leo + 5},
  };
  for (const Target& target : targets) {
    for (bool crash : {false, true}) {
      INFO(target.what << " (offset " << target.offset << ")" << (crash ? ", reopened after a crash" : ""));
      MemFs t;
      const std::string dir = "/t/x-0";
      auto log = open_log(t.fs, dir, small_segments());
      const Bytes all = fill_leader(*log, count);
      // Expected: batches stay whole; segments above the offset go.
      int64_t end = leo;
      for (const auto& b : infos)
        if (b.last >= target.offset) {
          end = b.base;
          break;
        }
      Entries epochs;
      for (const auto& e : epochs_of(infos))
        if (e.start_offset < end) epochs.push_back(e);
      std::vector<int64_t> kept;
      for (int64_t base : bases)
        if (base <= target.offset || base == bases.front()) kept.push_back(base);

      auto r = log->truncate_to(target.offset, 0);
      REQUIRE(r.is_ok());
      CHECK(*r == end);
      CHECK(log->log_end_offset() == end);
      CHECK(log->next_offset() == end);
      CHECK(log->recovery_point() <= end);
      CHECK(read_bytes(*log, 0, 1 << 30) == prefix_below(all, end));
      CHECK(log->leader_epochs().entries() == epochs);
      CHECK(file_text(t.fs, dir + "/leader-epoch-checkpoint") == checkpoint_text(epochs));
      std::vector<int64_t> now;
      for (const auto& s : *log->segments()) now.push_back(s->base_offset());
      CHECK(now == kept);
      if (end < leo) CHECK(log->read(end + 1, 100).status().code() == StatusCode::kOffsetOutOfRange);

      // Appends continue at the truncated offset, in a new epoch.
      std::mt19937 rng(17);
      for (int i = 0; i < 8; ++i) {
        Bytes b = random_batch(rng, 1'800'000'000'000 + i);
        const int64_t next = log->log_end_offset();
        if (i == 0) CHECK(next == end);
        CHECK(append_ok(*log, b, 9).base_offset == next);
      }
      Entries after = epochs;
      after.push_back({9, end});
      CHECK(log->leader_epochs().entries() == after);
      const Snapshot before = snapshot(*log);
      CHECK(before.bytes.size() >= prefix_below(all, end).size());
      if (crash) {
        REQUIRE(log->flush().is_ok());
        t.fs.crash();
        log.reset();
        log = open_log(t.fs, dir, small_segments());  // full recovery scan
      } else {
        REQUIRE(log->close().is_ok());
        const int64_t rp = log->recovery_point();
        log.reset();
        log = open_clean(t.fs, dir, rp);
      }
      CHECK_FALSE(log->leader_epochs_rebuilt());
      CHECK(snapshot(*log) == before);
      // No segment files of the deleted segments remain under their names.
      auto names = t.fs.list_dir(dir);
      REQUIRE(names.is_ok());
      for (const auto& n : *names) {
        auto f = parse_segment_file_name(n);
        if (f && f->suffix == FileSuffix::kNone)
          CHECK(std::find(before.bases.begin(), before.bases.end(), f->base_offset) != before.bases.end());
      }
    }
  }
}

TEST_CASE("log truncation: a compaction that read the cut segment cannot swap it back in",
          "[storage][log][truncate]") {
  MemFs t;
  auto log = open_log(t.fs, "/t/k-0", small_segments());
  const Bytes all = fill_leader(*log, 60);
  auto before = log->segments();
  REQUIRE(before->size() >= 3);
  const std::shared_ptr<Segment> old = (*before)[1];  // what a cleaner would hold
  const int64_t target = old->base_offset() + 1;
  REQUIRE(log->truncate_to(target, 0).is_ok());
  auto after = log->segments();
  REQUIRE(after->size() == 2);
  CHECK(after->back()->base_offset() == old->base_offset());
  CHECK(after->back() != old);
  CHECK(log->replace_segment(old).code() == StatusCode::kNotFound);
}

TEST_CASE("log truncation: durable once it returns, a crash right after keeps it",
          "[storage][log][truncate]") {
  MemFs t;
  const std::string dir = "/t/d-0";
  auto log = open_log(t.fs, dir, small_segments());
  const Bytes all = fill_leader(*log, 60);
  REQUIRE(log->flush().is_ok());
  const auto infos = batches_of(all);
  const int64_t target = infos[30].base;
  REQUIRE(log->truncate_to(target, 0).is_ok());
  t.fs.crash();
  log.reset();
  log = open_log(t.fs, dir, small_segments());
  CHECK(log->log_end_offset() == target);
  CHECK(read_bytes(*log, 0, 1 << 30) == prefix_below(all, target));
  Entries want;
  for (const auto& e : epochs_of(infos))
    if (e.start_offset < target) want.push_back(e);
  CHECK(log->leader_epochs().entries() == want);
}

TEST_CASE("log truncation: truncate fully and start at an offset", "[storage][log][truncate]") {
  MemFs t;
  const std::string dir = "/t/z-0";
  auto log = open_log(t.fs, dir, small_segments());
  fill_leader(*log, 30);
  REQUIRE(log->truncate_fully_and_start_at(1000, 0).is_ok());
  CHECK(log->log_end_offset() == 1000);
  CHECK(log->log_start_offset() == 1000);
  CHECK(log->recovery_point() == 1000);
  REQUIRE(log->segments()->size() == 1);
  CHECK(log->segments()->front()->base_offset() == 1000);
  CHECK(log->leader_epochs().empty());
  CHECK(file_text(t.fs, dir + "/leader-epoch-checkpoint") == "0\n0\n");
  CHECK(log->read(999, 100).status().code() == StatusCode::kOffsetOutOfRange);
  // A follower continues at the leader's offsets.
  auto leader = open_log(t.fs, "/t/lz-0", LogConfig{});
  REQUIRE(leader->truncate_fully_and_start_at(1000, 0).is_ok());
  Bytes b = make_batch(5, 10, 10);
  append_ok(*leader, b, 12);
  Bytes fetched = b;
  REQUIRE(log->append_as_follower(fetched, 0).is_ok());
  CHECK(log->log_end_offset() == 1005);
  CHECK(log->leader_epochs().entries() == Entries{{12, 1000}});
  // Truncating below the first segment's base truncates fully there.
  auto r = log->truncate_to(500, 0);
  REQUIRE(r.is_ok());
  CHECK(*r == 500);
  CHECK(log->log_start_offset() == 500);
  CHECK(log->segments()->front()->base_offset() == 500);
  CHECK(log->leader_epochs().empty());
  Bytes again = b;
  append_ok(*log, again, 13);
  const Snapshot before = snapshot(*log);
  REQUIRE(log->flush().is_ok());
  t.fs.crash();
  log.reset();
  LogOpenOptions o;
  o.log_start_offset = 500;
  auto reopened = Log::open(t.fs, dir, small_segments(), 0, o);
  REQUIRE(reopened.is_ok());
  CHECK(snapshot(**reopened) == before);
}

TEST_CASE("log manager truncation: the checkpoints follow the truncated log at once",
          "[storage][manager][truncate]") {
  MemFs t;
  LogManagerConfig mc;
  mc.default_config = small_segments();
  mc.default_config.retention_ms = -1;
  auto opened = LogManager::open(t.fs, {"/t/a"}, mc, 0);
  REQUIRE(opened.is_ok());
  auto m = std::move(opened).value();
  ciuickafka::protocol::Uuid id;
  id.bytes.fill(4);
  const TopicPartition tp{"orders", 0};
  auto created = m->create(tp, id, mc.default_config);
  REQUIRE(created.is_ok());
  std::shared_ptr<Log> log = *created;
  const Bytes all = fill_leader(*log, 40);
  REQUIRE(log->flush().is_ok());
  REQUIRE(m->checkpoint().is_ok());
  const auto infos = batches_of(all);
  const auto checkpointed = [&](std::string_view file) {
    auto e = read_offset_checkpoint(t.fs, "/t/a/" + std::string(file));
    REQUIRE(e.is_ok());
    REQUIRE(e->size() == 1);
    return (*e)[0].offset;
  };
  CHECK(checkpointed(kRecoveryPointCheckpointFile) == infos.back().last + 1);
  auto end = m->truncate_to(tp, infos[12].base, 0);
  REQUIRE(end.is_ok());
  CHECK(*end == infos[12].base);
  CHECK(checkpointed(kRecoveryPointCheckpointFile) == infos[12].base);
  REQUIRE(m->truncate_fully_and_start_at(tp, 5000, 0).is_ok());
  CHECK(checkpointed(kRecoveryPointCheckpointFile) == 5000);
  CHECK(checkpointed(kLogStartOffsetCheckpointFile) == 5000);
  CHECK(m->truncate_to({"orders", 9}, 0, 0).status().code() == StatusCode::kNotFound);
}

TEST_CASE("log truncation: a write or sync failing at any step, then a crash, recovers a consistent prefix",
          "[storage][log][truncate][crash]") {
  for (bool fail_sync : {true, false}) {
    for (uint64_t n = 1;; ++n) {
      INFO((fail_sync ? "sync " : "write ") << n << " fails");
      REQUIRE(n < 100);
      MemFs t;
      const std::string dir = "/t/f-0";
      auto log = open_log(t.fs, dir, small_segments());
      const Bytes all = fill_leader(*log, 60);
      REQUIRE(log->flush().is_ok());
      const auto infos = batches_of(all);
      const int64_t leo = log->log_end_offset();
      const int64_t target = infos[12].base;
      const uint64_t writes = t.fs.write_count(), syncs = t.fs.sync_count();
      if (fail_sync) {
        t.fs.fail_nth_sync(n);
      } else {
        t.fs.fail_nth_write(n);
      }
      auto r = log->truncate_to(target, 0);
      const bool hit = fail_sync ? t.fs.sync_count() - syncs >= n : t.fs.write_count() - writes >= n;
      t.fs.clear_faults();
      if (r.is_ok()) {
        CHECK(*r == target);
      } else {
        Bytes b = make_batch(1, 1, 1);
        CHECK_FALSE(log->append(b, 9, 0).is_ok());  // broken until reopened
      }
      t.fs.crash();
      log.reset();
      log = open_log(t.fs, dir, small_segments());
      const int64_t end = log->log_end_offset();
      CHECK(end >= target);
      CHECK(end <= leo);
      const Bytes now = read_bytes(*log, 0, 1 << 30);
      CHECK(now == prefix_below(all, end));
      CHECK(log->leader_epochs().entries() == epochs_of(batches_of(now)));
      if (r.is_ok()) CHECK(end == target);
      if (!hit) {  // the truncation did fewer than n of them: every step was covered
        CHECK(n > 1);
        break;
      }
    }
  }
}
