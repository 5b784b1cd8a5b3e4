// storage/time_index.h: a segment's sparse timestamp -> offset index (the
// `.timeindex` file).
//
// Each entry is 12 bytes, big-endian: a timestamp (8 bytes, milliseconds)
// and an offset relative to the segment's base offset (4 bytes). Entry
// (T, O) says: every record with a timestamp above T is at or after offset O.
// Timestamps strictly increase from entry to entry, offsets never decrease.
// ListOffsets by timestamp looks up the largest entry <= the target and scans
// the log from its offset. See storage/FORMAT.md.
//
// As in Kafka, the last slot is reserved: full() is true one entry early so
// the entry written when the segment rolls (skip_full_check) always fits.
//
// Thread-safety: none; the segment serialises access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "storage/index_file.h"

namespace ciuickafka::storage {

// RecordBatch.NO_TIMESTAMP.
inline constexpr int64_t kNoTimestamp = -1;

struct TimestampOffset {
  int64_t timestamp = kNoTimestamp;
  int64_t offset = 0;  // absolute offset
  bool operator==(const TimestampOffset&) const = default;
};

class TimeIndex {
 public:
  static constexpr size_t kEntrySize = 12;
  static constexpr uint32_t kDefaultMaxIndexBytes = 10 * 1024 * 1024;  // segment.index.bytes

  static Result<TimeIndex> open(io::FileSystem& fs, const std::string& path, int64_t base_offset,
                                uint32_t max_index_bytes = kDefaultMaxIndexBytes, bool writable = true);
  // Empty and read-only, never reading or writing path (IndexFile::in_memory).
  static TimeIndex in_memory(io::FileSystem& fs, const std::string& path, int64_t base_offset,
                             uint32_t max_index_bytes = kDefaultMaxIndexBytes) {
    return TimeIndex(IndexFile::in_memory(fs, path, kEntrySize, max_index_bytes), base_offset);
  }

  const std::string& path() const { return file_.path(); }
  int64_t base_offset() const { return base_offset_; }
  size_t entries() const { return file_.entries(); }
  size_t max_entries() const { return file_.max_entries(); }
  bool full() const { return entries() + 1 >= max_entries(); }
  size_t memory_bytes() const { return file_.memory_bytes(); }
  bool dirty() const { return file_.dirty(); }
  uint32_t fingerprint() const { return file_.fingerprint(); }
  TimestampOffset entry(size_t n) const;  // n < entries(); aborts otherwise
  // The last entry; {kNoTimestamp, base_offset} when empty.
  TimestampOffset last_entry() const;

  // The entry with the largest timestamp <= target; {kNoTimestamp,
  // base_offset} when there is none.
  TimestampOffset lookup(int64_t target_timestamp) const;

  // Adds (timestamp, offset) when timestamp is above the last entry's; an
  // equal timestamp is skipped (ok: rolling re-offers the last entry). Fails
  // with kInvalidArgument when the timestamp or offset goes backwards or the
  // offset does not fit, kIndexFull when full() and !skip_full_check (or no
  // slot at all is left).
  Status maybe_append(int64_t timestamp, int64_t offset, bool skip_full_check = false);
  // Removes every entry with offset >= the given one.
  void truncate_to(int64_t offset);
  void clear() { file_.truncate_entries(0); }

  // kCorruption, naming the file: size not a multiple of 12, timestamps not
  // strictly increasing, offsets below the base or decreasing.
  Status sanity_check() const;
  Status flush() { return file_.flush(); }
  Status close() { return file_.close(); }

 private:
  TimeIndex(IndexFile f, int64_t base) : file_(std::move(f)), base_offset_(base) {}
  int64_t timestamp_at(size_t n) const { return static_cast<int64_t>(load_be64(file_.entry(n))); }
  int32_t relative_at(size_t n) const { return static_cast<int32_t>(load_be32(file_.entry(n) + 8)); }

  IndexFile file_;
  int64_t base_offset_;
};

}  // namespace ciuickafka::storage
