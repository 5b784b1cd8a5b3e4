// storage/segment.h: one log segment: a `.log` file of record batches back
// to back plus its sparse `.index` and `.timeindex` (storage/FORMAT.md).
//
// A segment knows its base offset, its size in bytes, and the largest
// timestamp it holds with that batch's last offset. append() writes batches
// whose offsets the log has already assigned (and which it validated) at the
// end of the file and maintains both indexes by Kafka's rule: when more than
// index_interval_bytes were written since the last index entry, the batch
// about to be indexed gets an offset entry (its last offset, its position)
// and the time index gets (max timestamp so far, its offset). read() returns
// a file slice for sendfile that starts at the batch containing the wanted
// offset and ends on a batch boundary.
//
// Thread-safety: one writer (append, flush, recover, on_become_inactive;
// the log serialises them) and any number of concurrent readers (read,
// find_offset_position, find_offset_for_timestamp, max_timestamp_so_far,
// published_size). Readers only look at bytes below published_size(), which
// the writer advances (release) after the bytes and index entries are in
// place; index lookups and the max-timestamp pair take a short per-segment
// mutex. sync_log() may run on any thread concurrently with the writer (it
// is one fdatasync of the .log: group commit calls it outside the log's
// append lock).
// Concurrent read_at with write_at of other ranges is safe for all three File
// implementations (pread, a per-thread ring, a locked in-memory image).
//
// Index memory (storage/index_cache.h): while the segment is written its
// indexes live in offset_index_ / time_index_, guarded by index_mu_. Once it
// is inactive (on_become_inactive, check_indexes, or release_indexes at log
// open) they are flushed and handed to the IndexCache, which may drop them;
// a lookup then pins them (pin_indexes: a shared_ptr held for that lookup,
// no segment lock held) and on a miss reloads them from the files, one
// reload per segment at a time (load_mu_), verified against a fingerprint
// taken when they were handed over, or rebuilt from the `.log` when the
// files are missing, corrupt or not the same. Lock order: load_mu_, then
// index_mu_, then the cache's mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "storage/fd_cache.h"
#include "storage/index_cache.h"
#include "storage/io/file.h"
#include "storage/lazy_file.h"
#include "storage/offset_index.h"
#include "storage/status.h"
#include "storage/time_index.h"

namespace ciuickafka::storage {

struct SegmentConfig {
  // segment.bytes: roll before an append would take the segment past this.
  // At most INT32_MAX (index positions are 4 bytes).
  uint64_t segment_bytes = 1024 * 1024 * 1024;
  // index.interval.bytes.
  uint32_t index_interval_bytes = 4096;
  // segment.index.bytes, for each of the two indexes.
  uint32_t max_index_bytes = 10 * 1024 * 1024;
  // segment.ms: roll when the active segment's first append is this old.
  int64_t segment_ms = 7LL * 24 * 3600 * 1000;
  // log.preallocate / preallocate: reserve segment_bytes of disk when a
  // segment is created (fallocate KEEP_SIZE; the file size is unchanged).
  bool preallocate = false;
  // Reserve disk a little ahead of the writer (preallocation_due below).
  // Off only for tests that count file-system operations.
  bool preallocate_ahead = true;
  // The LRU that bounds open `.log` files (storage/fd_cache.h); nullptr:
  // FdCache::process_default(). Not owned; must outlive the segments.
  FdCache* fd_cache = nullptr;
  // The byte budget for inactive segments' indexes (storage/index_cache.h);
  // nullptr: IndexCache::process_default(). Not owned; must outlive the segments.
  IndexCache* index_cache = nullptr;
};

// A byte range of a segment file that holds whole batches.
struct FileSlice {
  io::File* file = nullptr;  // valid while keep_open (or its owner) lives
  int fd = -1;               // for sendfile; -1 for in-memory files; as file
  // Holds the file open for the slice's life, even when the FdCache evicts
  // it or the segment is deleted meanwhile (storage/fd_cache.h).
  std::shared_ptr<io::File> keep_open;
  uint64_t position = 0;
  uint64_t length = 0;
  int64_t first_offset = 0;  // base offset of the slice's first batch
};

// One batch of an append as the indexes need it. The log computes these
// while it assigns offsets, so publishing a write never reads the caller's
// buffer again.
struct BatchMeta {
  uint64_t position = 0;  // in the .log file
  uint64_t size = 0;      // 12 + batchLength
  int64_t last_offset = 0;
  int64_t max_timestamp = 0;
};

// What a header scan learns about one batch.
struct BatchLocation {
  uint64_t position = 0;  // where the batch starts in the .log file
  uint64_t size = 0;      // 12 + batchLength
  int64_t base_offset = 0;
  int64_t last_offset = 0;
};

class Segment {
 public:
  // Opens (or, with create, creates: the files must not exist) the three
  // files of the segment at base_offset in dir. Loads the indexes as they
  // are; call recover() or check_indexes() before trusting them.
  static Result<std::unique_ptr<Segment>> open(io::FileSystem& fs, const std::string& dir,
                                               int64_t base_offset, const SegmentConfig& config, bool create);
  ~Segment();

