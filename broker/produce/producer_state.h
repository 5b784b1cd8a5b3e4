// broker/produce/producer_state.h: idempotent-producer state of one
// partition: for each producer id its epoch and its last 5 batches.
//
// Kafka 3.9's rules, which check() applies to an incoming batch:
//   - an epoch older than the one known -> INVALID_PRODUCER_EPOCH;
//   - a batch equal (epoch, first and last sequence) to one of the 5
//     remembered -> a duplicate: the caller answers success with the
//     ORIGINAL offsets and writes nothing (Kafka's DUPLICATE_SEQUENCE_NUMBER,
//     which it maps to success);
//   - a producer this partition has never seen is accepted at any sequence
//     (since KIP-360 Kafka does not answer UNKNOWN_PRODUCER_ID on append: the
//     producer's state may have been expired or removed by retention);
//   - a new (higher) epoch must start at sequence 0 unless the producer was
//     unknown, else OUT_OF_ORDER_SEQUENCE_NUMBER;
//   - the same epoch must continue at last sequence + 1 (wrapping from
//     INT32_MAX to 0), else OUT_OF_ORDER_SEQUENCE_NUMBER.
// record() then adds the appended batch (a new epoch forgets the old
// epoch's batches). replay() does the same for batches read back from the
// log at load time, without checks.
//
// Snapshot format (ours, not Kafka's `<offset>.snapshot`; file
// `ciuic-producer-state` in the partition directory), big-endian:
//   magic "CKPS", version int16 (1), snapshot_offset int64 (the log end
//   offset it covers), producer_count int32, then per producer:
//   producer_id int64, epoch int16, last_update_ms int64, batch_count int8,
//   batch_count x (first_seq int32, last_seq int32, first_offset int64,
//   last_offset int64, timestamp int64); then crc32c uint32 of everything
//   before it. A file that fails any check is treated as absent.
//
// Thread-safety: none; the owner (ProduceService) locks per partition.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace ciuickafka::broker::produce {

inline constexpr size_t kRememberedBatches = 5;

struct BatchMeta {
  int32_t first_seq = 0;
  int32_t last_seq = 0;
  int64_t first_offset = 0;
  int64_t last_offset = 0;
  int64_t timestamp = -1;  // the batch's maxTimestamp (log append time if stamped)
  bool operator==(const BatchMeta&) const = default;
};

struct ProducerEntry {
  int16_t epoch = -1;
  std::deque<BatchMeta> batches;  // oldest first, at most kRememberedBatches
  int64_t last_update_ms = -1;    // broker time of the last append (expiration)
};

// What the state needs from a batch header.
struct IncomingBatch {
  int64_t producer_id = -1;
  int16_t epoch = -1;
  int32_t base_seq = -1;
  int32_t last_offset_delta = 0;
  int64_t max_timestamp = -1;

  int32_t last_seq() const;  // base_seq + last_offset_delta, wrapping like Kafka
};

enum class SeqVerdict { kAppend, kDuplicate, kInvalidEpoch, kOutOfOrder };

struct SeqCheck {
  SeqVerdict verdict = SeqVerdict::kAppend;
  BatchMeta duplicate;  // for kDuplicate: the original batch
  std::string message;  // for errors: Kafka-style explanation
};

class ProducerStateTable {
 public:
  SeqCheck check(const IncomingBatch& b) const;
  void record(const IncomingBatch& b, int64_t first_offset, int64_t last_offset, int64_t now_ms);
  // A batch read back from the log (load): no checks.
  void replay(const IncomingBatch& b, int64_t first_offset, int64_t last_offset);

  const ProducerEntry* find(int64_t producer_id) const;
  const std::unordered_map<int64_t, ProducerEntry>& producers() const { return producers_; }
  size_t size() const { return producers_.size(); }
  // Drops producers whose last append is older than now_ms - max_age_ms
  // (producer.id.expiration.ms). Entries rebuilt from the log without an
  // update time are kept.
  size_t expire(int64_t now_ms, int64_t max_age_ms);

  std::vector<uint8_t> serialize(int64_t snapshot_offset) const;
  struct Parsed;
  static std::optional<Parsed> parse(std::span<const uint8_t> bytes);

 private:
  void add(const IncomingBatch& b, int64_t first_offset, int64_t last_offset, int64_t now_ms);
  std::unordered_map<int64_t, ProducerEntry> producers_;
};

struct ProducerStateTable::Parsed {
  int64_t snapshot_offset = 0;
  ProducerStateTable table;
};

}  // namespace ciuickafka::broker::produce
