// broker/replica/leader_replicas.cc: follower tracking, the replicated HW,
// AlterPartition and the acks=all waiting room (see leader_replicas.h).
#include "broker/replica/leader_replicas.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "broker/broker.h"
#include "broker/replica/hw_checkpoint.h"
#include "metrics/log/log.h"
#include "metrics/process_metrics.h"
#include "protocol/generated/alter_partition.h"
#include "replication/net/reconnecting_client.h"

namespace ciuickafka::broker::replica {

using protocol::ErrorCode;
using replication::ReplicaState;

struct LeaderReplicas::Entry {
  std::weak_ptr<Partition> partition;
  std::mutex mu;  // guards st
  ReplicaState st;
};

struct LeaderReplicas::Waiter {
  std::mutex mu;
  bool done = false;
  std::vector<ReplicationTarget> targets;
  std::vector<ErrorCode> results;
  std::vector<bool> final;
  ReplicationFinish finish;
  std::unique_ptr<asio::steady_timer> timer;
};

namespace {

int64_t steady_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string id_list(const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

}  // namespace

LeaderReplicas::LeaderReplicas(Broker& broker)
    : broker_(broker),
      node_id_(broker.node_id()),
      lag_max_ms_(std::max<int64_t>(1, broker.config().get_long("replica.lag.time.max.ms"))) {
  std::string err;
  interrupter_ = replication::net::Interrupter::create(&err);
  if (!interrupter_) CK_LOG_WARN("replication", "leader replicas: %s", err.c_str());
  std::weak_ptr<bool> alive = alive_token_;
  broker.append_listeners().add([this, alive](const Partition& p) {
    if (alive.lock()) on_append(p);
  });
  sender_ = std::thread([this] { sender_loop(); });
  collector_id_ = broker.metrics_registry().add_collector([this](std::vector<prometheus::MetricFamily>& out) {
    auto counter = [&](const char* name, const char* help, const std::atomic<uint64_t>& v) {
      out.push_back(metrics::single_sample_family(name, help, prometheus::MetricType::Counter,
                                                  static_cast<double>(v.load(std::memory_order_relaxed))));
    };
    counter("kafka_server_replicamanager_isrshrinks_total",
            "ISR changes of partitions led here that removed replicas, as the controller committed them "
            "(AlterPartition answers).",
            isr_shrinks_);
    counter("kafka_server_replicamanager_isrexpands_total",
            "ISR changes of partitions led here that added replicas, as the controller committed them.",
            isr_expands_);
    counter("kafka_server_replicamanager_failedisrupdates_total",
            "AlterPartition answers refusing an ISR change this broker proposed (any error code).",
            isr_update_failures_);
  });
}

LeaderReplicas::~LeaderReplicas() {
  broker_.metrics_registry().remove_collector(collector_id_);
  stop();
}

void LeaderReplicas::stop() {
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  send_cv_.notify_all();
  if (interrupter_) interrupter_->trigger();
  if (sender_.joinable()) sender_.join();
  alive_token_.reset();
  // Whoever still waits for replication gets REQUEST_TIMED_OUT now.
  std::vector<std::shared_ptr<Waiter>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [tp, list] : waiters_)
      for (auto& w : list)
        if (auto s = w.lock()) left.push_back(std::move(s));
    waiters_.clear();
  }
  for (auto& w : left) try_complete(w, true);
}

std::shared_ptr<LeaderReplicas::Entry> LeaderReplicas::find(const storage::TopicPartition& tp) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(tp);
  return it == entries_.end() ? nullptr : it->second;
}

bool LeaderReplicas::tracks(const Partition& p) const { return find(p.tp()) != nullptr; }

int32_t LeaderReplicas::min_insync_replicas(const Partition& p) const {
  auto topic = broker_.topics().find(p.topic());
  return topic ? broker_.topics().min_insync_replicas(*topic) : 1;
}

