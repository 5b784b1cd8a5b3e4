// broker/groups/legacy_offsets.h: groups whose records sit in a
// __consumer_offsets partition that is not theirs, and the records that move
// them home.
//
// Versions of CiuicKafka before this one chose a group's partition as
// (hash & 0x7fffffff) % n where Kafka uses Utils.abs(hash) % n
// (partition_for.h): every group whose Java hashCode is negative was written
// to another partition than Kafka (and this version) would choose. A single
// node's load (GroupCoordinator::load) therefore reads in two passes:
//   1. in every partition, only the records of groups that partition is not
//      the home of (written by an older version, so older than anything in
//      the home partition);
//   2. in every partition, the records of the groups it is the home of;
// the last value per key winning as always, so a commit made in the home
// partition after an upgrade (or a half-done migration) wins over the old
// copy. Then each misplaced group is migrated: its whole loaded state
// (offsets and group metadata) is appended to its home partition and made
// durable, and only then are tombstones for every key it had in the old
// partition appended there (so a crash in between loads the same state
// again, and compaction eventually drops the old records).
//
// Cluster mode does not migrate: a partition's leader loads only its own
// groups, and a group's old records may sit in a partition led by another
// broker (README, "Differences from Kafka").
//
// Thread-safety: plain data; used by the loading thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/groups/group.h"
#include "broker/groups/offsets_records.h"

namespace ciuickafka::broker::groups {

// What a load saw, for the migration.
struct OffsetsLoadTrace {
  explicit OffsetsLoadTrace(int32_t partitions) : partitions(partitions) {}

  // The live keys a group has in one partition that is not its home (those
  // whose last record there is not a tombstone).
  struct Keys {
    std::set<TopicPartitionKey> offsets;
    bool metadata = false;
  };

  int32_t partitions;
  // group -> old partition -> its keys there.
  std::map<std::string, std::map<int32_t, Keys>> misplaced;
  // The last GroupMetadata value read per group, in load order (nullopt: a
  // tombstone was last).
  std::map<std::string, std::optional<protocol::GroupMetadataValue>> last_metadata;

  // Called for every decoded, non-transactional record the load applied.
  void saw(int32_t partition, const DecodedOffsetsRecord& d);
};

// One misplaced group's move.
struct OffsetsMigration {
  std::string group;
  int32_t home = 0;
  std::vector<OffsetsRecord> state;                         // for home; empty when nothing is left
  std::map<int32_t, std::vector<OffsetsRecord>> tombstones;  // per old partition
};

// The moves of every misplaced group, from the state the two passes loaded
// (`loaded` and `has_metadata` as GroupCoordinator::load_partition fills them).
std::vector<OffsetsMigration> plan_offsets_migrations(const OffsetsLoadTrace& trace,
                                                      const std::map<std::string, std::shared_ptr<Group>>& loaded,
                                                      const std::map<std::string, bool>& has_metadata);

}  // namespace ciuickafka::broker::groups
