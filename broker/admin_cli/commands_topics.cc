// broker/admin_cli/commands_topics.cc: topics, cluster and configs commands
// of `ciuickafka admin` (see commands.h). Topic creation, deletion and
// partition growth go to the controller (ZooKeeper-mode Kafka requires it);
// topic config changes to any broker, broker config reads and changes to
// that broker. One thread.
#include <algorithm>
#include <chrono>
#include <ostream>
#include <thread>

#include "broker/admin_cli/commands.h"
#include "protocol/generated/create_partitions.h"
#include "protocol/generated/create_topics.h"
#include "protocol/generated/delete_topics.h"
#include "protocol/generated/describe_configs.h"
#include "protocol/generated/incremental_alter_configs.h"
#include "protocol/generated/metadata.h"

namespace ciuickafka::broker::admin_cli {

namespace proto = ciuickafka::protocol;

namespace {

constexpr int8_t kResourceTopic = 2;
constexpr int8_t kResourceBroker = 4;
constexpr int16_t kTopicAlreadyExists = 36;

std::string topic_name(const proto::MetadataResponse::MetadataResponseTopic& t) { return t.name.value_or(""); }

// Waits (bounded by request.timeout.ms) until every partition of `topic`
// has a leader, so that a script can produce right after `topics create`.
// Returns false when the deadline passed first.
bool wait_for_leaders(Ctx& c, const std::string& topic) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(c.client.props().request_timeout_ms);
  while (true) {
    auto md = c.client.metadata(std::vector<std::string>{topic});
    bool ready = !md.topics.empty() && md.topics[0].error_code == 0 && !md.topics[0].partitions.empty();
    if (ready)
      for (const auto& p : md.topics[0].partitions) ready = ready && p.leader_id >= 0;
    if (ready) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling with a deadline
  }
}

std::string source_name(int8_t s) {
  switch (s) {
    case 1: return "DYNAMIC_TOPIC_CONFIG";
    case 2: return "DYNAMIC_BROKER_CONFIG";
    case 3: return "DYNAMIC_DEFAULT_BROKER_CONFIG";
    case 4: return "STATIC_BROKER_CONFIG";
    case 5: return "DEFAULT_CONFIG";
    case 6: return "DYNAMIC_BROKER_LOGGER_CONFIG";
    case 7: return "CLIENT_METRICS_CONFIG";
    case 8: return "GROUP_CONFIG";
    default: return "UNKNOWN";
  }
}

// IncrementalAlterConfigs for one resource: --set k=v, --delete k.
void alter_configs(Ctx& c, int8_t type, const std::string& name, int32_t node) {
  proto::IncrementalAlterConfigsRequest req;
  proto::IncrementalAlterConfigsRequest::AlterConfigsResource res;
  res.resource_type = type;
  res.resource_name = name;
  std::vector<Value> changed;
  Table t{"", {"resource", "config", "operation", "value"}, {}};
  for (const auto& kv : c.inv.all("set")) {
    proto::IncrementalAlterConfigsRequest::AlterableConfig a;
    std::string k, v;
    split_key_value(kv, &k, &v);
    a.name = k;
    a.config_operation = 0;  // SET
    a.value = v;
    res.configs.push_back(a);
    t.add({name, k, "set", v});
  }
  for (const auto& k : c.inv.all("delete")) {
    proto::IncrementalAlterConfigsRequest::AlterableConfig a;
    a.name = k;
    a.config_operation = 1;  // DELETE
    a.value = std::nullopt;
    res.configs.push_back(a);
    t.add({name, k, "delete", Value()});
  }
  req.resources.push_back(res);
  proto::IncrementalAlterConfigsResponse resp;
  c.client.call(node, req, &resp);
  for (const auto& r : resp.responses)
    if (r.error_code != 0) throw_kafka_error("alter configs of " + r.resource_name, r.error_code, r.error_message);
  c.print({t});
}

}  // namespace

void Ctx::print(const std::vector<Table>& tables) const { out << render(tables, inv.format) << std::flush; }

const proto::MetadataResponse::MetadataResponseTopic& find_topic(const proto::MetadataResponse& md,
                                                                const std::string& name) {
  for (const auto& t : md.topics) {
    if (topic_name(t) != name) continue;
    if (t.error_code != 0) throw_kafka_error("topic " + name, t.error_code);
    return t;
  }
  throw_kafka_error("topic " + name, 3);  // UNKNOWN_TOPIC_OR_PARTITION
}

