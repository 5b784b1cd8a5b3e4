// replication/net/socket.cc: see socket.h.
#include "replication/net/socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ciuickafka::replication::net {
namespace {

std::string errno_text(int e) { return std::strerror(e); }

// Milliseconds left until the deadline, rounded up, never negative.
int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

enum class WaitOutcome : uint8_t { kReady, kTimeout, kInterrupted, kError };

// Polls fd for events and the interrupter's eventfd until the deadline.
WaitOutcome poll_fd(int fd, short events, Clock::time_point deadline, const Interrupter* intr,
                    int* err) {
  for (;;) {
    if (intr && intr->triggered()) return WaitOutcome::kInterrupted;
    pollfd p[2] = {{fd, events, 0}, {intr ? intr->fd() : -1, POLLIN, 0}};
    const int n = ::poll(p, intr ? 2 : 1, ms_left(deadline));
    if (n < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return WaitOutcome::kError;
    }
    if (intr && (p[1].revents & POLLIN)) return WaitOutcome::kInterrupted;
    if (n > 0 && p[0].revents != 0) return WaitOutcome::kReady;  // errors surface in the I/O call
    if (Clock::now() >= deadline) return WaitOutcome::kTimeout;
  }
}

}  // namespace

std::string_view to_string(NetErrorKind k) {
  switch (k) {
    case NetErrorKind::kConnectRefused: return "connect refused";
    case NetErrorKind::kConnectFailed: return "connect failed";
    case NetErrorKind::kTimeout: return "timeout";
    case NetErrorKind::kConnectionClosed: return "connection closed";
    case NetErrorKind::kClosed: return "closed";
    case NetErrorKind::kMalformedResponse: return "malformed response";
    case NetErrorKind::kCorrelationMismatch: return "correlation mismatch";
    case NetErrorKind::kResponseTooLarge: return "response too large";
    case NetErrorKind::kEncode: return "encode error";
    case NetErrorKind::kNotConnected: return "not connected";
  }
  return "unknown";
}

// --- Interrupter

std::shared_ptr<Interrupter> Interrupter::create(std::string* error) {
  const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) {
    if (error) *error = "eventfd: " + errno_text(errno);
    return nullptr;
  }
  return std::shared_ptr<Interrupter>(new Interrupter(fd));
}

Interrupter::~Interrupter() { ::close(fd_); }

void Interrupter::trigger() {
  const uint64_t one = 1;
  // The counter is never read, so it stays readable; a full counter
  // (EAGAIN) is readable too.
  [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof one);
}

bool Interrupter::triggered() const {
  pollfd p{fd_, POLLIN, 0};
  for (;;) {
    const int n = ::poll(&p, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    return n > 0 && (p.revents & POLLIN);
  }
}

bool Interrupter::wait_until(Clock::time_point deadline) const {
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    const int n = ::poll(&p, 1, ms_left(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) return true;
    if (n < 0 || Clock::now() >= deadline) return false;
  }
}

// --- TcpSocket

NetResult<std::unique_ptr<TcpSocket>> TcpSocket::connect(const std::string& host, uint16_t port,
                                                         Clock::time_point deadline,
                                                         std::shared_ptr<Interrupter> interrupter) {
  const std::string peer = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  addrinfo* res = nullptr;
  const int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (gai != 0)
    return NetError{NetErrorKind::kConnectFailed, peer + ": cannot resolve: " + ::gai_strerror(gai)};

  NetError last{NetErrorKind::kConnectFailed, peer + ": no address"};
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = {NetErrorKind::kConnectFailed, peer + ": socket: " + errno_text(errno)};
      continue;
    }
    std::unique_ptr<TcpSocket> s(new TcpSocket(fd, peer, interrupter));
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc;
    do {
      rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    } while (rc != 0 && errno == EINTR);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      Status st = s->wait(POLLOUT, deadline, "connect");
      if (!st.ok()) {
        last = st.error();
        if (last.kind == NetErrorKind::kTimeout || last.kind == NetErrorKind::kClosed) break;
        continue;
      }
      socklen_t len = sizeof err;
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
    if (err == 0) {
      ::freeaddrinfo(res);
      return s;
    }
    last = {err == ECONNREFUSED ? NetErrorKind::kConnectRefused : NetErrorKind::kConnectFailed,
            peer + ": connect: " + errno_text(err)};
    if (Clock::now() >= deadline) break;
  }
  ::freeaddrinfo(res);
  return last;
}

TcpSocket::~TcpSocket() { ::close(fd_); }

Status TcpSocket::wait(short events, Clock::time_point deadline, const char* what) {
  int err = 0;
  switch (poll_fd(fd_, events, deadline, interrupter_.get(), &err)) {
    case WaitOutcome::kReady: return Status::ok_status();
    case WaitOutcome::kTimeout: return NetError{NetErrorKind::kTimeout, peer_ + ": " + what + " timed out"};
    case WaitOutcome::kInterrupted: return NetError{NetErrorKind::kClosed, peer_ + ": client closed"};
    case WaitOutcome::kError: break;
  }
  return NetError{NetErrorKind::kConnectFailed, peer_ + ": poll: " + errno_text(err)};
}

Status TcpSocket::send_all(std::span<const uint8_t> data, Clock::time_point deadline) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      Status st = wait(POLLOUT, deadline, "send");
      if (!st.ok()) return st;
      continue;
    }
    return NetError{NetErrorKind::kConnectionClosed, peer_ + ": send: " + errno_text(errno)};
  }
  return Status::ok_status();
}

Status TcpSocket::recv_exact(std::span<uint8_t> out, Clock::time_point deadline) {
  size_t off = 0;
  while (off < out.size()) {
    const ssize_t n = ::recv(fd_, out.data() + off, out.size() - off, 0);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n == 0)
      return NetError{NetErrorKind::kConnectionClosed, peer_ + ": connection closed by peer"};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      Status st = wait(POLLIN, deadline, "receive");
      if (!st.ok()) return st;
      continue;
    }
    return NetError{NetErrorKind::kConnectionClosed, peer_ + ": recv: " + errno_text(errno)};
  }
  return Status::ok_status();
}

}  // namespace ciuickafka::replication::net
