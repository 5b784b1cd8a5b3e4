// broker/txn/coordinator.cc: the transaction coordinator (design in the
// header): the topic, appends and durability, the transitions of each API,
// the markers, loading, and the timer (marker retries, timeout sweep).
#include "broker/txn/coordinator.h"

#include <algorithm>
#include <chrono>

#include "broker/admin/auto_create.h"
#include "broker/broker.h"
#include "broker/cluster/coordinator_errors.h"
#include "broker/cluster/coordinator_write.h"
#include "broker/cluster/partition_scan.h"
#include "broker/cluster/replica_manager.h"
#include "broker/cluster/zk_producer_ids.h"
#include "broker/groups/coordinator.h"
#include "broker/produce/produce_service.h"
#include "broker/replica/leader_replicas.h"
#include "broker/txn/marker_channel.h"
#include "metrics/log/log.h"
#include "protocol/generated/add_partitions_to_txn.h"
#include "protocol/records/record_batch.h"
#include "replication/net/reconnecting_client.h"
#include "storage/log.h"

namespace ciuickafka::broker::txn {

using protocol::ErrorCode;

namespace {

constexpr int64_t kTickMs = 1000;
// How long a replicated write waits for the ISR (Kafka's coordinator uses
// request.timeout.ms, 30 s by default).
constexpr int32_t kAppendTimeoutMs = 30000;
constexpr int64_t kExpiryCheckMs = 60'000;  // Kafka: transaction.remove.expired.transaction.cleanup.interval.ms (1 h)

// Kafka's TransactionStateManager mapping of a failed append: the shared
// coordinator mapping, and what is left (a record too large) is
// UNKNOWN_SERVER_ERROR.
ErrorCode append_error(ErrorCode e) {
  const ErrorCode mapped = coordinator_append_error(e);
  return mapped == ErrorCode::COORDINATOR_NOT_AVAILABLE || mapped == ErrorCode::NOT_COORDINATOR
             ? mapped
             : ErrorCode::UNKNOWN_SERVER_ERROR;
}

}  // namespace

TxnCoordinator::TxnCoordinator(Broker& broker)
    : broker_(broker),
      cluster_(broker.cluster() != nullptr),
      timer_(std::make_unique<asio::steady_timer>(broker.background())) {
  // (Broker::service holds its lock while constructing: no other service
  // may be touched here; coordinator() creates them first.)
  register_metrics();
  if (cluster_) {
    markers_ = std::make_unique<MarkerChannel>(broker_);
    verifications_ = std::make_unique<MarkerChannel>(broker_, "ciuickafka-txn-verify");
  }
  auto alive = alive_;
  asio::post(broker_.background(), [this, alive] {
    if (!*alive) return;
    if (!cluster_) load();  // cluster mode: per partition, as leadership comes
    arm_timer();
  });
}

TxnCoordinator::~TxnCoordinator() { stop(); }

TxnCoordinator& coordinator(Broker& broker) {
  // The services the markers use exist before this one, so they stop after it.
  (void)broker.service<produce::ProduceService>();
  (void)broker.service<groups::GroupCoordinator>();
  return broker.service<TxnCoordinator>();
}

void TxnCoordinator::stop() {
  if (stopped_.exchange(true)) return;
  *alive_ = false;
  if (metrics_id_ != 0) broker_.metrics_registry().remove_collector(metrics_id_);
  {
    std::lock_guard<std::mutex> lock(timer_mu_);
    timer_->cancel();
  }
  if (markers_) markers_->stop();
  if (verifications_) verifications_->stop();
  { std::lock_guard<std::mutex> lock(load_mu_); }
  load_cv_.notify_all();
  { std::lock_guard<std::mutex> lock(own_mu_); }
  own_cv_.notify_all();
}

bool TxnCoordinator::wait_loaded(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(load_mu_);
  return load_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           [this] { return loaded_.load(std::memory_order_acquire); });
}

// ---------------------------------------------------------------------------
// The topic, appends, durability.

bool TxnCoordinator::ensure_topic() {
  if (cluster_) {
    auto snap = broker_.service<ReplicaManager>().metadata_cache().snapshot();
    if (snap->topic(kTxnTopic) != nullptr) return true;
    // Queued once at a time; refused while fewer brokers live than its
    // replication factor.
    (void)admin::auto_create_topic(broker_, kTxnTopic);
    return false;
  }
  if (broker_.topics().find(kTxnTopic)) return true;
  const auto& cfg = broker_.config();
  ConfigMap configs;
  configs["cleanup.policy"] = "compact";
  configs["segment.bytes"] = std::to_string(cfg.get_int("transaction.state.log.segment.bytes"));
  // A single node holds one replica whatever transaction.state.log.replication.factor says.
  auto created = broker_.topics().create(kTxnTopic, cfg.get_int("transaction.state.log.num.partitions"), 1, configs,
                                         false, Broker::now_ms());
  return created.error.ok() || broker_.topics().find(kTxnTopic) != nullptr;
}

