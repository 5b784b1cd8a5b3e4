// replication/controller/controller_context.cc: see controller_context.h.
#include "replication/controller/controller_context.h"

#include <algorithm>

namespace ciuickafka::replication::controller {

namespace {

bool has(const std::vector<int32_t>& v, int32_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Scala's Seq.diff for lists without duplicates: a's order, minus b.
std::vector<int32_t> minus(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  std::vector<int32_t> out;
  for (int32_t x : a)
    if (!has(b, x)) out.push_back(x);
  return out;
}

std::string list(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

std::optional<std::string> malformed_reassignment(const std::vector<int32_t>& replicas) {
  if (replicas.empty()) return "Empty replica list specified in partition reassignment.";
  std::vector<int32_t> sorted = replicas;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    return "Duplicate replica ids in partition reassignment replica list: " + list(replicas);
  if (sorted.front() < 0) return "Invalid broker id in replica list: " + list(replicas);
  return std::nullopt;
}

std::vector<int32_t> origin_replicas(const PartitionReplicas& a) { return minus(a.replicas, a.adding_replicas); }

std::vector<int32_t> target_replicas(const PartitionReplicas& a) { return minus(a.replicas, a.removing_replicas); }

bool being_reassigned(const PartitionReplicas& a) {
  return !a.adding_replicas.empty() || !a.removing_replicas.empty();
}

PartitionReplicas reassign_to(const PartitionReplicas& current, const std::vector<int32_t>& target) {
  const std::vector<int32_t> origin = origin_replicas(current);
  PartitionReplicas out;
  for (const auto* list : {&target, &origin})
    for (int32_t b : *list)
      if (!has(out.replicas, b)) out.replicas.push_back(b);
  out.adding_replicas = minus(out.replicas, origin);
  out.removing_replicas = minus(out.replicas, target);
  return out;
}

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
