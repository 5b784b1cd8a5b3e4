// storage/cleaner.cc: planning, mapping and rewriting of one cleaner pass.
#include "storage/cleaner.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "protocol/records/batch_builder.h"
#include "protocol/records/record_batch.h"
#include "storage/compact_writer.h"
#include "storage/index_file.h"
#include "storage/offset_map.h"

namespace ciuickafka::storage {

namespace v2 = protocol::batch_v2;

namespace {

constexpr int64_t kMaxOffset = std::numeric_limits<int64_t>::max();

// Calls fn(view) for every batch of seg below its published size, reading
// chunk bytes at a time (more when one batch is larger). Every read is
// counted by throttle (when set), which may sleep. Stops at the first error
// fn returns.
template <class Fn>
Status for_each_batch(const Segment& seg, size_t chunk, Throttler* throttle, uint64_t* bytes_read, Fn&& fn) {
  const uint64_t size = seg.published_size();
  if (size == 0) return Status::ok();
  auto first = seg.read(seg.base_offset(), 1, size, kMaxOffset, true);
  if (!first) return first.status();
  if (!*first) return Status::ok();
  io::File* file = (*first)->file;
  std::vector<uint8_t> buf;
  for (uint64_t pos = (*first)->position; pos < size;) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(chunk, size - pos));
    if (want < v2::kLogOverhead) return Status::corruption(seg.path() + ": a partial batch header at the end");
    buf.resize(want);
    auto n = file->read_at(pos, buf);
    if (!n) return n.status();
    if (throttle) throttle->acquire(*n);
    if (*n != want) return Status::corruption(seg.path() + ": short read at " + std::to_string(pos));
    protocol::BatchSplitter split(std::span<const uint8_t>(buf.data(), buf.size()));
    protocol::RecordsEntry e;
    protocol::SplitStatus st;
    while ((st = split.next(&e)) == protocol::SplitStatus::kEntry) {
      auto view = protocol::RecordBatchView::parse(e.bytes);
      if (!view) return Status::corruption(seg.path() + ": unreadable batch at " + std::to_string(pos));
      CK_RETURN_IF_ERROR(fn(*view));
    }
    if (st == protocol::SplitStatus::kCorrupt)
      return Status::corruption(seg.path() + ": batch framing breaks at " + std::to_string(pos + split.position()));
    if (split.position() == 0) {  // one batch larger than the chunk: read it whole
      const int32_t len = static_cast<int32_t>(load_be32(buf.data() + v2::kBatchLengthOffset));
      if (len < v2::kMinBatchLength || pos + v2::kLogOverhead + static_cast<uint64_t>(len) > size)
        return Status::corruption(seg.path() + ": batch length " + std::to_string(len) + " at " + std::to_string(pos));
      chunk = v2::kLogOverhead + static_cast<size_t>(len);
      continue;
    }
    pos += split.position();
    if (bytes_read) *bytes_read += split.position();
  }
  return Status::ok();
}

// The first batch's maxTimestamp of seg (kNoTimestamp when empty).
int64_t first_batch_timestamp(const Segment& seg) {
  const uint64_t size = seg.published_size();
  auto first = seg.read(seg.base_offset(), 1, size, kMaxOffset, true);
  if (!first || !*first) return kNoTimestamp;
  uint8_t ts[8];
  auto n = (*first)->file->read_at((*first)->position + v2::kMaxTimestampOffset, ts);
  if (!n || *n != sizeof ts) return kNoTimestamp;
  return static_cast<int64_t>(load_be64(ts));
}

// The transactions of a log below a bound, read from its batch headers
// (cleaner.h, "Transactions and the stable bound").
struct TxnView {
  int64_t first_unstable = kMaxOffset;    // first offset of a transaction open at the bound
  int64_t first_txn_offset = kMaxOffset;  // the first transactional or control batch seen
  // producer id -> aborted (first offset, marker offset), ascending.
  std::unordered_map<int64_t, std::vector<std::pair<int64_t, int64_t>>> aborted;

  bool is_aborted(const protocol::RecordBatchView& b) const {
    if (!b.is_transactional() || b.is_control() || aborted.empty()) return false;
    auto it = aborted.find(b.producer_id());
    if (it == aborted.end()) return false;
    const auto& ranges = it->second;
    auto r = std::upper_bound(ranges.begin(), ranges.end(), b.base_offset(),
                              [](int64_t o, const std::pair<int64_t, int64_t>& range) { return o < range.first; });
    return r != ranges.begin() && b.base_offset() <= std::prev(r)->second;
  }
};

