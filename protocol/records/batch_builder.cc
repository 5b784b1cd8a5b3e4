// protocol/records/batch_builder.cc: see batch_builder.h.
#include "protocol/records/batch_builder.h"

#include <algorithm>
#include <limits>

#include "protocol/records/crc32c.h"

namespace ciuickafka::protocol {

namespace {

int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}

void write_nullable_varint_bytes(Writer& w, const std::optional<std::span<const uint8_t>>& b) {
  if (!b) {
    w.write_varint(-1);
    return;
  }
  w.write_varint(static_cast<int32_t>(b->size()));
  w.write_raw(*b);
}

}  // namespace

BatchBuilder::BatchBuilder(BatchOptions options) : opt_(std::move(options)) {}

bool BatchBuilder::add(int64_t timestamp, std::optional<std::span<const uint8_t>> key,
                       std::optional<std::span<const uint8_t>> value, std::span<const HeaderView> headers,
                       std::optional<int32_t> offset_delta) {
  if (last_delta_ == std::numeric_limits<int32_t>::max()) return false;
  int32_t delta = offset_delta.value_or(last_delta_ + 1);
  if (delta <= last_delta_) return false;
  constexpr size_t kMaxField = static_cast<size_t>(std::numeric_limits<int32_t>::max());
  if ((key && key->size() > kMaxField) || (value && value->size() > kMaxField)) return false;

  if (!base_ts_) base_ts_ = opt_.delete_horizon_ms.value_or(timestamp);
  max_ts_ = count_ == 0 ? timestamp : std::max(max_ts_, timestamp);

  Writer body;
  body.write_int8(0);  // record attributes: unused by Kafka
  body.write_varlong(wrap_sub(timestamp, *base_ts_));
  body.write_varint(delta);
  write_nullable_varint_bytes(body, key);
  write_nullable_varint_bytes(body, value);
  body.write_varint(static_cast<int32_t>(headers.size()));
  for (const auto& h : headers) {
    body.write_varint(static_cast<int32_t>(h.key.size()));
    body.write_raw(h.key);
    write_nullable_varint_bytes(body, h.value);
  }
  records_.write_varint(static_cast<int32_t>(body.size()));
  records_.write_raw(body.buffer());
  last_delta_ = delta;
  ++count_;
  return true;
}

bool BatchBuilder::add(const RecordView& record) {
  std::vector<HeaderView> headers;
  headers.reserve(static_cast<size_t>(record.header_count));
  auto it = record.headers();
  HeaderView h;
  while (it.next(&h)) headers.push_back(h);
  return add(record.timestamp, record.key, record.value, headers, record.offset_delta);
}

Result<Bytes, RecordError> BatchBuilder::build() const {
  using namespace batch_v2;
  Bytes compressed;
  std::span<const uint8_t> payload = records_.buffer();
  if (opt_.codec != Codec::kNone) {
    auto c = compress(opt_.codec, payload, opt_.level);
    if (!c.ok()) return c.error() == CompressionError::kUnknownCodec ? RecordError::kBadCodec
                                                                     : RecordError::kCompression;
    compressed = std::move(c).value();
    payload = compressed;
  }
  uint16_t attributes = static_cast<uint16_t>(opt_.codec) & kCodecMask;
  if (opt_.timestamp_type == TimestampType::kLogAppendTime) attributes |= kTimestampTypeBit;
  if (opt_.transactional) attributes |= kTransactionalBit;
  if (opt_.control) attributes |= kControlBit;
  if (opt_.delete_horizon_ms) attributes |= kDeleteHorizonBit;

  int64_t base_ts = count_ > 0 ? *base_ts_ : opt_.delete_horizon_ms.value_or(opt_.empty_timestamp);
  int64_t max_ts = count_ > 0 ? max_ts_ : opt_.empty_timestamp;
  if (opt_.timestamp_type == TimestampType::kLogAppendTime && opt_.log_append_time)
    max_ts = *opt_.log_append_time;

  Writer w(kHeaderSize + payload.size());
  w.write_int64(opt_.base_offset);
  w.write_int32(0);  // batchLength, patched below
  w.write_int32(opt_.partition_leader_epoch);
  w.write_int8(kMagic);
  w.write_uint32(0);  // crc, patched below
  w.write_uint16(attributes);
  w.write_int32(count_ > 0 ? last_delta_ : opt_.empty_last_offset_delta);
  w.write_int64(base_ts);
  w.write_int64(max_ts);
  w.write_int64(opt_.producer_id);
  w.write_int16(opt_.producer_epoch);
  w.write_int32(opt_.base_sequence);
  w.write_int32(count_);
  w.write_raw(payload);
  if (w.size() - kLogOverhead > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return RecordError::kBadLength;
  w.patch_int32(kBatchLengthOffset, static_cast<int32_t>(w.size() - kLogOverhead));
  Bytes out = w.release();
  rewrite_crc(out);
  return out;
}

Result<Bytes, RecordError> build_end_txn_marker_batch(ControlRecordType type, int64_t producer_id,
                                                      int16_t producer_epoch, int32_t coordinator_epoch,
                                                      int64_t timestamp, int64_t base_offset,
                                                      int32_t partition_leader_epoch) {
  BatchOptions o;
  o.base_offset = base_offset;
  o.partition_leader_epoch = partition_leader_epoch;
  o.transactional = true;
  o.control = true;
  o.producer_id = producer_id;
  o.producer_epoch = producer_epoch;
  BatchBuilder b(o);
  Writer key;
  key.write_int16(0);  // control key version
  key.write_int16(static_cast<int16_t>(type));
  Writer value;
  value.write_int16(0);  // EndTxnMarker version
  value.write_int32(coordinator_epoch);
  b.add(timestamp, std::span<const uint8_t>(key.buffer()), std::span<const uint8_t>(value.buffer()));
  return b.build();
}

}  // namespace ciuickafka::protocol
