// broker/cluster/controlled_shutdown.cc: the ControlledShutdown retry loop.
// See controlled_shutdown.h.
#include "broker/cluster/controlled_shutdown.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "metrics/log/log.h"
#include "protocol/error_code.h"
#include "protocol/generated/controlled_shutdown.h"
#include "protocol/generated/metadata.h"
#include "replication/net/broker_client.h"

namespace ciuickafka::broker {
namespace {

using Clock = std::chrono::steady_clock;

void log_line(const std::string& what) { CK_LOG_INFO("cluster", "controlled shutdown: %s", what.c_str()); }

int64_t ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

// A broker's endpoint on the listener, when it has one with a usable port.
const replication::ListenerEndpoint* endpoint_on(const replication::LiveBroker& b, const std::string& listener) {
  for (const auto& e : b.endpoints)
    if (e.listener == listener && e.port > 0 && e.port <= 65535) return &e;
  return nullptr;
}

// One attempt; true when the controller answered NONE with nothing remaining.
bool attempt(const ControlledShutdownSettings& s, const replication::ClusterView& v, int64_t budget_ms,
             std::string* what) {
  if (v.controller_id < 0) {
    *what = "no controller elected";
    return false;
  }
  if (v.broker_epoch < 0) {
    *what = "not registered";
    return false;
  }
  const replication::ListenerEndpoint* ep = nullptr;
  for (const auto& b : v.brokers)
    if (b.id == v.controller_id) ep = endpoint_on(b, s.listener);
  if (ep == nullptr) {
    *what = "controller " + std::to_string(v.controller_id) + " has no endpoint on listener " + s.listener;
    return false;
  }
  replication::net::ClientOptions o;
  o.client_id = "ciuickafka-controlled-shutdown-" + std::to_string(s.broker_id);
  const int32_t timeout = static_cast<int32_t>(std::clamp<int64_t>(budget_ms, 1, s.socket_timeout_ms));
  o.connect_timeout_ms = timeout;
  o.request_timeout_ms = timeout;
  const std::string host = ep->host.empty() ? "127.0.0.1" : ep->host;
  const std::string to = "controller " + std::to_string(v.controller_id) + " (" + host + ":" + std::to_string(ep->port) + ")";
  auto client = replication::net::BrokerClient::connect(host, static_cast<uint16_t>(ep->port), o);
  if (!client) {
    *what = to + ": " + client.error().message;
    return false;
  }
  const auto version = client.value()->pick_version(protocol::ControlledShutdownRequest::kApiKey, 3);
  if (!version) {
    *what = to + " does not offer ControlledShutdown";
    return false;
  }
  protocol::ControlledShutdownRequest req;
  req.broker_id = s.broker_id;
  req.broker_epoch = v.broker_epoch;
  protocol::ControlledShutdownResponse resp;
  if (auto st = client.value()->call(req, *version, &resp); !st) {
    *what = to + ": " + st.message();
    return false;
  }
  if (resp.error_code != 0) {
    *what = to + " answered " +
            std::string(protocol::error_name(static_cast<protocol::ErrorCode>(resp.error_code)));
    return false;
  }
  if (!resp.remaining_partitions.empty()) {
    std::string list;
    for (const auto& p : resp.remaining_partitions)
      list += (list.empty() ? "" : ",") + p.topic_name + "-" + std::to_string(p.partition_index);
    *what = to + ": partitions remaining to move: " + list;
    return false;
  }
  *what = to + " moved every leadership away";
  return true;
}

// True when resp names a leader other than `me` for every partition of
// every topic it answers with (a topic it does not know counts as moved).
bool routed_off(const protocol::MetadataResponse& resp, int32_t me) {
  for (const auto& t : resp.topics)
    for (const auto& p : t.partitions)
      if (p.leader_id == me) return false;
  return true;
}

}  // namespace

bool wait_others_routed_off(const ControlledShutdownSettings& s, const replication::ClusterView& v,
                            const std::vector<std::string>& topics, int64_t bound_ms, std::string* what) {
  if (topics.empty()) return true;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(std::max<int64_t>(0, bound_ms));
  protocol::MetadataRequest req;
  req.topics.emplace();
  for (const auto& t : topics) req.topics->emplace_back().name = t;
  req.allow_auto_topic_creation = false;
  for (const auto& b : v.brokers) {
    if (b.id == s.broker_id) continue;
    const replication::ListenerEndpoint* ep = endpoint_on(b, s.listener);
    if (ep == nullptr) continue;  // cannot be asked
    const std::string host = ep->host.empty() ? "127.0.0.1" : ep->host;
    std::unique_ptr<replication::net::BrokerClient> client;
    for (;;) {
      const Clock::time_point now = Clock::now();
      if (now >= deadline) {
        *what = "broker " + std::to_string(b.id) + " still names this broker as a leader";
        return false;
      }
      if (!client) {
        replication::net::ClientOptions o;
        o.client_id = "ciuickafka-controlled-shutdown-" + std::to_string(s.broker_id);
        o.connect_timeout_ms = o.request_timeout_ms =
            static_cast<int32_t>(std::clamp<int64_t>(ms_between(now, deadline), 1, s.socket_timeout_ms));
        auto c = replication::net::BrokerClient::connect(host, static_cast<uint16_t>(ep->port), o);
        if (!c) break;  // not reachable: it answers no client either
        client = std::move(c.value());
      }
      const auto version = client->pick_version(protocol::MetadataRequest::kApiKey, 12, 4);
      if (!version) break;  // cannot be asked
      protocol::MetadataResponse resp;
      if (!client->call(req, *version, &resp)) {
        client.reset();  // connected again next time, or not reachable any more
      } else if (routed_off(resp, s.broker_id)) {
        break;
      }
      // Asked again in 10 ms, never past the bound.
      std::this_thread::sleep_until(std::min(Clock::now() + std::chrono::milliseconds(10), deadline));
    }
  }
  return true;
}

int64_t ControlledShutdownSettings::bound_ms() const {
  const int64_t n = std::max<int32_t>(max_retries, 0);
  return n * socket_timeout_ms + std::max<int64_t>(n - 1, 0) * retry_backoff_ms;
}

ControlledShutdownReport run_controlled_shutdown(const ControlledShutdownSettings& s, const ViewFn& view) {
  ControlledShutdownReport report;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + std::chrono::milliseconds(s.bound_ms());
  for (int32_t i = 0; i < s.max_retries; ++i) {
    const int64_t left = ms_between(Clock::now(), deadline);
    if (left <= 0) break;
    auto v = view();
    if (i == 0 && v && v->broker_epoch >= 0 &&
        std::none_of(v->brokers.begin(), v->brokers.end(), [&](const replication::LiveBroker& b) { return b.id != s.broker_id; })) {
      // Nobody to hand leadership to: Kafka would retry until it gives up.
      report.last = "no other broker is registered: nothing to hand over";
      report.succeeded = true;
      log_line(report.last);
      break;
    }
    ++report.attempts;
    const bool ok = v ? attempt(s, *v, left, &report.last) : (report.last = "no cluster view", false);
    log_line("attempt " + std::to_string(report.attempts) + ": " + report.last);
    if (ok) {
      report.succeeded = true;
      break;
    }
    if (i + 1 < s.max_retries) {
      // Kafka sleeps the backoff too; never past the bound.
      const int64_t wait = std::min(s.retry_backoff_ms, ms_between(Clock::now(), deadline));
      if (wait > 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait));
    }
  }
  report.elapsed_ms = ms_between(start, Clock::now());
  return report;
}

}  // namespace ciuickafka::broker
