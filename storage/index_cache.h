// storage/index_cache.h: a process-wide byte budget for the indexes of
// inactive segments.
//
// Issue #3 point 8: a segment's `.index` and `.timeindex` live in memory
// (storage/index_file.h), about 0.5 % of the data, so a broker with a lot of
// log would hold gigabytes of cold indexes. The active segment of each log
// keeps its indexes loaded (it appends to them; they are not counted here).
// When a segment stops being written (it rolled, or it was opened below the
// last segment and its indexes were checked or rebuilt) its indexes are
// flushed if needed and handed to this cache: an LRU bounded by the bytes it
// holds (capacity(), ciuic.log.index.cache.bytes, 64 MiB by default). Past
// the bound the least recently used segments' indexes are dropped; the next
// lookup in such a segment reloads them from its files (Segment::pin_indexes
// in storage/segment.cc), checking that the files still hold exactly what
// was dropped, else rebuilding them from the `.log`.
//
// As in FdCache (storage/fd_cache.h, the model), eviction drops the cache's
// reference only: indexes are shared_ptrs to immutable SegmentIndexes, and a
// lookup holds its own reference for its duration, so an eviction never
// frees an index under a reader. The bound is on what the cache holds; a
// lookup in flight can keep one evicted segment's indexes alive a little
// longer. Capacity 0 holds nothing: every lookup in an inactive segment
// reloads (correct, slow; for tests).
//
// Each held entry costs its two indexes' memory_bytes() plus kEntryOverhead
// for the objects, paths and LRU node.
//
// Thread-safety: every method may be called from any thread; one mutex
// guards the LRU, and evicted indexes are freed after it is released. The
// cache never calls into segments, so a segment may call it while holding
// its own index mutex (lock order: segment, then cache).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "storage/offset_index.h"
#include "storage/time_index.h"

namespace ciuickafka::storage {

// The two indexes of one segment, as the cache holds them (immutable).
struct SegmentIndexes {
  OffsetIndex offset;
  TimeIndex time;
};

class IndexCache {
 public:
  static constexpr size_t kDefaultCapacityBytes = size_t{64} << 20;
  static constexpr size_t kEntryOverhead = 256;

  explicit IndexCache(size_t capacity_bytes);
  IndexCache(const IndexCache&) = delete;
  IndexCache& operator=(const IndexCache&) = delete;

  // The cache segments use when their config names none (kDefaultCapacityBytes
  // until the broker sets ciuic.log.index.cache.bytes through set_capacity()).
  static IndexCache& process_default();

  size_t capacity() const;
  // Evicts at once when the new bound is below what is held.
  void set_capacity(size_t capacity_bytes);

  // A fresh key for one segment (taken for the segment's life).
  uint64_t new_key();
  // The indexes held for key, made most recently used; nullptr on a miss.
  std::shared_ptr<const SegmentIndexes> lookup(uint64_t key);
  // Holds indexes for key, unless another thread inserted some first: then
  // those are returned and these dropped. Evicts past the bound (possibly
  // these very indexes, when they alone exceed it; the caller's reference
  // keeps them usable).
  std::shared_ptr<const SegmentIndexes> insert(uint64_t key, std::shared_ptr<const SegmentIndexes> indexes);
  // Whether key is held, without touching the LRU order.
  bool contains(uint64_t key) const;
  // Forgets key (its segment is closing or writing again); returns whether it was held.
  bool erase(uint64_t key);
  // Counts one reload that had to rebuild from the `.log` (the files were
  // missing or not what was unloaded).
  void note_rebuild();

  struct Stats {
    size_t held = 0;   // segments whose indexes the cache holds now
    size_t bytes = 0;  // what they cost (never above capacity() after a call returns)
    uint64_t hits = 0;
    uint64_t misses = 0;  // inserts: releases by the writer and reloads by readers
    uint64_t evictions = 0;
    uint64_t rebuilds = 0;  // reloads that rebuilt from the .log
  };
  Stats stats() const;

  static size_t cost(const SegmentIndexes& ix) {
    return ix.offset.memory_bytes() + ix.time.memory_bytes() + kEntryOverhead;
  }

 private:
  struct Entry {
    uint64_t key;
    size_t bytes;
    std::shared_ptr<const SegmentIndexes> indexes;
  };
  using List = std::list<Entry>;
  // Moves entries past the bound into out (mu_ held); the caller drops them
  // after unlocking.
  void evict_locked(List* out);

  mutable std::mutex mu_;
  size_t capacity_;
  size_t bytes_ = 0;
  uint64_t next_key_ = 1;
  List lru_;  // front: most recently used
  std::unordered_map<uint64_t, List::iterator> index_;
  Stats stats_;
};

}  // namespace ciuickafka::storage
