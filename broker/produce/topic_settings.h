// broker/produce/topic_settings.h: the topic configs a produce needs,
// read once per topic per request (effective values: the topic's override,
// else the broker default).
//
//   max.message.bytes            largest batch accepted (MESSAGE_TOO_LARGE)
//   segment.bytes                largest partition record set (RECORD_LIST_TOO_LARGE)
//   message.timestamp.type       CreateTime | LogAppendTime
//   message.timestamp.before.max.ms / after.max.ms   (CreateTime bounds)
//   compression.type             producer | uncompressed | gzip | snappy | lz4 | zstd
//   compression.{gzip,lz4,zstd}.level
//   cleanup.policy               compact topics require keys
//
// Thread-safety: plain functions and values.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "broker/cluster/topic_table.h"
#include "protocol/compression/codec.h"

namespace ciuickafka::broker::produce {

struct TopicSettings {
  int64_t max_message_bytes = 1048588;
  int64_t segment_bytes = 1073741824;
  bool log_append_time = false;
  int64_t timestamp_before_max_ms = INT64_MAX;
  int64_t timestamp_after_max_ms = INT64_MAX;
  std::optional<protocol::Codec> target_codec;  // nullopt: `producer` (keep as sent)
  std::optional<int> level;                     // of target_codec; nullopt: library default
  bool compacted = false;
  // ciuic.produce.validate.compressed (a broker key, set by the produce
  // handler): decompress and check every record of a compressed batch that
  // is kept as sent, as Kafka's LogValidator does.
  bool validate_compressed = true;
};

TopicSettings topic_settings(const TopicTable& table, const Topic& topic);

// The most a batch of the topic may decompress to: 32 x max.message.bytes,
// within [64 MiB, 1 GiB]. A produce whose batch decompresses to more is
// refused (INVALID_RECORD), and a Fetch v0-3 down-converts whatever a
// produce accepted (fetch/down_convert.h).
inline size_t decompress_limit(int64_t max_message_bytes) {
  constexpr uint64_t kMin = 64u << 20;
  constexpr uint64_t kMax = 1u << 30;
  const uint64_t want = static_cast<uint64_t>(std::max<int64_t>(max_message_bytes, 0)) * 32;
  return static_cast<size_t>(std::clamp<uint64_t>(want, kMin, kMax));
}

}  // namespace ciuickafka::broker::produce
