// broker/handlers/alter_configs.cc: AlterConfigs (key 33), versions 0-2.
//
// The legacy, non-incremental API: the configs given become the topic's
// complete set of overrides (anything not named returns to the broker
// default), through TopicTable::set_configs, which validates every key and
// value (INVALID_CONFIG naming both) and persists before answering.
// validate_only checks and changes nothing. A null value or a key given
// twice is INVALID_REQUEST. Broker resources: see admin/alter_resource.h.
// On one node the work runs on the I/O pool (server/io_pool.h), as it
// writes and fsyncs files; in cluster mode the overrides go to ZooKeeper
// (on the admin worker) and every broker applies the change
// (cluster/config_changes.h).
#include <set>

#include "broker/admin/alter_resource.h"
#include "broker/admin/zk_admin_task.h"
#include "broker/broker.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/server/io_pool.h"
#include "protocol/error_code.h"
#include "protocol/generated/alter_configs.h"

namespace ciuickafka::broker {
namespace {

using protocol::AlterConfigsRequest;
using protocol::AlterConfigsResponse;
using protocol::ErrorCode;

TopicError alter(Broker& broker, admin::ConfigStore& store, const AlterConfigsRequest::AlterConfigsResource& r,
                 bool validate_only, ConfigMap& configs) {
  bool nothing_to_do = false;
  TopicError e = admin::check_alter_resource(broker, r.resource_type, r.resource_name, r.configs.size(), &nothing_to_do);
  if (!e.ok() || nothing_to_do) return e;
  for (const auto& c : r.configs) {
    if (!c.value) return {ErrorCode::INVALID_REQUEST, "Null value not supported for : " + c.name};
    if (!configs.emplace(c.name, *c.value).second)
      return {ErrorCode::INVALID_REQUEST, "Error due to duplicate config keys: " + c.name};
  }
  return store.replace(r.resource_name, configs, validate_only);
}

void answer(RequestContext& ctx, const AlterConfigsRequest& req, admin::ConfigStore& store, admin::ConfigStore& brokers) {
  const auto resp = admin::alter_each_resource<AlterConfigsResponse>(
      req, [&](const auto& r) {
        ConfigMap configs;
        admin::ConfigStore& target = r.resource_type == admin::kResourceBroker ? brokers : store;
        const TopicError e = alter(*ctx.broker, target, r, req.validate_only, configs);
        admin::log_alter("AlterConfigs", ctx.header.client_id, r.resource_type, r.resource_name, &configs, e,
                         req.validate_only);
        return e;
      });
  ctx.respond(make_response(ctx, resp));
}

void handle_alter_configs(RequestContext&& ctx) {
  auto req = std::make_shared<AlterConfigsRequest>();
  if (!decode_request(ctx, *req)) {
    ctx.respond(Response::close());
    return;
  }
  Broker& broker = *ctx.broker;
  if (broker.cluster() == nullptr) {  // the changes are persisted and fsynced: on the I/O pool
    broker.service<IoPool>().post_request(ctx, [ctx, req]() mutable {
      admin::LocalConfigStore store(*ctx.broker);
      admin::BrokerConfigStore brokers(*ctx.broker);
      answer(ctx, *req, store, brokers);
    });
    return;
  }
  admin::with_zk_admin(
      broker,
      [ctx, req](ZkTopicAdmin& zk, replication::zk::Session& session) mutable {
        admin::ZkConfigStore store(*ctx.broker, zk);
        admin::BrokerConfigStore brokers(*ctx.broker, &session);
        answer(ctx, *req, store, brokers);
      },
      [ctx, req](const std::string& why) mutable {
        const auto resp = admin::alter_each_resource<AlterConfigsResponse>(
            *req, [&](const auto&) { return TopicError{ErrorCode::REQUEST_TIMED_OUT, why}; });
        ctx.respond(make_response(ctx, resp));
      },
      ctx.worker_span);
}

}  // namespace

CK_REGISTER_HANDLER(protocol::AlterConfigsRequest, 0, 2, handle_alter_configs);

}  // namespace ciuickafka::broker
