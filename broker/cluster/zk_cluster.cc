// broker/cluster/zk_cluster.cc: opening, starting and stopping the
// ZooKeeper link, the controller's activation, and their metrics.
#include "broker/cluster/zk_cluster.h"

#include <prometheus/metric_family.h>

#include <cstdio>
#include <mutex>

#include "metrics/log/log.h"
#include "metrics/process_metrics.h"
#include "metrics/registry.h"

namespace ciuickafka::broker {
namespace {
std::mutex g_factory_mu;
ZkCluster::ClientFactory& client_factory() {
  static ZkCluster::ClientFactory f;
  return f;
}
}  // namespace

void ZkCluster::set_client_factory_for_tests(ClientFactory f) {
  std::lock_guard<std::mutex> lock(g_factory_mu);
  client_factory() = std::move(f);
}

std::optional<std::map<std::string, std::string>> ZkCluster::read_topic_config(const std::string& topic,
                                                                               std::string* error) const {
  auto session = membership_ ? membership_->session() : nullptr;
  if (!session) {
    *error = "no ZooKeeper session";
    return std::nullopt;
  }
  std::string data;
  const replication::zk::Code c = session->get(replication::topic_config_path(topic), &data);
  if (c == replication::zk::Code::kNoNode) return std::map<std::string, std::string>{};
  if (c != replication::zk::Code::kOk) {
    *error = std::string("reading ") + replication::topic_config_path(topic) + ": " +
             std::string(replication::zk::to_string(c));
    return std::nullopt;
  }
  auto decoded = replication::decode_entity_config(data);
  if (!decoded.ok()) {
    *error = decoded.error().message;
    return std::nullopt;
  }
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : decoded.value()) out[k] = v;
  return out;
}

std::unique_ptr<ZkCluster> ZkCluster::open(const config::BrokerConfig& config, int32_t broker_id,
                                           const std::string& local_cluster_id, std::string* error) {
  std::unique_ptr<ZkCluster> z(new ZkCluster());
  replication::MembershipConfig mc;
  mc.zk.connect = config.get_string("zookeeper.connect");
  mc.zk.session_timeout_ms = config.get_int("zookeeper.session.timeout.ms");
  mc.zk.connection_timeout_ms = config.is_null("zookeeper.connection.timeout.ms")
                                    ? mc.zk.session_timeout_ms
                                    : config.get_int("zookeeper.connection.timeout.ms");
  mc.broker_id = broker_id;
  if (!config.is_null("broker.rack") && !config.get_string("broker.rack").empty())
    mc.rack = config.get_string("broker.rack");
  mc.local_cluster_id = local_cluster_id;
  z->session_timeout_ms_ = mc.zk.session_timeout_ms;
  z->broker_id_ = broker_id;
  if (auto listeners = config::resolve_listeners(config); listeners.is_ok())
    z->inter_broker_listener_ = listeners.value().inter_broker;
  replication::controller::ChannelOptions co;
  co.inter_broker_listener = z->inter_broker_listener_;
  co.client.client_id = "ciuickafka-controller-" + std::to_string(broker_id);
  z->channel_ = std::make_unique<replication::controller::ControllerChannel>(co);
  replication::controller::ControllerOptions copts;
  copts.delete_topic_enable = config.get_bool("delete.topic.enable");
  copts.unclean_leader_election_enable = config.get_bool("unclean.leader.election.enable");
  copts.auto_leader_rebalance_enable = config.get_bool("auto.leader.rebalance.enable");
  copts.leader_imbalance_check_interval_ms = config.get_long("leader.imbalance.check.interval.seconds") * 1000;
  copts.leader_imbalance_per_broker_percentage = config.get_int("leader.imbalance.per.broker.percentage");
  z->controller_ = std::make_unique<replication::controller::Controller>(
      *z->channel_, copts, [](const std::string& why) {
        CK_LOG_WARN("cluster", "controller resigned: %s", why.c_str());
      });
  {
    std::lock_guard<std::mutex> lock(g_factory_mu);
    z->client_ = client_factory() ? client_factory()() : replication::zk::make_zookeeper_client();
  }
  z->membership_ = replication::ClusterMembership::open(*z->client_, std::move(mc), error);
  if (!z->membership_) return nullptr;
  // A freeze of two thirds of the session timeout may have cost the session.
  replication::ClusterMembership* m = z->membership_.get();
  z->fence_ = std::make_unique<LeadershipFence>(std::max<int64_t>(1000, int64_t{z->session_timeout_ms_} * 2 / 3),
                                                [m] { m->request_sync(); });
  return z;
}

ZkCluster::~ZkCluster() { stop(); }

