// replication/zk_admin_data.cc: the admin and notification payloads
// (configs, config changes, reassignment, preferred election, ISR change and
// log-dir notifications, the producer id block). See zk_data.h.
#include "replication/jvm_order.h"
#include "replication/zk_data.h"
#include "replication/zk_data_internal.h"

namespace ciuickafka::replication {

using detail::encode_ordered;
using detail::int_list;
using detail::parse_payload;

// ---- configs

std::string encode_entity_config(const ConfigEntries& config) {
  // ConfigEntityZNode.encode: Map("version" -> 1, "config" -> Properties).
  std::vector<std::string> keys;
  for (const auto& kv : config) keys.push_back(kv.first);
  Json c = Json::object();
  for (size_t i : java_properties_order(keys)) c.add(config[i].first, Json::string(config[i].second));
  Json o = Json::object();
  o.add("version", Json::integer(1)).add("config", std::move(c));
  return to_json(o);
}

Result<ConfigEntries> decode_entity_config(std::string_view bytes) {
  CK_TRY(o, parse_payload(bytes));
  CK_TRY(version, payload_version(o, 1, 1));
  (void)version;
  ConfigEntries out;
  const Json* c = o.find("config");
  if (c == nullptr || c->is_null()) return out;  // Kafka: no config, empty Properties
  if (!c->is_object()) return Error{"field 'config': expected an object"};
  for (const auto& [k, v] : *c->if_object()) {
    if (!v.is_string()) return Error{"field 'config': value of '" + k + "' is not a string"};
    out.emplace_back(k, *v.if_string());
  }
  return out;
}

std::string encode_config_change(std::string_view entity_path) {
  Json o = Json::object();
  o.add("version", Json::integer(2)).add("entity_path", Json::string(std::string(entity_path)));
  return to_json(o);
}

Result<std::string> decode_config_change(std::string_view bytes) {
  CK_TRY(o, parse_payload(bytes));
  CK_TRY(version, payload_version(o, 2, 2));  // version 1 (entity_type/entity_name) is long gone
  (void)version;
  return field_string(o, "entity_path");
}

// ---- partition lists

namespace {

Result<const Json::Array*> partitions_array(const Json& o) {
  CK_TRY(a, field_array(o, "partitions"));
  return a->if_array();
}

Result<TopicPartitionRef> topic_partition(const Json& e) {
  if (!e.is_object()) return Error{"field 'partitions': expected an array of objects"};
  CK_TRY(topic, field_string(e, "topic"));
  CK_TRY(partition, field_int32(e, "partition"));
  return TopicPartitionRef{topic, partition};
}

}  // namespace

std::string encode_reassign_partitions(const std::vector<PartitionReassignment>& r) {
  // Jackson on LegacyPartitionAssignment(version, partitions) and
  // ReplicaAssignment(topic, partition, replicas): declaration order.
  Json parts = Json::array();
  for (const auto& p : r) {
    Json e = Json::object();
    e.add("topic", Json::string(p.topic)).add("partition", Json::integer(p.partition)).add("replicas", int_list(p.replicas));
    parts.push(std::move(e));
  }
  Json o = Json::object();
  o.add("version", Json::integer(1)).add("partitions", std::move(parts));
  return to_json(o);
}

Result<std::vector<PartitionReassignment>> decode_reassign_partitions(std::string_view bytes) {
  CK_TRY(o, parse_payload(bytes));
  CK_TRY(version, payload_version(o, 1, 1));
  (void)version;
  CK_TRY(parts, partitions_array(o));
  std::vector<PartitionReassignment> out;
  for (const Json& e : *parts) {
    CK_TRY(tp, topic_partition(e));
    CK_TRY(replicas_json, field_array(e, "replicas"));
    CK_TRY(replicas, int32_list(*replicas_json, "replicas"));
    out.push_back(PartitionReassignment{tp.topic, tp.partition, std::move(replicas)});
  }
  return out;
}

std::string encode_partition_list(const std::vector<TopicPartitionRef>& partitions) {
  Json parts = Json::array();
  for (const auto& p : partitions) {
    Json e = Json::object();
    e.add("topic", Json::string(p.topic)).add("partition", Json::integer(p.partition));
    parts.push(std::move(e));
  }
  Json o = Json::object();
  o.add("version", Json::integer(1)).add("partitions", std::move(parts));
  return to_json(o);
}

Result<std::vector<TopicPartitionRef>> decode_partition_list(std::string_view bytes) {
  CK_TRY(o, parse_payload(bytes));
  CK_TRY(version, payload_version(o, 1, 1));
  (void)version;
  CK_TRY(parts, partitions_array(o));
  std::vector<TopicPartitionRef> out;
  for (const Json& e : *parts) {
    CK_TRY(tp, topic_partition(e));
    out.push_back(std::move(tp));
  }
  return out;
}

std::string encode_log_dir_event(int32_t broker_id) {
  Json o = Json::object();
  o.add("version", Json::integer(1)).add("broker", Json::integer(broker_id)).add("event", Json::integer(1));
  return to_json(o);
}

Result<int32_t> decode_log_dir_event(std::string_view bytes) {
  CK_TRY(o, parse_payload(bytes));
  return field_int32(o, "broker");  // Kafka reads only the broker
}

// ---- producer id block

std::string encode_producer_id_block(const ProducerIdBlock& b) {
  Json o = Json::object();
  o.add("version", Json::integer(1))
      .add("broker", Json::integer(b.broker))
      .add("block_start", Json::string(std::to_string(b.block_start)))
      .add("block_end", Json::string(std::to_string(b.block_end)));
  return to_json(o);
}

Result<ProducerIdBlock> decode_producer_id_block(std::string_view bytes) {
  CK_TRY(o, parse_payload(bytes));
  ProducerIdBlock b;
  CK_TRY(broker, field_int32(o, "broker"));
  CK_TRY(start_text, field_string(o, "block_start"));
  CK_TRY(end_text, field_string(o, "block_end"));
  CK_TRY(start, detail::parse_java_long(start_text, "field 'block_start'"));
  CK_TRY(end, detail::parse_java_long(end_text, "field 'block_end'"));
  if (end < start) return Error{"field 'block_end': below block_start"};
  b.broker = broker;
  b.block_start = start;
  b.block_end = end;
  return b;
}

}  // namespace ciuickafka::replication
