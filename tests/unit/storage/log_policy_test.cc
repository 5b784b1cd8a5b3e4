// tests/unit/storage/log_policy_test.cc: the log's ListOffsets lookups
// (offset_for_timestamp, max_timestamp), DeleteRecords (log start offset),
// retention by time and size, flush.messages, and group commit.
#include <catch2/catch.hpp>
#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "fs_fixtures.h"
#include "log_test_util.h"
#include "storage/file_names.h"
#include "storage/group_commit.h"

using namespace ciuickafka::storage;
using namespace ciuickafka::storage::test;
using ciuickafka::protocol::Codec;

namespace {

LogConfig small(uint64_t segment_bytes = 4096, uint32_t interval = 512) {
  LogConfig c;
  c.segment.segment_bytes = segment_bytes;
  c.segment.index_interval_bytes = interval;
  return c;
}

// 40 batches of 5 records: record j of batch i has offset 5i+j and
// timestamp 1000+10i+j. Odd batches are zstd-compressed.
void fill_timed(Log& log, int batches = 40) {
  for (int i = 0; i < batches; ++i) {
    Bytes b = make_batch(5, 1000 + 10 * i, 100, i % 2 ? Codec::kZstd : Codec::kNone);
    append_ok(log, b);
  }
}

}  // namespace

TEST_CASE("log: offset_for_timestamp finds the first record at or after the target", "[storage][log][time]") {
  MemFs t;
  auto log = open_log(t.fs, "/t/p-0", small());
  CHECK(*log->offset_for_timestamp(0) == TimestampOffset{-1, -1});
  CHECK(log->max_timestamp() == TimestampOffset{-1, -1});
  fill_timed(*log);
  REQUIRE(log->segment_count() > 3);
  // Inside a batch (record-exact), in compressed and plain batches.
  CHECK(*log->offset_for_timestamp(1073) == TimestampOffset{1073, 38});
  CHECK(*log->offset_for_timestamp(1082) == TimestampOffset{1082, 42});
  // Between batches: the next batch's first record.
  CHECK(*log->offset_for_timestamp(1077) == TimestampOffset{1080, 40});
  CHECK(*log->offset_for_timestamp(0) == TimestampOffset{1000, 0});
  CHECK(*log->offset_for_timestamp(1394) == TimestampOffset{1394, 199});
  CHECK(*log->offset_for_timestamp(1395) == TimestampOffset{-1, -1});
  // Every timestamp, through every segment.
  for (int64_t ts = 1000; ts < 1395; ts += 7) {
    const int64_t i = (ts - 1000) / 10, j = (ts - 1000) % 10;
    const TimestampOffset want = j < 5 ? TimestampOffset{ts, 5 * i + j} : TimestampOffset{1000 + 10 * (i + 1), 5 * (i + 1)};
    CHECK(*log->offset_for_timestamp(ts) == want);
  }
  CHECK(log->max_timestamp() == TimestampOffset{1394, 199});
  // Below the log start nothing is found.
  REQUIRE(log->advance_log_start_offset(52).is_ok());
  CHECK(*log->offset_for_timestamp(0) == TimestampOffset{1102, 52});
}

TEST_CASE("log: max_timestamp names the record holding the largest timestamp", "[storage][log][time]") {
  MemFs t;
  auto log = open_log(t.fs, "/t/p-0", small());
  fill_timed(*log, 10);
  Bytes late = make_batch(3, 9000, 10, Codec::kLz4);
  auto r = append_ok(*log, late);
  fill_timed(*log, 10);  // older timestamps after it
  CHECK(log->max_timestamp() == TimestampOffset{9002, r.base_offset + 2});
  // A reopened log (recovered from disk) agrees.
  log.reset();
  log = open_log(t.fs, "/t/p-0", small());
  CHECK(log->max_timestamp() == TimestampOffset{9002, r.base_offset + 2});
  CHECK(*log->offset_for_timestamp(5000) == TimestampOffset{9000, r.base_offset});
}

