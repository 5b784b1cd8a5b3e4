// broker/produce/prepare.h: from one partition's produced records to the v2
// batches the log stores, or the Kafka error that rejects them.
//
// prepare_records() checks the request's records and makes the bytes the log
// stores and rewrites in place (offsets, leader epoch): given the records
// writable (the Produce handler's frame, RequestContext::writable), one v2
// batch kept as sent (every Produce v3+ without a topic codec) stays in the
// request and is patched there, so a produced byte is copied only by the
// kernel; otherwise they are copied (or built) into a buffer. On the way:
//   - framing and CRC: a truncated entry, bad length or CRC mismatch ->
//     CORRUPT_MESSAGE; Produce v3+ must carry exactly one magic-2 batch
//     (Kafka: INVALID_RECORD otherwise); zstd before v7 ->
//     UNSUPPORTED_COMPRESSION_TYPE;
//   - v0/v1 message sets (Produce v0-v2) are converted to one v2 batch;
//   - a batch larger than max.message.bytes (as sent, and as stored after
//     conversion or recompression) -> MESSAGE_TOO_LARGE; the partition's
//     records larger than segment.bytes -> RECORD_LIST_TOO_LARGE;
//   - batch checks as Kafka's LogValidator: record count vs offset range,
//     no control batches from clients, baseOffset 0, a producer id needs a
//     sequence -> INVALID_RECORD with error_message;
//   - transactional batches need a producer id (INVALID_RECORD); whether
//     the partition is in the producer's transaction is the produce
//     handler's check (the transaction coordinator's verification);
//   - record checks (offset deltas 0..n-1, CreateTime bounds from
//     message.timestamp.before/after.max.ms, keys on compacted topics) ->
//     INVALID_RECORD or INVALID_TIMESTAMP with per-record record_errors;
//   - compression.type: `producer` keeps batches as sent. A compressed batch
//     is decompressed (into a buffer bounded by 32 x max.message.bytes,
//     64 MiB to 1 GiB) and every record checked, as Kafka's LogValidator
//     does, so a malformed inner batch is refused rather than acknowledged
//     to poison every consumer; the stored bytes are still the producer's.
//     ciuic.produce.validate.compressed=false skips that (header checks only,
//     timestamps by baseTimestamp/maxTimestamp) unless the topic is
//     compacted (keys required). Uncompressed batches are always checked
//     record by record, and a wrong maxTimestamp is fixed (sarama sends -1),
//     as Kafka does. A specific codec rebuilds each batch whose codec
//     differs with that codec and its level;
//   - LogAppendTime topics: maxTimestamp and the timestamp-type bit become
//     the broker's time, CRC recomputed.
//
// Thread-safety: a pure function of its arguments.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "broker/produce/topic_settings.h"
#include "protocol/error_code.h"

namespace ciuickafka::broker::produce {

struct PreparedBatch {
  size_t position = 0;  // in PreparedRecords::stored()
  size_t size = 0;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  int32_t last_offset_delta = 0;
  int32_t record_count = 0;
  int64_t max_timestamp = -1;
  bool transactional = false;
};

struct RecordErrorEntry {
  int32_t batch_index = 0;  // the record's index in its batch
  std::string message;
};

struct PreparedRecords {
  protocol::ErrorCode error = protocol::ErrorCode::NONE;
  std::string message;                      // error_message (v8+)
  // The error is a batch or record check of Kafka's LogValidator (which
  // answers the partition's log start offset with it), not framing, size or
  // a request-level rule.
  bool validator_error = false;
  std::vector<RecordErrorEntry> record_errors;
  std::vector<uint8_t> buffer;              // batches copied or built here
  std::span<uint8_t> in_place;              // or the request's own bytes, patched
  std::vector<PreparedBatch> batches;
  uint64_t record_count = 0;
  int64_t log_append_time = -1;             // set under LogAppendTime

  bool ok() const { return error == protocol::ErrorCode::NONE; }
  // The v2 batches ready for Partition::append.
  std::span<uint8_t> stored() { return in_place.empty() ? std::span<uint8_t>(buffer) : in_place; }
};

// writable: the same bytes as records, which prepare_records may rewrite and
// then leave in place (PreparedRecords::in_place; they must outlive the
// append); empty (or other bytes) to copy.
PreparedRecords prepare_records(std::span<const uint8_t> records, int16_t api_version,
                                const TopicSettings& settings, int64_t now_ms, std::span<uint8_t> writable = {});

// Whether prepare_records would compress records anew: a v2 batch whose
// codec is not the topic's compression.type, or a v0/v1 message set that
// is converted with a codec (the topic's, or its compressed wrapper's).
// Reads only batch and message headers; records it cannot frame count as
// no (prepare_records then refuses them cheaply). The produce handler runs
// such requests on the I/O pool, off the network thread.
bool compresses_anew(std::span<const uint8_t> records, const TopicSettings& settings);

// The bytes of the compressed v2 batches in records: what prepare_records
// decompresses only to validate (TopicSettings::validate_compressed) when
// the codec is kept. Reads only batch headers. The produce handler
// validates a request with kValidateOnPoolBytes or more of them on the I/O
// pool, off the network thread.
size_t compressed_batch_bytes(std::span<const uint8_t> records);
inline constexpr size_t kValidateOnPoolBytes = 64 << 10;

}  // namespace ciuickafka::broker::produce
