// storage/leader_epoch_cache.h: one log's leader epoch cache, Kafka's
// LeaderEpochFileCache: the (epoch, start offset) pairs saying at which
// offset each leader epoch's records begin, persisted as the partition
// directory's `leader-epoch-checkpoint` (storage/checkpoint.h, FORMAT.md 4.2).
//
// Invariant: epochs and start offsets strictly increase from entry to entry.
// The rules are Kafka's (each is cited where it is implemented):
//   assign(e, o)           needed unless e is the latest epoch and o is not
//                          below its start; then every entry whose epoch is
//                          >= e or whose start is >= o is dropped and (e, o)
//                          appended (so an older epoch rewinds the cache).
//   end_offset_for(e, leo) OffsetForLeaderEpoch's answer (see below).
//   epoch_for_offset(o)    the epoch of the entry with the largest start <= o.
//   truncate_from_end(o)   drops entries whose start is >= o.
//   truncate_from_start(o) entries whose start is <= o collapse into the last
//                          of them, moved to start at o.
//
// Every change is written to the checkpoint (atomically: temp file,
// fdatasync, rename, directory fsync) before the call returns. A failed
// write leaves the change in memory and the cache dirty: the call returns
// the error, and every later mutating call (and needs_update) retries the
// write, so a caller that refuses to go on while the checkpoint is stale
// (the log's append path does) never leaves data whose epoch is unrecorded.
//
// Thread-safety: internally locked. Readers (fetch and OffsetForLeaderEpoch
// threads) take a short mutex; writers are serialised by a second mutex
// held across the change and its file write, so file writes happen in
// change order and readers never wait for the disk. Lock order: the log's
// append lock, then write_mu_, then mu_.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "storage/checkpoint.h"
#include "storage/io/file.h"
#include "storage/status.h"

namespace ciuickafka::storage {

// OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET.
inline constexpr int32_t kUndefinedEpoch = -1;
inline constexpr int64_t kUndefinedEpochOffset = -1;

struct EpochEndOffset {
  int32_t epoch = kUndefinedEpoch;
  int64_t end_offset = kUndefinedEpochOffset;
  bool operator==(const EpochEndOffset&) const = default;
};

class LeaderEpochCache {
 public:
  // A cache holding entries (which must satisfy the invariant), taken as
  // what the file at path holds (records() believes it until the next
  // change is written). Nothing is read or written here.
  LeaderEpochCache(io::FileSystem& fs, std::string path, std::vector<EpochEntry> entries = {});
  LeaderEpochCache(const LeaderEpochCache&) = delete;
  LeaderEpochCache& operator=(const LeaderEpochCache&) = delete;

  const std::string& path() const { return path_; }

  // Kafka's assign: kInvalidArgument (nothing changes) for a negative epoch
  // or offset; ok without a write when no update is needed.
  Status assign(int32_t epoch, int64_t start_offset);
  // Several in order, one file write (a follower append spanning epochs).
  Status assign(std::span<const EpochEntry> entries);
  // Whether assign(epoch, start_offset) would change anything (or retry a
  // failed write): the append path's cheap check.
  bool needs_update(int32_t epoch, int64_t start_offset) const;

  std::optional<int32_t> latest_epoch() const;
  std::optional<EpochEntry> latest_entry() const;
  std::optional<EpochEntry> earliest_entry() const;
  std::vector<EpochEntry> entries() const;
  bool empty() const;
  // Whether the last file write failed (the file lags the cache).
  bool dirty() const;
  // Whether the latest entry is epoch's and the file holds it, so that an
  // append in epoch at the log end changes nothing here and writes no file.
  // Lock-free: the produce path reads it for every partition of a request
  // to choose the thread that appends (a file write and its two fsyncs
  // belong on the I/O pool, not a network thread). A hint only: the change
  // itself is decided under the locks, by assign.
  bool records(int32_t epoch) const {
    return epoch >= 0 && recorded_latest_.load(std::memory_order_acquire) == epoch;
  }

  // OffsetForLeaderEpoch (LeaderEpochFileCache.endOffsetFor):
  //   requested == kUndefinedEpoch            -> (-1, -1)
  //   requested == the latest epoch           -> (latest, log_end_offset)
  //   no epoch above requested (or empty)     -> (-1, -1)
  //   requested below the first epoch         -> (requested, first start)
  //   otherwise                               -> (largest epoch <= requested,
  //                                               start of the next epoch above)
  EpochEndOffset end_offset_for(int32_t requested_epoch, int64_t log_end_offset) const;
  // The epoch the record at offset was written in: the entry with the
  // largest start <= offset; nullopt when offset is below the first entry.
  std::optional<int32_t> epoch_for_offset(int64_t offset) const;

  // Log truncation: drops the entries whose start is >= end_offset (a
  // negative end_offset does nothing, as in Kafka).
  Status truncate_from_end(int64_t end_offset);
  // The log start moved to start_offset (DeleteRecords, retention): the
  // entries whose start is <= start_offset are replaced by the last of them,
  // starting at start_offset.
  Status truncate_from_start(int64_t start_offset);
  // Drops every entry (truncate fully); the file then holds none.
  Status clear();
  // Writes the file now (even when unchanged): a rebuilt cache's first write.
  Status flush();

 private:
  bool update_needed_locked(const EpochEntry& e) const;
  void assign_locked(const EpochEntry& e);
  // write_mu_ held: writes a snapshot of the entries, sets dirty_ and
  // recorded_latest_.
  Status persist();

  io::FileSystem& fs_;
  const std::string path_;
  std::mutex write_mu_;         // serialises changes with their file writes
  mutable std::mutex mu_;       // guards entries_ and dirty_
  std::vector<EpochEntry> entries_;
  bool dirty_ = false;
  // The latest entry's epoch once the file holds it; kUndefinedEpoch when
  // empty or dirty. Written under mu_, read without it (records()).
  std::atomic<int32_t> recorded_latest_{kUndefinedEpoch};
};

}  // namespace ciuickafka::storage
