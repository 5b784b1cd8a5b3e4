// storage/log.h: one partition's log: the segments of a `<topic>-<partition>`
// directory, the append path (validate, assign offsets, roll, write) and the
// read path (file slices for sendfile).
//
// Offsets: the log end offset (LEO) is the readable end: readers see
// offsets below it and never a partly written batch. An append assigns
// offsets from next_offset (the next offset to assign) and reserves its
// bytes at the end of the active segment under the append lock; the write
// itself then runs outside the lock, so assigned offsets may run ahead of
// the LEO while writes are in flight.
//
// Writes through io_uring (append_async): the write of an append is queued on
// the caller's Ring (storage/io/ring.h: one per network thread, completions
// signalled on an eventfd the thread watches), so no network thread blocks
// on write(2). Writes of one log submitted from several threads may complete
// in any order; they are published in offset order: a completed write
// becomes readable (indexes, segment size, LEO) only once every write
// reserved before it has completed, and its callback runs then, on the
// thread whose completion published it. append() is the same path with a
// blocking write (tests, tools, the internal topics' coordinators).
// A failed write that nothing was reserved after is undone (the next append
// overwrites its range); one with later writes in flight leaves a hole, so
// it breaks the log: that append and every later one fail, and new appends
// are refused until the broker reopens the log (recovery truncates at the
// hole). Kafka takes a log directory offline on the same error.
//
// Recovery (open): with the clean-shutdown hint every segment is trusted
// (index sanity checks only; the last segment's end is found by a header
// scan from its last index entry). Otherwise every segment that may hold an
// offset at or above the recovery point (the checkpointed one, 0 when none)
// is scanned batch by batch (length, magic, CRC, increasing offsets), cut at
// the first invalid byte, and its indexes rebuilt; when a segment that is
// not the last is cut, the segments after it are deleted (their offsets
// would leave a gap). Older segments only get an index sanity check.
// Leftover `.deleted` files are removed.
//
// Durability: the recovery point is the offset below which every record is
// fdatasync'd. flush() (the segments past the recovery point, indexes too)
// and sync_data() (their .log only, outside the append lock: what group
// commit uses, see storage/group_commit.h; prepare_sync/finish_sync are its
// two halves for a caller that submits the fdatasyncs through a Ring)
// advance it, up to the LEO (a write still in flight is not durable).
// flush.messages is honoured when writes are published; flush.ms by
// maybe_flush(), which the LogManager's tick calls. A segment that rolls
// while writes to it are in flight is finished (final time index entry,
// flush) when its last write is published. With set_roll_sync (every
// LogManager log) a roll fsyncs nothing on the appending thread: the
// segment's `.unfinished` marker covers it until a background sync
// finishes it (see set_roll_sync).
//
// Deletion: advance_log_start_offset (DeleteRecords) and apply_retention
// (retention.ms / retention.bytes) drop whole segments, never the active
// one: the segment leaves the published list first, its files are renamed
// to `.deleted`, and remove_deleted_files() unlinks them once
// file.delete.delay.ms has passed since the first call that saw them.
// Readers holding slices of a deleted segment keep reading it (the file
// stays open until the last slice goes).
//
// Compaction (storage/cleaner.h) writes a cleaned copy of a segment beside
// it and calls replace_segment(), which swaps it in under the append lock
// (storage/compact_swap.h): the old segment's files become `.deleted` (and go
// the way retention's do), the list is republished with the new segment in
// the old one's place. open() first completes or discards a swap that a
// crash interrupted (recover_swap_files) and rescans the swapped segments.
//
// Leader epochs (storage/leader_epoch_cache.h): the log owns the cache
// behind `leader-epoch-checkpoint`. open() loads it, or, when the file is
// missing or corrupt and the directory held segments, rebuilds it from the
// partitionLeaderEpoch of every batch (a header scan of every segment) and
// writes it; then entries at or past the recovered LEO are dropped and the
// first is moved up to the log start (Kafka's load). A leader append
// assigns (leader_epoch, base offset) when that is new, a follower append
// assigns each batch's own (partitionLeaderEpoch, baseOffset); both write
// the checkpoint before the data (a crash leaves at most an entry at or past
// the LEO, which the next open drops), and an append whose checkpoint write
// fails is refused. Truncation writes it after the data is cut and synced.
// Deleting from the start (DeleteRecords, retention) calls
// truncate_from_start.
//
// Replication (storage/log_replica.cc): append_as_follower writes a
// leader's batches as they are (offsets and epochs kept) through the same
// reserve/write/publish path; truncate_to and truncate_fully_and_start_at
// cut the log back for a follower. Truncation is refused while any append
// is in flight (the replica fetcher truncates only between its appends).
//
// Thread-safety: appends, flushes and deletions are serialised by a mutex
// whose critical section is the validation, offset assignment and write of
// one append (or one flush / one deletion). read(), offset_for_timestamp,
// max_timestamp, size_bytes and the offset accessors never take it: they
// load the published LEO (an atomic) and a snapshot of the segment list (a
// shared_ptr copied under a separate, tiny mutex), and each segment bounds
// reads by its own published size. Slices keep their segment alive.
// sync_data runs outside the append lock (appends go on while it syncs).
// Every method may be called from any thread; the broker appends from its
// network threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/compact_swap.h"
#include "storage/io/file.h"
#include "storage/io/ring.h"
#include "storage/leader_epoch_cache.h"
#include "storage/segment.h"
#include "storage/status.h"
#include "storage/txn_index.h"

