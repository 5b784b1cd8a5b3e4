// replication/zk/session.h: the ZooKeeper client interface the cluster code
// is written against.
//
// Two implementations share it: zookeeper_session.cc (the real server through
// Debian's libzookeeper-mt) and fake_zk.h (an in-memory tree with the same
// semantics, for unit tests of the controller and membership logic). The
// contract tests in tests/unit/replication/ run the same cases against both.
//
// Semantics are ZooKeeper's:
// - Paths are absolute ("/brokers/ids/1"), relative to the session's chroot.
// - Every node has a Stat; versions are ZooKeeper's (data version starts at
//   0, -1 in a call means "any version").
// - Ephemeral nodes belong to the session that made them and vanish when it
//   ends (close or expiry). Stat::ephemeral_owner is that session's id.
// - Sequential nodes get a 10-digit, zero-padded counter suffix: the number
//   of children ever created under the parent (ZooKeeper's internal
//   cversion). Stat::cversion counts creates and deletes, so after a delete
//   the suffix is less than the cversion the parent's Stat shows.
// - Watches are one-shot: a watch set by get/exists fires once on the next
//   change of that node (created, deleted, data changed); one set by
//   children fires once on the next child created or deleted (or the node
//   deleted).
// - multi() applies all ops atomically or none; results[i] says which op
//   failed: the ops before it carry kOk, the failing one its code, the ops
//   after it kRuntimeInconsistency (as ZooKeeper 3.8 answers); the call
//   returns the failing op's code.
//
// Errors are values (Code); nothing here throws. A call made while the
// connection is lost returns kConnectionLoss (the session may still be alive:
// retry); after expiry every call returns kSessionExpired and the session is
// dead for good: make a new one (a new session id, so new ephemeral nodes).
//
// Threading: every method may be called from any thread and blocks until the
// server answers (or the client's own timeout). Never call it from a network
// thread. Callbacks (watches, state changes) run on the client's own thread,
// possibly while a call of the same session is in progress: a callback must
// only record or post the event, never call back into the session.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ciuickafka::replication::zk {

// ZooKeeper's error codes that the cluster code distinguishes.
enum class Code : int8_t {
  kOk,
  kNoNode,               // ZNONODE
  kNodeExists,           // ZNODEEXISTS
  kBadVersion,           // ZBADVERSION
  kNotEmpty,             // ZNOTEMPTY
  kNoChildrenForEphemerals,  // ZNOCHILDRENFOREPHEMERALS
  kRuntimeInconsistency, // ZRUNTIMEINCONSISTENCY (the other ops of a failed multi)
  kConnectionLoss,       // ZCONNECTIONLOSS / ZOPERATIONTIMEOUT: retry
  kSessionExpired,       // ZSESSIONEXPIRED / ZSESSIONMOVED: the session is dead
  kBadArguments,         // ZBADARGUMENTS (a malformed path, ...)
  kOther,                // anything else (the message says what)
};
std::string_view to_string(Code c);

// True for the codes after which the same call may succeed on retry.
inline bool retriable(Code c) { return c == Code::kConnectionLoss; }

struct Stat {
  int64_t czxid = 0;  // zxid of the create (a broker's epoch, KIP-380)
  int64_t mzxid = 0;
  int64_t ctime = 0;  // ms since the epoch
  int64_t mtime = 0;
  int32_t version = 0;   // data version
  int32_t cversion = 0;  // children version
  int64_t ephemeral_owner = 0;  // session id, 0 for persistent nodes
  int32_t num_children = 0;
};

enum class CreateMode : uint8_t { kPersistent, kEphemeral, kPersistentSequential, kEphemeralSequential };

// One operation of a multi().
struct Op {
  enum class Kind : uint8_t { kCreate, kSetData, kDelete, kCheck };
  Kind kind = Kind::kCheck;
  std::string path;
  std::string data;                        // kCreate, kSetData
  CreateMode mode = CreateMode::kPersistent;  // kCreate
  int32_t version = -1;                    // kSetData, kDelete, kCheck

  static Op create(std::string path, std::string data, CreateMode mode = CreateMode::kPersistent);
  static Op set_data(std::string path, std::string data, int32_t version);
  static Op remove(std::string path, int32_t version);
  static Op check(std::string path, int32_t version);
};

struct OpResult {
  Code code = Code::kOk;
  std::string created_path;  // kCreate: the path made (sequential suffix included)
  Stat stat;                 // kSetData: the node's new stat
};

enum class EventType : uint8_t { kCreated, kDeleted, kDataChanged, kChildrenChanged };
using WatchFn = std::function<void(EventType, const std::string& path)>;

// Session state changes: kConnected (first connect and every reconnect
// within the session), kDisconnected (connection lost; the client retries
// by itself), kExpired (the session is gone: ephemeral nodes deleted, every
// watch lost; make a new session).
enum class SessionState : uint8_t { kConnected, kDisconnected, kExpired };
using StateFn = std::function<void(SessionState)>;

class Session {
 public:
  virtual ~Session() = default;

  virtual int64_t session_id() const = 0;
  // The negotiated session timeout (the server may clamp what was asked).
  virtual int32_t session_timeout_ms() const = 0;

  virtual Code create(const std::string& path, std::string_view data, CreateMode mode,
                      std::string* created_path = nullptr) = 0;
  virtual Code get(const std::string& path, std::string* data, Stat* stat = nullptr, WatchFn watch = {}) = 0;
  virtual Code set(const std::string& path, std::string_view data, int32_t version, Stat* stat = nullptr) = 0;
  virtual Code remove(const std::string& path, int32_t version = -1) = 0;
  // kOk or kNoNode; the watch is set either way (fires on create too).
  virtual Code exists(const std::string& path, Stat* stat = nullptr, WatchFn watch = {}) = 0;
  // Child names (not paths), in no particular order.
  virtual Code children(const std::string& path, std::vector<std::string>* out, WatchFn watch = {}) = 0;
  // results gets one entry per op (when the call reached the server).
  virtual Code multi(std::span<const Op> ops, std::vector<OpResult>* results) = 0;
};

// How to reach ZooKeeper (Kafka's zookeeper.* keys).
struct ConnectOptions {
  std::string connect;  // "host:port[,host:port...][/chroot]"
  int32_t session_timeout_ms = 18000;
  int32_t connection_timeout_ms = 18000;  // how long connect() waits for the first connection
};

// Splits a connect string into its servers and its chroot ("" when none).
// Returns false (with *error saying why) for an empty host list or a chroot
// that is not an absolute path without a trailing '/'.
bool parse_connect_string(std::string_view connect, std::string* hosts, std::string* chroot, std::string* error);

// Makes sessions. connect() blocks until the session is connected or
// connection_timeout_ms passes (then nullptr, *error says so). A chroot in
// the connect string is created first if absent (as Kafka does).
class Client {
 public:
  virtual ~Client() = default;
  virtual std::unique_ptr<Session> connect(const ConnectOptions& options, StateFn on_state,
                                           std::string* error) = 0;
};

// The real client (libzookeeper-mt).
std::unique_ptr<Client> make_zookeeper_client();

// Creates path and any missing parents as empty persistent nodes; an
// existing node is fine. kOk or the first other error.
Code ensure_path(Session& s, const std::string& path);

}  // namespace ciuickafka::replication::zk
