// broker/handlers/describe_transactions.cc: DescribeTransactions (key 65),
// version 0 (KIP-664): per transactional id its state name, timeout, start
// time (-1 when Empty), producer id and epoch, and its partitions (for a
// Prepare* state only those still lacking markers). Errors as Kafka's:
// INVALID_REQUEST for an empty id, TRANSACTIONAL_ID_NOT_FOUND for an
// unknown one, COORDINATOR_LOAD_IN_PROGRESS while loading,
// COORDINATOR_NOT_AVAILABLE in cluster mode (no coordinator yet).
#include <map>

#include "broker/broker.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/txn/coordinator.h"
#include "protocol/generated/describe_transactions.h"

namespace ciuickafka::broker {
namespace {

using protocol::DescribeTransactionsResponse;
using protocol::ErrorCode;

void handle_describe_transactions(RequestContext&& ctx) {
  protocol::DescribeTransactionsRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  auto& coordinator = txn::coordinator(*ctx.broker);
  DescribeTransactionsResponse resp;
  for (const std::string& id : req.transactional_ids) {
    DescribeTransactionsResponse::TransactionState& out = resp.transaction_states.emplace_back();
    out.transactional_id = id;
    out.transaction_start_time_ms = -1;
    out.producer_id = 0;  // an entry with an error leaves them at 0, as Kafka's
    out.producer_epoch = 0;
    if (id.empty()) {
      out.error_code = protocol::to_wire(ErrorCode::INVALID_REQUEST);
      continue;
    }
    txn::TxnCoordinator::View v = coordinator.describe(id);
    out.error_code = protocol::to_wire(v.error);
    if (v.error != ErrorCode::NONE) continue;
    out.transaction_state = std::string(txn::state_name(v.state));
    out.transaction_timeout_ms = v.timeout_ms;
    out.transaction_start_time_ms = v.start_ms;
    out.producer_id = v.producer_id;
    out.producer_epoch = v.epoch;
    std::map<std::string, std::vector<int32_t>> by_topic;
    for (const auto& [topic, partition] : v.partitions) by_topic[topic].push_back(partition);
    for (auto& [topic, partitions] : by_topic) {
      DescribeTransactionsResponse::TopicData& td = out.topics.emplace_back();
      td.topic = topic;
      td.partitions = std::move(partitions);
    }
  }
  ctx.respond(make_response(ctx, resp));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::DescribeTransactionsRequest, 0, 0, handle_describe_transactions);

}  // namespace ciuickafka::broker
