// tests/unit/replication/zk_test_server.h: a real standalone ZooKeeper
// (Debian's package) for the C++ tests, on a free 127.0.0.1 port with its
// own temporary data directory.
//
// Thread-safety: none; drive it from the test's thread.
#pragma once

#include <sys/types.h>

#include <string>

namespace ciuickafka::replication::zk::testing {

class ZkTestServer {
 public:
  ZkTestServer() = default;
  ~ZkTestServer();  // stops the server, removes the data directory
  ZkTestServer(const ZkTestServer&) = delete;
  ZkTestServer& operator=(const ZkTestServer&) = delete;

  // Why no server can run here ("" when java and the jar are present).
  static std::string unavailable_reason();
  // Ends the process (tests/skip.h: a failure unless CK_ALLOW_SKIPS=1) when
  // unavailable_reason() is not empty.
  static void skip_if_unavailable();

  // Starts it and waits until it answers "ruok" (bounded). False with
  // *error on failure.
  bool start(std::string* error);
  bool restart(std::string* error);  // same port and data directory
  void stop();                       // SIGTERM, then SIGKILL after 5 s
  void kill9();
  void pause();   // SIGSTOP
  void resume();  // SIGCONT

  int port() const { return port_; }
  std::string connect_string() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  bool launch(std::string* error);
  void reap(int wait_ms);

  int port_ = 0;
  std::string dir_;
  pid_t pid_ = -1;
};

}  // namespace ciuickafka::replication::zk::testing
