// replication/assignment.cc: see assignment.h.
#include "replication/assignment.h"

#include <algorithm>
#include <set>

namespace ciuickafka::replication {

namespace {

AssignmentError err(AssignmentErrc code, std::string message) { return AssignmentError{code, std::move(message)}; }

// AdminUtils.replicaIndex: the index of a follower, never the first replica's.
size_t replica_index(size_t first, int64_t shift, int64_t j, size_t n) {
  auto gap = static_cast<size_t>(1 + (shift + j) % static_cast<int64_t>(n - 1));
  return (first + gap) % n;
}

ReplicaAssignment rack_unaware(const std::vector<int32_t>& ids, int32_t partitions, int32_t rf, int64_t start,
                               int64_t shift, int64_t first_partition) {
  ReplicaAssignment out;
  const size_t n = ids.size();
  for (int64_t p = first_partition; p < first_partition + partitions; ++p) {
    if (p > 0 && p % static_cast<int64_t>(n) == 0) ++shift;
    auto first = static_cast<size_t>((p + start) % static_cast<int64_t>(n));
    std::vector<int32_t> replicas{ids[first]};
    for (int32_t j = 0; j < rf - 1; ++j) replicas.push_back(ids[replica_index(first, shift, j, n)]);
    out.emplace(static_cast<int32_t>(p), std::move(replicas));
  }
  return out;
}

AssignmentResult<ReplicaAssignment> rack_aware(const std::vector<BrokerRack>& brokers, int32_t partitions, int32_t rf,
                                               int64_t start, int64_t shift, int64_t first_partition) {
  std::map<int32_t, std::string> rack_of;
  for (const auto& b : brokers) rack_of[b.id] = *b.rack;
  std::set<std::string> racks;
  for (const auto& [id, rack] : rack_of) racks.insert(rack);
  const auto num_racks = static_cast<int64_t>(racks.size());
  const std::vector<int32_t> list = rack_alternated_brokers(brokers);
  const size_t n = list.size();
  ReplicaAssignment out;
  for (int64_t p = first_partition; p < first_partition + partitions; ++p) {
    if (p > 0 && p % static_cast<int64_t>(n) == 0) ++shift;
    auto first = static_cast<size_t>((p + start) % static_cast<int64_t>(n));
    int32_t leader = list[first];
    std::vector<int32_t> replicas{leader};
    std::set<std::string> used_racks{rack_of[leader]};
    std::set<int32_t> used_brokers{leader};
    int64_t k = 0;
    for (int32_t j = 0; j < rf - 1; ++j) {
      for (bool done = false; !done; ++k) {
        // Kafka's loop always finds a broker within n - 1 steps; the bound
        // only turns a broken invariant into an error instead of a hang.
        if (k > static_cast<int64_t>(n) * (rf + 1)) return err(AssignmentErrc::kInvalidArgument, "no broker fits");
        int32_t broker = list[replica_index(first, shift * num_racks, k, n)];
        const std::string& rack = rack_of[broker];
        bool rack_ok = !used_racks.contains(rack) || static_cast<int64_t>(used_racks.size()) == num_racks;
        bool broker_ok = !used_brokers.contains(broker) || used_brokers.size() == n;
        if (rack_ok && broker_ok) {
          replicas.push_back(broker);
          used_racks.insert(rack);
          used_brokers.insert(broker);
          done = true;
        }
      }
    }
    out.emplace(static_cast<int32_t>(p), std::move(replicas));
  }
  return out;
}

}  // namespace

std::vector<int32_t> rack_alternated_brokers(const std::vector<BrokerRack>& brokers) {
  std::map<std::string, std::vector<int32_t>> by_rack;  // racks sorted by name
  std::set<int32_t> seen;
  for (const auto& b : brokers)
    if (seen.insert(b.id).second) by_rack[b.rack.value_or("")].push_back(b.id);
  for (auto& [rack, ids] : by_rack) std::sort(ids.begin(), ids.end());
  std::vector<int32_t> out;
  for (size_t round = 0; out.size() < seen.size(); ++round)
    for (const auto& [rack, ids] : by_rack)
      if (round < ids.size()) out.push_back(ids[round]);
  return out;
}

AssignmentResult<std::vector<BrokerRack>> brokers_for_assignment(std::vector<BrokerRack> brokers, RackMode mode) {
  std::sort(brokers.begin(), brokers.end(), [](const BrokerRack& a, const BrokerRack& b) { return a.id < b.id; });
  size_t with_rack = 0;
  for (const auto& b : brokers) with_rack += b.rack.has_value();
  bool partial = with_rack > 0 && with_rack < brokers.size();
  if (mode == RackMode::kEnforced && partial)
    return err(AssignmentErrc::kMissingRack,
               "Not all brokers have rack information. Add --disable-rack-aware in command line to make replica "
               "assignment without rack information.");
  if (mode == RackMode::kDisabled || (mode == RackMode::kSafe && partial))
    for (auto& b : brokers) b.rack.reset();
  return brokers;
}

AssignmentResult<ReplicaAssignment> assign_replicas(const std::vector<BrokerRack>& brokers, int32_t partitions,
                                                    int32_t replication_factor, int32_t start_index,
                                                    int32_t replica_shift, int32_t start_partition_id) {
  if (partitions <= 0)
    return err(AssignmentErrc::kInvalidPartitions, "Number of partitions must be larger than 0.");
  if (replication_factor <= 0)
    return err(AssignmentErrc::kInvalidReplicationFactor, "Replication factor must be larger than 0.");
  if (static_cast<size_t>(replication_factor) > brokers.size())
    return err(AssignmentErrc::kInvalidReplicationFactor,
               "Replication factor: " + std::to_string(replication_factor) +
                   " larger than available brokers: " + std::to_string(brokers.size()) + ".");
  if (start_index < 0 || replica_shift < 0)
    return err(AssignmentErrc::kInvalidArgument, "start index and replica shift must not be negative");
  std::set<int32_t> ids;
  for (const auto& b : brokers)
    if (!ids.insert(b.id).second)
      return err(AssignmentErrc::kInvalidArgument, "duplicate broker id " + std::to_string(b.id));
  const int64_t first = std::max<int32_t>(0, start_partition_id);
  if (first + partitions - 1 > INT32_MAX)
    return err(AssignmentErrc::kInvalidPartitions, "partition ids would pass the int32 range");
  bool any_rack = std::any_of(brokers.begin(), brokers.end(), [](const BrokerRack& b) { return b.rack.has_value(); });
  if (!any_rack) {
    std::vector<int32_t> list;
    for (const auto& b : brokers) list.push_back(b.id);
    return rack_unaware(list, partitions, replication_factor, start_index, replica_shift, first);
  }
  for (const auto& b : brokers)
    if (!b.rack)
      return err(AssignmentErrc::kMissingRack,
                 "Not all brokers have rack information for replica rack aware assignment.");
  return rack_aware(brokers, partitions, replication_factor, start_index, replica_shift, first);
}

AssignmentResult<ReplicaAssignment> assign_replicas_random(const std::vector<BrokerRack>& brokers, int32_t partitions,
                                                           int32_t replication_factor, std::mt19937_64& rng,
                                                           int32_t start_partition_id) {
  int32_t start = 0, shift = 0;
  if (!brokers.empty()) {
    std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(brokers.size()) - 1);
    start = pick(rng);
    shift = pick(rng);
  }
  return assign_replicas(brokers, partitions, replication_factor, start, shift, start_partition_id);
}

}  // namespace ciuickafka::replication
