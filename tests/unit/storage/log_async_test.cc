// tests/unit/storage/log_async_test.cc: Log::append_async, the append path
// through io_uring: writes queued on a Ring, published in offset order when
// they complete (whatever order the kernel completes them in, and from
// however many rings), rolls while writes are in flight, a failed write, and
// group commit syncing through its own ring. Real files in temp dirs;
// skipped (exit code 77) where io_uring is refused.
#include <signal.h>
#include <sys/stat.h>
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "fs_fixtures.h"
#include "log_test_util.h"
#include "storage/group_commit.h"
#include "storage/io/posix_file.h"
#include "storage/io/ring.h"
#include "temp_dir.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::test;

namespace {

std::unique_ptr<io::Ring> make_ring() {
  require_io_uring();
  auto r = io::Ring::create(256);
  REQUIRE(r.is_ok());
  return std::move(r).value();
}

std::shared_ptr<Log> open_shared(io::FileSystem& fs, const std::string& dir, const LogConfig& cfg) {
  return std::shared_ptr<Log>(open_log(fs, dir, cfg));
}

// Reads every batch of the log from its start and checks that offsets are
// contiguous from 0 to the LEO; returns the batches' bytes by base offset.
std::map<int64_t, Bytes> read_all(const Log& log) {
  std::map<int64_t, Bytes> out;
  int64_t next = log.log_start_offset();
  while (next < log.log_end_offset()) {
    Bytes blob = read_bytes(log, next, 1 << 20);
    REQUIRE(!blob.empty());
    size_t at = 0;
    for (const auto& b : batches_of(blob)) {
      REQUIRE(b.base == next);
      out[b.base] = Bytes(blob.begin() + static_cast<std::ptrdiff_t>(at),
                          blob.begin() + static_cast<std::ptrdiff_t>(at + b.size));
      at += b.size;
      next = b.last + 1;
    }
  }
  REQUIRE(next == log.log_end_offset());
  return out;
}

// A new log holding one written batch of 3 records (offsets 0-2): what the
// failed-write tests start from.
std::shared_ptr<Log> log_with_one_batch(io::FileSystem& fs, const std::string& dir) {
  auto log = open_shared(fs, dir, LogConfig{});
  Bytes first = make_batch(3, 100, 200);
  REQUIRE(log->append(first, 0, 0).is_ok());
  REQUIRE(log->log_end_offset() == 3);
  return log;
}

// Writes past the file-size limit fail with EFBIG (SIGXFSZ ignored) while
// this lives: a deterministic way to make a ring write fail.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(uint64_t bytes) {
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_) == 0);
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old_;
    small.rlim_cur = bytes;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  }
  ~FileSizeLimit() { lift(); }
  void lift() {
    if (lifted_) return;
    lifted_ = true;
    (void)::setrlimit(RLIMIT_FSIZE, &old_);
    ::signal(SIGXFSZ, old_handler_);
  }

 private:
  struct rlimit old_ {};
  sighandler_t old_handler_ = SIG_DFL;
  bool lifted_ = false;
};

// Reaps ring completions until done() holds. The ring also completes the
// appends' preallocations (Segment::preallocation_due), so a count of
// completions says nothing about one write: tests wait for its callback.
template <class Done>
void wait_until(io::Ring& ring, Done done) {
  while (!done()) {
    REQUIRE(ring.in_flight() > 0);  // else it can never hold
    REQUIRE(ring.wait_completions(1).is_ok());
  }
}

}  // namespace

TEST_CASE("log async: a queued write is not readable until its completion is reaped", "[storage][log][uring]") {
  auto ring = make_ring();
  TempDir dir;
  io::PosixFileSystem fs;
  auto log = open_shared(fs, dir / "t-0", LogConfig{});
  Bytes b = make_batch(5, 1000, 100);
  int calls = 0;
  Status got = Status::corruption("not called");
  auto r = log->append_async(b, 3, 0, ring.get(), [&](Status s) {
    ++calls;
    got = std::move(s);
  });
  REQUIRE(r.is_ok());
  CHECK(r->base_offset == 0);
  CHECK(r->last_offset == 4);
  // Queued, not even submitted: offsets are assigned but nothing is visible.
  CHECK(calls == 0);
  CHECK(log->log_end_offset() == 0);
  auto empty = log->read(0, 1 << 20);
  REQUIRE(empty.is_ok());
  CHECK(empty->slices.empty());
  // The next append gets the next offsets even though the first is unwritten.
  Bytes b2 = make_batch(2, 2000, 10);
  int calls2 = 0;
  auto r2 = log->append_async(b2, 3, 0, ring.get(), [&](Status s) {
    REQUIRE(s.is_ok());
    ++calls2;
  });
  REQUIRE(r2.is_ok());
  CHECK(r2->base_offset == 5);
  wait_until(*ring, [&] { return calls == 1 && calls2 == 1; });
  CHECK(got.is_ok());
  CHECK(log->log_end_offset() == 7);
  auto all = read_all(*log);
  REQUIRE(all.size() == 2);
  CHECK(all[0] == b);  // the caller's buffer was rewritten in place (offsets, epoch)
  CHECK(all[5] == b2);
  CHECK(batches_of(all[0]).front().epoch == 3);
}

