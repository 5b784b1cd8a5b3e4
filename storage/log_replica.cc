// storage/log_replica.cc: what replication needs from a log: the leader
// epoch cache's loading and rebuilding, the follower append, truncation
// (truncate_to, truncate_fully_and_start_at). The rules are in storage/log.h.
#include <algorithm>

#include "protocol/records/record_batch.h"
#include "storage/file_names.h"
#include "storage/log.h"

namespace ciuickafka::storage {

namespace v2 = protocol::batch_v2;

Status Log::load_leader_epochs(const SegmentList& list, bool new_log) {
  const std::string path = dir_ + "/" + std::string(kLeaderEpochCheckpointFile);
  auto read = read_leader_epoch_checkpoint(fs_, path);
  const StatusCode code = read.status().code();
  if (read) {
    epochs_ = std::make_unique<LeaderEpochCache>(fs_, path, std::move(read).value());
  } else if (code != StatusCode::kNotFound && code != StatusCode::kCorruption) {
    return read.status();
  } else {
    // Missing or corrupt: the batches say which epoch wrote them. A log
    // created just now has none (and no file until its first epoch).
    epochs_ = std::make_unique<LeaderEpochCache>(fs_, path);
    if (!new_log) {
      auto scanned = scan_leader_epochs(list);
      if (!scanned) return scanned.status();
      CK_RETURN_IF_ERROR(epochs_->assign(*scanned));
      CK_RETURN_IF_ERROR(epochs_->flush());
      epochs_rebuilt_ = true;
    }
  }
  // Kafka's load: nothing at or past the LEO, the first entry at the log start.
  CK_RETURN_IF_ERROR(epochs_->truncate_from_end(next_offset_));
  return epochs_->truncate_from_start(log_start_offset());
}

Result<std::vector<EpochEntry>> Log::scan_leader_epochs(const SegmentList& list) const {
  std::vector<EpochEntry> out;
  uint8_t h[v2::kLastOffsetDeltaOffset + 4];
  for (const auto& seg : list) {
    auto file = seg->log_file();
    if (!file) return file.status();
    const uint64_t end = seg->published_size();
    for (uint64_t pos = 0; pos + sizeof h <= end;) {
      auto n = (*file)->read_at(pos, h);
      if (!n) return n.status();
      if (*n != sizeof h) return Status::corruption(seg->path() + ": short read of a batch header");
      const auto length = static_cast<int32_t>(load_be32(h + v2::kBatchLengthOffset));
      if (length < v2::kMinBatchLength)
        return Status::corruption(seg->path() + ": bad batch length at position " + std::to_string(pos));
      const auto epoch = static_cast<int32_t>(load_be32(h + v2::kPartitionLeaderEpochOffset));
      const auto base = static_cast<int64_t>(load_be64(h + v2::kBaseOffsetOffset));
      if (epoch >= 0 && (out.empty() || out.back().epoch != epoch)) out.push_back({epoch, base});
      pos += v2::kLogOverhead + static_cast<uint64_t>(length);
    }
  }
  return out;
}

Result<AppendResult> Log::append_as_follower(std::span<uint8_t> records, int64_t now_ms, bool validated) {
  return append_blocking(records, AppendMode{true, -1}, now_ms, validated);
}

Result<AppendResult> Log::append_as_follower_async(std::span<uint8_t> records, int64_t now_ms, io::Ring* ring,
                                                   AppendCallback done, bool validated) {
  return append_queued(records, AppendMode{true, -1}, now_ms, ring, std::move(done), validated);
}

Status Log::assign_epoch_start_offset(int32_t epoch, int64_t start_offset) {
  std::lock_guard lock(append_mu_);
  if (closed_) return Status::invalid_argument(dir_ + ": epoch assignment on a closed log");
  return epochs_->assign(epoch, start_offset);
}

Result<int64_t> Log::assign_epoch_start_at_end(int32_t epoch) {
  std::lock_guard lock(append_mu_);
  if (closed_) return Status::invalid_argument(dir_ + ": epoch assignment on a closed log");
  const auto latest = epochs_->latest_epoch();
  if (!latest || *latest < epoch) CK_RETURN_IF_ERROR(epochs_->assign(epoch, next_offset_));
  return next_offset_;
}

Status Log::check_truncatable_locked(int64_t offset) const {
  if (closed_) return Status::invalid_argument(dir_ + ": truncation of a closed log");
  if (!broken_.is_ok()) return broken_;
  if (!pending_.empty())
    return Status::invalid_argument(dir_ + ": truncation while " + std::to_string(pending_.size()) +
                                    " appends are in flight");
  if (offset < 0) return Status::invalid_argument(dir_ + ": truncation to a negative offset");
  return Status::ok();
}

Result<int64_t> Log::truncate_to(int64_t offset, int64_t now_ms) {
  std::lock_guard lock(append_mu_);
  CK_RETURN_IF_ERROR(check_truncatable_locked(offset));
  auto r = truncate_locked(offset, now_ms);
  // A truncation that failed part-way left files and memory apart: the log
  // is unusable until it is reopened (recovery finds a prefix of the old log).
  if (!r) broken_ = r.status().with_prefix(dir_ + ": truncation failed; reopen the log: ");
  return r;
}

Result<int64_t> Log::truncate_locked(int64_t offset, int64_t now_ms) {
  if (offset >= next_offset_) {
    // No data goes, but an entry the leader assigned past its last append
    // (becoming leader, then losing it) does (Kafka does the same).
    CK_RETURN_IF_ERROR(epochs_->truncate_from_end(next_offset_));
    return next_offset_;
  }
  auto current = segments();
  if (current->front()->base_offset() > offset) {
    CK_RETURN_IF_ERROR(truncate_fully_locked(offset, now_ms));
    return offset;
  }
  std::lock_guard finish(finish_mu_);  // no deferred roll finishes under the cut
  ++truncations_;
  // The segment holding offset: the last whose base is <= it.
  const auto by_base = [](int64_t o, const std::shared_ptr<Segment>& s) { return o < s->base_offset(); };
  auto it = std::upper_bound(current->begin(), current->end(), offset, by_base);
  const size_t keep = static_cast<size_t>(it - current->begin());  // segments [0, keep) stay
  // Readers stop at offset first; then the list shrinks and the bytes go.
  log_end_offset_.store(std::min(log_end_offset(), offset), std::memory_order_release);
  auto rest = std::make_shared<SegmentList>(current->begin(), it);
  publish_segments(rest);
  // Highest first: a crash leaves a prefix of the log.
  CK_RETURN_IF_ERROR(retire_segments(*current, keep, current->size(), /*highest_first=*/true));
  CK_RETURN_IF_ERROR(fs_.sync_dir(dir_));
  Segment& cut_segment = *rest->back();
  auto cut = cut_segment.truncate_to(offset, now_ms);
  if (!cut) return cut.status();
  {
    // Aborted transactions whose marker was cut go with it.
    std::lock_guard txn_lock(txn_index_mu_);
    txn_index_tails_.erase(cut_segment.base_offset());
    bool changed = false;
    CK_RETURN_IF_ERROR(truncate_txn_index(
        fs_, dir_ + "/" + segment_file_name(cut_segment.base_offset(), SegmentFileKind::kTxnIndex), offset, &changed));
  }
  // The cut is durable before the epoch cache forgets the epochs it held.
  CK_RETURN_IF_ERROR(cut_segment.flush());
  // The cut segment goes on as a new Segment object over the same files: a
  // compaction that read the old contents holds the old object, and
  // replace_segment refuses an object no longer in the list (it would swap
  // the truncated batches back in).
  auto fresh = Segment::open(fs_, dir_, cut_segment.base_offset(), config_.segment, false);
  if (!fresh) return fresh.status();
  CK_RETURN_IF_ERROR((*fresh)->load_tail());
  (*fresh)->start_roll_clock(now_ms);
  const Segment& active = **fresh;
  auto next = std::make_shared<SegmentList>(*rest);
  next->back() = std::move(fresh).value();
  forget_unfinished_locked(*next);
  publish_segments(std::move(next));
  const int64_t end = active.next_offset().value_or(active.base_offset());
  next_offset_ = end;
  log_end_offset_.store(end, std::memory_order_release);
  if (recovery_point() > end) recovery_point_.store(end, std::memory_order_release);
  if (log_start_offset() > end) log_start_offset_.store(end, std::memory_order_release);
  if (first_dirty_offset_.load() > end) first_dirty_offset_.store(end);
  lower_txn_free_below(end);
  CK_RETURN_IF_ERROR(remove_producer_snapshots_above(end));
  CK_RETURN_IF_ERROR(epochs_->truncate_from_end(end));
  return end;
}

Status Log::truncate_fully_and_start_at(int64_t offset, int64_t now_ms) {
  std::lock_guard lock(append_mu_);
  CK_RETURN_IF_ERROR(check_truncatable_locked(offset));
  Status s = truncate_fully_locked(offset, now_ms);
  if (!s.is_ok()) broken_ = s.with_prefix(dir_ + ": truncation failed; reopen the log: ");
  return s;
}

Status Log::truncate_fully_locked(int64_t offset, int64_t now_ms) {
  std::lock_guard finish(finish_mu_);
  ++truncations_;
  auto current = segments();
  // Readers see an empty log at offset from here on.
  log_end_offset_.store(offset, std::memory_order_release);
  log_start_offset_.store(offset, std::memory_order_release);
  publish_segments(std::make_shared<SegmentList>());
  CK_RETURN_IF_ERROR(retire_segments(*current, 0, current->size(), /*highest_first=*/true));
  auto seg = Segment::open(fs_, dir_, offset, config_.segment, true);
  if (!seg) return seg.status();
  CK_RETURN_IF_ERROR(fs_.sync_dir(dir_));
  (*seg)->start_roll_clock(now_ms);
  auto list = std::make_shared<SegmentList>();
  list->push_back(std::move(seg).value());
  forget_unfinished_locked(*list);
  publish_segments(std::move(list));
  next_offset_ = offset;
  recovery_point_.store(offset, std::memory_order_release);
  first_dirty_offset_.store(offset);
  lower_txn_free_below(offset);
  CK_RETURN_IF_ERROR(remove_producer_snapshots_above(-1));  // the whole history is gone
  return epochs_->clear();
}

Log::TxnFreeHint Log::txn_free_hint() const {
  std::lock_guard lock(txn_hint_mu_);
  TxnFreeHint h = txn_hint_;
  h.below = std::max(h.below, log_start_offset());
  return h;
}

void Log::raise_txn_free_below(const TxnFreeHint& read, int64_t offset) {
  std::lock_guard lock(txn_hint_mu_);
  if (txn_hint_.generation == read.generation && offset > txn_hint_.below) txn_hint_.below = offset;
}

void Log::lower_txn_free_below(int64_t offset) {
  std::lock_guard lock(txn_hint_mu_);
  txn_hint_.below = std::min(txn_hint_.below, offset);
  ++txn_hint_.generation;
}

}  // namespace ciuickafka::storage
