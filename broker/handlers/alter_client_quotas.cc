// broker/handlers/alter_client_quotas.cc: AlterClientQuotas (key 49),
// versions 0-1.
//
// Each entry's ops (a value to set, or remove) applied to its entity
// (quotas/quota_table.h: alter; quotas/client_quotas.h refuses the keys it
// does not enforce); one answer per distinct entity, with its error or
// none (a null message). validate_only checks and changes nothing. On one
// node the change is written to the quota file on the I/O pool (it
// fsyncs); in cluster mode to ZooKeeper on the admin worker, and every
// broker applies it from the change notification.
#include <memory>

#include "broker/admin/zk_admin_task.h"
#include "broker/broker.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/quotas/client_quotas.h"
#include "broker/server/io_pool.h"
#include "metrics/log/log.h"
#include "protocol/error_code.h"
#include "protocol/generated/alter_client_quotas.h"

namespace ciuickafka::broker {
namespace {

using protocol::AlterClientQuotasRequest;
using protocol::AlterClientQuotasResponse;
using protocol::ErrorCode;

std::vector<quotas::Alteration> alterations_of(const AlterClientQuotasRequest& req) {
  std::vector<quotas::Alteration> out;
  for (const auto& e : req.entries) {
    quotas::Alteration a;
    for (const auto& d : e.entity) a.entity[d.entity_type] = d.entity_name;  // a type twice: the last stands (Kafka's map)
    for (const auto& op : e.ops) a.ops.push_back({op.key, op.remove ? std::nullopt : std::optional<double>(op.value)});
    out.push_back(std::move(a));
  }
  return out;
}

void answer(RequestContext& ctx, const std::vector<quotas::AlterResult>& results, bool validate_only) {
  AlterClientQuotasResponse resp;
  for (const quotas::AlterResult& r : results) {
    AlterClientQuotasResponse::EntryData entry;
    entry.error_code = protocol::to_wire(r.error.code);
    entry.error_message = r.error.ok() ? std::nullopt : std::optional<std::string>(r.error.message);
    for (const auto& [type, name] : r.entity) {
      AlterClientQuotasResponse::EntityData d;
      d.entity_type = type;
      d.entity_name = name;
      entry.entity.push_back(std::move(d));
    }
    if (r.error.ok()) {
      CK_LOG_INFO("quotas", "AlterClientQuotas from %s: %s %s", ctx.header.client_id.value_or("").c_str(),
                  quotas::to_string(r.entity).c_str(), validate_only ? "validated" : "altered");
    }
    resp.entries.push_back(std::move(entry));
  }
  ctx.respond(make_response(ctx, resp));
}

void handle_alter_client_quotas(RequestContext&& ctx) {
  AlterClientQuotasRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  auto alterations = std::make_shared<std::vector<quotas::Alteration>>(alterations_of(req));
  const bool validate_only = req.validate_only;
  Broker& broker = *ctx.broker;
  if (broker.cluster() == nullptr) {  // the file is written and fsynced: on the I/O pool
    broker.service<IoPool>().post_request(ctx, [ctx, alterations, validate_only]() mutable {
      answer(ctx, ctx.broker->service<quotas::ClientQuotas>().alter(*alterations, validate_only), validate_only);
    });
    return;
  }
  admin::with_zk_admin(
      broker,
      [ctx, alterations, validate_only](ZkTopicAdmin&, replication::zk::Session& session) mutable {
        answer(ctx, ctx.broker->service<quotas::ClientQuotas>().alter_in_zk(session, *alterations, validate_only),
               validate_only);
      },
      [ctx, alterations, validate_only](const std::string& why) mutable {
        answer(ctx, quotas::fail_each(*alterations, {ErrorCode::REQUEST_TIMED_OUT, why}), validate_only);
      },
      ctx.worker_span);
}

}  // namespace

CK_REGISTER_HANDLER(protocol::AlterClientQuotasRequest, 0, 1, handle_alter_client_quotas);

}  // namespace ciuickafka::broker
