// broker/cluster/zk_cluster.cc: opening, starting and stopping the
// ZooKeeper link, and its metrics.
#include "broker/cluster/zk_cluster.h"

#include <prometheus/metric_family.h>

#include <mutex>

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
  {
    std::lock_guard<std::mutex> lock(g_factory_mu);
    z->client_ = client_factory() ? client_factory()() : replication::zk::make_zookeeper_client();
  }
  z->membership_ = replication::ClusterMembership::open(*z->client_, std::move(mc), error);
  if (!z->membership_) return nullptr;
  return z;
}

ZkCluster::~ZkCluster() { stop(); }

bool ZkCluster::start(std::vector<replication::ListenerEndpoint> endpoints, std::string* error) {
  // Waiting out a registration left by an earlier process of this broker
  // id takes up to a session timeout (a ZooKeeper that restarted gives the
  // sessions it restored a fresh one): allow two and a little more.
  return membership_->start(std::move(endpoints), 2 * int64_t{session_timeout_ms_} + 5000, error);
}

void ZkCluster::stop() {
  if (membership_) membership_->stop();
  if (registry_ != nullptr) {
    registry_->remove_collector(collector_id_);
    registry_ = nullptr;
  }
}

void ZkCluster::export_metrics(metrics::Registry& registry) {
  registry_ = &registry;
  replication::ClusterMembership* m = membership_.get();
  collector_id_ = registry.add_collector([m](std::vector<prometheus::MetricFamily>& out) {
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
  });
}

}  // namespace ciuickafka::broker
