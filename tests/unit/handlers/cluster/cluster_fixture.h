// tests/unit/handlers/cluster/cluster_fixture.h: a broker in ZooKeeper mode
// over an in-memory ZooKeeper (replication/zk/fake_zk.h), and builders for
// the controller's requests as the controller fills them
// (replication/controller/request_batch.h).
//
// ClusterFixture owns the FakeZkServer (it outlives the broker), installs
// it as ZkCluster's client for Broker::open and removes it again. The
// broker is not registered (start_cluster is not called): tests set the
// broker epoch through ReplicaManager::set_broker_epoch_source.
//
// Thread-safety: one test thread.
#pragma once

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "broker/cluster/replica_manager.h"
#include "broker/cluster/zk_cluster.h"
#include "protocol/generated/alter_client_quotas.h"
#include "protocol/generated/leader_and_isr.h"
#include "protocol/generated/stop_replica.h"
#include "protocol/generated/update_metadata.h"
#include "replication/zk/fake_zk.h"
#include "replication/zk_data.h"
#include "tests/unit/handlers/broker_fixture.h"

namespace ciuickafka::broker::test {

struct FactoryGuard {
  explicit FactoryGuard(replication::zk::FakeZkServer& s) {
    ZkCluster::set_client_factory_for_tests([&s] { return s.client(); });
  }
  ~FactoryGuard() { ZkCluster::set_client_factory_for_tests({}); }
};

class ClusterFixture {
 public:
  explicit ClusterFixture(std::vector<std::string> overrides = {})
      : guard_(server_), broker_(with_zk(std::move(overrides))) {}

  BrokerFixture& f() { return broker_; }
  Broker& broker() { return broker_.broker(); }
  ReplicaManager& rm() { return broker().service<ReplicaManager>(); }
  replication::zk::FakeZkServer& zk() { return server_; }

  // A ZooKeeper session of a tool beside the broker (kept by the fixture).
  replication::zk::Session& tool_session() {
    if (!tool_) {
      std::string error;
      replication::zk::ConnectOptions o;
      o.connect = "fake:2181";
      tool_client_ = server_.client();
      tool_ = tool_client_->connect(o, {}, &error);
      if (!tool_) throw std::runtime_error(error);
    }
    return *tool_;
  }

  // Sets one client quota of the fixture's client id through AlterClientQuotas.
  void set_client_quota(const std::string& key, double value) {
    protocol::AlterClientQuotasRequest q;
    auto& e = q.entries.emplace_back();
    auto& d = e.entity.emplace_back();
    d.entity_type = "client-id";
    d.entity_name = "fixture";
    auto& op = e.ops.emplace_back();
    op.key = key;
    op.value = value;
    if (broker_.call<protocol::AlterClientQuotasResponse>(q, 1).entries.at(0).error_code != 0)
      throw std::runtime_error("AlterClientQuotas refused " + key);
  }

  // Writes /config/topics/<topic> as kafka-configs.sh would.
  void set_topic_config(const std::string& topic, const replication::ConfigEntries& entries) {
    std::string error;
    replication::zk::ConnectOptions o;
    o.connect = "fake:2181";
    auto client = server_.client();
    auto s = client->connect(o, {}, &error);
    if (!s) throw std::runtime_error(error);
    (void)replication::zk::ensure_path(*s, std::string(replication::kTopicConfigsPath));
    const std::string data = replication::encode_entity_config(entries);
    if (s->create(replication::topic_config_path(topic), data, replication::zk::CreateMode::kPersistent) !=
        replication::zk::Code::kOk)
      throw std::runtime_error("cannot write the topic config");
  }

