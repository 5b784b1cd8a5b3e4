// broker/replica/fetcher_manager.cc: the follower fetcher threads (see
// fetcher_manager.h).
#include "broker/replica/fetcher_manager.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <thread>
#include <utility>

#include "broker/broker.h"
#include "broker/replica/hw_checkpoint.h"
#include "metrics/log/log.h"
#include "metrics/process_metrics.h"
#include "protocol/error_code.h"
#include "protocol/generated/fetch.h"
#include "protocol/generated/list_offsets.h"
#include "protocol/records/record_batch.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"
#include "replication/net/reconnecting_client.h"

namespace ciuickafka::broker::replica {

using protocol::ErrorCode;
using replication::net::Clock;

// Counters shared by the manager and its threads.
struct FetcherCounters {
  std::atomic<uint64_t> fetches{0};
};

class FetcherThread {
 public:
  FetcherThread(Broker& broker, LeaderEndpoint leader, FetcherOptions options,
                std::shared_ptr<FetcherCounters> counters)
      : broker_(broker), leader_(std::move(leader)), options_(options), counters_(std::move(counters)) {
    const auto& c = broker.config();
    max_bytes_ = c.get_int("replica.fetch.max.bytes");
    response_max_bytes_ = c.get_int("replica.fetch.response.max.bytes");
    wait_max_ms_ = c.get_int("replica.fetch.wait.max.ms");
    min_bytes_ = c.get_int("replica.fetch.min.bytes");
    backoff_ms_ = c.get_int("replica.fetch.backoff.ms");
    fsync_ = c.get_bool("ciuic.acks.all.fsync");
    std::string err;
    interrupter_ = replication::net::Interrupter::create(&err);
    if (!interrupter_) CK_LOG_WARN("replication", "replica fetcher: %s", err.c_str());
    thread_ = std::thread([this] { run(); });
  }
  ~FetcherThread() { stop(); }
  FetcherThread(const FetcherThread&) = delete;
  FetcherThread& operator=(const FetcherThread&) = delete;

