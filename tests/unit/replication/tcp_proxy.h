// tests/unit/replication/tcp_proxy.h: a loopback TCP forwarder that a test
// can cut, to make a ZooKeeper client lose its server while the server
// stays up (so the server really times the session out).
//
// Thread-safety: set_blocked() and port() from any thread; the forwarding
// runs on the proxy's own thread.
#pragma once

#include <atomic>
#include <thread>

namespace ciuickafka::replication::zk::testing {

class TcpProxy {
 public:
  // Listens on a free 127.0.0.1 port and forwards to 127.0.0.1:target_port.
  explicit TcpProxy(int target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  // Blocked: every open connection is closed and new ones are closed as
  // soon as they are accepted.
  void set_blocked(bool blocked);

 private:
  void run();

  int target_port_;
  int port_ = 0;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::atomic<bool> blocked_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ciuickafka::replication::zk::testing