  int64_t base_offset() const { return base_offset_; }
  // The .log file's path when the segment was opened.
  const std::string& path() const { return path_; }
  // Bytes of whole batches readers may see.
  uint64_t published_size() const { return published_size_.load(std::memory_order_acquire); }
  uint64_t size() const { return size_; }  // writer's view (same value between appends)
  // Largest batch maxTimestamp so far and that batch's last offset
  // (kNoTimestamp and the base offset when none). Writer thread only.
  int64_t max_timestamp() const { return max_timestamp_; }
  int64_t offset_of_max_timestamp() const { return offset_of_max_timestamp_; }
  // The same pair, for any thread.
  TimestampOffset max_timestamp_so_far() const;
  // The offset after the last batch, as found by recover() or append();
  // nullopt for a segment opened without recovery and not appended to.
  std::optional<int64_t> next_offset() const { return next_offset_; }

  // Whether a batch of batch_bytes ending at last_offset must go to a new
  // segment: it would take the segment past segment.bytes, an index is full,
  // the first append is segment.ms old, or last_offset does not fit a
  // relative offset. An empty segment never rolls for size or time.
  bool should_roll(uint64_t batch_bytes, int64_t last_offset, int64_t now_ms) const;
  // Starts the segment.ms clock of a reopened non-empty segment (otherwise it
  // starts at the first append).
  void start_roll_clock(int64_t now_ms) {
    if (!first_append_ms_ && size_ > 0) first_append_ms_ = now_ms;
  }

  // The append path in three steps, so that the write itself can be
  // submitted asynchronously (storage/log.h, append_async):
  //   reserve(len)  the writer's size grows by len; returns the position the
  //                 write goes to. Starts the segment.ms clock.
  //   (the caller writes [position, position + len) of log_file())
  //   publish(...)  once that write, and every write reserved before it, has
  //                 completed: index entries for its batches (Kafka's rule),
  //                 max timestamp, then published_size() = end, so readers
  //                 see the batches.
  //   unreserve(p)  a failed write that nothing was reserved after: the size
  //                 goes back to p, so the next append overwrites whatever
  //                 part of the range landed.
  uint64_t reserve(uint64_t len, int64_t now_ms);
  void publish(std::span<const BatchMeta> batches, uint64_t end);
  void unreserve(uint64_t position);

  // Disk reserved ahead of the writer. A buffered append that extends a file
  // into blocks it does not have yet costs ext4 (and XFS) delayed-allocation
  // work on every write and again at writeback; blocks fallocated ahead
  // (KEEP_SIZE, so the size and what readers see are unchanged) skip it.
  // After reserve(): the range the caller should preallocate now (through its
  // ring, or a blocking File::preallocate), or nothing. The reservation is
  // extended by a chunk once the writer is within half a chunk of its end; a
  // chunk is the segment's size so far, at least 64 KiB and at most 16 MiB, and
  // the reservation never passes segment.bytes. So a segment never holds more
  // than 16 MiB it has not written, nor more than it has written (64 KiB for
  // a new one), and trim_preallocation() gives that back once it is inactive.
  struct Range {
    uint64_t offset = 0;
    uint64_t len = 0;
  };
  static constexpr uint64_t kPreallocateMin = uint64_t{64} << 10;
  static constexpr uint64_t kPreallocateMax = uint64_t{16} << 20;
  std::optional<Range> preallocation_due();
  // An inactive segment (no writes will come): frees the blocks reserved past
  // its end (a truncate to its own size). A no-op when nothing is reserved.
  Status trim_preallocation();
  uint64_t reserved_to() const { return reserved_to_; }  // writer's view
  // The three steps with a blocking write (tests, tools): writes batches
  // (already validated, offsets assigned, increasing) at the end of the file;
  // returns the position of the first. On a failed write nothing is
  // published and the size is unchanged.
  Result<uint64_t> append(std::span<const uint8_t> batches, int64_t now_ms);
  // The open .log (reopened through the FdCache when it was evicted); hold
  // the pointer for the duration of one operation (a write in flight).
  Result<std::shared_ptr<io::File>> log_file() const { return log_->get(); }

