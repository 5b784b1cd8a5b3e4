// broker/fetch/down_convert.h: record bytes for Fetch v0-v3 (message format
// v0/v1), the one fetch path that copies.
//
// Old clients (Fetch v0-v1 read magic 0, v2-v3 magic 1; sarama with
// Version V0_10_2_0, say) cannot read v2 batches, so the slices are read
// into memory and converted (protocol/records/legacy.h), as Kafka's
// down-conversion does. A zstd batch cannot be expressed before v2:
// UNSUPPORTED_COMPRESSION_TYPE, as in Kafka. What is held is bounded by the
// response's budget (fetch.max.bytes; handlers/fetch.cc stops converting
// once the converted bytes pass it), and by what one batch decompresses to:
// at most the topic's limit (produce/topic_settings.h: decompress_limit),
// the same a produce was held to, so whatever was accepted converts.
//
// Header-only: broker/CMakeLists.txt compiles handlers/*.cc only.
// Thread-safety: pure function of its arguments (reads files).
#pragma once

#include <cstdint>
#include <vector>

#include "protocol/error_code.h"
#include "protocol/records/legacy.h"
#include "storage/log.h"

namespace ciuickafka::broker::fetch {

// The message-set magic a Fetch version reads (v4+ reads v2 batches: -1).
inline int8_t legacy_magic_for_fetch(int16_t version) {
  if (version <= 1) return 0;
  if (version <= 3) return 1;
  return -1;
}

// Converts a read's batches to a message set of `magic`; NONE and the bytes,
// or the error to put on the partition.
inline protocol::ErrorCode down_convert(const storage::ReadResult& read, int8_t magic, size_t max_decompressed,
                                        std::vector<uint8_t>* out) {
  out->clear();
  if (read.bytes == 0) return protocol::ErrorCode::NONE;
  auto raw = storage::read_slices(read);
  if (!raw.is_ok()) return protocol::ErrorCode::KAFKA_STORAGE_ERROR;
  protocol::V2ToLegacyOptions opts;
  opts.magic = magic;
  opts.max_decompressed_bytes = max_decompressed;
  auto converted = protocol::v2_to_message_set(raw.value(), opts);
  if (!converted.ok()) {
    return converted.error() == protocol::RecordError::kBadCodec ? protocol::ErrorCode::UNSUPPORTED_COMPRESSION_TYPE
                                                                 : protocol::ErrorCode::CORRUPT_MESSAGE;
  }
  *out = std::move(converted.value());
  return protocol::ErrorCode::NONE;
}

}  // namespace ciuickafka::broker::fetch