// Reads the batches of log whose offsets lie in [from, upper). Nothing
// transactional below from (Log::txn_free_below), so every transaction
// that matters opens in the range.
Result<TxnView> scan_transactions(const Log& log, int64_t from, int64_t upper, size_t chunk, Throttler* throttle,
                                  uint64_t* bytes_read) {
  TxnView view;
  std::unordered_map<int64_t, int64_t> open;  // producer id -> first offset of its open transaction
  auto segs = log.segments();
  const size_t n = segs->size();
  for (size_t i = 0; i < n; ++i) {
    const Segment& seg = *(*segs)[i];
    if (seg.base_offset() >= upper) break;
    if (i + 1 < n && (*segs)[i + 1]->base_offset() <= from) continue;
    CK_RETURN_IF_ERROR(for_each_batch(seg, chunk, throttle, bytes_read, [&](const protocol::RecordBatchView& b) {
      if (b.last_offset() < from || b.base_offset() >= upper) return Status::ok();
      if (b.producer_id() < 0 || !(b.is_transactional() || b.is_control())) return Status::ok();
      view.first_txn_offset = std::min(view.first_txn_offset, b.base_offset());
      if (b.last_offset() >= upper) return Status::ok();  // reaches past the bound
      if (!b.is_control()) {
        open.try_emplace(b.producer_id(), b.base_offset());
        return Status::ok();
      }
      auto it = open.find(b.producer_id());
      if (it == open.end()) return Status::ok();  // a marker with no data here
      auto marker = protocol::read_txn_marker(b);
      // A marker we cannot read leaves its transaction undecided: the bound
      // stays below it.
      if (!marker) return Status::ok();
      if (!marker->commit) view.aborted[b.producer_id()].emplace_back(it->second, b.base_offset());
      open.erase(it);
      return Status::ok();
    }));
  }
  for (const auto& [pid, first] : open) view.first_unstable = std::min(view.first_unstable, first);
  return view;
}

struct RewriteContext {
  const OffsetMap& map;
  const TxnView& txns;
  int64_t now_ms;
  int64_t delete_retention_ms;
  size_t max_decompressed;
  CleanStats& stats;
  int64_t earliest_horizon = kNever;
  bool changed = false;
};

// Decides one batch's fate and writes what survives to out.
Status rewrite_batch(const protocol::RecordBatchView& batch, RewriteContext& cx, CleanedSegmentWriter& out) {
  auto copy = [&] {
    ++cx.stats.batches_copied;
    return out.append(batch.bytes(), batch.last_offset(), batch.max_timestamp());
  };
  if (batch.is_control() || batch.record_count() == 0) return copy();
  if (batch.validate_crc() != protocol::RecordError::kNone) {
    ++cx.stats.batches_undecodable;
    return copy();
  }
  if (cx.txns.is_aborted(batch)) {  // an aborted transaction's data goes whole
    ++cx.stats.aborted_batches_removed;
    cx.stats.records_read += static_cast<uint64_t>(batch.record_count());
    cx.stats.records_removed += static_cast<uint64_t>(batch.record_count());
    cx.changed = true;
    return Status::ok();
  }
  auto records = protocol::decode_records(batch, cx.max_decompressed);
  if (!records) {
    ++cx.stats.batches_undecodable;
    return copy();
  }
  const std::optional<int64_t> horizon = batch.delete_horizon_ms();
  std::vector<protocol::RecordView> kept;
  bool tombstone_kept = false;
  int32_t seen = 0;
  uint64_t tombstones_dropped = 0;
  auto reader = records->reader();
  protocol::RecordView r;
  while (reader.next(&r)) {
    ++seen;
    bool keep = false;
    if (r.key) {
      auto latest = cx.map.get(*r.key);
      keep = !latest || r.offset >= *latest;
    }
    if (keep && !r.value) {  // a tombstone that is still the key's latest record
      if (horizon && cx.now_ms >= *horizon) {
        keep = false;
        ++tombstones_dropped;
      } else {
        tombstone_kept = true;
      }
    }
    if (keep) kept.push_back(r);
  }
  if (reader.error() != protocol::RecordError::kNone || seen != batch.record_count()) {
    // Malformed records: keep the batch as it was (never lose data we cannot read).
    ++cx.stats.batches_undecodable;
    return copy();
  }
  cx.stats.records_read += static_cast<uint64_t>(seen);
  cx.stats.records_removed += static_cast<uint64_t>(seen) - kept.size();
  cx.stats.tombstones_removed += tombstones_dropped;
  const bool needs_horizon = tombstone_kept && !horizon;
  if (tombstone_kept) {
    const int64_t h = horizon ? *horizon : cx.now_ms + cx.delete_retention_ms;
    cx.earliest_horizon = std::min(cx.earliest_horizon, h);
  }
  if (kept.size() == static_cast<size_t>(seen) && !needs_horizon) return copy();
  cx.changed = true;
  if (kept.empty()) return Status::ok();  // the whole batch goes
  protocol::BatchOptions o;
  o.base_offset = batch.base_offset();
  o.partition_leader_epoch = batch.partition_leader_epoch();
  o.codec = batch.codec().value_or(protocol::Codec::kNone);
  o.timestamp_type = batch.timestamp_type();
  if (o.timestamp_type == protocol::TimestampType::kLogAppendTime) o.log_append_time = batch.max_timestamp();
  o.transactional = batch.is_transactional();
  o.producer_id = batch.producer_id();
  o.producer_epoch = batch.producer_epoch();
  o.base_sequence = batch.base_sequence();
  if (tombstone_kept) o.delete_horizon_ms = horizon ? *horizon : cx.now_ms + cx.delete_retention_ms;
  protocol::BatchBuilder b(o);
  for (const auto& k : kept)
    if (!b.add(k)) return Status::corruption("cleaner: record offsets do not increase");
  auto built = b.build();
  if (!built) return Status::corrupt_records("cleaner: rebuilding the batch at " + std::to_string(batch.base_offset()) +
                                             " failed: " + std::string(protocol::to_string(built.error())));
  auto view = protocol::RecordBatchView::parse(*built);
  if (!view) return Status::corrupt_records("cleaner: rebuilt batch does not parse");
  ++cx.stats.batches_rebuilt;
  return out.append(*built, view->last_offset(), view->max_timestamp());
}

}  // namespace

