// protocol/records/record_reader.cc: records inside a batch, decompression of
// the payload, and control records; see record_batch.h.
#include "protocol/records/record_batch.h"
#include "protocol/wire/reader.h"

namespace ciuickafka::protocol {

namespace {

// Offsets and timestamps come from the wire: add without signed overflow.
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

// Reads a varint length (-1 null) and that many bytes.
bool read_nullable(Reader& r, std::optional<std::span<const uint8_t>>* out) {
  int32_t len = r.read_varint();
  if (!r.ok() || len < -1) return false;
  if (len == -1) {
    *out = std::nullopt;
    return true;
  }
  auto v = r.read_raw(static_cast<size_t>(len));
  if (!r.ok()) return false;
  *out = v;
  return true;
}

}  // namespace

bool HeaderIterator::next(HeaderView* out) {
  if (left_ <= 0) return false;
  Reader r(raw_.subspan(pos_));
  int32_t klen = r.read_varint();
  if (r.ok() && klen >= 0) out->key = r.read_raw(static_cast<size_t>(klen));
  if (!r.ok() || klen < 0 || !read_nullable(r, &out->value)) {
    left_ = 0;  // cannot happen for headers RecordReader accepted
    return false;
  }
  pos_ += r.position();
  --left_;
  return true;
}

bool RecordReader::next(RecordView* out) {
  if (error_ != RecordError::kNone) return false;
  if (left_ == 0) {
    if (pos_ != buf_.size()) error_ = RecordError::kBadRecordCount;  // trailing bytes
    return false;
  }
  if (pos_ == buf_.size()) {
    error_ = RecordError::kBadRecordCount;  // fewer records than the header says
    return false;
  }
  auto fail = [this] {
    error_ = RecordError::kBadRecord;
    return false;
  };
  Reader outer(buf_.subspan(pos_));
  int32_t len = outer.read_varint();
  if (!outer.ok() || len < 0) return fail();
  auto body = outer.read_raw(static_cast<size_t>(len));
  if (!outer.ok()) return fail();

  Reader r(body);
  out->attributes = r.read_int8();
  out->timestamp_delta = r.read_varlong();
  out->offset_delta = r.read_varint();
  if (!r.ok() || !read_nullable(r, &out->key) || !read_nullable(r, &out->value)) return fail();
  int32_t headers = r.read_varint();
  // Each header takes at least two bytes (two one-byte varints).
  if (!r.ok() || headers < 0 || static_cast<size_t>(headers) > r.remaining() / 2 + 1) return fail();
  size_t headers_start = r.position();
  for (int32_t i = 0; i < headers; ++i) {
    int32_t klen = r.read_varint();
    if (!r.ok() || klen < 0) return fail();
    r.skip(static_cast<size_t>(klen));
    std::optional<std::span<const uint8_t>> ignored;
    if (!r.ok() || !read_nullable(r, &ignored)) return fail();
  }
  if (!r.ok() || !r.at_end()) return fail();  // the length must match the body exactly

  out->header_count = headers;
  out->headers_raw = body.subspan(headers_start);
  out->bytes = buf_.subspan(pos_, outer.position());
  out->offset = wrap_add(base_offset_, out->offset_delta);
  out->timestamp = log_append_time_ ? *log_append_time_ : wrap_add(base_timestamp_, out->timestamp_delta);
  pos_ += outer.position();
  --left_;
  return true;
}

RecordReader DecodedRecords::reader() const {
  return RecordReader(data(), count_, base_offset_, base_timestamp_, log_append_time_);
}

Result<DecodedRecords, RecordError> decode_records(const RecordBatchView& batch, size_t max_decompressed_bytes) {
  auto codec = batch.codec();
  if (!codec) return RecordError::kBadCodec;
  DecodedRecords d;
  d.count_ = batch.record_count();
  d.base_offset_ = batch.base_offset();
  d.base_timestamp_ = batch.base_timestamp();
  if (batch.timestamp_type() == TimestampType::kLogAppendTime) d.log_append_time_ = batch.max_timestamp();
  if (*codec == Codec::kNone) {
    d.view_ = batch.records_payload();
    return d;
  }
  auto out = decompress(*codec, batch.records_payload(), max_decompressed_bytes);
  if (!out.ok())
    return out.error() == CompressionError::kTooLarge ? RecordError::kTooLarge : RecordError::kCompression;
  d.owned_ = std::move(out).value();
  return d;
}

RecordError validate_records(const RecordBatchView& batch, size_t max_decompressed_bytes) {
  auto d = decode_records(batch, max_decompressed_bytes);
  if (!d.ok()) return d.error();
  auto reader = d->reader();
  RecordView rec;
  while (reader.next(&rec)) {
  }
  return reader.error();
}

Result<ControlRecordKey, RecordError> parse_control_key(std::span<const uint8_t> key) {
  Reader r(key);
  ControlRecordKey k;
  k.version = r.read_int16();
  k.type = r.read_int16();
  if (!r.ok() || k.version < 0) return RecordError::kBadControlRecord;
  return k;
}

Result<EndTxnMarker, RecordError> parse_end_txn_marker(std::span<const uint8_t> value) {
  Reader r(value);
  EndTxnMarker m;
  m.version = r.read_int16();
  m.coordinator_epoch = r.read_int32();
  if (!r.ok() || m.version < 0) return RecordError::kBadControlRecord;
  return m;
}

std::optional<TxnMarker> read_txn_marker(const RecordBatchView& batch) {
  if (!batch.is_control()) return std::nullopt;
  auto records = decode_records(batch, 1u << 20);
  if (!records.ok()) return std::nullopt;
  RecordReader reader = records.value().reader();
  RecordView rec;
  if (!reader.next(&rec) || !rec.key) return std::nullopt;
  auto key = parse_control_key(*rec.key);
  if (!key.ok()) return std::nullopt;
  const int16_t type = key.value().type;
  if (type != static_cast<int16_t>(ControlRecordType::kAbort) && type != static_cast<int16_t>(ControlRecordType::kCommit))
    return std::nullopt;
  TxnMarker m;
  m.commit = type == static_cast<int16_t>(ControlRecordType::kCommit);
  if (rec.value) {
    auto v = parse_end_txn_marker(*rec.value);
    if (v.ok()) m.coordinator_epoch = v.value().coordinator_epoch;
  }
  return m;
}

}  // namespace ciuickafka::protocol
