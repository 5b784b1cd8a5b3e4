// broker/cluster/partition.cc: the append path and the high watermark.
#include "broker/cluster/partition.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>

#include "metrics/log/log.h"

namespace ciuickafka::broker {

Partition::Partition(storage::TopicPartition tp, protocol::Uuid topic_id,
                     std::shared_ptr<storage::Log> log, int32_t leader_epoch,
                     const AppendListeners* listeners)
    : tp_(std::move(tp)),
      topic_id_(topic_id),
      log_(std::move(log)),
      listeners_(listeners),
      leader_epoch_(leader_epoch) {
  auto st = std::make_shared<PartitionRoleState>();
  st->leader_epoch = leader_epoch;
  role_state_ = std::move(st);
  refresh_high_watermark();
}

std::shared_ptr<const PartitionRoleState> Partition::role_state() const {
  std::lock_guard<std::mutex> lock(role_mu_);
  return role_state_;
}

void Partition::set_role(PartitionRoleState state, bool starts_epoch) {
  std::lock_guard<std::mutex> appends(append_role_mu_);  // waits for leader appends assigning offsets
  if (starts_epoch) {
    auto start = log_->assign_epoch_start_at_end(state.leader_epoch);
    if (!start.is_ok()) {
      CK_LOG_WARN("replication", "%s-%d: start of leader epoch %d not recorded: %s", tp_.topic.c_str(),
                  tp_.partition, state.leader_epoch, start.status().to_string().c_str());
    }
    state.leader_epoch_start_offset = start.is_ok() ? start.value() : log_->next_offset();
  }
  auto next = std::make_shared<const PartitionRoleState>(std::move(state));
  std::lock_guard<std::mutex> lock(role_mu_);
  leader_epoch_.store(next->leader_epoch, std::memory_order_release);
  role_.store(next->role, std::memory_order_release);
  role_state_ = std::move(next);
}

void Partition::set_high_watermark(int64_t hw, bool allow_backwards) {
  hw = std::min(hw, log_->log_end_offset());
  int64_t cur = high_watermark_.load(std::memory_order_relaxed);
  bool moved = false;
  if (allow_backwards) {
    moved = high_watermark_.exchange(hw, std::memory_order_acq_rel) != hw;
  } else {
    while (cur < hw && !high_watermark_.compare_exchange_weak(cur, hw, std::memory_order_acq_rel)) {
    }
    moved = cur < hw;
  }
  if (moved && listeners_ != nullptr) listeners_->notify(*this);
}

namespace {
storage::Status not_leader(const Partition& p) {
  return storage::Status::fenced(p.topic() + "-" + std::to_string(p.index()) + " is not led by this broker");
}
}  // namespace

storage::Result<storage::AppendResult> Partition::append(std::span<uint8_t> records, int64_t now_ms) {
  auto result = [&]() -> storage::Result<storage::AppendResult> {
    std::lock_guard<std::mutex> leading(append_role_mu_);
    if (!is_leader()) return not_leader(*this);
    return log_->append(records, leader_epoch(), now_ms);
  }();  // the lock is released before the listeners run
  if (!result.is_ok()) return result;
  after_append();
  return result;
}

storage::Result<storage::AppendResult> Partition::append_async(std::span<uint8_t> records, int64_t now_ms,
                                                               storage::io::Ring* ring,
                                                               std::function<void(storage::Status)> done,
                                                               bool validated) {
  // The write may complete inside log_->append_async (no ring, or a failed
  // submission): its callback then waits until the role lock is released,
  // so no listener or caller's callback ever runs under it.
  struct Call {
    std::mutex mu;
    bool inside = true;
    bool completed_inside = false;
    storage::Status status;
  };
  auto call = std::make_shared<Call>();
  auto finish = [this, done = std::move(done)](storage::Status s) {
    if (s.is_ok()) after_append();
    done(std::move(s));
  };
  auto shared_finish = std::make_shared<decltype(finish)>(std::move(finish));
  auto result = [&]() -> storage::Result<storage::AppendResult> {
    std::lock_guard<std::mutex> leading(append_role_mu_);
    if (!is_leader()) return not_leader(*this);
    return log_->append_async(
        records, leader_epoch(), now_ms, ring,
        [call, shared_finish](storage::Status s) {
          {
            std::lock_guard<std::mutex> lock(call->mu);
            if (call->inside) {
              call->completed_inside = true;
              call->status = std::move(s);
              return;
            }
          }
          (*shared_finish)(std::move(s));
        },
        validated);
  }();
  bool completed_inside = false;
  {
    std::lock_guard<std::mutex> lock(call->mu);
    call->inside = false;
    completed_inside = call->completed_inside;
  }
  if (completed_inside) (*shared_finish)(std::move(call->status));
  return result;
}

void Partition::after_append() {
  // Single node: everything written is replicated to every replica there is.
  // The HW only ever moves forward, even if two appends finish out of order.
  // A replicated leader moves it from its followers' positions instead.
  if (!hw_follows_leo()) {
    if (listeners_ != nullptr) listeners_->notify(*this);
    return;
  }
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
