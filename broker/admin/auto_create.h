// broker/admin/auto_create.h: topic creation on first use (Metadata with
// auto.create.topics.enable) and the settings of the internal topics.
//
// An ordinary topic gets num.partitions and default.replication.factor (the
// TopicTable defaults). The internal topics (__consumer_offsets,
// __transaction_state) get their own partition count and segment size keys
// (offsets.topic.*, transaction.state.log.*), replication factor 1 (one
// node; Kafka's default of 3 could never be met) and cleanup.policy=compact,
// as Kafka creates them. The group coordinator can call
// ensure_internal_topic() to get the same topic.
//
// A concurrent creator winning the race (TOPIC_ALREADY_EXISTS) counts as
// success: the topic exists either way.
//
// Cluster mode (zookeeper.connect): an ordinary topic is created through
// ZooKeeper (broker/cluster/zk_topics.h) on the admin worker, and the
// Metadata answer is LEADER_NOT_AVAILABLE (retriable) until the controller
// has elected its leaders, as Kafka answers an auto-created topic. A
// replication factor above the live brokers is INVALID_REPLICATION_FACTOR
// at once. One creation per name is in flight at a time, so a client
// retrying Metadata does not queue more. The internal topics are created
// the same way with their own settings (internal_topic_settings(): the
// offsets.topic.* / transaction.state.log.* partitions, replication factor
// and segment size, compact, producer compression for the offsets topic);
// the group coordinator queues __consumer_offsets from FindCoordinator.
//
// Header-only (inline functions): small, and used by several handler files.
// Thread-safety: any thread (TopicTable serialises creations).
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "broker/admin/admin_worker.h"
#include "broker/broker.h"
#include "broker/cluster/zk_topics.h"
#include "metrics/log/log.h"
#include "protocol/error_code.h"

namespace ciuickafka::broker::admin {

struct AutoCreated {
  TopicError error;
  std::shared_ptr<const Topic> topic;
};

inline AutoCreated finish_create(Broker& broker, std::string_view name, TopicTable::Created created) {
  if (created.error.code == protocol::ErrorCode::TOPIC_ALREADY_EXISTS) {
    if (auto t = broker.topics().find(name)) return {{}, t};
  }
  return {created.error, created.topic};
}

// An internal topic's settings, as Kafka creates it (GroupCoordinator's
// groupMetadataTopicConfigs, the transaction log's likewise).
struct InternalTopicSettings {
  int32_t partitions = 0;
  int16_t replication_factor = 0;  // the configured one (a single node uses 1)
  ConfigMap configs;
  std::vector<std::string> config_order;
};

inline InternalTopicSettings internal_topic_settings(Broker& broker, std::string_view name) {
  const auto& cfg = broker.config();
  const bool offsets = name == "__consumer_offsets";
  InternalTopicSettings s;
  s.partitions = cfg.get_int(offsets ? "offsets.topic.num.partitions" : "transaction.state.log.num.partitions");
  s.replication_factor = static_cast<int16_t>(
      cfg.get_int(offsets ? "offsets.topic.replication.factor" : "transaction.state.log.replication.factor"));
  const int32_t segment_bytes =
      cfg.get_int(offsets ? "offsets.topic.segment.bytes" : "transaction.state.log.segment.bytes");
  s.configs = {{"cleanup.policy", "compact"}, {"segment.bytes", std::to_string(segment_bytes)}};
  s.config_order = {"cleanup.policy", "segment.bytes"};
  if (offsets) {
    s.configs["compression.type"] = "producer";
    s.config_order.push_back("compression.type");
  }
  return s;
}

// Creates an internal topic (__consumer_offsets, __transaction_state) with
// its own settings, or returns the existing one (a single node: local, one
// replica whatever the configured replication factor).
inline AutoCreated ensure_internal_topic(Broker& broker, std::string_view name) {
  if (auto t = broker.topics().find(name)) return {{}, t};
  InternalTopicSettings s = internal_topic_settings(broker, name);
  return finish_create(broker, name,
                       broker.topics().create(name, s.partitions, 1, s.configs, false, Broker::now_ms()));
}

// The names whose ZooKeeper creation is queued or running (cluster mode).
class AutoCreateInFlight {
 public:
  explicit AutoCreateInFlight(Broker&) {}
  bool begin(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return names_.insert(name).second;
  }
  void end(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    names_.erase(name);
  }

 private:
  std::mutex mu_;
  std::set<std::string> names_;
};

inline AutoCreated auto_create_in_cluster(Broker& broker, std::string_view name) {
  const protocol::ErrorCode pending = protocol::ErrorCode::LEADER_NOT_AVAILABLE;
  auto view = broker.cluster()->view();
  const bool internal = name == "__consumer_offsets" || name == "__transaction_state";
  const int32_t rf = internal ? internal_topic_settings(broker, name).replication_factor
                              : broker.config().get_int("default.replication.factor");
  const size_t live = view ? view->brokers.size() : 0;
  if (view && static_cast<size_t>(rf) > live)
    return {{protocol::ErrorCode::INVALID_REPLICATION_FACTOR,
             "Replication factor: " + std::to_string(rf) + " larger than available brokers: " +
                 std::to_string(live) + "."},
            nullptr};
  std::string n(name);
  auto& in_flight = broker.service<AutoCreateInFlight>();
  if (!in_flight.begin(n)) return {{pending, ""}, nullptr};
  CK_LOG_INFO("topics", "auto-creating topic %s in ZooKeeper (auto.create.topics.enable)", n.c_str());
  Broker* b = &broker;
  bool posted = broker.service<AdminWorker>().post([b, n] {
    auto session = b->cluster()->session();
    auto v = b->cluster()->view();
    if (session) {
      std::vector<replication::BrokerRack> brokers;
      if (v)
        for (const auto& lb : v->brokers) brokers.push_back({lb.id, lb.rack});
      ZkTopicAdmin zk_admin(*session, b->topics(), std::move(brokers));
      ZkNewTopic t;
      t.name = n;
      if (n == "__consumer_offsets" || n == "__transaction_state") {
        InternalTopicSettings s = internal_topic_settings(*b, n);
        t.partitions = s.partitions;
        t.replication_factor = s.replication_factor;
        t.configs = std::move(s.configs);
        t.config_order = std::move(s.config_order);
        if (n == "__transaction_state") {
          // Kafka's transaction log: acks=-1 writes need this many in-sync
          // replicas (a single node has no such check).
          t.configs["min.insync.replicas"] = std::to_string(b->config().get_int("transaction.state.log.min.isr"));
          t.config_order.push_back("min.insync.replicas");
        }
      }
      (void)zk_admin.create(t, false);  // TOPIC_ALREADY_EXISTS: another broker won; the next Metadata sees it
    }
    b->service<AutoCreateInFlight>().end(n);
  });
  if (!posted) in_flight.end(n);
  return {{pending, ""}, nullptr};
}

// Creates a topic a client asked for by name (Metadata auto-creation).
inline AutoCreated auto_create_topic(Broker& broker, std::string_view name) {
  if (broker.cluster() != nullptr) return auto_create_in_cluster(broker, name);
  if (name == "__consumer_offsets" || name == "__transaction_state") return ensure_internal_topic(broker, name);
  CK_LOG_INFO("topics", "auto-creating topic %.*s (auto.create.topics.enable)", static_cast<int>(name.size()),
              name.data());
  return finish_create(broker, name, broker.topics().create(name, -1, -1, {}, false, Broker::now_ms()));
}

}  // namespace ciuickafka::broker::admin