TEST_CASE("log async: writes from several rings, completing in any order, publish in offset order",
          "[storage][log][uring]") {
  require_io_uring();
  TempDir dir;
  io::PosixFileSystem fs;
  LogConfig cfg;
  cfg.segment.segment_bytes = 64 * 1024;  // many rolls, some with writes in flight
  cfg.segment.index_interval_bytes = 512;
  auto log = open_shared(fs, dir / "t-0", cfg);

  constexpr int kThreads = 3;
  constexpr int kAppends = 400;
  struct Done {
    int64_t base;
    int64_t leo_at_callback;
  };
  std::mutex mu;
  std::vector<Done> done;             // every callback, in the order they ran
  std::map<int64_t, Bytes> expected;  // base offset -> the bytes written there
  std::vector<std::string> errors;    // under mu: Catch2 assertions are for the main thread only
  auto error = [&](std::string e) {
    std::lock_guard lock(mu);
    errors.push_back(std::move(e));
  };
  // Batches are built here (the builder's checks use Catch2 too).
  std::vector<std::vector<Bytes>> batches(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    std::mt19937 rng(static_cast<uint32_t>(t + 1));
    for (int i = 0; i < kAppends; ++i) batches[t].push_back(random_batch(rng, 1000 + i));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto rr = io::Ring::create(64);
      if (!rr) return error("Ring::create: " + rr.status().to_string());
      auto ring = std::move(rr).value();
      for (int i = 0; i < kAppends; ++i) {
        Bytes& b = batches[t][i];  // alive until the threads are joined
        std::shared_ptr<int64_t> base = std::make_shared<int64_t>(-1);
        auto r = log->append_async(b, t, 0, ring.get(), [&, base](Status s) {
          if (!s.is_ok()) error("append_async callback: " + s.to_string());
          std::lock_guard lock(mu);
          done.push_back({*base, log->log_end_offset()});
        });
        if (!r) return error("append_async: " + r.status().to_string());
        *base = r->base_offset;  // set before the ring is flushed: the callback sees it
        {
          std::lock_guard lock(mu);
          expected[r->base_offset] = b;  // offsets assigned, bytes final
        }
        if (i % 7 == 6 && !ring->flush().is_ok()) return error("flush");
        ring->poll_completions();
      }
      while (ring->in_flight() > 0)
        if (!ring->wait_completions(1)) return error("wait_completions");
    });
  }
  for (auto& th : threads) th.join();

  for (const auto& e : errors) UNSCOPED_INFO(e);
  CHECK(errors.empty());
  REQUIRE(done.size() == kThreads * kAppends);
  // A callback runs only once its write and every earlier one are readable
  // (callbacks of different threads may run in either order: they run
  // outside the log's lock, after publishing).
  std::set<int64_t> called;
  for (const auto& d : done) {
    CHECK(d.leo_at_callback > d.base);
    CHECK(called.insert(d.base).second);  // once each
  }
  auto all = read_all(*log);
  REQUIRE(all.size() == expected.size());
  for (const auto& [base, bytes] : expected) CHECK(all[base] == bytes);
  CHECK(log->segment_count() > 3);

  // Every segment's indexes agree with its data, and a reopen (no clean
  // shutdown: full recovery) finds the same log.
  const int64_t leo = log->log_end_offset();
  for (const auto& seg : *log->segments()) {
    for (int64_t off = seg->base_offset(); off < seg->next_offset().value_or(seg->base_offset()); off += 17) {
      auto loc = seg->find_offset_position(off, seg->published_size());
      REQUIRE(loc.is_ok());
      REQUIRE(loc->has_value());
      CHECK((*loc)->base_offset <= off);
      CHECK((*loc)->last_offset >= off);
    }
  }
  REQUIRE(log->close().is_ok());
  CHECK(log->recovery_point() == leo);
  log.reset();
  auto reopened = open_shared(fs, dir / "t-0", cfg);
  CHECK(reopened->recovered_truncated_bytes() == 0);
  CHECK(reopened->log_end_offset() == leo);
  auto again = read_all(*reopened);
  CHECK(again == all);
}