replication::BrokerSet LeaderReplicas::alive(const ReplicaState& st) const {
  replication::BrokerSet out;
  ZkCluster* cluster = broker_.cluster();
  auto view = cluster != nullptr ? cluster->view() : nullptr;
  if (view == nullptr) {  // no membership (tests, single node): every replica counts as alive
    out.insert(st.replicas().begin(), st.replicas().end());
    out.insert(node_id_);
    return out;
  }
  for (const auto& b : view->brokers) out.insert(b.id);
  return out;
}

void LeaderReplicas::became_leader(const std::shared_ptr<Partition>& p) {
  broker_.service<HwCheckpoints>().restore(*p);
  auto rs = p->role_state();
  const bool others = std::any_of(rs->replicas.begin(), rs->replicas.end(), [&](int32_t r) { return r != node_id_; });
  const int64_t leo = p->log_end_offset();
  // Where the epoch starts: set_role recorded it (Kafka's
  // maybeAssignEpochStartOffset) at the end of the log, past any write in
  // flight then (so possibly past leo for now); unset, the LEO.
  std::optional<int64_t> epoch_start;
  if (rs->leader_epoch_start_offset >= 0) epoch_start = rs->leader_epoch_start_offset;
  std::shared_ptr<Entry> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(p->tp());
    if (it != entries_.end()) {
      old = it->second;
      if (!others) entries_.erase(it);
    }
  }
  if (!others) {
    p->set_hw_follows_leo(true);
    p->set_high_watermark(leo);
    wake_waiters(p->tp());
    return;
  }
  auto e = std::make_shared<Entry>();
  e->partition = p;
  const int64_t now = steady_now_ms();
  if (old) {
    std::lock_guard<std::mutex> lock(old->mu);
    e->st = ReplicaState::become_leader(node_id_, rs->leader_epoch, rs->partition_epoch, rs->replicas, rs->isr, leo,
                                        p->high_watermark(), now, &old->st, epoch_start);
  } else {
    e->st = ReplicaState::become_leader(node_id_, rs->leader_epoch, rs->partition_epoch, rs->replicas, rs->isr, leo,
                                        p->high_watermark(), now, nullptr, epoch_start);
  }
  p->set_hw_follows_leo(false);
  {
    std::lock_guard<std::mutex> lock(mu_);
    entries_[p->tp()] = e;
  }
  advance_hw(*e, p);
}

void LeaderReplicas::became_follower(const std::shared_ptr<Partition>& p, const LeaderEndpoint&) {
  broker_.service<HwCheckpoints>().restore(*p);
  {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.erase(p->tp());
  }
  p->set_hw_follows_leo(false);  // a follower's HW is the leader's
  wake_waiters(p->tp());
}

void LeaderReplicas::stopped(const storage::TopicPartition& tp, bool) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.erase(tp);
  }
  wake_waiters(tp);
}

void LeaderReplicas::advance_hw(Entry& e, const std::shared_ptr<Partition>& p) {
  const int32_t min_isr = min_insync_replicas(*p);
  std::optional<int64_t> hw;
  {
    std::lock_guard<std::mutex> lock(e.mu);
    e.st.on_leader_append(p->log_end_offset());
    hw = e.st.maybe_advance_hw(min_isr, steady_now_ms(), lag_max_ms_, alive(e.st));
  }
  if (hw) p->set_high_watermark(*hw);
}

ErrorCode LeaderReplicas::on_follower_fetch(const Partition& part, int32_t replica_id, int64_t fetch_offset,
                                            int64_t log_start_offset, int64_t leader_leo,
                                            bool has_current_leader_epoch) {
  auto e = find(part.tp());
  if (!e) return ErrorCode::NOT_LEADER_OR_FOLLOWER;
  auto p = e->partition.lock();
  if (!p) return ErrorCode::NOT_LEADER_OR_FOLLOWER;
  const int32_t min_isr = min_insync_replicas(*p);
  const int64_t now = steady_now_ms();
  std::optional<int64_t> hw;
  std::optional<replication::AlterPartitionProposal> expand;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    const replication::BrokerSet live = alive(e->st);
    ErrorCode err = e->st.on_follower_fetch(replica_id, fetch_offset, log_start_offset, now, leader_leo,
                                            has_current_leader_epoch);
    if (err != ErrorCode::NONE) return err;
    expand = e->st.propose_expand(replica_id, live);
    hw = e->st.maybe_advance_hw(min_isr, now, lag_max_ms_, live);
  }
  if (expand) queue(Proposal{p->tp(), p->topic_id(), *expand});
  if (hw) p->set_high_watermark(*hw);
  return ErrorCode::NONE;
}