void cmd_topics_create(Ctx& c) {
  const std::string name = c.inv.positional[0];
  int64_t want_brokers = 0, wait_ms = 0;
  if (c.inv.has("replication-factor")) parse_int(c.inv.get("replication-factor"), 1, 32767, &want_brokers);
  if (c.inv.has("connect-wait-ms")) parse_int(c.inv.get("connect-wait-ms"), 0, INT32_MAX, &wait_ms);
  // With --connect-wait-ms, a cluster still coming up: wait (as long again)
  // until it has enough brokers for the replication factor.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (static_cast<int64_t>(c.client.metadata(std::vector<std::string>{}).brokers.size()) < want_brokers &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling with a deadline
  // The last metadata call above named the controller.
  const int32_t node = c.client.controller();
  const auto v = c.client.supported(node, proto::CreateTopicsRequest::kApiKey, 0,
                                    proto::CreateTopicsRequest::kHighestVersion);
  proto::CreateTopicsRequest req;
  proto::CreateTopicsRequest::CreatableTopic t;
  t.name = name;
  // v4+ lets the broker pick its defaults (-1); older brokers need numbers.
  const bool defaults_ok = v && *v >= 4;
  int64_t n = 0;
  t.num_partitions = c.inv.has("partitions") && parse_int(c.inv.get("partitions"), 1, INT32_MAX, &n)
                         ? static_cast<int32_t>(n)
                         : (defaults_ok ? -1 : 1);
  t.replication_factor = c.inv.has("replication-factor") && parse_int(c.inv.get("replication-factor"), 1, 32767, &n)
                             ? static_cast<int16_t>(n)
                             : static_cast<int16_t>(defaults_ok ? -1 : 1);
  for (const auto& kv : c.inv.all("config")) {
    proto::CreateTopicsRequest::CreatableTopicConfig cfg;
    std::string k, val;
    split_key_value(kv, &k, &val);
    cfg.name = k;
    cfg.value = val;
    t.configs.push_back(cfg);
  }
  req.topics.push_back(t);
  req.timeout_ms = c.client.props().request_timeout_ms;
  proto::CreateTopicsResponse resp;
  c.client.call(node, req, &resp);
  std::string status = "created";
  int32_t partitions = t.num_partitions;
  int32_t rf = t.replication_factor;
  for (const auto& r : resp.topics) {
    if (r.error_code == kTopicAlreadyExists && c.inv.has("if-not-exists")) {
      status = "exists";
    } else if (r.error_code != 0) {
      throw_kafka_error("create topic " + r.name, r.error_code, r.error_message);
    }
    if (r.num_partitions > 0) partitions = r.num_partitions;  // v5+
    if (r.replication_factor > 0) rf = r.replication_factor;
  }
  if (wait_for_leaders(c, name)) {
    auto md = c.client.metadata(std::vector<std::string>{name});
    const auto& mt = find_topic(md, name);
    partitions = static_cast<int32_t>(mt.partitions.size());
    rf = mt.partitions.empty() ? 0 : static_cast<int32_t>(mt.partitions[0].replica_nodes.size());
  } else {
    status += " (no leader yet)";  // created all the same: exit 0
  }
  Table out{"", {"topic", "partitions", "replication_factor", "status"}, {}};
  out.add({name, partitions > 0 ? Value(partitions) : Value(), rf > 0 ? Value(rf) : Value(), status});
  c.print({out});
}

void cmd_topics_list(Ctx& c) {
  auto md = c.client.metadata(std::nullopt);
  std::sort(md.topics.begin(), md.topics.end(),
            [](const auto& a, const auto& b) { return a.name.value_or("") < b.name.value_or(""); });
  Table t{"", {"topic", "partitions", "replication_factor", "internal"}, {}};
  for (const auto& mt : md.topics) {
    const int32_t rf = mt.partitions.empty() ? 0 : static_cast<int32_t>(mt.partitions[0].replica_nodes.size());
    t.add({topic_name(mt), static_cast<int32_t>(mt.partitions.size()), rf, Value::boolean(mt.is_internal)});
  }
  c.print({t});
}

void cmd_topics_describe(Ctx& c) {
  std::optional<std::vector<std::string>> which;
  if (!c.inv.positional.empty()) which = std::vector<std::string>{c.inv.positional[0]};
  auto md = c.client.metadata(which);
  if (which) find_topic(md, (*which)[0]);  // throws on an unknown topic
  std::sort(md.topics.begin(), md.topics.end(),
            [](const auto& a, const auto& b) { return a.name.value_or("") < b.name.value_or(""); });
  Table t{"", {"topic", "partition", "leader", "leader_epoch", "replicas", "isr", "offline", "error"}, {}};
  for (auto& mt : md.topics) {
    std::sort(mt.partitions.begin(), mt.partitions.end(),
              [](const auto& a, const auto& b) { return a.partition_index < b.partition_index; });
    for (const auto& p : mt.partitions)
      t.add({topic_name(mt), p.partition_index, p.leader_id, p.leader_epoch, Value::ids(p.replica_nodes),
             Value::ids(p.isr_nodes), Value::ids(p.offline_replicas),
             p.error_code ? Value(error_name(p.error_code)) : Value()});
  }
  c.print({t});
}

