// broker/handlers/add_partitions_to_txn.cc: AddPartitionsToTxn (key 24),
// versions 0-5.
//
// v0-3 (clients): one transaction. Every partition must exist, else those
// get UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED and
// nothing is added (Kafka's rule); otherwise the transaction coordinator's
// answer (txn/coordinator.h) goes to every partition. PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH below v2.
// v4-5 (brokers, KIP-890): a batch of transactions, each added the same way
// or, with verify_only, only checked: NONE for a partition in the ongoing
// transaction, TRANSACTION_ABORTABLE for one that is not, or the
// transaction's error (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
// CONCURRENT_TRANSACTIONS) on every partition. Nothing is authorized (this
// broker has no ACLs), so CLUSTER_ACTION is not checked.
#include <atomic>
#include <memory>

#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/groups/respond.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/txn/coordinator.h"
#include "protocol/generated/add_partitions_to_txn.h"

namespace ciuickafka::broker {
namespace {

using protocol::AddPartitionsToTxnRequest;
using protocol::AddPartitionsToTxnResponse;
using protocol::ErrorCode;
using TopicResults = std::vector<AddPartitionsToTxnResponse::AddPartitionsToTxnTopicResult>;

TopicResults results_for(const std::vector<AddPartitionsToTxnRequest::AddPartitionsToTxnTopic>& topics,
                         const std::function<ErrorCode(const std::string&, int32_t)>& error_of) {
  TopicResults out;
  for (const auto& t : topics) {
    AddPartitionsToTxnResponse::AddPartitionsToTxnTopicResult r;
    r.name = t.name;
    for (int32_t p : t.partitions) {
      AddPartitionsToTxnResponse::AddPartitionsToTxnPartitionResult pr;
      pr.partition_index = p;
      pr.partition_error_code = protocol::to_wire(error_of(t.name, p));
      r.results_by_partition.push_back(pr);
    }
    out.push_back(std::move(r));
  }
  return out;
}

// One transaction: done(results) once the coordinator answered.
void add_one(Broker& broker, const std::string& id, int64_t pid, int16_t epoch, bool verify_only,
             const std::vector<AddPartitionsToTxnRequest::AddPartitionsToTxnTopic>& topics, int16_t version,
             std::function<void(TopicResults)> done) {
  // The partition exists in the cluster (the metadata cache: the
  // coordinator need not host a replica of it), or on this single node.
  auto exists = [&broker](const std::string& topic, int32_t partition) {
    if (topic == "__consumer_offsets" || topic == "__transaction_state") return false;
    if (broker.cluster() != nullptr) {
      auto snap = broker.service<ReplicaManager>().metadata_cache().snapshot();
      const CachedTopic* t = snap->topic(topic);
      return t != nullptr && t->partitions.contains(partition);
    }
    auto t = broker.topics().find(topic);
    return t && !t->is_internal() && t->partition(partition) != nullptr;
  };
  auto& coordinator = txn::coordinator(broker);
  if (verify_only) {
    std::map<std::pair<std::string, int32_t>, ErrorCode> errors;
    ErrorCode txn_error = ErrorCode::NONE;
    for (const auto& t : topics) {
      for (int32_t p : t.partitions) {
        ErrorCode e = coordinator.verify_partition(id, pid, epoch, t.name, p);
        if (e == ErrorCode::INVALID_TXN_STATE) e = ErrorCode::TRANSACTION_ABORTABLE;
        else if (e != ErrorCode::NONE) txn_error = e;
        errors[{t.name, p}] = e;
      }
    }
    return done(results_for(topics, [&](const std::string& topic, int32_t p) {
      return txn_error != ErrorCode::NONE ? txn_error : errors[{topic, p}];
    }));
  }
  bool all_known = true;
  std::vector<txn::TxnPartition> parts;
  for (const auto& t : topics)
    for (int32_t p : t.partitions) {
      all_known = all_known && exists(t.name, p);
      parts.emplace_back(t.name, p);
    }
  if (!all_known)
    return done(results_for(topics, [&](const std::string& topic, int32_t p) {
      return exists(topic, p) ? ErrorCode::OPERATION_NOT_ATTEMPTED : ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
    }));
  coordinator.add_partitions(id, pid, epoch, std::move(parts), [topics, version, done](ErrorCode e) {
    if (e == ErrorCode::PRODUCER_FENCED && version < 2) e = ErrorCode::INVALID_PRODUCER_EPOCH;
    done(results_for(topics, [e](const std::string&, int32_t) { return e; }));
  });
}

void handle_add_partitions_to_txn(RequestContext&& ctx) {
  auto req = std::make_shared<AddPartitionsToTxnRequest>();
  if (!decode_request(ctx, *req)) {
    ctx.respond(Response::close());
    return;
  }
  const int16_t version = ctx.api_version();
  auto shared = groups::share(std::move(ctx));
  Broker& broker = *shared->broker;
  if (version <= 3) {
    add_one(broker, req->v3_and_below_transactional_id, req->v3_and_below_producer_id,
            req->v3_and_below_producer_epoch, false, req->v3_and_below_topics, version,
            [shared, req](TopicResults results) {
              AddPartitionsToTxnResponse resp;
              resp.results_by_topic_v3_and_below = std::move(results);
              shared->respond(make_response(*shared, resp));
            });
    return;
  }
  // v4+: every transaction answered, then one response.
  struct Gather {
    AddPartitionsToTxnResponse resp;
    std::atomic<size_t> left{0};
    std::mutex mu;
  };
  auto g = std::make_shared<Gather>();
  g->resp.results_by_transaction.resize(req->transactions.size());
  g->left = req->transactions.size() + 1;
  auto count_down = [g, shared] {
    if (g->left.fetch_sub(1) == 1) shared->respond(make_response(*shared, g->resp));
  };
  for (size_t i = 0; i < req->transactions.size(); ++i) {
    const auto& t = req->transactions[i];
    g->resp.results_by_transaction[i].transactional_id = t.transactional_id;
    add_one(broker, t.transactional_id, t.producer_id, t.producer_epoch, t.verify_only, t.topics, version,
            [g, i, count_down, req](TopicResults results) {
              {
                std::lock_guard<std::mutex> lock(g->mu);
                g->resp.results_by_transaction[i].topic_results = std::move(results);
              }
              count_down();
            });
  }
  count_down();
}

}  // namespace

CK_REGISTER_HANDLER(protocol::AddPartitionsToTxnRequest, 0, 5, handle_add_partitions_to_txn);

}  // namespace ciuickafka::broker