void LeaderReplicas::on_append(const Partition& part) {
  if (auto e = find(part.tp())) {
    if (auto p = e->partition.lock(); p && p.get() == &part) advance_hw(*e, p);
  }
  wake_waiters(part.tp());
}

std::optional<int32_t> LeaderReplicas::preferred_read_replica(const Partition& p, std::string_view client_rack,
                                                              const std::optional<std::string>& leader_rack,
                                                              int64_t fetch_offset,
                                                              const replication::LiveRacks& live) const {
  auto e = find(p.tp());
  if (!e) return std::nullopt;
  std::vector<replication::ReplicaView> followers;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    followers = replication::read_candidates(e->st, fetch_offset, steady_now_ms(), live);
  }
  if (followers.empty()) return std::nullopt;
  const replication::ReplicaView leader{node_id_, leader_rack, p.log_end_offset(), 0};
  return replication::select_read_replica(client_rack, leader, followers);
}

ErrorCode LeaderReplicas::acks_all_check_before_append(const Partition& p) const {
  auto e = find(p.tp());
  if (!e) return ErrorCode::NONE;
  const int32_t min_isr = min_insync_replicas(p);
  std::lock_guard<std::mutex> lock(e->mu);
  return e->st.acks_all_check_before_append(min_isr);
}

std::optional<ReplicaState> LeaderReplicas::state(const storage::TopicPartition& tp) const {
  auto e = find(tp);
  if (!e) return std::nullopt;
  std::lock_guard<std::mutex> lock(e->mu);
  return e->st;
}

// --- acks=all

void LeaderReplicas::wait_for_replication(std::vector<ReplicationTarget> targets, int32_t timeout_ms,
                                          ReplicationFinish finish) {
  auto w = std::make_shared<Waiter>();
  w->results.assign(targets.size(), ErrorCode::NONE);
  w->final.assign(targets.size(), false);
  w->targets = std::move(targets);
  w->finish = std::move(finish);
  w->timer = std::make_unique<asio::steady_timer>(broker_.background(),
                                                  std::chrono::milliseconds(std::max(timeout_ms, 0)));
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& t : w->targets) waiters_[t.partition->tp()].push_back(w);
  }
  {
    std::lock_guard<std::mutex> lock(w->mu);
    w->timer->async_wait([this, w, alive = std::weak_ptr<bool>(alive_token_)](const boost::system::error_code& ec) {
      if (!ec && alive.lock()) try_complete(w, true);
    });
  }
  try_complete(w, false);
}

void LeaderReplicas::wake_waiters(const storage::TopicPartition& tp) {
  std::vector<std::shared_ptr<Waiter>> ws;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = waiters_.find(tp);
    if (it == waiters_.end()) return;
    auto& list = it->second;
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const std::weak_ptr<Waiter>& x) {
                                auto s = x.lock();
                                if (!s) return true;
                                ws.push_back(std::move(s));
                                return false;
                              }),
               list.end());
    if (list.empty()) waiters_.erase(it);
  }
  for (auto& w : ws) try_complete(w, false);
}

