// broker/groups/ownership.cc: the offsets partition ownership table (see
// ownership.h).
#include "broker/groups/ownership.h"

namespace ciuickafka::broker::groups {

std::optional<uint64_t> OffsetsOwnership::begin_load(int32_t p, int32_t leader_epoch) {
  Slot& s = slots_[p];
  if (s.state != OwnState::kNotOwned) {
    if (leader_epoch > s.epoch) s.epoch = leader_epoch;
    return std::nullopt;
  }
  s.state = OwnState::kLoading;
  s.epoch = leader_epoch;
  s.token = next_token_++;
  return s.token;
}

bool OffsetsOwnership::finish_load(int32_t p, uint64_t token) {
  auto it = slots_.find(p);
  if (it == slots_.end() || it->second.state != OwnState::kLoading || it->second.token != token) return false;
  it->second.state = OwnState::kLoaded;
  return true;
}

bool OffsetsOwnership::unload(int32_t p) {
  auto it = slots_.find(p);
  if (it == slots_.end() || it->second.state == OwnState::kNotOwned) return false;
  it->second = Slot{};
  return true;
}

OwnState OffsetsOwnership::state(int32_t p) const {
  auto it = slots_.find(p);
  return it == slots_.end() ? OwnState::kNotOwned : it->second.state;
}

int32_t OffsetsOwnership::epoch(int32_t p) const {
  auto it = slots_.find(p);
  return it == slots_.end() ? -1 : it->second.epoch;
}

protocol::ErrorCode OffsetsOwnership::error(int32_t p) const {
  switch (state(p)) {
    case OwnState::kLoaded: return protocol::ErrorCode::NONE;
    case OwnState::kLoading: return protocol::ErrorCode::COORDINATOR_LOAD_IN_PROGRESS;
    case OwnState::kNotOwned: break;
  }
  return protocol::ErrorCode::NOT_COORDINATOR;
}

bool OffsetsOwnership::any_loading() const {
  for (const auto& [p, s] : slots_)
    if (s.state == OwnState::kLoading) return true;
  return false;
}

std::vector<int32_t> OffsetsOwnership::loaded_partitions() const {
  std::vector<int32_t> out;
  for (const auto& [p, s] : slots_)
    if (s.state == OwnState::kLoaded) out.push_back(p);
  return out;
}

}  // namespace ciuickafka::broker::groups
