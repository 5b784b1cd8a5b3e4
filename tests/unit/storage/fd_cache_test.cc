// tests/unit/storage/fd_cache_test.cc: the LRU of open segment files
// (storage/fd_cache.h), LazyFile reopening, and segments whose files are
// evicted while slices of them are still being read.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "fs_fixtures.h"
#include "log_test_util.h"
#include "storage/fd_cache.h"
#include "storage/lazy_file.h"
#include "storage/segment.h"

namespace ciuickafka::storage::test {
namespace {

bool fd_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

std::shared_ptr<io::File> open_file(io::FileSystem& fs, const std::string& path) {
  auto f = fs.open(path, io::OpenMode::kCreate);
  REQUIRE(f.is_ok());
  return std::shared_ptr<io::File>(std::move(f).value());
}

}  // namespace

TEST_CASE("FdCache evicts the least recently used file past its capacity") {
  PosixFs env;
  FdCache cache(2);
  const uint64_t a = cache.new_key(), b = cache.new_key(), c = cache.new_key();
  REQUIRE(a != b);
  REQUIRE(b != c);
  int fd_a = cache.insert(a, open_file(env.fs, env.root() + "/a"))->fd();
  int fd_b = cache.insert(b, open_file(env.fs, env.root() + "/b"))->fd();
  REQUIRE(cache.lookup(a) != nullptr);  // a is now the most recent: b goes next
  cache.insert(c, open_file(env.fs, env.root() + "/c"));
  CHECK(cache.contains(a));
  CHECK_FALSE(cache.contains(b));
  CHECK(cache.contains(c));
  CHECK(cache.lookup(b) == nullptr);
  CHECK(fd_open(fd_a));
  CHECK_FALSE(fd_open(fd_b));  // evicted and nobody held it: closed
  auto s = cache.stats();
  CHECK(s.held == 2);
  CHECK(s.evictions == 1);
  CHECK(s.misses == 3);
  CHECK(s.hits == 1);
}

TEST_CASE("FdCache eviction leaves a file open while a user holds it") {
  PosixFs env;
  FdCache cache(1);
  const uint64_t a = cache.new_key(), b = cache.new_key();
  auto held = cache.insert(a, open_file(env.fs, env.root() + "/a"));
  REQUIRE(held->append(std::vector<uint8_t>{1, 2, 3}).is_ok());
  cache.insert(b, open_file(env.fs, env.root() + "/b"));
  REQUIRE_FALSE(cache.contains(a));
  const int fd = held->fd();
  REQUIRE(fd_open(fd));  // an in-flight sendfile would still work
  uint8_t got[3] = {};
  REQUIRE(::pread(fd, got, 3, 0) == 3);
  CHECK(got[2] == 3);
  held.reset();
  CHECK_FALSE(fd_open(fd));
}

TEST_CASE("FdCache set_capacity, erase, and a lost insert race") {
  PosixFs env;
  FdCache cache(4);
  std::vector<uint64_t> keys;
  for (int i = 0; i < 4; ++i) {
    keys.push_back(cache.new_key());
    cache.insert(keys.back(), open_file(env.fs, env.root() + "/f" + std::to_string(i)));
  }
  REQUIRE(cache.stats().held == 4);
  cache.set_capacity(2);
  CHECK(cache.stats().held == 2);
  CHECK(cache.contains(keys[3]));
  CHECK(cache.contains(keys[2]));
  CHECK(cache.erase(keys[3]));
  CHECK_FALSE(cache.erase(keys[3]));
  CHECK(cache.stats().held == 1);
  // Two openers of the same key: the second gets the first's file.
  auto first = open_file(env.fs, env.root() + "/f0");
  auto second = open_file(env.fs, env.root() + "/f0");
  const uint64_t k = cache.new_key();
  auto got1 = cache.insert(k, first);
  auto got2 = cache.insert(k, second);
  CHECK(got1.get() == first.get());
  CHECK(got2.get() == first.get());
}

TEST_CASE("FdCache stays bounded and consistent under concurrent users") {
  PosixFs env;
  FdCache cache(8);
  std::vector<std::unique_ptr<LazyFile>> files;
  for (int i = 0; i < 40; ++i) {
    auto f = env.fs.open(env.root() + "/f" + std::to_string(i), io::OpenMode::kCreate);
    REQUIRE(f.is_ok());
    REQUIRE((*f)->append(std::vector<uint8_t>{static_cast<uint8_t>(i)}).is_ok());
    files.push_back(std::make_unique<LazyFile>(env.fs, cache, std::move(f).value()));
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const size_t n = static_cast<size_t>((i * 7 + t * 13) % 40);
        auto f = files[n]->get();
        uint8_t b = 0xff;
        if (!f || !(*f)->read_at(0, std::span<uint8_t>(&b, 1)) || b != n) ++bad;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(bad.load() == 0);
  CHECK(cache.stats().held <= 8);
  CHECK(cache.stats().evictions > 0);
  files.clear();
  CHECK(cache.stats().held == 0);  // a LazyFile's destructor leaves the cache
}

TEST_CASE("FdCache capacity follows the soft RLIMIT_NOFILE") {
  rlimit old{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &old) == 0);
  if (old.rlim_max != RLIM_INFINITY && old.rlim_max < 1024) {
    WARN("hard RLIMIT_NOFILE below 1024; checking only the minimum");
    CHECK(FdCache::capacity_for_limit() >= 16);
    return;
  }
  rlimit low = old;
  low.rlim_cur = 1024;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  const size_t at_1024 = FdCache::capacity_for_limit();
  low.rlim_cur = 20;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  const size_t at_20 = FdCache::capacity_for_limit();
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &old) == 0);
  CHECK(at_1024 == 512);
  CHECK(at_20 == 16);
}

