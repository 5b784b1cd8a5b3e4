// broker/groups/coordinator.cc: the coordinator service: the group map,
// the __consumer_offsets topic (creation, appends, durability), loading it
// (a single node: all of it at start; cluster mode: per partition as
// leadership comes and goes) and the timer tick. The protocol logic lives
// in membership.cc, offsets.cc and admin_ops.cc.
#include "broker/groups/coordinator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>

#include "broker/admin/auto_create.h"
#include "broker/broker.h"
#include "broker/cluster/coordinator_errors.h"
#include "broker/cluster/coordinator_write.h"
#include "broker/cluster/partition_scan.h"
#include "broker/cluster/replica_manager.h"
#include "broker/groups/lag_metrics.h"
#include "broker/groups/legacy_offsets.h"
#include "broker/groups/membership.h"
#include "broker/groups/partition_for.h"
#include "broker/replica/leader_replicas.h"
#include "broker/server/connection_events.h"
#include "metrics/log/log.h"
#include "protocol/records/record_batch.h"

namespace ciuickafka::broker::groups {

using protocol::ErrorCode;

namespace {
std::atomic<int64_t> g_manual_ms{-1};  // -1: the steady clock

int64_t real_steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

int64_t steady_ms() {
  const int64_t manual = g_manual_ms.load(std::memory_order_acquire);
  return manual >= 0 ? manual : real_steady_ms();
}

ManualGroupClock::ManualGroupClock() { g_manual_ms.store(real_steady_ms(), std::memory_order_release); }
ManualGroupClock::~ManualGroupClock() { g_manual_ms.store(-1, std::memory_order_release); }
void ManualGroupClock::advance(int64_t ms) { g_manual_ms.fetch_add(ms, std::memory_order_acq_rel); }


GroupCoordinator::GroupCoordinator(Broker& broker)
    : broker_(broker),
      cluster_(broker.cluster() != nullptr),
      timer_(std::make_unique<asio::steady_timer>(broker.background())) {
  metrics_id_ = register_lag_metrics(*this);
  if (cluster_) loader_ = std::thread([this] { loader_loop(); });
  auto alive = alive_;
  asio::post(broker_.background(), [this, alive] {
    if (!*alive) return;
    load();
    arm_timer();
  });
}

GroupCoordinator::~GroupCoordinator() { stop(); }

void GroupCoordinator::stop() {
  if (stopped_.exchange(true)) return;
  *alive_ = false;
  broker_.metrics_registry().remove_collector(metrics_id_);
  if (subscribed_.load()) broker_.service<ConnectionEvents>().unsubscribe(connection_events_token_);
  {
    std::lock_guard<std::mutex> lock(timer_mu_);
    timer_->cancel();
  }
  {
    std::lock_guard<std::mutex> lock(loader_mu_);
    loader_stop_ = true;
    load_jobs_.clear();
  }
  loader_cv_.notify_all();
  if (loader_.joinable()) loader_.join();
  // Answer what is held so no connection waits forever.
  std::vector<std::shared_ptr<Group>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, g] : groups_) all.push_back(g);
  }
  for (auto& g : all) {
    Outbox out;
    {
      std::lock_guard<std::mutex> lock(g->mu);
      Membership::fail_held(*g, ErrorCode::NOT_COORDINATOR, out);
    }
    run(out);
  }
  {
    std::lock_guard<std::mutex> lock(load_mu_);
  }
  load_cv_.notify_all();
}

bool GroupCoordinator::wait_loaded(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(load_mu_);
  return load_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return loaded(); });
}

// ---------------------------------------------------------------------------
// The topic.

