// broker/txn/coordinator_load.cc: the transaction coordinator's state read
// back from __transaction_state: on a single node once at start-up, in
// cluster mode per partition as its leadership comes here (and dropped when
// it goes). The rest of the coordinator is coordinator.cc.
#include <chrono>

#include "broker/broker.h"
#include "broker/cluster/partition_scan.h"
#include "broker/txn/coordinator.h"
#include "metrics/log/log.h"
#include "protocol/records/record_batch.h"
#include "storage/log.h"

namespace ciuickafka::broker::txn {

void TxnCoordinator::read_partition(Partition& p, int64_t end, std::map<std::string, TxnRecord>& found) {
  for_each_batch(p, end, [&found](const protocol::RecordBatchView& batch) {
    if (batch.is_control()) return;
    auto records = protocol::decode_records(batch, 256u << 20);
    if (!records.ok()) return;
    protocol::RecordReader reader = records.value().reader();
    protocol::RecordView rec;
    while (reader.next(&rec)) {
      if (!rec.key) continue;
      auto d = decode_txn_record(*rec.key, rec.value);
      if (!d) continue;
      if (d->record) found[d->transactional_id] = std::move(*d->record);
      else found.erase(d->transactional_id);
    }
  });
}

void TxnCoordinator::install_locked(std::map<std::string, TxnRecord>& found, std::vector<MetaPtr>& to_complete) {
  for (auto& [id, rec] : found) {
    auto m = std::make_shared<TxnMeta>();
    m->id = id;
    m->rec = std::move(rec);
    if (is_prepare(m->rec.state)) to_complete.push_back(m);
    txns_[id] = m;
  }
}

void TxnCoordinator::load() {
  std::map<std::string, TxnRecord> found;
  auto topic = broker_.topics().find(kTxnTopic);
  const int64_t started = Broker::now_ms();
  if (topic) {
    for (const auto& p : topic->partitions)
      if (p) read_partition(*p, p->log().log_end_offset(), found);
  }
  std::vector<MetaPtr> to_complete;
  {
    std::lock_guard<std::mutex> lock(mu_);
    install_locked(found, to_complete);
  }
  load_ms_.store(Broker::now_ms() - started, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(load_mu_);
    loaded_.store(true, std::memory_order_release);
  }
  load_cv_.notify_all();
  if (topic)
    CK_LOG_INFO("txn", "transaction coordinator: %zu transactional ids loaded from %s in %lld ms (%zu to complete)",
                found.size(), kTxnTopic, static_cast<long long>(Broker::now_ms() - started), to_complete.size());
  for (const MetaPtr& m : to_complete) schedule_markers(m);
}

// ---------------------------------------------------------------------------
// Cluster mode: loading and unloading follow the leadership of
// __transaction_state's partitions.

void TxnCoordinator::became_leader(const std::shared_ptr<Partition>& p) {
  if (!cluster_ || stopped_.load() || p->topic() != kTxnTopic) return;
  std::optional<uint64_t> token;
  {
    std::lock_guard<std::mutex> lock(own_mu_);
    token = ownership_.begin_load(p->index(), p->leader_epoch());
  }
  own_cv_.notify_all();
  if (!token) return;  // loading or loaded already
  asio::post(broker_.background(), [this, p, t = *token, alive = alive_] {
    if (!*alive) return;
    load_owned(p, t);
  });
}

void TxnCoordinator::became_follower(const std::shared_ptr<Partition>& p, const LeaderEndpoint&) {
  if (!cluster_ || p->topic() != kTxnTopic) return;
  unload(p->index());
}

void TxnCoordinator::stopped(const storage::TopicPartition& tp, bool) {
  if (!cluster_ || tp.topic != kTxnTopic) return;
  unload(tp.partition);
}

void TxnCoordinator::load_owned(const std::shared_ptr<Partition>& p, uint64_t token) {
  const int32_t index = p->index();
  const int64_t started = Broker::now_ms();
  // Up to the log end, as Kafka reads to the LEO: a new leader's log holds
  // every committed record, and nothing is written here until loaded.
  const int64_t end = p->log_end_offset();
  std::map<std::string, TxnRecord> found;
  read_partition(*p, end, found);
  const int32_t n = partition_count();
  std::erase_if(found, [&](const auto& kv) { return txn_partition_for(kv.first, n) != index; });
  std::vector<MetaPtr> to_complete;
  bool installed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    {
      std::lock_guard<std::mutex> own(own_mu_);
      installed = ownership_.finish_load(index, token);
    }
    if (installed) install_locked(found, to_complete);
  }
  own_cv_.notify_all();
  if (!installed) return;  // overtaken by a leadership change
  load_ms_.store(Broker::now_ms() - started, std::memory_order_relaxed);
  CK_LOG_INFO("txn", "%s-%d: loaded %zu transactional ids (up to offset %lld, coordinator epoch %d) in %lld ms, "
              "%zu to complete", kTxnTopic, index, found.size(), static_cast<long long>(end), p->leader_epoch(),
              static_cast<long long>(Broker::now_ms() - started), to_complete.size());
  for (const MetaPtr& m : to_complete) schedule_markers(m);
}

void TxnCoordinator::unload(int32_t index) {
  size_t gone = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    {
      std::lock_guard<std::mutex> own(own_mu_);
      if (!ownership_.unload(index)) return;
    }
    const int32_t n = partition_count();
    gone = std::erase_if(txns_, [&](const auto& kv) { return txn_partition_for(kv.first, n) == index; });
  }
  own_cv_.notify_all();
  CK_LOG_INFO("txn", "%s-%d: no longer led here: %zu transactional ids unloaded", kTxnTopic, index, gone);
}

}  // namespace ciuickafka::broker::txn
