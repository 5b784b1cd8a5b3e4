// replication/replica_selector.h: which replica a consumer should read a
// partition from (KIP-392, fetch from follower), as pure functions.
//
// From Kafka 3.9: clients/.../replica/RackAwareReplicaSelector.java (the one
// selector Kafka ships) and the candidate filter of
// core/.../server/ReplicaManager.scala findPreferredReadReplica.
//
// Candidates (read_candidates): the leader, and every follower in the
// committed ISR whose log holds the fetch offset (its log start <= offset <=
// its LEO, as the leader last saw them) and whose broker is alive with an
// endpoint on the client's listener (the caller passes those brokers with
// their racks). A follower outside the ISR may lag for ever, so it is never
// chosen.
//
// The rule (select_read_replica): a client with no rack reads from the
// leader; otherwise the leader when it is in the client's rack, else the
// most caught-up candidate of that rack (highest LEO, then the shortest time
// since it was last caught up, then the lowest broker id: Kafka leaves ties
// to a hash set's order, we make them repeatable), else the leader. The
// answer is the follower to name as PreferredReadReplica, or nullopt when
// the leader serves the fetch (Kafka never names the leader itself).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "replication/replica_state.h"

namespace ciuickafka::replication {

// Kafka's ReplicaView: a replica as a selector sees it.
struct ReplicaView {
  int32_t id = -1;
  std::optional<std::string> rack;
  int64_t log_end_offset = 0;
  int64_t time_since_caught_up_ms = 0;  // 0 for the leader
};

// Live brokers that have an endpoint on the client's listener, with their racks.
using LiveRacks = std::map<int32_t, std::optional<std::string>>;

// The followers of st a consumer at fetch_offset may be sent to (the leader
// is not among them).
std::vector<ReplicaView> read_candidates(const ReplicaState& st, int64_t fetch_offset, int64_t now_ms,
                                         const LiveRacks& live);

// RackAwareReplicaSelector.select, minus the leader: the follower to name,
// or nullopt for the leader.
std::optional<int32_t> select_read_replica(std::string_view client_rack, const ReplicaView& leader,
                                           const std::vector<ReplicaView>& followers);

}  // namespace ciuickafka::replication
