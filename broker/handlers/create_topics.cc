// broker/handlers/create_topics.cc: CreateTopics (key 19), versions 0-7.
//
// Each topic is checked and created on its own (TopicTable::create does the
// name, partition, replication-factor and config rules and persists before
// the topic is visible); one topic's failure does not affect the others.
// What this handler adds, following Kafka:
//   - a name given twice in one request: INVALID_REQUEST for that name;
//   - explicit replica assignments together with num_partitions or
//     replication_factor != -1: INVALID_REQUEST; assignments must be
//     partitions 0..n-1 each on exactly [this node], else
//     INVALID_REPLICA_ASSIGNMENT with a message (Kafka's code for an
//     assignment naming an unknown broker);
//   - a config with a null value: INVALID_CONFIG;
//   - v5+ successful (and validate_only) results carry num_partitions,
//     replication_factor and the topic's effective configs (v7 its id; zero
//     when validate_only, as nothing was created).
//   - controller_mutation_rate (handlers/mutation_quota.h): a topic that
//     passed its checks records its partitions before it is created;
//     from v6 a topic met by an exhausted quota is not created and answers
//     THROTTLING_QUOTA_EXCEEDED (validate_only records nothing).
// Single node: timeout_ms is ignored, creation is complete when we answer.
// Cluster mode (zookeeper.connect): the checks and the write go to
// ZooKeeper on the admin worker (broker/cluster/zk_topics.h): the
// assignment spans the live brokers, explicit assignments may name any
// broker (Kafka does not check them against the live ones on create), and
// the answer comes once this broker's metadata cache names a leader for
// every new partition (REQUEST_TIMED_OUT for a topic still without one at
// timeout_ms; timeout_ms <= 0 answers once the znodes are written), as
// Kafka's DelayedCreatePartitions does.
#include <atomic>
#include <chrono>
#include <map>
#include <set>

#include "broker/admin/config_describe.h"
#include "broker/admin/zk_admin_task.h"
#include "broker/broker.h"
#include "broker/cluster/metadata_cache.h"
#include "broker/cluster/replica_manager.h"
#include "broker/cluster/zk_topics.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/mutation_quota.h"
#include "broker/handlers/registry.h"
#include "broker/server/io_pool.h"
#include "protocol/error_code.h"
#include "protocol/generated/create_topics.h"

