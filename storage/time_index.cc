// storage/time_index.cc: TimeIndex lookups, appends and checks.
#include "storage/time_index.h"

#include <cstdio>
#include <cstdlib>
#include <limits>

namespace ciuickafka::storage {

Result<TimeIndex> TimeIndex::open(io::FileSystem& fs, const std::string& path, int64_t base_offset,
                                  uint32_t max_index_bytes, bool writable) {
  auto f = IndexFile::open(fs, path, kEntrySize, max_index_bytes, writable);
  if (!f) return f.status();
  return TimeIndex(std::move(f).value(), base_offset);
}

TimestampOffset TimeIndex::entry(size_t n) const {
  if (n >= entries()) {
    std::fprintf(stderr, "TimeIndex %s: entry %zu of %zu\n", path().c_str(), n, entries());
    std::abort();
  }
  return {timestamp_at(n), base_offset_ + relative_at(n)};
}

TimestampOffset TimeIndex::last_entry() const {
  if (entries() == 0) return {kNoTimestamp, base_offset_};
  return entry(entries() - 1);
}

TimestampOffset TimeIndex::lookup(int64_t target_timestamp) const {
  long slot = largest_lower_bound(entries(), [this](size_t i) { return timestamp_at(i); }, target_timestamp);
  if (slot < 0) return {kNoTimestamp, base_offset_};
  return entry(static_cast<size_t>(slot));
}

Status TimeIndex::maybe_append(int64_t timestamp, int64_t offset, bool skip_full_check) {
  if ((!skip_full_check && full()) || entries() >= max_entries())
    return Status::index_full(path() + ": full at " + std::to_string(entries()) + " entries");
  if (offset < base_offset_ || offset - base_offset_ > std::numeric_limits<int32_t>::max())
    return Status::invalid_argument(path() + ": offset " + std::to_string(offset) +
                                    " does not fit a relative offset from base " + std::to_string(base_offset_));
  const TimestampOffset last = last_entry();
  if (entries() > 0 && offset < last.offset)
    return Status::invalid_argument(path() + ": offset " + std::to_string(offset) +
                                    " is below the last indexed offset " + std::to_string(last.offset));
  if (entries() > 0 && timestamp < last.timestamp)
    return Status::invalid_argument(path() + ": timestamp " + std::to_string(timestamp) +
                                    " is below the last indexed timestamp " + std::to_string(last.timestamp));
  if (timestamp <= last.timestamp) return Status::ok();  // nothing new (or NO_TIMESTAMP on an empty index)
  uint8_t e[kEntrySize];
  store_be64(e, static_cast<uint64_t>(timestamp));
  store_be32(e + 8, static_cast<uint32_t>(offset - base_offset_));
  file_.append(e);
  return Status::ok();
}

void TimeIndex::truncate_to(int64_t offset) {
  size_t keep = 0;
  // Offsets are non-decreasing: keep the prefix whose offsets are below offset.
  size_t lo = 0, hi = entries();
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (base_offset_ + relative_at(mid) < offset) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  keep = lo;
  file_.truncate_entries(keep);
}

Status TimeIndex::sanity_check() const {
  if (file_.size_at_open() % kEntrySize != 0)
    return Status::corruption("time index file " + path() + " is corrupt: its size " +
                              std::to_string(file_.size_at_open()) + " is not a multiple of " +
                              std::to_string(kEntrySize));
  for (size_t i = 0; i < entries(); ++i) {
    if (relative_at(i) < 0)
      return Status::corruption("time index file " + path() + " is corrupt: entry " + std::to_string(i) +
                                " has negative relative offset " + std::to_string(relative_at(i)));
    if (i > 0 && timestamp_at(i) <= timestamp_at(i - 1))
      return Status::corruption("time index file " + path() + " is corrupt: entry " + std::to_string(i) +
                                " timestamp " + std::to_string(timestamp_at(i)) + " is not above entry " +
                                std::to_string(i - 1) + " timestamp " + std::to_string(timestamp_at(i - 1)));
    if (i > 0 && relative_at(i) < relative_at(i - 1))
      return Status::corruption("time index file " + path() + " is corrupt: entry " + std::to_string(i) +
                                " offset " + std::to_string(base_offset_ + relative_at(i)) +
                                " is below entry " + std::to_string(i - 1) + " offset " +
                                std::to_string(base_offset_ + relative_at(i - 1)));
  }
  return Status::ok();
}

}  // namespace ciuickafka::storage