int32_t TxnCoordinator::partition_count() {
  if (cluster_) {
    auto snap = broker_.service<ReplicaManager>().metadata_cache().snapshot();
    if (const CachedTopic* t = snap->topic(kTxnTopic); t != nullptr && !t->partitions.empty())
      return t->partitions.rbegin()->first + 1;
    return broker_.config().get_int("transaction.state.log.num.partitions");
  }
  auto topic = broker_.topics().find(kTxnTopic);
  return topic && !topic->partitions.empty() ? static_cast<int32_t>(topic->partitions.size())
                                             : broker_.config().get_int("transaction.state.log.num.partitions");
}

int32_t TxnCoordinator::partition_of(const std::string& id) { return txn_partition_for(id, partition_count()); }

ErrorCode TxnCoordinator::coordinator_error(const std::string& id) {
  if (stopped_.load()) return ErrorCode::COORDINATOR_NOT_AVAILABLE;
  if (cluster_) {
    if (!ensure_topic()) return ErrorCode::COORDINATOR_NOT_AVAILABLE;
    const int32_t index = partition_of(id);
    std::lock_guard<std::mutex> lock(own_mu_);
    return ownership_.error(index);
  }
  if (!loaded_.load(std::memory_order_acquire)) return ErrorCode::COORDINATOR_LOAD_IN_PROGRESS;
  return ensure_topic() ? ErrorCode::NONE : ErrorCode::COORDINATOR_NOT_AVAILABLE;
}

ErrorCode TxnCoordinator::find_error() {
  if (cluster_ || stopped_.load()) return ErrorCode::COORDINATOR_NOT_AVAILABLE;
  return ensure_topic() ? ErrorCode::NONE : ErrorCode::COORDINATOR_NOT_AVAILABLE;
}

bool TxnCoordinator::verifies(const std::string& id) {
  if (!cluster_) return true;
  const int32_t index = partition_of(id);
  std::lock_guard<std::mutex> lock(own_mu_);
  return ownership_.state(index) != groups::OwnState::kNotOwned;
}

void TxnCoordinator::verify_remote(const std::string& id, int64_t producer_id, int16_t epoch,
                                   std::vector<TxnPartition> partitions, VerifyDone done) {
  const auto all = [&partitions](ErrorCode e) {
    std::map<TxnPartition, ErrorCode> out;
    for (const auto& tp : partitions) out[tp] = e;
    return out;
  };
  if (!verifications_) return done(all(ErrorCode::COORDINATOR_NOT_AVAILABLE));
  int32_t leader = kNoLeader;
  {
    auto snap = broker_.service<ReplicaManager>().metadata_cache().snapshot();
    if (const CachedTopic* t = snap->topic(kTxnTopic); t != nullptr) {
      auto it = t->partitions.find(partition_of(id));
      if (it != t->partitions.end()) leader = it->second.leader;
    }
  }
  if (leader == kNoLeader) return done(all(ErrorCode::COORDINATOR_NOT_AVAILABLE));
  protocol::AddPartitionsToTxnRequest req;
  auto& txn = req.transactions.emplace_back();
  txn.transactional_id = id;
  txn.producer_id = producer_id;
  txn.producer_epoch = epoch;
  txn.verify_only = true;
  std::sort(partitions.begin(), partitions.end());
  for (const TxnPartition& tp : partitions) {
    if (txn.topics.empty() || txn.topics.back().name != tp.first) txn.topics.emplace_back().name = tp.first;
    txn.topics.back().partitions.push_back(tp.second);
  }
  verifications_->post(leader, [req = std::move(req), partitions = std::move(partitions), done = std::move(done),
                                leader](replication::net::ReconnectingClient* client, ErrorCode why) {
    std::map<TxnPartition, ErrorCode> out;
    const auto fill = [&](ErrorCode e) {
      for (const auto& tp : partitions) out[tp] = e;
    };
    if (client == nullptr) {
      fill(why == ErrorCode::NOT_LEADER_OR_FOLLOWER ? ErrorCode::COORDINATOR_NOT_AVAILABLE : why);
      return done(std::move(out));
    }
    protocol::AddPartitionsToTxnResponse resp;
    replication::net::Status st = client->call(req, 4, &resp);
    if (!st.ok()) {
      CK_LOG_WARN("txn", "verification of %s by its coordinator (broker %d) failed: %s",
                  req.transactions.front().transactional_id.c_str(), leader, st.message().c_str());
      fill(ErrorCode::NETWORK_EXCEPTION);
      return done(std::move(out));
    }
    // A top-level error answers every partition; unanswered ones are not verified.
    fill(resp.error_code != 0 ? static_cast<ErrorCode>(resp.error_code) : ErrorCode::UNKNOWN_SERVER_ERROR);
    for (const auto& r : resp.results_by_transaction)
      for (const auto& t : r.topic_results)
        for (const auto& p : t.results_by_partition) {
          auto it = out.find({t.name, p.partition_index});
          if (it != out.end()) it->second = static_cast<ErrorCode>(p.partition_error_code);
        }
    done(std::move(out));
  });
}

