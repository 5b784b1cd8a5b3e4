// tests/unit/storage/offset_index_test.cc: the .index file: byte layout,
// lookup, appends and their checks, truncation, reopen, preallocation
// padding and corruption detection.
#include <catch2/catch.hpp>
#include <cerrno>
#include <vector>

#include "storage/io/mem_file.h"
#include "storage/io/posix_file.h"
#include "storage/offset_index.h"
#include "temp_dir.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::io;
using ciuickafka::storage::test::TempDir;

// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

namespace {

constexpr int64_t kBase = 1000;

OffsetIndex open_index(FileSystem& fs, const std::string& path, uint32_t max_bytes = 80) {
  auto ix = OffsetIndex::open(fs, path, kBase, max_bytes);
  REQUIRE(ix.is_ok());
  return std::move(ix).value();
}

std::vector<uint8_t> file_bytes(FileSystem& fs, const std::string& path) {
  auto b = read_file(fs, path);
  REQUIRE(b.is_ok());
  return *b;
}

void write_bytes(FileSystem& fs, const std::string& path, const std::vector<uint8_t>& b) {
  auto f = fs.open(path, OpenMode::kCreateTruncate);
  REQUIRE(f.is_ok());
  REQUIRE((*f)->write_at(0, b).is_ok());
}

}  // namespace

TEST_CASE("offset index: entries are 8 big-endian bytes, relative offset then position", "[storage][index]") {
  TempDir dir;
  PosixFileSystem fs;
  const std::string path = dir / "00000000000000001000.index";
  auto ix = open_index(fs, path);
  REQUIRE(ix.append(1005, 4096).is_ok());
  REQUIRE(ix.append(1000 + 0x01020304, 0x0a0b0c0d).is_ok());
  REQUIRE(ix.flush().is_ok());
  const std::vector<uint8_t> expected = {
      0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x10, 0x00,  // 1005 - 1000, position 4096
      0x01, 0x02, 0x03, 0x04, 0x0a, 0x0b, 0x0c, 0x0d,
  };
  CHECK(file_bytes(fs, path) == expected);
}

TEST_CASE("offset index: lookup finds the largest entry <= target", "[storage][index]") {
  MemFileSystem fs;
  auto ix = open_index(fs, "/ix");
  // Empty: scan from the segment start.
  CHECK(ix.lookup(kBase) == OffsetPosition{kBase, 0});
  CHECK(ix.lookup(kBase + 500) == OffsetPosition{kBase, 0});

  for (int i = 1; i <= 5; ++i) REQUIRE(ix.append(kBase + 10 * i, static_cast<uint32_t>(100 * i)).is_ok());
  CHECK(ix.entries() == 5);
  CHECK(ix.last_offset() == kBase + 50);
  CHECK(ix.lookup(kBase - 1) == OffsetPosition{kBase, 0});  // below the base
  CHECK(ix.lookup(kBase + 9) == OffsetPosition{kBase, 0});  // before the first entry
  CHECK(ix.lookup(kBase + 10) == OffsetPosition{kBase + 10, 100});  // exact
  CHECK(ix.lookup(kBase + 11) == OffsetPosition{kBase + 10, 100});
  CHECK(ix.lookup(kBase + 29) == OffsetPosition{kBase + 20, 200});
  CHECK(ix.lookup(kBase + 30) == OffsetPosition{kBase + 30, 300});
  CHECK(ix.lookup(kBase + 50) == OffsetPosition{kBase + 50, 500});  // last
  CHECK(ix.lookup(kBase + 1'000'000) == OffsetPosition{kBase + 50, 500});
  CHECK(ix.lookup(INT64_MAX) == OffsetPosition{kBase + 50, 500});
  for (size_t i = 0; i < ix.entries(); ++i) CHECK(ix.entry(i).position == 100 * (i + 1));
}

