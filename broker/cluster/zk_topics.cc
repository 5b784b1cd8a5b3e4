// broker/cluster/zk_topics.cc: CreateTopics, CreatePartitions and
// DeleteTopics as ZooKeeper writes (Kafka's AdminZkClient rules).
#include "broker/cluster/zk_topics.h"

#include <algorithm>
#include <random>
#include <set>

#include "metrics/log/log.h"
#include "replication/membership_codec.h"
#include "replication/zk_data.h"

namespace ciuickafka::broker {
namespace {

using protocol::ErrorCode;
using replication::AssignmentErrc;
namespace zk = replication::zk;

constexpr int32_t kMaxPartitions = 100000;

ErrorCode assignment_error(AssignmentErrc c) {
  switch (c) {
    case AssignmentErrc::kInvalidPartitions: return ErrorCode::INVALID_PARTITIONS;
    case AssignmentErrc::kInvalidReplicationFactor: return ErrorCode::INVALID_REPLICATION_FACTOR;
    case AssignmentErrc::kMissingRack: return ErrorCode::UNKNOWN_SERVER_ERROR;  // AdminOperationException
    case AssignmentErrc::kInvalidArgument: break;
  }
  return ErrorCode::UNKNOWN_SERVER_ERROR;
}

// Topic.hasCollisionChars / unifyCollisionChars: '.' and '_' collide.
std::string unified(std::string name) {
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

std::string join(const std::vector<int32_t>& v) {
  std::string s;
  for (int32_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// AdminZkClient.validateTopicCreate's checks on an explicit assignment.
TopicError check_replicas(const replication::ReplicaAssignment& a, const std::set<int32_t>* known) {
  size_t rf = a.empty() ? 0 : a.begin()->second.size();
  for (const auto& [p, replicas] : a) {
    if (replicas.empty())
      return {ErrorCode::INVALID_REPLICA_ASSIGNMENT, "Replica assignment of partition " + std::to_string(p) +
                                                         " is empty."};
    if (std::set<int32_t>(replicas.begin(), replicas.end()).size() != replicas.size())
      return {ErrorCode::INVALID_REPLICA_ASSIGNMENT,
              "Duplicate replica assignment found: " + std::to_string(p) + " -> [" + join(replicas) + "]"};
    if (replicas.size() != rf)
      return {ErrorCode::INVALID_REPLICA_ASSIGNMENT, "All partitions should have the same number of replicas"};
    if (known != nullptr)
      for (int32_t b : replicas)
        if (!known->count(b))
          return {ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                  "Unknown broker(s) in replica assignment: " + std::to_string(b) + "."};
  }
  return {};
}

}  // namespace

TopicError ZkTopicAdmin::zk_failure(zk::Code code, const std::string& what) const {
  return {ErrorCode::REQUEST_TIMED_OUT,
          "ZooKeeper did not complete " + what + ": " + std::string(zk::to_string(code)) + "."};
}

ZkTopicResult ZkTopicAdmin::create(const ZkNewTopic& t, bool validate_only) {
  ZkTopicResult out;
  if (auto reason = TopicTable::invalid_name_reason(t.name)) {
    out.error = {ErrorCode::INVALID_TOPIC_EXCEPTION, *reason};
    return out;
  }
  const config::BrokerConfig& cfg = topics_.broker_config();
  replication::ReplicaAssignment assignment = t.assignment;
  if (assignment.empty()) {
    const int32_t partitions = t.partitions == -1 ? cfg.get_int("num.partitions") : t.partitions;
    const int32_t rf = t.replication_factor == -1 ? cfg.get_int("default.replication.factor") : t.replication_factor;
    if (partitions > kMaxPartitions) {
      out.error = {ErrorCode::INVALID_PARTITIONS, "Number of partitions is too large (at most 100000)."};
      return out;
    }
    auto brokers = replication::brokers_for_assignment(live_, replication::RackMode::kEnforced);
    if (!brokers.ok()) {
      out.error = {assignment_error(brokers.error().code), brokers.error().message};
      return out;
    }
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    auto made = replication::assign_replicas_random(brokers.value(), partitions, rf, rng);
    if (!made.ok()) {
      out.error = {assignment_error(made.error().code), made.error().message};
      return out;
    }
    assignment = std::move(made).value();
  } else {
    if (TopicError e = check_replicas(assignment, nullptr); !e.ok()) {
      out.error = e;
      return out;
    }
    if (assignment.rbegin()->first != static_cast<int32_t>(assignment.size()) - 1 || assignment.begin()->first != 0) {
      out.error = {ErrorCode::INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"};
      return out;
    }
  }
  if (TopicError e = topics_.validate_configs(t.configs); !e.ok()) {
    out.error = e;
    return out;
  }

  // Existence and collisions, against what ZooKeeper holds now.
  std::vector<std::string> existing;
  if (zk::Code c = zk_.children(std::string(replication::kTopicsPath), &existing); c != zk::Code::kOk) {
    out.error = zk_failure(c, "the topic list read");
    return out;
  }
  for (const std::string& name : existing) {
    if (name == t.name) {
      out.error = {ErrorCode::TOPIC_ALREADY_EXISTS, "Topic '" + t.name + "' already exists."};
      return out;
    }
  }
  const bool collision_chars = t.name.find_first_of("._") != std::string::npos;
  if (collision_chars) {
    for (const std::string& name : existing) {
      if (unified(name) == unified(t.name)) {
        out.error = {ErrorCode::INVALID_TOPIC_EXCEPTION,
                     "Topic '" + t.name + "' collides with existing topics: " + name};
        return out;
      }
    }
  }
  out.assignment = assignment;
  out.replication_factor = static_cast<int16_t>(assignment.begin()->second.size());
  if (validate_only) return out;

  replication::TopicAssignment znode;
  znode.topic_id = replication::random_topic_id();
  for (const auto& [p, replicas] : assignment) znode.partitions[p].replicas = replicas;
  replication::ConfigEntries entries;
  std::set<std::string> placed;
  for (const std::string& k : t.config_order) {
    auto it = t.configs.find(k);
    if (it != t.configs.end() && placed.insert(k).second) entries.emplace_back(k, it->second);
  }
  for (const auto& [k, v] : t.configs)
    if (placed.insert(k).second) entries.emplace_back(k, v);

  // Kafka writes the config first (a leftover one from a deleted topic is
  // overwritten), then creates the topic znode: here both in one multi.
  const std::string config_path = replication::topic_config_path(t.name);
  const std::string config_data = replication::encode_entity_config(entries);
  zk::Stat st;
  zk::Code exists = zk_.exists(config_path, &st);
  if (exists != zk::Code::kOk && exists != zk::Code::kNoNode) {
    out.error = zk_failure(exists, "the topic config check");
    return out;
  }
  std::vector<zk::Op> ops;
  ops.push_back(exists == zk::Code::kOk ? zk::Op::set_data(config_path, config_data, st.version)
                                        : zk::Op::create(config_path, config_data));
  ops.push_back(zk::Op::create(replication::topic_path(t.name), replication::encode_topic_assignment(znode)));
  std::vector<zk::OpResult> results;
  zk::Code c = zk_.multi(ops, &results);
  if (c != zk::Code::kOk) {
    const bool topic_exists = results.size() == 2 && results[1].code == zk::Code::kNodeExists;
    if (topic_exists) {
      out.error = {ErrorCode::TOPIC_ALREADY_EXISTS, "Topic '" + t.name + "' already exists."};
    } else if (results.size() == 2 && (results[0].code == zk::Code::kNodeExists ||
                                       results[0].code == zk::Code::kBadVersion)) {
      out.error = {ErrorCode::REQUEST_TIMED_OUT,
                   "The config of topic '" + t.name + "' changed while it was being created; retry."};
    } else {
      out.error = zk_failure(c, "the topic creation");
    }
    out.assignment.clear();
    return out;
  }
  out.id = *znode.topic_id;
  {
    size_t rf = out.assignment.empty() ? 0 : out.assignment.begin()->second.size();
    CK_LOG_INFO("topics", "topic %s created in ZooKeeper: %zu partition(s), replication factor %zu", t.name.c_str(),
                out.assignment.size(), rf);
  }
  return out;
}

bool ZkTopicAdmin::read_assignment(const std::string& name, replication::TopicAssignment* out, int32_t* version,
                                   TopicError* error) {
  std::string data;
  zk::Stat st;
  zk::Code c = zk_.get(replication::topic_path(name), &data, &st);
  if (c == zk::Code::kNoNode) {
    *error = {ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "The topic '" + name + "' does not exist."};
    return false;
  }
  if (c != zk::Code::kOk) {
    *error = zk_failure(c, "the topic read");
    return false;
  }
  auto decoded = replication::decode_topic_assignment(data);
  if (!decoded.ok()) {
    *error = {ErrorCode::UNKNOWN_SERVER_ERROR, "The znode of topic '" + name + "' is not valid: " +
                                                   decoded.error().message};
    return false;
  }
  *out = std::move(decoded).value();
  *version = st.version;
  return true;
}

TopicError ZkTopicAdmin::add_partitions(const std::string& name, int32_t new_total,
                                        const std::vector<std::vector<int32_t>>& assignment, bool validate_only) {
  replication::TopicAssignment current;
  int32_t version = -1;
  TopicError error;
  if (!read_assignment(name, &current, &version, &error)) return error;
  if (zk_.exists(replication::delete_topic_path(name)) == zk::Code::kOk)
    return {ErrorCode::INVALID_TOPIC_EXCEPTION, "The topic '" + name + "' is queued for deletion."};
  const auto count = static_cast<int32_t>(current.partitions.size());
  if (new_total <= count)
    return {ErrorCode::INVALID_PARTITIONS, "Topic currently has " + std::to_string(count) +
                                               " partitions, which is higher than the requested " +
                                               std::to_string(new_total) + "."};
  if (new_total > kMaxPartitions)
    return {ErrorCode::INVALID_PARTITIONS, "Number of partitions is too large (at most 100000)."};
  const size_t rf = current.partitions.empty() ? 1 : current.partitions.begin()->second.replicas.size();
  replication::ReplicaAssignment added;
  if (!assignment.empty()) {
    if (static_cast<int32_t>(assignment.size()) != new_total - count)
      return {ErrorCode::INVALID_REPLICA_ASSIGNMENT,
              "Increasing the number of partitions by " + std::to_string(new_total - count) + " but " +
                  std::to_string(assignment.size()) + " assignments provided."};
    for (size_t i = 0; i < assignment.size(); ++i) added[count + static_cast<int32_t>(i)] = assignment[i];
    std::set<int32_t> known;
    for (const auto& b : live_) known.insert(b.id);
    if (TopicError e = check_replicas(added, &known); !e.ok()) return e;
    if (added.begin()->second.size() != rf)
      return {ErrorCode::INVALID_REPLICA_ASSIGNMENT,
              "Inconsistent replication factor between partitions, partition 0 has " + std::to_string(rf) +
                  " while partitions [" + std::to_string(count) + "] have replication factors [" +
                  std::to_string(added.begin()->second.size()) + "], respectively."};
  } else {
    auto brokers = replication::brokers_for_assignment(live_, replication::RackMode::kEnforced);
    if (!brokers.ok()) return {assignment_error(brokers.error().code), brokers.error().message};
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    auto made = replication::assign_replicas_random(brokers.value(), new_total - count, static_cast<int32_t>(rf),
                                                    rng, count);
    if (!made.ok()) return {assignment_error(made.error().code), made.error().message};
    added = std::move(made).value();
  }
  if (validate_only) return {};
  for (const auto& [p, replicas] : added) current.partitions[p].replicas = replicas;
  zk::Code c = zk_.set(replication::topic_path(name), replication::encode_topic_assignment(current), version);
  if (c == zk::Code::kBadVersion)
    return {ErrorCode::REQUEST_TIMED_OUT, "The topic '" + name + "' changed while partitions were being added; retry."};
  if (c != zk::Code::kOk) return zk_failure(c, "the partition addition");
  return {};
}

TopicError ZkTopicAdmin::mark_for_deletion(const std::string& name) {
  zk::Code c = zk_.exists(replication::topic_path(name));
  if (c == zk::Code::kNoNode)
    return {ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."};
  if (c != zk::Code::kOk) return zk_failure(c, "the topic check");
  c = zk_.create(replication::delete_topic_path(name), "", zk::CreateMode::kPersistent);
  if (c == zk::Code::kOk || c == zk::Code::kNodeExists) {
    CK_LOG_INFO("topics", "topic %s marked for deletion (/admin/delete_topics)", name.c_str());
    return {};
  }
  return zk_failure(c, "the deletion request");
}

TopicError ZkTopicAdmin::read_configs(const std::string& name, ConfigMap* out) {
  out->clear();
  zk::Code c = zk_.exists(replication::topic_path(name));
  if (c == zk::Code::kNoNode) return {ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "Topic '" + name + "' does not exist."};
  if (c != zk::Code::kOk) return zk_failure(c, "the topic read");
  std::string data;
  c = zk_.get(replication::topic_config_path(name), &data);
  if (c == zk::Code::kNoNode) return {};
  if (c != zk::Code::kOk) return zk_failure(c, "the topic config read");
  auto decoded = replication::decode_entity_config(data);
  if (!decoded.ok())
    return {ErrorCode::UNKNOWN_SERVER_ERROR, replication::topic_config_path(name) + ": " + decoded.error().message};
  for (const auto& [k, v] : decoded.value()) (*out)[k] = v;
  return {};
}

TopicError ZkTopicAdmin::alter_configs(const std::string& name, const ConfigMap& configs, bool validate_only) {
  zk::Code c = zk_.exists(replication::topic_path(name));
  if (c == zk::Code::kNoNode) return {ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "Topic '" + name + "' does not exist."};
  if (c != zk::Code::kOk) return zk_failure(c, "the topic read");
  if (TopicError e = topics_.validate_configs(configs); !e.ok()) return e;
  if (validate_only) return {};
  replication::ConfigEntries entries(configs.begin(), configs.end());
  const std::string data = replication::encode_entity_config(entries);
  const std::string path = replication::topic_config_path(name);
  zk::Stat stat;
  c = zk_.exists(path, &stat);
  if (c != zk::Code::kOk && c != zk::Code::kNoNode) return zk_failure(c, "the topic config read");
  std::vector<zk::Op> ops;
  ops.push_back(c == zk::Code::kNoNode ? zk::Op::create(path, data) : zk::Op::set_data(path, data, stat.version));
  ops.push_back(zk::Op::create(std::string(replication::kConfigChangePrefix),
                               replication::encode_config_change("topics/" + name),
                               zk::CreateMode::kPersistentSequential));
  std::vector<zk::OpResult> results;
  c = zk_.multi(ops, &results);
  if (c == zk::Code::kBadVersion || c == zk::Code::kNodeExists)
    return {ErrorCode::REQUEST_TIMED_OUT, "The config of topic '" + name + "' changed concurrently; try again."};
  if (c != zk::Code::kOk) return zk_failure(c, "the topic config write");
  return {};
}

}  // namespace ciuickafka::broker
