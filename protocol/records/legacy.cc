// protocol/records/legacy.cc: MessageSet v0/v1 decoding and conversion to and
// from v2; see legacy.h.
#include "protocol/records/legacy.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

#include "protocol/records/batch_builder.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"

namespace ciuickafka::protocol {

namespace {

constexpr size_t kCrcOffset = 12;    // after offset and size
constexpr size_t kMagicOffset = 16;  // crc covers from here

uint32_t ieee_crc(std::span<const uint8_t> b) {
  uLong c = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths; messages are far below 4 GiB (int32 size).
  return static_cast<uint32_t>(crc32(c, b.data(), static_cast<uInt>(b.size())));
}

struct RawMessage {
  int64_t offset = 0;
  int8_t magic = 0;
  int8_t attributes = 0;
  int64_t timestamp = batch_v2::kNoTimestamp;
  uint32_t crc = 0;
  std::optional<std::span<const uint8_t>> key, value;
};

enum class Step { kMessage, kEnd, kPartial };

// Reads the entry at *pos. Errors are returned through *err.
Step read_entry(std::span<const uint8_t> in, size_t* pos, bool verify_crc, RawMessage* m, RecordError* err) {
  size_t left = in.size() - *pos;
  if (left == 0) return Step::kEnd;
  if (left < batch_v2::kLogOverhead) return Step::kPartial;
  Reader head(in.subspan(*pos, batch_v2::kLogOverhead));
  m->offset = head.read_int64();
  int32_t size = head.read_int32();
  if (size < legacy::kMinMessageSizeV0) {
    *err = RecordError::kBadLength;
    return Step::kEnd;
  }
  if (left - batch_v2::kLogOverhead < static_cast<size_t>(size)) return Step::kPartial;
  auto entry = in.subspan(*pos, batch_v2::kLogOverhead + static_cast<size_t>(size));
  Reader r(entry.subspan(kCrcOffset));
  m->crc = r.read_uint32();
  m->magic = r.read_int8();
  m->attributes = r.read_int8();
  if (m->magic != 0 && m->magic != 1) {
    *err = RecordError::kBadMagic;
    return Step::kEnd;
  }
  m->timestamp = m->magic == 1 ? r.read_int64() : batch_v2::kNoTimestamp;
  m->key = r.read_nullable_bytes_view();
  m->value = r.read_nullable_bytes_view();
  if (!r.ok() || !r.at_end()) {
    *err = RecordError::kBadRecord;
    return Step::kEnd;
  }
  if (verify_crc && ieee_crc(entry.subspan(kMagicOffset)) != m->crc) {
    *err = RecordError::kCrcMismatch;
    return Step::kEnd;
  }
  *pos += entry.size();
  return Step::kMessage;
}

LegacyMessage to_message(const RawMessage& m, Codec wrapper) {
  LegacyMessage out;
  out.offset = m.offset;
  out.magic = m.magic;
  out.attributes = m.attributes;
  out.timestamp = m.timestamp;
  out.timestamp_type = (m.magic == 1 && (m.attributes & legacy::kTimestampTypeBit)) ? TimestampType::kLogAppendTime
                                                                                   : TimestampType::kCreateTime;
  out.crc = m.crc;
  out.key = m.key;
  out.value = m.value;
  out.wrapper_codec = wrapper;
  return out;
}

// Opens a wrapper message into result->messages.
RecordError open_wrapper(const RawMessage& w, Codec codec, const LegacyDecodeOptions& opt, size_t* budget,
                         DecodedMessageSet* result) {
  if (!w.value) return RecordError::kBadRecord;
  auto plain = decompress(codec, *w.value, *budget);
  if (!plain.ok())
    return plain.error() == CompressionError::kTooLarge ? RecordError::kTooLarge : RecordError::kCompression;
  *budget -= plain->size();
  result->buffers.push_back(std::move(plain).value());
  std::span<const uint8_t> inner = result->buffers.back();

  size_t first = result->messages.size();
  size_t pos = 0;
  RawMessage m;
  RecordError err = RecordError::kNone;
  for (;;) {
    Step s = read_entry(inner, &pos, opt.verify_crc, &m, &err);
    if (err != RecordError::kNone) return err;
    if (s == Step::kPartial) return RecordError::kTruncated;
    if (s == Step::kEnd) break;
    if ((m.attributes & legacy::kCodecMask) != 0) return RecordError::kBadRecord;  // nested compression
    if (m.magic != w.magic) return RecordError::kBadMagic;
    result->messages.push_back(to_message(m, codec));
  }
  if (result->messages.size() == first) return RecordError::kBadRecordCount;  // empty wrapper
  bool log_append = w.magic == 1 && (w.attributes & legacy::kTimestampTypeBit);
  int64_t last_inner = result->messages.back().offset;
  for (size_t i = first; i < result->messages.size(); ++i) {
    auto& msg = result->messages[i];
    if (w.magic == 1) {
      msg.offset = static_cast<int64_t>(static_cast<uint64_t>(w.offset) - static_cast<uint64_t>(last_inner) +
                                        static_cast<uint64_t>(msg.offset));
    }
    if (log_append) {
      msg.timestamp = w.timestamp;
      msg.timestamp_type = TimestampType::kLogAppendTime;
    }
  }
  return RecordError::kNone;
}

}  // namespace

void write_legacy_message(Bytes& out, int8_t magic, int64_t offset, int8_t attributes, int64_t timestamp,
                          std::optional<std::span<const uint8_t>> key,
                          std::optional<std::span<const uint8_t>> value) {
  Writer w;
  w.write_int64(offset);
  w.write_int32(0);   // size, patched below
  w.write_uint32(0);  // crc, patched below
  w.write_int8(magic);
  w.write_int8(attributes);
  if (magic >= 1) w.write_int64(timestamp);
  w.write_nullable_bytes(key);
  w.write_nullable_bytes(value);
  w.patch_int32(8, static_cast<int32_t>(w.size() - batch_v2::kLogOverhead));
  auto& b = w.buffer();
  uint32_t c = ieee_crc(std::span<const uint8_t>(b).subspan(kMagicOffset));
  w.patch_int32(kCrcOffset, static_cast<int32_t>(c));
  out.insert(out.end(), b.begin(), b.end());
}

Result<DecodedMessageSet, RecordError> decode_message_set(std::span<const uint8_t> message_set,
                                                          const LegacyDecodeOptions& options) {
  DecodedMessageSet result;
  size_t budget = options.max_decompressed_bytes;
  size_t pos = 0;
  RawMessage m;
  RecordError err = RecordError::kNone;
  for (;;) {
    Step s = read_entry(message_set, &pos, options.verify_crc, &m, &err);
    if (err != RecordError::kNone) return err;
    if (s == Step::kPartial) {
      result.partial = true;
      break;
    }
    if (s == Step::kEnd) break;
    int codec_id = m.attributes & legacy::kCodecMask;
    if (codec_id == 0) {
      result.messages.push_back(to_message(m, Codec::kNone));
      continue;
    }
    if (codec_id > static_cast<int>(Codec::kLz4)) return RecordError::kBadCodec;  // no zstd before v2
    err = open_wrapper(m, static_cast<Codec>(codec_id), options, &budget, &result);
    if (err != RecordError::kNone) return err;
  }
  return result;
}

Result<Bytes, RecordError> message_set_to_v2(std::span<const uint8_t> message_set,
                                             const LegacyToV2Options& options) {
  LegacyDecodeOptions dopt;
  dopt.max_decompressed_bytes = options.max_decompressed_bytes;
  auto decoded = decode_message_set(message_set, dopt);
  if (!decoded.ok()) return decoded.error();
  if (decoded->partial) return RecordError::kTruncated;
  const auto& msgs = decoded->messages;
  if (msgs.empty()) return Bytes{};

  BatchOptions bo;
  bo.partition_leader_epoch = options.partition_leader_epoch;
  bo.codec = Codec::kNone;
  for (const auto& msg : msgs) {
    if (msg.wrapper_codec != Codec::kNone) {
      bo.codec = msg.wrapper_codec;
      break;
    }
  }
  if (options.codec) bo.codec = *options.codec;
  bo.base_offset = options.assign_offsets ? options.base_offset : msgs.front().offset;
  if (msgs.front().timestamp_type == TimestampType::kLogAppendTime) {
    bo.timestamp_type = TimestampType::kLogAppendTime;
    bo.log_append_time = msgs.front().timestamp;
  }
  BatchBuilder builder(bo);
  for (size_t i = 0; i < msgs.size(); ++i) {
    int32_t delta = static_cast<int32_t>(std::min<size_t>(i, std::numeric_limits<int32_t>::max()));
    if (!options.assign_offsets) {
      int64_t d = static_cast<int64_t>(static_cast<uint64_t>(msgs[i].offset) - static_cast<uint64_t>(bo.base_offset));
      if (msgs[i].offset < bo.base_offset || d > std::numeric_limits<int32_t>::max()) return RecordError::kBadOffsets;
      delta = static_cast<int32_t>(d);
    }
    if (!builder.add(msgs[i].timestamp, msgs[i].key, msgs[i].value, {}, delta)) return RecordError::kBadOffsets;
  }
  return builder.build();
}

namespace {

// Appends one v2 batch, converted, to out.
RecordError convert_batch(const RecordBatchView& batch, const V2ToLegacyOptions& opt, Bytes& out) {
  if (batch.is_control()) return RecordError::kNone;
  auto codec = batch.codec();
  if (!codec) return RecordError::kBadCodec;
  if (*codec == Codec::kZstd) return RecordError::kBadCodec;
  auto decoded = decode_records(batch, opt.max_decompressed_bytes);
  if (!decoded.ok()) return decoded.error();
  bool log_append = batch.timestamp_type() == TimestampType::kLogAppendTime;
  int8_t ts_attr = (opt.magic == 1 && log_append) ? static_cast<int8_t>(legacy::kTimestampTypeBit) : 0;

  auto reader = decoded->reader();
  RecordView rec;
  if (*codec == Codec::kNone) {
    while (reader.next(&rec)) write_legacy_message(out, opt.magic, rec.offset, ts_attr, rec.timestamp, rec.key, rec.value);
    return reader.error();
  }
  Bytes inner;
  int64_t first = 0, last = 0, max_ts = batch_v2::kNoTimestamp;
  size_t n = 0;
  while (reader.next(&rec)) {
    if (n == 0) first = rec.offset;
    last = rec.offset;
    max_ts = n == 0 ? rec.timestamp : std::max(max_ts, rec.timestamp);
    int64_t inner_offset = opt.magic == 1 ? static_cast<int64_t>(static_cast<uint64_t>(rec.offset) -
                                                                 static_cast<uint64_t>(first))
                                          : rec.offset;
    write_legacy_message(inner, opt.magic, inner_offset, 0, rec.timestamp, rec.key, rec.value);
    ++n;
  }
  if (reader.error() != RecordError::kNone) return reader.error();
  if (n == 0) return RecordError::kNone;
  auto packed = *codec == Codec::kLz4 ? lz4_frame_compress(inner, std::nullopt, opt.magic == 0)
                                      : compress(*codec, inner);
  if (!packed.ok()) return RecordError::kCompression;
  int64_t wrapper_ts = log_append ? batch.max_timestamp() : max_ts;
  auto attrs = static_cast<int8_t>(static_cast<int>(*codec) | ts_attr);
  write_legacy_message(out, opt.magic, last, attrs, wrapper_ts, std::nullopt, std::span<const uint8_t>(*packed));
  return RecordError::kNone;
}

}  // namespace

Result<Bytes, RecordError> v2_to_message_set(std::span<const uint8_t> records, const V2ToLegacyOptions& options) {
  if (options.magic != 0 && options.magic != 1) return RecordError::kBadMagic;
  Bytes out;
  BatchSplitter split(records);
  RecordsEntry e;
  for (;;) {
    SplitStatus s = split.next(&e);
    if (s == SplitStatus::kEnd || s == SplitStatus::kPartial) break;
    if (s == SplitStatus::kCorrupt) return RecordError::kBadLength;
    if (e.magic != batch_v2::kMagic) {
      if (e.magic > options.magic) return RecordError::kBadMagic;  // v1 -> v0 is not needed: we store v2
      out.insert(out.end(), e.bytes.begin(), e.bytes.end());
      continue;
    }
    auto batch = RecordBatchView::parse(e.bytes);
    if (!batch.ok()) return batch.error();
    if (auto err = convert_batch(*batch, options, out); err != RecordError::kNone) return err;
  }
  return out;
}

}  // namespace ciuickafka::protocol
