// broker/handlers/metadata.cc: Metadata (key 3), versions 0-12.
//
// Brokers and the controller: this node alone on a single node; in a
// ZooKeeper cluster the brokers registered there and the broker holding
// /controller (admin/cluster_info.h). Hosts and ports are those of the
// listener the request came in on. Partitions: this node leads the topics
// of its own log dirs (replicas = isr = [this node]); topics in ZooKeeper
// come with the controller's partition state machine.
//
// Which topics: v0 an empty list, v1+ a null list = every topic; otherwise
// the ones named (v10+ may name them by topic id instead; an unknown id is
// UNKNOWN_TOPIC_ID). An unknown name is created when auto.create.topics.enable
// is on and the client allows it (always for v0-3, allow_auto_topic_creation
// v4+). Kafka answers LEADER_NOT_AVAILABLE for a topic it just created,
// because its controller has not elected leaders yet; here the partitions
// exist the moment create() returns, so we answer NONE with the partitions at
// once and producers (librdkafka, kafka-python, sarama) start without a
// retry round. Invalid names are INVALID_TOPIC_EXCEPTION, unknown topics that
// are not created UNKNOWN_TOPIC_OR_PARTITION. A topic named (or id given)
// twice is answered once: Kafka reads the request's topics into a set.
//
// Cluster mode (ZooKeeper): topics and partitions come from the metadata
// cache the controller's UpdateMetadata fills (Kafka's ZkMetadataCache):
// leader, leader epoch, replicas, ISR, offline replicas. A leader that is not
// a live broker is LEADER_NOT_AVAILABLE with leader -1 (so is leader -1);
// a live leader without an endpoint on the request's listener is
// LISTENER_NOT_FOUND for v6+ (LEADER_NOT_AVAILABLE before); v0 lists only
// live replicas and answers REPLICA_NOT_AVAILABLE when it left some out. A
// topic being deleted has left the cache: UNKNOWN_TOPIC_OR_PARTITION, as in
// Kafka. An unknown topic that is auto-created answers LEADER_NOT_AVAILABLE
// (the controller elects its leaders later), as Kafka does. Until the first
// UpdateMetadata has arrived (a broker just started) every named topic is
// LEADER_NOT_AVAILABLE: the cache cannot tell an unknown topic from one it
// has not heard of yet, and UNKNOWN_TOPIC_OR_PARTITION would make clients
// forget a topic that exists. A request for all topics gets the (empty)
// cache, as Kafka's would.
//
// Authorized operations (v8+ topic, v8-10 cluster): the full set when asked
// for (we have no authorizer), INT32_MIN otherwise.
#include <set>
#include <string>
#include <vector>

#include "broker/admin/auto_create.h"
#include "broker/admin/cluster_info.h"
#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "broker/server/io_pool.h"
#include "protocol/error_code.h"
#include "protocol/generated/metadata.h"

