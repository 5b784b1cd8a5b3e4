// replication/zk/session.cc: the parts of the ZooKeeper interface that do not
// depend on an implementation.
#include "replication/zk/session.h"

namespace ciuickafka::replication::zk {

std::string_view to_string(Code c) {
  switch (c) {
    case Code::kOk: return "ok";
    case Code::kNoNode: return "no node";
    case Code::kNodeExists: return "node exists";
    case Code::kBadVersion: return "bad version";
    case Code::kNotEmpty: return "not empty";
    case Code::kNoChildrenForEphemerals: return "no children for ephemerals";
    case Code::kRuntimeInconsistency: return "runtime inconsistency";
    case Code::kConnectionLoss: return "connection loss";
    case Code::kSessionExpired: return "session expired";
    case Code::kBadArguments: return "bad arguments";
    case Code::kOther: return "other error";
  }
  return "unknown";
}

Op Op::create(std::string path, std::string data, CreateMode mode) {
  Op op;
  op.kind = Kind::kCreate;
  op.path = std::move(path);
  op.data = std::move(data);
  op.mode = mode;
  return op;
}

Op Op::set_data(std::string path, std::string data, int32_t version) {
  Op op;
  op.kind = Kind::kSetData;
  op.path = std::move(path);
  op.data = std::move(data);
  op.version = version;
  return op;
}

Op Op::remove(std::string path, int32_t version) {
  Op op;
  op.kind = Kind::kDelete;
  op.path = std::move(path);
  op.version = version;
  return op;
}

Op Op::check(std::string path, int32_t version) {
  Op op;
  op.kind = Kind::kCheck;
  op.path = std::move(path);
  op.version = version;
  return op;
}

bool parse_connect_string(std::string_view connect, std::string* hosts, std::string* chroot, std::string* error) {
  const size_t slash = connect.find('/');
  std::string_view h = connect.substr(0, slash);
  std::string_view c = slash == std::string_view::npos ? std::string_view{} : connect.substr(slash);
  if (h.empty()) {
    *error = "no ZooKeeper host in '" + std::string(connect) + "'";
    return false;
  }
  if (c == "/") c = {};
  if (!c.empty() && (c.back() == '/' || c.find("//") != std::string_view::npos)) {
    *error = "bad chroot '" + std::string(c) + "' in '" + std::string(connect) + "'";
    return false;
  }
  *hosts = std::string(h);
  *chroot = std::string(c);
  return true;
}

Code ensure_path(Session& s, const std::string& path) {
  if (path.empty() || path == "/") return Code::kOk;
  Code c = s.exists(path);
  if (c == Code::kOk) return c;
  if (c != Code::kNoNode) return c;
  const size_t slash = path.rfind('/');
  if (slash != 0 && slash != std::string::npos) {
    c = ensure_path(s, path.substr(0, slash));
    if (c != Code::kOk) return c;
  }
  c = s.create(path, "", CreateMode::kPersistent);
  return c == Code::kNodeExists ? Code::kOk : c;
}

}  // namespace ciuickafka::replication::zk
