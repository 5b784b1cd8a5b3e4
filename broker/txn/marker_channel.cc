// broker/txn/marker_channel.cc: WriteTxnMarkers to other brokers (design in
// the header).
#include "broker/txn/marker_channel.h"

#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/cluster/zk_cluster.h"
#include "metrics/log/log.h"
#include "replication/net/reconnecting_client.h"

namespace ciuickafka::broker::txn {

using protocol::ErrorCode;

struct MarkerChannel::Destination {
  std::thread thread;
  std::condition_variable cv;
  std::deque<Job> jobs;  // under MarkerChannel::mu_
  std::shared_ptr<replication::net::Interrupter> interrupter = replication::net::Interrupter::create(nullptr);
};

namespace {

MarkerChannel::PartitionErrors all_partitions(const protocol::WriteTxnMarkersRequest& req, ErrorCode e) {
  MarkerChannel::PartitionErrors out;
  for (const auto& m : req.markers)
    for (const auto& t : m.topics)
      for (int32_t p : t.partition_indexes) out[{t.name, p}] = e;
  return out;
}

}  // namespace

MarkerChannel::MarkerChannel(Broker& broker, std::string client_id_prefix)
    : broker_(broker), client_id_prefix_(std::move(client_id_prefix)) {}
MarkerChannel::~MarkerChannel() { stop(); }

void MarkerChannel::send(int32_t broker_id, protocol::WriteTxnMarkersRequest request, Done done) {
  post(broker_id, [broker_id, request = std::move(request), done = std::move(done)](
                      replication::net::ReconnectingClient* client, ErrorCode why) {
    if (client == nullptr) return done(all_partitions(request, why));
    protocol::WriteTxnMarkersResponse resp;
    replication::net::Status st = client->call(request, 1, &resp);
    if (!st.ok()) {
      CK_LOG_WARN("txn", "WriteTxnMarkers to broker %d failed: %s; the coordinator retries", broker_id,
                  st.message().c_str());
      return done(all_partitions(request, ErrorCode::NETWORK_EXCEPTION));
    }
    PartitionErrors out = all_partitions(request, ErrorCode::UNKNOWN_SERVER_ERROR);  // unanswered ones
    for (const auto& m : resp.markers)
      for (const auto& t : m.topics)
        for (const auto& p : t.partitions) {
          auto it = out.find({t.name, p.partition_index});
          if (it != out.end()) it->second = static_cast<ErrorCode>(p.error_code);
        }
    done(std::move(out));
  });
}

void MarkerChannel::post(int32_t broker_id, Exchange exchange) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopped_) {
    lock.unlock();
    return exchange(nullptr, ErrorCode::COORDINATOR_NOT_AVAILABLE);
  }
  auto& d = destinations_[broker_id];
  if (!d) {
    d = std::make_unique<Destination>();
    Destination* raw = d.get();
    d->thread = std::thread([this, broker_id, raw] { run(broker_id, raw); });
  }
  d->jobs.push_back(std::move(exchange));
  d->cv.notify_one();
}

void MarkerChannel::stop() {
  std::map<int32_t, std::unique_ptr<Destination>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& [id, d] : destinations_) {
      if (d->interrupter) d->interrupter->trigger();
      d->cv.notify_all();
    }
  }
  // The threads exit once they see stopped_; destinations_ stays intact
  // until they are joined (they read it under mu_).
  for (auto& [id, d] : destinations_)
    if (d->thread.joinable()) d->thread.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(destinations_);
  }
  for (auto& [id, d] : all)
    for (Job& j : d->jobs) j(nullptr, ErrorCode::COORDINATOR_NOT_AVAILABLE);
}

void MarkerChannel::run(int32_t broker_id, Destination* d) {
  std::unique_ptr<replication::net::ReconnectingClient> client;
  std::string host;
  int32_t port = -1;
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      d->cv.wait(lock, [&] { return stopped_ || !d->jobs.empty(); });
      if (stopped_) return;
      job = std::move(d->jobs.front());
      d->jobs.pop_front();
    }
    // Where the destination listens now (inter-broker listener).
    auto snap = broker_.service<ReplicaManager>().metadata_cache().snapshot();
    const CachedBroker* b = snap->broker(broker_id);
    const CachedEndpoint* ep = b ? b->endpoint(broker_.cluster()->inter_broker_listener()) : nullptr;
    if (ep == nullptr) {
      job(nullptr, ErrorCode::NOT_LEADER_OR_FOLLOWER);
      continue;
    }
    if (!client || ep->host != host || ep->port != port) {
      host = ep->host;
      port = ep->port;
      replication::net::ClientOptions opts;
      opts.client_id = client_id_prefix_ + "-" + std::to_string(broker_.node_id());
      opts.connect_timeout_ms = 5000;
      opts.request_timeout_ms = kRequestTimeoutMs;
      opts.interrupter = d->interrupter;
      replication::net::BackoffOptions bo;  // Kafka's reconnect.backoff.ms / .max.ms
      client = std::make_unique<replication::net::ReconnectingClient>(host, static_cast<uint16_t>(port), opts, bo);
    }
    job(client.get(), ErrorCode::NONE);
  }
}

}  // namespace ciuickafka::broker::txn