namespace ciuickafka::storage {

// Kafka's "never" for flush.messages / flush.ms (Long.MAX_VALUE).
inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// A topic's log settings (Kafka's topic-level names). Segment-level settings
// (segment.bytes, segment.ms, index.interval.bytes, segment.index.bytes,
// preallocate) apply to segments created after a config change.
struct LogConfig {
  SegmentConfig segment;
  int64_t flush_messages = kNever;               // flush.messages
  int64_t flush_ms = kNever;                     // flush.ms
  int64_t retention_ms = 7LL * 24 * 3600 * 1000; // retention.ms; -1: unlimited
  int64_t retention_bytes = -1;                  // retention.bytes; -1: unlimited
  int64_t file_delete_delay_ms = 60'000;         // file.delete.delay.ms
  // cleanup.policy: "delete", "compact" or "compact,delete". Retention
  // applies only with delete, the cleaner only with compact.
  bool cleanup_delete = true;
  bool cleanup_compact = false;
  double min_cleanable_dirty_ratio = 0.5;        // min.cleanable.dirty.ratio
  int64_t min_compaction_lag_ms = 0;             // min.compaction.lag.ms
  int64_t max_compaction_lag_ms = kNever;        // max.compaction.lag.ms
  int64_t delete_retention_ms = 86'400'000;      // delete.retention.ms
};

// What the LogManager knows when it opens a log.
struct LogOpenOptions {
  // The directory's clean-shutdown marker was present: skip the scan.
  bool clean_shutdown = false;
  // From recovery-point-offset-checkpoint; none: scan every segment.
  std::optional<int64_t> recovery_point;
  // From log-start-offset-checkpoint; none: the first segment's base.
  std::optional<int64_t> log_start_offset;
  // From cleaner-offset-checkpoint: the first offset not yet cleaned.
  std::optional<int64_t> cleaner_checkpoint;
};

struct AppendResult {
  int64_t base_offset = 0;               // first offset assigned
  int64_t last_offset = 0;               // last offset assigned
  int64_t max_timestamp = kNoTimestamp;  // largest batch maxTimestamp
  int64_t offset_of_max_timestamp = 0;   // last offset of the batch holding it
  int64_t segment_base_offset = 0;       // the segment written to
  uint64_t position = 0;                 // byte position there of the first batch
};

struct LogSlice {
  std::shared_ptr<const Segment> segment;  // keeps file alive
  FileSlice slice;
};

struct ReadResult {
  std::vector<LogSlice> slices;  // in offset order, each whole batches
  uint64_t bytes = 0;            // total length
};

class Log : public std::enable_shared_from_this<Log> {
 public:
  using SegmentList = std::vector<std::shared_ptr<Segment>>;
  // An asynchronous append's outcome: ok once its batches are written and
  // readable; the write's error otherwise.
  using AppendCallback = std::function<void(Status)>;
  // What a sync must cover: the LEO when it was planned and the files of the
  // segments that may hold records at or above the recovery point.
  struct SyncPlan {
    int64_t target = 0;
    std::vector<std::shared_ptr<io::File>> files;
    // Rolled segments below target still to be finished (deferred rolls,
    // set_roll_sync): their indexes are flushed, and their `.unfinished`
    // markers removed, before the recovery point passes them.
    std::vector<std::shared_ptr<Segment>> finishing;
    uint64_t truncations = 0;  // truncations_ when planned
  };
  // Deferred rolls: called (under the append lock; it must only queue
  // work) with the offset a background sync must cover for a rolled
  // segment to be finished: the LogManager passes it to group commit.
  using RollSync = std::function<void(std::shared_ptr<Log> log, int64_t offset)>;

