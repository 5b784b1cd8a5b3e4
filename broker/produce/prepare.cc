// broker/produce/prepare.cc: validation, conversion and recompression of a
// partition's produced records (rules in prepare.h).
#include "broker/produce/prepare.h"

#include <algorithm>
#include <optional>

#include "protocol/records/batch_builder.h"
#include "protocol/records/legacy.h"
#include "protocol/records/record_batch.h"

namespace ciuickafka::broker::produce {
namespace {

using protocol::Codec;
using protocol::ErrorCode;
using protocol::RecordBatchView;
using protocol::RecordError;
namespace v2 = protocol::batch_v2;

void fail(PreparedRecords& out, ErrorCode code, std::string message) {
  out.error = code;
  out.message = std::move(message);
}

// Differences in uint64 are exact for a > b whatever the int64 values.
bool farther_than(int64_t a, int64_t b, int64_t limit) {
  return a > b && static_cast<uint64_t>(a) - static_cast<uint64_t>(b) > static_cast<uint64_t>(limit);
}

// nullopt when ts is acceptable under CreateTime, else Kafka's message.
std::optional<std::string> timestamp_problem(int64_t ts, const TopicSettings& s, int64_t now_ms) {
  if (ts == v2::kNoTimestamp) return std::nullopt;
  if (farther_than(now_ms, ts, s.timestamp_before_max_ms) || farther_than(ts, now_ms, s.timestamp_after_max_ms)) {
    return "Timestamp " + std::to_string(ts) + " of message is out of range. The timestamp should be within [" +
           std::to_string(s.timestamp_before_max_ms == INT64_MAX ? INT64_MIN : now_ms - s.timestamp_before_max_ms) +
           ", " + std::to_string(s.timestamp_after_max_ms == INT64_MAX ? INT64_MAX : now_ms + s.timestamp_after_max_ms) +
           "]";
  }
  return std::nullopt;
}

void put_be64(std::span<uint8_t> b, size_t at, int64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (56 - 8 * i));
}

std::string too_large_message(size_t size, int64_t max) {
  return "The record batch of " + std::to_string(size) + " bytes is larger than max.message.bytes (" +
         std::to_string(max) + ")";
}

// One v2 batch (already split out of the request): checks it and appends
// what the log will store to out.buffer, or, given in_place (the same bytes,
// writable) and kept as sent, patches it there and sets out.in_place.
// Returns false on error (out set).
bool prepare_v2(std::span<const uint8_t> bytes, int16_t api_version, const TopicSettings& s, int64_t now_ms,
                PreparedRecords& out, std::span<uint8_t> in_place = {}) {
  auto parsed = RecordBatchView::parse_and_validate(bytes);
  if (!parsed.ok()) {
    fail(out, ErrorCode::CORRUPT_MESSAGE,
         "Record batch is corrupt: " + std::string(protocol::to_string(parsed.error())));
    return false;
  }
  const RecordBatchView batch = parsed.value();
  if (static_cast<int64_t>(batch.size_bytes()) > s.max_message_bytes) {
    fail(out, ErrorCode::MESSAGE_TOO_LARGE, too_large_message(batch.size_bytes(), s.max_message_bytes));
    return false;
  }
  const std::optional<Codec> codec = batch.codec();
  if (!codec) {
    fail(out, ErrorCode::CORRUPT_MESSAGE, "Unknown compression type id " + std::to_string(batch.codec_id()));
    return false;
  }
  if (*codec == Codec::kZstd && api_version < 7) {
    fail(out, ErrorCode::UNSUPPORTED_COMPRESSION_TYPE,
         "Produce requests with version " + std::to_string(api_version) + " are not allowed to use ZStandard compression");
    return false;
  }
  if (batch.is_transactional() && batch.producer_id() < 0) {
    fail(out, ErrorCode::INVALID_RECORD, "Transactional batch without a producer id");
    return false;
  }
  if (batch.is_control()) {
    fail(out, ErrorCode::INVALID_RECORD, "Clients are not allowed to write control records");
    return false;
  }
  if (batch.base_offset() != 0) {  // the broker assigns offsets; clients send 0 (Kafka's LogValidator)
    fail(out, ErrorCode::INVALID_RECORD,
         "The baseOffset of the record batch should be 0, but it is " + std::to_string(batch.base_offset()));
    return false;
  }
  if (batch.record_count() <= 0) {
    fail(out, ErrorCode::INVALID_RECORD, "Invalid reported count for record batch: " + std::to_string(batch.record_count()));
    return false;
  }
  if (batch.last_offset_delta() < 0) {
    fail(out, ErrorCode::INVALID_RECORD, "Batch has an invalid offset range");
    return false;
  }
  if (static_cast<int64_t>(batch.last_offset_delta()) + 1 != batch.record_count()) {
    fail(out, ErrorCode::INVALID_RECORD, "Inconsistent batch offset range (" + std::to_string(batch.last_offset_delta() + 1) +
                                            ") and record count (" + std::to_string(batch.record_count()) + ")");
    return false;
  }
  if (batch.producer_id() >= 0 && batch.base_sequence() < 0) {
    fail(out, ErrorCode::INVALID_RECORD, "Invalid sequence number " + std::to_string(batch.base_sequence()));
    return false;
  }

  const bool compressed = *codec != Codec::kNone;
  const bool recompress = s.target_codec.has_value() && *s.target_codec != *codec;
  const bool look_inside = !compressed || recompress || s.compacted || s.validate_compressed;
  const size_t start = out.buffer.size();
  int64_t max_ts = batch.max_timestamp();
  // The batch as the producer sent it: in the request's own bytes when
  // writable, else copied.
  auto keep_as_sent = [&]() -> std::span<uint8_t> {
    if (!in_place.empty()) return in_place.first(batch.size_bytes());
    out.buffer.insert(out.buffer.end(), bytes.begin(), bytes.begin() + static_cast<long>(batch.size_bytes()));
    return std::span<uint8_t>(out.buffer.data() + start, batch.size_bytes());
  };
  std::span<uint8_t> stored;

  if (look_inside) {
    auto decoded = protocol::decode_records(batch, decompress_limit(s.max_message_bytes));
    if (!decoded.ok()) {
      const RecordError e = decoded.error();
      fail(out, e == RecordError::kTooLarge ? ErrorCode::INVALID_RECORD : ErrorCode::CORRUPT_MESSAGE,
           "Record batch payload does not decode: " + std::string(protocol::to_string(e)));
      return false;
    }
    std::optional<protocol::BatchBuilder> builder;
    if (recompress) {
      protocol::BatchOptions opt;
      opt.codec = *s.target_codec;
      opt.level = s.level;
      opt.producer_id = batch.producer_id();
      opt.producer_epoch = batch.producer_epoch();
      opt.base_sequence = batch.base_sequence();
      opt.transactional = batch.is_transactional();
      builder.emplace(opt);
    }
    protocol::RecordReader reader = decoded.value().reader();
    protocol::RecordView rec;
    int32_t index = 0;
    bool timestamp_error = false;
    int64_t computed_max = v2::kNoTimestamp;
    while (reader.next(&rec)) {
      if (rec.offset_delta != index) {
        out.record_errors.push_back({index, "Record offset delta " + std::to_string(rec.offset_delta) +
                                                " where " + std::to_string(index) + " was expected"});
      } else if (!s.log_append_time) {
        if (auto problem = timestamp_problem(rec.timestamp, s, now_ms)) {
          out.record_errors.push_back({index, *problem});
          timestamp_error = true;
        }
      }
      if (s.compacted && !rec.key) {
        out.record_errors.push_back({index, "Compacted topic cannot accept message without key"});
      }
      computed_max = std::max(computed_max, rec.timestamp);
      if (builder) builder->add(rec);
      ++index;
    }
    if (reader.error() != RecordError::kNone) {
      out.record_errors.clear();
      fail(out, ErrorCode::INVALID_RECORD,
           "Found invalid record structure: " + std::string(protocol::to_string(reader.error())));
      return false;
    }
    if (!out.record_errors.empty()) {
      fail(out, timestamp_error ? ErrorCode::INVALID_TIMESTAMP : ErrorCode::INVALID_RECORD,
           timestamp_error ? "One or more records have been rejected due to invalid timestamp"
                           : "One or more records have been rejected");
      return false;
    }
    if (builder) {
      auto built = builder->build();
      if (!built.ok()) {
        fail(out, ErrorCode::CORRUPT_MESSAGE, "Recompression failed: " + std::string(protocol::to_string(built.error())));
        return false;
      }
      if (static_cast<int64_t>(built.value().size()) > s.max_message_bytes) {
        fail(out, ErrorCode::MESSAGE_TOO_LARGE, too_large_message(built.value().size(), s.max_message_bytes));
        return false;
      }
      out.buffer.insert(out.buffer.end(), built.value().begin(), built.value().end());
      stored = std::span<uint8_t>(out.buffer.data() + start, out.buffer.size() - start);
    } else {
      // Read before the bytes may be rewritten (in place, batch views them).
      const bool fix_max = !s.log_append_time && batch.timestamp_type() == protocol::TimestampType::kCreateTime &&
                           computed_max != batch.max_timestamp();
      stored = keep_as_sent();
      // Under CreateTime the header's maxTimestamp must be the records'
      // largest (sarama sends -1); fix it as Kafka does (inside the CRC).
      if (fix_max) {
        put_be64(stored, v2::kMaxTimestampOffset, computed_max);
        protocol::rewrite_crc(stored);
      }
    }
    max_ts = computed_max;
  } else {
    // `producer` compression, compressed batch, and
    // ciuic.produce.validate.compressed=false: header checks only.
    if (!s.log_append_time) {
      for (int64_t ts : {batch.base_timestamp(), batch.max_timestamp()}) {
        if (auto problem = timestamp_problem(ts, s, now_ms)) {
          fail(out, ErrorCode::INVALID_TIMESTAMP, *problem);
          return false;
        }
      }
    }
    stored = keep_as_sent();
  }

  const bool kept_in_place = !in_place.empty() && stored.data() == in_place.data();
  if (s.log_append_time) {
    protocol::set_log_append_time(stored, now_ms);
    out.log_append_time = now_ms;
    max_ts = now_ms;
  }
  auto final_view = RecordBatchView::parse(stored);
  if (!final_view.ok()) {  // cannot happen: we built or copied a valid batch
    fail(out, ErrorCode::CORRUPT_MESSAGE, "internal error: stored batch does not parse");
    return false;
  }
  const RecordBatchView& fb = final_view.value();
  PreparedBatch pb;
  pb.position = kept_in_place ? 0 : start;
  pb.size = stored.size();
  if (kept_in_place) out.in_place = stored;
  pb.producer_id = fb.producer_id();
  pb.producer_epoch = fb.producer_epoch();
  pb.base_sequence = fb.base_sequence();
  pb.last_offset_delta = fb.last_offset_delta();
  pb.record_count = fb.record_count();
  pb.max_timestamp = max_ts;
  pb.transactional = fb.is_transactional();
  out.batches.push_back(pb);
  out.record_count += static_cast<uint64_t>(pb.record_count);
  return true;
}

// A batch's failed checks: INVALID_RECORD and INVALID_TIMESTAMP are Kafka's
// LogValidator's (framing, CRC and size errors are not).
PreparedRecords validator_failed(PreparedRecords& out) {
  out.validator_error = out.error == ErrorCode::INVALID_RECORD || out.error == ErrorCode::INVALID_TIMESTAMP;
  return std::move(out);
}

ErrorCode legacy_error(RecordError e) {
  switch (e) {
    case RecordError::kBadCodec:
      return ErrorCode::UNSUPPORTED_COMPRESSION_TYPE;
    case RecordError::kTooLarge:
      return ErrorCode::INVALID_RECORD;
    default:
      return ErrorCode::CORRUPT_MESSAGE;
  }
}

}  // namespace

