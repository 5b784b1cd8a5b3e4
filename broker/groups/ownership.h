// broker/groups/ownership.h: which __consumer_offsets partitions this
// broker coordinates in cluster mode (Kafka's GroupMetadataManager
// loadingPartitions / ownedPartitions), as a small pure state table.
//
// Per partition: not owned (NOT_COORDINATOR for its groups), loading
// (COORDINATOR_LOAD_IN_PROGRESS) or loaded (served). begin_load() starts a
// load and returns a token; finish_load(token) makes the partition loaded
// only when no unload (or newer load) came since, so a load overtaken by a
// leadership change is discarded. Becoming leader again while loading or
// loaded starts nothing (Kafka's addLoadingPartition: already owned or
// loading), only the leader epoch is kept.
//
// Thread-safety: none; the coordinator guards it with its own mutex.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "protocol/error_code.h"

namespace ciuickafka::broker::groups {

enum class OwnState : uint8_t { kNotOwned, kLoading, kLoaded };

class OffsetsOwnership {
 public:
  // This broker became leader of partition p at leader_epoch. Returns the
  // token of the load to run, or nullopt when one runs already or the
  // partition is loaded (nothing to do).
  std::optional<uint64_t> begin_load(int32_t p, int32_t leader_epoch);
  // The load with this token is done: true (now loaded) when it is still
  // the current one; false when it was overtaken (its result is dropped).
  bool finish_load(int32_t p, uint64_t token);
  // This broker no longer leads p. True when p was loading or loaded (its
  // groups must be unloaded).
  bool unload(int32_t p);

  OwnState state(int32_t p) const;
  // The leader epoch p was loaded (or is loading) at; -1 when not owned.
  int32_t epoch(int32_t p) const;
  // NONE when loaded, COORDINATOR_LOAD_IN_PROGRESS when loading, else
  // NOT_COORDINATOR.
  protocol::ErrorCode error(int32_t p) const;
  std::vector<int32_t> loaded_partitions() const;
  bool any_loading() const;

 private:
  struct Slot {
    OwnState state = OwnState::kNotOwned;
    int32_t epoch = -1;
    uint64_t token = 0;
  };
  std::map<int32_t, Slot> slots_;
  uint64_t next_token_ = 1;
};

}  // namespace ciuickafka::broker::groups
