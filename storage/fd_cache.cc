// storage/fd_cache.cc: the LRU of open segment files.
#include "storage/fd_cache.h"

#include <sys/resource.h>

#include <algorithm>

namespace ciuickafka::storage {

FdCache::FdCache(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

FdCache& FdCache::process_default() {
  static FdCache cache(capacity_for_limit());
  return cache;
}

size_t FdCache::capacity_for_limit() {
  constexpr size_t kMin = 16, kMax = size_t{1} << 20;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return kMax;
  return std::clamp<size_t>(static_cast<size_t>(rl.rlim_cur) / 2, kMin, kMax);
}

size_t FdCache::capacity() const {
  std::lock_guard lock(mu_);
  return capacity_;
}

void FdCache::set_capacity(size_t capacity) {
  List dropped;
  std::lock_guard lock(mu_);
  capacity_ = std::max<size_t>(capacity, 1);
  evict_locked(&dropped);
}

uint64_t FdCache::new_key() {
  std::lock_guard lock(mu_);
  return next_key_++;
}

std::shared_ptr<io::File> FdCache::lookup(uint64_t key) {
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  ++stats_.hits;
  return it->second->file;
}

std::shared_ptr<io::File> FdCache::insert(uint64_t key, std::shared_ptr<io::File> file) {
  List dropped;  // destroyed after the lock is released (declared first)
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it != index_.end()) {  // lost a race with another opener: use theirs
    lru_.splice(lru_.begin(), lru_, it->second);
    dropped.push_back(Entry{key, std::move(file)});
    return it->second->file;
  }
  lru_.push_front(Entry{key, file});
  index_.emplace(key, lru_.begin());
  ++stats_.misses;
  evict_locked(&dropped);
  return file;
}

bool FdCache::contains(uint64_t key) const {
  std::lock_guard lock(mu_);
  return index_.count(key) != 0;
}

bool FdCache::erase(uint64_t key) {
  List dropped;
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  dropped.splice(dropped.end(), lru_, it->second);
  index_.erase(it);
  return true;
}

void FdCache::evict_locked(List* out) {
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().key);
    out->splice(out->end(), lru_, std::prev(lru_.end()));
    ++stats_.evictions;
  }
}

FdCache::Stats FdCache::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.held = lru_.size();
  return s;
}

}  // namespace ciuickafka::storage