groups::OwnState TxnCoordinator::partition_state(int32_t p) {
  std::lock_guard<std::mutex> lock(own_mu_);
  return ownership_.state(p);
}

bool TxnCoordinator::wait_partition_state(int32_t p, groups::OwnState want, int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(own_mu_);
  return own_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                          [&] { return stopped_.load() || ownership_.state(p) == want; }) &&
         ownership_.state(p) == want;
}

std::shared_ptr<Partition> TxnCoordinator::local_partition(const std::string& id) {
  auto topic = broker_.topics().find(kTxnTopic);
  if (!topic) return nullptr;
  return topic->partition(partition_of(id));
}

int32_t TxnCoordinator::coordinator_epoch(const std::string& id) {
  if (cluster_) {
    const int32_t index = partition_of(id);
    std::lock_guard<std::mutex> lock(own_mu_);
    return std::max(0, ownership_.epoch(index));
  }
  auto p = local_partition(id);
  return p ? std::max(0, p->leader_epoch()) : 0;
}

ErrorCode TxnCoordinator::new_producer_id(int64_t* id) {
  if (cluster_) return broker_.service<ZkProducerIds>().next(id);  // unique across the cluster
  auto pid = broker_.service<produce::ProduceService>().allocate_producer_id();
  if (!pid.is_ok()) return ErrorCode::COORDINATOR_NOT_AVAILABLE;
  *id = pid.value();
  return ErrorCode::NONE;
}

TxnCoordinator::Appended TxnCoordinator::append(const std::string& id, const TxnRecord& rec) {
  Appended a;
  auto p = local_partition(id);
  if (!p) {
    a.error = ErrorCode::COORDINATOR_NOT_AVAILABLE;
    return a;
  }
  if (cluster_) {
    // Only the loaded leader writes (a follower's log is its leader's copy).
    ErrorCode own;
    {
      std::lock_guard<std::mutex> lock(own_mu_);
      own = ownership_.error(p->index());
    }
    if (own != ErrorCode::NONE || !p->is_leader()) {
      a.error = ErrorCode::NOT_COORDINATOR;
      return a;
    }
    if (!p->hw_follows_leo()) {  // replicated: refused below min.insync.replicas, as acks=all
      const ErrorCode e = broker_.service<replica::LeaderReplicas>().acks_all_check_before_append(*p);
      if (e != ErrorCode::NONE) {
        a.error = append_error(e);
        return a;
      }
    }
  }
  std::optional<TxnRecord> value;
  if (rec.state != TxnState::kDead) value = rec;  // Dead is a tombstone
  auto batch = build_txn_batch(id, value, Broker::now_ms());
  if (!batch) {
    a.error = ErrorCode::UNKNOWN_SERVER_ERROR;
    return a;
  }
  auto q = CoordinatorWrite::append(p, std::move(*batch), Broker::now_ms());
  if (!q.status.is_ok()) {
    a.error = append_error(q.status.code() == storage::StatusCode::kFenced ? ErrorCode::NOT_LEADER_OR_FOLLOWER
                                                                            : ErrorCode::KAFKA_STORAGE_ERROR);
    return a;
  }
  a.partition = p;
  a.end_offset = q.result.last_offset + 1;
  a.write = std::move(q.write);
  return a;
}

void TxnCoordinator::when_written(const Appended& a, std::function<void(ErrorCode)> done) {
  if (a.error != ErrorCode::NONE || !a.write) return done(a.error);
  a.write->then([done = std::move(done)](storage::Status s) {
    done(s.is_ok() ? ErrorCode::NONE : append_error(ErrorCode::KAFKA_STORAGE_ERROR));
  });
}

void TxnCoordinator::when_durable(const Appended& a, std::function<void(ErrorCode)> done) {
  if (a.error != ErrorCode::NONE || !a.partition) return done(a.error);
  if (a.write) {  // first the write itself (queued on a network thread's ring)
    Appended written = a;
    written.write.reset();
    return when_written(a, [this, written, done = std::move(done)](ErrorCode e) mutable {
      if (e != ErrorCode::NONE) return done(e);
      when_durable(written, std::move(done));
    });
  }
  replica::when_acks_all_durable(broker_, a.partition, a.partition->log_ptr(), a.end_offset, kAppendTimeoutMs,
                                 [done = std::move(done)](ErrorCode e) {
                                   done(e == ErrorCode::NONE ? e : append_error(e));
                                 });
}

void TxnCoordinator::write(const MetaPtr& m, TxnRecord next, std::function<void(ErrorCode)> then, bool durable) {
  // m->pending is set by the caller, under mu_.
  if (next.state != TxnState::kDead) next.last_update_ms = Broker::now_ms();
  Appended a = append(m->id, next);
  auto install = [this, m, next = std::move(next), then = std::move(then)](ErrorCode e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      m->pending = false;
      if (e == ErrorCode::NONE) {
        m->rec = next;
        if (!is_prepare(next.state)) {
          m->markers_started = false;
          m->awaiting_markers.clear();
        }
        if (next.state == TxnState::kDead) {
          auto it = txns_.find(m->id);
          if (it != txns_.end() && it->second == m) txns_.erase(it);  // not a meta loaded since
        }
      }
    }
    then(e);
  };
  if (durable) return when_durable(a, std::move(install));
  when_written(a, std::move(install));
}