TEST_CASE("log async: a segment that rolls with writes in flight is finished when they complete",
          "[storage][log][uring]") {
  auto ring = make_ring();
  TempDir dir;
  io::PosixFileSystem fs;
  LogConfig cfg;
  cfg.segment.segment_bytes = 4096;
  auto log = open_shared(fs, dir / "t-0", cfg);
  std::vector<Bytes> batches;
  for (int i = 0; i < 12; ++i) batches.push_back(make_batch(4, 1000 * (i + 1), 400));
  int ok = 0;
  for (auto& b : batches) REQUIRE(log->append_async(b, 1, 0, ring.get(), [&](Status s) { ok += s.is_ok(); }));
  // Nothing written yet, but offset assignment rolled the segment list.
  CHECK(log->segment_count() > 1);
  CHECK(log->recovery_point() == 0);
  CHECK(log->log_end_offset() == 0);
  wait_until(*ring, [&] { return ok == 12; });  // a failed append would leave nothing in flight
  CHECK(log->log_end_offset() == 48);
  // Rolled segments were flushed when their last write was published.
  const auto segs = log->segments();
  CHECK(log->recovery_point() == segs->back()->base_offset());
  // And their time index got its final entry (max timestamp of the segment).
  for (size_t i = 0; i + 1 < segs->size(); ++i) {
    const auto& seg = (*segs)[i];
    REQUIRE(seg->time_index().entries() > 0);
    CHECK(seg->time_index().last_entry().timestamp == seg->max_timestamp());
  }
  // A group-commit style sync covers the rest.
  auto durable = log->sync_data();
  REQUIRE(durable.is_ok());
  CHECK(*durable == 48);
  CHECK(log->recovery_point() == 48);
}

TEST_CASE("log async: a write that fails with a later write in flight breaks the log - reopening recovers",
          "[storage][log][uring]") {
  TempDir dir;
  io::PosixFileSystem fs;
  auto ring1 = make_ring();
  auto ring2 = make_ring();
  auto log = log_with_one_batch(fs, dir / "t-0");
  const uint64_t good_size = log->size_bytes();

  // The file may grow by less than one batch from here.
  FileSizeLimit limit(good_size + 100);

  Bytes a = make_batch(3, 200, 200);
  Bytes b = make_batch(3, 300, 200);
  Status sa, sb;
  int calls = 0;
  REQUIRE(log->append_async(a, 0, 0, ring1.get(), [&](Status s) {
    sa = std::move(s);
    ++calls;
  }));
  REQUIRE(log->append_async(b, 0, 0, ring2.get(), [&](Status s) {
    sb = std::move(s);
    ++calls;
  }));
  // a completes (fails) first, while b is still queued on the other ring:
  // a is answered, b is doomed (it would follow a hole).
  wait_until(*ring1, [&] { return calls >= 1; });
  CHECK(calls == 1);
  CHECK_FALSE(sa.is_ok());
  // The log refuses new appends now.
  Bytes c = make_batch(1, 400, 10);
  auto refused = log->append(c, 0, 0);
  CHECK_FALSE(refused.is_ok());
  wait_until(*ring2, [&] { return calls == 2; });
  limit.lift();

  CHECK(calls == 2);
  CHECK_FALSE(sa.is_ok());
  CHECK_FALSE(sb.is_ok());
  CHECK(log->log_end_offset() == 3);  // nothing after the failure became readable
  CHECK(read_all(*log).size() == 1);
  log.reset();
  // Reopened without a clean shutdown: the torn tail is cut, offsets go on from 3.
  auto reopened = open_shared(fs, dir / "t-0", LogConfig{});
  CHECK(reopened->log_end_offset() == 3);
  CHECK(reopened->size_bytes() == good_size);
  Bytes d = make_batch(2, 500, 10);
  auto r = reopened->append(d, 0, 0);
  REQUIRE(r.is_ok());
  CHECK(r->base_offset == 3);
}

