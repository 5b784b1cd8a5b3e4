// storage/offset_index.h: a segment's sparse offset -> file position index
// (the `.index` file).
//
// Each entry is 8 bytes, big-endian: the offset relative to the segment's
// base offset (4 bytes) and the byte position of that offset's batch in the
// `.log` file (4 bytes). An entry is added every index.interval.bytes of log
// data; to find an offset, look up the largest entry <= it and scan the log
// forward from that position. See storage/FORMAT.md for a worked example.
//
// Entries live in memory (IndexFile: why not mmap, and how preallocation
// padding is trimmed). Open does not validate; call sanity_check() before
// trusting lookups of an index that was not written by this process, and
// rebuild the index from its segment when it fails.
//
// Thread-safety: none; the segment serialises access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "storage/index_file.h"

namespace ciuickafka::storage {

struct OffsetPosition {
  int64_t offset = 0;     // absolute offset
  uint32_t position = 0;  // byte position in the .log file
  bool operator==(const OffsetPosition&) const = default;
};

class OffsetIndex {
 public:
  static constexpr size_t kEntrySize = 8;
  static constexpr uint32_t kDefaultMaxIndexBytes = 10 * 1024 * 1024;  // segment.index.bytes

  static Result<OffsetIndex> open(io::FileSystem& fs, const std::string& path, int64_t base_offset,
                                  uint32_t max_index_bytes = kDefaultMaxIndexBytes, bool writable = true);
  // Empty and read-only, never reading or writing path (IndexFile::in_memory).
  static OffsetIndex in_memory(io::FileSystem& fs, const std::string& path, int64_t base_offset,
                               uint32_t max_index_bytes = kDefaultMaxIndexBytes) {
    return OffsetIndex(IndexFile::in_memory(fs, path, kEntrySize, max_index_bytes), base_offset);
  }

  const std::string& path() const { return file_.path(); }
  int64_t base_offset() const { return base_offset_; }
  size_t entries() const { return file_.entries(); }
  size_t max_entries() const { return file_.max_entries(); }
  bool full() const { return entries() >= max_entries(); }
  size_t memory_bytes() const { return file_.memory_bytes(); }
  bool dirty() const { return file_.dirty(); }
  uint32_t fingerprint() const { return file_.fingerprint(); }
  // Entry n (n < entries(); aborts otherwise).
  OffsetPosition entry(size_t n) const;
  // The last entry's offset; the base offset when empty (as Kafka's lastOffset).
  int64_t last_offset() const;
  // Whether offset fits this index: 0 <= offset - base <= INT32_MAX. A segment
  // must roll before an offset that does not.
  bool can_hold(int64_t offset) const;

  // The entry with the largest offset <= target; {base_offset, 0} when there
  // is none (scan from the start of the segment).
  OffsetPosition lookup(int64_t target) const;

  // Adds an entry. Fails with kIndexFull when full(), kInvalidArgument when
  // the offset does not fit or is not above the last offset, or the position
  // is not above the last position.
  Status append(int64_t offset, uint32_t position);
  // Removes every entry with offset >= the given one (log truncation).
  void truncate_to(int64_t offset);
  void clear() { file_.truncate_entries(0); }

  // kCorruption, naming the file, when the index cannot be trusted: its size
  // is not a multiple of 8, an offset is below the base or not increasing,
  // or positions do not increase.
  Status sanity_check() const;
  Status flush() { return file_.flush(); }
  Status close() { return file_.close(); }

 private:
  OffsetIndex(IndexFile f, int64_t base) : file_(std::move(f)), base_offset_(base) {}
  int32_t relative_at(size_t n) const { return static_cast<int32_t>(load_be32(file_.entry(n))); }
  uint32_t position_at(size_t n) const { return load_be32(file_.entry(n) + 4); }

  IndexFile file_;
  int64_t base_offset_;
};

}  // namespace ciuickafka::storage
