// broker/groups/offsets.cc: OffsetCommit, OffsetFetch and OffsetDelete on
// the coordinator: validation, the group checks of Kafka 3.9 (simple
// commits with generation -1 for groups without members), the append to
// __consumer_offsets and the in-memory cache.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/groups/coordinator.h"

namespace ciuickafka::broker::groups {

using protocol::ErrorCode;

namespace {

// The partition exists in the cluster (cluster mode: the metadata cache, as
// Kafka's metadataCache.contains; the coordinator need not host it).
bool partition_exists(Broker& b, const std::string& topic, int32_t partition) {
  if (b.cluster() != nullptr)
    return b.service<ReplicaManager>().metadata_cache().snapshot()->partition(topic, partition) != nullptr;
  auto t = b.topics().find(topic);
  return t && t->partition(partition) != nullptr;
}

}  // namespace

void GroupCoordinator::commit_offsets(const protocol::OffsetCommitRequest& req, int16_t version, CommitDone done,
                                      uint64_t connection_id) {
  using Resp = protocol::OffsetCommitResponse;
  Resp resp;
  // errors[i][j]: per request partition; NONE = to be written.
  std::vector<std::vector<ErrorCode>> errors;
  const int32_t max_meta = broker_.config().get_int("offset.metadata.max.bytes");
  bool any_valid = false;
  for (const auto& t : req.topics) {
    errors.emplace_back();
    for (const auto& p : t.partitions) {
      ErrorCode e = ErrorCode::NONE;
      if (!partition_exists(broker_, t.name, p.partition_index)) e = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
      else if (p.committed_metadata && static_cast<int64_t>(p.committed_metadata->size()) > max_meta)
        e = ErrorCode::OFFSET_METADATA_TOO_LARGE;
      any_valid = any_valid || e == ErrorCode::NONE;
      errors.back().push_back(e);
    }
  }
  auto finish = [req_topics = &req.topics](std::vector<std::vector<ErrorCode>>& errs, ErrorCode for_valid) {
    Resp r;
    for (size_t i = 0; i < req_topics->size(); ++i) {
      Resp::OffsetCommitResponseTopic rt;
      rt.name = (*req_topics)[i].name;
      for (size_t j = 0; j < (*req_topics)[i].partitions.size(); ++j) {
        Resp::OffsetCommitResponsePartition rp;
        rp.partition_index = (*req_topics)[i].partitions[j].partition_index;
        rp.error_code = protocol::to_wire(errs[i][j] == ErrorCode::NONE ? for_valid : errs[i][j]);
        rt.partitions.push_back(rp);
      }
      r.topics.push_back(std::move(rt));
    }
    return r;
  };
  auto fail_all = [&](ErrorCode e) {
    for (auto& t : errors) std::fill(t.begin(), t.end(), e);
    done(finish(errors, e));
  };
  if (const ErrorCode e = coordinator_error(req.group_id); e != ErrorCode::NONE) return fail_all(e);
  // Kafka 3.9's classic coordinator accepts an empty group id here (only
  // null is invalid for OffsetCommit/OffsetFetch).
  if (!any_valid) return done(finish(errors, ErrorCode::NONE));

  const bool simple = req.generation_id_or_member_epoch < 0;
  if (!simple) track_connection(connection_id, req.group_id);
  std::shared_ptr<Group> gp = simple ? get_or_create(req.group_id) : find(req.group_id);
  // Not found: an old generation of a group that is gone (simple commits:
  // the partition was unloaded since the check).
  if (!gp) return fail_all(simple ? ErrorCode::NOT_COORDINATOR : ErrorCode::ILLEGAL_GENERATION);

  Appended appended;
  ErrorCode group_error = ErrorCode::NONE;
  // The commits written, made visible once durable (Group::pending_offsets).
  auto updates = std::make_shared<std::map<TopicPartitionKey, CommittedOffset>>();
  {
    std::lock_guard<std::mutex> lock(gp->mu);
    Group& g = *gp;
    if (g.state == GroupState::kDead) group_error = ErrorCode::COORDINATOR_NOT_AVAILABLE;
    else if (simple && g.state == GroupState::kEmpty) group_error = ErrorCode::NONE;
    else if (g.fenced(req.group_instance_id, req.member_id)) group_error = ErrorCode::FENCED_INSTANCE_ID;
    else if (!g.has(req.member_id)) group_error = ErrorCode::UNKNOWN_MEMBER_ID;
    else if (req.generation_id_or_member_epoch != g.generation) group_error = ErrorCode::ILLEGAL_GENERATION;
    else if (g.state == GroupState::kCompletingRebalance) group_error = ErrorCode::REBALANCE_IN_PROGRESS;
    if (group_error == ErrorCode::NONE) {
      if (g.has(req.member_id)) {
        Member& m = g.members[req.member_id];
        m.heartbeat_deadline = steady_ms() + m.session_timeout_ms;
        if (connection_id != 0) m.connection_id = connection_id;
      }
      const int64_t now = Broker::now_ms();
      std::vector<OffsetsRecord> records;
      for (size_t i = 0; i < req.topics.size(); ++i) {
        for (size_t j = 0; j < req.topics[i].partitions.size(); ++j) {
          if (errors[i][j] != ErrorCode::NONE) continue;
          const auto& p = req.topics[i].partitions[j];
          CommittedOffset c;
          c.offset = p.committed_offset;
          c.leader_epoch = p.committed_leader_epoch;
          c.metadata = p.committed_metadata.value_or("");
          c.commit_timestamp = (version == 1 && p.commit_timestamp >= 0) ? p.commit_timestamp : now;
          if (version >= 2 && version <= 4 && req.retention_time_ms >= 0)
            c.expire_timestamp = c.commit_timestamp + req.retention_time_ms;
          records.push_back(offset_commit_record(g.id, req.topics[i].name, p.partition_index, c));
          (*updates)[TopicPartitionKey{req.topics[i].name, p.partition_index}] = std::move(c);
        }
      }
      appended = append(g.id, records);
      if (appended.error == ErrorCode::NONE)
        for (auto& [k, v] : *updates) g.pending_offsets[k] = appended.end_offset;
    }
  }
  if (group_error != ErrorCode::NONE) return done(finish(errors, group_error));
  auto shared_errors = std::make_shared<std::vector<std::vector<ErrorCode>>>(std::move(errors));
  auto topics = std::make_shared<std::vector<protocol::OffsetCommitRequest::OffsetCommitRequestTopic>>(req.topics);
  const int64_t position = appended.end_offset;
  when_durable(std::move(appended), [gp, position, updates, shared_errors, topics, done = std::move(done)](ErrorCode e) {
    {
      // Visible now, unless a newer commit or a tombstone for the key came since.
      std::lock_guard<std::mutex> lock(gp->mu);
      for (auto& [k, v] : *updates) {
        auto it = gp->pending_offsets.find(k);
        if (it == gp->pending_offsets.end() || it->second != position) continue;
        if (e == ErrorCode::NONE) gp->offsets[k] = std::move(v);
        gp->pending_offsets.erase(it);
      }
    }
    Resp r;
    for (size_t i = 0; i < topics->size(); ++i) {
      Resp::OffsetCommitResponseTopic rt;
      rt.name = (*topics)[i].name;
      for (size_t j = 0; j < (*topics)[i].partitions.size(); ++j) {
        Resp::OffsetCommitResponsePartition rp;
        rp.partition_index = (*topics)[i].partitions[j].partition_index;
        const ErrorCode pe = (*shared_errors)[i][j];
        rp.error_code = protocol::to_wire(pe == ErrorCode::NONE ? e : pe);
        rt.partitions.push_back(rp);
      }
      r.topics.push_back(std::move(rt));
    }
    done(std::move(r));
  });
}

protocol::OffsetFetchResponse::OffsetFetchResponseGroup GroupCoordinator::fetch_offsets(
    const std::string& group_id,
    const std::optional<std::vector<protocol::OffsetFetchRequest::OffsetFetchRequestTopics>>& topics,
    bool require_stable) {
  using G = protocol::OffsetFetchResponse::OffsetFetchResponseGroup;
  using T = protocol::OffsetFetchResponse::OffsetFetchResponseTopics;
  using P = protocol::OffsetFetchResponse::OffsetFetchResponsePartitions;
  G out;
  out.group_id = group_id;
  if (const ErrorCode e = coordinator_error(group_id); e != ErrorCode::NONE) {
    out.error_code = protocol::to_wire(e);
    return out;
  }
  std::map<TopicPartitionKey, CommittedOffset> offsets;
  // require_stable: the partitions whose transactional commit awaits its
  // marker, read under the same lock as the offsets (Kafka's getOffsets does
  // both inside group.inLock). Read apart, a COMMIT marker landing between
  // the two reads would let the old offset through as stable.
  std::set<TopicPartitionKey> pending;
  if (auto g = find(group_id)) {
    std::lock_guard<std::mutex> lock(g->mu);
    if (topics) {
      for (const auto& t : *topics)
        for (int32_t p : t.partition_indexes)
          if (auto it = g->offsets.find({t.name, p}); it != g->offsets.end()) offsets.emplace(it->first, it->second);
    } else {
      offsets = g->offsets;
    }
    if (require_stable)
      for (const auto& [pid, held] : g->txn_offsets)
        for (const auto& [k, c] : held) pending.insert(k);
  }
  auto fill = [&pending](P& p, const TopicPartitionKey& k, const CommittedOffset* c) {
    if (pending.count(k) > 0) {
      p.committed_offset = -1;
      p.committed_leader_epoch = -1;
      p.metadata = "";
      p.error_code = protocol::to_wire(ErrorCode::UNSTABLE_OFFSET_COMMIT);
      return;
    }
    p.committed_offset = c ? c->offset : -1;
    p.committed_leader_epoch = c ? c->leader_epoch : -1;
    p.metadata = c ? c->metadata : "";
  };
  if (topics) {
    for (const auto& t : *topics) {
      T rt;
      rt.name = t.name;
      for (int32_t idx : t.partition_indexes) {
        P p;
        p.partition_index = idx;
        auto it = offsets.find({t.name, idx});
        fill(p, TopicPartitionKey{t.name, idx}, it == offsets.end() ? nullptr : &it->second);
        rt.partitions.push_back(std::move(p));
      }
      out.topics.push_back(std::move(rt));
    }
  } else {
    for (const auto& [k, c] : offsets) {
      if (out.topics.empty() || out.topics.back().name != k.first) {
        T rt;
        rt.name = k.first;
        out.topics.push_back(std::move(rt));
      }
      P p;
      p.partition_index = k.second;
      fill(p, k, &c);
      out.topics.back().partitions.push_back(std::move(p));
    }
  }
  return out;
}

void GroupCoordinator::delete_offsets(const protocol::OffsetDeleteRequest& req, OffsetDeleteDone done) {
  using Resp = protocol::OffsetDeleteResponse;
  Resp resp;
  auto top = [&](ErrorCode e) {
    resp.error_code = protocol::to_wire(e);
    done(std::move(resp));
  };
  if (const ErrorCode e = coordinator_error(req.group_id); e != ErrorCode::NONE) return top(e);
  if (req.group_id.empty()) return top(ErrorCode::INVALID_GROUP_ID);
  auto gp = find(req.group_id);
  if (!gp) return top(ErrorCode::GROUP_ID_NOT_FOUND);
  Appended appended;
  {
    std::lock_guard<std::mutex> lock(gp->mu);
    Group& g = *gp;
    if (g.state == GroupState::kDead) {
      resp.error_code = protocol::to_wire(ErrorCode::GROUP_ID_NOT_FOUND);
    } else if (g.state != GroupState::kEmpty && g.protocol_type != "consumer") {
      resp.error_code = protocol::to_wire(ErrorCode::NON_EMPTY_GROUP);
    } else {
      const std::vector<std::string> subscribed =
          g.state == GroupState::kEmpty ? std::vector<std::string>{} : g.subscribed_topics();
      std::vector<OffsetsRecord> tombstones;
      for (const auto& t : req.topics) {
        Resp::OffsetDeleteResponseTopic rt;
        rt.name = t.name;
        const bool is_subscribed = std::find(subscribed.begin(), subscribed.end(), t.name) != subscribed.end();
        for (const auto& p : t.partitions) {
          Resp::OffsetDeleteResponsePartition rp;
          rp.partition_index = p.partition_index;
          ErrorCode e = ErrorCode::NONE;
          if (!partition_exists(broker_, t.name, p.partition_index)) e = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
          else if (is_subscribed) e = ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC;
          else if ((g.offsets.erase({t.name, p.partition_index}) +
                    g.pending_offsets.erase({t.name, p.partition_index})) != 0)
            tombstones.push_back(offset_commit_record(g.id, t.name, p.partition_index, std::nullopt));
          rp.error_code = protocol::to_wire(e);
          rt.partitions.push_back(rp);
        }
        resp.topics.push_back(std::move(rt));
      }
      if (!tombstones.empty()) appended = append(g.id, tombstones);
    }
  }
  if (resp.error_code != 0 || !appended.log) return done(std::move(resp));
  when_durable(std::move(appended), [resp = std::move(resp), done = std::move(done)](ErrorCode e) mutable {
    if (e != ErrorCode::NONE) resp.error_code = protocol::to_wire(e);
    done(std::move(resp));
  });
}

void GroupCoordinator::topic_deleted(const std::string& topic) {
  std::vector<std::shared_ptr<Group>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, g] : groups_) all.push_back(g);
  }
  for (const auto& gp : all) {
    std::lock_guard<std::mutex> lock(gp->mu);
    Group& g = *gp;
    std::set<int32_t> partitions;
    for (auto it = g.offsets.begin(); it != g.offsets.end();) {
      if (it->first.first != topic) {
        ++it;
        continue;
      }
      partitions.insert(it->first.second);
      it = g.offsets.erase(it);
    }
    for (auto it = g.pending_offsets.begin(); it != g.pending_offsets.end();) {
      if (it->first.first != topic) {
        ++it;
        continue;
      }
      partitions.insert(it->first.second);
      it = g.pending_offsets.erase(it);
    }
    if (partitions.empty()) continue;
    std::vector<OffsetsRecord> tombstones;
    for (int32_t p : partitions) tombstones.push_back(offset_commit_record(g.id, topic, p, std::nullopt));
    append(g.id, tombstones);
  }
}

}  // namespace ciuickafka::broker::groups
