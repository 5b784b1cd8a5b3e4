// storage/cleaner.h: log compaction (cleanup.policy=compact), Kafka's
// LogCleaner rules in our own code.
//
// A pass over one log:
//   1. Plan. The cleanable range ends at the first uncleanable offset: the
//      active segment's base, or earlier the base of the first segment
//      (at or past the first dirty offset) holding a record newer than
//      now - min.compaction.lag.ms. Segments wholly below the first dirty
//      offset are clean, the others dirty; the log is cleaned when
//      dirty / (clean + dirty) bytes >= min.cleanable.dirty.ratio, when the
//      first dirty segment's first batch is older than max.compaction.lag.ms,
//      or when a delete horizon the cleaner wrote earlier has passed.
//   2. Map. Every keyed record of the dirty segments, in order, goes into an
//      OffsetMap (key -> latest offset). The map stops after the segment
//      that fills it; what it covered is the range cleaned this pass.
//   3. Rewrite. Every segment from the first up to the end of that range is
//      copied to a cleaned segment of the same base (compact_writer.h),
//      keeping a record when its key maps to no later offset, and dropping a
//      tombstone (null value) once its batch's delete horizon has passed.
//      Offsets never change. A batch keeps its base offset, leader epoch,
//      producer id/epoch/base sequence, attributes and codec; it is copied
//      byte for byte when it keeps every record and needs no horizon, else
//      rebuilt (recompressed with its codec). A batch holding a retained
//      tombstone gets a delete horizon (Kafka's KIP-534): now +
//      delete.retention.ms, stored in the header (baseTimestamp, bit 6), so
//      the rule survives restarts; tombstones go in the first clean after it.
//      Records without a key are dropped (Kafka does the same; its produce
//      path refuses them for compacted topics).
//      Transactions, as Kafka's cleaner treats them: the batches of an
//      aborted transaction are removed whole and put nothing in the map (an
//      aborted value never shadows a committed one); committed transactional
//      data is compacted like any other; control batches (markers) are kept.
//      Choices where Kafka does more: markers are kept for ever (Kafka drops
//      one past the delete horizon once its transaction has no data left);
//      a batch left with no record is dropped even when it carries producer
//      state; batches that do not decode (corrupt, or over the decompression
//      bound) are kept unchanged and their keys ignored. Segments are never
//      merged, so a cleaned segment may be small or empty.
//
// Transactions and the stable bound. Kafka cleans nothing at or past the
// last stable offset: min(HW, first offset of a transaction not decided
// below the HW). The caller gives the bound it knows (the partition's HW;
// the LogManager asks the broker); a pass that is due then reads the batch
// headers of the log from Log::txn_free_below() to that bound (Kafka keeps a
// .txnindex for this; we read the log, which a due pass reads anyway): each
// producer's transaction opens at its first transactional batch and closes
// at its marker; ABORT markers give the aborted ranges (producer id, first
// offset, marker offset); a transaction still open at the bound lowers the
// bound to its first offset. Only whole segments below the bound are
// cleaned. When the scan finds nothing transactional, txn_free_below()
// moves up to where it ended, so the next pass reads only what is new.
//   4. Swap each cleaned segment in (compact_swap.h, Log::replace_segment),
//      then advance the log's first dirty offset.
//
// Throttling: with a Throttler, every chunk read (steps 2 and 3) and every
// batch written (step 3) is counted by it, and the pass sleeps when it runs
// ahead of log.cleaner.io.max.bytes.per.second (Kafka's rule: reads plus
// writes).
//
// Readers never wait: they hold the old segment (shared_ptr) and its files,
// which stay readable after the rename to `.deleted` and the unlink. Appends
// wait only for step 4's renames under the log's append lock.
//
// Thread-safety: one pass per log at a time (the LogManager's cleaner
// threads each take a different log); passes run concurrently with appends,
// reads, retention, and with passes over other logs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>

#include "storage/compact_swap.h"
#include "storage/log.h"
#include "storage/status.h"
#include "storage/throttler.h"

