// broker/handlers/fetch.cc: Fetch (key 1), versions 0-17.
//
// One fetch: work out which partitions to read (the request's, or for an
// incremental fetch session the session's: broker/fetch/session_cache.h),
// read them with Kafka's size rules (broker/fetch/partition_read.h), and
// either answer or, when fewer than min_bytes are there and max_wait_ms > 0,
// wait in the fetch waiting room (broker/fetch/waiting_room.h) until an
// append brings enough or the time is up.
//
// The answer carries the record bytes zero-copy: each partition's records
// field is external, naming the storage::ReadResult whose file slices the
// connection sends with sendfile. Fetch v0-v3 are the exception: their
// clients read message format v0/v1, so the bytes are converted in memory
// (broker/fetch/down_convert.h), on the I/O pool (server/io_pool.h): the
// read from disk and the conversion never hold the network thread. Nor does
// a read of bytes that are not in the page cache (a reader replaying old
// data): the read and the sendfile would wait for the disk on the network
// thread, and every other connection there with them. The network thread
// reads only when no partition's read may block (storage/page_cache.h), nor
// needs the partition's producer state loaded for read_committed (a scan
// of the log); otherwise the fetch is read on the I/O pool, its slices
// brought into the page cache there, and then sent by sendfile as usual.
// records is never null (empty when there is nothing).
// aborted_transactions is null for read_uncommitted and, for
// read_committed, lists the aborted transactions overlapping what was read
// (fetch/partition_read.h), as Kafka sends them; for an unknown topic,
// topic id or partition it is empty, for a read's error null (as Kafka).
//
// Follower fetches (replica_id >= 0, or replica_state.replica_id in v15+)
// are served by a replicated leader only, up to its LEO, with a
// diverging_epoch (v12+) when the follower's last fetched epoch diverged;
// each is then recorded in the leader's replica state
// (broker/replica/leader_replicas.h), which may move the HW the answer
// carries.
//
// Consumers' fetches v11+ carry a rack (KIP-392): followers serve them up
// to their HW, and a leader with replica.selector.class may answer with a
// preferred read replica instead of records (fetch/read_replica.h).
//
// A consumer over its consumer_byte_rate quota (quotas/client_quotas.h):
// no fetch asks for more than one quota window allows, and a fetch whose
// records would put the client over it is answered empty with the throttle
// time (fetch_throttled below); the connection then reads nothing more for
// that long. The bytes counted are the records', not the whole response's
// (Kafka counts the response's size: the difference is its few framing
// bytes per partition).
//
// Topics are named (v0-12) or by id (v13+). Metrics: bytes out per topic
// (and all topics) for consumers, replication bytes out (all topics) for
// followers, failed fetches per topic for partition errors.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "broker/broker.h"
#include "broker/fetch/down_convert.h"
#include "broker/produce/topic_settings.h"
#include "broker/fetch/partition_read.h"
#include "broker/fetch/read_replica.h"
#include "broker/produce/produce_service.h"
#include "broker/fetch/session_cache.h"
#include "broker/fetch/waiting_room.h"
#include "broker/handlers/codec.h"
#include "broker/quotas/client_quotas.h"
#include "broker/handlers/registry.h"
#include "broker/replica/leader_replicas.h"
#include "broker/server/io_pool.h"
#include "metrics/process_metrics.h"
#include "protocol/error_code.h"
#include "protocol/generated/fetch.h"
#include "storage/page_cache.h"