TEST_CASE("log async: a failed write with nothing after it is undone and the log goes on",
          "[storage][log][uring]") {
  auto ring = make_ring();
  TempDir dir;
  io::PosixFileSystem fs;
  auto log = log_with_one_batch(fs, dir / "t-0");
  const uint64_t good_size = log->size_bytes();
  FileSizeLimit limit(good_size + 100);
  Bytes a = make_batch(3, 200, 200);
  Status sa;
  bool answered = false;
  REQUIRE(log->append_async(a, 0, 0, ring.get(), [&](Status s) {
    sa = std::move(s);
    answered = true;
  }));
  wait_until(*ring, [&] { return answered; });
  limit.lift();
  CHECK_FALSE(sa.is_ok());
  CHECK(log->log_end_offset() == 3);
  // The offsets and bytes of the failed append are reused.
  Bytes b = make_batch(2, 300, 50);
  int ok = 0;
  auto r = log->append_async(b, 0, 0, ring.get(), [&](Status s) { ok += s.is_ok(); });
  REQUIRE(r.is_ok());
  CHECK(r->base_offset == 3);
  CHECK(r->position == good_size);
  wait_until(*ring, [&] { return ok == 1; });
  auto all = read_all(*log);
  REQUIRE(all.size() == 2);
  CHECK(all[3] == b);
}

TEST_CASE("group commit: syncs of many logs in one round go through the committer's ring",
          "[storage][log][uring]") {
  require_io_uring();
  TempDir dir;
  io::PosixFileSystem fs;
  std::vector<std::shared_ptr<Log>> logs;
  for (int i = 0; i < 8; ++i) logs.push_back(open_shared(fs, dir / ("t-" + std::to_string(i)), LogConfig{}));
  std::vector<Bytes> batches;
  for (int i = 0; i < 8; ++i) batches.push_back(make_batch(2, 100, 100));
  GroupCommitter gc;
  std::mutex mu;
  std::condition_variable cv;
  int answered = 0;
  for (size_t i = 0; i < logs.size(); ++i) {
    auto r = logs[i]->append(batches[i], 0, 0);
    REQUIRE(r.is_ok());
    gc.sync_to(logs[i], r->last_offset + 1, [&](Status s) {
      REQUIRE(s.is_ok());
      std::lock_guard lock(mu);
      ++answered;
      cv.notify_all();
    });
  }
  {
    std::unique_lock lock(mu);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return answered == 8; }));
  }
  for (const auto& l : logs) CHECK(l->recovery_point() == 2);
  const auto st = gc.stats();
  CHECK(st.ring);
  CHECK(st.requests == 8);
  CHECK(st.syncs == 8);  // one per log, never more
}

