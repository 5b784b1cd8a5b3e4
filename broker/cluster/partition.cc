// broker/cluster/partition.cc: the append path and the high watermark.
#include "broker/cluster/partition.h"

namespace ciuickafka::broker {

Partition::Partition(storage::TopicPartition tp, protocol::Uuid topic_id,
                     std::shared_ptr<storage::Log> log, int32_t leader_epoch,
                     const AppendListeners* listeners)
    : tp_(std::move(tp)),
      topic_id_(topic_id),
      log_(std::move(log)),
      leader_epoch_(leader_epoch),
      listeners_(listeners) {
  refresh_high_watermark();
}

storage::Result<storage::AppendResult> Partition::append(std::span<uint8_t> records, int64_t now_ms) {
  auto result = log_->append(records, leader_epoch_, now_ms);
  if (!result.is_ok()) return result;
  after_append();
  return result;
}

storage::Result<storage::AppendResult> Partition::append_async(std::span<uint8_t> records, int64_t now_ms,
                                                               storage::io::Ring* ring,
                                                               std::function<void(storage::Status)> done,
                                                               bool validated) {
  return log_->append_async(
      records, leader_epoch_, now_ms, ring,
      [this, done = std::move(done)](storage::Status s) {
        if (s.is_ok()) after_append();
        done(std::move(s));
      },
      validated);
}

void Partition::after_append() {
  // Single node: everything written is replicated to every replica there is.
  // The HW only ever moves forward, even if two appends finish out of order.
  const int64_t leo = log_->log_end_offset();
  int64_t hw = high_watermark_.load(std::memory_order_relaxed);
  while (hw < leo && !high_watermark_.compare_exchange_weak(hw, leo, std::memory_order_acq_rel)) {
  }
  if (listeners_ != nullptr) listeners_->notify(*this);
}

void AppendListeners::add(AppendListener l) {
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<std::vector<AppendListener>>(*list_);
  next->push_back(std::move(l));
  list_ = std::move(next);
}

void AppendListeners::notify(const Partition& p) const {
  std::shared_ptr<const std::vector<AppendListener>> list;
  {
    std::lock_guard<std::mutex> lock(mu_);
    list = list_;
  }
  for (const AppendListener& l : *list) l(p);
}

void Partition::refresh_high_watermark() {
  high_watermark_.store(log_->log_end_offset(), std::memory_order_release);
}

}  // namespace ciuickafka::broker