void LeaderReplicas::try_complete(const std::shared_ptr<Waiter>& w, bool timed_out) {
  ReplicationFinish finish;
  std::vector<ErrorCode> results;
  {
    std::lock_guard<std::mutex> lock(w->mu);
    if (w->done) return;
    bool all = true;
    for (size_t i = 0; i < w->targets.size(); ++i) {
      if (w->final[i]) continue;
      const ReplicationTarget& t = w->targets[i];
      replication::AcksAllOutcome out;
      if (!t.partition->is_leader()) {
        out = {true, ErrorCode::NOT_LEADER_OR_FOLLOWER};
      } else if (auto e = find(t.partition->tp())) {
        const int32_t min_isr = min_insync_replicas(*t.partition);
        std::lock_guard<std::mutex> el(e->mu);
        out = e->st.acks_all_complete(t.end_offset, min_isr);
      } else if (t.partition->hw_follows_leo()) {  // the leader is the only replica now
        out = {t.partition->high_watermark() >= t.end_offset, ErrorCode::NONE};
      } else {
        out = {true, ErrorCode::NOT_LEADER_OR_FOLLOWER};
      }
      if (!out.done && timed_out) out = {true, ErrorCode::REQUEST_TIMED_OUT};
      if (out.done) {
        w->final[i] = true;
        w->results[i] = out.error;
      } else {
        all = false;
      }
    }
    if (!all) return;
    w->done = true;
    if (!timed_out && w->timer) w->timer->cancel();
    finish = std::move(w->finish);
    results = w->results;
    w->targets.clear();
  }
  if (finish) finish(results);
}

// --- AlterPartition

void LeaderReplicas::check_shrink() {
  std::vector<std::pair<std::shared_ptr<Entry>, std::shared_ptr<Partition>>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [tp, e] : entries_)
      if (auto p = e->partition.lock()) all.emplace_back(e, std::move(p));
  }
  const int64_t now = steady_now_ms();
  for (auto& [e, p] : all) {
    std::optional<replication::AlterPartitionProposal> prop;
    {
      std::lock_guard<std::mutex> lock(e->mu);
      prop = e->st.propose_shrink(now, lag_max_ms_);
    }
    if (prop) queue(Proposal{p->tp(), p->topic_id(), *prop});
  }
}

void LeaderReplicas::queue(Proposal p) {
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    if (stopping_) return;
    outbox_.push_back(std::move(p));
  }
  send_cv_.notify_all();
}

void LeaderReplicas::set_controller_endpoint(std::optional<ControllerEndpoint> ep) {
  std::lock_guard<std::mutex> lock(send_mu_);
  controller_override_ = std::move(ep);
}

uint64_t LeaderReplicas::alter_partition_answers() const {
  std::lock_guard<std::mutex> lock(send_mu_);
  return answers_;
}

std::optional<ControllerEndpoint> LeaderReplicas::controller() const {
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    if (controller_override_) return controller_override_;
  }
  ZkCluster* cluster = broker_.cluster();
  auto view = cluster != nullptr ? cluster->view() : nullptr;
  if (view == nullptr || view->controller_id < 0) return std::nullopt;
  for (const auto& b : view->brokers) {
    if (b.id != view->controller_id) continue;
    for (const auto& ep : b.endpoints) {
      if (ep.listener != broker_.listeners()->inter_broker) continue;
      return ControllerEndpoint{b.id, ep.host.empty() ? "localhost" : ep.host, static_cast<uint16_t>(ep.port)};
    }
  }
  return std::nullopt;
}

