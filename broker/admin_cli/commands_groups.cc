// broker/admin_cli/commands_groups.cc: consumer group commands of
// `ciuickafka admin` (see commands.h): list (every broker asked), describe
// with lag (FindCoordinator, DescribeGroups, OffsetFetch, then ListOffsets
// at each partition's leader), reset-offsets (refused while the group has
// members, as Kafka's tool does) and delete. One thread.
#include <algorithm>
#include <map>
#include <ostream>
#include <set>

#include "broker/admin_cli/commands.h"
#include "protocol/generated/consumer_protocol_assignment.h"
#include "protocol/generated/delete_groups.h"
#include "protocol/generated/describe_groups.h"
#include "protocol/generated/find_coordinator.h"
#include "protocol/generated/list_groups.h"
#include "protocol/generated/list_offsets.h"
#include "protocol/generated/offset_commit.h"
#include "protocol/generated/offset_fetch.h"

namespace ciuickafka::broker::admin_cli {

namespace proto = ciuickafka::protocol;

namespace {

using TopicPartition = std::pair<std::string, int32_t>;

// The coordinator's node id for `group` (its address learned).
int32_t find_coordinator(Ctx& c, const std::string& group) {
  const auto v = c.client.supported(KafkaClient::kBootstrap, proto::FindCoordinatorRequest::kApiKey, 0,
                                    proto::FindCoordinatorRequest::kHighestVersion);
  proto::FindCoordinatorRequest req;
  if (v && *v >= 4) req.coordinator_keys.push_back(group);
  else req.key = group;
  proto::FindCoordinatorResponse resp;
  c.client.call(KafkaClient::kBootstrap, req, &resp);
  int16_t err = resp.error_code;
  std::optional<std::string> msg = resp.error_message;
  int32_t node = resp.node_id;
  std::string host = resp.host;
  int32_t port = resp.port;
  if (v && *v >= 4) {
    if (resp.coordinators.empty()) throw CliError(kExitKafkaError, "FindCoordinator: empty answer for group " + group);
    const auto& co = resp.coordinators[0];
    err = co.error_code;
    msg = co.error_message;
    node = co.node_id;
    host = co.host;
    port = co.port;
  }
  if (err != 0) throw_kafka_error("find coordinator of group " + group, err, msg);
  c.client.learn(node, host, port);
  return node;
}

proto::DescribeGroupsResponse::DescribedGroup describe_group(Ctx& c, int32_t coordinator, const std::string& group) {
  proto::DescribeGroupsRequest req;
  req.groups.push_back(group);
  proto::DescribeGroupsResponse resp;
  c.client.call(coordinator, req, &resp);
  if (resp.groups.empty()) throw CliError(kExitKafkaError, "DescribeGroups: empty answer for group " + group);
  const auto& g = resp.groups[0];
  if (g.error_code != 0) throw_kafka_error("describe group " + group, g.error_code);
  // Kafka answers an unknown group with state Dead and no error.
  if (g.group_state == "Dead") throw_kafka_error("group " + group, 69);  // GROUP_ID_NOT_FOUND
  return g;
}

// Committed offsets of every partition the group has committed.
std::map<TopicPartition, int64_t> fetch_offsets(Ctx& c, int32_t coordinator, const std::string& group) {
  const auto v = c.client.supported(coordinator, proto::OffsetFetchRequest::kApiKey, 2,
                                    proto::OffsetFetchRequest::kHighestVersion);
  if (!v) throw CliError(kExitKafkaError, "the coordinator does not support OffsetFetch v2+");
  proto::OffsetFetchRequest req;
  if (*v >= 8) {
    proto::OffsetFetchRequest::OffsetFetchRequestGroup g;
    g.group_id = group;
    g.topics = std::nullopt;  // all
    req.groups.push_back(g);
  } else {
    req.group_id = group;
    req.topics = std::nullopt;
  }
  proto::OffsetFetchResponse resp;
  c.client.call(coordinator, req, &resp);
  std::map<TopicPartition, int64_t> out;
  auto take = [&](const std::string& topic, int32_t partition, int64_t offset, int16_t err) {
    if (err != 0) throw_kafka_error("committed offset of " + topic + "-" + std::to_string(partition), err);
    if (offset >= 0) out[{topic, partition}] = offset;
  };
  if (*v >= 8) {
    for (const auto& g : resp.groups) {
      if (g.error_code != 0) throw_kafka_error("fetch offsets of group " + group, g.error_code);
      for (const auto& t : g.topics)
        for (const auto& p : t.partitions) take(t.name, p.partition_index, p.committed_offset, p.error_code);
    }
  } else {
    if (resp.error_code != 0) throw_kafka_error("fetch offsets of group " + group, resp.error_code);
    for (const auto& t : resp.topics)
      for (const auto& p : t.partitions) take(t.name, p.partition_index, p.committed_offset, p.error_code);
  }
  return out;
}

// The partitions a consumer-protocol member was assigned ("" on junk).
std::vector<TopicPartition> decode_assignment(const proto::Bytes& b) {
  std::vector<TopicPartition> out;
  if (b.size() < 2) return out;
  proto::Reader r(b);
  int16_t v = r.read_int16();
  v = std::clamp<int16_t>(v, 0, proto::ConsumerProtocolAssignment::kHighestVersion);
  proto::ConsumerProtocolAssignment a;
  a.decode(r, v);
  if (!r.ok()) return {};
  for (const auto& tp : a.assigned_partitions)
    for (int32_t p : tp.partitions) out.emplace_back(tp.topic, p);
  return out;
}

std::string tp_list(const std::vector<TopicPartition>& tps) {
  std::map<std::string, std::vector<int32_t>> by_topic;
  for (const auto& [t, p] : tps) by_topic[t].push_back(p);
  std::string s;
  for (auto& [t, ps] : by_topic) {
    std::sort(ps.begin(), ps.end());
    if (!s.empty()) s += " ";
    s += t + ":" + join_ids(ps);
  }
  return s.empty() ? "-" : s;
}

}  // namespace

std::map<TopicPartition, int64_t> list_offsets(KafkaClient& client, const proto::MetadataResponse& md,
                                               const std::vector<TopicPartition>& partitions, int64_t timestamp) {
  std::map<int32_t, std::map<std::string, std::vector<int32_t>>> by_leader;
  for (const auto& [topic, part] : partitions) {
    int32_t leader = -1;
    for (const auto& t : md.topics)
      if (t.name.value_or("") == topic)
        for (const auto& p : t.partitions)
          if (p.partition_index == part) leader = p.leader_id;
    if (leader < 0) throw_kafka_error("offsets of " + topic + "-" + std::to_string(part), 5);  // LEADER_NOT_AVAILABLE
    by_leader[leader][topic].push_back(part);
  }
  std::map<TopicPartition, int64_t> out;
  for (const auto& [leader, topics] : by_leader) {
    proto::ListOffsetsRequest req;
    req.replica_id = -1;  // a consumer
    for (const auto& [topic, parts] : topics) {
      proto::ListOffsetsRequest::ListOffsetsTopic t;
      t.name = topic;
      for (int32_t p : parts) {
        proto::ListOffsetsRequest::ListOffsetsPartition lp;
        lp.partition_index = p;
        lp.timestamp = timestamp;
        t.partitions.push_back(lp);
      }
      req.topics.push_back(t);
    }
    const auto v = client.supported(leader, proto::ListOffsetsRequest::kApiKey, 1,
                                    proto::ListOffsetsRequest::kHighestVersion);
    if (!v) throw CliError(kExitKafkaError, "broker " + std::to_string(leader) + " does not support ListOffsets v1+");
    proto::ListOffsetsResponse resp;
    client.call(leader, req, &resp);
    for (const auto& t : resp.topics)
      for (const auto& p : t.partitions) {
        if (p.error_code != 0) throw_kafka_error("offsets of " + t.name + "-" + std::to_string(p.partition_index), p.error_code);
        out[{t.name, p.partition_index}] = p.offset;
      }
  }
  return out;
}

void cmd_groups_list(Ctx& c) {
  c.client.metadata(std::vector<std::string>{});
  std::map<std::string, std::pair<std::string, std::string>> groups;  // id -> (state, protocol type)
  for (int32_t node : c.client.nodes()) {
    proto::ListGroupsRequest req;
    proto::ListGroupsResponse resp;
    c.client.call(node, req, &resp);
    if (resp.error_code != 0) throw_kafka_error("list groups on broker " + std::to_string(node), resp.error_code);
    for (const auto& g : resp.groups) groups[g.group_id] = {g.group_state, g.protocol_type};
  }
  Table t{"", {"group", "state", "protocol_type"}, {}};
  for (const auto& [id, st] : groups)
    t.add({id, st.first.empty() ? Value() : Value(st.first), st.second.empty() ? Value() : Value(st.second)});
  c.print({t});
}

void cmd_groups_describe(Ctx& c) {
  const std::string group = c.inv.positional[0];
  const int32_t coord = find_coordinator(c, group);
  const auto g = describe_group(c, coord, group);
  auto committed = fetch_offsets(c, coord, group);

  Table info{"group", {"group", "state", "protocol_type", "protocol", "coordinator", "members"}, {}};
  info.add({group, g.group_state, g.protocol_type, g.protocol_data, coord, static_cast<int32_t>(g.members.size())});
  Table members{"members", {"member_id", "group_instance_id", "client_id", "host", "assignment"}, {}};
  std::map<TopicPartition, const proto::DescribeGroupsResponse::DescribedGroupMember*> owner;
  for (const auto& m : g.members) {
    std::vector<TopicPartition> assigned;
    if (g.protocol_type == "consumer") assigned = decode_assignment(m.member_assignment);
    for (const auto& tp : assigned) owner[tp] = &m;
    members.add({m.member_id, Value::opt(m.group_instance_id), m.client_id, m.client_host, tp_list(assigned)});
  }
  std::set<TopicPartition> all;
  for (const auto& [tp, off] : committed) all.insert(tp);
  for (const auto& [tp, m] : owner) all.insert(tp);
  std::set<std::string> topics;
  for (const auto& tp : all) topics.insert(tp.first);
  std::map<TopicPartition, int64_t> ends;
  if (!all.empty()) {
    auto md = c.client.metadata(std::vector<std::string>(topics.begin(), topics.end()));
    // A deleted topic's commits stay listed, without an end offset.
    std::vector<TopicPartition> known;
    for (const auto& tp : all)
      for (const auto& t : md.topics)
        if (t.error_code == 0 && t.name.value_or("") == tp.first)
          for (const auto& p : t.partitions)
            if (p.partition_index == tp.second) known.push_back(tp);
    ends = list_offsets(c.client, md, known, -1);
  }
  Table offsets{"offsets", {"topic", "partition", "committed", "log_end", "lag", "member_id", "client_id", "host"}, {}};
  for (const auto& tp : all) {
    auto ci = committed.find(tp);
    auto ei = ends.find(tp);
    Value lag;
    if (ei != ends.end()) lag = Value(ci != committed.end() ? std::max<int64_t>(0, ei->second - ci->second) : ei->second);
    auto oi = owner.find(tp);
    offsets.add({tp.first, tp.second, ci != committed.end() ? Value(ci->second) : Value(),
                 ei != ends.end() ? Value(ei->second) : Value(), lag,
                 oi != owner.end() ? Value(oi->second->member_id) : Value(),
                 oi != owner.end() ? Value(oi->second->client_id) : Value(),
                 oi != owner.end() ? Value(oi->second->client_host) : Value()});
  }
  c.print({info, members, offsets});
}

void cmd_groups_reset_offsets(Ctx& c) {
  const std::string group = c.inv.positional[0];
  const std::string topic = c.inv.get("topic");
  const int32_t coord = find_coordinator(c, group);
  const auto g = describe_group(c, coord, group);
  if (!g.members.empty())
    throw CliError(kExitKafkaError, "group " + group + " has " + std::to_string(g.members.size()) +
                                        " active member(s) (state " + g.group_state +
                                        "): offsets can only be reset when the group is empty; stop its consumers first");
  auto md = c.client.metadata(std::vector<std::string>{topic});
  const auto& mt = find_topic(md, topic);
  std::vector<TopicPartition> parts;
  for (const auto& p : mt.partitions) parts.emplace_back(topic, p.partition_index);
  std::sort(parts.begin(), parts.end());
  const auto committed = fetch_offsets(c, coord, group);
  std::map<TopicPartition, int64_t> target;
  if (c.inv.has("to-earliest")) {
    target = list_offsets(c.client, md, parts, -2);
  } else if (c.inv.has("to-latest")) {
    target = list_offsets(c.client, md, parts, -1);
  } else {
    int64_t n = 0;
    parse_int(c.inv.get("to-offset"), 0, INT64_MAX, &n);
    // Kafka's tool clamps to each partition's [log start, log end].
    const auto lo = list_offsets(c.client, md, parts, -2);
    const auto hi = list_offsets(c.client, md, parts, -1);
    for (const auto& tp : parts) target[tp] = std::clamp(n, lo.at(tp), hi.at(tp));
  }
  if (!c.inv.has("dry-run")) {
    proto::OffsetCommitRequest req;
    req.group_id = group;
    req.generation_id_or_member_epoch = -1;
    req.member_id = "";
    proto::OffsetCommitRequest::OffsetCommitRequestTopic t;
    t.name = topic;
    for (const auto& tp : parts) {
      proto::OffsetCommitRequest::OffsetCommitRequestPartition p;
      p.partition_index = tp.second;
      p.committed_offset = target.at(tp);
      p.committed_metadata = "";
      t.partitions.push_back(p);
    }
    req.topics.push_back(t);
    proto::OffsetCommitResponse resp;
    c.client.call(coord, req, &resp);
    for (const auto& rt : resp.topics)
      for (const auto& p : rt.partitions)
        if (p.error_code != 0)
          throw_kafka_error("commit offset of " + rt.name + "-" + std::to_string(p.partition_index), p.error_code);
  }
  Table out{"", {"group", "topic", "partition", "previous", "new_offset", "status"}, {}};
  for (const auto& tp : parts) {
    auto ci = committed.find(tp);
    out.add({group, topic, tp.second, ci != committed.end() ? Value(ci->second) : Value(), target.at(tp),
             c.inv.has("dry-run") ? "dry-run" : "committed"});
  }
  c.print({out});
}

void cmd_groups_delete(Ctx& c) {
  const std::string group = c.inv.positional[0];
  const int32_t coord = find_coordinator(c, group);
  proto::DeleteGroupsRequest req;
  req.groups_names.push_back(group);
  proto::DeleteGroupsResponse resp;
  c.client.call(coord, req, &resp);
  for (const auto& r : resp.results)
    if (r.error_code != 0) throw_kafka_error("delete group " + r.group_id, r.error_code);
  Table t{"", {"group", "status"}, {}};
  t.add({group, "deleted"});
  c.print({t});
}

}  // namespace ciuickafka::broker::admin_cli