  // Opens the log in dir (created, with one empty segment at offset 0, when
  // it holds no segment). now_ms starts the active segment's segment.ms clock.
  static Result<std::unique_ptr<Log>> open(io::FileSystem& fs, const std::string& dir,
                                           const LogConfig& config, int64_t now_ms,
                                           const LogOpenOptions& options = {});
  ~Log();
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  // Appends one or more v2 record batches (the records of a produce
  // request). Every batch is checked first (framing, magic, CRC): any error
  // is kCorruptRecords and nothing is written. Then each batch's baseOffset
  // is rewritten to the next offset and its partitionLeaderEpoch to
  // leader_epoch (both outside the CRC; the caller's buffer is modified),
  // the active segment rolls when it must, and the batches are written.
  // Returns once the batches are readable (or failed): after its own
  // blocking write and, when writes reserved before it are still in flight
  // on other threads, after those complete too. Never call it on a thread
  // whose own Ring holds a write to this log (it would wait for a
  // completion only that thread can reap). Options: see append_async.
  Result<AppendResult> append(std::span<uint8_t> records, int32_t leader_epoch, int64_t now_ms,
                              bool validated = false);
  // The same, with the write queued on ring (the calling thread's; the
  // caller flushes it) and this result returned at once: offsets are
  // assigned, nothing is readable yet. done(status) runs exactly once, when
  // the write and every earlier one have completed (on the thread that
  // reaped the last of them) or with the error; records must stay valid and
  // unchanged until then. An error returned here means nothing was queued
  // and done is never called. With ring == nullptr, or for an in-memory
  // file, the write is a blocking one and done runs before this returns.
  // validated: the caller already checked every batch's framing, magic and
  // CRC (the broker's produce path does), so the log only re-reads headers.
  // The log must be owned by a shared_ptr (the write in flight holds one).
  Result<AppendResult> append_async(std::span<uint8_t> records, int32_t leader_epoch, int64_t now_ms,
                                    io::Ring* ring, AppendCallback done, bool validated = false);