void LeaderReplicas::sender_loop() {
  if (!interrupter_) return;
  std::unique_ptr<replication::net::ReconnectingClient> client;
  ControllerEndpoint current;
  const auto shrink_every = std::chrono::milliseconds(std::max<int64_t>(1, lag_max_ms_ / 2));
  auto next_shrink = std::chrono::steady_clock::now() + shrink_every;
  for (;;) {
    std::vector<Proposal> batch;
    {
      std::unique_lock<std::mutex> lock(send_mu_);
      send_cv_.wait_until(lock, next_shrink, [&] { return stopping_ || !outbox_.empty(); });
      if (stopping_) return;
      if (outbox_.empty()) {
        lock.unlock();
        check_shrink();
        next_shrink = std::chrono::steady_clock::now() + shrink_every;
        continue;
      }
      batch.assign(std::make_move_iterator(outbox_.begin()), std::make_move_iterator(outbox_.end()));
      outbox_.clear();
    }
    // Drop proposals no longer pending (answered, or a new leadership).
    batch.erase(std::remove_if(batch.begin(), batch.end(),
                               [&](const Proposal& pr) {
                                 auto e = find(pr.tp);
                                 if (!e) return true;
                                 std::lock_guard<std::mutex> lock(e->mu);
                                 return !e->st.pending() || e->st.pending()->sent.id != pr.proposal.id;
                               }),
                batch.end());
    if (batch.empty()) continue;
    auto retry_later = [&](std::vector<Proposal> again) {
      interrupter_->wait_until(replication::net::Clock::now() + std::chrono::milliseconds(100));
      std::lock_guard<std::mutex> lock(send_mu_);
      for (auto& p : again) outbox_.push_back(std::move(p));
    };
    std::optional<ControllerEndpoint> ep = controller();
    if (!ep) {
      retry_later(std::move(batch));
      continue;
    }
    if (!client || !(*ep == current)) {
      replication::net::ClientOptions opts;
      opts.client_id = "ciuickafka-alter-partition-" + std::to_string(node_id_);
      opts.interrupter = interrupter_;
      client = std::make_unique<replication::net::ReconnectingClient>(ep->host, ep->port, opts);
      current = *ep;
    }
    auto c = client->client();
    std::optional<int16_t> version;
    if (c) version = c.value()->pick_version(protocol::AlterPartitionRequest::kApiKey, 3, 0);
    if (!version) {
      retry_later(std::move(batch));
      continue;
    }
    ZkCluster* cluster = broker_.cluster();
    auto view = cluster != nullptr ? cluster->view() : nullptr;
    auto epoch_of = [&](int32_t id) -> int64_t {
      if (view == nullptr) return -1;
      for (const auto& b : view->brokers)
        if (b.id == id) return b.epoch;
      return -1;
    };
    protocol::AlterPartitionRequest req;
    req.broker_id = node_id_;
    req.broker_epoch = view != nullptr ? view->broker_epoch : -1;
    for (const Proposal& pr : batch) {
      auto it = std::find_if(req.topics.begin(), req.topics.end(), [&](const auto& t) {
        return *version >= 2 ? t.topic_id == pr.topic_id : t.topic_name == pr.tp.topic;
      });
      if (it == req.topics.end()) {
        auto& t = req.topics.emplace_back();
        t.topic_name = pr.tp.topic;
        t.topic_id = pr.topic_id;
        it = req.topics.end() - 1;
      }
      auto& pd = it->partitions.emplace_back();
      pd.partition_index = pr.tp.partition;
      pd.leader_epoch = pr.proposal.leader_epoch;
      pd.partition_epoch = pr.proposal.partition_epoch;
      pd.leader_recovery_state = static_cast<int8_t>(pr.proposal.leader_recovery_state);
      if (*version >= 3) {
        for (int32_t id : pr.proposal.new_isr) pd.new_isr_with_epochs.push_back({id, epoch_of(id), {}});
      } else {
        pd.new_isr = pr.proposal.new_isr;
      }
    }
    protocol::AlterPartitionResponse resp;
    replication::net::Status st = client->call(req, *version, &resp);
    if (!st.ok()) {
      if (st.kind() == replication::net::NetErrorKind::kClosed) return;
      retry_later(std::move(batch));
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(send_mu_);
      ++answers_;
    }
    std::vector<Proposal> again;
    for (Proposal& pr : batch) {
      replication::AlterPartitionAnswer ans;
      bool found = false;
      if (resp.error_code != 0) {
        ans.error = static_cast<ErrorCode>(resp.error_code);
        found = true;
      } else {
        for (const auto& t : resp.topics) {
          if (*version >= 2 ? t.topic_id != pr.topic_id : t.topic_name != pr.tp.topic) continue;
          for (const auto& pd : t.partitions) {
            if (pd.partition_index != pr.tp.partition) continue;
            found = true;
            ans.error = static_cast<ErrorCode>(pd.error_code);
            ans.leader_epoch = pd.leader_epoch;
            ans.partition_epoch = pd.partition_epoch;
            ans.isr = pd.isr;
            ans.leader_recovery_state = static_cast<replication::LeaderRecoveryState>(pd.leader_recovery_state);
          }
        }
      }
      if (!found) {
        again.push_back(std::move(pr));
        continue;
      }
      auto e = find(pr.tp);
      auto p = e ? e->partition.lock() : nullptr;
      if (!p) continue;
      replication::AlterPartitionEffect effect;
      std::optional<PartitionRoleState> role;
      std::vector<int32_t> old_isr;
      {
        std::lock_guard<std::mutex> lock(e->mu);
        effect = e->st.on_alter_partition_response(pr.proposal.id, ans);
        if (ans.error != ErrorCode::NONE) isr_update_failures_.fetch_add(1, std::memory_order_relaxed);
        if (effect == replication::AlterPartitionEffect::kCommitted) {
          role = *p->role_state();
          old_isr = role->isr;
          if (e->st.isr().size() < role->isr.size()) isr_shrinks_.fetch_add(1, std::memory_order_relaxed);
          if (e->st.isr().size() > role->isr.size()) isr_expands_.fetch_add(1, std::memory_order_relaxed);
          role->isr = e->st.isr();
          role->partition_epoch = e->st.partition_epoch();
        } else if (effect == replication::AlterPartitionEffect::kRetry && e->st.pending()) {
          again.push_back(Proposal{pr.tp, pr.topic_id, e->st.pending()->sent});
        }
      }
      if (role) {
        // Kafka logs each ISR change at INFO too ("ISR updated to ..."):
        // a stalled acks=all is read from these lines.
        CK_LOG_INFO("replication", "partition %s-%d: ISR [%s] -> [%s] (leader epoch %d, partition epoch %d)",
                    pr.tp.topic.c_str(), pr.tp.partition, id_list(old_isr).c_str(), id_list(role->isr).c_str(),
                    role->leader_epoch, role->partition_epoch);
        if (role->leader_epoch == p->leader_epoch() && p->is_leader()) p->set_role(std::move(*role));
        advance_hw(*e, p);
        wake_waiters(pr.tp);
      }
    }
    if (!again.empty()) retry_later(std::move(again));
  }
}

