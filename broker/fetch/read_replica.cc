// broker/fetch/read_replica.cc: see read_replica.h.
#include "broker/fetch/read_replica.h"

#include "broker/broker.h"
#include "broker/cluster/replica_manager.h"
#include "broker/replica/leader_replicas.h"

namespace ciuickafka::broker::fetch {

ReadReplicaSelector::ReadReplicaSelector(Broker& broker) : broker_(broker) {
  const auto& c = broker.config();
  enabled_ = broker.cluster() != nullptr && !c.is_null("replica.selector.class") &&
             !c.get_string("replica.selector.class").empty();
  if (!c.is_null("broker.rack") && !c.get_string("broker.rack").empty()) rack_ = c.get_string("broker.rack");
}

std::optional<int32_t> ReadReplicaSelector::select(const Partition& p, std::string_view client_rack,
                                                   std::string_view listener, int64_t fetch_offset) const {
  if (!enabled_ || client_rack.empty()) return std::nullopt;
  if (rack_ && *rack_ == client_rack) return std::nullopt;  // the leader is in the client's rack
  auto snap = broker_.service<ReplicaManager>().metadata_cache().snapshot();
  replication::LiveRacks live;
  for (const auto& [id, b] : snap->brokers)
    if (b.endpoint(listener) != nullptr) live.emplace(id, b.rack);
  return broker_.service<replica::LeaderReplicas>().preferred_read_replica(p, client_rack, rack_, fetch_offset, live);
}

}  // namespace ciuickafka::broker::fetch
