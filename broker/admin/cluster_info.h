// broker/admin/cluster_info.h: what Metadata and DescribeCluster say about
// the cluster (this one node): its advertised endpoint per listener and the
// "authorized operations" bitfields.
//
// The endpoint is the advertised listener whose name matches the listener
// the request arrived on (falling back to the first advertised one). An empty
// advertised host means "this machine": we answer gethostname(). A port of 0
// (a test listener bound to an ephemeral port) is replaced by the port the
// server really bound when it published it through BoundPorts.
//
// Authorized operations: we have no authorizer, so, like Kafka without one,
// every operation the resource type supports is allowed; the bitfield has
// bit (1 << AclOperation code) set for each.
//
// Header-only (inline functions): small, and used by several handler files.
//
// Thread-safety: BoundPorts is internally locked; the rest are pure.
#pragma once

#include <unistd.h>

#include <cctype>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"

namespace ciuickafka::broker::admin {

// Ports the server actually bound, by listener name (for listeners on port
// 0). The server (or main) calls set() after binding; until then, or when it
// never does, the configured port is advertised.
class BoundPorts {
 public:
  explicit BoundPorts(Broker&) {}
  void set(const std::string& listener, uint16_t port) {
    std::lock_guard<std::mutex> lock(mu_);
    ports_[listener] = port;
  }
  uint16_t get(const std::string& listener) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ports_.find(listener);
    return it == ports_.end() ? 0 : it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint16_t> ports_;
};

struct AdvertisedEndpoint {
  std::string host;
  int32_t port = 0;
};

inline std::string local_hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

// The endpoint clients should use to reach this node over `listener`.
inline AdvertisedEndpoint advertised_endpoint(Broker& broker, std::string_view listener) {
  const auto listeners = broker.listeners();
  const auto& adv = listeners->advertised;
  const config::Endpoint* ep = nullptr;
  for (const auto& e : adv) {
    if (e.name.size() != listener.size()) continue;
    bool same = true;
    for (size_t i = 0; i < listener.size() && same; ++i)
      same = std::toupper(static_cast<unsigned char>(listener[i])) == static_cast<unsigned char>(e.name[i]);
    if (same) {
      ep = &e;
      break;
    }
  }
  if (ep == nullptr && !adv.empty()) ep = &adv.front();
  AdvertisedEndpoint out;
  if (ep == nullptr) {
    out.host = local_hostname();
    return out;
  }
  out.host = ep->host.empty() ? local_hostname() : ep->host;
  out.port = ep->port;
  if (out.port == 0) out.port = broker.service<BoundPorts>().get(ep->name);
  return out;
}

// One broker as Metadata and DescribeCluster list it.
struct BrokerRow {
  int32_t id = -1;
  std::string host;
  int32_t port = 0;
  std::optional<std::string> rack;
};

// What /brokers/ids/N registers: each advertised listener with the port
// clients reach (a bound port 0 resolved).
inline std::vector<replication::ListenerEndpoint> registration_endpoints(Broker& broker) {
  std::vector<replication::ListenerEndpoint> out;
  const auto listeners = broker.listeners();
  for (const auto& e : listeners->advertised) {
    const AdvertisedEndpoint ep = advertised_endpoint(broker, e.name);
    out.push_back({e.name, ep.host, ep.port, std::string(config::to_string(e.protocol))});
  }
  return out;
}

inline bool same_listener(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// The brokers a client reaching us over `listener` should know. Single node:
// this one. Cluster: once the controller's UpdateMetadata arrived, its live
// brokers that have an endpoint on that listener (Kafka's metadata cache);
// before that, every broker registered in ZooKeeper that has an
// endpoint on that listener (Kafka leaves out brokers without it), and this
// broker even before its own registration shows up in the view.
inline std::vector<BrokerRow> live_brokers(Broker& broker, std::string_view listener) {
  std::vector<BrokerRow> out;
  const auto self = [&] {
    const AdvertisedEndpoint ep = advertised_endpoint(broker, listener);
    BrokerRow r{broker.node_id(), ep.host, ep.port, std::nullopt};
    if (!broker.config().is_null("broker.rack") && !broker.config().get_string("broker.rack").empty())
      r.rack = broker.config().get_string("broker.rack");
    return r;
  };
  ZkCluster* cluster = broker.cluster();
  if (cluster != nullptr) {
    MetadataCache& cache = broker.service<ReplicaManager>().metadata_cache();
    if (cache.initialized()) {
      auto snap = cache.snapshot();
      for (const auto& [id, b] : snap->brokers)
        if (const CachedEndpoint* e = b.endpoint(listener)) out.push_back(BrokerRow{id, e->host, e->port, b.rack});
      return out;
    }
  }
  auto view = cluster ? cluster->view() : nullptr;
  if (!view) {
    out.push_back(self());
    return out;
  }
  bool saw_self = false;
  for (const auto& b : view->brokers) {
    if (b.id == broker.node_id()) {
      out.push_back(self());
      saw_self = true;
      continue;
    }
    for (const auto& e : b.endpoints) {
      if (!same_listener(e.listener, listener)) continue;
      out.push_back(BrokerRow{b.id, e.host, e.port, b.rack});
      break;
    }
  }
  if (!saw_self) out.push_back(self());
  return out;
}

// The controller's id: this node on a single node; in a cluster the broker
// holding /controller (-1 while none is elected, as Kafka answers): the
// controller id of the last UpdateMetadata, else ZooKeeper's view.
inline int32_t controller_id(Broker& broker) {
  ZkCluster* cluster = broker.cluster();
  if (cluster == nullptr) return broker.node_id();
  MetadataCache& cache = broker.service<ReplicaManager>().metadata_cache();
  if (cache.initialized()) return cache.snapshot()->controller_id;
  auto view = cluster->view();
  return view ? view->controller_id : -1;
}

// Kafka's AclOperation codes.
enum AclOperation : int {
  kAclAll = 2,
  kAclRead = 3,
  kAclWrite = 4,
  kAclCreate = 5,
  kAclDelete = 6,
  kAclAlter = 7,
  kAclDescribe = 8,
  kAclClusterAction = 9,
  kAclDescribeConfigs = 10,
  kAclAlterConfigs = 11,
  kAclIdempotentWrite = 12,
};

constexpr int32_t bit(int op) { return static_cast<int32_t>(1u << op); }

// Every operation a TOPIC supports: READ, WRITE, CREATE, DELETE, ALTER,
// DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
constexpr int32_t kTopicOperations = bit(kAclRead) | bit(kAclWrite) | bit(kAclCreate) | bit(kAclDelete) |
                                     bit(kAclAlter) | bit(kAclDescribe) | bit(kAclDescribeConfigs) |
                                     bit(kAclAlterConfigs);
// Every operation the CLUSTER supports: CREATE, CLUSTER_ACTION,
// DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE.
constexpr int32_t kClusterOperations = bit(kAclCreate) | bit(kAclClusterAction) | bit(kAclDescribeConfigs) |
                                       bit(kAclAlterConfigs) | bit(kAclIdempotentWrite) | bit(kAclAlter) |
                                       bit(kAclDescribe);
// "Not requested": Integer.MIN_VALUE.
constexpr int32_t kOperationsOmitted = INT32_MIN;

}  // namespace ciuickafka::broker::admin
