// broker/replica/replica_roles_listener.h: the one ReplicaRoleListener the
// replica manager registers for replication: it forwards each role change to
// the follower fetchers (ReplicaFetcherManager) and the leader side
// (LeaderReplicas), in the order that keeps them consistent:
//   became_leader:   stop fetching first, then start tracking followers;
//   became_follower: drop the leader state (acks=all waiters answered
//                    NOT_LEADER_OR_FOLLOWER) first, then start fetching;
//   stopped:         stop fetching, then drop the leader state.
// Both are broker services, fetched on each call (not in the constructor:
// Broker::service<T>() holds its lock while constructing T).
//
// Usage (replica manager): add_role_listener(&broker.service<replica::ReplicaRolesListener>());
//
// Thread-safety: as the services it forwards to (any thread).
#pragma once

#include <memory>

#include "broker/broker.h"
#include "broker/cluster/replica_roles.h"
#include "broker/replica/fetcher_manager.h"
#include "broker/replica/leader_replicas.h"

namespace ciuickafka::broker::replica {

class ReplicaRolesListener : public ReplicaRoleListener {
 public:
  explicit ReplicaRolesListener(Broker& broker) : broker_(broker) {}

  void will_lead(const std::shared_ptr<Partition>& p) override {
    // Stops fetching p (waits for an answer being applied) before it leads.
    broker_.service<ReplicaFetcherManager>().became_leader(p);
  }
  void became_leader(const std::shared_ptr<Partition>& p) override {
    broker_.service<ReplicaFetcherManager>().became_leader(p);  // idempotent; will_lead did it
    broker_.service<LeaderReplicas>().became_leader(p);
  }
  void became_follower(const std::shared_ptr<Partition>& p, const LeaderEndpoint& leader) override {
    broker_.service<LeaderReplicas>().became_follower(p, leader);
    broker_.service<ReplicaFetcherManager>().became_follower(p, leader);
  }
  void stopped(const storage::TopicPartition& tp, bool deleted) override {
    broker_.service<ReplicaFetcherManager>().stopped(tp, deleted);
    broker_.service<LeaderReplicas>().stopped(tp, deleted);
  }

 private:
  Broker& broker_;
};

}  // namespace ciuickafka::broker::replica
