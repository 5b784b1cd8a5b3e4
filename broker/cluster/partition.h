// broker/cluster/partition.h: one partition as the broker serves it.
//
// It carries the state replication will need even on a single node (see
// the architecture notes): leader epoch, log start offset, log end offset
// (LEO) and high watermark (HW). Readers are bounded by the HW. On a single
// node the HW follows the LEO as appends complete; with replicas it will
// follow the ISR's lowest acknowledged offset instead, with no change to
// readers.
//
// append() is the one write path: it appends to the log, moves the HW and
// tells the append listeners (the fetch waiting room) so that long-polling
// fetches wake without polling.
//
// Thread-safety: every method may be called from any thread. Appends are
// serialised by the log; the offsets are atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "protocol/wire/types.h"
#include "storage/file_names.h"
#include "storage/log.h"

namespace ciuickafka::broker {

class Partition;
using AppendListener = std::function<void(const Partition&)>;

// Who wants to hear about appends (the fetch waiting room). Listeners are
// added at any time; notify() runs them on the appending thread, so they
// must be short (post work elsewhere, never block).
class AppendListeners {
 public:
  void add(AppendListener l);
  void notify(const Partition& p) const;

 private:
  mutable std::mutex mu_;  // guards the pointer only
  std::shared_ptr<const std::vector<AppendListener>> list_ =
      std::make_shared<const std::vector<AppendListener>>();
};

class Partition {
 public:
  Partition(storage::TopicPartition tp, protocol::Uuid topic_id, std::shared_ptr<storage::Log> log,
            int32_t leader_epoch, const AppendListeners* listeners);

  const storage::TopicPartition& tp() const { return tp_; }
  const std::string& topic() const { return tp_.topic; }
  int32_t index() const { return tp_.partition; }
  const protocol::Uuid& topic_id() const { return topic_id_; }
  int32_t leader_epoch() const { return leader_epoch_; }

  storage::Log& log() const { return *log_; }
  const std::shared_ptr<storage::Log>& log_ptr() const { return log_; }

  int64_t log_start_offset() const { return log_->log_start_offset(); }
  int64_t log_end_offset() const { return log_->log_end_offset(); }
  int64_t high_watermark() const { return high_watermark_.load(std::memory_order_acquire); }
  // Last stable offset: equal to the HW until transactions exist.
  int64_t last_stable_offset() const { return high_watermark(); }

  // Appends v2 batches (offsets and leader epoch are assigned in place),
  // then advances the HW and wakes the listeners.
  storage::Result<storage::AppendResult> append(std::span<uint8_t> records, int64_t now_ms);
  // The same with the write queued on ring (storage::Log::append_async):
  // offsets come back now; done(status) runs once the batches are readable
  // (the HW has moved and the listeners were woken) or failed. The caller
  // keeps the Partition and records alive until then. validated: the
  // batches' CRCs were checked already (produce/prepare.h).
  storage::Result<storage::AppendResult> append_async(std::span<uint8_t> records, int64_t now_ms,
                                                      storage::io::Ring* ring,
                                                      std::function<void(storage::Status)> done, bool validated);

  // Re-reads the LEO into the HW (after recovery or DeleteRecords).
  void refresh_high_watermark();

 private:
  const storage::TopicPartition tp_;
  const protocol::Uuid topic_id_;
  const std::shared_ptr<storage::Log> log_;
  const int32_t leader_epoch_;
  const AppendListeners* const listeners_;  // owned by the broker; may be null
  void after_append();

  std::atomic<int64_t> high_watermark_{0};
};

}  // namespace ciuickafka::broker
