// storage/offset_index.cc: OffsetIndex lookups, appends and checks.
#include "storage/offset_index.h"

#include <cstdio>
#include <cstdlib>
#include <limits>

namespace ciuickafka::storage {

Result<OffsetIndex> OffsetIndex::open(io::FileSystem& fs, const std::string& path, int64_t base_offset,
                                      uint32_t max_index_bytes, bool writable) {
  auto f = IndexFile::open(fs, path, kEntrySize, max_index_bytes, writable);
  if (!f) return f.status();
  return OffsetIndex(std::move(f).value(), base_offset);
}

OffsetPosition OffsetIndex::entry(size_t n) const {
  if (n >= entries()) {
    std::fprintf(stderr, "OffsetIndex %s: entry %zu of %zu\n", path().c_str(), n, entries());
    std::abort();
  }
  return {base_offset_ + relative_at(n), position_at(n)};
}

int64_t OffsetIndex::last_offset() const {
  return entries() == 0 ? base_offset_ : base_offset_ + relative_at(entries() - 1);
}

bool OffsetIndex::can_hold(int64_t offset) const {
  return offset >= base_offset_ && offset - base_offset_ <= std::numeric_limits<int32_t>::max();
}

OffsetPosition OffsetIndex::lookup(int64_t target) const {
  if (target < base_offset_) return {base_offset_, 0};
  if (target - base_offset_ > std::numeric_limits<int32_t>::max())
    target = base_offset_ + std::numeric_limits<int32_t>::max();
  const auto rel = static_cast<int32_t>(target - base_offset_);
  long slot = largest_lower_bound(entries(), [this](size_t i) { return relative_at(i); }, rel);
  if (slot < 0) return {base_offset_, 0};
  return entry(static_cast<size_t>(slot));
}

Status OffsetIndex::append(int64_t offset, uint32_t position) {
  if (full())
    return Status::index_full(path() + ": full at " + std::to_string(entries()) + " entries, cannot add offset " +
                              std::to_string(offset));
  if (!can_hold(offset))
    return Status::invalid_argument(path() + ": offset " + std::to_string(offset) +
                                    " does not fit a relative offset from base " + std::to_string(base_offset_));
  if (entries() > 0) {
    if (offset <= last_offset())
      return Status::invalid_argument(path() + ": offset " + std::to_string(offset) +
                                      " is not above the last indexed offset " + std::to_string(last_offset()));
    if (position <= position_at(entries() - 1))
      return Status::invalid_argument(path() + ": position " + std::to_string(position) +
                                      " is not above the last indexed position " +
                                      std::to_string(position_at(entries() - 1)));
  }
  uint8_t e[kEntrySize];
  store_be32(e, static_cast<uint32_t>(offset - base_offset_));
  store_be32(e + 4, position);
  file_.append(e);
  return Status::ok();
}

void OffsetIndex::truncate_to(int64_t offset) {
  if (offset <= base_offset_) return clear();
  // Keep entries with offset < the given one.
  int64_t rel = offset - base_offset_ - 1;
  if (rel > std::numeric_limits<int32_t>::max()) return;
  long slot = largest_lower_bound(entries(), [this](size_t i) { return relative_at(i); },
                                  static_cast<int32_t>(rel));
  file_.truncate_entries(static_cast<size_t>(slot + 1));
}

Status OffsetIndex::sanity_check() const {
  if (file_.size_at_open() % kEntrySize != 0)
    return Status::corruption("index file " + path() + " is corrupt: its size " +
                              std::to_string(file_.size_at_open()) + " is not a multiple of " +
                              std::to_string(kEntrySize));
  for (size_t i = 0; i < entries(); ++i) {
    if (relative_at(i) < 0)
      return Status::corruption("index file " + path() + " is corrupt: entry " + std::to_string(i) +
                                " has negative relative offset " + std::to_string(relative_at(i)));
    if (i > 0 && relative_at(i) <= relative_at(i - 1))
      return Status::corruption("index file " + path() + " is corrupt: entry " + std::to_string(i) + " offset " +
                                std::to_string(base_offset_ + relative_at(i)) + " is not above entry " +
                                std::to_string(i - 1) + " offset " +
                                std::to_string(base_offset_ + relative_at(i - 1)));
    if (i > 0 && position_at(i) <= position_at(i - 1))
      return Status::corruption("index file " + path() + " is corrupt: entry " + std::to_string(i) +
                                " position " + std::to_string(position_at(i)) + " is not above entry " +
                                std::to_string(i - 1) + " position " + std::to_string(position_at(i - 1)));
  }
  return Status::ok();
}

}  // namespace ciuickafka::storage