  void add(const std::shared_ptr<Partition>& p) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      parts_[p->tp()] = Fetched{p, {}};
    }
    cv_.notify_all();
  }
  // True when the thread has no partition left.
  bool remove(const storage::TopicPartition& tp) {
    std::lock_guard<std::mutex> apply(apply_mu_);  // not while its answer is being applied
    std::lock_guard<std::mutex> lock(mu_);
    parts_.erase(tp);
    return parts_.empty();
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return parts_.size();
  }
  std::shared_ptr<Partition> partition(const storage::TopicPartition& tp) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = parts_.find(tp);
    return it == parts_.end() ? nullptr : it->second.partition;
  }
  const LeaderEndpoint& leader() const { return leader_; }
  // Ends the loop without waiting for it.
  void stop_async() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (interrupter_) interrupter_->trigger();
  }
  void stop() {
    stop_async();
    if (thread_.joinable()) thread_.join();
  }
  bool exited() const { return exited_.load(); }
  // The largest leader HW - local LEO of the last response.
  int64_t lag() const { return lag_.load(); }

 private:
  struct Fetched {
    std::shared_ptr<Partition> partition;
    Clock::time_point delayed_until{};
  };

  void delay(const storage::TopicPartition& tp, const std::shared_ptr<Partition>& p) { delay_for(tp, p, backoff_ms_); }
  void delay_for(const storage::TopicPartition& tp, const std::shared_ptr<Partition>& p, int64_t ms) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = parts_.find(tp);
    if (it != parts_.end() && it->second.partition == p)
      it->second.delayed_until = Clock::now() + std::chrono::milliseconds(ms);
  }
  // UNKNOWN_LEADER_EPOCH: the leader has not applied yet the LeaderAndIsr
  // that gave us this epoch (the controller sends it to every replica at
  // once, so after a leadership move the new leader's followers often ask
  // first). Kafka's fetcher waits replica.fetch.backoff.ms (1 s) whatever
  // the error, which holds every acks=all write on the new leader that long;
  // here the retry comes after 25 ms, doubling per repeat up to the backoff.
  void delay_unknown_epoch(const storage::TopicPartition& tp, const std::shared_ptr<Partition>& p) {
    auto& [who, n] = unknown_epoch_retries_[tp];
    if (who.lock() != p) {  // a new assignment of the partition starts again
      who = p;
      n = 0;
    }
    const int64_t ms = std::min<int64_t>(backoff_ms_, int64_t{25} << std::min(n, 16));
    ++n;
    delay_for(tp, p, ms);
  }
  // Still ours (the same Partition object)?
  bool current(const std::shared_ptr<Partition>& p) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = parts_.find(p->tp());
    return it != parts_.end() && it->second.partition == p;
  }
  void backoff() { interrupter_->wait_until(Clock::now() + std::chrono::milliseconds(backoff_ms_)); }

  void run() {
    if (interrupter_) loop();
    exited_.store(true);
  }

  void loop() {
    replication::net::ClientOptions opts;
    opts.client_id = "ciuickafka-replica-fetcher-" + std::to_string(broker_.node_id());
    opts.interrupter = interrupter_;
    opts.request_timeout_ms = wait_max_ms_ + 30000;
    // One response in flight; the first batch of a partition may exceed the limits by one partition's max.
    opts.max_response_bytes = static_cast<int32_t>(
        std::min<int64_t>(std::numeric_limits<int32_t>::max(),
                          int64_t{response_max_bytes_} + int64_t{max_bytes_} + (1 << 20)));
    replication::net::BackoffOptions bo;
    bo.backoff_ms = std::max(1, std::min(backoff_ms_, 100));
    bo.backoff_max_ms = std::max(backoff_ms_, 1);
    replication::net::ReconnectingClient client(leader_.host, static_cast<uint16_t>(leader_.port), opts, bo);

    for (;;) {
      std::vector<std::shared_ptr<Partition>> ready;
      {
        std::unique_lock<std::mutex> lock(mu_);
        for (;;) {
          if (stopping_) return;
          const auto now = Clock::now();
          auto next = now + std::chrono::seconds(1);
          for (auto& [tp, f] : parts_) {
            if (f.delayed_until <= now) {
              ready.push_back(f.partition);
            } else {
              next = std::min(next, f.delayed_until);
            }
          }
          if (!ready.empty()) break;
          cv_.wait_until(lock, next);
        }
      }
      auto c = client.client();
      if (!c) {
        if (c.error().kind == replication::net::NetErrorKind::kClosed) return;
        backoff();
        continue;
      }
      std::optional<int16_t> version = c.value()->pick_version(protocol::FetchRequest::kApiKey,
                                                               options_.max_fetch_version, 12);
      if (!version) {
        CK_LOG_WARN("replication", "replica fetcher: %s offers no Fetch v12+", c.value()->peer().c_str());
        backoff();
        continue;
      }
      protocol::FetchRequest req;
      const int32_t me = broker_.node_id();
      if (*version >= 15) {
        req.replica_id = -1;
        req.replica_state.replica_id = me;
        ZkCluster* cluster = broker_.cluster();
        auto view = cluster != nullptr ? cluster->view() : nullptr;
        req.replica_state.replica_epoch = view != nullptr ? view->broker_epoch : -1;
      } else {
        req.replica_id = me;
      }
      req.max_wait_ms = wait_max_ms_;
      req.min_bytes = min_bytes_;
      req.max_bytes = response_max_bytes_;
      req.isolation_level = 0;
      req.session_id = 0;
      req.session_epoch = -1;  // sessionless: every fetch names every partition
      const bool by_id = *version >= 13;
      for (const auto& p : ready) {
        auto it = std::find_if(req.topics.begin(), req.topics.end(), [&](const auto& t) {
          return by_id ? t.topic_id == p->topic_id() : t.topic == p->topic();
        });
        if (it == req.topics.end()) {
          auto& t = req.topics.emplace_back();
          t.topic = p->topic();
          t.topic_id = p->topic_id();
          it = req.topics.end() - 1;
        }
        auto& fp = it->partitions.emplace_back();
        fp.partition = p->index();
        fp.current_leader_epoch = p->leader_epoch();
        fp.fetch_offset = p->log_end_offset();
        fp.last_fetched_epoch = p->log().leader_epochs().latest_epoch().value_or(-1);
        fp.log_start_offset = p->log_start_offset();
        fp.partition_max_bytes = max_bytes_;
      }
      protocol::Writer w;
      req.encode(w, *version);
      if (!w.ok()) {
        backoff();
        continue;
      }
      auto raw = client.call_raw(protocol::FetchRequest::kApiKey, *version, w.buffer());
      if (!raw) {
        if (raw.error().kind == replication::net::NetErrorKind::kClosed) return;
        backoff();
        continue;
      }
      // The records fields point into raw's frame, which this thread owns.
      replication::net::RawResponse response = std::move(raw.value());
      protocol::Reader r(response.body());
      protocol::FetchResponse resp;
      resp.decode(r, *version);
      counters_->fetches.fetch_add(1);
      if (!r.ok() || resp.error_code != 0) {
        backoff();
        continue;
      }
      response_lag_ = 0;
      appended_.clear();
      std::vector<std::shared_ptr<Partition>> out_of_range;
      for (auto& t : resp.responses) {
        for (auto& d : t.partitions) {
          auto it = std::find_if(ready.begin(), ready.end(), [&](const auto& p) {
            return p->index() == d.partition_index && (by_id ? p->topic_id() == t.topic_id : p->topic() == t.topic);
          });
          if (it == ready.end()) continue;
          if (static_cast<ErrorCode>(d.error_code) == ErrorCode::OFFSET_OUT_OF_RANGE) {
            out_of_range.push_back(*it);  // after the others, asking the leader outside the apply lock
            continue;
          }
          std::lock_guard<std::mutex> apply(apply_mu_);
          if (!current(*it)) continue;
          apply_partition(*it, d, *version);
        }
      }
      lag_.store(response_lag_);
      // The response (and its records) is no longer needed: its memory goes before the ListOffsets calls.
      response = replication::net::RawResponse{};
      make_durable();
      for (const auto& p : out_of_range) handle_out_of_range(client, p);
    }
  }

  void apply_partition(const std::shared_ptr<Partition>& p, protocol::FetchResponse::PartitionData& d,
                       int16_t version) {
    const int64_t now = Broker::now_ms();
    const auto err = static_cast<ErrorCode>(d.error_code);
    if (err == ErrorCode::UNKNOWN_LEADER_EPOCH) {
      delay_unknown_epoch(p->tp(), p);
      return;
    }
    if (err != ErrorCode::NONE) {
      // FENCED_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER, unknown topic...: wait
      // for the next LeaderAndIsr, fetching again later.
      delay(p->tp(), p);
      return;
    }
    if (!unknown_epoch_retries_.empty()) unknown_epoch_retries_.erase(p->tp());
    if (version >= 12 && (d.diverging_epoch.epoch >= 0 || d.diverging_epoch.end_offset >= 0)) {
      truncate_for_divergence(p, d.diverging_epoch.epoch, d.diverging_epoch.end_offset, now);
      return;
    }
    if (d.records.size() > 0 && !d.records.is_external()) {
      // append_as_follower does not modify the buffer; it is our own frame.
      std::span<uint8_t> bytes(const_cast<uint8_t*>(d.records.bytes.data()), d.records.bytes.size());
      if (has_transactional_batch(bytes)) p->note_replicated_transactional();
      auto appended = p->log().append_as_follower(bytes, now);
      if (!appended.is_ok() && appended.status().code() == storage::StatusCode::kOffsetOutOfRange &&
          straddles_empty_log(*p, bytes)) {
        // Kafka's Partition.appendRecordsToFollowerOrFutureReplica: the
        // leader's log start fell inside a batch (DeleteRecords) and our log
        // is empty at that start: restart the log at the batch's base.
        const int64_t base = read_be64(bytes.data());
        if (broker_.logs().truncate_fully_and_start_at(p->tp(), base, now).is_ok())
          appended = p->log().append_as_follower(bytes, now);
      }
      if (!appended.is_ok()) {
        CK_LOG_ERROR("replication", "replica fetcher %s-%d: append failed: %s", p->topic().c_str(),
                     p->index(), appended.status().to_string().c_str());
        delay(p->tp(), p);
        return;
      }
      broker_.metrics().all_topics().add_replication_bytes_in(bytes.size());
      if (fsync_) appended_.push_back(p);
    }
    const int64_t leo = p->log_end_offset();
    p->set_high_watermark(std::min(d.high_watermark, leo));
    if (d.log_start_offset > p->log_start_offset()) {
      const int64_t target = std::min(d.log_start_offset, p->high_watermark());
      if (target > p->log_start_offset()) (void)p->log().advance_log_start_offset(target);
    }
    response_lag_ = std::max<int64_t>(response_lag_, d.high_watermark - leo);
  }

  // With ciuic.acks.all.fsync: what this response appended is fdatasync'd
  // (group commit: the partitions' syncs run together) before the next
  // fetch reports the new log end offsets to the leader, whose HW, and so
  // its acks=all answers, follow those offsets. A partition whose sync
  // failed (the error is sticky) is not fetched again: it falls out of the
  // ISR rather than report what it may lose.
  void make_durable() {
    if (appended_.empty()) return;
    struct Latch {
      std::mutex mu;
      std::condition_variable cv;
      size_t left = 0;
    };
    auto latch = std::make_shared<Latch>();
    latch->left = appended_.size();
    auto failed = std::make_shared<std::vector<char>>(appended_.size(), 0);
    for (size_t i = 0; i < appended_.size(); ++i) {
      const auto& p = appended_[i];
      broker_.logs().sync_to(p->log_ptr(), p->log_end_offset(), [latch, failed, i](storage::Status st) {
        std::lock_guard<std::mutex> lock(latch->mu);
        if (!st.is_ok()) (*failed)[i] = 1;
        if (--latch->left == 0) latch->cv.notify_all();
      });
    }
    {
      std::unique_lock<std::mutex> lock(latch->mu);
      latch->cv.wait(lock, [&] { return latch->left == 0; });
    }
    for (size_t i = 0; i < appended_.size(); ++i) {
      if (!(*failed)[i]) continue;
      const auto& p = appended_[i];
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) break;  // the committer stopped first: shutting down
        auto it = parts_.find(p->tp());
        if (it != parts_.end() && it->second.partition == p) it->second.delayed_until = Clock::time_point::max();
      }
      CK_LOG_ERROR("replication",
                   "replica fetcher %s-%d: fdatasync failed; the partition is not fetched again (so never reported "
                   "past offset %lld) until it is assigned here anew",
                   p->topic().c_str(), p->index(), static_cast<long long>(p->log().recovery_point()));
    }
    appended_.clear();
  }

  // Whether any v2 batch of a fetched records blob is transactional or a
  // control batch (the low byte of the attributes, at byte 22 of the header).
  static bool has_transactional_batch(std::span<const uint8_t> bytes) {
    protocol::BatchSplitter split(bytes);
    protocol::RecordsEntry e;
    while (split.next(&e) == protocol::SplitStatus::kEntry) {
      if (e.magic == 2 && e.bytes.size() > 22 && 
          (e.bytes[22] & (protocol::batch_v2::kTransactionalBit | protocol::batch_v2::kControlBit)) != 0) return true;
    }
    return false;
  }

  static int64_t read_be64(const uint8_t* b) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | b[i];
    return static_cast<int64_t>(v);
  }
  static int32_t read_be32(const uint8_t* b) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | b[i];
    return static_cast<int32_t>(v);
  }
  // The first batch (baseOffset at 0, lastOffsetDelta at 23 of a v2 header)
  // starts below our LEO and ends at or above it, and our log is empty.
  static bool straddles_empty_log(const Partition& p, std::span<const uint8_t> bytes) {
    if (bytes.size() < 27) return false;
    const int64_t leo = p.log_end_offset();
    const int64_t base = read_be64(bytes.data());
    const int64_t last = base + read_be32(bytes.data() + 23);
    return leo == p.log_start_offset() && base < leo && last >= leo;
  }

  void after_truncate(const std::shared_ptr<Partition>& p) {
    const int64_t leo = p->log_end_offset();
    if (p->high_watermark() > leo) p->set_high_watermark(leo, /*allow_backwards=*/true);
  }

  // Kafka's getOffsetTruncationState for a diverging epoch in a Fetch answer.
  void truncate_for_divergence(const std::shared_ptr<Partition>& p, int32_t leader_epoch, int64_t leader_end,
                               int64_t now) {
    const int64_t leo = p->log_end_offset();
    int64_t target = std::min(leader_end, leo);
    if (leader_epoch >= 0) {
      const storage::EpochEndOffset mine = p->log().end_offset_for_epoch(leader_epoch);
      if (mine.end_offset >= 0) {
        target = mine.epoch == leader_epoch ? std::min({leader_end, mine.end_offset, leo})
                                            : std::min(mine.end_offset, leo);
      }
    }
    target = std::max<int64_t>(target, 0);
    if (target < leo)
      CK_LOG_INFO("replication", "replica fetcher %s-%d: truncating from LEO %lld to %lld (leader epoch %d ends at %lld)",
                  p->topic().c_str(), p->index(), static_cast<long long>(leo), static_cast<long long>(target),
                  leader_epoch, static_cast<long long>(leader_end));
    auto r = broker_.logs().truncate_to(p->tp(), target, now);
    if (!r.is_ok()) {
      CK_LOG_ERROR("replication", "replica fetcher %s-%d: truncation to %lld failed: %s",
                   p->topic().c_str(), p->index(), static_cast<long long>(target), r.status().to_string().c_str());
      delay(p->tp(), p);
      return;
    }
    after_truncate(p);
  }

  // ListOffsets (replica id set) for one partition: the leader's LEO
  // (timestamp -1) or log start (-2); nullopt on any failure.
  std::optional<int64_t> leader_offset(replication::net::ReconnectingClient& client,
                                       const std::shared_ptr<Partition>& p, int64_t timestamp) {
    auto c = client.client();
    if (!c) return std::nullopt;
    auto version = c.value()->pick_version(protocol::ListOffsetsRequest::kApiKey, 9, 1);
    if (!version) return std::nullopt;
    protocol::ListOffsetsRequest req;
    req.replica_id = broker_.node_id();
    auto& t = req.topics.emplace_back();
    t.name = p->topic();
    auto& lp = t.partitions.emplace_back();
    lp.partition_index = p->index();
    lp.current_leader_epoch = *version >= 4 ? p->leader_epoch() : -1;
    lp.timestamp = timestamp;
    protocol::ListOffsetsResponse resp;
    if (!client.call(req, *version, &resp).ok()) return std::nullopt;
    for (const auto& rt : resp.topics)
      for (const auto& rp : rt.partitions)
        if (rt.name == p->topic() && rp.partition_index == p->index() && rp.error_code == 0) return rp.offset;
    return std::nullopt;
  }

  // Asks the leader (no lock held), then truncates under the apply lock if
  // the partition is still ours.
  void handle_out_of_range(replication::net::ReconnectingClient& client, const std::shared_ptr<Partition>& p) {
    std::optional<int64_t> leader_leo = leader_offset(client, p, -1);
    std::optional<int64_t> leader_start = leader_offset(client, p, -2);
    std::lock_guard<std::mutex> apply(apply_mu_);
    if (!current(p)) return;
    const int64_t now = Broker::now_ms();
    const int64_t leo = p->log_end_offset();
    if (leader_leo && *leader_leo < leo) {
      if (broker_.logs().truncate_to(p->tp(), *leader_leo, now).is_ok()) after_truncate(p);
      return;
    }
    if (leader_start && leo < *leader_start) {
      if (broker_.logs().truncate_fully_and_start_at(p->tp(), *leader_start, now).is_ok())
        p->set_high_watermark(*leader_start, /*allow_backwards=*/true);
      return;
    }
    delay(p->tp(), p);  // neither: retry later from the same LEO
  }

  Broker& broker_;
  const LeaderEndpoint leader_;
  const FetcherOptions options_;
  std::shared_ptr<FetcherCounters> counters_;
  int32_t max_bytes_ = 1 << 20, response_max_bytes_ = 10 << 20, wait_max_ms_ = 500, min_bytes_ = 1,
          backoff_ms_ = 1000;

  mutable std::mutex mu_;  // parts_, stopping_
  std::condition_variable cv_;
  std::map<storage::TopicPartition, Fetched> parts_;
  bool stopping_ = false;
  std::mutex apply_mu_;  // held while one partition's answer is applied
  std::shared_ptr<replication::net::Interrupter> interrupter_;
  std::atomic<bool> exited_{false};
  int64_t response_lag_ = 0;  // the fetch thread's own
  bool fsync_ = true;         // ciuic.acks.all.fsync
  std::vector<std::shared_ptr<Partition>> appended_;  // by the last response, to sync (the fetch thread's own)
  // UNKNOWN_LEADER_EPOCH answers in a row, per partition (the fetch thread's own).
  std::map<storage::TopicPartition, std::pair<std::weak_ptr<Partition>, int>> unknown_epoch_retries_;
  std::atomic<int64_t> lag_{0};
  std::thread thread_;
};


