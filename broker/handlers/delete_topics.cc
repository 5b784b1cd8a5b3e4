// broker/handlers/delete_topics.cc: DeleteTopics (key 20), versions 0-6.
//
// v0-5 name topics by name (topic_names), v6 by name or by topic id (topics;
// giving both, or neither, is INVALID_REQUEST). Following Kafka:
//   - delete.topic.enable=false: TOPIC_DELETION_DISABLED for every topic
//     (INVALID_REQUEST before v3, which lacks that code);
//   - internal topics (__consumer_offsets, __transaction_state) cannot be
//     deleted: INVALID_TOPIC_EXCEPTION;
//   - unknown name UNKNOWN_TOPIC_OR_PARTITION, unknown id UNKNOWN_TOPIC_ID;
//   - a topic named twice in one request: INVALID_REQUEST for it.
// Deletion is complete when we answer (the logs are renamed to -delete and
// removed later by the log manager); the topic's metric series go with it.
#include <map>
#include <set>

#include "broker/broker.h"
#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/delete_topics.h"

namespace ciuickafka::broker {
namespace {

using protocol::DeleteTopicsRequest;
using protocol::DeleteTopicsResponse;
using protocol::ErrorCode;
using protocol::to_wire;

using Result = DeleteTopicsResponse::DeletableTopicResult;

struct Target {
  std::optional<std::string> name;
  protocol::Uuid id{};
};

Result result(const Target& t, ErrorCode code, std::optional<std::string> message) {
  Result r;
  r.name = t.name;
  r.topic_id = t.id;
  r.error_code = to_wire(code);
  r.error_message = code == ErrorCode::NONE ? std::nullopt : std::move(message);
  return r;
}

Result delete_one(Broker& broker, Target t, int16_t version) {
  if (!broker.config().get_bool("delete.topic.enable"))
    return result(t, version < 3 ? ErrorCode::INVALID_REQUEST : ErrorCode::TOPIC_DELETION_DISABLED,
                  "Topic deletion is disabled.");
  std::shared_ptr<const Topic> topic;
  if (t.name) {
    topic = broker.topics().find(*t.name);
    if (!topic) return result(t, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic.");
  } else {
    topic = broker.topics().find(t.id);
    if (!topic) return result(t, ErrorCode::UNKNOWN_TOPIC_ID, "This server does not host this topic ID.");
    t.name = topic->name;
  }
  t.id = topic->id;
  if (topic->is_internal())
    return result(t, ErrorCode::INVALID_TOPIC_EXCEPTION,
                  "Topic " + topic->name + " is a kafka internal topic and is not allowed to be marked for deletion.");
  TopicError e = broker.topics().remove(topic->name);
  if (e.ok() || e.code == ErrorCode::KAFKA_STORAGE_ERROR) broker.metrics().remove_topic(topic->name);
  return result(t, e.code, e.message);
}

void handle_delete_topics(RequestContext&& ctx) {
  DeleteTopicsRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
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
  for (const auto& t : targets) {
    if (t.name && !t.id.is_zero()) {
      resp.responses.push_back(result(t, ErrorCode::INVALID_REQUEST, "Topic name and topic ID can not both be specified."));
    } else if (!t.name && t.id.is_zero()) {
      resp.responses.push_back(result(t, ErrorCode::INVALID_REQUEST, "Neither topic name nor id were specified."));
    } else if ((t.name && names[*t.name] > 1) || (!t.name && ids[t.id] > 1)) {
      resp.responses.push_back(result(t, ErrorCode::INVALID_REQUEST, "Duplicate topic in request."));
    } else {
      resp.responses.push_back(delete_one(*ctx.broker, t, version));
    }
  }
  ctx.respond(make_response(ctx, resp));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::DeleteTopicsRequest, 0, 6, handle_delete_topics);

}  // namespace ciuickafka::broker
