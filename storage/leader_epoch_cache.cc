// storage/leader_epoch_cache.cc: Kafka's leader epoch cache rules over a
// sorted vector, persisted to leader-epoch-checkpoint on every change.
#include "storage/leader_epoch_cache.h"

#include <algorithm>

namespace ciuickafka::storage {

LeaderEpochCache::LeaderEpochCache(io::FileSystem& fs, std::string path, std::vector<EpochEntry> entries)
    : fs_(fs), path_(std::move(path)), entries_(std::move(entries)) {
  if (!entries_.empty()) recorded_latest_.store(entries_.back().epoch, std::memory_order_release);
}

// LeaderEpochFileCache.isUpdateNeeded: always for an empty cache; otherwise
// when the epoch differs from the latest one or, for the same epoch, the
// start offset is lower.
bool LeaderEpochCache::update_needed_locked(const EpochEntry& e) const {
  if (entries_.empty()) return true;
  const EpochEntry& last = entries_.back();
  return e.epoch != last.epoch || e.start_offset < last.start_offset;
}

// maybeTruncateNonMonotonicEntries, then the put: entries from the end whose
// epoch is >= the new one or whose start is >= the new start go.
void LeaderEpochCache::assign_locked(const EpochEntry& e) {
  while (!entries_.empty() &&
         (entries_.back().epoch >= e.epoch || entries_.back().start_offset >= e.start_offset))
    entries_.pop_back();
  entries_.push_back(e);
}

Status LeaderEpochCache::assign(int32_t epoch, int64_t start_offset) {
  const EpochEntry e{epoch, start_offset};
  return assign(std::span<const EpochEntry>(&e, 1));
}

Status LeaderEpochCache::assign(std::span<const EpochEntry> entries) {
  for (const EpochEntry& e : entries)
    if (e.epoch < 0 || e.start_offset < 0)
      return Status::invalid_argument(path_ + ": invalid leader epoch entry (" + std::to_string(e.epoch) +
                                      ", " + std::to_string(e.start_offset) + ")");
  std::lock_guard w(write_mu_);
  bool changed = false;
  {
    std::lock_guard lock(mu_);
    for (const EpochEntry& e : entries) {
      if (!update_needed_locked(e)) continue;
      assign_locked(e);
      changed = true;
    }
    changed = changed || dirty_;
  }
  return changed ? persist() : Status::ok();
}

bool LeaderEpochCache::needs_update(int32_t epoch, int64_t start_offset) const {
  std::lock_guard lock(mu_);
  return dirty_ || update_needed_locked(EpochEntry{epoch, start_offset});
}

std::optional<int32_t> LeaderEpochCache::latest_epoch() const {
  std::lock_guard lock(mu_);
  if (entries_.empty()) return std::nullopt;
  return entries_.back().epoch;
}

std::optional<EpochEntry> LeaderEpochCache::latest_entry() const {
  std::lock_guard lock(mu_);
  if (entries_.empty()) return std::nullopt;
  return entries_.back();
}

std::optional<EpochEntry> LeaderEpochCache::earliest_entry() const {
  std::lock_guard lock(mu_);
  if (entries_.empty()) return std::nullopt;
  return entries_.front();
}

std::vector<EpochEntry> LeaderEpochCache::entries() const {
  std::lock_guard lock(mu_);
  return entries_;
}

bool LeaderEpochCache::empty() const {
  std::lock_guard lock(mu_);
  return entries_.empty();
}

bool LeaderEpochCache::dirty() const {
  std::lock_guard lock(mu_);
  return dirty_;
}

EpochEndOffset LeaderEpochCache::end_offset_for(int32_t requested_epoch, int64_t log_end_offset) const {
  std::lock_guard lock(mu_);
  // A bootstrapping follower, or one on a format without epochs.
  if (requested_epoch == kUndefinedEpoch) return {};
  // The latest epoch is still being written: its end is the LEO.
  if (!entries_.empty() && entries_.back().epoch == requested_epoch) return {requested_epoch, log_end_offset};
  // higherEntry: the first entry whose epoch is above the requested one.
  auto higher = std::upper_bound(entries_.begin(), entries_.end(), requested_epoch,
                                 [](int32_t e, const EpochEntry& x) { return e < x.epoch; });
  if (higher == entries_.end()) return {};  // above every known epoch
  // floorEntry: none below means the requested epoch predates the cache
  // (its data is gone): the first known start, with the requested epoch.
  if (higher == entries_.begin()) return {requested_epoch, higher->start_offset};
  return {std::prev(higher)->epoch, higher->start_offset};
}

std::optional<int32_t> LeaderEpochCache::epoch_for_offset(int64_t offset) const {
  std::lock_guard lock(mu_);
  auto after = std::upper_bound(entries_.begin(), entries_.end(), offset,
                                [](int64_t o, const EpochEntry& x) { return o < x.start_offset; });
  if (after == entries_.begin()) return std::nullopt;
  return std::prev(after)->epoch;
}

Status LeaderEpochCache::truncate_from_end(int64_t end_offset) {
  std::lock_guard w(write_mu_);
  {
    std::lock_guard lock(mu_);
    const auto past_end = [&] { return !entries_.empty() && entries_.back().start_offset >= end_offset; };
    if (end_offset < 0 || !past_end()) {
      if (!dirty_) return Status::ok();
    } else {
      while (past_end()) entries_.pop_back();
    }
  }
  return persist();
}

Status LeaderEpochCache::truncate_from_start(int64_t start_offset) {
  std::lock_guard w(write_mu_);
  {
    std::lock_guard lock(mu_);
    // removeFromStart(start <= start_offset); the last removed comes back at start_offset.
    auto first_kept = std::upper_bound(entries_.begin(), entries_.end(), start_offset,
                                       [](int64_t o, const EpochEntry& x) { return o < x.start_offset; });
    const bool change = first_kept != entries_.begin() && std::prev(first_kept)->start_offset != start_offset;
    const bool collapse = first_kept - entries_.begin() > 1;
    if (!change && !collapse && !dirty_) return Status::ok();
    if (first_kept != entries_.begin()) {
      const EpochEntry moved{std::prev(first_kept)->epoch, start_offset};
      auto rest = entries_.erase(entries_.begin(), first_kept);
      entries_.insert(rest, moved);
    }
  }
  return persist();
}

Status LeaderEpochCache::clear() {
  std::lock_guard w(write_mu_);
  {
    std::lock_guard lock(mu_);
    if (entries_.empty() && !dirty_) return Status::ok();
    entries_.clear();
  }
  return persist();
}

Status LeaderEpochCache::flush() {
  std::lock_guard w(write_mu_);
  return persist();
}

Status LeaderEpochCache::persist() {
  std::vector<EpochEntry> snapshot = entries();
  Status s = write_leader_epoch_checkpoint(fs_, path_, snapshot);
  std::lock_guard lock(mu_);
  dirty_ = !s.is_ok();
  recorded_latest_.store(dirty_ || entries_.empty() ? kUndefinedEpoch : entries_.back().epoch,
                         std::memory_order_release);
  return s;
}

}  // namespace ciuickafka::storage
