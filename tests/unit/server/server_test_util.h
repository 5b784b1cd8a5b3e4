// tests/unit/server/server_test_util.h: a broker with a running Server on an
// ephemeral port, and a blocking raw-socket client to talk to it.
#pragma once

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "broker/broker.h"
#include "broker/config/broker_config.h"
#include "broker/server/server.h"
#include "protocol/generated/api_keys.h"
#include "protocol/generated/api_versions.h"
#include "protocol/generated/headers.h"
#include "protocol/wire/writer.h"
#include "tests/unit/storage/temp_dir.h"

namespace ciuickafka::broker::test {

using storage::test::TempDir;

// A Broker on a temp log dir and a started Server on 127.0.0.1:0.
class ServerFixture {
 public:
  explicit ServerFixture(std::vector<std::string> overrides = {}, Server::DispatchFn dispatch = {}) {
    config::ConfigInput in;
    in.overrides = {"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir_.path(),
                    "num.network.threads=2"};
    for (auto& o : overrides) in.overrides.push_back(o);
    auto loaded = config::load_config(in);
    if (!loaded.is_ok()) throw std::runtime_error(loaded.error().message);
    std::string err;
    broker_ = Broker::open(std::move(loaded.value().config), &err);
    if (!broker_) throw std::runtime_error(err);
    server_ = std::make_unique<Server>(*broker_, std::move(dispatch));
    if (!server_->start(&err)) throw std::runtime_error(err);
  }
  ~ServerFixture() {
    server_.reset();
    broker_->shutdown();
  }

  Broker& broker() { return *broker_; }
  Server& server() { return *server_; }
  uint16_t port() const { return server_->bound_ports().at(0); }

 private:
  TempDir dir_;
  std::unique_ptr<Broker> broker_;
  std::unique_ptr<Server> server_;
};

// A blocking TCP client with a receive timeout. EINTR is retried: a thread
// that appended to a log owns an io_uring whose task work interrupts
// blocking calls.
class RawClient {
 public:
  explicit RawClient(uint16_t port, int timeout_ms = 5000) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("connect failed");
    set_timeout(timeout_ms);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~RawClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void set_timeout(int ms) {
    timeval tv{ms / 1000, (ms % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  int fd() const { return fd_; }

  // False when the peer closed or reset.
  bool send_all(const std::vector<uint8_t>& b) {
    size_t off = 0;
    while (off < b.size()) {
      const ssize_t n = ::send(fd_, b.data() + off, b.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Exactly n bytes; nullopt on close, reset or timeout.
  std::optional<std::vector<uint8_t>> recv_exact(size_t n) {
    std::vector<uint8_t> out(n);
    size_t off = 0;
    while (off < n) {
      const ssize_t r = ::recv(fd_, out.data() + off, n - off, 0);
      if (r < 0 && errno == EINTR) continue;  // io_uring task work of this thread's ring
      if (r <= 0) {
        UNSCOPED_INFO("recv: " << (r == 0 ? std::string("end of stream") : std::string(std::strerror(errno)))
                               << " after " << off << " of " << n << " bytes");
        return std::nullopt;
      }
      off += static_cast<size_t>(r);
    }
    return out;
  }
  // One response frame without its size prefix.
  std::optional<std::vector<uint8_t>> recv_frame() {
    auto prefix = recv_exact(4);
    if (!prefix) return std::nullopt;
    const uint32_t size = (uint32_t{(*prefix)[0]} << 24) | (uint32_t{(*prefix)[1]} << 16) |
                          (uint32_t{(*prefix)[2]} << 8) | uint32_t{(*prefix)[3]};
    return recv_exact(size);
  }
  // True when the server closed the connection (EOF or reset) within the timeout.
  bool closed_by_peer() {
    uint8_t b;
    for (;;) {
      const ssize_t r = ::recv(fd_, &b, 1, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) return true;
      if (r < 0) return errno == ECONNRESET;
      // unexpected data: keep draining
    }
  }

 private:
  int fd_ = -1;
};

inline int32_t be32(const uint8_t* p) {
  return static_cast<int32_t>((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]});
}

inline std::vector<uint8_t> be32_bytes(int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  return {static_cast<uint8_t>(u >> 24), static_cast<uint8_t>(u >> 16), static_cast<uint8_t>(u >> 8),
          static_cast<uint8_t>(u)};
}

// A request frame (size prefix included): header at the right version, body as given.
inline std::vector<uint8_t> request_frame(int16_t api_key, int16_t version, int32_t correlation_id,
                                          const std::vector<uint8_t>& body) {
  protocol::Writer w;
  w.write_int32(0);
  protocol::RequestHeader h;
  h.request_api_key = api_key;
  h.request_api_version = version;
  h.correlation_id = correlation_id;
  h.client_id = "ck-server-test";
  h.encode(w, protocol::request_header_version(api_key, version));
  std::vector<uint8_t> out(w.buffer().begin(), w.buffer().end());
  out.insert(out.end(), body.begin(), body.end());
  const auto size = be32_bytes(static_cast<int32_t>(out.size() - 4));
  std::copy(size.begin(), size.end(), out.begin());
  return out;
}

// An ApiVersions v3 request frame (what the real dispatch answers first).
inline std::vector<uint8_t> api_versions_request(int32_t correlation_id) {
  protocol::ApiVersionsRequest req;
  req.client_software_name = "ck-server-test";
  req.client_software_version = "1.0";
  protocol::Writer body;
  req.encode(body, 3);
  return request_frame(18, 3, correlation_id, body.buffer());
}

// Polls cond every 5 ms for up to timeout.
template <class F>
bool eventually(F cond, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    ::usleep(5000);
  }
  return cond();
}

// True when c gets an ApiVersions answer with this correlation id.
inline bool served(RawClient& c, int32_t correlation_id) {
  if (!c.send_all(api_versions_request(correlation_id))) return false;
  auto f = c.recv_frame();
  return f && f->size() >= 4 && be32(f->data()) == correlation_id;
}

// A dispatcher that holds every dispatched request until the test answers
// it (take() to answer it the test's way, answer() for [size][correlation id]).
class Holder {
 public:
  // Requests whose correlation id is in `holding` hold the connection's
  // later ones (RequestContext::hold_later_requests), as a handler that
  // answers from the I/O pool does.
  explicit Holder(std::set<int32_t> holding = {}) : holding_(std::move(holding)) {}

  Server::DispatchFn dispatcher() {
    return [this](RequestContext ctx) {
      if (holding_.count(be32(ctx.frame->data() + 4)) != 0) {
        REQUIRE(ctx.hold_later_requests);
        REQUIRE(ctx.release_later_requests);
        ctx.hold_later_requests();
      }
      std::lock_guard<std::mutex> lock(mu_);
      held_.push_back(std::move(ctx));
    };
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_.size();
  }
  // Waits until n requests were dispatched.
  bool wait_for(size_t n) {
    return eventually([&] { return count() >= n; });
  }
  RequestContext take(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return held_.at(i);
  }
  // Answers request i with [size][correlation id].
  void answer(size_t i) {
    RequestContext ctx = take(i);
    Response r;
    r.bytes = be32_bytes(4);
    auto c = be32_bytes(be32(ctx.frame->data() + 4));
    r.bytes.insert(r.bytes.end(), c.begin(), c.end());
    ctx.respond(std::move(r));
  }

 private:
  const std::set<int32_t> holding_;
  std::mutex mu_;
  std::vector<RequestContext> held_;
};

}  // namespace ciuickafka::broker::test
