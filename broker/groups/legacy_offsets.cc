// broker/groups/legacy_offsets.cc: see legacy_offsets.h.
#include "broker/groups/legacy_offsets.h"

#include <algorithm>

#include "broker/groups/partition_for.h"

namespace ciuickafka::broker::groups {

void OffsetsLoadTrace::saw(int32_t partition, const DecodedOffsetsRecord& d) {
  if (d.kind == DecodedOffsetsRecord::Kind::kGroup) last_metadata[d.group] = d.metadata;
  if (d.kind == DecodedOffsetsRecord::Kind::kOther || partition_for(d.group, partitions) == partition) return;
  // Live keys only: a key whose last record there is a tombstone (as after
  // a finished move) needs nothing.
  Keys& k = misplaced[d.group][partition];
  if (d.kind == DecodedOffsetsRecord::Kind::kOffset) {
    if (d.offset) k.offsets.insert({d.topic, d.partition});
    else k.offsets.erase({d.topic, d.partition});
  } else {
    k.metadata = d.metadata.has_value();
  }
}

std::vector<OffsetsMigration> plan_offsets_migrations(const OffsetsLoadTrace& trace,
                                                      const std::map<std::string, std::shared_ptr<Group>>& loaded,
                                                      const std::map<std::string, bool>& has_metadata) {
  std::vector<OffsetsMigration> out;
  for (const auto& [group, old] : trace.misplaced) {
    const bool live = std::any_of(old.begin(), old.end(),
                                  [](const auto& kv) { return kv.second.metadata || !kv.second.offsets.empty(); });
    if (!live) continue;  // moved already
    OffsetsMigration m;
    m.group = group;
    m.home = partition_for(group, trace.partitions);
    if (auto g = loaded.find(group); g != loaded.end() && g->second)
      for (const auto& [tp, committed] : g->second->offsets)
        m.state.push_back(offset_commit_record(group, tp.first, tp.second, committed));
    auto meta = trace.last_metadata.find(group);
    if (auto h = has_metadata.find(group); h != has_metadata.end() && h->second && meta != trace.last_metadata.end() &&
                                           meta->second)
      m.state.push_back(group_metadata_record(group, meta->second));
    for (const auto& [partition, keys] : old) {
      if (keys.offsets.empty() && !keys.metadata) continue;
      auto& t = m.tombstones[partition];
      for (const auto& tp : keys.offsets) t.push_back(offset_commit_record(group, tp.first, tp.second, std::nullopt));
      if (keys.metadata) t.push_back(group_metadata_record(group, std::nullopt));
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace ciuickafka::broker::groups