bool GroupCoordinator::ensure_offsets_topic() {
  if (cluster_) {
    auto snap = broker_.service<ReplicaManager>().metadata_cache().snapshot();
    if (snap->topic(kOffsetsTopic) != nullptr) return true;
    // Queued once at a time; refused at once while too few brokers live.
    (void)admin::auto_create_topic(broker_, kOffsetsTopic);
    return false;
  }
  if (broker_.topics().find(kOffsetsTopic)) return true;
  const auto& cfg = broker_.config();
  ConfigMap configs;
  configs["cleanup.policy"] = "compact";
  configs["segment.bytes"] = std::to_string(cfg.get_int("offsets.topic.segment.bytes"));
  // A single node holds one replica whatever offsets.topic.replication.factor says.
  const int16_t rf = 1;
  auto created = broker_.topics().create(kOffsetsTopic, cfg.get_int("offsets.topic.num.partitions"), rf, configs,
                                         false, Broker::now_ms());
  return created.error.ok() || broker_.topics().find(kOffsetsTopic) != nullptr;
}

int32_t GroupCoordinator::offsets_partition_count() {
  auto snap = broker_.service<ReplicaManager>().metadata_cache().snapshot();
  if (const CachedTopic* t = snap->topic(kOffsetsTopic); t != nullptr && !t->partitions.empty())
    return t->partitions.rbegin()->first + 1;
  return broker_.config().get_int("offsets.topic.num.partitions");
}

int32_t GroupCoordinator::partition_of(const std::string& group_id) {
  if (cluster_) return partition_for(group_id, offsets_partition_count());
  auto topic = broker_.topics().find(kOffsetsTopic);
  const int32_t n = topic ? static_cast<int32_t>(topic->partitions.size())
                          : broker_.config().get_int("offsets.topic.num.partitions");
  return partition_for(group_id, n);
}

std::shared_ptr<Partition> GroupCoordinator::offsets_partition(const std::string& group_id) {
  if (cluster_) {
    auto topic = broker_.topics().find(kOffsetsTopic);
    return topic ? topic->partition(partition_of(group_id)) : nullptr;
  }
  if (!ensure_offsets_topic()) return nullptr;
  auto topic = broker_.topics().find(kOffsetsTopic);
  if (!topic || topic->partitions.empty()) return nullptr;
  return topic->partition(partition_for(group_id, static_cast<int32_t>(topic->partitions.size())));
}

Appended GroupCoordinator::append(const std::string& group_id, const std::vector<OffsetsRecord>& records) {
  Appended a;
  auto p = offsets_partition(group_id);
  if (cluster_) {
    // Only the loaded leader writes (a follower's log is its leader's copy).
    const int32_t index = partition_of(group_id);
    ErrorCode own;
    {
      std::lock_guard<std::mutex> lock(own_mu_);
      own = ownership_.error(index);
    }
    if (own != ErrorCode::NONE || !p || !p->is_leader()) {
      a.error = ErrorCode::NOT_COORDINATOR;
      return a;
    }
    if (!p->hw_follows_leo()) {  // replicated: refuse below min.insync.replicas, as acks=all does
      const ErrorCode e = broker_.service<replica::LeaderReplicas>().acks_all_check_before_append(*p);
      if (e != ErrorCode::NONE) {
        a.error = coordinator_append_error(e);
        return a;
      }
    }
  }
  if (!p) {
    a.error = ErrorCode::COORDINATOR_NOT_AVAILABLE;
    return a;
  }
  auto batch = build_offsets_batch(records, Broker::now_ms());
  if (!batch) {
    a.error = ErrorCode::UNKNOWN_SERVER_ERROR;
    return a;
  }
  auto q = CoordinatorWrite::append(p, std::move(*batch), Broker::now_ms());
  if (!q.status.is_ok()) {
    // Leadership moved since the check above: another broker coordinates
    // now. Kafka maps storage failures of the offsets log to a retriable error.
    a.error = q.status.code() == storage::StatusCode::kFenced ? ErrorCode::NOT_COORDINATOR
                                                               : ErrorCode::COORDINATOR_NOT_AVAILABLE;
    return a;
  }
  a.log = p->log_ptr();
  a.partition = p;
  a.end_offset = q.result.last_offset + 1;
  a.write = std::move(q.write);
  return a;
}