  // The batch containing offset (the first whose last offset is >= it),
  // looked up in the offset index and then by a scan of batch headers below
  // max_position; nullopt when there is none there. kCorruption for a header
  // that breaks the format.
  Result<std::optional<BatchLocation>> find_offset_position(int64_t offset, uint64_t max_position) const;

  // Whole batches from the one containing start_offset, ending before the
  // first batch whose last offset is >= upper_bound_offset, at most max_bytes
  // long (but at least the first batch when min_one_batch) and below
  // max_position (normally published_size()). nullopt when nothing fits.
  Result<std::optional<FileSlice>> read(int64_t start_offset, uint64_t max_bytes, uint64_t max_position,
                                        int64_t upper_bound_offset, bool min_one_batch) const;

  // Whether read(start_offset, max_bytes, ...) may wait for the disk,
  // asked without reading it (storage/page_cache.h): the indexes are not
  // loaded (a reload reads their files), or the .log's byte at the index
  // position for start_offset, or max_bytes - 1 past it (within the
  // published size), is not in the page cache.
  bool read_may_block(int64_t start_offset, uint64_t max_bytes) const;

  // The first record at or above min_offset, below max_position, whose
  // timestamp is >= target (Kafka's LogSegment.findOffsetByTimestamp): the
  // time index gives where to start, batch headers whose maxTimestamp is
  // below the target are skipped, and the first batch that may hold one is
  // read into memory (decompressed when needed) and its records checked one
  // by one. nullopt when this segment holds none.
  Result<std::optional<TimestampOffset>> find_offset_for_timestamp(int64_t target, int64_t min_offset,
                                                                   uint64_t max_position) const;
  // The offset of the first record of the batch holding `offset` whose
  // timestamp is `timestamp` (the exact record behind max_timestamp_so_far);
  // the batch's last offset when none matches.
  Result<int64_t> find_record_with_timestamp(int64_t offset, int64_t timestamp, uint64_t max_position) const;

  // Scans the whole file, validating every batch (length, magic, CRC,
  // offsets increasing from the base), truncates the file at the first
  // invalid byte and rebuilds both indexes. Returns the bytes truncated.
  Result<uint64_t> recover();
  // Checks both indexes (sanity_check); rebuilds them by recover() when
  // either fails, then release_indexes(). For segments that are not the
  // active one.
  Status check_indexes();
  // The segment will not be written again: flushes the indexes when they
  // changed and hands them to the IndexCache (which may unload them; lookups
  // reload them). Writer thread; idempotent. When the flush fails they stay
  // loaded and the error is returned (lookups stay correct). recover() takes
  // them back.
  Status release_indexes();
  // Whether the IndexCache holds (or dropped) the indexes rather than the
  // segment itself.
  bool indexes_released() const;
  // Bytes of index entries the segment itself holds: the active segment's;
  // 0 once released.
  size_t owned_index_bytes() const;
  // For the last segment of a log that shut down cleanly: trusts the file
  // and the indexes, and finds the next offset (and the max timestamp of the
  // batches after the last index entry) by a scan of batch headers from the
  // last offset index entry. kCorruption when a header breaks the format
  // (the caller then runs recover()).
  Status load_tail();
  // Log truncation (Kafka's LogSegment.truncateTo): cuts the file before the
  // first batch whose last offset is >= offset (batches stay whole), drops
  // the index entries at or above that batch, and finds the next offset and
  // the largest timestamp again (the time index's last entry, then a header
  // scan from the last offset index entry). The segment takes its indexes
  // back from the IndexCache: it is the active segment afterwards. Writer
  // only, with no write reserved. Returns the bytes cut; nothing is synced
  // (the log flushes).
  Result<uint64_t> truncate_to(int64_t offset, int64_t now_ms);
  // How many times recover() ran (open-time statistics).
  uint64_t recover_count() const { return recover_count_; }

  // fdatasync of the .log, then both indexes flushed (written, trimmed,
  // fdatasynced).
  Status flush();
  // fdatasync of the .log only: what group commit needs (indexes of
  // segments past the recovery point are rebuilt by recovery). Any thread.
  Status sync_log();
  // The segment stops being the active one: the time index gets its final
  // entry (max timestamp so far), everything is flushed, and the indexes are
  // released to the IndexCache.
  Status on_become_inactive();
  Status close();

