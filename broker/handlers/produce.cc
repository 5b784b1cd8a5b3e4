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
// acks: 0 answers nothing (but closes the connection when a partition
// failed, as Kafka does, so the client notices); 1 answers after the
// append; -1 with ciuic.acks.all.fsync waits for the group-commit fsync of
// every partition written (produce/acks_all_wait.h) without holding a
// thread, or answers after the append like a single-node Kafka when the
// option is off. Any other acks value: INVALID_REQUIRED_ACKS everywhere.
#include <memory>
#include <optional>

#include "broker/broker.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/produce/acks_all_wait.h"
#include "broker/produce/prepare.h"
#include "broker/produce/produce_service.h"
#include "broker/produce/topic_settings.h"
#include "protocol/error_code.h"
#include "protocol/generated/produce.h"

namespace ciuickafka::broker {
namespace {

using protocol::ErrorCode;
using protocol::ProduceRequest;
using protocol::ProduceResponse;
using PartitionResponse = ProduceResponse::PartitionProduceResponse;

struct Outcome {
  std::optional<produce::DurableTarget> durable;  // what acks=all waits for
};

void set_error(PartitionResponse& pr, ErrorCode code, std::string message = {}) {
  pr.error_code = protocol::to_wire(code);
  pr.base_offset = -1;
  pr.log_append_time_ms = -1;
  pr.log_start_offset = -1;
  if (!message.empty()) pr.error_message = std::move(message);
}

ErrorCode storage_error(const storage::Status& s) {
  return s.code() == storage::StatusCode::kCorruptRecords ? ErrorCode::CORRUPT_MESSAGE : ErrorCode::KAFKA_STORAGE_ERROR;
}

void succeed(PartitionResponse& pr, const Partition& p, const produce::PartitionState& st, int64_t base_offset,
             int64_t log_append_time) {
  pr.error_code = 0;
  pr.base_offset = base_offset;
  pr.log_append_time_ms = log_append_time;
  pr.log_start_offset = p.log_start_offset();
  st.partition_metrics.set_log_end_offset(p.log_end_offset());
}

Outcome produce_partition(produce::ProduceService& svc, Partition& p, const produce::TopicSettings& settings,
                          const protocol::Records& records, int16_t version, int64_t now, PartitionResponse& pr) {
  Outcome out;
  auto st = svc.partition_state(p);
  produce::PreparedRecords prep = produce::prepare_records(records.bytes, version, settings, now);
  if (!prep.ok()) {
    set_error(pr, prep.error, prep.message);
    for (auto& e : prep.record_errors) {
      ProduceResponse::BatchIndexAndErrorMessage m;
      m.batch_index = e.batch_index;
      m.batch_index_error_message = std::move(e.message);
      pr.record_errors.push_back(std::move(m));
    }
    st->topic_metrics.failed_produce();
    return out;
  }
  if (prep.batches.empty()) {  // an empty message set (Produce v0-v2): nothing to write
    pr.base_offset = -1;
    pr.log_start_offset = p.log_start_offset();
    return out;
  }
  size_t idempotent = 0;
  for (const auto& b : prep.batches) idempotent += b.producer_id >= 0 ? 1 : 0;
  if (idempotent > 0 && prep.batches.size() != 1) {
    set_error(pr, ErrorCode::INVALID_RECORD, "Idempotent batches must be sent one per partition (Produce v3+)");
    st->topic_metrics.failed_produce();
    return out;
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
    lock.lock();
    svc.ensure_loaded(*st, p.log());
    const produce::SeqCheck check = st->table.check(incoming);
    switch (check.verdict) {
      case produce::SeqVerdict::kDuplicate:
        succeed(pr, p, *st, check.duplicate.first_offset, settings.log_append_time ? check.duplicate.timestamp : -1);
        out.durable = produce::DurableTarget{p.log_ptr(), check.duplicate.last_offset + 1};
        return out;
      case produce::SeqVerdict::kInvalidEpoch:
        set_error(pr, ErrorCode::INVALID_PRODUCER_EPOCH, check.message);
        st->topic_metrics.failed_produce();
        return out;
      case produce::SeqVerdict::kOutOfOrder:
        set_error(pr, ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER, check.message);
        st->topic_metrics.failed_produce();
        return out;
      case produce::SeqVerdict::kAppend:
        break;
    }
  }
  auto appended = p.append(prep.buffer, now);
  if (!appended.is_ok()) {
    set_error(pr, storage_error(appended.status()), appended.status().message());
    st->topic_metrics.failed_produce();
    return out;
  }
  const storage::AppendResult& r = appended.value();
  if (idempotent > 0) {
    st->table.record(incoming, r.base_offset, r.last_offset, now);
    svc.after_append(st, now);
    lock.unlock();
  }
  succeed(pr, p, *st, r.base_offset, prep.log_append_time);
  st->topic_metrics.add_bytes_in(records.size());
  st->topic_metrics.add_messages_in(prep.record_count);
  out.durable = produce::DurableTarget{p.log_ptr(), r.last_offset + 1};
  return out;
}

int16_t first_error(const ProduceResponse& resp) {
  for (const auto& t : resp.responses)
    for (const auto& p : t.partition_responses)
      if (p.error_code != 0) return p.error_code;
  return 0;
}

void handle_produce(RequestContext&& ctx) {
  ProduceRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  Broker& broker = *ctx.broker;
  auto& svc = broker.service<produce::ProduceService>();
  const int16_t version = ctx.api_version();
  const int64_t now = Broker::now_ms();
  const bool acks_valid = req.acks == 0 || req.acks == 1 || req.acks == -1;

  ProduceResponse resp;
  // Where each durable target's answer goes: (topic index, partition index).
  std::vector<std::pair<size_t, size_t>> slots;
  std::vector<produce::DurableTarget> targets;
  resp.responses.reserve(req.topic_data.size());
  for (const auto& td : req.topic_data) {
    ProduceResponse::TopicProduceResponse tr;
    tr.name = td.name;
    auto topic = acks_valid ? broker.topics().find(td.name) : nullptr;
    std::optional<produce::TopicSettings> settings;
    if (topic) settings = produce::topic_settings(broker.topics(), *topic);
    for (const auto& pd : td.partition_data) {
      PartitionResponse pr;
      pr.index = pd.index;
      std::shared_ptr<Partition> partition = topic ? topic->partition(pd.index) : nullptr;
      if (!acks_valid) {
        set_error(pr, ErrorCode::INVALID_REQUIRED_ACKS);
      } else if (!partition) {
        set_error(pr, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
        broker.metrics().all_topics().failed_produce();
      } else if (topic->is_internal()) {
        set_error(pr, ErrorCode::INVALID_TOPIC_EXCEPTION, "Cannot append to internal topic " + td.name);
        broker.metrics().all_topics().failed_produce();
      } else {
        Outcome o = produce_partition(svc, *partition, *settings, pd.records, version, now, pr);
        if (o.durable) {
          slots.emplace_back(resp.responses.size(), tr.partition_responses.size());
          targets.push_back(std::move(*o.durable));
        }
      }
      tr.partition_responses.push_back(std::move(pr));
    }
    resp.responses.push_back(std::move(tr));
  }

  if (req.acks == 0) {
    ctx.respond(first_error(resp) != 0 ? Response::close() : Response::none());
    return;
  }
  if (req.acks == 1 || !broker.config().get_bool("ciuic.acks.all.fsync") || targets.empty()) {
    const int16_t err = first_error(resp);
    ctx.respond(make_response(ctx, resp, err));
    return;
  }
  auto shared_ctx = std::make_shared<RequestContext>(std::move(ctx));
  auto shared_resp = std::make_shared<ProduceResponse>(std::move(resp));
  produce::wait_for_durability(
      broker, std::move(targets), req.timeout_ms,
      [shared_ctx, shared_resp, slots = std::move(slots)](const std::vector<ErrorCode>& results) {
        for (size_t i = 0; i < results.size(); ++i) {
          if (results[i] == ErrorCode::NONE) continue;
          auto& pr = shared_resp->responses[slots[i].first].partition_responses[slots[i].second];
          pr.error_code = protocol::to_wire(results[i]);
        }
        shared_ctx->respond(make_response(*shared_ctx, *shared_resp, first_error(*shared_resp)));
      });
}

}  // namespace

CK_REGISTER_HANDLER(protocol::ProduceRequest, 0, 11, handle_produce);

}  // namespace ciuickafka::broker

