// broker/fetch/epoch_check.h: the current_leader_epoch fence shared by
// Fetch, ListOffsets and OffsetForLeaderEpoch (KIP-320).
//
// A client sends the leader epoch it believes current; -1 means "do not
// check". An older epoch than the partition's is FENCED_LEADER_EPOCH (the
// client's metadata is stale), a newer one UNKNOWN_LEADER_EPOCH (ours is,
// or the client is ahead of a leader change we have not seen).
//
// Header-only: broker/CMakeLists.txt compiles handlers/*.cc only, so the
// shared code of the fetch area lives in headers for now.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>

#include "protocol/error_code.h"

namespace ciuickafka::broker::fetch {

inline protocol::ErrorCode check_current_leader_epoch(int32_t requested, int32_t current) {
  if (requested < 0) return protocol::ErrorCode::NONE;
  if (requested < current) return protocol::ErrorCode::FENCED_LEADER_EPOCH;
  if (requested > current) return protocol::ErrorCode::UNKNOWN_LEADER_EPOCH;
  return protocol::ErrorCode::NONE;
}

}  // namespace ciuickafka::broker::fetch
