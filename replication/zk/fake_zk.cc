// replication/zk/fake_zk.cc: the fake's sessions, watches and test
// controls over fake_zk_tree.h. One mutex guards the tree, the sessions and
// the watch tables; every operation collects the callbacks it causes and
// runs them after unlocking.
#include "replication/zk/fake_zk.h"

#include <functional>
#include <mutex>

#include "replication/zk/fake_zk_tree.h"

namespace ciuickafka::replication::zk {

using fake::Table;
using fake::Trigger;
using Callbacks = std::vector<std::function<void()>>;

namespace {

void run(Callbacks& cbs) {
  for (auto& cb : cbs) cb();
}

}  // namespace

struct FakeZkServer::Core {
  struct SessionRec {
    std::string chroot;
    StateFn on_state;
    bool connected = true;
    bool expired = false;       // calls get kSessionExpired
    bool told_expired = false;  // on_state(kExpired) delivered
    std::vector<std::pair<WatchFn, std::pair<EventType, std::string>>> held;  // while cut off
  };
  struct Watch {
    int64_t session;
    WatchFn fn;
  };

  mutable std::mutex mu;
  fake::Tree tree;
  int64_t zxid = 0;
  int64_t next_session = 0x100000000000;
  bool available = true;
  std::map<int64_t, SessionRec> sessions;
  std::multimap<std::string, Watch> data_watches, child_watches;

  bool reachable(const SessionRec& s) const { return available && s.connected; }

  // kOk when the session may talk to the server.
  Code usable(int64_t id) const {
    auto it = sessions.find(id);
    if (it == sessions.end() || it->second.expired) return Code::kSessionExpired;
    return reachable(it->second) ? Code::kOk : Code::kConnectionLoss;
  }

  static std::string relative(const SessionRec& s, const std::string& full) {
    if (s.chroot.empty()) return full;
    return full.size() == s.chroot.size() ? "/" : full.substr(s.chroot.size());
  }

  // Fires one-shot watches for committed changes.
  void fire(const std::vector<Trigger>& triggers, Callbacks* cbs) {
    for (const Trigger& t : triggers) {
      auto& table = t.table == Table::kData ? data_watches : child_watches;
      auto [b, e] = table.equal_range(t.path);
      for (auto it = b; it != e; ++it) {
        auto s = sessions.find(it->second.session);
        if (s == sessions.end() || s->second.expired) continue;
        std::string path = relative(s->second, t.path);
        if (reachable(s->second)) {
          cbs->push_back([fn = std::move(it->second.fn), type = t.type, path = std::move(path)] {
            fn(type, path);
          });
        } else {
          s->second.held.push_back({std::move(it->second.fn), {t.type, std::move(path)}});
        }
      }
      table.erase(b, e);
    }
  }

  void drop_watches(int64_t id) {
    for (auto* table : {&data_watches, &child_watches}) {
      std::erase_if(*table, [id](const auto& kv) { return kv.second.session == id; });
    }
  }

  // Ends a session on the server: its ephemerals and watches go.
  void end_session(int64_t id, Callbacks* cbs) {
    drop_watches(id);
    std::vector<Trigger> triggers;
    const int64_t z = ++zxid;
    for (const std::string& p : tree.owned_by(id)) tree.remove(p, -1, z, &triggers);
    fire(triggers, cbs);
  }

  // A session became reachable: tell it what it missed.
  void came_back(SessionRec& s, Callbacks* cbs) {
    if (s.expired) {
      if (!s.told_expired && s.on_state) cbs->push_back([fn = s.on_state] { fn(SessionState::kExpired); });
      s.told_expired = true;
      return;
    }
    if (s.on_state) cbs->push_back([fn = s.on_state] { fn(SessionState::kConnected); });
    for (auto& [fn, ev] : s.held) {
      cbs->push_back([fn = std::move(fn), ev = std::move(ev)] { fn(ev.first, ev.second); });
    }
    s.held.clear();
  }
};

namespace {

using Core = FakeZkServer::Core;

class FakeSession final : public Session {
 public:
  FakeSession(std::shared_ptr<Core> core, int64_t id, std::string chroot, int32_t timeout_ms)
      : core_(std::move(core)), id_(id), chroot_(std::move(chroot)), timeout_ms_(timeout_ms) {}
  ~FakeSession() override {
    Callbacks cbs;
    {
      std::lock_guard lock(core_->mu);
      auto it = core_->sessions.find(id_);
      if (it != core_->sessions.end()) {
        if (!it->second.expired) core_->end_session(id_, &cbs);
        core_->sessions.erase(it);
      }
    }
    run(cbs);
  }

  int64_t session_id() const override { return id_; }
  int32_t session_timeout_ms() const override { return timeout_ms_; }

