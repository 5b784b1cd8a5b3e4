// replication/zk/zookeeper_session.cc: Session over Debian's libzookeeper-mt
// (the synchronous C API).
//
// Watches: each get/exists/children with a WatchFn allocates a WatchCtx that
// the session keeps in a registry. The C client calls the watcher with that
// context once for the node event (we take it out of the registry, run the
// WatchFn, free it) and, while it stays registered, with ZOO_SESSION_EVENT on
// every connection state change (ignored here: session.h reports those
// through StateFn). A call that fails does not register its watcher in the
// C client (get and children register on ZOK only, exists on ZOK and
// ZNONODE), so the context is freed at once. Whatever is left (watches that
// never fired, those of an expired session) is freed after zookeeper_close,
// which has joined the client's threads by then: never leaked, never freed
// twice.
//
// The C client logs WARN and above through the operator log
// (metrics/log/log.h, logger "zookeeper"); CK_ZK_DEBUG=1 in the
// environment with log.level=DEBUG adds its DEBUG log (every packet and
// watcher call).
//
// Thread-safety: methods may be called from any thread (the C handle is
// thread-safe); callbacks run on the C client's completion thread.
#include "replication/zk/session.h"

#include "metrics/log/log.h"

#ifndef THREADED
#define THREADED  // the synchronous API of libzookeeper_mt
#endif
#include <zookeeper/zookeeper.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

namespace ciuickafka::replication::zk {
namespace {

Code map_rc(int rc) {
  switch (rc) {
    case ZOK: return Code::kOk;
    case ZNONODE: return Code::kNoNode;
    case ZNODEEXISTS: return Code::kNodeExists;
    case ZBADVERSION: return Code::kBadVersion;
    case ZNOTEMPTY: return Code::kNotEmpty;
    case ZNOCHILDRENFOREPHEMERALS: return Code::kNoChildrenForEphemerals;
    case ZRUNTIMEINCONSISTENCY: return Code::kRuntimeInconsistency;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT: return Code::kConnectionLoss;
    case ZSESSIONEXPIRED:
    case ZSESSIONMOVED:
    case ZINVALIDSTATE: return Code::kSessionExpired;
    case ZBADARGUMENTS: return Code::kBadArguments;
    default: return Code::kOther;
  }
}

void convert(const ::Stat& in, Stat* out) {
  if (out == nullptr) return;
  out->czxid = in.czxid;
  out->mzxid = in.mzxid;
  out->ctime = in.ctime;
  out->mtime = in.mtime;
  out->version = in.version;
  out->cversion = in.cversion;
  out->ephemeral_owner = in.ephemeralOwner;
  out->num_children = in.numChildren;
}

int create_flags(CreateMode m) {
  switch (m) {
    case CreateMode::kPersistent: return ZOO_PERSISTENT;
    case CreateMode::kEphemeral: return ZOO_EPHEMERAL;
    case CreateMode::kPersistentSequential: return ZOO_PERSISTENT_SEQUENTIAL;
    case CreateMode::kEphemeralSequential: return ZOO_EPHEMERAL_SEQUENTIAL;
  }
  return ZOO_PERSISTENT;
}

// The global watcher's context: connection state for connect() and StateFn.
struct StateCtx {
  std::mutex mu;
  std::condition_variable cv;
  int last_state = 0;  // the last ZOO_*_STATE seen (0: none yet)
  StateFn on_state;
};

void state_watcher(zhandle_t*, int type, int state, const char*, void* ctx) {
  if (type != ZOO_SESSION_EVENT) return;  // we set no default-watcher watches
  auto* s = static_cast<StateCtx*>(ctx);
  {
    std::lock_guard lock(s->mu);
    s->last_state = state;
  }
  s->cv.notify_all();
  if (!s->on_state) return;
  if (state == ZOO_CONNECTED_STATE || state == ZOO_READONLY_STATE) {
    s->on_state(SessionState::kConnected);
  } else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE ||
             state == ZOO_NOTCONNECTED_STATE) {
    s->on_state(SessionState::kDisconnected);
  } else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
    s->on_state(SessionState::kExpired);
  }
}

