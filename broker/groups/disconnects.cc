// broker/groups/disconnects.cc: members whose connection is gone.
//
// Kafka evicts a member only when its session times out (session.timeout.ms,
// 45 s by default), so a killed worker holds its partitions, or a rebalance
// waiting for its JoinGroup, for that long. We are faster: the server tells
// us when a connection is gone (Broker::connection_events), and every
// dynamic member that last spoke on it (JoinGroup, SyncGroup, Heartbeat,
// OffsetCommit) gets
//   - its held JoinGroup/SyncGroup answered now with UNKNOWN_MEMBER_ID (the
//     client is gone; answering frees the connection's response slot), so it
//     no longer counts as joined and the join phase does not wait on it;
//   - its session deadline shortened to min(deadline, now + grace), grace =
//     ciuic.group.disconnect.grace.ms (3000 by default).
// A member that speaks again from a new connection within the grace (a
// client that merely reconnected) gets its normal session back: every such
// request resets the deadline. Static members (group.instance.id, KIP-345)
// are left alone: their point is to survive a restart within the session
// timeout without a rebalance. A grace of -1 turns all of this off (Kafka's
// behaviour). Members waiting for a member id (MEMBER_ID_REQUIRED) are not
// tracked: they expire after their session timeout as in Kafka.
//
// Thread-safety: connection_closed runs on the closing connection's thread;
// conn_mu_ is taken alone, then each group's lock in turn.
#include <algorithm>

#include "broker/broker.h"
#include "broker/groups/coordinator.h"
#include "broker/groups/membership.h"
#include "broker/server/connection_events.h"

namespace ciuickafka::broker::groups {

using protocol::ErrorCode;

void GroupCoordinator::track_connection(uint64_t connection_id, const std::string& group_id) {
  if (connection_id == 0 || group_id.empty()) return;
  std::call_once(subscribe_once_, [this] {
    auto alive = alive_;
    connection_events_token_ = broker_.service<ConnectionEvents>().subscribe([this, alive](uint64_t id) {
      if (*alive) connection_closed(id);
    });
    subscribed_.store(true);
  });
  std::lock_guard<std::mutex> lock(conn_mu_);
  conn_groups_[connection_id].insert(group_id);
}

void GroupCoordinator::connection_closed(uint64_t connection_id) {
  std::set<std::string> group_ids;
  {
    std::lock_guard<std::mutex> lock(conn_mu_);
    auto it = conn_groups_.find(connection_id);
    if (it == conn_groups_.end()) return;
    group_ids = std::move(it->second);
    conn_groups_.erase(it);
  }
  const int64_t grace = broker_.config().get_int("ciuic.group.disconnect.grace.ms");
  if (grace < 0) return;
  const int64_t now = steady_ms();
  for (const std::string& id : group_ids) {
    auto gp = find(id);
    if (!gp) continue;
    Outbox out;
    {
      std::lock_guard<std::mutex> lock(gp->mu);
      for (auto& [member_id, m] : gp->members) {
        if (m.connection_id != connection_id || m.instance_id) continue;
        m.connection_id = 0;
        if (m.awaiting_join) {
          out.push_back([cb = std::move(m.awaiting_join),
                         r = join_error(ErrorCode::UNKNOWN_MEMBER_ID, m.join_version, member_id)]() mutable {
            cb(std::move(r));
          });
          m.awaiting_join = nullptr;
        }
        if (m.awaiting_sync) {
          protocol::SyncGroupResponse r;
          r.error_code = protocol::to_wire(ErrorCode::UNKNOWN_MEMBER_ID);
          out.push_back([cb = std::move(m.awaiting_sync), r = std::move(r)]() mutable { cb(std::move(r)); });
          m.awaiting_sync = nullptr;
        }
        m.heartbeat_deadline = std::min(m.heartbeat_deadline, now + grace);
      }
    }
    run(out);
  }
}

}  // namespace ciuickafka::broker::groups
