// broker/cluster/zk_cluster.h: the broker's link to a ZooKeeper-mode cluster.
//
// Made by Broker::open when zookeeper.connect is set (single-node mode has
// none). It owns the ZooKeeper client and replication::ClusterMembership:
// open() connects and settles the cluster id before the log dirs' metadata
// is written; start() registers /brokers/ids/N once the listeners are bound
// (their real ports go into the registration); stop() deregisters first
// thing at shutdown, so the controller sees the broker leave at once.
//
// It also owns this broker's controller (replication/controller/
// controller.h) and its channel to the brokers: when the membership wins
// the election the controller is activated with the session and the epoch's
// zkVersion; when it loses the role (or the session expires) it is
// deactivated; stop() deactivates it before the membership stops.
// AlterPartition reaches it through controller().
//
// Handlers read view() (live brokers, controller) for Metadata and
// DescribeCluster until the controller's first UpdateMetadata fills the
// metadata cache (broker/cluster/metadata_cache.h); partition roles come from
// the controller's LeaderAndIsr (broker/cluster/replica_manager.h), which
// reads the topic configs here (read_topic_config).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/cluster/leadership_fence.h"
#include "broker/config/broker_config.h"
#include "broker/config/listeners.h"
#include "replication/controller/channel.h"
#include "replication/controller/controller.h"
#include "replication/membership.h"

namespace ciuickafka::metrics {
class Registry;
}

namespace ciuickafka::broker {

class ZkCluster {
 public:
  // Connects to zookeeper.connect; local_cluster_id is what the log dirs'
  // meta.properties says (empty when new). nullptr with *error on failure.
  static std::unique_ptr<ZkCluster> open(const config::BrokerConfig& config, int32_t broker_id,
                                         const std::string& local_cluster_id, std::string* error);
  ~ZkCluster();

  const std::string& cluster_id() const { return membership_->cluster_id(); }

  // Registers the broker with these endpoints (advertised listeners with
  // their bound ports) and joins the controller election.
  bool start(std::vector<replication::ListenerEndpoint> endpoints, std::string* error);
  void stop();
  // The listeners changed live: the registration gets these endpoints
  // (replication/membership.h: update_endpoints). Any thread.
  void update_registration(std::vector<replication::ListenerEndpoint> endpoints) {
    membership_->update_endpoints(std::move(endpoints));
  }

  // The cluster as last read from ZooKeeper; null before start().
  std::shared_ptr<const replication::ClusterView> view() const { return membership_->view(); }

  // The ZooKeeper session now (a new one after an expiry); null before open().
  std::shared_ptr<replication::zk::Session> session() const { return membership_->session(); }

  // The listener brokers talk to each other on (inter.broker.listener.name).
  const std::string& inter_broker_listener() const { return inter_broker_listener_; }

  // Whether a leader may serve now (broker/cluster/leadership_fence.h);
  // never null once open() succeeded.
  LeadershipFence& fence() { return *fence_; }

  // The controller (active or not; never null once open() succeeded).
  replication::controller::Controller* controller() { return controller_.get(); }

  // A topic's config overrides from /config/topics/<topic> (empty when the
  // znode is absent); nullopt with *error when ZooKeeper cannot be read or
  // the data does not decode. Blocking (one ZooKeeper read).
  // The controller's share of config changes: the broker's dynamic
  // unclean.leader.election.enable, and a topic's turned on (offline
  // partitions elected again at once while this broker is the controller).
  void set_unclean_leader_election_default(bool enable) {
    if (controller_) controller_->set_unclean_leader_election_default(enable);
  }
  void elect_offline_partitions() {
    if (controller_) controller_->elect_offline_partitions();
  }
  bool is_active_controller() const { return controller_ && controller_->active(); }

  std::optional<std::map<std::string, std::string>> read_topic_config(const std::string& topic,
                                                                      std::string* error) const;

  // Tests: the ZooKeeper client open() uses instead of a real one (a
  // FakeZkServer's). Process-wide; set it before Broker::open, clear after.
  using ClientFactory = std::function<std::unique_ptr<replication::zk::Client>()>;
  static void set_client_factory_for_tests(ClientFactory f);

  // Active controller count, session expirations and the controller's
  // partition counts, read at scrape time.
  void export_metrics(metrics::Registry& registry);

 private:
  ZkCluster() = default;
  // The controller goes before the membership (its watches are on the
  // membership's session) and before the channel it sends through; the
  // client last. Members go in reverse order.
  std::unique_ptr<replication::zk::Client> client_;
  std::unique_ptr<replication::controller::ControllerChannel> channel_;
  std::unique_ptr<replication::controller::Controller> controller_;
  std::string inter_broker_listener_ = "PLAINTEXT";
  int32_t broker_id_ = -1;
  std::unique_ptr<replication::ClusterMembership> membership_;
  std::unique_ptr<LeadershipFence> fence_;  // after the membership it calls
  int32_t session_timeout_ms_ = 18000;
  metrics::Registry* registry_ = nullptr;
  uint64_t collector_id_ = 0;
};

}  // namespace ciuickafka::broker