TEST_CASE("LazyFile reopens an evicted file, follows a rename to .deleted, and fails once closed") {
  PosixFs env;
  FdCache cache(1);
  const std::string p = env.root() + "/00000000000000000000.log";
  auto f = env.fs.open(p, io::OpenMode::kCreate);
  REQUIRE(f.is_ok());
  REQUIRE((*f)->append(std::vector<uint8_t>{42}).is_ok());
  LazyFile lazy(env.fs, cache, std::move(f).value());
  REQUIRE(lazy.cached());
  // Another file takes the only slot.
  const uint64_t other = cache.new_key();
  cache.insert(other, open_file(env.fs, env.root() + "/other"));
  REQUIRE_FALSE(lazy.cached());
  {
    auto again = lazy.get();
    REQUIRE(again.is_ok());
    CHECK(lazy.cached());
    uint8_t b = 0;
    REQUIRE((*again)->read_at(0, std::span<uint8_t>(&b, 1)).is_ok());
    CHECK(b == 42);
  }  // our reference goes
  // The log renames a deleted segment's files; a reader reopening finds them.
  REQUIRE(env.fs.rename(p, p + ".deleted").is_ok());
  cache.insert(cache.new_key(), open_file(env.fs, env.root() + "/other2"));
  REQUIRE_FALSE(lazy.cached());
  auto moved = lazy.get();
  REQUIRE(moved.is_ok());
  CHECK((*moved)->path() == p + ".deleted");
  REQUIRE(lazy.close().is_ok());
  CHECK_FALSE(lazy.get().is_ok());
  CHECK((*moved)->fd() >= 0);  // a user holding it is unaffected
}