// The C client's own lines (its WARN and ERROR by default) go through the
// operator log, so they keep its level and format (a JSON log stays JSON).
void zk_client_log(const char* message) {
  namespace lg = metrics::log;
  std::string_view m(message != nullptr ? message : "");
  lg::Level level = lg::Level::kDebug;
  if (m.find("ZOO_ERROR@") != std::string_view::npos) level = lg::Level::kError;
  else if (m.find("ZOO_WARN@") != std::string_view::npos) level = lg::Level::kWarn;
  else if (m.find("ZOO_INFO@") != std::string_view::npos) level = lg::Level::kInfo;
  if (!lg::enabled(level)) return;
  while (!m.empty() && (m.back() == '\n' || m.back() == '\r')) m.remove_suffix(1);
  lg::write(level, "zookeeper", "zookeeper client: " + std::string(m));
}

// Opens a handle and waits for its first connected state. nullptr (with
// *error) on timeout or a terminal state; the handle is closed then.
zhandle_t* open_handle(const std::string& host, int32_t session_timeout_ms, int32_t connect_timeout_ms,
                       const clientid_t* id, StateCtx* ctx, const std::string& what, std::string* error) {
  zhandle_t* zh = zookeeper_init2(host.c_str(), state_watcher, session_timeout_ms, id, ctx, 0, zk_client_log);
  if (zh == nullptr) {
    *error = "zookeeper_init(" + what + ") failed: " + std::strerror(errno);
    return nullptr;
  }
  std::unique_lock lock(ctx->mu);
  const bool ok = ctx->cv.wait_for(lock, std::chrono::milliseconds(connect_timeout_ms), [&] {
    return ctx->last_state == ZOO_CONNECTED_STATE || ctx->last_state == ZOO_READONLY_STATE ||
           ctx->last_state == ZOO_EXPIRED_SESSION_STATE || ctx->last_state == ZOO_AUTH_FAILED_STATE;
  });
  const int state = ctx->last_state;
  lock.unlock();
  if (ok && (state == ZOO_CONNECTED_STATE || state == ZOO_READONLY_STATE)) return zh;
  zookeeper_close(zh);
  *error = ok ? "ZooKeeper at " + what + " refused the session (" +
                    (state == ZOO_EXPIRED_SESSION_STATE ? "expired" : "auth failed") + ")"
              : "could not connect to ZooKeeper at " + what + " within " +
                    std::to_string(connect_timeout_ms) + " ms";
  return nullptr;
}

class ZkSession;

struct WatchCtx {
  ZkSession* owner;
  WatchFn fn;
};

void node_watcher(zhandle_t*, int type, int state, const char* path, void* ctx);

class ZkSession final : public Session {
 public:
  ZkSession(zhandle_t* zh, std::unique_ptr<StateCtx> state, std::string hosts, int32_t timeout_ms)
      : zh_(zh), state_(std::move(state)), hosts_(std::move(hosts)), timeout_ms_(timeout_ms) {
    const clientid_t* id = zoo_client_id(zh_);
    id_ = *id;
  }
  ~ZkSession() override {
    zookeeper_close(zh_);  // joins the client's threads: no callback after this
    for (WatchCtx* w : watches_) delete w;
  }

  int64_t session_id() const override { return id_.client_id; }
  int32_t session_timeout_ms() const override { return zoo_recv_timeout(zh_); }
  const clientid_t& client_id() const { return id_; }
  const std::string& hosts() const { return hosts_; }
  int32_t requested_timeout_ms() const { return timeout_ms_; }
  zhandle_t* handle() const { return zh_; }
  StateCtx* state() const { return state_.get(); }

  Code create(const std::string& path, std::string_view data, CreateMode mode,
              std::string* created_path) override {
    std::string buf(path.size() + 64, '\0');
    const int rc = zoo_create(zh_, path.c_str(), data.data(), static_cast<int>(data.size()),
                              &ZOO_OPEN_ACL_UNSAFE, create_flags(mode), buf.data(),
                              static_cast<int>(buf.size()));
    if (rc == ZOK && created_path != nullptr) *created_path = buf.c_str();
    return map_rc(rc);
  }

  Code get(const std::string& path, std::string* data, Stat* stat, WatchFn watch) override {
    WatchCtx* w = watch ? add_watch(std::move(watch)) : nullptr;
    std::string buf(64 * 1024, '\0');
    ::Stat st {};
    int len = static_cast<int>(buf.size());
    int rc = zoo_wget(zh_, path.c_str(), w ? node_watcher : nullptr, w, buf.data(), &len, &st);
    if (w != nullptr && rc != ZOK) drop_watch(w);
    // Larger than the first buffer: read again (the watch is already set).
    while (rc == ZOK && st.dataLength > static_cast<int>(buf.size())) {
      buf.assign(static_cast<size_t>(st.dataLength), '\0');
      len = static_cast<int>(buf.size());
      rc = zoo_get(zh_, path.c_str(), 0, buf.data(), &len, &st);
    }
    if (rc != ZOK) return map_rc(rc);
    if (data != nullptr) data->assign(buf.data(), len < 0 ? 0 : static_cast<size_t>(len));
    convert(st, stat);
    return Code::kOk;
  }

