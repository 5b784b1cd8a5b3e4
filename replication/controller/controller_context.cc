// replication/controller/controller_context.cc: see controller_context.h.
#include "replication/controller/controller_context.h"

namespace ciuickafka::replication::controller {

BrokerSet ControllerContext::online() const {
  BrokerSet s;
  for (const auto& [id, _] : live)
    if (!shutting_down.contains(id)) s.insert(id);
  return s;
}

BrokerSet ControllerContext::live_or_shutting_down() const {
  BrokerSet s;
  for (const auto& [id, _] : live) s.insert(id);
  return s;
}

const PartitionInfo* ControllerContext::partition(const std::string& topic, int32_t p) const {
  auto t = topics.find(topic);
  if (t == topics.end()) return nullptr;
  auto it = t->second.partitions.find(p);
  return it == t->second.partitions.end() ? nullptr : &it->second;
}

PartitionInfo* ControllerContext::partition(const std::string& topic, int32_t p) {
  return const_cast<PartitionInfo*>(static_cast<const ControllerContext*>(this)->partition(topic, p));
}

}  // namespace ciuickafka::replication::controller