TEMPLATE_TEST_CASE("log: advance_log_start_offset hides records and deletes whole segments",
                   "[storage][log][delete]", PosixFs, MemFs) {
  TestType t;
  const std::string dir = t.root() + "/p-0";
  LogConfig cfg = small();
  cfg.file_delete_delay_ms = 1000;
  auto log = open_log(t.fs, dir, cfg);
  fill_timed(*log);
  const size_t before = log->segment_count();
  const uint64_t bytes_before = log->size_bytes();
  auto segs = log->segments();
  const int64_t second_base = (*segs)[1]->base_offset();
  const int64_t third_base = (*segs)[2]->base_offset();

  CHECK(log->advance_log_start_offset(log->log_end_offset() + 1).code() == StatusCode::kOffsetOutOfRange);
  REQUIRE(log->advance_log_start_offset(third_base + 1).is_ok());
  CHECK(log->log_start_offset() == third_base + 1);
  CHECK(log->segment_count() == before - 2);
  CHECK(log->size_bytes() < bytes_before);
  CHECK(log->read(third_base, 100).status().code() == StatusCode::kOffsetOutOfRange);
  // The batch holding the new start is returned whole.
  auto b = batches_of(read_bytes(*log, third_base + 1, 1));
  REQUIRE(b.size() == 1);
  CHECK(b[0].base <= third_base + 1);
  CHECK(b[0].last >= third_base + 1);
  // Going backwards is a no-op.
  REQUIRE(log->advance_log_start_offset(1).is_ok());
  CHECK(log->log_start_offset() == third_base + 1);

  // Renamed to .deleted, unlinked after file.delete.delay.ms.
  const std::string gone = dir + "/" + segment_file_name(second_base, SegmentFileKind::kLog, FileSuffix::kDeleted);
  CHECK(*t.fs.file_type(gone) == io::FileType::kFile);
  CHECK(*t.fs.file_type(dir + "/" + segment_file_name(second_base, SegmentFileKind::kLog)) == io::FileType::kMissing);
  CHECK(log->remove_deleted_files(5000) == 0);  // starts the clock
  CHECK(log->remove_deleted_files(5999) == 0);
  CHECK(log->remove_deleted_files(6000) == 6);  // two segments, three files each
  CHECK(*t.fs.file_type(gone) == io::FileType::kMissing);

  // Never the active segment, even when the start reaches the end.
  REQUIRE(log->advance_log_start_offset(log->log_end_offset()).is_ok());
  CHECK(log->segment_count() >= 1);
  CHECK(log->read(log->log_end_offset(), 100)->slices.empty());
  Bytes more = make_batch(2, 5000, 10);
  CHECK(append_ok(*log, more).base_offset == 200);
}

TEST_CASE("log: a .deleted file left by a crash is removed on open", "[storage][log][delete]") {
  MemFs t;
  auto log = open_log(t.fs, "/t/p-0", small());
  fill_timed(*log);
  REQUIRE(log->advance_log_start_offset(100).is_ok());
  log.reset();
  log = open_log(t.fs, "/t/p-0", small());
  const auto names = t.fs.list_dir("/t/p-0");
  REQUIRE(names.is_ok());
  for (const auto& n : *names) CHECK(n.find(".deleted") == std::string::npos);
  // Without the log-start checkpoint the start falls back to the first segment.
  CHECK(log->log_start_offset() == log->segments()->front()->base_offset());
}

