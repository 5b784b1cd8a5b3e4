// broker/handlers/alter_configs.cc: AlterConfigs (key 33), versions 0-2.
//
// The legacy, non-incremental API: the configs given become the topic's
// complete set of overrides (anything not named returns to the broker
// default), through TopicTable::set_configs, which validates every key and
// value (INVALID_CONFIG naming both) and persists before answering.
// validate_only checks and changes nothing. A null value or a key given
// twice is INVALID_REQUEST. Broker resources: see admin/alter_resource.h.
#include <set>

#include "broker/admin/alter_resource.h"
#include "broker/broker.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/alter_configs.h"

namespace ciuickafka::broker {
namespace {

using protocol::AlterConfigsRequest;
using protocol::AlterConfigsResponse;
using protocol::ErrorCode;

TopicError alter(Broker& broker, const AlterConfigsRequest::AlterConfigsResource& r, bool validate_only) {
  bool nothing_to_do = false;
  TopicError e = admin::check_alter_resource(broker, r.resource_type, r.resource_name, r.configs.size(), &nothing_to_do);
  if (!e.ok() || nothing_to_do) return e;
  ConfigMap configs;
  for (const auto& c : r.configs) {
    if (!c.value) return {ErrorCode::INVALID_REQUEST, "Null value not supported for : " + c.name};
    if (!configs.emplace(c.name, *c.value).second)
      return {ErrorCode::INVALID_REQUEST, "Error due to duplicate config keys: " + c.name};
  }
  return broker.topics().set_configs(r.resource_name, configs, validate_only);
}

void handle_alter_configs(RequestContext&& ctx) {
  AlterConfigsRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  const auto resp = admin::alter_each_resource<AlterConfigsResponse>(
      req, [&](const auto& r) { return alter(*ctx.broker, r, req.validate_only); });
  ctx.respond(make_response(ctx, resp));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::AlterConfigsRequest, 0, 2, handle_alter_configs);

}  // namespace ciuickafka::broker
