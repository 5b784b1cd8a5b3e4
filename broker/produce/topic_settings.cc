// broker/produce/topic_settings.cc: reads a topic's produce-related configs.
#include "broker/produce/topic_settings.h"

#include <charconv>
#include <string>

namespace ciuickafka::broker::produce {
namespace {

int64_t to_long(const std::optional<std::string>& v, int64_t fallback) {
  if (!v) return fallback;
  int64_t out = fallback;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  return ec == std::errc() && p == v->data() + v->size() ? out : fallback;
}

}  // namespace

TopicSettings topic_settings(const TopicTable& table, const Topic& topic) {
  TopicSettings s;
  auto get = [&](const char* key) { return table.config_value(topic, key); };
  s.max_message_bytes = to_long(get("max.message.bytes"), s.max_message_bytes);
  s.segment_bytes = to_long(get("segment.bytes"), s.segment_bytes);
  s.log_append_time = get("message.timestamp.type").value_or("CreateTime") == "LogAppendTime";
  s.timestamp_before_max_ms = to_long(get("message.timestamp.before.max.ms"), s.timestamp_before_max_ms);
  s.timestamp_after_max_ms = to_long(get("message.timestamp.after.max.ms"), s.timestamp_after_max_ms);
  s.compacted = get("cleanup.policy").value_or("delete").find("compact") != std::string::npos;

  const std::string type = get("compression.type").value_or("producer");
  auto level = [&](const char* key) -> std::optional<int> {
    const int64_t v = to_long(get(key), -1);
    if (v < 0) return std::nullopt;  // gzip's -1: the library default
    return static_cast<int>(v);
  };
  if (type == "uncompressed" || type == "none") {
    s.target_codec = protocol::Codec::kNone;
  } else if (type == "gzip") {
    s.target_codec = protocol::Codec::kGzip;
    s.level = level("compression.gzip.level");
  } else if (type == "snappy") {
    s.target_codec = protocol::Codec::kSnappy;
  } else if (type == "lz4") {
    s.target_codec = protocol::Codec::kLz4;
    s.level = level("compression.lz4.level");
  } else if (type == "zstd") {
    s.target_codec = protocol::Codec::kZstd;
    s.level = level("compression.zstd.level");
  }
  return s;
}

}  // namespace ciuickafka::broker::produce
