// storage/log.h: one partition's log: the segments of a `<topic>-<partition>`
// directory, the append path (validate, assign offsets, roll, write) and the
// read path (file slices for sendfile).
//
// Offsets: the log end offset (LEO) is the offset the next appended record
// gets. It advances only after a write has completed, and it is also the
// readable end: readers see offsets below it and never a partly written
// batch. In this slice writes are blocking File calls (io_uring Files submit
// through the calling thread's private ring); submitting through the network
// thread's Ring with eventfd completions, and group commit, come later, at
// which point the assigned-but-not-written offsets run ahead of the LEO.
//
// Recovery in this slice: open() validates every batch of the last segment
// (length, magic, CRC, increasing offsets), truncates it at the first invalid
// byte and rebuilds its indexes; older segments only get an index sanity
// check (rebuilt when it fails). Recovery from the recovery-point checkpoint,
// the clean-shutdown marker and the log-start-offset checkpoint come later:
// today the log start offset is the first segment's base offset.
//
// Thread-safety: appends and flushes are serialised by a mutex whose
// critical section is the validation, offset assignment and write of one
// append. read() and the offset accessors never take it: they load the
// published LEO (an atomic) and a snapshot of the segment list (a
// shared_ptr copied under a separate, tiny mutex), and each segment bounds
// reads by its own published size. Slices keep their segment alive.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "storage/io/file.h"
#include "storage/segment.h"
#include "storage/status.h"

namespace ciuickafka::storage {

struct LogConfig {
  SegmentConfig segment;
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

class Log {
 public:
  using SegmentList = std::vector<std::shared_ptr<Segment>>;

  // Opens the log in dir (created, with one empty segment at offset 0, when
  // it holds no segment). now_ms starts the active segment's segment.ms clock.
  static Result<std::unique_ptr<Log>> open(io::FileSystem& fs, const std::string& dir,
                                           const LogConfig& config, int64_t now_ms);
  ~Log();
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  // Appends one or more v2 record batches (the records of a produce
  // request). Every batch is checked first (framing, magic, CRC): any error
  // is kCorruptRecords and nothing is written. Then each batch's baseOffset
  // is rewritten to the next offset and its partitionLeaderEpoch to
  // leader_epoch (both outside the CRC; the caller's buffer is modified),
  // the active segment rolls when it must, and the batches are written.
  Result<AppendResult> append(std::span<uint8_t> records, int32_t leader_epoch, int64_t now_ms);

  // Whole batches from the one containing offset, below
  // min(upper_bound_offset, LEO) (a batch is returned only when its last
  // offset is below the bound), max_bytes in total but at least one batch
  // when any is readable, possibly spanning segments. Empty at the end;
  // kOffsetOutOfRange below the log start or above the LEO.
  Result<ReadResult> read(int64_t offset, uint64_t max_bytes,
                          int64_t upper_bound_offset = std::numeric_limits<int64_t>::max()) const;

  // fdatasync of the active segment (and its indexes). Rolled segments
  // were flushed when they rolled.
  Status flush();
  // Flushes the active segment; appends and flushes fail afterwards. The
  // segments' files close when their last reference goes (the log's, and
  // any reader's slices), never under a reader.
  Status close();

  const std::string& dir() const { return dir_; }
  int64_t log_start_offset() const { return log_start_offset_.load(std::memory_order_acquire); }
  int64_t log_end_offset() const { return log_end_offset_.load(std::memory_order_acquire); }
  // Bytes cut off the last segment by open()'s recovery.
  uint64_t recovered_truncated_bytes() const { return truncated_bytes_; }
  // A snapshot of the segments in base-offset order (tests, tools, retention).
  std::shared_ptr<const SegmentList> segments() const;

 private:
  Log(io::FileSystem& fs, std::string dir, LogConfig config);
  Status load(int64_t now_ms);
  Status roll(int64_t new_base_offset);
  void publish_segments(std::shared_ptr<const SegmentList> list);

  io::FileSystem& fs_;
  const std::string dir_;
  const LogConfig config_;

  std::mutex append_mu_;     // serialises append, flush, roll, close
  int64_t next_offset_ = 0;  // under append_mu_: the next offset to assign
  bool closed_ = false;      // under append_mu_
  uint64_t truncated_bytes_ = 0;

  std::atomic<int64_t> log_end_offset_{0};
  std::atomic<int64_t> log_start_offset_{0};
  mutable std::mutex segments_mu_;  // guards the pointer only
  std::shared_ptr<const SegmentList> segments_;
};

// Copies a read's slices into memory (for callers that must look inside the
// batches: compaction, format conversion, tests).
Result<std::vector<uint8_t>> read_slices(const ReadResult& r);

}  // namespace ciuickafka::storage
