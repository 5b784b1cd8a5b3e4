// tests/unit/storage/file_test.cc: the File/FileSystem contract, one body run
// against the POSIX, io_uring and in-memory implementations, plus the
// directory helpers.
#include <sys/stat.h>

#include <cstdlib>
#include <catch2/catch.hpp>
#include <cerrno>
#include <numeric>
#include <string>
#include <vector>

#include "fs_fixtures.h"
#include "storage/io/file.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::io;
using namespace ciuickafka::storage::test;

// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 31 + (i >> 8));
  return v;
}

std::vector<uint8_t> read_all(File& f) {
  auto size = f.size();
  REQUIRE(size.is_ok());
  std::vector<uint8_t> out(*size);
  auto n = f.read_at(0, out);
  REQUIRE(n.is_ok());
  REQUIRE(*n == out.size());
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("file: write, append, read, size, truncate, sync", "[storage][io]", PosixFs, UringFs, MemFs) {
  TestType t;
  auto f = t.fs.open(t.root() + "/a", OpenMode::kCreate);
  REQUIRE(f.is_ok());
  File& file = **f;
  CHECK(file.path() == t.root() + "/a");
  CHECK(*file.size() == 0);

  REQUIRE(file.append(bytes("hello ")).is_ok());
  REQUIRE(file.append(bytes("world")).is_ok());
  CHECK(*file.size() == 11);
  REQUIRE(file.write_at(0, bytes("J")).is_ok());
  REQUIRE(file.sync().is_ok());
  CHECK(read_all(file) == bytes("Jello world"));

  // A read that crosses the end is short; one past the end reads nothing.
  std::vector<uint8_t> buf(8);
  CHECK(*file.read_at(6, buf) == 5);
  CHECK(std::string(buf.begin(), buf.begin() + 5) == "world");
  CHECK(*file.read_at(11, buf) == 0);
  CHECK(*file.read_at(1000, buf) == 0);

  // Writing past the end leaves a zero-filled hole.
  REQUIRE(file.write_at(13, bytes("!")).is_ok());
  CHECK(read_all(file) == bytes(std::string("Jello world\0\0!", 14)));

  REQUIRE(file.truncate(5).is_ok());
  CHECK(read_all(file) == bytes("Jello"));
  REQUIRE(file.truncate(0).is_ok());
  CHECK(*file.size() == 0);

  // Preallocation reserves space without changing the visible size.
  REQUIRE(file.preallocate(0, 1 << 20).is_ok());
  CHECK(*file.size() == 0);
  REQUIRE(file.close().is_ok());
  CHECK_FALSE(file.sync().is_ok());
  CHECK_FALSE(file.write_at(0, bytes("x")).is_ok());
}

TEMPLATE_TEST_CASE("file: a multi-megabyte write round-trips", "[storage][io]", PosixFs, UringFs, MemFs) {
  TestType t;
  auto f = t.fs.open(t.root() + "/big", OpenMode::kCreate);
  REQUIRE(f.is_ok());
  auto data = pattern(3 * 1024 * 1024 + 17, 7);
  REQUIRE((*f)->write_at(0, data).is_ok());
  REQUIRE((*f)->sync().is_ok());
  REQUIRE((*f)->close().is_ok());
  auto back = read_file(t.fs, t.root() + "/big");
  REQUIRE(back.is_ok());
  CHECK(*back == data);
}

TEMPLATE_TEST_CASE("file: open modes", "[storage][io]", PosixFs, UringFs, MemFs) {
  TestType t;
  const std::string p = t.root() + "/m";
  auto missing = t.fs.open(p, OpenMode::kReadOnly);
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message().find(p) != std::string::npos);
  CHECK_FALSE(t.fs.open(p, OpenMode::kReadWrite).is_ok());

  {
    auto f = t.fs.open(p, OpenMode::kCreateExclusive);
    REQUIRE(f.is_ok());
    REQUIRE((*f)->append(bytes("abc")).is_ok());
  }
  auto again = t.fs.open(p, OpenMode::kCreateExclusive);
  REQUIRE_FALSE(again.is_ok());
  CHECK(again.status().err() == EEXIST);

  {
    auto ro = t.fs.open(p, OpenMode::kReadOnly);
    REQUIRE(ro.is_ok());
    CHECK(read_all(**ro) == bytes("abc"));
    CHECK_FALSE((*ro)->write_at(0, bytes("x")).is_ok());
  }
  {
    auto f = t.fs.open(p, OpenMode::kCreate);  // existing file kept
    REQUIRE(f.is_ok());
    CHECK(*(*f)->size() == 3);
  }
  {
    auto f = t.fs.open(p, OpenMode::kCreateTruncate);
    REQUIRE(f.is_ok());
    CHECK(*(*f)->size() == 0);
  }
  CHECK_FALSE(t.fs.open(t.root() + "/no/such/dir/file", OpenMode::kCreate).is_ok());
}