void GroupCoordinator::when_durable(Appended a, std::function<void(ErrorCode)> done) {
  if (a.error != ErrorCode::NONE || !a.log) {
    done(a.error);
    return;
  }
  if (a.write) {  // first the write itself (queued on a network thread's ring)
    std::shared_ptr<CoordinatorWrite> write = std::move(a.write);
    write->then([this, a = std::move(a), done = std::move(done)](storage::Status s) mutable {
      if (!s.is_ok()) return done(ErrorCode::COORDINATOR_NOT_AVAILABLE);
      when_durable(std::move(a), std::move(done));
    });
    return;
  }
  Broker* broker = &broker_;
  auto fsync_then_done = [broker, log = a.log, end = a.end_offset](std::function<void(ErrorCode)> fn) {
    if (!broker->config().get_bool("ciuic.acks.all.fsync")) return fn(ErrorCode::NONE);
    broker->logs().sync_to(log, end, [fn = std::move(fn)](storage::Status s) {
      fn(s.is_ok() ? ErrorCode::NONE : ErrorCode::COORDINATOR_NOT_AVAILABLE);
    });
  };
  if (!cluster_ || !a.partition || a.partition->hw_follows_leo()) return fsync_then_done(std::move(done));
  // Cluster mode, replicated partition: answered once the HW covers the
  // write (acks=all), then once fsynced when so configured.
  //
  // The replication wait completes on whichever thread moves the HW or the
  // role: an append (a later commit of the same group, made under the
  // group's lock) or a LeaderAndIsr (under the replica manager's lock). The
  // callbacks lock the group, so they run on the background executor, never
  // on that stack: inline, the next commit of a group waiting on a dead
  // follower locked its own group twice, and the broker's network threads
  // piled up behind it (seen in a chaos run).
  std::vector<replica::ReplicationTarget> targets{replica::ReplicationTarget{a.partition, a.end_offset}};
  asio::any_io_executor background = broker_.background();
  broker_.service<replica::LeaderReplicas>().wait_for_replication(
      std::move(targets), broker_.config().get_int("offsets.commit.timeout.ms"),
      [background, fsync_then_done, done = std::move(done)](const std::vector<ErrorCode>& results) mutable {
        const ErrorCode e = results.empty() ? ErrorCode::NONE : results.front();
        asio::post(background, [e, fsync_then_done, done = std::move(done)]() mutable {
          if (e != ErrorCode::NONE) return done(coordinator_append_error(e));
          fsync_then_done(std::move(done));
        });
      });
}

ErrorCode GroupCoordinator::coordinator_error(const std::string& group_id) {
  if (!cluster_) return loaded() ? ErrorCode::NONE : ErrorCode::COORDINATOR_LOAD_IN_PROGRESS;
  const int32_t p = partition_of(group_id);
  std::lock_guard<std::mutex> lock(own_mu_);
  return ownership_.error(p);
}

OwnState GroupCoordinator::partition_state(int32_t p) {
  std::lock_guard<std::mutex> lock(own_mu_);
  return ownership_.state(p);
}

bool GroupCoordinator::wait_partition_state(int32_t p, OwnState want, int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(own_mu_);
  return own_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return ownership_.state(p) == want; });
}

// ---------------------------------------------------------------------------
// The group map.

std::shared_ptr<Group> GroupCoordinator::find(const std::string& group_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = groups_.find(group_id);
  return it == groups_.end() ? nullptr : it->second;
}

std::shared_ptr<Group> GroupCoordinator::get_or_create(const std::string& group_id) {
  const int32_t p = cluster_ ? partition_of(group_id) : 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (cluster_) {
    // Never a group of a partition not loaded here (an unload may have run
    // since the caller's coordinator_error check).
    std::lock_guard<std::mutex> own(own_mu_);
    if (ownership_.state(p) != OwnState::kLoaded) return nullptr;
  }
  auto& slot = groups_[group_id];
  if (!slot) {
    slot = std::make_shared<Group>(group_id);
    slot->state_timestamp_ms = Broker::now_ms();
  }
  return slot;
}