  // --- replication (storage/log_replica.cc) ---
  // A follower's append of batches fetched from the leader, written exactly
  // as given: baseOffset and partitionLeaderEpoch are not rewritten (the
  // buffer is not modified). Checks framing, magic and CRC (unless
  // validated): kCorruptRecords. Offsets: the first batch's base offset
  // must be >= next_offset() and each batch's base above the previous
  // batch's last offset, else kOffsetOutOfRange and nothing is written
  // (Kafka's UnexpectedAppendOffsetException / OffsetsOutOfOrderException;
  // the fetcher then marks the partition failed). A base offset above
  // next_offset() is accepted, as Kafka does: a compacted leader log has
  // gaps between batches. Each batch's (partitionLeaderEpoch, baseOffset)
  // goes to the epoch cache (batches with a negative epoch carry none).
  // Rolls, writes and publishes as append() / append_async() do.
  Result<AppendResult> append_as_follower(std::span<uint8_t> records, int64_t now_ms, bool validated = false);
  Result<AppendResult> append_as_follower_async(std::span<uint8_t> records, int64_t now_ms, io::Ring* ring,
                                                AppendCallback done, bool validated = false);
  // Removes every batch holding an offset at or above `offset` (Kafka's
  // UnifiedLog.truncateTo): segments whose base is above it are deleted
  // (`.deleted`, as retention does; highest first, so a crash leaves a
  // prefix), the segment holding it is cut before the first batch whose
  // last offset is >= offset (batches stay whole; its indexes are cut and
  // it becomes the active segment), the epoch cache is truncated from the
  // new end, and the recovery point, log start and first dirty offset are
  // lowered to it. Returns the new LEO: offset, or the base of the batch
  // that held it when offset fell inside a batch (Kafka would report
  // offset). offset >= the LEO changes no data (the epoch cache is still
  // truncated at the LEO, as Kafka does). An offset below the first
  // segment's base truncates fully and starts at offset. Refused
  // (kInvalidArgument) while appends are in flight, on a closed or broken
  // log, or for a negative offset. A reader racing a truncation may get a
  // slice of bytes that are gone (a short read); readers that start after
  // it returns see only the truncated log. The cut segment continues as a
  // new Segment object (a compaction that read it before the cut cannot
  // swap the old contents back in: replace_segment refuses the old object).
  // The recovery point it lowers must reach recovery-point-offset-checkpoint
  // before more is appended: call LogManager::truncate_to, which writes the
  // checkpoints right after.
  Result<int64_t> truncate_to(int64_t offset, int64_t now_ms);
  // Deletes every segment and starts over with one empty segment at offset
  // (Kafka's truncateFullyAndStartAt): LEO, log start, recovery point =
  // offset; the epoch cache is cleared. The same refusals as truncate_to.
  // A crash part-way leaves a prefix of the old log or an empty one.
  Status truncate_fully_and_start_at(int64_t offset, int64_t now_ms);
  // Becoming leader (Kafka's maybeAssignEpochStartOffset): records that
  // epoch starts at start_offset (normally the LEO).
  Status assign_epoch_start_offset(int32_t epoch, int64_t start_offset);
  // The same at the end of everything appended so far, writes in flight
  // included (next_offset(), taken under the append lock, so no append
  // lands between the read and the assignment), when epoch is newer than
  // the cache's latest; returns that offset. A leader that starts an epoch
  // at the readable LEO while a write of the old epoch is in flight would
  // put that write after the new epoch's start, and its followers would
  // truncate it and fetch it back forever.
  Result<int64_t> assign_epoch_start_at_end(int32_t epoch);
  // The epoch cache (reads only; the log changes it).
  const LeaderEpochCache& leader_epochs() const { return *epochs_; }
  // OffsetForLeaderEpoch: the cache's answer against the current LEO.
  EpochEndOffset end_offset_for_epoch(int32_t requested_epoch) const {
    return epochs_->end_offset_for(requested_epoch, log_end_offset());
  }
  // Whether open() rebuilt the epoch cache from the batches (the checkpoint
  // was missing or corrupt).
  bool leader_epochs_rebuilt() const { return epochs_rebuilt_; }

  // Whole batches from the one containing offset, below
  // min(upper_bound_offset, LEO) (a batch is returned only when its last
  // offset is below the bound), max_bytes in total but at least one batch
  // when any is readable, possibly spanning segments. Empty at the end;
  // kOffsetOutOfRange below the log start or above the LEO.
  Result<ReadResult> read(int64_t offset, uint64_t max_bytes,
                          int64_t upper_bound_offset = std::numeric_limits<int64_t>::max()) const;
  // Whether that read may wait for the disk (Segment::read_may_block of the
  // segment holding offset), asked without reading it: a network thread
  // asks before it reads, and leaves a read that may block to a thread that
  // may (broker/handlers/fetch.cc). False when there is nothing to read.
  bool read_may_block(int64_t offset, uint64_t max_bytes,
                      int64_t upper_bound_offset = std::numeric_limits<int64_t>::max()) const;

