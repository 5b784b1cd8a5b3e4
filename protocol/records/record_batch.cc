// protocol/records/record_batch.cc: batch header view, in-place rewrites and
// the splitter; see record_batch.h. Records and control records are in
// record_reader.cc.
#include "protocol/records/record_batch.h"

#include "protocol/records/crc32c.h"
#include "protocol/records/legacy.h"

namespace ciuickafka::protocol {

namespace {

uint64_t load_be(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

void store_be(uint8_t* p, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i) {
    p[i] = static_cast<uint8_t>(v);
    v >>= 8;
  }
}

}  // namespace

std::string_view to_string(RecordError e) {
  switch (e) {
    case RecordError::kNone: return "none";
    case RecordError::kTruncated: return "truncated batch";
    case RecordError::kBadLength: return "bad batch length";
    case RecordError::kBadMagic: return "unexpected magic";
    case RecordError::kCrcMismatch: return "crc mismatch";
    case RecordError::kBadRecord: return "malformed record";
    case RecordError::kBadRecordCount: return "record count mismatch";
    case RecordError::kBadCodec: return "unsupported compression codec";
    case RecordError::kCompression: return "corrupt compressed records";
    case RecordError::kTooLarge: return "decompressed records exceed the limit";
    case RecordError::kBadControlRecord: return "malformed control record";
    case RecordError::kBadOffsets: return "bad offsets";
  }
  return "unknown";
}

Result<RecordBatchView, RecordError> RecordBatchView::parse(std::span<const uint8_t> bytes) {
  using namespace batch_v2;
  if (bytes.size() < kMagicOffset + 1) return RecordError::kTruncated;
  auto magic = static_cast<int8_t>(bytes[kMagicOffset]);
  if (magic != kMagic) return RecordError::kBadMagic;
  auto length = static_cast<int32_t>(load_be(bytes.data() + kBatchLengthOffset, 4));
  if (length < kMinBatchLength) return RecordError::kBadLength;
  size_t total = kLogOverhead + static_cast<size_t>(length);
  if (bytes.size() < total) return RecordError::kTruncated;
  return RecordBatchView(bytes.first(total));
}

Result<BatchHeader, RecordError> BatchHeader::read(std::span<const uint8_t> bytes) {
  using namespace batch_v2;
  if (bytes.size() < kHeaderSize) return RecordError::kTruncated;
  const uint8_t* p = bytes.data();
  if (static_cast<int8_t>(p[kMagicOffset]) != kMagic) return RecordError::kBadMagic;
  BatchHeader h;
  h.batch_length = static_cast<int32_t>(load_be(p + kBatchLengthOffset, 4));
  if (h.batch_length < kMinBatchLength) return RecordError::kBadLength;
  h.base_offset = static_cast<int64_t>(load_be(p + kBaseOffsetOffset, 8));
  h.attributes = static_cast<uint16_t>(load_be(p + kAttributesOffset, 2));
  h.last_offset_delta = static_cast<int32_t>(load_be(p + kLastOffsetDeltaOffset, 4));
  h.max_timestamp = static_cast<int64_t>(load_be(p + kMaxTimestampOffset, 8));
  h.producer_id = static_cast<int64_t>(load_be(p + kProducerIdOffset, 8));
  h.producer_epoch = static_cast<int16_t>(load_be(p + kProducerEpochOffset, 2));
  h.base_sequence = static_cast<int32_t>(load_be(p + kBaseSequenceOffset, 4));
  return h;
}

Result<RecordBatchView, RecordError> RecordBatchView::parse_and_validate(std::span<const uint8_t> bytes) {
  auto r = parse(bytes);
  if (!r.ok()) return r;
  if (auto e = r->validate_crc(); e != RecordError::kNone) return e;
  return r;
}

uint32_t RecordBatchView::compute_crc() const {
  return crc32c(bytes_.subspan(batch_v2::kAttributesOffset));
}

RecordError RecordBatchView::validate_crc() const {
  return compute_crc() == crc() ? RecordError::kNone : RecordError::kCrcMismatch;
}

#define CK_FIELD(type, name, off, n) \
  type RecordBatchView::name() const { return static_cast<type>(load_be(bytes_.data() + (off), (n))); }
CK_FIELD(int64_t, base_offset, batch_v2::kBaseOffsetOffset, 8)
CK_FIELD(int32_t, batch_length, batch_v2::kBatchLengthOffset, 4)
CK_FIELD(int32_t, partition_leader_epoch, batch_v2::kPartitionLeaderEpochOffset, 4)
CK_FIELD(int8_t, magic, batch_v2::kMagicOffset, 1)
CK_FIELD(uint32_t, crc, batch_v2::kCrcOffset, 4)
CK_FIELD(uint16_t, attributes, batch_v2::kAttributesOffset, 2)
CK_FIELD(int32_t, last_offset_delta, batch_v2::kLastOffsetDeltaOffset, 4)
CK_FIELD(int64_t, base_timestamp, batch_v2::kBaseTimestampOffset, 8)
CK_FIELD(int64_t, max_timestamp, batch_v2::kMaxTimestampOffset, 8)
CK_FIELD(int64_t, producer_id, batch_v2::kProducerIdOffset, 8)
CK_FIELD(int16_t, producer_epoch, batch_v2::kProducerEpochOffset, 2)
CK_FIELD(int32_t, base_sequence, batch_v2::kBaseSequenceOffset, 4)
CK_FIELD(int32_t, record_count, batch_v2::kRecordCountOffset, 4)
#undef CK_FIELD

TimestampType RecordBatchView::timestamp_type() const {
  return (attributes() & batch_v2::kTimestampTypeBit) ? TimestampType::kLogAppendTime
                                                       : TimestampType::kCreateTime;
}

std::optional<int64_t> RecordBatchView::delete_horizon_ms() const {
  if (!has_delete_horizon()) return std::nullopt;
  return base_timestamp();
}

// --- in-place rewrites -----------------------------------------------------

bool set_base_offset(std::span<uint8_t> batch, int64_t base_offset) {
  if (batch.size() < batch_v2::kHeaderSize) return false;
  store_be(batch.data() + batch_v2::kBaseOffsetOffset, static_cast<uint64_t>(base_offset), 8);
  return true;
}

bool set_partition_leader_epoch(std::span<uint8_t> batch, int32_t epoch) {
  if (batch.size() < batch_v2::kHeaderSize) return false;
  store_be(batch.data() + batch_v2::kPartitionLeaderEpochOffset, static_cast<uint32_t>(epoch), 4);
  return true;
}

bool rewrite_crc(std::span<uint8_t> batch) {
  if (batch.size() < batch_v2::kHeaderSize) return false;
  uint32_t c = crc32c(std::span<const uint8_t>(batch).subspan(batch_v2::kAttributesOffset));
  store_be(batch.data() + batch_v2::kCrcOffset, c, 4);
  return true;
}

bool set_log_append_time(std::span<uint8_t> batch, int64_t ts) {
  if (batch.size() < batch_v2::kHeaderSize) return false;
  uint8_t* attr = batch.data() + batch_v2::kAttributesOffset;
  uint16_t a = static_cast<uint16_t>(load_be(attr, 2)) | batch_v2::kTimestampTypeBit;
  store_be(attr, a, 2);
  store_be(batch.data() + batch_v2::kMaxTimestampOffset, static_cast<uint64_t>(ts), 8);
  return rewrite_crc(batch);
}

// --- splitter --------------------------------------------------------------

SplitStatus BatchSplitter::next(RecordsEntry* out) {
  if (done_) return *done_;
  size_t left = buf_.size() - pos_;
  if (left == 0) return *(done_ = SplitStatus::kEnd);
  // offset, length and magic must be present to judge the entry.
  if (left < batch_v2::kMagicOffset + 1) return *(done_ = SplitStatus::kPartial);
  const uint8_t* p = buf_.data() + pos_;
  auto length = static_cast<int32_t>(load_be(p + batch_v2::kBatchLengthOffset, 4));
  auto magic = static_cast<int8_t>(p[batch_v2::kMagicOffset]);
  int32_t min_length = magic == 2   ? batch_v2::kMinBatchLength
                       : magic == 1 ? legacy::kMinMessageSizeV1
                       : magic == 0 ? legacy::kMinMessageSizeV0
                                    : -1;
  if (min_length < 0 || length < min_length) return *(done_ = SplitStatus::kCorrupt);
  size_t total = batch_v2::kLogOverhead + static_cast<size_t>(length);
  if (left < total) return *(done_ = SplitStatus::kPartial);
  out->bytes = buf_.subspan(pos_, total);
  out->offset = static_cast<int64_t>(load_be(p, 8));
  out->magic = magic;
  pos_ += total;
  return SplitStatus::kEntry;
}

}  // namespace ciuickafka::protocol
