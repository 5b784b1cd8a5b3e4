// tests/unit/storage/compaction_test.cc: the log cleaner (storage/cleaner.h)
// and its swap (storage/compact_swap.h): latest value per key with offsets
// preserved, reads and ListOffsets after a clean, tombstones and their delete
// horizon, compressed batches, the active segment untouched, the dirty-ratio
// and lag rules, a crash at every step of every swap, readers and appenders
// running during a clean, and the I/O throttle
// (log.cleaner.io.max.bytes.per.second) on a pass. The LogManager's cleaner
// threads: compaction_manager_test.cc.
#include <catch2/catch.hpp>
#include <future>
#include <atomic>
#include <cstdio>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "compaction_test_util.h"
#include "fs_fixtures.h"
#include "log_test_util.h"
#include "storage/cleaner.h"
#include "storage/file_names.h"
#include "storage/index_file.h"
#include "storage/log_manager.h"
#include "storage/offset_map.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::test;
using ciuickafka::protocol::Codec;
namespace protocol = ciuickafka::protocol;

// A namespace of this file's own (tests/CMakeLists.txt: the tests are unity
// builds), so that its helpers do not clash with a sibling file's.
namespace CK_UNITY_ID {

using namespace ciuickafka::storage::test::compaction;

TEMPLATE_TEST_CASE("compaction: keys overwritten many times keep their latest value at the same offset",
                   "[storage][compaction]", PosixFs, MemFs) {
  TestType t;
  const std::string dir = t.root() + "/c-0";
  auto log = open_log(t.fs, dir, compact_config());
  Model model;
  fill(*log, model, 20, 30);  // 600 records, 120 batches
  REQUIRE(log->segment_count() > 10);
  const int64_t leo = log->log_end_offset();
  const uint64_t size_before = log->size_bytes();
  auto active_before = io::read_file(t.fs, log->segments()->back()->path());
  REQUIRE(active_before.is_ok());
  const int64_t active_base = log->segments()->back()->base_offset();

  CleanStats st = clean_ok(*log, 0);
  REQUIRE(st.cleaned);
  CHECK(st.segments_rewritten > 0);
  CHECK(st.records_removed > 0);
  CHECK(st.cleaned_up_to == active_base);
  CHECK(log->first_dirty_offset() == active_base);
  CHECK(log->log_end_offset() == leo);
  CHECK(log->log_start_offset() == 0);
  CHECK(log->size_bytes() < size_before / 4);
  // The active segment is untouched, byte for byte.
  CHECK(log->segments()->back()->base_offset() == active_base);
  CHECK(*io::read_file(t.fs, log->segments()->back()->path()) == *active_before);
  check_latest(*log, model, active_base);
  check_indexes(t.fs, *log);

  // Reads at any offset (retained or removed) start at the batch holding the
  // next retained record; ListOffsets by time finds the next retained record.
  auto recs = all_records(*log);
  for (int64_t o = 0; o < leo; o += 7) {
    auto it = std::lower_bound(recs.begin(), recs.end(), o, [](const Rec& r, int64_t x) { return r.offset < x; });
    REQUIRE(it != recs.end());
    Bytes blob = read_bytes(*log, o, 1);
    auto first = batches_of(blob);
    REQUIRE(!first.empty());
    CHECK(first[0].base <= it->offset);
    CHECK(first[0].last >= it->offset);
    auto found = log->offset_for_timestamp(kTs + o);
    REQUIRE(found.is_ok());
    CHECK(*found == TimestampOffset{kTs + it->offset, it->offset});
  }
  CHECK(log->max_timestamp() == TimestampOffset{kTs + leo - 1, leo - 1});

  // Nothing dirty now: the next pass does nothing; the files survive a reopen.
  CHECK_FALSE(clean_ok(*log, 0).cleaned);
  CHECK(leftovers(t.fs, dir).size() == 3 * st.segments_rewritten);  // .deleted, until file.delete.delay.ms
  log->remove_deleted_files(0);
  CHECK(log->remove_deleted_files(10'000'000) == 3 * st.segments_rewritten);
  CHECK(leftovers(t.fs, dir).empty());
  log.reset();
  log = open_log(t.fs, dir, compact_config());
  CHECK(log->log_end_offset() == leo);
  check_latest(*log, model, active_base);
  check_indexes(t.fs, *log);
}

TEST_CASE("compaction: the offset map is full at its load factor of the dedupe buffer", "[storage][compaction]") {
  // 400 distinct keys over ~16 segments; a map of ~200 entries' bytes.
  // At load factor 1 a pass maps (and cleans) about half the dirty
  // segments; at 0.5 about a quarter: it stops after the segment that
  // took it past half of the buffer (log.cleaner.io.buffer.load.factor).
  MemFs t;
  CleanerConfig cc;
  cc.dedupe_buffer_bytes = 200 * (OffsetMap::kEntryOverhead + 8);
  CleanStats st[2];
  for (int i = 0; i < 2; ++i) {
    auto log = open_log(t.fs, t.root() + "/lf-" + std::to_string(i), compact_config());
    Model model;
    fill(*log, model, 400, 1);
    REQUIRE(log->segment_count() > 10);
    cc.dedupe_load_factor = i == 0 ? 1.0 : 0.5;
    st[i] = clean_ok(*log, 0, cc);
    REQUIRE(st[i].cleaned);
    check_latest(*log, model, st[i].cleaned_up_to);
  }
  CHECK(st[0].map_entries >= 180);
  CHECK(st[1].map_entries >= 90);
  CHECK(st[1].map_entries < st[0].map_entries);
  CHECK(st[1].cleaned_up_to < st[0].cleaned_up_to);
  // The broker's read chunk: half of a thread's share, at least 4 KiB.
  CHECK(read_chunk_for(524288, 1) == 262144);
  CHECK(read_chunk_for(524288, 4) == 65536);
  CHECK(read_chunk_for(0, 1) == 4096);
}

TEST_CASE("compaction: compressed batches are read and rewritten with their codec", "[storage][compaction]") {
  MemFs t;
  auto log = open_log(t.fs, "/t/z-0", compact_config(1024));
  Model model;
  const Codec codecs[] = {Codec::kGzip, Codec::kLz4, Codec::kZstd, Codec::kSnappy, Codec::kNone};
  std::map<int64_t, Codec> codec_of;  // batch base offset -> codec
  for (int r = 0; r < 40; ++r) {
    const Codec c = codecs[r % 5];
    codec_of[log->log_end_offset()] = c;
    std::vector<std::pair<std::string, bool>> batch;
    for (int k = 0; k < 8; ++k) batch.emplace_back("key-" + std::to_string((r * 3 + k) % 16), true);
    put(*log, model, batch, c);
  }
  REQUIRE(log->segment_count() > 3);
  const int64_t active_base = log->segments()->back()->base_offset();
  CleanStats st = clean_ok(*log, 0);
  REQUIRE(st.cleaned);
  CHECK(st.batches_rebuilt > 0);
  check_latest(*log, model, active_base);
  check_indexes(t.fs, *log);
  // Every surviving record sits in a batch of its original codec.
  std::set<Codec> seen;
  for (const auto& rec : all_records(*log)) {
    auto it = std::prev(codec_of.upper_bound(rec.offset));
    CHECK(rec.codec == it->second);
    seen.insert(rec.codec);
  }
  CHECK(seen.size() >= 4);
}

TEST_CASE("compaction: control batches are kept as they are, records without a key are dropped",
          "[storage][compaction]") {
  MemFs t;
  auto log = open_log(t.fs, "/t/k-0", compact_config());
  Model model;
  fill(*log, model, 6, 4);
  // A transaction marker, then a record without a key.
  auto marker = protocol::build_end_txn_marker_batch(protocol::ControlRecordType::kCommit, 42, 3, 7, kTs);
  REQUIRE(marker.ok());
  Bytes m = std::move(marker).value();
  const int64_t marker_offset = append_ok(*log, m).base_offset;
  protocol::BatchBuilder keyless({});
  const std::string v = "no key";
  REQUIRE(keyless.add(kTs, std::nullopt, protocol::as_bytes(v)));
  Bytes k = std::move(keyless.build()).value();
  const int64_t keyless_offset = append_ok(*log, k).base_offset;
  fill(*log, model, 6, 10);
  CleanStats st = clean_ok(*log, 0);
  REQUIRE(st.cleaned);
  REQUIRE(st.cleaned_up_to > keyless_offset);
  // The marker batch is where it was, byte for byte.
  Bytes blob = read_bytes(*log, marker_offset, 1);
  auto view = protocol::RecordBatchView::parse_and_validate(blob);
  REQUIRE(view.ok());
  CHECK(view->is_control());
  CHECK(view->base_offset() == marker_offset);
  CHECK(view->producer_id() == 42);
  CHECK(std::equal(m.begin(), m.end(), blob.begin()));
  // The keyless record is gone: the next batch after the marker is keyed data.
  Bytes after = read_bytes(*log, keyless_offset, 1);
  auto next = protocol::RecordBatchView::parse(after);
  REQUIRE(next.ok());
  CHECK(next->base_offset() > keyless_offset);
}

// A COMMIT or ABORT marker of producer pid; its offset.
int64_t end_txn(Log& log, int64_t pid, bool commit) {
  auto marker = protocol::build_end_txn_marker_batch(
      commit ? protocol::ControlRecordType::kCommit : protocol::ControlRecordType::kAbort, pid, 0, 5, kTs);
  REQUIRE(marker.ok());
  Bytes m = std::move(marker).value();
  return append_ok(log, m).base_offset;
}

std::vector<std::pair<std::string, bool>> keys_named(int from, int to) {
  std::vector<std::pair<std::string, bool>> out;
  for (int k = from; k < to; ++k) out.emplace_back("key-" + std::to_string(k), true);
  return out;
}

TEST_CASE("compaction: an aborted transaction's records are removed and never shadow committed ones",
          "[storage][compaction][txn]") {
  MemFs t;
  auto log = open_log(t.fs, "/t/txn-0", compact_config());
  Model model;
  fill(*log, model, 10, 2);
  // Producer 100 commits new values of keys 0-4; producer 200 then writes
  // keys 0-4 again, interleaved with a committed producer 300, and aborts.
  put(*log, model, keys_named(0, 5), Codec::kNone, 0, 100);
  const int64_t commit100 = end_txn(*log, 100, true);
  const int64_t aborted_first = log->log_end_offset();
  put(*log, model, keys_named(0, 3), Codec::kNone, 0, 200, /*update_model=*/false);
  put(*log, model, keys_named(5, 7), Codec::kNone, 0, 300);
  put(*log, model, keys_named(3, 5), Codec::kNone, 0, 200, /*update_model=*/false);
  const int64_t abort200 = end_txn(*log, 200, false);
  end_txn(*log, 300, true);
  // Plain writes of other keys push all of it out of the active segment.
  for (int r = 0; r < 40; ++r) put(*log, model, keys_named(10, 15));
  REQUIRE(log->segment_count() > 4);

  CleanStats st = clean_ok(*log, 0);
  REQUIRE(st.cleaned);
  REQUIRE(st.cleaned_up_to > abort200);
  CHECK(st.aborted_batches_removed == 2);
  CHECK(st.stable_bound == Cleaner::kNoBound);
  // Keys 0-4 keep producer 100's committed values, keys 5-6 producer 300's.
  check_latest(*log, model, st.cleaned_up_to);
  for (const auto& r : all_records(*log)) CHECK((r.offset < aborted_first || r.offset > abort200 ||
                                                 *r.key == "key-5" || *r.key == "key-6"));
  // Both markers are still there.
  for (int64_t at : {commit100, abort200}) {
    Bytes blob = read_bytes(*log, at, 1);
    auto view = protocol::RecordBatchView::parse_and_validate(blob);
    REQUIRE(view.ok());
    CHECK(view->is_control());
    CHECK(view->base_offset() == at);
  }
  check_indexes(t.fs, *log);
  // The scan found transactions, so the next pass reads from the first one.
  CHECK(log->txn_free_hint().below == commit100 - 5);
}

TEST_CASE("compaction: nothing at or past an undecided transaction or the stable bound is cleaned",
          "[storage][compaction][txn]") {
  MemFs t;
  auto log = open_log(t.fs, "/t/open-0", compact_config());
  Model model;
  fill(*log, model, 6, 6);
  const Model before_txn = model;
  const int64_t open_first = log->log_end_offset();
  put(*log, model, keys_named(0, 3), Codec::kNone, 0, 400, /*update_model=*/false);
  fill(*log, model, 6, 30);
  REQUIRE(log->segment_count() > 6);

  SECTION("the open transaction bounds the pass") {
    CleanStats st = clean_ok(*log, 0);
    REQUIRE(st.cleaned);
    CHECK(st.stable_bound == open_first);
    CHECK(st.cleaned_up_to <= open_first);
    CHECK(log->first_dirty_offset() <= open_first);
    // Only whole segments below the transaction were cleaned, by what lies
    // below it: each key's last value before the transaction is there.
    auto recs = all_records(*log);
    for (const auto& [k, want] : before_txn) {
      bool found = false;
      for (const auto& r : recs) found = found || (r.offset == want.offset && *r.key == k);
      INFO("key " << k << " offset " << want.offset);
      CHECK(found);
    }
    // The transaction aborts: the next pass cleans past it and removes it.
    end_txn(*log, 400, false);
    fill(*log, model, 6, 10);
    st = clean_ok(*log, 0);
    REQUIRE(st.cleaned);
    CHECK(st.stable_bound == Cleaner::kNoBound);
    CHECK(st.cleaned_up_to > open_first);
    CHECK(st.aborted_batches_removed == 1);
    check_latest(*log, model, st.cleaned_up_to);
  }
  SECTION("a log whose transactions are decided is bounded by the HW alone") {
    auto log2 = open_log(t.fs, "/t/hw-0", compact_config());
    Model m2;
    fill(*log2, m2, 6, 30);
    const int64_t bound = log2->segments()->at(3)->base_offset();
    auto r = Cleaner().clean(*log2, 0, {}, bound);
    REQUIRE(r.is_ok());
    REQUIRE(r->cleaned);
    CHECK(r->cleaned_up_to <= bound);
    CHECK(r->stable_bound == bound);
    // Nothing at or past the bound changed: every record there is still read.
    int64_t at_or_past = 0;
    for (const auto& rec : all_records(*log2)) at_or_past += rec.offset >= bound;
    CHECK(at_or_past == log2->log_end_offset() - bound);
  }
}

TEST_CASE("compaction: tombstones stay until delete.retention.ms past their first clean",
          "[storage][compaction][tombstone]") {
  MemFs t;
  auto log = open_log(t.fs, "/t/d-0", compact_config());
  Model model;
  fill(*log, model, 10, 6);
  put(*log, model, {{"key-7", false}, {"key-8", false}});  // tombstones (the churn below spares them)
  fill(*log, model, 4, 10);  // other keys' churn, rolls the tombstones out of the active segment
  const int64_t t0 = 50'000;
  CleanStats first = clean_ok(*log, t0);
  REQUIRE(first.cleaned);
  CHECK(first.tombstones_removed == 0);
  check_latest(*log, model, first.cleaned_up_to);
  // The tombstones are kept, in a batch that now carries a delete horizon.
  int tombstones = 0;
  for (const auto& r : all_records(*log))
    if (!r.value) {
      ++tombstones;
      CHECK(r.delete_horizon);
    }
  CHECK(tombstones == 2);
  CHECK(log->earliest_delete_horizon() == t0 + 10'000);

  // Before the horizon: nothing is due, and a forced look keeps them.
  CHECK_FALSE(Cleaner().plan(*log, t0 + 9'999).has_value());
  // At the horizon the log is due again and the tombstones go.
  auto p = Cleaner().plan(*log, t0 + 10'000);
  REQUIRE(p.has_value());
  CHECK(p->forced);
  CleanStats second = clean_ok(*log, t0 + 10'000);
  REQUIRE(second.cleaned);
  CHECK(second.tombstones_removed == 2);
  for (const auto& r : all_records(*log)) CHECK(r.value.has_value());
  check_latest(*log, model, second.cleaned_up_to, true);
  check_indexes(t.fs, *log);
  CHECK(log->earliest_delete_horizon() == kNever);
}

TEST_CASE("compaction: a segment emptied by cleaning does not hold back time retention (compact,delete)",
          "[storage][compaction][policy]") {
  MemFs t;
  LogConfig cfg = compact_config(1024);
  cfg.cleanup_delete = true;
  cfg.retention_ms = 1'000'000;
  auto log = open_log(t.fs, "/t/e-0", cfg);
  Model model;
  fill(*log, model, 5, 40);  // the same 5 keys again and again: early segments empty out
  REQUIRE(log->segment_count() > 4);
  CleanStats st = clean_ok(*log, 0);
  REQUIRE(st.cleaned);
  REQUIRE(log->segments()->front()->published_size() == 0);
  check_latest(*log, model, st.cleaned_up_to);
  const int64_t later = kTs + log->log_end_offset() + 2'000'000;
  // cleanup.policy=compact alone: retention never deletes.
  LogConfig compact_only = cfg;
  compact_only.cleanup_delete = false;
  log->update_config(compact_only);
  auto none = log->apply_retention(later);
  REQUIRE(none.is_ok());
  CHECK(*none == 0);
  // compact,delete: every record is older than retention.ms, so all but the
  // active segment go, the empty ones included.
  log->update_config(cfg);
  auto n = log->apply_retention(later);
  REQUIRE(n.is_ok());
  CHECK(log->segment_count() == 1);
}

TEST_CASE("compaction: dirty ratio, min and max compaction lag decide when a log is due",
          "[storage][compaction][policy]") {
  MemFs t;
  LogConfig cfg = compact_config();
  auto log = open_log(t.fs, "/t/r-0", cfg);
  Model model;
  Cleaner cleaner;
  CHECK_FALSE(cleaner.plan(*log, 0).has_value());  // one segment: nothing cleanable
  fill(*log, model, 20, 30);
  // cleanup.policy=delete only: never cleaned.
  LogConfig del = cfg;
  del.cleanup_compact = false;
  del.cleanup_delete = true;
  log->update_config(del);
  CHECK_FALSE(cleaner.plan(*log, 0).has_value());
  log->update_config(cfg);
  auto p = cleaner.plan(*log, 0);
  REQUIRE(p.has_value());
  CHECK(p->dirty_ratio == 1.0);
  CHECK(p->end_segment == log->segment_count() - 1);

  // min.compaction.lag.ms: records newer than now - lag are not cleanable.
  LogConfig lag = cfg;
  lag.min_compaction_lag_ms = 1'000'000;
  log->update_config(lag);
  CHECK_FALSE(cleaner.plan(*log, kTs + 10).has_value());  // every record is younger than the lag
  auto part = cleaner.plan(*log, kTs + 1'000'000 + 300);  // offsets up to ~300 are old enough
  REQUIRE(part.has_value());
  CHECK(part->end_segment < log->segment_count() - 1);
  CHECK(part->end_segment > 0);
  const int64_t bound = (*log->segments())[part->end_segment]->base_offset();
  CHECK((*log->segments())[part->end_segment]->max_timestamp_so_far().timestamp > kTs + 300);
  CleanStats st = clean_ok(*log, kTs + 1'000'000 + 300);
  CHECK(st.cleaned_up_to == bound);
  check_latest(*log, model, bound);
  log->update_config(cfg);

  // Clean everything, then add a little dirt: below min.cleanable.dirty.ratio.
  REQUIRE(clean_ok(*log, 0).cleaned);
  fill(*log, model, 20, 2);
  auto small = cleaner.plan(*log, 0);
  if (small) CHECK(small->dirty_ratio >= cfg.min_cleanable_dirty_ratio);  // only if the few segments outweigh
  LogConfig strict = cfg;
  strict.min_cleanable_dirty_ratio = 0.99;
  log->update_config(strict);
  CHECK_FALSE(cleaner.plan(*log, 0).has_value());
  // max.compaction.lag.ms forces it once the dirt is old enough.
  strict.max_compaction_lag_ms = 5'000;
  log->update_config(strict);
  CHECK_FALSE(cleaner.plan(*log, kTs).has_value());
  auto forced = cleaner.plan(*log, kTs + log->log_end_offset() + 10'000);
  REQUIRE(forced.has_value());
  CHECK(forced->forced);
  CHECK(forced->dirty_ratio < 0.99);
}

TEST_CASE("compaction: a crash at every step of every swap recovers to a consistent log",
          "[storage][compaction][crash]") {
  // First a full run counts the hook calls (4 per rewritten segment).
  auto build = [](io::MemFileSystem& fs, Model& model) {
    auto log = open_log(fs, "/t/x-0", compact_config());
    fill(*log, model, 12, 20);
    put(*log, model, {{"key-1", false}});
    fill(*log, model, 3, 5);
    REQUIRE(log->flush().is_ok());
    return log;
  };
  size_t calls = 0;
  {
    MemFs t;
    Model model;
    auto log = build(t.fs, model);
    auto r = Cleaner().clean(*log, 0, [&](SwapStep, int64_t) {
      ++calls;
      return true;
    });
    REQUIRE(r.is_ok());
    REQUIRE(r->segments_rewritten >= 3);
    CHECK(calls == 4 * r->segments_rewritten);
  }
  for (int synced = 0; synced < 2; ++synced) {
    for (size_t stop = 1; stop <= calls; ++stop) {
      INFO("stop at hook call " << stop << (synced ? ", directory synced first" : ""));
      MemFs t;
      Model model;
      auto log = build(t.fs, model);
      const int64_t leo = log->log_end_offset();
      size_t n = 0;
      SwapStep stopped_at{};
      auto r = Cleaner().clean(*log, 0, [&](SwapStep step, int64_t) {
        if (++n < stop) return true;
        stopped_at = step;
        // On a real disk any prefix of the renames may reach the platter.
        if (synced) REQUIRE(t.fs.sync_dir("/t/x-0").is_ok());
        return false;
      });
      REQUIRE_FALSE(r.is_ok());
      (void)stopped_at;
      log.reset();
      t.fs.crash();
      log = open_log(t.fs, "/t/x-0", compact_config());
      CHECK(log->log_end_offset() == leo);
      CHECK(leftovers(t.fs, "/t/x-0").empty());  // .cleaned, .swap and .deleted all resolved
      check_latest(*log, model, 0);
      check_indexes(t.fs, *log);
      // And it cleans fully afterwards.
      CleanStats st = clean_ok(*log, 0);
      CHECK(st.cleaned);
      check_latest(*log, model, log->segments()->back()->base_offset());
      check_indexes(t.fs, *log);
    }
  }
}

TEMPLATE_TEST_CASE("compaction: readers and appenders run during a clean", "[storage][compaction][concurrency]",
                   PosixFs, MemFs) {
  TestType t;
  auto log = open_log(t.fs, t.root() + "/y-0", compact_config());
  Model model;
  fill(*log, model, 16, 40);
  constexpr int64_t kFilled = 16 * 40;
  REQUIRE(log->log_end_offset() == kFilled);
  // A reader's slices taken before the clean stay readable, with the old bytes.
  auto held = log->read(0, 1 << 20);
  REQUIRE(held.is_ok());
  auto held_bytes = read_slices(*held);
  REQUIRE(held_bytes.is_ok());

  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, failures{0};
  std::thread reader([&] {
    while (!done.load() || reads.load() < 5) {
      // Every batch whole and valid, offsets increasing, values naming their offsets.
      int64_t next = 0, prev = -1;
      const int64_t end = std::min<int64_t>(log->log_end_offset(), kFilled);
      while (next < end) {
        auto r = log->read(next, 8 * 1024);
        if (!r) {
          ++failures;
          break;
        }
        auto bytes = read_slices(*r);
        if (!bytes || bytes->empty()) break;
        protocol::BatchSplitter split(*bytes);
        protocol::RecordsEntry e;
        while (split.next(&e) == protocol::SplitStatus::kEntry) {
          auto v = protocol::RecordBatchView::parse_and_validate(e.bytes);
          if (!v) {
            ++failures;
            break;
          }
          auto recs = protocol::decode_records(*v, 1 << 24);
          if (!recs) {
            ++failures;
            break;
          }
          auto rr = recs->reader();
          protocol::RecordView rec;
          while (rr.next(&rec)) {
            if (rec.offset < next || rec.offset >= kFilled) continue;
            if (rec.offset <= prev || !rec.value ||
                std::string(reinterpret_cast<const char*>(rec.value->data()), rec.value->size()) !=
                    value_for(rec.offset))
              ++failures;
            prev = rec.offset;
          }
          next = v->last_offset() + 1;
        }
      }
      ++reads;
    }
  });
  // The appender goes on while the cleaner works (keys it owns alone).
  Model appended;
  std::thread appender([&] {
    for (int i = 0; i < 60; ++i) {
      protocol::BatchBuilder b({});
      const std::string v = "appended-" + std::to_string(i);
      auto built = b.add(0, protocol::as_bytes("extra-" + std::to_string(i % 7)), protocol::as_bytes(v))
                       ? b.build()
                       : decltype(b.build())(protocol::RecordError::kBadRecord);
      if (!built) {
        ++failures;
        continue;
      }
      Bytes bytes = std::move(built).value();
      if (!log->append(bytes, 7, 0)) ++failures;
    }
  });
  CleanStats st = clean_ok(*log, 0);
  appender.join();
  done = true;
  reader.join();
  CHECK(st.cleaned);
  CHECK(failures.load() == 0);
  CHECK(reads.load() >= 5);
  // The held slices still read the pre-clean bytes, even once the old
  // segments' files are unlinked.
  log->remove_deleted_files(0);
  CHECK(log->remove_deleted_files(10'000'000) == 3 * st.segments_rewritten);
  auto again = read_slices(*held);
  REQUIRE(again.is_ok());
  CHECK(*again == *held_bytes);
  CHECK(log->log_end_offset() == 16 * 40 + 60);
}

TEST_CASE("compaction: recovery resolves leftovers a crash can leave in any rename order",
          "[storage][compaction][crash]") {
  MemFs t;
  const std::string dir = "/t/o-0";
  Model model;
  auto log = open_log(t.fs, dir, compact_config());
  fill(*log, model, 12, 20);
  REQUIRE(log->flush().is_ok());
  const int64_t leo = log->log_end_offset();
  // Stop once the first segment's .swap files are durable.
  auto r = Cleaner().clean(*log, 0, [](SwapStep step, int64_t) { return step != SwapStep::kSwapRenamed; });
  REQUIRE_FALSE(r.is_ok());
  log.reset();
  const auto name = [&](SegmentFileKind k, FileSuffix s = FileSuffix::kNone) {
    return dir + "/" + segment_file_name(0, k, s);
  };
  SECTION("the .log reached its final name before its indexes (a reordered rename)") {
    REQUIRE(t.fs.rename(name(SegmentFileKind::kLog), name(SegmentFileKind::kLog, FileSuffix::kDeleted)).is_ok());
    REQUIRE(t.fs.rename(name(SegmentFileKind::kIndex), name(SegmentFileKind::kIndex, FileSuffix::kDeleted)).is_ok());
    REQUIRE(t.fs.rename(name(SegmentFileKind::kLog, FileSuffix::kSwap), name(SegmentFileKind::kLog)).is_ok());
  }
  SECTION("a stale .cleaned of another segment lies beside the swap") {
    auto f = t.fs.open(dir + "/" + segment_file_name(12345, SegmentFileKind::kLog, FileSuffix::kCleaned),
                       io::OpenMode::kCreate);
    REQUIRE(f.is_ok());
    REQUIRE((*f)->append(protocol::as_bytes("junk")).is_ok());
  }
  SECTION("only the .log.swap survived") {
    REQUIRE(t.fs.remove_file(name(SegmentFileKind::kIndex, FileSuffix::kSwap)).is_ok());
    REQUIRE(t.fs.remove_file(name(SegmentFileKind::kTimeIndex, FileSuffix::kSwap)).is_ok());
  }
  REQUIRE(t.fs.sync_dir(dir).is_ok());
  t.fs.crash();
  log = open_log(t.fs, dir, compact_config());
  CHECK(log->log_end_offset() == leo);
  CHECK(leftovers(t.fs, dir).empty());
  check_latest(*log, model, 0);
  check_indexes(t.fs, *log);
  // The first segment is the cleaned one: each key at most once in it.
  const int64_t second = (*log->segments())[1]->base_offset();
  check_latest(*log, model, second);
}

TEST_CASE("compaction: a throttled pass counts every byte it reads and writes and sleeps for the excess",
          "[storage][compaction][throttler]") {
  MemFs t;
  auto log = open_log(t.fs, t.root() + "/c-0", compact_config());
  Model model;
  fill(*log, model, 20, 30);
  const int64_t active_base = log->segments()->back()->base_offset();
  uint64_t below_active = 0;  // every segment the pass maps and rewrites
  for (const auto& seg : *log->segments())
    if (seg->base_offset() < active_base) below_active += seg->published_size();
  // Fake time: it moves only when the throttler sleeps.
  int64_t now_ns = 0;
  size_t sleeps = 0;
  Throttler::Options o;
  o.clock = {[&] { return now_ns; }, [&](int64_t ns) {
               now_ns += ns;
               ++sleeps;
             }};
  const double rate = 4096;  // bytes per second; burst 0.3 s of it
  Throttler throttle(rate, o);
  auto r = Cleaner({}, &throttle).clean(*log, 0);
  REQUIRE(r.is_ok());
  REQUIRE(r->cleaned);
  CHECK(r->cleaned_up_to == active_base);
  check_latest(*log, model, active_base);
  const auto s = throttle.stats();
  // Reads: the transaction scan reads the whole log (the first pass; the
  // log has no transaction, so the next pass starts where it ended); the
  // map pass and the rewrite each read every segment below the active one
  // once (each is smaller than a read chunk); writes: at least the cleaned
  // segments swapped in.
  uint64_t active_bytes = 0;
  for (const auto& seg : *log->segments()) active_bytes += seg->base_offset() < active_base ? 0 : seg->published_size();
  CHECK(r->txn_bytes_scanned == below_active + active_bytes);
  CHECK(log->txn_free_hint().below == log->log_end_offset());
  CHECK(r->bytes_read == below_active);
  REQUIRE(s.bytes >= 2 * below_active + r->bytes_written + r->txn_bytes_scanned);
  CHECK(r->bytes_written > 0);
  // The pass slept, and on the fake clock it took what the rate allows:
  // (bytes - burst) / rate, less at most one acquire's worth (a segment read)
  // when the pass ended with unspent tokens.
  CHECK(s.delays > 0);
  CHECK(sleeps == s.delays);
  CHECK(now_ns == s.delay_ns);
  const double want_ns = (static_cast<double>(s.bytes) - rate * 0.3) / rate * 1e9;
  const double one_segment_ns = 4096.0 / rate * 1e9;
  CHECK(static_cast<double>(s.delay_ns) <= want_ns + static_cast<double>(s.delays) + 1);
  CHECK(static_cast<double>(s.delay_ns) >= want_ns - one_segment_ns);
}

// Not run by ctest (hidden): cleaner throughput on real files.
//   storage_compaction_test "[.bench]" -s   (prints MB/s)
TEST_CASE("compaction: cleaner throughput", "[.bench]") {
  PosixFs t;
  LogConfig cfg = compact_config(2u << 20);
  cfg.segment.index_interval_bytes = 4096;
  auto log = open_log(t.fs, t.root() + "/b-0", cfg);
  Model model;
  const int keys = 10'000;
  std::vector<std::pair<std::string, bool>> batch;
  for (int i = 0; i < 400'000; ++i) {
    batch.emplace_back("key-" + std::to_string((int64_t{i} * 7919) % keys), true);
    if (batch.size() == 50) {
      put(*log, model, batch, i % 2 ? Codec::kLz4 : Codec::kNone);
      batch.clear();
    }
  }
  const uint64_t before = log->size_bytes();
  REQUIRE(log->segment_count() > 2);
  const auto t0 = std::chrono::steady_clock::now();
  CleanStats st = clean_ok(*log, 0);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(st.cleaned);
  std::printf("cleaner: %llu bytes in %zu segments -> %llu bytes, %llu records rewritten (%llu removed) in %.3f s: "
              "%.1f MB/s of log, %.2f M records/s\n",
              static_cast<unsigned long long>(before), log->segment_count(),
              static_cast<unsigned long long>(log->size_bytes()), static_cast<unsigned long long>(st.records_read),
              static_cast<unsigned long long>(st.records_removed), secs, before / 1e6 / secs,
              st.records_read / 1e6 / secs);
  check_latest(*log, model, st.cleaned_up_to);
}

}  // namespace CK_UNITY_ID