namespace ciuickafka::broker {
namespace {

using fetch::FetchPartitionState;
using fetch::PartitionOutcome;
using protocol::ErrorCode;
using protocol::FetchRequest;
using protocol::FetchResponse;

// Cached per-topic metric handles (a lookup in the registry locks). A
// handle whose topic was deleted is stale: looked up again, so a topic
// created again under the name counts in its fresh series.
// Also counts the fetches read on the I/O pool for bytes not in the page
// cache (ciuic_fetch_cold_reads_total, ciuic_fetch_cold_read_bytes_total,
// read at scrape time).
class FetchMetrics {
 public:
  explicit FetchMetrics(Broker& b) : broker_(b) {
    auto collect = [this](std::vector<prometheus::MetricFamily>& out) {
      out.push_back(metrics::single_sample_family(
          "ciuic_fetch_cold_reads_total",
          "Fetch requests read on the I/O pool because a partition's read would have waited for the disk: "
          "bytes not in the page cache, or a read_committed read that first loads the partition's producer "
          "state from the log.",
          prometheus::MetricType::Counter, static_cast<double>(cold_reads_.load(std::memory_order_relaxed))));
      out.push_back(metrics::single_sample_family(
          "ciuic_fetch_cold_read_bytes_total", "Record bytes those fetches answered with.",
          prometheus::MetricType::Counter, static_cast<double>(cold_bytes_.load(std::memory_order_relaxed))));
    };
    collector_id_ = broker_.metrics_registry().add_collector(collect);
  }
  ~FetchMetrics() { broker_.metrics_registry().remove_collector(collector_id_); }
  FetchMetrics(const FetchMetrics&) = delete;
  FetchMetrics& operator=(const FetchMetrics&) = delete;

