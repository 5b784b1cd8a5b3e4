// replication/controller/channel.cc: the per-broker send threads. See
// channel.h.
#include "replication/controller/channel.h"

#include <chrono>
#include <cstdio>
#include <set>

#include "metrics/log/log.h"
#include "protocol/generated/leader_and_isr.h"
#include "protocol/generated/stop_replica.h"
#include "protocol/generated/update_metadata.h"

namespace ciuickafka::replication::controller {

namespace {

void channel_log(const char* level, const std::string& what) {
  const auto l = metrics::log::parse_level(level).value_or(metrics::log::Level::kInfo);
  if (metrics::log::enabled(l)) metrics::log::write(l, "controller", "controller channel: " + what);
}

const ListenerEndpoint* find_endpoint(const LiveBroker& b, const std::string& listener) {
  for (const auto& e : b.endpoints)
    if (e.listener == listener) return &e;
  return nullptr;
}

int count_errors(const protocol::LeaderAndIsrResponse& r, int16_t* first) {
  int n = 0;
  auto note = [&](int16_t e) {
    if (e != 0 && n++ == 0) *first = e;
  };
  for (const auto& p : r.partition_errors) note(p.error_code);
  for (const auto& t : r.topics)
    for (const auto& p : t.partition_errors) note(p.error_code);
  return n;
}

int count_errors(const protocol::StopReplicaResponse& r, int16_t* first) {
  int n = 0;
  for (const auto& p : r.partition_errors)
    if (p.error_code != 0 && n++ == 0) *first = p.error_code;
  return n;
}

int count_errors(const protocol::UpdateMetadataResponse&, int16_t*) { return 0; }

const char* api_name(int16_t key) {
  switch (key) {
    case 4: return "LeaderAndIsr";
    case 5: return "StopReplica";
    case 6: return "UpdateMetadata";
    default: return "?";
  }
}

}  // namespace

struct ControllerChannel::Queue {
  int32_t broker_id = -1;
  int64_t epoch = -1;
  std::string host;
  uint16_t port = 0;
  std::unique_ptr<net::ReconnectingClient> client;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<QueuedRequest> items;  // guarded by mu
  std::set<int16_t> missing_logged;  // sender thread: APIs already reported missing (logged once)
  bool stopping = false;            // guarded by mu
  std::thread thread;

  // Any thread: stops the thread (a send in progress is cut short) and joins.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stopping = true;
      cv.notify_all();
    }
    client->close();
    if (thread.joinable()) thread.join();
  }
};

ControllerChannel::ControllerChannel(ChannelOptions options) : options_(std::move(options)) {}

ControllerChannel::~ControllerChannel() { clear(); }

void ControllerChannel::set_brokers(const std::vector<LiveBroker>& live) {
  std::vector<std::unique_ptr<Queue>> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<int32_t, const LiveBroker*> want;
    for (const auto& b : live) want[b.id] = &b;
    for (auto it = queues_.begin(); it != queues_.end();) {
      auto w = want.find(it->first);
      const ListenerEndpoint* e = w == want.end() ? nullptr : find_endpoint(*w->second, options_.inter_broker_listener);
      const bool same = e != nullptr && w->second->epoch == it->second->epoch && e->host == it->second->host &&
                        e->port == it->second->port;
      if (same) {
        ++it;
      } else {
        gone.push_back(std::move(it->second));
        it = queues_.erase(it);
      }
    }
    for (const auto& b : live) {
      if (queues_.contains(b.id)) continue;
      const ListenerEndpoint* e = find_endpoint(b, options_.inter_broker_listener);
      if (e == nullptr || e->port <= 0 || e->port > 65535) {
        channel_log("WARN", "broker " + std::to_string(b.id) + " has no endpoint on listener " +
                                options_.inter_broker_listener + ": nothing will be sent to it");
        continue;
      }
      auto q = std::make_unique<Queue>();
      q->broker_id = b.id;
      q->epoch = b.epoch;
      q->host = e->host.empty() ? "127.0.0.1" : e->host;
      q->port = static_cast<uint16_t>(e->port);
      net::ClientOptions co = options_.client;
      co.interrupter.reset();  // each client its own: close() of one stops only it
      q->client = std::make_unique<net::ReconnectingClient>(q->host, q->port, co, options_.backoff);
      Queue* raw = q.get();
      q->thread = std::thread([this, raw] { run(raw); });
      queues_[b.id] = std::move(q);
    }
  }
  for (auto& q : gone) q->stop();  // outside mu_: a stop joins a thread
}

