// protocol/records/legacy.h: MessageSet v0/v1 (magic 0 and 1) and
// conversion to and from v2 batches.
//
// A message set is a sequence of entries (big-endian):
//
//   offset int64, messageSize int32, crc uint32 (IEEE CRC-32, zlib's crc32,
//   over magic..end), magic int8, attributes int8 (bits 0-2 codec: none,
//   gzip, snappy, lz4; bit 3 timestamp type, v1 only), [timestamp int64, v1
//   only], key bytes (int32 length, -1 null), value bytes (same)
//
// A compressed entry ("wrapper") holds a whole compressed message set in its
// value. Its offset is that of the last inner message. Inner offsets are
// absolute in v0; in v1 they are relative: absolute = wrapperOffset -
// lastInnerOffset + innerOffset. Under LogAppendTime (v1) the wrapper's
// timestamp replaces the inner ones.
//
// Old clients produce message sets (Produce v0-v2) and fetch them (Fetch
// v0-v1 read magic 0, v2-v3 magic 1). The broker stores v2 only, so it
// converts both ways. zstd does not exist before v2: converting a zstd batch
// down is kBadCodec (Kafka answers UNSUPPORTED_COMPRESSION_TYPE). LZ4 in
// magic 0 is written with Kafka's broken frame header checksum, which
// pre-0.10 clients verify; reading accepts both (see codec.h).
//
// Thread-safety: plain functions and values.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "protocol/compression/codec.h"
#include "protocol/records/record_batch.h"
#include "protocol/wire/types.h"

namespace ciuickafka::protocol {

namespace legacy {
inline constexpr uint8_t kCodecMask = 0x07;
inline constexpr uint8_t kTimestampTypeBit = 0x08;
// crc + magic + attributes + key length + value length.
inline constexpr int32_t kMinMessageSizeV0 = 14;
inline constexpr int32_t kMinMessageSizeV1 = 22;  // + timestamp
}  // namespace legacy

// One message after decoding (wrappers opened): views into the input or
// into DecodedMessageSet's buffers.
struct LegacyMessage {
  int64_t offset = 0;  // absolute
  int8_t magic = 0;
  int8_t attributes = 0;
  int64_t timestamp = batch_v2::kNoTimestamp;  // effective; -1 for v0
  TimestampType timestamp_type = TimestampType::kCreateTime;
  uint32_t crc = 0;  // stored CRC (of the inner message for compressed sets)
  std::optional<std::span<const uint8_t>> key;
  std::optional<std::span<const uint8_t>> value;
  Codec wrapper_codec = Codec::kNone;  // codec of the wrapper it came from
};

struct DecodedMessageSet {
  std::vector<LegacyMessage> messages;
  std::vector<Bytes> buffers;  // decompressed inner sets (keep alive)
  bool partial = false;        // the input ended inside an entry
};

struct LegacyDecodeOptions {
  size_t max_decompressed_bytes = 64 << 20;
  bool verify_crc = true;
};

// Decodes a v0/v1 message set, verifying every CRC and opening compressed
// wrappers (one level, as Kafka allows). A trailing partial entry sets
// `partial` (not an error). A v2 entry inside is kBadMagic.
Result<DecodedMessageSet, RecordError> decode_message_set(std::span<const uint8_t> message_set,
                                                          const LegacyDecodeOptions& options = {});

struct LegacyToV2Options {
  int64_t base_offset = 0;
  // true: offsets 0..n-1 from base_offset, ignoring the client's (produce).
  // false: keep the absolute offsets (deltas from the first; must increase).
  bool assign_offsets = true;
  // nullopt: the codec of the (first) wrapper, or none.
  std::optional<Codec> codec;
  size_t max_decompressed_bytes = 64 << 20;
  int32_t partition_leader_epoch = batch_v2::kNoPartitionLeaderEpoch;
};

// Converts a message set (Produce v0-v2) to a single v2 batch holding all its
// messages. An empty set gives an empty Bytes. A partial trailing entry is
// kTruncated here: a produce request must hold whole messages.
Result<Bytes, RecordError> message_set_to_v2(std::span<const uint8_t> message_set,
                                             const LegacyToV2Options& options = {});

struct V2ToLegacyOptions {
  int8_t magic = 1;  // 0 or 1
  size_t max_decompressed_bytes = 64 << 20;
};

// Converts v2 batches (a fetch's records) to a v0/v1 message set for Fetch
// v0-v3. Each compressed batch becomes one wrapper with the same codec;
// uncompressed batches become plain messages. Control batches are dropped;
// headers are lost (v0/v1 have none). A partial trailing batch is dropped.
// v0/v1 entries in the input are copied when their magic is <= the target.
Result<Bytes, RecordError> v2_to_message_set(std::span<const uint8_t> records,
                                             const V2ToLegacyOptions& options = {});

// Encodes one message (no wrapper logic): for tests and the converter.
void write_legacy_message(Bytes& out, int8_t magic, int64_t offset, int8_t attributes, int64_t timestamp,
                          std::optional<std::span<const uint8_t>> key,
                          std::optional<std::span<const uint8_t>> value);

}  // namespace ciuickafka::protocol
