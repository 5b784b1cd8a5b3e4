// broker/handlers/mutation_quota.h: the controller_mutation_rate quota of
// CreateTopics, CreatePartitions and DeleteTopics (KIP-599;
// quotas/client_quotas.h says how it is measured).
//
// mutation_quota_for(ctx, strict_since) gives the request's quota: strict
// from strict_since on (CreateTopics v6, CreatePartitions v3, DeleteTopics
// v5), permissive below. A handler records each topic's partitions once the
// topic passed its checks, just before it is written; a strict quota that
// refuses answers that topic kThrottled. respond_with_mutation_quota()
// answers with the larger of the quota's throttle and the request_percentage
// one, in the body and on the connection.
#pragma once

#include <algorithm>
#include <string>

#include "broker/broker.h"
#include "broker/handlers/codec.h"
#include "broker/quotas/client_quotas.h"

namespace ciuickafka::broker {

inline constexpr const char* kThrottledMessage = "The throttling quota has been exceeded.";

inline quotas::MutationQuota mutation_quota_for(const RequestContext& ctx, int16_t strict_since) {
  return ctx.broker->client_quotas().mutation_quota(ctx.header.client_id.value_or(""),
                                                    ctx.api_version() >= strict_since);
}

template <class ResponseBody>
void respond_with_mutation_quota(RequestContext& ctx, ResponseBody& body, quotas::MutationQuota& quota) {
  const int64_t throttle = quota.answer_throttle_ms();
  body.throttle_time_ms = std::max<int32_t>(body.throttle_time_ms, static_cast<int32_t>(throttle));
  Response r = make_response(ctx, body);
  r.throttle_ms = std::max(r.throttle_ms, throttle);
  ctx.respond(std::move(r));
}

}  // namespace ciuickafka::broker
