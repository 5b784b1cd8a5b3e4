// tests/unit/storage/log_replica_test.cc: what a replica needs from the log:
// the leader epoch cache kept by appends, loaded, rebuilt from the batches
// and made consistent by recovery; the follower append (the leader's bytes
// kept bit-exact); truncation at every interesting point, with appends
// continuing there and reopens (clean, and after a crash) giving the same
// log, indexes and epoch cache.
#include <algorithm>
#include <catch2/catch.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fs_fixtures.h"
#include "log_test_util.h"
#include "storage/checkpoint.h"
#include "storage/file_names.h"
#include "storage/io/ring.h"
#include "storage/log_manager.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::test;

namespace {

using Entries = std::vector<EpochEntry>;

LogConfig small_segments() {
  LogConfig c;
  c.segment.segment_bytes = 6000;
  c.segment.index_interval_bytes = 700;
  return c;
}

// The epoch a leader wrote batch i in: 1, 3, 4 and 7 in runs.
int32_t epoch_of(int i) { return i < 10 ? 1 : i < 25 ? 3 : i < 40 ? 4 : 7; }

// A leader's log of n random batches across several segments; the bytes as stored.
Bytes fill_leader(Log& log, int n, uint32_t seed = 5) {
  std::mt19937 rng(seed);
  Bytes all;
  for (int i = 0; i < n; ++i) {
    Bytes b = random_batch(rng, 1'700'000'000'000 + i * 100);
    append_ok(log, b, epoch_of(i));
    all.insert(all.end(), b.begin(), b.end());
  }
  return all;
}

// The epoch entries a log of these batches must hold.
Entries epochs_of(const std::vector<BatchInfo>& infos) {
  Entries e;
  for (const auto& b : infos)
    if (e.empty() || e.back().epoch != b.epoch) e.push_back({b.epoch, b.base});
  return e;
}

std::string checkpoint_text(const Entries& e) {
  std::string s = "0\n" + std::to_string(e.size()) + "\n";
  for (const auto& x : e) s += std::to_string(x.epoch) + " " + std::to_string(x.start_offset) + "\n";
  return s;
}

std::string file_text(io::FileSystem& fs, const std::string& path) {
  auto bytes = io::read_file(fs, path);
  if (!bytes) return "<" + bytes.status().to_string() + ">";
  return std::string(bytes->begin(), bytes->end());
}

// Everything a reopen must reproduce.
struct Snapshot {
  Bytes bytes;
  int64_t leo = 0;
  int64_t start = 0;
  std::vector<int64_t> bases;
  std::vector<std::vector<OffsetPosition>> offset_indexes;
  Entries epochs;
  bool operator==(const Snapshot&) const = default;
};

Snapshot snapshot(const Log& log) {
  Snapshot s;
  s.leo = log.log_end_offset();
  s.start = log.log_start_offset();
  s.bytes = read_bytes(log, s.start, 1 << 30);
  for (const auto& seg : *log.segments()) {
    s.bases.push_back(seg->base_offset());
    const OffsetIndex oi = seg->offset_index();
    REQUIRE(oi.sanity_check().is_ok());
    REQUIRE(seg->time_index().sanity_check().is_ok());
    std::vector<OffsetPosition> entries;
    for (size_t i = 0; i < oi.entries(); ++i) entries.push_back(oi.entry(i));
    s.offset_indexes.push_back(std::move(entries));
  }
  s.epochs = log.leader_epochs().entries();
  return s;
}

std::unique_ptr<Log> open_clean(io::FileSystem& fs, const std::string& dir, int64_t recovery_point) {
  LogOpenOptions o;
  o.clean_shutdown = true;
  o.recovery_point = recovery_point;
  auto log = Log::open(fs, dir, small_segments(), 0, o);
  if (!log) FAIL(log.status().to_string());
  return std::move(log).value();
}

// The bytes of the batches whose base is below end.
Bytes prefix_below(const Bytes& all, int64_t end) {
  size_t n = 0;
  for (const auto& b : batches_of(all)) {
    if (b.base >= end) break;
    n += b.size;
  }
  return Bytes(all.begin(), all.begin() + static_cast<long>(n));
}

}  // namespace

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

