// storage/fd_cache.h: a process-wide bound on the segment files held open.
//
// Issue #3 point 8: 10,000 partitions with a few segments each must fit the
// default `ulimit -n` (often 1024). Kafka keeps every segment's file open;
// we keep at most capacity() of them in an LRU. A segment's `.log` is a
// LazyFile (storage/lazy_file.h) that asks the cache for its File and, on a
// miss, opens it again and inserts it, evicting the least recently used
// files past the bound.
//
// Eviction drops the cache's reference only. Files are shared_ptrs, and
// whoever is using one holds its own reference: the writer during an append,
// group commit during an fdatasync, and every reader's FileSlice (its
// `keep_open`) until the response that sends it is done. So an evicted file
// stays open, and its fd valid for sendfile, until the last of those goes;
// the bound is on idle files, and the fds in use at a moment can exceed it
// by the slices in flight (bounded by the broker's in-flight byte budget).
// Closing an fd loses nothing: dirty pages belong to the inode, and an
// fdatasync through a later fd of the same file makes them durable.
//
// Indexes do not hold fds at all (storage/index_file.h opens them only to
// load and to flush), so one cached fd per segment is the whole cost.
//
// Thread-safety: every method may be called from any thread; one mutex
// guards the LRU, and files are opened and closed outside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "storage/io/file.h"

namespace ciuickafka::storage {

class FdCache {
 public:
  explicit FdCache(size_t capacity);
  FdCache(const FdCache&) = delete;
  FdCache& operator=(const FdCache&) = delete;

  // The cache segments use when their config names none, sized by
  // capacity_for_limit() of the limit when first used. The broker sets
  // ciuic.log.max.open.files through set_capacity().
  static FdCache& process_default();
  // Half the soft RLIMIT_NOFILE (the rest is for sockets, index flushes,
  // checkpoints, rings), at least 16, at most 1 << 20.
  static size_t capacity_for_limit();

  size_t capacity() const;
  // Evicts at once when the new bound is below what is held.
  void set_capacity(size_t capacity);

  // A fresh key for one file (a LazyFile takes one for its life).
  uint64_t new_key();
  // The file held for key, made most recently used; nullptr on a miss.
  std::shared_ptr<io::File> lookup(uint64_t key);
  // Holds file for key, unless another thread inserted one first: then that
  // one is returned and file is dropped. Evicts past the bound.
  std::shared_ptr<io::File> insert(uint64_t key, std::shared_ptr<io::File> file);
  // Whether key is held, without touching the LRU order.
  bool contains(uint64_t key) const;
  // Forgets key (its owner is closing); returns whether it was held.
  bool erase(uint64_t key);

  struct Stats {
    size_t held = 0;         // files the cache holds now
    uint64_t hits = 0;
    uint64_t misses = 0;     // inserts of a newly opened file
    uint64_t evictions = 0;
  };
  Stats stats() const;

 private:
  struct Entry {
    uint64_t key;
    std::shared_ptr<io::File> file;
  };
  using List = std::list<Entry>;
  // Moves entries past the bound into out (mu_ held); the caller drops them
  // after unlocking, so close(2) never runs under the mutex.
  void evict_locked(std::list<Entry>* out);

  mutable std::mutex mu_;
  size_t capacity_;
  uint64_t next_key_ = 1;
  List lru_;  // front: most recently used
  std::unordered_map<uint64_t, List::iterator> index_;
  Stats stats_;
};

}  // namespace ciuickafka::storage
