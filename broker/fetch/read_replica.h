// broker/fetch/read_replica.h: fetch from follower (KIP-392) on the broker:
// whether this broker names preferred read replicas, and which one.
//
// With `replica.selector.class` set to Kafka's RackAwareReplicaSelector (the
// one selector Kafka ships; CiuicKafka loads no Java classes, so any other
// value is a config error), a leader answers a consumer's Fetch v11+ that
// carries a rack with PreferredReadReplica = the most caught-up in-sync
// follower of that rack (replication/replica_selector.h) and no records, and
// the consumer fetches from that follower from then on. Unset (the default,
// as in Kafka): the leader serves every consumer. Followers serve any v11+
// consumer fetch up to their HW either way (partition_read.h), as Kafka's do.
//
// Thread-safety: select() may be called from any thread; the settings are
// read once, at construction (a broker service).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ciuickafka::broker {

class Broker;
class Partition;

namespace fetch {

inline constexpr std::string_view kRackAwareReplicaSelector =
    "org.apache.kafka.common.replica.RackAwareReplicaSelector";

class ReadReplicaSelector {
 public:
  explicit ReadReplicaSelector(Broker& broker);

  // replica.selector.class is set (and this broker is in a cluster).
  bool enabled() const { return enabled_; }
  // For a consumer fetch (v11+) of p, led here, at fetch_offset, from a client
  // in client_rack that came in on listener: the follower to name, or
  // nullopt when the leader serves it.
  std::optional<int32_t> select(const Partition& p, std::string_view client_rack, std::string_view listener,
                                int64_t fetch_offset) const;

 private:
  Broker& broker_;
  bool enabled_ = false;
  std::optional<std::string> rack_;  // broker.rack
};

}  // namespace fetch
}  // namespace ciuickafka::broker
