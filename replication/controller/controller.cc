// replication/controller/controller.cc: the controller's event thread,
// activation and watches. AlterPartition is in controller_alter.cc. See
// controller.h.
#include "replication/controller/controller.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "replication/controller/controller_log.h"
#include "replication/membership_codec.h"
#include "replication/zk_data.h"

namespace ciuickafka::replication::controller {

Controller::Controller(RequestSender& sender, ControllerOptions options,
                       std::function<void(const std::string&)> on_resign)
    : sender_(sender), options_(options), on_resign_(std::move(on_resign)) {
  unclean_default_ = options_.unclean_leader_election_enable;
  thread_ = std::thread([this] { run(); });
  timer_thread_ = std::thread([this] { run_timer(); });
}

Controller::~Controller() { stop(); }

void Controller::stop() {
  deactivate();
  {
    std::lock_guard<std::mutex> lock(timer_mu_);
    timer_stopping_ = true;
    timer_cv_.notify_all();
  }
  if (timer_thread_.joinable() && timer_thread_.get_id() != std::this_thread::get_id()) timer_thread_.join();
  {
    std::lock_guard<std::mutex> lock(inbox_->mu);
    if (inbox_->stopping && !thread_.joinable()) return;
    inbox_->stopping = true;
    inbox_->cv.notify_all();
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  psm_.reset();
  session_.reset();
  sender_.clear();
  update_stats();
}

bool Controller::post_to(const std::shared_ptr<Inbox>& inbox, uint64_t generation, std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(inbox->mu);
  if (inbox->stopping) return false;
  inbox->tasks.push_back({generation, std::move(fn)});
  inbox->cv.notify_all();
  return true;
}

bool Controller::post(uint64_t generation, std::function<void()> fn) {
  return post_to(inbox_, generation, std::move(fn));
}

void Controller::run() {
  for (;;) {
    Task t;
    {
      std::unique_lock<std::mutex> lock(inbox_->mu);
      inbox_->cv.wait(lock, [this] { return inbox_->stopping || !inbox_->tasks.empty(); });
      if (inbox_->stopping) {
        // Tasks that must run whatever the generation (answers to waiting
        // AlterPartition requests: NOT_CONTROLLER now) still run.
        std::deque<Task> rest;
        rest.swap(inbox_->tasks);
        lock.unlock();
        for (Task& r : rest)
          if (r.generation == 0) r.fn();
        return;
      }
      t = std::move(inbox_->tasks.front());
      inbox_->tasks.pop_front();
    }
    if (t.generation == 0 || current(t.generation)) t.fn();
    ++steps_;
  }
}

void Controller::activate(std::shared_ptr<zk::Session> session, ControllerIdentity id, std::vector<LiveBroker> live) {
  {
    std::lock_guard<std::mutex> lock(inbox_->mu);
    if (inbox_->stopping) return;
  }
  const uint64_t gen = ++generation_;
  active_ = true;
  if (options_.auto_leader_rebalance_enable) {
    std::lock_guard<std::mutex> lock(timer_mu_);
    next_rebalance_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.first_rebalance_check_delay_ms);
    timer_cv_.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(inbox_->mu);
    inbox_->cv.notify_all();  // an older activation's retry wait ends
  }
  post(gen, [this, gen, session = std::move(session), id = std::move(id), live = std::move(live)]() mutable {
    do_activate(gen, std::move(session), std::move(id), std::move(live));
  });
}

void Controller::deactivate() {
  if (!active_.exchange(false)) return;
  ++generation_;
  {
    std::lock_guard<std::mutex> lock(inbox_->mu);
    inbox_->cv.notify_all();
  }
  // Runs whatever the generation: the old activation's state goes.
  post(0, [this] {
    if (active_) return;  // activated again meanwhile: do_activate replaced the state
    psm_.reset();
    session_.reset();
    sender_.clear();
    update_stats();
  });
}

bool Controller::backoff(uint64_t gen, int32_t* ms) {
  ++retries_;
  std::unique_lock<std::mutex> lock(inbox_->mu);
  inbox_->cv.wait_for(lock, std::chrono::milliseconds(*ms),
                      [this, gen] { return inbox_->stopping || !current(gen); });
  *ms = std::min(*ms * 2, options_.retry_backoff_max_ms);
  return !inbox_->stopping && current(gen);
}

bool Controller::run_step(uint64_t gen, const char* what, const std::function<StepResult()>& step) {
  int32_t wait_ms = options_.retry_backoff_ms;
  for (;;) {
    if (!current(gen) || !psm_) return false;
    StepResult r = step();
    if (r.outcome == Outcome::kResign) {
      resign(gen, r.message);
      return false;
    }
    for (const auto& f : r.failed)
      log_warn(std::string(what) + ": " + f.partition.topic + "-" + std::to_string(f.partition.partition) +
               ": " + f.reason);
    if (!r.requests.empty()) sender_.send(r.requests);
    update_stats();
    if (r.outcome == Outcome::kOk) return true;
    log_warn(std::string(what) + ": " + r.message + " (retrying)");
    if (!backoff(gen, &wait_ms)) return false;
  }
}

void Controller::resign(uint64_t gen, const std::string& why) {
  if (!current(gen)) return;
  log_warn("resigning: " + why);
  deactivate();
  if (on_resign_) on_resign_(why);
}

void Controller::do_activate(uint64_t gen, std::shared_ptr<zk::Session> session, ControllerIdentity id,
                             std::vector<LiveBroker> live) {
  session_ = std::move(session);
  for (bool& a : armed_) a = false;
  topic_armed_.clear();
  broker_armed_.clear();
  sender_.clear();
  sender_.set_brokers(live);
  log_info("active (epoch " + std::to_string(id.epoch) + ", " + std::to_string(live.size()) +
           " live brokers)");
  psm_ = std::make_unique<PartitionStateMachine>(*session_, std::move(id), std::move(live));
  psm_->set_election_counters(&elections_);
  if (!run_step(gen, "load", [this] { return psm_->load(); })) return;
  if (!run_step(gen, "startup", [this] { return psm_->startup([this](const std::string& t) { return unclean_allowed(t); }); }))
    return;
  // Reading each path arms its watch; changes since activate() are caught
  // by the diffs against the context.
  // Kafka's initializePartitionReassignments: /admin/reassign_partitions
  // first (it supplants API reassignments of the same partitions), then the
  // other in-flight ones from the topic znodes.
  std::set<TopicPartitionRef> from_zk;
  if (!process_reassign_znode(gen, true, &from_zk)) return;
  if (!run_step(gen, "resume reassignments", [&] { return psm_->resume_reassignments(from_zk); })) return;
  process_brokers(gen);
  process_topics(gen);
  process_deletions(gen);
  process_preferred(gen);
}

zk::WatchFn Controller::watcher(uint64_t gen, Watch w) {
  std::weak_ptr<Inbox> inbox = inbox_;
  return [this, inbox, gen, w](zk::EventType type, const std::string&) {
    auto in = inbox.lock();
    if (!in) return;
    post_to(in, gen, [this, gen, w, type] {
      armed_[static_cast<int>(w)] = false;
      switch (w) {
        case Watch::kBrokers: process_brokers(gen); break;
        case Watch::kTopics: process_topics(gen); break;
        case Watch::kDeletions: process_deletions(gen); break;
        case Watch::kPreferred: process_preferred(gen); break;
        // Created (or deleted: it may exist again by now); a data change
        // only re-arms the watch.
        case Watch::kReassign: process_reassign_znode(gen, type != zk::EventType::kDataChanged); break;
      }
    });
  };
}

bool Controller::unclean_allowed(const std::string& topic) {
  std::string data;
  if (session_ && session_->get(topic_config_path(topic), &data) == zk::Code::kOk) {
    auto config = decode_entity_config(data);
    if (config) {
      for (const auto& [k, v] : config.value())
        if (k == "unclean.leader.election.enable") return v == "true" || v == "TRUE" || v == "True";
    }
  }
  return unclean_default_.load();
}

void Controller::set_unclean_leader_election_default(bool enable) {
  if (unclean_default_.exchange(enable) != enable && enable) elect_offline_partitions();
}

void Controller::elect_offline_partitions() {
  if (!active_) return;  // the next activation elects them anyway (startup)
  const uint64_t gen = generation_.load();
  post(gen, [this, gen] {
    run_step(gen, "offline partition election", [this] {
      return psm_->elect_offline_partitions([this](const std::string& t) { return unclean_allowed(t); });
    });
  });
}

void Controller::process_brokers(uint64_t gen) {
  int32_t wait_ms = options_.retry_backoff_ms;
  std::map<int32_t, LiveBroker> now;
  for (;;) {
    if (!current(gen) || !psm_) return;
    const bool arming = !armed_[0];
    std::vector<std::string> names;
    zk::Code c = session_->children(std::string(kBrokerIdsPath), &names,
                                    arming ? watcher(gen, Watch::kBrokers) : zk::WatchFn{});
    if (c == zk::Code::kOk) {
      if (arming) armed_[0] = true;
      now.clear();
      for (const auto& name : names) {
        int32_t id = -1;
        if (!parse_broker_id(name, &id)) continue;
        // Each registration is watched before it is read, so a rewrite
        // after this read fires the watch (process_broker_change).
        arm_broker(gen, id);
        LiveBroker b;
        std::string why;
        c = read_live_broker(*session_, id, &b, &why);
        if (c == zk::Code::kNoNode) {
          c = zk::Code::kOk;  // left meanwhile: the child watch tells us
          continue;
        }
        if (c != zk::Code::kOk) break;
        if (!why.empty()) {
          log_warn(broker_id_path(id) + ": " + why + " (ignored)");
          continue;
        }
        now[id] = std::move(b);
      }
      if (c == zk::Code::kOk) break;
    }
    log_warn(std::string("reading ") + std::string(kBrokerIdsPath) + ": " + std::string(zk::to_string(c)) +
             " (retrying)");
    if (!backoff(gen, &wait_ms)) return;
  }
  const auto& known = psm_->context().live;
  std::vector<int32_t> failed;
  std::vector<LiveBroker> started, updated;
  for (const auto& [id, b] : known) {
    auto it = now.find(id);
    if (it == now.end() || it->second.epoch != b.epoch) failed.push_back(id);  // gone, or bounced
  }
  for (const auto& [id, b] : now) {
    auto it = known.find(id);
    if (it == known.end() || it->second.epoch != b.epoch)
      started.push_back(b);
    else if (it->second.endpoints != b.endpoints || it->second.rack != b.rack)
      updated.push_back(b);  // rewritten before its watch was set (or at activation, since the view was read)
  }
  for (const LiveBroker& b : updated)
    if (!broker_updated(gen, b)) return;
  if (failed.empty() && started.empty()) return;
  std::vector<LiveBroker> all;
  for (const auto& [id, b] : now) all.push_back(b);
  sender_.set_brokers(all);
  auto unclean = [this](const std::string& t) { return unclean_allowed(t); };
  if (!failed.empty()) {
    std::string ids;
    for (int32_t id : failed) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    log_info("brokers left (or bounced): " + ids);
    if (!run_step(gen, "broker failure", [&] { return psm_->on_broker_failure(failed, unclean); })) return;
  }
  if (!started.empty()) {
    std::string ids;
    for (const auto& b : started) ids += (ids.empty() ? "" : ",") + std::to_string(b.id);
    log_info("brokers joined: " + ids);
    run_step(gen, "broker startup", [&] { return psm_->on_broker_startup(started, unclean); });
  }
}

zk::WatchFn Controller::posting_watcher(uint64_t gen, std::function<void()> fn) {
  std::weak_ptr<Inbox> inbox = inbox_;
  return [inbox, gen, fn = std::move(fn)](zk::EventType, const std::string&) {
    auto in = inbox.lock();
    if (!in) return;
    post_to(in, gen, fn);
  };
}

void Controller::arm_broker(uint64_t gen, int32_t id) {
  if (broker_armed_.contains(id) || !session_) return;
  zk::WatchFn w = posting_watcher(gen, [this, gen, id] {
    broker_armed_.erase(id);
    process_broker_change(gen, id);
  });
  // Gone already: watched for its return all the same (one watcher per
  // path); the /brokers/ids children watch tells of the change itself.
  const zk::Code c = session_->exists(broker_id_path(id), nullptr, std::move(w));
  if (c == zk::Code::kOk || c == zk::Code::kNoNode) broker_armed_.insert(id);
}

// Kafka's BrokerModifications: a live broker rewrote its registration (its
// listeners changed live) in the same session, so with the same epoch. The
// controller takes its new endpoints and sends every live broker the list
// (UpdateMetadata), as Kafka's onBrokerUpdate; its own channel to that broker
// follows the new inter-broker endpoint. A new epoch or a broker gone is the
// children watch's (failure, startup).
void Controller::process_broker_change(uint64_t gen, int32_t id) {
  if (!current(gen) || !psm_) return;
  const auto& live = psm_->context().live;
  auto known = live.find(id);
  if (known == live.end()) return;
  arm_broker(gen, id);
  LiveBroker b;
  std::string why;
  if (read_live_broker(*session_, id, &b, &why) != zk::Code::kOk) return;
  if (!why.empty()) {
    log_warn(broker_id_path(id) + ": " + why + " (ignored)");
    return;
  }
  if (b.epoch != known->second.epoch || (b.endpoints == known->second.endpoints && b.rack == known->second.rack))
    return;
  broker_updated(gen, b);
}

bool Controller::broker_updated(uint64_t gen, const LiveBroker& b) {
  log_info("broker " + std::to_string(b.id) + " changed its endpoints");
  // The channel first, so that the UpdateMetadata goes to the new endpoint.
  std::vector<LiveBroker> all;
  for (const auto& [i, x] : psm_->context().live) all.push_back(i == b.id ? b : x);
  sender_.set_brokers(all);
  return run_step(gen, "broker update", [&] { return psm_->on_broker_update(b); });
}

void Controller::process_topics(uint64_t gen) {
  int32_t wait_ms = options_.retry_backoff_ms;
  std::vector<std::string> names;
  for (;;) {
    if (!current(gen) || !psm_) return;
    const bool arming = !armed_[1];
    zk::Code c = session_->children(std::string(kTopicsPath), &names,
                                    arming ? watcher(gen, Watch::kTopics) : zk::WatchFn{});
    if (c == zk::Code::kOk) {
      if (arming) armed_[1] = true;
      break;
    }
    if (!backoff(gen, &wait_ms)) return;
  }
  std::vector<std::string> fresh;
  for (const auto& n : names)
    if (!psm_->context().topics.contains(n)) fresh.push_back(n);
  if (!fresh.empty() && !run_step(gen, "new topics", [&] { return psm_->on_new_topics(fresh); })) return;
  // A topic watched for the first time (at activation, or after an error)
  // is also read once after its watch is set: partitions added before the
  // watch existed (between the load and now) fire no event.
  for (const auto& n : names)
    if (!topic_armed_.contains(n)) process_topic_change(gen, n);
}

void Controller::arm_topic(uint64_t gen, const std::string& topic) {
  if (topic_armed_.contains(topic) || !session_) return;
  zk::WatchFn w = posting_watcher(gen, [this, gen, topic] {
    topic_armed_.erase(topic);
    process_topic_change(gen, topic);
  });
  const zk::Code c = session_->exists(topic_path(topic), nullptr, std::move(w));
  // A missing node is watched too (for its creation); an error leaves it
  // unwatched until the next /brokers/topics event.
  if (c == zk::Code::kOk || c == zk::Code::kNoNode) topic_armed_.insert(topic);
}

void Controller::process_topic_change(uint64_t gen, const std::string& topic) {
  if (!current(gen) || !psm_) return;
  arm_topic(gen, topic);
  const auto& topics = psm_->context().topics;
  auto it = topics.find(topic);
  if (it == topics.end() || it->second.deleting) return;  // new names come through the children watch
  std::string data;
  if (session_->get(topic_path(topic), &data) != zk::Code::kOk) return;
  auto a = decode_topic_assignment(data);
  if (!a) return;
  bool grew = false;
  for (const auto& [p, r] : a.value().partitions) grew = grew || !it->second.partitions.contains(p);
  if (!grew) return;
  log_info("topic " + topic + " gained partitions");
  run_step(gen, "partition additions", [&] { return psm_->on_new_topics({topic}); });
}

void Controller::process_deletions(uint64_t gen) {
  int32_t wait_ms = options_.retry_backoff_ms;
  std::vector<std::string> names;
  for (;;) {
    if (!current(gen) || !psm_) return;
    const bool arming = !armed_[2];
    zk::Code c = session_->children(std::string(kDeleteTopicsPath), &names,
                                    arming ? watcher(gen, Watch::kDeletions) : zk::WatchFn{});
    if (c == zk::Code::kOk) {
      if (arming) armed_[2] = true;
      break;
    }
    if (!backoff(gen, &wait_ms)) return;
  }
  if (names.empty()) return;
  std::vector<std::string> topics;
  std::vector<zk::Op> drop;  // markers to remove without deleting anything
  for (const auto& n : names) {
    if (options_.delete_topic_enable && psm_->context().topics.contains(n))
      topics.push_back(n);
    else
      drop.push_back(zk::Op::remove(delete_topic_path(n), -1));
  }
  if (!drop.empty()) {
    if (!options_.delete_topic_enable)
      log_info("delete.topic.enable is false: removing " + std::to_string(drop.size()) + " deletion markers");
    for (auto& op : drop) {  // one by one: a marker removed meanwhile fails only its own
      FencedWrite w = fenced_multi(*session_, psm_->identity().epoch_zk_version, {op});
      if (w.outcome == FenceOutcome::kFenced) {
        resign(gen, "controller epoch check failed removing a deletion marker");
        return;
      }
    }
  }
  if (!topics.empty()) run_step(gen, "topic deletion", [&] { return psm_->on_topic_deletion(topics); });
}

void Controller::process_preferred(uint64_t gen) {
  int32_t wait_ms = options_.retry_backoff_ms;
  const std::string path(kPreferredReplicaElectionPath);
  std::string data;
  bool present = false;
  for (;;) {
    if (!current(gen) || !psm_) return;
    const bool arming = !armed_[3];
    zk::WatchFn w = arming ? watcher(gen, Watch::kPreferred) : zk::WatchFn{};
    // get() watches an existing node; exists() a missing one (a get on a
    // missing node sets no watch).
    zk::Code c = session_->get(path, &data, nullptr, w);
    if (c == zk::Code::kNoNode) c = session_->exists(path, nullptr, w);
    if (c == zk::Code::kOk || c == zk::Code::kNoNode) {
      if (arming) armed_[3] = true;
      present = c == zk::Code::kOk;
      if (present) {
        // The exists() path may have found it created in between: read it.
        if (session_->get(path, &data) != zk::Code::kOk) present = false;
      }
      break;
    }
    if (!backoff(gen, &wait_ms)) return;
  }
  if (!present) return;
  auto partitions = decode_partition_list(data);
  if (!partitions) {
    log_warn(path + ": " + partitions.error().message + " (deleted)");
  } else if (!run_step(gen, "preferred replica election",
                       [&] { return psm_->elect_preferred(partitions.value()); })) {
    return;
  }
  FencedWrite w = fenced_multi(*session_, psm_->identity().epoch_zk_version, {zk::Op::remove(path, -1)});
  if (w.outcome == FenceOutcome::kFenced) resign(gen, "controller epoch check failed removing " + path);
}

void Controller::update_stats() {
  ControllerStats s;
  s.active = active_.load() && psm_ != nullptr;
  if (psm_) {
    const ControllerContext& ctx = psm_->context();
    const BrokerSet online = ctx.online();
    s.topics = static_cast<int64_t>(ctx.topics.size());
    for (const auto& [name, t] : ctx.topics) {
      for (const auto& [p, info] : t.partitions) {
        ++s.partitions;
        if (!t.deleting && (!info.state || info.state->leader < 0 || !online.contains(info.state->leader)))
          ++s.offline_partitions;
      }
    }
  }
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_ = s;
}

ControllerStats Controller::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  ControllerStats s = stats_;
  s.active = s.active && active_.load();
  s.leader_elections = elections_.elections.load(std::memory_order_relaxed);
  s.unclean_leader_elections = elections_.unclean.load(std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> inbox(inbox_->mu);
    s.event_queue_size = static_cast<int64_t>(inbox_->tasks.size());
  }
  return s;
}

}  // namespace ciuickafka::replication::controller
