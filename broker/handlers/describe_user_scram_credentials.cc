// broker/handlers/describe_user_scram_credentials.cc:
// DescribeUserScramCredentials (key 50), version 0.
//
// This broker has no SASL, so no user has SCRAM credentials: asked for
// every user (users null or empty), it answers no results; asked for named
// users, each gets RESOURCE_NOT_FOUND, or DUPLICATE_RESOURCE when named
// twice, with Kafka's texts (Kafka 3.9's ScramImage.describe with no
// credentials). kafka-configs --describe --entity-type users asks this
// beside DescribeClientQuotas, so without it user quotas could not be
// listed by Kafka's own tool. AlterUserScramCredentials stays unadvertised:
// a credential here could never be used.
#include <map>
#include <string>

#include "broker/handlers/codec.h"
#include "broker/handlers/registry.h"
#include "protocol/error_code.h"
#include "protocol/generated/describe_user_scram_credentials.h"

namespace ciuickafka::broker {
namespace {

using protocol::DescribeUserScramCredentialsRequest;
using protocol::DescribeUserScramCredentialsResponse;
using protocol::ErrorCode;

void handle_describe_user_scram_credentials(RequestContext&& ctx) {
  DescribeUserScramCredentialsRequest req;
  if (!decode_request(ctx, req)) {
    ctx.respond(Response::close());
    return;
  }
  DescribeUserScramCredentialsResponse resp;
  if (req.users) {
    std::vector<std::string> order;
    std::map<std::string, bool> twice;
    for (const auto& u : *req.users) {
      auto [it, fresh] = twice.emplace(u.name, false);
      if (fresh) {
        order.push_back(u.name);
      } else {
        it->second = true;
      }
    }
    for (const std::string& name : order) {
      DescribeUserScramCredentialsResponse::DescribeUserScramCredentialsResult r;
      r.user = name;
      if (twice[name]) {
        r.error_code = protocol::to_wire(ErrorCode::DUPLICATE_RESOURCE);
        r.error_message = "Cannot describe SCRAM credentials for the same user twice in a single request: " + name;
      } else {
        r.error_code = protocol::to_wire(ErrorCode::RESOURCE_NOT_FOUND);
        r.error_message = "Attempt to describe a user credential that does not exist: " + name;
      }
      resp.results.push_back(std::move(r));
    }
  }
  ctx.respond(make_response(ctx, resp));
}

}  // namespace

CK_REGISTER_HANDLER(protocol::DescribeUserScramCredentialsRequest, 0, 0, handle_describe_user_scram_credentials);

}  // namespace ciuickafka::broker