 private:
  static std::vector<std::string> with_zk(std::vector<std::string> o) {
    o.push_back("zookeeper.connect=fake:2181");
    o.push_back("broker.id=1");
    return o;
  }
  replication::zk::FakeZkServer server_;
  FactoryGuard guard_;
  BrokerFixture broker_;
  std::unique_ptr<replication::zk::Client> tool_client_;
  std::unique_ptr<replication::zk::Session> tool_;  // goes before its client
};

inline protocol::Uuid uuid(uint8_t b) {
  protocol::Uuid u;
  u.bytes.fill(b);
  return u;
}

struct PartitionSpec {
  std::string topic;
  int32_t partition = 0;
  int32_t leader = 1;
  int32_t leader_epoch = 0;
  std::vector<int32_t> isr = {1};
  std::vector<int32_t> replicas = {1};
  protocol::Uuid topic_id = uuid(7);
};

// The generated encoders refuse fields the version lacks, so the builders
// fill either the ungrouped (old) or the grouped (new) shape.
inline protocol::LeaderAndIsrRequest leader_and_isr(const std::vector<PartitionSpec>& parts, int32_t controller_epoch = 1,
                                                    int64_t broker_epoch = -1, int16_t version = 7) {
  protocol::LeaderAndIsrRequest r;
  r.controller_id = 9;
  r.controller_epoch = controller_epoch;
  r.broker_epoch = broker_epoch;
  for (const auto& s : parts) {
    protocol::LeaderAndIsrRequest::LeaderAndIsrPartitionState p;
    p.topic_name = s.topic;  // used by v0-1 (ungrouped)
    p.partition_index = s.partition;
    p.controller_epoch = controller_epoch;
    p.leader = s.leader;
    p.leader_epoch = s.leader_epoch;
    p.isr = s.isr;
    p.partition_epoch = 3;
    p.replicas = s.replicas;
    if (version < 2) {
      r.ungrouped_partition_states.push_back(p);
      continue;
    }
    p.topic_name.clear();
    if (r.topic_states.empty() || r.topic_states.back().topic_name != s.topic) {
      r.topic_states.emplace_back();
      r.topic_states.back().topic_name = s.topic;
      if (version >= 5) r.topic_states.back().topic_id = s.topic_id;
    }
    r.topic_states.back().partition_states.push_back(p);
  }
  if (version < 2) r.broker_epoch = -1;
  return r;
}

inline protocol::UpdateMetadataRequest update_metadata(const std::vector<PartitionSpec>& parts,
                                                       const std::vector<int32_t>& live, int32_t controller_epoch = 1,
                                                       int16_t version = 8) {
  protocol::UpdateMetadataRequest r;
  r.controller_id = 9;
  r.controller_epoch = controller_epoch;
  for (int32_t id : live) {
    protocol::UpdateMetadataRequest::UpdateMetadataBroker b;
    b.id = id;
    if (version == 0) {
      b.v0_host = "host" + std::to_string(id);
      b.v0_port = 9000 + id;
    } else {
      protocol::UpdateMetadataRequest::UpdateMetadataEndpoint e;
      e.host = "host" + std::to_string(id);
      e.port = 9000 + id;
      if (version >= 3) e.listener = "PLAINTEXT";
      b.endpoints.push_back(e);
    }
    if (version >= 2) b.rack = std::nullopt;
    r.live_brokers.push_back(b);
  }
  for (const auto& s : parts) {
    protocol::UpdateMetadataRequest::UpdateMetadataPartitionState p;
    p.topic_name = s.topic;
    p.partition_index = s.partition;
    p.controller_epoch = controller_epoch;
    p.leader = s.leader;
    p.leader_epoch = s.leader_epoch;
    p.isr = s.isr;
    p.zk_version = 3;
    p.replicas = s.replicas;
    if (version >= 4)
      for (int32_t rep : s.replicas)
        if (std::find(live.begin(), live.end(), rep) == live.end()) p.offline_replicas.push_back(rep);
    if (version < 5) {
      r.ungrouped_partition_states.push_back(p);
      continue;
    }
    p.topic_name.clear();
    if (r.topic_states.empty() || r.topic_states.back().topic_name != s.topic) {
      r.topic_states.emplace_back();
      r.topic_states.back().topic_name = s.topic;
      if (version >= 7) r.topic_states.back().topic_id = s.topic_id;
    }
    r.topic_states.back().partition_states.push_back(p);
  }
  return r;
}

// Records the listener calls, in order.
struct RecordingListener : ReplicaRoleListener {
  std::vector<std::string> events;
  LeaderEndpoint last_leader;
  void became_leader(const std::shared_ptr<Partition>& p) override {
    events.push_back("leader " + p->topic() + "-" + std::to_string(p->index()));
  }
  void became_follower(const std::shared_ptr<Partition>& p, const LeaderEndpoint& l) override {
    events.push_back("follower " + p->topic() + "-" + std::to_string(p->index()));
    last_leader = l;
  }
  void stopped(const storage::TopicPartition& tp, bool deleted) override {
    events.push_back(std::string(deleted ? "deleted " : "stopped ") + tp.topic + "-" + std::to_string(tp.partition));
  }
};

}  // namespace ciuickafka::broker::test
