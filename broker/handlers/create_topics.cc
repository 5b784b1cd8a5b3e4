// broker/handlers/create_topics.cc: CreateTopics (key 19), versions 0-7.
//
// Each topic is checked and created on its own (TopicTable::create does the
// name, partition, replication-factor and config rules and persists before
// the topic is visible); one topic's failure does not affect the others.
// What this handler adds, following Kafka:
//   - a name given twice in one request: INVALID_REQUEST for that name;
//   - explicit replica assignments together with num_partitions or
//     replication_factor != -1: INVALID_REQUEST; assignments must be
//     partitions 0..n-1 each on exactly [this node], else
//     INVALID_REPLICA_ASSIGNMENT with a message (Kafka's code for an
//     assignment naming an unknown broker);
//   - a config with a null value: INVALID_CONFIG;
//   - v5+ successful (and validate_only) results carry num_partitions,
//     replication_factor and the topic's effective configs (v7 its id; zero
//     when validate_only, as nothing was created).
// timeout_ms is ignored: creation is complete when we answer.
#include <map>
#include <set>

#include "broker/admin/config_describe.h"
#include "broker/broker.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/create_topics.h"

namespace ciuickafka::broker {
namespace {

using protocol::CreateTopicsRequest;
using protocol::CreateTopicsResponse;
using protocol::ErrorCode;
using protocol::to_wire;

using Result = CreateTopicsResponse::CreatableTopicResult;

Result failed(const std::string& name, ErrorCode code, std::string message) {
  Result r;
  r.name = name;
  r.error_code = to_wire(code);
  r.error_message = std::move(message);
  return r;
}

// Checks explicit assignments; on success sets *partitions to their count.
TopicError check_assignments(const CreateTopicsRequest::CreatableTopic& t, int32_t node, int32_t* partitions) {
  if (t.num_partitions != -1 || t.replication_factor != -1)
    return {ErrorCode::INVALID_REQUEST,
            "Both numPartitions or replicationFactor and replicasAssignments were set. "
            "Both cannot be used at the same time."};
  std::set<int32_t> seen;
  for (const auto& a : t.assignments) {
    if (a.partition_index < 0 || !seen.insert(a.partition_index).second)
      return {ErrorCode::INVALID_REPLICA_ASSIGNMENT,
              "Invalid partition index " + std::to_string(a.partition_index) + " in the replica assignment."};
    if (a.broker_ids.size() != 1 || a.broker_ids[0] != node)
      return {ErrorCode::INVALID_REPLICA_ASSIGNMENT,
              "Partition " + std::to_string(a.partition_index) + " must be assigned to exactly [" +
                  std::to_string(node) + "]: this cluster has one broker."};
  }
  const auto n = static_cast<int32_t>(t.assignments.size());
  if (!seen.empty() && *seen.rbegin() != n - 1)
    return {ErrorCode::INVALID_REPLICA_ASSIGNMENT, "Partitions should be a consecutive 0-based integer sequence."};
  *partitions = n;
  return {};
}

Result create_one(Broker& broker, const CreateTopicsRequest::CreatableTopic& t, bool validate_only,
                  int16_t version) {
  int32_t partitions = t.num_partitions;
  int16_t replication = t.replication_factor;
  if (!t.assignments.empty()) {
    TopicError e = check_assignments(t, broker.node_id(), &partitions);
    if (!e.ok()) return failed(t.name, e.code, e.message);
    replication = 1;
  }
  ConfigMap configs;
  for (const auto& c : t.configs) {
    if (!c.value.has_value())
      return failed(t.name, ErrorCode::INVALID_CONFIG, "Null value not supported for topic configs: " + c.name);
    configs[c.name] = *c.value;
  }
  TopicTable::Created created =
      broker.topics().create(t.name, partitions, replication, configs, validate_only, Broker::now_ms());
  if (!created.error.ok()) return failed(t.name, created.error.code, created.error.message);

  Result r;
  r.name = t.name;
  r.error_message = std::nullopt;
  const Topic& topic = *created.topic;
  if (!validate_only) r.topic_id = topic.id;
  if (version >= 5) {
    r.num_partitions = validate_only ? (partitions == -1 ? broker.config().get_int("num.partitions") : partitions)
                                     : static_cast<int32_t>(topic.partitions.size());
    r.replication_factor = topic.replication_factor;
    std::vector<CreateTopicsResponse::CreatableTopicConfigs> out;
    for (const admin::DescribedConfig& d : admin::describe_topic_configs(broker.topics(), topic, std::nullopt, false)) {
      CreateTopicsResponse::CreatableTopicConfigs c;
      c.name = d.name;
      c.value = d.value;
      c.read_only = d.read_only;
      c.config_source = static_cast<int8_t>(d.source);
      c.is_sensitive = d.is_sensitive;
      out.push_back(std::move(c));
    }
    r.configs = std::move(out);
  }
  return r;
}

void handle_create_topics(RequestContext&& ctx) {
  CreateTopicsRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  Broker& broker = *ctx.broker;
  std::map<std::string, int> count;
  for (const auto& t : req.topics) ++count[t.name];

  CreateTopicsResponse resp;
  std::set<std::string> answered_duplicate;
  for (const auto& t : req.topics) {
    if (count[t.name] > 1) {
      if (answered_duplicate.insert(t.name).second)
        resp.topics.push_back(failed(t.name, ErrorCode::INVALID_REQUEST,
                                     "Create topics request from client `" + ctx.header.client_id.value_or("") +
                                         "` contains multiple entries for the following topics: " + t.name));
      continue;
    }
    resp.topics.push_back(create_one(broker, t, req.validate_only, ctx.api_version()));
  }
  ctx.respond(make_response(ctx, resp));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::CreateTopicsRequest, 0, 7, handle_create_topics);

}  // namespace ciuickafka::broker