TEST_CASE("log truncation: at every interesting point, then appends, then reopens",
          "[storage][log][truncate]") {
  // The layout, from one build of the leader log.
  // (The batch count is chosen so that the active segment holds a
  // multi-record batch that does not start it.)
  std::vector<BatchInfo> infos;
  std::vector<int64_t> bases;
  int count = 60;
  for (;; ++count) {
    REQUIRE(count < 100);
    MemFs t;
    auto log = open_log(t.fs, "/t/x-0", small_segments());
    infos = batches_of(fill_leader(*log, count));
    bases.clear();
    for (const auto& s : *log->segments()) bases.push_back(s->base_offset());
    if (std::any_of(infos.begin(), infos.end(),
                    [&](const BatchInfo& b) { return b.base > bases.back() && b.last > b.base; }))
      break;
  }
  REQUIRE(bases.size() >= 4);
  const int64_t leo = infos.back().last + 1;
  // A batch of more than one record in [from, to) that does not start there.
  const auto find_multi = [&](int64_t from, int64_t to) -> std::optional<int64_t> {
    for (const auto& b : infos)
      if (b.base > from && b.last < to && b.last > b.base) return b.base;
    return std::nullopt;
  };
  const auto multi_record_in = [&](int64_t from, int64_t to) -> int64_t {
    auto b = find_multi(from, to);
    if (!b) FAIL("no multi-record batch in range");
    return *b;
  };
  // An older segment (neither the first nor the active one) holding one.
  size_t older = 1;
  while (older + 1 < bases.size() && !find_multi(bases[older], bases[older + 1])) ++older;
  REQUIRE(older + 2 < bases.size());  // and one more between it and the active segment
  struct Target {
    const char* what;
    int64_t offset;
  };
  const int64_t active = bases.back();
  const std::vector<Target> targets = {
      {"a batch boundary inside the active segment", multi_record_in(active, leo)},
      {"inside a batch of the active segment", multi_record_in(active, leo) + 1},
      {"the active segment's base", active},
      {"a middle segment's base", bases[older + 1]},
      {"a batch boundary in an older segment, newer ones deleted",
       multi_record_in(bases[older], bases[older + 1])},
      {"inside a batch in an older segment", multi_record_in(bases[older], bases[older + 1]) + 1},
      {"offset 0", 0},
      {"the LEO", leo},
      {"above the LEO", leo + 5},
  };
  for (const Target& target : targets) {
    for (bool crash : {false, true}) {
      INFO(target.what << " (offset " << target.offset << ")" << (crash ? ", reopened after a crash" : ""));
      MemFs t;
      const std::string dir = "/t/x-0";
      auto log = open_log(t.fs, dir, small_segments());
      const Bytes all = fill_leader(*log, count);
      // Expected: batches stay whole; segments above the offset go.
      int64_t end = leo;
      for (const auto& b : infos)
        if (b.last >= target.offset) {
          end = b.base;
          break;
        }
      Entries epochs;
      for (const auto& e : epochs_of(infos))
        if (e.start_offset < end) epochs.push_back(e);
      std::vector<int64_t> kept;
      for (int64_t base : bases)
        if (base <= target.offset || base == bases.front()) kept.push_back(base);

      auto r = log->truncate_to(target.offset, 0);
      REQUIRE(r.is_ok());
      CHECK(*r == end);
      CHECK(log->log_end_offset() == end);
      CHECK(log->next_offset() == end);
      CHECK(log->recovery_point() <= end);
      CHECK(read_bytes(*log, 0, 1 << 30) == prefix_below(all, end));
      CHECK(log->leader_epochs().entries() == epochs);
      CHECK(file_text(t.fs, dir + "/leader-epoch-checkpoint") == checkpoint_text(epochs));
      std::vector<int64_t> now;
      for (const auto& s : *log->segments()) now.push_back(s->base_offset());
      CHECK(now == kept);
      if (end < leo) CHECK(log->read(end + 1, 100).status().code() == StatusCode::kOffsetOutOfRange);

      // Appends continue at the truncated offset, in a new epoch.
      std::mt19937 rng(17);
      for (int i = 0; i < 8; ++i) {
        Bytes b = random_batch(rng, 1'800'000'000'000 + i);
        const int64_t next = log->log_end_offset();
        if (i == 0) CHECK(next == end);
        CHECK(append_ok(*log, b, 9).base_offset == next);
      }
      Entries after = epochs;
      after.push_back({9, end});
      CHECK(log->leader_epochs().entries() == after);
      const Snapshot before = snapshot(*log);
      CHECK(before.bytes.size() >= prefix_below(all, end).size());
      if (crash) {
        REQUIRE(log->flush().is_ok());
        t.fs.crash();
        log.reset();
        log = open_log(t.fs, dir, small_segments());  // full recovery scan
      } else {
        REQUIRE(log->close().is_ok());
        const int64_t rp = log->recovery_point();
        log.reset();
        log = open_clean(t.fs, dir, rp);
      }
      CHECK_FALSE(log->leader_epochs_rebuilt());
      CHECK(snapshot(*log) == before);
      // No segment files of the deleted segments remain under their names.
      auto names = t.fs.list_dir(dir);
      REQUIRE(names.is_ok());
      for (const auto& n : *names) {
        auto f = parse_segment_file_name(n);
        if (f && f->suffix == FileSuffix::kNone)
          CHECK(std::find(before.bases.begin(), before.bases.end(), f->base_offset) != before.bases.end());
      }
    }
  }
}