bool ZkCluster::start(std::vector<replication::ListenerEndpoint> endpoints, std::string* error) {
  // Waiting out a registration left by an earlier process of this broker
  // id takes up to a session timeout (a ZooKeeper that restarted gives the
  // sessions it restored a fresh one): allow two and a little more.
  replication::MembershipListener l;
  replication::ClusterMembership* m = membership_.get();
  replication::controller::Controller* c = controller_.get();
  const int32_t id = broker_id_;
  const std::string listener = inter_broker_listener_;
  l.became_controller = [m, c, id, listener](std::shared_ptr<replication::zk::Session> session, int32_t epoch,
                                            int32_t epoch_zk_version) {
    replication::controller::ControllerIdentity ident;
    ident.broker_id = id;
    ident.epoch = epoch;
    ident.epoch_zk_version = epoch_zk_version;
    ident.inter_broker_listener = listener;
    auto v = m->view();
    c->activate(std::move(session), std::move(ident), v ? v->brokers : std::vector<replication::LiveBroker>{});
  };
  l.controller_changed = [c](bool is_controller) {
    if (!is_controller) c->deactivate();
  };
  LeadershipFence* fence = fence_.get();
  l.session_expired = [fence] { fence->session_expired(); };
  l.synced = [fence](int64_t started_ms, bool registered_anew) {
    if (registered_anew) fence->registered_anew();
    fence->sync_succeeded(started_ms);
  };
  membership_->set_listener(std::move(l));
  fence_->start();
  return membership_->start(std::move(endpoints), 2 * int64_t{session_timeout_ms_} + 5000, error);
}

void ZkCluster::stop() {
  // The controller lets go of the session first: the membership closes it
  // (its ephemeral nodes go at once) only when nobody else holds it.
  if (fence_) fence_->stop();
  if (controller_) controller_->stop();
  if (membership_) membership_->stop();
  if (channel_) channel_->clear();
  if (registry_ != nullptr) {
    registry_->remove_collector(collector_id_);
    registry_ = nullptr;
  }
}

void ZkCluster::export_metrics(metrics::Registry& registry) {
  registry_ = &registry;
  replication::ClusterMembership* m = membership_.get();
  replication::controller::Controller* c = controller_.get();
  collector_id_ = registry.add_collector([m, c](std::vector<prometheus::MetricFamily>& out) {
    auto v = m->view();
    out.push_back(metrics::single_sample_family(
        "kafka_controller_kafkacontroller_activecontrollercount",
        "1 while this broker is the elected controller of the cluster (it holds /controller in ZooKeeper), else 0.",
        prometheus::MetricType::Gauge, v && v->this_is_controller ? 1.0 : 0.0));
    out.push_back(metrics::single_sample_family(
        "kafka_server_sessionexpirelistener_zookeeperexpires_total",
        "ZooKeeper sessions of this broker that expired (each one re-registers with a new broker epoch).",
        prometheus::MetricType::Counter, static_cast<double>(m->session_expirations())));
    out.push_back(metrics::single_sample_family(
        "ciuic_cluster_live_brokers", "Brokers registered under /brokers/ids in ZooKeeper, as this broker last read them.",
        prometheus::MetricType::Gauge, v ? static_cast<double>(v->brokers.size()) : 0.0));
    // Kafka reports these from the active controller only (0 elsewhere).
    const replication::controller::ControllerStats s = c->stats();
    out.push_back(metrics::single_sample_family(
        "kafka_controller_kafkacontroller_offlinepartitionscount",
        "Partitions without a live leader, as the active controller sees them (0 on other brokers).",
        prometheus::MetricType::Gauge, s.active ? static_cast<double>(s.offline_partitions) : 0.0));
    out.push_back(metrics::single_sample_family(
        "kafka_controller_kafkacontroller_globalpartitioncount",
        "Partitions in the cluster, as the active controller sees them (0 on other brokers).",
        prometheus::MetricType::Gauge, s.active ? static_cast<double>(s.partitions) : 0.0));
    out.push_back(metrics::single_sample_family(
        "kafka_controller_kafkacontroller_globaltopiccount",
        "Topics in the cluster, as the active controller sees them (0 on other brokers).",
        prometheus::MetricType::Gauge, s.active ? static_cast<double>(s.topics) : 0.0));
    out.push_back(metrics::single_sample_family(
        "kafka_controller_controllerstats_leaderelections_total",
        "Partition leaders this broker elected while it was the controller (offline, preferred, controlled "
        "shutdown and reassignment elections; Kafka's LeaderElectionRateAndTimeMs count).",
        prometheus::MetricType::Counter, static_cast<double>(s.leader_elections)));
    out.push_back(metrics::single_sample_family(
        "kafka_controller_controllerstats_uncleanleaderelections_total",
        "Of those, leaders that were not in the partition's ISR (unclean elections: acknowledged records "
        "may be lost).",
        prometheus::MetricType::Counter, static_cast<double>(s.unclean_leader_elections)));
    out.push_back(metrics::single_sample_family(
        "kafka_controller_controllereventmanager_eventqueuesize",
        "Controller events (ZooKeeper watches, requests, timers) waiting for the controller's event thread.",
        prometheus::MetricType::Gauge, static_cast<double>(s.event_queue_size)));
  });
}

}  // namespace ciuickafka::broker