void GroupCoordinator::forget(const std::shared_ptr<Group>& g) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = groups_.find(g->id);
  if (it != groups_.end() && it->second == g) groups_.erase(it);
}

std::vector<std::shared_ptr<Group>> GroupCoordinator::all_groups() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Group>> out;
  for (auto& [id, g] : groups_) out.push_back(g);
  return out;
}

// ---------------------------------------------------------------------------
// Loading.

void GroupCoordinator::load() {
  // Cluster mode loads per partition as leadership comes (became_leader).
  if (!cluster_) {
    std::map<std::string, std::shared_ptr<Group>> loaded_groups;
    std::map<std::string, bool> has_metadata;
    if (auto topic = broker_.topics().find(kOffsetsTopic)) {
      // Two passes (legacy_offsets.h): first what older versions left in
      // partitions that are not a group's home, then each home's own
      // records, which are newer.
      const int32_t n = static_cast<int32_t>(topic->partitions.size());
      OffsetsLoadTrace trace(n);
      for (const bool home : {false, true}) {
        for (const auto& p : topic->partitions) {
          if (!p) continue;
          const int32_t index = p->index();
          load_partition(
              *p, p->high_watermark(), loaded_groups, has_metadata,
              [&](const std::string& g) { return (partition_for(g, n) == index) == home; }, &trace);
        }
      }
      migrate_misplaced(trace, loaded_groups, has_metadata);
    }
    install(loaded_groups, has_metadata, [] { return true; });
  }
  {
    std::lock_guard<std::mutex> lock(load_mu_);
    loaded_.store(true, std::memory_order_release);
  }
  load_cv_.notify_all();
}

void GroupCoordinator::install(std::map<std::string, std::shared_ptr<Group>>& loaded_groups,
                               std::map<std::string, bool>& has_metadata, const std::function<bool()>& still_current) {
  const int64_t now = steady_ms();
  std::lock_guard<std::mutex> lock(mu_);
  if (!still_current()) return;
  for (auto& [id, g] : loaded_groups) {
    if (g->members.empty() && g->offsets.empty() && !has_metadata[id]) continue;  // deleted
    for (auto& [mid, m] : g->members) m.heartbeat_deadline = now + m.session_timeout_ms;
    groups_.emplace(id, g);
  }
}

// ---------------------------------------------------------------------------
// Cluster mode: loading and unloading follow leadership.

void GroupCoordinator::became_leader(const std::shared_ptr<Partition>& p) {
  if (!cluster_ || stopped_.load() || p->topic() != kOffsetsTopic) return;
  std::optional<uint64_t> token;
  {
    std::lock_guard<std::mutex> lock(own_mu_);
    token = ownership_.begin_load(p->index(), p->leader_epoch());
  }
  own_cv_.notify_all();
  if (!token) return;  // loading or loaded already
  {
    std::lock_guard<std::mutex> lock(loader_mu_);
    if (loader_stop_) return;
    load_jobs_.push_back(LoadJob{p, *token});
  }
  loader_cv_.notify_all();
}

void GroupCoordinator::became_follower(const std::shared_ptr<Partition>& p, const LeaderEndpoint&) {
  if (!cluster_ || p->topic() != kOffsetsTopic) return;
  unload(p->index());
}

void GroupCoordinator::stopped(const storage::TopicPartition& tp, bool) {
  if (!cluster_ || tp.topic != kOffsetsTopic) return;
  unload(tp.partition);
}

void GroupCoordinator::loader_loop() {
  for (;;) {
    LoadJob job;
    {
      std::unique_lock<std::mutex> lock(loader_mu_);
      loader_cv_.wait(lock, [this] { return loader_stop_ || !load_jobs_.empty(); });
      if (loader_stop_) return;
      job = std::move(load_jobs_.front());
      load_jobs_.pop_front();
    }
    load_owned(job);
  }
}