  // ListOffsets by timestamp: the offset and timestamp of the first record
  // at or above the log start whose timestamp is >= target_ms, exact to the
  // record (compressed batches are decompressed to look inside). {-1, -1}
  // when there is none (Kafka's answer).
  Result<TimestampOffset> offset_for_timestamp(int64_t target_ms) const;
  // ListOffsets MAX_TIMESTAMP: the largest timestamp in the log and the
  // offset of the first record carrying it; {-1, -1} for a log without
  // timestamps.
  TimestampOffset max_timestamp() const;

  // DeleteRecords: records below offset become unreadable (reads there are
  // kOffsetOutOfRange) and whole segments below it are deleted. offset must
  // not pass the LEO (the caller bounds it by the high watermark); an offset
  // at or below the current start is a no-op.
  Status advance_log_start_offset(int64_t offset);
  // Deletes the oldest segments (never the active one) whose largest
  // timestamp is older than now_ms - retention.ms, then, while the log is
  // larger than retention.bytes, the oldest ones whose removal keeps it at
  // or above that size (Kafka's rules). Returns how many were deleted.
  // upper_bound (asked only when some segment is due): a segment is deleted
  // only when the next one starts at or below it (Kafka bounds retention by
  // the HW; the broker passes the last stable offset, so retention never
  // deletes an open transaction's start).
  Result<size_t> apply_retention(int64_t now_ms, const std::function<int64_t()>& upper_bound = {});
  // Unlinks `.deleted` files whose file.delete.delay.ms has passed since the
  // first call that saw them; returns how many files went.
  size_t remove_deleted_files(int64_t now_ms);
  // flush.ms: flushes when unflushed data exists and the last flush is at
  // least flush.ms old.
  Status maybe_flush(int64_t now_ms);

  // fdatasync of every segment past the recovery point (the active one,
  // rolled ones not yet finished) and their indexes; finishes those rolls.
  // Advances the recovery point to the LEO.
  Status flush();
  // fdatasync of the active segment's .log only, without holding the append
  // lock (appends continue meanwhile). Returns the offset below which every
  // record is now durable (the LEO when it started). A failed sync is sticky:
  // every later call returns the same error (after a failed fdatasync the
  // kernel may have dropped the dirty pages; nothing can be promised).
  Result<int64_t> sync_data();
  // sync_data in two halves, for a caller that issues the fdatasyncs itself
  // (through a Ring): the plan (nullopt when the recovery point already
  // covers the LEO), then, once every file of the plan was synced with
  // `synced` as the outcome, the durable offset or the (sticky) error.
  Result<std::optional<SyncPlan>> prepare_sync();
  Result<int64_t> finish_sync(const SyncPlan& plan, const Status& synced);
  // Flushes the active segment; appends and flushes fail afterwards. The
  // segments' files close when their last reference goes (the log's, and
  // any reader's slices), never under a reader.
  Status close();

  const std::string& dir() const { return dir_; }
  io::FileSystem& file_system() const { return fs_; }
  int64_t log_start_offset() const { return log_start_offset_.load(std::memory_order_acquire); }
  int64_t log_end_offset() const { return log_end_offset_.load(std::memory_order_acquire); }
  // The next offset an append will get: the LEO plus the offsets of writes
  // in flight.
  int64_t next_offset() const {
    std::lock_guard lock(append_mu_);
    return next_offset_;
  }
  // Offsets below this are durable (flushed).
  int64_t recovery_point() const { return recovery_point_.load(std::memory_order_acquire); }
  // Bytes cut off by open()'s recovery, and how many segments it scanned.
  uint64_t recovered_truncated_bytes() const { return truncated_bytes_; }
  uint64_t recovered_segments() const { return recovered_segments_; }
  // Total bytes of the published segments, and their number.
  uint64_t size_bytes() const;
  size_t segment_count() const { return segments()->size(); }
  LogConfig config() const;
  // New settings: retention and flush at once, segment settings from the next roll.
  void update_config(const LogConfig& config);
  // A snapshot of the segments in base-offset order (tests, tools, retention).
  std::shared_ptr<const SegmentList> segments() const;

