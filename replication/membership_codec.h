// replication/membership_codec.h: registrations in the shape
// ClusterMembership uses (ListenerEndpoint lists) over Kafka's codec in
// zk_data.h (and read from a session), broker ids from znode names, and
// new cluster ids.
//
// Thread-safety: pure functions (random_cluster_id uses its own generator;
// read_live_broker uses the session it is given).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "replication/membership.h"

namespace ciuickafka::replication {

// /brokers/ids/N, version 5.
std::string encode_registration(const std::vector<ListenerEndpoint>& endpoints, const std::optional<std::string>& rack,
                                int64_t timestamp_ms);
bool decode_registration(std::string_view data, std::vector<ListenerEndpoint>* endpoints,
                         std::optional<std::string>* rack, std::string* error);

// Reads /brokers/ids/<id> into *out, its epoch the znode's czxid. kOk: read,
// unless *why is set (the data does not decode: *out is not a broker);
// otherwise ZooKeeper's code (kNoNode: not registered).
zk::Code read_live_broker(zk::Session& session, int32_t id, LiveBroker* out, std::string* why,
                          zk::WatchFn watch = {});

// A child name of /brokers/ids ("3"); false for anything else.
bool parse_broker_id(std::string_view name, int32_t* id);

// A new cluster id in Kafka's form (a random UUID, base64url, 22 chars).
std::string random_cluster_id();
// A new topic id as Kafka's Uuid.randomUuid makes it: never zero, never the
// metadata topic's id (0, 1), never one whose base64 form starts with '-'.
protocol::Uuid random_topic_id();

}  // namespace ciuickafka::replication
