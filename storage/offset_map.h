// storage/offset_map.h: the cleaner's key -> latest offset map.
//
// Built over the dirty part of a log (storage/cleaner.h): for every record
// with a key, the largest offset at which that key appears. Kafka stores a
// 16-byte MD5 of each key in a fixed buffer (log.cleaner.dedupe.buffer.size)
// and accepts the tiny chance of a collision; we keep the key bytes
// themselves (no collision can drop a live record) and bound the map by the
// bytes it holds instead: when an insert would pass max_bytes the map says so,
// and the cleaner stops mapping at the end of the last whole segment.
//
// Thread-safety: one thread (the cleaner's).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

namespace ciuickafka::storage {

class OffsetMap {
 public:
  // Rough per-entry cost besides the key bytes (node, hash slot, offset).
  static constexpr size_t kEntryOverhead = 64;

  // Full once its entries take load_factor of max_bytes
  // (log.cleaner.io.buffer.load.factor over log.cleaner.dedupe.buffer.size).
  explicit OffsetMap(size_t max_bytes, double load_factor = 1.0)
      : max_bytes_(static_cast<size_t>(static_cast<double>(max_bytes) * std::clamp(load_factor, 0.0, 1.0))) {}

  // Records that key was seen at offset (offsets arrive increasing, but a
  // smaller one never lowers an entry).
  void put(std::span<const uint8_t> key, int64_t offset) {
    const std::string_view k = view(key);
    auto it = map_.find(k);
    if (it != map_.end()) {
      if (offset > it->second) it->second = offset;
    } else {
      map_.emplace(std::string(k), offset);
      bytes_ += key.size() + kEntryOverhead;
    }
    if (offset > latest_offset_) latest_offset_ = offset;
  }
  // The latest offset of key, nullopt when the map never saw it.
  std::optional<int64_t> get(std::span<const uint8_t> key) const {
    auto it = map_.find(view(key));
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  // Past the byte bound (times the load factor): map no further segment.
  bool full() const { return bytes_ >= max_bytes_; }
  size_t size() const { return map_.size(); }
  size_t bytes() const { return bytes_; }
  // The largest offset put so far (-1 when none).
  int64_t latest_offset() const { return latest_offset_; }

 private:
  // Lookups by string_view, without building a std::string per record.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  static std::string_view view(std::span<const uint8_t> key) {
    return {reinterpret_cast<const char*>(key.data()), key.size()};
  }

  size_t max_bytes_;
  size_t bytes_ = 0;
  int64_t latest_offset_ = -1;
  std::unordered_map<std::string, int64_t, Hash, std::equal_to<>> map_;
};

}  // namespace ciuickafka::storage
