// broker/handlers/delete_topics.cc: DeleteTopics (key 20), versions 0-6.
//
// v0-5 name topics by name (topic_names), v6 by name or by topic id (topics;
// giving both, or neither, is INVALID_REQUEST). Following Kafka:
//   - delete.topic.enable=false: TOPIC_DELETION_DISABLED for every topic
//     (INVALID_REQUEST before v3, which lacks that code);
//   - internal topics (__consumer_offsets, __transaction_state) cannot be
//     deleted: INVALID_TOPIC_EXCEPTION;
//   - unknown name UNKNOWN_TOPIC_OR_PARTITION, unknown id UNKNOWN_TOPIC_ID;
//   - a topic named twice in one request: one INVALID_REQUEST result for it
//     (Kafka keys results by name, or by id when named by id).
//   - controller_mutation_rate (handlers/mutation_quota.h): a topic about
//     to be deleted records its partitions; from v5 a topic met by an
//     exhausted quota is not deleted and answers THROTTLING_QUOTA_EXCEEDED.
// Single node: deletion is complete when we answer (the logs are renamed to
// -delete and removed later by the log manager); the topic's metric series
// go with it, and so do the groups' committed offsets for it (as Kafka's
// group coordinator drops a deleted partition's offsets). Cluster mode: the topic is marked in /admin/delete_topics (on
// the admin worker, broker/cluster/zk_topics.h) and the controller deletes
// it; a topic already marked is success again.
#include <map>
#include <set>

#include "broker/admin/zk_admin_task.h"
#include "broker/broker.h"
#include "broker/cluster/zk_topics.h"
#include "broker/groups/coordinator.h"
#include "broker/cluster/metadata_cache.h"
#include "broker/cluster/replica_manager.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/mutation_quota.h"
#include "broker/handlers/registry.h"
#include "broker/server/io_pool.h"
#include "protocol/error_code.h"
#include "protocol/generated/delete_topics.h"
#include "replication/zk_data.h"

