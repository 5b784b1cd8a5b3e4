// tests/unit/metrics/exposer_test.cc: a real scrape. An Exposer on
// 127.0.0.1:0 answers GET /metrics (sent by a tiny raw-socket HTTP client)
// with the broker's counters; an occupied port or a malformed address gives
// an error value naming the address, never an exception.
#include "metrics/exposer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "metrics/broker_metrics.h"
#include "metrics/registry.h"
#include "tests/unit/metrics/text_lines.h"

namespace m = ciuickafka::metrics;
using ck_metrics_test::has_line;

namespace {

// Sends `request` to 127.0.0.1:port and returns everything read until the
// server closes (HTTP/1.0, so it does). Empty on any socket failure.
std::string http_exchange(std::uint16_t port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string http_get(std::uint16_t port, const std::string& path) {
  return http_exchange(port, "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
}

// The body after the blank line that ends the headers.
std::string body_of(const std::string& response) {
  auto at = response.find("\r\n\r\n");
  return at == std::string::npos ? std::string() : response.substr(at + 4);
}

// A socket listening on 127.0.0.1 at an ephemeral port; closed on scope exit.
struct Listener {
  int fd = -1;
  std::uint16_t port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(fd, 4) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
  }
  ~Listener() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

TEST_CASE("exposer on 127.0.0.1:0 serves the counters at /metrics") {
  m::Registry registry;
  m::BrokerMetrics bm(registry);
  bm.topic("train").add_bytes_in(2048);
  bm.request("Produce", 9).record(std::chrono::milliseconds(2));

  auto started = m::Exposer::start("127.0.0.1:0", registry);
  INFO(started.error);
  REQUIRE(started.ok());
  REQUIRE(started.exposer->port() != 0);
  CHECK(started.exposer->address() == "127.0.0.1:0");

  std::string response = http_get(started.exposer->port(), "/metrics");
  INFO(response.substr(0, 300));
  REQUIRE(response.rfind("HTTP/1.", 0) == 0);
  CHECK(response.find(" 200 ") != std::string::npos);
  std::string body = body_of(response);
  CHECK(has_line(body, "kafka_server_brokertopicmetrics_bytesin_total{topic=\"train\"} 2048"));
  CHECK(has_line(body, "kafka_network_requestmetrics_requests_total{request=\"Produce\",version=\"9\"} 1"));

  // A later increment is visible to the next scrape.
  bm.topic("train").add_bytes_in(1);
  body = body_of(http_get(started.exposer->port(), "/metrics"));
  CHECK(has_line(body, "kafka_server_brokertopicmetrics_bytesin_total{topic=\"train\"} 2049"));

  // Only /metrics is served.
  std::string other = http_get(started.exposer->port(), "/nothing-here");
  CHECK(other.find(" 200 ") == std::string::npos);
}

TEST_CASE("exposer on an occupied port returns an error naming the address") {
  m::Registry registry;
  Listener busy;
  REQUIRE(busy.port != 0);
  std::string address = "127.0.0.1:" + std::to_string(busy.port);
  m::ExposerStart started;
  REQUIRE_NOTHROW(started = m::Exposer::start(address, registry));
  CHECK_FALSE(started.ok());
  CHECK(started.error.find(address) != std::string::npos);
  // The system's reason, not civetweb's "null context when constructing CivetServer".
  CHECK(started.error.find("in use") != std::string::npos);
  CHECK(started.error.find("null context") == std::string::npos);

  // The same for a second exposer on the first one's port.
  auto first = m::Exposer::start("127.0.0.1:0", registry);
  REQUIRE(first.ok());
  std::string taken = "127.0.0.1:" + std::to_string(first.exposer->port());
  auto second = m::Exposer::start(taken, registry);
  CHECK_FALSE(second.ok());
  CHECK(second.error.find(taken) != std::string::npos);
  CHECK(second.error.find("in use") != std::string::npos);
}

TEST_CASE("exposer rejects malformed addresses with an error value") {
  m::Registry registry;
  for (const char* bad : {"", "9644", "127.0.0.1", "127.0.0.1:", ":9644", "127.0.0.1:99999", "127.0.0.1:96x4",
                          "::1:9644", "[::1:9644", "999.1.1.1:0", "example.com:0", "[zz]:0"}) {
    INFO(bad);
    m::ExposerStart started;
    REQUIRE_NOTHROW(started = m::Exposer::start(bad, registry));
    CHECK_FALSE(started.ok());
    CHECK(started.error.find("'" + std::string(bad) + "'") != std::string::npos);
  }
}

TEST_CASE("exposer serves IPv6 only where civetweb can and otherwise says why") {
  m::Registry registry;
  auto started = m::Exposer::start("[::1]:0", registry);
  INFO(started.error);
  if (m::Exposer::ipv6_supported()) {
    REQUIRE(started.ok());
    CHECK(started.exposer->port() > 0);
  } else {
    // Debian 12's civetweb: refused with the reason, not civetweb's "null context".
    CHECK_FALSE(started.ok());
    CHECK(started.error.find("'[::1]:0' is IPv6") != std::string::npos);
    CHECK(started.error.find("null context") == std::string::npos);
  }
}

TEST_CASE("exposer accepts localhost and scrapes survive the registry going away") {
  auto registry = std::make_unique<m::Registry>();
  auto started = m::Exposer::start("localhost:0", *registry);
  INFO(started.error);
  REQUIRE(started.ok());
  registry.reset();
  std::string response = http_get(started.exposer->port(), "/metrics");
  CHECK(response.find(" 200 ") != std::string::npos);
}
