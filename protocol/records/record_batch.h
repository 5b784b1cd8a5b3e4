// protocol/records/record_batch.h: views over Kafka v2 record batches.
//
// A record batch (magic 2), as Kafka documents it (all integers big-endian):
//
//   offset  size  field
//        0     8  baseOffset
//        8     4  batchLength            bytes after this field
//       12     4  partitionLeaderEpoch
//       16     1  magic (2)
//       17     4  crc                    CRC32C of bytes 21..end
//       21     2  attributes             bits 0-2 codec, 3 timestamp type,
//                                        4 transactional, 5 control,
//                                        6 delete horizon set
//       23     4  lastOffsetDelta
//       27     8  baseTimestamp
//       35     8  maxTimestamp
//       43     8  producerId
//       51     2  producerEpoch
//       53     4  baseSequence
//       57     4  recordCount
//       61     -  records (compressed as a whole when the codec is not none)
//
// baseOffset and partitionLeaderEpoch sit outside the CRC, so the broker
// rewrites them in place on append (set_base_offset, set_partition_leader_epoch).
//
// Each record (never compressed individually):
//   length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
//   keyLength varint (-1 null), key, valueLength varint (-1 null), value,
//   headerCount varint, [headerKeyLength varint, key, headerValueLength varint
//   (-1 null), value]*
//
// The magic byte sits at offset 16 in all three formats (v0/v1: offset,
// size, crc, magic), so BatchSplitter walks v0/v1 message sets too and
// reports each entry's magic.
//
// Nothing here copies record data: views point into the caller's buffer (or
// into a DecodedRecords buffer for compressed batches), which must outlive
// them. Errors are values; no input can make these functions read outside
// their span.
//
// Thread-safety: views are plain values; one thread per iterator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "protocol/compression/codec.h"
#include "protocol/compression/result.h"
#include "protocol/wire/types.h"

namespace ciuickafka::protocol {

enum class RecordError : uint8_t {
  kNone = 0,
  kTruncated,         // fewer bytes than the header or than batchLength says
  kBadLength,         // batchLength below the header size or beyond the limit
  kBadMagic,          // magic is not the one expected here
  kCrcMismatch,       // stored CRC differs from the computed one
  kBadRecord,         // a record is malformed (bad varint, length, or overrun)
  kBadRecordCount,    // recordCount disagrees with the records present
  kBadCodec,          // codec bits 5-7, or a codec the target format lacks
  kCompression,       // the payload failed to decompress
  kTooLarge,          // decompressed records exceed the caller's limit
  kBadControlRecord,  // a control record whose key is not version+type
  kBadOffsets,        // offsets that do not increase or do not fit the format
};

std::string_view to_string(RecordError e);

namespace batch_v2 {
inline constexpr size_t kBaseOffsetOffset = 0;
inline constexpr size_t kBatchLengthOffset = 8;
inline constexpr size_t kPartitionLeaderEpochOffset = 12;
inline constexpr size_t kMagicOffset = 16;
inline constexpr size_t kCrcOffset = 17;
inline constexpr size_t kAttributesOffset = 21;
inline constexpr size_t kLastOffsetDeltaOffset = 23;
inline constexpr size_t kBaseTimestampOffset = 27;
inline constexpr size_t kMaxTimestampOffset = 35;
inline constexpr size_t kProducerIdOffset = 43;
inline constexpr size_t kProducerEpochOffset = 51;
inline constexpr size_t kBaseSequenceOffset = 53;
inline constexpr size_t kRecordCountOffset = 57;
inline constexpr size_t kRecordsOffset = 61;
inline constexpr size_t kHeaderSize = 61;
// baseOffset + batchLength: the bytes not counted by batchLength.
inline constexpr size_t kLogOverhead = 12;
inline constexpr int32_t kMinBatchLength = static_cast<int32_t>(kHeaderSize - kLogOverhead);  // 49
inline constexpr int8_t kMagic = 2;

inline constexpr uint16_t kCodecMask = 0x07;
inline constexpr uint16_t kTimestampTypeBit = 0x08;
inline constexpr uint16_t kTransactionalBit = 0x10;
inline constexpr uint16_t kControlBit = 0x20;
inline constexpr uint16_t kDeleteHorizonBit = 0x40;

inline constexpr int64_t kNoTimestamp = -1;
inline constexpr int64_t kNoProducerId = -1;
inline constexpr int16_t kNoProducerEpoch = -1;
inline constexpr int32_t kNoSequence = -1;
inline constexpr int32_t kNoPartitionLeaderEpoch = -1;
}  // namespace batch_v2

enum class TimestampType : uint8_t { kCreateTime = 0, kLogAppendTime = 1 };

// A read-only view of one v2 batch: exactly baseOffset..end of the batch.
// parse() checks the framing (size, batchLength, magic) but not the CRC;
// validate_crc() checks that. Accessors read the header on demand.
class RecordBatchView {
 public:
  RecordBatchView() = default;