  void cold_fetch() { cold_reads_.fetch_add(1, std::memory_order_relaxed); }
  void cold_bytes(uint64_t bytes) { cold_bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  metrics::TopicMetrics topic(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(name);
    if (it != cache_.end() && !it->second.stale()) return it->second;
    if (it != cache_.end()) cache_.erase(it);
    if (cache_.size() > 10'000) cache_.clear();
    return cache_.emplace(name, broker_.metrics().topic(name)).first->second;
  }

 private:
  Broker& broker_;
  std::mutex mu_;
  std::map<std::string, metrics::TopicMetrics, std::less<>> cache_;
  std::atomic<uint64_t> cold_reads_{0}, cold_bytes_{0};
  uint64_t collector_id_ = 0;
};

enum class SessionMode { kSessionless, kNewSession, kIncremental };

struct PendingFetch {
  RequestContext ctx;
  int16_t version = 0;
  int32_t min_bytes = 0;
  fetch::ReadOptions opts;
  SessionMode mode = SessionMode::kSessionless;
  int32_t session_id = 0;
  int32_t replica_id = -1;  // a follower's fetch (v0-14 replica_id, v15+ replica_state)
  std::vector<FetchPartitionState> plan;
  std::vector<PartitionOutcome> outcomes;
  bool cold = false;  // read on the I/O pool: a partition's read would have waited for the disk
};

// A follower's fetch, once read: Kafka's updateFollowerFetchState for every
// partition read without error or divergence (the leader's replica state,
// ISR expansion, the HW); the answer carries the HW that results.
void record_follower_fetch(PendingFetch& pf) {
  for (size_t i = 0; i < pf.plan.size(); ++i) {
    PartitionOutcome& o = pf.outcomes[i];
    if (o.error != ErrorCode::NONE || o.diverged || !o.partition) continue;
    const FetchPartitionState& s = pf.plan[i];
    const ErrorCode e = pf.opts.leaders->on_follower_fetch(*o.partition, pf.replica_id, s.fetch_offset,
                                                         s.client_log_start_offset, o.leo_at_read,
                                                         s.current_leader_epoch >= 0);
    if (e != ErrorCode::NONE) {
      o = fetch::error_outcome(e, o.topic, o.topic_exists);
      continue;
    }
    o.high_watermark = o.partition->high_watermark();
    o.last_stable_offset = o.partition->last_stable_offset();
  }
}

fetch::ReadTotals read_all(PendingFetch& pf) {
  fetch::ReadTotals t = fetch::read_partitions(*pf.ctx.broker, pf.plan, pf.opts, &pf.outcomes);
  if (pf.opts.from_replica && !t.cold) record_follower_fetch(pf);
  return t;
}

FetchResponse::PartitionData partition_data(const PendingFetch& pf, const FetchPartitionState& s,
                                            const PartitionOutcome& o) {
  FetchResponse::PartitionData d;
  d.partition_index = s.partition;
  d.error_code = protocol::to_wire(o.error);
  d.high_watermark = o.high_watermark;
  d.last_stable_offset = o.last_stable_offset;
  d.log_start_offset = o.log_start_offset;
  if (pf.version >= 4 && (o.error == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION || o.error == ErrorCode::UNKNOWN_TOPIC_ID)) {
    // Kafka answers a partition it does not know before reading anything,
    // with an empty list (a read's errors carry null).
    d.aborted_transactions.emplace();
  } else if (pf.version >= 4 && (o.error != ErrorCode::NONE || !pf.opts.read_committed)) {
    d.aborted_transactions.reset();
  } else if (pf.version >= 4) {
    d.aborted_transactions.emplace();
    for (const produce::AbortedTxn& a : o.aborted) {
      FetchResponse::AbortedTransaction t;
      t.producer_id = a.producer_id;
      t.first_offset = a.first_offset;
      d.aborted_transactions->push_back(t);
    }
  }
  d.preferred_read_replica = o.preferred_read_replica;
  if (o.diverged && pf.version >= 12) {
    d.diverging_epoch.epoch = o.diverging_epoch;
    d.diverging_epoch.end_offset = o.diverging_end_offset;
  }
  if (!o.converted.empty()) {
    d.records = protocol::Records(std::span<const uint8_t>(o.converted));
  } else if (o.read.bytes > 0) {
    d.records = protocol::Records::external(&o.read, o.read.bytes);
  }
  return d;
}

// consumer_byte_rate (quotas/client_quotas.h): the records a consumer's
// fetch would carry count against its client's quota; over it, or over its
// request_percentage quota, the fetch is answered with the throttle time
// and no partitions (the bytes are taken back, the fetch session is left as
// the request made it, no new session is made), and the connection reads
// nothing more for that long, as Kafka's throttled fetch. True when it
// answered so.
bool fetch_throttled(PendingFetch& pf) {
  auto& q = pf.ctx.broker->client_quotas();
  if (!q.enabled()) return false;
  uint64_t bytes = 0;
  for (const PartitionOutcome& o : pf.outcomes) bytes += o.converted.empty() ? o.read.bytes : o.converted.size();
  const std::string client = pf.ctx.header.client_id.value_or("");
  const int64_t now = quotas::steady_ms();
  // request_percentage first (counted once: make_response below skips it).
  const int64_t request_throttle = request_quota_throttle(pf.ctx);
  pf.ctx.quota_exempt = true;
  const int64_t throttle =
      std::max(request_throttle, q.record(quotas::Kind::kFetch, client, static_cast<double>(bytes), now));
  if (throttle <= 0) return false;
  q.unrecord(quotas::Kind::kFetch, client, static_cast<double>(bytes), now);
  FetchResponse resp;
  resp.throttle_time_ms = static_cast<int32_t>(throttle);
  resp.session_id = pf.mode == SessionMode::kIncremental ? pf.session_id : 0;
  Response r = make_response(pf.ctx, resp);
  r.throttle_ms = throttle;
  pf.ctx.respond(std::move(r));
  return true;
}

void respond(const std::shared_ptr<PendingFetch>& pfp) {
  PendingFetch& pf = *pfp;
  Broker& broker = *pf.ctx.broker;
  FetchMetrics& metrics = broker.service<FetchMetrics>();
  const int8_t magic = fetch::legacy_magic_for_fetch(pf.version);
  if (magic >= 0 && !IoPool::on_pool_thread() &&
      std::any_of(pf.outcomes.begin(), pf.outcomes.end(), [](const PartitionOutcome& o) { return o.read.bytes > 0; })) {
    // Down-conversion reads the records from disk into memory and converts
    // them (decompressing and compressing again): on the I/O pool, never on
    // the network thread. Nothing pipelined behind an old fetch depends on
    // it (no fetch session before v7), so later requests are not held.
    if (!broker.service<IoPool>().post([pfp] { respond(pfp); })) pf.ctx.respond(Response::close());
    return;
  }
  if (pf.cold && IoPool::on_pool_thread()) {
    // Read on the I/O pool: bring in what the read's own header scans did
    // not, so that the sendfile on the network thread finds every page (a
    // down-conversion below reads them here anyway).
    uint64_t bytes = 0;
    for (PartitionOutcome& o : pf.outcomes) {
      if (magic < 0 && o.read.bytes > 0 && storage::read_is_cold(o.read) && !storage::warm_read(o.read).is_ok()) {
        o = fetch::error_outcome(ErrorCode::KAFKA_STORAGE_ERROR, o.topic, o.topic_exists);
      }
      bytes += o.read.bytes;
    }
    metrics.cold_bytes(bytes);
  }
  if (magic >= 0) {
    // Converted message sets can be larger than the batches they come from
    // (a legacy message per record): once they pass the response's budget,
    // later partitions answer without records (the client fetches them
    // again), so the bytes held in memory stay near fetch.max.bytes.
    int64_t converted = 0;
    for (PartitionOutcome& o : pf.outcomes) {
      if (o.read.bytes == 0) continue;
      if (converted >= pf.opts.max_bytes) {
        o.read = storage::ReadResult{};
        continue;
      }
      // A batch decompresses to at most what its topic's produce allowed.
      size_t limit = produce::decompress_limit(produce::TopicSettings{}.max_message_bytes);
      if (auto t = o.topic_exists ? broker.topics().find(o.topic) : nullptr)
        limit = produce::decompress_limit(produce::topic_settings(broker.topics(), *t).max_message_bytes);
      ErrorCode e = fetch::down_convert(o.read, magic, limit, &o.converted);
      if (e != ErrorCode::NONE) {
        o = fetch::error_outcome(e, o.topic, o.topic_exists);
        continue;
      }
      converted += static_cast<int64_t>(o.converted.size());
    }
  }

  if (!pf.opts.from_replica && fetch_throttled(pf)) return;

  std::vector<fetch::PartitionSummary> summaries;
  summaries.reserve(pf.outcomes.size());
  for (const PartitionOutcome& o : pf.outcomes)
    summaries.push_back({o.read.bytes > 0, o.error != ErrorCode::NONE, o.high_watermark, o.log_start_offset,
                         o.diverged || o.preferred_read_replica >= 0});

  std::vector<bool> include(pf.plan.size(), true);
  FetchResponse resp;
  auto& sessions = broker.service<fetch::FetchSessionCache>();
  if (pf.mode == SessionMode::kIncremental) {
    include = sessions.finish_incremental(pf.session_id, pf.plan, summaries);
    resp.session_id = pf.session_id;
  } else if (pf.mode == SessionMode::kNewSession) {
    std::vector<FetchPartitionState> parts = pf.plan;
    for (size_t i = 0; i < parts.size(); ++i) {
      parts[i].sent_high_watermark = summaries[i].error ? -1 : summaries[i].high_watermark;
      parts[i].sent_log_start_offset = summaries[i].log_start_offset;
    }
    resp.session_id = sessions.create(pf.opts.by_topic_id, std::move(parts));
  }

  int16_t first_error = 0;
  for (size_t i = 0; i < pf.plan.size(); ++i) {
    const FetchPartitionState& s = pf.plan[i];
    const PartitionOutcome& o = pf.outcomes[i];
    // Per-topic series only for topics that exist (an unknown name counts
    // in the all-topics aggregate alone, whatever error it got: in a cluster
    // an unknown name may be answered NOT_LEADER_OR_FOLLOWER).
    if (!o.topic_exists || o.error == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION ||
        o.error == ErrorCode::UNKNOWN_TOPIC_ID || o.topic.empty()) {
      broker.metrics().all_topics().fetch_request();
      if (o.error != ErrorCode::NONE) broker.metrics().all_topics().failed_fetch();
    } else {
      metrics::TopicMetrics m = metrics.topic(o.topic);
      m.fetch_request();
      if (o.error != ErrorCode::NONE) m.failed_fetch();
      const uint64_t n = o.converted.empty() ? o.read.bytes : o.converted.size();
      if (n > 0 && pf.opts.from_replica) m.add_replication_bytes_out(n);
      else if (n > 0) m.add_bytes_out(n);
    }
    if (o.error != ErrorCode::NONE && first_error == 0) first_error = protocol::to_wire(o.error);
    if (!include[i]) continue;
    const bool same_topic = !resp.responses.empty() && (pf.opts.by_topic_id ? resp.responses.back().topic_id == s.topic_id
                                                                           : resp.responses.back().topic == s.topic);
    if (!same_topic) {
      FetchResponse::FetchableTopicResponse t;
      if (pf.opts.by_topic_id) {
        t.topic_id = s.topic_id;
      } else {
        t.topic = s.topic;
      }
      resp.responses.push_back(std::move(t));
    }
    resp.responses.back().partitions.push_back(partition_data(pf, s, o));
  }
  // make_response copies the slice handles out of pf.outcomes' ReadResults,
  // which live until this function returns.
  pf.ctx.respond(make_response(pf.ctx, resp, first_error));
}

void respond_session_error(RequestContext& ctx, ErrorCode e) {
  FetchResponse resp;
  resp.error_code = protocol::to_wire(e);
  resp.session_id = 0;
  ctx.respond(make_response(ctx, resp, resp.error_code));
}

FetchPartitionState requested_state(const FetchRequest::FetchTopic& t, const FetchRequest::FetchPartition& p) {
  FetchPartitionState s;
  s.topic = t.topic;
  s.topic_id = t.topic_id;
  s.partition = p.partition;
  s.fetch_offset = p.fetch_offset;
  s.max_bytes = p.partition_max_bytes;
  s.current_leader_epoch = p.current_leader_epoch;
  s.client_log_start_offset = p.log_start_offset;
  s.last_fetched_epoch = p.last_fetched_epoch;
  return s;
}

bool answer_now(const PendingFetch& pf, const fetch::ReadTotals& totals, int32_t max_wait_ms);
void answer_or_wait(const std::shared_ptr<PendingFetch>& pf, const fetch::ReadTotals& totals,
                    int32_t max_wait_ms);

void handle_fetch(RequestContext&& ctx) {
  FetchRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  auto pf = std::make_shared<PendingFetch>();
  pf->version = ctx.api_version();
  pf->min_bytes = req.min_bytes;
  pf->opts.by_topic_id = pf->version >= 13;
  pf->replica_id = pf->version >= 15 ? req.replica_state.replica_id : req.replica_id;
  pf->opts.from_replica = pf->replica_id >= 0;
  pf->opts.read_committed = pf->version >= 4 && req.isolation_level == 1;
  Broker& broker = *ctx.broker;
  // fetch.max.bytes caps the request's limit (v3+) and is the only one of
  // v0-v2, whose down-converted records are built in memory (Kafka caps
  // both the same way).
  pf->opts.response_limit = pf->version >= 3;
  const int64_t broker_max = broker.config().get_int("fetch.max.bytes");
  pf->opts.max_bytes = pf->opts.response_limit ? std::min<int64_t>(req.max_bytes, broker_max) : broker_max;
  if (!pf->opts.from_replica) {
    // A consumer quota caps what one fetch asks for at what one window
    // allows (Kafka's getMaxValueInQuotaWindow), min_bytes with it.
    if (auto& q = broker.client_quotas(); q.enabled()) {
      const int64_t window = q.max_value_in_window(quotas::Kind::kFetch, ctx.header.client_id.value_or(""));
      if (window >= 0) {
        pf->opts.max_bytes = std::min<int64_t>(pf->opts.max_bytes, window);
        if (window < pf->min_bytes) pf->min_bytes = static_cast<int32_t>(window);
      }
    }
  }
  ctx.quota_exempt = pf->opts.from_replica;  // followers: not a client's request time
  if (pf->opts.from_replica) pf->opts.leaders = &broker.service<replica::LeaderReplicas>();
  else pf->opts.producers = &broker.service<produce::ProduceService>();
  if (!pf->opts.from_replica && pf->version >= 11) {  // KIP-392 client metadata
    pf->opts.client_metadata = true;
    const auto& selector = broker.service<fetch::ReadReplicaSelector>();
    if (selector.enabled() && !req.rack_id.empty()) {
      pf->opts.selector = &selector;
      pf->opts.client_rack = req.rack_id;
      pf->opts.listener = ctx.listener;
    }
  }

  std::vector<FetchPartitionState> requested;
  for (const auto& t : req.topics)
    for (const auto& p : t.partitions) requested.push_back(requested_state(t, p));
  if (pf->opts.by_topic_id) {  // names for waiting-room keys and metrics
    for (auto& s : requested)
      if (auto topic = broker.topics().find(s.topic_id)) s.topic = topic->name;
  }

  auto& sessions = broker.service<fetch::FetchSessionCache>();
  const bool full = pf->version < 7 || req.session_epoch == -1 || req.session_epoch == 0;
  if (full) {
    if (pf->version >= 7 && req.session_id != 0) sessions.remove(req.session_id);
    pf->mode = pf->version >= 7 && req.session_epoch == 0 ? SessionMode::kNewSession : SessionMode::kSessionless;
    pf->plan = std::move(requested);
  } else {
    std::vector<FetchPartitionState> forgotten;
    for (const auto& f : req.forgotten_topics_data) {
      for (int32_t p : f.partitions) {
        FetchPartitionState s;
        s.topic = f.topic;
        s.topic_id = f.topic_id;
        s.partition = p;
        forgotten.push_back(std::move(s));
      }
    }
    ErrorCode e = sessions.begin_incremental(req.session_id, req.session_epoch, pf->opts.by_topic_id, requested,
                                             forgotten, &pf->plan);
    if (e != ErrorCode::NONE) {
      respond_session_error(ctx, e);
      return;
    }
    pf->mode = SessionMode::kIncremental;
    pf->session_id = req.session_id;
  }
  pf->ctx = std::move(ctx);

  pf->opts.defer_cold = true;
  fetch::ReadTotals totals = read_all(*pf);
  pf->opts.defer_cold = false;
  if (totals.cold) {
    // A partition's read would wait for the disk: the whole fetch is read
    // on the I/O pool, which answers or parks it as below. Later requests
    // are not held: a client sends a session's next fetch only once it has
    // this one's answer.
    pf->cold = true;
    broker.service<FetchMetrics>().cold_fetch();
    const int32_t max_wait_ms = req.max_wait_ms;
    const bool posted = broker.service<IoPool>().post([pf, max_wait_ms] {
      const fetch::ReadTotals t = read_all(*pf);
      if (answer_now(*pf, t, max_wait_ms)) {
        respond(pf);
        return;
      }
      // The waiting room parks a fetch on its connection's thread.
      asio::post(pf->ctx.executor, [pf, t, max_wait_ms] { answer_or_wait(pf, t, max_wait_ms); });
    });
    if (!posted) pf->ctx.respond(Response::close());
    return;
  }
  answer_or_wait(pf, totals, req.max_wait_ms);
}

bool answer_now(const PendingFetch& pf, const fetch::ReadTotals& totals, int32_t max_wait_ms) {
  return max_wait_ms <= 0 || pf.plan.empty() || totals.bytes >= static_cast<uint64_t>(std::max(pf.min_bytes, 0)) ||
         totals.answer_now;
}

// Answers a fetch that has been read, or parks it in the waiting room until
// min_bytes are there or max_wait_ms is up; on the connection's thread.
// Later reads of a parked fetch run there too (what they wait for was just
// appended, so it is in the page cache).
void answer_or_wait(const std::shared_ptr<PendingFetch>& pf, const fetch::ReadTotals& totals,
                    int32_t max_wait_ms) {
  Broker& broker = *pf->ctx.broker;
  if (answer_now(*pf, totals, max_wait_ms)) {
    respond(pf);
    return;
  }

  auto w = std::make_shared<fetch::FetchWaitingRoom::Waiter>();
  w->executor = pf->ctx.executor;
  w->attempt = [pf](bool force) {
    fetch::ReadTotals t = read_all(*pf);
    if (!force && t.bytes < static_cast<uint64_t>(std::max(pf->min_bytes, 0)) && !t.answer_now) return false;
    respond(pf);
    return true;
  };
  std::vector<std::pair<std::string, int32_t>> keys;
  for (const FetchPartitionState& s : pf->plan) keys.emplace_back(s.topic, s.partition);
  if (!broker.service<fetch::FetchWaitingRoom>().park(w, std::move(keys), std::chrono::milliseconds(max_wait_ms))) {
    respond(pf);
  }
}

}  // namespace

CK_REGISTER_HANDLER(protocol::FetchRequest, 0, 17, handle_fetch);

}  // namespace ciuickafka::broker