TEMPLATE_TEST_CASE("file system: directories, rename, remove, atomic replace", "[storage][io]", PosixFs, UringFs,
                   MemFs) {
  TestType t;
  const std::string d = t.root() + "/topic-0";
  REQUIRE(t.fs.create_dir(d).is_ok());
  REQUIRE(t.fs.create_dir(d).is_ok());  // exists: fine
  CHECK(*t.fs.file_type(d) == FileType::kDirectory);
  CHECK(*t.fs.file_type(d + "/x") == FileType::kMissing);

  REQUIRE(write_file_atomically(t.fs, d + "/b", bytes("one")).is_ok());
  REQUIRE(write_file_atomically(t.fs, d + "/a", bytes("two")).is_ok());
  REQUIRE(write_file_atomically(t.fs, d + "/b", bytes("three")).is_ok());  // replace
  CHECK(*t.fs.file_type(d + "/b") == FileType::kFile);
  CHECK(*read_file(t.fs, d + "/b") == bytes("three"));
  CHECK(*t.fs.list_dir(d) == std::vector<std::string>{"a", "b"});  // sorted, no .tmp left
  CHECK(*t.fs.list_dir(t.root()) == std::vector<std::string>{"topic-0"});

  REQUIRE(t.fs.rename(d + "/a", d + "/b").is_ok());
  CHECK(*read_file(t.fs, d + "/b") == bytes("two"));
  CHECK(*t.fs.list_dir(d) == std::vector<std::string>{"b"});
  CHECK(t.fs.rename(d + "/a", d + "/c").code() == StatusCode::kNotFound);

  REQUIRE(t.fs.sync_dir(d).is_ok());
  CHECK_FALSE(t.fs.remove_dir(d).is_ok());  // not empty
  REQUIRE(t.fs.remove_file(d + "/b").is_ok());
  CHECK(t.fs.remove_file(d + "/b").code() == StatusCode::kNotFound);
  REQUIRE(t.fs.remove_dir(d).is_ok());
  CHECK(t.fs.list_dir(d).status().code() == StatusCode::kNotFound);

  REQUIRE(t.fs.create_dir(d).is_ok());
  REQUIRE(t.fs.create_dir(d + "/sub").is_ok());
  REQUIRE(write_file_atomically(t.fs, d + "/sub/f", bytes("x")).is_ok());
  REQUIRE(write_file_atomically(t.fs, d + "/g", bytes("y")).is_ok());
  REQUIRE(remove_tree(t.fs, d).is_ok());
  CHECK(*t.fs.file_type(d) == FileType::kMissing);
}

TEST_CASE("file system: make_file_system is POSIX unless io_uring is asked for", "[storage][io]") {
  if (std::getenv("CK_STORAGE_IO") == nullptr) {
    Status st;
    auto plain = make_file_system(&st);
    REQUIRE(plain != nullptr);
    CHECK(std::string(plain->name()) == "posix");
    CHECK(st.is_ok());
  }
  Status uring;
  auto fs = make_file_system(Backend::kUring, &uring);
  REQUIRE(fs != nullptr);
  if (uring.is_ok()) {
    CHECK(std::string(fs->name()) == "io_uring");
  } else {
    CHECK(std::string(fs->name()) == "posix");
    WARN("io_uring unavailable, POSIX chosen: " << uring.to_string());
  }
}

// st_blocks: what the file holds on disk, written or only reserved.
uint64_t allocated(int fd) {
  struct stat st {};
  REQUIRE(::fstat(fd, &st) == 0);
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

TEST_CASE("file: preallocating a range past the end reserves blocks, and a truncate to the same size frees them",
          "[storage][io]") {
  PosixFs t;
  auto f = t.fs.open(t.root() + "/p", OpenMode::kCreateExclusive);
  REQUIRE(f.is_ok());
  File& file = **f;
  REQUIRE(file.write_at(0, pattern(100000, 7)).is_ok());
  REQUIRE(file.sync().is_ok());
  const uint64_t before = allocated(file.fd());
  REQUIRE(file.preallocate(200000, 4 << 20).is_ok());
  CHECK(*file.size() == 100000);  // KEEP_SIZE: readers see nothing new
  CHECK(allocated(file.fd()) >= before + (4 << 20));
  // Writing into the reserved range, and past it, works as before.
  REQUIRE(file.write_at(100000, pattern(5 << 20, 9)).is_ok());
  CHECK(*file.size() == 100000 + (5 << 20));
  REQUIRE(file.sync().is_ok());
  REQUIRE(file.preallocate(*file.size(), 8 << 20).is_ok());
  CHECK(allocated(file.fd()) >= *file.size() + (8 << 20));
  REQUIRE(file.truncate(*file.size()).is_ok());
  CHECK(*file.size() == 100000 + (5 << 20));
  CHECK(allocated(file.fd()) < *file.size() + (256 << 10));
  auto back = read_all(file);
  CHECK(std::vector<uint8_t>(back.begin() + 100000, back.end()) == pattern(5 << 20, 9));
}

TEST_CASE("file: parent_dir", "[storage][io]") {
  CHECK(parent_dir("/a/b/c") == "/a/b");
  CHECK(parent_dir("/a") == "/");
  CHECK(parent_dir("a") == ".");
  CHECK(parent_dir("a/b") == "a");
}

}  // namespace CK_UNITY_ID