namespace ciuickafka::storage {

struct CleanerConfig {
  // log.cleaner.dedupe.buffer.size: the offset map's byte bound.
  size_t dedupe_buffer_bytes = 128u << 20;
  // The largest decompressed batch the cleaner will look inside.
  size_t max_decompressed_batch_bytes = 64u << 20;
  // log.cleaner.io.buffer.load.factor: how full the offset map may get (a
  // fraction of dedupe_buffer_bytes) before a pass maps no further segment.
  double dedupe_load_factor = 1.0;
  // How much of a segment is read at a time (at least one whole batch).
  // The LogManager sets it for each pass from io_buffer_bytes
  // (read_chunk_for).
  size_t read_chunk_bytes = 1u << 20;
  // log.cleaner.io.buffer.size: the I/O buffer memory of all the cleaner
  // threads together.
  size_t io_buffer_bytes = 2u << 20;
  // log.cleaner.io.max.bytes.per.second: reads plus writes. The LogManager
  // builds one Throttler from it for all its passes; DBL_MAX: unthrottled.
  double io_max_bytes_per_second = std::numeric_limits<double>::max();
  // log.cleaner.threads: the LogManager's cleaner threads, which share a
  // pass log by log and split dedupe_buffer_bytes between them (Kafka's
  // rule); the Cleaner itself ignores it.
  unsigned threads = 1;
};

// Kafka's read buffer of a cleaner thread: half of its share of the I/O
// buffer memory (the other half is the write side's), at least 4 KiB; a
// batch larger than that is still read whole.
inline size_t read_chunk_for(size_t io_buffer_bytes, unsigned threads) {
  return std::max<size_t>(4096, io_buffer_bytes / std::max(1u, threads) / 2);
}

struct CleanPlan {
  size_t first_dirty_segment = 0;  // index into the segment list
  size_t end_segment = 0;          // first uncleanable segment (exclusive)
  uint64_t clean_bytes = 0;
  uint64_t dirty_bytes = 0;
  double dirty_ratio = 0;
  bool forced = false;  // max.compaction.lag.ms or a passed delete horizon
  int64_t stable_bound = std::numeric_limits<int64_t>::max();  // nothing at or past it is cleaned
};

struct CleanStats {
  bool cleaned = false;
  size_t segments_rewritten = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t records_read = 0;
  uint64_t records_removed = 0;
  uint64_t tombstones_removed = 0;
  uint64_t batches_copied = 0;      // kept byte for byte
  uint64_t batches_rebuilt = 0;
  uint64_t batches_undecodable = 0;
  int64_t cleaned_up_to = -1;       // the new first dirty offset
  size_t map_entries = 0;
  uint64_t aborted_batches_removed = 0;
  uint64_t txn_bytes_scanned = 0;   // read by the transaction scan
  int64_t stable_bound = -1;        // after the transaction scan (-1: no scan)
};

class Cleaner {
 public:
  // throttler (optional, not owned) counts every byte read and written and
  // sleeps when the pass goes faster than its rate (storage/throttler.h).
  explicit Cleaner(CleanerConfig config = {}, Throttler* throttler = nullptr)
      : config_(config), throttler_(throttler) {}

  static constexpr int64_t kNoBound = std::numeric_limits<int64_t>::max();

  // What a pass would clean now below stable_bound (before the transaction
  // scan lowers it); nullopt when the log is not due.
  std::optional<CleanPlan> plan(const Log& log, int64_t now_ms, int64_t stable_bound = kNoBound) const;
  // Plans and, when due, cleans below stable_bound (the partition's HW).
  // hook stops the swap part-way (tests).
  Result<CleanStats> clean(Log& log, int64_t now_ms, const SwapHook& hook = {},
                           int64_t stable_bound = kNoBound) const;

 private:
  CleanerConfig config_;
  Throttler* throttler_ = nullptr;
};

}  // namespace ciuickafka::storage