TEST_CASE("offset index: appends must move forward and fit", "[storage][index]") {
  MemFileSystem fs;
  auto ix = open_index(fs, "/ix", 8 * 3);  // room for 3 entries
  CHECK(ix.max_entries() == 3);
  REQUIRE(ix.append(kBase + 1, 10).is_ok());
  CHECK(ix.append(kBase + 1, 20).code() == StatusCode::kInvalidArgument);  // same offset
  CHECK(ix.append(kBase, 20).code() == StatusCode::kInvalidArgument);      // backwards
  CHECK(ix.append(kBase + 2, 10).code() == StatusCode::kInvalidArgument);  // position not above
  CHECK(ix.append(kBase - 1, 20).code() == StatusCode::kInvalidArgument);  // below base
  CHECK_FALSE(ix.can_hold(kBase + int64_t{INT32_MAX} + 1));
  CHECK(ix.can_hold(kBase + int64_t{INT32_MAX}));
  CHECK(ix.append(kBase + int64_t{INT32_MAX} + 1, 20).code() == StatusCode::kInvalidArgument);
  REQUIRE(ix.append(kBase + 2, 20).is_ok());
  REQUIRE(ix.append(kBase + int64_t{INT32_MAX}, 30).is_ok());  // the largest relative offset
  CHECK(ix.full());
  Status s = ix.append(kBase + int64_t{INT32_MAX}, 40);
  CHECK(s.code() == StatusCode::kIndexFull);
  CHECK(ix.entries() == 3);
  CHECK(ix.lookup(kBase + int64_t{INT32_MAX}).position == 30);
  CHECK(ix.sanity_check().is_ok());
  // Default maximum: segment.index.bytes = 10 MiB.
  auto big = OffsetIndex::open(fs, "/big", kBase);
  REQUIRE(big.is_ok());
  CHECK(big->max_entries() == 10 * 1024 * 1024 / 8);
}

TEST_CASE("offset index: truncate_to removes entries at and above an offset", "[storage][index]") {
  TempDir dir;
  PosixFileSystem fs;
  const std::string path = dir / "t.index";
  auto ix = open_index(fs, path);
  for (int i = 1; i <= 5; ++i) REQUIRE(ix.append(kBase + 10 * i, static_cast<uint32_t>(100 * i)).is_ok());
  REQUIRE(ix.flush().is_ok());

  ix.truncate_to(kBase + 100);  // above everything: no change
  CHECK(ix.entries() == 5);
  ix.truncate_to(kBase + 31);  // between entries: keep 10, 20, 30
  CHECK(ix.entries() == 3);
  ix.truncate_to(kBase + 30);  // exact: the entry itself goes
  CHECK(ix.entries() == 2);
  CHECK(ix.last_offset() == kBase + 20);
  // Re-appending after truncation overwrites the old tail on flush.
  REQUIRE(ix.append(kBase + 25, 250).is_ok());
  REQUIRE(ix.flush().is_ok());
  CHECK(file_bytes(fs, path).size() == 3 * 8);
  REQUIRE(ix.close().is_ok());

  auto again = open_index(fs, path);
  CHECK(again.entries() == 3);
  CHECK(again.entry(2) == OffsetPosition{kBase + 25, 250});
  again.truncate_to(kBase);
  CHECK(again.entries() == 0);
  REQUIRE(again.flush().is_ok());
  CHECK(file_bytes(fs, path).empty());
}

TEST_CASE("offset index: reopen keeps flushed entries - unflushed ones are lost in a crash", "[storage][index]") {
  MemFileSystem fs;
  REQUIRE(fs.create_dir("/d").is_ok());
  const std::string path = "/d/00000000000000001000.index";
  {
    auto ix = open_index(fs, path);
    REQUIRE(fs.sync_dir("/d").is_ok());
    REQUIRE(ix.append(kBase + 3, 300).is_ok());
    REQUIRE(ix.append(kBase + 7, 700).is_ok());
    REQUIRE(ix.flush().is_ok());
    REQUIRE(ix.append(kBase + 9, 900).is_ok());
    REQUIRE(ix.flush().is_ok());  // only the new entry is written
    REQUIRE(ix.append(kBase + 12, 1200).is_ok());  // never flushed
    CHECK(ix.memory_bytes() >= 4 * 8);
  }
  fs.crash();
  auto ix = open_index(fs, path);
  CHECK(ix.entries() == 3);
  CHECK(ix.sanity_check().is_ok());
  CHECK(ix.lookup(kBase + 100) == OffsetPosition{kBase + 9, 900});
}

TEST_CASE("offset index: a failed flush reports the error and a retry completes it", "[storage][index]") {
  MemFileSystem fs;
  auto ix = open_index(fs, "/ix");
  REQUIRE(ix.append(kBase + 1, 10).is_ok());
  fs.fail_nth_write(1, ENOSPC);
  Status s = ix.flush();
  CHECK(s.err() == ENOSPC);
  CHECK(s.message().find("/ix") != std::string::npos);
  REQUIRE(ix.flush().is_ok());
  CHECK(file_bytes(fs, "/ix").size() == 8);
}