// ---------------------------------------------------------------------------
// InitProducerId.

void TxnCoordinator::init_producer_id(const std::string& id, int32_t timeout_ms, int64_t expected_pid,
                                      int16_t expected_epoch, InitDone done) {
  if (ErrorCode e = coordinator_error(id); e != ErrorCode::NONE) return done(e, -1, -1);
  if (timeout_ms <= 0 || timeout_ms > broker_.config().get_int("transaction.max.timeout.ms"))
    return done(ErrorCode::INVALID_TRANSACTION_TIMEOUT, -1, -1);

  std::unique_lock<std::mutex> lock(mu_);
  MetaPtr m;
  auto it = txns_.find(id);
  if (it == txns_.end()) {
    lock.unlock();
    int64_t pid = -1;
    if (ErrorCode e = new_producer_id(&pid); e != ErrorCode::NONE) return done(e, -1, -1);
    lock.lock();
    it = txns_.find(id);
    if (it == txns_.end()) {  // still new (else: a concurrent init won; go on with it below)
      m = std::make_shared<TxnMeta>();
      m->id = id;
      m->rec.producer_id = pid;
      m->rec.producer_epoch = -1;
      m->rec.state = TxnState::kEmpty;
      txns_[id] = m;
    } else {
      m = it->second;
    }
  } else {
    m = it->second;
  }
  if (m->pending) return lock.unlock(), done(ErrorCode::CONCURRENT_TRANSACTIONS, -1, -1);
  TxnRecord& cur = m->rec;
  const bool exhausted = cur.producer_epoch >= kMaxProducerEpoch - 1;
  if (expected_pid != -1) {  // KIP-360: the producer says who it was
    const bool known = cur.producer_epoch == -1 || expected_pid == cur.producer_id ||
                       (expected_pid == m->last_producer_id && exhausted);
    if (!known) return lock.unlock(), done(ErrorCode::PRODUCER_FENCED, -1, -1);
  }
  switch (cur.state) {
    case TxnState::kPrepareCommit:
    case TxnState::kPrepareAbort:
    case TxnState::kPrepareEpochFence:
      return lock.unlock(), done(ErrorCode::CONCURRENT_TRANSACTIONS, -1, -1);
    case TxnState::kOngoing: {
      // Fence the old producer: abort its transaction at epoch + 1; the
      // caller retries and gets a newer epoch once the abort completed.
      fence_and_abort(m, [done](ErrorCode e) {
        done(e == ErrorCode::NONE ? ErrorCode::CONCURRENT_TRANSACTIONS : e, -1, -1);
      });
      return;
    }
    case TxnState::kDead:
      return lock.unlock(), done(ErrorCode::CONCURRENT_TRANSACTIONS, -1, -1);
    default:
      break;
  }
  // Empty / CompleteCommit / CompleteAbort.
  TxnRecord next = cur;
  if (expected_pid != -1 && cur.producer_epoch != -1) {
    if (expected_pid == cur.producer_id && expected_epoch == cur.producer_epoch) {
      // the producer's current epoch: bump (below)
    } else if (expected_pid == cur.producer_id && expected_epoch == m->last_epoch) {
      // a retry of an init that already bumped: answer the current epoch
      const int64_t pid = cur.producer_id;
      const int16_t epoch = cur.producer_epoch;
      lock.unlock();
      return done(ErrorCode::NONE, pid, epoch);
    } else if (!(expected_pid == m->last_producer_id && exhausted)) {
      return lock.unlock(), done(ErrorCode::PRODUCER_FENCED, -1, -1);
    }
  }
  const int64_t old_pid = cur.producer_id;
  const int16_t old_epoch = cur.producer_epoch;
  bool new_pid = false;
  if (exhausted) {
    new_pid = true;
  } else {
    next.producer_epoch = static_cast<int16_t>(cur.producer_epoch + 1);
  }
  next.timeout_ms = timeout_ms;
  next.state = TxnState::kEmpty;
  next.partitions.clear();
  next.start_ms = -1;
  m->pending = true;
  lock.unlock();
  if (new_pid) {
    int64_t pid = -1;
    if (ErrorCode e = new_producer_id(&pid); e != ErrorCode::NONE) {
      std::lock_guard<std::mutex> relock(mu_);
      m->pending = false;
      return done(e, -1, -1);
    }
    next.producer_id = pid;
    next.producer_epoch = 0;
  }
  write(m, next, [this, m, next, old_pid, old_epoch, done](ErrorCode e) {
    if (e != ErrorCode::NONE) return done(e, -1, -1);
    {
      std::lock_guard<std::mutex> lock(mu_);
      m->last_producer_id = old_pid;
      m->last_epoch = old_epoch;
    }
    done(ErrorCode::NONE, next.producer_id, next.producer_epoch);
  });
}