namespace ciuickafka::broker {
namespace {

using protocol::DeleteTopicsRequest;
using protocol::DeleteTopicsResponse;
using protocol::ErrorCode;
using protocol::to_wire;

using DeletionResult = DeleteTopicsResponse::DeletableTopicResult;

struct Target {
  std::optional<std::string> name;
  protocol::Uuid id{};
};

DeletionResult deletion_result(const Target& t, ErrorCode code, std::optional<std::string> message) {
  DeletionResult r;
  r.name = t.name;
  r.topic_id = t.id;
  r.error_code = to_wire(code);
  r.error_message = code == ErrorCode::NONE ? std::nullopt : std::move(message);
  return r;
}

// Cluster mode: the topic is marked in /admin/delete_topics; the controller
// stops and deletes its replicas and removes its znodes.
DeletionResult delete_one_in_cluster(Broker& broker, ZkTopicAdmin& admin, replication::zk::Session& zk,
                                     Target t, quotas::MutationQuota& quota) {
  if (!t.name) {
    // By id: the topic whose assignment znode carries it.
    std::vector<std::string> names;
    replication::zk::Code c = zk.children(std::string(replication::kTopicsPath), &names);
    if (c != replication::zk::Code::kOk)
      return deletion_result(
          t, ErrorCode::REQUEST_TIMED_OUT,
          "ZooKeeper did not complete the topic list read: " + std::string(replication::zk::to_string(c)));
    for (const std::string& n : names) {
      replication::TopicAssignment a;
      int32_t version = -1;
      TopicError e;
      if (admin.read_assignment(n, &a, &version, &e) && a.topic_id && *a.topic_id == t.id) {
        t.name = n;
        break;
      }
    }
    if (!t.name)
      return deletion_result(t, ErrorCode::UNKNOWN_TOPIC_ID, "This server does not host this topic ID.");
  }
  if (*t.name == "__consumer_offsets" || *t.name == "__transaction_state")
    return deletion_result(
        t, ErrorCode::INVALID_TOPIC_EXCEPTION,
        "Topic " + *t.name + " is a kafka internal topic and is not allowed to be marked for deletion.");
  if (t.id.is_zero()) {
    replication::TopicAssignment a;
    int32_t version = -1;
    TopicError e;
    if (admin.read_assignment(*t.name, &a, &version, &e) && a.topic_id) t.id = *a.topic_id;
  }
  if (quota.active()) {  // the partitions this broker's metadata knows, as Kafka counts them
    auto snap = broker.service<ReplicaManager>().metadata_cache().snapshot();
    const CachedTopic* ct = snap->topic(*t.name);  // (unknown: answered by the marking below)
    if (ct != nullptr && !quota.record(static_cast<double>(ct->partitions.size())))
      return deletion_result(t, ErrorCode::THROTTLING_QUOTA_EXCEEDED, kThrottledMessage);
  }
  TopicError e = admin.mark_for_deletion(*t.name);
  return deletion_result(t, e.code, e.message);
}

DeletionResult delete_one(Broker& broker, Target t, int16_t version, ZkTopicAdmin* admin,
                          replication::zk::Session* zk, quotas::MutationQuota& quota) {
  if (!broker.config().get_bool("delete.topic.enable"))
    return deletion_result(t, version < 3 ? ErrorCode::INVALID_REQUEST : ErrorCode::TOPIC_DELETION_DISABLED,
                           "Topic deletion is disabled.");
  if (admin != nullptr) return delete_one_in_cluster(broker, *admin, *zk, std::move(t), quota);
  std::shared_ptr<const Topic> topic;
  if (t.name) {
    topic = broker.topics().find(*t.name);
    if (!topic)
      return deletion_result(t, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                             "This server does not host this topic.");
  } else {
    topic = broker.topics().find(t.id);
    if (!topic)
      return deletion_result(t, ErrorCode::UNKNOWN_TOPIC_ID, "This server does not host this topic ID.");
    t.name = topic->name;
  }
  t.id = topic->id;
  if (topic->is_internal())
    return deletion_result(
        t, ErrorCode::INVALID_TOPIC_EXCEPTION,
        "Topic " + topic->name + " is a kafka internal topic and is not allowed to be marked for deletion.");
  if (!quota.record(static_cast<double>(topic->partitions.size())))
    return deletion_result(t, ErrorCode::THROTTLING_QUOTA_EXCEEDED, kThrottledMessage);
  TopicError e = broker.topics().remove(topic->name);
  if (e.ok() || e.code == ErrorCode::KAFKA_STORAGE_ERROR) broker.metrics().remove_topic(topic->name);
  if (e.ok()) broker.service<groups::GroupCoordinator>().topic_deleted(topic->name);
  return deletion_result(t, e.code, e.message);
}

void answer(RequestContext& ctx, const DeleteTopicsRequest& req, ZkTopicAdmin* admin,
            replication::zk::Session* zk) {
  const int16_t version = ctx.api_version();
  std::vector<Target> targets;
  if (version >= 6) {
    for (const auto& s : req.topics) targets.push_back({s.name, s.topic_id});
  } else {
    for (const auto& n : req.topic_names) targets.push_back({n, {}});
  }
  // Duplicates (by name, or by id when named by id).
  std::map<std::string, int> names;
  std::map<protocol::Uuid, int> ids;
  for (const auto& t : targets) {
    if (t.name) ++names[*t.name];
    else ++ids[t.id];
  }

  DeleteTopicsResponse resp;
  quotas::MutationQuota quota = mutation_quota_for(ctx, 5);
  for (const auto& t : targets) {
    if (t.name && !t.id.is_zero()) {
      resp.responses.push_back(deletion_result(t, ErrorCode::INVALID_REQUEST,
                                               "Topic name and topic ID can not both be specified."));
    } else if (!t.name && t.id.is_zero()) {
      resp.responses.push_back(
          deletion_result(t, ErrorCode::INVALID_REQUEST, "Neither topic name nor id were specified."));
    } else if (t.name ? names[*t.name] > 1 : ids[t.id] > 1) {
      // Named twice: answered once, where it first appears (the count goes
      // to 0 so later entries for it are skipped).
      resp.responses.push_back(deletion_result(t, ErrorCode::INVALID_REQUEST, "Duplicate topic in request."));
      (t.name ? names[*t.name] : ids[t.id]) = 0;
    } else if (t.name ? names[*t.name] == 0 : ids[t.id] == 0) {
      continue;  // a duplicate already answered
    } else {
      resp.responses.push_back(delete_one(*ctx.broker, t, version, admin, zk, quota));
    }
  }
  respond_with_mutation_quota(ctx, resp, quota);
}

void handle_delete_topics(RequestContext&& ctx) {
  auto req = std::make_shared<DeleteTopicsRequest>();
  if (!decode_request(ctx, *req)) {
    ctx.respond(Response::close());
    return;
  }
  Broker& broker = *ctx.broker;
  if (broker.cluster() == nullptr) {  // removals and fsyncs: on the I/O pool
    broker.service<IoPool>().post_request(ctx, [ctx, req]() mutable { answer(ctx, *req, nullptr, nullptr); });
    return;
  }
  auto fail_all = [](RequestContext& c, const DeleteTopicsRequest& r, const std::string& why) {
    DeleteTopicsResponse resp;
    if (c.api_version() >= 6) {
      for (const auto& s : r.topics)
        resp.responses.push_back(deletion_result({s.name, s.topic_id}, ErrorCode::REQUEST_TIMED_OUT, why));
    } else {
      for (const auto& n : r.topic_names)
        resp.responses.push_back(deletion_result({n, {}}, ErrorCode::REQUEST_TIMED_OUT, why));
    }
    c.respond(make_response(c, resp));
  };
  admin::with_zk_admin(
      broker,
      [ctx, req](ZkTopicAdmin& admin, replication::zk::Session& session) mutable {
        answer(ctx, *req, &admin, &session);
      },
      [ctx, req, fail_all](const std::string& why) mutable { fail_all(ctx, *req, why); },
      ctx.worker_span);
}

}  // namespace

CK_REGISTER_HANDLER(protocol::DeleteTopicsRequest, 0, 6, handle_delete_topics);

}  // namespace ciuickafka::broker