  // For tests and tools: copies of the indexes (reloaded when unloaded;
  // aborts with a message when they cannot be loaded or rebuilt).
  OffsetIndex offset_index() const;
  TimeIndex time_index() const;
  // Whether the .log is held open by the FdCache now.
  bool file_cached() const { return log_->cached(); }

  // The time index's final entry: the largest timestamp so far and its
  // offset (ListOffsets reads a trusted index's last entry as the segment's
  // max timestamp). Written when a segment rolls (a deferred roll writes it
  // alone, the flush follows: Log::set_roll_sync) and when recovery
  // rebuilds it. Writer only.
  Status index_max_timestamp();

 private:
  Segment(int64_t base, SegmentConfig config, std::unique_ptr<LazyFile> log, OffsetIndex oi, TimeIndex ti,
          uint64_t size);
  // The open .log (reopened through the FdCache when it was evicted); hold
  // it for the duration of one operation.
  Result<std::shared_ptr<io::File>> file() const { return log_->get(); }
  // The indexes for one lookup: the segment's own under index_mu_ (held by
  // `lock`), or the IndexCache's, kept alive by `held`. Keep it only for the
  // lookup, never across I/O on the .log.
  struct IndexPin {
    std::unique_lock<std::mutex> lock;
    std::shared_ptr<const SegmentIndexes> held;
    const OffsetIndex* offset = nullptr;
    const TimeIndex* time = nullptr;
  };
  Result<IndexPin> pin_indexes() const;
  // Reload of released indexes: from the files when they hold exactly what
  // was released, else rebuilt from the .log (rebuild_indexes).
  Result<std::shared_ptr<const SegmentIndexes>> load_indexes() const;
  Result<std::shared_ptr<const SegmentIndexes>> rebuild_indexes() const;
  // Writer: takes released indexes back (reopened from the files) before
  // changing them.
  Status reclaim_indexes();
  Result<std::optional<BatchLocation>> find_position(io::File& f, int64_t offset, uint64_t max_position) const;
  // Index bookkeeping for one batch written at position (append and recover).
  void index_batch(uint64_t position, uint64_t size, int64_t last_offset, int64_t max_timestamp);
  Result<BatchLocation> read_header(io::File& f, uint64_t position, uint64_t max_position) const;
  // The end of the last whole batch in [from, budget_end], scanning 12-byte
  // headers from the furthest index entry at or below budget_end.
  Result<uint64_t> last_boundary(io::File& f, uint64_t from, uint64_t budget_end, uint64_t max_position) const;

  int64_t base_offset_;
  SegmentConfig config_;
  std::string path_;
  std::unique_ptr<LazyFile> log_;
  io::FileSystem* fs_ = nullptr;
  IndexCache* index_cache_ = nullptr;
  uint64_t index_key_ = 0;
  std::string index_path_, time_index_path_;
  mutable std::mutex load_mu_;   // one reload of released indexes at a time
  mutable std::mutex index_mu_;  // guards both indexes against concurrent lookups, and released_
  // Owned while the segment is written; empty placeholders once released.
  OffsetIndex offset_index_;
  TimeIndex time_index_;
  bool released_ = false;  // written by the writer under index_mu_
  // What was released: a reload from the files must find exactly this.
  struct Fingerprint {
    size_t entries = 0;
    uint32_t crc = 0;
    bool operator==(const Fingerprint&) const = default;
  };
  Fingerprint released_offset_, released_time_;
  uint64_t size_ = 0;
  // Where the blocks preallocated for the writer end (>= size_ once any were;
  // the writer's, like size_). Not persisted: a reopened segment starts at
  // its size (a range preallocated again is a cheap no-op).
  uint64_t reserved_to_ = 0;
  std::atomic<uint64_t> published_size_{0};
  // The offset after the last published batch, stored before the
  // published_size_ it goes with (so a reader that loads it after
  // published_size() sees it at least as new); -1 when unknown (opened
  // without recovery, not appended to yet, or being truncated). read() needs
  // no scan for an upper bound at or past it.
  std::atomic<int64_t> published_next_offset_{-1};
  uint64_t bytes_since_index_entry_ = 0;
  int64_t max_timestamp_ = kNoTimestamp;  // written under index_mu_
  int64_t offset_of_max_timestamp_;       // written under index_mu_
  std::optional<int64_t> next_offset_;
  std::optional<int64_t> first_append_ms_;
  uint64_t recover_count_ = 0;
};

}  // namespace ciuickafka::storage
