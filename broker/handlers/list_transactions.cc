// broker/handlers/list_transactions.cc: ListTransactions (key 66), versions
// 0-1 (KIP-664, KIP-994's duration filter in v1): the transactional ids this
// broker coordinates, filtered by state names (unknown names are returned
// in unknown_state_filters), producer ids and, v1, how long the transaction
// has been open (now - start > duration_filter). COORDINATOR_LOAD_IN_PROGRESS
// while loading; an empty list in cluster mode (no coordinator here yet).
#include <algorithm>

#include "broker/broker.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/txn/coordinator.h"
#include "protocol/generated/list_transactions.h"

namespace ciuickafka::broker {
namespace {

using protocol::ErrorCode;
using protocol::ListTransactionsResponse;

void handle_list_transactions(RequestContext&& ctx) {
  protocol::ListTransactionsRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  ListTransactionsResponse resp;
  std::vector<txn::TxnState> states;
  for (const std::string& name : req.state_filters) {
    if (auto s = txn::state_from_name(name)) states.push_back(*s);
    else resp.unknown_state_filters.push_back(name);
  }
  auto& coordinator = txn::coordinator(*ctx.broker);
  const ErrorCode e = ctx.broker->cluster() != nullptr ? ErrorCode::NONE : coordinator.load_state();
  resp.error_code = protocol::to_wire(e);
  if (e == ErrorCode::NONE && ctx.broker->cluster() == nullptr) {
    const int64_t now = Broker::now_ms();
    for (const auto& v : coordinator.list()) {
      if (!req.state_filters.empty() && std::find(states.begin(), states.end(), v.state) == states.end()) continue;
      if (!req.producer_id_filters.empty() &&
          std::find(req.producer_id_filters.begin(), req.producer_id_filters.end(), v.producer_id) ==
              req.producer_id_filters.end())
        continue;
      if (ctx.api_version() >= 1 && req.duration_filter >= 0 && !(v.start_ms >= 0 && now - v.start_ms > req.duration_filter))
        continue;
      ListTransactionsResponse::TransactionState& out = resp.transaction_states.emplace_back();
      out.transactional_id = v.id;
      out.producer_id = v.producer_id;
      out.transaction_state = std::string(txn::state_name(v.state));
    }
  }
  ctx.respond(make_response(ctx, resp, resp.error_code));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::ListTransactionsRequest, 0, 1, handle_list_transactions);

}  // namespace ciuickafka::broker