TEST_CASE("log truncation: a compaction that read the cut segment cannot swap it back in",
          "[storage][log][truncate]") {
  MemFs t;
  auto log = open_log(t.fs, "/t/k-0", small_segments());
  const Bytes all = fill_leader(*log, 60);
  auto before = log->segments();
  REQUIRE(before->size() >= 3);
  const std::shared_ptr<Segment> old = (*before)[1];  // what a cleaner would hold
  const int64_t target = old->base_offset() + 1;
  REQUIRE(log->truncate_to(target, 0).is_ok());
  auto after = log->segments();
  REQUIRE(after->size() == 2);
  CHECK(after->back()->base_offset() == old->base_offset());
  CHECK(after->back() != old);
  CHECK(log->replace_segment(old).code() == StatusCode::kNotFound);
}

TEST_CASE("log truncation: durable once it returns, a crash right after keeps it",
          "[storage][log][truncate]") {
  MemFs t;
  const std::string dir = "/t/d-0";
  auto log = open_log(t.fs, dir, small_segments());
  const Bytes all = fill_leader(*log, 60);
  REQUIRE(log->flush().is_ok());
  const auto infos = batches_of(all);
  const int64_t target = infos[30].base;
  REQUIRE(log->truncate_to(target, 0).is_ok());
  t.fs.crash();
  log.reset();
  log = open_log(t.fs, dir, small_segments());
  CHECK(log->log_end_offset() == target);
  CHECK(read_bytes(*log, 0, 1 << 30) == prefix_below(all, target));
  Entries want;
  for (const auto& e : epochs_of(infos))
    if (e.start_offset < target) want.push_back(e);
  CHECK(log->leader_epochs().entries() == want);
}