void cmd_topics_delete(Ctx& c) {
  const std::string name = c.inv.positional[0];
  c.client.metadata(std::vector<std::string>{});
  const int32_t node = c.client.controller();
  const auto v = c.client.supported(node, proto::DeleteTopicsRequest::kApiKey, 0,
                                    proto::DeleteTopicsRequest::kHighestVersion);
  proto::DeleteTopicsRequest req;
  if (v && *v >= 6) {
    proto::DeleteTopicsRequest::DeleteTopicState s;
    s.name = name;
    req.topics.push_back(s);
  } else {
    req.topic_names.push_back(name);
  }
  req.timeout_ms = c.client.props().request_timeout_ms;
  proto::DeleteTopicsResponse resp;
  c.client.call(node, req, &resp);
  for (const auto& r : resp.responses)
    if (r.error_code != 0) throw_kafka_error("delete topic " + r.name.value_or(name), r.error_code, r.error_message);
  Table t{"", {"topic", "status"}, {}};
  t.add({name, "deleted"});
  c.print({t});
}

void cmd_topics_add_partitions(Ctx& c) {
  const std::string name = c.inv.positional[0];
  c.client.metadata(std::vector<std::string>{});
  const int32_t node = c.client.controller();
  int64_t n = 0;
  parse_int(c.inv.get("partitions"), 1, INT32_MAX, &n);
  proto::CreatePartitionsRequest req;
  proto::CreatePartitionsRequest::CreatePartitionsTopic t;
  t.name = name;
  t.count = static_cast<int32_t>(n);
  t.assignments = std::nullopt;
  req.topics.push_back(t);
  req.timeout_ms = c.client.props().request_timeout_ms;
  proto::CreatePartitionsResponse resp;
  c.client.call(node, req, &resp);
  for (const auto& r : resp.results)
    if (r.error_code != 0) throw_kafka_error("add partitions to " + r.name, r.error_code, r.error_message);
  Table out{"", {"topic", "partitions", "status"}, {}};
  out.add({name, static_cast<int32_t>(n), "ok"});
  c.print({out});
}

void cmd_topics_alter_config(Ctx& c) {
  alter_configs(c, kResourceTopic, c.inv.positional[0], KafkaClient::kBootstrap);
}

void cmd_cluster_info(Ctx& c) {
  auto md = c.client.metadata(std::vector<std::string>{});
  Table cluster{"cluster", {"cluster_id", "controller", "brokers"}, {}};
  cluster.add({Value::opt(md.cluster_id), md.controller_id, static_cast<int32_t>(md.brokers.size())});
  std::sort(md.brokers.begin(), md.brokers.end(), [](const auto& a, const auto& b) { return a.node_id < b.node_id; });
  Table brokers{"brokers", {"id", "host", "port", "rack", "controller"}, {}};
  for (const auto& b : md.brokers)
    brokers.add({b.node_id, b.host, b.port, Value::opt(b.rack), Value::boolean(b.node_id == md.controller_id)});
  c.print({cluster, brokers});
}

void cmd_configs_describe(Ctx& c) {
  const bool broker = c.inv.has("broker");
  const std::string name = broker ? c.inv.get("broker") : c.inv.get("topic");
  int32_t node = KafkaClient::kBootstrap;
  if (broker) {
    c.client.metadata(std::vector<std::string>{});
    node = std::stoi(name);
    const auto nodes = c.client.nodes();
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end())
      throw CliError(kExitKafkaError, "broker " + name + " is not in the cluster metadata");
  }
  proto::DescribeConfigsRequest req;
  proto::DescribeConfigsRequest::DescribeConfigsResource r;
  r.resource_type = broker ? kResourceBroker : kResourceTopic;
  r.resource_name = name;
  r.configuration_keys = std::nullopt;
  req.resources.push_back(r);
  proto::DescribeConfigsResponse resp;
  const int16_t v = c.client.call(node, req, &resp);
  Table t{"", {"name", "value", "source", "read_only", "sensitive"}, {}};
  for (auto& res : resp.results) {
    if (res.error_code != 0)
      throw_kafka_error(std::string("describe configs of ") + (broker ? "broker " : "topic ") + name, res.error_code,
                        res.error_message);
    std::sort(res.configs.begin(), res.configs.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    for (const auto& cfg : res.configs) {
      // v0 has is_default instead of a source.
      const std::string source = v == 0 ? (cfg.is_default ? "DEFAULT_CONFIG" : "UNKNOWN") : source_name(cfg.config_source);
      t.add({cfg.name, cfg.is_sensitive ? Value() : Value::opt(cfg.value), source, Value::boolean(cfg.read_only),
             Value::boolean(cfg.is_sensitive)});
    }
  }
  c.print({t});
}

void cmd_configs_alter(Ctx& c) {
  if (c.inv.has("broker")) {
    c.client.metadata(std::vector<std::string>{});
    const int32_t node = std::stoi(c.inv.get("broker"));
    const auto nodes = c.client.nodes();
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end())
      throw CliError(kExitKafkaError, "broker " + c.inv.get("broker") + " is not in the cluster metadata");
    alter_configs(c, kResourceBroker, c.inv.get("broker"), node);
  } else {
    alter_configs(c, kResourceTopic, c.inv.get("topic"), KafkaClient::kBootstrap);
  }
}

}  // namespace ciuickafka::broker::admin_cli
