// replication/replica_selector.cc: see replica_selector.h.
#include "replication/replica_selector.h"

#include <algorithm>

namespace ciuickafka::replication {

std::vector<ReplicaView> read_candidates(const ReplicaState& st, int64_t fetch_offset, int64_t now_ms,
                                         const LiveRacks& live) {
  std::vector<ReplicaView> out;
  for (int32_t id : st.isr()) {
    if (id == st.leader_id()) continue;
    const FollowerState* f = st.follower(id);
    auto alive = live.find(id);
    if (f == nullptr || alive == live.end()) continue;
    if (f->log_end_offset < fetch_offset || f->log_start_offset > fetch_offset) continue;
    out.push_back({id, alive->second, f->log_end_offset, now_ms - f->last_caught_up_time_ms});
  }
  return out;
}

std::optional<int32_t> select_read_replica(std::string_view client_rack, const ReplicaView& leader,
                                           const std::vector<ReplicaView>& followers) {
  if (client_rack.empty()) return std::nullopt;
  if (leader.rack && *leader.rack == client_rack) return std::nullopt;
  const ReplicaView* best = nullptr;
  for (const ReplicaView& f : followers) {
    if (!f.rack || *f.rack != client_rack) continue;
    if (best == nullptr || f.log_end_offset > best->log_end_offset ||
        (f.log_end_offset == best->log_end_offset &&
         (f.time_since_caught_up_ms < best->time_since_caught_up_ms ||
          (f.time_since_caught_up_ms == best->time_since_caught_up_ms && f.id < best->id))))
      best = &f;
  }
  if (best == nullptr) return std::nullopt;
  return best->id;
}

}  // namespace ciuickafka::replication
