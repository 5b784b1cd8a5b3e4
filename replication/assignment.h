// replication/assignment.h: Kafka's replica assignment for new topics and
// partitions (org.apache.kafka.admin.AdminUtils.assignReplicasToBrokers,
// server-common, Kafka 3.9), rack-unaware and rack-aware.
//
// Rack-unaware: partition p's first replica is broker[(p + start_index) % n];
// the others follow it with a gap of 1 + (shift + j) % (n - 1), the shift
// growing by one each time p wraps around the broker list, so successive
// rounds do not repeat the same followers.
// Rack-aware (when any broker has a rack): the same walk over the "rack
// alternated" broker list (racks sorted by name, brokers of a rack by id,
// taken one rack at a time), with the follower gap scaled by the number of
// racks, skipping a broker whose rack already holds a replica while some
// rack holds none, and a broker already chosen while some broker is free.
//
// Kafka draws start_index and the shift at random per call (both in
// [0, n)); here they are parameters so results are reproducible, and
// assign_replicas_random() draws them from a caller's generator.
//
// Errors are values with a code the broker maps to Kafka's error:
// kInvalidPartitions -> INVALID_PARTITIONS, kInvalidReplicationFactor ->
// INVALID_REPLICATION_FACTOR, kMissingRack (Kafka's AdminOperationException,
// which CreateTopics reports as UNKNOWN_SERVER_ERROR), kInvalidArgument
// (a caller bug: duplicate broker ids, negative start).
//
// Thread-safety: pure functions (the random wrapper uses only its argument).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "replication/result.h"

namespace ciuickafka::replication {

struct BrokerRack {
  int32_t id = 0;
  std::optional<std::string> rack;
};

// partition id -> replicas, the first one the preferred leader.
using ReplicaAssignment = std::map<int32_t, std::vector<int32_t>>;

enum class AssignmentErrc : int8_t { kInvalidPartitions, kInvalidReplicationFactor, kMissingRack, kInvalidArgument };
struct AssignmentError {
  AssignmentErrc code;
  std::string message;
};
template <class T>
using AssignmentResult = Result<T, AssignmentError>;

// Kafka's RackAwareMode for the brokers handed to the assignment
// (AdminZkClient.getBrokerMetadatas): kEnforced rejects a mix of brokers
// with and without racks, kSafe drops all racks in that case, kDisabled
// always drops them.
enum class RackMode : int8_t { kEnforced, kSafe, kDisabled };
// The brokers sorted by id, racks kept or dropped per mode.
AssignmentResult<std::vector<BrokerRack>> brokers_for_assignment(std::vector<BrokerRack> brokers, RackMode mode);

// Brokers in the order given (Kafka sorts them by id first: use
// brokers_for_assignment). Partitions are numbered from start_partition_id
// (0 for a new topic; the current count when adding partitions).
AssignmentResult<ReplicaAssignment> assign_replicas(const std::vector<BrokerRack>& brokers, int32_t partitions,
                                                    int32_t replication_factor, int32_t start_index,
                                                    int32_t replica_shift, int32_t start_partition_id = 0);

// As Kafka: start_index and replica_shift drawn uniformly from [0, brokers).
AssignmentResult<ReplicaAssignment> assign_replicas_random(const std::vector<BrokerRack>& brokers, int32_t partitions,
                                                           int32_t replication_factor, std::mt19937_64& rng,
                                                           int32_t start_partition_id = 0);

// The rack alternated list (exposed for tests and tools).
std::vector<int32_t> rack_alternated_brokers(const std::vector<BrokerRack>& brokers);

}  // namespace ciuickafka::replication
