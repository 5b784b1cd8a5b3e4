// broker/admin/zk_admin_task.h: the one way a cluster-mode admin handler
// reaches ZooKeeper (CreateTopics, CreatePartitions, DeleteTopics,
// AlterConfigs, IncrementalAlterConfigs, auto-creation).
//
// with_zk_admin(broker, work, fail) runs work(admin, session) on the admin
// worker thread (admin_worker.h: ZooKeeper calls block, never on a network
// thread) with a ZkTopicAdmin over the broker's current session and the live
// brokers (id, rack) of its cluster view. When there is no session, fail
// gets "Not connected to ZooKeeper."; when the worker has stopped, "The
// broker is shutting down." (Kafka answers both cases with a retriable
// error: the callers use REQUEST_TIMED_OUT). Exactly one of work and fail
// runs.
//
// Header-only. Thread-safety: may be called from any thread; work and fail
// run on the admin worker (fail on the calling thread when not posted).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "broker/admin/admin_worker.h"
#include "broker/broker.h"
#include "broker/cluster/zk_cluster.h"
#include "broker/cluster/zk_topics.h"

namespace ciuickafka::broker::admin {

using ZkAdminWork = std::function<void(ZkTopicAdmin& admin, replication::zk::Session& session)>;
using ZkAdminFail = std::function<void(const std::string& why)>;

inline void with_zk_admin(Broker& broker, ZkAdminWork work, ZkAdminFail fail) {
  Broker* b = &broker;
  bool posted = broker.service<AdminWorker>().post([b, work, fail] {
    auto session = b->cluster()->session();
    if (!session) {
      fail("Not connected to ZooKeeper.");
      return;
    }
    std::vector<replication::BrokerRack> live;
    if (auto view = b->cluster()->view())
      for (const auto& lb : view->brokers) live.push_back({lb.id, lb.rack});
    ZkTopicAdmin admin(*session, b->topics(), std::move(live));
    work(admin, *session);
  });
  if (!posted) fail("The broker is shutting down.");
}

}  // namespace ciuickafka::broker::admin