void TxnCoordinator::fence_and_abort(const MetaPtr& m, std::function<void(ErrorCode)> then) {
  // Called with mu_ held (through a unique_lock the caller passed in spirit:
  // it returns right after), m Ongoing and not pending.
  TxnRecord next = m->rec;
  if (next.producer_epoch < kMaxProducerEpoch - 1) next.producer_epoch = static_cast<int16_t>(next.producer_epoch + 1);
  next.state = TxnState::kPrepareAbort;
  m->pending = true;
  MetaPtr keep = m;
  // The append happens outside mu_: post it so the caller's lock is released.
  asio::post(broker_.background(), [this, keep, next, then = std::move(then), alive = alive_]() mutable {
    if (!*alive) return then(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    write(keep, next, [this, keep, then = std::move(then)](ErrorCode e) {
      if (e == ErrorCode::NONE) schedule_markers(keep);
      then(e);
    });
  });
}

// ---------------------------------------------------------------------------
// AddPartitionsToTxn, verification, EndTxn.

void TxnCoordinator::add_partitions(const std::string& id, int64_t producer_id, int16_t epoch,
                                    std::vector<TxnPartition> partitions, Done done) {
  if (ErrorCode e = coordinator_error(id); e != ErrorCode::NONE) return done(e);
  std::unique_lock<std::mutex> lock(mu_);
  auto it = txns_.find(id);
  if (it == txns_.end() || it->second->rec.producer_id != producer_id)
    return lock.unlock(), done(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
  MetaPtr m = it->second;
  if (m->rec.producer_epoch != epoch) return lock.unlock(), done(ErrorCode::PRODUCER_FENCED);
  if (m->pending || is_prepare(m->rec.state)) return lock.unlock(), done(ErrorCode::CONCURRENT_TRANSACTIONS);
  if (m->rec.state == TxnState::kDead || m->rec.state == TxnState::kPrepareEpochFence)
    return lock.unlock(), done(ErrorCode::INVALID_TXN_STATE);
  TxnRecord next = m->rec;
  const bool was_ongoing = next.state == TxnState::kOngoing;
  size_t added = 0;
  for (auto& tp : partitions) added += next.partitions.insert(std::move(tp)).second ? 1 : 0;
  if (was_ongoing && added == 0) return lock.unlock(), done(ErrorCode::NONE);
  if (!was_ongoing) next.start_ms = Broker::now_ms();
  next.state = TxnState::kOngoing;
  m->pending = true;
  lock.unlock();
  write(m, std::move(next), std::move(done));
}

ErrorCode TxnCoordinator::verify_partition(const std::string& id, int64_t producer_id, int16_t epoch,
                                           const std::string& topic, int32_t partition) {
  if (cluster_) {
    const int32_t index = partition_of(id);
    std::lock_guard<std::mutex> lock(own_mu_);
    if (ErrorCode e = ownership_.error(index); e != ErrorCode::NONE) return e;
  } else if (!loaded_.load(std::memory_order_acquire)) {
    return ErrorCode::COORDINATOR_LOAD_IN_PROGRESS;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = txns_.find(id);
  if (it == txns_.end() || it->second->rec.producer_id != producer_id) return ErrorCode::INVALID_PRODUCER_ID_MAPPING;
  const TxnMeta& m = *it->second;
  if (m.rec.producer_epoch != epoch) return ErrorCode::PRODUCER_FENCED;
  if (is_prepare(m.rec.state)) return ErrorCode::CONCURRENT_TRANSACTIONS;
  if (m.rec.state == TxnState::kOngoing && m.rec.partitions.count({topic, partition}) > 0) return ErrorCode::NONE;
  return ErrorCode::INVALID_TXN_STATE;
}

void TxnCoordinator::end_txn(const std::string& id, int64_t producer_id, int16_t epoch, bool commit, Done done) {
  if (ErrorCode e = coordinator_error(id); e != ErrorCode::NONE) return done(e);
  std::unique_lock<std::mutex> lock(mu_);
  auto it = txns_.find(id);
  if (it == txns_.end() || it->second->rec.producer_id != producer_id)
    return lock.unlock(), done(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
  MetaPtr m = it->second;
  if (m->rec.producer_epoch != epoch) return lock.unlock(), done(ErrorCode::PRODUCER_FENCED);
  if (m->pending) return lock.unlock(), done(ErrorCode::CONCURRENT_TRANSACTIONS);
  switch (m->rec.state) {
    case TxnState::kOngoing:
      break;
    case TxnState::kCompleteCommit:  // a retry of a finished EndTxn
      return lock.unlock(), done(commit ? ErrorCode::NONE : ErrorCode::INVALID_TXN_STATE);
    case TxnState::kCompleteAbort:
      return lock.unlock(), done(commit ? ErrorCode::INVALID_TXN_STATE : ErrorCode::NONE);
    case TxnState::kPrepareCommit:
      return lock.unlock(), done(commit ? ErrorCode::CONCURRENT_TRANSACTIONS : ErrorCode::INVALID_TXN_STATE);
    case TxnState::kPrepareAbort:
      return lock.unlock(), done(commit ? ErrorCode::INVALID_TXN_STATE : ErrorCode::CONCURRENT_TRANSACTIONS);
    default:  // Empty, Dead, PrepareEpochFence
      return lock.unlock(), done(ErrorCode::INVALID_TXN_STATE);
  }
  TxnRecord next = m->rec;
  next.state = commit ? TxnState::kPrepareCommit : TxnState::kPrepareAbort;
  m->pending = true;
  lock.unlock();
  write(m, std::move(next), [this, m, done = std::move(done)](ErrorCode e) {
    if (e == ErrorCode::NONE) schedule_markers(m);
    done(e);  // answered once the decision is durable; the markers follow
  });
}

// ---------------------------------------------------------------------------
// Markers.

void TxnCoordinator::schedule_markers(const MetaPtr& m) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!is_prepare(m->rec.state) || m->markers_running || m->pending) return;
    if (!m->markers_started) {
      m->awaiting_markers = m->rec.partitions;
      m->markers_started = true;
    }
    m->markers_running = true;
  }
  asio::post(broker_.background(), [this, m, alive = alive_] {
    if (!*alive) return;
    run_markers(m);
  });
}

void TxnCoordinator::run_markers(const MetaPtr& m) {
  int64_t pid = 0;
  int16_t epoch = 0;
  bool commit = false;
  std::set<TxnPartition> todo;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pid = m->rec.producer_id;
    epoch = m->rec.producer_epoch;
    commit = m->rec.state == TxnState::kPrepareCommit;
    todo = m->awaiting_markers;
  }
  const int32_t coord_epoch = coordinator_epoch(m->id);
  auto& produce = broker_.service<produce::ProduceService>();

  // The partitions whose marker is done (written and durable, or given up:
  // the partition is gone or refuses it for good), filled as answers come.
  struct Round {
    std::mutex mu;
    std::set<TxnPartition> done;
    std::atomic<size_t> remaining{1};
  };
  auto round = std::make_shared<Round>();
  auto mark_done = [round](const TxnPartition& tp) {
    std::lock_guard<std::mutex> lock(round->mu);
    round->done.insert(tp);
  };
  auto finish = [this, m, round, commit] {
    bool complete = false;
    TxnRecord next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      m->markers_running = false;
      {
        std::lock_guard<std::mutex> r(round->mu);
        for (const auto& tp : round->done) m->awaiting_markers.erase(tp);
      }
      if (m->awaiting_markers.empty() && is_prepare(m->rec.state) && !m->pending) {
        complete = true;
        next = m->rec;
        next.state = commit ? TxnState::kCompleteCommit : TxnState::kCompleteAbort;
        next.partitions.clear();
        m->pending = true;
      }
    }
    if (!complete) return;  // the tick retries what is left
    // Complete* is installed without waiting for its fsync: every later
    // transition of the id is appended after it to the same partition and
    // waits for its own fsync, which covers this record; and if a crash loses
    // it, the load finds Prepare* and writes the markers again, harmless
    // since no later transaction of the producer can have started (its
    // Ongoing record would have been lost with it).
    write(
        m, next,
        [this, m, commit](ErrorCode e) {
          if (e == ErrorCode::NONE) (commit ? committed_ : aborted_).fetch_add(1, std::memory_order_relaxed);
          if (e != ErrorCode::NONE)
            CK_LOG_WARN("txn", "transaction %s: writing its completion failed: %s; retried", m->id.c_str(),
                        std::string(protocol::error_name(e)).c_str());
        },
        /*durable=*/false);
  };
  auto count_down = [round, finish] {
    if (round->remaining.fetch_sub(1) == 1) finish();
  };
  // A marker refused for good is not retried (Kafka gives up on these too).
  auto given_up = [](const TxnPartition&, ErrorCode e) {
    return e == ErrorCode::INVALID_PRODUCER_EPOCH || e == ErrorCode::TRANSACTION_COORDINATOR_FENCED;
  };

  std::shared_ptr<const MetadataSnapshot> snap;
  if (cluster_) snap = broker_.service<ReplicaManager>().metadata_cache().snapshot();
  std::map<int32_t, std::vector<TxnPartition>> remote;  // leader broker -> its partitions
  for (const TxnPartition& tp : todo) {
    auto topic = broker_.topics().find(tp.first);
    std::shared_ptr<Partition> p = topic ? topic->partition(tp.second) : nullptr;
    if (cluster_) {
      const CachedPartition* cp = snap->partition(tp.first, tp.second);
      if (cp == nullptr) {  // deleted meanwhile: nothing to mark (Kafka drops it too)
        mark_done(tp);
        continue;
      }
      if (cp->leader < 0) continue;  // no leader now: the tick retries
      if (cp->leader != broker_.node_id() || !p || !p->is_leader()) {
        remote[cp->leader].push_back(tp);
        continue;
      }
      if (!p->hw_follows_leo()) {  // acks=-1, as Kafka writes markers: refused below min ISR
        const ErrorCode e = broker_.service<replica::LeaderReplicas>().acks_all_check_before_append(*p);
        if (e != ErrorCode::NONE) {
          CK_LOG_WARN("txn", "transaction %s: marker for %s-%d not written: %s; retried", m->id.c_str(),
                      tp.first.c_str(), tp.second, std::string(protocol::error_name(e)).c_str());
          continue;
        }
      }
    } else if (!p) {  // deleted meanwhile
      mark_done(tp);
      continue;
    }
    produce::MarkerResult r = produce.append_marker(*p, pid, epoch, coord_epoch, commit);
    if (r.error == ErrorCode::NONE) {
      if (tp.first == groups::kOffsetsTopic)
        broker_.service<groups::GroupCoordinator>().complete_txn_offsets(pid, commit, tp.second);
      markers_written_.fetch_add(1, std::memory_order_relaxed);
      round->remaining.fetch_add(1);
      replica::when_acks_all_durable(broker_, p, r.log, r.end_offset, kAppendTimeoutMs,
                                     [m, tp, mark_done, count_down](ErrorCode e) {
                                       if (e == ErrorCode::NONE) mark_done(tp);
                                       else
                                         CK_LOG_WARN("txn", "transaction %s: marker for %s-%d not durable: %s; retried",
                                                     m->id.c_str(), tp.first.c_str(), tp.second,
                                                     std::string(protocol::error_name(e)).c_str());
                                       count_down();
                                     });
    } else if (given_up(tp, r.error)) {
      CK_LOG_WARN("txn", "transaction %s: marker for %s-%d refused: %s (%s); not retried", m->id.c_str(),
                  tp.first.c_str(), tp.second, std::string(protocol::error_name(r.error)).c_str(), r.message.c_str());
      mark_done(tp);
    } else {
      CK_LOG_WARN("txn", "transaction %s: marker for %s-%d failed: %s (%s); retried", m->id.c_str(),
                  tp.first.c_str(), tp.second, std::string(protocol::error_name(r.error)).c_str(), r.message.c_str());
    }
  }
  // Other leaders: one WriteTxnMarkers each (Kafka's marker channel).
  for (auto& [leader, tps] : remote) {
    protocol::WriteTxnMarkersRequest req;
    auto& marker = req.markers.emplace_back();
    marker.producer_id = pid;
    marker.producer_epoch = epoch;
    marker.transaction_result = commit;
    marker.coordinator_epoch = coord_epoch;
    for (const TxnPartition& tp : tps) {
      if (marker.topics.empty() || marker.topics.back().name != tp.first) marker.topics.emplace_back().name = tp.first;
      marker.topics.back().partition_indexes.push_back(tp.second);
    }
    round->remaining.fetch_add(1);
    markers_->send(leader, std::move(req),
                   [this, m, leader = leader, mark_done, count_down, given_up](MarkerChannel::PartitionErrors errors) {
                     for (const auto& [tp, e] : errors) {
                       if (e == ErrorCode::NONE) {
                         markers_written_.fetch_add(1, std::memory_order_relaxed);
                         mark_done(tp);
                       } else if (given_up(tp, e)) {
                         CK_LOG_WARN("txn", "transaction %s: broker %d refused the marker for %s-%d: %s; not retried",
                                     m->id.c_str(), leader, tp.first.c_str(), tp.second,
                                     std::string(protocol::error_name(e)).c_str());
                         mark_done(tp);
                       } else {
                         CK_LOG_INFO("txn", "transaction %s: marker for %s-%d at broker %d: %s; retried",
                                     m->id.c_str(), tp.first.c_str(), tp.second, leader,
                                     std::string(protocol::error_name(e)).c_str());
                       }
                     }
                     count_down();
                   });
  }
  count_down();
}

