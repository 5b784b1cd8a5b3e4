// deploy/healthcheck/ciuickafka_health.cc: the container image's health probe.
//
// Sends one ApiVersions v0 request to a broker and exits 0 if a well-formed
// answer with error code 0 comes back that lists ApiVersions itself (key 18);
// exits 1 otherwise, with one line on stderr saying why. Used by the
// Dockerfile's HEALTHCHECK and by deploy/compose-test.sh.
//
// Standalone and dependency-free (POSIX sockets, the C++ standard library) so
// the runtime image needs no extra package for it. The request and response
// layouts are the Kafka protocol's, written out by hand:
//   request:  int32 size, int16 api_key=18, int16 api_version=0,
//             int32 correlation_id, string client_id (int16 length + bytes)
//   response: int32 size, int32 correlation_id, int16 error_code,
//             array (int32 count) of {int16 api_key, int16 min, int16 max}
//
// Usage: ciuickafka-health [HOST:PORT] [--timeout-ms N]
// Without HOST:PORT: 127.0.0.1 and the port of the first entry of
// $KAFKA_CFG_LISTENERS or $KAFKA_LISTENERS (the images' variables), else 9092.
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int16_t kApiVersionsKey = 18;
constexpr int32_t kCorrelationId = 0x434b4843;  // "CKHC"
constexpr int32_t kMaxResponse = 1 << 20;

struct Target {
  std::string host = "127.0.0.1";
  std::string port = "9092";
};

// "PLAINTEXT://0.0.0.0:9092,INTERNAL://..." -> "9092" (first entry's port).
std::string port_of_first_listener(const char* listeners) {
  std::string s(listeners);
  s = s.substr(0, s.find(','));
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon + 1 >= s.size()) return {};
  return s.substr(colon + 1);
}

Target default_target() {
  Target t;
  for (const char* var : {"KAFKA_CFG_LISTENERS", "KAFKA_LISTENERS"}) {
    const char* v = std::getenv(var);
    if (v && *v) {
      std::string port = port_of_first_listener(v);
      if (!port.empty()) t.port = port;
      break;
    }
  }
  return t;
}

bool parse_target(const std::string& arg, Target& t) {
  size_t colon = arg.rfind(':');
  if (colon == std::string::npos || colon + 1 >= arg.size()) return false;
  t.host = arg.substr(0, colon);
  if (t.host.size() >= 2 && t.host.front() == '[' && t.host.back() == ']') t.host = t.host.substr(1, t.host.size() - 2);
  if (t.host.empty()) t.host = "127.0.0.1";
  t.port = arg.substr(colon + 1);
  return true;
}

int fail(const std::string& why) {
  std::fprintf(stderr, "ciuickafka-health: %s\n", why.c_str());
  return 1;
}

void put16(std::vector<uint8_t>& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void put32(std::vector<uint8_t>& b, uint32_t v) {
  put16(b, static_cast<uint16_t>(v >> 16));
  put16(b, static_cast<uint16_t>(v));
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t get32(const uint8_t* p) { return static_cast<uint32_t>(get16(p)) << 16 | get16(p + 2); }

std::vector<uint8_t> api_versions_v0_request() {
  const std::string client = "ciuickafka-health";
  std::vector<uint8_t> body;
  put16(body, kApiVersionsKey);
  put16(body, 0);
  put32(body, static_cast<uint32_t>(kCorrelationId));
  put16(body, static_cast<uint16_t>(client.size()));
  body.insert(body.end(), client.begin(), client.end());
  std::vector<uint8_t> frame;
  put32(frame, static_cast<uint32_t>(body.size()));
  frame.insert(frame.end(), body.begin(), body.end());
  return frame;
}

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Waits for `events` on fd until the deadline; false on timeout or error.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, remaining_ms(deadline));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

int connect_to(const Target& t, Clock::time_point deadline, std::string& err) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(t.host.c_str(), t.port.c_str(), &hints, &res);
  if (rc != 0) {
    err = "cannot resolve " + t.host + ":" + t.port + ": " + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  err = "cannot connect to " + t.host + ":" + t.port;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    int so_error = errno;
    if (so_error == EINPROGRESS && wait_for(fd, POLLOUT, deadline)) {
      socklen_t len = sizeof so_error;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
      if (so_error == 0) break;
    }
    err += std::string(": ") + (so_error == EINPROGRESS ? "timed out" : std::strerror(so_error));
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  return fd;
}

bool send_all(int fd, const std::vector<uint8_t>& b, Clock::time_point deadline) {
  size_t off = 0;
  while (off < b.size()) {
    ssize_t n = ::send(fd, b.data() + off, b.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!wait_for(fd, POLLOUT, deadline)) return false;
    } else {
      return false;
    }
  }
  return true;
}

bool recv_exact(int fd, uint8_t* out, size_t want, Clock::time_point deadline) {
  size_t got = 0;
  while (got < want) {
    ssize_t n = ::recv(fd, out + got, want - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!wait_for(fd, POLLIN, deadline)) return false;
    } else {
      return false;  // 0: the broker closed the connection
    }
  }
  return true;
}

// Checks an ApiVersions v0 response body (after the size prefix).
std::string check_response(const std::vector<uint8_t>& r) {
  if (r.size() < 10) return "response too short";
  if (static_cast<int32_t>(get32(r.data())) != kCorrelationId) return "correlation id mismatch";
  auto error = static_cast<int16_t>(get16(r.data() + 4));
  if (error != 0) return "ApiVersions error code " + std::to_string(error);
  auto count = static_cast<int32_t>(get32(r.data() + 6));
  if (count < 0 || r.size() != 10 + static_cast<size_t>(count) * 6) return "malformed ApiVersions array";
  for (int32_t i = 0; i < count; ++i) {
    const uint8_t* e = r.data() + 10 + static_cast<size_t>(i) * 6;
    auto key = static_cast<int16_t>(get16(e));
    auto min = static_cast<int16_t>(get16(e + 2));
    auto max = static_cast<int16_t>(get16(e + 4));
    if (min > max) return "API " + std::to_string(key) + " has min version > max";
    if (key == kApiVersionsKey) return {};
  }
  return "ApiVersions not listed";
}

}  // namespace

int main(int argc, char** argv) {
  Target target = default_target();
  int timeout_ms = 3000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--timeout-ms" && i + 1 < argc) {
      timeout_ms = std::atoi(argv[++i]);
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: ciuickafka-health [HOST:PORT] [--timeout-ms N]\n"
                  "Sends ApiVersions v0; exit 0 if the broker answers it correctly.\n");
      return 0;
    } else if (!parse_target(a, target)) {
      return fail("bad address \"" + a + "\" (want HOST:PORT)");
    }
  }
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 3000);
  std::string err;
  int fd = connect_to(target, deadline, err);
  if (fd < 0) return fail(err);
  std::vector<uint8_t> size_prefix(4);
  std::string why;
  if (!send_all(fd, api_versions_v0_request(), deadline)) {
    why = "send failed";
  } else if (!recv_exact(fd, size_prefix.data(), 4, deadline)) {
    why = "no response";
  } else {
    auto size = static_cast<int32_t>(get32(size_prefix.data()));
    std::vector<uint8_t> body(size > 0 && size <= kMaxResponse ? static_cast<size_t>(size) : 0);
    if (body.empty()) {
      why = "bad response size " + std::to_string(size);
    } else if (!recv_exact(fd, body.data(), body.size(), deadline)) {
      why = "truncated response";
    } else {
      why = check_response(body);
    }
  }
  ::close(fd);
  if (!why.empty()) return fail(target.host + ":" + target.port + ": " + why);
  return 0;
}
