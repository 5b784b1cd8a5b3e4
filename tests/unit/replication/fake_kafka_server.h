// tests/unit/replication/fake_kafka_server.h: a tiny misbehaving Kafka
// server for the BrokerClient error cases.
//
// FakeKafkaServer listens on 127.0.0.1:0 and runs a handler on its own
// thread for each of the first `connections` connections it accepts, one
// after the other; the handler gets the connected (blocking) fd and the
// connection's index. Helpers read request frames, answer ApiVersions the
// way a broker does, and write arbitrary frames. Destruction stops accept()
// (shutdown of the listening socket) and joins the thread.
//
// Thread-safety: the handler runs on the server thread; the helpers are
// free functions on an fd.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "protocol/generated/api_keys.h"
#include "protocol/generated/api_versions.h"
#include "protocol/generated/headers.h"
#include "protocol/request.h"
#include "protocol/wire/writer.h"

namespace ciuickafka::replication::net::test {

class FakeKafkaServer {
 public:
  using Handler = std::function<void(int fd, int index)>;

  explicit FakeKafkaServer(Handler handler, int connections = 1) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 4) != 0)
      std::abort();
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this, connections] {
      for (int i = 0; i < connections; ++i) {
        int fd;
        do {
          fd = ::accept(listen_fd_, nullptr, nullptr);
        } while (fd < 0 && errno == EINTR);
        if (fd < 0) return;  // shut down
        handler_(fd, i);
        ::close(fd);
      }
    });
  }
  ~FakeKafkaServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);  // wakes a pending accept()
    thread_.join();
    ::close(listen_fd_);
  }
  FakeKafkaServer(const FakeKafkaServer&) = delete;
  FakeKafkaServer& operator=(const FakeKafkaServer&) = delete;

  uint16_t port() const { return port_; }

 private:
  Handler handler_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

inline bool write_all(int fd, const std::vector<uint8_t>& b) {
  size_t off = 0;
  while (off < b.size()) {
    const ssize_t n = ::send(fd, b.data() + off, b.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

inline bool read_exact(int fd, uint8_t* p, size_t n) {
  size_t off = 0;
  while (off < n) {
    const ssize_t r = ::recv(fd, p + off, n - off, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    off += static_cast<size_t>(r);
  }
  return true;
}

// One request frame (without its size prefix), split into header and body.
struct FakeRequest {
  std::vector<uint8_t> frame;
  protocol::ParsedRequestHeader header;
};

inline std::optional<FakeRequest> read_request(int fd) {
  uint8_t p[4];
  if (!read_exact(fd, p, 4)) return std::nullopt;
  const uint32_t size = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
  if (size > (1u << 20)) return std::nullopt;
  FakeRequest req;
  req.frame.resize(size);
  if (!read_exact(fd, req.frame.data(), size)) return std::nullopt;
  if (protocol::parse_request_header(req.frame, req.header) != protocol::WireError::kNone) return std::nullopt;
  return req;
}

// Blocks until the client closes its end.
inline void wait_for_eof(int fd) {
  uint8_t b[256];
  for (;;) {
    const ssize_t r = ::recv(fd, b, sizeof b, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return;
  }
}

// A response frame: size prefix, the header for (api_key, version) with
// this correlation id, then body.
inline std::vector<uint8_t> response_frame(int16_t api_key, int16_t version, int32_t correlation_id,
                                           const std::vector<uint8_t>& body) {
  protocol::Writer w;
  w.write_int32(0);
  protocol::ResponseHeader h;
  h.correlation_id = correlation_id;
  h.encode(w, protocol::response_header_version(api_key, version));
  w.write_raw(body);
  w.patch_int32(0, static_cast<int32_t>(w.size() - 4));
  return w.release();
}

template <class Msg>
std::vector<uint8_t> encode_body(const Msg& m, int16_t version) {
  protocol::Writer w;
  m.encode(w, version);
  return w.release();
}

// The ApiVersions answer of a small broker: ApiVersions 0-4, Metadata 0-12,
// Fetch 4-17.
inline protocol::ApiVersionsResponse fake_versions() {
  protocol::ApiVersionsResponse resp;
  resp.api_keys = {{18, 0, 4, {}}, {3, 0, 12, {}}, {1, 4, 17, {}}};
  return resp;
}

// Reads the client's ApiVersions request and answers it; false when the
// first request was something else or the connection ended.
inline bool serve_api_versions(int fd) {
  std::optional<FakeRequest> req = read_request(fd);
  if (!req || req->header.header.request_api_key != 18) return false;
  const int16_t v = req->header.header.request_api_version;
  return write_all(fd, response_frame(18, v, req->header.header.correlation_id, encode_body(fake_versions(), v)));
}

}  // namespace ciuickafka::replication::net::test