// ---------------------------------------------------------------------------
// Describe / list / sweep.

TxnCoordinator::View TxnCoordinator::describe(const std::string& id) {
  View v;
  v.id = id;
  if (ErrorCode e = coordinator_error(id); e != ErrorCode::NONE) {
    v.error = e;
    return v;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = txns_.find(id);
  if (it == txns_.end() || it->second->rec.producer_epoch < 0 || it->second->rec.state == TxnState::kDead) {
    v.error = ErrorCode::TRANSACTIONAL_ID_NOT_FOUND;
    return v;
  }
  const TxnMeta& m = *it->second;
  v.state = m.rec.state;
  v.producer_id = m.rec.producer_id;
  v.epoch = m.rec.producer_epoch;
  v.timeout_ms = m.rec.timeout_ms;
  v.start_ms = m.rec.state == TxnState::kEmpty ? -1 : m.rec.start_ms;
  v.partitions = is_prepare(m.rec.state) && m.markers_started ? m.awaiting_markers : m.rec.partitions;
  return v;
}

std::vector<TxnCoordinator::View> TxnCoordinator::list() {
  std::vector<View> out;
  if (!cluster_ && !loaded_.load(std::memory_order_acquire)) return out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, m] : txns_) {
    if (m->rec.state == TxnState::kDead || m->rec.producer_epoch < 0) continue;
    View v;
    v.id = id;
    v.state = m->rec.state;
    v.producer_id = m->rec.producer_id;
    v.epoch = m->rec.producer_epoch;
    v.start_ms = m->rec.start_ms;
    out.push_back(std::move(v));
  }
  return out;
}

