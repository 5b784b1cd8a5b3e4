// storage/segment_indexes.cc: how a segment holds its indexes under the
// IndexCache's budget (storage/index_cache.h): release to the cache, pin for
// a lookup, reload from the files, rebuild from the `.log`. The locking is
// described in storage/segment.h.
#include <cstdio>
#include <cstdlib>

#include "protocol/records/record_batch.h"
#include "storage/file_names.h"
#include "storage/segment.h"

namespace ciuickafka::storage {

namespace v2 = protocol::batch_v2;

Status Segment::release_indexes() {
  if (released_) return Status::ok();
  // Only the writer changes the indexes, so flushing outside index_mu_ is
  // safe (as flush() does); a reload must find every entry in the files.
  if (offset_index_.dirty()) CK_RETURN_IF_ERROR(offset_index_.flush());
  if (time_index_.dirty()) CK_RETURN_IF_ERROR(time_index_.flush());
  std::lock_guard lock(index_mu_);
  released_offset_ = {offset_index_.entries(), offset_index_.fingerprint()};
  released_time_ = {time_index_.entries(), time_index_.fingerprint()};
  auto held = std::make_shared<const SegmentIndexes>(
      SegmentIndexes{std::move(offset_index_), std::move(time_index_)});
  offset_index_ = OffsetIndex::in_memory(*fs_, index_path_, base_offset_, config_.max_index_bytes);
  time_index_ = TimeIndex::in_memory(*fs_, time_index_path_, base_offset_, config_.max_index_bytes);
  released_ = true;
  // Warm: readers of a segment that just rolled find it without a reload.
  index_cache_->insert(index_key_, std::move(held));
  return Status::ok();
}

Status Segment::reclaim_indexes() {
  if (!released_) return Status::ok();
  auto oi = OffsetIndex::open(*fs_, index_path_, base_offset_, config_.max_index_bytes);
  if (!oi) return oi.status();
  auto ti = TimeIndex::open(*fs_, time_index_path_, base_offset_, config_.max_index_bytes);
  if (!ti) return ti.status();
  std::lock_guard lock(index_mu_);
  index_cache_->erase(index_key_);
  offset_index_ = std::move(oi).value();
  time_index_ = std::move(ti).value();
  released_ = false;
  return Status::ok();
}

bool Segment::indexes_released() const {
  std::lock_guard lock(index_mu_);
  return released_;
}

size_t Segment::owned_index_bytes() const {
  std::lock_guard lock(index_mu_);
  return offset_index_.memory_bytes() + time_index_.memory_bytes();
}

Result<Segment::IndexPin> Segment::pin_indexes() const {
  const auto cached = [](std::shared_ptr<const SegmentIndexes> held) {
    IndexPin pin;
    pin.offset = &held->offset;
    pin.time = &held->time;
    pin.held = std::move(held);
    return pin;
  };
  const auto owned = [this](std::unique_lock<std::mutex> lock) {
    return IndexPin{std::move(lock), nullptr, &offset_index_, &time_index_};
  };
  {
    std::unique_lock lock(index_mu_);
    if (!released_) return owned(std::move(lock));
  }
  if (auto held = index_cache_->lookup(index_key_)) return cached(std::move(held));
  // A miss: one reload per segment at a time; who waited finds it loaded.
  std::lock_guard load(load_mu_);
  if (auto held = index_cache_->lookup(index_key_)) return cached(std::move(held));
  auto loaded = load_indexes();
  if (!loaded) return loaded.status();
  std::unique_lock lock(index_mu_);
  if (!released_) return owned(std::move(lock));  // the writer took them back meanwhile
  return cached(index_cache_->insert(index_key_, std::move(loaded).value()));
}

Result<std::shared_ptr<const SegmentIndexes>> Segment::load_indexes() const {
  Fingerprint want_offset, want_time;
  {
    std::lock_guard lock(index_mu_);
    want_offset = released_offset_;
    want_time = released_time_;
  }
  // The files are at their names, or at `.deleted` names once retention or
  // compaction removed the segment while readers still hold it. What a
  // name holds may be another segment's index (compaction's swap puts the
  // cleaned segment's files there): the fingerprint tells.
  const std::string deleted(suffix_text(FileSuffix::kDeleted));
  for (const std::string& sfx : {std::string(), deleted}) {
    auto oi = OffsetIndex::open(*fs_, index_path_ + sfx, base_offset_, config_.max_index_bytes, false);
    if (!oi || Fingerprint{oi->entries(), oi->fingerprint()} != want_offset) continue;
    auto ti = TimeIndex::open(*fs_, time_index_path_ + sfx, base_offset_, config_.max_index_bytes, false);
    if (!ti || Fingerprint{ti->entries(), ti->fingerprint()} != want_time) continue;
    return std::make_shared<const SegmentIndexes>(
        SegmentIndexes{std::move(oi).value(), std::move(ti).value()});
  }
  // Missing, unreadable, corrupt or not the same: rebuild from the .log.
  index_cache_->note_rebuild();
  return rebuild_indexes();
}

Result<std::shared_ptr<const SegmentIndexes>> Segment::rebuild_indexes() const {
  // Kafka's index rule, as index_batch applies it while appending, over the
  // batch headers of this inactive segment; then the final time index entry
  // on_become_inactive adds. The result lives in memory only (readers never
  // write files; the next reload rebuilds again).
  auto file = log_->get();
  if (!file) return file.status();
  io::File& f = **file;
  auto oi = OffsetIndex::in_memory(*fs_, index_path_, base_offset_, config_.max_index_bytes);
  auto ti = TimeIndex::in_memory(*fs_, time_index_path_, base_offset_, config_.max_index_bytes);
  const uint64_t end = published_size();
  uint64_t since_entry = 0;
  int64_t max_ts = kNoTimestamp, offset_of_max_ts = base_offset_;
  for (uint64_t pos = 0; pos < end;) {
    auto loc = read_header(f, pos, end);
    if (!loc) return loc.status();
    uint8_t ts[8];
    auto n = f.read_at(pos + v2::kMaxTimestampOffset, ts);
    if (!n) return n.status();
    if (*n != sizeof ts) return Status::corruption(path() + ": short read of a batch header");
    const auto batch_ts = static_cast<int64_t>(load_be64(ts));
    if (batch_ts > max_ts) {
      max_ts = batch_ts;
      offset_of_max_ts = loc->last_offset;
    }
    if (since_entry > config_.index_interval_bytes) {
      if (!oi.full()) (void)oi.append(loc->last_offset, static_cast<uint32_t>(pos));
      if (max_ts != kNoTimestamp && !ti.full()) (void)ti.maybe_append(max_ts, offset_of_max_ts);
      since_entry = 0;
    }
    since_entry += loc->size;
    pos += loc->size;
  }
  if (max_ts != kNoTimestamp) (void)ti.maybe_append(max_ts, offset_of_max_ts, true);
  return std::make_shared<const SegmentIndexes>(SegmentIndexes{std::move(oi), std::move(ti)});
}

OffsetIndex Segment::offset_index() const {
  auto pin = pin_indexes();
  if (!pin) {
    std::fprintf(stderr, "Segment %s: indexes cannot be loaded: %s\n", path().c_str(),
                 pin.status().to_string().c_str());
    std::abort();
  }
  return *pin->offset;
}

TimeIndex Segment::time_index() const {
  auto pin = pin_indexes();
  if (!pin) {
    std::fprintf(stderr, "Segment %s: indexes cannot be loaded: %s\n", path().c_str(),
                 pin.status().to_string().c_str());
    std::abort();
  }
  return *pin->time;
}

}  // namespace ciuickafka::storage
