// broker/groups/offsets_records.cc: encoding and decoding of the
// __consumer_offsets records (see the header for the versions written).
#include "broker/groups/offsets_records.h"

#include "protocol/generated/offset_commit_record.h"
#include "protocol/records/batch_builder.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/versioned.h"
#include "protocol/wire/writer.h"

namespace ciuickafka::broker::groups {
namespace {

constexpr int16_t kOffsetKeyVersion = 1;
constexpr int16_t kGroupKeyVersion = 2;
constexpr int16_t kOffsetValueVersion = 3;
constexpr int16_t kOffsetValueWithExpireVersion = 1;
constexpr int16_t kGroupValueVersion = 3;


}  // namespace

OffsetsRecord offset_commit_record(const std::string& group, const std::string& topic, int32_t partition,
                                   const std::optional<CommittedOffset>& value) {
  protocol::OffsetCommitKey k;
  k.group = group;
  k.topic = topic;
  k.partition = partition;
  OffsetsRecord r;
  r.key = protocol::versioned_bytes(k, kOffsetKeyVersion);
  if (value) {
    protocol::OffsetCommitValue v;
    v.offset = value->offset;
    v.leader_epoch = value->leader_epoch;
    v.metadata = value->metadata;
    v.commit_timestamp = value->commit_timestamp;
    v.expire_timestamp = value->expire_timestamp;
    r.value = protocol::versioned_bytes(v, value->expire_timestamp >= 0 ? kOffsetValueWithExpireVersion : kOffsetValueVersion);
  }
  return r;
}

OffsetsRecord group_metadata_record(const std::string& group,
                                    const std::optional<protocol::GroupMetadataValue>& value) {
  protocol::GroupMetadataKey k;
  k.group = group;
  OffsetsRecord r;
  r.key = protocol::versioned_bytes(k, kGroupKeyVersion);
  if (value) r.value = protocol::versioned_bytes(*value, kGroupValueVersion);
  return r;
}

std::optional<DecodedOffsetsRecord> decode_offsets_record(
    std::span<const uint8_t> key, const std::optional<std::span<const uint8_t>>& value) {
  protocol::Reader kr(key);
  const int16_t kv = kr.read_int16();
  if (!kr.ok()) return std::nullopt;
  DecodedOffsetsRecord out;
  if (kv == 0 || kv == 1) {
    protocol::OffsetCommitKey k;
    k.decode(kr, kv);
    if (!kr.ok()) return std::nullopt;
    out.kind = DecodedOffsetsRecord::Kind::kOffset;
    out.group = std::move(k.group);
    out.topic = std::move(k.topic);
    out.partition = k.partition;
    if (value) {
      protocol::Reader vr(*value);
      const int16_t vv = vr.read_int16();
      if (!vr.ok() || vv < protocol::OffsetCommitValue::kLowestVersion ||
          vv > protocol::OffsetCommitValue::kHighestVersion)
        return std::nullopt;
      protocol::OffsetCommitValue v;
      v.decode(vr, vv);
      if (!vr.ok()) return std::nullopt;
      CommittedOffset c;
      c.offset = v.offset;
      c.leader_epoch = v.leader_epoch;
      c.metadata = std::move(v.metadata);
      c.commit_timestamp = v.commit_timestamp;
      c.expire_timestamp = v.expire_timestamp;
      out.offset = std::move(c);
    }
    return out;
  }
  if (kv == 2) {
    protocol::GroupMetadataKey k;
    k.decode(kr, kv);
    if (!kr.ok()) return std::nullopt;
    out.kind = DecodedOffsetsRecord::Kind::kGroup;
    out.group = std::move(k.group);
    if (value) {
      protocol::Reader vr(*value);
      const int16_t vv = vr.read_int16();
      if (!vr.ok() || vv < protocol::GroupMetadataValue::kLowestVersion ||
          vv > protocol::GroupMetadataValue::kHighestVersion)
        return std::nullopt;
      protocol::GroupMetadataValue v;
      v.decode(vr, vv);
      if (!vr.ok()) return std::nullopt;
      out.metadata = std::move(v);
    }
    return out;
  }
  return out;  // kOther: a record type we do not keep
}

namespace {

std::optional<protocol::Bytes> build_with(const std::vector<OffsetsRecord>& records, int64_t now_ms,
                                          const protocol::BatchOptions& opt) {
  protocol::BatchBuilder b(opt);
  for (const OffsetsRecord& r : records) {
    std::optional<std::span<const uint8_t>> value;
    if (r.value) value = std::span<const uint8_t>(*r.value);
    if (!b.add(now_ms, std::span<const uint8_t>(r.key), value)) return std::nullopt;
  }
  auto built = b.build();
  if (!built.ok()) return std::nullopt;
  return std::move(built.value());
}

}  // namespace

std::optional<protocol::Bytes> build_offsets_batch(const std::vector<OffsetsRecord>& records, int64_t now_ms) {
  return build_with(records, now_ms, protocol::BatchOptions{});
}

std::optional<protocol::Bytes> build_txn_offsets_batch(const std::vector<OffsetsRecord>& records, int64_t now_ms,
                                                       int64_t producer_id, int16_t epoch) {
  protocol::BatchOptions opt;
  opt.transactional = true;
  opt.producer_id = producer_id;
  opt.producer_epoch = epoch;
  opt.base_sequence = 0;
  return build_with(records, now_ms, opt);
}

}  // namespace ciuickafka::broker::groups
