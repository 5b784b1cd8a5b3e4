// replication/zk/fake_zk_tree.h: the znode tree of the fake ZooKeeper
// (fake_zk.h) and its primitive operations, without sessions or watches.
// Every change reports the watch triggers it causes, as the server computes
// them; the caller fires them once the change is committed.
//
// Thread-safety: none; FakeZkServer's lock guards it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "replication/zk/session.h"

namespace ciuickafka::replication::zk::fake {

struct Node {
  std::string data;
  Stat stat;
  int32_t creates = 0;  // children ever created: the sequential suffix
  std::set<std::string> children;
};

// A watch table a trigger reaches: data (get, exists) or child (children).
enum class Table : uint8_t { kData, kChild };
struct Trigger {
  Table table;
  std::string path;  // full path (chroot included)
  EventType type;
};

// ZooKeeper's path rules ("/a/b": absolute, no empty, "." or ".." parts,
// no trailing '/').
bool valid_path(const std::string& path);
std::string parent_of(const std::string& path);

class Tree {
 public:
  Tree();  // holds "/"

  const Node* find(const std::string& path) const;
  Code create(const std::string& path, std::string_view data, CreateMode mode, int64_t owner,
              int64_t zxid, std::string* made, std::vector<Trigger>* out);
  Code set(const std::string& path, std::string_view data, int32_t version, int64_t zxid, Stat* stat,
           std::vector<Trigger>* out);
  Code remove(const std::string& path, int32_t version, int64_t zxid, std::vector<Trigger>* out);
  Code check(const std::string& path, int32_t version) const;
  // The ephemeral nodes owned by a session.
  std::vector<std::string> owned_by(int64_t session) const;

 private:
  std::map<std::string, Node> nodes_;
};

}  // namespace ciuickafka::replication::zk::fake
