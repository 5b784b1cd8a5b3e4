// tests/unit/storage/leader_epoch_cache_test.cc: the leader epoch cache's
// rules case by case (each case names the LeaderEpochFileCache rule it
// checks), the checkpoint file written byte-exactly on every change and
// only on a change, and a failed write retried.
#include "storage/leader_epoch_cache.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "storage/io/mem_file.h"

using namespace ciuickafka::storage;

namespace {

using Entries = std::vector<EpochEntry>;
constexpr const char* kDir = "/p-0";
const std::string kPath = std::string(kDir) + "/leader-epoch-checkpoint";

struct Fixture {
  Fixture() { REQUIRE(fs.create_dir(kDir).is_ok()); }
  io::MemFileSystem fs;
  std::string file_text() {
    auto bytes = io::read_file(fs, kPath);
    if (!bytes) return "<" + bytes.status().to_string() + ">";
    return std::string(bytes->begin(), bytes->end());
  }
};

std::string text_of(const Entries& e) {
  std::string s = "0\n" + std::to_string(e.size()) + "\n";
  for (const auto& x : e) s += std::to_string(x.epoch) + " " + std::to_string(x.start_offset) + "\n";
  return s;
}

}  // namespace

TEST_CASE("epoch cache: assign follows LeaderEpochFileCache.assign", "[storage][epoch]") {
  struct Case {
    const char* rule;
    Entries before;
    EpochEntry assign;
    Entries after;
    bool written;
  };
  const Case cases[] = {
      {"isUpdateNeeded: an empty cache always takes the entry", {}, {1, 0}, {{1, 0}}, true},
      {"isUpdateNeeded: the latest epoch at a higher offset is no update", {{1, 0}}, {1, 5}, {{1, 0}}, false},
      {"isUpdateNeeded: the latest epoch at its own offset is no update", {{1, 5}}, {1, 5}, {{1, 5}}, false},
      {"isUpdateNeeded: the latest epoch at a lower offset moves it down", {{0, 0}, {1, 5}}, {1, 3},
       {{0, 0}, {1, 3}}, true},
      {"a newer epoch at a higher offset is appended", {{1, 0}}, {2, 10}, {{1, 0}, {2, 10}}, true},
      {"maybeTruncateNonMonotonicEntries: an entry whose start is >= the new start goes", {{1, 0}, {2, 10}},
       {3, 10}, {{1, 0}, {3, 10}}, true},
      {"maybeTruncateNonMonotonicEntries: every later start above the new one goes",
       {{1, 0}, {2, 10}, {3, 20}}, {4, 15}, {{1, 0}, {2, 10}, {4, 15}}, true},
      {"maybeTruncateNonMonotonicEntries: an older epoch drops every epoch >= it (rewind)", {{1, 0}, {3, 20}},
       {2, 25}, {{1, 0}, {2, 25}}, true},
      {"maybeTruncateNonMonotonicEntries: epoch and start both rewind", {{1, 0}, {3, 20}}, {2, 5},
       {{1, 0}, {2, 5}}, true},
      {"an older epoch below every entry replaces them all", {{3, 10}, {4, 20}}, {2, 30}, {{2, 30}}, true},
  };
  for (const Case& c : cases) {
    INFO(c.rule);
    Fixture f;
    LeaderEpochCache cache(f.fs, kPath, c.before);
    const uint64_t writes = f.fs.write_count();
    REQUIRE(cache.assign(c.assign.epoch, c.assign.start_offset).is_ok());
    CHECK(cache.entries() == c.after);
    CHECK((f.fs.write_count() != writes) == c.written);
    if (c.written) CHECK(f.file_text() == text_of(c.after));
    CHECK(cache.needs_update(c.assign.epoch, c.assign.start_offset) == false);
  }
}

TEST_CASE("epoch cache: assign refuses a negative epoch or offset and changes nothing", "[storage][epoch]") {
  Fixture f;
  LeaderEpochCache cache(f.fs, kPath, {{1, 0}});
  CHECK(cache.assign(-1, 10).code() == StatusCode::kInvalidArgument);
  CHECK(cache.assign(2, -1).code() == StatusCode::kInvalidArgument);
  const Entries two = {{2, 10}, {-1, 20}};
  CHECK(cache.assign(two).code() == StatusCode::kInvalidArgument);  // checked before any is applied
  CHECK(cache.entries() == Entries{{1, 0}});
}