TEST_CASE("log: retention by time deletes segments older than retention.ms, never the active one",
          "[storage][log][retention]") {
  MemFs t;
  LogConfig cfg = small();
  cfg.retention_ms = 100;
  auto log = open_log(t.fs, "/t/p-0", cfg);
  fill_timed(*log);  // timestamps 1000..1394
  const auto segs = log->segments();
  CHECK(*log->apply_retention(1000) == 0);
  // Segments whose largest timestamp is below now - retention.ms go.
  const int64_t now = 1250;
  size_t expect = 0;
  while (expect + 1 < segs->size() && now - (*segs)[expect]->max_timestamp_so_far().timestamp > 100) ++expect;
  REQUIRE(expect > 0);
  CHECK(*log->apply_retention(now) == expect);
  CHECK(log->log_start_offset() == (*segs)[expect]->base_offset());
  CHECK(log->segments()->front()->max_timestamp_so_far().timestamp >= now - 100);
  // Everything expired: all but the active segment.
  CHECK(*log->apply_retention(1'000'000) == segs->size() - expect - 1);
  CHECK(log->segment_count() == 1);
  // Unlimited retention deletes nothing.
  cfg.retention_ms = -1;
  log->update_config(cfg);
  fill_timed(*log);
  CHECK(*log->apply_retention(1'000'000'000) == 0);
}

TEST_CASE("log: retention by size keeps the log at or above retention.bytes", "[storage][log][retention]") {
  MemFs t;
  LogConfig cfg = small();
  cfg.retention_ms = -1;
  cfg.retention_bytes = 6'000;
  auto log = open_log(t.fs, "/t/p-0", cfg);
  fill_timed(*log);
  const uint64_t total = log->size_bytes();
  REQUIRE(total > 12'000);
  const auto segs = log->segments();
  auto n = log->apply_retention(0);
  REQUIRE(n.is_ok());
  CHECK(*n > 0);
  CHECK(log->size_bytes() >= 6'000);
  // One more segment gone would take it below.
  CHECK(log->size_bytes() - log->segments()->front()->published_size() < 6'000);
  CHECK(*log->apply_retention(0) == 0);
}

TEST_CASE("log: flush.messages flushes inside append and advances the recovery point", "[storage][log][flush]") {
  MemFs t;
  LogConfig cfg;
  cfg.flush_messages = 10;
  auto log = open_log(t.fs, "/t/p-0", cfg);
  Bytes a = make_batch(6, 1, 10);
  append_ok(*log, a);
  CHECK(log->recovery_point() == 0);
  Bytes b = make_batch(6, 1, 10);
  append_ok(*log, b);
  CHECK(log->recovery_point() == 12);
  CHECK(t.fs.synced_contents("/t/p-0/" + segment_file_name(0, SegmentFileKind::kLog))->size() == a.size() + b.size());
  // flush.ms: maybe_flush flushes once the last flush is old enough.
  cfg.flush_messages = kNever;
  cfg.flush_ms = 1000;
  log->update_config(cfg);
  Bytes c = make_batch(1, 1, 10);
  append_ok(*log, c);
  REQUIRE(log->maybe_flush(500).is_ok());
  CHECK(log->recovery_point() == 12);
  REQUIRE(log->maybe_flush(1000).is_ok());
  CHECK(log->recovery_point() == 13);
}

TEST_CASE("group commit: callbacks run only after the data is synced, and requests share syncs",
          "[storage][log][group_commit]") {
  MemFs t;
  std::shared_ptr<Log> log = open_log(t.fs, "/t/p-0", LogConfig{});
  const std::string path = "/t/p-0/" + segment_file_name(0, SegmentFileKind::kLog);
  GroupCommitter gc;
  constexpr int kThreads = 16, kAppends = 25;
  std::atomic<int> not_durable{0}, failed{0};
  // Epoch 1's leader-epoch-checkpoint write (its own fdatasync) happens now,
  // not inside the counted appends.
  REQUIRE(log->assign_epoch_start_offset(1, 0).is_ok());
  const uint64_t syncs_before = t.fs.sync_count();
  // Built here: make_batch checks with Catch2, which is for the main thread only.
  std::vector<std::vector<Bytes>> batches(kThreads);
  for (int th = 0; th < kThreads; ++th)
    for (int i = 0; i < kAppends; ++i) batches[th].push_back(make_batch(2, th * 1000 + i, 200));
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      for (int i = 0; i < kAppends; ++i) {
        Bytes& b = batches[th][i];
        auto r = log->append(b, 1, 0);
        if (!r) {
          ++failed;
          continue;
        }
        const uint64_t end = r->position + b.size();
        std::promise<void> done;
        gc.sync_to(log, r->last_offset + 1, [&, end](Status s) {
          if (!s.is_ok()) ++failed;
          // Durable means: in the synced image right now.
          if (t.fs.synced_contents(path)->size() < end) ++not_durable;
          done.set_value();
        });
        done.get_future().wait();
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failed == 0);
  CHECK(not_durable == 0);
  const auto st = gc.stats();
  CHECK(st.requests == kThreads * kAppends);
  CHECK(st.syncs < st.requests);
  CHECK(t.fs.sync_count() - syncs_before == st.syncs);
  CHECK(log->recovery_point() == log->log_end_offset());
  // Already durable: answered without a sync.
  std::promise<Status> again;
  gc.sync_to(log, log->log_end_offset(), [&](Status s) { again.set_value(s); });
  CHECK(again.get_future().get().is_ok());
  CHECK(gc.stats().syncs == st.syncs);
}

TEST_CASE("group commit: a failed sync fails the request and every later one", "[storage][log][group_commit]") {
  MemFs t;
  std::shared_ptr<Log> log = open_log(t.fs, "/t/p-0", LogConfig{});
  GroupCommitter gc;
  auto ask = [&](int64_t offset) {
    std::promise<Status> p;
    gc.sync_to(log, offset, [&](Status s) { p.set_value(s); });
    return p.get_future().get();
  };
  Bytes a = make_batch(1, 1, 10);
  append_ok(*log, a);
  t.fs.fail_nth_sync(1);
  CHECK(ask(1).code() == StatusCode::kIoError);
  Bytes b = make_batch(1, 1, 10);
  append_ok(*log, b);
  CHECK(ask(2).code() == StatusCode::kIoError);  // sticky: no false promise after a lost write-back
  CHECK(log->recovery_point() == 0);
  // Past the log end: refused, not acknowledged.
  std::shared_ptr<Log> other = open_log(t.fs, "/t/q-0", LogConfig{});
  std::promise<Status> p;
  gc.sync_to(other, 5, [&](Status s) { p.set_value(s); });
  CHECK(p.get_future().get().code() == StatusCode::kInvalidArgument);
  gc.stop();
  std::promise<Status> late;
  gc.sync_to(other, 0, [&](Status s) { late.set_value(s); });
  CHECK(!late.get_future().get().is_ok());
}
