// broker/handlers/produce.cc: Produce (key 0), versions 0-11.
//
// Per partition: find it (UNKNOWN_TOPIC_OR_PARTITION; internal topics are
// INVALID_TOPIC_EXCEPTION, as Kafka answers clients), prepare the records
// (produce/prepare.h: validation, v0/v1 conversion, recompression,
// LogAppendTime), check idempotent batches against the producer state and
// append, the check and the append being one step under the partition's
// producer-state lock (produce/produce_service.h). A retried batch that is
// one of the producer's last 5 is answered with its original offsets and
// not written again.
//
// Transactional batches (Produce v3+ with a transactional id): the
// producer's first batch on a partition in a transaction is verified with
// the transaction coordinator (the partition must have been added with
// AddPartitionsToTxn: KIP-890 part 1), else INVALID_TXN_STATE
// (TRANSACTION_ABORTABLE from v11); a fenced epoch INVALID_PRODUCER_EPOCH; a
// non-transactional batch from a producer with an open transaction
// INVALID_TXN_STATE. Nothing is written for a refused batch. The
// coordinator is asked in-process when it is this broker; in cluster mode
// with the coordinator elsewhere, the request first asks it with one
// AddPartitionsToTxn v4 verify-only request for every partition that needs
// it (ask_remote_verification: the connection's later requests wait), then
// is handled with the answers on its network thread.
//
// A request that compresses records anew (produce/prepare.h
// compresses_anew: a topic's compression.type, or a compressed v0/v1
// message set), or that holds kValidateOnPoolBytes (64 KiB) or more of
// compressed batches decompressed only to validate their records, is
// handled on the I/O pool (server/io_pool.h). Its connection's later
// requests are held until its records have offsets (the writes there are
// blocking ones; RequestContext::release_later_requests), so none is
// appended before it, and no longer: its acks wait does not hold them.
//
// The writes go through the network thread's io_uring (server/disk_ring.h,
// storage::Log::append_async): every partition's write is queued, the ring
// is flushed once for the whole request, and the request waits (holding no
// thread) in a small shared object until the last write completes; a
// completion may arrive on another network thread when that one's
// completion published it. Offsets are assigned when a write is queued, so
// the idempotent producer table records a batch then; a write that fails
// later drops the table (it reloads from the log) and answers
// KAFKA_STORAGE_ERROR.
//
// acks: 0 answers nothing (but closes the connection when a partition
// failed, as Kafka does, so the client notices); 1 answers once the writes
// completed; -1 with ciuic.acks.all.fsync then also waits for the
// group-commit fsync of every partition written (produce/acks_all_wait.h),
// or answers like acks=1, as a single-node Kafka does, when the option is
// off. Any other acks value: INVALID_REQUIRED_ACKS everywhere.
//
// acks=-1 on a replicated leader (Partition::hw_follows_leo() false: other
// replicas exist; broker/replica/leader_replicas.h): before the append,
// NOT_ENOUGH_REPLICAS when the ISR is below min.insync.replicas; after it,
// the request waits (no thread does) for the leader's own fsync when
// ciuic.acks.all.fsync is on, then until the HW reaches each partition's
// last offset + 1 (NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank
// below min ISR meanwhile), leadership is lost (NOT_LEADER_OR_FOLLOWER) or
// timeout_ms passes (REQUEST_TIMED_OUT), as Kafka's delayed produce does.
// Followers fsync what they fetched before reporting it (their next fetch
// offset), so with the option on an acknowledged record is on the disk of
// every ISR member. Single-node partitions are unchanged.
//
// A client over its producer_byte_rate quota (quotas/client_quotas.h) gets
// its answer at once with throttle_time_ms set, and its connection reads no
// further request for that long (acks=0 too, with no answer); over its
// request_percentage quota likewise (the larger throttle; acks=0 is exempt
// from that one, as in Kafka).
//
// Every refused partition is logged at WARN when the answer goes out
// (partition, Kafka's error name, client id and peer), rate-limited to 5
// lines per client, topic and error in 10 s (metrics/log/rate_limit.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <vector>

#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/produce/acks_all_wait.h"
#include "broker/produce/prepare.h"
#include "broker/produce/produce_service.h"
#include "broker/produce/topic_settings.h"
#include "broker/quotas/client_quotas.h"
#include "broker/replica/leader_replicas.h"
#include "broker/server/disk_ring.h"
#include "broker/server/io_pool.h"
#include "broker/txn/coordinator.h"
#include "metrics/log/log.h"
#include "metrics/log/rate_limit.h"
#include "protocol/error_code.h"
#include "protocol/generated/produce.h"
#include "protocol/records/record_batch.h"