void when_acks_all_durable(Broker& broker, const std::shared_ptr<Partition>& p, std::shared_ptr<storage::Log> log,
                           int64_t end_offset, int32_t timeout_ms, std::function<void(protocol::ErrorCode)> done) {
  Broker* b = &broker;
  auto then_fsync = [b, log = std::move(log), end_offset](std::function<void(protocol::ErrorCode)> fn) {
    if (!log || !b->config().get_bool("ciuic.acks.all.fsync")) return fn(protocol::ErrorCode::NONE);
    b->logs().sync_to(log, end_offset, [fn = std::move(fn)](storage::Status s) {
      fn(s.is_ok() ? protocol::ErrorCode::NONE : protocol::ErrorCode::KAFKA_STORAGE_ERROR);
    });
  };
  if (broker.cluster() == nullptr || !p || p->hw_follows_leo()) return then_fsync(std::move(done));
  std::vector<ReplicationTarget> targets{ReplicationTarget{p, end_offset}};
  // done runs on the background executor: the wait completes on the stack
  // of whoever moved the HW or the role (an appender holding its own locks,
  // a LeaderAndIsr holding the replica manager's), and coordinators' done
  // callbacks take their own locks.
  asio::any_io_executor background = broker.background();
  broker.service<LeaderReplicas>().wait_for_replication(
      std::move(targets), timeout_ms,
      [background, then_fsync, done = std::move(done)](const std::vector<protocol::ErrorCode>& results) mutable {
        const protocol::ErrorCode e = results.empty() ? protocol::ErrorCode::NONE : results.front();
        asio::post(background, [e, then_fsync, done = std::move(done)]() mutable {
          if (e != protocol::ErrorCode::NONE) return done(e);
          then_fsync(std::move(done));
        });
      });
}

}  // namespace ciuickafka::broker::replica
