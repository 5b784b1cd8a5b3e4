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
// Transactions (Kafka 3.9's ProducerStateManager rules):
//   - a transactional batch of a producer with no open transaction here
//     opens one at its first offset; a non-transactional batch from a
//     producer with an open transaction is refused (INVALID_TXN_STATE, by
//     check_txn());
//   - a COMMIT/ABORT marker (check_marker(), then complete_txn()): an epoch
//     below the producer's -> INVALID_PRODUCER_EPOCH; a coordinator epoch
//     below the one stored for the producer -> TRANSACTION_COORDINATOR_FENCED;
//     a higher epoch raises the producer's (its remembered batches are
//     forgotten, so the new epoch starts at sequence 0); a marker for a
//     producer without an open transaction here changes nothing else;
//   - an ABORT of an open transaction adds {pid, first offset, marker
//     offset, LSO} to the aborted list (Kafka's .txnindex entry; kept in
//     memory, written to the .txnindex by the owner, trimmed below the log
//     start);
//   - a completed transaction stays "unstable" until the HW passes its
//     marker: first_unstable_offset(hw) is the smallest first offset of the
//     open transactions and of those completed above hw; the partition's
//     LSO is min(HW, that).
//
// Snapshot format: Kafka's producer snapshot, `<20-digit offset>.snapshot`
// in the partition directory (the offset, the log end it covers, is in the
// name), big-endian: version int16 (1), crc uint32 (CRC32C of every byte
// after it), entry_count int32, then entry_count 46-byte entries:
// producer_id int64, epoch int16, last_sequence int32, last_offset int64,
// offset_delta int32, timestamp int64, coordinator_epoch int32,
// current_txn_first_offset int64 (-1: none). Kafka writes one entry per
// producer (its last batch); we write one per remembered batch, oldest
// first, so that the five-batch duplicate window survives a restart:
// Kafka's reader keeps the last entry of a producer, which is the state it
// would have written itself. A producer with no remembered batch has one
// entry with last_sequence and last_offset -1 (as Kafka writes it). The
// aborted transactions are not in it: they are in the segments' .txnindex
// files (storage/txn_index.h).
//
// The format before it (ours, file `ciuic-producer-state`), read once after
// an upgrade by parse_legacy(): magic "CKPS", version int16 (2; 1 is still
// read), snapshot_offset int64, producer_count int32, then per producer:
// producer_id int64, epoch int16, last_update_ms int64, [v2:
// txn_first_offset int64, coordinator_epoch int32], batch_count int8,
// batch_count x (first_seq int32, last_seq int32, first_offset int64,
// last_offset int64, timestamp int64); [v2: aborted_count int32,
// aborted_count x (producer_id, first_offset, last_offset,
// last_stable_offset: int64 each)]; then crc32c uint32 of everything
// before it. A file that fails any check is treated as absent.
//
// Thread-safety: none; the owner (ProduceService) locks per partition.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "storage/txn_index.h"

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
  int64_t txn_first_offset = -1;  // first offset of its open transaction here (-1: none)
  int32_t coordinator_epoch = -1; // of the last marker written for it
  // Of its last data batch (maxTimestamp) or COMMIT/ABORT marker here, as
  // Kafka's lastTimestamp (DescribeProducers, the snapshot's timestamp).
  int64_t last_timestamp = -1;
};

// An aborted transaction: Kafka's AbortedTxn, as the .txnindex stores it.
using AbortedTxn = storage::TxnIndexEntry;

enum class MarkerVerdict { kAppend, kInvalidEpoch, kCoordinatorFenced };

// What the state needs from a batch header.
struct IncomingBatch {
  int64_t producer_id = -1;
  int16_t epoch = -1;
  int32_t base_seq = -1;
  int32_t last_offset_delta = 0;
  int64_t max_timestamp = -1;
  bool transactional = false;

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

  // --- transactions
  // A non-transactional batch of a producer with an open transaction:
  // false, with the message Kafka gives.
  bool check_txn(const IncomingBatch& b, std::string* message) const;
  bool has_open_txn(int64_t producer_id) const;
  MarkerVerdict check_marker(int64_t producer_id, int16_t epoch, int32_t coordinator_epoch,
                             std::string* message) const;
  // A marker at marker_offset (appended, or read back from the log) whose
  // batch carries timestamp (its maxTimestamp).
  void complete_txn(int64_t producer_id, int16_t epoch, int32_t coordinator_epoch, bool commit,
                    int64_t marker_offset, int64_t timestamp = -1);
  // Smallest first offset of a transaction not yet decided below hw
  // (INT64_MAX: none); forgets completed ones whose marker is below hw.
  int64_t first_unstable_offset(int64_t hw);
  // Aborted transactions with last_offset >= from and first_offset < upper.
  std::vector<AbortedTxn> aborted_between(int64_t from, int64_t upper) const;
  // Forgets aborted transactions whose marker is below log_start.
  void trim_aborted(int64_t log_start);
  // Nothing transactional at all: no open, unreplicated or aborted entry.
  bool txn_free() const { return open_.empty() && completed_.empty() && aborted_.empty(); }
  const std::map<int64_t, int64_t>& open_txns() const { return open_; }  // first offset -> producer id
  const std::vector<AbortedTxn>& aborted() const { return aborted_; }

  const ProducerEntry* find(int64_t producer_id) const;
  const std::unordered_map<int64_t, ProducerEntry>& producers() const { return producers_; }
  size_t size() const { return producers_.size(); }
  // Drops producers whose last append is older than now_ms - max_age_ms
  // (producer.id.expiration.ms). Entries rebuilt from the log without an
  // update time are kept (stamp_unknown_update_times gives them one).
  size_t expire(int64_t now_ms, int64_t max_age_ms);
  // Entries without an update time (rebuilt from the log) get now_ms.
  void stamp_unknown_update_times(int64_t now_ms);

  // Kafka's snapshot format (above). parse() gives every producer
  // last_update_ms = loaded_ms (the snapshot has no broker time: a producer
  // is expired producer.id.expiration.ms after the load unless it writes
  // again); nullopt for a file that fails any check.
  std::vector<uint8_t> serialize() const;
  static std::optional<ProducerStateTable> parse(std::span<const uint8_t> bytes, int64_t loaded_ms);
  // The old `ciuic-producer-state` file (with its aborted list).
  struct Parsed;
  static std::optional<Parsed> parse_legacy(std::span<const uint8_t> bytes);
  // Replaces the aborted list (read back from the .txnindex files); by
  // last_offset, ascending.
  void set_aborted(std::vector<AbortedTxn> aborted);

 private:
  void add(const IncomingBatch& b, int64_t first_offset, int64_t last_offset, int64_t now_ms);
  std::unordered_map<int64_t, ProducerEntry> producers_;
  std::map<int64_t, int64_t> open_;                      // first offset -> producer id
  std::vector<std::pair<int64_t, int64_t>> completed_;   // (first offset, marker offset) not yet below the HW
  std::vector<AbortedTxn> aborted_;                      // by last_offset, ascending
};

struct ProducerStateTable::Parsed {
  int64_t snapshot_offset = 0;
  ProducerStateTable table;
};

}  // namespace ciuickafka::broker::produce
