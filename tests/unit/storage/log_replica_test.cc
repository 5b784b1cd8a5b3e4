// tests/unit/storage/log_replica_test.cc: what a replica needs from the log
// besides truncation (log_truncate_test.cc): the leader epoch cache kept by
// appends, loaded, rebuilt from the batches and made consistent by
// recovery; the follower append (the leader's bytes kept bit-exact; the
// ring path; refusals; crashes).
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fs_fixtures.h"
#include "log_test_util.h"
#include "replica_test_util.h"
#include "storage/checkpoint.h"
#include "storage/file_names.h"
#include "storage/io/ring.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::test;

TEST_CASE("log epochs: leader appends record each new epoch's start, persisted", "[storage][log][epoch]") {
  MemFs t;
  const std::string dir = "/t/e-0";
  auto log = open_log(t.fs, dir, LogConfig{});
  CHECK(log->leader_epochs().empty());
  CHECK_FALSE(log->leader_epochs_rebuilt());
  for (int32_t epoch : {1, 1, 2, 2, 2, 5}) {
    Bytes b = make_batch(3, 10, 10);
    append_ok(*log, b, epoch);
  }
  const Entries want = {{1, 0}, {2, 6}, {5, 15}};
  CHECK(log->leader_epochs().entries() == want);
  CHECK(file_text(t.fs, dir + "/leader-epoch-checkpoint") == "0\n3\n1 0\n2 6\n5 15\n");
  CHECK(log->end_offset_for_epoch(2) == EpochEndOffset{2, 15});
  CHECK(log->end_offset_for_epoch(5) == EpochEndOffset{5, 18});
  // Becoming leader of epoch 6 at the LEO.
  REQUIRE(log->assign_epoch_start_offset(6, log->log_end_offset()).is_ok());
  CHECK(log->leader_epochs().latest_entry() == EpochEntry{6, 18});
  REQUIRE(log->close().is_ok());
  log.reset();
  // Reopened: loaded, not rebuilt; the entry at the LEO (no data yet) is
  // dropped, as Kafka's load does.
  log = open_log(t.fs, dir, LogConfig{});
  CHECK_FALSE(log->leader_epochs_rebuilt());
  CHECK(log->leader_epochs().entries() == want);
  CHECK(file_text(t.fs, dir + "/leader-epoch-checkpoint") == checkpoint_text(want));
}