TEST_CASE("log truncation: truncate fully and start at an offset", "[storage][log][truncate]") {
  MemFs t;
  const std::string dir = "/t/z-0";
  auto log = open_log(t.fs, dir, small_segments());
  fill_leader(*log, 30);
  REQUIRE(log->truncate_fully_and_start_at(1000, 0).is_ok());
  CHECK(log->log_end_offset() == 1000);
  CHECK(log->log_start_offset() == 1000);
  CHECK(log->recovery_point() == 1000);
  REQUIRE(log->segments()->size() == 1);
  CHECK(log->segments()->front()->base_offset() == 1000);
  CHECK(log->leader_epochs().empty());
  CHECK(file_text(t.fs, dir + "/leader-epoch-checkpoint") == "0\n0\n");
  CHECK(log->read(999, 100).status().code() == StatusCode::kOffsetOutOfRange);
  // A follower continues at the leader's offsets.
  auto leader = open_log(t.fs, "/t/lz-0", LogConfig{});
  REQUIRE(leader->truncate_fully_and_start_at(1000, 0).is_ok());
  Bytes b = make_batch(5, 10, 10);
  append_ok(*leader, b, 12);
  Bytes fetched = b;
  REQUIRE(log->append_as_follower(fetched, 0).is_ok());
  CHECK(log->log_end_offset() == 1005);
  CHECK(log->leader_epochs().entries() == Entries{{12, 1000}});
  // Truncating below the first segment's base truncates fully there.
  auto r = log->truncate_to(500, 0);
  REQUIRE(r.is_ok());
  CHECK(*r == 500);
  CHECK(log->log_start_offset() == 500);
  CHECK(log->segments()->front()->base_offset() == 500);
  CHECK(log->leader_epochs().empty());
  Bytes again = b;
  append_ok(*log, again, 13);
  const Snapshot before = snapshot(*log);
  REQUIRE(log->flush().is_ok());
  t.fs.crash();
  log.reset();
  LogOpenOptions o;
  o.log_start_offset = 500;
  auto reopened = Log::open(t.fs, dir, small_segments(), 0, o);
  REQUIRE(reopened.is_ok());
  CHECK(snapshot(**reopened) == before);
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

TEST_CASE("log manager truncation: the checkpoints follow the truncated log at once",
          "[storage][manager][truncate]") {
  MemFs t;
  LogManagerConfig mc;
  mc.default_config = small_segments();
  mc.default_config.retention_ms = -1;
  auto opened = LogManager::open(t.fs, {"/t/a"}, mc, 0);
  REQUIRE(opened.is_ok());
  auto m = std::move(opened).value();
  ciuickafka::protocol::Uuid id;
  id.bytes.fill(4);
  const TopicPartition tp{"orders", 0};
  auto created = m->create(tp, id, mc.default_config);
  REQUIRE(created.is_ok());
  std::shared_ptr<Log> log = *created;
  const Bytes all = fill_leader(*log, 40);
  REQUIRE(log->flush().is_ok());
  REQUIRE(m->checkpoint().is_ok());
  const auto infos = batches_of(all);
  const auto checkpointed = [&](std::string_view file) {
    auto e = read_offset_checkpoint(t.fs, "/t/a/" + std::string(file));
    REQUIRE(e.is_ok());
    REQUIRE(e->size() == 1);
    return (*e)[0].offset;
  };
  CHECK(checkpointed(kRecoveryPointCheckpointFile) == infos.back().last + 1);
  auto end = m->truncate_to(tp, infos[12].base, 0);
  REQUIRE(end.is_ok());
  CHECK(*end == infos[12].base);
  CHECK(checkpointed(kRecoveryPointCheckpointFile) == infos[12].base);
  REQUIRE(m->truncate_fully_and_start_at(tp, 5000, 0).is_ok());
  CHECK(checkpointed(kRecoveryPointCheckpointFile) == 5000);
  CHECK(checkpointed(kLogStartOffsetCheckpointFile) == 5000);
  CHECK(m->truncate_to({"orders", 9}, 0, 0).status().code() == StatusCode::kNotFound);
}

TEST_CASE("log truncation: a write or sync failing at any step, then a crash, recovers a consistent prefix",
          "[storage][log][truncate][crash]") {
  for (bool fail_sync : {true, false}) {
    for (uint64_t n = 1;; ++n) {
      INFO((fail_sync ? "sync " : "write ") << n << " fails");
      REQUIRE(n < 100);
      MemFs t;
      const std::string dir = "/t/f-0";
      auto log = open_log(t.fs, dir, small_segments());
      const Bytes all = fill_leader(*log, 60);
      REQUIRE(log->flush().is_ok());
      const auto infos = batches_of(all);
      const int64_t leo = log->log_end_offset();
      const int64_t target = infos[12].base;
      const uint64_t writes = t.fs.write_count(), syncs = t.fs.sync_count();
      if (fail_sync) {
        t.fs.fail_nth_sync(n);
      } else {
        t.fs.fail_nth_write(n);
      }
      auto r = log->truncate_to(target, 0);
      const bool hit = fail_sync ? t.fs.sync_count() - syncs >= n : t.fs.write_count() - writes >= n;
      t.fs.clear_faults();
      if (r.is_ok()) {
        CHECK(*r == target);
      } else {
        Bytes b = make_batch(1, 1, 1);
        CHECK_FALSE(log->append(b, 9, 0).is_ok());  // broken until reopened
      }
      t.fs.crash();
      log.reset();
      log = open_log(t.fs, dir, small_segments());
      const int64_t end = log->log_end_offset();
      CHECK(end >= target);
      CHECK(end <= leo);
      const Bytes now = read_bytes(*log, 0, 1 << 30);
      CHECK(now == prefix_below(all, end));
      CHECK(log->leader_epochs().entries() == epochs_of(batches_of(now)));
      if (r.is_ok()) CHECK(end == target);
      if (!hit) {  // the truncation did fewer than n of them: every step was covered
        CHECK(n > 1);
        break;
      }
    }
  }
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