  // Deferred rolls (the LogManager sets this on every log it opens). Without
  // it a roll fsyncs the old segment and its indexes before the new one
  // takes writes (on the appending thread). With it, a roll only writes the
  // old segment's final time-index entry and its `.unfinished` marker
  // (durable before the new segment exists, so that recovery tells a tail
  // the crash lost from a gap a compacted leader's log may have) and asks
  // for a background sync; that sync (prepare_sync/finish_sync, group
  // commit's thread) fdatasyncs the segment, flushes its indexes, removes
  // the marker, and only then lets the recovery point pass it. Set before
  // the first append.
  void set_roll_sync(RollSync fn);
  // Called after each roll (under the append lock: it must only queue
  // work) with the new active segment's base offset. The LogManager sets
  // it on every log it opens, for its roll listener. Set before the first
  // append.
  using Rolled = std::function<void(int64_t new_base_offset)>;
  void set_on_roll(Rolled fn);
  // The base of the first rolled segment not finished yet (kMaxOffset when
  // none): the cleaner stops below it, so a segment it rewrites never has
  // a marker that could make recovery take its gaps for a lost tail.
  int64_t first_unfinished_base() const;

  // --- compaction (storage/cleaner.h) ---
  // Step 3 of the swap (storage/compact_swap.h): old's files become
  // `.deleted`, the `.swap` files of its base take their final names, and
  // the cleaned segment replaces old in the published list, all under the
  // append lock. kNotFound when old has left the list meanwhile (retention,
  // DeleteRecords) or is the active segment; the caller then removes its
  // swap files. hook: tests stop the swap part-way, as a crash would.
  Status replace_segment(const std::shared_ptr<Segment>& old, const SwapHook& hook = {});
  // The first offset the cleaner has not cleaned (the log start until the
  // first clean; from cleaner-offset-checkpoint after a restart).
  int64_t first_dirty_offset() const { return std::max(first_dirty_offset_.load(), log_start_offset()); }
  void set_first_dirty_offset(int64_t offset) { first_dirty_offset_.store(offset); }
  // The earliest delete horizon of a batch the cleaner kept with tombstones
  // (kNever when none): once it passes, the log is worth cleaning again.
  int64_t earliest_delete_horizon() const { return earliest_delete_horizon_.load(); }
  void set_earliest_delete_horizon(int64_t ms) { earliest_delete_horizon_.store(ms); }
  // The cleaner's transaction scan starts at txn_free_below(): below it the
  // log holds no transactional and no control batch (the log start until a
  // scan proved more). A truncation lowers it and bumps the generation, so
  // that a scan that raced with it cannot raise it again.
  struct TxnFreeHint {
    int64_t below = 0;
    uint64_t generation = 0;
  };
  TxnFreeHint txn_free_hint() const;
  // Raises the hint to offset unless a truncation came after hint was read.
  void raise_txn_free_below(const TxnFreeHint& read, int64_t offset);

  // The aborted-transaction index (storage/txn_index.h): one `.txnindex`
  // per segment, written by the producer state (which knows the open
  // transactions) and kept with its segment by retention, truncation
  // (entries at or past the cut go) and deletion. Appends are not synced:
  // sync_aborted_txns() makes them durable (the producer state calls it
  // before it writes a snapshot that covers them; a load trusts no entry at
  // or past its snapshot and rebuilds those from the log).
  // Appends e to the file of the segment holding e.last_offset (nothing when
  // no segment holds it any more).
  Status append_aborted_txn(const TxnIndexEntry& e);
  // Every segment's entries whose last_offset is below end, in offset order.
  Result<std::vector<TxnIndexEntry>> aborted_txns_below(int64_t end) const;
  // Removes the entries whose last_offset is at or past offset.
  Status truncate_aborted_txns(int64_t offset);
  // fsyncs the files appended to since the last call (and the directory
  // when one was created).
  Status sync_aborted_txns();

 private:
  struct Deleted {
    std::vector<std::string> paths;
    std::optional<int64_t> seen_ms;  // first remove_deleted_files() that saw it
  };

