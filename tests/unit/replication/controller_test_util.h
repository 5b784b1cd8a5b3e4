// tests/unit/replication/controller_test_util.h: a fixture for the
// controller tests: an in-memory ZooKeeper with Kafka's paths, a controller
// epoch, topics written as the admin path (v3) or CMAK (v1) would, and
// helpers that read back what the controller wrote.
//
// Thread-safety: single-threaded tests.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "replication/controller/controller_state.h"
#include "replication/zk/fake_zk.h"
#include "replication/zk_data.h"

namespace ciuickafka::replication::controller::test {

inline LiveBroker broker(int32_t id) {
  LiveBroker b;
  b.id = id;
  b.epoch = 1000 + id;
  b.endpoints = {{"PLAINTEXT", "h" + std::to_string(id), 9090 + id, "PLAINTEXT"}};
  return b;
}

inline std::vector<LiveBroker> brokers(std::initializer_list<int32_t> ids) {
  std::vector<LiveBroker> out;
  for (int32_t id : ids) out.push_back(broker(id));
  return out;
}

inline bool never_unclean(const std::string&) { return false; }
inline bool always_unclean(const std::string&) { return true; }

struct Fixture {
  zk::FakeZkServer server;
  std::unique_ptr<zk::Client> client = server.client();
  std::unique_ptr<zk::Session> zk = connect();    // the controller's session
  std::unique_ptr<zk::Session> tool = connect();  // an admin tool / another broker
  ControllerIdentity id;

  Fixture() {
    for (auto p : kPersistentPaths) REQUIRE(zk::ensure_path(*tool, std::string(p)) == zk::Code::kOk);
    // Epoch 2 at zkVersion 1, as after a second election.
    REQUIRE(tool->create(std::string(kControllerEpochPath), "1", zk::CreateMode::kPersistent) == zk::Code::kOk);
    zk::Stat st;
    REQUIRE(tool->set(std::string(kControllerEpochPath), "2", 0, &st) == zk::Code::kOk);
    id.broker_id = 1;
    id.epoch = 2;
    id.epoch_zk_version = st.version;
  }

  std::unique_ptr<zk::Session> connect() {
    zk::ConnectOptions o;
    o.connect = "fake:2181/kafka";
    std::string error;
    auto s = client->connect(o, {}, &error);
    REQUIRE(s);
    return s;
  }

  void create_topic(const std::string& name, std::map<int32_t, std::vector<int32_t>> partitions, bool v1 = false) {
    std::string json;
    if (v1) {
      json = R"({"version":1,"partitions":{)";
      bool first = true;
      for (const auto& [p, rs] : partitions) {
        json += (first ? "\"" : ",\"") + std::to_string(p) + "\":[";
        for (size_t i = 0; i < rs.size(); ++i) json += (i ? "," : "") + std::to_string(rs[i]);
        json += "]";
        first = false;
      }
      json += "}}";
    } else {
      TopicAssignment a;
      a.topic_id = protocol::Uuid{};
      a.topic_id->bytes[0] = 7;
      a.topic_id->bytes[15] = static_cast<uint8_t>(name.size());
      for (auto& [p, rs] : partitions) a.partitions[p].replicas = rs;
      json = encode_topic_assignment(a);
    }
    REQUIRE(tool->create(topic_config_path(name), encode_entity_config({}), zk::CreateMode::kPersistent) ==
            zk::Code::kOk);
    REQUIRE(tool->create(topic_path(name), json, zk::CreateMode::kPersistent) == zk::Code::kOk);
  }

  // The state znode as a tool reads it; nullopt when absent.
  std::optional<PartitionState> state(const std::string& topic, int32_t p, int32_t* version = nullptr,
                                      std::string* raw = nullptr) {
    std::string data;
    zk::Stat st;
    if (tool->get(partition_state_path(topic, p), &data, &st) != zk::Code::kOk) return std::nullopt;
    auto s = decode_partition_state(data);
    REQUIRE(s.ok());
    if (version) *version = st.version;
    if (raw) *raw = data;
    return s.value();
  }

  bool exists(const std::string& path) { return tool->exists(path) == zk::Code::kOk; }

  // Another broker wins an election: /controller_epoch moves on.
  void bump_epoch() { REQUIRE(tool->set(std::string(kControllerEpochPath), "3", -1) == zk::Code::kOk); }
};

inline PartitionState ps(int32_t leader, int32_t leader_epoch, int32_t controller_epoch, std::vector<int32_t> isr) {
  PartitionState s;
  s.leader = leader;
  s.leader_epoch = leader_epoch;
  s.controller_epoch = controller_epoch;
  s.isr = std::move(isr);
  return s;
}

// The partition state LeaderAndIsr carries to broker b (nullptr if none).
inline const protocol::LeaderAndIsrRequest::LeaderAndIsrPartitionState* lai(const StepResult& r, int32_t b,
                                                                            const std::string& topic, int32_t p) {
  auto it = r.requests.leader_and_isr.find(b);
  if (it == r.requests.leader_and_isr.end()) return nullptr;
  for (const auto& t : it->second.topic_states)
    if (t.topic_name == topic)
      for (const auto& s : t.partition_states)
        if (s.partition_index == p) return &s;
  return nullptr;
}

inline const protocol::UpdateMetadataRequest::UpdateMetadataPartitionState* um(const StepResult& r, int32_t b,
                                                                               const std::string& topic, int32_t p) {
  auto it = r.requests.update_metadata.find(b);
  if (it == r.requests.update_metadata.end()) return nullptr;
  for (const auto& t : it->second.topic_states)
    if (t.topic_name == topic)
      for (const auto& s : t.partition_states)
        if (s.partition_index == p) return &s;
  return nullptr;
}

}  // namespace ciuickafka::replication::controller::test