void GroupCoordinator::load_owned(const LoadJob& job) {
  const int32_t index = job.partition->index();
  // Up to the log end now, as Kafka reads to the LEO: a new leader's log
  // holds every committed record, and nothing is written here until loaded.
  const int64_t end = job.partition->log_end_offset();
  std::map<std::string, std::shared_ptr<Group>> loaded_groups;
  std::map<std::string, bool> has_metadata;
  load_partition(*job.partition, end, loaded_groups, has_metadata);
  const int32_t n = offsets_partition_count();
  std::erase_if(loaded_groups, [&](const auto& kv) { return partition_for(kv.first, n) != index; });
  bool installed = false;
  install(loaded_groups, has_metadata, [&] {
    std::lock_guard<std::mutex> own(own_mu_);  // mu_ then own_mu_, as get_or_create
    installed = ownership_.finish_load(index, job.token);
    return installed;
  });
  own_cv_.notify_all();
  if (installed)
    CK_LOG_INFO("groups", "%s-%d: loaded %zu groups (offsets up to %lld)", kOffsetsTopic, index,
                loaded_groups.size(), static_cast<long long>(end));
}

void GroupCoordinator::unload(int32_t index) {
  std::vector<std::shared_ptr<Group>> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    {
      std::lock_guard<std::mutex> own(own_mu_);
      if (!ownership_.unload(index)) return;
    }
    const int32_t n = offsets_partition_count();
    for (auto it = groups_.begin(); it != groups_.end();) {
      if (partition_for(it->first, n) == index) {
        gone.push_back(it->second);
        it = groups_.erase(it);
      } else {
        ++it;
      }
    }
  }
  own_cv_.notify_all();
  // Kafka's onGroupUnloaded: Dead, held answers NOT_COORDINATOR.
  for (auto& g : gone) {
    Outbox out;
    {
      std::lock_guard<std::mutex> lock(g->mu);
      Membership::fail_held(*g, ErrorCode::NOT_COORDINATOR, out);
      g->state = GroupState::kDead;
    }
    run(out);
  }
}

void GroupCoordinator::migrate_misplaced(const OffsetsLoadTrace& trace,
                                         const std::map<std::string, std::shared_ptr<Group>>& loaded,
                                         const std::map<std::string, bool>& has_metadata) {
  auto plans = plan_offsets_migrations(trace, loaded, has_metadata);
  if (plans.empty()) return;
  // Appends in chunks (an offsets batch stays far below any size limit) and
  // fdatasyncs: the home copy must be durable before the old one is
  // tombstoned. This runs once, at load, before any group request is served.
  auto write = [this](int32_t index, const std::vector<OffsetsRecord>& records) -> bool {
    auto p = broker_.topics().partition(kOffsetsTopic, index);
    if (!p) return false;
    constexpr size_t kChunk = 500;
    for (size_t i = 0; i < records.size(); i += kChunk) {
      const std::vector<OffsetsRecord> chunk(records.begin() + static_cast<std::ptrdiff_t>(i),
                                             records.begin() + static_cast<std::ptrdiff_t>(std::min(records.size(), i + kChunk)));
      auto batch = build_offsets_batch(chunk, Broker::now_ms());
      if (!batch || !p->append(std::span<uint8_t>(*batch), Broker::now_ms()).is_ok()) return false;
    }
    return p->log().flush().is_ok();
  };
  size_t moved = 0;
  for (const auto& m : plans) {
    if (!m.state.empty() && !write(m.home, m.state)) {
      CK_LOG_ERROR("groups", "group %s: could not move its offsets to %s-%d; they stay where they are (loaded)",
                   m.group.c_str(), kOffsetsTopic, m.home);
      continue;
    }
    bool ok = true;
    for (const auto& [old, tombstones] : m.tombstones) ok = write(old, tombstones) && ok;
    if (!ok)
      CK_LOG_ERROR("groups", "group %s: moved to %s-%d, but its old records could not all be tombstoned",
                   m.group.c_str(), kOffsetsTopic, m.home);
    ++moved;
  }
  CK_LOG_INFO("groups", "moved %zu of %zu groups to the %s partition Kafka chooses (Utils.abs of the hash)", moved,
              plans.size(), kOffsetsTopic);
}

