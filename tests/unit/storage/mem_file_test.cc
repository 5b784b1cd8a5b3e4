// tests/unit/storage/mem_file_test.cc: the in-memory file system's fault
// hooks and its crash model (what survives a power loss).
#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <vector>

#include "storage/io/mem_file.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::io;

// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::string text(const Result<std::vector<uint8_t>>& r) {
  REQUIRE(r.is_ok());
  return std::string(r->begin(), r->end());
}

struct Fixture {
  Fixture() { REQUIRE(fs.create_dir("/d").is_ok()); }
  std::unique_ptr<File> open(const std::string& p) {
    auto f = fs.open(p, OpenMode::kCreate);
    REQUIRE(f.is_ok());
    return std::move(f).value();
  }
  MemFileSystem fs;
};

}  // namespace

TEST_CASE("mem fs: the nth write fails, optionally after landing a prefix", "[storage][io][mem]") {
  Fixture t;
  auto f = t.open("/d/log");
  t.fs.fail_nth_write(2, ENOSPC, 3);
  REQUIRE(f->append(bytes("aaaa")).is_ok());
  Status s = f->append(bytes("bbbbbb"));
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.err() == ENOSPC);
  CHECK(s.message().find("/d/log") != std::string::npos);
  CHECK(text(t.fs.contents("/d/log")) == "aaaabbb");  // a torn write: 3 of 6 bytes landed
  REQUIRE(f->append(bytes("c")).is_ok());             // one-shot: the next write works
  CHECK(text(t.fs.contents("/d/log")) == "aaaabbbc");
  CHECK(t.fs.write_count() == 3);
}

TEST_CASE("mem fs: an empty read of a non-empty file reads nothing", "[storage][io][mem]") {
  // An index file torn inside its first entry is read into an empty buffer
  // (storage/index_file.cc): no bytes, and no memcpy to a null pointer.
  Fixture t;
  auto f = t.open("/d/index");
  REQUIRE(f->append(bytes("abc")).is_ok());
  auto n = f->read_at(0, std::span<uint8_t>());
  REQUIRE(n.is_ok());
  CHECK(*n == 0);
}

TEST_CASE("mem fs: a failed sync leaves the synced image unchanged", "[storage][io][mem]") {
  Fixture t;
  auto f = t.open("/d/log");
  REQUIRE(t.fs.sync_dir("/d").is_ok());
  REQUIRE(f->append(bytes("one")).is_ok());
  REQUIRE(f->sync().is_ok());
  REQUIRE(f->append(bytes("two")).is_ok());
  t.fs.fail_nth_sync(1);
  CHECK(f->sync().err() == EIO);
  CHECK(text(t.fs.synced_contents("/d/log")) == "one");
  t.fs.crash();
  CHECK(text(t.fs.contents("/d/log")) == "one");
}

TEST_CASE("mem fs: crash loses the unsynced suffix", "[storage][io][mem]") {
  Fixture t;
  auto f = t.open("/d/log");
  REQUIRE(t.fs.sync_dir("/d").is_ok());
  REQUIRE(f->append(bytes("synced|")).is_ok());
  REQUIRE(f->sync().is_ok());
  REQUIRE(f->append(bytes("dirty")).is_ok());
  REQUIRE(f->write_at(0, bytes("S")).is_ok());  // unsynced overwrite inside the synced range
  CHECK(text(t.fs.contents("/d/log")) == "Synced|dirty");

  t.fs.crash();
  CHECK(text(t.fs.contents("/d/log")) == "synced|");
  // Handles from before the crash are dead.
  CHECK(f->append(bytes("x")).err() == EIO);
  CHECK_FALSE(f->size().is_ok());
}

TEST_CASE("mem fs: crash may keep a prefix of the unsynced tail", "[storage][io][mem]") {
  Fixture t;
  auto f = t.open("/d/log");
  REQUIRE(t.fs.sync_dir("/d").is_ok());
  REQUIRE(f->append(bytes("base")).is_ok());
  REQUIRE(f->sync().is_ok());
  REQUIRE(f->append(bytes("0123456789")).is_ok());
  size_t seen_tail = 0;
  t.fs.crash([&](const std::string& path, size_t tail) {
    CHECK(path == "/d/log");
    seen_tail = tail;
    return size_t{4};
  });
  CHECK(seen_tail == 10);
  CHECK(text(t.fs.contents("/d/log")) == "base0123");
  // What survived a crash is what is on disk now: a second crash keeps it.
  t.fs.crash();
  CHECK(text(t.fs.contents("/d/log")) == "base0123");
}

