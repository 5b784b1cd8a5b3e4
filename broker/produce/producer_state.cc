// broker/produce/producer_state.cc: sequence checks and the snapshot codec
// of ProducerStateTable (see the header for the rules and the format).
#include "broker/produce/producer_state.h"

#include <limits>

#include "protocol/records/crc32c.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"

namespace ciuickafka::broker::produce {
namespace {

constexpr uint8_t kSnapshotMagic[4] = {'C', 'K', 'P', 'S'};
constexpr int16_t kSnapshotVersion = 1;

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
  while (e.batches.size() > kRememberedBatches) e.batches.pop_front();
  if (now_ms >= 0) e.last_update_ms = now_ms;
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
    if (it->second.last_update_ms >= 0 && now_ms - it->second.last_update_ms > max_age_ms) {
      it = producers_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

std::vector<uint8_t> ProducerStateTable::serialize(int64_t snapshot_offset) const {
  protocol::Writer w;
  w.write_raw(std::span<const uint8_t>(kSnapshotMagic, 4));
  w.write_int16(kSnapshotVersion);
  w.write_int64(snapshot_offset);
  w.write_int32(static_cast<int32_t>(producers_.size()));
  for (const auto& [pid, e] : producers_) {
    w.write_int64(pid);
    w.write_int16(e.epoch);
    w.write_int64(e.last_update_ms);
    w.write_int8(static_cast<int8_t>(e.batches.size()));
    for (const BatchMeta& m : e.batches) {
      w.write_int32(m.first_seq);
      w.write_int32(m.last_seq);
      w.write_int64(m.first_offset);
      w.write_int64(m.last_offset);
      w.write_int64(m.timestamp);
    }
  }
  const uint32_t crc = protocol::crc32c(w.buffer());
  w.write_int32(static_cast<int32_t>(crc));
  return w.release();
}

std::optional<ProducerStateTable::Parsed> ProducerStateTable::parse(std::span<const uint8_t> bytes) {
  if (bytes.size() < 4 + 2 + 8 + 4 + 4) return std::nullopt;
  const auto body = bytes.first(bytes.size() - 4);
  protocol::Reader tail(bytes.subspan(bytes.size() - 4));
  if (static_cast<uint32_t>(tail.read_int32()) != protocol::crc32c(body)) return std::nullopt;
  for (int i = 0; i < 4; ++i)
    if (bytes[i] != kSnapshotMagic[i]) return std::nullopt;
  protocol::Reader r(body.subspan(4));
  if (r.read_int16() != kSnapshotVersion) return std::nullopt;
  Parsed out;
  out.snapshot_offset = r.read_int64();
  const int32_t count = r.read_int32();
  if (!r.ok() || count < 0) return std::nullopt;
  for (int32_t i = 0; i < count && r.ok(); ++i) {
    const int64_t pid = r.read_int64();
    ProducerEntry e;
    e.epoch = r.read_int16();
    e.last_update_ms = r.read_int64();
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
    }
    out.table.producers_[pid] = std::move(e);
  }
  if (!r.ok() || r.remaining() != 0) return std::nullopt;
  return out;
}

}  // namespace ciuickafka::broker::produce
