// tests/unit/storage/many_partitions_test.cc: issue #3 point 8, 10,000
// partitions (see partitions()) with several segments each in one LogManager under a soft
// RLIMIT_NOFILE of 1024: created, appended to, read back (with slices of
// some held across the whole pass, as in-flight sendfiles would be),
// shut down, reopened (recovery opens every segment) and read again.
// Syncs are no-ops (no_sync_fs.h): the subject is descriptors, not
// durability, and 10,000 partitions' fsyncs would take minutes here.
#include <dirent.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <cstdlib>
#include <string>
#include <vector>

#include "log_test_util.h"
#include "no_sync_fs.h"
#include "storage/fd_cache.h"
#include "storage/log_manager.h"

namespace ciuickafka::storage::test {
namespace {

// The 10,000 partitions x 3 segments (30,000 segment files, about
// thirty times the fd limit): ~35 s under ASan on CI's quiet two cores,
// mostly file creation. CK_MANY_PARTITIONS=N runs another size; the bound
// is the same either way: the fds held do not grow with the partitions.
int partitions() {
  const char* env = std::getenv("CK_MANY_PARTITIONS");
  return env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : 10'000;
}
constexpr int kBatchesPerPartition = 3;  // one segment each (segment.bytes below)

size_t open_fds() {
  size_t n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  while (::readdir(d) != nullptr) ++n;
  ::closedir(d);
  return n - 2;  // . and ..
}

// Lowers the soft fd limit for the test's life.
class NofileLimit {
 public:
  explicit NofileLimit(rlim_t soft) {
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &old_) == 0);
    rlimit l = old_;
    l.rlim_cur = std::min<rlim_t>(soft, old_.rlim_max);
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &l) == 0);
  }
  ~NofileLimit() { ::setrlimit(RLIMIT_NOFILE, &old_); }

 private:
  rlimit old_{};
};

std::string value_for(int p, int i) { return "p" + std::to_string(p) + "-b" + std::to_string(i); }

Bytes batch_for(int p, int i) {
  protocol::BatchBuilder b{protocol::BatchOptions{}};
  const std::string v = value_for(p, i);
  REQUIRE(b.add(1000 + i, protocol::as_bytes(std::string("k")), protocol::as_bytes(v)));
  auto r = b.build();
  REQUIRE(r.ok());
  return std::move(r).value();
}

// Reads partition p from offset 0 and checks it holds batches 0..n-1 with
// their own values, at offsets 0..n-1.
void check_partition(Log& log, int p, int n) {
  auto r = log.read(0, 1 << 20);
  REQUIRE(r.is_ok());
  auto bytes = read_slices(*r);
  REQUIRE(bytes.is_ok());
  auto batches = batches_of(*bytes);
  REQUIRE(batches.size() == static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) REQUIRE(batches[static_cast<size_t>(i)].base == i);
  const std::string last = value_for(p, n - 1);
  const std::string text(bytes->begin(), bytes->end());
  REQUIRE(text.find(last) != std::string::npos);
}

// A scratch directory on tmpfs (/dev/shm) when it has room, else under
// $TMPDIR: the test creates tens of thousands of files, whose metadata I/O
// on a shared disk costs far more than the test's subject.
class ScratchDir {
 public:
  ScratchDir() {
    struct statvfs st {};
    const bool shm = ::statvfs("/dev/shm", &st) == 0 &&
                     static_cast<uint64_t>(st.f_bavail) * st.f_frsize > (uint64_t{1} << 30);
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(shm ? "/dev/shm" : (tmp != nullptr && *tmp != '\0' ? tmp : "/tmp")) +
                       "/ck_many_XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace

TEST_CASE("thousands of partitions of several segments each open and read under RLIMIT_NOFILE=1024") {
  const auto started = std::chrono::steady_clock::now();
  const int kPartitions = partitions();
  NofileLimit limit(1024);
  FdCache cache(FdCache::capacity_for_limit());
  INFO("fd cache capacity " << cache.capacity());
  REQUIRE(cache.capacity() <= 512);
  ScratchDir dir;
  NoSyncFileSystem fs;
  LogManagerConfig mc;
  mc.default_config.segment.fd_cache = &cache;
  mc.default_config.segment.segment_bytes = 1;  // every batch rolls: one segment each
  mc.default_config.retention_ms = -1;
  const std::vector<std::string> dirs{dir / "logs"};
  protocol::Uuid id;
  id.bytes[0] = 7;

  std::vector<ReadResult> held;  // slices kept across the pass, like in-flight sendfiles
  {
    auto m = LogManager::open(fs, dirs, mc, 0);
    REQUIRE(m.is_ok());
    for (int p = 0; p < kPartitions; ++p) {
      auto log = (*m)->create({"many", p}, id, mc.default_config);
      REQUIRE(log.is_ok());
      for (int i = 0; i < kBatchesPerPartition; ++i) {
        Bytes b = batch_for(p, i);
        auto r = (*log)->append(b, 0, 0);
        REQUIRE(r.is_ok());
      }
      REQUIRE((*log)->segment_count() == kBatchesPerPartition);
    }
    CHECK(cache.stats().held <= cache.capacity());
    for (int p = 0; p < kPartitions; ++p) {
      auto log = (*m)->get({"many", p});
      REQUIRE(log != nullptr);
      check_partition(*log, p, kBatchesPerPartition);
      if (p % 100 == 0) {
        auto r = log->read(0, 1 << 20);
        REQUIRE(r.is_ok());
        held.push_back(std::move(r).value());
      }
    }
    INFO("open fds " << open_fds());
    CHECK(open_fds() < 1024);
    REQUIRE((*m)->shutdown().is_ok());
  }
  // The held slices still read after eviction and shutdown.
  for (const auto& r : held) {
    auto bytes = read_slices(r);
    REQUIRE(bytes.is_ok());
    CHECK(batches_of(*bytes).size() == kBatchesPerPartition);
  }
  held.clear();
  {
    // Reopen without the clean-shutdown marker: every segment is opened and
    // scanned (recovery), then every partition is read and appended to.
    REQUIRE(fs.remove_file(dirs[0] + "/" + std::string(kCleanShutdownFile)).is_ok());
    auto m = LogManager::open(fs, dirs, mc, 0);
    if (!m) FAIL(m.status().to_string());
    CHECK((*m)->open_stats().logs_opened == static_cast<size_t>(kPartitions));
    for (int p = 0; p < kPartitions; ++p) {
      auto log = (*m)->get({"many", p});
      REQUIRE(log != nullptr);
      Bytes b = batch_for(p, kBatchesPerPartition);
      auto r = log->append(b, 0, 0);
      REQUIRE(r.is_ok());
      REQUIRE(r->base_offset == kBatchesPerPartition);
      check_partition(*log, p, kBatchesPerPartition + 1);
    }
    CHECK(cache.stats().held <= cache.capacity());
    CHECK(cache.stats().evictions > 0);
    CHECK(open_fds() < 1024);
    REQUIRE((*m)->shutdown().is_ok());
  }
  // No bound on the time here (tests assert no times): CTest's TIMEOUT
  // for the executable bounds it, so a regression to O(n^2) work fails there.
  const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  WARN("took " << secs << " s");
}

}  // namespace ciuickafka::storage::test
