// broker/fetch/partition_read.h: reading the partitions of one fetch with
// Kafka's size rules, into results a response can splice from.
//
// Size rules (KIP-74): partitions are read in order, each up to
// min(partition max_bytes, what is left of the request's max_bytes). Reads
// return whole batches only (a fetch at an offset inside a batch gets that
// whole batch). The first batch of the first partition that returns data
// is sent even when it is larger than both limits, so a consumer always
// progresses; any later partition whose first batch does not fit what is
// left returns nothing. Fetch v0-v2 have no request limit.
//
// Per partition: unknown topic/partition -> UNKNOWN_TOPIC_OR_PARTITION
// (UNKNOWN_TOPIC_ID for an unknown id, v13+); current_leader_epoch fenced;
// a fetch offset below the log start or above the log end offset ->
// OFFSET_OUT_OF_RANGE; consumers read up to the high watermark, or for
// read_committed the last stable offset (produce/produce_service.h: min(HW,
// the first offset of an undecided transaction)), with the aborted
// transactions overlapping [fetch offset, LSO) for the client to filter
// (the broker never filters: clients drop aborted batches themselves).
// While the partition's producer state cannot be loaded yet (writes of a
// dropped table in flight, a moment after a role change) a read_committed
// fetch gets no records, to retry. The LSO is reported at both levels (the
// HW when the state is not loaded).
// Consumers read from the leader; a Fetch v11+ (Kafka's ClientMetadata) may
// also be served by a follower, up to its HW (KIP-392; read_committed only
// while the follower holds no replicated transactional batch, since
// followers keep no producer state: else NOT_LEADER_OR_FOLLOWER, and the
// client goes back to the leader). A leader with replica.selector.class
// (read_replica.h) may instead answer a consumer with a preferred read
// replica and no records (for read_committed only while the partition has
// no transactional state): the fetch is then answered at once.
// Replica fetches (replica_id >= 0) are served only by a replicated leader
// (broker/replica/leader_replicas.h tracks the partition), else
// NOT_LEADER_OR_FOLLOWER (a single node has no followers); they read up to
// the LEO, not the HW, and when last_fetched_epoch (v12+) is set and the
// leader's epoch cache ends that epoch below the fetch offset (or knows only
// an older epoch) they get no records and the diverging (epoch, end offset)
// instead (Kafka's Partition.readRecords). The caller records the fetch in
// the leader's replica state (handlers/fetch.cc).
// An error partition reports HW / LSO / log start -1, as Kafka does.
//
// Header-only: broker/CMakeLists.txt compiles handlers/*.cc only.
// Thread-safety: reads shared, thread-safe state (topics, logs).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "broker/cluster/replica_manager.h"

#include "broker/broker.h"
#include "broker/fetch/epoch_check.h"
#include "broker/fetch/read_replica.h"
#include "broker/fetch/session_cache.h"
#include "broker/produce/produce_service.h"
#include "broker/replica/leader_replicas.h"
#include "protocol/error_code.h"

