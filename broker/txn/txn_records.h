// broker/txn/txn_records.h: the records of __transaction_state in Kafka's
// own format (TransactionLogKey v0 / TransactionLogValue v0, each an int16
// version then the struct: protocol/generated/transaction_log_record.h), so
// that Kafka's tools and a log directory copied from Kafka read the same
// thing. Kafka 3.9 writes value v0 (v1 needs transaction.version >= 1,
// which 3.9 does not enable); both are read. A null value (tombstone) means
// the transactional id expired.
//
// Also: the transaction coordinator's states with their ids (the
// TransactionStatus byte) and the names DescribeTransactions and
// ListTransactions show, and the id -> partition map (Java's
// String.hashCode, then Kafka's Utils.abs, which maps INT_MIN to 0).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/wire/types.h"

namespace ciuickafka::broker::txn {

inline constexpr const char* kTxnTopic = "__transaction_state";

enum class TxnState : int8_t {
  kEmpty = 0,
  kOngoing = 1,
  kPrepareCommit = 2,
  kPrepareAbort = 3,
  kCompleteCommit = 4,
  kCompleteAbort = 5,
  kDead = 6,
  kPrepareEpochFence = 7,
};

// PrepareCommit or PrepareAbort: decided, markers still to write.
inline bool is_prepare(TxnState s) { return s == TxnState::kPrepareCommit || s == TxnState::kPrepareAbort; }

std::string_view state_name(TxnState s);
// ListTransactions' state filter: the state named (case-sensitive, as Kafka).
std::optional<TxnState> state_from_name(std::string_view name);

using TxnPartition = std::pair<std::string, int32_t>;  // topic, partition

// What one __transaction_state record holds for a transactional id.
struct TxnRecord {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t timeout_ms = 0;
  TxnState state = TxnState::kEmpty;
  std::set<TxnPartition> partitions;
  int64_t last_update_ms = -1;
  int64_t start_ms = -1;
};

protocol::Bytes txn_key(const std::string& transactional_id);
// nullopt value: a tombstone.
std::optional<protocol::Bytes> txn_value(const std::optional<TxnRecord>& record);

struct DecodedTxnRecord {
  std::string transactional_id;
  std::optional<TxnRecord> record;  // nullopt: tombstone
};
// nullopt when the key or value does not decode (the record is skipped).
std::optional<DecodedTxnRecord> decode_txn_record(std::span<const uint8_t> key,
                                                  const std::optional<std::span<const uint8_t>>& value);

// One uncompressed v2 batch of one record, ready for Partition::append.
std::optional<protocol::Bytes> build_txn_batch(const std::string& transactional_id,
                                               const std::optional<TxnRecord>& record, int64_t now_ms);

// Kafka's partitionFor: Utils.abs(transactionalId.hashCode) % partitions.
int32_t txn_partition_for(std::string_view transactional_id, int32_t partitions);

}  // namespace ciuickafka::broker::txn
