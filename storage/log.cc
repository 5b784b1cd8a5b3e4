// storage/log.cc: opening, appending to and reading one partition's log.
#include "storage/log.h"

#include <algorithm>
#include <limits>

#include "protocol/records/record_batch.h"
#include "storage/file_names.h"

namespace ciuickafka::storage {

namespace {

// Checks the records of an append (the CRC too unless the caller did);
// fills the batches' spans.
Status validate_records(std::span<uint8_t> records, bool validated, std::vector<std::span<uint8_t>>* batches) {
  if (records.empty()) return Status::corrupt_records("an append holds no record batch");
  protocol::BatchSplitter split(std::span<const uint8_t>(records.data(), records.size()));
  protocol::RecordsEntry e;
  protocol::SplitStatus st;
  while ((st = split.next(&e)) == protocol::SplitStatus::kEntry) {
    if (e.magic != protocol::batch_v2::kMagic)
      return Status::corrupt_records("record batch with magic " + std::to_string(e.magic) +
                                     " (only v2 is stored)");
    auto view = validated ? protocol::RecordBatchView::parse(e.bytes)
                          : protocol::RecordBatchView::parse_and_validate(e.bytes);
    if (!view)
      return Status::corrupt_records(std::string("record batch: ") + std::string(to_string(view.error())));
    if (view->last_offset_delta() < 0)
      return Status::corrupt_records("record batch with a negative lastOffsetDelta");
    const size_t at = static_cast<size_t>(e.bytes.data() - records.data());
    batches->push_back(records.subspan(at, e.bytes.size()));
  }
  if (st != protocol::SplitStatus::kEnd)
    return Status::corrupt_records(st == protocol::SplitStatus::kPartial
                                       ? "the last record batch is truncated"
                                       : "record batch framing is corrupt");
  return Status::ok();
}

}  // namespace

Log::Log(io::FileSystem& fs, std::string dir, LogConfig config)
    : fs_(fs), dir_(std::move(dir)), config_(config), segments_(std::make_shared<const SegmentList>()) {}

Log::~Log() {
  if (!closed_) (void)close();
}

Result<std::unique_ptr<Log>> Log::open(io::FileSystem& fs, const std::string& dir, const LogConfig& config,
                                       int64_t now_ms, const LogOpenOptions& options) {
  CK_RETURN_IF_ERROR(fs.create_dir(dir));
  std::unique_ptr<Log> log(new Log(fs, dir, config));
  Status s = log->load(now_ms, options);
  if (!s.is_ok()) {
    log->closed_ = true;  // nothing to flush: the segments opened so far just close
    return s;
  }
  return log;
}

Status Log::load(int64_t now_ms, const LogOpenOptions& options) {
  // A compaction swap a crash interrupted: finish or discard it first.
  auto swapped = recover_swap_files(fs_, dir_);
  if (!swapped) return swapped.status();
  auto names = fs_.list_dir(dir_);
  if (!names) return names.status();
  std::vector<int64_t> bases;
  std::vector<std::string> markers;  // unfinished-segment markers: read below, removed after
  bool removed = false;
  for (const auto& n : *names) {
    if (n.size() > kUnfinishedSuffix.size() && n.ends_with(kUnfinishedSuffix)) {
      markers.push_back(dir_ + "/" + n);
      continue;
    }
    auto f = parse_segment_file_name(n);
    if (!f) continue;
    if (f->suffix == FileSuffix::kDeleted) {  // a deletion the crash interrupted: finish it
      CK_RETURN_IF_ERROR(fs_.remove_file(dir_ + "/" + n));
      removed = true;
    } else if (f->kind == SegmentFileKind::kLog && f->suffix == FileSuffix::kNone) {
      // .cleaned/.swap files and stray indexes: compaction recovery (later).
      bases.push_back(f->base_offset);
    }
  }
  if (removed) CK_RETURN_IF_ERROR(fs_.sync_dir(dir_));
  std::sort(bases.begin(), bases.end());
  auto list = std::make_shared<SegmentList>();
  if (bases.empty()) {
    auto s = Segment::open(fs_, dir_, 0, config_.segment, true);
    if (!s) return s.status();
    CK_RETURN_IF_ERROR(fs_.sync_dir(dir_));
    list->push_back(std::move(s).value());
  }
  const int64_t recovery_from = options.recovery_point.value_or(0);
  for (size_t i = 0; i < bases.size(); ++i) {
    auto s = Segment::open(fs_, dir_, bases[i], config_.segment, false);
    if (!s) return s.status();
    Segment& seg = **s;
    const bool last = i + 1 == bases.size();
    // The segment may hold offsets at or above the recovery point.
    const bool unflushed = last || bases[i + 1] > recovery_from;
    if (swapped->count(bases[i]) && !last) {
      // Swapped in by compaction recovery: whole and durable, but its
      // indexes may be missing or belong to the old segment. Rebuild them.
      auto cut = seg.recover();
      if (!cut) return cut.status();
      truncated_bytes_ += *cut;
    } else if (options.clean_shutdown) {
      if (last) {
        Status tail = seg.load_tail();
        if (!tail.is_ok()) {
          auto cut = seg.recover();
          if (!cut) return cut.status();
          truncated_bytes_ += *cut;
        }
      } else {
        CK_RETURN_IF_ERROR(seg.check_indexes());
      }
    } else if (unflushed) {
      auto cut = seg.recover();
      if (!cut) return cut.status();
      truncated_bytes_ += *cut;
      // Rolled with writes in flight and never finished: if it ends short
      // of the next segment, its last writes never happened (see roll()).
      bool hole = false;
      if (!last) {
        auto marker = fs_.file_type(unfinished_marker_path(bases[i]));
        if (marker.is_ok() && marker.value() == io::FileType::kFile)
          hole = seg.next_offset().value_or(bases[i]) < bases[i + 1];
      }
      if ((*cut > 0 || hole) && !last) {
        // A torn segment that is not the last: what follows it cannot be
        // trusted to continue its offsets. Drop it all.
        for (size_t j = i + 1; j < bases.size(); ++j) CK_RETURN_IF_ERROR(remove_segment_files(bases[j]));
        CK_RETURN_IF_ERROR(fs_.sync_dir(dir_));
        recovered_segments_ += seg.recover_count();
        list->push_back(std::move(s).value());
        break;
      }
    } else {
      CK_RETURN_IF_ERROR(seg.check_indexes());
    }
    recovered_segments_ += seg.recover_count();
    list->push_back(std::move(s).value());
  }
  // Every segment kept is whole now (or was dropped): the markers go.
  for (const auto& m : markers) CK_RETURN_IF_ERROR(fs_.remove_file(m));
  if (!markers.empty()) CK_RETURN_IF_ERROR(fs_.sync_dir(dir_));
  // Every segment but the last is written no more: its indexes go under the
  // IndexCache's budget (check_indexes released most already). A failed
  // flush of rebuilt indexes leaves them loaded: correct, only unbudgeted.
  for (size_t i = 0; i + 1 < list->size(); ++i) (void)(*list)[i]->release_indexes();
  // A rescan may have created index files that were missing (Segment::open
  // and the flush of rebuilt indexes create them): their names must be
  // durable before a flush moves the recovery point past them, or the next
  // open trusts a missing .timeindex as empty and ListOffsets skips the
  // segment.
  if (recovered_segments_ > 0) CK_RETURN_IF_ERROR(fs_.sync_dir(dir_));
  Segment& active = *list->back();
  next_offset_ = active.next_offset().value_or(active.base_offset());
  active.start_roll_clock(now_ms);
  last_flush_ms_ = now_ms;
  const int64_t start = std::min(std::max(list->front()->base_offset(), options.log_start_offset.value_or(0)),
                                 next_offset_);
  log_start_offset_.store(start, std::memory_order_release);
  first_dirty_offset_.store(std::max(start, options.cleaner_checkpoint.value_or(start)));
  recovery_point_.store(options.clean_shutdown ? next_offset_ : std::min(recovery_from, next_offset_),
                        std::memory_order_release);
  CK_RETURN_IF_ERROR(load_leader_epochs(*list, bases.empty()));
  publish_segments(std::move(list));
  log_end_offset_.store(next_offset_, std::memory_order_release);
  return Status::ok();
}

Status Log::remove_segment_files(int64_t base_offset) {
  {
    std::lock_guard txn_lock(txn_index_mu_);
    txn_index_tails_.erase(base_offset);
  }
  for (auto kind : {SegmentFileKind::kLog, SegmentFileKind::kIndex, SegmentFileKind::kTimeIndex,
                    SegmentFileKind::kTxnIndex}) {
    Status s = fs_.remove_file(dir_ + "/" + segment_file_name(base_offset, kind));
    if (!s.is_ok() && s.code() != StatusCode::kNotFound) return s;
  }
  return Status::ok();
}

void Log::publish_segments(std::shared_ptr<const SegmentList> list) {
  std::lock_guard lock(segments_mu_);
  segments_ = std::move(list);
}

std::shared_ptr<const Log::SegmentList> Log::segments() const {
  std::lock_guard lock(segments_mu_);
  return segments_;
}

std::string Log::unfinished_marker_path(int64_t base_offset) const {
  std::string name = segment_file_name(base_offset, SegmentFileKind::kLog);
  name.resize(name.size() - extension(SegmentFileKind::kLog).size());
  return dir_ + "/" + name + std::string(kUnfinishedSuffix);
}

Status Log::remove_marker_if_present(const std::string& path) {
  auto type = fs_.file_type(path);
  if (!type.is_ok() || type.value() != io::FileType::kFile) return Status::ok();
  return fs_.remove_file(path);
}

Status Log::roll(int64_t new_base_offset) {
  auto current = segments();
  // With writes to the old segment in flight, it is finished when the last
  // of them is published (publish_ready_locked).
  const bool finish_now = !has_pending_locked(current->back().get());
  const bool deferred = static_cast<bool>(roll_sync_);
  if (finish_now && !deferred) {
    CK_RETURN_IF_ERROR(current->back()->on_become_inactive());
  } else {
    // Deferred (set_roll_sync): the final time-index entry now, the fsyncs
    // in the background; the marker below covers the time until then.
    if (finish_now) CK_RETURN_IF_ERROR(current->back()->index_max_timestamp());
    // Writes to the new segment may reach the disk before the old one's
    // (another thread's ring), and a crash then leaves a hole at the old
    // segment's end with records after it that were never published. The
    // marker, durable before the new segment exists, lets recovery tell
    // that hole from a gap a compacted leader's log legitimately has.
    CK_RETURN_IF_ERROR(io::write_file_atomically(fs_, unfinished_marker_path(current->back()->base_offset()), {}));
  }
  auto s = Segment::open(fs_, dir_, new_base_offset, config_.segment, true);
  if (!s) return s.status();
  CK_RETURN_IF_ERROR(fs_.sync_dir(dir_));
  // Everything below the new base is now durable (on_become_inactive flushed it).
  if (finish_now && !deferred && recovery_point() < new_base_offset)
    recovery_point_.store(new_base_offset, std::memory_order_release);
  auto next = std::make_shared<SegmentList>(*current);
  next->push_back(std::move(s).value());
  publish_segments(std::move(next));
  if (deferred) {
    unfinished_.push_back(current->back());
    if (auto self = weak_from_this().lock(); self && finish_now) roll_sync_(std::move(self), new_base_offset);
  }
  if (on_roll_) on_roll_(new_base_offset);
  return Status::ok();
}

void Log::set_on_roll(Rolled fn) {
  std::lock_guard lock(append_mu_);
  on_roll_ = std::move(fn);
}

void Log::set_roll_sync(RollSync fn) {
  std::lock_guard lock(append_mu_);
  roll_sync_ = std::move(fn);
}

int64_t Log::first_unfinished_base() const {
  std::lock_guard lock(append_mu_);
  return unfinished_.empty() ? std::numeric_limits<int64_t>::max() : unfinished_.front()->base_offset();
}

void Log::forget_unfinished_locked(const SegmentList& now) {
  const auto in_list = [&now](const std::shared_ptr<Segment>& seg) {
    return std::find(now.begin(), now.end(), seg) != now.end();
  };
  std::vector<int64_t> gone;
  for (auto it = unfinished_.begin(); it != unfinished_.end();) {
    if (in_list(*it)) {
      ++it;
      continue;
    }
    gone.push_back((*it)->base_offset());
    it = unfinished_.erase(it);
  }
  for (int64_t base : gone) {
    const bool still = std::any_of(unfinished_.begin(), unfinished_.end(),
                                   [base](const auto& seg) { return seg->base_offset() == base; });
    // Best effort: a marker left behind only makes the next open check that
    // segment for a lost tail (it is removed there).
    if (!still) (void)remove_marker_if_present(unfinished_marker_path(base));
  }
}

Status Log::finish_all_unfinished_locked() {
  if (unfinished_.empty()) return Status::ok();
  for (const auto& seg : unfinished_) {
    CK_RETURN_IF_ERROR(seg->release_indexes());
    CK_RETURN_IF_ERROR(remove_marker_if_present(unfinished_marker_path(seg->base_offset())));
  }
  unfinished_.clear();
  return fs_.sync_dir(dir_);
}

bool Log::has_pending_locked(const Segment* s) const {
  return std::any_of(pending_.begin(), pending_.end(), [s](const auto& w) { return w->segment.get() == s; });
}

Status Log::assign_offsets(std::span<const std::span<uint8_t>> batches, std::span<uint8_t> records,
                           AppendMode mode, PendingWrite* w, AppendResult* r, std::vector<EpochEntry>* epochs) {
  w->batches.reserve(batches.size());
  int64_t next = next_offset_;
  for (size_t i = 0; i < batches.size(); ++i) {
    std::span<uint8_t> b = batches[i];
    auto view = protocol::RecordBatchView::parse(b);
    const int32_t delta = view->last_offset_delta();
    if (mode.follower) {
      // The leader's offsets, kept: never below what this log holds (or has
      // in flight), never overlapping the previous batch; gaps are allowed.
      const int64_t base = view->base_offset();
      if (base < next)
        return Status::offset_out_of_range(
            dir_ + ": follower batch at offset " + std::to_string(base) +
            (i == 0 ? " is below the next offset " : " overlaps the previous batch, next offset ") +
            std::to_string(next));
      next = base;
      const int32_t epoch = view->partition_leader_epoch();
      if (epoch >= 0 && (epochs->empty() || epochs->back().epoch != epoch)) epochs->push_back({epoch, base});
    }
    if (next > std::numeric_limits<int64_t>::max() - delta - 1)
      return Status::invalid_argument(dir_ + ": offsets would overflow");
    if (!mode.follower) {
      protocol::set_base_offset(b, next);
      protocol::set_partition_leader_epoch(b, mode.leader_epoch);
    }
    if (i == 0) r->base_offset = next;
    if (view->max_timestamp() > r->max_timestamp) {
      r->max_timestamp = view->max_timestamp();
      r->offset_of_max_timestamp = next + delta;
    }
    // Positions are relative to the append until the segment is known.
    w->batches.push_back(BatchMeta{static_cast<uint64_t>(b.data() - records.data()), b.size(),
                                   next + delta, view->max_timestamp()});
    next += int64_t{delta} + 1;
  }
  if (!mode.follower && mode.leader_epoch >= 0) epochs->push_back({mode.leader_epoch, r->base_offset});
  r->last_offset = next - 1;
  if (r->max_timestamp == kNoTimestamp) r->offset_of_max_timestamp = r->base_offset;
  w->base_offset = r->base_offset;
  w->end_offset = next;
  return Status::ok();
}

Result<std::shared_ptr<Log::PendingWrite>> Log::reserve(std::span<uint8_t> records, AppendMode mode,
                                                        int64_t now_ms, bool validated, AppendResult* r) {
  std::vector<std::span<uint8_t>> batches;
  CK_RETURN_IF_ERROR(validate_records(records, validated, &batches));

  std::lock_guard lock(append_mu_);
  if (closed_) return Status::invalid_argument(dir_ + ": append to a closed log");
  if (!broken_.is_ok()) return broken_;
  auto w = std::make_shared<PendingWrite>();
  std::vector<EpochEntry> epochs;
  CK_RETURN_IF_ERROR(assign_offsets(batches, records, mode, w.get(), r, &epochs));
  // The epoch cache before the data: a crash leaves an entry at or past the
  // LEO at worst (dropped on open), never data whose epoch is unrecorded.
  bool assign = false;
  for (const auto& e : epochs) assign = assign || epochs_->needs_update(e.epoch, e.start_offset);
  if (assign) CK_RETURN_IF_ERROR(epochs_->assign(epochs));

  auto list = segments();
  if (list->back()->should_roll(records.size(), r->last_offset, now_ms)) {
    CK_RETURN_IF_ERROR(roll(r->base_offset));
    list = segments();
  }
  const std::shared_ptr<Segment>& active = list->back();
  if (active->should_roll(records.size(), r->last_offset, now_ms))  // still: offsets span more than 2^31
    return Status::invalid_argument(dir_ + ": one append spans more offsets than a segment can index");
  w->segment = active;
  w->position = active->reserve(records.size(), now_ms);
  w->preallocate = active->preallocation_due();
  w->length = records.size();
  for (auto& b : w->batches) b.position += w->position;
  r->segment_base_offset = active->base_offset();
  r->position = w->position;
  w->reserved_from = next_offset_;
  next_offset_ = w->end_offset;
  pending_.push_back(w);
  return w;
}

Result<AppendResult> Log::append(std::span<uint8_t> records, int32_t leader_epoch, int64_t now_ms,
                                 bool validated) {
  return append_blocking(records, AppendMode{false, leader_epoch}, now_ms, validated);
}

Result<AppendResult> Log::append_async(std::span<uint8_t> records, int32_t leader_epoch, int64_t now_ms,
                                       io::Ring* ring, AppendCallback done, bool validated) {
  return append_queued(records, AppendMode{false, leader_epoch}, now_ms, ring, std::move(done), validated);
}

Result<AppendResult> Log::append_blocking(std::span<uint8_t> records, AppendMode mode, int64_t now_ms,
                                          bool validated) {
  AppendResult r;
  auto w = reserve(records, mode, now_ms, validated, &r);
  if (!w) return w.status();
  auto file = (*w)->segment->log_file();
  // A failed preallocation only loses the saving; the write reports real trouble.
  if (file && (*w)->preallocate) (void)(*file)->preallocate((*w)->preallocate->offset, (*w)->preallocate->len);
  Status written = file ? (*file)->write_at((*w)->position, records) : file.status();
  complete(*w, written);
  if (!written.is_ok()) return written;
  std::unique_lock lock(append_mu_);
  finished_cv_.wait(lock, [&] { return (*w)->finished; });
  if (!(*w)->outcome.is_ok()) return (*w)->outcome;
  return r;
}

Result<AppendResult> Log::append_queued(std::span<uint8_t> records, AppendMode mode, int64_t now_ms,
                                        io::Ring* ring, AppendCallback done, bool validated) {
  AppendResult r;
  auto reserved = reserve(records, mode, now_ms, validated, &r);
  if (!reserved) return reserved.status();
  std::shared_ptr<PendingWrite> w = std::move(reserved).value();
  w->done = std::move(done);
  auto file = w->segment->log_file();
  if (!file) {
    complete(w, file.status());
    return r;
  }
  std::shared_ptr<io::File> f = std::move(file).value();
  if (ring == nullptr || f->fd() < 0) {
    if (w->preallocate) (void)f->preallocate(w->preallocate->offset, w->preallocate->len);  // as in append_blocking
    complete(w, f->write_at(w->position, records));
    return r;
  }
  const int fd = f->fd();
  if (w->preallocate) {
    // Unordered with the write: it covers the writes after this one (the
    // range starts at or past this write's end). A failure only loses the
    // saving. The callback holds the file, as the write's does.
    (void)ring->submit_preallocate(fd, w->preallocate->offset, w->preallocate->len, [f](Status) {});
  }
  // The callback holds the log, the pending write and the file (an FdCache
  // eviction cannot close the descriptor under the write).
  Status queued = ring->submit_write(fd, w->position, records,
                                     [self = shared_from_this(), w, f = std::move(f)](Status s) {
                                       self->complete(w, std::move(s));
                                     });
  if (!queued.is_ok()) complete(w, queued);
  return r;
}

void Log::complete(const std::shared_ptr<PendingWrite>& w, Status s) {
  Ready ready;
  {
    std::lock_guard lock(append_mu_);
    w->written = true;
    w->status = s;
    if (!s.is_ok() && broken_.is_ok()) {
      if (!pending_.empty() && pending_.back() == w) {
        // Nothing reserved after it: undo the reservation.
        w->segment->unreserve(w->position);
        next_offset_ = w->reserved_from;
        pending_.pop_back();
        w->finished = true;
        w->outcome = s;
        ready.emplace_back(std::move(w->done), s);
      } else {
        broken_ = s.with_prefix(dir_ + ": a write failed with later writes in flight; the log is unusable "
                                       "until it is reopened: ");
        broken_from_ = w->base_offset;
      }
    }
    publish_ready_locked(&ready);
  }
  if (!ready.empty()) finished_cv_.notify_all();
  for (auto& [cb, st] : ready)
    if (cb) cb(std::move(st));
}

void Log::publish_ready_locked(Ready* ready) {
  bool published = false;
  PendingWrite* last = nullptr;  // the last one published here, and its place in ready
  size_t last_index = 0;
  // The list cannot change while the append lock is held: one snapshot.
  std::shared_ptr<const SegmentList> list;
  while (!pending_.empty() && pending_.front()->written) {
    std::shared_ptr<PendingWrite> f = std::move(pending_.front());
    pending_.pop_front();
    if (!broken_.is_ok() && f->base_offset >= broken_from_) {
      f->finished = true;
      f->outcome = f->status.is_ok() ? broken_ : f->status;
      ready->emplace_back(std::move(f->done), f->outcome);
      continue;
    }
    f->segment->publish(f->batches, f->position + f->length);
    log_end_offset_.store(f->end_offset, std::memory_order_release);  // readers may now see the batches
    published = true;
    Status outcome;
    // A rolled segment whose last write this was: finish it now (roll()
    // could not while the write was in flight).
    if (!list) list = segments();
    if (f->segment != list->back() && (pending_.empty() || pending_.front()->segment != f->segment)) {
      if (roll_sync_) {
        // Deferred: the fsyncs, the marker's removal and the recovery point
        // follow in the background (finish_sync).
        outcome = f->segment->index_max_timestamp();
        if (auto self = weak_from_this().lock(); self && outcome.is_ok()) roll_sync_(std::move(self), f->end_offset);
      } else {
        outcome = f->segment->on_become_inactive();
        if (outcome.is_ok()) outcome = remove_marker_if_present(unfinished_marker_path(f->segment->base_offset()));
        if (outcome.is_ok() && recovery_point() < f->end_offset)
          recovery_point_.store(f->end_offset, std::memory_order_release);
      }
      if (!outcome.is_ok() && broken_.is_ok()) {
        broken_ = outcome;
        broken_from_ = f->end_offset;
      }
    }
    f->finished = true;
    f->outcome = outcome;
    ready->emplace_back(std::move(f->done), std::move(outcome));
    last = f.get();
    last_index = ready->size() - 1;
  }
  if (published && config_.flush_messages != kNever &&
      log_end_offset() - recovery_point() >= config_.flush_messages) {
    Status s = flush_locked();
    if (!s.is_ok() && last != nullptr) {
      last->outcome = s;
      (*ready)[last_index].second = s;
    }
  }
}

Result<ReadResult> Log::read(int64_t offset, uint64_t max_bytes, int64_t upper_bound_offset) const {
  const int64_t end = log_end_offset();
  const int64_t start = log_start_offset();
  if (offset < start || offset > end)
    return Status::offset_out_of_range(dir_ + ": offset " + std::to_string(offset) + " is outside [" +
                                       std::to_string(start) + ", " + std::to_string(end) + "]");
  const int64_t upper = std::min(upper_bound_offset, end);
  ReadResult out;
  if (offset >= upper) return out;
  auto list = segments();
  // The segment holding offset: the last one whose base is <= it.
  auto it =
      std::upper_bound(list->begin(), list->end(), offset,
                       [](int64_t o, const std::shared_ptr<Segment>& s) { return o < s->base_offset(); });
  if (it != list->begin()) --it;
  for (; it != list->end(); ++it) {
    const Segment& seg = **it;
    const int64_t from = std::max(offset, seg.base_offset());
    if (from >= upper) break;
    const uint64_t size = seg.published_size();
    auto slice = seg.read(from, max_bytes - out.bytes, size, upper, out.slices.empty());
    if (!slice) return slice.status();
    if (!*slice) {
      if (!out.slices.empty()) break;  // the budget is spent
      continue;                        // an empty segment: try the next one
    }
    out.bytes += (*slice)->length;
    const bool reached_end = (*slice)->position + (*slice)->length == size;
    out.slices.push_back(LogSlice{*it, **slice});
    if (!reached_end || out.bytes >= max_bytes) break;
  }
  return out;
}

bool Log::read_may_block(int64_t offset, uint64_t max_bytes, int64_t upper_bound_offset) const {
  const int64_t upper = std::min(upper_bound_offset, log_end_offset());
  if (offset < log_start_offset() || offset >= upper) return false;
  auto list = segments();
  auto it =
      std::upper_bound(list->begin(), list->end(), offset,
                       [](int64_t o, const std::shared_ptr<Segment>& s) { return o < s->base_offset(); });
  if (it != list->begin()) --it;
  if (it == list->end()) return false;
  return (*it)->read_may_block(std::max(offset, (*it)->base_offset()), max_bytes);
}

Status Log::flush() {
  std::lock_guard lock(append_mu_);
  if (closed_) return Status::invalid_argument(dir_ + ": flush of a closed log");
  return flush_locked();
}

Status Log::flush_locked() {
  std::lock_guard finish(finish_mu_);
  // Every segment that may hold records at or above the recovery point (the
  // active one, one that rolled with writes in flight, and those whose
  // deferred roll is not finished yet).
  const int64_t end = log_end_offset();
  const int64_t rp = recovery_point();
  auto list = segments();
  for (size_t i = 0; i < list->size(); ++i)
    if (i + 1 == list->size() || (*list)[i + 1]->base_offset() > rp) CK_RETURN_IF_ERROR((*list)[i]->flush());
  // Rolled segments still written to are finished when their last write
  // publishes; the others are durable now: their markers go.
  std::vector<std::shared_ptr<Segment>> waiting;
  for (const auto& seg : unfinished_)
    if (has_pending_locked(seg.get())) waiting.push_back(seg);
  if (waiting.empty()) {
    CK_RETURN_IF_ERROR(finish_all_unfinished_locked());
    if (recovery_point() < end) recovery_point_.store(end, std::memory_order_release);
  } else if (recovery_point() < waiting.front()->base_offset()) {
    recovery_point_.store(std::min(end, waiting.front()->base_offset()), std::memory_order_release);
  }
  return Status::ok();
}

Status Log::maybe_flush(int64_t now_ms) {
  std::lock_guard lock(append_mu_);
  if (closed_ || config_.flush_ms == kNever || now_ms - last_flush_ms_ < config_.flush_ms) return Status::ok();
  last_flush_ms_ = now_ms;
  if (recovery_point() >= log_end_offset()) return Status::ok();
  return flush_locked();
}

Result<std::optional<Log::SyncPlan>> Log::prepare_sync() {
  {
    std::lock_guard sync_lock(sync_mu_);
    if (!sync_error_.is_ok()) return sync_error_;
  }
  SyncPlan plan;
  std::shared_ptr<const SegmentList> list;
  {
    std::lock_guard lock(append_mu_);
    if (closed_) return Status::invalid_argument(dir_ + ": sync of a closed log");
    plan.target = log_end_offset();  // what is written; writes in flight are not covered
    list = segments();
    plan.truncations = truncations_;
    // Deferred rolls whose segment is whole below target: finished by this sync.
    for (const auto& seg : unfinished_) {
      if (has_pending_locked(seg.get())) continue;
      auto it = std::find(list->begin(), list->end(), seg);
      if (it != list->end() && it + 1 != list->end() && (*(it + 1))->base_offset() <= plan.target)
        plan.finishing.push_back(seg);
    }
  }
  const int64_t rp = recovery_point();
  if (rp >= plan.target) return std::optional<SyncPlan>{};
  // Segments that rolled were flushed when they were finished; the ones
  // after the recovery point's segment may hold unsynced bytes. Bytes
  // written after target are synced too, harmlessly.
  for (size_t i = 0; i < list->size(); ++i) {
    if (i + 1 < list->size() && (*list)[i + 1]->base_offset() <= rp) continue;
    if ((*list)[i]->base_offset() >= plan.target) break;
    auto f = (*list)[i]->log_file();
    if (!f) return f.status();
    plan.files.push_back(std::move(f).value());
  }
  return std::optional<SyncPlan>(std::move(plan));
}

Result<int64_t> Log::finish_sync(const SyncPlan& plan, const Status& synced) {
  std::lock_guard sync_lock(sync_mu_);
  if (!sync_error_.is_ok()) return sync_error_;
  if (!synced.is_ok()) {
    sync_error_ = synced;
    return synced;
  }
  // Deferred rolls: each rolled segment of the plan (its .log is synced)
  // gets its indexes flushed and its marker removed, durably, before the
  // recovery point may pass it and before the cleaner may rewrite it. Under
  // finish_mu_, so truncation and retention wait for it; a segment that
  // left the list meanwhile is theirs.
  std::vector<std::shared_ptr<Segment>> done;
  if (!plan.finishing.empty()) {
    std::lock_guard finish(finish_mu_);
    auto list = segments();
    for (const auto& seg : plan.finishing) {
      if (std::find(list->begin(), list->end(), seg) == list->end()) continue;
      // Its .log is synced (the plan's files): the blocks reserved past its
      // end are freed, and the indexes flushed and handed to the IndexCache,
      // as a finished segment's are. Not the active segment (a truncation
      // made it active again): writes may be in flight there.
      Status s = seg != list->back() ? seg->trim_preallocation() : Status::ok();
      if (s.is_ok()) s = seg->release_indexes();
      if (s.is_ok()) s = remove_marker_if_present(unfinished_marker_path(seg->base_offset()));
      if (!s.is_ok()) {
        sync_error_ = s;
        return s;
      }
      done.push_back(seg);
    }
    if (!done.empty()) {
      if (Status s = fs_.sync_dir(dir_); !s.is_ok()) {
        sync_error_ = s;
        return s;
      }
    }
  }
  int64_t rp_to = plan.target;
  {
    std::lock_guard lock(append_mu_);
    for (const auto& seg : done) {
      auto it = std::find(unfinished_.begin(), unfinished_.end(), seg);
      if (it == unfinished_.end()) continue;
      unfinished_.erase(it);
    }
    // The recovery point stops at the first rolled segment still unfinished
    // (its indexes are not durable yet); a truncation since the plan owns it.
    if (!unfinished_.empty()) rp_to = std::min(rp_to, unfinished_.front()->base_offset());
    if (truncations_ == plan.truncations && recovery_point() < rp_to)
      recovery_point_.store(rp_to, std::memory_order_release);
  }
  return plan.target;  // the data is durable up to here
}

Result<int64_t> Log::sync_data() {
  auto plan = prepare_sync();
  if (!plan) return plan.status();
  if (!*plan) return recovery_point();
  Status synced;
  for (const auto& f : (*plan)->files) {
    synced = f->sync();
    if (!synced.is_ok()) break;
  }
  return finish_sync(**plan, synced);
}

Status Log::close() {
  std::lock_guard lock(append_mu_);
  if (closed_) return Status::ok();
  closed_ = true;
  // The files themselves close with their Segment, when the last reference
  // (a reader's slice included) goes: closing them here could let a reader
  // sendfile from a descriptor number the kernel has already reused.
  auto list = segments();
  return list->empty() ? Status::ok() : flush_locked();
}

Result<TimestampOffset> Log::offset_for_timestamp(int64_t target_ms) const {
  const int64_t start = log_start_offset();
  const int64_t end = log_end_offset();
  auto list = segments();
  for (const auto& seg : *list) {
    if (seg->base_offset() >= end) break;
    // Segments wholly below the log start, and those whose largest
    // timestamp is below the target, cannot hold the answer.
    if (seg->max_timestamp_so_far().timestamp < target_ms) continue;
    auto found = seg->find_offset_for_timestamp(target_ms, start, seg->published_size());
    if (!found) return found.status();
    if (*found && (*found)->offset < end) return **found;
  }
  return TimestampOffset{kNoTimestamp, -1};
}

TimestampOffset Log::max_timestamp() const {
  auto list = segments();
  std::shared_ptr<Segment> best;
  TimestampOffset max{kNoTimestamp, -1};
  for (const auto& seg : *list) {
    const TimestampOffset t = seg->max_timestamp_so_far();
    if (t.timestamp > max.timestamp) {
      max = t;
      best = seg;
    }
  }
  if (!best) return TimestampOffset{kNoTimestamp, -1};
  // The segment knows the batch; the record inside it is exact.
  auto exact = best->find_record_with_timestamp(max.offset, max.timestamp, best->published_size());
  if (exact) max.offset = *exact;
  return max;
}

Status Log::delete_oldest_segments(size_t n) {
  auto current = segments();
  n = std::min(n, current->size() - 1);  // never the active segment
  // Nor one that rolled with writes still in flight.
  for (size_t i = 0; i < n; ++i)
    if (has_pending_locked((*current)[i].get())) n = i;
  if (n == 0) return Status::ok();
  std::lock_guard finish(finish_mu_);
  auto rest = std::make_shared<SegmentList>(current->begin() + static_cast<std::ptrdiff_t>(n), current->end());
  const int64_t new_start = rest->front()->base_offset();
  if (log_start_offset() < new_start) log_start_offset_.store(new_start, std::memory_order_release);
  forget_unfinished_locked(*rest);
  publish_segments(std::move(rest));
  const Status result = retire_segments(*current, 0, n, /*highest_first=*/false);
  Status synced = fs_.sync_dir(dir_);
  // The first epoch entry follows the log start (Kafka's truncateFromStart).
  Status epochs = epochs_->truncate_from_start(log_start_offset());
  if (!result.is_ok()) return result;
  return synced.is_ok() ? epochs : synced;
}

Status Log::retire_segments(const SegmentList& list, size_t from, size_t to, bool highest_first) {
  Deleted d;
  Status result;
  for (size_t k = 0; k < to - from; ++k) {
    const size_t i = highest_first ? to - 1 - k : from + k;
    Status s = retire_segment_files(list[i]->base_offset(), &d);
    if (!s.is_ok() && result.is_ok()) result = s;
  }
  if (!d.paths.empty()) {
    std::lock_guard lock(deleted_mu_);
    deleted_.push_back(std::move(d));
  }
  return result;
}

Status Log::retire_segment_files(int64_t base_offset, Deleted* d) {
  Status result;
  for (auto kind : {SegmentFileKind::kLog, SegmentFileKind::kIndex, SegmentFileKind::kTimeIndex,
                    SegmentFileKind::kTxnIndex}) {
    const std::string from = dir_ + "/" + segment_file_name(base_offset, kind);
    const std::string to = dir_ + "/" + segment_file_name(base_offset, kind, FileSuffix::kDeleted);
    // Not while an aborted transaction is being added to it (the segment
    // has left the list already, so no later append finds it).
    std::unique_lock<std::mutex> txn_lock(txn_index_mu_, std::defer_lock);
    if (kind == SegmentFileKind::kTxnIndex) {
      txn_lock.lock();
      txn_index_tails_.erase(base_offset);
    }
    Status s = fs_.rename(from, to);
    if (s.is_ok()) {
      d->paths.push_back(to);
    } else if (s.code() != StatusCode::kNotFound && result.is_ok()) {
      result = s;
    }
  }
  return result;
}

Status Log::advance_log_start_offset(int64_t offset) {
  std::lock_guard lock(append_mu_);
  if (closed_) return Status::invalid_argument(dir_ + ": DeleteRecords on a closed log");
  if (offset > log_end_offset())
    return Status::offset_out_of_range(dir_ + ": log start offset " + std::to_string(offset) +
                                       " would pass the log end offset " + std::to_string(log_end_offset()));
  if (offset <= log_start_offset()) return Status::ok();
  log_start_offset_.store(offset, std::memory_order_release);
  // Whole segments below the new start: those whose successor starts at or below it.
  auto list = segments();
  size_t n = 0;
  while (n + 1 < list->size() && (*list)[n + 1]->base_offset() <= offset) ++n;
  Status deleted = delete_oldest_segments(n);
  Status epochs = epochs_->truncate_from_start(offset);  // a no-op when the deletion did it
  return deleted.is_ok() ? epochs : deleted;
}

size_t Log::due_for_retention_locked(int64_t now_ms, const SegmentList& list) const {
  size_t n = 0;
  if (!config_.cleanup_delete) return n;  // cleanup.policy=compact: the cleaner's log
  if (config_.retention_ms >= 0) {
    while (n + 1 < list.size()) {
      const int64_t ts = list[n]->max_timestamp_so_far().timestamp;
      // A segment without timestamps is kept (Kafka falls back to the file's
      // mtime), unless it is empty (compaction can empty one): nothing to keep.
      if (ts == kNoTimestamp && list[n]->published_size() == 0) {
        ++n;
        continue;
      }
      if (ts == kNoTimestamp || now_ms - ts <= config_.retention_ms) break;
      ++n;
    }
  }
  if (config_.retention_bytes >= 0) {
    uint64_t total = 0;
    for (const auto& seg : list) total += seg->published_size();
    for (size_t i = 0; i < n; ++i) total -= list[i]->published_size();
    int64_t excess = static_cast<int64_t>(total) - config_.retention_bytes;
    while (n + 1 < list.size()) {
      const auto size = static_cast<int64_t>(list[n]->published_size());
      if (excess - size < 0) break;
      excess -= size;
      ++n;
    }
  }
  return n;
}

Result<size_t> Log::apply_retention(int64_t now_ms, const std::function<int64_t()>& upper_bound) {
  // The bound is asked outside the append lock (its owner may take locks
  // that it holds while appending), and only when some segment is due.
  int64_t bound = kNever;
  if (upper_bound) {
    std::unique_lock lock(append_mu_);
    if (closed_ || due_for_retention_locked(now_ms, *segments()) == 0) return size_t{0};
    lock.unlock();
    bound = upper_bound();
  }
  std::lock_guard lock(append_mu_);
  if (closed_) return size_t{0};
  auto list = segments();
  size_t n = due_for_retention_locked(now_ms, *list);
  // Segment n - 1 ends where segment n starts: all of it must be below the bound.
  while (n > 0 && (*list)[n]->base_offset() > bound) --n;
  CK_RETURN_IF_ERROR(delete_oldest_segments(n));
  return n;
}

size_t Log::remove_deleted_files(int64_t now_ms) {
  int64_t delay;
  {
    std::lock_guard lock(append_mu_);
    delay = config_.file_delete_delay_ms;
  }
  std::lock_guard lock(deleted_mu_);
  size_t removed = 0;
  for (auto it = deleted_.begin(); it != deleted_.end();) {
    if (!it->seen_ms) it->seen_ms = now_ms;
    if (now_ms - *it->seen_ms < delay) {
      ++it;
      continue;
    }
    for (const auto& p : it->paths)
      if (fs_.remove_file(p).is_ok()) ++removed;
    it = deleted_.erase(it);
  }
  return removed;
}

Status Log::replace_segment(const std::shared_ptr<Segment>& old, const SwapHook& hook) {
  std::lock_guard lock(append_mu_);
  const int64_t base = old->base_offset();
  if (closed_) return Status::not_found(dir_ + ": compaction swap on a closed log");
  auto current = segments();
  auto it = std::find(current->begin(), current->end(), old);
  std::lock_guard finish(finish_mu_);
  if (it == current->end() || it + 1 == current->end() || has_pending_locked(old.get()) ||
      std::find(unfinished_.begin(), unfinished_.end(), old) != unfinished_.end())
    return Status::not_found(dir_ + ": segment " + std::to_string(base) + " is gone, active or not yet finished");
  CK_RETURN_IF_ERROR(swap_in(fs_, dir_, base, hook));
  CK_RETURN_IF_ERROR(fs_.sync_dir(dir_));
  auto cleaned = Segment::open(fs_, dir_, base, config_.segment, false);
  if (!cleaned) return cleaned.status();
  CK_RETURN_IF_ERROR((*cleaned)->check_indexes());
  auto next = std::make_shared<SegmentList>(*current);
  (*next)[static_cast<size_t>(it - current->begin())] = std::move(cleaned).value();
  publish_segments(std::move(next));
  Deleted d;
  for (auto kind : {SegmentFileKind::kLog, SegmentFileKind::kIndex, SegmentFileKind::kTimeIndex})
    d.paths.push_back(dir_ + "/" + segment_file_name(base, kind, FileSuffix::kDeleted));
  std::lock_guard dl(deleted_mu_);
  deleted_.push_back(std::move(d));
  return Status::ok();
}

uint64_t Log::size_bytes() const {
  uint64_t total = 0;
  for (const auto& seg : *segments()) total += seg->published_size();
  return total;
}

LogConfig Log::config() const {
  std::lock_guard lock(append_mu_);
  return config_;
}

void Log::update_config(const LogConfig& config) {
  std::lock_guard lock(append_mu_);
  config_ = config;
}

Result<std::vector<uint8_t>> read_slices(const ReadResult& r) {
  std::vector<uint8_t> out(r.bytes);
  size_t at = 0;
  for (const auto& s : r.slices) {
    auto n = s.slice.file->read_at(s.slice.position, std::span<uint8_t>(out.data() + at, s.slice.length));
    if (!n) return n.status();
    if (*n != s.slice.length) return Status::corruption(s.slice.file->path() + ": short read of a slice");
    at += s.slice.length;
  }
  return out;
}

}  // namespace ciuickafka::storage
