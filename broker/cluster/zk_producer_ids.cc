// broker/cluster/zk_producer_ids.cc: see zk_producer_ids.h.
#include "broker/cluster/zk_producer_ids.h"

#include <chrono>
#include <cstdio>

#include "broker/broker.h"
#include "broker/cluster/zk_cluster.h"
#include "metrics/log/log.h"
#include "replication/producer_id_blocks.h"

namespace ciuickafka::broker {

using protocol::ErrorCode;

ZkProducerIds::ZkProducerIds(Broker& broker)
    : ZkProducerIds(
          [&broker]() -> replication::Result<replication::ProducerIdBlock> {
            ZkCluster* cluster = broker.cluster();
            auto session = cluster ? cluster->session() : nullptr;
            if (!session) return replication::Error{"no ZooKeeper session"};
            return replication::claim_producer_id_block(*session, broker.node_id());
          },
          [] { return Broker::now_ms(); }) {}

ZkProducerIds::ZkProducerIds(Claim claim, std::function<int64_t()> now_ms)
    : claim_(std::move(claim)), now_ms_(std::move(now_ms)), thread_([this] { run(); }) {}

ZkProducerIds::~ZkProducerIds() { stop(); }

void ZkProducerIds::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ZkProducerIds::request_claim_locked() {
  if (wanted_ || stopping_ || now_ms_() < retry_after_ms_) return;
  wanted_ = true;
  cv_.notify_all();
}

ErrorCode ZkProducerIds::next(int64_t* id) {
  std::lock_guard<std::mutex> lock(mu_);
  if ((!current_ || next_ > current_->block_end) && prefetched_) {
    current_ = prefetched_;
    next_ = current_->block_start;
    prefetched_.reset();
  }
  if (!current_ || next_ > current_->block_end) {
    request_claim_locked();
    return ErrorCode::COORDINATOR_LOAD_IN_PROGRESS;
  }
  *id = next_++;
  // Prefetch once 90 % of the block is handed out (Kafka's threshold).
  const int64_t size = current_->block_end - current_->block_start + 1;
  if (!prefetched_ && (next_ - current_->block_start) * 10 >= size * 9) request_claim_locked();
  return ErrorCode::NONE;
}

void ZkProducerIds::prefetch() {
  std::lock_guard<std::mutex> lock(mu_);
  if (prefetched_ || (current_ && next_ <= current_->block_end)) return;
  request_claim_locked();
}

bool ZkProducerIds::wait_idle(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return !wanted_ || stopping_; });
}

std::string ZkProducerIds::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

void ZkProducerIds::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return wanted_ || stopping_; });
    if (stopping_) return;
    lock.unlock();
    auto r = claim_();  // blocking ZooKeeper calls, without the lock
    lock.lock();
    wanted_ = false;
    if (r.ok()) {
      last_error_.clear();
      prefetched_ = r.value();
    } else {
      last_error_ = r.error().message;
      retry_after_ms_ = now_ms_() + kRetryBackoffMs;
      CK_LOG_WARN("cluster", "could not claim a producer id block: %s", last_error_.c_str());
    }
    cv_.notify_all();
  }
}

}  // namespace ciuickafka::broker