namespace ciuickafka::broker::fetch {

struct PartitionOutcome {
  protocol::ErrorCode error = protocol::ErrorCode::NONE;
  int64_t high_watermark = -1;
  int64_t last_stable_offset = -1;
  int64_t log_start_offset = -1;
  storage::ReadResult read;           // zero-copy record slices
  std::vector<produce::AbortedTxn> aborted;  // read_committed: aborted transactions in the range read
  std::vector<uint8_t> converted;     // Fetch v0-v3: the down-converted bytes
  int32_t preferred_read_replica = -1;  // KIP-392: set (no records) when a follower should serve it
  std::string topic;                  // resolved name (for metrics, v13+ responses); else the client's
  // The topic exists on this broker: only then may a per-topic metrics
  // series be named after `topic` (a client may name anything).
  bool topic_exists = false;
  // Replica fetches only:
  std::shared_ptr<Partition> partition;  // the partition read
  int64_t leo_at_read = -1;              // the leader's LEO when it was read
  int32_t diverging_epoch = -1;          // set (with diverging_end_offset) when the follower diverged
  int64_t diverging_end_offset = -1;
  bool diverged = false;
};

// An error answer for one partition (HW, LSO and log start -1).
inline PartitionOutcome error_outcome(protocol::ErrorCode e, std::string topic, bool topic_exists = false) {
  PartitionOutcome o;
  o.error = e;
  o.topic = std::move(topic);
  o.topic_exists = topic_exists;
  return o;
}

struct ReadOptions {
  bool by_topic_id = false;      // v13+
  bool from_replica = false;
  bool read_committed = false;
  bool response_limit = true;    // v3+: the request has a max_bytes (only the first batch may exceed it)
  int64_t max_bytes = std::numeric_limits<int32_t>::max();  // the response's budget (fetch.max.bytes applied)
  replica::LeaderReplicas* leaders = nullptr;  // set for replica fetches
  produce::ProduceService* producers = nullptr;  // the LSO's source (looked up when null)
  // Fetch v11+ from a consumer (Kafka's ClientMetadata): followers serve it
  // too, and a leader may name a preferred read replica (selector, when
  // replica.selector.class is set) for a client in client_rack arriving on
  // listener.
  bool client_metadata = false;
  std::string client_rack;
  std::string listener;
  const ReadReplicaSelector* selector = nullptr;
  // A network thread's read: stop at the first partition whose read may
  // wait for the disk (storage::Log::read_may_block: bytes not in the page
  // cache; or a read_committed read that would first load the partition's
  // producer state, scanning the log from its newest snapshot), setting
  // ReadTotals::cold, for the caller to read again on the I/O pool.
  bool defer_cold = false;
};

struct ReadTotals {
  uint64_t bytes = 0;
  // An error, a diverging follower or a preferred read replica: answered
  // without waiting for min_bytes.
  bool answer_now = false;
  // defer_cold stopped the read: the outcomes are incomplete.
  bool cold = false;
};

inline std::shared_ptr<Partition> resolve(Broker& broker, const FetchPartitionState& s, bool by_id,
                                          protocol::ErrorCode* error, std::string* name, bool* found = nullptr) {
  std::shared_ptr<const Topic> topic = by_id ? broker.topics().find(s.topic_id) : broker.topics().find(s.topic);
  if (!topic) {
    *error = by_id ? protocol::ErrorCode::UNKNOWN_TOPIC_ID : protocol::ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
    return nullptr;
  }
  *name = topic->name;
  if (found != nullptr) *found = true;
  auto p = topic->partition(s.partition);
  if (!p) *error = protocol::ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
  return p;
}

inline ReadTotals read_partitions(Broker& broker, const std::vector<FetchPartitionState>& plan,
                                  const ReadOptions& opts, std::vector<PartitionOutcome>* out) {
  out->clear();
  out->resize(plan.size());
  ReadTotals totals;
  // The response's byte budget: the request's max_bytes (v3+) capped by
  // fetch.max.bytes; v0-v2 have only fetch.max.bytes.
  int64_t left = std::max<int64_t>(opts.max_bytes, 0);
  bool first_data = true;  // v3+: the next batch read may exceed the limits
  for (size_t i = 0; i < plan.size(); ++i) {
    const FetchPartitionState& s = plan[i];
    PartitionOutcome& o = (*out)[i];
    o.topic = s.topic;
    protocol::ErrorCode err = protocol::ErrorCode::NONE;
    std::shared_ptr<Partition> p = resolve(broker, s, opts.by_topic_id, &err, &o.topic, &o.topic_exists);
    // Consumers read from the leader (always true on one node), or with
    // client metadata (v11+) from a follower too.
    const bool follower_read = opts.client_metadata && p && p->role() == ReplicaRole::kFollower;
    if (!opts.from_replica && !follower_read && (p || err == protocol::ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))
      if (auto le = ReplicaManager::leader_error(broker, p.get(), o.topic, s.partition); le != protocol::ErrorCode::NONE)
        err = le;
    if (p && err == protocol::ErrorCode::NONE) err = check_current_leader_epoch(s.current_leader_epoch, p->leader_epoch());
    if (follower_read && err == protocol::ErrorCode::NONE && opts.read_committed && p->holds_replicated_transactional())
      err = protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER;
    if (p && err == protocol::ErrorCode::NONE && opts.from_replica &&
        (!p->is_leader() || opts.leaders == nullptr || !opts.leaders->tracks(*p) ||
         !ReplicaManager::may_serve(broker, *p)))
      err = protocol::ErrorCode::NOT_LEADER_OR_FOLLOWER;
    if (p && err == protocol::ErrorCode::NONE && opts.from_replica) {
      o.partition = p;
      o.leo_at_read = p->log_end_offset();
      if (s.last_fetched_epoch >= 0) {
        const storage::EpochEndOffset eo = p->log().end_offset_for_epoch(s.last_fetched_epoch);
        if (eo.epoch < s.last_fetched_epoch || eo.end_offset < s.fetch_offset) {
          o.diverged = true;
          o.diverging_epoch = eo.epoch;
          o.diverging_end_offset = eo.end_offset;
          o.high_watermark = p->high_watermark();
          o.last_stable_offset = p->last_stable_offset();
          o.log_start_offset = p->log_start_offset();
          o.error = err;
          totals.answer_now = true;  // not an error, but answered at once: the follower must truncate
          continue;
        }
      }
    }
    if (p && err == protocol::ErrorCode::NONE) {
      auto& producers = opts.producers != nullptr ? *opts.producers : broker.service<produce::ProduceService>();
      if (opts.defer_cold && opts.read_committed && !follower_read && !opts.from_replica &&
          !producers.loaded_for_reads(*p)) {
        totals.cold = true;  // the LSO would load the producer state: a scan of the log
        return totals;
      }
      std::optional<int64_t> lso;
      if (follower_read) lso = p->high_watermark();  // no transactional batch here (checked above)
      else if (!opts.from_replica) lso = producers.last_stable_offset(*p, /*load=*/opts.read_committed);
      if (opts.selector != nullptr && !opts.from_replica && !follower_read &&
          (!opts.read_committed || producers.known_txn_free(*p))) {
        if (auto id = opts.selector->select(*p, opts.client_rack, opts.listener, s.fetch_offset)) {
          o.preferred_read_replica = *id;
          o.high_watermark = p->high_watermark();
          o.last_stable_offset = lso.value_or(o.high_watermark);
          o.log_start_offset = p->log_start_offset();
          totals.answer_now = true;
          continue;
        }
      }
      const int64_t hw = opts.from_replica    ? std::numeric_limits<int64_t>::max()
                         : opts.read_committed ? lso.value_or(s.fetch_offset)
                                               : p->high_watermark();
      if (s.fetch_offset < p->log_start_offset() || s.fetch_offset > p->log_end_offset()) {
        err = protocol::ErrorCode::OFFSET_OUT_OF_RANGE;
      } else {
        const int64_t limit = std::min<int64_t>(std::max(s.max_bytes, 0), left);
        if (opts.defer_cold && p->log().read_may_block(s.fetch_offset, static_cast<uint64_t>(limit), hw)) {
          totals.cold = true;
          return totals;
        }
        auto r = p->log().read(s.fetch_offset, static_cast<uint64_t>(limit), hw);
        if (!r.is_ok()) {
          err = r.status().code() == storage::StatusCode::kOffsetOutOfRange ? protocol::ErrorCode::OFFSET_OUT_OF_RANGE
                                                                           : protocol::ErrorCode::KAFKA_STORAGE_ERROR;
        } else {
          o.read = std::move(r.value());
          // v0-v2: each partition's first batch may exceed its limit while
          // the response's budget lasts; v3+: only the response's first.
          const bool may_exceed = opts.response_limit ? first_data : left > 0;
          if (o.read.bytes > static_cast<uint64_t>(limit) && !may_exceed) o.read = storage::ReadResult{};
          if (o.read.bytes > 0) {
            if (opts.response_limit) first_data = false;
            left = std::max<int64_t>(0, left - static_cast<int64_t>(o.read.bytes));
          }
          o.high_watermark = p->high_watermark();
          o.last_stable_offset = opts.from_replica ? p->last_stable_offset() : lso.value_or(o.high_watermark);
          o.log_start_offset = p->log_start_offset();
          if (opts.read_committed && o.read.bytes > 0 && !follower_read)
            o.aborted = producers.aborted_transactions(*p, s.fetch_offset, hw);
        }
      }
    }
    o.error = err;
    if (err != protocol::ErrorCode::NONE) {
      totals.answer_now = true;
      o.read = storage::ReadResult{};
    }
    totals.bytes += o.read.bytes;
  }
  return totals;
}

}  // namespace ciuickafka::broker::fetch