namespace ciuickafka::broker {
namespace {

using protocol::CreateTopicsRequest;
using protocol::CreateTopicsResponse;
using protocol::ErrorCode;
using protocol::to_wire;

using TopicResult = CreateTopicsResponse::CreatableTopicResult;

TopicResult failed(const std::string& name, ErrorCode code, std::string message) {
  TopicResult r;
  r.name = name;
  r.error_code = to_wire(code);
  r.error_message = std::move(message);
  return r;
}

// Checks explicit assignments; on success sets *partitions to their count.
TopicError check_assignments(const CreateTopicsRequest::CreatableTopic& t, int32_t node, int32_t* partitions) {
  if (t.num_partitions != -1 || t.replication_factor != -1)
    return {ErrorCode::INVALID_REQUEST,
            "Both numPartitions or replicationFactor and replicasAssignments were set. "
            "Both cannot be used at the same time."};
  std::set<int32_t> seen;
  for (const auto& a : t.assignments) {
    if (a.partition_index < 0 || !seen.insert(a.partition_index).second)
      return {ErrorCode::INVALID_REPLICA_ASSIGNMENT,
              "Invalid partition index " + std::to_string(a.partition_index) + " in the replica assignment."};
    if (a.broker_ids.size() != 1 || a.broker_ids[0] != node)
      return {ErrorCode::INVALID_REPLICA_ASSIGNMENT,
              "Partition " + std::to_string(a.partition_index) + " must be assigned to exactly [" +
                  std::to_string(node) + "]: this cluster has one broker."};
  }
  const auto n = static_cast<int32_t>(t.assignments.size());
  if (!seen.empty() && *seen.rbegin() != n - 1)
    return {ErrorCode::INVALID_REPLICA_ASSIGNMENT, "Partitions should be a consecutive 0-based integer sequence."};
  *partitions = n;
  return {};
}

// v5+ results: partitions, replication factor and the effective configs.
void describe_created(Broker& broker, const Topic& topic, int32_t partitions, TopicResult* r) {
  r->num_partitions = partitions;
  r->replication_factor = topic.replication_factor;
  std::vector<CreateTopicsResponse::CreatableTopicConfigs> out;
  for (const admin::DescribedConfig& d : admin::describe_topic_configs(broker.topics(), topic, std::nullopt, false)) {
    CreateTopicsResponse::CreatableTopicConfigs c;
    c.name = d.name;
    c.value = d.value;
    c.read_only = d.read_only;
    c.config_source = static_cast<int8_t>(d.source);
    c.is_sensitive = d.is_sensitive;
    out.push_back(std::move(c));
  }
  r->configs = std::move(out);
}

TopicError read_configs(const CreateTopicsRequest::CreatableTopic& t, ConfigMap* configs,
                        std::vector<std::string>* order) {
  for (const auto& c : t.configs) {
    if (!c.value.has_value())
      return {ErrorCode::INVALID_CONFIG, "Null value not supported for topic configs: " + c.name};
    (*configs)[c.name] = *c.value;
    if (order != nullptr) order->push_back(c.name);
  }
  return {};
}

TopicResult create_one(Broker& broker, const CreateTopicsRequest::CreatableTopic& t, bool validate_only,
                       int16_t version, quotas::MutationQuota& quota) {
  int32_t partitions = t.num_partitions;
  int16_t replication = t.replication_factor;
  if (!t.assignments.empty()) {
    TopicError e = check_assignments(t, broker.node_id(), &partitions);
    if (!e.ok()) return failed(t.name, e.code, e.message);
    replication = 1;
  }
  ConfigMap configs;
  if (TopicError e = read_configs(t, &configs, nullptr); !e.ok()) return failed(t.name, e.code, e.message);
  if (!validate_only && quota.active()) {  // checked first: only a topic that would be created counts
    TopicTable::Created checked = broker.topics().create(t.name, partitions, replication, configs, true,
                                                         Broker::now_ms());
    if (!checked.error.ok()) return failed(t.name, checked.error.code, checked.error.message);
    if (!quota.record(partitions == -1 ? broker.config().get_int("num.partitions") : partitions))
      return failed(t.name, ErrorCode::THROTTLING_QUOTA_EXCEEDED, kThrottledMessage);
  }
  TopicTable::Created created =
      broker.topics().create(t.name, partitions, replication, configs, validate_only, Broker::now_ms());
  if (!created.error.ok()) return failed(t.name, created.error.code, created.error.message);

  TopicResult r;
  r.name = t.name;
  r.error_message = std::nullopt;
  const Topic& topic = *created.topic;
  if (!validate_only) r.topic_id = topic.id;
  if (version >= 5)
    describe_created(broker, topic,
                     validate_only ? (partitions == -1 ? broker.config().get_int("num.partitions") : partitions)
                                   : static_cast<int32_t>(topic.partitions.size()),
                     &r);
  return r;
}

// Cluster mode: the topic goes to ZooKeeper (broker/cluster/zk_topics.h);
// the controller creates its partitions on the brokers it names.
TopicResult create_one_in_cluster(Broker& broker, ZkTopicAdmin& admin,
                                  const CreateTopicsRequest::CreatableTopic& t, bool validate_only,
                                  int16_t version, quotas::MutationQuota& quota,
                                  std::map<std::string, int32_t>* created_topics) {
  ZkNewTopic n;
  n.name = t.name;
  n.partitions = t.num_partitions;
  n.replication_factor = t.replication_factor;
  if (!t.assignments.empty()) {
    if (t.num_partitions != -1 || t.replication_factor != -1)
      return failed(t.name, ErrorCode::INVALID_REQUEST,
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time.");
    for (const auto& a : t.assignments) {
      if (a.partition_index < 0 || n.assignment.count(a.partition_index))
        return failed(t.name, ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                      "Invalid partition index " + std::to_string(a.partition_index) + " in the replica assignment.");
      n.assignment[a.partition_index] = a.broker_ids;
    }
  }
  if (TopicError e = read_configs(t, &n.configs, &n.config_order); !e.ok()) return failed(t.name, e.code, e.message);
  if (!validate_only && quota.active()) {  // checked first: only a topic that would be created counts
    ZkTopicResult checked = admin.create(n, true);
    if (!checked.error.ok()) return failed(t.name, checked.error.code, checked.error.message);
    if (!quota.record(static_cast<double>(checked.assignment.size())))
      return failed(t.name, ErrorCode::THROTTLING_QUOTA_EXCEEDED, kThrottledMessage);
  }
  ZkTopicResult created = admin.create(n, validate_only);
  if (!created.error.ok()) return failed(t.name, created.error.code, created.error.message);
  if (!validate_only) (*created_topics)[t.name] = static_cast<int32_t>(created.assignment.size());
  TopicResult r;
  r.name = t.name;
  r.error_message = std::nullopt;
  r.topic_id = created.id;
  if (version >= 5) {
    Topic topic;
    topic.name = t.name;
    topic.id = created.id;
    topic.replication_factor = created.replication_factor;
    topic.configs = n.configs;
    describe_created(broker, topic, static_cast<int32_t>(created.assignment.size()), &r);
  }
  return r;
}

void answer_all_failed(RequestContext& ctx, const CreateTopicsRequest& req, ErrorCode code, const std::string& why) {
  CreateTopicsResponse resp;
  for (const auto& t : req.topics) resp.topics.push_back(failed(t.name, code, why));
  ctx.respond(make_response(ctx, resp));
}

// Cluster mode: a created topic's answer waits, as in Kafka
// (DelayedCreatePartitions), until this broker's metadata names a leader for
// each of its partitions, or REQUEST_TIMED_OUT for the topics still without
// one at timeout_ms. The controller sends the replicas' LeaderAndIsr before
// the UpdateMetadata, so a client that produces right after the answer finds
// the partitions led. No thread waits: the answer comes from the thread that
// applies the UpdateMetadata (a MetadataCache waiter), or from a timer on the
// connection's thread. The admin worker is free for the next request
// meanwhile, and the wait does not count as the request's work
// (request_percentage), as Kafka's purgatory time does not.
struct PendingCreate {
  RequestContext ctx;
  CreateTopicsResponse resp;
  quotas::MutationQuota quota;
  std::map<std::string, int32_t> topics;  // name -> partitions
  int32_t timeout_ms = 0;
  std::atomic<bool> answered{false};  // by the waiter (the timer need not start)
};

bool leaders_known(const MetadataSnapshot& s, const std::string& name, int32_t parts) {
  const CachedTopic* ct = s.topic(name);
  if (ct == nullptr || static_cast<int32_t>(ct->partitions.size()) < parts) return false;
  for (const auto& [_, p] : ct->partitions)
    if (p.leader < 0) return false;
  return true;
}

void answer_pending(PendingCreate& p, const MetadataSnapshot& snap) {
  for (auto& r : p.resp.topics)
    if (auto it = p.topics.find(r.name); it != p.topics.end() && !leaders_known(snap, it->first, it->second)) {
      r.error_code = to_wire(ErrorCode::REQUEST_TIMED_OUT);
      r.error_message = "The topic was created, but its leaders were not elected within " +
                        std::to_string(p.timeout_ms) + " ms.";
    }
  respond_with_mutation_quota(p.ctx, p.resp, p.quota);
}

void wait_for_leaders(RequestContext& ctx, CreateTopicsResponse resp, quotas::MutationQuota quota,
                      std::map<std::string, int32_t> topics, int32_t timeout_ms) {
  MetadataCache* cache = &ctx.broker->service<ReplicaManager>().metadata_cache();
  auto p = std::make_shared<PendingCreate>();
  p->ctx = ctx;
  p->resp = std::move(resp);
  p->quota = std::move(quota);
  p->topics = std::move(topics);
  p->timeout_ms = timeout_ms;
  // The timer is only touched on the connection's thread (asio timers are
  // not thread-safe): started there, cancelled there.
  auto timer = std::make_shared<asio::steady_timer>(ctx.executor);
  const MetadataCache::WaiterId id = cache->when(
      [p](const MetadataSnapshot& s) {
        for (const auto& [name, parts] : p->topics)
          if (!leaders_known(s, name, parts)) return false;
        return true;
      },
      [p, cache, timer] {
        p->answered.store(true, std::memory_order_release);
        answer_pending(*p, *cache->snapshot());
        asio::post(p->ctx.executor, [timer] { timer->cancel(); });
      });
  if (id == 0) return;  // the leaders were known already: answered
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  asio::post(ctx.executor, [p, cache, timer, id, deadline] {
    if (p->answered.load(std::memory_order_acquire)) return;
    timer->expires_at(deadline);
    timer->async_wait([p, cache, timer, id](const boost::system::error_code& ec) {
      if (ec) return;  // cancelled: the waiter answered
      if (cache->cancel(id)) answer_pending(*p, *cache->snapshot());
    });
  });
}

// Answers the request; admin is set in cluster mode (topics go to ZooKeeper).
void answer(RequestContext& ctx, const CreateTopicsRequest& req, ZkTopicAdmin* admin) {
  Broker& broker = *ctx.broker;
  std::map<std::string, int> count;
  for (const auto& t : req.topics) ++count[t.name];

  CreateTopicsResponse resp;
  quotas::MutationQuota quota = mutation_quota_for(ctx, 6);
  std::map<std::string, int32_t> created_topics;  // cluster mode: name -> partitions, to wait for
  std::set<std::string> answered_duplicate;
  for (const auto& t : req.topics) {
    if (count[t.name] > 1) {
      if (answered_duplicate.insert(t.name).second)
        resp.topics.push_back(failed(t.name, ErrorCode::INVALID_REQUEST,
                                     "Create topics request from client `" + ctx.header.client_id.value_or("") +
                                         "` contains multiple entries for the following topics: " + t.name));
      continue;
    }
    if (admin != nullptr)
      resp.topics.push_back(
          create_one_in_cluster(broker, *admin, t, req.validate_only, ctx.api_version(), quota, &created_topics));
    else
      resp.topics.push_back(create_one(broker, t, req.validate_only, ctx.api_version(), quota));
  }
  if (!created_topics.empty() && req.timeout_ms > 0) {
    wait_for_leaders(ctx, std::move(resp), std::move(quota), std::move(created_topics), req.timeout_ms);
    return;
  }
  respond_with_mutation_quota(ctx, resp, quota);
}

void handle_create_topics(RequestContext&& ctx) {
  auto req = std::make_shared<CreateTopicsRequest>();
  if (!decode_request(ctx, *req)) {
    ctx.respond(Response::close());
    return;
  }
  Broker& broker = *ctx.broker;
  if (broker.cluster() == nullptr) {  // directories, files, fsyncs: on the I/O pool
    broker.service<IoPool>().post_request(ctx, [ctx, req]() mutable { answer(ctx, *req, nullptr); });
    return;
  }
  admin::with_zk_admin(
      broker, [ctx, req](ZkTopicAdmin& admin, replication::zk::Session&) mutable { answer(ctx, *req, &admin); },
      [ctx, req](const std::string& why) mutable { answer_all_failed(ctx, *req, ErrorCode::REQUEST_TIMED_OUT, why); },
      ctx.worker_span);
}

}  // namespace

CK_REGISTER_HANDLER(protocol::CreateTopicsRequest, 0, 7, handle_create_topics);

}  // namespace ciuickafka::broker
