// replication/membership_codec.cc: ListenerEndpoint lists and ids to and
// from Kafka's payloads (zk_data.h).
#include "replication/membership_codec.h"

#include <charconv>
#include <random>

#include "replication/zk_data.h"
#include "storage/checkpoint.h"

namespace ciuickafka::replication {

std::string encode_registration(const std::vector<ListenerEndpoint>& endpoints, const std::optional<std::string>& rack,
                                int64_t timestamp_ms) {
  BrokerRegistration b;
  b.version = 5;
  b.endpoints = endpoints;
  b.timestamp_ms = timestamp_ms;
  b.rack = rack;
  return encode_broker_registration(b);
}

bool decode_registration(std::string_view data, std::vector<ListenerEndpoint>* endpoints,
                         std::optional<std::string>* rack, std::string* error) {
  auto r = decode_broker_registration(data);
  if (!r.ok()) {
    *error = r.error().message;
    return false;
  }
  *endpoints = r->endpoints;
  *rack = r->rack;
  return true;
}

zk::Code read_live_broker(zk::Session& session, int32_t id, LiveBroker* out, std::string* why, zk::WatchFn watch) {
  why->clear();
  std::string data;
  zk::Stat st;
  const zk::Code c = session.get(broker_id_path(id), &data, &st, std::move(watch));
  if (c != zk::Code::kOk) return c;
  LiveBroker b;
  b.id = id;
  b.epoch = st.czxid;
  if (!decode_registration(data, &b.endpoints, &b.rack, why)) return zk::Code::kOk;
  *out = std::move(b);
  return zk::Code::kOk;
}

bool parse_broker_id(std::string_view name, int32_t* id) {
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), *id);
  return !name.empty() && ec == std::errc() && end == name.data() + name.size() && *id >= 0;
}

std::string random_cluster_id() {
  std::random_device rd;
  protocol::Uuid id;
  for (auto& b : id.bytes) b = static_cast<uint8_t>(rd());
  return storage::uuid_to_string(id);
}

protocol::Uuid random_topic_id() {
  std::random_device rd;
  for (;;) {
    protocol::Uuid id;
    for (auto& b : id.bytes) b = static_cast<uint8_t>(rd());
    bool metadata_id = id.bytes[15] == 1;
    for (size_t i = 0; i < 15 && metadata_id; ++i) metadata_id = id.bytes[i] == 0;
    if (id.is_zero() || metadata_id || storage::uuid_to_string(id).starts_with('-')) continue;
    return id;
  }
}

}  // namespace ciuickafka::replication
