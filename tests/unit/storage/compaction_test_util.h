// tests/unit/storage/compaction_test_util.h: what the cleaner tests share: a
// compacted LogConfig, a model of each key's latest value and the batches
// that feed it, checks of a cleaned log against the model (records, indexes,
// leftover files), and a sync that waits for a LogManager's rolls.
#pragma once

#include <catch2/catch.hpp>

#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fs_fixtures.h"
#include "log_test_util.h"
#include "storage/cleaner.h"
#include "storage/file_names.h"
#include "storage/index_file.h"
#include "storage/log_manager.h"

namespace ciuickafka::storage::test::compaction {

using ciuickafka::protocol::Codec;

inline constexpr int64_t kTs = 1'000'000;  // record timestamps are kTs + offset

inline LogConfig compact_config(uint64_t segment_bytes = 2048) {
  LogConfig c;
  c.segment.segment_bytes = segment_bytes;
  c.segment.index_interval_bytes = 256;
  c.cleanup_compact = true;
  c.cleanup_delete = false;
  c.min_cleanable_dirty_ratio = 0.5;
  c.delete_retention_ms = 10'000;
  return c;
}

struct Latest {
  int64_t offset = 0;
  std::optional<std::string> value;
};
using Model = std::map<std::string, Latest>;

inline std::string value_for(int64_t offset) { return "value-" + std::to_string(offset) + std::string(40, 'x'); }

// Appends one batch of keys (nullopt value: a tombstone); values name their
// offset, timestamps are kTs + offset. Updates the model.
// txn_pid >= 0: a transactional batch of that producer, and the model is
// updated only when update_model (a transaction that will commit).
inline void put(Log& log, Model& model, const std::vector<std::pair<std::string, bool>>& keys, Codec codec = Codec::kNone,
         int64_t now_ms = 0, int64_t txn_pid = -1, bool update_model = true) {
  protocol::BatchOptions o;
  o.codec = codec;
  if (txn_pid >= 0) {
    o.transactional = true;
    o.producer_id = txn_pid;
    o.producer_epoch = 0;
    o.base_sequence = 0;
  }
  protocol::BatchBuilder b(o);
  int64_t offset = log.log_end_offset();
  std::vector<std::string> values;
  values.reserve(keys.size());
  for (const auto& [k, live] : keys) {
    values.push_back(value_for(offset));
    std::optional<std::span<const uint8_t>> v;
    if (live) v = protocol::as_bytes(values.back());
    REQUIRE(b.add(kTs + offset, protocol::as_bytes(k), v));
    if (update_model) model[k] = Latest{offset, live ? std::optional<std::string>(values.back()) : std::nullopt};
    ++offset;
  }
  auto built = b.build();
  REQUIRE(built.ok());
  Bytes bytes = std::move(built).value();
  append_ok(log, bytes, 7, now_ms);
}

// rounds x keys overwrites, batches of 5 records.
inline void fill(Log& log, Model& model, int keys, int rounds, Codec codec = Codec::kNone) {
  std::vector<std::pair<std::string, bool>> batch;
  for (int r = 0; r < rounds; ++r)
    for (int k = 0; k < keys; ++k) {
      batch.emplace_back("key-" + std::to_string(k), true);
      if (batch.size() == 5) {
        put(log, model, batch, codec);
        batch.clear();
      }
    }
  if (!batch.empty()) put(log, model, batch, codec);
}

struct Rec {
  int64_t offset;
  std::optional<std::string> key;
  std::optional<std::string> value;
  int64_t timestamp;
  Codec codec;
  bool delete_horizon;
};

// Every record of the log from its start, read through Log::read; checks
// every batch (framing, CRC) and that offsets strictly increase.
inline std::vector<Rec> all_records(const Log& log) {
  std::vector<Rec> out;
  int64_t next = log.log_start_offset();
  while (next < log.log_end_offset()) {
    Bytes blob = read_bytes(log, next, 64 * 1024);
    if (blob.empty()) break;
    protocol::BatchSplitter split(blob);
    protocol::RecordsEntry e;
    while (split.next(&e) == protocol::SplitStatus::kEntry) {
      auto v = protocol::RecordBatchView::parse_and_validate(e.bytes);
      REQUIRE(v.ok());
      if (v->is_control()) {  // transaction markers are not data
        next = v->last_offset() + 1;
        continue;
      }
      auto recs = protocol::decode_records(*v, 1 << 24);
      REQUIRE(recs.ok());
      auto reader = recs->reader();
      protocol::RecordView r;
      while (reader.next(&r)) {
        if (r.offset < next) continue;  // the client filters what lies below the fetch offset
        REQUIRE((out.empty() || r.offset > out.back().offset));
        REQUIRE(r.offset <= v->last_offset());
        auto str = [](std::optional<std::span<const uint8_t>> s) -> std::optional<std::string> {
          if (!s) return std::nullopt;
          return std::string(reinterpret_cast<const char*>(s->data()), s->size());
        };
        out.push_back({r.offset, str(r.key), str(r.value), r.timestamp, *v->codec(), v->has_delete_horizon()});
      }
      REQUIRE(reader.error() == protocol::RecordError::kNone);
      next = v->last_offset() + 1;
    }
  }
  return out;
}

// Every key's latest record is the model's (tombstones may be gone when
// tombstones_may_be_gone), and no key appears twice below cleaned_up_to.
inline void check_latest(const Log& log, const Model& model, int64_t cleaned_up_to, bool tombstones_may_be_gone = false) {
  auto recs = all_records(log);
  std::map<std::string, const Rec*> last;
  std::map<std::string, int> below;
  for (const auto& r : recs) {
    REQUIRE(r.key);
    last[*r.key] = &r;
    if (r.offset < cleaned_up_to) CHECK(++below[*r.key] == 1);
    REQUIRE(r.timestamp == kTs + r.offset);
    if (r.value) REQUIRE(*r.value == value_for(r.offset));
  }
  for (const auto& [k, want] : model) {
    auto it = last.find(k);
    if (it == last.end()) {
      INFO("key " << k);
      CHECK((tombstones_may_be_gone && !want.value));
      continue;
    }
    CHECK(it->second->offset == want.offset);
    CHECK(it->second->value == want.value);
  }
}

// The indexes of every segment agree with its data: each offset index entry
// points at the start of the batch whose last offset it names, time index
// entries name offsets inside the segment, and the published size is the file's.
inline void check_indexes(io::FileSystem& fs, const Log& log) {
  auto segs = log.segments();
  for (size_t i = 0; i < segs->size(); ++i) {
    const Segment& seg = *(*segs)[i];
    auto data = io::read_file(fs, seg.path());
    REQUIRE(data.is_ok());
    CHECK(data->size() == seg.published_size());
    CHECK(seg.offset_index().sanity_check().is_ok());
    CHECK(seg.time_index().sanity_check().is_ok());
    for (size_t n = 0; n < seg.offset_index().entries(); ++n) {
      const OffsetPosition e = seg.offset_index().entry(n);
      REQUIRE(e.position + protocol::batch_v2::kHeaderSize <= data->size());
      auto v = protocol::RecordBatchView::parse(std::span<const uint8_t>(*data).subspan(e.position));
      REQUIRE(v.ok());
      CHECK(v->last_offset() == e.offset);
    }
    const int64_t end = i + 1 < segs->size() ? (*segs)[i + 1]->base_offset() : log.log_end_offset();
    for (size_t n = 0; n < seg.time_index().entries(); ++n) {
      const TimestampOffset e = seg.time_index().entry(n);
      CHECK(e.offset >= seg.base_offset());
      CHECK(e.offset < end);
    }
  }
}

inline std::vector<std::string> leftovers(io::FileSystem& fs, const std::string& dir) {
  std::vector<std::string> out;
  auto names = fs.list_dir(dir);
  REQUIRE(names.is_ok());
  for (const auto& n : *names) {
    auto f = parse_segment_file_name(n);
    if (f && f->suffix != FileSuffix::kNone) out.push_back(n);
  }
  return out;
}

inline CleanStats clean_ok(Log& log, int64_t now_ms, CleanerConfig cc = {}) {
  auto r = Cleaner(cc).clean(log, now_ms);
  if (!r) FAIL(r.status().to_string());
  return *r;
}

// A LogManager's logs finish their rolls in the background (group commit's
// thread; Log::set_roll_sync) and the cleaner leaves a rolled segment alone
// until then: a sync of everything written waits for those finishes.
inline Status sync_all(LogManager& m, const std::shared_ptr<Log>& log) {
  std::promise<Status> done;
  m.sync_to(log, log->log_end_offset(), [&](Status s) { done.set_value(s); });
  return done.get_future().get();
}

}  // namespace ciuickafka::storage::test::compaction