TEST_CASE("mem fs: directory entries are durable only after sync_dir", "[storage][io][mem]") {
  Fixture t;
  {
    auto f = t.open("/d/new");
    REQUIRE(f->append(bytes("data")).is_ok());
    REQUIRE(f->sync().is_ok());  // contents synced, but the name is not
  }
  t.fs.crash();
  CHECK(*t.fs.file_type("/d/new") == FileType::kMissing);

  {
    auto f = t.open("/d/kept");
    REQUIRE(f->append(bytes("v1")).is_ok());
    REQUIRE(f->sync().is_ok());
  }
  REQUIRE(t.fs.sync_dir("/d").is_ok());
  REQUIRE(t.fs.remove_file("/d/kept").is_ok());
  t.fs.crash();  // the removal was never made durable
  CHECK(text(t.fs.contents("/d/kept")) == "v1");
}

TEST_CASE("mem fs: atomic replace leaves old or new contents, never a mix", "[storage][io][mem]") {
  // Fail each step of write_file_atomically in turn (write, sync), crash, and
  // check the old contents survive; then let it complete and check the new.
  for (int step = 0; step < 2; ++step) {
    Fixture t;
    REQUIRE(write_file_atomically(t.fs, "/d/cp", bytes("old contents")).is_ok());
    if (step == 0) t.fs.fail_nth_write(1, EIO, 4);
    if (step == 1) t.fs.fail_nth_sync(1);
    CHECK_FALSE(write_file_atomically(t.fs, "/d/cp", bytes("new contents")).is_ok());
    t.fs.crash();
    CHECK(text(t.fs.contents("/d/cp")) == "old contents");
  }
  Fixture t;
  REQUIRE(write_file_atomically(t.fs, "/d/cp", bytes("old contents")).is_ok());
  REQUIRE(write_file_atomically(t.fs, "/d/cp", bytes("new contents")).is_ok());
  t.fs.crash();
  CHECK(text(t.fs.contents("/d/cp")) == "new contents");
  CHECK(*t.fs.list_dir("/d") == std::vector<std::string>{"cp"});
}

TEST_CASE("mem fs: an unlinked file stays readable through an open handle", "[storage][io][mem]") {
  Fixture t;
  auto f = t.open("/d/gone");
  REQUIRE(f->append(bytes("abc")).is_ok());
  REQUIRE(t.fs.remove_file("/d/gone").is_ok());
  std::vector<uint8_t> buf(3);
  CHECK(*f->read_at(0, buf) == 3);
  CHECK(f->fd() == -1);
}

TEST_CASE("mem fs: power_off crashes and refuses every call until power_on", "[storage][io][mem]") {
  Fixture t;
  auto f = t.open("/d/log");
  REQUIRE(t.fs.sync_dir("/d").is_ok());
  REQUIRE(f->append(bytes("kept|")).is_ok());
  REQUIRE(f->sync().is_ok());
  REQUIRE(f->append(bytes("lost")).is_ok());

  t.fs.power_off();
  CHECK(t.fs.is_powered_off());
  // What a dying owner still tries changes nothing: an atomic replace (the
  // way a clean-shutdown marker is written), a new file, a removal.
  const std::vector<uint8_t> marker = bytes("clean");
  CHECK(write_file_atomically(t.fs, "/d/marker", marker).err() == EIO);
  CHECK(t.fs.open("/d/new", OpenMode::kCreate).status().err() == EIO);
  CHECK(t.fs.remove_file("/d/log").err() == EIO);
  CHECK(t.fs.list_dir("/d").status().err() == EIO);
  CHECK(t.fs.file_type("/d/log").status().err() == EIO);
  CHECK(t.fs.sync_dir("/d").err() == EIO);
  CHECK(f->append(bytes("x")).err() == EIO);
  CHECK(f->sync().err() == EIO);

  t.fs.power_on();
  CHECK_FALSE(t.fs.is_powered_off());
  // The next owner sees exactly what the crash kept; the old handle stays dead.
  CHECK(text(read_file(t.fs, "/d/log")) == "kept|");
  CHECK(t.fs.file_type("/d/marker").value() == FileType::kMissing);
  CHECK(f->append(bytes("x")).err() == EIO);
  auto g = t.open("/d/log");
  REQUIRE(g->append(bytes("again")).is_ok());
  CHECK(text(t.fs.contents("/d/log")) == "kept|again");
}

}  // namespace CK_UNITY_ID