namespace ciuickafka::broker {
namespace {

using protocol::ErrorCode;
using protocol::ProduceRequest;
using protocol::ProduceResponse;
using PartitionResponse = ProduceResponse::PartitionProduceResponse;

void set_error(PartitionResponse& pr, ErrorCode code, std::string message = {}) {
  pr.error_code = protocol::to_wire(code);
  pr.base_offset = -1;
  pr.log_append_time_ms = -1;
  pr.log_start_offset = -1;
  if (!message.empty()) pr.error_message = std::move(message);
}

ErrorCode storage_error(const storage::Status& s) {
  switch (s.code()) {
    case storage::StatusCode::kCorruptRecords: return ErrorCode::CORRUPT_MESSAGE;
    case storage::StatusCode::kFenced: return ErrorCode::NOT_LEADER_OR_FOLLOWER;  // leadership moved meanwhile
    default: return ErrorCode::KAFKA_STORAGE_ERROR;
  }
}

void succeed(PartitionResponse& pr, const Partition& p, int64_t base_offset,
             int64_t log_append_time) {
  pr.error_code = 0;
  pr.base_offset = base_offset;
  pr.log_append_time_ms = log_append_time;
  pr.log_start_offset = p.log_start_offset();
}

int16_t first_error(const ProduceResponse& resp) {
  for (const auto& t : resp.responses)
    for (const auto& p : t.partition_responses)
      if (p.error_code != 0) return p.error_code;
  return 0;
}

// KIP-890 with the id's coordinator on another broker (cluster mode): the
// answers of its AddPartitionsToTxn v4 verify-only request, asked before
// the request is handled (ask_remote_verification), and for each partition
// asked the guard put in its producer state then: a marker for the producer
// meanwhile removes it, so a verification that an ended transaction
// answered never opens the next one (Kafka's VerificationGuard).
struct RemoteVerification {
  std::map<txn::TxnPartition, ErrorCode> results;
  std::map<txn::TxnPartition, uint64_t> guards;
};

// Kafka's mapping of a verification's answer for Produce: fenced ->
// INVALID_PRODUCER_EPOCH; a pending transition or a coordinator that cannot
// answer -> NOT_ENOUGH_REPLICAS (retriable); anything else ->
// TRANSACTION_ABORTABLE (v11+) or INVALID_TXN_STATE.
ErrorCode produce_error_of_verification(ErrorCode e, int16_t version) {
  switch (e) {
    case ErrorCode::NONE:
      return ErrorCode::NONE;
    case ErrorCode::PRODUCER_FENCED:
    case ErrorCode::INVALID_PRODUCER_EPOCH:
      return ErrorCode::INVALID_PRODUCER_EPOCH;
    case ErrorCode::CONCURRENT_TRANSACTIONS:
    case ErrorCode::COORDINATOR_LOAD_IN_PROGRESS:
    case ErrorCode::COORDINATOR_NOT_AVAILABLE:
    case ErrorCode::NOT_COORDINATOR:
    case ErrorCode::NETWORK_EXCEPTION:
    case ErrorCode::REQUEST_TIMED_OUT:
      return ErrorCode::NOT_ENOUGH_REPLICAS;
    default:
      return version >= 11 ? ErrorCode::TRANSACTION_ABORTABLE : ErrorCode::INVALID_TXN_STATE;
  }
}

// A transactional batch that would open a transaction on p: the
// coordinator must have p in the producer's ongoing transaction (Kafka 3.9's
// transaction.partition.verification): asked in-process when the
// coordinator is this broker, else answered by the remote verification made
// before (remote). st.mu is held.
ErrorCode verify_transactional_write(Broker& broker, const std::optional<std::string>& transactional_id,
                                     const produce::IncomingBatch& b, const Partition& p, int16_t version,
                                     const RemoteVerification* remote, produce::PartitionState& st) {
  const ErrorCode not_in_txn = version >= 11 ? ErrorCode::TRANSACTION_ABORTABLE : ErrorCode::INVALID_TXN_STATE;
  if (!broker.config().get_bool("transaction.partition.verification.enable")) return ErrorCode::NONE;
  if (!transactional_id || transactional_id->empty()) return not_in_txn;
  auto& coordinator = txn::coordinator(broker);
  if (coordinator.verifies(*transactional_id))
    return produce_error_of_verification(
        coordinator.verify_partition(*transactional_id, b.producer_id, b.epoch, p.topic(), p.index()), version);
  // The coordinator is elsewhere: only a verification asked for this
  // partition, whose guard is still in place, lets the batch open it.
  const txn::TxnPartition tp{p.topic(), p.index()};
  if (remote == nullptr || !remote->results.contains(tp)) return not_in_txn;
  const ErrorCode e = produce_error_of_verification(remote->results.at(tp), version);
  if (e != ErrorCode::NONE) return e;
  auto g = st.verify_guards.find(b.producer_id);
  if (g == st.verify_guards.end() || !remote->guards.contains(tp) || g->second != remote->guards.at(tp))
    return not_in_txn;
  return ErrorCode::NONE;
}

// One partition's write in flight.
struct Write {
  size_t topic = 0, partition = 0;  // where its answer goes in the response
  std::shared_ptr<Partition> target;
  std::shared_ptr<produce::PartitionState> state;
  std::vector<uint8_t> buffer;      // the batches being written, when copied: alive until done
  std::span<uint8_t> bytes;         // what is written: buffer, or the request's frame (pp->ctx keeps it)
  bool idempotent = false;
  int64_t base_offset = -1, end_offset = -1, log_append_time = -1;
  storage::Status status;           // set by the completion, before it counts down
};

// A produce request until its last write completes. `outstanding` counts the
// writes in flight plus one for the handler itself, so completions that run
// before the handler has queued everything cannot finish it early.
struct PendingProduce {
  RequestContext ctx;
  ProduceResponse resp;
  int16_t acks = 1;
  int32_t timeout_ms = 0;
  bool fsync = true;
  produce::ProduceService* svc = nullptr;
  Broker* broker = nullptr;
  std::optional<std::string> transactional_id;
  std::shared_ptr<const RemoteVerification> verification;  // cluster mode, coordinator elsewhere
  std::vector<Write> writes;  // sized before any write is queued: never reallocated
  // Idempotent retries answered from the producer table: no write, but
  // acks=all still waits for their fsync (or, replicated, their HW).
  // (topic, partition, target, partition).
  std::vector<std::tuple<size_t, size_t, produce::DurableTarget, std::shared_ptr<Partition>>> duplicates;
  std::atomic<size_t> outstanding{1};
};

void finish(const std::shared_ptr<PendingProduce>& pp);

void count_down(const std::shared_ptr<PendingProduce>& pp) {
  if (pp->outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1) finish(pp);
}

// Prepares and queues one partition's records; fills pr now unless a write
// was queued (finish() answers it then).
void produce_partition(const std::shared_ptr<PendingProduce>& pp, Partition& p,
                       const std::shared_ptr<Partition>& owner, const produce::TopicSettings& settings,
                       const protocol::Records& records, std::span<uint8_t> writable, int16_t version, int64_t now,
                       PartitionResponse& pr, size_t topic_index, size_t partition_index,
                       std::vector<produce::DurableTarget>& ready) {
  produce::ProduceService& svc = *pp->svc;
  auto st = svc.partition_state(p);
  st->topic_metrics.produce_request();  // per partition part, as Kafka's totalProduceRequestRate
  produce::PreparedRecords prep = produce::prepare_records(records.bytes, version, settings, now, writable);
  if (!prep.ok()) {
    set_error(pr, prep.error, prep.message);
    // Kafka answers a batch its validator refused with the log start offset.
    if (prep.validator_error) pr.log_start_offset = p.log_start_offset();
    for (auto& e : prep.record_errors) {
      ProduceResponse::BatchIndexAndErrorMessage m;
      m.batch_index = e.batch_index;
      m.batch_index_error_message = std::move(e.message);
      pr.record_errors.push_back(std::move(m));
    }
    st->topic_metrics.failed_produce();
    return;
  }
  if (prep.batches.empty()) {  // an empty message set (Produce v0-v2): nothing to write
    pr.base_offset = -1;
    pr.log_start_offset = p.log_start_offset();
    return;
  }
  size_t idempotent = 0;
  for (const auto& b : prep.batches) idempotent += b.producer_id >= 0 ? 1 : 0;
  if (idempotent > 0 && prep.batches.size() != 1) {
    set_error(pr, ErrorCode::INVALID_RECORD, "Idempotent batches must be sent one per partition (Produce v3+)");
    st->topic_metrics.failed_produce();
    return;
  }

  if (pp->acks == -1 && !p.hw_follows_leo()) {  // a replicated leader: enough ISR?
    const ErrorCode e = pp->broker->service<replica::LeaderReplicas>().acks_all_check_before_append(p);
    if (e != ErrorCode::NONE) {
      set_error(pr, e);
      st->topic_metrics.failed_produce();
      return;
    }
  }
  std::unique_lock<std::mutex> lock(st->mu, std::defer_lock);
  produce::IncomingBatch incoming;
  if (idempotent > 0) {
    const produce::PreparedBatch& b = prep.batches.front();
    incoming.producer_id = b.producer_id;
    incoming.epoch = b.producer_epoch;
    incoming.base_seq = b.base_sequence;
    incoming.last_offset_delta = b.last_offset_delta;
    incoming.max_timestamp = b.max_timestamp;
    incoming.transactional = b.transactional;
    lock.lock();
    if (!svc.ensure_loaded(*st, p.log())) {
      // Retriable: the client resends the batch with the same sequence.
      set_error(pr, ErrorCode::NOT_LEADER_OR_FOLLOWER,
                "Producer state is loading: writes of an earlier leadership are still in flight");
      st->topic_metrics.failed_produce();
      return;
    }
    const produce::SeqCheck check = st->table.check(incoming);
    switch (check.verdict) {
      case produce::SeqVerdict::kDuplicate:
        succeed(pr, p, check.duplicate.first_offset, settings.log_append_time ? check.duplicate.timestamp : -1);
        ready.push_back(produce::DurableTarget{p.log_ptr(), check.duplicate.last_offset + 1});
        return;
      case produce::SeqVerdict::kInvalidEpoch:
        set_error(pr, ErrorCode::INVALID_PRODUCER_EPOCH, check.message);
        st->topic_metrics.failed_produce();
        return;
      case produce::SeqVerdict::kOutOfOrder:
        set_error(pr, ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER, check.message);
        st->topic_metrics.failed_produce();
        return;
      case produce::SeqVerdict::kAppend:
        break;
    }
    if (std::string message; !st->table.check_txn(incoming, &message)) {
      set_error(pr, ErrorCode::INVALID_TXN_STATE, message);
      st->topic_metrics.failed_produce();
      return;
    }
    if (incoming.transactional) {
      const produce::ProducerEntry* e = st->table.find(incoming.producer_id);
      const bool open = e != nullptr && e->txn_first_offset >= 0 && e->epoch == incoming.epoch;
      if (!open) {  // the producer's first write here in this transaction: verified (KIP-890)
        const ErrorCode v = verify_transactional_write(*pp->broker, pp->transactional_id, incoming, p, version,
                                                       pp->verification.get(), *st);
        if (v != ErrorCode::NONE) {
          set_error(pr, v);
          st->topic_metrics.failed_produce();
          return;
        }
      }
      st->verify_guards.erase(incoming.producer_id);  // used (or, with the transaction open, not needed)
      st->txn_free.store(false, std::memory_order_release);  // before the batch can be read
    }
  }
  const size_t slot = pp->writes.size();
  Write& w = pp->writes.emplace_back();
  w.topic = topic_index;
  w.partition = partition_index;
  w.target = owner;
  w.state = st;
  w.buffer = std::move(prep.buffer);
  w.bytes = prep.in_place.empty() ? std::span<uint8_t>(w.buffer) : prep.in_place;
  w.idempotent = idempotent > 0;
  w.log_append_time = prep.log_append_time;
  pp->outstanding.fetch_add(1, std::memory_order_relaxed);
  auto appended = p.append_async(
      w.bytes, now, DiskRing::current(),
      [pp, slot](storage::Status s) {
        pp->writes[slot].status = std::move(s);
        count_down(pp);
      },
      /*validated=*/true);
  if (!appended.is_ok()) {
    pp->outstanding.fetch_sub(1, std::memory_order_relaxed);  // never queued: no callback
    pp->writes.pop_back();
    set_error(pr, storage_error(appended.status()), appended.status().message());
    st->topic_metrics.failed_produce();
    return;
  }
  const storage::AppendResult& r = appended.value();
  w.base_offset = r.base_offset;
  w.end_offset = r.last_offset + 1;
  if (idempotent > 0) {
    st->table.record(incoming, r.base_offset, r.last_offset, now);
    svc.after_append(st, now);
    lock.unlock();
  }
  st->topic_metrics.add_bytes_in(records.size());
  st->topic_metrics.add_messages_in(prep.record_count);
}

// Rejected partitions, for the operator: one WARN line per client, topic
// and error, at most 5 per 10 s for each (the next line that passes says how
// many were suppressed), so a misbehaving client cannot flood the log.
void log_rejections(const RequestContext& ctx, const ProduceResponse& resp, int16_t acks) {
  namespace lg = metrics::log;
  if (!lg::enabled(lg::Level::kWarn)) return;
  static lg::RateLimiter limiter(5, std::chrono::seconds(10));
  const std::string client = ctx.header.client_id.value_or("");
  for (const auto& t : resp.responses) {
    for (const auto& p : t.partition_responses) {
      if (p.error_code == 0) continue;
      const std::string_view error = protocol::error_name(static_cast<ErrorCode>(p.error_code));
      const lg::RateLimiter::Admission a = limiter.admit(client + '\n' + t.name + '\n' + std::string(error));
      if (!a.admitted) continue;
      std::string msg = "produce rejected: " + t.name + "-" + std::to_string(p.index) + ": " + std::string(error);
      if (p.error_message && !p.error_message->empty()) msg += " (" + *p.error_message + ")";
      msg += lg::suppressed_note(a.suppressed);
      lg::write(lg::Level::kWarn, "produce", msg,
                {{"client_id", client},
                 {"peer", ctx.peer},
                 {"topic", t.name},
                 {"partition", p.index},
                 {"error", error},
                 {"acks", acks},
                 {"suppressed", a.suppressed}});
    }
  }
}

// Every write completed (on whichever thread saw the last one): answer, or
// wait for the fsync first.
// producer_byte_rate (quotas/client_quotas.h): the request's size counts
// against its client's quota when it is answered (as Kafka records it);
// over the quota, the response says for how long the client is throttled
// and the connection reads nothing more meanwhile.
int64_t produce_throttle(const RequestContext& ctx) {
  auto& q = ctx.broker->client_quotas();
  if (!q.enabled()) return 0;
  const double size = static_cast<double>(ctx.frame ? ctx.frame->size() : ctx.body.size());
  return q.record(quotas::Kind::kProduce, ctx.header.client_id.value_or(""), size, quotas::steady_ms());
}

void respond_produce(const std::shared_ptr<PendingProduce>& pp) {
  const int64_t throttle = produce_throttle(pp->ctx);
  pp->resp.throttle_time_ms = static_cast<int32_t>(throttle);
  Response r = make_response(pp->ctx, pp->resp, first_error(pp->resp));  // (request_percentage: the larger)
  r.throttle_ms = std::max(r.throttle_ms, throttle);
  pp->ctx.respond(std::move(r));
}

void finish(const std::shared_ptr<PendingProduce>& pp) {
  std::vector<std::pair<size_t, size_t>> slots;  // (topic, partition) of each durable target
  std::vector<produce::DurableTarget> targets;
  std::vector<std::pair<size_t, size_t>> replica_slots;  // the same for each replicated target
  std::vector<replica::ReplicationTarget> replica_targets;
  auto add_target = [&](size_t t, size_t p, const std::shared_ptr<Partition>& partition,
                        produce::DurableTarget target) {
    if (pp->acks == -1 && partition && !partition->hw_follows_leo()) {
      replica_slots.emplace_back(t, p);
      replica_targets.push_back(replica::ReplicationTarget{partition, target.end_offset});
      // With ciuic.acks.all.fsync the leader's own copy is synced too (the
      // followers sync theirs before they report it: fetcher_manager.cc).
      if (!pp->fsync) return;
    }
    slots.emplace_back(t, p);
    targets.push_back(std::move(target));
  };
  for (Write& w : pp->writes) {
    PartitionResponse& pr = pp->resp.responses[w.topic].partition_responses[w.partition];
    if (!w.status.is_ok()) {
      set_error(pr, storage_error(w.status), w.status.message());
      w.state->topic_metrics.failed_produce();
      if (w.idempotent) {
        std::lock_guard<std::mutex> lock(w.state->mu);
        pp->svc->forget_after_failed_write(*w.state, w.target->log());
      }
      continue;
    }
    succeed(pr, *w.target, w.base_offset, w.log_append_time);
    add_target(w.topic, w.partition, w.target, produce::DurableTarget{w.target->log_ptr(), w.end_offset});
  }
  // Idempotent duplicates answered at once still wait for their fsync.
  for (const auto& [t, p, target, partition] : pp->duplicates) add_target(t, p, partition, target);
  pp->writes.clear();  // the buffers are written: let them go
  RequestContext& ctx = pp->ctx;
  if (pp->acks == 0) {
    log_rejections(ctx, pp->resp, pp->acks);
    if (first_error(pp->resp) != 0) {
      ctx.respond(Response::close());
      return;
    }
    Response none = Response::none();
    none.throttle_ms = produce_throttle(ctx);  // no answer, but the connection is still muted
    ctx.respond(std::move(none));
    return;
  }
  // Replicated partitions next (after any fsync wait): their HW, within
  // what is left of timeout_ms.
  const auto waits_from = std::chrono::steady_clock::now();
  auto then_replicas = [pp, waits_from, replica_slots = std::move(replica_slots),
                        replica_targets = std::move(replica_targets)]() mutable {
    if (replica_targets.empty()) {
      log_rejections(pp->ctx, pp->resp, pp->acks);
      respond_produce(pp);
      return;
    }
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - waits_from).count();
    const int32_t left = static_cast<int32_t>(std::max<int64_t>(0, int64_t{pp->timeout_ms} - waited));
    pp->ctx.broker->service<replica::LeaderReplicas>().wait_for_replication(
        std::move(replica_targets), left,
        [pp, replica_slots = std::move(replica_slots)](const std::vector<ErrorCode>& results) {
          for (size_t i = 0; i < results.size(); ++i) {
            if (results[i] == ErrorCode::NONE) continue;
            auto& pr = pp->resp.responses[replica_slots[i].first].partition_responses[replica_slots[i].second];
            set_error(pr, results[i]);
          }
          log_rejections(pp->ctx, pp->resp, pp->acks);
          respond_produce(pp);
        });
  };
  if (pp->acks == 1 || !pp->fsync || targets.empty()) {
    then_replicas();
    return;
  }
  produce::wait_for_durability(*ctx.broker, std::move(targets), pp->timeout_ms,
                               [pp, slots = std::move(slots), then_replicas = std::move(then_replicas)](
                                   const std::vector<ErrorCode>& results) mutable {
                                 for (size_t i = 0; i < results.size(); ++i) {
                                   if (results[i] == ErrorCode::NONE) continue;
                                   auto& pr = pp->resp.responses[slots[i].first].partition_responses[slots[i].second];
                                   pr.error_code = protocol::to_wire(results[i]);
                                 }
                                 then_replicas();
                               });
}

// Kafka keys a Produce request's parts by topic-partition
// (KafkaApis.handleProduceRequest collects them in a map): a partition named
// twice is appended once, with the records of its last mention, and answered
// once; a topic named twice answers as one topic, in first-mention order.
// Requests without repeats (all real clients) are left as they are.
void merge_repeated_partitions(ProduceRequest& req) {
  // The check allocates nothing for the usual few topics and partitions.
  constexpr size_t kScan = 32;
  const auto& tds = req.topic_data;
  bool repeated = false;
  if (tds.size() <= kScan) {
    for (size_t i = 0; i < tds.size() && !repeated; ++i)
      for (size_t j = 0; j < i && !repeated; ++j) repeated = tds[i].name == tds[j].name;
  } else {
    std::set<std::string_view> names;
    for (const auto& td : tds) repeated |= !names.insert(td.name).second;
  }
  for (size_t t = 0; t < tds.size() && !repeated; ++t) {
    const auto& pds = tds[t].partition_data;
    if (pds.size() <= kScan) {
      for (size_t i = 0; i < pds.size() && !repeated; ++i)
        for (size_t j = 0; j < i && !repeated; ++j) repeated = pds[i].index == pds[j].index;
    } else {
      std::set<int32_t> seen;
      for (const auto& pd : pds) repeated |= !seen.insert(pd.index).second;
    }
  }
  if (!repeated) return;
  std::vector<ProduceRequest::TopicProduceData> merged;
  std::map<std::string, size_t, std::less<>> topic_at;
  std::map<std::pair<size_t, int32_t>, size_t> partition_at;
  for (auto& td : req.topic_data) {
    auto [t, new_topic] = topic_at.try_emplace(td.name, merged.size());
    if (new_topic) {
      ProduceRequest::TopicProduceData& m = merged.emplace_back();
      m.name = td.name;
    }
    for (auto& pd : td.partition_data) {
      auto [p, new_partition] = partition_at.try_emplace({t->second, pd.index}, merged[t->second].partition_data.size());
      if (new_partition) {
        merged[t->second].partition_data.push_back(std::move(pd));
      } else {
        merged[t->second].partition_data[p->second] = std::move(pd);  // the last mention wins
      }
    }
  }
  req.topic_data = std::move(merged);
}

// Cluster mode with the transactional id's coordinator on another broker:
// the partitions led here whose batch would open the producer's transaction
// (transactional, and no transaction of that producer and epoch open here)
// are verified by the coordinator first, in one request; each gets a guard
// in its producer state now. True when the request goes on once the answer
// is in (produce_request then runs with it, on the connection's thread);
// false when nothing needs asking.
bool ask_remote_verification(RequestContext& ctx, ProduceRequest& req);

void produce_request(RequestContext&& ctx, ProduceRequest&& req, std::shared_ptr<const RemoteVerification> verification);

bool load_states_on_pool(RequestContext& ctx, ProduceRequest& req);

// Calls fn(topic data, partition data, partition, first batch) for each
// partition of req whose records start with a v2 batch that want(batch)
// accepts, of a topic that is not internal, that this broker leads: that
// header says whether the request carries producer ids (idempotent requests
// hold one batch per partition). The header is read first, so a request
// want() accepts nothing of (a plain producer's) costs no topic or
// partition look-up here.
template <class Want, class Fn>
void for_each_led_first_batch(Broker& broker, const ProduceRequest& req, Want&& want, Fn&& fn) {
  for (const auto& td : req.topic_data) {
    std::shared_ptr<const Topic> topic;
    bool looked_up = false;
    for (const auto& pd : td.partition_data) {
      protocol::BatchSplitter split(std::span<const uint8_t>(pd.records.bytes));
      protocol::RecordsEntry e;
      if (split.next(&e) != protocol::SplitStatus::kEntry) continue;
      auto b = protocol::RecordBatchView::parse(e.bytes);
      if (!b.ok() || !want(b.value())) continue;
      if (!looked_up) {
        topic = broker.topics().find(td.name);
        looked_up = true;
      }
      if (!topic || topic->is_internal()) break;
      std::shared_ptr<Partition> p = topic->partition(pd.index);
      if (ReplicaManager::leader_error(broker, p.get(), td.name, pd.index) != ErrorCode::NONE) continue;
      fn(td, pd, p, b.value());
    }
  }
}

void handle_produce(RequestContext&& ctx) {
  ProduceRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  merge_repeated_partitions(req);
  if (load_states_on_pool(ctx, req)) return;
  if (ask_remote_verification(ctx, req)) return;
  produce_request(std::move(ctx), std::move(req), nullptr);
}

// The first idempotent or transactional batch for a partition loads its
// producer state: the newest snapshot, then a scan of the log from there,
// or of the whole log where there is none (a partition only plain
// producers wrote so far, a role change, a crash that lost the snapshot).
// That scan must not hold a network thread and its other connections: the
// states are loaded on the I/O pool, then the request is handled as usual,
// back on its connection's thread. Later requests on the connection wait
// meanwhile (post_request), so a producer's batches keep their order.
// True when the request went to the pool.
bool load_states_on_pool(RequestContext& ctx, ProduceRequest& req) {
  if (IoPool::on_pool_thread() || (req.acks != 0 && req.acks != 1 && req.acks != -1)) return false;
  Broker& broker = *ctx.broker;
  auto& svc = broker.service<produce::ProduceService>();
  std::vector<std::shared_ptr<Partition>> unloaded;
  for_each_led_first_batch(
      broker, req, [](const protocol::RecordBatchView& b) { return b.producer_id() >= 0; },
      [&](const auto&, const auto&, std::shared_ptr<Partition>& p, const protocol::RecordBatchView&) {
        if (!svc.loaded_for_writes(*p)) unloaded.push_back(std::move(p));
      });
  if (unloaded.empty()) return false;
  auto shared = std::make_shared<ProduceRequest>(std::move(req));
  broker.service<IoPool>().post_request(ctx, [ctx, shared, unloaded = std::move(unloaded)]() mutable {
    // One that cannot load yet (writes of a dropped table in flight) is
    // answered retriably by produce_partition, as on the network thread.
    for (const auto& p : unloaded) (void)ctx.broker->service<produce::ProduceService>().load_for_writes(*p);
    asio::any_io_executor executor = ctx.executor;
    asio::post(executor, [ctx = std::move(ctx), shared]() mutable {
      if (ask_remote_verification(ctx, *shared)) return;
      produce_request(std::move(ctx), std::move(*shared), nullptr);
    });
  });
  return true;
}

bool ask_remote_verification(RequestContext& ctx, ProduceRequest& req) {
  Broker& broker = *ctx.broker;
  if (broker.cluster() == nullptr || !req.transactional_id || req.transactional_id->empty() ||
      ctx.api_version() < 3 || (req.acks != 0 && req.acks != 1 && req.acks != -1) ||
      !broker.config().get_bool("transaction.partition.verification.enable"))
    return false;
  auto& coordinator = txn::coordinator(broker);
  if (coordinator.verifies(*req.transactional_id)) return false;
  auto& svc = broker.service<produce::ProduceService>();
  auto v = std::make_shared<RemoteVerification>();
  std::vector<txn::TxnPartition> ask;
  int64_t pid = -1;
  int16_t epoch = -1;
  // (The request's full checks come later, in produce_partition.)
  auto transactional = [](const protocol::RecordBatchView& b) { return b.is_transactional() && b.producer_id() >= 0; };
  for_each_led_first_batch(broker, req, transactional, [&](const ProduceRequest::TopicProduceData& td,
                                                           const ProduceRequest::PartitionProduceData& pd,
                                                           std::shared_ptr<Partition>& p,
                                                           const protocol::RecordBatchView& b) {
    if (pid == -1) {
      pid = b.producer_id();
      epoch = b.producer_epoch();
    } else if (pid != b.producer_id() || epoch != b.producer_epoch()) {
      return;  // one producer per request: another is refused later, unverified
    }
    auto st = svc.partition_state(*p);
    std::lock_guard<std::mutex> lock(st->mu);
    if (!svc.ensure_loaded(*st, p->log())) return;  // answered retriably later
    const produce::ProducerEntry* entry = st->table.find(pid);
    if (entry != nullptr && entry->txn_first_offset >= 0 && entry->epoch == epoch) return;  // open here
    const uint64_t guard = svc.new_verification_guard();
    st->verify_guards[pid] = guard;
    const txn::TxnPartition tp{td.name, pd.index};
    v->guards[tp] = guard;
    ask.push_back(tp);
  });
  if (ask.empty()) return false;
  // Later requests on the connection wait for this one (the producer's
  // next batches must not overtake it).
  if (ctx.hold_later_requests) ctx.hold_later_requests();
  auto shared = std::make_shared<std::pair<RequestContext, ProduceRequest>>(std::move(ctx), std::move(req));
  const std::string id = *shared->second.transactional_id;
  coordinator.verify_remote(id, pid, epoch, std::move(ask),
                            [shared, v](std::map<txn::TxnPartition, ErrorCode> results) {
                              v->results = std::move(results);
                              asio::any_io_executor executor = shared->first.executor;
                              asio::post(executor, [shared, v] {
                                produce_request(std::move(shared->first), std::move(shared->second), v);
                              });
                            });
  return true;
}

void produce_request(RequestContext&& ctx, ProduceRequest&& req, std::shared_ptr<const RemoteVerification> verification) {
  Broker& broker = *ctx.broker;
  const int16_t version = ctx.api_version();
  const bool acks_valid = req.acks == 0 || req.acks == 1 || req.acks == -1;
  const bool validate_compressed = broker.config().get_bool("ciuic.produce.validate.compressed");
  // Each topic and its settings, found once.
  std::vector<std::shared_ptr<const Topic>> topics(req.topic_data.size());
  std::vector<std::optional<produce::TopicSettings>> topic_settings(req.topic_data.size());
  bool compresses = false;
  // A partition's first append in a leader epoch records the epoch's start
  // in its leader-epoch-checkpoint first (storage/log.h: a temp file, an
  // fdatasync, a rename, a directory fsync): the first Produce to each
  // partition of a new topic, and after every change of leader. Disk waits
  // on a network thread would hold its other connections, 64 partitions
  // of a new topic one after another, so such a request is handled on the
  // I/O pool (as Kafka's request handler threads do it).
  bool starts_epoch = false;
  // Record bytes that may be decompressed only to be checked (or for a
  // compacted topic's keys): their batch headers are read only when there
  // are enough of them to send the request to the pool.
  const bool on_pool = IoPool::on_pool_thread();
  std::vector<bool> looks_inside(req.topic_data.size(), false);
  size_t inspected = 0;
  for (size_t t = 0; t < req.topic_data.size(); ++t) {
    topics[t] = acks_valid ? broker.topics().find(req.topic_data[t].name) : nullptr;
    if (!topics[t]) continue;
    topic_settings[t] = produce::topic_settings(broker.topics(), *topics[t]);
    topic_settings[t]->validate_compressed = validate_compressed;
    if (!on_pool && !starts_epoch)
      for (const auto& pd : req.topic_data[t].partition_data) {
        const Partition* p = topics[t]->partition_ptr(pd.index);
        if (p != nullptr && p->is_leader() && !p->log().leader_epochs().records(p->leader_epoch())) {
          starts_epoch = true;
          break;
        }
      }
    if (!on_pool && (validate_compressed || topic_settings[t]->compacted)) {
      looks_inside[t] = true;
      for (const auto& pd : req.topic_data[t].partition_data) inspected += pd.records.bytes.size();
    }
    // Only a topic codec or a v0-2 request (magic 0/1, converted) can mean
    // compressing anew; the common case reads no batch header here. At v3+
    // magic 0/1 is refused by prepare_records before anything is converted.
    if (version >= 3 && !topic_settings[t]->target_codec) continue;
    for (const auto& pd : req.topic_data[t].partition_data)
      compresses = compresses || produce::compresses_anew(pd.records.bytes, *topic_settings[t]);
  }
  // Compressing records anew (a topic's compression.type, or a compressed
  // v0/v1 message set converted), or decompressing kValidateOnPoolBytes or
  // more only to validate them, takes CPU time in proportion to the
  // records: the whole request is handled again on the I/O pool, so the
  // network thread's other connections are not held meanwhile (as for a
  // leader epoch's start, above). Smaller compressed requests are
  // validated here: the hop would cost more.
  size_t to_decompress = 0;
  if (!compresses && inspected >= produce::kValidateOnPoolBytes)
    for (size_t t = 0; t < req.topic_data.size(); ++t)
      if (looks_inside[t])
        for (const auto& pd : req.topic_data[t].partition_data)
          to_decompress += produce::compressed_batch_bytes(pd.records.bytes);
  if ((compresses || starts_epoch || to_decompress >= produce::kValidateOnPoolBytes) && !on_pool) {
    auto shared = std::make_shared<ProduceRequest>(std::move(req));
    broker.service<IoPool>().post_request(ctx, [ctx, shared, verification]() mutable {
      produce_request(std::move(ctx), std::move(*shared), verification);
    });
    return;
  }

  auto pp = std::make_shared<PendingProduce>();
  pp->svc = &broker.service<produce::ProduceService>();
  pp->broker = &broker;
  pp->acks = req.acks;
  pp->timeout_ms = req.timeout_ms;
  pp->fsync = broker.config().get_bool("ciuic.acks.all.fsync");
  pp->transactional_id = req.transactional_id;
  pp->verification = std::move(verification);
  const int64_t now = Broker::now_ms();
  size_t partitions = 0;
  for (const auto& td : req.topic_data) partitions += td.partition_data.size();
  pp->writes.reserve(partitions);

  ProduceResponse& resp = pp->resp;
  resp.responses.reserve(req.topic_data.size());
  for (size_t t = 0; t < req.topic_data.size(); ++t) {
    const auto& td = req.topic_data[t];
    ProduceResponse::TopicProduceResponse& tr = resp.responses.emplace_back();
    tr.name = td.name;
    const size_t topic_index = resp.responses.size() - 1;
    const std::shared_ptr<const Topic>& topic = topics[t];
    const std::optional<produce::TopicSettings>& settings = topic_settings[t];
    tr.partition_responses.reserve(td.partition_data.size());
    for (const auto& pd : td.partition_data) {
      PartitionResponse& pr = tr.partition_responses.emplace_back();
      const size_t partition_index = tr.partition_responses.size() - 1;
      pr.index = pd.index;
      std::shared_ptr<Partition> partition = topic ? topic->partition(pd.index) : nullptr;
      if (!acks_valid) {
        set_error(pr, ErrorCode::INVALID_REQUIRED_ACKS);
      } else if (ErrorCode le = ReplicaManager::leader_error(broker, partition.get(), td.name, pd.index);
                 le != ErrorCode::NONE) {
        set_error(pr, le);  // unknown, or not led here (cluster mode)
        broker.metrics().all_topics().produce_request();
        broker.metrics().all_topics().failed_produce();
      } else if (topic->is_internal()) {
        set_error(pr, ErrorCode::INVALID_TOPIC_EXCEPTION, "Cannot append to internal topic " + td.name);
        broker.metrics().all_topics().produce_request();
        broker.metrics().all_topics().failed_produce();
      } else {
        std::vector<produce::DurableTarget> dup;
        // The records are written from the frame itself (ctx, then pp->ctx,
        // keeps it until every write has completed).
        produce_partition(pp, *partition, partition, *settings, pd.records, ctx.writable(pd.records.bytes), version,
                          now, pr, topic_index, partition_index, dup);
        for (auto& d : dup) pp->duplicates.emplace_back(topic_index, partition_index, std::move(d), partition);
      }
    }
  }
  // On the pool every write above was a blocking one, so the records have
  // their offsets: the connection's later requests may be dispatched now,
  // though the answer may still wait for fsync or replicas.
  if (on_pool && ctx.release_later_requests && !ctx.quota_held) ctx.release_later_requests();
  pp->ctx = std::move(ctx);
  // One submission for every write of the request.
  if (storage::io::Ring* ring = DiskRing::current(); ring != nullptr && ring->in_flight() > 0) {
    storage::Status flushed = ring->flush();
    if (!flushed.is_ok())
      CK_LOG_ERROR("produce", "produce: io_uring submit failed: %s", flushed.to_string().c_str());
  }
  count_down(pp);
}

}  // namespace

CK_REGISTER_HANDLER(protocol::ProduceRequest, 0, 11, handle_produce);

}  // namespace ciuickafka::broker

