// replication/zk/fake_zk_tree.cc: the fake's znode operations. Stat
// bookkeeping follows ZooKeeper 3.8: czxid/mzxid from the caller's zxid,
// cversion counts child creates and deletes, the sequential suffix counts
// creates only.
#include "replication/zk/fake_zk_tree.h"

#include <chrono>
#include <cstdio>

namespace ciuickafka::replication::zk::fake {
namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

bool valid_path(const std::string& path) {
  if (path.empty() || path[0] != '/') return false;
  if (path == "/") return true;
  if (path.back() == '/') return false;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string_view part(path.data() + start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    for (const char c : part) {
      if (c == '\0') return false;
    }
    start = end + 1;
  }
  return true;
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

Tree::Tree() { nodes_["/"] = Node{}; }

const Node* Tree::find(const std::string& path) const {
  auto it = nodes_.find(path);
  return it == nodes_.end() ? nullptr : &it->second;
}

Code Tree::create(const std::string& path, std::string_view data, CreateMode mode, int64_t owner,
                  int64_t zxid, std::string* made, std::vector<Trigger>* out) {
  const bool sequential =
      mode == CreateMode::kPersistentSequential || mode == CreateMode::kEphemeralSequential;
  const bool ephemeral = mode == CreateMode::kEphemeral || mode == CreateMode::kEphemeralSequential;
  if (!valid_path(sequential ? path + "1" : path) || path == "/") return Code::kBadArguments;
  auto parent = nodes_.find(parent_of(path));
  if (parent == nodes_.end()) return Code::kNoNode;
  if (parent->second.stat.ephemeral_owner != 0) return Code::kNoChildrenForEphemerals;
  std::string name = path;
  if (sequential) {
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "%010d", parent->second.creates);
    name += suffix;
  }
  if (nodes_.count(name) != 0) return Code::kNodeExists;
  Node n;
  n.data = std::string(data);
  n.stat.czxid = n.stat.mzxid = zxid;
  n.stat.ctime = n.stat.mtime = now_ms();
  n.stat.ephemeral_owner = ephemeral ? owner : 0;
  Node& p = parent->second;
  p.children.insert(name.substr(name.rfind('/') + 1));
  p.creates++;
  p.stat.cversion++;
  p.stat.num_children = static_cast<int32_t>(p.children.size());
  nodes_.emplace(name, std::move(n));
  out->push_back({Table::kData, name, EventType::kCreated});
  out->push_back({Table::kChild, parent->first, EventType::kChildrenChanged});
  if (made != nullptr) *made = name;
  return Code::kOk;
}

Code Tree::set(const std::string& path, std::string_view data, int32_t version, int64_t zxid, Stat* stat,
               std::vector<Trigger>* out) {
  if (!valid_path(path)) return Code::kBadArguments;
  auto it = nodes_.find(path);
  if (it == nodes_.end()) return Code::kNoNode;
  Node& n = it->second;
  if (version != -1 && version != n.stat.version) return Code::kBadVersion;
  n.data = std::string(data);
  n.stat.version++;
  n.stat.mzxid = zxid;
  n.stat.mtime = now_ms();
  if (stat != nullptr) *stat = n.stat;
  out->push_back({Table::kData, path, EventType::kDataChanged});
  return Code::kOk;
}

Code Tree::remove(const std::string& path, int32_t version, int64_t, std::vector<Trigger>* out) {
  if (!valid_path(path)) return Code::kBadArguments;
  if (path == "/") return Code::kBadArguments;
  auto it = nodes_.find(path);
  if (it == nodes_.end()) return Code::kNoNode;
  if (version != -1 && version != it->second.stat.version) return Code::kBadVersion;
  if (!it->second.children.empty()) return Code::kNotEmpty;
  nodes_.erase(it);
  const std::string parent = parent_of(path);
  Node& p = nodes_.at(parent);
  p.children.erase(path.substr(path.rfind('/') + 1));
  p.stat.cversion++;
  p.stat.num_children = static_cast<int32_t>(p.children.size());
  out->push_back({Table::kData, path, EventType::kDeleted});
  out->push_back({Table::kChild, path, EventType::kDeleted});
  out->push_back({Table::kChild, parent, EventType::kChildrenChanged});
  return Code::kOk;
}

Code Tree::check(const std::string& path, int32_t version) const {
  if (!valid_path(path)) return Code::kBadArguments;
  const Node* n = find(path);
  if (n == nullptr) return Code::kNoNode;
  return version == -1 || version == n->stat.version ? Code::kOk : Code::kBadVersion;
}

std::vector<std::string> Tree::owned_by(int64_t session) const {
  std::vector<std::string> out;
  for (const auto& [path, n] : nodes_) {
    if (n.stat.ephemeral_owner == session) out.push_back(path);
  }
  return out;
}

}  // namespace ciuickafka::replication::zk::fake
