// broker/handlers/create_partitions.cc: CreatePartitions (key 37),
// versions 0-3.
//
// Partitions can only be added (TopicTable::add_partitions: a count that is
// not an increase is INVALID_PARTITIONS with a message). Explicit
// assignments, when given, must have one entry per new partition, each
// exactly [this node]; otherwise INVALID_REPLICA_ASSIGNMENT, as Kafka says
// of an assignment it cannot honour. A topic named twice in one request gets
// one INVALID_REQUEST result (Kafka keys results by name); validate_only checks and changes nothing. Cluster mode:
// the added partitions are assigned over the live brokers (or as given,
// naming live brokers with the topic's replication factor) and written to
// /brokers/topics/T on the admin worker (broker/cluster/zk_topics.h).
// controller_mutation_rate (handlers/mutation_quota.h): a topic that passed
// its checks records the partitions it adds before they are written; from
// v3 a topic met by an exhausted quota answers THROTTLING_QUOTA_EXCEEDED.
#include <map>
#include <set>

#include "broker/admin/zk_admin_task.h"
#include "broker/broker.h"
#include "broker/cluster/zk_topics.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/mutation_quota.h"
#include "broker/handlers/registry.h"
#include "broker/server/io_pool.h"
#include "protocol/error_code.h"
#include "protocol/generated/create_partitions.h"

namespace ciuickafka::broker {
namespace {

using protocol::CreatePartitionsRequest;
using protocol::CreatePartitionsResponse;
using protocol::ErrorCode;
using protocol::to_wire;

using PartitionsResult = CreatePartitionsResponse::CreatePartitionsTopicResult;

PartitionsResult partitions_result(const std::string& name, ErrorCode code, std::string message) {
  PartitionsResult r;
  r.name = name;
  r.error_code = to_wire(code);
  if (code != ErrorCode::NONE) r.error_message = std::move(message);
  return r;
}

PartitionsResult grow(Broker& broker, const CreatePartitionsRequest::CreatePartitionsTopic& t,
                      bool validate_only, quotas::MutationQuota& quota) {
  auto topic = broker.topics().find(t.name);
  if (!topic)
    return partitions_result(t.name, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                             "The topic '" + t.name + "' does not exist.");
  const auto current = static_cast<int32_t>(topic->partitions.size());
  if (t.assignments && !t.assignments->empty() && t.count > current) {
    const auto added = t.count - current;
    if (static_cast<int32_t>(t.assignments->size()) != added)
      return partitions_result(t.name, ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                               "Increasing the number of partitions by " + std::to_string(added) + " but " +
                                   std::to_string(t.assignments->size()) + " assignments provided.");
    for (const auto& a : *t.assignments)
      if (a.broker_ids.size() != 1 || a.broker_ids[0] != broker.node_id())
        return partitions_result(t.name, ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                                 "Each new partition must be assigned to exactly [" +
                                     std::to_string(broker.node_id()) + "]: this cluster has one broker.");
  }
  if (!validate_only && quota.active()) {  // checked first: only partitions that would be added count
    if (TopicError e = broker.topics().add_partitions(t.name, t.count, true, Broker::now_ms()); !e.ok())
      return partitions_result(t.name, e.code, e.message);
    if (!quota.record(static_cast<double>(t.count - current)))
      return partitions_result(t.name, ErrorCode::THROTTLING_QUOTA_EXCEEDED, kThrottledMessage);
  }
  TopicError e = broker.topics().add_partitions(t.name, t.count, validate_only, Broker::now_ms());
  return partitions_result(t.name, e.code, e.message);
}

// Cluster mode: the new partitions' assignment goes to /brokers/topics/T.
PartitionsResult grow_in_cluster(ZkTopicAdmin& admin, const CreatePartitionsRequest::CreatePartitionsTopic& t,
                                 bool validate_only, quotas::MutationQuota& quota) {
  std::vector<std::vector<int32_t>> assignment;
  if (t.assignments)
    for (const auto& a : *t.assignments) assignment.push_back(a.broker_ids);
  if (!validate_only && quota.active()) {  // checked first: only partitions that would be added count
    if (TopicError e = admin.add_partitions(t.name, t.count, assignment, true); !e.ok())
      return partitions_result(t.name, e.code, e.message);
    replication::TopicAssignment current;
    int32_t version = -1;
    TopicError e;
    if (!admin.read_assignment(t.name, &current, &version, &e))
      return partitions_result(t.name, e.code, e.message);
    if (!quota.record(static_cast<double>(t.count - static_cast<int32_t>(current.partitions.size()))))
      return partitions_result(t.name, ErrorCode::THROTTLING_QUOTA_EXCEEDED, kThrottledMessage);
  }
  TopicError e = admin.add_partitions(t.name, t.count, assignment, validate_only);
  return partitions_result(t.name, e.code, e.message);
}

void answer(RequestContext& ctx, const CreatePartitionsRequest& req, ZkTopicAdmin* admin) {
  std::map<std::string, int> count;
  for (const auto& t : req.topics) ++count[t.name];
  CreatePartitionsResponse resp;
  quotas::MutationQuota quota = mutation_quota_for(ctx, 3);
  for (const auto& t : req.topics) {
    if (count[t.name] > 1) continue;
    if (admin != nullptr)
      resp.results.push_back(grow_in_cluster(*admin, t, req.validate_only, quota));
    else
      resp.results.push_back(grow(*ctx.broker, t, req.validate_only, quota));
  }
  // A topic named twice: one INVALID_REQUEST for it, as Kafka answers (its
  // results are keyed by name).
  for (const auto& t : req.topics) {
    auto it = count.find(t.name);
    if (it == count.end() || it->second < 2) continue;
    resp.results.push_back(
        partitions_result(t.name, ErrorCode::INVALID_REQUEST, "Duplicate topic in request."));
    count.erase(it);
  }
  respond_with_mutation_quota(ctx, resp, quota);
}

void handle_create_partitions(RequestContext&& ctx) {
  auto req = std::make_shared<CreatePartitionsRequest>();
  if (!decode_request(ctx, *req)) {
    ctx.respond(Response::close());
    return;
  }
  Broker& broker = *ctx.broker;
  if (broker.cluster() == nullptr) {  // directories, files, fsyncs: on the I/O pool
    broker.service<IoPool>().post_request(ctx, [ctx, req]() mutable { answer(ctx, *req, nullptr); });
    return;
  }
  auto fail_all = [](RequestContext& c, const CreatePartitionsRequest& r, const std::string& why) {
    CreatePartitionsResponse resp;
    std::set<std::string> named;
    for (const auto& t : r.topics)
      if (named.insert(t.name).second)
        resp.results.push_back(partitions_result(t.name, ErrorCode::REQUEST_TIMED_OUT, why));
    c.respond(make_response(c, resp));
  };
  admin::with_zk_admin(
      broker, [ctx, req](ZkTopicAdmin& admin, replication::zk::Session&) mutable { answer(ctx, *req, &admin); },
      [ctx, req, fail_all](const std::string& why) mutable { fail_all(ctx, *req, why); },
      ctx.worker_span);
}

}  // namespace

CK_REGISTER_HANDLER(protocol::CreatePartitionsRequest, 0, 3, handle_create_partitions);

}  // namespace ciuickafka::broker