void GroupCoordinator::load_partition(Partition& p, int64_t end, std::map<std::string, std::shared_ptr<Group>>& into,
                                      std::map<std::string, bool>& has_metadata,
                                      const std::function<bool(const std::string&)>& want, OffsetsLoadTrace* trace) {
  auto group = [&into](const std::string& id) -> Group& {
    auto& slot = into[id];
    if (!slot) slot = std::make_shared<Group>(id);
    return *slot;
  };
  for_each_batch(p, end, [&](const protocol::RecordBatchView& batch) {
    const int64_t pid = batch.producer_id();
    if (batch.is_control()) {
      // A transaction's end: its commits become visible, or are dropped.
      if (auto m = protocol::read_txn_marker(batch); m && pid >= 0) {
        for (auto& [id, g] : into) {
          auto it = g->txn_offsets.find(pid);
          if (it == g->txn_offsets.end()) continue;
          if (m->commit)
            for (auto& [k, v] : it->second) g->offsets[k] = std::move(v);
          g->txn_offsets.erase(it);
        }
      }
      return;
    }
    const bool transactional = batch.is_transactional() && pid >= 0;
    auto records = protocol::decode_records(batch, 256u << 20);
    if (!records.ok()) return;
    protocol::RecordReader reader = records.value().reader();
    protocol::RecordView rec;
    while (reader.next(&rec)) {
      if (!rec.key) continue;
      auto d = decode_offsets_record(*rec.key, rec.value);
      if (!d || d->kind == DecodedOffsetsRecord::Kind::kOther) continue;
      if (want && !want(d->group)) continue;
      if (trace) trace->saw(p.index(), *d);
      if (d->kind == DecodedOffsetsRecord::Kind::kOffset && transactional) {
        if (d->offset) group(d->group).txn_offsets[pid][{d->topic, d->partition}] = std::move(*d->offset);
      } else if (d->kind == DecodedOffsetsRecord::Kind::kOffset) {
        Group& g = group(d->group);
        if (d->offset) g.offsets[{d->topic, d->partition}] = std::move(*d->offset);
        else g.offsets.erase({d->topic, d->partition});
      } else if (d->kind == DecodedOffsetsRecord::Kind::kGroup) {
        Group& g = group(d->group);
        has_metadata[d->group] = d->metadata.has_value();
        Membership::restore(g, d->metadata);
      }
    }
  });
}

// ---------------------------------------------------------------------------
// The timer.

void GroupCoordinator::arm_timer() {
  std::lock_guard<std::mutex> lock(timer_mu_);
  if (stopped_) return;
  timer_->expires_after(std::chrono::milliseconds(50));
  auto alive = alive_;
  timer_->async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || !*alive) return;
    tick();
    arm_timer();
  });
}

void GroupCoordinator::tick_now() {
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  auto alive = alive_;
  asio::post(broker_.background(), [this, alive, done] {
    if (*alive) tick();
    done->set_value();
  });
  finished.wait();
}

void GroupCoordinator::tick() {
  const int64_t now = steady_ms();
  const int64_t interval = broker_.config().get_long("offsets.retention.check.interval.ms");
  if (next_expiry_check_ == 0) {
    next_expiry_check_ = now + interval;
  } else if (now >= next_expiry_check_) {
    next_expiry_check_ = now + interval;
    expire_offsets(Broker::now_ms());
  }
  for (auto& g : all_groups()) {
    Outbox out;
    {
      std::lock_guard<std::mutex> lock(g->mu);
      Membership::on_tick(*this, *g, now, out);
    }
    run(out);
  }
}

}  // namespace ciuickafka::broker::groups
