// broker/groups/respond.h: small glue for the group handlers: a request
// context kept alive for an answer that comes later (a held JoinGroup, an
// OffsetCommit waiting for its fsync), and the client identity Kafka
// records for members.
//
// Thread-safety: a Pending is answered once, from any thread.
#pragma once

#include <memory>
#include <string>

#include "broker/groups/coordinator.h"
#include "broker/handlers/codec.h"
#include "broker/server/request_context.h"

namespace ciuickafka::broker::groups {

// std::function needs copyable captures; the context is shared instead.
using SharedContext = std::shared_ptr<RequestContext>;

inline SharedContext share(RequestContext&& ctx) { return std::make_shared<RequestContext>(std::move(ctx)); }

// Kafka records the client id and "/host" of each member.
inline ClientInfo client_info(const RequestContext& ctx) {
  ClientInfo c;
  c.client_id = ctx.header.client_id.value_or("");
  std::string host = ctx.peer;
  if (auto colon = host.rfind(':'); colon != std::string::npos) host.resize(colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  c.client_host = "/" + host;
  c.connection_id = ctx.connection_id;
  return c;
}

}  // namespace ciuickafka::broker::groups
