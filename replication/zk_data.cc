// replication/zk_data.cc: the cluster-state znodes (brokers, controller,
// cluster id, topics, partition state). Admin and notification payloads are
// in zk_admin_data.cc. Member orders are derived in jvm_order.h from the maps
// ZkData.scala builds.
#include <charconv>

#include "replication/jvm_order.h"
#include "replication/zk_data.h"
#include "replication/zk_data_internal.h"
#include "storage/checkpoint.h"

namespace ciuickafka::replication {

std::string broker_id_path(int32_t broker_id) { return std::string(kBrokerIdsPath) + "/" + std::to_string(broker_id); }
std::string topic_path(std::string_view topic) { return std::string(kTopicsPath) + "/" + std::string(topic); }
std::string topic_partitions_path(std::string_view topic) { return topic_path(topic) + "/partitions"; }
std::string topic_partition_path(std::string_view topic, int32_t partition) {
  return topic_partitions_path(topic) + "/" + std::to_string(partition);
}
std::string partition_state_path(std::string_view topic, int32_t partition) {
  return topic_partition_path(topic, partition) + "/state";
}
std::string config_entity_path(std::string_view type, std::string_view name) {
  return std::string(kConfigPath) + "/" + std::string(type) + "/" + std::string(name);
}
std::string topic_config_path(std::string_view topic) { return config_entity_path("topics", topic); }
std::string delete_topic_path(std::string_view topic) { return std::string(kDeleteTopicsPath) + "/" + std::string(topic); }

namespace detail {

std::string encode_ordered(Json::Object members, const std::vector<size_t>& order) {
  Json::Object out;
  out.reserve(members.size());
  for (size_t i : order) out.push_back(std::move(members[i]));
  return to_json(Json::object(std::move(out)));
}

std::vector<std::string> keys_of(const Json::Object& members) {
  std::vector<std::string> keys;
  keys.reserve(members.size());
  for (const auto& m : members) keys.push_back(m.first);
  return keys;
}

Json int_list(const std::vector<int32_t>& v) {
  Json a = Json::array();
  for (int32_t i : v) a.push(Json::integer(i));
  return a;
}

Result<Json> parse_payload(std::string_view bytes) {
  CK_TRY(v, parse_json(bytes));
  if (!v.is_object()) return Error{"payload: expected a JSON object"};
  return v;
}

// Java's Integer.parseInt / Long.parseLong: an optional sign, then digits.
Result<int64_t> parse_java_long(std::string_view s, std::string_view what) {
  std::string_view digits = s;
  if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
  int64_t v = 0;
  const char* first = digits.data();
  const char* last = digits.data() + digits.size();
  bool bad_start = digits.empty() || digits[0] == '+' || (digits[0] == '-' && digits.size() == 1);
  auto r = std::from_chars(first, last, v);
  if (bad_start || r.ec != std::errc() || r.ptr != last)
    return Error{std::string(what) + ": not a decimal number: '" + std::string(s.substr(0, 40)) + "'"};
  return v;
}

}  // namespace detail

using detail::encode_ordered;
using detail::int_list;
using detail::keys_of;

// ---- brokers

namespace {

constexpr std::string_view kSecurityProtocols[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"};

bool known_protocol(std::string_view p) {
  for (auto k : kSecurityProtocols)
    if (k == p) return true;
  return false;
}

// "-1" when absent or not a decimal string: Kafka never reads it back.
int64_t lenient_timestamp(const Json& o) {
  const Json* t = o.find("timestamp");
  if (t == nullptr || !t->is_string()) return -1;
  auto v = detail::parse_java_long(*t->if_string(), "timestamp");
  return v ? *v : -1;
}

bool host_char_ok(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '%' ||
         c == '.' || c == '_' || c == ':';
}

// One "LISTENER://host:port" (Kafka's listener regex).
Result<BrokerEndPoint> parse_endpoint(std::string_view s, const std::vector<std::pair<std::string, std::string>>& map) {
  auto err = [&](const char* what) {
    return Error{"field 'endpoints': " + std::string(what) + ": '" + std::string(s.substr(0, 100)) + "'"};
  };
  size_t sep = s.rfind("://");
  if (sep == std::string_view::npos) return err("expected LISTENER://host:port");
  BrokerEndPoint e;
  e.listener = std::string(s.substr(0, sep));
  for (char& c : e.listener)  // ListenerName.normalised (ASCII upper case)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  std::string_view rest = s.substr(sep + 3);
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return err("expected LISTENER://host:port");
  std::string_view host = rest.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  for (char c : host)
    if (!host_char_ok(c)) return err("invalid host");
  e.host = std::string(host);
  auto port = detail::parse_java_long(rest.substr(colon + 1), "port");
  if (!port || *port < -1 || *port > 65535) return err("invalid port");
  e.port = static_cast<int32_t>(*port);
  for (const auto& [listener, protocol] : map)
    if (listener == e.listener) e.security_protocol = protocol;
  if (e.security_protocol.empty()) return err("no security protocol for the listener");
  return e;
}

}  // namespace

std::string endpoint_connection_string(const BrokerEndPoint& e) {
  bool v6 = e.host.find(':') != std::string::npos;
  std::string host = v6 ? "[" + e.host + "]" : e.host;
  return e.listener + "://" + host + ":" + std::to_string(e.port);
}

std::string encode_broker_registration(const BrokerRegistration& b) {
  const BrokerEndPoint* plaintext = nullptr;
  for (const auto& e : b.endpoints)
    if (e.security_protocol == "PLAINTEXT") { plaintext = &e; break; }
  Json endpoints = Json::array();
  for (const auto& e : b.endpoints) endpoints.push(Json::string(endpoint_connection_string(e)));
  // BrokerIdZNode.encode: a mutable.Map of six, then rack, the listener map and features.
  Json::Object m;
  m.emplace_back("version", Json::integer(b.version));
  // Kafka keeps an empty (wildcard) host as null.
  bool has_host = plaintext != nullptr && !plaintext->host.empty();
  m.emplace_back("host", has_host ? Json::string(plaintext->host) : Json::null());
  m.emplace_back("port", Json::integer(plaintext ? plaintext->port : -1));
  m.emplace_back("endpoints", std::move(endpoints));
  m.emplace_back("jmx_port", Json::integer(b.jmx_port));
  m.emplace_back("timestamp", Json::string(std::to_string(b.timestamp_ms)));
  if (b.rack && b.version >= 3) m.emplace_back("rack", Json::string(*b.rack));
  if (b.version >= 4) {
    // endpoints.map(listener -> protocol).toMap: a later duplicate replaces the value in place.
    Json::Object lsp;
    for (const auto& e : b.endpoints) {
      bool replaced = false;
      for (auto& [k, v] : lsp)
        if (k == e.listener) { v = Json::string(e.security_protocol); replaced = true; }
      if (!replaced) lsp.emplace_back(e.listener, Json::string(e.security_protocol));
    }
    auto order = scala_immutable_map_order(keys_of(lsp));
    Json::Object sorted;
    for (size_t i : order) sorted.push_back(std::move(lsp[i]));
    m.emplace_back("listener_security_protocol_map", Json::object(std::move(sorted)));
  }
  if (b.version >= 5) m.emplace_back("features", b.features.is_object() ? b.features : Json::object());
  auto order = scala_mutable_hash_map_order(keys_of(m), 16);  // HashMap.from(6 members): 16 slots
  return encode_ordered(std::move(m), order);
}

Result<BrokerRegistration> decode_broker_registration(std::string_view bytes) {
  CK_TRY(o, detail::parse_payload(bytes));
  BrokerRegistration b;
  CK_TRY(version, payload_version(o, 1, 5));
  b.version = version;
  CK_TRY(jmx, field_int32(o, "jmx_port"));
  b.jmx_port = jmx;
  b.timestamp_ms = lenient_timestamp(o);
  if (version == 1) {
    CK_TRY(host, field_string(o, "host"));
    CK_TRY(port, field_int32(o, "port"));
    b.endpoints.push_back(BrokerEndPoint{"PLAINTEXT", host, port, "PLAINTEXT"});
  } else {
    std::vector<std::pair<std::string, std::string>> map;
    const Json* lsp = o.find("listener_security_protocol_map");
    if (lsp == nullptr || lsp->is_null()) {
      for (auto p : kSecurityProtocols) map.emplace_back(std::string(p), std::string(p));
    } else {
      if (!lsp->is_object()) return Error{"field 'listener_security_protocol_map': expected an object"};
      for (const auto& [k, v] : *lsp->if_object()) {
        if (!v.is_string() || !known_protocol(*v.if_string()))
          return Error{"field 'listener_security_protocol_map': unknown security protocol for '" + k + "'"};
        map.emplace_back(k, *v.if_string());
      }
    }
    CK_TRY(endpoints, field_array(o, "endpoints"));
    for (const Json& e : *endpoints->if_array()) {
      if (!e.is_string()) return Error{"field 'endpoints': expected an array of strings"};
      CK_TRY(ep, parse_endpoint(*e.if_string(), map));
      b.endpoints.push_back(std::move(ep));
    }
  }
  CK_TRY(rack, optional_string(o, "rack"));
  b.rack = rack;
  if (const Json* f = o.find("features"); f != nullptr && !f->is_null()) {
    if (!f->is_object()) return Error{"field 'features': expected an object"};
    b.features = *f;
  }
  return b;
}

// ---- controller

std::string encode_controller(int32_t broker_id, int64_t timestamp_ms, int32_t kraft_controller_epoch) {
  // ControllerZNode.encode: an immutable Map of four keeps insertion order.
  Json o = Json::object();
  o.add("version", Json::integer(2))
      .add("brokerid", Json::integer(broker_id))
      .add("timestamp", Json::string(std::to_string(timestamp_ms)))
      .add("kraftControllerEpoch", Json::integer(kraft_controller_epoch));
  return to_json(o);
}

Result<ControllerRegistration> decode_controller(std::string_view bytes) {
  CK_TRY(o, detail::parse_payload(bytes));
  CK_TRY(version, payload_version(o, 1, 2));
  (void)version;
  ControllerRegistration c;
  CK_TRY(id, field_int32(o, "brokerid"));
  c.broker_id = id;
  CK_TRY(kraft, optional_int32(o, "kraftControllerEpoch"));
  c.kraft_controller_epoch = kraft;
  c.timestamp_ms = lenient_timestamp(o);
  return c;
}

std::string encode_controller_epoch(int32_t epoch) { return std::to_string(epoch); }

Result<int32_t> decode_controller_epoch(std::string_view bytes) {
  CK_TRY(v, detail::parse_java_long(bytes, "controller epoch"));
  if (v < INT32_MIN || v > INT32_MAX) return Error{"controller epoch: out of int32 range"};
  return static_cast<int32_t>(v);
}

// ---- cluster id

std::string encode_cluster_id(std::string_view id) {
  Json o = Json::object();
  o.add("version", Json::string("1")).add("id", Json::string(std::string(id)));
  return to_json(o);
}

Result<std::string> decode_cluster_id(std::string_view bytes) {
  CK_TRY(o, detail::parse_payload(bytes));
  return field_string(o, "id");  // Kafka reads only "id"
}

// ---- topics

namespace {

Json partition_map(const std::map<int32_t, PartitionReplicas>& parts,
                   const std::vector<int32_t> PartitionReplicas::*list, bool skip_empty) {
  Json::Object m;
  for (const auto& [p, r] : parts) {
    const auto& v = r.*list;
    if (skip_empty && v.empty()) continue;
    m.emplace_back(std::to_string(p), int_list(v));
  }
  // A mutable.Map() (16 slots) grown one partition at a time.
  auto order = scala_mutable_hash_map_order(keys_of(m), scala_mutable_table_size(m.size()));
  Json::Object sorted;
  for (size_t i : order) sorted.push_back(std::move(m[i]));
  return Json::object(std::move(sorted));
}

Result<int32_t> partition_key(const std::string& key) {
  auto v = detail::parse_java_long(key, "field 'partitions'");
  if (!v || *v < 0 || *v > INT32_MAX) return Error{"field 'partitions': invalid partition '" + key.substr(0, 40) + "'"};
  return static_cast<int32_t>(*v);
}

// adding_replicas / removing_replicas: optional objects of optional lists.
Result<bool> read_replica_map(const Json& o, const char* key, std::vector<int32_t> PartitionReplicas::*list,
                              std::map<int32_t, PartitionReplicas>& parts) {
  const Json* m = o.find(key);
  if (m == nullptr || m->is_null()) return true;
  if (!m->is_object()) return Error{"field '" + std::string(key) + "': expected an object"};
  for (auto& [p, r] : parts) {
    const Json* l = m->find(std::to_string(p));
    if (l == nullptr) continue;
    CK_TRY(v, int32_list(*l, key));
    r.*list = std::move(v);
  }
  return true;
}

}  // namespace

std::string encode_topic_assignment(const TopicAssignment& t) {
  Json::Object m;
  m.emplace_back("version", Json::integer(3));
  m.emplace_back("partitions", partition_map(t.partitions, &PartitionReplicas::replicas, false));
  m.emplace_back("adding_replicas", partition_map(t.partitions, &PartitionReplicas::adding_replicas, true));
  m.emplace_back("removing_replicas", partition_map(t.partitions, &PartitionReplicas::removing_replicas, true));
  if (t.topic_id) m.emplace_back("topic_id", Json::string(storage::uuid_to_string(*t.topic_id)));
  // TopicZNode.encode: mutable.Map of four (HashMap.from: 8 slots), then topic_id.
  auto order = scala_mutable_hash_map_order(keys_of(m), 8);
  return encode_ordered(std::move(m), order);
}

Result<TopicAssignment> decode_topic_assignment(std::string_view bytes) {
  CK_TRY(o, detail::parse_payload(bytes));
  CK_TRY(version, payload_version(o, 1, 3));
  (void)version;
  TopicAssignment t;
  CK_TRY(topic_id, optional_string(o, "topic_id"));
  if (topic_id) {
    auto id = storage::uuid_from_string(*topic_id);
    if (!id.is_ok()) return Error{"field 'topic_id': not a base64url topic id: '" + topic_id->substr(0, 40) + "'"};
    t.topic_id = *id;
  }
  if (const Json* parts = o.find("partitions"); parts != nullptr && !parts->is_null()) {
    if (!parts->is_object()) return Error{"field 'partitions': expected an object"};
    for (const auto& [key, replicas] : *parts->if_object()) {
      CK_TRY(p, partition_key(key));
      CK_TRY(list, int32_list(replicas, "partitions"));
      t.partitions[p].replicas = std::move(list);
    }
  }
  CK_TRY(adding, read_replica_map(o, "adding_replicas", &PartitionReplicas::adding_replicas, t.partitions));
  CK_TRY(removing, read_replica_map(o, "removing_replicas", &PartitionReplicas::removing_replicas, t.partitions));
  (void)adding;
  (void)removing;
  return t;
}

// ---- partition state

std::string encode_partition_state(const PartitionState& s) {
  Json::Object m;
  m.emplace_back("version", Json::integer(1));
  m.emplace_back("leader", Json::integer(s.leader));
  m.emplace_back("leader_epoch", Json::integer(s.leader_epoch));
  m.emplace_back("controller_epoch", Json::integer(s.controller_epoch));
  m.emplace_back("isr", int_list(s.isr));
  if (s.leader_recovery_state != LeaderRecoveryState::kRecovered)
    m.emplace_back("leader_recovery_state", Json::integer(static_cast<int>(s.leader_recovery_state)));
  // TopicPartitionStateZNode.encode: an immutable Map of five (a CHAMP trie).
  auto order = scala_immutable_map_order(keys_of(m));
  return encode_ordered(std::move(m), order);
}

Result<PartitionState> decode_partition_state(std::string_view bytes) {
  CK_TRY(o, detail::parse_payload(bytes));
  CK_TRY(version, payload_version(o, 1, 1));
  (void)version;
  PartitionState s;
  CK_TRY(leader, field_int32(o, "leader"));
  CK_TRY(leader_epoch, field_int32(o, "leader_epoch"));
  CK_TRY(controller_epoch, field_int32(o, "controller_epoch"));
  CK_TRY(isr_json, field_array(o, "isr"));
  CK_TRY(isr, int32_list(*isr_json, "isr"));
  CK_TRY(recovery, optional_int32(o, "leader_recovery_state"));
  s.leader = leader;
  s.leader_epoch = leader_epoch;
  s.controller_epoch = controller_epoch;
  s.isr = std::move(isr);
  if (recovery) {
    if (*recovery != 0 && *recovery != 1)
      return Error{"field 'leader_recovery_state': unknown value " + std::to_string(*recovery)};
    s.leader_recovery_state = static_cast<LeaderRecoveryState>(*recovery);
  }
  return s;
}

}  // namespace ciuickafka::replication