PreparedRecords prepare_records(std::span<const uint8_t> records, int16_t api_version, const TopicSettings& s,
                                int64_t now_ms, std::span<uint8_t> writable) {
  PreparedRecords out;
  if (!writable.empty() && (writable.data() != records.data() || writable.size() != records.size())) writable = {};
  const std::string version = std::to_string(api_version);
  if (records.empty()) {
    if (api_version >= 3)
      fail(out, ErrorCode::INVALID_RECORD,
           "Produce requests with version " + version + " must have at least one record batch per partition");
    return out;
  }
  protocol::BatchSplitter splitter(records);
  std::vector<protocol::RecordsEntry> entries;
  protocol::RecordsEntry entry;
  for (;;) {
    const protocol::SplitStatus st = splitter.next(&entry);
    if (st == protocol::SplitStatus::kEnd) break;
    if (st != protocol::SplitStatus::kEntry) {
      fail(out, ErrorCode::CORRUPT_MESSAGE, "The records are truncated or their framing is corrupt");
      return out;
    }
    entries.push_back(entry);
  }
  const bool any_legacy = std::any_of(entries.begin(), entries.end(), [](const auto& e) { return e.magic < 2; });
  const bool any_v2 = std::any_of(entries.begin(), entries.end(), [](const auto& e) { return e.magic == 2; });
  if (api_version >= 3) {
    if (any_legacy) {
      fail(out, ErrorCode::INVALID_RECORD,
           "Produce requests with version " + version + " are only allowed to contain record batches with magic version 2");
      return out;
    }
    if (entries.size() != 1) {
      fail(out, ErrorCode::INVALID_RECORD,
           "Produce requests with version " + version + " are only allowed to contain exactly one record batch per partition");
      return out;
    }
  }
  if (any_legacy && any_v2) {
    fail(out, ErrorCode::CORRUPT_MESSAGE, "A message set mixes magic 2 batches with magic 0/1 messages");
    return out;
  }
  // One v2 batch (every Produce v3+) is checked and kept where it arrived
  // when the caller can let it be rewritten; anything else is copied.
  const bool in_place = !writable.empty() && entries.size() == 1 && !any_legacy;
  if (!in_place) out.buffer.reserve(records.size());
  if (any_legacy) {
    for (const auto& e : entries) {
      if (static_cast<int64_t>(e.bytes.size()) > s.max_message_bytes) {
        fail(out, ErrorCode::MESSAGE_TOO_LARGE, too_large_message(e.bytes.size(), s.max_message_bytes));
        return out;
      }
    }
    protocol::LegacyToV2Options opt;
    opt.assign_offsets = true;
    opt.codec = s.target_codec;
    opt.max_decompressed_bytes = decompress_limit(s.max_message_bytes);
    auto converted = protocol::message_set_to_v2(records, opt);
    if (!converted.ok()) {
      fail(out, legacy_error(converted.error()),
           "Message set is invalid: " + std::string(protocol::to_string(converted.error())));
      return out;
    }
    // The converted batch is ours and valid; check it like a v2 batch (its
    // codec is already the target, so nothing is recompressed twice).
    TopicSettings as_converted = s;
    as_converted.target_codec.reset();
    if (!prepare_v2(converted.value(), 11, as_converted, now_ms, out)) return validator_failed(out);
  } else {
    for (const auto& e : entries) {
      std::span<uint8_t> mine;
      if (in_place) mine = writable.subspan(static_cast<size_t>(e.bytes.data() - records.data()), e.bytes.size());
      if (!prepare_v2(e.bytes, api_version, s, now_ms, out, mine)) return validator_failed(out);
    }
  }
  if (static_cast<int64_t>(out.stored().size()) > s.segment_bytes) {
    fail(out, ErrorCode::RECORD_LIST_TOO_LARGE,
         "The request included message batches totalling " + std::to_string(out.stored().size()) +
             " bytes, larger than segment.bytes (" + std::to_string(s.segment_bytes) + ")");
  }
  return out;
}