  // An append whose bytes are reserved and whose write may be in flight.
  struct PendingWrite {
    std::shared_ptr<Segment> segment;
    uint64_t position = 0;
    uint64_t length = 0;
    int64_t base_offset = 0;    // first offset assigned
    int64_t end_offset = 0;     // last offset + 1
    int64_t reserved_from = 0;  // next_offset_ before it (below base_offset after a follower's gap)
    std::vector<BatchMeta> batches;
    std::optional<Segment::Range> preallocate;  // blocks to reserve ahead with the write
    bool written = false;     // its write completed (status says how)
    Status status;
    bool finished = false;    // published or failed; outcome says which
    Status outcome;
    AppendCallback done;
  };
  using Ready = std::vector<std::pair<AppendCallback, Status>>;
  // How reserve() treats the batches: a leader append rewrites offsets and
  // stamps leader_epoch; a follower append checks and keeps both.
  struct AppendMode {
    bool follower = false;
    int32_t leader_epoch = -1;
  };

  Log(io::FileSystem& fs, std::string dir, LogConfig config);
  Status load(int64_t now_ms, const LogOpenOptions& options);
  Status roll(int64_t new_base_offset);
  Status flush_locked();
  // Checks, assigns offsets, rolls, reserves; queues the write as pending.
  Result<std::shared_ptr<PendingWrite>> reserve(std::span<uint8_t> records, AppendMode mode, int64_t now_ms,
                                                bool validated, AppendResult* r);
  // Offsets and epochs of the batches (rewritten or checked, by mode); the
  // epoch cache entries they need. append_mu_ held.
  Status assign_offsets(std::span<const std::span<uint8_t>> batches, std::span<uint8_t> records,
                        AppendMode mode, PendingWrite* w, AppendResult* r, std::vector<EpochEntry>* epochs);
  // The two write paths, shared by leader and follower appends.
  Result<AppendResult> append_blocking(std::span<uint8_t> records, AppendMode mode, int64_t now_ms,
                                       bool validated);
  Result<AppendResult> append_queued(std::span<uint8_t> records, AppendMode mode, int64_t now_ms,
                                     io::Ring* ring, AppendCallback done, bool validated);
  // open(): the epoch cache from its checkpoint or the batches, made
  // consistent with the recovered log.
  Status load_leader_epochs(const SegmentList& list, bool new_log);
  Result<std::vector<EpochEntry>> scan_leader_epochs(const SegmentList& list) const;
  // Truncation's refusals (append_mu_ held).
  Status check_truncatable_locked(int64_t offset) const;
  Result<int64_t> truncate_locked(int64_t offset, int64_t now_ms);
  Status truncate_fully_locked(int64_t offset, int64_t now_ms);
  // Renames the files of list[from, to) to `.deleted` (highest first when
  // asked) and queues them for removal; the first error is returned, the
  // other segments are still tried.
  Status retire_segments(const SegmentList& list, size_t from, size_t to, bool highest_first);
  // Renames a segment's three files to `.deleted`, recording them in d.
  Status retire_segment_files(int64_t base_offset, Deleted* d);
  // A write completed: publishes, in offset order, every completed write at
  // the front of pending_, then runs their callbacks (outside the lock).
  void complete(const std::shared_ptr<PendingWrite>& w, Status s);
  void publish_ready_locked(Ready* ready);
  bool has_pending_locked(const Segment* s) const;
  // "<base>.unfinished": the segment at base rolled (deferred, or with
  // writes in flight) and has not been finished since (roll(),
  // publish_ready_locked, finish_sync, flush_locked, load()).
  static constexpr std::string_view kUnfinishedSuffix = ".unfinished";
  std::string unfinished_marker_path(int64_t base_offset) const;
  Status remove_marker_if_present(const std::string& path);
  // Deferred rolls: unfinished_ loses the segments no longer in the list
  // (retired, truncated) and their markers go (append_mu_ and finish_mu_
  // held).
  void forget_unfinished_locked(const SegmentList& now);
  // After flush_locked synced everything: finishes every unfinished segment.
  Status finish_all_unfinished_locked();
  // Drops the first n segments (append_mu_ held; never the active one).
  Status delete_oldest_segments(size_t n);
  // How many of the oldest segments retention.ms / retention.bytes make due
  // (never the active one).
  size_t due_for_retention_locked(int64_t now_ms, const SegmentList& list) const;
  // Truncation: producer state snapshots (`<offset>.snapshot`, written by
  // the broker's producer state) past the new end describe a history that
  // is gone (Kafka deletes them on truncation too).
  Status remove_producer_snapshots_above(int64_t offset);
  Status remove_segment_files(int64_t base_offset);
  void publish_segments(std::shared_ptr<const SegmentList> list);