size_t TxnCoordinator::open_transactions() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [id, m] : txns_)
    n += (m->rec.state == TxnState::kOngoing || is_prepare(m->rec.state)) ? 1 : 0;
  return n;
}

bool TxnCoordinator::sweepable() {
  if (stopped_.load()) return false;
  if (cluster_) return true;
  // Single node: only once loaded, and never creating the topic. A broker no
  // transactional producer has used has no __transaction_state (as Kafka's:
  // FindCoordinator and InitProducerId create it), so its periodic sweeps
  // have nothing to look at.
  return loaded_.load(std::memory_order_acquire) && broker_.topics().find(kTxnTopic) != nullptr;
}

size_t TxnCoordinator::abort_timed_out(int64_t now_ms) {
  // Cluster mode: txns_ holds the loaded partitions' ids only.
  if (!sweepable()) return 0;
  std::vector<MetaPtr> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, m] : txns_)
      if (m->rec.state == TxnState::kOngoing && !m->pending && m->rec.start_ms >= 0 &&
          m->rec.start_ms + m->rec.timeout_ms < now_ms)
        expired.push_back(m);
  }
  size_t started = 0;
  for (const MetaPtr& m : expired) {
    std::lock_guard<std::mutex> lock(mu_);
    if (m->rec.state != TxnState::kOngoing || m->pending) continue;
    CK_LOG_INFO("txn", "transaction %s (producer %lld, epoch %d) timed out after %d ms: aborting it", m->id.c_str(),
                static_cast<long long>(m->rec.producer_id), m->rec.producer_epoch, m->rec.timeout_ms);
    fence_and_abort(m, [id = m->id](ErrorCode e) {
      if (e != ErrorCode::NONE)
        CK_LOG_WARN("txn", "transaction %s: aborting after its timeout failed: %s; retried", id.c_str(),
                    std::string(protocol::error_name(e)).c_str());
    });
    ++started;
    timed_out_.fetch_add(1, std::memory_order_relaxed);
  }
  return started;
}

