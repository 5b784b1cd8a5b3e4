// replication/id_list.h: lists of broker ids (replica assignments, ISRs,
// live brokers), kept as Kafka's znodes carry them: ordered vectors.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ciuickafka::replication {

// Whether id is in ids (a linear scan: the lists hold a few brokers).
inline bool contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace ciuickafka::replication