ReplicaFetcherManager::ReplicaFetcherManager(Broker& broker)
    : broker_(broker), threads_per_leader_(std::max(1, broker.config().get_int("num.replica.fetchers"))),
      counters_(std::make_shared<FetcherCounters>()) {
  collector_id_ = broker.metrics_registry().add_collector([this](std::vector<prometheus::MetricFamily>& out) {
    out.push_back(metrics::single_sample_family(
        "kafka_server_replicafetchermanager_maxlag",
        "The largest lag (leader high watermark minus local log end offset, in messages) of any partition this "
        "broker follows, as the last fetch responses showed.",
        prometheus::MetricType::Gauge, static_cast<double>(max_lag())));
  });
}

ReplicaFetcherManager::~ReplicaFetcherManager() {
  broker_.metrics_registry().remove_collector(collector_id_);
  stop();
}

void ReplicaFetcherManager::set_options(FetcherOptions o) {
  std::lock_guard<std::mutex> lock(mu_);
  options_ = o;
}

void ReplicaFetcherManager::remove_locked(const storage::TopicPartition& tp) {
  auto w = where_.find(tp);
  if (w == where_.end()) return;
  auto t = threads_.find(w->second);
  where_.erase(w);
  if (t == threads_.end()) return;
  if (t->second->remove(tp)) {
    t->second->stop_async();
    retired_.push_back(t->second);
    threads_.erase(t);
  }
  // Join the retired threads that have already ended.
  for (auto it = retired_.begin(); it != retired_.end();) {
    if ((*it)->exited()) {
      (*it)->stop();
      it = retired_.erase(it);
    } else {
      ++it;
    }
  }
}