  Code set(const std::string& path, std::string_view data, int32_t version, Stat* stat) override {
    ::Stat st {};
    const int rc = zoo_set2(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), version, &st);
    if (rc == ZOK) convert(st, stat);
    return map_rc(rc);
  }

  Code remove(const std::string& path, int32_t version) override {
    return map_rc(zoo_delete(zh_, path.c_str(), version));
  }

  Code exists(const std::string& path, Stat* stat, WatchFn watch) override {
    WatchCtx* w = watch ? add_watch(std::move(watch)) : nullptr;
    ::Stat st {};
    const int rc = zoo_wexists(zh_, path.c_str(), w ? node_watcher : nullptr, w, &st);
    if (w != nullptr && rc != ZOK && rc != ZNONODE) drop_watch(w);
    if (rc == ZOK) convert(st, stat);
    return map_rc(rc);
  }

  Code children(const std::string& path, std::vector<std::string>* out, WatchFn watch) override {
    WatchCtx* w = watch ? add_watch(std::move(watch)) : nullptr;
    struct String_vector names {};
    const int rc = zoo_wget_children(zh_, path.c_str(), w ? node_watcher : nullptr, w, &names);
    if (rc != ZOK) {
      if (w != nullptr) drop_watch(w);
      return map_rc(rc);
    }
    if (out != nullptr) {
      out->clear();
      for (int32_t i = 0; i < names.count; ++i) out->emplace_back(names.data[i]);
    }
    deallocate_String_vector(&names);
    return Code::kOk;
  }

  Code multi(std::span<const Op> ops, std::vector<OpResult>* results) override;

  // The node watcher's entry: runs the WatchFn of a registered context once.
  void fire(WatchCtx* w, int type, const char* path) {
    EventType ev;
    if (type == ZOO_CREATED_EVENT) {
      ev = EventType::kCreated;
    } else if (type == ZOO_DELETED_EVENT) {
      ev = EventType::kDeleted;
    } else if (type == ZOO_CHANGED_EVENT) {
      ev = EventType::kDataChanged;
    } else if (type == ZOO_CHILD_EVENT) {
      ev = EventType::kChildrenChanged;
    } else {
      return;  // session events: the watch stays registered
    }
    {
      std::lock_guard lock(mu_);
      if (watches_.erase(w) == 0) return;
    }
    const std::string p = path != nullptr ? path : "";
    w->fn(ev, p);
    delete w;
  }

 private:
  WatchCtx* add_watch(WatchFn fn) {
    auto* w = new WatchCtx{this, std::move(fn)};
    std::lock_guard lock(mu_);
    watches_.insert(w);
    return w;
  }
  void drop_watch(WatchCtx* w) {
    {
      std::lock_guard lock(mu_);
      watches_.erase(w);
    }
    delete w;
  }

  zhandle_t* zh_;
  std::unique_ptr<StateCtx> state_;
  std::string hosts_;  // without the chroot
  int32_t timeout_ms_;
  clientid_t id_{};
  std::mutex mu_;
  std::unordered_set<WatchCtx*> watches_;
};

void node_watcher(zhandle_t*, int type, int, const char* path, void* ctx) {
  // The C client only calls contexts it holds registered (a failed call's
  // context was never registered and is freed by that call), and the owner
  // outlives every callback (its destructor joins the C threads). fire()
  // still checks the registry before running or freeing anything.
  auto* w = static_cast<WatchCtx*>(ctx);
  w->owner->fire(w, type, path);
}

