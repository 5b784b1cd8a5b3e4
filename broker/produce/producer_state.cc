// broker/produce/producer_state.cc: sequence checks and the snapshot codec
// of ProducerStateTable (see the header for the rules and the format).
#include "broker/produce/producer_state.h"

#include <algorithm>
#include <limits>

#include "protocol/records/crc32c.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"

namespace ciuickafka::broker::produce {
namespace {

constexpr uint8_t kSnapshotMagic[4] = {'C', 'K', 'P', 'S'};
constexpr int16_t kSnapshotVersion = 2;
constexpr int16_t kSnapshotVersionV1 = 1;
constexpr int16_t kKafkaSnapshotVersion = 1;
constexpr size_t kKafkaSnapshotEntrySize = 46;

// Kafka's DefaultRecordBatch.decrementSequence: sequences wrap from INT32_MAX to 0.
int32_t decrement_sequence(int32_t seq, int32_t by) {
  if (seq < by) return static_cast<int32_t>(std::numeric_limits<int32_t>::max() - (by - seq) + 1);
  return seq - by;
}

bool in_sequence(int32_t last_seq, int32_t next_seq) {
  return next_seq == static_cast<int32_t>(static_cast<int64_t>(last_seq) + 1) ||
         (next_seq == 0 && last_seq == std::numeric_limits<int32_t>::max());
}

}  // namespace

int32_t IncomingBatch::last_seq() const {
  const int64_t sum = static_cast<int64_t>(base_seq) + last_offset_delta;
  const int64_t max = std::numeric_limits<int32_t>::max();
  return static_cast<int32_t>(sum > max ? sum - max - 1 : sum);
}

SeqCheck ProducerStateTable::check(const IncomingBatch& b) const {
  SeqCheck out;
  const ProducerEntry* e = find(b.producer_id);
  if (e == nullptr) return out;  // unknown producer: any sequence (KIP-360)
  if (b.epoch < e->epoch) {
    out.verdict = SeqVerdict::kInvalidEpoch;
    out.message = "Epoch of producer " + std::to_string(b.producer_id) + " is " + std::to_string(b.epoch) +
                  ", which is smaller than the last seen epoch " + std::to_string(e->epoch);
    return out;
  }
  if (b.epoch == e->epoch) {
    const int32_t last = b.last_seq();
    for (const BatchMeta& m : e->batches) {
      if (m.first_seq == b.base_seq && m.last_seq == last) {
        out.verdict = SeqVerdict::kDuplicate;
        out.duplicate = m;
        return out;
      }
    }
    const int32_t current = e->batches.empty() ? -1 : e->batches.back().last_seq;
    if (!in_sequence(current, b.base_seq)) {
      out.verdict = SeqVerdict::kOutOfOrder;
      out.message = "Out of order sequence number for producer " + std::to_string(b.producer_id) + ": " +
                    std::to_string(b.base_seq) + " (incoming seq. number), " + std::to_string(current) +
                    " (current end sequence number)";
    }
    return out;
  }
  // A newer epoch: it starts over at sequence 0.
  if (b.base_seq != 0) {
    out.verdict = SeqVerdict::kOutOfOrder;
    out.message = "Invalid sequence number for new epoch of producer " + std::to_string(b.producer_id) + ": " +
                  std::to_string(b.epoch) + " (request epoch), " + std::to_string(b.base_seq) +
                  " (seq. number), " + std::to_string(e->epoch) + " (current producer epoch)";
  }
  return out;
}

void ProducerStateTable::add(const IncomingBatch& b, int64_t first_offset, int64_t last_offset, int64_t now_ms) {
  ProducerEntry& e = producers_[b.producer_id];
  if (e.epoch != b.epoch) {
    e.epoch = b.epoch;
    e.batches.clear();
  }
  e.batches.push_back(BatchMeta{b.base_seq, b.last_seq(), first_offset, last_offset, b.max_timestamp});
  e.last_timestamp = b.max_timestamp;
  while (e.batches.size() > kRememberedBatches) e.batches.pop_front();
  if (now_ms >= 0) e.last_update_ms = now_ms;
  if (b.transactional && e.txn_first_offset < 0) {
    e.txn_first_offset = first_offset;
    open_[first_offset] = b.producer_id;
  }
}

bool ProducerStateTable::check_txn(const IncomingBatch& b, std::string* message) const {
  if (b.transactional) return true;
  const ProducerEntry* e = find(b.producer_id);
  if (e == nullptr || e->txn_first_offset < 0) return true;
  if (message != nullptr)
    *message = "Expected transactional write from producer " + std::to_string(b.producer_id) +
               " at offset " + std::to_string(e->txn_first_offset) + " in partition with an open transaction";
  return false;
}

bool ProducerStateTable::has_open_txn(int64_t producer_id) const {
  const ProducerEntry* e = find(producer_id);
  return e != nullptr && e->txn_first_offset >= 0;
}

MarkerVerdict ProducerStateTable::check_marker(int64_t producer_id, int16_t epoch, int32_t coordinator_epoch,
                                               std::string* message) const {
  const ProducerEntry* e = find(producer_id);
  if (e == nullptr) return MarkerVerdict::kAppend;
  if (epoch < e->epoch) {
    if (message != nullptr)
      *message = "Producer " + std::to_string(producer_id) + "'s epoch in the marker (" + std::to_string(epoch) +
                 ") is older than its current epoch " + std::to_string(e->epoch);
    return MarkerVerdict::kInvalidEpoch;
  }
  if (coordinator_epoch < e->coordinator_epoch) {
    if (message != nullptr)
      *message = "Coordinator epoch " + std::to_string(coordinator_epoch) + " of the marker for producer " +
                 std::to_string(producer_id) + " is older than the last one seen, " +
                 std::to_string(e->coordinator_epoch);
    return MarkerVerdict::kCoordinatorFenced;
  }
  return MarkerVerdict::kAppend;
}

void ProducerStateTable::complete_txn(int64_t producer_id, int16_t epoch, int32_t coordinator_epoch, bool commit,
                                      int64_t marker_offset, int64_t timestamp) {
  ProducerEntry& e = producers_[producer_id];
  if (epoch > e.epoch) {  // a marker may bump the epoch (a fenced producer's transaction)
    e.epoch = epoch;
    e.batches.clear();
  }
  e.coordinator_epoch = std::max(e.coordinator_epoch, coordinator_epoch);
  e.last_timestamp = timestamp;
  if (e.txn_first_offset < 0) return;
  const int64_t first = e.txn_first_offset;
  e.txn_first_offset = -1;
  open_.erase(first);
  completed_.emplace_back(first, marker_offset);
  if (!commit) {
    AbortedTxn a;
    a.producer_id = producer_id;
    a.first_offset = first;
    a.last_offset = marker_offset;
    a.last_stable_offset = open_.empty() ? marker_offset + 1 : std::min(open_.begin()->first, marker_offset + 1);
    if (aborted_.empty() || aborted_.back().last_offset < marker_offset) aborted_.push_back(a);
  }
}

int64_t ProducerStateTable::first_unstable_offset(int64_t hw) {
  int64_t first = open_.empty() ? std::numeric_limits<int64_t>::max() : open_.begin()->first;
  for (auto it = completed_.begin(); it != completed_.end();) {
    if (it->second < hw) {
      it = completed_.erase(it);
      continue;
    }
    first = std::min(first, it->first);
    ++it;
  }
  return first;
}

std::vector<AbortedTxn> ProducerStateTable::aborted_between(int64_t from, int64_t upper) const {
  std::vector<AbortedTxn> out;
  auto it = std::lower_bound(aborted_.begin(), aborted_.end(), from,
                             [](const AbortedTxn& a, int64_t off) { return a.last_offset < off; });
  for (; it != aborted_.end(); ++it)
    if (it->first_offset < upper) out.push_back(*it);
  return out;
}

void ProducerStateTable::trim_aborted(int64_t log_start) {
  auto it = std::lower_bound(aborted_.begin(), aborted_.end(), log_start,
                             [](const AbortedTxn& a, int64_t off) { return a.last_offset < off; });
  aborted_.erase(aborted_.begin(), it);
}

void ProducerStateTable::record(const IncomingBatch& b, int64_t first_offset, int64_t last_offset, int64_t now_ms) {
  add(b, first_offset, last_offset, now_ms);
}

void ProducerStateTable::replay(const IncomingBatch& b, int64_t first_offset, int64_t last_offset) {
  // An older epoch in the log than the one known cannot follow a newer one;
  // skip it rather than forget the newer epoch's batches.
  const ProducerEntry* e = find(b.producer_id);
  if (e != nullptr && b.epoch < e->epoch) return;
  add(b, first_offset, last_offset, -1);
}

const ProducerEntry* ProducerStateTable::find(int64_t producer_id) const {
  auto it = producers_.find(producer_id);
  return it == producers_.end() ? nullptr : &it->second;
}

size_t ProducerStateTable::expire(int64_t now_ms, int64_t max_age_ms) {
  size_t n = 0;
  for (auto it = producers_.begin(); it != producers_.end();) {
    // A producer with an open transaction is never expired (Kafka's isProducerExpired).
    if (it->second.txn_first_offset < 0 && it->second.last_update_ms >= 0 &&
        now_ms - it->second.last_update_ms > max_age_ms) {
      it = producers_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

void ProducerStateTable::stamp_unknown_update_times(int64_t now_ms) {
  for (auto& [id, e] : producers_)
    if (e.last_update_ms < 0) e.last_update_ms = now_ms;
}

std::vector<uint8_t> ProducerStateTable::serialize() const {
  // Kafka's producer snapshot (version 1): int16 version, uint32 CRC32C of
  // what follows it, int32 entry count, 46-byte entries. Each remembered
  // batch is one entry, oldest first; a producer without one has a single
  // entry with last sequence and last offset -1.
  protocol::Writer w;
  w.write_int16(kKafkaSnapshotVersion);
  w.write_int32(0);  // the CRC, filled in below
  int32_t count = 0;
  for (const auto& [pid, e] : producers_) count += e.batches.empty() ? 1 : static_cast<int32_t>(e.batches.size());
  w.write_int32(count);
  const auto entry = [&](int64_t pid, const ProducerEntry& e, const BatchMeta* m) {
    w.write_int64(pid);
    w.write_int16(e.epoch);
    w.write_int32(m ? m->last_seq : -1);
    w.write_int64(m ? m->last_offset : -1);
    w.write_int32(m ? static_cast<int32_t>(m->last_offset - m->first_offset) : 0);
    // The producer's last entry carries its last timestamp (Kafka writes
    // one entry per producer, with lastTimestamp); earlier ones their batch's.
    const bool last = m == nullptr || m == &e.batches.back();
    w.write_int64(last ? e.last_timestamp : m->timestamp);
    w.write_int32(e.coordinator_epoch);
    w.write_int64(e.txn_first_offset);
  };
  for (const auto& [pid, e] : producers_) {
    if (e.batches.empty()) entry(pid, e, nullptr);
    for (const BatchMeta& m : e.batches) entry(pid, e, &m);
  }
  std::vector<uint8_t> out = w.release();
  const uint32_t crc = protocol::crc32c(std::span<const uint8_t>(out).subspan(6));
  for (int i = 0; i < 4; ++i) out[2 + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  return out;
}

std::optional<ProducerStateTable> ProducerStateTable::parse(std::span<const uint8_t> bytes, int64_t loaded_ms) {
  if (bytes.size() < 10) return std::nullopt;
  protocol::Reader r(bytes);
  if (r.read_int16() != kKafkaSnapshotVersion) return std::nullopt;
  const auto crc = static_cast<uint32_t>(r.read_int32());
  if (crc != protocol::crc32c(bytes.subspan(6))) return std::nullopt;
  const int32_t count = r.read_int32();
  if (!r.ok() || count < 0 || static_cast<uint64_t>(count) * kKafkaSnapshotEntrySize != r.remaining())
    return std::nullopt;
  ProducerStateTable t;
  for (int32_t i = 0; i < count; ++i) {
    const int64_t pid = r.read_int64();
    const int16_t epoch = r.read_int16();
    const int32_t last_seq = r.read_int32();
    const int64_t last_offset = r.read_int64();
    const int32_t delta = r.read_int32();
    const int64_t timestamp = r.read_int64();
    const int32_t coordinator_epoch = r.read_int32();
    const int64_t txn_first = r.read_int64();
    if (!r.ok() || delta < 0) return std::nullopt;
    ProducerEntry& e = t.producers_[pid];
    // Later entries of a producer are its later batches (Kafka's reader
    // keeps the last: the same state).
    if (epoch != e.epoch) e.batches.clear();
    e.epoch = epoch;
    e.coordinator_epoch = coordinator_epoch;
    e.last_update_ms = loaded_ms;
    if (e.txn_first_offset >= 0) t.open_.erase(e.txn_first_offset);
    e.txn_first_offset = txn_first;
    if (txn_first >= 0) t.open_[txn_first] = pid;
    e.last_timestamp = timestamp;  // the producer's last entry's stands
    if (last_offset < 0 || last_seq < 0) continue;
    BatchMeta m;
    m.last_seq = last_seq;
    m.first_seq = decrement_sequence(last_seq, delta);
    m.last_offset = last_offset;
    m.first_offset = last_offset - delta;
    m.timestamp = timestamp;
    e.batches.push_back(m);
    if (e.batches.size() > kRememberedBatches) e.batches.pop_front();
  }
  return t;
}

void ProducerStateTable::set_aborted(std::vector<AbortedTxn> aborted) { aborted_ = std::move(aborted); }

std::optional<ProducerStateTable::Parsed> ProducerStateTable::parse_legacy(std::span<const uint8_t> bytes) {
  if (bytes.size() < 4 + 2 + 8 + 4 + 4) return std::nullopt;
  const auto body = bytes.first(bytes.size() - 4);
  protocol::Reader tail(bytes.subspan(bytes.size() - 4));
  if (static_cast<uint32_t>(tail.read_int32()) != protocol::crc32c(body)) return std::nullopt;
  for (int i = 0; i < 4; ++i)
    if (bytes[i] != kSnapshotMagic[i]) return std::nullopt;
  protocol::Reader r(body.subspan(4));
  const int16_t version = r.read_int16();
  if (version != kSnapshotVersion && version != kSnapshotVersionV1) return std::nullopt;
  Parsed out;
  out.snapshot_offset = r.read_int64();
  const int32_t count = r.read_int32();
  if (!r.ok() || count < 0) return std::nullopt;
  for (int32_t i = 0; i < count && r.ok(); ++i) {
    const int64_t pid = r.read_int64();
    ProducerEntry e;
    e.epoch = r.read_int16();
    e.last_update_ms = r.read_int64();
    if (version >= 2) {
      e.txn_first_offset = r.read_int64();
      e.coordinator_epoch = r.read_int32();
      if (e.txn_first_offset >= 0) out.table.open_[e.txn_first_offset] = pid;
    }
    const int8_t n = r.read_int8();
    if (n < 0 || static_cast<size_t>(n) > kRememberedBatches) return std::nullopt;
    for (int8_t j = 0; j < n && r.ok(); ++j) {
      BatchMeta m;
      m.first_seq = r.read_int32();
      m.last_seq = r.read_int32();
      m.first_offset = r.read_int64();
      m.last_offset = r.read_int64();
      m.timestamp = r.read_int64();
      e.batches.push_back(m);
      e.last_timestamp = m.timestamp;
    }
    out.table.producers_[pid] = std::move(e);
  }
  if (version >= 2) {
    const int32_t aborted = r.read_int32();
    if (!r.ok() || aborted < 0) return std::nullopt;
    for (int32_t i = 0; i < aborted && r.ok(); ++i) {
      AbortedTxn a;
      a.producer_id = r.read_int64();
      a.first_offset = r.read_int64();
      a.last_offset = r.read_int64();
      a.last_stable_offset = r.read_int64();
      out.table.aborted_.push_back(a);
    }
  }
  if (!r.ok() || r.remaining() != 0) return std::nullopt;
  return out;
}

}  // namespace ciuickafka::broker::produce