TEST_CASE("epoch cache: several entries are applied in order with one file write", "[storage][epoch]") {
  Fixture f;
  LeaderEpochCache cache(f.fs, kPath, {{1, 0}});
  const Entries batch = {{1, 7}, {2, 10}, {2, 12}, {4, 30}};
  REQUIRE(cache.assign(batch).is_ok());
  CHECK(cache.entries() == Entries{{1, 0}, {2, 10}, {4, 30}});
  CHECK(f.file_text() == "0\n3\n1 0\n2 10\n4 30\n");
}

TEST_CASE("epoch cache: end_offset_for gives OffsetForLeaderEpoch's answers", "[storage][epoch]") {
  struct Case {
    const char* rule;
    Entries entries;
    int32_t requested;
    EpochEndOffset want;
  };
  const Entries e = {{1, 0}, {3, 20}, {5, 40}};
  constexpr int64_t kLeo = 55;
  const Case cases[] = {
      {"UNDEFINED_EPOCH asked: (-1, -1)", e, -1, {-1, -1}},
      {"the latest epoch: (latest, LEO)", e, 5, {5, kLeo}},
      {"above every epoch (no higher entry): (-1, -1)", e, 6, {-1, -1}},
      {"below the first epoch (no floor entry): (requested, first start)", e, 0, {0, 0}},
      {"below the first epoch of a truncated cache", {{2, 10}}, 1, {1, 10}},
      {"a known older epoch: (it, next epoch's start)", e, 1, {1, 20}},
      {"an unknown epoch in between: (largest <= requested, next start)", e, 2, {1, 20}},
      {"another known one", e, 3, {3, 40}},
      {"unknown, just below the latest", e, 4, {3, 40}},
      {"an empty cache: (-1, -1)", {}, 0, {-1, -1}},
      {"an empty cache, UNDEFINED asked", {}, -1, {-1, -1}},
  };
  for (const Case& c : cases) {
    INFO(c.rule);
    Fixture f;
    LeaderEpochCache cache(f.fs, kPath, c.entries);
    CHECK(cache.end_offset_for(c.requested, kLeo) == c.want);
  }
}

TEST_CASE("epoch cache: epoch_for_offset is the entry with the largest start <= offset", "[storage][epoch]") {
  Fixture f;
  LeaderEpochCache cache(f.fs, kPath, {{1, 0}, {3, 20}, {5, 40}});
  CHECK(cache.epoch_for_offset(0) == 1);   // exact start
  CHECK(cache.epoch_for_offset(19) == 1);  // inside
  CHECK(cache.epoch_for_offset(20) == 3);
  CHECK(cache.epoch_for_offset(1000) == 5);  // past the last start: the latest epoch
  LeaderEpochCache later(f.fs, kPath, {{2, 10}});
  CHECK(later.epoch_for_offset(5) == std::nullopt);  // below the first entry
  LeaderEpochCache none(f.fs, kPath);
  CHECK(none.epoch_for_offset(0) == std::nullopt);
  CHECK(none.latest_epoch() == std::nullopt);
}

TEST_CASE("epoch cache: truncate_from_end drops entries starting at or after the end", "[storage][epoch]") {
  struct Case {
    const char* rule;
    int64_t end;
    Entries after;
  };
  const Entries e = {{1, 0}, {3, 20}, {5, 40}};
  const Case cases[] = {
      {"end at the last start: it goes", 40, {{1, 0}, {3, 20}}},
      {"end past the last start: nothing goes", 41, e},
      {"end at a middle start: it and later go", 20, {{1, 0}}},
      {"end inside an epoch keeps it", 25, {{1, 0}, {3, 20}}},
      {"end 0: everything goes", 0, {}},
      {"a negative end does nothing (Kafka's endOffset >= 0 guard)", -1, e},
      {"far past the end: nothing", 1000, e},
  };
  for (const Case& c : cases) {
    INFO(c.rule);
    Fixture f;
    LeaderEpochCache cache(f.fs, kPath, e);
    const uint64_t writes = f.fs.write_count();
    REQUIRE(cache.truncate_from_end(c.end).is_ok());
    CHECK(cache.entries() == c.after);
    CHECK((f.fs.write_count() != writes) == (c.after != e));
    if (c.after != e) CHECK(f.file_text() == text_of(c.after));
  }
}

