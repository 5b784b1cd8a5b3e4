// broker/handlers/describe_configs.cc: DescribeConfigs (key 32), versions 0-4.
//
// TOPIC resources: every known topic config (or the requested subset) with
// its effective value and source; an invalid name is INVALID_TOPIC_EXCEPTION,
// an unknown topic UNKNOWN_TOPIC_OR_PARTITION. BROKER resources: this node's
// id lists every registry key (read-only unless dynamically updatable,
// admin/dynamic_configs.h); "" lists the cluster-wide dynamic defaults. BROKER_LOGGER: an empty list (we have no per-logger
// levels to show). Other resource types: INVALID_REQUEST. The values,
// sources and synonyms come from admin/config_describe.h.
//
// Per version: v0 is_default (source DEFAULT_CONFIG); v1+ config_source and
// synonyms when include_synonyms; v3+ config_type and documentation when
// include_documentation (null otherwise).
#include "broker/admin/config_describe.h"
#include "broker/admin/resource_types.h"
#include "broker/broker.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/describe_configs.h"

namespace ciuickafka::broker {
namespace {

using protocol::DescribeConfigsRequest;
using protocol::DescribeConfigsResponse;
using protocol::ErrorCode;
using protocol::to_wire;

using ConfigsResult = DescribeConfigsResponse::DescribeConfigsResult;

ConfigsResult error_result(const DescribeConfigsRequest::DescribeConfigsResource& r, ErrorCode code,
                           std::string msg) {
  ConfigsResult out;
  out.resource_type = r.resource_type;
  out.resource_name = r.resource_name;
  out.error_code = to_wire(code);
  out.error_message = std::move(msg);
  return out;
}

DescribeConfigsResponse::DescribeConfigsResourceResult to_wire_entry(const admin::DescribedConfig& d,
                                                                    bool with_docs, int16_t version) {
  DescribeConfigsResponse::DescribeConfigsResourceResult e;
  e.name = d.name;
  e.value = d.value;
  e.read_only = d.read_only;
  // v0 has is_default (non-ignorable, so only set there), v1+ config_source.
  if (version == 0) e.is_default = d.source == config::DescribeSource::kDefaultConfig;
  else e.config_source = static_cast<int8_t>(d.source);
  e.is_sensitive = d.is_sensitive;
  for (const admin::ConfigSynonym& s : d.synonyms) {
    DescribeConfigsResponse::DescribeConfigsSynonym syn;
    syn.name = s.name;
    syn.value = s.value;
    syn.source = static_cast<int8_t>(s.source);
    e.synonyms.push_back(std::move(syn));
  }
  e.config_type = d.config_type;
  e.documentation = with_docs ? std::optional<std::string>(d.documentation) : std::nullopt;
  return e;
}

ConfigsResult describe(Broker& broker, const DescribeConfigsRequest::DescribeConfigsResource& r,
                       bool synonyms, bool docs, int16_t version) {
  std::vector<admin::DescribedConfig> entries;
  switch (r.resource_type) {
    case admin::kResourceTopic: {
      if (auto why = TopicTable::invalid_name_reason(r.resource_name))
        return error_result(r, ErrorCode::INVALID_TOPIC_EXCEPTION, *why);
      auto topic = broker.topics().find(r.resource_name);
      if (!topic)
        return error_result(r, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                            "Topic '" + r.resource_name + "' does not exist.");
      entries = admin::describe_topic_configs(broker.topics(), *topic, r.configuration_keys, synonyms);
      break;
    }
    case admin::kResourceBroker:
      if (auto why = admin::bad_broker_resource(r.resource_name, broker.node_id()))
        return error_result(r, ErrorCode::INVALID_REQUEST, *why);
      entries = admin::describe_broker_configs(broker.config(), r.configuration_keys, synonyms,
                                               r.resource_name.empty());
      break;
    case admin::kResourceBrokerLogger:
      if (auto why = admin::bad_broker_resource(r.resource_name, broker.node_id()))
        return error_result(r, ErrorCode::INVALID_REQUEST, *why);
      break;
    default:
      return error_result(r, ErrorCode::INVALID_REQUEST,
                          "Unsupported resource type " + std::to_string(r.resource_type));
  }
  ConfigsResult out;
  out.resource_type = r.resource_type;
  out.resource_name = r.resource_name;
  out.error_message = std::nullopt;
  out.configs.reserve(entries.size());
  for (const auto& d : entries) out.configs.push_back(to_wire_entry(d, docs, version));
  return out;
}

void handle_describe_configs(RequestContext&& ctx) {
  DescribeConfigsRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  DescribeConfigsResponse resp;
  const bool synonyms = ctx.api_version() >= 1 && req.include_synonyms;
  const bool docs = ctx.api_version() >= 3 && req.include_documentation;
  for (const auto& r : req.resources) resp.results.push_back(describe(*ctx.broker, r, synonyms, docs, ctx.api_version()));
  // is_default exists only in v0 (and is not ignorable): v1+ says it with config_source.
  if (ctx.api_version() >= 1)
    for (auto& result : resp.results)
      for (auto& c : result.configs) c.is_default = false;
  ctx.respond(make_response(ctx, resp));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::DescribeConfigsRequest, 0, 4, handle_describe_configs);

}  // namespace ciuickafka::broker
