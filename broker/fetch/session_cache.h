// broker/fetch/session_cache.h: fetch sessions (KIP-227), the service that
// remembers what each consumer fetches so that it can send only changes.
//
// A request's (session_id, session_epoch) says what it is:
//   epoch -1: a full fetch without a session (any session_id named is closed);
//   epoch  0: a full fetch that creates a session (any named one is closed);
//             the response carries the new id;
//   epoch >0: incremental: the request lists only partitions whose fetch
//             state changed and the partitions to forget; the others are
//             read from the session. The epoch must be the one the session
//             expects (INVALID_FETCH_SESSION_EPOCH), the id must exist
//             (FETCH_SESSION_ID_NOT_FOUND), and a session made with topic
//             ids (v13+) is used only with topic ids and vice versa
//             (FETCH_SESSION_TOPIC_ID_ERROR).
// An incremental response holds only partitions with records, an error, or
// a changed high watermark / log start offset; partitions that returned
// records move to the end of the session's order, so a busy partition does
// not starve the ones after it.
//
// The cache is bounded: creating a session when full evicts the least
// recently used one (its owner gets FETCH_SESSION_ID_NOT_FOUND next time and
// starts over with a full fetch, which every client handles).
//
// Header-only: broker/CMakeLists.txt compiles handlers/*.cc only.
// Thread-safety: every method may be called from any thread (one mutex;
// each call copies what it needs and holds it briefly).
#pragma once

#include <algorithm>
#include <cstdint>
#include <list>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/error_code.h"
#include "protocol/wire/types.h"

namespace ciuickafka::broker {
class Broker;
}

namespace ciuickafka::broker::fetch {

// One partition as a fetch names it, with what the client asked for and
// (for sessions) what the last response told it.
struct FetchPartitionState {
  std::string topic;        // v0-12 identity (and resolved name for v13+)
  protocol::Uuid topic_id;  // v13+ identity
  int32_t partition = 0;
  int64_t fetch_offset = 0;
  int32_t max_bytes = 0;
  int32_t current_leader_epoch = -1;
  int64_t client_log_start_offset = -1;
  int32_t last_fetched_epoch = -1;  // v12+: a follower's divergence check (-1: none)
  // Last values sent to the client (session bookkeeping).
  int64_t sent_high_watermark = -1;
  int64_t sent_log_start_offset = -1;

  bool same_partition(const FetchPartitionState& o, bool by_id) const {
    return partition == o.partition && (by_id ? topic_id == o.topic_id : topic == o.topic);
  }
};

// What a response said about one partition, for the session to compare.
struct PartitionSummary {
  bool has_records = false;
  bool error = false;
  int64_t high_watermark = -1;
  int64_t log_start_offset = -1;
  bool must_respond = false;  // a diverging epoch or a preferred read replica (Kafka's mustRespond)
};

class FetchSessionCache {
 public:
  static constexpr size_t kDefaultCapacity = 1000;  // Kafka's max.incremental.fetch.session.cache.slots

  explicit FetchSessionCache(Broker&) {}
  FetchSessionCache() = default;

  void set_capacity(size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    capacity_ = n;
    while (sessions_.size() > capacity_) evict_lru_locked();
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sessions_.size();
  }
  // For the metrics collector: sessions, partitions they cache, evictions
  // (sessions dropped to make room) so far.
  struct Stats {
    size_t sessions = 0;
    size_t partitions = 0;
    uint64_t evictions = 0;
  };
  Stats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    Stats st;
    st.sessions = sessions_.size();
    for (const auto& [id, s] : sessions_) st.partitions += s.partitions.size();
    st.evictions = evictions_;
    return st;
  }
  void remove(int32_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    lru_.erase(it->second.lru_pos);
    sessions_.erase(it);
  }

  // A new session holding `parts` (in request order); returns its id, or 0
  // when the cache holds no sessions at all (capacity 0).
  int32_t create(bool uses_topic_ids, std::vector<FetchPartitionState> parts) {
    std::lock_guard<std::mutex> lock(mu_);
    if (capacity_ == 0) return 0;
    while (sessions_.size() >= capacity_) evict_lru_locked();
    int32_t id = 0;
    do {
      id = static_cast<int32_t>(rng_() & 0x7fffffff);
    } while (id == 0 || sessions_.count(id) != 0);
    Session& s = sessions_[id];
    s.epoch = 1;
    s.uses_topic_ids = uses_topic_ids;
    s.partitions = std::move(parts);
    lru_.push_front(id);
    s.lru_pos = lru_.begin();
    return id;
  }