void ReplicaFetcherManager::became_leader(const std::shared_ptr<Partition>& p) {
  std::lock_guard<std::mutex> lock(mu_);
  remove_locked(p->tp());
}

void ReplicaFetcherManager::stopped(const storage::TopicPartition& tp, bool) {
  std::lock_guard<std::mutex> lock(mu_);
  remove_locked(tp);
}

void ReplicaFetcherManager::became_follower(const std::shared_ptr<Partition>& p, const LeaderEndpoint& leader) {
  broker_.service<HwCheckpoints>().restore(*p);
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  remove_locked(p->tp());
  add_locked(p, leader);
}

ReplicaFetcherManager::Key ReplicaFetcherManager::key_locked(const Partition& p, const LeaderEndpoint& leader) const {
  const int32_t index = static_cast<int32_t>(
      (std::hash<std::string>{}(p.topic()) * 31 + static_cast<size_t>(p.index())) %
      static_cast<size_t>(threads_per_leader_));
  return Key{leader.broker_id, leader.host, leader.port, index};
}

void ReplicaFetcherManager::add_locked(const std::shared_ptr<Partition>& p, const LeaderEndpoint& leader) {
  const Key key = key_locked(*p, leader);
  auto& t = threads_[key];
  if (!t) t = std::make_shared<FetcherThread>(broker_, leader, options_, counters_);
  t->add(p);
  where_[p->tp()] = key;
}