void ControllerChannel::send(const ControlRequests& requests) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [broker_id, q] : queues_) {
    const int32_t id = broker_id;  // a plain copy: clang 14 cannot capture a structured binding
    std::vector<QueuedRequest> mine;
    auto add_metadata = [&] {
      if (auto it = requests.update_metadata.find(id); it != requests.update_metadata.end()) mine.emplace_back(it->second);
    };
    if (requests.metadata_first) add_metadata();
    if (auto it = requests.leader_and_isr.find(id); it != requests.leader_and_isr.end()) mine.emplace_back(it->second);
    if (!requests.metadata_first) add_metadata();
    if (auto it = requests.stop_replica.find(id); it != requests.stop_replica.end()) mine.emplace_back(it->second);
    if (mine.empty()) continue;
    std::lock_guard<std::mutex> ql(q->mu);
    for (auto& r : mine) {
      if (q->items.size() >= options_.max_queued) {
        q->items.pop_front();
        ++dropped_;
        channel_log("WARN", "queue to broker " + std::to_string(id) + " is full: dropped its oldest request");
      }
      q->items.push_back(std::move(r));
    }
    q->cv.notify_all();
  }
}

void ControllerChannel::clear() {
  std::map<int32_t, std::unique_ptr<Queue>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(queues_);
  }
  for (auto& [id, q] : all) q->stop();
}

std::vector<int32_t> ControllerChannel::brokers() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int32_t> out;
  for (const auto& [id, q] : queues_) out.push_back(id);
  return out;
}

void ControllerChannel::run(Queue* q) {
  for (;;) {
    QueuedRequest r;
    {
      std::unique_lock<std::mutex> lock(q->mu);
      q->cv.wait(lock, [q] { return q->stopping || !q->items.empty(); });
      if (q->stopping) return;
      r = q->items.front();  // stays queued until sent (or dropped)
    }
    // Retried until sent; a failed connect waits the client's backoff.
    bool done = false;
    while (!done) {
      {
        std::lock_guard<std::mutex> lock(q->mu);
        if (q->stopping) return;
      }
      done = send_one(q, r);
      if (!done) {
        // A call that failed without reaching the connect backoff (the
        // connection died mid-request) waits a little before the next try.
        std::unique_lock<std::mutex> lock(q->mu);
        q->cv.wait_for(lock, std::chrono::milliseconds(options_.backoff.backoff_ms), [q] { return q->stopping; });
      }
    }
    std::lock_guard<std::mutex> lock(q->mu);
    if (!q->items.empty()) q->items.pop_front();
  }
}

// True when the request is finished with (answered, or dropped as
// unsendable); false to retry.
bool ControllerChannel::send_one(Queue* q, const QueuedRequest& r) {
  net::NetResult<net::BrokerClient*> c = q->client->client();
  if (!c) return false;
  const std::string to = "broker " + std::to_string(q->broker_id) + " (" + q->host + ":" + std::to_string(q->port) + ")";
  return std::visit(
      [&](const auto& req) -> bool {
        using Req = std::decay_t<decltype(req)>;
        int16_t max = 0;
        if constexpr (std::is_same_v<Req, protocol::LeaderAndIsrRequest>) max = kLeaderAndIsrMaxVersion;
        if constexpr (std::is_same_v<Req, protocol::UpdateMetadataRequest>) max = kUpdateMetadataMaxVersion;
        if constexpr (std::is_same_v<Req, protocol::StopReplicaRequest>) max = kStopReplicaMaxVersion;
        const std::optional<int16_t> v = c.value()->pick_version(Req::kApiKey, max);
        if (!v) {
          ++dropped_;
          if (q->missing_logged.insert(Req::kApiKey).second)
            channel_log("WARN", to + " offers no " + api_name(Req::kApiKey) + " version up to " +
                                    std::to_string(max) + ": its requests are dropped (logged once)");
          return true;
        }
        std::conditional_t<std::is_same_v<Req, protocol::LeaderAndIsrRequest>, protocol::LeaderAndIsrResponse,
                           std::conditional_t<std::is_same_v<Req, protocol::UpdateMetadataRequest>,
                                              protocol::UpdateMetadataResponse, protocol::StopReplicaResponse>>
            resp;
        net::Status st = q->client->call(req, *v, &resp);
        if (!st.ok()) {
          if (st.kind() == net::NetErrorKind::kEncode) {
            ++dropped_;
            channel_log("WARN", to + ": " + st.message() + ": request dropped");
            return true;
          }
          if (st.kind() != net::NetErrorKind::kClosed)
            channel_log("WARN", to + ": " + st.message() + " (will retry)");
          return false;
        }
        ++sent_;
        int16_t first = 0;
        const int partition_errors = count_errors(resp, &first);
        if (resp.error_code != 0 || partition_errors > 0) {
          channel_log(
              "WARN",
              to + " answered " + api_name(Req::kApiKey) + " v" + std::to_string(*v) + " with error " +
                  std::to_string(resp.error_code != 0 ? resp.error_code : first) +
                  (partition_errors > 0 ? " (" + std::to_string(partition_errors) + " partition errors)"
                                        : std::string()));
        }
        return true;
      },
      r);
}

}  // namespace ciuickafka::replication::controller