namespace ciuickafka::storage::test {
namespace {

// The kill -9 test's rare failure (a gap in the recovered offsets): the log
// rolled while the old segment's last write was still queued on one ring,
// the first write to the new segment reached the disk from another ring,
// and the process died before the first write ran. Recovery must not keep
// the new segment's records past the hole: they were never published (a
// write is published only after every earlier one), and keeping them would
// leave offsets no read can reach.
TEST_CASE("log async: a crash after a roll with the old segment's write unwritten drops what follows the hole",
          "[storage][log][uring]") {
  auto ring_a = make_ring();
  auto ring_b = make_ring();
  TempDir dir;
  io::PosixFileSystem fs;
  LogConfig cfg;
  cfg.segment.segment_bytes = 4096;
  Bytes first = make_batch(2, 100, 100);
  int64_t hole_at = 0;
  {
    auto log = open_shared(fs, dir / "t-0", cfg);
    REQUIRE(log->append(first, 0, 0).is_ok());
    // Fills the first segment; queued on ring_a and never submitted.
    Bytes tail = make_batch(30, 200, 120);
    bool tail_answered = false;
    auto queued = log->append_async(tail, 0, 0, ring_a.get(), [&](Status) { tail_answered = true; });
    REQUIRE(queued.is_ok());
    hole_at = queued->base_offset;
    // Rolls (the first segment is full), written through ring_b: on disk.
    Bytes next = make_batch(2, 300, 100);
    bool next_answered = false;
    auto written = log->append_async(next, 0, 0, ring_b.get(), [&](Status) { next_answered = true; });
    REQUIRE(written.is_ok());
    REQUIRE(written->base_offset > hole_at);
    // Its write has completed (its callback runs only once the earlier write
    // is published, so wait for the ring to empty, not for the callback).
    while (ring_b->in_flight() > 0) REQUIRE(ring_b->wait_completions(1).is_ok());
    CHECK_FALSE(next_answered);
    REQUIRE(log->log_end_offset() == hole_at);  // not published: the earlier write is missing
    // The crash: a second process opens the directory (full recovery).
    auto reopened = Log::open(fs, dir / "t-0", cfg, 0);
    REQUIRE(reopened.is_ok());
    CHECK((*reopened)->log_end_offset() == hole_at);
    auto all = read_all(**reopened);  // contiguous from 0 to the LEO
    CHECK(all.size() == 1);
    REQUIRE((*reopened)->close().is_ok());
    // Let the abandoned write run so the first log can go.
    wait_until(*ring_a, [&] { return tail_answered; });
  }
}

// Disk blocks the file holds (st_blocks), written or only reserved.
uint64_t allocated_bytes(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

// Segment::preallocation_due: the writer's blocks are fallocated ahead of it
// (KEEP_SIZE: the size, and so what readers and recovery see, is unchanged),
// a bounded amount ahead; a segment that rolls gives back what it did not
// use, whether it is finished where its last write is published or later by
// the background sync (deferred rolls, what every broker log does).
TEST_CASE("log async: blocks are reserved ahead of the writer and a rolled segment gives back what it did not use",
          "[storage][log][uring]") {
  auto ring = make_ring();
  for (const bool deferred : {false, true}) {
    CAPTURE(deferred);
    TempDir dir;
    io::PosixFileSystem fs;
    LogConfig cfg;
    cfg.segment.segment_bytes = 6 << 20;
    auto log = open_shared(fs, dir / "t-0", cfg);
    std::vector<int64_t> roll_syncs;
    if (deferred) log->set_roll_sync([&](std::shared_ptr<Log>, int64_t offset) { roll_syncs.push_back(offset); });
    std::vector<Bytes> batches;
    for (int i = 0; i < 200; ++i) batches.push_back(make_batch(4, 100 + i, 16 << 10));  // ~64 KiB each
    int ok = 0, sent = 0;
    auto send = [&](size_t upto) {
      for (; static_cast<size_t>(sent) < upto; ++sent)
        REQUIRE(log->append_async(batches[static_cast<size_t>(sent)], 0, 0, ring.get(),
                                  [&](Status s) { ok += s.is_ok(); }));
      REQUIRE(ring->flush().is_ok());
      wait_until(*ring, [&] { return ok == sent; });
      while (ring->in_flight() > 0) REQUIRE(ring->wait_completions(1).is_ok());  // the preallocations too
    };
    // ~3 MiB into the first segment: the reservation runs ahead of it by
    // half a chunk to a chunk (a chunk is the segment's size, 1-16 MiB).
    send(48);
    {
      auto active = log->segments()->back();
      const uint64_t size = active->size();
      REQUIRE(size > (3u << 20) - (64u << 10));
      CHECK(active->reserved_to() >= size + size / 2);
      CHECK(active->reserved_to() <= std::min<uint64_t>(2 * size + Segment::kPreallocateMin, 6 << 20));
      CHECK(allocated_bytes(active->path()) >= active->reserved_to());
    }
    // Past 6 MiB: the segment rolls.
    send(110);
    const auto segs = log->segments();
    REQUIRE(segs->size() == 2);
    const auto& rolled = (*segs)[0];
    CHECK(rolled->size() < (6u << 20));
    if (deferred) {
      REQUIRE(roll_syncs.size() == 1);
      // Nothing is freed before the background sync finishes the segment.
      CHECK(allocated_bytes(rolled->path()) >= rolled->reserved_to());
      REQUIRE(log->sync_data().is_ok());
    }
    // What the rolled segment holds now is its bytes, rounded to blocks.
    CHECK(rolled->reserved_to() == rolled->size());
    CHECK(allocated_bytes(rolled->path()) < rolled->size() + (256u << 10));
    // The records are all there, read back from both segments.
    CHECK(read_all(*log).size() == 110);
    REQUIRE(log->close().is_ok());
  }
}

}  // namespace
}  // namespace ciuickafka::storage::test