void ReplicaFetcherManager::resize(int32_t threads_per_leader) {
  threads_per_leader = std::max(1, threads_per_leader);
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_ || threads_per_leader == threads_per_leader_) return;
  const int32_t was = threads_per_leader_;
  threads_per_leader_ = threads_per_leader;
  // Every fetched partition, with its leader, before any moves.
  std::vector<std::pair<std::shared_ptr<Partition>, LeaderEndpoint>> moving;
  for (const auto& [tp, key] : where_) {
    auto t = threads_.find(key);
    if (t == threads_.end()) continue;
    if (auto p = t->second->partition(tp)) moving.emplace_back(std::move(p), t->second->leader());
  }
  size_t moved = 0;
  for (const auto& [p, leader] : moving) {
    if (where_.at(p->tp()) == key_locked(*p, leader)) continue;  // its thread stays
    remove_locked(p->tp());
    add_locked(p, leader);
    ++moved;
  }
  CK_LOG_INFO("replication", "num.replica.fetchers %d -> %d: %zu of %zu partition(s) moved to another fetcher thread",
              was, threads_per_leader_, moved, moving.size());
}

int32_t ReplicaFetcherManager::threads_per_leader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_per_leader_;
}

size_t ReplicaFetcherManager::thread_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_.size();
}

size_t ReplicaFetcherManager::partition_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return where_.size();
}

uint64_t ReplicaFetcherManager::fetches() const { return counters_->fetches.load(); }
int64_t ReplicaFetcherManager::max_lag() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t m = 0;
  for (const auto& [k, t] : threads_) m = std::max(m, t->lag());
  return m;
}

void ReplicaFetcherManager::stop() {
  std::map<Key, std::shared_ptr<FetcherThread>> threads;
  std::vector<std::shared_ptr<FetcherThread>> retired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    threads.swap(threads_);
    retired.swap(retired_);
    where_.clear();
  }
  for (auto& [k, t] : threads) t->stop_async();  // every client closed at once
  for (auto& [k, t] : threads) t->stop();
  for (auto& t : retired) t->stop();
}

}  // namespace ciuickafka::broker::replica
