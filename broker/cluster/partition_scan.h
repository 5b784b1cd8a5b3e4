// broker/cluster/partition_scan.h: a partition's log read back batch by
// batch, for the coordinators that rebuild their state from an internal
// topic (groups from __consumer_offsets, transactions from
// __transaction_state).
//
// Thread-safety: reads only (Log::read never takes the append lock); the
// caller decides which end is stable.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>

#include "broker/cluster/partition.h"
#include "protocol/records/record_batch.h"
#include "storage/log.h"

namespace ciuickafka::broker {

// Calls fn with each v2 batch of p's log from its start below offset end, in
// offset order, reading 1 MiB at a time. A read error ends the scan; a batch
// that does not parse ends its read (the scan goes on after the last good
// batch, or ends when none was). Batches of an older magic are skipped: the
// coordinators never write them.
inline void for_each_batch(Partition& p, int64_t end, const std::function<void(const protocol::RecordBatchView&)>& fn) {
  int64_t offset = p.log_start_offset();
  while (offset < end) {
    auto read = p.log().read(offset, 1 << 20, end);
    if (!read.is_ok() || read.value().slices.empty()) return;
    auto bytes = storage::read_slices(read.value());
    if (!bytes.is_ok()) return;
    protocol::BatchSplitter splitter(std::span<const uint8_t>(bytes.value()));
    protocol::RecordsEntry entry;
    int64_t next = offset;
    while (splitter.next(&entry) == protocol::SplitStatus::kEntry) {
      if (entry.magic != 2) continue;
      auto view = protocol::RecordBatchView::parse(entry.bytes);
      if (!view.ok()) break;
      next = std::max(next, view.value().next_offset());
      fn(view.value());
    }
    if (next <= offset) return;
    offset = next;
  }
}

}  // namespace ciuickafka::broker
