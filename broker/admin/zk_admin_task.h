// broker/admin/zk_admin_task.h: the one way a cluster-mode admin handler
// reaches ZooKeeper (CreateTopics, CreatePartitions, DeleteTopics,
// AlterConfigs, IncrementalAlterConfigs, auto-creation).
//
// with_zk_admin(broker, work, fail) runs work(admin, session) on the admin
// worker thread (admin_worker.h: ZooKeeper calls block, never on a network
// thread) with a ZkTopicAdmin over the broker's current session and the live
// brokers (id, rack): the controller's list once it has sent one (what
// Metadata answers with), else this broker's view of /brokers/ids. When there is no session, fail
// gets "Not connected to ZooKeeper."; when the worker has stopped, "The
// broker is shutting down." (Kafka answers both cases with a retriable
// error: the callers use REQUEST_TIMED_OUT). Exactly one of work and fail
// runs. span (the request's RequestContext::worker_span) counts the time
// against the client's request_percentage quota.
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
#include "broker/cluster/replica_manager.h"
#include "broker/cluster/zk_cluster.h"
#include "broker/cluster/zk_topics.h"
#include "broker/server/request_context.h"

namespace ciuickafka::broker::admin {

using ZkAdminWork = std::function<void(ZkTopicAdmin& admin, replication::zk::Session& session)>;
using ZkAdminFail = std::function<void(const std::string& why)>;

// The brokers new replicas may go to: the live brokers the controller last
// sent (UpdateMetadata), the list Metadata answers with, as Kafka's
// ZkAdminManager takes metadataCache.getAliveBrokers(); before the first
// UpdateMetadata, this broker's own reading of /brokers/ids.
inline std::vector<replication::BrokerRack> live_brokers(Broker& b) {
  std::vector<replication::BrokerRack> live;
  auto& cache = b.service<ReplicaManager>().metadata_cache();
  if (cache.initialized()) {
    for (const auto& [id, cb] : cache.snapshot()->brokers) live.push_back({id, cb.rack});
    return live;
  }
  if (auto view = b.cluster()->view())
    for (const auto& lb : view->brokers) live.push_back({lb.id, lb.rack});
  return live;
}

inline void with_zk_admin(Broker& broker, ZkAdminWork work, ZkAdminFail fail,
                          std::shared_ptr<WorkerSpan> span = nullptr) {
  Broker* b = &broker;
  bool posted = broker.service<AdminWorker>().post([b, work, fail, span] {
    WorkerTimer timer(span.get());  // the request's request_percentage time
    auto session = b->cluster()->session();
    if (!session) {
      fail("Not connected to ZooKeeper.");
      return;
    }
    ZkTopicAdmin admin(*session, b->topics(), live_brokers(*b));
    work(admin, *session);
  });
  if (!posted) fail("The broker is shutting down.");
}

}  // namespace ciuickafka::broker::admin
