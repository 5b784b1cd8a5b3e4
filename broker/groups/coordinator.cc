// broker/groups/coordinator.cc: the coordinator service: the group map,
// the __consumer_offsets topic (creation, appends, durability), loading it
// at start and the timer tick. The protocol logic lives in membership.cc,
// offsets.cc and admin_ops.cc.
#include "broker/groups/coordinator.h"

#include <algorithm>
#include <chrono>

#include "broker/broker.h"
#include "broker/groups/lag_metrics.h"
#include "broker/groups/membership.h"
#include "broker/groups/partition_for.h"
#include "broker/server/connection_events.h"
#include "protocol/records/record_batch.h"

namespace ciuickafka::broker::groups {

using protocol::ErrorCode;

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

GroupCoordinator::GroupCoordinator(Broker& broker)
    : broker_(broker), timer_(std::make_unique<asio::steady_timer>(broker.background())) {
  metrics_id_ = register_lag_metrics(*this);
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

int32_t GroupCoordinator::partition_of(const std::string& group_id) {
  auto topic = broker_.topics().find(kOffsetsTopic);
  const int32_t n = topic ? static_cast<int32_t>(topic->partitions.size())
                          : broker_.config().get_int("offsets.topic.num.partitions");
  return partition_for(group_id, n);
}

std::shared_ptr<Partition> GroupCoordinator::offsets_partition(const std::string& group_id) {
  if (!ensure_offsets_topic()) return nullptr;
  auto topic = broker_.topics().find(kOffsetsTopic);
  if (!topic || topic->partitions.empty()) return nullptr;
  return topic->partition(partition_for(group_id, static_cast<int32_t>(topic->partitions.size())));
}

Appended GroupCoordinator::append(const std::string& group_id, const std::vector<OffsetsRecord>& records) {
  Appended a;
  auto p = offsets_partition(group_id);
  if (!p) {
    a.error = ErrorCode::COORDINATOR_NOT_AVAILABLE;
    return a;
  }
  auto batch = build_offsets_batch(records, Broker::now_ms());
  if (!batch) {
    a.error = ErrorCode::UNKNOWN_SERVER_ERROR;
    return a;
  }
  auto r = p->append(std::span<uint8_t>(*batch), Broker::now_ms());
  if (!r.is_ok()) {
    // Kafka maps storage failures of the offsets log to a retriable error.
    a.error = ErrorCode::COORDINATOR_NOT_AVAILABLE;
    return a;
  }
  a.log = p->log_ptr();
  a.end_offset = r.value().last_offset + 1;
  return a;
}

void GroupCoordinator::when_durable(Appended a, std::function<void(ErrorCode)> done) {
  if (a.error != ErrorCode::NONE || !a.log || !broker_.config().get_bool("ciuic.acks.all.fsync")) {
    done(a.error);
    return;
  }
  broker_.logs().sync_to(std::move(a.log), a.end_offset, [done = std::move(done)](storage::Status s) {
    done(s.is_ok() ? ErrorCode::NONE : ErrorCode::COORDINATOR_NOT_AVAILABLE);
  });
}

// ---------------------------------------------------------------------------
// The group map.

std::shared_ptr<Group> GroupCoordinator::find(const std::string& group_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = groups_.find(group_id);
  return it == groups_.end() ? nullptr : it->second;
}

std::shared_ptr<Group> GroupCoordinator::get_or_create(const std::string& group_id) {
  std::lock_guard<std::mutex> lock(mu_);
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
  std::map<std::string, std::shared_ptr<Group>> loaded_groups;
  std::map<std::string, bool> has_metadata;
  if (auto topic = broker_.topics().find(kOffsetsTopic)) {
    for (const auto& p : topic->partitions)
      if (p) load_partition(*p, loaded_groups, has_metadata);
  }
  const int64_t now = steady_ms();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, g] : loaded_groups) {
      if (g->members.empty() && g->offsets.empty() && !has_metadata[id]) continue;  // deleted
      for (auto& [mid, m] : g->members) m.heartbeat_deadline = now + m.session_timeout_ms;
      groups_.emplace(id, g);
    }
  }
  {
    std::lock_guard<std::mutex> lock(load_mu_);
    loaded_.store(true, std::memory_order_release);
  }
  load_cv_.notify_all();
}

void GroupCoordinator::load_partition(Partition& p, std::map<std::string, std::shared_ptr<Group>>& into,
                                      std::map<std::string, bool>& has_metadata) {
  auto group = [&into](const std::string& id) -> Group& {
    auto& slot = into[id];
    if (!slot) slot = std::make_shared<Group>(id);
    return *slot;
  };
  int64_t offset = p.log_start_offset();
  const int64_t end = p.high_watermark();
  while (offset < end) {
    auto read = p.log().read(offset, 1 << 20, end);
    if (!read.is_ok() || read.value().slices.empty()) break;
    auto bytes = storage::read_slices(read.value());
    if (!bytes.is_ok()) break;
    protocol::BatchSplitter splitter(std::span<const uint8_t>(bytes.value()));
    protocol::RecordsEntry entry;
    int64_t next = offset;
    while (splitter.next(&entry) == protocol::SplitStatus::kEntry) {
      if (entry.magic != 2) continue;  // we never write v0/v1 here
      auto view = protocol::RecordBatchView::parse(entry.bytes);
      if (!view.ok()) break;
      next = std::max(next, view.value().next_offset());
      if (view.value().is_control()) continue;
      auto records = protocol::decode_records(view.value(), 256u << 20);
      if (!records.ok()) continue;
      protocol::RecordReader reader = records.value().reader();
      protocol::RecordView rec;
      while (reader.next(&rec)) {
        if (!rec.key) continue;
        auto d = decode_offsets_record(*rec.key, rec.value);
        if (!d) continue;
        if (d->kind == DecodedOffsetsRecord::Kind::kOffset) {
          Group& g = group(d->group);
          if (d->offset) g.offsets[{d->topic, d->partition}] = std::move(*d->offset);
          else g.offsets.erase({d->topic, d->partition});
        } else if (d->kind == DecodedOffsetsRecord::Kind::kGroup) {
          Group& g = group(d->group);
          has_metadata[d->group] = d->metadata.has_value();
          Membership::restore(g, d->metadata);
        }
      }
    }
    if (next <= offset) break;
    offset = next;
  }
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