namespace ciuickafka::broker {
namespace {

using protocol::ErrorCode;
using protocol::MetadataRequest;
using protocol::MetadataResponse;
using protocol::to_wire;

// The requested topics without repeats (first occurrence kept), as Kafka's
// set of requested names and ids.
std::vector<const MetadataRequest::MetadataRequestTopic*> distinct_topics(const MetadataRequest& req) {
  std::vector<const MetadataRequest::MetadataRequestTopic*> out;
  std::set<std::string> names;
  std::set<protocol::Uuid> ids;
  for (const auto& rt : *req.topics) {
    if (rt.name.has_value() ? names.insert(*rt.name).second : ids.insert(rt.topic_id).second) out.push_back(&rt);
  }
  return out;
}

MetadataResponse::MetadataResponseTopic describe_topic(const Topic& t, int32_t node, bool with_ops) {
  MetadataResponse::MetadataResponseTopic out;
  out.name = t.name;
  out.topic_id = t.id;
  out.is_internal = t.is_internal();
  out.topic_authorized_operations = with_ops ? admin::kTopicOperations : admin::kOperationsOmitted;
  out.partitions.reserve(t.partitions.size());
  for (const auto& p : t.partitions) {
    MetadataResponse::MetadataResponsePartition mp;
    mp.partition_index = p->index();
    mp.leader_id = node;
    mp.leader_epoch = p->leader_epoch();
    mp.replica_nodes = {node};
    mp.isr_nodes = {node};
    out.partitions.push_back(std::move(mp));
  }
  return out;
}

MetadataResponse::MetadataResponseTopic topic_error(std::optional<std::string> name, const protocol::Uuid& id,
                                                    ErrorCode e) {
  MetadataResponse::MetadataResponseTopic out;
  out.error_code = to_wire(e);
  out.name = std::move(name);
  out.topic_id = id;
  return out;
}

bool is_internal_topic(std::string_view name) { return name == "__consumer_offsets" || name == "__transaction_state"; }

MetadataResponse::MetadataResponseTopic describe_cached(const MetadataSnapshot& snap, const CachedTopic& t,
                                                        std::string_view listener, int16_t version, bool with_ops) {
  MetadataResponse::MetadataResponseTopic out;
  out.name = t.name;
  out.topic_id = t.id;
  out.is_internal = is_internal_topic(t.name);
  out.topic_authorized_operations = with_ops ? admin::kTopicOperations : admin::kOperationsOmitted;
  auto alive = [&](int32_t id) { return snap.broker(id) != nullptr; };
  for (const auto& [index, cp] : t.partitions) {
    MetadataResponse::MetadataResponsePartition mp;
    mp.partition_index = index;
    mp.leader_epoch = cp.leader_epoch;
    mp.replica_nodes = cp.replicas;
    mp.isr_nodes = cp.isr;
    mp.offline_replicas = cp.offline_replicas;
    ErrorCode e = ErrorCode::NONE;
    if (version == 0) {
      // v0 (Kafka's errorUnavailableEndpoints): only replicas that are up.
      std::erase_if(mp.replica_nodes, [&](int32_t r) { return !alive(r); });
      std::erase_if(mp.isr_nodes, [&](int32_t r) { return !alive(r); });
      if (mp.replica_nodes.size() < cp.replicas.size() || mp.isr_nodes.size() < cp.isr.size())
        e = ErrorCode::REPLICA_NOT_AVAILABLE;
    }
    const CachedBroker* leader = snap.broker(cp.leader);
    if (leader == nullptr) {
      e = ErrorCode::LEADER_NOT_AVAILABLE;
      mp.leader_id = -1;
    } else if (leader->endpoint(listener) == nullptr) {
      e = version >= 6 ? ErrorCode::LISTENER_NOT_FOUND : ErrorCode::LEADER_NOT_AVAILABLE;
      mp.leader_id = -1;
    } else {
      mp.leader_id = cp.leader;
    }
    mp.error_code = to_wire(e);
    out.partitions.push_back(std::move(mp));
  }
  return out;
}

// Metadata in a ZooKeeper cluster: topics from the metadata cache.
void cluster_topics(Broker& broker, const MetadataRequest& req, const std::string& listener, int16_t version,
                    bool all_topics, bool with_ops, MetadataResponse& resp) {
  const MetadataCache& cache = broker.service<ReplicaManager>().metadata_cache();
  // Before the first UpdateMetadata (a broker that has just started) the
  // cache knows no topic yet. A named topic is then LEADER_NOT_AVAILABLE,
  // which clients retry, never UNKNOWN_TOPIC_OR_PARTITION: librdkafka takes
  // that as the topic gone, sets its partition count to 0 and a consumer
  // drops its assignment (seen in chaos runs against a restarted broker).
  const bool known = cache.initialized();
  auto snap = cache.snapshot();
  if (all_topics) {
    for (const auto& [name, t] : snap->topics) resp.topics.push_back(describe_cached(*snap, t, listener, version, with_ops));
    return;
  }
  const bool may_create = broker.config().get_bool("auto.create.topics.enable") &&
                          (version < 4 || req.allow_auto_topic_creation);
  for (const auto* rtp : distinct_topics(req)) {
    const auto& rt = *rtp;
    if (!rt.name.has_value()) {
      if (const CachedTopic* t = snap->topic(rt.topic_id)) {
        resp.topics.push_back(describe_cached(*snap, *t, listener, version, with_ops));
      } else {
        resp.topics.push_back(topic_error(std::nullopt, rt.topic_id,
                                          known ? ErrorCode::UNKNOWN_TOPIC_ID : ErrorCode::LEADER_NOT_AVAILABLE));
      }
      continue;
    }
    const std::string& name = *rt.name;
    if (const CachedTopic* t = snap->topic(name)) {
      resp.topics.push_back(describe_cached(*snap, *t, listener, version, with_ops));
      continue;
    }
    if (TopicTable::invalid_name_reason(name)) {
      resp.topics.push_back(topic_error(name, {}, ErrorCode::INVALID_TOPIC_EXCEPTION));
      continue;
    }
    if (!known) {
      resp.topics.push_back(topic_error(name, {}, ErrorCode::LEADER_NOT_AVAILABLE));
      continue;
    }
    if (!may_create) {
      resp.topics.push_back(topic_error(name, {}, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
      continue;
    }
    admin::AutoCreated created = admin::auto_create_topic(broker, name);
    resp.topics.push_back(
        topic_error(name, {}, created.error.ok() ? ErrorCode::LEADER_NOT_AVAILABLE : created.error.code));
  }
}

void handle_metadata(RequestContext&& ctx) {
  MetadataRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  Broker& broker = *ctx.broker;
  const int16_t version = ctx.api_version();
  const int32_t node = broker.node_id();

  MetadataResponse resp;
  for (const admin::BrokerRow& row : admin::live_brokers(broker, ctx.listener)) {
    MetadataResponse::MetadataResponseBroker b;
    b.node_id = row.id;
    b.host = row.host;
    b.port = row.port;
    b.rack = row.rack;
    resp.brokers.push_back(std::move(b));
  }
  resp.cluster_id = broker.cluster_id();
  resp.controller_id = admin::controller_id(broker);
  // The cluster field exists in v8-10 only, the topic one in v8+.
  if (version >= 8 && version <= 10 && req.include_cluster_authorized_operations)
    resp.cluster_authorized_operations = admin::kClusterOperations;
  const bool with_ops = version >= 8 && req.include_topic_authorized_operations;

  const bool all_topics = !req.topics.has_value() || (version == 0 && req.topics->empty());
  if (broker.cluster() != nullptr) {
    cluster_topics(broker, req, ctx.listener, version, all_topics, with_ops, resp);
    ctx.respond(make_response(ctx, resp));
    return;
  }
  if (all_topics) {
    for (const auto& t : broker.topics().list()) resp.topics.push_back(describe_topic(*t, node, with_ops));
    ctx.respond(make_response(ctx, resp));
    return;
  }

  const bool may_create = broker.config().get_bool("auto.create.topics.enable") &&
                          (version < 4 || req.allow_auto_topic_creation);
  // A topic to auto-create (directories, files, fsyncs): the whole request
  // is handled again on the I/O pool.
  if (may_create && !IoPool::on_pool_thread()) {
    bool creates = false;
    for (const auto* rt : distinct_topics(req))
      creates = creates || (rt->name.has_value() && !broker.topics().find(*rt->name) &&
                            !TopicTable::invalid_name_reason(*rt->name));
    if (creates) {
      broker.service<IoPool>().post_request(ctx, [ctx]() mutable { handle_metadata(std::move(ctx)); });
      return;
    }
  }
  for (const auto* rtp : distinct_topics(req)) {
    const auto& rt = *rtp;
    if (!rt.name.has_value()) {
      // By topic id (v10+).
      if (auto t = broker.topics().find(rt.topic_id)) {
        resp.topics.push_back(describe_topic(*t, node, with_ops));
      } else {
        resp.topics.push_back(topic_error(std::nullopt, rt.topic_id, ErrorCode::UNKNOWN_TOPIC_ID));
      }
      continue;
    }
    const std::string& name = *rt.name;
    if (auto t = broker.topics().find(name)) {
      resp.topics.push_back(describe_topic(*t, node, with_ops));
      continue;
    }
    if (TopicTable::invalid_name_reason(name)) {
      resp.topics.push_back(topic_error(name, {}, ErrorCode::INVALID_TOPIC_EXCEPTION));
      continue;
    }
    if (!may_create) {
      resp.topics.push_back(topic_error(name, {}, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
      continue;
    }
    admin::AutoCreated created = admin::auto_create_topic(broker, name);
    if (created.error.ok() && created.topic) {
      resp.topics.push_back(describe_topic(*created.topic, node, with_ops));
    } else {
      // Kafka reports a failed auto-creation (say, a replication factor the
      // cluster cannot meet) as the topic's error code.
      resp.topics.push_back(topic_error(name, {}, created.error.code));
    }
  }
  ctx.respond(make_response(ctx, resp));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::MetadataRequest, 0, 12, handle_metadata);

}  // namespace ciuickafka::broker