Code ZkSession::multi(std::span<const Op> ops, std::vector<OpResult>* results) {
  const size_t n = ops.size();
  if (results != nullptr) results->clear();
  if (n == 0) return Code::kOk;
  // The C client's zoo_amulti (3.8, and upstream still) mishandles a sub-op
  // whose path check fails: on an expired handle the first sub-op's path,
  // already freed by Request_path_init, is freed again (with a chroot), and
  // later sub-ops free a stale path of an earlier one. A chaos run hit it
  // as a double free (the controller's fenced multi after an expiry). So a
  // multi goes out only on a connected handle: expired is final, and while
  // (re)connecting the expiry may land at any moment, so that is a
  // retriable connection loss. What remains is a thread stalled inside
  // zoo_amulti across a whole reconnect, which this cannot exclude.
  const int state = zoo_state(zh_);
  if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) return Code::kSessionExpired;
  if (state != ZOO_CONNECTED_STATE && state != ZOO_READONLY_STATE) return Code::kConnectionLoss;
  std::vector<zoo_op_t> zops(n);
  std::vector<zoo_op_result_t> zres(n);
  std::vector<std::string> paths(n);
  std::vector< ::Stat> stats(n);
  for (size_t i = 0; i < n; ++i) {
    const Op& op = ops[i];
    switch (op.kind) {
      case Op::Kind::kCreate:
        paths[i].assign(op.path.size() + 64, '\0');
        zoo_create_op_init(&zops[i], op.path.c_str(), op.data.data(), static_cast<int>(op.data.size()),
                           &ZOO_OPEN_ACL_UNSAFE, create_flags(op.mode), paths[i].data(),
                           static_cast<int>(paths[i].size()));
        break;
      case Op::Kind::kSetData:
        zoo_set_op_init(&zops[i], op.path.c_str(), op.data.data(), static_cast<int>(op.data.size()),
                        op.version, &stats[i]);
        break;
      case Op::Kind::kDelete: zoo_delete_op_init(&zops[i], op.path.c_str(), op.version); break;
      case Op::Kind::kCheck: zoo_check_op_init(&zops[i], op.path.c_str(), op.version); break;
    }
  }
  const int rc = zoo_multi(zh_, static_cast<int>(n), zops.data(), zres.data());
  const Code code = map_rc(rc);
  // Per-op results only when the server answered (connection loss and
  // expiry leave them unset).
  if (results != nullptr && code != Code::kConnectionLoss && code != Code::kSessionExpired) {
    results->resize(n);
    for (size_t i = 0; i < n; ++i) {
      OpResult& r = (*results)[i];
      r.code = map_rc(zres[i].err);
      if (r.code != Code::kOk) continue;
      if (ops[i].kind == Op::Kind::kCreate) r.created_path = paths[i].c_str();
      if (ops[i].kind == Op::Kind::kSetData) convert(stats[i], &r.stat);
    }
  }
  return code;
}

class ZkClient final : public Client {
 public:
  std::unique_ptr<Session> connect(const ConnectOptions& o, StateFn on_state, std::string* error) override {
    std::string hosts, chroot;
    if (!parse_connect_string(o.connect, &hosts, &chroot, error)) return nullptr;
    const auto start = std::chrono::steady_clock::now();
    if (!chroot.empty()) {
      // Create the chroot through a session without it, as Kafka does.
      StateCtx ctx;
      zhandle_t* zh = open_handle(hosts, o.session_timeout_ms, o.connection_timeout_ms, nullptr, &ctx,
                                  o.connect, error);
      if (zh == nullptr) return nullptr;
      ZkSession bootstrap(zh, nullptr, hosts, o.session_timeout_ms);
      const Code c = ensure_path(bootstrap, chroot);
      if (c != Code::kOk) {
        *error = "cannot create the chroot " + chroot + " in ZooKeeper at " + o.connect + ": " +
                 std::string(to_string(c));
        return nullptr;
      }
    }
    const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    const auto left = std::max<int64_t>(1, o.connection_timeout_ms - spent.count());
    auto ctx = std::make_unique<StateCtx>();
    ctx->on_state = std::move(on_state);
    zhandle_t* zh = open_handle(hosts + chroot, o.session_timeout_ms, static_cast<int32_t>(left), nullptr,
                                ctx.get(), o.connect, error);
    if (zh == nullptr) {
      if (spent.count() > 0 && error->find("within") != std::string::npos) {
        *error = "could not connect to ZooKeeper at " + o.connect + " within " +
                 std::to_string(o.connection_timeout_ms) + " ms";
      }
      return nullptr;
    }
    return std::make_unique<ZkSession>(zh, std::move(ctx), hosts, o.session_timeout_ms);
  }
};

}  // namespace

std::unique_ptr<Client> make_zookeeper_client() {
  static std::once_flag quiet;
  std::call_once(quiet, [] {
    zoo_set_debug_level(std::getenv("CK_ZK_DEBUG") != nullptr ? ZOO_LOG_LEVEL_DEBUG : ZOO_LOG_LEVEL_WARN);
  });
  return std::make_unique<ZkClient>();
}

}  // namespace ciuickafka::replication::zk