  // bytes must start at a batch; bytes past the batch end are ignored (the
  // view covers the batch only). kTruncated if the batch does not fit.
  static Result<RecordBatchView, RecordError> parse(std::span<const uint8_t> bytes);

  // parse() + CRC check. This is what a broker runs on every produced batch.
  static Result<RecordBatchView, RecordError> parse_and_validate(std::span<const uint8_t> bytes);

  // kNone or kCrcMismatch.
  RecordError validate_crc() const;
  uint32_t compute_crc() const;  // CRC32C over attributes..end

  std::span<const uint8_t> bytes() const { return bytes_; }
  size_t size_bytes() const { return bytes_.size(); }

  int64_t base_offset() const;
  int32_t batch_length() const;
  int32_t partition_leader_epoch() const;
  int8_t magic() const;
  uint32_t crc() const;
  uint16_t attributes() const;
  int32_t last_offset_delta() const;
  int64_t base_timestamp() const;
  int64_t max_timestamp() const;
  int64_t producer_id() const;
  int16_t producer_epoch() const;
  int32_t base_sequence() const;
  int32_t record_count() const;

  int64_t last_offset() const { return base_offset() + last_offset_delta(); }
  int64_t next_offset() const { return last_offset() + 1; }
  // Codec bits as stored (5-7 are invalid: codec() returns nullopt for them).
  int codec_id() const { return attributes() & batch_v2::kCodecMask; }
  std::optional<Codec> codec() const { return codec_from_id(codec_id()); }
  TimestampType timestamp_type() const;
  bool is_transactional() const { return (attributes() & batch_v2::kTransactionalBit) != 0; }
  bool is_control() const { return (attributes() & batch_v2::kControlBit) != 0; }
  bool has_delete_horizon() const { return (attributes() & batch_v2::kDeleteHorizonBit) != 0; }
  // With the delete-horizon bit set, baseTimestamp holds the delete horizon.
  std::optional<int64_t> delete_horizon_ms() const;

  // The records section after the 61-byte header (compressed unless codec none).
  std::span<const uint8_t> records_payload() const { return bytes_.subspan(batch_v2::kRecordsOffset); }

 private:
  explicit RecordBatchView(std::span<const uint8_t> b) : bytes_(b) {}
  std::span<const uint8_t> bytes_;
};

// The fixed header of a v2 batch, decoded from a span that holds at least
// its kHeaderSize bytes; the records need not be there. For scans that need
// no record (a producer state load reads each batch's header, not its
// records).
struct BatchHeader {
  int64_t base_offset = 0;
  int32_t batch_length = 0;
  uint16_t attributes = 0;
  int32_t last_offset_delta = 0;
  int64_t max_timestamp = batch_v2::kNoTimestamp;
  int64_t producer_id = batch_v2::kNoProducerId;
  int16_t producer_epoch = batch_v2::kNoProducerEpoch;
  int32_t base_sequence = batch_v2::kNoSequence;

