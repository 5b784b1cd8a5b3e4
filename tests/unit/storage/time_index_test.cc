// tests/unit/storage/time_index_test.cc: the .timeindex file: byte layout,
// lookup, Kafka's append rules, the reserved last slot, truncation, reopen
// and corruption detection.
#include <catch2/catch.hpp>
#include <vector>

#include "storage/io/mem_file.h"
#include "storage/io/posix_file.h"
#include "storage/time_index.h"
#include "temp_dir.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::io;
using ciuickafka::storage::test::TempDir;

// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

namespace {

constexpr int64_t kBase = 5000;

TimeIndex open_index(FileSystem& fs, const std::string& path, uint32_t max_bytes = 12 * 10) {
  auto ix = TimeIndex::open(fs, path, kBase, max_bytes);
  REQUIRE(ix.is_ok());
  return std::move(ix).value();
}

void write_bytes(FileSystem& fs, const std::string& path, const std::vector<uint8_t>& b) {
  auto f = fs.open(path, OpenMode::kCreateTruncate);
  REQUIRE(f.is_ok());
  REQUIRE((*f)->write_at(0, b).is_ok());
}

}  // namespace

TEST_CASE("time index: entries are 12 big-endian bytes, timestamp then relative offset", "[storage][index]") {
  TempDir dir;
  PosixFileSystem fs;
  const std::string path = dir / "00000000000000005000.timeindex";
  auto ix = open_index(fs, path);
  REQUIRE(ix.maybe_append(1'700'000'000'000, kBase + 7).is_ok());  // 0x18BCFE56800
  REQUIRE(ix.flush().is_ok());
  auto b = read_file(fs, path);
  REQUIRE(b.is_ok());
  const std::vector<uint8_t> expected = {0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00, 0x00, 0x00, 0x00, 0x07};
  CHECK(*b == expected);
}

TEST_CASE("time index: lookup finds the largest timestamp <= target", "[storage][index]") {
  MemFileSystem fs;
  auto ix = open_index(fs, "/tix");
  CHECK(ix.lookup(123) == TimestampOffset{kNoTimestamp, kBase});
  CHECK(ix.last_entry() == TimestampOffset{kNoTimestamp, kBase});
  REQUIRE(ix.maybe_append(100, kBase + 1).is_ok());
  REQUIRE(ix.maybe_append(200, kBase + 5).is_ok());
  REQUIRE(ix.maybe_append(300, kBase + 5).is_ok());  // same offset, later timestamp: allowed
  REQUIRE(ix.maybe_append(400, kBase + 9).is_ok());
  CHECK(ix.lookup(99) == TimestampOffset{kNoTimestamp, kBase});
  CHECK(ix.lookup(100) == TimestampOffset{100, kBase + 1});
  CHECK(ix.lookup(250) == TimestampOffset{200, kBase + 5});
  CHECK(ix.lookup(300) == TimestampOffset{300, kBase + 5});
  CHECK(ix.lookup(INT64_MAX) == TimestampOffset{400, kBase + 9});
  CHECK(ix.last_entry() == TimestampOffset{400, kBase + 9});
  CHECK(ix.sanity_check().is_ok());
}

TEST_CASE("time index: Kafka's append rules", "[storage][index]") {
  MemFileSystem fs;
  auto ix = open_index(fs, "/tix");
  REQUIRE(ix.maybe_append(kNoTimestamp, kBase).is_ok());  // no timestamp: nothing to index
  CHECK(ix.entries() == 0);
  REQUIRE(ix.maybe_append(100, kBase + 2).is_ok());
  REQUIRE(ix.maybe_append(100, kBase + 3).is_ok());  // equal timestamp: skipped
  CHECK(ix.entries() == 1);
  CHECK(ix.maybe_append(99, kBase + 4).code() == StatusCode::kInvalidArgument);   // timestamp backwards
  CHECK(ix.maybe_append(150, kBase + 1).code() == StatusCode::kInvalidArgument);  // offset backwards
  CHECK(ix.maybe_append(150, kBase - 1).code() == StatusCode::kInvalidArgument);  // below base
  CHECK(ix.maybe_append(150, kBase + int64_t{INT32_MAX} + 1).code() == StatusCode::kInvalidArgument);
  CHECK(ix.entries() == 1);
}

TEST_CASE("time index: the last slot is reserved for the roll entry", "[storage][index]") {
  MemFileSystem fs;
  auto ix = open_index(fs, "/tix", 12 * 3);
  CHECK(ix.max_entries() == 3);
  REQUIRE(ix.maybe_append(1, kBase + 1).is_ok());
  REQUIRE(ix.maybe_append(2, kBase + 2).is_ok());
  CHECK(ix.full());
  CHECK(ix.maybe_append(3, kBase + 3).code() == StatusCode::kIndexFull);
  REQUIRE(ix.maybe_append(3, kBase + 3, /*skip_full_check=*/true).is_ok());
  CHECK(ix.entries() == 3);
  CHECK(ix.maybe_append(4, kBase + 4, true).code() == StatusCode::kIndexFull);  // no slot at all
  auto big = TimeIndex::open(fs, "/big", kBase);
  REQUIRE(big.is_ok());
  CHECK(big->max_entries() == 10 * 1024 * 1024 / 12);
}

TEST_CASE("time index: truncate_to, reopen and preallocation padding", "[storage][index]") {
  TempDir dir;
  PosixFileSystem fs;
  const std::string path = dir / "t.timeindex";
  {
    auto ix = open_index(fs, path);
    for (int i = 1; i <= 4; ++i) REQUIRE(ix.maybe_append(1000 * i, kBase + 10 * i).is_ok());
    ix.truncate_to(kBase + 30);  // removes offsets >= 30
    CHECK(ix.entries() == 2);
    ix.truncate_to(kBase + 25);
    CHECK(ix.entries() == 2);
    REQUIRE(ix.flush().is_ok());
  }
  {
    // Add zero padding after the two entries, as preallocation would.
    auto f = fs.open(path, OpenMode::kReadWrite);
    REQUIRE(f.is_ok());
    REQUIRE((*f)->truncate(12 * 8).is_ok());
  }
  auto ix = open_index(fs, path);
  CHECK(ix.entries() == 2);
  CHECK(ix.sanity_check().is_ok());
  CHECK(ix.last_entry() == TimestampOffset{2000, kBase + 20});
  ix.truncate_to(kBase);
  CHECK(ix.entries() == 0);
}

TEST_CASE("time index: corruption is detected, naming the file", "[storage][index]") {
  TempDir dir;
  PosixFileSystem fs;
  const std::string path = dir / "c.timeindex";
  SECTION("size not a multiple of 12") {
    write_bytes(fs, path, std::vector<uint8_t>(13, 1));
    auto ix = open_index(fs, path);
    Status s = ix.sanity_check();
    CHECK(s.code() == StatusCode::kCorruption);
    CHECK(s.message().find(path) != std::string::npos);
  }
  SECTION("timestamps not increasing") {
    write_bytes(fs, path, {0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 2});
    auto ix = open_index(fs, path);
    CHECK(ix.sanity_check().code() == StatusCode::kCorruption);
  }
  SECTION("offsets decreasing") {
    write_bytes(fs, path, {0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 2});
    auto ix = open_index(fs, path);
    CHECK(ix.sanity_check().code() == StatusCode::kCorruption);
  }
}

}  // namespace CK_UNITY_ID