TEST_CASE("offset index: trailing zero entries of a preallocated file are trimmed", "[storage][index]") {
  TempDir dir;
  PosixFileSystem fs;
  const std::string path = dir / "p.index";
  // Two real entries followed by zero padding, as Kafka leaves an active
  // index that was preallocated to segment.index.bytes when it crashes.
  std::vector<uint8_t> b = {0, 0, 0, 4, 0, 0, 0x01, 0x00, 0, 0, 0, 9, 0, 0, 0x02, 0x00};
  b.resize(b.size() + 8 * 100, 0);
  write_bytes(fs, path, b);
  auto ix = open_index(fs, path, 1024);
  CHECK(ix.entries() == 2);
  CHECK(ix.sanity_check().is_ok());
  CHECK(ix.lookup(kBase + 100) == OffsetPosition{kBase + 9, 512});
  REQUIRE(ix.append(kBase + 20, 1024).is_ok());
  REQUIRE(ix.flush().is_ok());  // the file becomes exactly entries x 8 bytes
  CHECK(file_bytes(fs, path).size() == 24);

  // A file of nothing but zeros is an empty index.
  write_bytes(fs, path, std::vector<uint8_t>(8 * 16, 0));
  auto empty = open_index(fs, path, 1024);
  CHECK(empty.entries() == 0);
  CHECK(empty.sanity_check().is_ok());
}

TEST_CASE("offset index: corruption is detected, naming the file", "[storage][index]") {
  TempDir dir;
  PosixFileSystem fs;
  const std::string path = dir / "c.index";

  SECTION("size not a multiple of 8") {
    write_bytes(fs, path, {0, 0, 0, 4, 0, 0, 1, 0, 0, 0, 0});
    auto ix = open_index(fs, path);
    Status s = ix.sanity_check();
    CHECK(s.code() == StatusCode::kCorruption);
    CHECK(s.message().find(path) != std::string::npos);
    CHECK(s.message().find("multiple of 8") != std::string::npos);
  }
  SECTION("offsets not increasing") {
    write_bytes(fs, path, {0, 0, 0, 9, 0, 0, 1, 0, 0, 0, 0, 4, 0, 0, 2, 0});
    auto ix = open_index(fs, path);
    Status s = ix.sanity_check();
    CHECK(s.code() == StatusCode::kCorruption);
    CHECK(s.message().find("entry 1") != std::string::npos);
  }
  SECTION("positions not increasing") {
    write_bytes(fs, path, {0, 0, 0, 4, 0, 0, 2, 0, 0, 0, 0, 9, 0, 0, 1, 0});
    auto ix = open_index(fs, path);
    CHECK(ix.sanity_check().code() == StatusCode::kCorruption);
  }
  SECTION("relative offset beyond int32 (negative)") {
    write_bytes(fs, path, {0x80, 0, 0, 0, 0, 0, 1, 0});
    auto ix = open_index(fs, path);
    CHECK(ix.sanity_check().code() == StatusCode::kCorruption);
  }
  SECTION("a zero entry in the middle") {
    write_bytes(fs, path, {0, 0, 0, 4, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 2, 0});
    auto ix = open_index(fs, path);
    CHECK(ix.entries() == 3);
    CHECK(ix.sanity_check().code() == StatusCode::kCorruption);
  }
}

TEST_CASE("offset index: open errors are values", "[storage][index]") {
  MemFileSystem fs;
  auto ro = OffsetIndex::open(fs, "/missing.index", kBase, 1024, /*writable=*/false);
  CHECK(ro.status().code() == StatusCode::kNotFound);
  auto tiny = OffsetIndex::open(fs, "/tiny.index", kBase, 7);
  CHECK(tiny.status().code() == StatusCode::kInvalidArgument);
  auto ix = OffsetIndex::open(fs, "/ro.index", kBase, 1024);
  REQUIRE(ix.is_ok());
  REQUIRE(ix->close().is_ok());
  auto readonly = OffsetIndex::open(fs, "/ro.index", kBase, 1024, false);
  REQUIRE(readonly.is_ok());
  CHECK_FALSE(readonly->flush().is_ok());
}

}  // namespace CK_UNITY_ID
