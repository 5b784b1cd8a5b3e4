// broker/groups/offsets_records.h: the records of __consumer_offsets, in
// Kafka's own format so that tools reading the topic (Burrow, kafka-console-
// consumer's offsets formatter) and a log directory copied from Kafka agree.
//
// Every record key and value is an int16 schema version followed by the
// struct at that version (protocol/generated/{offset_commit,group_metadata}_record.h):
//   key version 0/1: OffsetCommitKey (group, topic, partition); we write 1
//   key version 2:   GroupMetadataKey (group)
//   key version 3+:  records of the KIP-848 consumer protocol: skipped
//   OffsetCommitValue: version 3 (with leader epoch), or 1 when an expire
//     timestamp is set (OffsetCommit v2-v4 retention_time_ms), as Kafka 3.9
//   GroupMetadataValue: version 3, as Kafka 3.9 writes it
// A null value is a tombstone: the key's state is deleted.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/generated/group_metadata_record.h"
#include "protocol/wire/types.h"

namespace ciuickafka::broker::groups {

struct CommittedOffset {
  int64_t offset = -1;
  int32_t leader_epoch = -1;
  std::string metadata;
  int64_t commit_timestamp = 0;
  int64_t expire_timestamp = -1;
};

// A key/value to append (value nullopt: tombstone).
struct OffsetsRecord {
  protocol::Bytes key;
  std::optional<protocol::Bytes> value;
};

OffsetsRecord offset_commit_record(const std::string& group, const std::string& topic, int32_t partition,
                                   const std::optional<CommittedOffset>& value);
OffsetsRecord group_metadata_record(const std::string& group,
                                    const std::optional<protocol::GroupMetadataValue>& value);

// One record read back.
struct DecodedOffsetsRecord {
  enum class Kind { kOffset, kGroup, kOther } kind = Kind::kOther;
  std::string group;
  std::string topic;        // kOffset
  int32_t partition = 0;    // kOffset
  std::optional<CommittedOffset> offset;                 // kOffset; nullopt: tombstone
  std::optional<protocol::GroupMetadataValue> metadata;  // kGroup; nullopt: tombstone
};

// nullopt when the key or value does not decode (the record is skipped).
std::optional<DecodedOffsetsRecord> decode_offsets_record(
    std::span<const uint8_t> key, const std::optional<std::span<const uint8_t>>& value);

// One uncompressed v2 batch of the records (CreateTime now_ms), ready for
// Partition::append; nullopt when building failed.
std::optional<protocol::Bytes> build_offsets_batch(const std::vector<OffsetsRecord>& records, int64_t now_ms);
// The same as a transactional batch of producer_id at epoch (TxnOffsetCommit:
// Kafka writes base sequence 0).
std::optional<protocol::Bytes> build_txn_offsets_batch(const std::vector<OffsetsRecord>& records, int64_t now_ms,
                                                       int64_t producer_id, int16_t epoch);

}  // namespace ciuickafka::broker::groups