  // kTruncated below kHeaderSize bytes, kBadMagic, kBadLength (what parse()
  // checks, but not that the whole batch is present).
  static Result<BatchHeader, RecordError> read(std::span<const uint8_t> bytes);

  // The whole batch's size, batchLength plus the 12 bytes before it.
  uint64_t size_bytes() const { return batch_v2::kLogOverhead + static_cast<uint64_t>(batch_length); }
  int64_t last_offset() const { return base_offset + last_offset_delta; }
  int64_t next_offset() const { return last_offset() + 1; }
  bool is_transactional() const { return (attributes & batch_v2::kTransactionalBit) != 0; }
  bool is_control() const { return (attributes & batch_v2::kControlBit) != 0; }
};

// In-place rewrites of a whole batch (its first bytes must be a v2 header;
// the span must hold at least kHeaderSize bytes, else these do nothing and
// return false). The first two fields lie outside the CRC; the others
// recompute it.
bool set_base_offset(std::span<uint8_t> batch, int64_t base_offset);
bool set_partition_leader_epoch(std::span<uint8_t> batch, int32_t epoch);
// Sets the timestamp type to LogAppendTime and maxTimestamp to ts, and
// rewrites the CRC (what a broker with log.message.timestamp.type=LogAppendTime
// does on append). The span must cover exactly one batch.
bool set_log_append_time(std::span<uint8_t> batch, int64_t ts);
// Recomputes and stores the CRC; the span must cover exactly one batch.
bool rewrite_crc(std::span<uint8_t> batch);

// ---------------------------------------------------------------------------
// Splitting a records blob (a produce request's or fetch response's records
// field, or a log segment slice) into entries, without copying.

struct RecordsEntry {
  std::span<const uint8_t> bytes;  // the whole entry: offset, length, rest
  int64_t offset = 0;               // baseOffset (v2) or message offset (v0/v1)
  int8_t magic = 0;
};

enum class SplitStatus : uint8_t {
  kEntry,    // *out holds the next entry
  kEnd,      // the blob ended exactly after the previous entry
  kPartial,  // the blob ends inside an entry (normal at the end of a fetch)
  kCorrupt,  // a length below the minimum for its magic, or an unknown magic
};

class BatchSplitter {
 public:
  explicit BatchSplitter(std::span<const uint8_t> records) : buf_(records) {}
  explicit BatchSplitter(const Records& records) : buf_(records.bytes) {}

  // Returns kEntry and fills *out, or a terminal status (repeated forever).
  // Only framing is checked here; parse each v2 entry with RecordBatchView.
  SplitStatus next(RecordsEntry* out);
  // Bytes consumed by the complete entries returned so far.
  size_t position() const { return pos_; }
  // After kPartial: the bytes of the incomplete trailing entry.
  size_t remaining() const { return buf_.size() - pos_; }

 private:
  std::span<const uint8_t> buf_;
  size_t pos_ = 0;
  std::optional<SplitStatus> done_;
};

// ---------------------------------------------------------------------------
// Records inside a batch.

struct HeaderView {
  std::span<const uint8_t> key;  // never null in Kafka
  std::optional<std::span<const uint8_t>> value;
};

// Iterates the headers of one record (already bounds-checked by RecordReader).
class HeaderIterator {
 public:
  HeaderIterator() = default;
  HeaderIterator(std::span<const uint8_t> raw, int32_t count) : raw_(raw), left_(count) {}
  bool next(HeaderView* out);

 private:
  std::span<const uint8_t> raw_;
  size_t pos_ = 0;
  int32_t left_ = 0;
};

struct RecordView {
  int8_t attributes = 0;
  int64_t timestamp_delta = 0;
  int32_t offset_delta = 0;
  int64_t offset = 0;     // batch baseOffset + offset_delta
  int64_t timestamp = 0;  // baseTimestamp + delta, or maxTimestamp under LogAppendTime
  std::optional<std::span<const uint8_t>> key;
  std::optional<std::span<const uint8_t>> value;
  int32_t header_count = 0;
  std::span<const uint8_t> headers_raw;  // the encoded headers
  std::span<const uint8_t> bytes;        // the whole record, length prefix included

