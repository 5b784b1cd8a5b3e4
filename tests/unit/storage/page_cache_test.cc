// tests/unit/storage/page_cache_test.cc: read_is_cold and warm_read on a real
// file whose pages are dropped from the page cache (storage/page_cache.h).
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "fs_fixtures.h"
#include "storage/page_cache.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::io;
using namespace ciuickafka::storage::test;

namespace CK_UNITY_ID {
namespace {

constexpr uint64_t kMiB = 1 << 20;

ReadResult slice_of(const std::shared_ptr<File>& f, uint64_t position, uint64_t length) {
  ReadResult r;
  LogSlice s;
  s.slice.file = f.get();
  s.slice.fd = f->fd();
  s.slice.keep_open = f;
  s.slice.position = position;
  s.slice.length = length;
  r.slices.push_back(s);
  r.bytes = length;
  return r;
}

// Writes `mib` MiB, syncs and drops the file's pages from the page cache.
std::shared_ptr<File> cold_file(PosixFs& t, uint64_t mib) {
  auto opened = t.fs.open(t.root() + "/00000000000000000000.log", OpenMode::kCreate);
  REQUIRE(opened.is_ok());
  std::shared_ptr<File> f = std::move(*opened);
  std::vector<uint8_t> chunk(kMiB);
  for (uint64_t i = 0; i < mib; ++i) {
    for (size_t j = 0; j < chunk.size(); ++j) chunk[j] = static_cast<uint8_t>(i * 7 + j * 13);
    REQUIRE(f->append(chunk).is_ok());
  }
  REQUIRE(f->sync().is_ok());
  REQUIRE(::posix_fadvise(f->fd(), 0, 0, POSIX_FADV_DONTNEED) == 0);
  return f;
}

// Whether one byte at `offset` is cached: a RWF_NOWAIT read of the test's
// own, not through the code under test.
bool cached(const File& f, uint64_t offset) {
  uint8_t b;
  iovec iov{&b, 1};
  return ::preadv2(f.fd(), &iov, 1, static_cast<off_t>(offset), RWF_NOWAIT) == 1;
}

}  // namespace

TEST_CASE("page cache: a read of dropped pages is cold until warm_read brings it in", "[storage][io]") {
  PosixFs t;
  auto f = cold_file(t, 16);
  REQUIRE_FALSE(cached(*f, 0));  // else the kernel kept the pages, and nothing below means anything

  // Probes (here and in read_is_cold) may start the kernel's readahead of
  // the page they ask about, so each check below asks about bytes no earlier
  // one did.
  ReadResult r = slice_of(f, 1 * kMiB, 12 * kMiB);
  CHECK(read_is_cold(r));

  // A slice whose first page is cached and whose last is not: still cold.
  std::vector<uint8_t> one(4096);
  REQUIRE(f->read_at(2 * kMiB, one).is_ok());
  REQUIRE(cached(*f, 2 * kMiB));
  CHECK(read_is_cold(slice_of(f, 2 * kMiB, 8 * kMiB)));

  auto warmed = warm_read(r);
  REQUIRE(warmed.is_ok());
  CHECK(*warmed == 12 * kMiB);
  CHECK_FALSE(read_is_cold(r));
  for (uint64_t off = 1 * kMiB; off < 13 * kMiB; off += kMiB / 2) CHECK(cached(*f, off));

  // The slice's bytes are the file's, read again through the cache.
  auto bytes = read_slices(r);
  REQUIRE(bytes.is_ok());
  CHECK((*bytes)[0] == static_cast<uint8_t>(1 * 7));
  CHECK((*bytes)[12 * kMiB - 1] == static_cast<uint8_t>(12 * 7 + (kMiB - 1) * 13));
}

TEST_CASE("page cache: slices without an fd are never cold, and warm_read reads nothing of them",
          "[storage][io]") {
  MemFs t;
  auto opened = t.fs.open(t.root() + "/a.log", OpenMode::kCreate);
  REQUIRE(opened.is_ok());
  std::shared_ptr<File> f = std::move(*opened);
  REQUIRE(f->append(std::vector<uint8_t>(4096, 1)).is_ok());
  ReadResult r = slice_of(f, 0, 4096);
  REQUIRE(r.slices[0].slice.fd < 0);
  CHECK_FALSE(read_is_cold(r));
  auto warmed = warm_read(r);
  REQUIRE(warmed.is_ok());
  CHECK(*warmed == 0);
  CHECK_FALSE(read_is_cold(ReadResult{}));
}

TEST_CASE("page cache: a slice that reaches past the file's end warms what is there", "[storage][io]") {
  PosixFs t;
  auto f = cold_file(t, 2);
  ReadResult r = slice_of(f, kMiB, 2 * kMiB);  // the file ended early (truncated under the reader)
  auto warmed = warm_read(r);
  REQUIRE(warmed.is_ok());
  CHECK(*warmed == kMiB);
}
}  // namespace CK_UNITY_ID