TEST_CASE("LazyFile never reopens a different file that took its name") {
  PosixFs env;
  FdCache cache(1);
  const std::string p = env.root() + "/00000000000000000000.log";
  auto f = env.fs.open(p, io::OpenMode::kCreate);
  REQUIRE(f.is_ok());
  REQUIRE((*f)->append(std::vector<uint8_t>{1}).is_ok());
  LazyFile lazy(env.fs, cache, std::move(f).value());
  // Compaction's swap: the old file goes to .deleted, then is unlinked; a
  // new file is renamed to the old name.
  REQUIRE(env.fs.rename(p, p + ".deleted").is_ok());
  REQUIRE(env.fs.remove_file(p + ".deleted").is_ok());
  auto n = env.fs.open(p, io::OpenMode::kCreateExclusive);
  REQUIRE(n.is_ok());
  REQUIRE((*n)->append(std::vector<uint8_t>{2}).is_ok());
  cache.insert(cache.new_key(), open_file(env.fs, env.root() + "/other"));
  REQUIRE_FALSE(lazy.cached());
  auto got = lazy.get();
  REQUIRE_FALSE(got.is_ok());
  CHECK(got.status().code() == StatusCode::kNotFound);
}

TEST_CASE("LazyFile keeps in-memory files without caching them") {
  MemFs env;
  FdCache cache(1);
  auto f = env.fs.open(env.root() + "/x", io::OpenMode::kCreate);
  REQUIRE(f.is_ok());
  LazyFile lazy(env.fs, cache, std::move(f).value());
  CHECK_FALSE(lazy.cached());
  CHECK(cache.stats().held == 0);
  auto a = lazy.get(), b = lazy.get();
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  CHECK(a->get() == b->get());
}

TEMPLATE_TEST_CASE("Segment reads survive eviction of the segment's file", "", PosixFs, UringFs, MemFs) {
  TestType env;
  FdCache cache(1);
  SegmentConfig cfg;
  cfg.fd_cache = &cache;
  cfg.index_interval_bytes = 100;
  auto a = Segment::open(env.fs, env.root(), 0, cfg, true);
  REQUIRE(a.is_ok());
  auto b = Segment::open(env.fs, env.root(), 1000, cfg, true);
  REQUIRE(b.is_ok());
  std::vector<Bytes> written;
  int64_t next = 0;
  for (int i = 0; i < 20; ++i) {
    Bytes batch = make_batch(3, 1000 + i, 50);
    protocol::set_base_offset(batch, next);
    next += 3;
    REQUIRE((*a)->append(batch, 0).is_ok());  // reopens a's file each time b took the slot
    Bytes other = make_batch(1, 0, 10);
    protocol::set_base_offset(other, 1000 + i);
    REQUIRE((*b)->append(other, 0).is_ok());
    written.push_back(batch);
  }
  const bool real_fds = std::string(env.fs.name()) != "memory";  // in-memory files are never cached
  CHECK_FALSE((*a)->file_cached());
  CHECK(cache.stats().held == (real_fds ? 1u : 0u));
  auto slice = (*a)->read(30, 1 << 20, (*a)->published_size(), std::numeric_limits<int64_t>::max(), true);
  REQUIRE(slice.is_ok());
  REQUIRE(slice->has_value());
  // b takes the slot again: the slice's file is evicted but held open.
  auto other = (*b)->read(1000, 100, (*b)->published_size(), std::numeric_limits<int64_t>::max(), true);
  REQUIRE(other.is_ok());
  CHECK_FALSE((*a)->file_cached());
  const FileSlice& s = **slice;
  CHECK(s.first_offset == 30);
  Bytes got(s.length);
  auto n = s.file->read_at(s.position, got);
  REQUIRE(n.is_ok());
  REQUIRE(*n == s.length);
  if (s.fd >= 0) {  // the fd a sendfile would use is still valid
    Bytes via_fd(s.length);
    REQUIRE(::pread(s.fd, via_fd.data(), s.length, static_cast<off_t>(s.position)) ==
            static_cast<ssize_t>(s.length));
    CHECK(via_fd == got);
  }
  Bytes expected;
  for (size_t i = 10; i < written.size(); ++i) expected.insert(expected.end(), written[i].begin(), written[i].end());
  CHECK(got == expected);
  // Recovery and flush go through the cache too.
  REQUIRE((*a)->flush().is_ok());
  auto cut = (*a)->recover();
  REQUIRE(cut.is_ok());
  CHECK(*cut == 0);
  CHECK((*a)->next_offset() == next);
}

}  // namespace ciuickafka::storage::test