  io::FileSystem& fs_;
  const std::string dir_;

  mutable std::mutex append_mu_;  // serialises append, flush, roll, close, deletion
  // Serialises the .txnindex files' changes (taken after append_mu_ when both are).
  mutable std::mutex txn_index_mu_;
  std::vector<std::string> txn_index_unsynced_;  // under txn_index_mu_
  bool txn_index_dir_unsynced_ = false;           // under txn_index_mu_
  // Under txn_index_mu_: per segment base, the valid entries of its
  // .txnindex (count and last marker offset), read once, so an append
  // does not reread the file; dropped when the file is cut or retired.
  struct TxnIndexTail {
    uint64_t count = 0;
    int64_t last_offset = -1;
  };
  std::unordered_map<int64_t, TxnIndexTail> txn_index_tails_;
  std::condition_variable finished_cv_;  // a pending write finished (append() waits)
  LogConfig config_;              // under append_mu_
  int64_t next_offset_ = 0;       // under append_mu_: the next offset to assign
  bool closed_ = false;           // under append_mu_
  // Appends reserved and not yet published, in offset order.
  std::deque<std::shared_ptr<PendingWrite>> pending_;  // under append_mu_
  // A write failed with later writes in flight: appends at or above
  // broken_from_ fail with broken_, new ones are refused.
  Status broken_;                 // under append_mu_
  int64_t broken_from_ = 0;       // under append_mu_
  int64_t last_flush_ms_ = 0;     // under append_mu_
  uint64_t truncated_bytes_ = 0;
  uint64_t recovered_segments_ = 0;
  std::unique_ptr<LeaderEpochCache> epochs_;  // set by load()
  bool epochs_rebuilt_ = false;

  // Deferred rolls (set_roll_sync): rolled segments whose data, indexes
  // and marker removal are not yet durable, in offset order.
  RollSync roll_sync_;                                  // under append_mu_
  Rolled on_roll_;                                      // under append_mu_
  std::vector<std::shared_ptr<Segment>> unfinished_;    // under append_mu_
  uint64_t truncations_ = 0;                            // under append_mu_
  // Serialises the background finishing of rolled segments (index flush,
  // marker removal) with what else touches those segments' files:
  // truncation, retention, flush_locked. Order: append_mu_, then finish_mu_.
  mutable std::mutex finish_mu_;

  std::mutex sync_mu_;  // one sync_data at a time; guards sync_error_
  Status sync_error_;

  std::mutex deleted_mu_;
  std::vector<Deleted> deleted_;  // under deleted_mu_

  std::atomic<int64_t> log_end_offset_{0};
  std::atomic<int64_t> log_start_offset_{0};
  std::atomic<int64_t> recovery_point_{0};
  std::atomic<int64_t> first_dirty_offset_{0};
  std::atomic<int64_t> earliest_delete_horizon_{kNever};
  mutable std::mutex txn_hint_mu_;
  TxnFreeHint txn_hint_;  // under txn_hint_mu_
  void lower_txn_free_below(int64_t offset);
  mutable std::mutex segments_mu_;  // guards the pointer only
  std::shared_ptr<const SegmentList> segments_;
};

// Copies a read's slices into memory (for callers that must look inside the
// batches: compaction, format conversion, tests).
Result<std::vector<uint8_t>> read_slices(const ReadResult& r);

}  // namespace ciuickafka::storage
