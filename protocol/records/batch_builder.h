// protocol/records/batch_builder.h: builds one v2 record batch.
//
// Used by tests, by the broker for control records (transaction markers), by
// compaction (which keeps original offset deltas and may write empty
// batches) and by format conversion and recompression. Records are encoded
// into the builder as they are added (inputs are views and may go away);
// build() compresses, writes the header and the CRC.
//
// Defaults follow Kafka: baseTimestamp is the first record's timestamp,
// maxTimestamp the largest, offset deltas 0, 1, 2... unless given.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "protocol/compression/codec.h"
#include "protocol/records/record_batch.h"
#include "protocol/wire/writer.h"

namespace ciuickafka::protocol {

struct BatchOptions {
  int64_t base_offset = 0;
  int32_t partition_leader_epoch = batch_v2::kNoPartitionLeaderEpoch;
  Codec codec = Codec::kNone;
  std::optional<int> level;  // compression level, nullopt: library default
  TimestampType timestamp_type = TimestampType::kCreateTime;
  // Under LogAppendTime, maxTimestamp (nullopt: the largest record timestamp).
  std::optional<int64_t> log_append_time;
  bool transactional = false;
  bool control = false;
  int64_t producer_id = batch_v2::kNoProducerId;
  int16_t producer_epoch = batch_v2::kNoProducerEpoch;
  int32_t base_sequence = batch_v2::kNoSequence;
  // Sets the delete-horizon bit; baseTimestamp then holds this value and
  // record timestamp deltas are relative to it.
  std::optional<int64_t> delete_horizon_ms;
  // For an empty batch (compaction keeps one for producer state): its
  // lastOffsetDelta. Ignored when records were added.
  int32_t empty_last_offset_delta = 0;
  // For an empty batch: its timestamps.
  int64_t empty_timestamp = batch_v2::kNoTimestamp;
};

// Converts a string to a byte view (no copy) for keys, values, headers.
inline std::span<const uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

class BatchBuilder {
 public:
  explicit BatchBuilder(BatchOptions options);

  // Appends a record. offset_delta: nullopt takes the next one (previous+1,
  // starting at 0); given ones must increase. Returns false (and adds
  // nothing) for a non-increasing delta.
  bool add(int64_t timestamp, std::optional<std::span<const uint8_t>> key,
           std::optional<std::span<const uint8_t>> value, std::span<const HeaderView> headers = {},
           std::optional<int32_t> offset_delta = std::nullopt);
  // Re-encodes a record read from another batch (its timestamp, delta,
  // key, value and headers), e.g. for compaction or recompression.
  bool add(const RecordView& record);

  int32_t record_count() const { return count_; }
  // Uncompressed size so far (header + records): a guide for batch limits.
  size_t estimated_size() const { return batch_v2::kHeaderSize + records_.size(); }

  // Produces the batch. Errors: kCompression (codec failure), kBadCodec.
  Result<Bytes, RecordError> build() const;

 private:
  BatchOptions opt_;
  Writer records_;
  int32_t count_ = 0;
  int32_t last_delta_ = -1;
  std::optional<int64_t> base_ts_;
  int64_t max_ts_ = batch_v2::kNoTimestamp;
};

// A control batch holding one transaction marker (commit or abort): what the
// transaction coordinator asks partition leaders to append.
Result<Bytes, RecordError> build_end_txn_marker_batch(ControlRecordType type, int64_t producer_id,
                                                      int16_t producer_epoch, int32_t coordinator_epoch,
                                                      int64_t timestamp, int64_t base_offset = 0,
                                                      int32_t partition_leader_epoch = -1);

}  // namespace ciuickafka::protocol
