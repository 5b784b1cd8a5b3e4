// storage/compact_writer.h: writes one cleaned segment, `<base>.log.cleaned`
// with its `.index.cleaned` and `.timeindex.cleaned` (step 1 of the swap in
// storage/compact_swap.h).
//
// Batches arrive in offset order with their offsets unchanged. Both indexes
// follow the rule the segment applies on append (storage/segment.h): when more
// than index.interval.bytes were written since the last entry, the batch
// about to be written gets an offset entry (its last offset, its position)
// and the time index gets (max timestamp so far, the offset holding it).
// finish() adds the final time index entry (as a roll does), fdatasyncs the
// three files and fsyncs the directory.
//
// Thread-safety: one thread (the cleaner's).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "storage/io/file.h"
#include "storage/offset_index.h"
#include "storage/segment.h"
#include "storage/status.h"
#include "storage/time_index.h"

namespace ciuickafka::storage {

class CleanedSegmentWriter {
 public:
  // Creates (truncating any leftover) the three .cleaned files of base in dir.
  static Result<std::unique_ptr<CleanedSegmentWriter>> create(io::FileSystem& fs, const std::string& dir,
                                                              int64_t base, const SegmentConfig& config);

  // Appends one whole batch whose last offset and maxTimestamp are given.
  Status append(std::span<const uint8_t> batch, int64_t last_offset, int64_t max_timestamp);
  // Final time index entry, fdatasync of everything, fsync of dir.
  Status finish();

  uint64_t size() const { return size_; }
  int64_t base_offset() const { return base_; }

 private:
  CleanedSegmentWriter(io::FileSystem& fs, std::string dir, int64_t base, SegmentConfig config,
                       std::unique_ptr<io::File> log, OffsetIndex oi, TimeIndex ti)
      : fs_(fs), dir_(std::move(dir)), base_(base), config_(config), log_(std::move(log)),
        offset_index_(std::move(oi)), time_index_(std::move(ti)), offset_of_max_timestamp_(base) {}

  io::FileSystem& fs_;
  std::string dir_;
  int64_t base_;
  SegmentConfig config_;
  std::unique_ptr<io::File> log_;
  OffsetIndex offset_index_;
  TimeIndex time_index_;
  uint64_t size_ = 0;
  uint64_t bytes_since_index_entry_ = 0;
  int64_t max_timestamp_ = kNoTimestamp;
  int64_t offset_of_max_timestamp_;
};

}  // namespace ciuickafka::storage