  // Incremental request: checks id/epoch/id-mode, applies the changed and
  // forgotten partitions, advances the epoch and returns every partition of
  // the session (the fetch plan) in `plan`.
  protocol::ErrorCode begin_incremental(int32_t id, int32_t epoch, bool uses_topic_ids,
                                        const std::vector<FetchPartitionState>& changed,
                                        const std::vector<FetchPartitionState>& forgotten,
                                        std::vector<FetchPartitionState>* plan) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return protocol::ErrorCode::FETCH_SESSION_ID_NOT_FOUND;
    Session& s = it->second;
    if (s.epoch != epoch) return protocol::ErrorCode::INVALID_FETCH_SESSION_EPOCH;
    if (s.uses_topic_ids != uses_topic_ids) return protocol::ErrorCode::FETCH_SESSION_TOPIC_ID_ERROR;
    const bool by_id = s.uses_topic_ids;
    for (const FetchPartitionState& c : changed) {
      FetchPartitionState* found = nullptr;
      for (auto& p : s.partitions)
        if (p.same_partition(c, by_id)) found = &p;
      if (found == nullptr) {
        s.partitions.push_back(c);
      } else {
        found->fetch_offset = c.fetch_offset;
        found->max_bytes = c.max_bytes;
        found->current_leader_epoch = c.current_leader_epoch;
        found->client_log_start_offset = c.client_log_start_offset;
        if (!c.topic.empty()) found->topic = c.topic;
      }
    }
    for (const FetchPartitionState& f : forgotten)
      std::erase_if(s.partitions, [&](const FetchPartitionState& p) { return p.same_partition(f, by_id); });
    s.epoch = s.epoch == INT32_MAX ? 1 : s.epoch + 1;
    touch_locked(it);
    *plan = s.partitions;
    return protocol::ErrorCode::NONE;
  }

  // After an incremental fetch read `plan` (as begin_incremental returned
  // it) with results `summaries` (same order): which partitions the response
  // must carry. Updates the session's remembered HW / log start, and moves
  // partitions that returned records to the end of the order.
  std::vector<bool> finish_incremental(int32_t id, const std::vector<FetchPartitionState>& plan,
                                       const std::vector<PartitionSummary>& summaries) {
    std::vector<bool> include(plan.size(), true);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return include;  // evicted meanwhile: send everything
    Session& s = it->second;
    std::vector<FetchPartitionState> moved;
    for (size_t i = 0; i < plan.size(); ++i) {
      const PartitionSummary& r = summaries[i];
      auto pos = std::find_if(s.partitions.begin(), s.partitions.end(), [&](const FetchPartitionState& p) {
        return p.same_partition(plan[i], s.uses_topic_ids);
      });
      if (pos == s.partitions.end()) continue;  // forgotten by a concurrent request
      bool must = r.has_records || r.error || r.must_respond;
      if (pos->sent_high_watermark != r.high_watermark || pos->sent_log_start_offset != r.log_start_offset)
        must = true;
      pos->sent_high_watermark = r.error ? -1 : r.high_watermark;
      pos->sent_log_start_offset = r.log_start_offset;
      include[i] = must;
      if (r.has_records) {
        moved.push_back(*pos);
        s.partitions.erase(pos);
      }
    }
    for (auto& m : moved) s.partitions.push_back(std::move(m));
    return include;
  }

  // For tests: the next epoch a session expects (-1 if unknown).
  int32_t expected_epoch(int32_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    return it == sessions_.end() ? -1 : it->second.epoch;
  }

 private:
  struct Session {
    int32_t epoch = 1;  // the epoch the next incremental request must carry
    bool uses_topic_ids = false;
    std::vector<FetchPartitionState> partitions;
    std::list<int32_t>::iterator lru_pos;
  };
  using Map = std::unordered_map<int32_t, Session>;

  void touch_locked(Map::iterator it) {
    lru_.erase(it->second.lru_pos);
    lru_.push_front(it->first);
    it->second.lru_pos = lru_.begin();
  }
  void evict_lru_locked() {
    if (lru_.empty()) return;
    sessions_.erase(lru_.back());
    lru_.pop_back();
    ++evictions_;
  }

  mutable std::mutex mu_;
  size_t capacity_ = kDefaultCapacity;
  Map sessions_;
  std::list<int32_t> lru_;  // front: most recently used
  uint64_t evictions_ = 0;  // under mu_
  std::mt19937 rng_{std::random_device{}()};
};

}  // namespace ciuickafka::broker::fetch