namespace {

// Cleaner::plan on one snapshot of the segment list (clean() keeps using
// the same snapshot: indexes into a later one could be shifted by retention).
std::optional<CleanPlan> plan_on(const Log& log, const Log::SegmentList* segs, int64_t now_ms, int64_t stable_bound) {
  const LogConfig cfg = log.config();
  if (!cfg.cleanup_compact) return std::nullopt;
  const size_t n = segs->size();
  if (n < 2) return std::nullopt;
  const int64_t first_dirty = log.first_dirty_offset();
  const auto next_base = [&](size_t i) { return i + 1 < n ? (*segs)[i + 1]->base_offset() : kMaxOffset; };
  CleanPlan p;
  p.end_segment = n - 1;  // never the active segment
  // Nor a rolled segment whose deferred roll is not finished (its
  // `.unfinished` marker still on disk), nor anything after it.
  const int64_t unfinished = log.first_unfinished_base();
  while (p.end_segment > 0 && (*segs)[p.end_segment - 1]->base_offset() >= unfinished) --p.end_segment;
  // Nor a segment reaching the stable bound (the HW, or an undecided
  // transaction's first offset).
  p.stable_bound = stable_bound;
  while (p.end_segment > 0 && next_base(p.end_segment - 1) > stable_bound) --p.end_segment;
  if (cfg.min_compaction_lag_ms > 0) {
    for (size_t i = 0; i + 1 < n; ++i) {
      if (next_base(i) <= first_dirty) continue;  // clean already
      const int64_t ts = (*segs)[i]->max_timestamp_so_far().timestamp;
      if (ts != kNoTimestamp && ts > now_ms - cfg.min_compaction_lag_ms) {
        p.end_segment = i;
        break;
      }
    }
  }
  p.first_dirty_segment = p.end_segment;
  for (size_t i = 0; i < p.end_segment; ++i) {
    if (next_base(i) > first_dirty) {
      p.first_dirty_segment = i;
      break;
    }
  }
  for (size_t i = 0; i < p.end_segment; ++i)
    (i < p.first_dirty_segment ? p.clean_bytes : p.dirty_bytes) += (*segs)[i]->published_size();
  const uint64_t total = p.clean_bytes + p.dirty_bytes;
  p.dirty_ratio = total == 0 ? 0.0 : static_cast<double>(p.dirty_bytes) / static_cast<double>(total);
  if (p.end_segment == 0) return std::nullopt;
  if (p.first_dirty_segment < p.end_segment && cfg.max_compaction_lag_ms != kNever) {
    const int64_t ts = first_batch_timestamp(*(*segs)[p.first_dirty_segment]);
    if (ts != kNoTimestamp && now_ms - ts > cfg.max_compaction_lag_ms) p.forced = true;
  }
  if (now_ms >= log.earliest_delete_horizon()) p.forced = true;
  if (p.first_dirty_segment == p.end_segment && !p.forced) return std::nullopt;
  if (!p.forced && (p.dirty_bytes == 0 || p.dirty_ratio < cfg.min_cleanable_dirty_ratio)) return std::nullopt;
  return p;
}

}  // namespace

std::optional<CleanPlan> Cleaner::plan(const Log& log, int64_t now_ms, int64_t stable_bound) const {
  auto segs = log.segments();
  return plan_on(log, segs.get(), now_ms, stable_bound);
}