TEST_CASE("log epochs: a new epoch starts at the end of the writes in flight, only when newer",
          "[storage][log][epoch][uring]") {
  require_io_uring();
  auto ring_r = io::Ring::create(64);
  REQUIRE(ring_r.is_ok());
  auto ring = std::move(ring_r).value();
  PosixFs t;
  std::shared_ptr<Log> log(open_log(t.fs, t.root() + "/n-0", LogConfig{}));
  Bytes first = make_batch(3, 10, 10);
  append_ok(*log, first, 1);
  Bytes second = make_batch(2, 10, 10);
  bool written = false;
  REQUIRE(log->append_async(second, 1, 0, ring.get(), [&](Status s) { written = s.is_ok(); }).is_ok());
  if (!written) CHECK(log->log_end_offset() == 3);  // queued, not reaped
  auto start = log->assign_epoch_start_at_end(2);
  REQUIRE(start.is_ok());
  CHECK(start.value() == 5);
  CHECK(log->leader_epochs().entries() == Entries{{1, 0}, {2, 5}});
  // The same epoch again, or an older one, changes nothing.
  REQUIRE(log->assign_epoch_start_at_end(2).is_ok());
  REQUIRE(log->assign_epoch_start_at_end(1).is_ok());
  CHECK(log->leader_epochs().entries() == Entries{{1, 0}, {2, 5}});
  while (ring->in_flight() > 0) REQUIRE(ring->wait_completions(1).is_ok());
  CHECK(written);
  CHECK(log->end_offset_for_epoch(1) == EpochEndOffset{1, 5});
  CHECK(log->end_offset_for_epoch(2) == EpochEndOffset{2, 5});
  REQUIRE(log->close().is_ok());
  CHECK(log->assign_epoch_start_at_end(3).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("log epochs: a missing or corrupt checkpoint is rebuilt from the batches",
          "[storage][log][epoch]") {
  for (const char* damage : {"missing", "corrupt", "non-monotonic"}) {
    INFO(damage);
    MemFs t;
    const std::string dir = "/t/r-0";
    const std::string path = dir + "/leader-epoch-checkpoint";
    Bytes all;
    {
      auto log = open_log(t.fs, dir, small_segments());
      all = fill_leader(*log, 50);
      REQUIRE(log->segments()->size() > 3);
      REQUIRE(log->close().is_ok());
    }
    const Entries want = epochs_of(batches_of(all));
    REQUIRE(want.size() == 4);
    if (std::string(damage) == "missing") {
      REQUIRE(t.fs.remove_file(path).is_ok());
    } else {
      const std::string bad = std::string(damage) == "corrupt" ? "0\n2\n1 0\n" : "0\n2\n3 10\n1 20\n";
      REQUIRE(io::write_file_atomically(t.fs, path, ciuickafka::protocol::as_bytes(bad)).is_ok());
    }
    auto log = open_log(t.fs, dir, small_segments());
    CHECK(log->leader_epochs_rebuilt());
    CHECK(log->leader_epochs().entries() == want);
    CHECK(file_text(t.fs, path) == checkpoint_text(want));
    CHECK(read_bytes(*log, 0, 1 << 30) == all);
  }
}

TEST_CASE("log epochs: recovery drops entries past a torn tail, deletion from the start moves the first",
          "[storage][log][epoch]") {
  MemFs t;
  const std::string dir = "/t/c-0";
  Bytes all;
  {
    auto log = open_log(t.fs, dir, small_segments());
    all = fill_leader(*log, 45);
    REQUIRE(log->flush().is_ok());
    // A batch of a new epoch whose bytes never reach the disk.
    Bytes b = make_batch(4, 10, 10);
    append_ok(*log, b, 9);
    CHECK(log->leader_epochs().latest_entry() == EpochEntry{9, batches_of(all).back().last + 1});
    t.fs.crash();  // the checkpoint (written before the data) survives, the batch does not
  }
  auto log = open_log(t.fs, dir, small_segments());
  CHECK_FALSE(log->leader_epochs_rebuilt());
  const Entries want = epochs_of(batches_of(all));
  CHECK(log->leader_epochs().entries() == want);
  CHECK(log->log_end_offset() == batches_of(all).back().last + 1);
  // DeleteRecords inside epoch 3: the first entry becomes (3, offset).
  const int64_t cut = want[1].start_offset + 2;
  REQUIRE(log->advance_log_start_offset(cut).is_ok());
  CHECK(log->leader_epochs().entries() == Entries{{3, cut}, want[2], want[3]});
  // Retention deleting whole segments does the same at the new first segment.
  LogConfig c = small_segments();
  c.retention_bytes = 0;
  log->update_config(c);
  auto n = log->apply_retention(0);
  REQUIRE(n.is_ok());
  REQUIRE(*n > 0);
  const int64_t start = log->log_start_offset();
  CHECK(log->leader_epochs().earliest_entry()->start_offset == start);
  CHECK(log->leader_epochs().earliest_entry()->epoch == *log->leader_epochs().epoch_for_offset(start));
  CHECK(file_text(t.fs, dir + "/leader-epoch-checkpoint") == checkpoint_text(log->leader_epochs().entries()));
}

TEST_CASE("log follower: batches are stored bit-exact, epochs from the batches", "[storage][log][follower]") {
  MemFs t;
  auto leader = open_log(t.fs, "/t/l-0", small_segments());
  const Bytes all = fill_leader(*leader, 60);
  const auto infos = batches_of(all);
  auto follower = open_log(t.fs, "/t/f-0", small_segments());
  // Fetched in groups of 1-5 batches.
  std::mt19937 rng(3);
  size_t at = 0, i = 0;
  while (i < infos.size()) {
    const size_t n = std::min(infos.size() - i, std::uniform_int_distribution<size_t>(1, 5)(rng));
    size_t len = 0;
    for (size_t k = 0; k < n; ++k) len += infos[i + k].size;
    Bytes fetched(all.begin() + static_cast<long>(at), all.begin() + static_cast<long>(at + len));
    const Bytes given = fetched;
    auto r = follower->append_as_follower(fetched, 0);
    REQUIRE(r.is_ok());
    CHECK(fetched == given);  // not rewritten
    CHECK(r->base_offset == infos[i].base);
    CHECK(r->last_offset == infos[i + n - 1].last);
    CHECK(follower->log_end_offset() == infos[i + n - 1].last + 1);
    at += len;
    i += n;
  }
  CHECK(read_bytes(*follower, 0, 1 << 30) == all);
  CHECK(follower->leader_epochs().entries() == leader->leader_epochs().entries());
  CHECK(follower->leader_epochs().entries() == epochs_of(infos));
  // Segments may differ from the leader's: a log rolls per append, and the
  // follower's appends group batches differently.
  Snapshot got = snapshot(*follower);
  // A crash after a flush: the same log back.
  REQUIRE(follower->flush().is_ok());
  t.fs.crash();
  follower.reset();
  follower = open_log(t.fs, "/t/f-0", small_segments());
  CHECK(snapshot(*follower) == got);
}

TEST_CASE("log follower: overlaps and bad batches are refused, gaps kept", "[storage][log][follower]") {
  MemFs t;
  auto leader = open_log(t.fs, "/t/l-0", LogConfig{});
  Bytes b0 = make_batch(3, 10, 10), b1 = make_batch(2, 20, 10), b2 = make_batch(4, 30, 10);
  append_ok(*leader, b0, 2);
  append_ok(*leader, b1, 2);
  append_ok(*leader, b2, 4);
  auto f = open_log(t.fs, "/t/f-0", LogConfig{});
  Bytes first = b0;
  REQUIRE(f->append_as_follower(first, 0).is_ok());
  const uint64_t writes = t.fs.write_count();
  SECTION("the same batch again: below the next offset") {
    Bytes again = b0;
    CHECK(f->append_as_follower(again, 0).status().code() == StatusCode::kOffsetOutOfRange);
  }
  SECTION("two batches of one fetch that overlap") {
    Bytes two = b1;
    two.insert(two.end(), b1.begin(), b1.end());
    CHECK(f->append_as_follower(two, 0).status().code() == StatusCode::kOffsetOutOfRange);
  }
  SECTION("a bad CRC") {
    Bytes bad = b1;
    bad.back() ^= 1;
    CHECK(f->append_as_follower(bad, 0).status().code() == StatusCode::kCorruptRecords);
  }
  SECTION("a torn batch") {
    Bytes torn(b1.begin(), b1.end() - 1);
    CHECK(f->append_as_follower(torn, 0).status().code() == StatusCode::kCorruptRecords);
  }
  CHECK(t.fs.write_count() == writes);  // nothing written, not even the checkpoint
  CHECK(f->log_end_offset() == 3);
  CHECK(f->next_offset() == 3);
  // A gap (a compacted leader log): accepted, offsets kept.
  Bytes later = b2;  // offsets 5..8
  auto r = f->append_as_follower(later, 0);
  REQUIRE(r.is_ok());
  CHECK(r->base_offset == 5);
  CHECK(f->log_end_offset() == 9);
  CHECK(f->leader_epochs().entries() == Entries{{2, 0}, {4, 5}});
  CHECK(read_bytes(*f, 3, 1 << 20) == b2);  // a read in the gap returns the next batch
}

TEST_CASE("log follower: the ring path, and truncation refused while writes are in flight",
          "[storage][log][follower][uring]") {
  require_io_uring();
  auto ring_r = io::Ring::create(64);
  REQUIRE(ring_r.is_ok());
  auto ring = std::move(ring_r).value();
  PosixFs t;
  auto leader = open_log(t.fs, t.root() + "/l-0", small_segments());
  const Bytes all = fill_leader(*leader, 50);
  const auto infos = batches_of(all);
  std::shared_ptr<Log> f(open_log(t.fs, t.root() + "/f-0", small_segments()));
  std::vector<Bytes> pieces;
  size_t at = 0;
  for (const auto& b : infos) {
    pieces.emplace_back(all.begin() + static_cast<long>(at), all.begin() + static_cast<long>(at + b.size));
    at += b.size;
  }
  int done = 0;
  for (auto& p : pieces) {
    auto r = f->append_as_follower_async(p, 0, ring.get(), [&](Status s) {
      CHECK(s.is_ok());
      ++done;
    });
    REQUIRE(r.is_ok());
  }
  // Queued, not reaped: truncation is refused.
  if (done < static_cast<int>(pieces.size()))
    CHECK(f->truncate_to(0, 0).status().code() == StatusCode::kInvalidArgument);
  while (done < static_cast<int>(pieces.size())) REQUIRE(ring->wait_completions(1).is_ok());
  CHECK(read_bytes(*f, 0, 1 << 30) == all);
  CHECK(f->leader_epochs().entries() == epochs_of(infos));
  CHECK(snapshot(*f).bytes == snapshot(*leader).bytes);
  // Idle: truncation works and the ring path continues from there.
  const int64_t target = infos[20].base;
  REQUIRE(f->truncate_to(target, 0).is_ok());
  size_t skip = 0;
  for (size_t i = 0; i < 20; ++i) skip += infos[i].size;
  Bytes rest(all.begin() + static_cast<long>(skip), all.end());
  bool ok = false;
  REQUIRE(f->append_as_follower_async(rest, 0, ring.get(), [&](Status s) { ok = s.is_ok(); }).is_ok());
  while (ring->in_flight() > 0) REQUIRE(ring->wait_completions(1).is_ok());
  CHECK(ok);
  CHECK(read_bytes(*f, 0, 1 << 30) == all);
  CHECK(f->leader_epochs().entries() == epochs_of(infos));
}

TEST_CASE("log follower: a crash with part of the tail on disk recovers a prefix and its epochs",
          "[storage][log][follower][crash]") {
  for (size_t keep_num : {0, 1, 2, 3}) {
    INFO("a fraction " << keep_num << "/3 of each unsynced tail survives");
    MemFs t;
    auto leader = open_log(t.fs, "/t/l-0", small_segments());
    const Bytes all = fill_leader(*leader, 60);
    const auto infos = batches_of(all);
    auto f = open_log(t.fs, "/t/f-0", small_segments());
    size_t at = 0;
    for (size_t i = 0; i < infos.size(); i += 3) {
      size_t len = 0;
      for (size_t k = i; k < std::min(infos.size(), i + 3); ++k) len += infos[k].size;
      Bytes fetched(all.begin() + static_cast<long>(at), all.begin() + static_cast<long>(at + len));
      REQUIRE(f->append_as_follower(fetched, 0).is_ok());
      at += len;
      if (i == 30) REQUIRE(f->flush().is_ok());  // the first half is durable
    }
    t.fs.crash([&](const std::string&, size_t tail) { return tail * keep_num / 3; });
    f.reset();
    f = open_log(t.fs, "/t/f-0", small_segments());
    const Bytes now = read_bytes(*f, 0, 1 << 30);
    CHECK(now.size() >= prefix_below(all, infos[33].base).size());
    CHECK(now == prefix_below(all, f->log_end_offset()));
    CHECK(f->leader_epochs().entries() == epochs_of(batches_of(now)));
    // And the follower goes on from where it stands.
    size_t skip = now.size();
    Bytes rest(all.begin() + static_cast<long>(skip), all.end());
    if (!rest.empty()) REQUIRE(f->append_as_follower(rest, 0).is_ok());
    CHECK(read_bytes(*f, 0, 1 << 30) == all);
    CHECK(f->leader_epochs().entries() == epochs_of(infos));
  }
}

TEST_CASE("log epochs: readers query the cache while appends change epochs", "[storage][log][epoch]") {
  MemFs t;
  auto log = open_log(t.fs, "/t/q-0", LogConfig{});
  // Built here: make_batch checks with Catch2, which is for the main thread only.
  std::vector<Bytes> batches;
  for (int i = 0; i < 200; ++i) batches.push_back(make_batch(2, i, 10));
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r)
    readers.emplace_back([&] {
      while (!stop.load()) {
        const int64_t leo = log->log_end_offset();
        const auto entries = log->leader_epochs().entries();
        for (size_t i = 1; i < entries.size(); ++i)
          if (entries[i].epoch <= entries[i - 1].epoch || entries[i].start_offset <= entries[i - 1].start_offset)
            ++bad;
        const auto latest = log->leader_epochs().latest_epoch();
        if (latest && log->end_offset_for_epoch(*latest).end_offset < leo) ++bad;
        if (leo > 0 && !log->leader_epochs().epoch_for_offset(leo - 1)) ++bad;
      }
    });
  for (int i = 0; i < 200; ++i) {
    auto r = log->append(batches[static_cast<size_t>(i)], i / 10, 0);  // a new epoch every 10 appends
    REQUIRE(r.is_ok());
  }
  stop = true;
  for (auto& th : readers) th.join();
  CHECK(bad == 0);
  CHECK(log->leader_epochs().entries().size() == 20);
}
