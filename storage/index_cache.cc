// storage/index_cache.cc: the LRU byte budget of inactive segments' indexes.
#include "storage/index_cache.h"

namespace ciuickafka::storage {

IndexCache::IndexCache(size_t capacity_bytes) : capacity_(capacity_bytes) {}

IndexCache& IndexCache::process_default() {
  static IndexCache cache(kDefaultCapacityBytes);
  return cache;
}

size_t IndexCache::capacity() const {
  std::lock_guard lock(mu_);
  return capacity_;
}

void IndexCache::set_capacity(size_t capacity_bytes) {
  List dropped;  // destroyed after the lock is released (declared first)
  std::lock_guard lock(mu_);
  capacity_ = capacity_bytes;
  evict_locked(&dropped);
}

uint64_t IndexCache::new_key() {
  std::lock_guard lock(mu_);
  return next_key_++;
}

std::shared_ptr<const SegmentIndexes> IndexCache::lookup(uint64_t key) {
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  ++stats_.hits;
  return it->second->indexes;
}

std::shared_ptr<const SegmentIndexes> IndexCache::insert(uint64_t key,
                                                         std::shared_ptr<const SegmentIndexes> indexes) {
  List dropped;
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it != index_.end()) {  // another reader reloaded them first: use theirs
    lru_.splice(lru_.begin(), lru_, it->second);
    dropped.push_back(Entry{key, 0, std::move(indexes)});
    return it->second->indexes;
  }
  const size_t bytes = cost(*indexes);
  lru_.push_front(Entry{key, bytes, indexes});
  index_.emplace(key, lru_.begin());
  bytes_ += bytes;
  ++stats_.misses;
  evict_locked(&dropped);
  return indexes;
}

bool IndexCache::contains(uint64_t key) const {
  std::lock_guard lock(mu_);
  return index_.count(key) != 0;
}

bool IndexCache::erase(uint64_t key) {
  List dropped;
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  bytes_ -= it->second->bytes;
  dropped.splice(dropped.end(), lru_, it->second);
  index_.erase(it);
  return true;
}

void IndexCache::note_rebuild() {
  std::lock_guard lock(mu_);
  ++stats_.rebuilds;
}

void IndexCache::evict_locked(List* out) {
  while (bytes_ > capacity_ && !lru_.empty()) {
    bytes_ -= lru_.back().bytes;
    index_.erase(lru_.back().key);
    out->splice(out->end(), lru_, std::prev(lru_.end()));
    ++stats_.evictions;
  }
}

IndexCache::Stats IndexCache::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.held = lru_.size();
  s.bytes = bytes_;
  return s;
}

}  // namespace ciuickafka::storage
