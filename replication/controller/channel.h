// replication/controller/channel.h: how the controller's requests reach the
// brokers (Kafka's ControllerChannelManager and RequestSendThread).
//
// RequestSender is what the Controller is written against (tests use a fake
// that records what it was given). ControllerChannel is the real one: one
// sender thread and one bounded queue per live broker, this broker included
// (Kafka sends to itself over the network too). Each thread connects with a
// ReconnectingClient to the broker's endpoint on the inter-broker listener
// and sends its queue in order, one request in flight. A failed send is
// retried (after the client's reconnect backoff) until it succeeds or the
// broker is removed / the channel cleared; only then does the next request
// go. A broker that does not offer the API (or no version in our range:
// LeaderAndIsr <= 7, UpdateMetadata <= 8, StopReplica <= 4, as pick_version
// reports with nullopt), or a request that cannot be encoded at the chosen
// version, is logged (once per broker connection and API) and the request
// dropped. Responses with errors are
// logged.
//
// Per broker the requests of one ControlRequests go LeaderAndIsr,
// UpdateMetadata, StopReplica, or UpdateMetadata first when metadata_first.
// A full queue (max_queued) drops its oldest request with a warning: the
// controller resends full state on the next failover or broker startup.
//
// Thread-safety: every method may be called from any thread; the Controller
// calls them from its event thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "replication/controller/controller_context.h"
#include "replication/membership.h"
#include "replication/net/reconnecting_client.h"

namespace ciuickafka::replication::controller {

class RequestSender {
 public:
  virtual ~RequestSender() = default;
  // The brokers to send to: queues for new ones are made, queues of gone
  // ones (and of ones whose epoch or endpoint changed: bounced) are dropped.
  virtual void set_brokers(const std::vector<LiveBroker>& live) = 0;
  // Queues the requests, per target broker; brokers without a queue get
  // nothing.
  virtual void send(const ControlRequests& requests) = 0;
  // Drops every queue and stops every sender (the controller resigned).
  virtual void clear() = 0;
};

using QueuedRequest =
    std::variant<protocol::LeaderAndIsrRequest, protocol::UpdateMetadataRequest, protocol::StopReplicaRequest>;

struct ChannelOptions {
  std::string inter_broker_listener = "PLAINTEXT";
  net::ClientOptions client;  // client_id "ciuickafka-controller" by default (see the constructor)
  net::BackoffOptions backoff;
  size_t max_queued = 10000;
};

// The highest versions the controller sends (Kafka 3.9 at IBP 3.9).
inline constexpr int16_t kLeaderAndIsrMaxVersion = 7;
inline constexpr int16_t kUpdateMetadataMaxVersion = 8;
inline constexpr int16_t kStopReplicaMaxVersion = 4;

class ControllerChannel : public RequestSender {
 public:
  explicit ControllerChannel(ChannelOptions options);
  ~ControllerChannel() override;
  ControllerChannel(const ControllerChannel&) = delete;
  ControllerChannel& operator=(const ControllerChannel&) = delete;

  void set_brokers(const std::vector<LiveBroker>& live) override;
  void send(const ControlRequests& requests) override;
  void clear() override;

  // For tests and metrics.
  std::vector<int32_t> brokers() const;
  uint64_t sent() const { return sent_.load(); }
  uint64_t dropped() const { return dropped_.load(); }

 private:
  struct Queue;
  void run(Queue* q);
  bool send_one(Queue* q, const QueuedRequest& r);

  const ChannelOptions options_;
  mutable std::mutex mu_;  // guards queues_
  std::map<int32_t, std::unique_ptr<Queue>> queues_;
  std::atomic<uint64_t> sent_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace ciuickafka::replication::controller
