// broker/cluster/replica_roles.h: who hears about partition role changes.
//
// In cluster mode the replica manager (broker/cluster/replica_manager.h)
// applies the controller's LeaderAndIsr and StopReplica requests to the
// partitions this broker hosts: it creates missing logs, checks epochs and
// calls Partition::set_role. The replication machinery (replica fetchers
// for followers, the leader's follower tracking and HW) listens here: it
// starts or stops fetching and resets its replica state per partition.
//
// Calls come on the thread handling the control request, after set_role,
// one partition at a time in request order; a listener must not block (post
// work to its own threads).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "broker/cluster/partition.h"
#include "storage/file_names.h"

namespace ciuickafka::broker {

// Where a follower fetches from: the leader's inter-broker endpoint, as
// LeaderAndIsr's LiveLeaders (or the metadata cache) names it.
struct LeaderEndpoint {
  int32_t broker_id = -1;
  std::string host;
  int32_t port = 0;
};

class ReplicaRoleListener {
 public:
  virtual ~ReplicaRoleListener() = default;
  // This broker is about to lead p: called before set_role, while p is
  // still a follower (no produce is accepted yet). A listener stops what
  // must not overlap the leadership (the fetcher's follower appends; the
  // producer table built from the log) and returns once it has stopped.
  virtual void will_lead(const std::shared_ptr<Partition>& /*p*/) {}
  // This broker now leads p (p->role_state() holds the new ISR and epochs).
  virtual void became_leader(const std::shared_ptr<Partition>& p) = 0;
  // This broker now follows leader for p.
  virtual void became_follower(const std::shared_ptr<Partition>& p, const LeaderEndpoint& leader) = 0;
  // StopReplica: this broker no longer hosts tp's replica (deleted: its log
  // is being removed).
  virtual void stopped(const storage::TopicPartition& tp, bool deleted) = 0;
};

}  // namespace ciuickafka::broker
