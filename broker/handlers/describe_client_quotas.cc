// broker/handlers/describe_client_quotas.cc: DescribeClientQuotas (key 48),
// versions 0-1.
//
// The quotas matching the filter (quotas/quota_table.h: describe): on one
// node from the broker's own table; in cluster mode read from ZooKeeper
// on the admin worker (as Kafka's ZooKeeper-mode brokers answer), so a
// change just made through another broker is seen. A bad filter answers
// the error with no entries (null), as Kafka does.
#include "broker/admin/zk_admin_task.h"
#include "broker/broker.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/quotas/client_quotas.h"
#include "protocol/error_code.h"
#include "protocol/generated/describe_client_quotas.h"

namespace ciuickafka::broker {
namespace {

using protocol::DescribeClientQuotasRequest;
using protocol::DescribeClientQuotasResponse;
using protocol::ErrorCode;

// An error answers with no entries (null), as Kafka's.
void answer_error(RequestContext& ctx, ErrorCode code, const std::string& message) {
  DescribeClientQuotasResponse resp;
  resp.error_code = protocol::to_wire(code);
  resp.error_message = message;
  resp.entries = std::nullopt;
  ctx.respond(make_response(ctx, resp, resp.error_code));
}

void answer(RequestContext& ctx, const DescribeClientQuotasRequest& req, const quotas::Table& table) {
  std::vector<quotas::FilterComponent> filter;
  for (const auto& c : req.components) filter.push_back({c.entity_type, c.match_type, c.match});
  std::vector<std::pair<quotas::Entity, quotas::Values>> found;
  if (quotas::Error e = quotas::describe(table, filter, req.strict, &found); !e.ok()) {
    answer_error(ctx, e.code, e.message);
    return;
  }
  DescribeClientQuotasResponse resp;
  for (const auto& [entity, values] : found) {
    DescribeClientQuotasResponse::EntryData entry;
    for (const auto& [type, name] : entity) {
      DescribeClientQuotasResponse::EntityData d;
      d.entity_type = type;
      d.entity_name = name;
      entry.entity.push_back(std::move(d));
    }
    for (const auto& [k, v] : values) {
      DescribeClientQuotasResponse::ValueData d;
      d.key = k;
      d.value = v;
      entry.values.push_back(std::move(d));
    }
    resp.entries->push_back(std::move(entry));
  }
  ctx.respond(make_response(ctx, resp));
}

void handle_describe_client_quotas(RequestContext&& ctx) {
  auto req = std::make_shared<DescribeClientQuotasRequest>();
  if (!decode_request(ctx, *req)) {
    ctx.respond(Response::close());
    return;
  }
  Broker& broker = *ctx.broker;
  if (broker.cluster() == nullptr) {
    answer(ctx, *req, *broker.service<quotas::ClientQuotas>().table());
    return;
  }
  admin::with_zk_admin(
      broker,
      [ctx, req](ZkTopicAdmin&, replication::zk::Session& session) mutable {
        quotas::Table table;
        std::string error;
        if (!quotas::ClientQuotas::read_zk(session, &table, &error)) {
          answer_error(ctx, ErrorCode::REQUEST_TIMED_OUT, error);
          return;
        }
        answer(ctx, *req, table);
      },
      [ctx](const std::string& why) mutable { answer_error(ctx, ErrorCode::REQUEST_TIMED_OUT, why); },
      ctx.worker_span);
}

}  // namespace

CK_REGISTER_HANDLER(protocol::DescribeClientQuotasRequest, 0, 1, handle_describe_client_quotas);

}  // namespace ciuickafka::broker