  HeaderIterator headers() const { return HeaderIterator(headers_raw, header_count); }
};

// Walks the (uncompressed) records section of a batch. next() returns false
// at the end or on error; error() tells which: kNone at a clean end (exactly
// `count` records consumed the whole section), kBadRecord for a malformed
// record, kBadRecordCount for too few records or trailing bytes.
class RecordReader {
 public:
  RecordReader() = default;
  // Record offsets/timestamps are made absolute with the batch's fields.
  RecordReader(std::span<const uint8_t> records, int32_t count, int64_t base_offset = 0,
               int64_t base_timestamp = 0, std::optional<int64_t> log_append_time = std::nullopt)
      : buf_(records), left_(count), base_offset_(base_offset), base_timestamp_(base_timestamp),
        log_append_time_(log_append_time) {
    if (count < 0) error_ = RecordError::kBadRecordCount;
  }

  bool next(RecordView* out);
  RecordError error() const { return error_; }

 private:
  std::span<const uint8_t> buf_;
  size_t pos_ = 0;
  int32_t left_ = 0;
  int64_t base_offset_ = 0;
  int64_t base_timestamp_ = 0;
  std::optional<int64_t> log_append_time_;
  RecordError error_ = RecordError::kNone;
};

// A batch's records ready to iterate: a view of the payload when the batch is
// uncompressed, or an owned decompressed buffer. Move-only in spirit (the
// reader's views point into `owned`); moving keeps them valid.
class DecodedRecords {
 public:
  DecodedRecords() = default;
  RecordReader reader() const;
  std::span<const uint8_t> data() const { return owned_ ? std::span<const uint8_t>(*owned_) : view_; }
  int32_t count() const { return count_; }

 private:
  friend Result<DecodedRecords, RecordError> decode_records(const RecordBatchView&, size_t);
  std::span<const uint8_t> view_;
  std::optional<Bytes> owned_;
  int32_t count_ = 0;
  int64_t base_offset_ = 0;
  int64_t base_timestamp_ = 0;
  std::optional<int64_t> log_append_time_;
};

// Decompresses the payload when needed (at most max_decompressed_bytes).
// Does not check the CRC (see RecordBatchView::parse_and_validate).
Result<DecodedRecords, RecordError> decode_records(const RecordBatchView& batch,
                                                   size_t max_decompressed_bytes);

// Decodes every record of the batch fully (bounds, varints, lengths, count,
// no trailing bytes). kNone when all are well-formed.
RecordError validate_records(const RecordBatchView& batch, size_t max_decompressed_bytes);

// ---------------------------------------------------------------------------
// Control records (transaction markers). Key: version int16, type int16.
// Value of a commit/abort marker: version int16, coordinatorEpoch int32.

enum class ControlRecordType : int16_t { kAbort = 0, kCommit = 1 };

struct ControlRecordKey {
  int16_t version = 0;
  int16_t type = 0;  // kAbort, kCommit, or another value Kafka may add
};

Result<ControlRecordKey, RecordError> parse_control_key(std::span<const uint8_t> key);

struct EndTxnMarker {
  int16_t version = 0;
  int32_t coordinator_epoch = 0;
};
Result<EndTxnMarker, RecordError> parse_end_txn_marker(std::span<const uint8_t> value);

// A control batch's COMMIT/ABORT marker, read from its (first) record.
struct TxnMarker {
  bool commit = false;
  int32_t coordinator_epoch = 0;
};
// nullopt when the batch is not a control batch holding a COMMIT or ABORT
// record (other control types, or a record that does not decode).
std::optional<TxnMarker> read_txn_marker(const RecordBatchView& batch);

}  // namespace ciuickafka::protocol