size_t TxnCoordinator::expire_ids(int64_t now_ms) {
  if (!sweepable()) return 0;
  const int64_t max_idle = broker_.config().get_int("transactional.id.expiration.ms");
  std::vector<std::pair<MetaPtr, TxnRecord>> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, m] : txns_) {
      const TxnState s = m->rec.state;
      const bool idle = s == TxnState::kEmpty || s == TxnState::kCompleteCommit || s == TxnState::kCompleteAbort;
      if (!idle || m->pending || m->rec.last_update_ms < 0 || m->rec.last_update_ms + max_idle >= now_ms) continue;
      TxnRecord next = m->rec;
      next.state = TxnState::kDead;  // written as a tombstone
      m->pending = true;
      expired.emplace_back(m, std::move(next));
    }
  }
  for (auto& [m, next] : expired) {
    CK_LOG_INFO("txn", "transactional id %s unused for %d ms: expired", m->id.c_str(), static_cast<int>(max_idle));
    write(m, std::move(next), [](ErrorCode) {});
  }
  return expired.size();
}

// ---------------------------------------------------------------------------
// The timer. (Loading and the cluster's ownership: coordinator_load.cc.)

void TxnCoordinator::arm_timer() {
  std::lock_guard<std::mutex> lock(timer_mu_);
  if (stopped_) return;
  timer_->expires_after(std::chrono::milliseconds(kTickMs));
  auto alive = alive_;
  timer_->async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || !*alive) return;
    tick();
    arm_timer();
  });
}

void TxnCoordinator::tick() {
  const int64_t now = Broker::now_ms();
  // Marker rounds left incomplete (a partition refused for now) run again.
  std::vector<MetaPtr> retry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, m] : txns_)
      if (is_prepare(m->rec.state) && !m->markers_running && !m->pending) retry.push_back(m);
  }
  for (const MetaPtr& m : retry) schedule_markers(m);
  if (now >= next_expiry_ms_) {
    next_expiry_ms_ = now + kExpiryCheckMs;
    expire_ids(now);
  }
  const int64_t interval = broker_.config().get_int("transaction.abort.timed.out.transaction.cleanup.interval.ms");
  if (next_sweep_ms_ == 0) next_sweep_ms_ = now + interval;
  if (now >= next_sweep_ms_) {
    next_sweep_ms_ = now + interval;
    abort_timed_out(now);
  }
}

}  // namespace ciuickafka::broker::txn