TEST_CASE("epoch cache: truncate_from_start moves the last entry below the start up to it",
          "[storage][epoch]") {
  struct Case {
    const char* rule;
    int64_t start;
    Entries after;
  };
  const Entries e = {{1, 0}, {3, 20}, {5, 40}};
  const Case cases[] = {
      {"the start at the first entry's start: unchanged", 0, e},
      {"inside the first epoch: its start moves up", 10, {{1, 10}, {3, 20}, {5, 40}}},
      {"at the second start: the first goes (removeFromStart takes start <= offset)", 20, {{3, 20}, {5, 40}}},
      {"inside the second epoch: the first goes, the second moves", 25, {{3, 25}, {5, 40}}},
      {"past every start: only the latest remains, at the start", 50, {{5, 50}}},
  };
  for (const Case& c : cases) {
    INFO(c.rule);
    Fixture f;
    LeaderEpochCache cache(f.fs, kPath, e);
    const uint64_t writes = f.fs.write_count();
    REQUIRE(cache.truncate_from_start(c.start).is_ok());
    CHECK(cache.entries() == c.after);
    CHECK((f.fs.write_count() != writes) == (c.after != e));
    if (c.after != e) CHECK(f.file_text() == text_of(c.after));
  }
  Fixture f;
  LeaderEpochCache later(f.fs, kPath, {{2, 10}});
  REQUIRE(later.truncate_from_start(5).is_ok());  // below the first entry: nothing to move
  CHECK(later.entries() == Entries{{2, 10}});
}

TEST_CASE("epoch cache: clear empties the file - the file reloads byte-exactly", "[storage][epoch]") {
  Fixture f;
  LeaderEpochCache cache(f.fs, kPath);
  REQUIRE(cache.assign(0, 0).is_ok());
  REQUIRE(cache.assign(4, 17).is_ok());
  REQUIRE(cache.assign(9, 1234567890123).is_ok());
  CHECK(f.file_text() == "0\n3\n0 0\n4 17\n9 1234567890123\n");
  f.fs.crash();  // written atomically and synced: it survives
  auto loaded = read_leader_epoch_checkpoint(f.fs, kPath);
  REQUIRE(loaded.is_ok());
  LeaderEpochCache again(f.fs, kPath, *loaded);
  CHECK(again.entries() == cache.entries());
  REQUIRE(again.flush().is_ok());
  CHECK(f.file_text() == "0\n3\n0 0\n4 17\n9 1234567890123\n");
  REQUIRE(again.clear().is_ok());
  CHECK(f.file_text() == "0\n0\n");
  CHECK(again.empty());
}

TEST_CASE("epoch cache: a failed write leaves it dirty and the next change retries", "[storage][epoch]") {
  Fixture f;
  LeaderEpochCache cache(f.fs, kPath, {{1, 0}});
  REQUIRE(cache.flush().is_ok());
  f.fs.fail_nth_write(1);
  CHECK_FALSE(cache.assign(2, 10).is_ok());
  CHECK(cache.entries() == Entries{{1, 0}, {2, 10}});  // in memory
  CHECK(cache.dirty());
  CHECK(f.file_text() == "0\n1\n1 0\n");  // the file still has the old contents
  CHECK(cache.needs_update(2, 11));       // no update by the rules, but a write is owed
  REQUIRE(cache.assign(2, 11).is_ok());
  CHECK_FALSE(cache.dirty());
  CHECK(f.file_text() == "0\n2\n1 0\n2 10\n");
}

TEST_CASE("epoch cache: records says whether the latest entry is that epoch's and in the file",
          "[storage][epoch]") {
  Fixture f;
  LeaderEpochCache empty(f.fs, kPath);
  CHECK_FALSE(empty.records(0));
  CHECK_FALSE(empty.records(kUndefinedEpoch));
  REQUIRE(empty.assign(0, 0).is_ok());
  CHECK(empty.records(0));
  CHECK_FALSE(empty.records(1));
  // Loaded entries are taken as the file's.
  LeaderEpochCache loaded(f.fs, kPath, {{1, 0}, {3, 7}});
  CHECK(loaded.records(3));
  CHECK_FALSE(loaded.records(1));
  // A failed write: the file lacks the new epoch, so it is not recorded,
  // and neither is the old one (the cache's latest is the new one).
  f.fs.fail_nth_write(1);
  CHECK_FALSE(loaded.assign(4, 9).is_ok());
  CHECK_FALSE(loaded.records(4));
  CHECK_FALSE(loaded.records(3));
  REQUIRE(loaded.assign(4, 9).is_ok());  // the retry
  CHECK(loaded.records(4));
  // Truncation that drops the latest entry: the one before it is the latest, in the file.
  REQUIRE(loaded.truncate_from_end(8).is_ok());
  CHECK(loaded.records(3));
  REQUIRE(loaded.clear().is_ok());
  CHECK_FALSE(loaded.records(3));
}