bool compresses_anew(std::span<const uint8_t> records, const TopicSettings& s) {
  protocol::BatchSplitter splitter(records);
  protocol::RecordsEntry e;
  while (splitter.next(&e) == protocol::SplitStatus::kEntry) {
    // Attributes: after offset, length, leader epoch, magic and CRC in a v2
    // batch (byte 22, low byte of an int16); after offset, size, CRC and
    // magic in a v0/v1 message (byte 17). The low 3 bits are the codec.
    const size_t at = e.magic == 2 ? 22 : 17;
    if (e.bytes.size() <= at) continue;
    const auto codec = protocol::codec_from_id(static_cast<uint8_t>(e.bytes[at] & 0x07));
    if (!codec) continue;  // refused by prepare_records
    if (e.magic < 2) {
      if (*codec != Codec::kNone || (s.target_codec && *s.target_codec != Codec::kNone)) return true;
    } else if (s.target_codec && *s.target_codec != *codec) {
      return true;
    }
  }
  return false;
}

size_t compressed_batch_bytes(std::span<const uint8_t> records) {
  protocol::BatchSplitter splitter(records);
  protocol::RecordsEntry e;
  size_t n = 0;
  while (splitter.next(&e) == protocol::SplitStatus::kEntry) {
    if (e.magic != 2 || e.bytes.size() <= 22) continue;  // v0/v1: compresses_anew's case
    if ((e.bytes[22] & 0x07) != 0) n += e.bytes.size();  // attributes' codec bits (see above)
  }
  return n;
}

}  // namespace ciuickafka::broker::produce