  Code create(const std::string& path, std::string_view data, CreateMode mode,
              std::string* created_path) override {
    return change(path, [&](const std::string& full, int64_t z, std::vector<Trigger>* t) {
      std::string made;
      const Code c = core_->tree.create(full, data, mode, id_, z, &made, t);
      if (c == Code::kOk && created_path != nullptr) *created_path = relative(made);
      return c;
    });
  }

  Code set(const std::string& path, std::string_view data, int32_t version, Stat* stat) override {
    return change(path, [&](const std::string& full, int64_t z, std::vector<Trigger>* t) {
      return core_->tree.set(full, data, version, z, stat, t);
    });
  }

  Code remove(const std::string& path, int32_t version) override {
    return change(path, [&](const std::string& full, int64_t z, std::vector<Trigger>* t) {
      return core_->tree.remove(full, version, z, t);
    });
  }

  Code get(const std::string& path, std::string* data, Stat* stat, WatchFn watch) override {
    return read(path, [&](const fake::Node* n, const std::string& full) {
      if (n == nullptr) return Code::kNoNode;
      if (data != nullptr) *data = n->data;
      if (stat != nullptr) *stat = n->stat;
      if (watch) core_->data_watches.emplace(full, Core::Watch{id_, std::move(watch)});
      return Code::kOk;
    });
  }

  Code exists(const std::string& path, Stat* stat, WatchFn watch) override {
    return read(path, [&](const fake::Node* n, const std::string& full) {
      if (watch) core_->data_watches.emplace(full, Core::Watch{id_, std::move(watch)});
      if (n == nullptr) return Code::kNoNode;
      if (stat != nullptr) *stat = n->stat;
      return Code::kOk;
    });
  }

  Code children(const std::string& path, std::vector<std::string>* out, WatchFn watch) override {
    return read(path, [&](const fake::Node* n, const std::string& full) {
      if (n == nullptr) return Code::kNoNode;
      if (out != nullptr) out->assign(n->children.begin(), n->children.end());
      if (watch) core_->child_watches.emplace(full, Core::Watch{id_, std::move(watch)});
      return Code::kOk;
    });
  }

  Code multi(std::span<const Op> ops, std::vector<OpResult>* results) override {
    if (results != nullptr) results->clear();
    Callbacks cbs;
    Code code = Code::kOk;
    {
      std::lock_guard lock(core_->mu);
      if (const Code c = core_->usable(id_); c != Code::kOk) return c;
      // Apply to a copy: all or nothing.
      fake::Tree copy = core_->tree;
      std::swap(copy, core_->tree);  // core_->tree is now the scratch copy
      const int64_t z = ++core_->zxid;
      std::vector<Trigger> triggers;
      std::vector<OpResult> res(ops.size());
      size_t failed = ops.size();
      for (size_t i = 0; i < ops.size() && failed == ops.size(); ++i) {
        const Op& op = ops[i];
        OpResult& r = res[i];
        if (!fake::valid_path(op.path) &&
            !(op.kind == Op::Kind::kCreate && fake::valid_path(op.path + "1"))) {
          r.code = Code::kBadArguments;
        } else if (op.kind == Op::Kind::kCreate) {
          std::string made;
          r.code = core_->tree.create(full(op.path), op.data, op.mode, id_, z, &made, &triggers);
          if (r.code == Code::kOk) r.created_path = relative(made);
        } else if (op.kind == Op::Kind::kSetData) {
          r.code = core_->tree.set(full(op.path), op.data, op.version, z, &r.stat, &triggers);
        } else if (op.kind == Op::Kind::kDelete) {
          r.code = core_->tree.remove(full(op.path), op.version, z, &triggers);
        } else {
          r.code = core_->tree.check(full(op.path), op.version);
        }
        if (r.code != Code::kOk) failed = i;
      }
      if (failed == ops.size()) {
        core_->fire(triggers, &cbs);
      } else {
        std::swap(copy, core_->tree);  // back to the untouched tree
        code = res[failed].code;
        for (size_t i = 0; i < ops.size(); ++i) {
          if (i != failed) res[i] = OpResult{i < failed ? Code::kOk : Code::kRuntimeInconsistency, {}, {}};
        }
      }
      if (results != nullptr) *results = std::move(res);
    }
    run(cbs);
    return code;
  }

 private:
  std::string full(const std::string& path) const {
    if (chroot_.empty()) return path;
    return path == "/" ? chroot_ : chroot_ + path;
  }
  std::string relative(const std::string& full_path) const {
    if (chroot_.empty()) return full_path;
    return full_path.size() == chroot_.size() ? "/" : full_path.substr(chroot_.size());
  }

  template <typename F>
  Code change(const std::string& path, F&& f) {
    Callbacks cbs;
    Code c;
    {
      std::lock_guard lock(core_->mu);
      c = core_->usable(id_);
      if (c != Code::kOk) return c;
      if (!fake::valid_path(path) && !fake::valid_path(path + "1")) return Code::kBadArguments;
      std::vector<Trigger> triggers;
      c = f(full(path), ++core_->zxid, &triggers);
      if (c == Code::kOk) core_->fire(triggers, &cbs);
    }
    run(cbs);
    return c;
  }

