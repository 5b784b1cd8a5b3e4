// broker/groups/partition_for.h: which __consumer_offsets partition holds a
// group, computed exactly as Kafka does so that tools reading the topic
// (and a directory copied from Kafka) agree with us.
//
// Kafka: Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions, with
// Java's String.hashCode (s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code
// units, int32 wrap-around) and org.apache.kafka.common.utils.Utils.abs(x) =
// (x == Integer.MIN_VALUE) ? 0 : Math.abs(x). Not x & 0x7fffffff (Utils.
// toPositive, the producer's partitioner): for a negative hash the two give
// different partitions. Versions before this one used the mask; the
// coordinator moves groups it finds in a partition that is not theirs
// (legacy_offsets.h).
//
// Group ids arrive as UTF-8; they are decoded to UTF-16 code units (code
// points above U+FFFF become surrogate pairs, as in Java). Malformed UTF-8
// bytes count as U+FFFD, which is what Java's decoder substitutes.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace ciuickafka::broker::groups {

inline int32_t java_string_hash(std::string_view s) {
  uint32_t h = 0;
  auto add = [&h](uint32_t unit) { h = h * 31u + unit; };
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    uint32_t cp = 0xFFFD;
    size_t len = 1;
    if (b0 < 0x80) {
      cp = b0;
    } else {
      size_t need = 0;
      uint32_t min = 0;
      if ((b0 & 0xE0) == 0xC0) need = 1, cp = b0 & 0x1F, min = 0x80;
      else if ((b0 & 0xF0) == 0xE0) need = 2, cp = b0 & 0x0F, min = 0x800;
      else if ((b0 & 0xF8) == 0xF0) need = 3, cp = b0 & 0x07, min = 0x10000;
      bool ok = need > 0;
      for (size_t k = 1; ok && k <= need; ++k) {
        if (i + k >= n) { ok = false; break; }
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80) ok = false;
        else cp = (cp << 6) | (b & 0x3F);
      }
      if (ok && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF)) {
        len = need + 1;
      } else {
        cp = 0xFFFD;
        len = 1;
      }
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      add(0xD800 + (cp >> 10));
      add(0xDC00 + (cp & 0x3FF));
    } else {
      add(cp);
    }
    i += len;
  }
  return static_cast<int32_t>(h);
}

// Kafka's Utils.abs(hash) % partitions.
inline int32_t partition_for(std::string_view group_id, int32_t partitions) {
  if (partitions <= 0) return 0;
  const int32_t h = java_string_hash(group_id);
  const int32_t abs = h == INT32_MIN ? 0 : (h < 0 ? -h : h);
  return abs % partitions;
}

}  // namespace ciuickafka::broker::groups
