// broker/handlers/incremental_alter_configs.cc: IncrementalAlterConfigs
// (key 44), versions 0-1.
//
// Each operation edits the topic's current overrides: SET (0) sets a key,
// DELETE (1) removes its override (back to the broker default), APPEND (2)
// and SUBTRACT (3) add or remove elements of a list config (cleanup.policy)
// starting from its effective value. The resulting full map goes through
// TopicTable::set_configs, which validates it (INVALID_CONFIG naming key and
// value) and persists it; validate_only changes nothing. Following Kafka:
// APPEND/SUBTRACT on a non-list config is INVALID_CONFIG; a null value for
// SET/APPEND/SUBTRACT, an unknown operation or a key given twice is
// INVALID_REQUEST. Broker resources: see admin/alter_resource.h. On one
// node the work runs on the I/O pool (server/io_pool.h). In cluster mode
// the overrides are read from and written to ZooKeeper (on the admin
// worker) and every broker applies the change (cluster/config_changes.h).
#include <algorithm>
#include <set>

#include "broker/admin/alter_resource.h"
#include "broker/admin/zk_admin_task.h"
#include "broker/broker.h"
#include "broker/config/registry.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/server/io_pool.h"
#include "protocol/error_code.h"
#include "protocol/generated/incremental_alter_configs.h"

namespace ciuickafka::broker {
namespace {

using protocol::ErrorCode;
using protocol::IncrementalAlterConfigsRequest;
using protocol::IncrementalAlterConfigsResponse;

enum Op : int8_t { kSet = 0, kDelete = 1, kAppend = 2, kSubtract = 3 };

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    std::string item = s.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

TopicError alter(Broker& broker, admin::ConfigStore& store, const IncrementalAlterConfigsRequest::AlterConfigsResource& r,
                 bool validate_only, ConfigMap& configs) {
  bool nothing_to_do = false;
  TopicError e = admin::check_alter_resource(broker, r.resource_type, r.resource_name, r.configs.size(), &nothing_to_do);
  if (!e.ok() || nothing_to_do) return e;

  std::set<std::string> seen;
  for (const auto& c : r.configs)
    if (!seen.insert(c.name).second)
      return {ErrorCode::INVALID_REQUEST, "Error due to duplicate config keys: " + c.name};

  if (TopicError ce = store.current(r.resource_name, &configs); !ce.ok()) return ce;
  for (const auto& c : r.configs) {
    if (c.config_operation < kSet || c.config_operation > kSubtract)
      return {ErrorCode::INVALID_REQUEST, "Unknown alter config operation " + std::to_string(c.config_operation)};
    if (c.config_operation == kDelete) {
      configs.erase(c.name);
      continue;
    }
    if (!c.value) return {ErrorCode::INVALID_REQUEST, "Null value not supported for : " + c.name};
    if (c.config_operation == kSet) {
      configs[c.name] = *c.value;
      continue;
    }
    const config::KeyDef* key = store.key_def(c.name);
    if (key == nullptr)
      return {ErrorCode::INVALID_CONFIG, std::string(r.resource_type == admin::kResourceTopic ? "unknown topic configuration \""
                                                                                            : "unknown configuration \"") +
                                             c.name + "\""};
    if (key->type != config::ConfigType::kList)
      return {ErrorCode::INVALID_CONFIG, std::string("Config value ") +
                                             (c.config_operation == kAppend ? "append" : "subtract") +
                                             " is not allowed for config key: " + c.name};
    auto it = configs.find(c.name);
    std::vector<std::string> items =
        split_list(it != configs.end() ? it->second : store.effective(configs, c.name).value_or(""));
    for (const std::string& v : split_list(*c.value)) {
      auto pos = std::find(items.begin(), items.end(), v);
      if (c.config_operation == kAppend && pos == items.end()) items.push_back(v);
      if (c.config_operation == kSubtract && pos != items.end()) items.erase(pos);
    }
    configs[c.name] = join_list(items);
  }
  return store.replace(r.resource_name, configs, validate_only);
}

void answer(RequestContext& ctx, const IncrementalAlterConfigsRequest& req, admin::ConfigStore& store, admin::ConfigStore& brokers) {
  const auto resp = admin::alter_each_resource<IncrementalAlterConfigsResponse>(
      req, [&](const auto& r) {
        ConfigMap configs;
        admin::ConfigStore& target = r.resource_type == admin::kResourceBroker ? brokers : store;
        const TopicError e = alter(*ctx.broker, target, r, req.validate_only, configs);
        admin::log_alter("IncrementalAlterConfigs", ctx.header.client_id, r.resource_type, r.resource_name, &configs, e,
                         req.validate_only);
        return e;
      });
  ctx.respond(make_response(ctx, resp));
}

void handle_incremental_alter_configs(RequestContext&& ctx) {
  auto req = std::make_shared<IncrementalAlterConfigsRequest>();
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
        const auto resp = admin::alter_each_resource<IncrementalAlterConfigsResponse>(
            *req, [&](const auto&) { return TopicError{ErrorCode::REQUEST_TIMED_OUT, why}; });
        ctx.respond(make_response(ctx, resp));
      },
      ctx.worker_span);
}

}  // namespace

CK_REGISTER_HANDLER(protocol::IncrementalAlterConfigsRequest, 0, 1, handle_incremental_alter_configs);

}  // namespace ciuickafka::broker
