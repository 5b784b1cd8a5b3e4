// tests/unit/replication/tcp_proxy.cc: one poll() loop over the listening
// socket, a wake-up pipe and the forwarded connection pairs.
#include "tests/unit/replication/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>
#include <vector>

namespace ciuickafka::replication::zk::testing {
namespace {

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

}  // namespace

TcpProxy::TcpProxy(int target_port) : target_port_(target_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = loopback(0);
  socklen_t len = sizeof a;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(listen_fd_, 16) == 0 &&
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port_ = ntohs(a.sin_port);
  }
  if (::pipe(wake_) != 0) wake_[0] = wake_[1] = -1;
  thread_ = std::thread([this] { run(); });
}

TcpProxy::~TcpProxy() {
  stop_ = true;
  if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
  thread_.join();
  ::close(listen_fd_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void TcpProxy::set_blocked(bool blocked) {
  blocked_ = blocked;
  if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
}

void TcpProxy::run() {
  std::vector<std::pair<int, int>> pairs;  // (client, server)
  auto close_all = [&] {
    for (auto [c, s] : pairs) {
      ::close(c);
      ::close(s);
    }
    pairs.clear();
  };
  while (!stop_) {
    if (blocked_) close_all();
    std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    for (auto [c, s] : pairs) {
      fds.push_back({c, POLLIN, 0});
      fds.push_back({s, POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;
    if (fds[1].revents & POLLIN) {
      char buf[64];
      (void)!::read(wake_[0], buf, sizeof buf);
    }
    if (fds[0].revents & POLLIN) {
      const int c = ::accept(listen_fd_, nullptr, nullptr);
      if (c >= 0) {
        const int s = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a = loopback(target_port_);
        if (blocked_ || ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
          ::close(c);
          ::close(s);
        } else {
          pairs.emplace_back(c, s);
        }
      }
    }
    // Forward what arrived; a closed or failed side ends its pair.
    std::vector<std::pair<int, int>> live;
    for (size_t i = 0; i < fds.size() - 2; i += 2) {
      const auto [c, s] = pairs[i / 2];
      bool ok = true;
      for (int k = 0; k < 2 && ok; ++k) {
        const pollfd& p = fds[2 + i + static_cast<size_t>(k)];
        if (p.revents == 0) continue;
        char buf[16384];
        const ssize_t n = ::read(p.fd, buf, sizeof buf);
        const int to = p.fd == c ? s : c;
        ok = n > 0 && ::send(to, buf, static_cast<size_t>(n), MSG_NOSIGNAL) == n;
      }
      if (ok) {
        live.emplace_back(c, s);
      } else {
        ::close(c);
        ::close(s);
      }
    }
    // pairs accepted during this round come after the polled ones.
    for (size_t i = (fds.size() - 2) / 2; i < pairs.size(); ++i) live.push_back(pairs[i]);
    pairs = std::move(live);
  }
  close_all();
}

}  // namespace ciuickafka::replication::zk::testing
