// broker/cluster/zk_topics.h: topic administration in ZooKeeper mode.
//
// In a cluster, CreateTopics, CreatePartitions and DeleteTopics do not touch
// local logs: as Kafka 3.9's ZkAdminManager / AdminZkClient do, they write
// ZooKeeper and the controller does the rest (it watches /brokers/topics and
// /admin/delete_topics, creates the partition states and sends LeaderAndIsr,
// and the brokers named as replicas create the logs).
//
// - create: name rules, collision of '.' and '_' with an existing topic,
//   configs validated as on a single node, the assignment made by Kafka's
//   rules over the live brokers (replication/assignment.h; racks enforced:
//   a mix of brokers with and without broker.rack is refused) or taken from
//   the request (0-based consecutive partitions, one replication factor, no
//   duplicate replica). Then one multi writes /config/topics/T and
//   /brokers/topics/T (v3, with a new topic id); an existing topic znode is
//   TOPIC_ALREADY_EXISTS. validate_only runs every check and writes nothing.
// - add partitions: the topic znode read, the new partitions assigned (start
//   partition = the current count) or taken from the request (known brokers,
//   same replication factor), written back with a conditional set on the
//   version read, so a concurrent change is refused, not overwritten.
// - delete: /admin/delete_topics/T is created (already there: still
//   success, the deletion is under way).
// - alter configs: /config/topics/T replaced and a /config/changes
//   notification created in one multi; the brokers apply it
//   (cluster/config_changes.h).
//
// Every function makes blocking ZooKeeper calls: call them off the network
// threads (broker/admin/admin_worker.h). A ZooKeeper failure (a lost
// connection, an expired session) is REQUEST_TIMED_OUT, retriable for the
// client, with the ZooKeeper code in the message; nothing is half-written
// (each change is one multi or one conditional write).
//
// Thread-safety: stateless functions over the session (which is thread-safe).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "broker/cluster/topic_table.h"
#include "protocol/wire/types.h"
#include "replication/assignment.h"
#include "replication/zk/session.h"
#include "replication/zk_data.h"

namespace ciuickafka::broker {

struct ZkNewTopic {
  std::string name;
  int32_t partitions = -1;          // -1: num.partitions
  int16_t replication_factor = -1;  // -1: default.replication.factor
  replication::ReplicaAssignment assignment;  // explicit; empty: assign
  ConfigMap configs;
  std::vector<std::string> config_order;  // keys in request order (Kafka's Properties insertion)
};

struct ZkTopicResult {
  TopicError error;
  protocol::Uuid id{};                      // zero when validating or on error
  replication::ReplicaAssignment assignment;
  int16_t replication_factor = 0;
};

class ZkTopicAdmin {
 public:
  // live: the registered brokers (id, rack), as ClusterView has them.
  ZkTopicAdmin(replication::zk::Session& zk, const TopicTable& topics, std::vector<replication::BrokerRack> live)
      : zk_(zk), topics_(topics), live_(std::move(live)) {}

  ZkTopicResult create(const ZkNewTopic& t, bool validate_only);
  // new_total partitions in all; assignment (may be empty) for the added ones.
  TopicError add_partitions(const std::string& name, int32_t new_total,
                            const std::vector<std::vector<int32_t>>& assignment, bool validate_only);
  TopicError mark_for_deletion(const std::string& name);

  // The topic's config overrides as /config/topics/T has them (empty when
  // the znode is absent); UNKNOWN_TOPIC_OR_PARTITION when /brokers/topics/T
  // is absent.
  TopicError read_configs(const std::string& name, ConfigMap* out);
  // Replaces the topic's overrides with configs (Kafka's
  // AdminZkClient.changeTopicConfig): the topic must exist, the configs are
  // validated as on a single node, then one multi writes /config/topics/T
  // and creates the /config/changes/config_change_N notification (version
  // 2, entity_path topics/T) every broker watches and applies.
  TopicError alter_configs(const std::string& name, const ConfigMap& configs, bool validate_only);

  // The topic's assignment as /brokers/topics/T has it; false if absent.
  bool read_assignment(const std::string& name, replication::TopicAssignment* out, int32_t* version,
                       TopicError* error);

 private:
  TopicError zk_failure(replication::zk::Code code, const std::string& what) const;

  replication::zk::Session& zk_;
  const TopicTable& topics_;
  const std::vector<replication::BrokerRack> live_;
};

}  // namespace ciuickafka::broker
