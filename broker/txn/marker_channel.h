// broker/txn/marker_channel.h: the transaction coordinator's WriteTxnMarkers
// to other brokers (cluster mode), as Kafka's TransactionMarkerChannelManager
// sends them: one request per destination broker with the markers for the
// partitions it leads, version 1, over the inter-broker listener.
//
// One sender thread per destination broker (made on first use), so a broker
// that is down or paused only delays the markers meant for it. Each job is
// sent once: the destination's endpoint is looked up in the metadata cache
// at send time, one ReconnectingClient per destination is kept (made again
// when the endpoint changes), and the answer maps every partition of the job
// to its error; a failed exchange (connection refused, timeout) gives every
// partition NETWORK_EXCEPTION. Retrying is the coordinator's business (it
// looks the leader up again). stop() closes every client and joins the
// threads; jobs left are answered COORDINATOR_NOT_AVAILABLE.
//
// post() runs any other exchange the same way (the coordinator keeps a
// second channel for KIP-890 verification requests, so that markers stuck
// behind a broker that is down never delay a produce's verification).
//
// Thread-safety: send(), post() and stop() from any thread; done runs on a
// sender thread (or the caller's, for a job refused because the channel
// stopped).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "protocol/error_code.h"
#include "protocol/generated/write_txn_markers.h"

namespace ciuickafka::broker {
class Broker;
}
namespace ciuickafka::replication::net {
class ReconnectingClient;
}

namespace ciuickafka::broker::txn {

class MarkerChannel {
 public:
  using PartitionErrors = std::map<std::pair<std::string, int32_t>, protocol::ErrorCode>;
  using Done = std::function<void(PartitionErrors)>;

  // Kafka's request.timeout.ms default, for one exchange.
  static constexpr int32_t kRequestTimeoutMs = 30000;

  // client_id_prefix names the channel's connections ("-<node id>" follows).
  explicit MarkerChannel(Broker& broker, std::string client_id_prefix = "ciuickafka-txn-markers");
  ~MarkerChannel();
  MarkerChannel(const MarkerChannel&) = delete;
  MarkerChannel& operator=(const MarkerChannel&) = delete;

  void send(int32_t broker_id, protocol::WriteTxnMarkersRequest request, Done done);

  // One exchange with broker_id: called on its sender thread with a client
  // connected (or connecting) to its inter-broker endpoint, or with nullptr
  // and the reason (NOT_LEADER_OR_FOLLOWER: no endpoint known for it;
  // COORDINATOR_NOT_AVAILABLE: the channel stopped).
  using Exchange = std::function<void(replication::net::ReconnectingClient* client, protocol::ErrorCode why)>;
  void post(int32_t broker_id, Exchange exchange);
  void stop();

 private:
  using Job = Exchange;
  struct Destination;

  void run(int32_t broker_id, Destination* d);

  Broker& broker_;
  const std::string client_id_prefix_;
  std::mutex mu_;
  bool stopped_ = false;
  std::map<int32_t, std::unique_ptr<Destination>> destinations_;
};

}  // namespace ciuickafka::broker::txn
