// broker/txn/txn_records.cc: encoding and decoding of __transaction_state
// records (formats in the header).
#include "broker/txn/txn_records.h"

#include <cstdlib>
#include <map>

#include "broker/groups/partition_for.h"
#include "protocol/generated/transaction_log_record.h"
#include "protocol/records/batch_builder.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/versioned.h"
#include "protocol/wire/writer.h"

namespace ciuickafka::broker::txn {
namespace {

constexpr int16_t kKeyVersion = 0;
constexpr int16_t kValueVersion = 0;

constexpr std::string_view kNames[] = {"Empty",          "Ongoing",       "PrepareCommit", "PrepareAbort",
                                       "CompleteCommit", "CompleteAbort", "Dead",          "PrepareEpochFence"};

}  // namespace

std::string_view state_name(TxnState s) {
  const auto i = static_cast<size_t>(s);
  return i < std::size(kNames) ? kNames[i] : std::string_view("Unknown");
}

std::optional<TxnState> state_from_name(std::string_view name) {
  for (size_t i = 0; i < std::size(kNames); ++i)
    if (kNames[i] == name) return static_cast<TxnState>(i);
  return std::nullopt;
}

protocol::Bytes txn_key(const std::string& transactional_id) {
  protocol::TransactionLogKey k;
  k.transactional_id = transactional_id;
  return protocol::versioned_bytes(k, kKeyVersion);
}

std::optional<protocol::Bytes> txn_value(const std::optional<TxnRecord>& record) {
  if (!record) return std::nullopt;
  protocol::TransactionLogValue v;
  v.producer_id = record->producer_id;
  v.producer_epoch = record->producer_epoch;
  v.transaction_timeout_ms = record->timeout_ms;
  v.transaction_status = static_cast<int8_t>(record->state);
  if (record->state == TxnState::kEmpty) {
    v.transaction_partitions = std::nullopt;  // Kafka writes null partitions for Empty
  } else {
    std::map<std::string, std::vector<int32_t>> by_topic;
    for (const auto& [topic, partition] : record->partitions) by_topic[topic].push_back(partition);
    std::vector<protocol::TransactionLogValue::PartitionsSchema> parts;
    for (auto& [topic, ids] : by_topic) {
      protocol::TransactionLogValue::PartitionsSchema p;
      p.topic = topic;
      p.partition_ids = std::move(ids);
      parts.push_back(std::move(p));
    }
    v.transaction_partitions = std::move(parts);
  }
  v.transaction_last_update_timestamp_ms = record->last_update_ms;
  v.transaction_start_timestamp_ms = record->start_ms;
  return protocol::versioned_bytes(v, kValueVersion);
}

std::optional<DecodedTxnRecord> decode_txn_record(std::span<const uint8_t> key,
                                                  const std::optional<std::span<const uint8_t>>& value) {
  protocol::Reader kr(key);
  const int16_t kv = kr.read_int16();
  if (!kr.ok() || kv != 0) return std::nullopt;
  protocol::TransactionLogKey k;
  k.decode(kr, kv);
  if (!kr.ok()) return std::nullopt;
  DecodedTxnRecord out;
  out.transactional_id = std::move(k.transactional_id);
  if (!value) return out;
  protocol::Reader vr(*value);
  const int16_t vv = vr.read_int16();
  if (!vr.ok() || vv < protocol::TransactionLogValue::kLowestVersion ||
      vv > protocol::TransactionLogValue::kHighestVersion)
    return std::nullopt;
  protocol::TransactionLogValue v;
  v.decode(vr, vv);
  if (!vr.ok()) return std::nullopt;
  if (v.transaction_status < 0 || v.transaction_status > static_cast<int8_t>(TxnState::kPrepareEpochFence))
    return std::nullopt;
  TxnRecord r;
  r.producer_id = v.producer_id;
  r.producer_epoch = v.producer_epoch;
  r.timeout_ms = v.transaction_timeout_ms;
  r.state = static_cast<TxnState>(v.transaction_status);
  if (v.transaction_partitions)
    for (const auto& p : *v.transaction_partitions)
      for (int32_t id : p.partition_ids) r.partitions.emplace(p.topic, id);
  r.last_update_ms = v.transaction_last_update_timestamp_ms;
  r.start_ms = v.transaction_start_timestamp_ms;
  out.record = std::move(r);
  return out;
}

std::optional<protocol::Bytes> build_txn_batch(const std::string& transactional_id,
                                               const std::optional<TxnRecord>& record, int64_t now_ms) {
  const protocol::Bytes key = txn_key(transactional_id);
  const std::optional<protocol::Bytes> value = txn_value(record);
  protocol::BatchOptions opt;
  protocol::BatchBuilder b(opt);
  std::optional<std::span<const uint8_t>> v;
  if (value) v = std::span<const uint8_t>(*value);
  if (!b.add(now_ms, std::span<const uint8_t>(key), v)) return std::nullopt;
  auto built = b.build();
  if (!built.ok()) return std::nullopt;
  return std::move(built.value());
}

int32_t txn_partition_for(std::string_view transactional_id, int32_t partitions) {
  return groups::partition_for(transactional_id, partitions);  // the same formula as Kafka's
}

}  // namespace ciuickafka::broker::txn