  template <typename F>
  Code read(const std::string& path, F&& f) {
    std::lock_guard lock(core_->mu);
    const Code c = core_->usable(id_);
    if (c != Code::kOk) return c;
    if (!fake::valid_path(path)) return Code::kBadArguments;
    const std::string p = full(path);
    return f(core_->tree.find(p), p);
  }

  std::shared_ptr<Core> core_;
  int64_t id_;
  std::string chroot_;
  int32_t timeout_ms_;
};

class FakeClient final : public Client {
 public:
  explicit FakeClient(std::shared_ptr<Core> core) : core_(std::move(core)) {}

  std::unique_ptr<Session> connect(const ConnectOptions& o, StateFn on_state, std::string* error) override {
    std::string hosts, chroot;
    if (!parse_connect_string(o.connect, &hosts, &chroot, error)) return nullptr;
    Callbacks cbs;
    int64_t id;
    {
      std::lock_guard lock(core_->mu);
      if (!core_->available) {
        *error = "could not connect to ZooKeeper at " + o.connect + " (the fake is unavailable)";
        return nullptr;
      }
      // Create the chroot and its parents, as the real client does first.
      std::vector<Trigger> triggers;
      size_t pos = chroot.empty() ? std::string::npos : chroot.find('/', 1);
      for (; !chroot.empty(); pos = chroot.find('/', pos + 1)) {
        const std::string prefix = chroot.substr(0, pos);
        if (core_->tree.find(prefix) == nullptr) {
          const Code c = core_->tree.create(prefix, "", CreateMode::kPersistent, 0, ++core_->zxid, nullptr,
                                            &triggers);
          if (c != Code::kOk) {
            *error = "cannot create the chroot " + chroot + ": " + std::string(to_string(c));
            return nullptr;
          }
        }
        if (pos == std::string::npos) break;
      }
      core_->fire(triggers, &cbs);
      id = core_->next_session++;
      Core::SessionRec& rec = core_->sessions[id];
      rec.chroot = chroot;
      rec.on_state = std::move(on_state);
      if (rec.on_state) cbs.push_back([fn = rec.on_state] { fn(SessionState::kConnected); });
    }
    run(cbs);
    return std::make_unique<FakeSession>(core_, id, chroot, o.session_timeout_ms);
  }

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace

FakeZkServer::FakeZkServer() : core_(std::make_shared<Core>()) {}
FakeZkServer::~FakeZkServer() = default;

std::unique_ptr<Client> FakeZkServer::client() { return std::make_unique<FakeClient>(core_); }

std::vector<int64_t> FakeZkServer::session_ids() const {
  std::lock_guard lock(core_->mu);
  std::vector<int64_t> out;
  for (const auto& [id, s] : core_->sessions) {
    if (!s.expired) out.push_back(id);
  }
  return out;
}

bool FakeZkServer::expire_session(int64_t id) {
  Callbacks cbs;
  {
    std::lock_guard lock(core_->mu);
    auto it = core_->sessions.find(id);
    if (it == core_->sessions.end() || it->second.expired) return false;
    Core::SessionRec& s = it->second;
    s.expired = true;
    s.held.clear();
    core_->end_session(id, &cbs);
    if (core_->reachable(s)) core_->came_back(s, &cbs);  // tells it kExpired now
  }
  run(cbs);
  return true;
}

bool FakeZkServer::set_connected(int64_t id, bool connected) {
  Callbacks cbs;
  {
    std::lock_guard lock(core_->mu);
    auto it = core_->sessions.find(id);
    if (it == core_->sessions.end() || it->second.told_expired) return false;
    Core::SessionRec& s = it->second;
    const bool was = core_->reachable(s);
    s.connected = connected;
    const bool now = core_->reachable(s);
    if (was && !now && s.on_state) cbs.push_back([fn = s.on_state] { fn(SessionState::kDisconnected); });
    if (!was && now) core_->came_back(s, &cbs);
  }
  run(cbs);
  return true;
}

void FakeZkServer::set_available(bool available) {
  Callbacks cbs;
  {
    std::lock_guard lock(core_->mu);
    if (core_->available == available) return;
    for (auto& [id, s] : core_->sessions) {
      if (s.told_expired || !s.connected) continue;
      if (!available && s.on_state) cbs.push_back([fn = s.on_state] { fn(SessionState::kDisconnected); });
    }
    core_->available = available;
    if (available) {
      for (auto& [id, s] : core_->sessions) {
        if (!s.told_expired && s.connected) core_->came_back(s, &cbs);
      }
    }
  }
  run(cbs);
}

}  // namespace ciuickafka::replication::zk