Result<CleanStats> Cleaner::clean(Log& log, int64_t now_ms, const SwapHook& hook, int64_t stable_bound) const {
  CleanStats stats;
  auto segs = log.segments();
  auto p = plan_on(log, segs.get(), now_ms, stable_bound);
  if (!p) return stats;
  const LogConfig cfg = log.config();

  // 1b. Transactions: the aborted ranges, and the bound an undecided one sets.
  const Log::TxnFreeHint hint = log.txn_free_hint();
  const int64_t scan_to = std::min(stable_bound, log.log_end_offset());
  auto txns = scan_transactions(log, hint.below, scan_to, config_.read_chunk_bytes, throttler_,
                                &stats.txn_bytes_scanned);
  if (!txns) return txns.status();
  log.raise_txn_free_below(hint, std::min(scan_to, txns->first_txn_offset));
  stats.stable_bound = std::min(stable_bound, txns->first_unstable);
  if (stats.stable_bound < stable_bound) {
    p = plan_on(log, segs.get(), now_ms, stats.stable_bound);
    if (!p) return stats;
  }

  // 2. Map the dirty segments (whole segments only).
  OffsetMap map(config_.dedupe_buffer_bytes, config_.dedupe_load_factor);
  size_t map_end = p->first_dirty_segment;
  for (size_t i = p->first_dirty_segment; i < p->end_segment; ++i) {
    CK_RETURN_IF_ERROR(for_each_batch(*(*segs)[i], config_.read_chunk_bytes, throttler_, &stats.bytes_read,
                                      [&](const protocol::RecordBatchView& b) -> Status {
                                        if (b.is_control() || b.record_count() == 0) return Status::ok();
                                        if (txns->is_aborted(b)) return Status::ok();  // shadows nothing
                                        auto records = protocol::decode_records(b, config_.max_decompressed_batch_bytes);
                                        if (!records) return Status::ok();  // kept whole by the rewrite
                                        auto reader = records->reader();
                                        protocol::RecordView r;
                                        while (reader.next(&r))
                                          if (r.key) map.put(*r.key, r.offset);
                                        return Status::ok();
                                      }));
    map_end = i + 1;
    if (map.full()) break;
  }
  stats.map_entries = map.size();
  const int64_t cleaned_up_to = (*segs)[map_end]->base_offset();

  // 3 and 4. Rewrite and swap each segment below the mapped end.
  RewriteContext cx{map, *txns, now_ms, cfg.delete_retention_ms, config_.max_decompressed_batch_bytes, stats};
  const std::string& dir = log.dir();
  for (size_t i = 0; i < map_end; ++i) {
    const auto& seg = (*segs)[i];
    if ((*segs)[i + 1]->base_offset() <= log.log_start_offset()) continue;  // retention's to delete
    const int64_t base = seg->base_offset();
    auto writer = CleanedSegmentWriter::create(log.file_system(), dir, base, cfg.segment);
    if (!writer) return writer.status();
    cx.changed = false;
    Status s = for_each_batch(*seg, config_.read_chunk_bytes, throttler_, nullptr,
                              [&](const protocol::RecordBatchView& b) {
                                const uint64_t before = (*writer)->size();
                                Status w = rewrite_batch(b, cx, **writer);
                                if (throttler_) throttler_->acquire((*writer)->size() - before);
                                return w;
                              });
    if (s.is_ok()) s = (*writer)->finish();
    if (!s.is_ok() || !cx.changed) {
      // An error, or nothing to change: the old segment stays as it is.
      writer->reset();
      remove_cleaner_files(log.file_system(), dir, base);
      if (!s.is_ok()) return s;
      continue;
    }
    stats.bytes_written += (*writer)->size();
    writer->reset();
    if (hook && !hook(SwapStep::kCleanedWritten, base)) return stopped_by_hook(SwapStep::kCleanedWritten);
    s = promote_to_swap(log.file_system(), dir, base);
    if (!s.is_ok()) {
      remove_cleaner_files(log.file_system(), dir, base);
      return s;
    }
    if (hook && !hook(SwapStep::kSwapRenamed, base)) return stopped_by_hook(SwapStep::kSwapRenamed);
    s = log.replace_segment(seg, hook);
    if (s.code() == StatusCode::kNotFound) {  // retention or DeleteRecords took it meanwhile
      remove_cleaner_files(log.file_system(), dir, base);
      return stats;
    }
    CK_RETURN_IF_ERROR(s);
    ++stats.segments_rewritten;
  }
  stats.cleaned = true;
  stats.cleaned_up_to = std::max(log.first_dirty_offset(), cleaned_up_to);
  // Never backwards: a pass bounded by min.compaction.lag.ms may end below
  // an earlier pass's end.
  log.set_first_dirty_offset(std::max(log.first_dirty_offset(), cleaned_up_to));
  log.set_earliest_delete_horizon(cx.earliest_horizon);
  return stats;
}

}  // namespace ciuickafka::storage
