// replication/zk/fake_zk.h: an in-memory ZooKeeper for unit tests of the
// cluster code. FakeZkServer holds one tree; client() makes Clients whose
// sessions act on it with ZooKeeper 3.8's semantics (the contract tests in
// tests/unit/replication/ hold it to the same cases as a real server):
// versions, zxids, ephemerals, sequential suffixes from the parent's count
// of creates, one-shot watches with ZooKeeper's triggering rules, atomic
// multi with per-op results, chroots created on connect.
//
// Test controls: expire_session() (the session's ephemerals and watches go,
// its state callback gets kExpired, its calls kSessionExpired),
// set_connected() for one session and set_available() for the whole server
// (calls get kConnectionLoss; kDisconnected, then kConnected on return, and
// the watch events that happened meanwhile are delivered after it; a session
// expired while cut off hears kExpired when it comes back).
//
// Differences from a real server: connect() never waits (an unavailable
// server fails it at once); session_timeout_ms() is what was asked; nothing
// times out by itself (expiry is only expire_session()); closing a session
// deletes it even while it is cut off.
//
// Thread-safety: everything may be called from any thread. Callbacks run on
// the thread whose call caused them, after the fake's lock is released.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "replication/zk/session.h"

namespace ciuickafka::replication::zk {

class FakeZkServer {
 public:
  FakeZkServer();
  ~FakeZkServer();  // sessions may outlive it (they share the tree)
  FakeZkServer(const FakeZkServer&) = delete;
  FakeZkServer& operator=(const FakeZkServer&) = delete;

  std::unique_ptr<Client> client();

  // The ids of the sessions alive now (neither closed nor expired).
  std::vector<int64_t> session_ids() const;
  // False when no live session has that id.
  bool expire_session(int64_t id);
  bool set_connected(int64_t id, bool connected);
  void set_available(bool available);

  struct Core;

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace ciuickafka::replication::zk
